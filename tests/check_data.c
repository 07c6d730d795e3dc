/* Unit tests of the data layer: the sampler (the same samples per step for any world size), the
 * padded evaluation order, the exact gather (and its detection of missing or doubly counted
 * samples), dataset format validation and the hyperslab loader.
 * Runs on any number of ranks (tests/data_unit.sh runs it on 1, 2 and 4). Collective tests record
 * failures and agree on them before asserting, so a failure on one rank cannot leave the others
 * waiting in a collective. */
#include "build_config.h"

#include <check.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "accel/tokenizer.h"

static int g_rank, g_size;
static char g_dir[256];             /* scratch directory shared by all ranks */
static int g_fails;
static char g_first[512];

#define EXPECT(cond, ...)                                                                   \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            if (!g_fails++) snprintf(g_first, sizeof g_first, __VA_ARGS__);                 \
        }                                                                                   \
    } while (0)

/* Every rank learns whether any rank failed; the failing ranks say what failed. */
static void agree_and_assert(void)
{
    int any = 0;
    MPI_Allreduce(&g_fails, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int mine = g_fails;
    char msg[600];
    snprintf(msg, sizeof msg, "rank %d: %d failure(s), first: %s", g_rank, mine, g_first);
    g_fails = 0;
    g_first[0] = '\0';
    if (mine) ck_abort_msg("%s", msg);
    ck_assert_msg(any == 0, "another rank failed (%d failures in total)", any);
}

/* ------------------------------------------------------------------ eval order */

START_TEST(test_eval_nbatches)
{
    ck_assert_int_eq(accel_eval_nbatches(0, 4, 2), 0);
    ck_assert_int_eq(accel_eval_nbatches(1, 4, 2), 1);
    ck_assert_int_eq(accel_eval_nbatches(8, 4, 2), 1);
    ck_assert_int_eq(accel_eval_nbatches(9, 4, 2), 2);
    ck_assert_int_eq(accel_eval_nbatches(10, 3, 1), 4);
}
END_TEST

/* Every sample exactly once as a real entry, padding only past N and equal to pos mod N, for
 * 1..5 ranks and many N not divisible by the global batch. */
START_TEST(test_eval_order_every_sample_once)
{
    static const int64_t ns[] = { 1, 2, 3, 5, 7, 10, 11, 13, 17, 29, 31, 64, 97, 100 };
    static const int ms[] = { 1, 2, 3, 5 };
    int64_t idx[8];
    unsigned char valid[8];
    for (int world = 1; world <= 5; world++) {
        for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++) {
            int m = ms[a];
            int64_t G = (int64_t)world * m;
            for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
                int64_t N = ns[b];
                int *count = calloc((size_t)N, sizeof *count);
                int64_t nb = accel_eval_nbatches(N, world, m), padding = 0;
                ck_assert_int_eq(nb, (N + G - 1) / G);
                for (int64_t batch = 0; batch < nb; batch++) {
                    for (int r = 0; r < world; r++) {
                        accel_eval_indices(N, world, r, m, batch, idx, valid);
                        for (int i = 0; i < m; i++) {
                            int64_t pos = batch * G + (int64_t)r * m + i;
                            ck_assert_int_eq(idx[i], pos % N);
                            ck_assert_int_eq(valid[i], pos < N);
                            if (valid[i]) count[idx[i]]++;
                            else padding++;
                        }
                    }
                }
                for (int64_t i = 0; i < N; i++)
                    ck_assert_msg(count[i] == 1, "world %d m %d N %lld: sample %lld seen %d times",
                                  world, m, (long long)N, (long long)i, count[i]);
                ck_assert_int_eq(padding, nb * G - N);
                free(count);
            }
        }
    }
}
END_TEST

/* ------------------------------------------------------------------ gather */

static float expected_loss(int64_t i) { return (float)(i * 3 + 1) * 0.25f; }
static float expected_correct(int64_t i) { return (float)((i * 7) % 3 == 0); }

/* This rank's results over the whole padded order, as an evaluation loop would produce them. */
static int64_t local_results(int64_t N, int m, int64_t **idx, unsigned char **valid, float **vals)
{
    int64_t nb = accel_eval_nbatches(N, g_size, m), n = nb * m;
    *idx = malloc(sizeof **idx * (size_t)(n + 1));
    *valid = malloc((size_t)(n + 1));
    *vals = malloc(sizeof **vals * 2 * (size_t)(n + 1));
    for (int64_t b = 0; b < nb; b++) accel_eval_indices(N, g_size, g_rank, m, b, *idx + b * m, *valid + b * m);
    for (int64_t i = 0; i < n; i++) {
        /* Padding carries the duplicate's real values: only the flag tells them apart. */
        (*vals)[2 * i] = expected_loss((*idx)[i]);
        (*vals)[2 * i + 1] = expected_correct((*idx)[i]);
    }
    return n;
}

START_TEST(test_eval_gather_exact)
{
    static const int64_t ns[] = { 1, 2, 3, 5, 10, 13, 33, 100 };
    static const int ms[] = { 1, 3, 4 };
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++) {
        for (size_t b = 0; b < sizeof ns / sizeof ns[0]; b++) {
            int64_t N = ns[b], *idx;
            int m = ms[a];
            unsigned char *valid;
            float *vals, *out = malloc(sizeof *out * 2 * (size_t)N);
            int64_t n = local_results(N, m, &idx, &valid, &vals);
            for (int64_t i = 0; i < 2 * N; i++) out[i] = NAN;
            accel_status_t st = accel_eval_gather(MPI_COMM_WORLD, vals, idx, valid, (int)n, N, 2, out);
            EXPECT(st == ACCEL_OK, "gather N %lld m %d: status %d", (long long)N, m, st);
            double sum = 0, cor = 0;
            for (int64_t i = 0; i < N && st == ACCEL_OK; i++) {
                EXPECT(out[2 * i] == expected_loss(i) && out[2 * i + 1] == expected_correct(i),
                       "N %lld m %d: row %lld = (%g, %g)", (long long)N, m, (long long)i,
                       (double)out[2 * i], (double)out[2 * i + 1]);
                sum += expected_loss(i);
                cor += expected_correct(i);
            }
            double loss = 0, acc = 0;
            if (st == ACCEL_OK) {
                EXPECT(accel_eval_mean(out, N, 2, &loss, &acc) == ACCEL_OK, "mean failed");
                EXPECT(loss == sum / (double)N && acc == cor / (double)N,
                       "N %lld: mean loss %.9g accuracy %.9g, expected %.9g %.9g", (long long)N, loss,
                       acc, sum / (double)N, cor / (double)N);
            }
            free(idx);
            free(valid);
            free(vals);
            free(out);
        }
    }
    agree_and_assert();
}
END_TEST

/* Capture what this rank logs while running a step, to check error messages. */
static FILE *g_capture;
static void capture_begin(void)
{
    g_capture = tmpfile();
    accel_log_set_stream(g_capture);
}
static char *capture_end(void)
{
    accel_log_set_stream(NULL);
    static char text[8192];
    rewind(g_capture);
    size_t n = fread(text, 1, sizeof text - 1, g_capture);
    text[n] = '\0';
    fclose(g_capture);
    return text;
}

enum { BREAK_DUPLICATE, BREAK_MISSING, BREAK_RANGE, BREAK_WIDTH };

static void gather_broken(int how, const char *want)
{
    const int64_t N = 10;
    const int m = 3;
    int64_t *idx;
    unsigned char *valid;
    float *vals, out[2 * 10];
    int64_t n = local_results(N, m, &idx, &valid, &vals);
    int width = 2;
    if (g_rank == g_size - 1) {
        if (how == BREAK_DUPLICATE) {
            /* A padding entry counted as real (what trimming by N % batch gets wrong), or a
             * real entry repeated when this rank has no padding. */
            int64_t k = 0;
            while (k < n && valid[k]) k++;
            if (k < n) valid[k] = 1;
            else idx[n - 1] = idx[0] == idx[n - 1] ? idx[n - 2] : idx[0];
        } else if (how == BREAK_MISSING) {
            valid[0] = 0;
        } else if (how == BREAK_RANGE) {
            idx[0] = N + 5;
        } else if (how == BREAK_WIDTH && g_size > 1) {
            width = 1;
        }
    }
    if (how == BREAK_WIDTH && g_size == 1) { free(idx); free(valid); free(vals); return; }
    capture_begin();
    accel_status_t st = accel_eval_gather(MPI_COMM_WORLD, vals, idx, valid, (int)n, N, width, out);
    const char *log = capture_end();
    EXPECT(st == ACCEL_ERR_INVALID, "broken gather %d: status %d, expected ACCEL_ERR_INVALID", how, st);
    if (g_rank == 0)
        EXPECT(strstr(log, want) != NULL, "broken gather %d: log lacks '%s': %s", how, want, log);
    free(idx);
    free(valid);
    free(vals);
}

START_TEST(test_eval_gather_detects_errors)
{
    gather_broken(BREAK_DUPLICATE, "counted twice");
    gather_broken(BREAK_MISSING, "missing (first");
    gather_broken(BREAK_RANGE, "out of range");
    gather_broken(BREAK_WIDTH, "disagree");
    /* all padding flags dropped: valid NULL means all real, so N+padding rows are too many */
    if (accel_eval_nbatches(10, g_size, 3) * g_size * 3 > 10) {
        int64_t *idx;
        unsigned char *valid;
        float *vals, out[20];
        int64_t n = local_results(10, 3, &idx, &valid, &vals);
        capture_begin();
        accel_status_t st = accel_eval_gather(MPI_COMM_WORLD, vals, idx, NULL, (int)n, 10, 2, out);
        capture_end();
        EXPECT(st == ACCEL_ERR_INVALID, "gather without padding flags: status %d", st);
        free(idx);
        free(valid);
        free(vals);
    }
    agree_and_assert();
}
END_TEST

/* ------------------------------------------------------------------ dataset files */

static void path_of(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", g_dir, name);
}

static void attr_str(hid_t f, const char *name, const char *value, int variable)
{
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
    H5Tset_size(t, variable ? H5T_VARIABLE : strlen(value));
    if (variable) H5Tset_cset(t, H5T_CSET_UTF8);            /* as h5py writes str attributes */
    hid_t a = H5Acreate2(f, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    if (variable) H5Awrite(a, t, &value);
    else H5Awrite(a, t, value);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
}

static void attr_int(hid_t f, const char *name, long long v, hid_t type)
{
    hid_t s = H5Screate(H5S_SCALAR), a = H5Acreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_LLONG, &v);
    H5Aclose(a);
    H5Sclose(s);
}

static void dset(hid_t f, const char *name, int rank, hsize_t d0, hsize_t d1, hid_t ftype, hid_t mtype,
                 const void *data)
{
    hsize_t dims[2] = { d0, d1 };
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t s = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, name, ftype, s, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    if (data) H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(d);
    H5Sclose(s);
    H5Pclose(lcpl);
}

/* A 1-D uint16 dataset in chunks of 64 (n not a multiple: the last is partial), deflated as h5py's
 * compression="gzip" does; only the first `written` elements are written (the rest of the chunks
 * never are). */
static void dset_chunked(hid_t f, const char *name, hsize_t n, hsize_t written, const uint16_t *data)
{
    hsize_t chunk = 64;
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_deflate(dcpl, 1);
    hid_t s = H5Screate_simple(1, &n, NULL), m = H5Screate_simple(1, &written, NULL);
    hid_t d = H5Dcreate2(f, name, H5T_STD_U16LE, s, lcpl, dcpl, H5P_DEFAULT);
    hsize_t zero = 0;
    H5Sselect_hyperslab(s, H5S_SELECT_SET, &zero, NULL, &written, NULL);
    H5Dwrite(d, H5T_NATIVE_UINT16, m, s, H5P_DEFAULT, data);
    H5Dclose(d);
    H5Sclose(m);
    H5Sclose(s);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
}

/* Token file variants; `variant` breaks one thing. */
enum {
    TOK_GOOD, TOK_NO_FORMAT, TOK_BAD_FORMAT, TOK_NEW_VERSION, TOK_NO_VERSION, TOK_NO_VOCAB,
    TOK_2D, TOK_FLOAT, TOK_NO_VAL, TOK_NO_DATASET, TOK_OUT_OF_VOCAB, TOK_H5PY_STYLE, TOK_NEGATIVE,
    TOK_CHUNKED, TOK_CHUNK_HOLE, TOK_MASK, TOK_MASK_SHORT, TOK_MASK_WIDE, TOK_MASK_BAD, TOK_NVARIANTS
};
#define TOK_N 200
#define TOK_VOCAB 1000
static int tok_value(int64_t k) { return (int)((k * 31 + 7) % TOK_VOCAB); }
static int mask_value(int64_t k) { return k % 3 == 0; }

static void write_token_variant(const char *path, int variant)
{
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (variant != TOK_NO_FORMAT)
        attr_str(f, "format", variant == TOK_BAD_FORMAT ? "accel-images" : "accel-tokens",
                 variant == TOK_H5PY_STYLE);
    if (variant != TOK_NO_VERSION)
        attr_int(f, "version", variant == TOK_NEW_VERSION ? ACCEL_DATASET_VERSION + 1 : variant >= TOK_MASK ? 2 : 1,
                 variant == TOK_H5PY_STYLE ? H5T_STD_I64LE : H5T_STD_I32LE);
    if (variant != TOK_NO_VOCAB) attr_int(f, "vocab", TOK_VOCAB, H5T_STD_I32LE);
    attr_str(f, "tokenizer", "test", variant == TOK_H5PY_STYLE);
    uint16_t t16[TOK_N];
    int32_t t32[TOK_N];
    float tf[TOK_N];
    for (int k = 0; k < TOK_N; k++) t16[k] = (uint16_t)(t32[k] = tok_value(k)), tf[k] = (float)t32[k];
    if (variant == TOK_OUT_OF_VOCAB) t16[57] = TOK_VOCAB + 3;
    if (variant == TOK_NEGATIVE) t32[57] = -5;
    uint8_t mask[TOK_N];
    for (int k = 0; k < TOK_N; k++) mask[k] = (uint8_t)mask_value(k);
    if (variant == TOK_MASK_BAD) mask[57] = 2;
    for (int s = 0; s < 2; s++) {
        const char *name = s ? "/val/tokens" : "/train/tokens";
        if (s && variant == TOK_NO_VAL) continue;
        if (variant == TOK_NO_DATASET && !s) {
            H5Gclose(H5Gcreate2(f, "/train", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
            continue;
        }
        if (variant == TOK_2D) dset(f, name, 2, TOK_N / 4, 4, H5T_STD_U16LE, H5T_NATIVE_UINT16, t16);
        else if (variant == TOK_FLOAT) dset(f, name, 1, TOK_N, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, tf);
        else if (variant == TOK_H5PY_STYLE || variant == TOK_NEGATIVE)
            dset(f, name, 1, TOK_N, 0, H5T_STD_I32LE, H5T_NATIVE_INT32, t32);
        else if (variant == TOK_CHUNKED || variant == TOK_CHUNK_HOLE)
            dset_chunked(f, name, TOK_N, variant == TOK_CHUNKED ? TOK_N : 64, t16);
        else dset(f, name, 1, TOK_N, 0, H5T_STD_U16LE, H5T_NATIVE_UINT16, t16);
        const char *mname = s ? "/val/loss_mask" : "/train/loss_mask";
        if (variant == TOK_MASK || variant == TOK_MASK_BAD)
            dset(f, mname, 1, TOK_N, 0, H5T_STD_U8LE, H5T_NATIVE_UINT8, mask);
        else if (variant == TOK_MASK_SHORT)
            dset(f, mname, 1, TOK_N - 1, 0, H5T_STD_U8LE, H5T_NATIVE_UINT8, mask);
        else if (variant == TOK_MASK_WIDE)
            dset(f, mname, 1, TOK_N, 0, H5T_STD_U16LE, H5T_NATIVE_UINT16, t16);
    }
    H5Fclose(f);
}

/* Open collectively; expect status `want`, and (on rank 0) a message with every given text. */
static accel_dataset_t *expect_open(const char *path, const char *split, int context,
                                    accel_status_t want, const char *text1, const char *text2)
{
    accel_dataset_t *ds = NULL;
    capture_begin();
    accel_status_t st = accel_dataset_open(path, split, context, MPI_COMM_WORLD, &ds);
    const char *log = capture_end();
    EXPECT(st == want, "open %s split %s context %d: status %d (%s), expected %d; log: %s", path, split,
           context, st, accel_status_str(st), want, log);
    if (g_rank == 0 && want != ACCEL_OK) {
        EXPECT(!text1 || strstr(log, text1), "open %s: message lacks '%s': %s", path, text1, log);
        EXPECT(!text2 || strstr(log, text2), "open %s: message lacks '%s': %s", path, text2, log);
    }
    if (st != ACCEL_OK && ds) { EXPECT(0, "failed open returned a handle"); ds = NULL; }
    return ds;
}

START_TEST(test_format_validation)
{
    static const char *const names[TOK_NVARIANTS] = {
        "good.h5", "noformat.h5", "badformat.h5", "v2.h5", "noversion.h5", "novocab.h5", "2d.h5",
        "float.h5", "noval.h5", "nodataset.h5", "outofvocab.h5", "h5py.h5", "negative.h5",
        "chunked.h5", "chunkhole.h5", "mask.h5", "maskshort.h5", "maskwide.h5", "maskbad.h5" };
    char p[TOK_NVARIANTS][512], text[512], trunc[512], missing[512];
    for (int v = 0; v < TOK_NVARIANTS; v++) path_of(p[v], sizeof p[v], names[v]);
    path_of(text, sizeof text, "text.h5");
    path_of(trunc, sizeof trunc, "truncated.h5");
    path_of(missing, sizeof missing, "missing.h5");
    if (g_rank == 0) {
        for (int v = 0; v < TOK_NVARIANTS; v++) write_token_variant(p[v], v);
        FILE *f = fopen(text, "w");
        fputs("just some text, not HDF5\n", f);
        fclose(f);
        write_token_variant(trunc, TOK_GOOD);
        ck_assert_int_eq(truncate(trunc, 1200), 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    accel_dataset_t *ds = expect_open(p[TOK_GOOD], "train", 10, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->kind == ACCEL_DATASET_TOKENS && in->vocab == TOK_VOCAB && in->ntokens == TOK_N &&
               in->nsamples == (TOK_N - 1) / 10 && in->context == 10 && in->token_bytes == 2 &&
               !strcmp(in->tokenizer, "test") && in->version == 1,
               "good file info: kind %d vocab %d ntokens %lld nsamples %lld", in->kind, in->vocab,
               (long long)in->ntokens, (long long)in->nsamples);
        accel_dataset_close(ds);
    }
    expect_open(missing, "train", 10, ACCEL_ERR_NOT_FOUND, missing, "No such file");
    expect_open(text, "train", 10, ACCEL_ERR_CORRUPT, text, "not an HDF5 file");
    expect_open(trunc, "train", 10, ACCEL_ERR_CORRUPT, trunc, NULL);
    expect_open(p[TOK_NO_FORMAT], "train", 10, ACCEL_ERR_CORRUPT, p[TOK_NO_FORMAT], "'format' is missing");
    expect_open(p[TOK_BAD_FORMAT], "train", 10, ACCEL_ERR_CORRUPT, "accel-images", "unknown dataset format");
    expect_open(p[TOK_NEW_VERSION], "train", 10, ACCEL_ERR_UNSUPPORTED, p[TOK_NEW_VERSION], "version 3");
    expect_open(p[TOK_NO_VERSION], "train", 10, ACCEL_ERR_CORRUPT, p[TOK_NO_VERSION], "'version' is missing");
    expect_open(p[TOK_NO_VOCAB], "train", 10, ACCEL_ERR_CORRUPT, p[TOK_NO_VOCAB], "'vocab' is missing");
    expect_open(p[TOK_2D], "train", 10, ACCEL_ERR_CORRUPT, "/train/tokens", "1-D");
    expect_open(p[TOK_FLOAT], "val", 10, ACCEL_ERR_CORRUPT, "/val/tokens", "floats");
    expect_open(p[TOK_NO_VAL], "val", 10, ACCEL_ERR_NOT_FOUND, p[TOK_NO_VAL], "no split 'val'");
    expect_open(p[TOK_NO_DATASET], "train", 10, ACCEL_ERR_CORRUPT, p[TOK_NO_DATASET], "/train/tokens is missing");
    expect_open(p[TOK_GOOD], "train", TOK_N, ACCEL_ERR_SHAPE, p[TOK_GOOD], "too few for one sample");
    expect_open(p[TOK_GOOD], "train", 0, ACCEL_ERR_INVALID, p[TOK_GOOD], "context 0");
    expect_open(p[TOK_GOOD], "test", 10, ACCEL_ERR_NOT_FOUND, "no split 'test'", NULL);

    /* h5py style: variable-length UTF-8 strings, int64 version, int32 tokens: accepted, and read
     * directly (contiguous little-endian int32 read as int32). */
    ds = expect_open(p[TOK_H5PY_STYLE], "val", 7, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->token_bytes == 4 && in->token_signed && in->direct_reads,
               "h5py-style info: %d-byte, signed %d, direct %d", in->token_bytes, in->token_signed,
               in->direct_reads);
        int64_t idx[2] = { 3, 0 };
        int32_t tok[16];
        EXPECT(accel_dataset_read(ds, idx, 2, tok, NULL, NULL) == ACCEL_OK, "h5py-style read failed");
        for (int t = 0; t < 8; t++)
            EXPECT(tok[t] == tok_value(21 + t) && tok[8 + t] == tok_value(t), "h5py-style token %d", t);
        accel_dataset_close(ds);
    }

    /* Chunked and deflated, the last chunk partial (h5py's compression="gzip"): accepted, read
     * through HDF5 and saying why; with chunks never written: refused (they would read as zeros). */
    ds = expect_open(p[TOK_CHUNKED], "train", 9, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(!in->direct_reads && in->hdf5_reads_why && strstr(in->hdf5_reads_why, "compressed"),
               "chunked info: direct %d, why %s", in->direct_reads, in->hdf5_reads_why ? in->hdf5_reads_why : "-");
        int64_t idx[2] = { 21, 2 };               /* sample 21: tokens 189..198, into the last chunk */
        int32_t tok[20];
        EXPECT(accel_dataset_read(ds, idx, 2, tok, NULL, NULL) == ACCEL_OK, "chunked read failed");
        for (int t = 0; t < 10; t++)
            EXPECT(tok[t] == tok_value(189 + t) && tok[10 + t] == tok_value(18 + t), "chunked token %d", t);
        accel_dataset_close(ds);
    }
    expect_open(p[TOK_CHUNK_HOLE], "train", 10, ACCEL_ERR_CORRUPT, p[TOK_CHUNK_HOLE], "never written");

    /* Loss masks (version 2): read as the tokens are, counted; refused when they do not fit the
     * tokens, and a value other than 0/1 is corrupt data found by the rank that reads it. */
    ds = expect_open(p[TOK_MASK], "train", 7, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->has_loss_mask && in->version == 2, "mask info: has %d, version %d", in->has_loss_mask, in->version);
        int64_t idx[2] = { 3, 0 }, trained = 0, want = 0;
        uint8_t m[16];
        int32_t tok[16];
        EXPECT(accel_dataset_read_loss_mask(ds, idx, 2, m) == ACCEL_OK, "mask read failed");
        EXPECT(accel_dataset_read(ds, idx, 2, tok, NULL, NULL) == ACCEL_OK, "masked tokens read failed");
        for (int t = 0; t < 8; t++)
            EXPECT(m[t] == mask_value(21 + t) && m[8 + t] == mask_value(t) && tok[t] == tok_value(21 + t),
                   "mask value %d", t);
        for (int k = 0; k < TOK_N; k++) want += mask_value(k);
        EXPECT(accel_dataset_loss_mask_count(ds, &trained) == ACCEL_OK && trained == want,
               "mask count %lld, want %lld", (long long)trained, (long long)want);
        accel_dataset_close(ds);
    }
    ds = expect_open(p[TOK_GOOD], "val", 7, ACCEL_OK, NULL, NULL);
    if (ds) {
        int64_t idx = 0;
        uint8_t m[8];
        EXPECT(!accel_dataset_info(ds)->has_loss_mask, "a file without a mask says it has one");
        EXPECT(accel_dataset_read_loss_mask(ds, &idx, 1, m) == ACCEL_ERR_INVALID, "mask read without a mask");
        accel_dataset_close(ds);
    }
    expect_open(p[TOK_MASK_SHORT], "val", 7, ACCEL_ERR_CORRUPT, "/val/loss_mask", "length differs");
    expect_open(p[TOK_MASK_WIDE], "train", 7, ACCEL_ERR_CORRUPT, "/train/loss_mask", "1-byte");
    ds = expect_open(p[TOK_MASK_BAD], "train", 10, ACCEL_OK, NULL, NULL);
    if (ds) {
        int64_t bad = 5, trained;
        uint8_t m[11];
        capture_begin();
        accel_status_t st = accel_dataset_read_loss_mask(ds, &bad, 1, m);
        accel_status_t st2 = accel_dataset_loss_mask_count(ds, &trained);
        const char *log = capture_end();
        EXPECT(st == ACCEL_ERR_CORRUPT && st2 == ACCEL_ERR_CORRUPT && strstr(log, "/train/loss_mask[57] = 2"),
               "bad mask value: status %d %d, %s", st, st2, log);
        accel_dataset_close(ds);
    }

    /* A negative int32 token is corrupt data too. */
    ds = expect_open(p[TOK_NEGATIVE], "train", 10, ACCEL_OK, NULL, NULL);
    if (ds) {
        int64_t bad = 5;
        int32_t tok[11];
        capture_begin();
        accel_status_t st = accel_dataset_read(ds, &bad, 1, tok, NULL, NULL);
        const char *log = capture_end();
        EXPECT(st == ACCEL_ERR_CORRUPT && strstr(log, "/train/tokens[57] = -5"), "negative token: status %d, %s",
               st, log);
        accel_dataset_close(ds);
    }

    /* A token out of the vocabulary is corrupt data, found by the rank that reads it. */
    ds = expect_open(p[TOK_OUT_OF_VOCAB], "train", 10, ACCEL_OK, NULL, NULL);
    if (ds) {
        int64_t good[2] = { 0, 1 }, bad = 5;          /* sample 5 covers tokens 50..60 */
        int32_t tok[22];
        EXPECT(accel_dataset_read(ds, good, 2, tok, NULL, NULL) == ACCEL_OK, "read of clean samples failed");
        capture_begin();
        accel_status_t st = accel_dataset_read(ds, &bad, 1, tok, NULL, NULL);
        const char *log = capture_end();
        EXPECT(st == ACCEL_ERR_CORRUPT, "out-of-vocab read: status %d", st);
        EXPECT(strstr(log, "/train/tokens[57]") && strstr(log, "vocab=1000") && strstr(log, p[TOK_OUT_OF_VOCAB]),
               "out-of-vocab message: %s", log);
        int64_t far = 1000;
        capture_begin();
        st = accel_dataset_read(ds, &far, 1, tok, NULL, NULL);
        capture_end();
        EXPECT(st == ACCEL_ERR_INVALID, "index out of range: status %d", st);
        accel_dataset_close(ds);
    }
    agree_and_assert();
}
END_TEST

/* Classification variants. */
enum { CLS_GOOD, CLS_BAD_LABEL, CLS_ROWS, CLS_1D, CLS_NAN, CLS_NO_CLASSES, CLS_NVARIANTS };
#define CLS_N 40
#define CLS_F 3
#define CLS_K 5
static float cls_x(int64_t i, int f) { return (float)i + 0.125f * (float)f; }
static int32_t cls_y(int64_t i) { return (int32_t)(i % CLS_K); }

static void write_cls_variant(const char *path, int variant)
{
    float x[CLS_N * CLS_F];
    int32_t y[CLS_N];
    for (int i = 0; i < CLS_N; i++) {
        for (int f = 0; f < CLS_F; f++) x[i * CLS_F + f] = cls_x(i, f);
        y[i] = cls_y(i);
    }
    if (variant == CLS_BAD_LABEL) y[11] = CLS_K;
    if (variant == CLS_NAN) x[13 * CLS_F + 1] = NAN;
    if (variant == CLS_GOOD || variant == CLS_BAD_LABEL || variant == CLS_NAN) {
        ck_assert_int_eq(accel_dataset_write_classification(path, CLS_K, CLS_F, x, y, CLS_N, x, y, CLS_N / 2, NULL), ACCEL_OK);
        return;
    }
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    attr_str(f, "format", "accel-classification", 0);
    attr_int(f, "version", 1, H5T_STD_I32LE);
    if (variant != CLS_NO_CLASSES) attr_int(f, "classes", CLS_K, H5T_STD_I32LE);
    if (variant == CLS_1D) dset(f, "/train/inputs", 1, CLS_N * CLS_F, 0, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, x);
    else dset(f, "/train/inputs", 2, CLS_N, CLS_F, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, x);
    dset(f, "/train/labels", 1, variant == CLS_ROWS ? CLS_N - 1 : CLS_N, 0, H5T_STD_I32LE, H5T_NATIVE_INT32, y);
    H5Fclose(f);
}

START_TEST(test_classification_validation)
{
    static const char *const names[CLS_NVARIANTS] = { "cls.h5", "clslabel.h5", "clsrows.h5",
                                                      "cls1d.h5", "clsnan.h5", "clsnoclasses.h5" };
    char p[CLS_NVARIANTS][512];
    for (int v = 0; v < CLS_NVARIANTS; v++) path_of(p[v], sizeof p[v], names[v]);
    if (g_rank == 0)
        for (int v = 0; v < CLS_NVARIANTS; v++) write_cls_variant(p[v], v);
    MPI_Barrier(MPI_COMM_WORLD);
    accel_dataset_t *ds = expect_open(p[CLS_GOOD], "val", 0, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->kind == ACCEL_DATASET_CLASSIFICATION && in->classes == CLS_K && in->features == CLS_F &&
               in->nsamples == CLS_N / 2, "classification info: classes %d features %d nsamples %lld",
               in->classes, in->features, (long long)in->nsamples);
        accel_dataset_close(ds);
    }
    expect_open(p[CLS_ROWS], "train", 0, ACCEL_ERR_CORRUPT, "/train/inputs has 40 rows", "/train/labels has 39");
    expect_open(p[CLS_1D], "train", 0, ACCEL_ERR_CORRUPT, "/train/inputs must be a 2-D", p[CLS_1D]);
    expect_open(p[CLS_NO_CLASSES], "train", 0, ACCEL_ERR_CORRUPT, "'classes' is missing", NULL);
    for (int v = CLS_BAD_LABEL; v <= CLS_NAN; v += CLS_NAN - CLS_BAD_LABEL) {
        ds = expect_open(p[v], "train", 0, ACCEL_OK, NULL, NULL);
        if (!ds) continue;
        int64_t idx[2] = { 12, v == CLS_BAD_LABEL ? 11 : 13 };
        float x[2 * CLS_F];
        int32_t y[2];
        capture_begin();
        accel_status_t st = accel_dataset_read(ds, idx, 2, NULL, x, y);
        const char *log = capture_end();
        EXPECT(st == ACCEL_ERR_CORRUPT, "variant %d: status %d", v, st);
        EXPECT(strstr(log, v == CLS_BAD_LABEL ? "/train/labels[11] = 5" : "/train/inputs[13][1]"),
               "variant %d message: %s", v, log);
        accel_dataset_close(ds);
    }
    agree_and_assert();
}
END_TEST

/* ------------------------------------------------------------------ loader reads */

/* Each rank reads its own, differently sized, unsorted and repeating requests (rank 0 reads
 * nothing at all in one round): every value must match, and no rank reads more than it asked for. */
START_TEST(test_loader_reads)
{
    char tok[512], cls[512];
    path_of(tok, sizeof tok, "loader_tokens.h5");
    path_of(cls, sizeof cls, "loader_cls.h5");
    const int64_t ntrain = 1001, nval = 77;
    if (g_rank == 0) {
        uint16_t *s = malloc(sizeof *s * (size_t)(ntrain + nval));
        for (int64_t k = 0; k < ntrain + nval; k++) s[k] = (uint16_t)tok_value(k);
        ck_assert_int_eq(accel_dataset_write_tokens(tok, "test", TOK_VOCAB, s, 2, ntrain, nval, "unit test"), ACCEL_OK);
        free(s);
        write_cls_variant(cls, CLS_GOOD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const int T = 9;
    accel_dataset_t *ds = expect_open(tok, "train", T, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->nsamples == (ntrain - 1) / T, "nsamples %lld", (long long)in->nsamples);
        for (int round = 0; round < 3; round++) {
            int n = round == 0 ? g_rank : 3 + g_rank * 2 + round;
            int64_t idx[32];
            int32_t buf[32 * 10];
            for (int j = 0; j < n; j++)
                idx[j] = (j % 3 == 2) ? idx[j - 1]                                      /* duplicate */
                         : (j * 37 + g_rank * 11 + round * 5) % in->nsamples;            /* scattered */
            if (n > 1) idx[n - 1] = in->nsamples - 1;                                    /* the last */
            int64_t before = in->elements_read;
            EXPECT(accel_dataset_read(ds, idx, n, buf, NULL, NULL) == ACCEL_OK, "read round %d", round);
            EXPECT(in->elements_read - before <= (int64_t)n * (T + 1), "round %d read %lld elements for %d samples",
                   round, (long long)(in->elements_read - before), n);
            for (int j = 0; j < n; j++)
                for (int t = 0; t <= T; t++)
                    EXPECT(buf[j * (T + 1) + t] == tok_value(idx[j] * T + t), "sample %lld token %d = %d",
                           (long long)idx[j], t, buf[j * (T + 1) + t]);
        }
        /* adjacent samples share a token: their union is read once */
        int64_t adj[3] = { 4, 3, 5 };
        int32_t buf[30];
        int64_t before = in->elements_read;
        EXPECT(accel_dataset_read(ds, adj, 3, buf, NULL, NULL) == ACCEL_OK, "adjacent read");
        EXPECT(in->elements_read - before == 3 * T + 1, "adjacent samples read %lld elements, expected %d",
               (long long)(in->elements_read - before), 3 * T + 1);
        accel_dataset_close(ds);
    }
    ds = expect_open(tok, "val", T, ACCEL_OK, NULL, NULL);
    if (ds) {
        int64_t idx[2] = { accel_dataset_info(ds)->nsamples - 1, 0 };
        int32_t buf[20];
        EXPECT(accel_dataset_read(ds, idx, 2, buf, NULL, NULL) == ACCEL_OK, "val read");
        for (int t = 0; t <= T; t++)
            EXPECT(buf[t] == tok_value(ntrain + idx[0] * T + t) && buf[T + 1 + t] == tok_value(ntrain + t),
                   "val token %d", t);
        accel_dataset_close(ds);
    }
    ds = expect_open(cls, "train", 0, ACCEL_OK, NULL, NULL);
    if (ds) {
        int n = 2 + g_rank;
        int64_t idx[8];
        float x[8 * CLS_F];
        int32_t y[8];
        for (int j = 0; j < n; j++) idx[j] = (CLS_N - 1 - j * 7 - g_rank) % CLS_N;
        idx[n - 1] = idx[0];
        EXPECT(accel_dataset_read(ds, idx, n, NULL, x, y) == ACCEL_OK, "classification read");
        for (int j = 0; j < n; j++) {
            EXPECT(y[j] == cls_y(idx[j]), "label of %lld = %d", (long long)idx[j], y[j]);
            for (int f = 0; f < CLS_F; f++)
                EXPECT(x[j * CLS_F + f] == cls_x(idx[j], f), "input %lld,%d", (long long)idx[j], f);
        }
        accel_dataset_close(ds);
    }
    agree_and_assert();
}
END_TEST

/* Writers never leave a partial file: a failed write leaves no file and no temporary behind. */
START_TEST(test_writer_atomic)
{
    if (g_rank != 0) return;
    char path[512], tmpname[600];
    path_of(path, sizeof path, "no-such-dir/x.h5");
    uint8_t s[4] = { 1, 2, 3, 4 };
    capture_begin();
    accel_status_t st = accel_dataset_write_tokens(path, "bytes", 256, s, 1, 2, 2, NULL);
    capture_end();
    ck_assert_int_eq(st, ACCEL_ERR_IO);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* vocab too big for 8-bit tokens */
    path_of(path, sizeof path, "w.h5");
    capture_begin();
    st = accel_dataset_write_tokens(path, "bytes", 300, s, 1, 2, 2, NULL);
    capture_end();
    ck_assert_int_eq(st, ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_dataset_write_tokens(path, "bytes", 256, s, 1, 2, 2, NULL), ACCEL_OK);
    snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", path, (long)getpid());
    ck_assert_int_ne(access(tmpname, F_OK), 0);
    ck_assert_int_eq(access(path, F_OK), 0);
}
END_TEST

/* Vocabularies over 65536 are stored as uint32 and read back exactly (every rank reads a share),
 * tokens at the top of the vocabulary included; the tokenizer's hash, kept tokenizer.json and chat
 * template come back through the info, accel_dataset_tokenizer_json and
 * accel_dataset_chat_template (the template changes no version); a file without them says so. */
START_TEST(test_uint32_tokens_and_tokenizer_meta)
{
    char big[512], small[512];
    path_of(big, sizeof big, "u32_tokens.h5");
    path_of(small, sizeof small, "u8_tokens.h5");
    const int vocab = 131072;
    const int64_t ntrain = 500, nval = 40;
    static const char json[] = "{\"model\": {\"type\": \"BPE\"}, \"note\": \"caf\xc3\xa9\"}";
    static const char chat[] = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}";
    if (g_rank == 0) {
        uint32_t *s = malloc(sizeof *s * (size_t)(ntrain + nval));
        for (int64_t k = 0; k < ntrain + nval; k++) s[k] = (uint32_t)((k * 104729) % vocab);
        s[3] = vocab - 1;
        s[4] = 65536;
        accel_token_meta_t meta = { .tokenizer = "tiny", .tokenizer_hash = "0123456789abcdef",
                                    .tokenizer_json = json, .tokenizer_json_len = sizeof json - 1,
                                    .chat_template = chat, .chat_template_len = sizeof chat - 1,
                                    .vocab = vocab, .description = "unit test" };
        ck_assert_int_eq(accel_dataset_token_bytes(vocab), 4);
        ck_assert_int_eq(accel_dataset_token_bytes(65536), 2);
        ck_assert_int_eq(accel_dataset_token_bytes(256), 1);
        ck_assert_int_eq(accel_dataset_write_tokens_meta(big, &meta, s, 4, ntrain, nval), ACCEL_OK);
        capture_begin();   /* 2-byte tokens cannot hold vocab 131072 */
        accel_status_t st = accel_dataset_write_tokens_meta(small, &meta, s, 2, ntrain, nval);
        capture_end();
        ck_assert_int_eq(st, ACCEL_ERR_INVALID);
        uint8_t b[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        ck_assert_int_eq(accel_dataset_write_tokens(small, "bytes", 256, b, 1, 4, 4, NULL), ACCEL_OK);
        free(s);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    accel_dataset_t *ds = expect_open(big, "train", 1, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->token_bytes == 4 && in->vocab == vocab && !strcmp(in->tokenizer, "tiny") &&
               !strcmp(in->tokenizer_hash, "0123456789abcdef") && in->has_tokenizer_json,
               "info: %d-byte tokens, vocab %d, tokenizer %s hash %s json %d", in->token_bytes,
               in->vocab, in->tokenizer, in->tokenizer_hash, (int)in->has_tokenizer_json);
        EXPECT(in->has_chat_template && in->version == ACCEL_DATASET_VERSION_PLAIN,
               "info: chat template %d, version %d", (int)in->has_chat_template, in->version);
        int64_t idx[64];
        int32_t buf[128];
        int n = 0;
        for (int64_t i = g_rank; i < in->nsamples && n < 64; i += g_size) idx[n++] = i;
        EXPECT(accel_dataset_read(ds, idx, n, buf, NULL, NULL) == ACCEL_OK, "uint32 read");
        for (int j = 0; j < n; j++)
            for (int t = 0; t < 2; t++) {
                int64_t k = idx[j] + t;
                int32_t want = k == 3 ? vocab - 1 : k == 4 ? 65536 : (int32_t)((k * 104729) % vocab);
                EXPECT(buf[2 * j + t] == want, "token %lld = %d, want %d", (long long)k, buf[2 * j + t], want);
            }
        accel_dataset_close(ds);
    }
    if (g_rank == 0) {
        char *got = NULL;
        size_t len = 0;
        EXPECT(accel_dataset_tokenizer_json(big, &got, &len) == ACCEL_OK && len == sizeof json - 1 &&
               !memcmp(got, json, len) && got[len] == '\0', "tokenizer.json read back (%zu bytes)", len);
        free(got);
        got = NULL;
        EXPECT(accel_dataset_chat_template(big, &got, &len) == ACCEL_OK && len == sizeof chat - 1 &&
               !memcmp(got, chat, len) && got[len] == '\0', "chat template read back (%zu bytes)", len);
        free(got);
        got = (char *)json;
        EXPECT(accel_dataset_tokenizer_json(small, &got, &len) == ACCEL_ERR_NOT_FOUND && !got && len == 0,
               "a bytes dataset keeps no tokenizer.json");
        got = (char *)chat;
        EXPECT(accel_dataset_chat_template(small, &got, &len) == ACCEL_ERR_NOT_FOUND && !got && len == 0,
               "a dataset without conversations keeps no chat template");
        /* the recorded tokenizer, ready to decode: "bytes" opens; a name without its JSON does not */
        accel_tokenizer_t *tk = NULL;
        char terr[512] = "";
        EXPECT(accel_dataset_tokenizer(small, &tk, terr, sizeof terr) == ACCEL_OK && tk &&
               !strcmp(accel_tokenizer_name(tk), "bytes"), "bytes tokenizer from the dataset: %s", terr);
        if (tk) accel_tokenizer_free(tk);
        char nojson[512];
        path_of(nojson, sizeof nojson, "npy_tokens.h5");
        uint16_t w[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
        ck_assert_int_eq(accel_dataset_write_tokens(nojson, "npy", 1000, w, 2, 4, 4, NULL), ACCEL_OK);
        tk = NULL;
        EXPECT(accel_dataset_tokenizer(nojson, &tk, terr, sizeof terr) == ACCEL_ERR_NOT_FOUND && !tk &&
               strstr(terr, "records tokenizer 'npy' without its tokenizer.json"), "no JSON: %s", terr);
    }
    ds = expect_open(small, "val", 1, ACCEL_OK, NULL, NULL);
    if (ds) {
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->token_bytes == 1 && !in->tokenizer_hash[0] && !in->has_tokenizer_json &&
               !in->has_chat_template, "bytes info: %d-byte, hash '%s', json %d, chat %d", in->token_bytes,
               in->tokenizer_hash, (int)in->has_tokenizer_json, (int)in->has_chat_template);
        accel_dataset_close(ds);
    }
    agree_and_assert();
}
END_TEST

/* Document starts (data.document_mask): written from the offsets given, chunked and compressed,
 * read back per sample as the loss mask is (the val split's from its own first token); a file
 * without them says so; a value other than 0/1 is corrupt, a length unlike the tokens' refused. */
START_TEST(test_document_starts)
{
    char path[512], damaged[512];
    path_of(path, sizeof path, "docs.h5");
    path_of(damaged, sizeof damaged, "docs_damaged.h5");
    enum { NTRAIN = 300, NVAL = 70, T = 9 };
    static const int64_t starts[] = { 0, 1, 17, 100, 101, 250, 299, 300, 333, 369 };
    const int nstarts = (int)(sizeof starts / sizeof starts[0]);
    if (g_rank == 0) {
        uint16_t s[NTRAIN + NVAL];
        for (int k = 0; k < NTRAIN + NVAL; k++) s[k] = (uint16_t)(k % 50);
        accel_token_meta_t meta = { .tokenizer = "tiny", .vocab = 50, .document_starts = starts,
                                    .ndocuments = nstarts };
        ck_assert_int_eq(accel_dataset_write_tokens_meta(path, &meta, s, 2, NTRAIN, NVAL), ACCEL_OK);
        ck_assert_int_eq(accel_dataset_write_tokens_meta(damaged, &meta, s, 2, NTRAIN, NVAL), ACCEL_OK);
        hid_t f = H5Fopen(damaged, H5F_ACC_RDWR, H5P_DEFAULT);
        hid_t d = H5Dopen2(f, "/train/document_start", H5P_DEFAULT);
        hid_t space = H5Dget_space(d);
        hsize_t at = 57, one = 1;
        uint8_t two = 2;
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, NULL, &one, NULL);
        hid_t mspace = H5Screate_simple(1, &one, NULL);
        ck_assert_int_ge(H5Dwrite(d, H5T_NATIVE_UINT8, mspace, space, H5P_DEFAULT, &two), 0);
        H5Sclose(mspace); H5Sclose(space); H5Dclose(d);
        H5Ldelete(f, "/val/document_start", H5P_DEFAULT);
        dset(f, "/val/document_start", 1, NVAL - 1, 0, H5T_STD_U8LE, H5T_NATIVE_UINT8, s);
        H5Fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int split = 0; split < 2; split++) {
        accel_dataset_t *ds = expect_open(path, split ? "val" : "train", T, ACCEL_OK, NULL, NULL);
        if (!ds) continue;
        const accel_dataset_info_t *in = accel_dataset_info(ds);
        EXPECT(in->has_document_starts && !in->has_loss_mask, "info: starts %d, mask %d",
               (int)in->has_document_starts, (int)in->has_loss_mask);
        int64_t idx[64];
        uint8_t got[64 * (T + 1)];
        int n = 0;
        for (int64_t i = g_rank; i < in->nsamples && n < 64; i += g_size) idx[n++] = i;
        EXPECT(accel_dataset_read_document_starts(ds, idx, n, got) == ACCEL_OK, "read starts");
        for (int j = 0; j < n; j++)
            for (int t = 0; t <= T; t++) {
                int64_t k = (split ? NTRAIN : 0) + idx[j] * T + t;
                int want = 0;
                for (int i = 0; i < nstarts; i++) want |= starts[i] == k;
                EXPECT(got[j * (T + 1) + t] == want, "%s token %lld: start %d, want %d", split ? "val" : "train",
                       (long long)k, got[j * (T + 1) + t], want);
            }
        accel_dataset_close(ds);
    }
    char plain[512];
    path_of(plain, sizeof plain, "nodocs.h5");
    if (g_rank == 0) {
        uint16_t w[40] = { 0 };
        ck_assert_int_eq(accel_dataset_write_tokens(plain, "npy", 10, w, 2, 30, 10, NULL), ACCEL_OK);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    accel_dataset_t *ds = expect_open(plain, "train", T, ACCEL_OK, NULL, NULL);
    if (ds) {
        int64_t idx = 0;
        uint8_t m[T + 1];
        EXPECT(!accel_dataset_info(ds)->has_document_starts, "a file without starts says it has them");
        EXPECT(accel_dataset_read_document_starts(ds, &idx, 1, m) == ACCEL_ERR_INVALID, "starts read without them");
        accel_dataset_close(ds);
    }
    ds = expect_open(damaged, "train", T, ACCEL_OK, NULL, NULL);
    if (ds) {
        int64_t bad = 6;                          /* tokens 54..63 hold the 2 at 57 */
        uint8_t m[T + 1];
        capture_begin();
        accel_status_t st = accel_dataset_read_document_starts(ds, &bad, 1, m);
        const char *log = capture_end();
        EXPECT(st == ACCEL_ERR_CORRUPT && strstr(log, "/train/document_start[57] = 2"), "bad start: %d, %s",
               st, log);
        accel_dataset_close(ds);
    }
    expect_open(damaged, "val", T, ACCEL_ERR_CORRUPT, "/val/document_start", "length differs");
    agree_and_assert();
}
END_TEST

/* ------------------------------------------------------------------ setup */

static void identify(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
}

static void teardown_none(void) {}

static void setup(void)
{
    identify();
    if (g_rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/accel-check-data.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(g_dir)) g_dir[0] = '\0';
    }
    MPI_Bcast(g_dir, sizeof g_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
}

static void teardown(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0 && g_dir[0] && !getenv("ACCEL_KEEP_SCRATCH")) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    }
}

/* ---------------------------------------------------------------- sampler */
/* The set of samples in each optimizer step is the same for every (world, grad_accum). */
START_TEST(test_sampler_world_independent)
{
    enum { N = 103, G = 24, STEPS = 12 };
    static int64_t reference[STEPS][G];
    const int worlds[] = { 1, 2, 4, 3 }, accums[] = { 1, 2, 2, 4 };
    for (int w = 0; w < 4; w++) {
        int world = worlds[w], accum = accums[w];
        accel_sampler_t s[4];
        char err[256];
        for (int r = 0; r < world; r++)
            ck_assert_int_eq(accel_sampler_init(&s[r], 77, N, G, accum, world, r, true, err, sizeof err), ACCEL_OK);
        int m = accel_sampler_micro_batch(&s[0]);
        ck_assert_int_eq(m * world * accum, G);
        for (int step = 0; step < STEPS; step++) {
            int64_t got[G];
            int k = 0;
            for (int r = 0; r < world; r++)
                for (int micro = 0; micro < accum; micro++) {
                    accel_sampler_indices(&s[r], micro, got + k);
                    k += m;
                }
            /* Sort, then compare with the single-rank reference. */
            for (int i = 1; i < G; i++)
                for (int j = i; j > 0 && got[j - 1] > got[j]; j--) { int64_t t = got[j]; got[j] = got[j - 1]; got[j - 1] = t; }
            for (int i = 1; i < G; i++) ck_assert_int_ne(got[i], got[i - 1]);   /* no repeats */
            if (w == 0) memcpy(reference[step], got, sizeof got);
            else ck_assert_int_eq(memcmp(reference[step], got, sizeof got), 0);
            for (int r = 0; r < world; r++) accel_sampler_advance(&s[r]);
        }
        ck_assert_int_eq(s[0].epoch, (STEPS * G) / ((N / G) * G));
        for (int r = 0; r < world; r++) accel_sampler_free(&s[r]);
    }
}
END_TEST

START_TEST(test_sampler_errors_and_seek)
{
    accel_sampler_t s;
    char err[256];
    ck_assert_int_eq(accel_sampler_init(&s, 1, 100, 30, 1, 4, 0, true, err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "not divisible"));
    ck_assert_int_eq(accel_sampler_init(&s, 1, 10, 16, 1, 1, 0, true, err, sizeof err), ACCEL_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(err, "fewer than one global batch"));
    /* A sample count from a damaged file: 8 * 2^62 bytes wraps to 0, which malloc once granted. */
    ck_assert_int_eq(accel_sampler_init(&s, 1, (int64_t)1 << 62, 2, 1, 1, 0, true, err, sizeof err), ACCEL_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(err, "4611686018427387904 samples"));
    ck_assert_int_eq(accel_sampler_init(&s, 1, 100, 10, 1, 1, 0, true, err, sizeof err), ACCEL_OK);
    int64_t a[10], b[10];
    for (int i = 0; i < 13; i++) accel_sampler_advance(&s);
    accel_sampler_indices(&s, 0, a);
    int64_t epoch = s.epoch, offset = s.offset;
    ck_assert_int_eq(epoch, 1);
    ck_assert_int_eq(offset, 30);
    accel_sampler_seek(&s, 0, 0);
    accel_sampler_seek(&s, epoch, offset);
    accel_sampler_indices(&s, 0, b);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    accel_sampler_free(&s);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("data");
    TCase *order = tcase_create("eval");
    tcase_add_unchecked_fixture(order, identify, teardown_none);
    tcase_add_test(order, test_eval_nbatches);
    tcase_add_test(order, test_eval_order_every_sample_once);
    tcase_add_test(order, test_eval_gather_exact);
    tcase_add_test(order, test_eval_gather_detects_errors);
    suite_add_tcase(s, order);
    TCase *files = tcase_create("dataset");
    tcase_add_unchecked_fixture(files, setup, teardown);
    tcase_add_test(files, test_format_validation);
    tcase_add_test(files, test_classification_validation);
    tcase_add_test(files, test_loader_reads);
    tcase_add_test(files, test_writer_atomic);
    tcase_add_test(files, test_uint32_tokens_and_tokenizer_meta);
    tcase_add_test(files, test_document_starts);
    tcase_set_timeout(files, 120);
    suite_add_tcase(s, files);
    TCase *sampler = tcase_create("sampler");       /* local: every rank checks the same thing */
    tcase_add_test(sampler, test_sampler_world_independent);
    tcase_add_test(sampler, test_sampler_errors_and_seek);
    suite_add_tcase(s, sampler);
    return s;
}

#include "check_main.h"

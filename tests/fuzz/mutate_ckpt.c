/* Mutation campaign against the checkpoint and dataset readers (issue 25).
 *
 *   mutate_ckpt --dir D [--n N] [--seed S] [--data-n M] [--quiet]
 *
 * Saves a small valid checkpoint (5 tensors of 1 to 4 dimensions, one of several checksum blocks,
 * two states) and writes a small token dataset with a loss mask, then applies N (M) random
 * mutations, each to a fresh copy: byte flips, truncations, zeroed and random ranges, and
 * structural ones through the HDF5 API (reshape, swap two tensors, swap a tensor with its
 * checksum table, replace a tensor by a group, delete, change types, claim huge unallocated sizes, set attributes to huge or negative
 * values, edit /meta). Each case runs in a forked child with an alarm: the checkpoint through
 * accel_ckpt_verify_layout and accel_ckpt_load (MPI_COMM_SELF) into the model's layout, the
 * dataset through accel_dataset_open/read and the sampler. Outcomes:
 *   refused             the reader said no (good)
 *   identical           accepted, and what was read is bitwise the original (fine)
 *   WRONG               accepted with different content (a failure)
 *   crash / hang        a signal / the alarm (failures)
 *   known               accepted with different content, by a mutation listed as a known limit
 *                       (none today: swapping two same-shaped tensors together with their
 *                       checksum tables was one until each tensor's checksum named its place,
 *                       the xxh3_64_named attribute) -- reported, not failed
 * Datasets carry no checksums, so a flipped token byte is accepted with different tokens by design:
 * those are counted as "changed (no checksum)" and fail nothing; a structural lie accepted (no
 * storage, a clamping integer type, a huge count) is WRONG.
 * Exit status 1 when any WRONG, crash or hang. Prints the counts per mutation kind. */
#include "build_config.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "accel/accel.h"

#define ALARM_S 20

enum { R_IDENTICAL = 0, R_REFUSED = 10, R_CHANGED = 15, R_WRONG = 20, R_SETUP = 30 };

/* ------------------------------------------------------------------ the reference state */

static accel_layout_t g_layout;
static float *g_ref[2];
static accel_ckpt_meta_t g_ref_meta;
static const char *g_arena_names[2] = { "model", "optim/exp_avg" };
static char g_orig[4096], g_work[4096], g_data_orig[4096], g_data_work[4096];
static int32_t *g_ref_tokens;
static uint8_t *g_ref_mask;             /* the dataset's loss mask, read back as samples */
static int64_t g_ref_nsamples;
#define CONTEXT 16

static uint64_t g_rng;
static uint64_t rnd(void)
{
    /* splitmix64: reproducible from --seed */
    uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t rndn(uint64_t n) { return n ? rnd() % n : 0; }

/* A real model, so that `accel_ckpt verify` finds its layout from the stored configuration too:
 * a GPT whose embedding (vocab x width = 67200 elements) spans two checksum blocks, with layers
 * whose tensors have equal shapes (swaps). CORPUS_YAML: the tiny one of the fuzz seed corpus. */
#define CAMPAIGN_YAML "model:\n  name: gpt\n  layers: 2\n  heads: 2\n  width: 32\n  context: 8\n  vocab: 2100\n"
#define CORPUS_YAML "model:\n  name: gpt\n  layers: 1\n  heads: 2\n  width: 8\n  context: 4\n  vocab: 16\n"
static accel_model_t g_model;

static int build_layout(const char *yaml)
{
    accel_config_t cfg;
    char err[1024];
    if (accel_config_from_yaml(&cfg, yaml, "mutate_ckpt", err, sizeof err) != ACCEL_OK ||
        accel_model_create(&cfg, &g_model) != ACCEL_OK) {
        fprintf(stderr, "mutate_ckpt: model: %s\n", err);
        return -1;
    }
    g_layout = g_model.layout;
    return 0;
}

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    char buf[1 << 16];
    size_t n;
    int rc = a && b ? 0 : -1;
    while (!rc && (n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n) rc = -1;
    if (a) fclose(a);
    if (b && fclose(b)) rc = -1;
    return rc;
}

static bool meta_same(const accel_ckpt_meta_t *a, const accel_ckpt_meta_t *b)
{
    return a->step == b->step && a->tokens == b->tokens && a->epoch == b->epoch &&
           a->data_offset == b->data_offset && a->rng_seed == b->rng_seed && a->rng_counter == b->rng_counter &&
           !memcmp(&a->lr, &b->lr, sizeof a->lr) && a->sched_step == b->sched_step &&
           !memcmp(&a->loss_scale, &b->loss_scale, sizeof a->loss_scale) &&
           a->loss_scale_good_steps == b->loss_scale_good_steps && a->skipped_steps == b->skipped_steps &&
           !strcmp(a->strategy, b->strategy) && !strcmp(a->precision, b->precision) &&
           !strcmp(a->config_yaml ? a->config_yaml : "", b->config_yaml ? b->config_yaml : "") &&
           a->nextra == b->nextra && !strcmp(a->tokenizer, b->tokenizer) &&
           a->tokenizer_json_len == b->tokenizer_json_len &&
           (!a->tokenizer_json_len || !memcmp(a->tokenizer_json, b->tokenizer_json, a->tokenizer_json_len));
}

static bool g_explain;               /* --judge: say what differs */

/* Load path into fresh buffers (filled with a pattern first); *same: bitwise the reference. */
static accel_status_t load_compare(const char *path, bool *same)
{
    float *buf[2];
    accel_ckpt_arena_t ar[2];
    for (int i = 0; i < 2; i++) {
        buf[i] = malloc(sizeof(float) * g_layout.numel);
        if (!buf[i]) return ACCEL_ERR_NOMEM;
        for (size_t k = 0; k < g_layout.numel; k++) buf[i][k] = -7.25f;
        ar[i] = (accel_ckpt_arena_t){ .name = g_arena_names[i], .data = buf[i], .replicated = true };
    }
    accel_ckpt_meta_t m;
    accel_ckpt_meta_init(&m);
    accel_status_t st = accel_ckpt_load(MPI_COMM_SELF, path, &g_layout, ar, 2, &m);
    *same = false;
    if (st == ACCEL_OK) {
        *same = meta_same(&m, &g_ref_meta);
        if (!*same && g_explain) fprintf(stderr, "loaded metadata differs\n");
        /* tensor elements only: padding between tensors is neither saved nor loaded */
        for (int i = 0; i < 2 && *same; i++)
            for (int t = 0; t < g_layout.ntensors && *same; t++) {
                const accel_tensor_t *T = &g_layout.tensors[t];
                *same = !memcmp(buf[i] + T->offset, g_ref[i] + T->offset, sizeof(float) * T->numel);
                if (!*same && g_explain) fprintf(stderr, "loaded %s/%s differs\n", g_arena_names[i], T->name);
            }
        accel_ckpt_meta_free(&m);
    }
    free(buf[0]);
    free(buf[1]);
    return st;
}

/* The child's verdict on the checkpoint at path. */
static int judge_ckpt(const char *path)
{
    FILE *devnull = fopen("/dev/null", "w");
    accel_status_t v = accel_ckpt_verify_layout(path, &g_layout, devnull, false, NULL);
    if (devnull) fclose(devnull);
    bool same = false;
    accel_status_t l = load_compare(path, &same);
    if (l == ACCEL_OK && !same) return R_WRONG;
    if (v != ACCEL_OK || l != ACCEL_OK) return R_REFUSED;
    return R_IDENTICAL;
}

/* The campaign dataset's loss mask, served to the writer. */
static uint8_t g_mask_stream[2200];
static const void *mask_source(void *ctx, int64_t first, int64_t count)
{
    (void)ctx;
    (void)count;
    return g_mask_stream + first;
}

/* The child's verdict on a token dataset. */
static int judge_data(const char *path)
{
    accel_dataset_t *ds = NULL;
    if (accel_dataset_open(path, "train", CONTEXT, MPI_COMM_SELF, &ds) != ACCEL_OK) return R_REFUSED;
    const accel_dataset_info_t *in = accel_dataset_info(ds);
    int64_t n = in->nsamples;
    accel_sampler_t s;
    char err[512];
    int rc = R_IDENTICAL;
    if (accel_sampler_init(&s, 1, n, 1, 1, 1, 0, true, err, sizeof err) != ACCEL_OK) {
        accel_dataset_close(ds);
        return R_REFUSED;
    }
    accel_sampler_free(&s);
    if (n != g_ref_nsamples) rc = R_CHANGED;
    int64_t m = n < g_ref_nsamples ? n : g_ref_nsamples;
    if (!in->has_loss_mask) rc = R_CHANGED;     /* the prompts would be trained */
    int32_t *tok = malloc(sizeof(int32_t) * (CONTEXT + 1));
    uint8_t mask[CONTEXT + 1];
    for (int64_t i = 0; tok && i < m; i++) {
        if (accel_dataset_read(ds, &i, 1, tok, NULL, NULL) != ACCEL_OK) { rc = R_REFUSED; break; }
        if (memcmp(tok, g_ref_tokens + i * (CONTEXT + 1), sizeof(int32_t) * (CONTEXT + 1))) rc = R_CHANGED;
        if (!in->has_loss_mask) continue;
        if (accel_dataset_read_loss_mask(ds, &i, 1, mask) != ACCEL_OK) { rc = R_REFUSED; break; }
        if (memcmp(mask, g_ref_mask + i * (CONTEXT + 1), CONTEXT + 1)) rc = R_CHANGED;
    }
    free(tok);
    accel_dataset_close(ds);
    return rc;
}

/* ------------------------------------------------------------------ mutations */

typedef struct {
    const char *name;
    int (*apply)(const char *path);
    bool structural;        /* datasets: accepting a changed file is WRONG (not just "no checksum") */
    bool known;             /* a known limit: wrong acceptances are counted as "known", not failed */
} kind_t;

static long file_size(const char *p)
{
    struct stat sb;
    return stat(p, &sb) ? -1 : (long)sb.st_size;
}

static int m_flip(const char *p)
{
    int fd = open(p, O_RDWR);
    long n = file_size(p);
    if (fd < 0 || n <= 0) return -1;
    int k = 1 + (int)rndn(8);
    /* half of the flips hit the first 8 KiB, where HDF5 keeps most of its metadata */
    long span = rndn(2) ? (n < 8192 ? n : 8192) : n;
    for (int i = 0; i < k; i++) {
        off_t off = (off_t)rndn((uint64_t)span);
        unsigned char c;
        if (pread(fd, &c, 1, off) == 1) { c ^= (unsigned char)(1u << rndn(8)); if (pwrite(fd, &c, 1, off) != 1) break; }
    }
    close(fd);
    return 0;
}

static int m_truncate(const char *p)
{
    long n = file_size(p);
    return n > 0 ? truncate(p, (off_t)rndn((uint64_t)n)) : -1;
}

static int range_write(const char *p, bool random_bytes)
{
    int fd = open(p, O_RDWR);
    long n = file_size(p);
    if (fd < 0 || n <= 0) return -1;
    size_t len = 1 + rndn(4096);
    off_t off = (off_t)rndn((uint64_t)n);
    unsigned char buf[4096];
    for (size_t i = 0; i < len; i++) buf[i] = random_bytes ? (unsigned char)rnd() : 0;
    if (off + (off_t)len > n) len = (size_t)(n - off);
    ssize_t w = pwrite(fd, buf, len, off);
    close(fd);
    return w < 0 ? -1 : 0;
}
static int m_zero(const char *p) { return range_write(p, false); }
static int m_random(const char *p) { return range_write(p, true); }

static hid_t open_rw(const char *p)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, false, true);
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, fapl);
    H5Pclose(fapl);
    return f;
}

/* --emit and --corpus force the tensor (index) and state that structural mutations pick. */
static int g_force_t = -1, g_force_u = -1, g_narenas = 2;
static const char *pick_tensor(void)
{
    int i = g_force_t >= 0 ? g_force_t : (int)rndn((uint64_t)g_layout.ntensors);
    if (g_force_t >= 0) { g_force_t = g_force_u; g_force_u = -1; }
    return g_layout.tensors[i].name;
}
static const char *pick_arena(void) { return g_arena_names[rndn((uint64_t)g_narenas)]; }

static void tpath(char *buf, size_t n, bool sums, const char *arena, const char *t)
{
    snprintf(buf, n, "%s/%s/%s", sums ? "/checksums" : "", arena, t);
}

static void copy_attrs_u64(hid_t from, hid_t to)
{
    uint64_t v;
    hid_t a = H5Aexists(from, "xxh3_64") > 0 ? H5Aopen(from, "xxh3_64", H5P_DEFAULT) : -1;
    if (a >= 0 && H5Aread(a, H5T_NATIVE_UINT64, &v) >= 0) {
        hid_t s = H5Screate(H5S_SCALAR), b = H5Acreate2(to, "xxh3_64", H5T_STD_U64LE, s, H5P_DEFAULT, H5P_DEFAULT);
        if (b >= 0) { H5Awrite(b, H5T_NATIVE_UINT64, &v); H5Aclose(b); }
        H5Sclose(s);
    }
    if (a >= 0) H5Aclose(a);
}

/* Replace the dataset at path by one of another shape / type / layout holding the same bytes
 * (as far as they go), with its xxh3_64 attribute. mode: 0 reshape, 1 fp64, 2 big-endian fp32,
 * 3 chunked unallocated 2^62 elements, 4 contiguous 2^40 elements (claims), 5 drop a row. */
static int redefine(hid_t f, const char *path, int mode)
{
    hid_t d = H5Dopen2(f, path, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t s = H5Dget_space(d);
    hsize_t dims[8];
    int nd = H5Sget_simple_extent_ndims(s);
    if (nd < 1 || nd > 4) { H5Sclose(s); H5Dclose(d); return -1; }
    H5Sget_simple_extent_dims(s, dims, NULL);
    hsize_t n = 1;
    for (int k = 0; k < nd; k++) n *= dims[k];
    double *buf = calloc(n, sizeof(double));
    H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    char tmpname[600];
    snprintf(tmpname, sizeof tmpname, "%s.old", path);
    H5Sclose(s);
    hid_t old = d;
    H5Lmove(f, path, f, tmpname, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t nd2dims[4];
    int nd2 = nd;
    hid_t type = H5T_IEEE_F32LE, dcpl = H5Pcreate(H5P_DATASET_CREATE);
    bool write = true;
    for (int k = 0; k < nd; k++) nd2dims[k] = dims[k];
    if (mode == 0) {
        if (nd == 1) { nd2 = 2; nd2dims[0] = 1; nd2dims[1] = n; }
        else if (rndn(2)) { for (int k = 0; k < nd; k++) nd2dims[k] = dims[nd - 1 - k]; }
        else { nd2 = 1; nd2dims[0] = n; }
    } else if (mode == 1) {
        type = H5T_IEEE_F64LE;
    } else if (mode == 2) {
        type = H5T_IEEE_F32BE;
    } else if (mode == 3) {
        nd2dims[0] = (hsize_t)1 << (62 - 2 * (nd - 1));
        for (int k = 1; k < nd; k++) nd2dims[k] = 4;
        hsize_t ch[4] = { 1024, 4, 4, 4 };
        H5Pset_chunk(dcpl, nd2, ch);
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
        write = false;
    } else if (mode == 4) {
        nd2dims[0] = (hsize_t)1 << 40;
        H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE);
        write = false;
    } else {
        nd2dims[0] = dims[0] > 1 ? dims[0] - 1 : dims[0] + 1;
        write = false;
    }
    hid_t s2 = H5Screate_simple(nd2, nd2dims, NULL);
    hid_t d2 = H5Dcreate2(f, path, type, s2, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int rc = d2 < 0 ? -1 : 0;
    if (d2 >= 0 && write) H5Dwrite(d2, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    if (d2 >= 0) { copy_attrs_u64(old, d2); H5Dclose(d2); }
    H5Sclose(s2);
    H5Pclose(dcpl);
    H5Dclose(old);
    H5Ldelete(f, tmpname, H5P_DEFAULT);
    free(buf);
    return rc;
}

static int structural(const char *p, int which)
{
    hid_t f = open_rw(p);
    if (f < 0) return -1;
    char a[600], b[600], c[600];
    const char *arena = pick_arena(), *t = pick_tensor(), *u = pick_tensor();
    int rc = 0;
    H5E_BEGIN_TRY {
        switch (which) {
        case 0: tpath(a, sizeof a, false, arena, t); rc = redefine(f, a, 0); break;        /* reshape */
        case 1:                                                                            /* swap two tensors */
            tpath(a, sizeof a, false, arena, t); tpath(b, sizeof b, false, arena, u);
            H5Lmove(f, a, f, "/tmp_swap", H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, b, f, a, H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, "/tmp_swap", f, b, H5P_DEFAULT, H5P_DEFAULT);
            break;
        case 2:                                                                            /* tensor <-> its table */
            tpath(a, sizeof a, false, arena, t); tpath(b, sizeof b, true, arena, t);
            H5Lmove(f, a, f, "/tmp_swap", H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, b, f, a, H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, "/tmp_swap", f, b, H5P_DEFAULT, H5P_DEFAULT);
            break;
        case 3: {                                                                          /* replace by a group */
            tpath(a, sizeof a, false, arena, t);
            H5Ldelete(f, a, H5P_DEFAULT);
            hid_t g = H5Gcreate2(f, a, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            if (g >= 0) H5Gclose(g);
            break;
        }
        case 4: tpath(a, sizeof a, false, arena, t); H5Ldelete(f, a, H5P_DEFAULT); break;  /* delete tensor */
        case 5:                                                                            /* delete tensor + table */
            tpath(a, sizeof a, false, arena, t); tpath(b, sizeof b, true, arena, t);
            H5Ldelete(f, a, H5P_DEFAULT); H5Ldelete(f, b, H5P_DEFAULT);
            break;
        case 6: tpath(b, sizeof b, true, arena, t); H5Ldelete(f, b, H5P_DEFAULT); break;   /* delete table */
        case 7: tpath(a, sizeof a, false, arena, t); rc = redefine(f, a, 1 + (int)rndn(2)); break; /* type */
        case 8: tpath(a, sizeof a, false, arena, t); rc = redefine(f, a, 3 + (int)rndn(2)); break; /* huge, unallocated */
        case 9: tpath(a, sizeof a, true, arena, t); rc = redefine(f, a, 5); break;         /* table length */
        case 10: {                                                                         /* root attribute */
            static const char *names[] = { "checksum_block_elems", "format_version", "complete" };
            static const int64_t vals[] = { (int64_t)1 << 59, (int64_t)1 << 61, (int64_t)1 << 62, -1, 0, 1, 2,
                                            INT64_MIN, INT64_MAX, 65535, 65537, 32768, 131072 };
            const char *nm = names[rndn(3)];
            int64_t v = vals[rndn(sizeof vals / sizeof vals[0])];
            H5Adelete(f, nm);
            hid_t s = H5Screate(H5S_SCALAR), at = H5Acreate2(f, nm, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
            if (at >= 0) { H5Awrite(at, H5T_NATIVE_INT64, &v); H5Aclose(at); }
            H5Sclose(s);
            break;
        }
        case 11: {                                                                         /* /meta attribute */
            static const char *names[] = { "step", "tokens", "epoch", "data_offset", "lr", "loss_scale",
                                           "rng_seed", "world_size", "sched_step" };
            const char *nm = names[rndn(sizeof names / sizeof names[0])];
            hid_t g = H5Gopen2(f, "/meta", H5P_DEFAULT);
            if (g >= 0) {
                hid_t at = H5Aopen(g, nm, H5P_DEFAULT);
                if (at >= 0) {
                    unsigned char v[8];
                    H5Aread(at, H5Aget_type(at), v);
                    v[rndn(8)] ^= (unsigned char)(1u << rndn(8));
                    H5Awrite(at, H5Aget_type(at), v);
                    H5Aclose(at);
                }
                H5Gclose(g);
            }
            break;
        }
        case 12: {                                                                         /* stored config */
            hid_t g = H5Gopen2(f, "/meta", H5P_DEFAULT);
            if (g >= 0) {
                H5Ldelete(g, "config.yaml", H5P_DEFAULT);
                const char *y = "model:\n  name: gpt\n  layers: 99\n";
                hid_t ty = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
                H5Tset_size(ty, strlen(y));
                hid_t d = H5Dcreate2(g, "config.yaml", ty, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
                if (d >= 0) { H5Dwrite(d, ty, H5S_ALL, H5S_ALL, H5P_DEFAULT, y); H5Dclose(d); }
                H5Sclose(s);
                H5Tclose(ty);
                H5Gclose(g);
            }
            break;
        }
        case 13: {                                                                         /* tensor xxh3 attr */
            tpath(a, sizeof a, false, arena, t);
            hid_t d = H5Dopen2(f, a, H5P_DEFAULT);
            if (d >= 0) {
                hid_t at = H5Aopen(d, "xxh3_64", H5P_DEFAULT);
                uint64_t v = rnd();
                if (at >= 0) { H5Awrite(at, H5T_NATIVE_UINT64, &v); H5Aclose(at); }
                H5Dclose(d);
            }
            break;
        }
        case 14: {                                                                         /* arenas attribute */
            static const char *vals[] = { "model", "optim/exp_avg", "model;optim/exp_avg;meta", "", "model;model" };
            const char *v = vals[rndn(5)];
            H5Adelete(f, "arenas");
            hid_t ty = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR);
            H5Tset_size(ty, strlen(v) + 1);
            hid_t at = H5Acreate2(f, "arenas", ty, s, H5P_DEFAULT, H5P_DEFAULT);
            if (at >= 0) { H5Awrite(at, ty, v); H5Aclose(at); }
            H5Sclose(s);
            H5Tclose(ty);
            break;
        }
        case 15:                                                                           /* swap tensor+table pairs */
            tpath(a, sizeof a, false, arena, t); tpath(b, sizeof b, false, arena, u);
            H5Lmove(f, a, f, "/tmp_swap", H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, b, f, a, H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, "/tmp_swap", f, b, H5P_DEFAULT, H5P_DEFAULT);
            tpath(a, sizeof a, true, arena, t); tpath(c, sizeof c, true, arena, u);
            H5Lmove(f, a, f, "/tmp_swap", H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, c, f, a, H5P_DEFAULT, H5P_DEFAULT);
            H5Lmove(f, "/tmp_swap", f, c, H5P_DEFAULT, H5P_DEFAULT);
            break;
        }
    } H5E_END_TRY;
    H5Fclose(f);
    return rc;
}

#define S(n) static int m_s##n(const char *p) { return structural(p, n); }
S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)
#undef S

static const kind_t g_ckpt_kinds[] = {
    { "flip", m_flip, false, false }, { "truncate", m_truncate, false, false }, { "zero-range", m_zero, false, false },
    { "random-range", m_random, false, false }, { "reshape", m_s0, true, false }, { "swap-tensors", m_s1, true, false },
    { "swap-tensor-table", m_s2, true, false }, { "group-for-tensor", m_s3, true, false }, { "delete-tensor", m_s4, true, false },
    { "delete-tensor+table", m_s5, true, false }, { "delete-table", m_s6, true, false }, { "retype", m_s7, true, false },
    { "huge-unallocated", m_s8, true, false }, { "table-length", m_s9, true, false }, { "root-attr", m_s10, true, false },
    { "meta-attr", m_s11, true, false }, { "meta-config", m_s12, true, false }, { "tensor-xxh3", m_s13, true, false },
    { "arenas-attr", m_s14, true, false }, { "swap-tensor+table-pairs", m_s15, true, false },
};
#define NCKPT (int)(sizeof g_ckpt_kinds / sizeof g_ckpt_kinds[0])

/* Dataset structural mutations: replace /train/tokens. mode 0 unallocated (same size), 1 9-bit
 * integers, 2 chunked unallocated 2^62 tokens, 3 floats, 4 2-D, 5 uint64, 6 huge vocab attr. */
static int data_structural(const char *p, int mode)
{
    hid_t f = open_rw(p);
    if (f < 0) return -1;
    int rc = 0;
    H5E_BEGIN_TRY {
        if (mode == 6) {
            static const int64_t v[] = { 0, -1, (int64_t)1 << 40, INT64_MIN };
            int64_t x = v[rndn(4)];
            hid_t at = H5Aopen(f, "vocab", H5P_DEFAULT);
            if (at >= 0) { H5Awrite(at, H5T_NATIVE_INT64, &x); H5Aclose(at); }
        } else {
            hid_t d = H5Dopen2(f, "/train/tokens", H5P_DEFAULT);
            hid_t s = d >= 0 ? H5Dget_space(d) : -1;
            hsize_t n = 0;
            if (s >= 0) H5Sget_simple_extent_dims(s, &n, NULL);
            uint64_t *buf = calloc(n ? n : 1, sizeof *buf);
            if (d >= 0) H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
            if (s >= 0) H5Sclose(s);
            if (d >= 0) H5Dclose(d);
            H5Ldelete(f, "/train/tokens", H5P_DEFAULT);
            hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), type = H5Tcopy(H5T_STD_U16LE);
            hsize_t dims[2] = { n, 1 };
            int nd = 1;
            bool write = true;
            if (mode == 0) { H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_LATE); write = false; }
            if (mode == 1) H5Tset_precision(type, 9);
            if (mode == 2) {
                hsize_t ch = 4096;
                dims[0] = (hsize_t)1 << 62;
                H5Pset_chunk(dcpl, 1, &ch);
                write = false;
            }
            if (mode == 3) { H5Tclose(type); type = H5Tcopy(H5T_IEEE_F32LE); }
            if (mode == 4) { nd = 2; dims[0] = n / 2; dims[1] = 2; write = false; }
            if (mode == 5) { H5Tclose(type); type = H5Tcopy(H5T_STD_U64LE); }
            hid_t s2 = H5Screate_simple(nd, dims, NULL);
            hid_t d2 = H5Dcreate2(f, "/train/tokens", type, s2, H5P_DEFAULT, dcpl, H5P_DEFAULT);
            if (d2 < 0) rc = -1;
            if (d2 >= 0 && write) H5Dwrite(d2, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
            if (d2 >= 0) H5Dclose(d2);
            H5Sclose(s2);
            H5Tclose(type);
            H5Pclose(dcpl);
            free(buf);
        }
    } H5E_END_TRY;
    H5Fclose(f);
    return rc;
}
#define D(n) static int m_d##n(const char *p) { return data_structural(p, n); }
D(0) D(1) D(2) D(3) D(4) D(5) D(6)
#undef D

static const kind_t g_data_kinds[] = {
    { "flip", m_flip, false, false }, { "truncate", m_truncate, false, false }, { "zero-range", m_zero, false, false },
    { "random-range", m_random, false, false }, { "unallocated-split", m_d0, true, false }, { "9-bit-tokens", m_d1, true, false },
    { "2^62-tokens", m_d2, true, false }, { "float-tokens", m_d3, true, false }, { "2-D-tokens", m_d4, true, false },
    { "uint64-tokens", m_d5, true, false }, { "vocab-attr", m_d6, true, false },
};
#define NDATA (int)(sizeof g_data_kinds / sizeof g_data_kinds[0])

/* ------------------------------------------------------------------ campaign */

typedef struct {
    long n, refused, identical, changed, wrong, known, crash, hang, skipped;
} counts_t;

/* SIGTERM/SIGINT (a timeout): finish the case at hand and print the counts so far. */
static volatile sig_atomic_t g_stop;
static void on_stop(int sig) { (void)sig; g_stop = 1; }

static int run_case(bool data, const char *path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        alarm(ALARM_S);
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0 && !getenv("MUTATE_VERBOSE")) { dup2(fd, 2); dup2(fd, 1); }
        _exit(data ? judge_data(path) : judge_ckpt(path));
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) return WTERMSIG(status) == SIGALRM ? -SIGALRM : -WTERMSIG(status);
    return WEXITSTATUS(status);
}

static int campaign(bool data, long n, counts_t *per, counts_t *tot, bool quiet)
{
    const kind_t *kinds = data ? g_data_kinds : g_ckpt_kinds;
    int nk = data ? NDATA : NCKPT;
    const char *orig = data ? g_data_orig : g_orig, *work = data ? g_data_work : g_work;
    for (long i = 0; i < n && !g_stop; i++) {
        int k = (int)rndn((uint64_t)nk);
        uint64_t case_seed = g_rng;
        if (copy_file(orig, work) || kinds[k].apply(work) < 0) {
            per[k].skipped++;
            continue;
        }
        int r = run_case(data, work);
        counts_t *c[2] = { &per[k], tot };
        const char *bad = NULL;
        for (int j = 0; j < 2; j++) {
            c[j]->n++;
            if (r == R_REFUSED) c[j]->refused++;
            else if (r == R_IDENTICAL) c[j]->identical++;
            else if (r == R_CHANGED && !(data && kinds[k].structural)) c[j]->changed++;
            else if ((r == R_WRONG || r == R_CHANGED) && kinds[k].known) { c[j]->known++; bad = "known limit, accepted"; }
            else if (r == R_WRONG || r == R_CHANGED) { c[j]->wrong++; bad = "WRONG ACCEPTANCE"; }
            else if (r == -SIGALRM) { c[j]->hang++; bad = "HANG"; }
            else if (r < 0) { c[j]->crash++; bad = "CRASH"; }
            else { c[j]->crash++; bad = "unexpected exit"; }
        }
        if (bad && !quiet) {
            char keep[4200];
            snprintf(keep, sizeof keep, "%s.case%ld", work, i);
            copy_file(orig, keep);
            g_rng = case_seed;          /* the state the mutation started from (k was drawn before) */
            kinds[k].apply(keep);
            fprintf(stderr, "%s: %s mutation '%s' (case %ld, status %d), kept as %s\n", bad,
                    data ? "dataset" : "checkpoint", kinds[k].name, i, r, keep);
        }
    }
    return 0;
}

static void print_counts(const char *what, const kind_t *kinds, int nk, const counts_t *per, const counts_t *tot)
{
    printf("%-10s %-26s %7s %8s %9s %8s %6s %6s %6s %5s\n", what, "mutation", "cases", "refused", "identical",
           "changed", "WRONG", "known", "crash", "hang");
    for (int k = 0; k < nk; k++)
        if (per[k].n)
            printf("%-10s %-26s %7ld %8ld %9ld %8ld %6ld %6ld %6ld %5ld\n", "", kinds[k].name, per[k].n,
                   per[k].refused, per[k].identical, per[k].changed, per[k].wrong, per[k].known, per[k].crash,
                   per[k].hang);
    printf("%-10s %-26s %7ld %8ld %9ld %8ld %6ld %6ld %6ld %5ld\n", what, "TOTAL", tot->n, tot->refused,
           tot->identical, tot->changed, tot->wrong, tot->known, tot->crash, tot->hang);
}

static int save_ckpt(const char *dir, const char *yaml, int narenas, char *path_out)
{
    accel_ckpt_arena_t ar[2];
    for (int i = 0; i < narenas; i++)
        ar[i] = (accel_ckpt_arena_t){ .name = g_arena_names[i], .data = g_ref[i], .replicated = true };
    accel_ckpt_meta_t m;
    accel_ckpt_meta_init(&m);
    m.step = 120;
    m.tokens = 123456;
    m.epoch = 2;
    m.data_offset = 64;
    m.rng_seed = 42;
    m.rng_counter = 7;
    m.lr = 3e-4;
    m.loss_scale = 1.0;
    snprintf(m.strategy, sizeof m.strategy, "zero1");
    snprintf(m.precision, sizeof m.precision, "fp32");
    m.config_yaml = (char *)yaml;
    accel_ckpt_meta_set_extra(&m, "note", "mutation campaign");
    setenv("ACCEL_CKPT_ALIGN", "0", 1);
    setenv("ACCEL_CKPT_SPACE_CHECK", "0", 1);
    return accel_ckpt_save(MPI_COMM_SELF, dir, &g_layout, ar, narenas, &m, 0, path_out) == ACCEL_OK ? 0 : -1;
}

static int fill_ref(void)
{
    for (int i = 0; i < 2; i++) {
        g_ref[i] = malloc(sizeof(float) * g_layout.numel);
        if (!g_ref[i]) return -1;
        for (size_t k = 0; k < g_layout.numel; k++)
            g_ref[i][k] = (float)((k * 2654435761u + (unsigned)i * 977u) % 10007) / 1000.0f - 5.0f;
    }
    return 0;
}

static int setup(const char *dir)
{
    if (build_layout(CAMPAIGN_YAML) || fill_ref()) return -1;
    char cdir[4096];
    snprintf(cdir, sizeof cdir, "%s/ckpt", dir);
    if (save_ckpt(cdir, CAMPAIGN_YAML, 2, g_orig)) return -1;
    bool same = false;
    /* The reference metadata is what a load of the untouched file gives. */
    accel_ckpt_meta_init(&g_ref_meta);
    float *tmp[2] = { malloc(sizeof(float) * g_layout.numel), malloc(sizeof(float) * g_layout.numel) };
    accel_ckpt_arena_t lr[2];
    for (int i = 0; i < 2; i++) lr[i] = (accel_ckpt_arena_t){ .name = g_arena_names[i], .data = tmp[i], .replicated = true };
    if (accel_ckpt_load(MPI_COMM_SELF, g_orig, &g_layout, lr, 2, &g_ref_meta) != ACCEL_OK) return -1;
    free(tmp[0]);
    free(tmp[1]);
    if (load_compare(g_orig, &same) != ACCEL_OK || !same ||
        accel_ckpt_verify_layout(g_orig, &g_layout, NULL, false, NULL) != ACCEL_OK) {
        fprintf(stderr, "mutate_ckpt: the untouched checkpoint does not read back identically\n");
        return -1;
    }
    snprintf(g_work, sizeof g_work, "%s/work.h5", dir);

    /* the dataset: 2000 uint16 tokens with a loss mask (prompt/completion data), context 16 */
    int64_t ntok = 2000, nval = 200;
    uint16_t *stream = malloc(sizeof *stream * (size_t)(ntok + nval));
    for (int64_t i = 0; i < ntok + nval; i++) stream[i] = (uint16_t)((i * 7919) % 500);
    for (int64_t i = 0; i < ntok + nval; i++) g_mask_stream[i] = i % 7 >= 3;
    snprintf(g_data_orig, sizeof g_data_orig, "%s/data.h5", dir);
    snprintf(g_data_work, sizeof g_data_work, "%s/data_work.h5", dir);
    accel_token_meta_t dm = { .tokenizer = "bytes", .vocab = 500, .description = "mutation campaign",
                              .loss_mask = mask_source };
    if (accel_dataset_write_tokens_meta(g_data_orig, &dm, stream, 2, ntok, nval) != ACCEL_OK)
        return -1;
    free(stream);
    accel_dataset_t *ds;
    if (accel_dataset_open(g_data_orig, "train", CONTEXT, MPI_COMM_SELF, &ds) != ACCEL_OK) return -1;
    g_ref_nsamples = accel_dataset_info(ds)->nsamples;
    g_ref_tokens = malloc(sizeof(int32_t) * (CONTEXT + 1) * (size_t)g_ref_nsamples);
    g_ref_mask = malloc((CONTEXT + 1) * (size_t)g_ref_nsamples);
    for (int64_t i = 0; i < g_ref_nsamples; i++)
        if (accel_dataset_read(ds, &i, 1, g_ref_tokens + i * (CONTEXT + 1), NULL, NULL) != ACCEL_OK ||
            accel_dataset_read_loss_mask(ds, &i, 1, g_ref_mask + i * (CONTEXT + 1)) != ACCEL_OK) return -1;
    accel_dataset_close(ds);
    if (judge_data(g_data_orig) != R_IDENTICAL) {
        fprintf(stderr, "mutate_ckpt: the untouched dataset does not read back identically\n");
        return -1;
    }
    return 0;
}

static int set_attr(const char *p, const char *obj, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    hid_t f = open_rw(p);
    if (f < 0) return -1;
    hid_t o = H5Oopen(f, obj, H5P_DEFAULT);
    int rc = o < 0 ? -1 : 0;
    H5E_BEGIN_TRY {
        if (o >= 0) H5Adelete(o, name);
        hid_t sp = H5Screate(H5S_SCALAR), a = o >= 0 ? H5Acreate2(o, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT) : -1;
        if (a < 0 || H5Awrite(a, mtype, v) < 0) rc = -1;
        if (a >= 0) H5Aclose(a);
        H5Sclose(sp);
    } H5E_END_TRY;
    if (o >= 0) H5Oclose(o);
    H5Fclose(f);
    return rc;
}

static int del_attr(const char *p, const char *obj, const char *name)
{
    hid_t f = open_rw(p);
    if (f < 0) return -1;
    int rc = H5Adelete_by_name(f, obj, name, H5P_DEFAULT) < 0 ? -1 : 0;
    H5Fclose(f);
    return rc;
}

/* *a: the first 2-D tensor whose dimensions differ (reshaping it changes the shape); *u, *v: the
 * first two tensors of equal shape (a swap keeps every shape). */
static void pick_2d(int *a, int *u, int *v)
{
    *a = *u = *v = -1;
    for (int t = 0; t < g_layout.ntensors; t++) {
        const accel_tensor_t *T = &g_layout.tensors[t];
        if (*a < 0 && T->ndim == 2 && T->shape[0] != T->shape[1]) *a = t;
        for (int w = t + 1; w < g_layout.ntensors && *u < 0; w++) {
            const accel_tensor_t *W = &g_layout.tensors[w];
            bool same = T->ndim == W->ndim && T->ndim >= 2;
            for (int k = 0; same && k < T->ndim; k++) same = T->shape[k] == W->shape[k];
            if (same) { *u = t; *v = w; }
        }
    }
}

/* The defects the fuzz campaign of issue 25 found, one file each (the tool-level checks of
 * tests/ckpt_mutate.sh run accel_ckpt on them). */
static int emit(const char *dir, const char *orig, const char *data_orig)
{
    char p[4200];
    int a, u, w, rc = 0;
    pick_2d(&a, &u, &w);
    int64_t v;
    double lr = 0.1;
#define OUT(name) (snprintf(p, sizeof p, "%s/%s", dir, name), copy_file(orig, p) ? -1 : 0)
    v = (int64_t)1 << 59;
    rc |= OUT("ckpt_block_2p59.h5") || set_attr(p, "/", "checksum_block_elems", H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
    v = (int64_t)1 << 61;
    rc |= OUT("ckpt_block_2p61.h5") || set_attr(p, "/", "checksum_block_elems", H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
    g_force_t = a; g_narenas = 1;
    rc |= OUT("ckpt_chunked_2p62.h5") || structural(p, 8) < 0;
    g_force_t = a;
    rc |= OUT("ckpt_reshaped.h5") || structural(p, 0) < 0;
    g_force_t = a;
    rc |= OUT("ckpt_swap_table.h5") || structural(p, 2) < 0;
    g_force_t = a;
    rc |= OUT("ckpt_group.h5") || structural(p, 3) < 0;
    g_force_t = a;
    rc |= OUT("ckpt_delete_pair.h5") || structural(p, 5) < 0;
    g_force_t = u; g_force_u = w;
    rc |= OUT("ckpt_swap_two.h5") || structural(p, 1) < 0;
    rc |= OUT("ckpt_meta_lr.h5") || set_attr(p, "/meta", "lr", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &lr);
    /* campaign seed 26, case 1073: byte flips hid the checksum's name, then changed a /meta value */
    rc |= OUT("ckpt_meta_unsummed.h5") || del_attr(p, "/meta", "meta_xxh3_64") ||
          set_attr(p, "/meta", "lr", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &lr);
    g_narenas = 2;
#undef OUT
#define OUT(name) (snprintf(p, sizeof p, "%s/%s", dir, name), copy_file(data_orig, p) ? -1 : 0)
    rc |= OUT("data_unallocated.h5") || data_structural(p, 0) < 0;
    rc |= OUT("data_9bit.h5") || data_structural(p, 1) < 0;
    rc |= OUT("data_2p62.h5") || data_structural(p, 2) < 0;
#undef OUT
    return rc ? -1 : 0;
}

/* The seed corpus of tests/fuzz/fuzz_ckpt.c: a valid checkpoint of the tiny CORPUS_YAML model
 * (one state) and a few hostile variants. */
static int corpus(const char *dir)
{
    char tmp[4200], orig[4200], p[4200];
    snprintf(tmp, sizeof tmp, "%s/.save", dir);
    if (build_layout(CORPUS_YAML) || fill_ref() || save_ckpt(tmp, CORPUS_YAML, 1, orig)) return -1;
    int rc = 0;
    int64_t v = (int64_t)1 << 59;
    g_narenas = 1;
#define OUT(name) (snprintf(p, sizeof p, "%s/%s", dir, name), copy_file(orig, p) ? -1 : 0)
    rc |= OUT("valid.h5");
    rc |= OUT("block_2p59.h5") || set_attr(p, "/", "checksum_block_elems", H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
    g_force_t = 0;
    rc |= OUT("chunked_2p62.h5") || structural(p, 8) < 0;
    g_force_t = 0;
    rc |= OUT("swap_table.h5") || structural(p, 2) < 0;
    g_force_t = 1;
    rc |= OUT("group.h5") || structural(p, 3) < 0;
#undef OUT
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) rc = -1;
    return rc ? -1 : 0;
}

/* --set-root-attr FILE NAME VALUE: overwrite one uint64 root attribute of FILE (a damaged copy of a
 * real training checkpoint for the multi-rank tests of tests/ckpt_mutate.sh). */
static int set_root_attr(const char *path, const char *name, uint64_t value)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return -1;
    int rc = -1;
    if (H5Aexists(f, name) > 0) H5Adelete(f, name);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, H5T_NATIVE_UINT64, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0 && H5Awrite(a, H5T_NATIVE_UINT64, &value) >= 0) rc = 0;
    if (a >= 0) H5Aclose(a);
    H5Sclose(s);
    H5Fclose(f);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--set-root-attr"))
        return set_root_attr(argv[2], argv[3], strtoull(argv[4], NULL, 0)) ? 1 : 0;
    const char *dir = NULL;
    long n = 300, dn = -1;
    uint64_t seed = 1;
    bool quiet = false;
    const char *emit_dir = NULL, *corpus_dir = NULL, *judge = NULL;
    bool judge_data_file = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--judge") && i + 1 < argc) { judge = argv[++i]; continue; }
        if (!strcmp(argv[i], "--judge-data") && i + 1 < argc) { judge = argv[++i]; judge_data_file = true; continue; }
        if (!strcmp(argv[i], "--emit") && i + 1 < argc) { emit_dir = argv[++i]; continue; }
        if (!strcmp(argv[i], "--corpus") && i + 1 < argc) { corpus_dir = argv[++i]; continue; }
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atol(argv[++i]);
        else if (!strcmp(argv[i], "--data-n") && i + 1 < argc) dn = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--quiet")) quiet = true;
        else { fprintf(stderr, "usage: mutate_ckpt --dir D [--n N] [--data-n M] [--seed S] [--quiet] [--emit DIR] [--judge FILE | --judge-data FILE] | --corpus DIR | --set-root-attr FILE NAME VALUE\n"); return 2; }
    }
    if (!dir && !corpus_dir) { fprintf(stderr, "mutate_ckpt: --dir is required\n"); return 2; }
    if (dn < 0) dn = n / 3;
    MPI_Init(&argc, &argv);
    accel_log_set_level(ACCEL_LOG_ERROR);
    int rc = 0;
    if (corpus_dir) {
        rc = corpus(corpus_dir) ? 2 : 0;
    } else if (setup(dir)) {
        fprintf(stderr, "mutate_ckpt: setup failed\n");
        rc = 2;
    } else {
        g_rng = seed;
        signal(SIGTERM, on_stop);
        signal(SIGINT, on_stop);
        if (judge) {                /* a kept case again, in this process, saying what differs */
            g_explain = true;
            accel_log_set_level(ACCEL_LOG_INFO);
            rc = judge_data_file ? judge_data(judge) : judge_ckpt(judge);
            printf("%s: %s\n", judge, rc == R_IDENTICAL ? "accepted, identical" : rc == R_REFUSED ? "refused" : "WRONG");
            MPI_Finalize();
            return rc == R_WRONG ? 1 : 0;
        }
        if (emit_dir) {
            rc = emit(emit_dir, g_orig, g_data_orig) ? 2 : 0;
            MPI_Finalize();
            return rc;
        }
        counts_t pc[NCKPT] = { 0 }, pd[NDATA] = { 0 }, tc = { 0 }, td = { 0 };
        campaign(false, n, pc, &tc, quiet);
        campaign(true, dn, pd, &td, quiet);
        printf("# seed %llu%s\n", (unsigned long long)seed, g_stop ? " (stopped early by a signal)" : "");
        print_counts("checkpoint", g_ckpt_kinds, NCKPT, pc, &tc);
        print_counts("dataset", g_data_kinds, NDATA, pd, &td);
        if (tc.wrong + tc.crash + tc.hang + td.wrong + td.crash + td.hang) rc = 1;
    }
    MPI_Finalize();
    return rc;
}

/* Check tests of the checkpoint library: the flat-range -> hyperslab decomposition (every element
 * exactly once, in flat order, 1-D..4-D), and in-process save/load on MPI_COMM_WORLD (any size):
 * round trips, refusals (missing, not HDF5, truncated, future version, incomplete, wrong shape,
 * missing tensor or state), bad ownership, find_latest and keep_last. */
#include "build_config.h"

#include <check.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/accel.h"

static int g_rank, g_size;
static char g_dir[256];

/* ------------------------------------------------------------------ decomposition */

/* Walk the boxes in order, each in row-major order: the flat indices must be begin, begin+1, ... */
static void check_decomp(int ndim, const int64_t *shape, uint64_t b, uint64_t e)
{
    accel_ckpt_box_t boxes[ACCEL_CKPT_MAX_BOXES];
    int n = accel_ckpt_decompose(ndim, shape, b, e, boxes);
    ck_assert_int_le(n, 2 * ndim - 1);
    if (b >= e) {
        ck_assert_int_eq(n, 0);
        return;
    }
    uint64_t expect = b;
    for (int k = 0; k < n; k++) {
        uint64_t idx[ACCEL_TENSOR_MAX_DIMS] = { 0 }, total = 1;
        for (int d = 0; d < ndim; d++) {
            ck_assert_uint_gt(boxes[k].count[d], 0);
            ck_assert_uint_le(boxes[k].start[d] + boxes[k].count[d], (uint64_t)shape[d]);
            total *= boxes[k].count[d];
        }
        for (uint64_t q = 0; q < total; q++) {
            uint64_t flat = 0;
            for (int d = 0; d < ndim; d++) flat = flat * (uint64_t)shape[d] + boxes[k].start[d] + idx[d];
            ck_assert_msg(flat == expect, "shape ndim %d range [%llu,%llu): box %d gives element %llu, "
                          "expected %llu", ndim, (unsigned long long)b, (unsigned long long)e, k,
                          (unsigned long long)flat, (unsigned long long)expect);
            expect++;
            for (int d = ndim - 1; d >= 0; d--) {
                if (++idx[d] < boxes[k].count[d]) break;
                idx[d] = 0;
            }
        }
    }
    ck_assert_uint_eq(expect, e);
}

START_TEST(test_decompose_exhaustive)
{
    /* Every range of small tensors of every rank, including dimensions of size 1. */
    static const int64_t shapes[][5] = {
        { 1, 13 }, { 1, 1 }, { 2, 3, 5 }, { 2, 1, 6 }, { 2, 4, 1 }, { 3, 2, 3, 4 },
        { 3, 3, 1, 4 }, { 4, 2, 2, 2, 3 }, { 4, 1, 3, 1, 5 }, { 4, 3, 2, 4, 1 },
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int ndim = (int)shapes[s][0];
        const int64_t *shape = &shapes[s][1];
        uint64_t numel = 1;
        for (int d = 0; d < ndim; d++) numel *= (uint64_t)shape[d];
        for (uint64_t b = 0; b <= numel; b++)
            for (uint64_t e = b; e <= numel; e++) check_decomp(ndim, shape, b, e);
    }
}
END_TEST

START_TEST(test_decompose_random)
{
    /* Larger shapes, random ranges (a fixed LCG so failures reproduce). */
    uint64_t x = 12345;
#define RND() (x = x * 6364136223846793005ull + 1442695040888963407ull, x >> 33)
    for (int it = 0; it < 400; it++) {
        int ndim = 1 + (int)(RND() % 4);
        int64_t shape[4];
        uint64_t numel = 1;
        for (int d = 0; d < ndim; d++) {
            shape[d] = 1 + (int64_t)(RND() % 9);
            numel *= (uint64_t)shape[d];
        }
        uint64_t b = RND() % (numel + 1), e = RND() % (numel + 1);
        if (b > e) { uint64_t t = b; b = e; e = t; }
        check_decomp(ndim, shape, b, e);
    }
    /* A row-aligned range is one box; a range inside one row is one box. */
    int64_t s2[2] = { 100, 1000 };
    accel_ckpt_box_t boxes[ACCEL_CKPT_MAX_BOXES];
    ck_assert_int_eq(accel_ckpt_decompose(2, s2, 3000, 7000, boxes), 1);
    ck_assert_int_eq(accel_ckpt_decompose(2, s2, 3001, 3999, boxes), 1);
    ck_assert_int_eq(accel_ckpt_decompose(2, s2, 3001, 7001, boxes), 3);
    int64_t s4[4] = { 3, 4, 5, 6 };
    ck_assert_int_eq(accel_ckpt_decompose(4, s4, 1, 359, boxes), 7);
#undef RND
}
END_TEST

START_TEST(test_hash_split_independent)
{
    /* The tensor checksum depends only on the block hashes, whatever produced them. */
    float v[1000];
    for (int i = 0; i < 1000; i++) v[i] = (float)i * 0.5f;
    uint64_t h1 = accel_ckpt_hash_block(v, 1000), h2 = accel_ckpt_hash_block(v, 1000);
    ck_assert_uint_eq(h1, h2);
    v[999] = -v[999];
    ck_assert_uint_ne(h1, accel_ckpt_hash_block(v, 1000));
    uint64_t t[2] = { h1, h2 };
    ck_assert_uint_eq(accel_ckpt_hash_tensor(t, 2), accel_ckpt_hash_tensor(t, 2));
}
END_TEST

/* ------------------------------------------------------------------ save / load */

static void layout_small(accel_layout_t *L, bool other_shape, bool extra)
{
    accel_layout_init(L);
    int64_t a[2] = { 10, 7 }, a_t[2] = { 7, 10 }, b[1] = { 5 }, c[4] = { 2, 3, 4, 5 }, d[1] = { 70000 };
    accel_layout_add(L, "a", 2, other_shape ? a_t : a, -1, 0, 0, NULL);
    accel_layout_add(L, "b", 1, b, -1, 0, 0, NULL);
    accel_layout_add(L, "blk/c", 4, c, -1, 0, 0, NULL);
    accel_layout_add(L, "d", 1, d, -1, 0, 0, NULL);
    if (extra) accel_layout_add(L, "e", 1, b, -1, 0, 0, NULL);
}

static float val(int arena, size_t i) { return (float)(arena * 1000003 + (int)i) * 0.25f; }

typedef struct {
    accel_layout_t L;
    float *buf[2];
    accel_ckpt_arena_t arenas[2];
} state_t;

static void state_make(state_t *s, bool other_shape, bool extra, bool replicated, bool fill)
{
    layout_small(&s->L, other_shape, extra);
    static const char *names[2] = { "model", "optim/momentum" };
    for (int a = 0; a < 2; a++) {
        accel_arena_alloc(&s->L, &s->buf[a]);
        for (size_t i = 0; i < s->L.numel; i++) s->buf[a][i] = fill ? val(a, i) : -1.0f;
        size_t n = s->L.numel;
        s->arenas[a] = (accel_ckpt_arena_t){ .name = names[a], .data = s->buf[a],
                                             .begin = (size_t)g_rank * n / (size_t)g_size,
                                             .end = (size_t)(g_rank + 1) * n / (size_t)g_size,
                                             .replicated = replicated };
    }
}

static void state_free(state_t *s)
{
    for (int a = 0; a < 2; a++) accel_arena_free(s->buf[a]);
    accel_layout_free(&s->L);
}

/* The chat template save_step stores (rank 0), NULL: none, as before templates were kept. */
static const char *g_chat;

static accel_status_t save_step(long step, bool replicated, int keep)
{
    state_t s;
    state_make(&s, false, false, replicated, true);
    accel_ckpt_meta_t m;
    accel_ckpt_meta_init(&m);
    m.step = step;
    m.lr = 0.5;
    snprintf(m.precision, sizeof m.precision, "fp32");
    /* Only rank 0's metadata counts: the others pass none and must still write the same file. */
    static const char tok_json[] = "{\"model\": {\"type\": \"BPE\"}}";
    if (g_rank == 0) {
        snprintf(m.tokenizer, sizeof m.tokenizer, "toy");
        snprintf(m.tokenizer_hash, sizeof m.tokenizer_hash, "0123456789abcdef");
        m.tokenizer_json = (char *)tok_json;
        m.tokenizer_json_len = sizeof tok_json - 1;
        m.chat_template = (char *)g_chat;
        m.chat_template_len = g_chat ? strlen(g_chat) : 0;
    }
    accel_status_t st = accel_ckpt_save(MPI_COMM_WORLD, g_dir, &s.L, s.arenas, 2, &m, keep, NULL);
    state_free(&s);
    return st;
}

/* Load with the given model variant; capture the log to look for a phrase. */
static accel_status_t load_expect(const char *path, bool other_shape, bool extra, const char *phrase,
                                  bool *untouched)
{
    state_t s;
    state_make(&s, other_shape, extra, false, false);
    FILE *logf = tmpfile();
    accel_log_set_stream(logf);
    accel_ckpt_meta_t m;
    accel_status_t st = accel_ckpt_load(MPI_COMM_WORLD, path, &s.L, s.arenas, 2, &m);
    accel_log_set_stream(NULL);
    if (st == ACCEL_OK) accel_ckpt_meta_free(&m);
    if (phrase && g_rank == 0) {
        char text[8192] = "";
        rewind(logf);
        size_t n = fread(text, 1, sizeof text - 1, logf);
        text[n] = '\0';
        ck_assert_msg(strstr(text, phrase), "load of %s: expected '%s' in the log, got: %s", path, phrase, text);
    }
    fclose(logf);
    if (untouched) {
        *untouched = true;
        for (int a = 0; a < 2; a++)
            for (size_t i = 0; i < s.L.numel; i++) *untouched &= s.buf[a][i] == -1.0f;
    }
    state_free(&s);
    return st;
}

static void path_of(char *buf, size_t len, long step) { snprintf(buf, len, "%s/step-%08ld.h5", g_dir, step); }

static void fresh_dir(void)
{
    if (g_rank == 0) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        ck_assert_int_eq(system(cmd), 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

START_TEST(test_roundtrip)
{
    fresh_dir();
    static const char chat[] = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}";
    for (int rep = 0; rep < 2; rep++) {
        g_chat = rep == 1 ? chat : NULL;        /* without a chat template, then with one */
        ck_assert_int_eq(save_step(10 + rep, rep == 1, 0), ACCEL_OK);
        g_chat = NULL;
        char p[512];
        path_of(p, sizeof p, 10 + rep);
        /* Load sharded the other way round (rank r reads what rank size-1-r wrote). */
        state_t s;
        state_make(&s, false, false, false, false);
        for (int a = 0; a < 2; a++) {
            size_t n = s.L.numel, q = (size_t)(g_size - 1 - g_rank);
            s.arenas[a].begin = q * n / (size_t)g_size;
            s.arenas[a].end = (q + 1) * n / (size_t)g_size;
        }
        accel_ckpt_meta_t m;
        ck_assert_int_eq(accel_ckpt_load(MPI_COMM_WORLD, p, &s.L, s.arenas, 2, &m), ACCEL_OK);
        ck_assert_int_eq(m.step, 10 + rep);
        ck_assert(m.lr == 0.5);
        ck_assert_str_eq(m.precision, "fp32");
        ck_assert_int_eq(m.world_size, g_size);
        ck_assert_ptr_nonnull(m.config_yaml);
        ck_assert_str_eq(m.tokenizer, "toy");
        ck_assert_str_eq(m.tokenizer_hash, "0123456789abcdef");
        ck_assert_uint_eq(m.tokenizer_json_len, 26);
        ck_assert_str_eq(m.tokenizer_json, "{\"model\": {\"type\": \"BPE\"}}");
        if (rep == 0) {
            ck_assert_ptr_null(m.chat_template);
            ck_assert_uint_eq(m.chat_template_len, 0);
        } else {
            ck_assert_uint_eq(m.chat_template_len, sizeof chat - 1);
            ck_assert_str_eq(m.chat_template, chat);
        }
        accel_ckpt_meta_free(&m);
        for (int a = 0; a < 2; a++)
            for (int t = 0; t < s.L.ntensors; t++) {
                const accel_tensor_t *T = &s.L.tensors[t];
                for (size_t i = T->offset; i < T->offset + T->numel; i++) {
                    bool mine = i >= s.arenas[a].begin && i < s.arenas[a].end;
                    ck_assert(s.buf[a][i] == (mine ? val(a, i) : -1.0f));
                }
            }
        state_free(&s);
        if (g_rank == 0) {
            int problems = -1;
            ck_assert_int_eq(accel_ckpt_verify(p, NULL, false, &problems), ACCEL_OK);
            ck_assert_int_eq(problems, 0);
            /* The file reader gives the template as stored (exports use it). */
            accel_ckpt_file_t *f = NULL;
            ck_assert_int_eq(accel_ckpt_file_open(p, &f, NULL, 0), ACCEL_OK);
            char *text = NULL;
            size_t len = 7;
            accel_status_t cst = accel_ckpt_file_chat_template(f, &text, &len);
            accel_ckpt_file_close(f);
            if (rep == 0) {
                ck_assert_int_eq(cst, ACCEL_ERR_NOT_FOUND);
                ck_assert_ptr_null(text);
            } else {
                ck_assert_int_eq(cst, ACCEL_OK);
                ck_assert_uint_eq(len, sizeof chat - 1);
                ck_assert_str_eq(text, chat);
            }
            free(text);
        }
    }
}
END_TEST

START_TEST(test_shard_buffers)
{
    /* ZeRO shards held in buffers of end - begin elements (data[0] = element begin). */
    fresh_dir();
    accel_layout_t L;
    layout_small(&L, false, false);
    size_t n = L.numel, b = (size_t)g_rank * n / (size_t)g_size, e = (size_t)(g_rank + 1) * n / (size_t)g_size;
    float *shard = malloc((e - b + 1) * sizeof(float));
    for (size_t i = b; i < e; i++) shard[i - b] = val(0, i);
    accel_ckpt_arena_t a = { .name = "model", .data = shard, .begin = b, .end = e, .shard_buffer = true };
    accel_ckpt_meta_t m;
    accel_ckpt_meta_init(&m);
    m.step = 21;
    ck_assert_int_eq(accel_ckpt_save(MPI_COMM_WORLD, g_dir, &L, &a, 1, &m, 0, NULL), ACCEL_OK);
    free(shard);
    /* Read back with the reversed split, into a buffer with guard elements on both sides. */
    size_t q = (size_t)(g_size - 1 - g_rank);
    b = q * n / (size_t)g_size;
    e = (q + 1) * n / (size_t)g_size;
    float *buf = malloc((e - b + 2) * sizeof(float));
    for (size_t i = 0; i < e - b + 2; i++) buf[i] = -7.0f;
    a = (accel_ckpt_arena_t){ .name = "model", .data = buf + 1, .begin = b, .end = e, .shard_buffer = true };
    char p[512];
    path_of(p, sizeof p, 21);
    ck_assert_int_eq(accel_ckpt_load(MPI_COMM_WORLD, p, &L, &a, 1, NULL), ACCEL_OK);
    ck_assert(buf[0] == -7.0f && buf[e - b + 1] == -7.0f);
    for (int t = 0; t < L.ntensors; t++)
        for (size_t i = L.tensors[t].offset; i < L.tensors[t].offset + L.tensors[t].numel; i++)
            if (i >= b && i < e) ck_assert(buf[1 + i - b] == val(0, i));
    free(buf);
    accel_layout_free(&L);
}
END_TEST

START_TEST(test_owned_vector)
{
    /* ZeRO-style: each rank owns slice r of each of two "layers", packed into one owned vector
     * (ranges = accel_range_t of dist.h). Save from the packed vectors, load into packed vectors of
     * the reversed assignment, and into a replicated full arena. */
    fresh_dir();
    accel_layout_t L;
    layout_small(&L, false, false);
    size_t split = L.tensors[2].offset, N = L.numel;      /* layer 0: a, b; layer 1: blk/c, d */
    size_t lb[2] = { 0, split }, le[2] = { split, N };
    for (int pass = 0; pass < 2; pass++) {
        int q = pass == 0 ? g_rank : g_size - 1 - g_rank;
        accel_ckpt_range_t r[2];
        int n = 0;
        size_t owned = 0;
        for (int k = 0; k < 2; k++) {
            size_t len = le[k] - lb[k], b = lb[k] + (size_t)q * len / (size_t)g_size;
            size_t e = lb[k] + (size_t)(q + 1) * len / (size_t)g_size;
            if (e > b) { r[n++] = (accel_ckpt_range_t){ b, e, owned }; owned += e - b; }
        }
        float *vec = malloc((owned + 1) * sizeof(float));
        for (int k = 0; k < n; k++)
            for (size_t g = r[k].begin; g < r[k].end; g++) vec[r[k].offset + g - r[k].begin] = pass ? -1.0f : val(1, g);
        accel_ckpt_arena_t a = { "optim/exp_avg", vec, 0, 0, false, false, r, n };
        char p[512];
        path_of(p, sizeof p, 30);
        if (pass == 0) {
            accel_ckpt_meta_t m;
            accel_ckpt_meta_init(&m);
            m.step = 30;
            ck_assert_int_eq(accel_ckpt_save(MPI_COMM_WORLD, g_dir, &L, &a, 1, &m, 0, NULL), ACCEL_OK);
        } else {
            ck_assert_int_eq(accel_ckpt_load(MPI_COMM_WORLD, p, &L, &a, 1, NULL), ACCEL_OK);
            for (int k = 0; k < n; k++)
                for (size_t g = r[k].begin; g < r[k].end; g++) {
                    bool in_tensor = false;
                    for (int t = 0; t < L.ntensors; t++)
                        in_tensor |= g >= L.tensors[t].offset && g < L.tensors[t].offset + L.tensors[t].numel;
                    float want = in_tensor ? val(1, g) : -1.0f;     /* padding is not stored */
                    ck_assert_msg(vec[r[k].offset + g - r[k].begin] == want, "element %zu", g);
                }
            float *full;
            accel_arena_alloc(&L, &full);
            accel_ckpt_arena_t rep = { "optim/exp_avg", full, 0, 0, true, false, NULL, 0 };
            ck_assert_int_eq(accel_ckpt_load(MPI_COMM_WORLD, p, &L, &rep, 1, NULL), ACCEL_OK);
            for (int t = 0; t < L.ntensors; t++)
                for (size_t g = L.tensors[t].offset; g < L.tensors[t].offset + L.tensors[t].numel; g++)
                    ck_assert(full[g] == val(1, g));
            accel_arena_free(full);
            /* Two ranges of one rank holding the same element: refused on save. */
            accel_ckpt_range_t dup[2] = { { 0, N, 0 }, { 5, 9, 0 } };
            float *big = malloc(N * sizeof(float));
            for (size_t g = 0; g < N; g++) big[g] = 0;
            accel_ckpt_arena_t bad = { "model", big, 0, 0, false, false, dup, g_rank == 0 ? 2 : 0 };
            FILE *logf = tmpfile();
            accel_log_set_stream(logf);
            ck_assert_int_eq(accel_ckpt_save(MPI_COMM_WORLD, g_dir, &L, &bad, 1, NULL, 0, NULL), ACCEL_ERR_INVALID);
            accel_log_set_stream(NULL);
            fclose(logf);
            free(big);
        }
        free(vec);
    }
    accel_layout_free(&L);
}
END_TEST

START_TEST(test_load_refusals)
{
    fresh_dir();
    ck_assert_int_eq(save_step(1, false, 0), ACCEL_OK);
    char p[512], q[600];
    path_of(p, sizeof p, 1);
    bool untouched;
    ck_assert_int_eq(load_expect(p, true, false, "has shape [10, 7]", &untouched), ACCEL_ERR_SHAPE);
    ck_assert(untouched);
    ck_assert_int_eq(load_expect(p, false, true, "has no tensor 'model/e'", &untouched), ACCEL_ERR_NOT_FOUND);
    ck_assert(untouched);
    snprintf(q, sizeof q, "%s/missing.h5", g_dir);
    ck_assert_int_eq(load_expect(q, false, false, "No such file", NULL), ACCEL_ERR_NOT_FOUND);

    /* Not HDF5; truncated; from the future; incomplete. */
    snprintf(q, sizeof q, "%s/junk.h5", g_dir);
    if (g_rank == 0) {
        FILE *f = fopen(q, "w");
        fputs("not a checkpoint\n", f);
        fclose(f);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ck_assert_int_eq(load_expect(q, false, false, "is not an HDF5 file", NULL), ACCEL_ERR_CORRUPT);

    snprintf(q, sizeof q, "%s/trunc.h5", g_dir);
    if (g_rank == 0) {
        char cmd[1400];
        snprintf(cmd, sizeof cmd, "head -c 100000 '%s' > '%s'", p, q);
        ck_assert_int_eq(system(cmd), 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    ck_assert_int_eq(load_expect(q, false, false, "truncated", &untouched), ACCEL_ERR_CORRUPT);
    ck_assert(untouched);

    static const struct { const char *attr; long long value; const char *phrase; accel_status_t st; } edits[] = {
        { "format_version", 7, "format version 7", ACCEL_ERR_UNSUPPORTED },
        { "complete", 0, "is incomplete", ACCEL_ERR_CORRUPT },
    };
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        snprintf(q, sizeof q, "%s/edit%zu.h5", g_dir, k);
        if (g_rank == 0) {
            char cmd[1400];
            snprintf(cmd, sizeof cmd, "cp '%s' '%s'", p, q);
            ck_assert_int_eq(system(cmd), 0);
            hid_t f = H5Fopen(q, H5F_ACC_RDWR, H5P_DEFAULT);
            hid_t a = H5Aopen(f, edits[k].attr, H5P_DEFAULT);
            ck_assert(H5Awrite(a, H5T_NATIVE_LLONG, &edits[k].value) >= 0);
            H5Aclose(a);
            H5Fclose(f);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        ck_assert_int_eq(load_expect(q, false, false, edits[k].phrase, &untouched), edits[k].st);
        ck_assert(untouched);
    }

    /* A state the file does not hold. */
    state_t s;
    state_make(&s, false, false, false, false);
    s.arenas[1].name = "optim/exp_avg";
    FILE *logf = tmpfile();
    accel_log_set_stream(logf);
    ck_assert_int_eq(accel_ckpt_load(MPI_COMM_WORLD, p, &s.L, s.arenas, 2, NULL), ACCEL_ERR_NOT_FOUND);
    accel_log_set_stream(NULL);
    fclose(logf);
    state_free(&s);
}
END_TEST

START_TEST(test_bad_ownership)
{
    fresh_dir();
    state_t s;
    state_make(&s, false, false, false, true);
    accel_ckpt_meta_t m;
    accel_ckpt_meta_init(&m);
    m.step = 3;
    FILE *logf = tmpfile();
    accel_log_set_stream(logf);
    /* A gap: the last rank leaves out its last element. */
    if (g_rank == g_size - 1) s.arenas[0].end -= 1;
    ck_assert_int_eq(accel_ckpt_save(MPI_COMM_WORLD, g_dir, &s.L, s.arenas, 2, &m, 0, NULL), ACCEL_ERR_INVALID);
    /* An overlap (with >= 2 ranks) or a range past the layout (1 rank). */
    if (g_rank == g_size - 1) s.arenas[0].end += 1;
    if (g_size > 1 && g_rank == 1) s.arenas[0].begin -= 3;
    if (g_size == 1) s.arenas[0].end = s.L.numel + 1;
    ck_assert_int_eq(accel_ckpt_save(MPI_COMM_WORLD, g_dir, &s.L, s.arenas, 2, &m, 0, NULL), ACCEL_ERR_INVALID);
    /* Ranks that disagree about the arenas: refused everywhere instead of a hang. */
    if (g_size == 1) s.arenas[0].end = s.L.numel;
    if (g_size > 1 && g_rank == 1) s.arenas[0].begin += 3;
    s.arenas[1].replicated = g_rank == 0;
    ck_assert_int_eq(accel_ckpt_save(MPI_COMM_WORLD, g_dir, &s.L, s.arenas, 2, &m, 0, NULL),
                     g_size > 1 ? ACCEL_ERR_INVALID : ACCEL_OK);
    /* (one rank: a directory is not a checkpoint, also ACCEL_ERR_INVALID) */
    ck_assert_int_eq(accel_ckpt_load(MPI_COMM_WORLD, g_dir, &s.L, s.arenas, 2, NULL), ACCEL_ERR_INVALID);
    accel_log_set_stream(NULL);
    fclose(logf);
    state_free(&s);
    char p[512];
    path_of(p, sizeof p, 3);
    struct stat sb;
    ck_assert_int_eq(stat(p, &sb), g_size > 1 ? -1 : 0);
}
END_TEST

START_TEST(test_latest_and_keep)
{
    fresh_dir();
    char path[ACCEL_CKPT_PATH_MAX], p[512];
    FILE *logf = tmpfile();
    accel_log_set_stream(logf);
    ck_assert_int_eq(accel_ckpt_find_latest(g_dir, path), ACCEL_ERR_NOT_FOUND);
    accel_log_set_stream(NULL);
    ck_assert_int_eq(save_step(5, false, 2), ACCEL_OK);
    ck_assert_int_eq(save_step(6, true, 2), ACCEL_OK);
    ck_assert_int_eq(save_step(7, false, 2), ACCEL_OK);
    struct stat sb;
    path_of(p, sizeof p, 5);
    ck_assert_int_ne(stat(p, &sb), 0);
    path_of(p, sizeof p, 6);
    ck_assert_int_eq(stat(p, &sb), 0);
    ck_assert_int_eq(accel_ckpt_find_latest(g_dir, path), ACCEL_OK);
    path_of(p, sizeof p, 7);
    ck_assert_str_eq(path, p);
    /* Saving an older step (a rerun) never removes the file just written, nor the higher steps of
     * the abandoned timeline: pruning keeps them until a save passes them (issue 25). */
    ck_assert_int_eq(save_step(4, false, 2), ACCEL_OK);
    path_of(p, sizeof p, 4);
    ck_assert_int_eq(stat(p, &sb), 0);
    path_of(p, sizeof p, 7);
    ck_assert_int_eq(stat(p, &sb), 0);
    path_of(p, sizeof p, 6);
    ck_assert_int_eq(stat(p, &sb), 0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
        /* `latest` names garbage: fall back to the highest complete step; an incomplete newer
         * file (a tmp-like leftover renamed by hand) is skipped. */
        char lp[600];
        snprintf(lp, sizeof lp, "%s/latest", g_dir);
        FILE *f = fopen(lp, "w");
        fputs("step-00000099.h5\n", f);
        fclose(f);
        char junk[600];
        snprintf(junk, sizeof junk, "%s/step-00000100.h5", g_dir);
        f = fopen(junk, "w");
        fputs("partial", f);
        fclose(f);
        accel_log_set_stream(logf);
        ck_assert_int_eq(accel_ckpt_find_latest(g_dir, path), ACCEL_OK);
        accel_log_set_stream(NULL);
        path_of(p, sizeof p, 7);
        ck_assert_str_eq(path, p);
    }
    fclose(logf);
    MPI_Barrier(MPI_COMM_WORLD);
}
END_TEST

START_TEST(test_meta_extra)
{
    accel_ckpt_meta_t m;
    accel_ckpt_meta_init(&m);
    ck_assert_int_eq(accel_ckpt_meta_set_extra(&m, "k", "v1"), ACCEL_OK);
    ck_assert_int_eq(accel_ckpt_meta_set_extra(&m, "k", "v2"), ACCEL_OK);
    ck_assert_int_eq(m.nextra, 1);
    ck_assert_str_eq(accel_ckpt_meta_get_extra(&m, "k"), "v2");
    ck_assert_ptr_null(accel_ckpt_meta_get_extra(&m, "nope"));
    FILE *logf = tmpfile();
    accel_log_set_stream(logf);
    ck_assert_int_eq(accel_ckpt_meta_set_extra(&m, "a/b", "x"), ACCEL_ERR_INVALID);
    accel_log_set_stream(NULL);
    fclose(logf);
}
END_TEST

START_TEST(test_cleanup)
{
    fresh_dir();
}
END_TEST

static Suite *make_suite(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    /* One scratch directory for all ranks: rank 0 names it. */
    if (g_rank == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(g_dir, sizeof g_dir, "%s/accel-check-ckpt.%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    }
    MPI_Bcast(g_dir, sizeof g_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    Suite *s = suite_create("ckpt");
    TCase *tc = tcase_create("decompose");
    tcase_add_test(tc, test_decompose_exhaustive);
    tcase_add_test(tc, test_decompose_random);
    tcase_add_test(tc, test_hash_split_independent);
    tcase_add_test(tc, test_meta_extra);
    suite_add_tcase(s, tc);
    tc = tcase_create("io");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_shard_buffers);
    tcase_add_test(tc, test_owned_vector);
    tcase_add_test(tc, test_load_refusals);
    tcase_add_test(tc, test_bad_ownership);
    tcase_add_test(tc, test_latest_and_keep);
    tcase_add_test(tc, test_cleanup);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

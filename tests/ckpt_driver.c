/* Test driver for checkpoints under mpirun (not a Check suite: the shell tests combine runs at
 * different world sizes). Builds a small model layout with 1-D..4-D tensors and three state arenas
 * whose every element is a known function of (seed, arena, tensor, index), then:
 *   save DIR STEP PATTERN [opts]       save with the ownership PATTERN
 *   save-fail DIR STEP PATTERN [--fsize BYTES]  save that must fail cleanly (under a file-size
 *                                      limit, on a full file system, or with ACCEL_CKPT_TEST_FAIL)
 *   load PATH PATTERN [opts]           load with PATTERN, check every element and the metadata
 *   latest DIR                         print accel_ckpt_find_latest(DIR)
 *   set-attr PATH NAME INT             overwrite an integer root attribute (format_version, complete)
 * PATTERN: zero (even contiguous shards), uneven (unaligned cuts, rank 1 owns nothing when there
 * are >= 3 ranks), reverse (rank r owns shard P-1-r), layers (two ranges per rank: slice r of each
 * of two "layers", as ZeRO does), striped (10007-element stripes round-robin: many ranges and
 * several pieces of one tensor per rank), replicated.
 * opts: --model base|other|extra|less, --seed S, --keep N, --step N (expected step on load).
 * Exit 0 on success, 1 on a check failure, the tool exit code of the status otherwise. */
#include "build_config.h"

#include <hdf5.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/accel.h"

#define NARENAS 3
static const char *const g_arena_names[NARENAS] = { "model", "optim/exp_avg", "optim/exp_avg_sq" };
static const uint32_t SENTINEL = 0x7fc00badu;   /* a NaN nobody computes */

static int g_rank, g_size;

/* Same function in tests/ckpt_safetensors.py: keep them in step. */
static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static float value_of(uint64_t seed, int arena, int tensor, uint64_t i)
{
    uint64_t h = splitmix64(seed * 1000003ull + (uint64_t)arena * 7919ull + (uint64_t)tensor * 104729ull);
    h = splitmix64(h ^ i);
    return (float)((double)(h >> 40) / 16777216.0 - 0.5) * 4.0f;
}

/* Values are keyed by a fixed id per tensor name, so models that drop a tensor still agree. */
static int tensor_id(const char *name)
{
    static const char *const ids[] = { "emb", "h.0.attn.qkv.weight", "h.0.bias", "conv", "big",
                                       "lnf/gain", "h.1.bias" };
    for (int i = 0; i < (int)(sizeof ids / sizeof ids[0]); i++)
        if (!strcmp(ids[i], name)) return i;
    return 99;
}

static void build_layout(accel_layout_t *L, const char *model)
{
    accel_layout_init(L);
    int64_t emb[2] = { 300, 70 }, emb_t[2] = { 70, 300 }, qkv[3] = { 3, 40, 1200 }, bias[1] = { 17 };
    int64_t conv[4] = { 5, 7, 33, 61 }, big[1] = { 150000 }, gain[1] = { 64 };
    accel_layout_add(L, "emb", 2, strcmp(model, "other") ? emb : emb_t, -1, 0, 0, NULL);
    accel_layout_add(L, "h.0.attn.qkv.weight", 3, qkv, 0, 0, 0, NULL);
    accel_layout_add(L, "h.0.bias", 1, bias, 0, 0, 0, NULL);
    if (strcmp(model, "less")) accel_layout_add(L, "conv", 4, conv, 0, 0, 0, NULL);
    accel_layout_add(L, "big", 1, big, -1, 0, 0, NULL);
    accel_layout_add(L, "lnf/gain", 1, gain, -1, 0, 0, NULL);
    if (!strcmp(model, "extra")) accel_layout_add(L, "h.1.bias", 1, bias, 1, 0, 0, NULL);
}

/* The ranges this rank owns under a pattern (offset = begin: the buffers are full-size arenas). */
#define MAX_RANGES 4096
static int pattern_ranges(const char *pattern, const accel_layout_t *L, accel_ckpt_range_t *r,
                          bool *replicated)
{
    size_t N = L->numel, P = (size_t)g_size, q = (size_t)g_rank;
    int n = 0;
    *replicated = false;
    if (!strcmp(pattern, "replicated")) {
        *replicated = true;
    } else if (!strcmp(pattern, "uneven")) {
        size_t cut[65];
        cut[0] = 0;
        for (size_t k = 1; k < P; k++) cut[k] = N * k * k / (P * P) + 7 * k + 3;
        if (P >= 3) cut[2] = cut[1];        /* rank 1 owns nothing */
        cut[P] = N;
        for (size_t k = 1; k <= P; k++) if (cut[k] < cut[k - 1]) cut[k] = cut[k - 1];
        r[n++] = (accel_ckpt_range_t){ cut[q], cut[q + 1], cut[q] };
    } else if (!strcmp(pattern, "layers")) {
        /* ZeRO-like: two "layers" (emb..h.0.bias and conv..end), rank r owns slice r of each. */
        size_t split = 0;
        for (int t = 0; t < L->ntensors; t++)
            if (!strcmp(L->tensors[t].name, "h.0.bias")) split = L->tensors[t].offset + L->tensors[t].numel;
        size_t lb[2] = { 0, split }, le[2] = { split, N };
        for (int k = 0; k < 2; k++) {
            size_t len = le[k] - lb[k], b = lb[k] + q * len / P, e = lb[k] + (q + 1) * len / P;
            if (e > b) r[n++] = (accel_ckpt_range_t){ b, e, b };
        }
    } else if (!strcmp(pattern, "striped")) {
        /* Stripes of 10007 elements dealt round-robin: many pieces of each tensor per rank, blocks
         * cut by pieces of the same rank. */
        for (size_t b = 0, k = 0; b < N && n < MAX_RANGES; b += 10007, k++)
            if (k % P == q) r[n++] = (accel_ckpt_range_t){ b, b + 10007 < N ? b + 10007 : N, b };
    } else {
        size_t s = !strcmp(pattern, "reverse") ? P - 1 - q : q;
        r[n++] = (accel_ckpt_range_t){ s * N / P, (s + 1) * N / P, s * N / P };
    }
    return n;
}

static bool owned(const accel_ckpt_range_t *r, int n, size_t g)
{
    for (int k = 0; k < n; k++)
        if (g >= r[k].begin && g < r[k].end) return true;
    return false;
}

/* save: owned values, garbage elsewhere; load: all sentinel (n = -1). */
static void fill(const accel_layout_t *L, float *buf, int arena, uint64_t seed, const accel_ckpt_range_t *r,
                 int n, bool replicated)
{
    for (size_t i = 0; i < L->numel; i++) memcpy(&buf[i], &SENTINEL, 4);
    if (n < 0) return;
    for (int t = 0; t < L->ntensors; t++) {
        const accel_tensor_t *T = &L->tensors[t];
        for (size_t i = 0; i < T->numel; i++) {
            size_t g = T->offset + i;
            if (replicated || owned(r, n, g)) buf[g] = value_of(seed, arena, tensor_id(T->name), i);
        }
    }
}

/* Every tensor element owned equals its value; everything else is still the sentinel. */
static long check(const accel_layout_t *L, const float *buf, int arena, uint64_t seed,
                  const accel_ckpt_range_t *r, int n, bool replicated)
{
    long bad = 0;
    for (size_t g = 0; g < L->numel; g++) {
        int t = -1;
        for (int k = 0; k < L->ntensors; k++)
            if (g >= L->tensors[k].offset && g < L->tensors[k].offset + L->tensors[k].numel) t = k;
        bool want_value = t >= 0 && (replicated || owned(r, n, g));
        uint32_t got;
        memcpy(&got, &buf[g], 4);
        bool ok;
        if (want_value) {
            float v = value_of(seed, arena, tensor_id(L->tensors[t].name), g - L->tensors[t].offset);
            ok = !memcmp(&v, &buf[g], 4);
        } else {
            ok = got == SENTINEL;
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "rank %d: arena %s element %zu (tensor %s) is wrong: %g (0x%08x)\n", g_rank,
                    g_arena_names[arena], g, t >= 0 ? L->tensors[t].name : "(padding)", buf[g], got);
    }
    return bad;
}

static uint64_t sum_bits(const float *buf, size_t n)
{
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &buf[i], 4);
        h = splitmix64(h ^ u);
    }
    return h;
}

int main(int argc, char **argv)
{
    accel_mpi_defaults();          /* the MPI-IO settings accel_train uses */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    accel_log_set_identity(g_rank, g_size, "test");
    int rc = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: ckpt_driver save|save-fail|load|latest ...\n");
        rc = 2;
        goto out;
    }
    const char *cmd = argv[1], *model = "base", *pattern = "zero";
    uint64_t seed = 1;
    int keep = 0;
    long long step = 0, expect_step = -1, fsize = 0;
    int pos = 0;
    const char *posv[3] = { NULL, NULL, NULL };
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--keep") && i + 1 < argc) keep = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--step") && i + 1 < argc) expect_step = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--fsize") && i + 1 < argc) fsize = atoll(argv[++i]);
        else if (pos < 3) posv[pos++] = argv[i];
    }

    if (!strcmp(cmd, "latest")) {
        char path[ACCEL_CKPT_PATH_MAX];
        accel_status_t st = accel_ckpt_find_latest(posv[0], path);
        if (st == ACCEL_OK && g_rank == 0) printf("%s\n", path);
        rc = accel_status_exit_code(st);
        goto out;
    }

    if (!strcmp(cmd, "set-attr") && pos == 3) {
        long long v = atoll(posv[2]);
        hid_t f = H5Fopen(posv[0], H5F_ACC_RDWR, H5P_DEFAULT);
        hid_t a = f >= 0 ? H5Aopen(f, posv[1], H5P_DEFAULT) : -1;
        rc = a >= 0 && H5Awrite(a, H5T_NATIVE_LLONG, &v) >= 0 ? 0 : 1;
        if (a >= 0) H5Aclose(a);
        if (f >= 0) H5Fclose(f);
        goto out;
    }

    accel_layout_t L;
    build_layout(&L, model);
    float *bufs[NARENAS];
    accel_ckpt_arena_t arenas[NARENAS];
    static accel_ckpt_range_t ranges[MAX_RANGES];
    int nranges = 0;
    bool save = !strncmp(cmd, "save", 4);
    if (save) {
        step = posv[1] ? atoll(posv[1]) : 0;
        pattern = posv[2] ? posv[2] : "zero";
    } else {
        pattern = posv[1] ? posv[1] : "zero";
    }
    for (int a = 0; a < NARENAS; a++) {
        accel_arena_alloc(&L, &bufs[a]);
        bool rep;
        nranges = pattern_ranges(pattern, &L, ranges, &rep);
        /* One range: the begin/end form; several: the range list. */
        arenas[a] = (accel_ckpt_arena_t){ g_arena_names[a], bufs[a], nranges == 1 ? ranges[0].begin : 0,
                                          nranges == 1 ? ranges[0].end : 0, rep, false,
                                          nranges > 1 ? ranges : NULL, nranges > 1 ? nranges : 0 };
        fill(&L, bufs[a], a, seed, ranges, save ? nranges : -1, rep);
    }

    if (save) {
        accel_ckpt_meta_t meta;
        accel_ckpt_meta_init(&meta);
        meta.step = step;
        meta.tokens = step * 1000;
        meta.epoch = 2;
        meta.data_offset = 12345;
        meta.rng_seed = seed;
        meta.rng_counter = 99;
        meta.lr = 1e-3;
        meta.sched_step = step;
        meta.loss_scale = 65536;
        meta.loss_scale_good_steps = 7;
        snprintf(meta.strategy, sizeof meta.strategy, "zero1");
        snprintf(meta.precision, sizeof meta.precision, "fp32");
        char yaml[] = "model:\n  name: test\ntrain:\n  steps: 10\n";
        meta.config_yaml = yaml;
        accel_ckpt_meta_set_extra(&meta, "note", "hello");
        uint64_t before[NARENAS];
        for (int a = 0; a < NARENAS; a++) before[a] = sum_bits(bufs[a], L.numel);
        if (!strcmp(cmd, "save-fail") && fsize > 0) {
            /* A file-size limit makes writes fail with EFBIG like a full disk would fail them. */
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = { (rlim_t)fsize, (rlim_t)fsize };
            struct rlimit old;
            getrlimit(RLIMIT_FSIZE, &old);
            rl.rlim_max = old.rlim_max;
            setrlimit(RLIMIT_FSIZE, &rl);
        }
        char path[ACCEL_CKPT_PATH_MAX];
        accel_status_t st = accel_ckpt_save(MPI_COMM_WORLD, posv[0], &L, arenas, NARENAS, &meta, keep, path);
        for (int a = 0; a < NARENAS; a++)
            if (sum_bits(bufs[a], L.numel) != before[a]) {
                fprintf(stderr, "rank %d: save modified arena %s\n", g_rank, g_arena_names[a]);
                rc = 1;
            }
        if (!strcmp(cmd, "save-fail")) {
            char tmp[ACCEL_CKPT_PATH_MAX + 64];
            snprintf(tmp, sizeof tmp, "%s/step-%08lld.h5.tmp", posv[0], step);
            struct stat sb;
            if (st == ACCEL_OK) { fprintf(stderr, "save under a file-size limit succeeded\n"); rc = 1; }
            else if (g_rank == 0 && stat(tmp, &sb) == 0) { fprintf(stderr, "%s left behind\n", tmp); rc = 1; }
            else if (g_rank == 0) printf("save failed as expected: %s\n", accel_status_str(st));
        } else if (st != ACCEL_OK) {
            rc = accel_status_exit_code(st);
        } else if (g_rank == 0) {
            printf("saved %s\n", path);
        }
    } else if (!strcmp(cmd, "load")) {
        accel_ckpt_meta_t meta;
        accel_status_t st = accel_ckpt_load(MPI_COMM_WORLD, posv[0], &L, arenas, NARENAS, &meta);
        if (st != ACCEL_OK) {
            rc = accel_status_exit_code(st);
        } else {
            long bad = 0;
            for (int a = 0; a < NARENAS; a++)
                bad += check(&L, bufs[a], a, seed, ranges, nranges, arenas[a].replicated);
            const char *note = accel_ckpt_meta_get_extra(&meta, "note");
            if ((expect_step >= 0 && meta.step != expect_step) || meta.tokens != meta.step * 1000 ||
                meta.epoch != 2 || meta.data_offset != 12345 || meta.rng_seed != seed ||
                meta.rng_counter != 99 || meta.lr != 1e-3 || meta.loss_scale != 65536 ||
                meta.loss_scale_good_steps != 7 || strcmp(meta.strategy, "zero1") ||
                strcmp(meta.precision, "fp32") || !meta.config_yaml ||
                strcmp(meta.config_yaml, "model:\n  name: test\ntrain:\n  steps: 10\n") || !note ||
                strcmp(note, "hello") || meta.world_size < 1 || meta.format_version != 1) {
                fprintf(stderr, "rank %d: metadata differs (step %lld)\n", g_rank, (long long)meta.step);
                bad++;
            }
            long total = 0;
            MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (total) rc = 1;
            else if (g_rank == 0)
                printf("loaded %s (step %lld, written by %d ranks) on %d ranks with pattern %s: every "
                       "element checked\n", posv[0], (long long)meta.step, meta.world_size, g_size, pattern);
            accel_ckpt_meta_free(&meta);
        }
    } else {
        fprintf(stderr, "unknown command %s\n", cmd);
        rc = 2;
    }
    for (int a = 0; a < NARENAS; a++) accel_arena_free(bufs[a]);
    accel_layout_free(&L);
out:
    MPI_Finalize();
    return rc;
}

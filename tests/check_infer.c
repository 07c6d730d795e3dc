/* Unit tests of big-model inference (include/accel/infer.h): size and map parsing, the automatic
 * device map, the weights reader (checkpoints, exported fp32/bf16, bad files), and the central
 * property: logits are bitwise identical for every device map (all resident, half on disk, all
 * but one layer on disk, everything on disk, rings of 2-4 slots) and identical to the plain
 * in-memory model. A fake model that fetches its layers in changing orders exercises the prefetch
 * schedule (learning, misses) without a GPT in the way. */
#include "build_config.h"

#include <check.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "accel/accel.h"
#include "infer_weights.h"
#include "../src/infer/infer_internal.h"

#define L_ 6
#define NH_ 4
#define C_ 64
#define T_ 32
#define V_ 256
#define SEED 1234

static char g_dir[256];

static void make_dir(void)
{
    if (g_dir[0]) return;
    snprintf(g_dir, sizeof g_dir, "%s/accel-infer.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void path_in(char *out, size_t n, const char *name) { snprintf(out, n, "%s/%s", g_dir, name); }

static accel_config_t gpt_cfg(void)
{
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.model.name, sizeof cfg.model.name, "gpt");
    cfg.model.layers = L_;
    cfg.model.heads = NH_;
    cfg.model.width = C_;
    cfg.model.context = T_;
    cfg.model.vocab = V_;
    return cfg;
}

static void write_weights(const char *name, const tw_opts_t *o, char *path, size_t n)
{
    make_dir();
    path_in(path, n, name);
    accel_config_t cfg = gpt_cfg();
    ck_assert_int_eq(tw_write(path, &cfg, o), 0);
}

static int32_t tok(int i) { return (int32_t)((i * 37 + 11) % V_); }

/* Reference: the plain model (unpadded arena, every parameter resident). rows[] receives the
 * logits of every position of sequences of length 1..T_ (first = 0), concatenated. */
static size_t ref_size(void) { return (size_t)V_ * (size_t)T_ * (T_ + 1) / 2; }

static void plain_logits(float *rows, int round_bf16)
{
    accel_config_t cfg = gpt_cfg();
    accel_model_t m;
    float *params;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    ck_assert_int_eq(accel_arena_alloc(&m.layout, &params), ACCEL_OK);
    accel_arena_init_params(&m.layout, params, SEED);
    if (round_bf16)
        for (size_t i = 0; i < m.layout.numel; i++) params[i] = tw_bf16_to_f32(tw_bf16(params[i]));
    int32_t seq[T_];
    for (int i = 0; i < T_; i++) seq[i] = tok(i);
    size_t off = 0;
    for (int n = 1; n <= T_; n++) {
        ck_assert_int_eq(m.ops->logits_range(m.state, &m.layout, params, seq, n, 0, rows + off, NULL),
                         ACCEL_OK);
        off += (size_t)n * V_;
    }
    accel_arena_free(params);
    accel_model_destroy(&m);
}

typedef struct {
    accel_weights_t *w;
    accel_config_t cfg;
    accel_model_t model;
    accel_device_map_t map;
    accel_dispatch_t *d;
} run_t;

/* Open weights, create the model empty, map (spec NULL = auto within cpu_budget), dispatch. */
static accel_status_t run_open(run_t *r, const char *path, const char *spec, size_t cpu_budget,
                               int slots, int noverrides, char **overrides)
{
    memset(r, 0, sizeof *r);
    accel_status_t st = accel_weights_open(path, &r->w);
    if (st != ACCEL_OK) return st;
    char err[1024];
    st = accel_weights_load_config(r->w, noverrides, overrides, &r->cfg, err, sizeof err);
    ck_assert_msg(st == ACCEL_OK, "%s", err);
    ck_assert_int_eq(accel_model_create(&r->cfg, &r->model), ACCEL_OK);
    ck_assert_int_eq(accel_infer_pad_layout(&r->model.layout), ACCEL_OK);
    accel_map_opts_t o = { .ring_slots = slots, .workspace = r->model.ops->logits_bytes(&r->cfg) };
    o.max_memory[ACCEL_TIER_CPU] = cpu_budget;
    o.max_memory[ACCEL_TIER_DISK] = SIZE_MAX;
    st = spec ? accel_device_map_parse(spec, &r->model.layout, &o, &r->map, err, sizeof err)
              : accel_device_map_auto(&r->model.layout, &o, &r->map);
    ck_assert_msg(st == ACCEL_OK, "map '%s': %s", spec ? spec : "auto", spec ? err : "");
    return accel_dispatch_create(&r->model, r->w, &r->map, &r->d);
}

static void run_close(run_t *r)
{
    accel_dispatch_destroy(r->d);
    if (r->map.tier) accel_device_map_free(&r->map);
    if (r->model.ops) accel_model_destroy(&r->model);
    accel_weights_close(r->w);
}

static void dispatch_logits(run_t *r, float *rows)
{
    int32_t seq[T_];
    for (int i = 0; i < T_; i++) seq[i] = tok(i);
    size_t off = 0;
    for (int n = 1; n <= T_; n++) {
        ck_assert_int_eq(accel_dispatch_logits(r->d, seq, n, 0, rows + off), ACCEL_OK);
        off += (size_t)n * V_;
    }
}

static int count_tier(const accel_device_map_t *m, accel_tier_t t)
{
    int n = 0;
    for (int l = 0; l < m->nlayers; l++) n += m->tier[l] == t;
    return n;
}

/* ------------------------------------------------------------------ parsing */

START_TEST(test_parse_sizes)
{
    size_t b;
    ck_assert_int_eq(accel_parse_bytes("64MiB", &b), ACCEL_OK);
    ck_assert_uint_eq(b, 64u << 20);
    ck_assert_int_eq(accel_parse_bytes("64M", &b), ACCEL_OK);
    ck_assert_uint_eq(b, 64u << 20);
    ck_assert_int_eq(accel_parse_bytes("1.5GiB", &b), ACCEL_OK);
    ck_assert_uint_eq(b, 3u << 29);
    ck_assert_int_eq(accel_parse_bytes("800MB", &b), ACCEL_OK);
    ck_assert_uint_eq(b, 800000000u);
    ck_assert_int_eq(accel_parse_bytes("4096", &b), ACCEL_OK);
    ck_assert_uint_eq(b, 4096);
    ck_assert_int_eq(accel_parse_bytes("0", &b), ACCEL_OK);
    ck_assert_uint_eq(b, 0);
    ck_assert_int_eq(accel_parse_bytes("12x", &b), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_parse_bytes("-5M", &b), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_parse_bytes("", &b), ACCEL_ERR_INVALID);

    size_t mm[ACCEL_NTIERS] = { 0, SIZE_MAX, SIZE_MAX };
    char err[512];
    ck_assert_int_eq(accel_parse_max_memory("cpu=64MiB,disk=1GiB", mm, err, sizeof err), ACCEL_OK);
    ck_assert_uint_eq(mm[ACCEL_TIER_CPU], 64u << 20);
    ck_assert_uint_eq(mm[ACCEL_TIER_DISK], 1u << 30);
    ck_assert_uint_eq(mm[ACCEL_TIER_GPU], 0);
    ck_assert_int_eq(accel_parse_max_memory("cpu", mm, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "TIER=SIZE"));
    ck_assert_int_eq(accel_parse_max_memory("tpu=1M", mm, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "unknown tier 'tpu'"));
    ck_assert_int_eq(accel_parse_max_memory("cpu=lots", mm, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "'lots'"));
    ck_assert_int_eq(accel_tier_parse("disk"), ACCEL_TIER_DISK);
    ck_assert_int_eq(accel_tier_parse("floppy"), -1);
}
END_TEST

START_TEST(test_parse_map)
{
    accel_config_t cfg = gpt_cfg();
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    ck_assert_int_eq(accel_infer_pad_layout(&m.layout), ACCEL_OK);
    ck_assert_int_eq(m.layout.nlayers, L_ + 2);
    /* Page padding: every layer starts on a page. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE) / sizeof(float);
    for (int i = 0; i < m.layout.ntensors; i++)
        if (i == 0 || m.layout.tensors[i].layer != m.layout.tensors[i - 1].layer)
            ck_assert_uint_eq(m.layout.tensors[i].offset % page, 0);
    accel_map_opts_t o = { .ring_slots = 2 };
    o.max_memory[ACCEL_TIER_CPU] = SIZE_MAX;
    o.max_memory[ACCEL_TIER_DISK] = SIZE_MAX;
    accel_device_map_t map;
    char err[1024];
    ck_assert_int_eq(accel_device_map_parse("0-3=cpu,4-=disk", &m.layout, &o, &map, err, sizeof err), ACCEL_OK);
    for (int l = 0; l < L_ + 2; l++) ck_assert_int_eq(map.tier[l], l <= 3 ? ACCEL_TIER_CPU : ACCEL_TIER_DISK);
    ck_assert_uint_eq(map.ring_bytes, 2 * map.bytes[4]);
    ck_assert_uint_eq(map.cpu_total, map.tier_bytes[ACCEL_TIER_CPU] + map.ring_bytes);
    accel_device_map_free(&map);
    ck_assert_int_eq(accel_device_map_parse("0=cpu,*=disk", &m.layout, &o, &map, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(count_tier(&map, ACCEL_TIER_DISK), L_ + 1);
    accel_device_map_free(&map);
    ck_assert_int_eq(accel_device_map_parse("0-2=cpu", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "no tier to layer 3"));
    ck_assert_int_eq(accel_device_map_parse("0-3=cpu,3-=disk", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "layer 3 twice"));
    ck_assert_int_eq(accel_device_map_parse("0-99=cpu", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_ptr_nonnull(strstr(err, "'0-99'"));
    ck_assert_int_eq(accel_device_map_parse("*=tape", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_device_map_parse("*=gpu", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_UNSUPPORTED);
    o.ring_slots = 1;
    ck_assert_int_eq(accel_device_map_parse("*=disk", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_INVALID);
    o.ring_slots = 2;
    o.max_memory[ACCEL_TIER_CPU] = 100000;
    ck_assert_int_eq(accel_device_map_parse("*=cpu", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(err, "cpu budget"));
    o.max_memory[ACCEL_TIER_CPU] = SIZE_MAX;
    o.max_memory[ACCEL_TIER_DISK] = 1000;
    ck_assert_int_eq(accel_device_map_parse("*=disk", &m.layout, &o, &map, err, sizeof err), ACCEL_ERR_NOMEM);
    ck_assert_ptr_nonnull(strstr(err, "disk budget"));
    accel_model_destroy(&m);

    /* Layers of 8 MiB or more start on 2 MiB boundaries; a layer's range ends at its last page,
     * before the gap up to the next boundary. */
    cfg.model.width = 448;
    cfg.model.layers = 2;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    ck_assert_int_eq(accel_infer_pad_layout(&m.layout), ACCEL_OK);
    size_t begin[4], end[4];
    ck_assert_int_eq(accel_infer_layer_ranges(&m.layout, begin, end, NULL, NULL), ACCEL_OK);
    const size_t huge = ACCEL_INFER_HUGE_BYTES / sizeof(float);
    for (int l = 1; l <= 2; l++) {
        ck_assert_uint_eq(begin[l] % huge, 0);
        ck_assert_uint_eq(end[l] % page, 0);
        ck_assert_uint_lt(end[l] - begin[l] - (size_t)(12 * 448 * 448 + 13 * 448), page);
        ck_assert_uint_le(end[l], begin[l + 1]);
    }
    ck_assert_uint_eq(begin[3] % page, 0);      /* the final norm is small: a page boundary */
    accel_model_destroy(&m);
}
END_TEST

/* The automatic map respects the budget, keeps streamed layers within the ring slot size, and
 * keeps at least as many bytes resident when the budget grows. */
START_TEST(test_auto_map)
{
    accel_config_t cfg = gpt_cfg();
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    ck_assert_int_eq(accel_infer_pad_layout(&m.layout), ACCEL_OK);
    const size_t W = m.ops->logits_bytes(&cfg);
    accel_map_opts_t o = { .ring_slots = 2, .workspace = W };
    o.max_memory[ACCEL_TIER_CPU] = SIZE_MAX;
    o.max_memory[ACCEL_TIER_DISK] = SIZE_MAX;
    o.max_memory[ACCEL_TIER_GPU] = 0;
    accel_device_map_t map;
    ck_assert_int_eq(accel_device_map_auto(&m.layout, &o, &map), ACCEL_OK);
    ck_assert_int_eq(count_tier(&map, ACCEL_TIER_CPU), L_ + 2);
    ck_assert_uint_eq(map.ring_bytes, 0);
    size_t total = map.tier_bytes[ACCEL_TIER_CPU], block = map.bytes[1];
    accel_device_map_free(&map);
    size_t prev_resident = 0;
    for (size_t budget = W + 2 * block; budget < W + total + 4 * block; budget += block / 2) {
        o.max_memory[ACCEL_TIER_CPU] = budget;
        ck_assert_int_eq(accel_device_map_auto(&m.layout, &o, &map), ACCEL_OK);
        ck_assert_uint_le(map.cpu_total, budget);
        for (int l = 0; l < map.nlayers; l++)
            if (map.tier[l] == ACCEL_TIER_DISK) ck_assert_uint_le(2 * map.bytes[l], map.ring_bytes);
        ck_assert_uint_ge(map.tier_bytes[ACCEL_TIER_CPU], prev_resident);
        prev_resident = map.tier_bytes[ACCEL_TIER_CPU];
        /* Embeddings first: layer 0 is resident as soon as anything is, beyond the small final norm. */
        if (map.tier_bytes[ACCEL_TIER_CPU] > map.bytes[L_ + 1])
            ck_assert_int_eq(map.tier[0], ACCEL_TIER_CPU);
        accel_device_map_free(&map);
    }
    /* Too small for the workspace and a ring: a clear refusal. */
    o.max_memory[ACCEL_TIER_CPU] = W + block;
    ck_assert_int_eq(accel_device_map_auto(&m.layout, &o, &map), ACCEL_ERR_NOMEM);
    /* A gpu budget is ignored (no GPU tier): nothing lands there. */
    o.max_memory[ACCEL_TIER_GPU] = SIZE_MAX;
    o.max_memory[ACCEL_TIER_CPU] = SIZE_MAX;
    ck_assert_int_eq(accel_device_map_auto(&m.layout, &o, &map), ACCEL_OK);
    ck_assert_int_eq(count_tier(&map, ACCEL_TIER_GPU), 0);
    accel_device_map_free(&map);
    accel_model_destroy(&m);
}
END_TEST

/* ------------------------------------------------------------------ bitwise identity */

START_TEST(test_maps_bitwise)
{
    char path[512];
    tw_opts_t o = { .seed = SEED };
    write_weights("ckpt.h5", &o, path, sizeof path);
    float *ref = malloc(sizeof(float) * ref_size()), *got = malloc(sizeof(float) * ref_size());
    ck_assert_ptr_nonnull(ref);
    ck_assert_ptr_nonnull(got);
    plain_logits(ref, 0);
    static const struct { const char *spec; int slots; int disk_layers; } maps[] = {
        { "*=cpu", 2, 0 },                          /* all in memory */
        { "0-3=cpu,4-=disk", 2, L_ + 2 - 4 },       /* half on disk */
        { "0=cpu,*=disk", 2, L_ + 1 },              /* everything but one layer on disk */
        { "*=disk", 2, L_ + 2 },                    /* everything on disk (embeddings re-read) */
        { "*=disk", 3, L_ + 2 },
        { "1-2=cpu,*=disk", 4, L_ },
    };
    for (size_t k = 0; k < sizeof maps / sizeof maps[0]; k++) {
        run_t r;
        ck_assert_int_eq(run_open(&r, path, maps[k].spec, SIZE_MAX, maps[k].slots, 0, NULL), ACCEL_OK);
        ck_assert_int_eq(count_tier(&r.map, ACCEL_TIER_DISK), maps[k].disk_layers);
        memset(got, 0xff, sizeof(float) * ref_size());
        dispatch_logits(&r, got);
        ck_assert_msg(!memcmp(ref, got, sizeof(float) * ref_size()),
                      "map %s (%d slots): logits differ from the plain model", maps[k].spec,
                      maps[k].slots);
        accel_dispatch_stats_t s;
        accel_dispatch_stats(r.d, &s);
        ck_assert_int_eq(s.passes, T_);
        if (maps[k].disk_layers) {
            /* Every pass streams every disk layer; after the first pass the schedule is known. */
            ck_assert_int_ge(s.layer_reads, (int64_t)T_ * (maps[k].disk_layers - 1));
            ck_assert_int_eq(s.misses, 0);
            ck_assert_uint_gt(s.bytes_read, 0);
        } else {
            ck_assert_int_eq(s.layer_reads, 0);
        }
        run_close(&r);
    }
    /* Automatic maps within budgets from "nearly all resident" down to the minimum. */
    run_t probe;
    ck_assert_int_eq(run_open(&probe, path, "*=cpu", SIZE_MAX, 2, 0, NULL), ACCEL_OK);
    size_t W = probe.model.ops->logits_bytes(&probe.cfg), block = probe.map.bytes[1];
    size_t total = probe.map.tier_bytes[ACCEL_TIER_CPU];
    run_close(&probe);
    size_t budgets[] = { W + total - block / 2, W + total / 2, W + 3 * block, W + 2 * block + 8192 };
    for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
        run_t r;
        ck_assert_int_eq(run_open(&r, path, NULL, budgets[k], 2, 0, NULL), ACCEL_OK);
        ck_assert_int_gt(count_tier(&r.map, ACCEL_TIER_DISK), 0);
        dispatch_logits(&r, got);
        ck_assert_msg(!memcmp(ref, got, sizeof(float) * ref_size()), "auto map, budget %zu", budgets[k]);
        run_close(&r);
    }
    free(ref);
    free(got);
}
END_TEST

/* Generation through the dispatcher (the tool's loop) gives accel_model_generate's tokens. */
START_TEST(test_generate_matches)
{
    char path[512];
    tw_opts_t o = { .seed = SEED };
    write_weights("gen.h5", &o, path, sizeof path);
    accel_config_t cfg = gpt_cfg();
    accel_model_t m;
    float *params;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    ck_assert_int_eq(accel_arena_alloc(&m.layout, &params), ACCEL_OK);
    accel_arena_init_params(&m.layout, params, SEED);
    enum { NP = 5, NN = T_ + 8 };               /* runs past the context: the window slides */
    int32_t prompt[NP] = { 72, 101, 108, 108, 111 }, want[NN], seq[NP + NN];
    float logits[V_];
    for (int pass = 0; pass < 2; pass++) {
        float temp = pass ? 1.3f : 0.0f;
        ck_assert_int_eq(accel_model_generate(&m, params, prompt, NP, NN, temp, 5, 9, want), ACCEL_OK);
        run_t r;
        ck_assert_int_eq(run_open(&r, path, "0=cpu,*=disk", SIZE_MAX, 2, 0, NULL), ACCEL_OK);
        memcpy(seq, prompt, sizeof prompt);
        for (int i = 0; i < NN; i++) {
            int len = NP + i, w = len < T_ ? len : T_;
            ck_assert_int_eq(accel_dispatch_logits(r.d, seq + len - w, w, w - 1, logits), ACCEL_OK);
            ck_assert_int_eq(accel_model_pick_token(logits, V_, temp, 5, 9, i, &seq[len]), ACCEL_OK);
            ck_assert_int_eq(seq[len], want[i]);
        }
        run_close(&r);
    }
    accel_arena_free(params);
    accel_model_destroy(&m);
}
END_TEST

/* Exported weights: fp32 at the root reads like the checkpoint; bf16 (accel_ckpt's float type, or
 * uint16 bits with dtype=bf16) gives the plain model run on bf16-rounded weights. */
START_TEST(test_exported)
{
    char p32[512], pf[512], pb[512];
    tw_opts_t o = { .seed = SEED, .exported = 1 };
    write_weights("exp32.h5", &o, p32, sizeof p32);
    o.dtype = TW_BF16_FLOAT;
    write_weights("expbf16.h5", &o, pf, sizeof pf);
    o.dtype = TW_BF16_BITS;
    write_weights("expbits.h5", &o, pb, sizeof pb);
    char *ov[] = { "model.name=gpt", "model.layers=6", "model.heads=4", "model.width=64",
                   "model.context=32", "model.vocab=256" };
    float *ref = malloc(sizeof(float) * ref_size()), *got = malloc(sizeof(float) * ref_size());
    plain_logits(ref, 0);
    run_t r;
    ck_assert_int_eq(run_open(&r, p32, "0-2=cpu,*=disk", SIZE_MAX, 2, 6, ov), ACCEL_OK);
    ck_assert_str_eq(accel_weights_kind(r.w), "exported weights");
    ck_assert_ptr_null(accel_weights_config_yaml(r.w));
    dispatch_logits(&r, got);
    ck_assert(!memcmp(ref, got, sizeof(float) * ref_size()));
    run_close(&r);
    plain_logits(ref, 1);
    const char *bf[] = { pf, pb };
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(run_open(&r, bf[k], "0=cpu,*=disk", SIZE_MAX, 2, 6, ov), ACCEL_OK);
        dispatch_logits(&r, got);
        ck_assert_msg(!memcmp(ref, got, sizeof(float) * ref_size()), "bf16 file %s", bf[k]);
        run_close(&r);
    }
    free(ref);
    free(got);
}
END_TEST

/* ------------------------------------------------------------------ bad files */

START_TEST(test_bad_files)
{
    char path[512], good[512];
    accel_weights_t *w;
    make_dir();
    path_in(path, sizeof path, "missing.h5");
    ck_assert_int_eq(accel_weights_open(path, &w), ACCEL_ERR_NOT_FOUND);
    path_in(path, sizeof path, "text.h5");
    FILE *f = fopen(path, "w");
    fputs("not an HDF5 file\n", f);
    fclose(f);
    ck_assert_int_eq(accel_weights_open(path, &w), ACCEL_ERR_CORRUPT);
    ck_assert_int_eq(accel_weights_open(g_dir, &w), ACCEL_ERR_INVALID);   /* a directory */

    tw_opts_t o = { .seed = SEED };
    write_weights("good.h5", &o, good, sizeof good);
    /* Truncated: the first 4 KiB only. */
    path_in(path, sizeof path, "trunc.h5");
    FILE *in = fopen(good, "rb"), *out = fopen(path, "wb");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    ck_assert_int_eq(accel_weights_open(path, &w), ACCEL_ERR_CORRUPT);

    o.incomplete = 1;
    write_weights("incomplete.h5", &o, path, sizeof path);
    ck_assert_int_eq(accel_weights_open(path, &w), ACCEL_ERR_CORRUPT);
    o.incomplete = 0;

    run_t r;
    o.drop = "h.2.mlp.fc.bias";
    write_weights("drop.h5", &o, path, sizeof path);
    ck_assert_int_eq(run_open(&r, path, "*=cpu", SIZE_MAX, 2, 0, NULL), ACCEL_ERR_NOT_FOUND);
    run_close(&r);
    o.drop = NULL;
    o.reshape = "h.4.attn.qkv.weight";
    write_weights("reshape.h5", &o, path, sizeof path);
    ck_assert_int_eq(run_open(&r, path, "*=disk", SIZE_MAX, 2, 0, NULL), ACCEL_ERR_SHAPE);
    run_close(&r);
    /* Overrides that contradict the stored weights: a shape error, not a crash. */
    char *ov[] = { "model.width=32" };
    ck_assert_int_eq(run_open(&r, good, "*=cpu", SIZE_MAX, 2, 1, ov), ACCEL_ERR_SHAPE);
    run_close(&r);
    /* Fewer layers than stored: runs (extra tensors are ignored with a warning). */
    char *ov2[] = { "model.layers=4" };
    ck_assert_int_eq(run_open(&r, good, "*=cpu", SIZE_MAX, 2, 1, ov2), ACCEL_OK);
    run_close(&r);
    /* A token outside the vocabulary fails the pass cleanly, and the next pass still works. */
    ck_assert_int_eq(run_open(&r, good, "0=cpu,*=disk", SIZE_MAX, 2, 0, NULL), ACCEL_OK);
    int32_t bad[3] = { 1, V_, 2 }, okseq[3] = { 1, 2, 3 };
    float z[3 * V_];
    ck_assert_int_eq(accel_dispatch_logits(r.d, bad, 3, 0, z), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_dispatch_logits(r.d, okseq, 3, 0, z), ACCEL_OK);
    ck_assert_int_eq(accel_dispatch_logits(r.d, okseq, T_ + 1, 0, z), ACCEL_ERR_INVALID);
    run_close(&r);
}
END_TEST

/* ------------------------------------------------------------------ prefetch schedule */

/* A fake model of NL layers (one tensor of FN values each) whose pass fetches layers in an order
 * that changes with the pass: ascending, descending, with repeats. out[0] = sum of the values it
 * saw, so a layer that is not really there (zero pages) shows. */
#define NL 7
#define FN 3000
static int g_pattern;
static const int g_orders[4][12] = {
    { 0, 1, 2, 3, 4, 5, 6, -1 },
    { 6, 5, 4, 3, 2, 1, 0, -1 },
    { 0, 1, 2, 2, 3, 1, 4, 5, 6, 0, -1 },         /* repeats, and layer 0 again at the end */
    { 3, 3, 3, 0, 6, -1 },                         /* a short pass */
};

static const accel_device_map_t *g_fake_map;
static int g_max_resident;              /* most disk layers with pages seen during a fetch */

/* Disk layers that have any physical page now (mincore over each layer's range). */
static int resident_disk_layers(const accel_layout_t *layout, const float *params)
{
    long page = sysconf(_SC_PAGESIZE);
    int n = 0;
    for (int l = 0; l < NL; l++) {
        if (g_fake_map->tier[l] != ACCEL_TIER_DISK) continue;
        uintptr_t b = (uintptr_t)(params + layout->tensors[l].offset);
        size_t len = (size_t)FN * sizeof(float);
        size_t pages = (len + (size_t)page - 1) / (size_t)page;
        unsigned char vec[16];
        ck_assert_int_eq(mincore((void *)(b / (uintptr_t)page * (uintptr_t)page), pages * (size_t)page, vec), 0);
        int any = 0;
        for (size_t k = 0; k < pages; k++) any |= vec[k] & 1;
        n += any;
    }
    return n;
}

static accel_status_t fake_logits(void *state, const accel_layout_t *layout, const float *params,
                                  const int32_t *tokens, int ntokens, int first, float *out,
                                  const accel_layer_hooks_t *hooks)
{
    (void)state; (void)tokens; (void)ntokens; (void)first;
    accel_batch_t b = { .hooks = hooks };
    double sum = 0;
    if (g_pattern == 4) {                       /* holds layers 1, 2, 3 at once */
        for (int l = 1; l <= 3; l++) accel_batch_layer_fetch(&b, l, 0);
        for (int l = 1; l <= 3; l++) {
            const float *p = params + layout->tensors[l].offset;
            for (int i = 0; i < FN; i++) sum += p[i];
        }
        for (int l = 3; l >= 1; l--) accel_batch_layer_release(&b, l);
        out[0] = (float)sum;
        return ACCEL_OK;
    }
    for (const int *l = g_orders[g_pattern]; *l >= 0; l++) {
        accel_batch_layer_fetch(&b, *l, 0);
        const float *p = params + layout->tensors[*l].offset;
        for (int i = 0; i < FN; i++) sum += p[i];
        int r = resident_disk_layers(layout, params);
        if (r > g_max_resident) g_max_resident = r;
        accel_batch_layer_release(&b, *l);
    }
    out[0] = (float)sum;
    return ACCEL_OK;
}

static const accel_model_ops_t g_fake_ops = { .abi = ACCEL_MODEL_ABI, .name = "fake",
                                              .logits_range = fake_logits };

static double fake_value(int l, int i) { return 1.0 + l + (double)i / FN; }

START_TEST(test_prefetch_schedule)
{
    char path[512];
    make_dir();
    path_in(path, sizeof path, "fake.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "model", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    float vals[FN];
    double layer_sum[NL] = { 0 };
    for (int l = 0; l < NL; l++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", l);
        for (int i = 0; i < FN; i++) {
            vals[i] = (float)fake_value(l, i);
            layer_sum[l] += vals[i];
        }
        hsize_t dims[1] = { FN };
        hid_t s = H5Screate_simple(1, dims, NULL);
        hid_t d = H5Dcreate2(g, name, H5T_IEEE_F32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, vals);
        H5Dclose(d);
        H5Sclose(s);
    }
    H5Gclose(g);
    H5Fclose(f);

    const char *specs[] = { "*=disk", "0=cpu,3=cpu,*=disk" };
    for (int slots = 2; slots <= 4; slots++)
        for (int sp = 0; sp < 2; sp++) {
            accel_model_t m;
            memset(&m, 0, sizeof m);
            m.ops = &g_fake_ops;
            accel_layout_init(&m.layout);
            for (int l = 0; l < NL; l++) {
                char name[16];
                int64_t shape[1] = { FN };
                snprintf(name, sizeof name, "t%d", l);
                ck_assert_int_eq(accel_layout_add(&m.layout, name, 1, shape, l, 0, 0.0f, NULL), ACCEL_OK);
            }
            ck_assert_int_eq(accel_infer_pad_layout(&m.layout), ACCEL_OK);
            accel_weights_t *w;
            ck_assert_int_eq(accel_weights_open(path, &w), ACCEL_OK);
            accel_map_opts_t o = { .ring_slots = slots };
            o.max_memory[ACCEL_TIER_CPU] = SIZE_MAX;
            o.max_memory[ACCEL_TIER_DISK] = SIZE_MAX;
            accel_device_map_t map;
            char err[512];
            ck_assert_int_eq(accel_device_map_parse(specs[sp], &m.layout, &o, &map, err, sizeof err), ACCEL_OK);
            accel_dispatch_t *d;
            g_fake_map = &map;
            g_max_resident = 0;
            ck_assert_int_eq(accel_dispatch_create(&m, w, &map, &d), ACCEL_OK);
            /* Each pattern several times in a row (learned after its first pass), then switches. */
            for (int round = 0; round < 12; round++) {
                g_pattern = (round / 3) % 4;
                double want = 0;
                for (const int *l = g_orders[g_pattern]; *l >= 0; l++) want += layer_sum[*l];
                float out[1];
                int32_t t0 = 0;
                ck_assert_int_eq(accel_dispatch_logits(d, &t0, 1, 0, out), ACCEL_OK);
                ck_assert_msg(fabs(out[0] - want) <= 1e-4 * want, "slots %d map %s round %d: %g != %g",
                              slots, specs[sp], round, (double)out[0], want);
            }
            /* A model holding 3 disk layers at once: fine with 3+ slots, a clear error (not a
             * hang) with 2. */
            g_pattern = 4;
            float nout[1];
            int32_t t0 = 0;
            double nwant = layer_sum[1] + layer_sum[2] + layer_sum[3];
            accel_status_t nst = accel_dispatch_logits(d, &t0, 1, 0, nout);
            if (slots >= 3 || sp == 1) {        /* map 1 keeps layer 3 resident: 2 on disk */
                ck_assert_int_eq(nst, ACCEL_OK);
                ck_assert(fabs(nout[0] - nwant) <= 1e-4 * nwant);
            } else {
                ck_assert_int_eq(nst, ACCEL_ERR_INVALID);
            }
            accel_dispatch_stats_t s;
            accel_dispatch_stats(d, &s);
            ck_assert_int_eq(s.passes, 13);
            ck_assert_int_gt(s.layer_reads, 0);
            ck_assert_int_gt(s.misses, 0);      /* the order changed: the schedule was relearned */
            /* The ring bound: never more disk layers with physical pages than slots. */
            ck_assert_int_gt(g_max_resident, 0);
            ck_assert_int_le(g_max_resident, slots);
            if (getenv("INFER_DEBUG")) fprintf(stderr, "slots %d map %s: max resident %d, misses %lld, reads %lld\n", slots, specs[sp], g_max_resident, (long long)s.misses, (long long)s.layer_reads);
            accel_dispatch_destroy(d);
            accel_device_map_free(&map);
            accel_weights_close(w);
            accel_layout_free(&m.layout);
        }
}
END_TEST

static void remove_dir(void)
{
    if (!g_dir[0]) return;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", g_dir);
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("infer");
    TCase *tc = tcase_create("infer");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_parse_sizes);
    tcase_add_test(tc, test_parse_map);
    tcase_add_test(tc, test_auto_map);
    tcase_add_test(tc, test_maps_bitwise);
    tcase_add_test(tc, test_generate_matches);
    tcase_add_test(tc, test_exported);
    tcase_add_test(tc, test_bad_files);
    tcase_add_test(tc, test_prefetch_schedule);
    tcase_add_unchecked_fixture(tc, NULL, remove_dir);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

/* Host-side unit tests of the CUDA GPT engine's planning (src/nn/gpt_cuda_plan.c), run on every
 * machine, GPU or not: the device buffer layout (alignment, no overlap, sizes), the layer spans and
 * gradient buckets of the real GPT tensor table (ddp and the ZeRO-padded zero1 layout), launch
 * geometry, and which jobs the GPU path accepts or refuses (with messages naming the model or
 * setting). Without a GPU, creating the engine must fail cleanly with a message. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

static accel_config_t gpt_cfg(int L, int NH, int C, int T, int V)
{
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.model.name, sizeof cfg.model.name, "gpt");
    cfg.model.layers = L;
    cfg.model.heads = NH;
    cfg.model.width = C;
    cfg.model.context = T;
    cfg.model.vocab = V;
    return cfg;
}

/* Every buffer of the plan: offset and size in bytes. */
typedef struct { size_t off, bytes; const char *name; } piece_t;

static int pieces_of(const accel_gpt_cuda_plan_t *p, piece_t *out)
{
    const size_t a = p->act_size, f = 4, BT = (size_t)p->B * p->T, C = (size_t)p->C;
    const size_t TT = (size_t)p->B * p->NH * p->T * p->T;
    int n = 0;
    for (int l = 0; l < p->L; l++) {
        size_t base = p->layers_base + (size_t)l * p->layer_bytes;
        const accel_gpt_cuda_layer_plan_t *q = &p->layer;
        out[n++] = (piece_t){ base + q->ln1, a * BT * C, "ln1" };
        out[n++] = (piece_t){ base + q->ln1_mean, f * BT, "ln1_mean" };
        out[n++] = (piece_t){ base + q->ln1_rstd, f * BT, "ln1_rstd" };
        out[n++] = (piece_t){ base + q->qkvp, a * BT * 3 * C, "qkvp" };
        out[n++] = (piece_t){ base + q->att, a * TT, "att" };
        out[n++] = (piece_t){ base + q->atty, a * BT * C, "atty" };
        out[n++] = (piece_t){ base + q->res2, a * BT * C, "res2" };
        out[n++] = (piece_t){ base + q->ln2, a * BT * C, "ln2" };
        out[n++] = (piece_t){ base + q->ln2_mean, f * BT, "ln2_mean" };
        out[n++] = (piece_t){ base + q->ln2_rstd, f * BT, "ln2_rstd" };
        out[n++] = (piece_t){ base + q->fch, a * BT * 4 * C, "fch" };
        out[n++] = (piece_t){ base + q->fch_gelu, a * BT * 4 * C, "fch_gelu" };
        out[n++] = (piece_t){ base + q->res3, a * BT * C, "res3" };
    }
    out[n++] = (piece_t){ p->x0, a * BT * C, "x0" };
    out[n++] = (piece_t){ p->lnf, a * BT * C, "lnf" };
    out[n++] = (piece_t){ p->lnf_mean, f * BT, "lnf_mean" };
    out[n++] = (piece_t){ p->lnf_rstd, f * BT, "lnf_rstd" };
    out[n++] = (piece_t){ p->logits, a * BT * (size_t)p->Vp, "logits" };
    out[n++] = (piece_t){ p->s_qkv, a * BT * 3 * C, "s_qkv" };
    out[n++] = (piece_t){ p->s_c, a * BT * C, "s_c" };
    out[n++] = (piece_t){ p->s_4c, a * BT * 4 * C, "s_4c" };
    out[n++] = (piece_t){ p->s_yp, a * BT * C, "s_yp" };
    out[n++] = (piece_t){ p->s_dqkvp, a * BT * 3 * C, "s_dqkvp" };
    out[n++] = (piece_t){ p->s_att32, f * TT, "s_att32" };
    out[n++] = (piece_t){ p->s_datt, a * TT, "s_datt" };
    out[n++] = (piece_t){ p->dres, a * BT * C, "dres" };
    out[n++] = (piece_t){ p->losses, f * BT, "losses" };
    return n;
}

static int by_offset(const void *x, const void *y)
{
    const piece_t *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off;
}

static void check_plan(int L, int NH, int C, int T, int V, int B, size_t asz)
{
    accel_gpt_cuda_plan_t p;
    ck_assert_int_eq(accel_gpt_cuda_plan(L, NH, C, T, V, B, asz, &p), ACCEL_OK);
    ck_assert_int_eq(p.Vp % 64, 0);
    ck_assert_int_ge(p.Vp, V);
    ck_assert_int_lt(p.Vp - V, 64);
    piece_t *pc = malloc(sizeof *pc * (size_t)(13 * L + 32));
    int n = pieces_of(&p, pc);
    qsort(pc, (size_t)n, sizeof *pc, by_offset);
    for (int i = 0; i < n; i++) {
        ck_assert_msg(pc[i].off % ACCEL_GPT_CUDA_ALIGN == 0, "%s at %zu is not aligned", pc[i].name, pc[i].off);
        ck_assert_msg(pc[i].off + pc[i].bytes <= p.total, "%s ends past the allocation", pc[i].name);
        if (i + 1 < n)
            ck_assert_msg(pc[i].off + pc[i].bytes <= pc[i + 1].off, "%s overlaps %s", pc[i].name,
                          pc[i + 1].name);
    }
    free(pc);
}

START_TEST(test_plan_layout)
{
    check_plan(2, 4, 64, 32, 100, 4, 2);
    check_plan(2, 4, 64, 32, 100, 4, 4);
    check_plan(1, 1, 8, 5, 11, 3, 2);
    check_plan(3, 3, 24, 7, 256, 1, 4);
    /* GPT-2 124M, 8 x 1024 tokens in bf16: a known size. */
    accel_gpt_cuda_plan_t p;
    ck_assert_int_eq(accel_gpt_cuda_plan(12, 12, 768, 1024, 50257, 8, 2, &p), ACCEL_OK);
    ck_assert_int_eq(p.Vp, 50304);
    const double BT = 8.0 * 1024, C = 768, TT = 8.0 * 12 * 1024 * 1024;
    double per_layer = 2 * (BT * C * 5 + BT * 3 * C + TT + 2 * BT * 4 * C) + 4 * 4 * BT;
    ck_assert_msg(p.layer_bytes >= per_layer && p.layer_bytes < per_layer + 16 * 256,
                  "layer bytes %zu vs %.0f", p.layer_bytes, per_layer);
    ck_assert_msg(p.total < (size_t)8 << 30, "124M at 8 x 1024 tokens should fit in 8 GiB, plan says %zu",
                  p.total);
}
END_TEST

START_TEST(test_plan_rejects)
{
    accel_gpt_cuda_plan_t p;
    ck_assert_int_eq(accel_gpt_cuda_plan(2, 3, 64, 32, 100, 4, 2, &p), ACCEL_ERR_INVALID); /* 64 % 3 */
    ck_assert_int_eq(accel_gpt_cuda_plan(2, 4, 64, 32, 100, 0, 2, &p), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_gpt_cuda_plan(2, 4, 64, 32, 100, 4, 3, &p), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_gpt_cuda_plan(2, 4, 64, 1 << 20, 100, 1 << 10, 2, &p), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_gpt_cuda_plan(2, 4, 64, 32, 1, 4, 2, &p), ACCEL_ERR_INVALID);
}
END_TEST

/* The built-in GPT's layout: layers are contiguous spans in order, and the buckets cover every
 * layer exactly once, highest layers first, each (but the last) at least bucket_bytes. */
static void check_buckets(const accel_layout_t *lay, size_t multiple, size_t bucket_bytes)
{
    int nl = lay->nlayers;
    size_t *b = calloc((size_t)nl, sizeof *b), *e = calloc((size_t)nl, sizeof *e);
    ck_assert_int_eq(accel_gpt_cuda_plan_layer_spans(lay, multiple, b, e), ACCEL_OK);
    for (int l = 0; l < nl; l++) {
        ck_assert_uint_lt(b[l], e[l]);
        ck_assert_uint_eq((e[l] - b[l]) % multiple, 0);
        if (l) ck_assert_uint_le(e[l - 1], b[l]);
    }
    ck_assert_uint_eq(b[0], 0);
    ck_assert_uint_le(e[nl - 1], lay->numel);
    for (int i = 0; i < lay->ntensors; i++) {
        const accel_tensor_t *t = &lay->tensors[i];
        ck_assert_uint_ge(t->offset, b[t->layer]);
        ck_assert_uint_le(t->offset + t->numel, e[t->layer]);
    }
    accel_gpt_cuda_bucket_t *bk = calloc((size_t)nl, sizeof *bk);
    int nb = accel_gpt_cuda_plan_buckets(b, e, nl, bucket_bytes, bk);
    ck_assert_int_ge(nb, 1);
    ck_assert_int_le(nb, nl);
    int expect_top = nl - 1;
    for (int i = 0; i < nb; i++) {
        ck_assert_int_eq(bk[i].last_layer, expect_top);
        ck_assert_int_le(bk[i].first_layer, bk[i].last_layer);
        ck_assert_uint_eq(bk[i].begin, b[bk[i].first_layer]);
        ck_assert_uint_eq(bk[i].end, e[bk[i].last_layer]);
        if (i + 1 < nb) ck_assert_uint_ge((bk[i].end - bk[i].begin) * 4, bucket_bytes);
        expect_top = bk[i].first_layer - 1;
    }
    ck_assert_int_eq(expect_top, -1);
    free(bk);
    free(b);
    free(e);
}

START_TEST(test_buckets)
{
    accel_config_t cfg = gpt_cfg(4, 4, 64, 32, 100);
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    ck_assert_int_eq(m.layout.nlayers, 6);
    check_buckets(&m.layout, 1, 1);                 /* one bucket per layer */
    check_buckets(&m.layout, 1, 64 * 1024);
    check_buckets(&m.layout, 1, (size_t)1 << 40);   /* one bucket for everything */
    size_t b[6], e[6];
    accel_gpt_cuda_bucket_t bk[6];
    ck_assert_int_eq(accel_gpt_cuda_plan_layer_spans(&m.layout, 1, b, e), ACCEL_OK);
    ck_assert_int_eq(accel_gpt_cuda_plan_buckets(b, e, 6, 1, bk), 6);
    ck_assert_int_eq(accel_gpt_cuda_plan_buckets(b, e, 6, (size_t)1 << 40, bk), 1);
    ck_assert_int_eq(bk[0].first_layer, 0);
    ck_assert_int_eq(bk[0].last_layer, 5);
    /* zero1 over 2 and 3 ranks: the ZeRO padding makes every layer split evenly */
    for (int world = 2; world <= 3; world++) {
        accel_model_t z;
        ck_assert_int_eq(accel_model_create(&cfg, &z), ACCEL_OK);
        size_t mult = (size_t)world * ACCEL_ARENA_ALIGN;
        ck_assert_int_eq(accel_layout_pad_layers(&z.layout, mult), ACCEL_OK);
        check_buckets(&z.layout, mult, 1);
        accel_model_destroy(&z);
    }
    accel_model_destroy(&m);
}
END_TEST

START_TEST(test_grid)
{
    ck_assert_uint_eq(accel_gpt_cuda_grid(0, 256, 65535), 1);
    ck_assert_uint_eq(accel_gpt_cuda_grid(1, 256, 65535), 1);
    ck_assert_uint_eq(accel_gpt_cuda_grid(256, 256, 65535), 1);
    ck_assert_uint_eq(accel_gpt_cuda_grid(257, 256, 65535), 2);
    ck_assert_uint_eq(accel_gpt_cuda_grid((size_t)1 << 40, 256, 65535), 65535);
    ck_assert_uint_eq(accel_gpt_cuda_grid(100, 0, 10), 10);
}
END_TEST

static accel_status_t check(accel_config_t *cfg, char *why, char *note)
{
    return accel_gpt_cuda_check_config(cfg, why, 512, note, 512);
}

START_TEST(test_config_checks)
{
    char why[512], note[512];
    accel_config_t cfg = gpt_cfg(2, 2, 16, 8, 32);
    ck_assert_int_eq(check(&cfg, why, note), ACCEL_OK);
    ck_assert_str_eq(note, "");
    snprintf(cfg.dist.strategy, sizeof cfg.dist.strategy, "zero1");
    ck_assert_int_eq(check(&cfg, why, note), ACCEL_OK);
    snprintf(cfg.precision, sizeof cfg.precision, "bf16");
    ck_assert_int_eq(check(&cfg, why, note), ACCEL_OK);
    snprintf(cfg.precision, sizeof cfg.precision, "fp16");
    ck_assert_int_eq(check(&cfg, why, note), ACCEL_OK);

    const char *refused[] = { "zero2", "zero3" };
    for (int i = 0; i < 2; i++) {
        accel_config_t c = gpt_cfg(2, 2, 16, 8, 32);
        snprintf(c.dist.strategy, sizeof c.dist.strategy, "%s", refused[i]);
        ck_assert_int_eq(check(&c, why, note), ACCEL_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(why, refused[i]) && strstr(why, "--> hint"), "message: %s", why);
    }
    accel_config_t h = gpt_cfg(2, 2, 16, 8, 32);
    h.dist.hybrid = true;
    ck_assert_int_eq(check(&h, why, note), ACCEL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(why, "hybrid"));

    accel_config_t mlp;
    accel_config_defaults(&mlp);
    snprintf(mlp.model.name, sizeof mlp.model.name, "mlp");
    ck_assert_int_eq(check(&mlp, why, note), ACCEL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(why, "model 'mlp'") && strstr(why, "device=cpu"), "message: %s", why);

    accel_config_t plug = gpt_cfg(2, 2, 16, 8, 32);
    snprintf(plug.model.plugin, sizeof plug.model.plugin, "my_model.so");
    ck_assert_int_eq(check(&plug, why, note), ACCEL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(why, "my_model.so"), "message: %s", why);

    accel_config_t bad = gpt_cfg(2, 2, 16, 8, 32);
    snprintf(bad.precision, sizeof bad.precision, "int8");
    ck_assert_int_eq(check(&bad, why, note), ACCEL_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(why, "int8"));

    accel_config_t notes = gpt_cfg(2, 2, 16, 8, 32);
    snprintf(notes.dist.comm_dtype, sizeof notes.dist.comm_dtype, "bf16");
    notes.train.sync_each_batch = true;
    ck_assert_int_eq(check(&notes, why, note), ACCEL_OK);
    ck_assert_msg(strstr(note, "comm_dtype") && strstr(note, "sync_each_batch"), "note: %s", note);
}
END_TEST

/* Without a usable GPU the engine refuses cleanly (an error status and a message, no crash); with
 * one this test has nothing to prove (tests/gpu_gpt.sh covers the engine). */
START_TEST(test_engine_without_gpu)
{
    const char *why = NULL;
    if (accel_device_cuda_count(&why) > 0) return;
    accel_config_t cfg = gpt_cfg(2, 2, 16, 8, 32);
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    accel_gpt_cuda_range_t r = { 0, m.layout.numel, 0 };
    unsigned char *mask = calloc(m.layout.numel, 1);
    accel_gpt_cuda_config_t gc = { .cfg = &cfg, .layout = &m.layout, .micro = 2, .grad_accum = 1,
                                   .ranges = &r, .nranges = 1, .owned_n = m.layout.numel,
                                   .decay_mask = mask, .adam = 1, .comm = MPI_COMM_WORLD };
    accel_gpt_cuda_t *g = (accel_gpt_cuda_t *)&gc;  /* must be reset to NULL */
    accel_status_t st = accel_gpt_cuda_create(&gc, &g);
    ck_assert_int_ne(st, ACCEL_OK);
    ck_assert_ptr_null(g);
    accel_gpt_cuda_destroy(NULL);
    free(mask);
    accel_model_destroy(&m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("gpt_cuda_plan");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, test_plan_layout);
    tcase_add_test(tc, test_plan_rejects);
    tcase_add_test(tc, test_buckets);
    tcase_add_test(tc, test_grid);
    tcase_add_test(tc, test_config_checks);
    tcase_add_test(tc, test_engine_without_gpu);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

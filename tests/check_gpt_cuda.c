/* Host-side unit tests of the CUDA GPT engine's planning (src/nn/gpt_cuda_plan.c), run on every
 * machine, GPU or not: the device buffer layout (alignment, no overlap, sizes), the layer spans and
 * gradient buckets of the real GPT tensor table (ddp and the ZeRO-padded zero1 layout), launch
 * geometry, and which jobs the GPU path accepts or refuses (with messages naming the model or
 * setting). Without a GPU, creating the engine must fail cleanly with a message. */
#include "build_config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "../src/nn/gpt_cuda.h"

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
    const size_t QKV = (size_t)p->QKV, FIN = (size_t)p->FIN, F = (size_t)p->F, QW = (size_t)p->QW;
    const size_t DC = C > QW ? C : QW, QKN = p->qk_norm ? (size_t)(p->NH + p->KVH) : 0;
    int n = 0;
    for (int l = 0; l < p->L; l++) {
        size_t base = p->layers_base + (size_t)l * p->layer_bytes;
        const accel_gpt_cuda_layer_plan_t *q = &p->layer;
        out[n++] = (piece_t){ base + q->ln1, a * BT * C, "ln1" };
        out[n++] = (piece_t){ base + q->ln1_mean, f * BT, "ln1_mean" };
        out[n++] = (piece_t){ base + q->ln1_rstd, f * BT, "ln1_rstd" };
        out[n++] = (piece_t){ base + q->qkvp, a * BT * QKV, "qkvp" };
        if (QKN) out[n++] = (piece_t){ base + q->qkn, a * BT * QKN * p->hs, "qkn" };
        if (QKN) out[n++] = (piece_t){ base + q->qkn_rstd, f * BT * QKN, "qkn_rstd" };
        out[n++] = (piece_t){ base + q->att, a * TT, "att" };
        out[n++] = (piece_t){ base + q->atty, a * BT * QW, "atty" };
        out[n++] = (piece_t){ base + q->res2, a * BT * C, "res2" };
        out[n++] = (piece_t){ base + q->ln2, a * BT * C, "ln2" };
        out[n++] = (piece_t){ base + q->ln2_mean, f * BT, "ln2_mean" };
        out[n++] = (piece_t){ base + q->ln2_rstd, f * BT, "ln2_rstd" };
        out[n++] = (piece_t){ base + q->fch, a * BT * FIN, "fch" };
        out[n++] = (piece_t){ base + q->fch_gelu, a * BT * F, "fch_gelu" };
        out[n++] = (piece_t){ base + q->res3, a * BT * C, "res3" };
    }
    out[n++] = (piece_t){ p->x0, a * BT * C, "x0" };
    out[n++] = (piece_t){ p->lnf, a * BT * C, "lnf" };
    out[n++] = (piece_t){ p->lnf_mean, f * BT, "lnf_mean" };
    out[n++] = (piece_t){ p->lnf_rstd, f * BT, "lnf_rstd" };
    out[n++] = (piece_t){ p->logits, a * BT * (size_t)p->Vp, "logits" };
    out[n++] = (piece_t){ p->s_qkv, a * BT * QKV, "s_qkv" };
    out[n++] = (piece_t){ p->s_c, a * BT * DC, "s_c" };
    out[n++] = (piece_t){ p->s_4c, a * BT * FIN, "s_4c" };
    out[n++] = (piece_t){ p->s_yp, a * BT * QW, "s_yp" };
    if (QKN) out[n++] = (piece_t){ p->s_dqkn, a * BT * QKN * p->hs, "s_dqkn" };
    out[n++] = (piece_t){ p->s_dqkvp, a * BT * QKV, "s_dqkvp" };
    out[n++] = (piece_t){ p->s_att32, f * TT, "s_att32" };
    out[n++] = (piece_t){ p->s_datt, a * TT, "s_datt" };
    out[n++] = (piece_t){ p->dres, a * BT * C, "dres" };
    out[n++] = (piece_t){ p->losses, f * BT, "losses" };
    if (FIN != F) out[n++] = (piece_t){ p->s_dh, a * BT * F, "s_dh" };
    return n;
}

static int by_offset(const void *x, const void *y)
{
    const piece_t *a = x, *b = y;
    return a->off < b->off ? -1 : a->off > b->off;
}

static void check_plan_of(const accel_gpt_cuda_plan_t *pp)
{
    accel_gpt_cuda_plan_t p = *pp;
    const int L = p.L, V = p.V;
    ck_assert_int_eq(p.Vp % 64, 0);
    ck_assert_int_ge(p.Vp, V);
    ck_assert_int_lt(p.Vp - V, 64);
    piece_t *pc = malloc(sizeof *pc * (size_t)(15 * L + 32));
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

static void check_plan(int L, int NH, int C, int T, int V, int B, size_t asz)
{
    accel_gpt_cuda_plan_t p;
    ck_assert_int_eq(accel_gpt_cuda_plan(L, NH, C, T, V, B, asz, &p), ACCEL_OK);
    ck_assert_int_eq(p.QKV, 3 * C);
    ck_assert_int_eq(p.FIN, 4 * C);
    check_plan_of(&p);
}

/* A llama's dimensions: hs = C / NH unless given (Qwen3), SwiGLU. */
static accel_decoder_dims_t llama_dims(int L, int NH, int KVH, int hs, int C, int F, int T, int V, int qkn)
{
    if (!hs) hs = C / NH;
    return (accel_decoder_dims_t){ .L = L, .NH = NH, .KVH = KVH, .hs = hs, .C = C, .T = T, .V = V,
                                   .QKV = (NH + 2 * KVH) * hs, .F = F, .FIN = 2 * F, .llama = 1,
                                   .qk_norm = qkn };
}

/* A llama's plan: q|k|v rows of (NH + 2 KVH) hs, SwiGLU [gate | up] of 2F and d(hidden) of F;
 * with hs apart from C / NH and q/k norms (Qwen3), their buffers too. */
static void check_plan_llama(int L, int NH, int KVH, int hs, int C, int F, int T, int V, int B,
                             size_t asz, int qkn)
{
    accel_gpt_cuda_plan_t p;
    const accel_decoder_dims_t d = llama_dims(L, NH, KVH, hs, C, F, T, V, qkn);
    ck_assert_int_eq(accel_gpt_cuda_plan_dims(&d, B, asz, &p), ACCEL_OK);
    ck_assert_int_eq(p.QKV, (NH + 2 * KVH) * d.hs);
    ck_assert_int_eq(p.QW, NH * d.hs);
    ck_assert_int_eq(p.KVH, KVH);
    check_plan_of(&p);
}

START_TEST(test_plan_layout)
{
    check_plan(2, 4, 64, 32, 100, 4, 2);
    check_plan(2, 4, 64, 32, 100, 4, 4);
    check_plan(1, 1, 8, 5, 11, 3, 2);
    check_plan(3, 3, 24, 7, 256, 1, 4);
    check_plan_llama(2, 4, 2, 0, 64, 96, 23, 100, 4, 2, 0);
    check_plan_llama(3, 4, 1, 0, 48, 128, 19, 77, 3, 4, 0);
    check_plan_llama(1, 8, 8, 0, 64, 176, 5, 11, 2, 2, 0);
    check_plan_llama(2, 4, 2, 24, 64, 96, 23, 100, 4, 2, 1);     /* Qwen3: attention wider than C */
    check_plan_llama(2, 4, 2, 8, 64, 96, 23, 100, 4, 4, 1);      /* ... and narrower */
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
    accel_decoder_dims_t d = llama_dims(2, 4, 3, 0, 64, 96, 32, 100, 0);     /* 4 % 3 */
    ck_assert_int_eq(accel_gpt_cuda_plan_dims(&d, 4, 2, &p), ACCEL_ERR_INVALID);
    d = llama_dims(2, 4, 0, 16, 64, 96, 32, 100, 0);                          /* no kv heads */
    ck_assert_int_eq(accel_gpt_cuda_plan_dims(&d, 4, 2, &p), ACCEL_ERR_INVALID);
    d = llama_dims(2, 4, 2, 0, 64, 96, 32, 100, 0);
    d.FIN = 48;                                                               /* FIN < F */
    ck_assert_int_eq(accel_gpt_cuda_plan_dims(&d, 4, 2, &p), ACCEL_ERR_INVALID);
}
END_TEST

/* The built-in GPT's layout as the trainer cuts it (accel_layout_layer_range, the one definition of
 * a layer's span used by buckets, ZeRO units and the device casts): layers are contiguous spans in
 * order, each a multiple of the ZeRO padding, holding every tensor of the layer. */
static void check_spans(const accel_layout_t *lay, size_t multiple)
{
    int nl = lay->nlayers;
    size_t prev_end = 0;
    for (int l = 0; l < nl; l++) {
        size_t b, e;
        accel_layout_layer_range(lay, l, multiple, &b, &e);
        ck_assert_uint_lt(b, e);
        ck_assert_uint_eq((e - b) % multiple, 0);
        ck_assert_uint_le(prev_end, b);
        if (l == 0) ck_assert_uint_eq(b, 0);
        prev_end = e;
        for (int i = 0; i < lay->ntensors; i++) {
            const accel_tensor_t *t = &lay->tensors[i];
            if (t->layer != l) continue;
            ck_assert_uint_ge(t->offset, b);
            ck_assert_uint_le(t->offset + t->numel, e);
        }
    }
    ck_assert_uint_le(prev_end, lay->numel);
    size_t b, e;
    accel_layout_layer_range(lay, nl + 3, multiple, &b, &e);     /* no such layer: empty */
    ck_assert_uint_eq(b, 0);
    ck_assert_uint_eq(e, 0);
}

START_TEST(test_layer_spans)
{
    accel_config_t cfg = gpt_cfg(4, 4, 64, 32, 100);
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    ck_assert_int_eq(m.layout.nlayers, 6);
    check_spans(&m.layout, 1);
    check_spans(&m.layout, ACCEL_ARENA_ALIGN);
    /* ZeRO over 2 and 3 ranks: the padding makes every layer split evenly */
    for (int world = 2; world <= 3; world++) {
        accel_model_t z;
        ck_assert_int_eq(accel_model_create(&cfg, &z), ACCEL_OK);
        size_t mult = (size_t)world * ACCEL_ARENA_ALIGN;
        ck_assert_int_eq(accel_layout_pad_layers(&z.layout, mult), ACCEL_OK);
        check_spans(&z.layout, mult);
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
    ck_assert_int_eq(accel_config_set(&cfg, "dist.strategy", "zero1", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(check(&cfg, why, note), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "precision", "bf16", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(cfg.precision_id, ACCEL_BF16);
    ck_assert_int_eq(check(&cfg, why, note), ACCEL_OK);
    ck_assert_int_eq(accel_config_set(&cfg, "precision", "fp16", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(check(&cfg, why, note), ACCEL_OK);

    /* every strategy runs on the GPU: they belong to the trainer, not to the model */
    const char *strategies[] = { "zero2", "zero3" };
    for (int i = 0; i < 2; i++) {
        accel_config_t c = gpt_cfg(2, 2, 16, 8, 32);
        ck_assert_int_eq(accel_config_set(&c, "dist.strategy", strategies[i], NULL, 0), ACCEL_OK);
        ck_assert_int_eq(check(&c, why, note), ACCEL_OK);
    }
    accel_config_t h = gpt_cfg(2, 2, 16, 8, 32);
    h.dist.hybrid = true;
    ck_assert_int_eq(accel_config_set(&h, "dist.strategy", "zero3", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(h.dist.strategy_id, ACCEL_ZERO3);     /* parsed once, where it is set */
    ck_assert_int_eq(check(&h, why, note), ACCEL_OK);

    /* the llama trains on the GPU too; its buffers are sized by its own widths */
    accel_config_t ll = gpt_cfg(2, 4, 64, 23, 100);
    snprintf(ll.model.name, sizeof ll.model.name, "llama");
    ll.model.kv_heads = 1;
    ll.model.tie_embeddings = false;
    ck_assert_int_eq(check(&ll, why, note), ACCEL_OK);
    size_t lb = 0, gb = 0;
    accel_config_t gg = gpt_cfg(2, 4, 64, 23, 100);
    ck_assert_int_eq(accel_gpt_cuda_estimate_bytes(&ll, 4, 0, 0, 0, &lb), ACCEL_OK);
    ck_assert_int_eq(accel_gpt_cuda_estimate_bytes(&gg, 4, 0, 0, 0, &gb), ACCEL_OK);
    ck_assert_msg(lb > 0 && lb != gb, "llama estimate %zu, gpt %zu", lb, gb);

    accel_config_t mlp;
    accel_config_defaults(&mlp);
    snprintf(mlp.model.name, sizeof mlp.model.name, "mlp");
    ck_assert_int_eq(check(&mlp, why, note), ACCEL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(why, "model 'mlp'") && strstr(why, "device=cpu"), "message: %s", why);

    accel_config_t plug = gpt_cfg(2, 2, 16, 8, 32);
    snprintf(plug.model.plugin, sizeof plug.model.plugin, "my_model.so");
    ck_assert_int_eq(check(&plug, why, note), ACCEL_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(why, "my_model.so"), "message: %s", why);

    accel_config_t bad = gpt_cfg(2, 2, 16, 8, 32);     /* refused where the config is read */
    ck_assert_int_eq(accel_config_set(&bad, "precision", "int8", why, sizeof why), ACCEL_ERR_CONFIG);
    ck_assert_ptr_nonnull(strstr(why, "int8"));

    accel_config_t notes = gpt_cfg(2, 2, 16, 8, 32);
    ck_assert_int_eq(accel_config_set(&notes, "dist.comm_dtype", "bf16", NULL, 0), ACCEL_OK);
    ck_assert_int_eq(check(&notes, why, note), ACCEL_OK);
    ck_assert_msg(strstr(note, "comm_dtype"), "note: %s", note);
}
END_TEST

/* Without a usable GPU the CUDA model refuses cleanly (an error status and a message, no crash);
 * with one this test has nothing to prove (tests/gpu_gpt.sh covers the model). */
START_TEST(test_engine_without_gpu)
{
    const char *why = NULL;
    if (accel_device_cuda_count(&why) > 0) return;
    accel_config_t cfg = gpt_cfg(2, 2, 16, 8, 32);
    accel_model_t m;
    ck_assert_int_ne(accel_model_create_on(&cfg, ACCEL_DEVICE_CUDA, &m), ACCEL_OK);
    ck_assert_ptr_null(m.state);
    accel_model_destroy(&m);
    char whynot[512];
    accel_config_t mlp;
    accel_config_defaults(&mlp);
    snprintf(mlp.model.name, sizeof mlp.model.name, "mlp");
    ck_assert(!accel_model_runs_on(&mlp, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert(accel_model_runs_on(&mlp, ACCEL_DEVICE_CPU, whynot, sizeof whynot));
    ck_assert(accel_model_runs_on(&cfg, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    accel_config_t ll = gpt_cfg(2, 4, 16, 8, 32);     /* the llama: the same clean refusal */
    snprintf(ll.model.name, sizeof ll.model.name, "llama");
    ll.model.kv_heads = 2;
    ck_assert(accel_model_runs_on(&ll, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    accel_config_t moe = ll;                          /* experts: the CPU decoder's only */
    moe.model.experts = 4;
    ck_assert(!accel_model_runs_on(&moe, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.experts=4") != NULL, "%s", whynot);
    ck_assert(accel_model_runs_on(&moe, ACCEL_DEVICE_CPU, whynot, sizeof whynot));
    accel_config_t sw = ll;                           /* a window below the context: the CPU's */
    sw.model.sliding_window = sw.model.context - 1;
    ck_assert(!accel_model_runs_on(&sw, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.sliding_window") != NULL, "%s", whynot);
    sw.model.sliding_window = sw.model.context;       /* as long as the context: none */
    ck_assert(accel_model_runs_on(&sw, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    sw.model.sliding_window_pattern = 4;              /* ... whichever layers slide */
    ck_assert(accel_model_runs_on(&sw, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    snprintf(sw.model.rope_scaling, sizeof sw.model.rope_scaling, "yarn");
    snprintf(sw.model.sliding_rope, sizeof sw.model.sliding_rope, "plain");    /* OLMo 3's two RoPEs */
    ck_assert(!accel_model_runs_on(&sw, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.sliding_rope=plain") != NULL, "%s", whynot);
    accel_config_t nope = ll;                         /* SmolLM3's NoPE layers: the CPU's */
    nope.model.no_rope_pattern = 4;
    ck_assert(!accel_model_runs_on(&nope, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.no_rope_pattern=4") != NULL, "%s", whynot);
    accel_config_t lr = ll;                           /* LongRoPE's two tables: the CPU's */
    snprintf(lr.model.rope_scaling, sizeof lr.model.rope_scaling, "longrope");
    ck_assert(!accel_model_runs_on(&lr, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.rope_scaling=longrope") != NULL, "%s", whynot);
    accel_config_t qs = ll;                           /* the query temperature: the CPU's */
    qs.model.query_scale_beta = 0.1;
    qs.model.query_scale_context = 8;
    ck_assert(!accel_model_runs_on(&qs, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.query_scale_beta") != NULL, "%s", whynot);
    ck_assert(accel_model_runs_on(&lr, ACCEL_DEVICE_CPU, whynot, sizeof whynot));
    accel_config_t gemma = ll;                        /* Gemma's blocks: the CPU's */
    snprintf(gemma.model.activation, sizeof gemma.model.activation, "gelu_tanh");
    ck_assert(!accel_model_runs_on(&gemma, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.activation") != NULL, "%s", whynot);
    snprintf(gemma.model.activation, sizeof gemma.model.activation, "silu");
    gemma.model.attention_softcap = 50;               /* Gemma 2's soft caps */
    ck_assert(!accel_model_runs_on(&gemma, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.attention_softcap") != NULL, "%s", whynot);
    gemma.model.attention_softcap = 0;
    snprintf(gemma.model.norm_position, sizeof gemma.model.norm_position, "both");
    snprintf(gemma.model.activation, sizeof gemma.model.activation, "silu");
    ck_assert(!accel_model_runs_on(&gemma, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.norm_position=both") != NULL, "%s", whynot);
    accel_config_t oss = ll;                          /* gpt-oss's sinks and output bias: the CPU's */
    oss.model.attention_sinks = true;
    ck_assert(!accel_model_runs_on(&oss, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.attention_sinks=true") != NULL, "%s", whynot);
    oss.model.attention_sinks = false;
    oss.model.attention_out_bias = true;
    ck_assert(!accel_model_runs_on(&oss, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.attention_out_bias=true") != NULL, "%s", whynot);
    oss.model.attention_out_bias = false;
    snprintf(oss.model.activation, sizeof oss.model.activation, "clamped_swiglu");
    ck_assert(!accel_model_runs_on(&oss, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.activation") != NULL, "%s", whynot);
    accel_config_t glm = ll;                          /* partial RoPE: the CPU's */
    glm.model.rope_dim = 2;
    ck_assert(!accel_model_runs_on(&glm, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.rope_dim") != NULL, "%s", whynot);
    accel_config_t olmo = ll;                         /* OLMo 2's blocks: the CPU's */
    snprintf(olmo.model.norm_position, sizeof olmo.model.norm_position, "post");
    ck_assert(!accel_model_runs_on(&olmo, ACCEL_DEVICE_CUDA, whynot, sizeof whynot));
    ck_assert_msg(strstr(whynot, "model.norm_position=post") != NULL, "%s", whynot);
    ck_assert_int_ne(accel_model_create_on(&ll, ACCEL_DEVICE_CUDA, &m), ACCEL_OK);
    ck_assert_ptr_null(m.state);
    accel_model_destroy(&m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("gpt_cuda_plan");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, test_plan_layout);
    tcase_add_test(tc, test_plan_rejects);
    tcase_add_test(tc, test_layer_spans);
    tcase_add_test(tc, test_grid);
    tcase_add_test(tc, test_config_checks);
    tcase_add_test(tc, test_engine_without_gpu);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

/* Check tests of the Hugging Face interchange modules (src/ckpt/safetensors.c, src/ckpt/hf.c):
 * safetensors write/read round trips (F32, BF16, F8_E4M3), the reader's refusals of damaged headers, and the
 * HF table's list of accel tensors against the layout the built-in models register (hf.c may not
 * include nn, so this keeps the two in step). Files go to $TMPDIR. */
#include "build_config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "accel/config.h"
#include "accel/dtype.h"
#include "accel/hf.h"
#include "accel/model.h"
#include "accel/safetensors.h"

static char g_path[4096];

static const char *tmp_path(const char *name)
{
    const char *d = getenv("TMPDIR");
    snprintf(g_path, sizeof g_path, "%s/check_hf_%d_%s", d ? d : "/tmp", (int)getpid(), name);
    return g_path;
}

static accel_status_t fill_ramp(void *ctx, int index, uint64_t begin, uint64_t end, float *dst)
{
    (void)ctx;
    for (uint64_t i = begin; i < end; i++) dst[i - begin] = (float)(index + 1) * 0.37f * (float)i - 1.25f;
    return ACCEL_OK;
}

START_TEST(test_roundtrip)
{
    accel_st_entry_t e[2] = { { "b.weight", ACCEL_ST_F32, 2, { 3, 5 } }, { "a.bias", ACCEL_ST_BF16, 1, { 7 } } };
    const char *meta[] = { "format", "pt", "accel_config", "model:\n  name: gpt\n" };
    char path[4096];
    snprintf(path, sizeof path, "%s", tmp_path("rt.safetensors"));
    ck_assert_int_eq(accel_st_write(path, e, 2, meta, 2, fill_ramp, NULL), ACCEL_OK);
    accel_st_t *st;
    char err[1024];
    ck_assert_int_eq(accel_st_open(path, &st, err, sizeof err), ACCEL_OK);
    ck_assert_int_eq(accel_st_count(st), 2);
    ck_assert_str_eq(accel_st_at(st, 0)->name, "a.bias");          /* sorted by name */
    ck_assert_str_eq(accel_st_metadata(st, "accel_config"), meta[3]);
    const accel_st_tensor_t *w = accel_st_find(st, "b.weight"), *b = accel_st_find(st, "a.bias");
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq((int)w->numel, 15);
    ck_assert_int_eq(b->dtype, ACCEL_ST_BF16);
    float v[15], want[15];
    ck_assert_int_eq(accel_st_read(st, w, 0, 15, v), ACCEL_OK);
    fill_ramp(NULL, 0, 0, 15, want);
    for (int i = 0; i < 15; i++) ck_assert_float_eq(v[i], want[i]);
    ck_assert_int_eq(accel_st_read(st, b, 2, 7, v), ACCEL_OK);
    fill_ramp(NULL, 1, 2, 7, want);
    for (int i = 0; i < 5; i++) ck_assert_float_eq(v[i], accel_bf16_to_f32(accel_f32_to_bf16(want[i])));
    ck_assert_int_eq(accel_st_read(st, b, 3, 9, v), ACCEL_ERR_INVALID);
    accel_st_close(st);
    unlink(path);
}
END_TEST

/* The e4m3 values (FP8 exports): every finite code back as it was; the points halfway between two
 * codes to the one with the even mantissa; past 448 saturated; the sign kept. Values 0..125 are
 * e4m3fn's non-negative finite codes, value k of the written tensor code k, then the midpoints. */
static float g_f8[2 * 126 + 4];

static accel_status_t fill_f8(void *ctx, int index, uint64_t begin, uint64_t end, float *dst)
{
    (void)ctx, (void)index;
    memcpy(dst, g_f8 + begin, sizeof(float) * (end - begin));
    return ACCEL_OK;
}

START_TEST(test_fp8)
{
    const char *path = tmp_path("f8.safetensors");
    int n = 0;
    float code[127];
    for (int c = 0; c < 127; c++) {          /* decode by the format: 1.m x 2^(e - 7), subnormal m / 8 x 2^-6 */
        const int e = c >> 3, m = c & 7;
        code[c] = e ? ldexpf(1.0f + (float)m / 8, e - 7) : ldexpf((float)m / 8, -6);
    }
    for (int c = 0; c < 126; c++) g_f8[n++] = code[c];
    for (int c = 0; c < 125; c++) g_f8[n++] = 0.5f * (code[c] + code[c + 1]);
    g_f8[n++] = 500.0f;
    g_f8[n++] = -0.75f;
    accel_st_entry_t e = { "w", ACCEL_ST_F8_E4M3, 1, { (uint64_t)n } };
    const char *meta[] = { "format", "pt" };
    ck_assert_int_eq(accel_st_write(path, &e, 1, meta, 1, fill_f8, NULL), ACCEL_OK);
    accel_st_t *st;
    char err[1024];
    ck_assert_int_eq(accel_st_open(path, &st, err, sizeof err), ACCEL_OK);
    float v[2 * 126 + 4];
    ck_assert_int_eq(accel_st_read(st, accel_st_find(st, "w"), 0, (uint64_t)n, v), ACCEL_OK);
    for (int c = 0; c < 126; c++) ck_assert_float_eq(v[c], code[c]);
    for (int c = 0; c < 125; c++) ck_assert_float_eq(v[126 + c], code[(c & 1) ? c + 1 : c]);   /* even mantissa */
    ck_assert_float_eq(v[n - 2], 448.0f);
    ck_assert_float_eq(v[n - 1], -0.75f);
    accel_st_close(st);
    unlink(path);
}
END_TEST

/* A file with the given header and `data` bytes of data. */
static void write_raw(const char *path, const char *hdr, size_t data)
{
    FILE *f = fopen(path, "wb");
    uint64_t n = strlen(hdr);
    for (int k = 0; k < 8; k++) fputc((int)((n >> (8 * k)) & 0xff), f);
    fputs(hdr, f);
    for (size_t i = 0; i < data; i++) fputc(0, f);
    fclose(f);
}

/* I32 (packed integer weights) read as bit patterns and as numbers, I64 (their shapes) as numbers:
 * little-endian, negative values too. */
START_TEST(test_integers)
{
    const char *hdr = "{\"p\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"s\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[8,24]}}";
    static const unsigned char data[24] = { 0x78, 0x56, 0x34, 0x12, 0xfe, 0xff, 0xff, 0xff,   /* 0x12345678, -2 */
                                            0x00, 0x01, 0, 0, 0, 0, 0, 0,                    /* 256 */
                                            0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }; /* -3 */
    char path[4096];
    snprintf(path, sizeof path, "%s", tmp_path("ints.safetensors"));
    FILE *f = fopen(path, "wb");
    const uint64_t n = strlen(hdr);
    for (int k = 0; k < 8; k++) fputc((int)((n >> (8 * k)) & 0xff), f);
    fputs(hdr, f);
    fwrite(data, 1, sizeof data, f);
    fclose(f);
    accel_st_t *st = NULL;
    char err[1024] = "";
    ck_assert_int_eq(accel_st_open(path, &st, err, sizeof err), ACCEL_OK);
    const accel_st_tensor_t *p = accel_st_find(st, "p"), *sh = accel_st_find(st, "s");
    uint32_t u[2];
    float v[2];
    ck_assert_int_eq(accel_st_read_u32(st, p, 0, 2, u), ACCEL_OK);
    ck_assert_uint_eq(u[0], 0x12345678u);
    ck_assert_uint_eq(u[1], 0xfffffffeu);
    ck_assert_int_eq(accel_st_read(st, p, 1, 2, v), ACCEL_OK);
    ck_assert(v[0] == -2.0f);
    ck_assert_int_eq(accel_st_read(st, sh, 0, 2, v), ACCEL_OK);
    ck_assert(v[0] == 256.0f && v[1] == -3.0f);
    ck_assert_int_eq(accel_st_read_u32(st, sh, 0, 1, u), ACCEL_ERR_INVALID);    /* not I32 */
    ck_assert_int_eq(accel_st_read_u32(st, p, 1, 3, u), ACCEL_ERR_INVALID);     /* past the end */
    accel_st_close(st);
    unlink(path);
}
END_TEST

START_TEST(test_refusals)
{
    static const struct {
        const char *hdr;
        size_t data;
        accel_status_t st;
        const char *msg;
    } cases[] = {
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, ACCEL_ERR_CORRUPT, "run past the data" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16, ACCEL_ERR_CORRUPT, "12 expected" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
          "\"data_offsets\":[4,12]}}", 16, ACCEL_ERR_CORRUPT, "overlap" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 16, ACCEL_ERR_CORRUPT, "begin <= end" },
        { "{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16, ACCEL_ERR_UNSUPPORTED, "dtype F64" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 16, ACCEL_ERR_CORRUPT, "not a size" },
        { "{\"a\":", 16, ACCEL_ERR_CORRUPT, "not a JSON object" },
        { "[1,2]", 16, ACCEL_ERR_CORRUPT, "not a JSON object" },
        { "{\"__metadata__\":{\"k\":1}}", 0, ACCEL_ERR_CORRUPT, "object of strings" },
    };
    char path[4096];
    snprintf(path, sizeof path, "%s", tmp_path("bad.safetensors"));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_raw(path, cases[i].hdr, cases[i].data);
        accel_st_t *st = NULL;
        char err[1024] = "";
        ck_assert_int_eq(accel_st_open(path, &st, err, sizeof err), cases[i].st);
        ck_assert_msg(strstr(err, cases[i].msg), "case %zu: '%s' lacks '%s'", i, err, cases[i].msg);
        ck_assert_ptr_null(st);
    }
    /* A header size larger than the file. */
    FILE *f = fopen(path, "wb");
    fwrite("\xff\xff\x00\x00\x00\x00\x00\x00{}", 1, 10, f);
    fclose(f);
    accel_st_t *st = NULL;
    char err[1024] = "";
    ck_assert_int_eq(accel_st_open(path, &st, err, sizeof err), ACCEL_ERR_CORRUPT);
    ck_assert_ptr_nonnull(strstr(err, "header size 65535"));
    unlink(path);
}
END_TEST

/* hf.c's tensor list equals the decoder's layout, name for name and shape for shape. */
static void same_as_model(const char *const *overrides, int n)
{
    accel_config_t cfg;
    char err[512];
    ck_assert_int_eq(accel_config_load(&cfg, NULL, n, (char *const *)overrides, NULL, err, sizeof err), ACCEL_OK);
    accel_model_t model;
    memset(&model, 0, sizeof model);
    ck_assert_int_eq(accel_model_create(&cfg, &model), ACCEL_OK);
    accel_hf_tensor_t *t;
    int nt = accel_hf_accel_tensors(&cfg.model, &t);
    ck_assert_int_eq(nt, model.layout.ntensors);
    for (int i = 0; i < nt; i++) {
        const accel_tensor_t *m = &model.layout.tensors[i];
        ck_assert_str_eq(t[i].name, m->name);
        ck_assert_int_eq(t[i].ndim, m->ndim);
        for (int d = 0; d < m->ndim; d++) ck_assert_int_eq((int64_t)t[i].dims[d], m->shape[d]);
    }
    free(t);
    accel_model_destroy(&model);
}

START_TEST(test_table_matches_models)
{
    const char *gpt[] = { "model.name=gpt", "model.layers=3", "model.width=32", "model.heads=4", "model.context=8",
                          "model.vocab=50" };
    same_as_model(gpt, 6);
    const char *llama[] = { "model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                            "model.kv_heads=2", "model.tie_embeddings=false", "model.attention_bias=true",
                            "model.vocab=40" };
    same_as_model(llama, 8);
    const char *llama_tied[] = { "model.name=llama", "model.layers=1", "model.width=64", "model.heads=2" };
    same_as_model(llama_tied, 4);
    const char *qwen3[] = { "model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                            "model.kv_heads=2", "model.head_dim=12", "model.qk_norm=true" };
    same_as_model(qwen3, 7);
    const char *oss[] = { "model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                          "model.kv_heads=2", "model.attention_bias=true", "model.attention_out_bias=true",
                          "model.attention_sinks=true", "model.experts=4", "model.expert_bias=true",
                          "model.activation=clamped_swiglu", "model.tie_embeddings=false" };
    same_as_model(oss, 12);
    /* GLM-4.5: a dense first block (its own width), then experts with the selection bias and
     * ungated shared experts */
    const char *glm45[] = { "model.name=llama", "model.layers=3", "model.width=32", "model.heads=4",
                            "model.kv_heads=2", "model.qk_norm=true", "model.attention_bias=true",
                            "model.experts=4", "model.ffn_width=8", "model.shared_expert_ffn=16",
                            "model.shared_expert_gate=false", "model.router_scores=sigmoid",
                            "model.router_select_bias=true", "model.dense_layers=1", "model.dense_ffn_width=40",
                            "model.tie_embeddings=false" };
    same_as_model(glm45, 16);
    /* DeepSeek-V3: latent attention (with and without the queries' latent) beside GLM-4.5's experts */
    const char *dsv3[] = { "model.name=llama", "model.layers=3", "model.width=32", "model.heads=4",
                           "model.experts=4", "model.ffn_width=8", "model.shared_expert_ffn=8",
                           "model.shared_expert_gate=false", "model.router_scores=sigmoid",
                           "model.router_select_bias=true", "model.dense_layers=1", "model.tie_embeddings=false",
                           "model.kv_lora_rank=12", "model.q_lora_rank=10", "model.head_dim=12", "model.rope_dim=4",
                           "model.v_head_dim=8" };
    same_as_model(dsv3, 17);
    dsv3[13] = "model.q_lora_rank=0";
    same_as_model(dsv3, 17);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("hf");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_roundtrip);
    tcase_add_test(tc, test_integers);
    tcase_add_test(tc, test_fp8);
    tcase_add_test(tc, test_refusals);
    tcase_add_test(tc, test_table_matches_models);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

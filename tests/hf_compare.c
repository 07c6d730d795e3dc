/* Checks for tests/hf_import.sh, without Python:
 *   hf_compare logits FIXTURE_DIR LOGITS   accel's fp32 logits (accel_generate --logits-out) against
 *                                          FIXTURE_DIR/ref_logits.f32 (|diff| <= 1e-5 (s + |ref|),
 *                                          s the position's largest |ref| logit, at least 1: fp32
 *                                          rounding grows with the values a logit is summed from,
 *                                          not only with the logit, which may cancel to near 0) and the
 *                                          loss they give on FIXTURE_DIR/tokens.bin against ref.json
 *                                          (|diff| <= 1e-6 + two float32 ulps of it); both bars
 *                                          times ref.json's "tolerance_scale" when it has one (a
 *                                          model whose own fp32 logits move that much with a 1-ulp
 *                                          change of its weights: tests/hf_reference.py)
 *   hf_compare tensors A B                 two Hugging Face models (directories or .safetensors):
 *                                          the same tensor names and shapes, values equal
 *   hf_compare config A B                  the architecture fields of two config.json files agree
 * Exit 0 when the check passes, 1 when not, 2 on errors. */
#include "build_config.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "accel/safetensors.h"

static float *read_f32(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); return NULL; }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *v = malloc((size_t)len + 4);
    *n = v ? fread(v, 4, (size_t)len / 4, f) : 0;
    fclose(f);
    return v;
}

static int cmd_logits(const char *dir, const char *logits)
{
    char p[4096];
    size_t n_ref = 0, n = 0;
    snprintf(p, sizeof p, "%s/ref_logits.f32", dir);
    float *ref = read_f32(p, &n_ref), *z = read_f32(logits, &n);
    snprintf(p, sizeof p, "%s/ref.json", dir);
    json_error_t je;
    json_t *j = json_load_file(p, 0, &je);
    if (!ref || !z || !j) { fprintf(stderr, "hf_compare: cannot read the inputs (%s)\n", j ? "" : je.text); return 2; }
    int V = (int)json_integer_value(json_object_get(j, "vocab"));
    int T = (int)json_integer_value(json_object_get(j, "context"));
    double ref_loss = json_number_value(json_object_get(j, "loss"));
    const json_t *ts = json_object_get(j, "tolerance_scale");
    const double tol = ts ? json_number_value(ts) : 1.0;
    if (n < n_ref || n_ref != (size_t)T * V) {
        fprintf(stderr, "hf_compare: %zu logits, the reference has %zu (T=%d V=%d)\n", n, n_ref, T, V);
        return 1;
    }
    double mx = 0, over = 0;            /* the largest difference, and against its bound */
    for (int t = 0; t < T; t++) {
        const float *r = ref + (size_t)t * V, *y = z + (size_t)t * V;
        double scale = 1;               /* the position's logit scale */
        for (int v = 0; v < V; v++) scale = fmax(scale, fabs(r[v]));
        for (int v = 0; v < V; v++) {
            const double d = fabs((double)y[v] - r[v]);
            mx = fmax(mx, d);
            over = fmax(over, d / (tol * 1e-5 * (scale + fabs(r[v]))));
        }
    }
    snprintf(p, sizeof p, "%s/tokens.bin", dir);
    FILE *f = fopen(p, "rb");
    unsigned char tok[4096];
    size_t nt = f ? fread(tok, 1, sizeof tok, f) : 0;
    if (f) fclose(f);
    if (nt < (size_t)T + 1) { fprintf(stderr, "hf_compare: %s too short\n", p); return 2; }
    double loss = 0;
    for (int t = 0; t < T; t++) {
        const float *row = z + (size_t)t * V;
        double m = row[0], s = 0;
        for (int v = 1; v < V; v++) m = fmax(m, row[v]);
        for (int v = 0; v < V; v++) s += exp(row[v] - m);
        loss += m + log(s) - row[tok[t + 1]];
    }
    loss /= T;
    /* transformers' loss is a float32 number: two of its ulps (2.4e-7 relative) on top of 1e-6, or a
     * loss past 8 fails on the last bit of the reference alone (CPUs whose BLAS rounds otherwise) */
    const double loss_bound = tol * (1e-6 + 2.4e-7 * fabs(ref_loss));
    bool ok = over <= 1 && fabs(loss - ref_loss) <= loss_bound;
    printf("%s: max |logit - HF| %.3g (%.2f of %.3g (row scale + |HF|)), loss %.9f vs HF %.9f: |diff| %.3g (<= %.2g): %s\n",
           dir, mx, over, tol * 1e-5, loss, ref_loss, fabs(loss - ref_loss), loss_bound, ok ? "ok" : "DIFFERENT");
    json_decref(j);
    free(ref);
    free(z);
    return ok ? 0 : 1;
}

/* All shards of a model (a directory: every *.safetensors in it). */
static int open_model(const char *path, accel_st_t **st, int max)
{
    size_t len = strlen(path);
    if (len > 12 && !strcmp(path + len - 12, ".safetensors")) {
        char err[1024];
        if (accel_st_open(path, &st[0], err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); return -1; }
        return 1;
    }
    DIR *d = opendir(path);
    if (!d) { perror(path); return -1; }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (l <= 12 || strcmp(e->d_name + l - 12, ".safetensors")) continue;
        char p[4096], err[1024];
        snprintf(p, sizeof p, "%s/%s", path, e->d_name);
        if (accel_st_open(p, &st[n], err, sizeof err) != 0) { fprintf(stderr, "%s\n", err); n = -1; break; }
        n++;
    }
    closedir(d);
    return n;
}

static const accel_st_tensor_t *find(accel_st_t **st, int n, const char *name, int *which)
{
    for (int i = 0; i < n; i++) {
        const accel_st_tensor_t *t = accel_st_find(st[i], name);
        if (t) { *which = i; return t; }
    }
    return NULL;
}

static int cmd_tensors(const char *a, const char *b)
{
    accel_st_t *sa[64], *sb[64];
    int na = open_model(a, sa, 64), nb = open_model(b, sb, 64);
    if (na <= 0 || nb <= 0) return 2;
    int bad = 0, count = 0, countb = 0;
    for (int i = 0; i < nb; i++) countb += accel_st_count(sb[i]);
    for (int i = 0; i < na; i++)
        for (int k = 0; k < accel_st_count(sa[i]); k++) {
            const accel_st_tensor_t *x = accel_st_at(sa[i], k), *y;
            int j;
            count++;
            if (!(y = find(sb, nb, x->name, &j))) { printf("only in %s: %s\n", a, x->name); bad++; continue; }
            bool same = x->ndim == y->ndim;
            for (int d = 0; same && d < x->ndim; d++) same = x->dims[d] == y->dims[d];
            if (!same) { printf("%s: shapes differ\n", x->name); bad++; continue; }
            float *u = malloc(sizeof(float) * (x->numel + 1)), *v = malloc(sizeof(float) * (x->numel + 1));
            accel_st_read(sa[i], x, 0, x->numel, u);
            accel_st_read(sb[j], y, 0, y->numel, v);
            double mx = 0;
            for (uint64_t q = 0; q < x->numel; q++) mx = fmax(mx, fabs((double)u[q] - v[q]));
            if (mx > 0) { printf("%s: values differ by up to %.3g\n", x->name, mx); bad++; }
            free(u);
            free(v);
        }
    if (count != countb) { printf("%s has %d tensors, %s %d\n", a, count, b, countb); bad++; }
    printf("%d tensors compared: %s\n", count, bad ? "DIFFERENT" : "identical names, shapes and values");
    for (int i = 0; i < na; i++) accel_st_close(sa[i]);
    for (int i = 0; i < nb; i++) accel_st_close(sb[i]);
    return bad ? 1 : 0;
}

/* rope_parameters, or with one set per layer type (OLMo 3) the full-attention layers'. */
static json_t *rope_parameters(json_t *j)
{
    json_t *rp = json_object_get(j, "rope_parameters");
    json_t *full = json_is_object(rp) ? json_object_get(rp, "full_attention") : NULL;
    return json_is_object(full) ? full : rp;
}

static double rope_theta(json_t *j)
{
    json_t *rp = rope_parameters(j);
    json_t *v = json_object_get(j, "rope_theta");
    if (!v && json_is_object(rp)) v = json_object_get(rp, "rope_theta");
    return v ? json_number_value(v) : 10000.0;
}

/* The RoPE scaling's object: rope_scaling, else rope_parameters (transformers 5). */
static json_t *rope_scaling(json_t *j)
{
    json_t *rp = json_object_get(j, "rope_scaling");
    return json_is_object(rp) ? rp : rope_parameters(j);
}

/* The RoPE scaling's type ("default" when none) and its factor (0 when none). */
static const char *rope_type(json_t *j, double *factor)
{
    json_t *rp = rope_scaling(j);
    const char *t = json_is_object(rp) ? json_string_value(json_object_get(rp, "rope_type")) : NULL;
    json_t *f = json_is_object(rp) ? json_object_get(rp, "factor") : NULL;
    *factor = t && strcmp(t, "default") && json_is_number(f) ? json_number_value(f) : 0;
    return t ? t : "default";
}

/* The sliding window every layer has: sliding_window where the family reads it (Qwen: with
 * use_sliding_window), null or absent = 0. */
static long long window(json_t *j)
{
    json_t *v = json_object_get(j, "sliding_window"), *use = json_object_get(j, "use_sliding_window");
    if (use && !json_is_true(use)) return 0;
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static int cmd_config(const char *a, const char *b)
{
    json_error_t je;
    json_t *x = json_load_file(a, 0, &je), *y = json_load_file(b, 0, &je);
    if (!x || !y) { fprintf(stderr, "hf_compare: %s\n", je.text); return 2; }
    static const char *const keys[] = { "model_type", "n_layer", "n_head", "n_embd", "n_positions", "vocab_size",
                                        "hidden_size", "intermediate_size", "num_hidden_layers",
                                        "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
                                        "rms_norm_eps", "tie_word_embeddings", "hidden_act", "activation_function",
                                        "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
                                        "norm_topk_prob", "output_router_logits", "router_aux_loss_coef",
                                        "shared_expert_intermediate_size", "qkv_bias", "layer_types",
                                        "no_rope_layers", "hidden_activation", "query_pre_attn_scalar",
                                        "attn_logit_softcapping", "final_logit_softcapping",
                                        "embedding_multiplier", "attention_multiplier", "residual_multiplier",
                                        "logits_scaling", "n_routed_experts", "n_shared_experts", "n_group",
                                        "topk_group", "routed_scaling_factor", "first_k_dense_replace",
                                        "use_qk_norm", "original_max_position_embeddings", "partial_rotary_factor",
                                        "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                        "v_head_dim" };
    int bad = 0;
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *u = json_object_get(x, keys[i]), *v = json_object_get(y, keys[i]);
        if (!u) continue;
        /* Mistral is exported as the Llama it is equal to. */
        if (!strcmp(keys[i], "model_type") && json_is_string(u) && !strcmp(json_string_value(u), "mistral")) continue;
        if (!v || !json_equal(u, v)) {
            char *su = json_dumps(u, JSON_ENCODE_ANY), *sv = v ? json_dumps(v, JSON_ENCODE_ANY) : strdup("(missing)");
            printf("config %s: %s vs %s\n", keys[i], su, sv);
            free(su);
            free(sv);
            bad++;
        }
    }
    if (rope_theta(x) != rope_theta(y)) { printf("config rope_theta differs\n"); bad++; }
    if (window(x) != window(y)) { printf("config sliding_window: %lld vs %lld\n", window(x), window(y)); bad++; }
    double fx, fy;
    const char *tx = rope_type(x, &fx), *ty = rope_type(y, &fy);
    if (strcmp(tx, ty) || fx != fy) { printf("config rope scaling: %s x %g vs %s x %g\n", tx, fx, ty, fy); bad++; }
    static const char *const lists[] = { "short_factor", "long_factor" };     /* LongRoPE's */
    for (int i = 0; i < 2; i++) {
        json_t *u = json_object_get(rope_scaling(x), lists[i]), *v = json_object_get(rope_scaling(y), lists[i]);
        if ((u || v) && !(u && v && json_equal(u, v))) { printf("config rope scaling: %s differs\n", lists[i]); bad++; }
    }
    printf("%s vs %s: %s\n", a, b, bad ? "DIFFERENT" : "same architecture fields");
    json_decref(x);
    json_decref(y);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "logits")) return cmd_logits(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "tensors")) return cmd_tensors(argv[2], argv[3]);
    if (argc == 4 && !strcmp(argv[1], "config")) return cmd_config(argv[2], argv[3]);
    fprintf(stderr, "usage: hf_compare logits DIR LOGITS | tensors A B | config A B\n");
    return 2;
}

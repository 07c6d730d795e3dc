/* The built-in Llama (model.name=llama) against Hugging Face transformers, in the manner of
 * llm.c's test_gpt2: tests/fixtures/llama/<case>.h5 hold a tiny model's weights under accel's
 * tensor names, two token sequences, and what transformers computed for them in float64 -- the
 * logits of every position, the loss and the gradient of every parameter
 * (tests/llama_reference.py, regenerated with tests/make_llama_fixtures.sh).
 *
 * For each case: the fixture's configuration (attribute `config`, "key=value ...") is applied to
 * the defaults, the model is created, its tensor table must be exactly the fixture's (names and
 * shapes), and then in fp32
 *   logits     logits_range over each sequence: max |accel - HF| <= 1e-5; the same for the
 *              logits op (last position) and the KV cache (logits_cached, one token at a time)
 *   loss       forward_backward's loss_sum (sum over sequences of the mean over positions):
 *              |accel - HF| <= 1e-5 * max(1, |HF|)
 *   gradients  every tensor: max |accel - HF| / max |HF| <= 1e-4
 * The measured figures are printed for every case, passing or not.
 *
 * Packed cases (llama_packed, qwen2_packed: accel's data.document_mask) hold several documents in a
 * row; their fixtures add /positions [B, T] (Hugging Face's position_ids: 0 where a document
 * begins) and /loss_mask [B, T+1] (0: the target is a document's first token, not trained), and
 * their loss is the sum over trained targets over T. transformers computed them with its packed
 * block-diagonal mask, and the generator asserted that every document's logits equal those of the
 * document run alone. So here
 *   logits     logits_range, logits and logits_cached run each document on its own (a document is
 *              a sequence: the one-sequence ops take no positions), against the fixture's logits
 *              of the document's positions in the packed row: max |accel - HF| <= 1e-5
 *   packed     the packed rows through the batch path (eval with .positions and .loss_mask): with
 *              one trained target, eval's sample loss is that target's cross-entropy / T, which
 *              gives every position's log-softmax over the whole vocabulary:
 *              max |accel - HF| <= 1e-5
 *   loss, gradients  forward_backward with .positions and .loss_mask, tolerances as above
 *
 * Mixture-of-experts cases (mixtral_moe: MixtralForCausalLM with the load-balancing loss,
 * model.router_aux_loss; qwen3_moe: Qwen3MoeForCausalLM, head_dim apart from the width, q/k norms,
 * top-k weights not renormalized; qwen2_moe: Qwen2MoeForCausalLM, a sigmoid-gated shared expert
 * beside the routed ones, model.shared_expert_ffn, q/k/v biases, top-k weights not renormalized,
 * the load-balancing loss) are compared the same way; with model.router_aux_loss the loss
 * and the gradients include B * coefficient * transformers' load_balancing_loss_func of the batch.
 * The generator asserted that every token's routing is clear (the K-th largest router probability
 * exceeds the next by 1e-3 or more), so an fp32 router picks the experts the float64 one did.
 *
 * OLMo cases: olmo2 (Olmo2ForCausalLM) has post-norm blocks, model.norm_position=post: h = x +
 * norm1(attn(x)), out = h + norm2(mlp(h)), no norm before attention or MLP; its q/k norms act over
 * the whole q and k projections (model.qk_norm_scope=all: weights H*hs and KV*hs wide, before
 * RoPE). olmoe (OlmoeForCausalLM) is pre-norm with the same whole-projection q/k norms, a mixture
 * of experts (top-k weights not renormalized) and the load-balancing loss. olmo3
 * (Olmo3ForCausalLM) has OLMo 2's blocks and per-layer attention: layers 0-2 slide (a window of 5
 * keys, model.sliding_window with model.sliding_window_pattern=4) with plain RoPE
 * (model.sliding_rope=plain), layer 3 attends to the whole context with YaRN (model.rope_scaling=yarn;
 * kept, blended and divided frequency bands, cos and sin scaled); the KV cache path crosses the
 * window. All are compared the same way as the others.
 *
 * Gemma 3 (gemma3: Gemma3ForCausalLM) has norms before and after both sublayers
 * (model.norm_position=both: h = x + post_norm1(attn(norm1(x))), out = h + post_norm2(mlp(norm2(h))),
 * tensors h.L.post_norm1.weight and h.L.post_norm2.weight), RMSNorms that multiply by 1 + weight
 * (model.norm_unit_offset: the fixture's weights are transformers' own, offsets from 1), per-head
 * q/k norms, GeGLU with the tanh GELU (model.activation=gelu_tanh), embeddings times sqrt(width)
 * rounded to fp32 (model.embed_scale), scores times query_pre_attn_scalar^-0.5 (12, head_dim 16:
 * model.query_pre_attn_scalar), tied embeddings; layers 0 and 2 slide (window 5,
 * model.sliding_window_pattern=2) with plain RoPE at their own base (model.sliding_rope_theta=1e4),
 * layers 1 and 3 are full with theta 1e6 and linear scaling (model.rope_scaling=linear, factor 4).
 * The generator asserted that switching off any of these moves the float64 logits by 5e-1 or more
 * (the exact GELU for the tanh one: 1.4e-3).
 *
 * gpt-oss (gpt_oss: GptOssForCausalLM) is pre-norm with attention sinks (model.attention_sinks:
 * a learned logit per head in every softmax's denominator, h.L.attn.sinks, drawn with std 1),
 * biases on q, k, v and o (model.attention_bias, model.attention_out_bias: h.L.attn.proj.bias),
 * 4 experts top-2 with biases (model.expert_bias: h.L.mlp.router.bias, h.L.mlp.experts.gate_up.bias,
 * h.L.mlp.experts.down.bias), the softmax over the top-k router logits (model.router_norm_topk),
 * clamped SwiGLU (model.activation=clamped_swiglu, swiglu_limit 2 so that 3% of the routed gate
 * values and 8.5% of the up values are clamped), layer 0 sliding over 4 keys and layer 1 full
 * (model.sliding_window_pattern=2, the same RoPE on both), YaRN at theta 150000 with the ramp's
 * bounds not rounded (model.rope_truncate=false: kept, blended and divided bands), untied head.
 * transformers' experts (gate_up_proj [E, C, 2F] with gate and up interleaved, down_proj [E, F, C],
 * both x @ W) are stored in accel's layout. The generator asserted that the routing is clear, that
 * no routed gate or up value lies within 1e-3 of a clamp's bound, and that the logits move by
 * 1e-1 or more without the window, the sinks, the clamp, with the bounds truncated, with plain
 * RoPE or with cos and sin unscaled.
 *
 * The fixtures are found in $ACCEL_LLAMA_FIXTURES, else $top_srcdir/tests/fixtures/llama (make
 * check sets top_srcdir; tests/llama_unit.sh runs this program). */
#include "build_config.h"

#include <check.h>
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

#define LOGITS_TOL 1e-5
#define LOSS_TOL 1e-5
#define GRAD_TOL 1e-4

/* Every fixture this test knows; a .h5 file in the directory that is not listed fails
 * test_fixture_set, so a new case cannot be added and silently skipped. */
static const char *const g_cases[] = { "llama_gqa",  "llama_mqa",    "llama_rope31", "qwen2_bias",
                                        "llama_mha",  "llama_packed", "qwen2_packed", "mixtral_moe",
                                        "qwen3_moe",  "qwen2_moe",    "olmo2",        "olmoe",
                                        "olmo3",      "gemma3",       "gpt_oss" };
#define NCASES ((int)(sizeof g_cases / sizeof g_cases[0]))

static void fixture_dir(char *dir, size_t len)
{
    const char *env = getenv("ACCEL_LLAMA_FIXTURES");
    const char *top = getenv("top_srcdir");
    if (env && *env)
        snprintf(dir, len, "%s", env);
    else
        snprintf(dir, len, "%s/tests/fixtures/llama", top && *top ? top : ".");
}

/* ------------------------------------------------------------------ reading a fixture */

/* A string attribute of the file (fixed or variable length) into buf; 0 when read. */
static int read_str_attr(hid_t file, const char *name, char *buf, size_t len)
{
    int rc = -1;
    hid_t a = H5Aopen(file, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t t = H5Aget_type(a);
    hid_t mt = H5Tcopy(H5T_C_S1);
    if (H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &s) >= 0 && s) {
            snprintf(buf, len, "%s", s);
            H5free_memory(s);
            rc = 0;
        }
    } else {
        size_t n = H5Tget_size(t);
        char *s = calloc(n + 1, 1);
        H5Tset_size(mt, n + 1);
        H5Tset_strpad(mt, H5T_STR_NULLTERM);
        if (s && H5Aread(a, mt, s) >= 0) {
            snprintf(buf, len, "%s", s);
            rc = 0;
        }
        free(s);
    }
    H5Tclose(mt);
    H5Tclose(t);
    H5Aclose(a);
    return rc;
}

/* The shape of dataset `path`; the number of dimensions, or -1 when it cannot be opened. */
static int dataset_shape(hid_t file, const char *path, hsize_t dims[ACCEL_TENSOR_MAX_DIMS])
{
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t s = H5Dget_space(d);
    int nd = H5Sget_simple_extent_ndims(s);
    if (nd > ACCEL_TENSOR_MAX_DIMS) nd = -1;
    else if (nd >= 0) H5Sget_simple_extent_dims(s, dims, NULL);
    H5Sclose(s);
    H5Dclose(d);
    return nd;
}

/* printf to the end of buf[cap] (what does not fit is cut). */
static void append(char *buf, size_t cap, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, cap - used, fmt, ap);
    va_end(ap);
}

/* max(a, d) where a NaN difference counts as infinite (fmax would drop it). */
static double fmax_nan(double a, double d)
{
    return isnan(d) ? INFINITY : fmax(a, d);
}

static size_t numel_of(int nd, const hsize_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < nd; i++) n *= (size_t)dims[i];
    return n;
}

/* Read the whole dataset `path` as memtype into buf (n elements expected). */
static void read_dataset(hid_t file, const char *path, hid_t memtype, void *buf, size_t n)
{
    hsize_t dims[ACCEL_TENSOR_MAX_DIMS];
    int nd = dataset_shape(file, path, dims);
    ck_assert_msg(nd >= 0, "fixture has no readable dataset %s", path);
    ck_assert_msg(numel_of(nd, dims) == n, "fixture dataset %s has %zu elements, expected %zu", path,
                  numel_of(nd, dims), n);
    hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
    ck_assert_msg(H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "cannot read %s", path);
    H5Dclose(d);
}

/* The names of the datasets in group `group` (malloc'ed array of n names). */
static char **group_names(hid_t file, const char *group, int *n)
{
    hid_t g = H5Gopen2(file, group, H5P_DEFAULT);
    ck_assert_msg(g >= 0, "fixture has no group %s", group);
    H5G_info_t info;
    ck_assert_int_ge(H5Gget_info(g, &info), 0);
    char **names = calloc(info.nlinks + 1, sizeof *names);
    for (hsize_t i = 0; i < info.nlinks; i++) {
        ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, NULL, 0, H5P_DEFAULT);
        ck_assert_int_ge(len, 0);
        names[i] = malloc((size_t)len + 1);
        H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, names[i], (size_t)len + 1, H5P_DEFAULT);
    }
    H5Gclose(g);
    *n = (int)info.nlinks;
    return names;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

static bool in_names(char **names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return true;
    return false;
}

/* Apply "key=value key=value ..." to cfg, one accel_config_set at a time. */
static void apply_config(accel_config_t *cfg, const char *text, const char *cs)
{
    char *copy = strdup(text), *save = NULL;
    for (char *kv = strtok_r(copy, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');
        ck_assert_msg(eq != NULL, "%s: config item '%s' is not key=value", cs, kv);
        *eq = '\0';
        char err[512] = "";
        accel_status_t st = accel_config_set(cfg, kv, eq + 1, err, sizeof err);
        ck_assert_msg(st == ACCEL_OK, "%s: accel_config_set(%s, %s) refused: %s", cs, kv, eq + 1, err);
    }
    free(copy);
}

/* ------------------------------------------------------------------ the comparison */

START_TEST(test_against_transformers)
{
    const char *cs = g_cases[_i];
    char dir[1024], path[1200];
    fixture_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/%s.h5", dir, cs);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    ck_assert_msg(file >= 0, "cannot open the fixture %s (tests/make_llama_fixtures.sh makes it)", path);

    char config[2048], torch_v[64] = "?", hf_v[64] = "?";
    ck_assert_msg(read_str_attr(file, "config", config, sizeof config) == 0, "%s: no config attribute", path);
    read_str_attr(file, "torch_version", torch_v, sizeof torch_v);
    read_str_attr(file, "transformers_version", hf_v, sizeof hf_v);
    printf("%s: transformers %s, torch %s: %s\n", cs, hf_v, torch_v, config);

    accel_config_t cfg;
    accel_config_defaults(&cfg);
    apply_config(&cfg, config, cs);
    ck_assert_str_eq(cfg.precision, "fp32");
    accel_model_t m;
    accel_status_t st = accel_model_create(&cfg, &m);
    ck_assert_msg(st == ACCEL_OK, "%s: accel_model_create refused the configuration: %s (%d)", cs,
                  accel_status_str(st), (int)st);
    ck_assert_ptr_nonnull(m.ops->logits_range);
    const accel_layout_t *lay = &m.layout;

    /* The tensor table: exactly the fixture's tensors, with the same shapes. */
    int np = 0, ng = 0;
    char **pnames = group_names(file, "/params", &np);
    char **gnames = group_names(file, "/grads", &ng);
    char problems[4096] = "";
#define PROBLEM(...) append(problems, sizeof problems, __VA_ARGS__)
    for (int i = 0; i < lay->ntensors; i++) {
        const accel_tensor_t *t = &lay->tensors[i];
        char dpath[ACCEL_TENSOR_NAME_MAX + 16];
        hsize_t dims[ACCEL_TENSOR_MAX_DIMS];
        snprintf(dpath, sizeof dpath, "/params/%s", t->name);
        if (!in_names(pnames, np, t->name)) {
            PROBLEM(" extra tensor %s (not in the fixture);", t->name);
            continue;
        }
        int nd = dataset_shape(file, dpath, dims);
        bool same = nd == t->ndim;
        for (int k = 0; same && k < nd; k++) same = (int64_t)dims[k] == t->shape[k];
        if (!same) {
            char a[64] = "", b[64] = "";
            for (int k = 0; k < t->ndim; k++) snprintf(a + strlen(a), sizeof a - strlen(a), "%s%lld", k ? "," : "", (long long)t->shape[k]);
            for (int k = 0; k < nd; k++) snprintf(b + strlen(b), sizeof b - strlen(b), "%s%llu", k ? "," : "", (unsigned long long)dims[k]);
            PROBLEM(" %s is [%s] in accel, [%s] in the fixture;", t->name, a, b);
        }
    }
    for (int i = 0; i < np; i++) {
        if (!accel_layout_find(lay, pnames[i])) PROBLEM(" missing tensor %s (in the fixture, not in accel);", pnames[i]);
        if (!in_names(gnames, ng, pnames[i])) PROBLEM(" the fixture has no gradient of %s;", pnames[i]);
    }
#undef PROBLEM
    ck_assert_msg(problems[0] == '\0', "%s: the tensor table differs:%s", cs, problems);
    ck_assert_int_eq(np, lay->ntensors);
    ck_assert_int_eq(ng, np);

    float *params = NULL, *grads = NULL, *ref = NULL;
    ck_assert_int_eq(accel_arena_alloc(lay, &params), ACCEL_OK);
    ck_assert_int_eq(accel_arena_alloc(lay, &grads), ACCEL_OK);
    for (int i = 0; i < lay->ntensors; i++) {
        char dpath[ACCEL_TENSOR_NAME_MAX + 16];
        snprintf(dpath, sizeof dpath, "/params/%s", lay->tensors[i].name);
        read_dataset(file, dpath, H5T_NATIVE_FLOAT, params + lay->tensors[i].offset, lay->tensors[i].numel);
    }

    /* tokens [B, T+1], logits [B, T, V], loss */
    hsize_t td[ACCEL_TENSOR_MAX_DIMS], ld[ACCEL_TENSOR_MAX_DIMS];
    ck_assert_int_eq(dataset_shape(file, "/tokens", td), 2);
    ck_assert_int_eq(dataset_shape(file, "/logits", ld), 3);
    const int B = (int)td[0], T = (int)td[1] - 1, V = (int)ld[2];
    ck_assert_msg((int)ld[0] == B && (int)ld[1] == T, "%s: /logits is not [B, T, V]", cs);
    ck_assert_int_eq(V, m.vocab);
    ck_assert_int_le(T, m.context);
    int32_t *tokens = malloc(sizeof *tokens * (size_t)B * (size_t)(T + 1));
    float *want = malloc(sizeof *want * (size_t)B * (size_t)T * (size_t)V);
    float *got = malloc(sizeof *got * (size_t)T * (size_t)V);
    double ref_loss = 0;
    read_dataset(file, "/tokens", H5T_NATIVE_INT32, tokens, (size_t)B * (size_t)(T + 1));
    read_dataset(file, "/logits", H5T_NATIVE_FLOAT, want, (size_t)B * (size_t)T * (size_t)V);
    read_dataset(file, "/loss", H5T_NATIVE_DOUBLE, &ref_loss, 1);

    /* A packed case: positions [B, T] and loss_mask [B, T+1], laid out as accel_batch_t's. */
    int32_t *positions = NULL;
    uint8_t *loss_mask = NULL;
    const bool packed = H5Lexists(file, "/positions", H5P_DEFAULT) > 0;
    if (packed) {
        ck_assert_msg(H5Lexists(file, "/loss_mask", H5P_DEFAULT) > 0, "%s: /positions without /loss_mask", cs);
        positions = malloc(sizeof *positions * (size_t)B * (size_t)T);
        loss_mask = malloc((size_t)B * (size_t)(T + 1));
        read_dataset(file, "/positions", H5T_NATIVE_INT32, positions, (size_t)B * (size_t)T);
        read_dataset(file, "/loss_mask", H5T_NATIVE_UINT8, loss_mask, (size_t)B * (size_t)(T + 1));
        int docs = 0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) docs += positions[(size_t)b * T + t] == 0;
        printf("%s: packed, %d documents in %d rows\n", cs, docs, B);
        ck_assert_msg(docs > B, "%s: /positions packs no second document in any row", cs);
    }

    /* Logits of every position, each sequence on its own: a row, or in a packed row each document
     * (positions 0.. of its own; the fixture's packed logits equal the document's alone). The
     * one-sequence ops take no positions: the packed rows themselves are compared below. */
    double logit_err = 0, last_err = 0, cached_err = 0;
    for (int b = 0; b < B; b++) {
        const int32_t *row = tokens + (size_t)b * (size_t)(T + 1);
        for (int s = 0, e; s < T; s = e) {
            e = T;
            if (packed)     /* this document: s up to the next position 0 */
                for (e = s + 1; e < T && positions[(size_t)b * T + e] != 0; e++) {}
            const int n = e - s;
            const int32_t *seq = row + s;
            const float *w = want + ((size_t)b * (size_t)T + (size_t)s) * (size_t)V;
            st = m.ops->logits_range(m.state, lay, params, seq, n, 0, got, NULL);
            ck_assert_msg(st == ACCEL_OK, "%s: logits_range failed: %s", cs, accel_status_str(st));
            for (size_t k = 0; k < (size_t)n * (size_t)V; k++) {
                double d = fabs((double)got[k] - (double)w[k]);
                logit_err = fmax_nan(logit_err, d);
            }
            /* The same logits through the single-position op and, token by token, the KV cache. */
            if (m.ops->logits) {
                st = m.ops->logits(m.state, lay, params, seq, n, got);
                ck_assert_msg(st == ACCEL_OK, "%s: logits failed: %s", cs, accel_status_str(st));
                for (int v = 0; v < V; v++) last_err = fmax_nan(last_err, fabs((double)got[v] - (double)w[(size_t)(n - 1) * V + v]));
            }
            if (m.ops->logits_cached)
                for (int t = 0; t < n; t++) {
                    st = m.ops->logits_cached(m.state, lay, params, seq, t + 1, t, got, NULL);
                    ck_assert_msg(st == ACCEL_OK, "%s: logits_cached(%d tokens, %d cached) failed: %s", cs, t + 1, t,
                                  accel_status_str(st));
                    for (int v = 0; v < V; v++) cached_err = fmax_nan(cached_err, fabs((double)got[v] - (double)w[(size_t)t * V + v]));
                }
        }
    }
    printf("%s: logits   max |accel - HF| = %.3e (tolerance %.0e)%s\n", cs, logit_err, LOGITS_TOL,
           packed ? " (each document alone)" : "");
    if (m.ops->logits)
        printf("%s: logits   (last position) max |accel - HF| = %.3e\n", cs, last_err);
    if (m.ops->logits_cached)
        printf("%s: logits   (KV cache, one token at a time) max |accel - HF| = %.3e\n", cs, cached_err);

    /* Packed rows through the batch path, positions and loss mask in the batch: no op returns a
     * batch's logits, but eval's sample loss with one trained target t+1 is CE(logits[t], target) / T,
     * and target t+1 is an input only after position t (causal), so V rows that differ only in it
     * (every id of the vocabulary) give position t's log-softmax, logits[t] - logsumexp(logits[t]). */
    double packed_err = 0;
    if (packed) {
        ck_assert_ptr_nonnull(m.ops->eval);
        const size_t S = (size_t)T + 1;
        int32_t *ptok = malloc(sizeof *ptok * (size_t)V * S);
        int32_t *ppos = malloc(sizeof *ppos * (size_t)V * (size_t)T);
        uint8_t *pmask = malloc((size_t)V * S);
        float *ploss = malloc(sizeof *ploss * (size_t)V);
        for (int b = 0; b < B; b++)
            for (int t = 0; t < T; t++) {
                const float *w = want + ((size_t)b * (size_t)T + (size_t)t) * (size_t)V;
                double zmax = -INFINITY, sum = 0;
                for (int v = 0; v < V; v++) zmax = fmax(zmax, (double)w[v]);
                for (int v = 0; v < V; v++) sum += exp((double)w[v] - zmax);
                const double lse = zmax + log(sum);
                for (int v = 0; v < V; v++) {
                    memcpy(ptok + (size_t)v * S, tokens + (size_t)b * S, sizeof *ptok * S);
                    ptok[(size_t)v * S + (size_t)t + 1] = v;
                    memcpy(ppos + (size_t)v * T, positions + (size_t)b * T, sizeof *ppos * (size_t)T);
                    memset(pmask + (size_t)v * S, 0, S);
                    pmask[(size_t)v * S + (size_t)t + 1] = 1;
                }
                accel_batch_t pb = { .n = V, .tokens = ptok, .positions = ppos, .loss_mask = pmask };
                st = m.ops->eval(m.state, lay, params, &pb, ploss, NULL);
                ck_assert_msg(st == ACCEL_OK, "%s: eval of packed rows failed: %s", cs, accel_status_str(st));
                for (int v = 0; v < V; v++)
                    packed_err = fmax_nan(packed_err, fabs(-(double)ploss[v] * T - ((double)w[v] - lse)));
            }
        free(ptok);
        free(ppos);
        free(pmask);
        free(ploss);
        printf("%s: logits   (packed rows, eval: log-softmax of every position) max |accel - HF| = %.3e "
               "(tolerance %.0e)\n", cs, packed_err, LOGITS_TOL);
    }

    /* Loss and gradients of the whole batch (a packed one with its positions and loss mask). */
    accel_batch_t batch = { .n = B, .tokens = tokens, .positions = positions, .loss_mask = loss_mask };
    double loss_sum = 0;
    st = m.ops->forward_backward(m.state, lay, params, grads, &batch, 1.0f, &loss_sum);
    ck_assert_msg(st == ACCEL_OK, "%s: forward_backward failed: %s", cs, accel_status_str(st));
    double loss_err = fabs(loss_sum - ref_loss), loss_tol = LOSS_TOL * fmax(1.0, fabs(ref_loss));
    printf("%s: loss     accel %.9f, HF %.9f, |diff| = %.3e (tolerance %.1e)\n", cs, loss_sum, ref_loss,
           loss_err, loss_tol);

    double worst = 0;
    const char *worst_name = "";
    char bad[4096] = "";
    for (int i = 0; i < lay->ntensors; i++) {
        const accel_tensor_t *t = &lay->tensors[i];
        char dpath[ACCEL_TENSOR_NAME_MAX + 16];
        snprintf(dpath, sizeof dpath, "/grads/%s", t->name);
        ref = realloc(ref, sizeof *ref * t->numel);
        read_dataset(file, dpath, H5T_NATIVE_FLOAT, ref, t->numel);
        double dmax = 0, rmax = 0;
        const float *g = grads + t->offset;
        for (size_t k = 0; k < t->numel; k++) {
            double d = fabs((double)g[k] - (double)ref[k]);
            dmax = fmax_nan(dmax, d);
            rmax = fmax(rmax, fabs((double)ref[k]));
        }
        double rel = rmax > 0 ? dmax / rmax : dmax;
        printf("%s: gradient %-26s max |diff| / max |HF| = %.3e (max |HF| %.3e)\n", cs, t->name, rel, rmax);
        if (!(rel <= worst)) {
            worst = rel;
            worst_name = t->name;
        }
        if (!(rel <= GRAD_TOL))
            append(bad, sizeof bad, " %s %.2e;", t->name, rel);
    }
    printf("%s: gradients worst %s %.3e (tolerance %.0e)\n", cs, worst_name, worst, GRAD_TOL);

    H5Fclose(file);
    free_names(pnames, np);
    free_names(gnames, ng);
    free(ref);
    free(tokens);
    free(positions);
    free(loss_mask);
    free(want);
    free(got);
    accel_arena_free(params);
    accel_arena_free(grads);
    accel_model_destroy(&m);

    ck_assert_msg(logit_err <= LOGITS_TOL, "%s: logits differ from transformers by %.3e (tolerance %.0e)", cs,
                  logit_err, LOGITS_TOL);
    ck_assert_msg(last_err <= LOGITS_TOL, "%s: the logits op differs from transformers by %.3e (tolerance %.0e)", cs,
                  last_err, LOGITS_TOL);
    ck_assert_msg(cached_err <= LOGITS_TOL, "%s: logits_cached differs from transformers by %.3e (tolerance %.0e)",
                  cs, cached_err, LOGITS_TOL);
    ck_assert_msg(packed_err <= LOGITS_TOL,
                  "%s: the packed rows' log-softmax (eval) differs from transformers by %.3e (tolerance %.0e)", cs,
                  packed_err, LOGITS_TOL);
    ck_assert_msg(loss_err <= loss_tol, "%s: loss %.9f, transformers %.9f: |diff| %.3e > %.1e", cs, loss_sum,
                  ref_loss, loss_err, loss_tol);
    ck_assert_msg(bad[0] == '\0', "%s: gradients differ from transformers (max |diff| / max |ref| > %.0e):%s", cs,
                  GRAD_TOL, bad);
}
END_TEST

/* The directory holds exactly the fixtures listed in g_cases. */
START_TEST(test_fixture_set)
{
    char dir[1024];
    fixture_dir(dir, sizeof dir);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open the fixture directory %s", dir);
    int seen[NCASES] = { 0 };
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 4 || strcmp(e->d_name + n - 3, ".h5") != 0) continue;
        int k = -1;
        for (int i = 0; i < NCASES; i++)
            if (strlen(g_cases[i]) == n - 3 && strncmp(e->d_name, g_cases[i], n - 3) == 0) k = i;
        ck_assert_msg(k >= 0, "%s/%s is not a case of check_llama.c (add it to g_cases)", dir, e->d_name);
        seen[k] = 1;
    }
    closedir(d);
    for (int i = 0; i < NCASES; i++) ck_assert_msg(seen[i], "fixture %s/%s.h5 is missing", dir, g_cases[i]);
}
END_TEST

/* A valid small Llama configuration, modified by `extra` ("key=value ..."). */
static accel_status_t create_with(const char *extra, accel_model_t *m)
{
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    apply_config(&cfg, "model.name=llama model.layers=2 model.heads=4 model.kv_heads=2 model.width=32 "
                       "model.ffn_width=40 model.context=8 model.vocab=17", "refusal");
    apply_config(&cfg, extra, "refusal");
    return accel_model_create(&cfg, m);
}

/* A family's keys: `valid` is accepted (so each refusal means the model looked at the value), each
 * of the n `bad` ones refused. */
static void accepts_then_refuses(const char *what, const char *valid, const char *const *bad, size_t n)
{
    accel_model_t m;
    accel_status_t st = create_with(valid, &m);
    ck_assert_msg(st == ACCEL_OK, "%s are refused: %s", what, accel_status_str(st));
    accel_model_destroy(&m);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(create_with(bad[i], &m) != ACCEL_OK, "%s was accepted", bad[i]);
}
#define REFUSALS(what, valid, bad) accepts_then_refuses(what, valid, bad, sizeof bad / sizeof bad[0])

/* Configurations the model must refuse; the same with a valid change is accepted, so a refusal
 * means the model looked at the value, not that it does not exist. */
START_TEST(test_refuses_bad_config)
{
    accel_model_t m;
    accel_status_t st = create_with("model.kv_heads=2", &m);
    ck_assert_msg(st == ACCEL_OK, "the control configuration (heads 4, kv_heads 2) is refused: %s",
                  accel_status_str(st));
    accel_model_destroy(&m);
    ck_assert_msg(create_with("model.kv_heads=3", &m) != ACCEL_OK, "heads=4 kv_heads=3 was accepted");
    ck_assert_msg(create_with("model.kv_heads=8", &m) != ACCEL_OK, "heads=4 kv_heads=8 was accepted");
    ck_assert_msg(create_with("model.width=36", &m) != ACCEL_OK,
                  "width=36 heads=4 (odd head size 9: RoPE rotates pairs) was accepted");
    /* The plain MLP and LayerNorm: a valid set, then each part out of place. */
    static const char *const bad[] = {
        "model.activation=relu2",                                   /* relu2 of a gated MLP */
        "model.mlp=plain",                                          /* silu of a plain one */
        "model.mlp_bias=true",                                      /* biases on a gated MLP */
        "model.mlp=plain model.activation=relu2 model.experts=4 model.experts_per_token=2 model.expert_bias=true",
        "model.norm=layer model.norm_position=post",
    };
    REFUSALS("a plain relu2 MLP under LayerNorms",
             "model.mlp=plain model.activation=relu2 model.norm=layer model.mlp_bias=true", bad);
    /* xIELU (Apertus's): a plain dense MLP's, each layer its own alphas. */
    static const char *const bad_xielu[] = {
        "model.activation=xielu",                                   /* of a gated MLP */
        "model.mlp=plain model.activation=xielu model.experts=4 model.experts_per_token=2",  /* experts' */
    };
    REFUSALS("a plain xIELU MLP", "model.mlp=plain model.activation=xielu model.qk_norm=true", bad_xielu);
    /* Gated delta-nets: a valid set, then each part out of place. */
    static const char *const bad_linear[] = {
        "model.linear_key_heads=2",                                 /* delta-net keys without delta-nets */
        "model.linear_conv_kernel=3",
        "model.linear_attention_pattern=2 model.linear_key_heads=4 model.linear_value_heads=6",  /* 6 % 4 */
        "model.linear_attention_pattern=2 model.norm_position=both",   /* post is OLMo Hybrid's: accepted */
        "model.linear_allow_neg_eigval=true",                       /* OLMo Hybrid's delta-net keys without them */
        "model.linear_norm_eps=1e-5",
        "model.linear_attention_pattern=2 model.parallel_block=two_norms",
        "model.attention_output_gate=true model.kv_lora_rank=8 model.kv_heads=4",
    };
    REFUSALS("gated delta-nets with a gated attention layer",
             "model.linear_attention_pattern=2 model.linear_key_heads=2 model.linear_value_heads=4 "
             "model.attention_output_gate=true", bad_linear);
    accel_model_t oh;                   /* OLMo Hybrid's: norms after its attention, before its delta-nets */
    ck_assert_int_eq(create_with("model.linear_attention_pattern=2 model.norm_position=post model.qk_norm=true "
                                 "model.qk_norm_scope=all model.linear_allow_neg_eigval=true model.linear_norm_eps=1e-5",
                                 &oh), ACCEL_OK);
    accel_model_destroy(&oh);
    /* Short convolutions: a valid set, then each part out of place. */
    static const char *const bad_conv[] = {
        "model.attention_layers=1",                                 /* attention layers without convolutions */
        "model.short_conv_kernel=3 model.attention_layers=2",       /* past the last of 2 layers */
        "model.short_conv_kernel=3 model.attention_layers=1,0",     /* out of order */
        "model.short_conv_kernel=3 model.attention_layers=0,0",     /* twice */
        "model.short_conv_kernel=3 model.attention_layers=0.5",     /* not a layer */
        "model.short_conv_kernel=3 model.linear_attention_pattern=2",
        "model.short_conv_kernel=3 model.norm_position=post",
        "model.short_conv_kernel=3 model.parallel_block=one_norm",
    };
    REFUSALS("short convolutions beside an attention layer",
             "model.short_conv_kernel=3 model.attention_layers=1 model.qk_norm=true", bad_conv);
    /* Mamba-2 layers: a valid set, then each part out of place. */
    static const char *const bad_mamba[] = {
        "model.mamba_state=8",                                      /* Mamba-2 keys without its layers */
        "model.mamba_heads=4 model.mamba_groups=3",                 /* 4 % 3 */
        "model.mamba_heads=4 model.short_conv_kernel=3",            /* one recurrent mixer at a time */
        "model.mamba_heads=4 model.norm_position=post",
        "model.mamba_heads=128",                                    /* 2 x 32 / 128 values a head: none */
    };
    REFUSALS("Mamba-2 layers beside an attention layer",
             "model.mamba_heads=4 model.mamba_groups=2 model.mamba_state=8 model.attention_layers=1", bad_mamba);
    /* Mamba-1 layers (Mamba's, Falcon Mamba's, Jamba's): a valid set, then each part out of place. */
    static const char *const bad_mamba1[] = {
        "model.mamba1_dt_rank=2",                                   /* Mamba-1's keys without its layers */
        "model.mamba1_norms=plain",
        "model.mamba1_norm_eps=1e-5",
        "model.mamba_state=8",                                      /* a state without Mamba layers */
        "model.mamba1_width=48 model.mamba_heads=4",                /* Mamba-2 beside it */
        "model.mamba1_width=48 model.norm_position=post",
        "model.mamba1_width=48 model.mamba_groups=2",               /* Mamba-2's key */
        "model.mamba1_width=48 model.attention_layers=1 model.mlp_only_layers=1",  /* attention without a mixer */
    };
    REFUSALS("Mamba-1 layers beside an attention layer",
             "model.mamba1_width=48 model.mamba1_dt_rank=3 model.mamba1_norms=weighted model.mamba1_norm_eps=1e-5 "
             "model.mamba_state=8 model.attention_layers=1", bad_mamba1);
    /* Layers of one sublayer (Nemotron-H's) over plain experts: a valid set, then each part out of place. */
    static const char *const bad_one[] = {
        "model.mlp_only_layers=0 model.mixer_only_layers=0",        /* a layer of neither */
        "model.mlp_only_layers=2",                                  /* past the last of 2 layers */
        "model.mixer_only_layers=1,0",                              /* out of order */
        "model.mlp_only_layers=0 model.norm_position=post",
        "model.mlp_only_layers=0 model.parallel_block=two_norms model.mlp=plain model.activation=gelu",
        "model.mamba_heads=4 model.attention_layers=1 model.mlp_only_layers=1",  /* attention without a mixer */
        "model.sliding_window=4 model.sliding_layers=0 model.mlp_only_layers=0", /* a window on no attention */
        "model.expert_latent=8",                                    /* a latent without experts */
        "model.experts=4 model.experts_per_token=2 model.expert_latent=8 model.expert_bias=true",
    };
    REFUSALS("Nemotron-H's layers",
             "model.mamba_heads=4 model.attention_layers=1 model.mixer_only_layers=0,1 model.mlp=plain "
             "model.activation=relu2 model.experts=4 model.experts_per_token=2 model.layers=3 "
             "model.mlp_only_layers=2 model.expert_latent=6", bad_one);
    /* Llama 4's parts: a valid set, then each out of place. */
    static const char *const bad_llama4[] = {
        "model.qk_norm_weights=false",                              /* q/k norm keys without the norms */
        "model.qk_norm_layers=rope",
        "model.sliding_chunked=true",                               /* chunks of no window */
        "model.query_scale_offset=1",                               /* the temperature's keys without it */
        "model.query_scale_beta=0.1 model.query_scale_context=4 model.query_scale_layers=no_rope",  /* no NoPE layers */
        "model.expert_layers=1",                                    /* expert keys without experts */
        "model.expert_input_scaled=true",
        "model.experts=4 model.experts_per_token=1 model.expert_layers=2",    /* past the last of 2 layers */
        "model.experts=4 model.experts_per_token=1 model.expert_layers=1 model.dense_layers=1",
    };
    REFUSALS("Llama 4's blocks",
             "model.no_rope_pattern=2 model.qk_norm=true model.qk_norm_weights=false model.qk_norm_after_rope=true "
             "model.qk_norm_layers=rope model.sliding_window=4 model.sliding_window_pattern=2 model.sliding_chunked=true "
             "model.query_scale_beta=0.1 model.query_scale_context=4 model.query_scale_offset=1 "
             "model.query_scale_layers=no_rope model.experts=4 model.experts_per_token=1 model.router_scores=sigmoid "
             "model.router_norm_topk=false model.expert_input_scaled=true model.expert_layers=1 "
             "model.shared_expert_ffn=40 model.shared_expert_gate=false model.dense_ffn_width=24", bad_llama4);
    /* LFM3's parts: a valid set, then each out of place. */
    static const char *const bad_lfm3[] = {
        "model.attention_head_gate=true model.attention_output_gate=true",    /* two gates */
        "model.rope_proportion=0.5",                                /* without proportional RoPE */
        "model.rope_scaling=proportional model.rope_dim=4",        /* its pairs span the head */
        "model.sliding_layers=1",                                   /* no window */
        "model.sliding_window=4 model.sliding_window_pattern=2 model.sliding_layers=1",
        "model.sliding_window=4 model.sliding_layers=2",            /* past the last of 2 layers */
        "model.sliding_window=4 model.sliding_layers=1,0",          /* out of order */
        "model.short_conv_kernel=3 model.attention_layers=1 model.sliding_window=4 model.sliding_layers=0",
    };
    REFUSALS("LFM3's blocks",
             "model.short_conv_kernel=3 model.attention_layers=1 model.qk_norm=true "
             "model.norm_position=both model.attention_head_gate=true model.rope_scaling=proportional "
             "model.rope_proportion=0.5 model.sliding_window=4 model.sliding_layers=1", bad_lfm3);
    /* LFM2-MoE's renormalization epsilon: sigmoid scores renormalized only. */
    st = create_with("model.experts=4 model.experts_per_token=2 model.router_scores=sigmoid model.router_norm_eps=1e-6",
                     &m);
    ck_assert_msg(st == ACCEL_OK, "model.router_norm_eps with sigmoid scores is refused: %s", accel_status_str(st));
    accel_model_destroy(&m);
    ck_assert_msg(create_with("model.experts=4 model.experts_per_token=2 model.router_norm_eps=1e-6", &m) != ACCEL_OK,
                  "model.router_norm_eps with softmax scores was accepted");
    ck_assert_msg(create_with("model.experts=4 model.experts_per_token=2 model.router_scores=sigmoid "
                              "model.router_norm_topk=false model.router_norm_eps=1e-6", &m) != ACCEL_OK,
                  "model.router_norm_eps without renormalization was accepted");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("llama");
    TCase *tc = tcase_create("transformers");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_fixture_set);
    tcase_add_loop_test(tc, test_against_transformers, 0, NCASES);
    tcase_add_test(tc, test_refuses_bad_config);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

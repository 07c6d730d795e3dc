/* PEFT LoRA adapters (peft.h). adapter_config.json says how the adapter was made; its tensors sit
 * in adapter_model.safetensors under "base_model.model." + the module's name:
 *   X.lora_A.weight [r, in], X.lora_B.weight [out, r]         a linear layer X (W [out, in])
 *   X.lora_embedding_A [r, V], X.lora_embedding_B [C, r]      an embedding X (W [V, C])
 *   X.lora_magnitude_vector [out]                              DoRA's magnitudes of X's rows
 *   X(.base_layer)*.lora_A.weight [r E, in], lora_B [out, r E] an experts module X's stacked parameter
 *                                                              (target_parameters; hf.c tells which)
 *   X.base_layer.weight, or any other X.weight / X.bias       a whole tensor in place of the base's
 * PEFT's merge adds scale B A to W (transposed for an embedding and for fan_in_fan_out layers),
 * scale = alpha / r, or alpha / sqrt(r) with use_rslora, alpha from alpha_pattern where a key
 * matches the module (Python's re.match of "(.*\.)?(key)$"); DoRA then scales each row to its
 * magnitude. Also the way out: low-rank factors of a change (accel_peft_factor). */
#include "build_config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cblas.h>
#include <jansson.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "accel/rng.h"
#include "accel/hf.h"
#include "peft.h"

#define PREFIX "base_model.model."

struct accel_peft {
    char dir[4096];
    char base_name[1024];           /* base_model_name_or_path */
    char revision[256];             /* its hub revision ("" when the config names none) */
    accel_st_t *st;
    accel_peft_module_t *m;         /* sorted by name (kind apart: a module's LoRA beside its base_layer) */
    int n;
    bool rslora;                    /* use_rslora: scales over sqrt(r) */
};

static bool exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static bool is_model_dir(const char *p)
{
    char c[8500];
    snprintf(c, sizeof c, "%s/config.json", p);
    return exists(c);
}

bool accel_peft_is_adapter(const char *dir)
{
    char c[4200];
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode) || is_model_dir(dir)) return false;
    snprintf(c, sizeof c, "%s/adapter_config.json", dir);
    return exists(c);
}

static bool ends_with(const char *s, const char *suffix, size_t *stem)
{
    const size_t a = strlen(s), b = strlen(suffix);
    if (a <= b || strcmp(s + a - b, suffix)) return false;
    *stem = a - b;
    return true;
}

static int cmp_modules(const void *a, const void *b)
{
    const accel_peft_module_t *x = a, *y = b;
    const int c = strcmp(x->name, y->name);
    return c ? c : (int)x->kind - (int)y->kind;
}

/* Settings whose adapters merging W + scale B A would not reproduce (or that add tensors besides). */
static const char *const g_refused[][2] = {
    { "lora_bias", "LoRA biases (lora_B carries a bias)" },
    { "use_qalora", "QA-LoRA (its A reads pooled inputs)" },
    { "use_bdlora", "BD-LoRA (block-diagonal factors)" },
    { "alora_invocation_tokens", "activated LoRA (the adapter acts only after its invocation tokens)" },
    { "arrow_config", "Arrow routing between adapters" },
    { "kasa_config", "KaSA (a learned diagonal between A and B, the base's smallest singular values cut)" },
    { "monteclora_config", "MonteCLoRA (sampled adapters)" },
    { "layer_replication", "layer replication (the adapter's model has more layers than its base)" },
    { "trainable_token_indices", "trainable tokens (rows of the embedding replaced by index)" },
};

static bool truthy(json_t *v)
{
    return v && !json_is_null(v) && !json_is_false(v) && !(json_is_array(v) && !json_array_size(v)) &&
           !(json_is_object(v) && !json_object_size(v)) && !(json_is_string(v) && !json_string_length(v));
}

/* alpha for module `name`: the first alpha_pattern key that matches it, else lora_alpha. */
static accel_status_t module_alpha(json_t *pattern, double alpha, const char *name, double *out, char *err,
                                   size_t errlen)
{
    *out = alpha;
    const char *key;
    json_t *v;
    json_object_foreach(pattern, key, v) {
        char re[1200];
        snprintf(re, sizeof re, "(.*\\.)?(%s)$", key);
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *code = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_ANCHORED, &ec, &eo, NULL);
        if (!code) {
            accel_errf(err, errlen, "alpha_pattern key '%s' is not a regular expression accel can read", key);
            return ACCEL_ERR_INVALID;
        }
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
        const int rc = md ? pcre2_match(code, (PCRE2_SPTR)name, PCRE2_ZERO_TERMINATED, 0, 0, md, NULL) : -1;
        pcre2_match_data_free(md);
        pcre2_code_free(code);
        if (rc < 0) continue;
        if (!json_is_number(v)) {
            accel_errf(err, errlen, "alpha_pattern['%s'] is not a number", key);
            return ACCEL_ERR_INVALID;
        }
        *out = json_number_value(v);
        return ACCEL_OK;
    }
    return ACCEL_OK;
}

static accel_status_t read_config(accel_peft_t *p, json_t **root, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/adapter_config.json", p->dir);
    json_error_t je;
    *root = json_load_file(path, 0, &je);
    if (!json_is_object(*root)) {
        accel_errf(err, errlen, "%s: %s", path, *root ? "not a JSON object" : je.text);
        return ACCEL_ERR_CORRUPT;
    }
    json_t *type = json_object_get(*root, "peft_type");
    if (!json_is_string(type)) {
        accel_errf(err, errlen, "%s has no peft_type: not a PEFT adapter configuration", path);
        return ACCEL_ERR_CORRUPT;
    }
    if (strcmp(json_string_value(type), "LORA")) {
        accel_errf(err, errlen, "%s: peft_type %s: accel merges LoRA adapters (peft_type LORA) only", path,
                   json_string_value(type));
        return ACCEL_ERR_UNSUPPORTED;
    }
    for (size_t i = 0; i < sizeof g_refused / sizeof *g_refused; i++)
        if (truthy(json_object_get(*root, g_refused[i][0]))) {
            accel_errf(err, errlen, "%s: %s is set: accel merges plain LoRA (W + scale B A), not %s", path,
                       g_refused[i][0], g_refused[i][1]);
            return ACCEL_ERR_UNSUPPORTED;
        }
    json_t *alpha = json_object_get(*root, "lora_alpha"), *pattern = json_object_get(*root, "alpha_pattern");
    if ((alpha && !json_is_number(alpha)) || (truthy(pattern) && !json_is_object(pattern))) {
        accel_errf(err, errlen, "%s: %s is not a %s", path, alpha && !json_is_number(alpha) ? "lora_alpha" :
                   "alpha_pattern", alpha && !json_is_number(alpha) ? "number" : "JSON object");
        return ACCEL_ERR_CORRUPT;
    }
    json_t *base = json_object_get(*root, "base_model_name_or_path"), *rev = json_object_get(*root, "revision");
    snprintf(p->base_name, sizeof p->base_name, "%s", json_is_string(base) ? json_string_value(base) : "");
    snprintf(p->revision, sizeof p->revision, "%s", json_is_string(rev) ? json_string_value(rev) : "");
    return ACCEL_OK;
}

/* One tensor of the file as a module's piece; *kind -1: a B factor (paired later). */
static accel_status_t classify(const char *file, const accel_st_tensor_t *t, accel_peft_module_t *m, int *b,
                               char *err, size_t errlen)
{
    static const struct { const char *suffix; int kind, b; } pieces[] = {
        { ".lora_A.weight", PEFT_LORA, 0 }, { ".lora_B.weight", PEFT_LORA, 1 },
        { ".lora_embedding_A", PEFT_EMBEDDING, 0 }, { ".lora_embedding_B", PEFT_EMBEDDING, 1 },
        { ".lora_magnitude_vector", PEFT_LORA, 2 }, { ".lora_magnitude_vector.weight", PEFT_LORA, 2 } };
    const char *name = t->name;
    if (strncmp(name, PREFIX, strlen(PREFIX))) {
        accel_errf(err, errlen, "%s: tensor %s is not under " PREFIX ": not a PEFT adapter's", file, name);
        return ACCEL_ERR_CORRUPT;
    }
    name += strlen(PREFIX);
    if (t->dtype != ACCEL_ST_F32 && t->dtype != ACCEL_ST_BF16 && t->dtype != ACCEL_ST_F16) {
        accel_errf(err, errlen, "%s: tensor %s is %s, where an adapter holds F32, BF16 or F16", file, t->name,
                   accel_st_dtype_name(t->dtype));
        return ACCEL_ERR_UNSUPPORTED;
    }
    size_t stem = 0;
    for (size_t i = 0; i < sizeof pieces / sizeof *pieces; i++)
        if (ends_with(name, pieces[i].suffix, &stem)) {
            if (t->ndim != (pieces[i].b == 2 ? 1 : 2)) {
                accel_errf(err, errlen, "%s: tensor %s has %d dimensions, where %s %d", file, t->name, t->ndim,
                           pieces[i].b == 2 ? "DoRA's magnitudes have" : "LoRA factors have", pieces[i].b == 2 ? 1 : 2);
                return ACCEL_ERR_SHAPE;
            }
            snprintf(m->name, sizeof m->name, "%.*s", (int)stem, name);
            m->kind = (accel_peft_kind_t)pieces[i].kind;
            *b = pieces[i].b;
            return ACCEL_OK;
        }
    if (strstr(name, ".lora_")) {
        accel_errf(err, errlen, "%s: tensor %s belongs to a LoRA variant accel does not merge (a LoRA bias, "
                   "KaSA's diagonal, ...)", file, t->name);
        return ACCEL_ERR_UNSUPPORTED;
    }
    const char *bl = strstr(name, ".base_layer.");   /* a saved base layer: the tensor it stands for */
    if (bl) snprintf(m->name, sizeof m->name, "%.*s%s", (int)(bl - name), name, bl + strlen(".base_layer"));
    else snprintf(m->name, sizeof m->name, "%s", name);
    m->kind = PEFT_FULL;
    m->a = t;
    *b = 0;
    return ACCEL_OK;
}

accel_status_t accel_peft_open(const char *dir, accel_peft_t **out, char *err, size_t errlen)
{
    *out = NULL;
    accel_peft_t *p = calloc(1, sizeof *p);
    if (!p) return ACCEL_ERR_NOMEM;
    snprintf(p->dir, sizeof p->dir, "%s", dir);
    json_t *root = NULL;
    accel_status_t st = read_config(p, &root, err, errlen);
    char path[4200];
    snprintf(path, sizeof path, "%s/adapter_model.safetensors", dir);
    if (st == ACCEL_OK && !exists(path)) {
        char bin[4200];
        snprintf(bin, sizeof bin, "%s/adapter_model.bin", dir);
        accel_errf(err, errlen, "%s: %s%s", path, strerror(ENOENT), exists(bin) ? "\n--> hint: the adapter is "
                   "saved as adapter_model.bin (a pickle), which accel does not read: save it again with "
                   "save_pretrained(dir, safe_serialization=True)" : "");
        st = ACCEL_ERR_NOT_FOUND;
    }
    if (st == ACCEL_OK) st = accel_st_open(path, &p->st, err, errlen);
    const int nt = st == ACCEL_OK ? accel_st_count(p->st) : 0;
    if (st == ACCEL_OK && !(p->m = calloc((size_t)(nt ? nt : 1), sizeof *p->m))) st = ACCEL_ERR_NOMEM;
    /* A factors and whole tensors first, sorted; then each B to its A. */
    const accel_st_tensor_t **bs = st == ACCEL_OK ? calloc((size_t)(nt ? nt : 1), sizeof *bs) : NULL;
    int nb = 0;
    if (st == ACCEL_OK && !bs) st = ACCEL_ERR_NOMEM;
    for (int i = 0; st == ACCEL_OK && i < nt; i++) {
        accel_peft_module_t m = { 0 };
        int isb = 0;
        const accel_st_tensor_t *t = accel_st_at(p->st, i);
        st = classify(path, t, &m, &isb, err, errlen);
        if (st != ACCEL_OK) break;
        if (isb) { bs[nb++] = t; continue; }
        if (m.kind != PEFT_FULL) m.a = t;
        p->m[p->n++] = m;
    }
    if (st == ACCEL_OK) qsort(p->m, (size_t)p->n, sizeof *p->m, cmp_modules);
    for (int i = 0; st == ACCEL_OK && i < nb; i++) {
        accel_peft_module_t key = { 0 };
        int isb = 0;
        classify(path, bs[i], &key, &isb, NULL, 0);
        accel_peft_module_t *m = bsearch(&key, p->m, (size_t)p->n, sizeof *p->m, cmp_modules);
        const accel_st_tensor_t **slot = !m ? NULL : isb == 2 ? &m->mag : &m->b;
        if (!slot || *slot) {
            accel_errf(err, errlen, "%s: tensor %s has %s", path, bs[i]->name, m ? "a twin" : "no A factor beside it");
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        *slot = bs[i];
    }
    free(bs);
    json_t *ja = json_object_get(root, "lora_alpha");
    const double alpha = json_is_number(ja) ? json_number_value(ja) : 8.0;     /* PEFT's default */
    const bool rs = json_is_true(json_object_get(root, "use_rslora"));
    for (int i = 0; st == ACCEL_OK && i < p->n; i++) {
        accel_peft_module_t *m = &p->m[i];
        if (m->kind == PEFT_FULL) continue;
        if (!m->b || m->b->dims[1] != m->a->dims[0] || !m->a->dims[0]) {
            accel_errf(err, errlen, "%s: module %s %s", path, m->name, !m->b ? "has an A factor without its B" :
                       "has A and B of different ranks");
            st = !m->b ? ACCEL_ERR_CORRUPT : ACCEL_ERR_SHAPE;
            break;
        }
        if (m->mag && (m->kind != PEFT_LORA || m->mag->dims[0] != m->b->dims[0])) {
            accel_errf(err, errlen, "%s: module %s: DoRA %s", path, m->name, m->kind != PEFT_LORA ? "on an embedding, "
                       "which accel does not merge" : "magnitudes of another length than its rows");
            st = m->kind != PEFT_LORA ? ACCEL_ERR_UNSUPPORTED : ACCEL_ERR_SHAPE;
            break;
        }
        double a = alpha;
        st = module_alpha(json_object_get(root, "alpha_pattern"), alpha, m->name, &a, err, errlen);
        const double r = (double)m->a->dims[0];
        m->scale = a / (rs ? sqrt(r) : r);
        m->alpha = a;
        p->rslora = rs;
    }
    if (st == ACCEL_OK && !p->n) {
        accel_errf(err, errlen, "%s holds no tensors", path);
        st = ACCEL_ERR_CORRUPT;
    }
    if (st == ACCEL_OK && json_is_true(json_object_get(root, "use_dora")))   /* every module its magnitudes */
        for (int i = 0; st == ACCEL_OK && i < p->n; i++)
            if (p->m[i].kind == PEFT_LORA && !p->m[i].mag) {
                accel_errf(err, errlen, "%s: use_dora is set, but module %s has no lora_magnitude_vector", path,
                           p->m[i].name);
                st = ACCEL_ERR_CORRUPT;
            }
    json_decref(root);
    if (st != ACCEL_OK) {
        accel_peft_close(p);
        return st;
    }
    *out = p;
    return ACCEL_OK;
}

void accel_peft_close(accel_peft_t *p)
{
    if (!p) return;
    accel_st_close(p->st);
    free(p->m);
    free(p);
}

const char *accel_peft_dir(const accel_peft_t *p) { return p->dir; }
const accel_st_t *accel_peft_file(const accel_peft_t *p) { return p->st; }
int accel_peft_count(const accel_peft_t *p) { return p->n; }
const accel_peft_module_t *accel_peft_module(const accel_peft_t *p, int i) { return &p->m[i]; }

/* The Hugging Face cache's hub directory, as huggingface_hub finds it. */
static void hub_cache(char *out, size_t len)
{
    const char *v;
    if ((v = getenv("HF_HUB_CACHE")) && *v) snprintf(out, len, "%s", v);
    else if ((v = getenv("HF_HOME")) && *v) snprintf(out, len, "%s/hub", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && *v) snprintf(out, len, "%s/huggingface/hub", v);
    else snprintf(out, len, "%s/.cache/huggingface/hub", (v = getenv("HOME")) ? v : "");
}

/* name's snapshot in the cache (repo/snapshots/<commit>, the commit refs/<revision> holds, or the
 * revision itself); false when there is none. */
static bool cached_snapshot(const char *cache, const char *name, const char *revision, char *out, size_t len)
{
    char repo[4200], ref[4800], commit[256] = "";
    int n = snprintf(repo, sizeof repo, "%s/models--", cache);
    for (const char *c = name; *c && n + 3 < (int)sizeof repo; c++) {
        if (*c == '/') { repo[n++] = '-'; repo[n++] = '-'; }
        else repo[n++] = *c;
    }
    repo[n] = 0;
    const char *rev = *revision ? revision : "main";
    snprintf(ref, sizeof ref, "%s/refs/%s", repo, rev);
    FILE *f = fopen(ref, "r");
    if (f) {
        if (!fgets(commit, sizeof commit, f)) commit[0] = 0;
        fclose(f);
        commit[strcspn(commit, " \r\n")] = 0;
    } else {
        snprintf(commit, sizeof commit, "%s", rev);
    }
    snprintf(out, len, "%s/snapshots/%s", repo, commit);
    return *commit && !strchr(commit, '/') && is_model_dir(out);
}

accel_status_t accel_peft_base(const accel_peft_t *p, const char *base, char *out, size_t len, char *err,
                               size_t errlen)
{
    if (base) {
        if (!is_model_dir(base)) {
            accel_errf(err, errlen, "the base model %s is not a Hugging Face model directory (no config.json)", base);
            return exists(base) ? ACCEL_ERR_INVALID : ACCEL_ERR_NOT_FOUND;
        }
        snprintf(out, len, "%s", base);
        return ACCEL_OK;
    }
    const char *name = p->base_name;
    if (!*name) {
        accel_errf(err, errlen, "%s/adapter_config.json names no base model (base_model_name_or_path)\n--> hint: "
                   "name its directory: accel_ckpt import %s --base DIR -o merged.h5", p->dir, p->dir);
        return ACCEL_ERR_NOT_FOUND;
    }
    char beside[8400], cache[4096], snap[8400];
    snprintf(beside, sizeof beside, "%s/%s", p->dir, name);
    if (is_model_dir(name)) { snprintf(out, len, "%s", name); return ACCEL_OK; }
    if (name[0] != '/' && is_model_dir(beside)) { snprintf(out, len, "%s", beside); return ACCEL_OK; }
    hub_cache(cache, sizeof cache);
    if (name[0] != '/' && strncmp(name, "..", 2) && cached_snapshot(cache, name, p->revision, snap, sizeof snap)) {
        snprintf(out, len, "%s", snap);
        return ACCEL_OK;
    }
    accel_errf(err, errlen, "the base model of the adapter %s, %s, is neither a model directory (here or beside the "
               "adapter) nor in the Hugging Face cache %s\n--> hint: download it (hf download %s), or name its "
               "directory: accel_ckpt import %s --base DIR -o merged.h5", p->dir, name, cache, name, p->dir);
    return ACCEL_ERR_NOT_FOUND;
}

accel_status_t accel_peft_merge(const accel_peft_t *p, int i, float *w, bool transposed)
{
    const accel_peft_module_t *m = &p->m[i];
    const uint64_t r = m->a->dims[0], in = m->a->dims[1], out = m->b->dims[0];
    float *a = malloc(sizeof(float) * (size_t)(r * in)), *b = malloc(sizeof(float) * (size_t)(out * r));
    accel_status_t st = a && b ? accel_st_read(p->st, m->a, 0, m->a->numel, a) : ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) st = accel_st_read(p->st, m->b, 0, m->b->numel, b);
    if (st == ACCEL_OK && transposed == (m->kind == PEFT_EMBEDDING))    /* w [out, in] += scale B A */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)out, (int)in, (int)r, (float)m->scale, b,
                    (int)r, a, (int)in, 1.0f, w, (int)in);
    else if (st == ACCEL_OK)                                            /* w [in, out] += scale A^T B^T */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasTrans, (int)in, (int)out, (int)r, (float)m->scale, a,
                    (int)in, b, (int)r, 1.0f, w, (int)out);
    if (st == ACCEL_OK && m->mag) {     /* DoRA: output row o (a column when transposed) to magnitude mag[o] */
        float *mag = malloc(sizeof(float) * (size_t)out);
        double *norm = calloc((size_t)out, sizeof *norm);
        st = mag && norm ? accel_st_read(p->st, m->mag, 0, out, mag) : ACCEL_ERR_NOMEM;
        for (uint64_t k = 0; st == ACCEL_OK && k < out * in; k++) {
            const uint64_t o = transposed ? k % out : k / in;
            norm[o] += (double)w[k] * w[k];
        }
        for (uint64_t k = 0; st == ACCEL_OK && k < out * in; k++) {
            const uint64_t o = transposed ? k % out : k / in;
            w[k] *= (float)(mag[o] / sqrt(norm[o]));
        }
        free(mag);
        free(norm);
    }
    free(a);
    free(b);
    return st;
}

/* accel/hf.h: a module's merge on accel's rows of it (their order from the Hugging Face mapping). */
void accel_hf_linear_add(const accel_hf_linear_t *l, int r, float scale, const float *a, const float *b, float *w,
                         float *scratch)
{
    const uint64_t in = l->in;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)l->out, (int)in, r, scale, b, r, a, (int)in, 0.0f,
                scratch, (int)in);
    for (uint64_t o = 0; o < l->out; o++) {
        float *row = w + l->rows[o] * in;
        const float *d = scratch + o * in;
        for (uint64_t k = 0; k < in; k++) row[k] += d[k];
    }
}

accel_status_t accel_peft_merge_expert(const accel_peft_t *p, int i, uint64_t e, uint64_t E, float *w,
                                       bool transposed)
{
    const accel_peft_module_t *m = &p->m[i];
    const uint64_t r = m->a->dims[0] / E, in = m->a->dims[1], out = m->b->dims[0];
    const float scale = (float)(m->alpha / (p->rslora ? sqrt((double)r) : (double)r));
    float *a = malloc(sizeof(float) * (size_t)(r * in)), *b = malloc(sizeof(float) * (size_t)(out * r));
    float *row = malloc(sizeof(float) * (size_t)(r * E));
    accel_status_t st = a && b && row ? accel_st_read(p->st, m->a, e * r * in, (e + 1) * r * in, a) : ACCEL_ERR_NOMEM;
    for (uint64_t o = 0; st == ACCEL_OK && o < out; o++) {     /* B_e: columns k E + e */
        st = accel_st_read(p->st, m->b, o * r * E, (o + 1) * r * E, row);
        for (uint64_t k = 0; k < r; k++) b[o * r + k] = row[k * E + e];
    }
    if (st == ACCEL_OK && !transposed)          /* w [out, in] += scale B_e A_e */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)out, (int)in, (int)r, scale, b, (int)r, a,
                    (int)in, 1.0f, w, (int)in);
    else if (st == ACCEL_OK)                    /* w [in, out] += scale A_e^T B_e^T */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasTrans, (int)in, (int)out, (int)r, scale, a, (int)in, b, (int)r,
                    1.0f, w, (int)out);
    free(a);
    free(b);
    free(row);
    return st;
}

/* ------------------------------------------------------------------ low-rank factors */

/* Orthonormal columns of y [m, k] in place (modified Gram-Schmidt, twice, sums in double); a
 * column that vanishes becomes zero. */
static void orthonormalize(float *y, uint64_t m, int k)
{
    for (int pass = 0; pass < 2; pass++)
        for (int j = 0; j < k; j++) {
            for (int i = 0; i < j; i++) {
                double dot = 0;
                for (uint64_t r = 0; r < m; r++) dot += (double)y[r * k + i] * y[r * k + j];
                for (uint64_t r = 0; r < m; r++) y[r * k + j] -= (float)dot * y[r * k + i];
            }
            double norm = 0;
            for (uint64_t r = 0; r < m; r++) norm += (double)y[r * k + j] * y[r * k + j];
            const float inv = norm > 1e-30 ? (float)(1.0 / sqrt(norm)) : 0.0f;
            for (uint64_t r = 0; r < m; r++) y[r * k + j] *= inv;
        }
}

/* Eigenvalues (w, descending) and eigenvectors (columns of v) of the symmetric g [k, k] (cyclic
 * Jacobi; g is overwritten). */
static void symmetric_eigen(double *g, int k, double *w, double *v)
{
    for (int i = 0; i < k; i++)
        for (int j = 0; j < k; j++) v[i * k + j] = i == j;
    for (int sweep = 0; sweep < 100; sweep++) {
        double off = 0, total = 0;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                if (i == j) total += g[i * k + j] * g[i * k + j];
                else off += g[i * k + j] * g[i * k + j];
            }
        if (off <= 1e-30 * (total + off)) break;
        for (int p = 0; p < k; p++)
            for (int q = p + 1; q < k; q++) {
                if (fabs(g[p * k + q]) < 1e-300) continue;
                const double theta = (g[q * k + q] - g[p * k + p]) / (2 * g[p * k + q]);
                const double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                const double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int i = 0; i < k; i++) {       /* g = J^T g J: columns, then rows */
                    const double gp = g[i * k + p], gq = g[i * k + q];
                    g[i * k + p] = c * gp - s * gq;
                    g[i * k + q] = s * gp + c * gq;
                }
                for (int i = 0; i < k; i++) {
                    const double gp = g[p * k + i], gq = g[q * k + i];
                    g[p * k + i] = c * gp - s * gq;
                    g[q * k + i] = s * gp + c * gq;
                }
                for (int i = 0; i < k; i++) {
                    const double vp = v[i * k + p], vq = v[i * k + q];
                    v[i * k + p] = c * vp - s * vq;
                    v[i * k + q] = s * vp + c * vq;
                }
            }
    }
    for (int i = 0; i < k; i++) w[i] = g[i * k + i];
    for (int i = 0; i < k; i++)                     /* sort descending, columns along */
        for (int j = i + 1; j < k; j++)
            if (w[j] > w[i]) {
                const double t = w[i];
                w[i] = w[j];
                w[j] = t;
                for (int r = 0; r < k; r++) {
                    const double x = v[r * k + i];
                    v[r * k + i] = v[r * k + j];
                    v[r * k + j] = x;
                }
            }
}

accel_status_t accel_peft_factor(const float *d, uint64_t m, uint64_t n, int r, float *a, float *b, double *err)
{
    const uint64_t mn = m < n ? m : n;
    const int k = (int)((uint64_t)r + 8 < mn ? (uint64_t)r + 8 : mn);
    float *omega = malloc(sizeof(float) * (size_t)(n * k)), *q = malloc(sizeof(float) * (size_t)(m * k));
    float *z = malloc(sizeof(float) * (size_t)(n * k)), *bm = malloc(sizeof(float) * (size_t)(k * n));
    double *g = malloc(sizeof(double) * (size_t)(k * k * 2 + k));
    accel_status_t st = omega && q && z && bm && g ? ACCEL_OK : ACCEL_ERR_NOMEM;
    memset(a, 0, sizeof(float) * (size_t)r * n);
    memset(b, 0, sizeof(float) * (size_t)m * r);
    if (st == ACCEL_OK) {
        accel_rng_fill_normal(omega, n * (uint64_t)k, 1.0f, 0x10a, ACCEL_RNG_SKETCH, m * 131 + n, 0);
        /* q = orth(d omega), then twice q = orth(d orth(d^T q)): the range of d's top singular vectors */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, k, (int)n, 1.0f, d, (int)n, omega, k, 0.0f, q, k);
        orthonormalize(q, m, k);
        for (int it = 0; it < 2; it++) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)n, k, (int)m, 1.0f, d, (int)n, q, k, 0.0f, z, k);
            orthonormalize(z, n, k);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, k, (int)n, 1.0f, d, (int)n, z, k, 0.0f, q, k);
            orthonormalize(q, m, k);
        }
        /* bm = q^T d [k, n]; bm bm^T = u diag(s^2) u^T */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, (int)n, (int)m, 1.0f, q, k, d, (int)n, 0.0f, bm, (int)n);
        double *u = g + k * k, *w = u + k * k;
        for (int i = 0; i < k; i++)
            for (int j = 0; j <= i; j++) {
                double dot = 0;
                for (uint64_t c = 0; c < n; c++) dot += (double)bm[i * n + c] * bm[j * n + c];
                g[i * k + j] = g[j * k + i] = dot;
            }
        symmetric_eigen(g, k, w, u);
        /* d ~ q u_r s_r v_r^T with v_r^T = s_r^-1 u_r^T bm: b = q u_r s_r^1/2, a = s_r^-1/2 u_r^T bm */
        const double floor = w[0] * 1e-14;
        for (int i = 0; i < r && i < k; i++) {
            if (!(w[i] > floor) || w[i] <= 0) break;
            const double s = sqrt(w[i]), half = sqrt(s);
            for (uint64_t c = 0; c < n; c++) {
                double sum = 0;
                for (int j = 0; j < k; j++) sum += u[j * k + i] * bm[j * n + c];
                a[i * n + c] = (float)(sum / half);
            }
            for (uint64_t row = 0; row < m; row++) {
                double sum = 0;
                for (int j = 0; j < k; j++) sum += (double)q[row * k + j] * u[j * k + i];
                b[row * r + i] = (float)(sum * half);
            }
        }
        /* The error, by blocks of rows: d - b a. */
        double num = 0, den = 0;
        float *blk = malloc(sizeof(float) * (size_t)((m < 64 ? m : 64) * n));
        for (uint64_t r0 = 0; blk && r0 < m; r0 += 64) {
            const uint64_t rows = m - r0 < 64 ? m - r0 : 64;
            memcpy(blk, d + r0 * n, sizeof(float) * (size_t)(rows * n));
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)n, r, -1.0f, b + r0 * r, r, a,
                        (int)n, 1.0f, blk, (int)n);
            for (uint64_t i = 0; i < rows * n; i++) {
                num += (double)blk[i] * blk[i];
                den += (double)d[r0 * n + i] * d[r0 * n + i];
            }
        }
        if (!blk) st = ACCEL_ERR_NOMEM;
        free(blk);
        *err = den > 0 ? sqrt(num / den) : 0;
    }
    free(omega);
    free(q);
    free(z);
    free(bm);
    free(g);
    return st;
}

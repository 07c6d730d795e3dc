/* PEFT LoRA adapters (peft.h). adapter_config.json says how the adapter was made; its tensors sit
 * in adapter_model.safetensors under "base_model.model." + the module's name:
 *   X.lora_A.weight [r, in], X.lora_B.weight [out, r]         a linear layer X (W [out, in])
 *   X.lora_embedding_A [r, V], X.lora_embedding_B [C, r]      an embedding X (W [V, C])
 *   X.base_layer.weight, or any other X.weight / X.bias       a whole tensor in place of the base's
 * PEFT's merge adds scale B A to W (transposed for an embedding and for fan_in_fan_out layers),
 * scale = alpha / r, or alpha / sqrt(r) with use_rslora, alpha from alpha_pattern where a key
 * matches the module (Python's re.match of "(.*\.)?(key)$"). */
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

#include "peft.h"

#define PREFIX "base_model.model."

struct accel_peft {
    char dir[4096];
    char base_name[1024];           /* base_model_name_or_path */
    char revision[256];             /* its hub revision ("" when the config names none) */
    accel_st_t *st;
    accel_peft_module_t *m;         /* sorted by name (kind apart: a module's LoRA beside its base_layer) */
    int n;
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
    { "use_dora", "DoRA (weight-decomposed LoRA: a magnitude vector rescales each merged row)" },
    { "lora_bias", "LoRA biases (lora_B carries a bias)" },
    { "use_qalora", "QA-LoRA (its A reads pooled inputs)" },
    { "use_bdlora", "BD-LoRA (block-diagonal factors)" },
    { "alora_invocation_tokens", "activated LoRA (the adapter acts only after its invocation tokens)" },
    { "arrow_config", "Arrow routing between adapters" },
    { "kasa_config", "KaSA (a learned diagonal between A and B, the base's smallest singular values cut)" },
    { "monteclora_config", "MonteCLoRA (sampled adapters)" },
    { "layer_replication", "layer replication (the adapter's model has more layers than its base)" },
    { "target_parameters", "LoRA on parameters (experts' stacked weights) rather than modules" },
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
        { ".lora_embedding_A", PEFT_EMBEDDING, 0 }, { ".lora_embedding_B", PEFT_EMBEDDING, 1 } };
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
            if (t->ndim != 2) {
                accel_errf(err, errlen, "%s: tensor %s has %d dimensions, where LoRA factors have 2", file, t->name,
                           t->ndim);
                return ACCEL_ERR_SHAPE;
            }
            snprintf(m->name, sizeof m->name, "%.*s", (int)stem, name);
            m->kind = (accel_peft_kind_t)pieces[i].kind;
            *b = pieces[i].b;
            return ACCEL_OK;
        }
    if (strstr(name, ".lora_") || strstr(name, "lora_magnitude_vector")) {
        accel_errf(err, errlen, "%s: tensor %s belongs to a LoRA variant accel does not merge (DoRA's magnitude, "
                   "a LoRA bias, ...)", file, t->name);
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
        if (!m || m->b) {
            accel_errf(err, errlen, "%s: tensor %s has %s", path, bs[i]->name, m ? "a twin" : "no A factor beside it");
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        m->b = bs[i];
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
        double a = alpha;
        st = module_alpha(json_object_get(root, "alpha_pattern"), alpha, m->name, &a, err, errlen);
        const double r = (double)m->a->dims[0];
        m->scale = a / (rs ? sqrt(r) : r);
    }
    if (st == ACCEL_OK && !p->n) {
        accel_errf(err, errlen, "%s holds no tensors", path);
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
    free(a);
    free(b);
    return st;
}

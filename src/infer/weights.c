/* Weights files for inference and train.init_from: accel checkpoints (tensors in /model,
 * configuration YAML in /meta/config.yaml), exported or imported weights (HDF5: tensors at the
 * root or in /model, fp32 or bf16, configuration in /meta/config.yaml; safetensors written by
 * accel_ckpt export: configuration in __metadata__ accel_config), and Hugging Face models (a
 * directory with config.json and safetensors, or one .safetensors file in it), read in one
 * process without MPI through the checkpoint layer's readers (accel_ckpt_file_*, accel_st_*,
 * accel_hf_*), which alone know those layouts. Only what inference needs is checked (tensor presence, shape,
 * float type); checksums are accel_ckpt's job. Extra groups, tensors and attributes are ignored,
 * so training checkpoints load as they are. */
#include "build_config.h"

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/ckpt.h"
#include "accel/hf.h"
#include "accel/infer.h"
#include "accel/safetensors.h"
#include "accel/log.h"
#include "../h5/h5util.h"

#define READ_CHUNK ((uint64_t)1 << 26)  /* elements per read (HDF5 1.10: stay far below 2 GiB) */

typedef enum { SRC_HDF5, SRC_SAFETENSORS, SRC_HF } source_t;

struct accel_weights {
    char *path;
    source_t src;
    accel_ckpt_file_t *file;            /* SRC_HDF5 */
    accel_st_t *st;                     /* SRC_SAFETENSORS (accel's own export) */
    accel_hf_t *hf;                     /* SRC_HF */
    char state[8];                      /* "model", or "" for tensors at the root */
    char prefix[16];                    /* the same as an HDF5 path prefix, for messages */
    const char *kind;
    char *config_yaml;
    char *chat_template;                /* NULL: none kept */
    size_t chat_template_len;
    int ntensors;
    char (*names)[ACCEL_TENSOR_NAME_MAX]; /* per layout tensor, after check */
    uint64_t *numel;
    /* A LoRA fine-tune's checkpoint (lora.rank > 0) holds the adapters only: the weights are its
     * base's (train.init_from; an adapter's base) with each module's scale B A added. */
    accel_weights_t *base;
    accel_hf_linear_t *lin;             /* the adapted modules */
    int nlin, lora_rank;
    float lora_scale;
    float *a, *b, *scratch;             /* one module's factors and product, the largest's size */
};

static accel_status_t open_safetensors(accel_weights_t *w)
{
    char err[2048] = "";
    accel_status_t st = accel_st_open(w->path, &w->st, err, sizeof err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("%s\n--> hint: check the file (a truncated download or copy?)", err);
        return st;
    }
    const char *yaml = accel_st_metadata(w->st, "accel_config");
    if (yaml && *yaml && !(w->config_yaml = strdup(yaml))) return ACCEL_ERR_NOMEM;
    const char *chat = accel_st_metadata(w->st, "accel_chat_template");
    if (chat && !(w->chat_template = strdup(chat))) return ACCEL_ERR_NOMEM;
    w->chat_template_len = chat ? strlen(chat) : 0;
    w->kind = "exported weights (safetensors)";
    snprintf(w->prefix, sizeof w->prefix, "%s", "");
    return ACCEL_OK;
}

static accel_status_t open_hf(accel_weights_t *w)
{
    char err[4096] = "";
    accel_status_t st = accel_hf_open(w->path, &w->hf, err, sizeof err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("cannot read the Hugging Face model %s: %s", w->path, err);
        return st;
    }
    if (!(w->config_yaml = strdup(accel_hf_config_yaml(w->hf)))) return ACCEL_ERR_NOMEM;
    w->chat_template = accel_hf_chat_template(w->hf, &w->chat_template_len);
    w->kind = "Hugging Face model";
    snprintf(w->prefix, sizeof w->prefix, "%s", "");
    return ACCEL_OK;
}

static accel_status_t open_hdf5(accel_weights_t *w)
{
    const char *path = w->path;
    accel_status_t st = accel_ckpt_file_open(path, &w->file, NULL, 0);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("%s: HDF5 cannot open the file (truncated or damaged?)\n--> hint: check it "
                    "with: h5dump -H %s", path, path);
        return st;
    }
    bool checkpoint = false, complete = false;
    int version = 0;
    accel_ckpt_file_format(w->file, &checkpoint, &version, &complete);
    if (checkpoint && version > ACCEL_CKPT_FORMAT_VERSION) {
        ACCEL_ERROR("%s has checkpoint format version %d, but this accel reads versions up to %d\n"
                    "--> hint: use the accel that wrote it", path, version, ACCEL_CKPT_FORMAT_VERSION);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (checkpoint && !complete) {
        ACCEL_ERROR("%s is an incomplete checkpoint (its save did not finish)\n--> hint: use "
                    "an earlier step-*.h5, or the one 'accel_ckpt latest DIR' names", path);
        return ACCEL_ERR_CORRUPT;
    }
    bool model = accel_ckpt_file_has_state(w->file, "model");
    snprintf(w->state, sizeof w->state, "%s", model ? "model" : "");
    snprintf(w->prefix, sizeof w->prefix, "%s", model ? "/model/" : "/");
    /* A configuration that cannot be read counts as none: the model then comes from overrides. */
    if (accel_ckpt_file_config(w->file, &w->config_yaml) != ACCEL_OK) w->config_yaml = NULL;
    /* Read now, so later callers need no HDF5 (a dispatcher may own it); unreadable counts as none. */
    if (accel_ckpt_file_chat_template(w->file, &w->chat_template, &w->chat_template_len) != ACCEL_OK) {
        free(w->chat_template);
        w->chat_template = NULL;
        w->chat_template_len = 0;
    }
    w->kind = checkpoint ? "checkpoint" : "exported weights";
    return ACCEL_OK;
}

/* A LoRA checkpoint's base and adapted modules (open_hdf5 read its configuration). */
static accel_status_t open_lora(accel_weights_t *w)
{
    accel_config_t *cfg = malloc(sizeof *cfg);
    char err[2048] = "", base[4096];
    if (!cfg) return ACCEL_ERR_NOMEM;
    accel_status_t st = ACCEL_OK;
    if (accel_config_from_yaml(cfg, w->config_yaml, w->path, err, sizeof err) != ACCEL_OK || cfg->lora.rank <= 0)
        goto out;                       /* not one (an unreadable configuration counts as none) */
    const char *from = cfg->train.init_from;
    if (accel_hf_is_adapter(from) && (st = accel_hf_base_of(from, base, sizeof base, err, sizeof err)) != ACCEL_OK) {
        ACCEL_ERROR("%s holds LoRA adapters of the model train.init_from=%s: %s", w->path, from, err);
        goto out;
    }
    if (!accel_hf_is_adapter(from)) snprintf(base, sizeof base, "%s", from);
    if ((st = accel_weights_open(base, &w->base)) != ACCEL_OK) {
        ACCEL_ERROR("%s holds rank-%d LoRA adapters only, and the model they adapt (train.init_from=%s) "
                    "cannot be read\n--> hint: run where training ran (a relative path), or write the adapters "
                    "out: accel_ckpt export %s --format peft --base MODEL_DIR --output DIR", w->path,
                    cfg->lora.rank, from, w->path);
        goto out;
    }
    w->nlin = accel_hf_linears(&cfg->model, cfg->lora.targets, &w->lin, err, sizeof err);
    if (w->nlin < 0) {
        st = w->nlin;
        w->nlin = 0;
        ACCEL_ERROR("%s: its lora.targets=%s: %s", w->path, cfg->lora.targets, err);
        goto out;
    }
    uint64_t most = 0, ab = 0;
    for (int i = 0; i < w->nlin; i++) {
        if (w->lin[i].out * w->lin[i].in > most) most = w->lin[i].out * w->lin[i].in;
        if ((w->lin[i].out > w->lin[i].in ? w->lin[i].out : w->lin[i].in) > ab)
            ab = w->lin[i].out > w->lin[i].in ? w->lin[i].out : w->lin[i].in;
    }
    w->lora_rank = cfg->lora.rank;
    w->lora_scale = (float)accel_hf_lora_scale(cfg);
    w->a = malloc(sizeof(float) * (size_t)(ab * (uint64_t)cfg->lora.rank));
    w->b = malloc(sizeof(float) * (size_t)(ab * (uint64_t)cfg->lora.rank));
    w->scratch = malloc(sizeof(float) * (size_t)(most ? most : 1));
    if (!w->a || !w->b || !w->scratch) st = ACCEL_ERR_NOMEM;
    w->kind = "LoRA checkpoint";
out:
    free(cfg);
    return st;
}

accel_status_t accel_weights_open(const char *path, accel_weights_t **out)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        ACCEL_ERROR("cannot open weights file '%s': %s\n--> hint: pass a checkpoint (step-*.h5 "
                    "written by accel_train), weights exported with 'accel_ckpt export' or "
                    "imported with 'accel_ckpt import', or a Hugging Face model directory", path,
                    strerror(errno));
        return errno == ENOENT ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_IO;
    }
    bool hf = accel_hf_is_model(path);
    if (!S_ISREG(sb.st_mode) && !hf) {
        ACCEL_ERROR("weights '%s' is not a regular file%s", path, S_ISDIR(sb.st_mode) ?
                    " (a directory without config.json: not a Hugging Face model)" : "");
        return ACCEL_ERR_INVALID;
    }
    if (access(path, R_OK) != 0) {
        ACCEL_ERROR("cannot read weights '%s': %s", path, strerror(errno));
        return ACCEL_ERR_IO;
    }
    size_t len = strlen(path);
    bool safetensors = !hf && len >= 12 && !strcmp(path + len - 12, ".safetensors");
    if (!hf && !safetensors && !accel_h5_probe(path, (long long)sb.st_size)) {
        ACCEL_ERROR("'%s' is not an HDF5 file\n--> hint: accel reads accel checkpoints, weights "
                    "exported as HDF5 or safetensors ('accel_ckpt export FILE --format hdf5'), and "
                    "Hugging Face model directories", path);
        return ACCEL_ERR_CORRUPT;
    }
    accel_weights_t *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return ACCEL_ERR_NOMEM;
    }
    w->src = hf ? SRC_HF : safetensors ? SRC_SAFETENSORS : SRC_HDF5;
    accel_status_t st = hf ? open_hf(w) : safetensors ? open_safetensors(w) : open_hdf5(w);
    if (st == ACCEL_OK && w->src == SRC_HDF5 && w->config_yaml) st = open_lora(w);
    if (st != ACCEL_OK) {
        accel_weights_close(w);
        return st;
    }
    *out = w;
    return ACCEL_OK;
}

static void forget_tensors(accel_weights_t *w)
{
    free(w->names);
    free(w->numel);
    w->names = NULL;
    w->numel = NULL;
    w->ntensors = 0;
}

void accel_weights_close(accel_weights_t *w)
{
    if (!w) return;
    forget_tensors(w);
    accel_ckpt_file_close(w->file);
    accel_st_close(w->st);
    accel_hf_close(w->hf);
    accel_weights_close(w->base);
    accel_hf_linears_free(w->lin, w->nlin);
    free(w->a);
    free(w->b);
    free(w->scratch);
    free(w->config_yaml);
    free(w->chat_template);
    free(w->path);
    free(w);
}

const char *accel_weights_path(const accel_weights_t *w) { return w->path; }
const char *accel_weights_kind(const accel_weights_t *w) { return w->kind; }
const char *accel_weights_config_yaml(const accel_weights_t *w) { return w->config_yaml; }

const char *accel_weights_chat_template(const accel_weights_t *w, size_t *len)
{
    if (len) *len = w->chat_template ? w->chat_template_len : 0;
    return w->chat_template;
}

accel_status_t accel_weights_load_config(const accel_weights_t *w, int noverrides,
                                         char *const overrides[], accel_config_t *cfg, char *err,
                                         size_t errlen)
{
    if (!w->config_yaml)
        return accel_config_load(cfg, NULL, noverrides, overrides, NULL, err, errlen);
    /* accel_config_load reads a file: hand it the text through an anonymous in-memory file. */
    int fd = memfd_create("accel-config", MFD_CLOEXEC);
    size_t n = strlen(w->config_yaml);
    if (fd < 0 || write(fd, w->config_yaml, n) != (ssize_t)n) {
        snprintf(err, errlen, "cannot stage the stored configuration of %s: %s", w->path,
                 strerror(errno));
        if (fd >= 0) close(fd);
        return ACCEL_ERR_IO;
    }
    char name[64];
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    char msg[1024];
    accel_status_t st = accel_config_load(cfg, name, noverrides, overrides, NULL, msg, sizeof msg);
    close(fd);
    if (st != ACCEL_OK) {
        /* Name the checkpoint rather than the staging file. */
        const char *rest = strstr(msg, name) ? strstr(msg, name) + strlen(name) : NULL;
        if (rest) snprintf(err, errlen, "%s (/meta/config.yaml)%s", w->path, rest);
        else snprintf(err, errlen, "%s", msg);
    }
    return st;
}

/* The tokenizer's name for a Hugging Face model: its directory's (tokenizers are called after their
 * model), as accel_ckpt import records it. */
static void hf_dir_name(const char *path, char *name, size_t len)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    struct stat sb;
    if (stat(buf, &sb) == 0 && !S_ISDIR(sb.st_mode)) {          /* HF_DIR/model.safetensors */
        char *slash = strrchr(buf, '/');
        if (slash) *slash = '\0';
        else snprintf(buf, sizeof buf, ".");
    }
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
    const char *base = strrchr(buf, '/');
    snprintf(name, len, "%s", base ? base + 1 : buf);
}

accel_status_t accel_weights_tokenizer(const accel_weights_t *w, accel_tokenizer_t **tok, char *err,
                                       size_t errlen)
{
    *tok = NULL;
    char name[ACCEL_TOKENIZER_NAME_MAX] = "", *json = NULL;
    size_t len = 0;
    accel_status_t st = ACCEL_ERR_NOT_FOUND;
    switch (w->src) {
    case SRC_HDF5:
        st = accel_ckpt_file_tokenizer(w->file, &json, &len, name, sizeof name, NULL, 0);
        break;
    case SRC_SAFETENSORS: {
        const char *j = accel_st_metadata(w->st, "accel_tokenizer_json");
        const char *n = accel_st_metadata(w->st, "accel_tokenizer");
        if (j) {
            len = strlen(j);
            st = (json = strdup(j)) ? ACCEL_OK : ACCEL_ERR_NOMEM;
            snprintf(name, sizeof name, "%s", n ? n : "tokenizer");
        }
        break;
    }
    case SRC_HF:
        if ((json = accel_hf_tokenizer(w->hf, &len))) st = ACCEL_OK;
        hf_dir_name(w->path, name, sizeof name);
        break;
    }
    if (st == ACCEL_OK) {
        st = accel_tokenizer_open_recorded(name[0] ? name : "tokenizer", json, len, tok, err, errlen);
    } else if (st != ACCEL_ERR_NOT_FOUND) {
        snprintf(err, errlen, "%s: cannot read the tokenizer it keeps (%s)", w->path, accel_status_str(st));
    }
    free(json);
    return st;
}

static void shape_str(int ndim, const int64_t *shape, char *out, size_t outlen)
{
    size_t n = 0;
    n += (size_t)snprintf(out + n, outlen - n, "[");
    for (int d = 0; d < ndim && n < outlen; d++)
        n += (size_t)snprintf(out + n, outlen - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (n < outlen) snprintf(out + n, outlen - n, "]");
}

/* One tensor's description, whatever the source. */
static accel_status_t describe(accel_weights_t *w, const char *name, accel_ckpt_tensor_info_t *in)
{
    memset(in, 0, sizeof *in);
    if (w->src == SRC_HDF5) return accel_ckpt_file_tensor(w->file, w->state, name, in);
    snprintf(in->name, sizeof in->name, "%s", name);
    in->readable = true;
    if (w->src == SRC_SAFETENSORS) {
        const accel_st_tensor_t *t = accel_st_find(w->st, name);
        if (!t) return ACCEL_ERR_NOT_FOUND;
        in->ndim = t->ndim;
        for (int k = 0; k < t->ndim && k < ACCEL_CKPT_MAX_RANK; k++) in->dims[k] = t->dims[k];
        in->numel = t->numel;
        snprintf(in->dtype, sizeof in->dtype, "%s", accel_st_dtype_name(t->dtype));
        return ACCEL_OK;
    }
    const accel_hf_tensor_t *ts;
    int n = accel_hf_tensors(w->hf, &ts);
    for (int i = 0; i < n; i++)
        if (!strcmp(ts[i].name, name)) {
            in->ndim = ts[i].ndim;
            in->dims[0] = ts[i].dims[0];
            in->dims[1] = ts[i].dims[1];
            in->numel = ts[i].dims[0] * (ts[i].ndim == 2 ? ts[i].dims[1] : 1);
            snprintf(in->dtype, sizeof in->dtype, "fp32");
            return ACCEL_OK;
        }
    return ACCEL_ERR_NOT_FOUND;
}

/* Every tensor name the source holds (for the unused-tensor warning). */
static int list_names(accel_weights_t *w, char (**names)[ACCEL_CKPT_NAME_MAX])
{
    *names = NULL;
    int n = 0;
    if (w->src == SRC_HDF5) {
        accel_ckpt_tensor_info_t *all = NULL;
        if (accel_ckpt_file_list(w->file, w->state, &all, &n) != ACCEL_OK) return 0;
        *names = calloc((size_t)(n ? n : 1), sizeof **names);
        for (int i = 0; *names && i < n; i++) snprintf((*names)[i], sizeof **names, "%s", all[i].name);
        free(all);
    } else if (w->src == SRC_SAFETENSORS) {
        n = accel_st_count(w->st);
        *names = calloc((size_t)(n ? n : 1), sizeof **names);
        for (int i = 0; *names && i < n; i++) snprintf((*names)[i], sizeof **names, "%s", accel_st_at(w->st, i)->name);
    } else {
        const accel_hf_tensor_t *ts;
        n = accel_hf_tensors(w->hf, &ts);
        *names = calloc((size_t)(n ? n : 1), sizeof **names);
        for (int i = 0; *names && i < n; i++) snprintf((*names)[i], sizeof **names, "%s", ts[i].name);
    }
    return *names ? n : 0;
}

/* A LoRA checkpoint: the base against the model, and every module's factors in the file. */
static accel_status_t check_lora(accel_weights_t *w, const accel_layout_t *layout)
{
    ACCEL_CHECK(accel_weights_check(w->base, layout));
    for (int i = 0; i < w->nlin; i++)
        for (int k = 0; k < 2; k++) {
            char name[ACCEL_HF_NAME_MAX + 16];
            snprintf(name, sizeof name, k ? ACCEL_HF_LORA_B : ACCEL_HF_LORA_A, w->lin[i].module);
            const uint64_t d0 = k ? w->lin[i].out : (uint64_t)w->lora_rank, d1 = k ? (uint64_t)w->lora_rank : w->lin[i].in;
            accel_ckpt_tensor_info_t in;
            if (accel_ckpt_file_tensor(w->file, w->state, name, &in) != ACCEL_OK || in.ndim != 2 || in.dims[0] != d0 ||
                in.dims[1] != d1 || !in.readable) {
                ACCEL_ERROR("%s is a LoRA checkpoint without the factor '%s%s' [%llu, %llu] its configuration "
                            "names\n--> hint: accel_ckpt ls %s", w->path, w->prefix, name, (unsigned long long)d0,
                            (unsigned long long)d1, w->path);
                return ACCEL_ERR_NOT_FOUND;
            }
        }
    w->names = calloc((size_t)(layout->ntensors ? layout->ntensors : 1), sizeof *w->names);
    w->numel = calloc((size_t)(layout->ntensors ? layout->ntensors : 1), sizeof *w->numel);
    if (!w->names || !w->numel) return ACCEL_ERR_NOMEM;
    for (int i = 0; i < layout->ntensors; i++) {
        snprintf(w->names[i], sizeof w->names[i], "%s", layout->tensors[i].name);
        w->numel[i] = layout->tensors[i].numel;
    }
    w->ntensors = layout->ntensors;
    return ACCEL_OK;
}

/* Tensor `index` of a LoRA checkpoint: the base's, each adapted module's scale B A added. */
static accel_status_t read_lora(accel_weights_t *w, int index, float *dst)
{
    ACCEL_CHECK(accel_weights_read(w->base, index, dst));
    for (int i = 0; i < w->nlin; i++) {
        const accel_hf_linear_t *l = &w->lin[i];
        if (strcmp(l->accel, w->names[index])) continue;
        char a[ACCEL_HF_NAME_MAX + 16], b[sizeof a];
        snprintf(a, sizeof a, ACCEL_HF_LORA_A, l->module);
        snprintf(b, sizeof b, ACCEL_HF_LORA_B, l->module);
        const uint64_t r = (uint64_t)w->lora_rank;
        if (accel_ckpt_file_read(w->file, w->state, a, 0, r * l->in, w->a) != ACCEL_OK ||
            accel_ckpt_file_read(w->file, w->state, b, 0, l->out * r, w->b) != ACCEL_OK) {
            ACCEL_ERROR("%s: reading the LoRA factors of %s failed\n--> hint: check the file with accel_ckpt "
                        "verify %s", w->path, l->module, w->path);
            return ACCEL_ERR_IO;
        }
        accel_hf_linear_add(l, w->lora_rank, w->lora_scale, w->a, w->b, dst, w->scratch);
    }
    return ACCEL_OK;
}

accel_status_t accel_weights_check(accel_weights_t *w, const accel_layout_t *layout)
{
    forget_tensors(w);
    if (w->base) return check_lora(w, layout);
    size_t n = (size_t)(layout->ntensors ? layout->ntensors : 1);
    w->names = calloc(n, sizeof *w->names);
    w->numel = calloc(n, sizeof *w->numel);
    if (!w->names || !w->numel) return ACCEL_ERR_NOMEM;
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        accel_ckpt_tensor_info_t in;
        if (describe(w, t->name, &in) != ACCEL_OK) {
            ACCEL_ERROR("%s has no tensor '%s%s' (%s %s)\n--> hint: the file does not match the "
                        "model configuration (model.name, model.layers, ...); list it with: "
                        "accel_ckpt ls %s", w->path, w->prefix, t->name, w->kind,
                        w->config_yaml ? "with a stored configuration" : "without a configuration",
                        w->path);
            return ACCEL_ERR_NOT_FOUND;
        }
        bool same = in.ndim == t->ndim;
        for (int k = 0; same && k < in.ndim; k++) same = (int64_t)in.dims[k] == t->shape[k];
        if (!same) {
            char have[96] = "(scalar)", want[96];
            int64_t shape[ACCEL_CKPT_MAX_RANK];
            for (int k = 0; k < in.ndim; k++) shape[k] = (int64_t)in.dims[k];
            if (in.ndim > 0) shape_str(in.ndim, shape, have, sizeof have);
            shape_str(t->ndim, t->shape, want, sizeof want);
            ACCEL_ERROR("tensor '%s%s' has shape %s in %s, but the model expects %s\n--> hint: the "
                        "model sizes (model.width, model.vocab, ...) differ from the ones the "
                        "weights were trained with; drop the overrides or fix them", w->prefix,
                        t->name, have, w->path, want);
            return ACCEL_ERR_SHAPE;
        }
        if (!in.readable) {
            ACCEL_ERROR("tensor '%s%s' in %s is not a float tensor (%s)\n--> hint: weights are fp32 "
                        "or bf16 (a float type, or uint16 with the attribute dtype=\"bf16\")",
                        w->prefix, t->name, w->path, in.dtype);
            return ACCEL_ERR_INVALID;
        }
        snprintf(w->names[i], sizeof w->names[i], "%s", t->name);
        w->numel[i] = in.numel;
    }
    w->ntensors = layout->ntensors;
    /* Tensors the model does not use: a warning, so a wrong model.layers override shows. */
    char (*all)[ACCEL_CKPT_NAME_MAX] = NULL;
    int nall = list_names(w, &all), unused = 0;
    const char *first = NULL;
    for (int i = 0; i < nall; i++)
        if (!accel_layout_find(layout, all[i]) && !unused++) first = all[i];
    if (unused)
        ACCEL_WARN("%s: %d tensor(s) in %s are not used by the model (first: '%s')", w->path, unused,
                   w->prefix, first);
    free(all);
    return ACCEL_OK;
}

accel_status_t accel_weights_read(accel_weights_t *w, int index, float *dst)
{
    if (index < 0 || index >= w->ntensors) return ACCEL_ERR_INVALID;
    if (w->base) return read_lora(w, index, dst);
    const uint64_t n = w->numel[index];
    if (w->src != SRC_HDF5) {
        char err[2048] = "";
        accel_status_t st = ACCEL_OK;
        if (w->src == SRC_SAFETENSORS) st = accel_st_read(w->st, accel_st_find(w->st, w->names[index]), 0, n, dst);
        else st = accel_hf_read(w->hf, w->names[index], dst, err, sizeof err);
        if (st != ACCEL_OK)
            ACCEL_ERROR("%s: reading tensor '%s' failed%s%s", w->path, w->names[index], err[0] ? ": " : "", err);
        return st;
    }
    for (uint64_t b = 0; b < n; b += READ_CHUNK) {
        uint64_t e = b + READ_CHUNK < n ? b + READ_CHUNK : n;
        if (accel_ckpt_file_read(w->file, w->state, w->names[index], b, e, dst + b) != ACCEL_OK) {
            ACCEL_ERROR("%s: reading tensor '%s%s' failed (elements %llu..%llu)\n--> hint: the file "
                        "may be damaged or truncated; check it with accel_ckpt verify or h5dump",
                        w->path, w->prefix, w->names[index], (unsigned long long)b,
                        (unsigned long long)(e - 1));
            return ACCEL_ERR_IO;
        }
    }
    return ACCEL_OK;
}

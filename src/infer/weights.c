/* Weights files for inference: accel checkpoints (tensors in /model, configuration YAML in
 * /meta/config.yaml) and exported weights (tensors at the root or in /model, fp32 or bf16), read
 * in one process without MPI through the checkpoint library's file reader (accel_ckpt_file_*),
 * which alone knows those layouts. Only what inference needs is checked (tensor presence, shape,
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
#include "accel/infer.h"
#include "accel/log.h"
#include "../h5/h5util.h"

#define READ_CHUNK ((uint64_t)1 << 26)  /* elements per read (HDF5 1.10: stay far below 2 GiB) */

struct accel_weights {
    char *path;
    accel_ckpt_file_t *file;
    char state[8];                      /* "model", or "" for tensors at the root */
    char prefix[16];                    /* the same as an HDF5 path prefix, for messages */
    const char *kind;
    char *config_yaml;
    int ntensors;
    char (*names)[ACCEL_TENSOR_NAME_MAX]; /* per layout tensor, after check */
    uint64_t *numel;
};

accel_status_t accel_weights_open(const char *path, accel_weights_t **out)
{
    *out = NULL;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        ACCEL_ERROR("cannot open weights file '%s': %s\n--> hint: pass a checkpoint (step-*.h5 "
                    "written by accel_train) or weights exported with 'accel_ckpt export --format "
                    "hdf5'", path, strerror(errno));
        return errno == ENOENT ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_IO;
    }
    if (!S_ISREG(sb.st_mode)) {
        ACCEL_ERROR("weights file '%s' is not a regular file", path);
        return ACCEL_ERR_INVALID;
    }
    if (access(path, R_OK) != 0) {
        ACCEL_ERROR("cannot read weights file '%s': %s", path, strerror(errno));
        return ACCEL_ERR_IO;
    }
    if (!accel_h5_probe(path, (long long)sb.st_size)) {
        ACCEL_ERROR("'%s' is not an HDF5 file\n--> hint: accel_generate reads accel checkpoints "
                    "and weights exported as HDF5 ('accel_ckpt export FILE --format hdf5')", path);
        return ACCEL_ERR_CORRUPT;
    }
    accel_weights_t *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return ACCEL_ERR_NOMEM;
    }
    accel_status_t st = accel_ckpt_file_open(path, &w->file, NULL, 0);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("%s: HDF5 cannot open the file (truncated or damaged?)\n--> hint: check it "
                    "with: h5dump -H %s", path, path);
        goto fail;
    }
    bool checkpoint = false, complete = false;
    int version = 0;
    accel_ckpt_file_format(w->file, &checkpoint, &version, &complete);
    if (checkpoint && version > ACCEL_CKPT_FORMAT_VERSION) {
        ACCEL_ERROR("%s has checkpoint format version %d, but this accel reads versions up to %d\n"
                    "--> hint: use the accel that wrote it", path, version, ACCEL_CKPT_FORMAT_VERSION);
        st = ACCEL_ERR_UNSUPPORTED;
        goto fail;
    }
    if (checkpoint && !complete) {
        ACCEL_ERROR("%s is an incomplete checkpoint (its save did not finish)\n--> hint: use "
                    "an earlier step-*.h5, or the one 'accel_ckpt latest DIR' names", path);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    bool model = accel_ckpt_file_has_state(w->file, "model");
    snprintf(w->state, sizeof w->state, "%s", model ? "model" : "");
    snprintf(w->prefix, sizeof w->prefix, "%s", model ? "/model/" : "/");
    /* A configuration that cannot be read counts as none: the model then comes from overrides. */
    if (accel_ckpt_file_config(w->file, &w->config_yaml) != ACCEL_OK) w->config_yaml = NULL;
    w->kind = w->config_yaml ? "checkpoint" : "exported weights";
    *out = w;
    return ACCEL_OK;
fail:
    accel_weights_close(w);
    return st;
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
    free(w->config_yaml);
    free(w->path);
    free(w);
}

const char *accel_weights_path(const accel_weights_t *w) { return w->path; }
const char *accel_weights_kind(const accel_weights_t *w) { return w->kind; }
const char *accel_weights_config_yaml(const accel_weights_t *w) { return w->config_yaml; }

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

static void shape_str(int ndim, const int64_t *shape, char *out, size_t outlen)
{
    size_t n = 0;
    n += (size_t)snprintf(out + n, outlen - n, "[");
    for (int d = 0; d < ndim && n < outlen; d++)
        n += (size_t)snprintf(out + n, outlen - n, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (n < outlen) snprintf(out + n, outlen - n, "]");
}

accel_status_t accel_weights_check(accel_weights_t *w, const accel_layout_t *layout)
{
    forget_tensors(w);
    size_t n = (size_t)(layout->ntensors ? layout->ntensors : 1);
    w->names = calloc(n, sizeof *w->names);
    w->numel = calloc(n, sizeof *w->numel);
    if (!w->names || !w->numel) return ACCEL_ERR_NOMEM;
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        accel_ckpt_tensor_info_t in;
        if (accel_ckpt_file_tensor(w->file, w->state, t->name, &in) != ACCEL_OK) {
            ACCEL_ERROR("%s has no tensor '%s%s' (%s %s)\n--> hint: the file does not match the "
                        "model configuration (model.name, model.layers, ...); list it with: "
                        "h5ls -r %s", w->path, w->prefix, t->name, w->kind,
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
    accel_ckpt_tensor_info_t *all = NULL;
    int nall = 0, unused = 0;
    const char *first = NULL;
    if (accel_ckpt_file_list(w->file, w->state, &all, &nall) == ACCEL_OK)
        for (int i = 0; i < nall; i++)
            if (!accel_layout_find(layout, all[i].name) && !unused++) first = all[i].name;
    if (unused)
        ACCEL_WARN("%s: %d tensor(s) in %s are not used by the model (first: '%s')", w->path, unused,
                   w->prefix, first);
    free(all);
    return ACCEL_OK;
}

accel_status_t accel_weights_read(accel_weights_t *w, int index, float *dst)
{
    if (index < 0 || index >= w->ntensors) return ACCEL_ERR_INVALID;
    const uint64_t n = w->numel[index];
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

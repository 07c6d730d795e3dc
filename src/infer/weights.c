/* Weights files for inference: accel checkpoints (tensors in /model, configuration YAML in
 * /meta/config.yaml) and exported weights (tensors at the root or in /model, fp32 or bf16), read
 * with plain serial HDF5 so that one process needs no MPI and no checkpoint library. Only what
 * inference needs is checked (tensor presence, shape, float type); checksums are accel_ckpt's job.
 * Extra groups, tensors and attributes are ignored, so training checkpoints load as they are. */
#include "config.h"

#define _GNU_SOURCE
#include <errno.h>
#include <hdf5.h>
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

#define READ_CHUNK ((size_t)1 << 26)    /* elements per H5Dread (HDF5 1.10: stay far below 2 GiB) */

enum { DT_FLOAT, DT_BF16_BITS };        /* how a dataset's values become fp32 */

struct accel_weights {
    char *path;
    hid_t file;
    char prefix[16];                    /* "/model/" or "/" */
    const char *kind;
    char *config_yaml;
    int ntensors;
    hid_t *dset;                        /* per layout tensor, after check */
    unsigned char *dtype;
    char (*names)[ACCEL_TENSOR_NAME_MAX]; /* per layout tensor, for messages */
};

static int link_exists(hid_t loc, const char *path)
{
    htri_t r;
    H5E_BEGIN_TRY { r = H5Lexists(loc, path, H5P_DEFAULT); } H5E_END_TRY;
    return r > 0;
}

/* /meta/config.yaml: a scalar string dataset (fixed or variable length). NULL when absent. */
static char *read_config(hid_t file)
{
    if (!link_exists(file, "/meta") || !link_exists(file, "/meta/config.yaml")) return NULL;
    char *text = NULL;
    H5E_BEGIN_TRY {
        hid_t d = H5Dopen2(file, "/meta/config.yaml", H5P_DEFAULT);
        hid_t t = d >= 0 ? H5Dget_type(d) : -1;
        if (t >= 0 && H5Tget_class(t) == H5T_STRING) {
            hid_t mt = H5Tcopy(H5T_C_S1);
            if (H5Tis_variable_str(t) > 0) {
                char *s = NULL;
                H5Tset_size(mt, H5T_VARIABLE);
                if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, &s) >= 0 && s) {
                    text = strdup(s);
                    H5free_memory(s);
                }
            } else {
                size_t n = H5Tget_size(t);
                text = calloc(n + 1, 1);
                H5Tset_size(mt, n);
                if (text && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, text) < 0) {
                    free(text);
                    text = NULL;
                }
            }
            H5Tclose(mt);
        }
        if (t >= 0) H5Tclose(t);
        if (d >= 0) H5Dclose(d);
    } H5E_END_TRY;
    return text;
}

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
    w->file = -1;
    accel_status_t st = ACCEL_OK;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    /* Read-only: no lock (parallel file systems mounted without flock refuse one). */
    if (fapl < 0 || H5Pset_fapl_sec2(fapl) < 0 || H5Pset_file_locking(fapl, 0, 1) < 0) {
        ACCEL_ERROR("%s: cannot set up the HDF5 file access properties", path);
        st = ACCEL_ERR_HDF5;
        goto fail;
    }
    H5E_BEGIN_TRY { w->file = H5Fopen(path, H5F_ACC_RDONLY, fapl); } H5E_END_TRY;
    if (w->file < 0) {
        ACCEL_ERROR("%s: HDF5 cannot open the file (truncated or damaged?)\n--> hint: check it "
                    "with: h5dump -H %s", path, path);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    char format[64] = "";
    if (accel_h5_attr_read_str(w->file, "format", format, sizeof format) == ACCEL_OK &&
        !strcmp(format, ACCEL_CKPT_FORMAT_NAME)) {
        int64_t version = 0, complete = 0;
        if (accel_h5_attr_read_i64(w->file, "format_version", &version) == ACCEL_OK &&
            version > ACCEL_CKPT_FORMAT_VERSION) {
            ACCEL_ERROR("%s has checkpoint format version %lld, but this accel reads versions up "
                        "to %d\n--> hint: use the accel that wrote it", path, (long long)version,
                        ACCEL_CKPT_FORMAT_VERSION);
            st = ACCEL_ERR_UNSUPPORTED;
            goto fail;
        }
        if (accel_h5_attr_read_i64(w->file, "complete", &complete) != ACCEL_OK || complete != 1) {
            ACCEL_ERROR("%s is an incomplete checkpoint (its save did not finish)\n--> hint: use "
                        "an earlier step-*.h5, or the one 'accel_ckpt latest DIR' names", path);
            st = ACCEL_ERR_CORRUPT;
            goto fail;
        }
    }
    if (link_exists(w->file, "/model")) {
        H5O_info_t info;
        herr_t r;
        H5E_BEGIN_TRY { r = H5Oget_info_by_name(w->file, "/model", &info, H5P_DEFAULT); } H5E_END_TRY;
        if (r >= 0 && info.type == H5O_TYPE_GROUP) snprintf(w->prefix, sizeof w->prefix, "/model/");
    }
    if (!w->prefix[0]) snprintf(w->prefix, sizeof w->prefix, "/");
    w->config_yaml = read_config(w->file);
    w->kind = w->config_yaml ? "checkpoint" : "exported weights";
    H5Pclose(fapl);
    *out = w;
    return ACCEL_OK;
fail:
    if (fapl >= 0) H5Pclose(fapl);
    accel_weights_close(w);
    return st;
}

static void close_datasets(accel_weights_t *w)
{
    for (int i = 0; i < w->ntensors; i++)
        if (w->dset[i] >= 0) H5Dclose(w->dset[i]);
    free(w->dset);
    free(w->dtype);
    free(w->names);
    w->dset = NULL;
    w->dtype = NULL;
    w->names = NULL;
    w->ntensors = 0;
}

void accel_weights_close(accel_weights_t *w)
{
    if (!w) return;
    close_datasets(w);
    if (w->file >= 0) H5Fclose(w->file);
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

typedef struct {
    const accel_layout_t *layout;
    int unused;
    char first[ACCEL_TENSOR_NAME_MAX];
} extra_ctx_t;

static herr_t count_extra(hid_t group, const char *name, const H5L_info_t *info, void *data)
{
    (void)info;
    extra_ctx_t *c = data;
    H5O_info_t oi;
    if (H5Oget_info_by_name(group, name, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET) return 0;
    if (!accel_layout_find(c->layout, name)) {
        if (!c->unused++) snprintf(c->first, sizeof c->first, "%s", name);
    }
    return 0;
}

accel_status_t accel_weights_check(accel_weights_t *w, const accel_layout_t *layout)
{
    close_datasets(w);
    w->dset = malloc(sizeof *w->dset * (size_t)(layout->ntensors ? layout->ntensors : 1));
    w->dtype = calloc((size_t)(layout->ntensors ? layout->ntensors : 1), 1);
    w->names = calloc((size_t)(layout->ntensors ? layout->ntensors : 1), sizeof *w->names);
    if (!w->dset || !w->dtype || !w->names) return ACCEL_ERR_NOMEM;
    for (int i = 0; i < layout->ntensors; i++) w->dset[i] = -1;
    w->ntensors = layout->ntensors;
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        char path[ACCEL_TENSOR_NAME_MAX + 16];
        snprintf(path, sizeof path, "%s%s", w->prefix, t->name);
        hid_t d = -1;
        /* H5Lexists fails on a missing intermediate group: check each level. */
        int exists = 1;
        for (char *slash = strchr(path + 1, '/'); exists && slash; slash = strchr(slash + 1, '/')) {
            *slash = '\0';
            exists = link_exists(w->file, path);
            *slash = '/';
        }
        if (exists && link_exists(w->file, path)) H5E_BEGIN_TRY { d = H5Dopen2(w->file, path, H5P_DEFAULT); } H5E_END_TRY;
        if (d < 0) {
            ACCEL_ERROR("%s has no tensor '%s' (%s %s)\n--> hint: the file does not match the "
                        "model configuration (model.name, model.layers, ...); list it with: "
                        "h5ls -r %s", w->path, path, w->kind,
                        w->config_yaml ? "with a stored configuration" : "without a configuration",
                        w->path);
            return ACCEL_ERR_NOT_FOUND;
        }
        w->dset[i] = d;
        hid_t space = H5Dget_space(d), type = H5Dget_type(d);
        int ndim = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
        hsize_t dims[H5S_MAX_RANK];
        int64_t shape[H5S_MAX_RANK];
        if (ndim > 0 && ndim <= H5S_MAX_RANK) {
            H5Sget_simple_extent_dims(space, dims, NULL);
            for (int k = 0; k < ndim; k++) shape[k] = (int64_t)dims[k];
        }
        H5T_class_t cls = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
        size_t tsize = type >= 0 ? H5Tget_size(type) : 0;
        char dtype_attr[16] = "";
        (void)accel_h5_attr_read_str(d, "dtype", dtype_attr, sizeof dtype_attr);   /* optional */
        if (space >= 0) H5Sclose(space);
        if (type >= 0) H5Tclose(type);
        bool same = ndim == t->ndim;
        for (int k = 0; same && k < ndim; k++) same = shape[k] == t->shape[k];
        if (!same) {
            char have[96] = "(scalar)", want[96];
            if (ndim > 0 && ndim <= H5S_MAX_RANK) shape_str(ndim, shape, have, sizeof have);
            shape_str(t->ndim, t->shape, want, sizeof want);
            ACCEL_ERROR("tensor '%s' has shape %s in %s, but the model expects %s\n--> hint: the "
                        "model sizes (model.width, model.vocab, ...) differ from the ones the "
                        "weights were trained with; drop the overrides or fix them", path, have,
                        w->path, want);
            return ACCEL_ERR_SHAPE;
        }
        if (cls == H5T_FLOAT) {
            w->dtype[i] = DT_FLOAT;
        } else if (cls == H5T_INTEGER && tsize == 2 && !strcmp(dtype_attr, "bf16")) {
            w->dtype[i] = DT_BF16_BITS;
        } else {
            ACCEL_ERROR("tensor '%s' in %s is not a float tensor (HDF5 class %d, %zu bytes%s%s)\n"
                        "--> hint: weights are fp32 or bf16 (a float type, or uint16 with the "
                        "attribute dtype=\"bf16\")", path, w->path, (int)cls, tsize,
                        dtype_attr[0] ? ", dtype " : "", dtype_attr);
            return ACCEL_ERR_INVALID;
        }
        snprintf(w->names[i], sizeof w->names[i], "%s", t->name);
    }
    /* Tensors the model does not use: a warning, so a wrong model.layers override shows. */
    extra_ctx_t c = { .layout = layout };
    hid_t g = -1;
    H5E_BEGIN_TRY {
        g = H5Gopen2(w->file, w->prefix, H5P_DEFAULT);
        if (g >= 0) H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, count_extra, &c);
        if (g >= 0) H5Gclose(g);
    } H5E_END_TRY;
    if (c.unused)
        ACCEL_WARN("%s: %d tensor(s) in %s are not used by the model (first: '%s')", w->path,
                   c.unused, w->prefix, c.first);
    return ACCEL_OK;
}

accel_status_t accel_weights_read(accel_weights_t *w, int index, float *dst)
{
    if (index < 0 || index >= w->ntensors || w->dset[index] < 0) return ACCEL_ERR_INVALID;
    hid_t d = w->dset[index];
    hid_t fspace = H5Dget_space(d);
    if (fspace < 0) return ACCEL_ERR_HDF5;
    int ndim = H5Sget_simple_extent_ndims(fspace);
    hsize_t dims[H5S_MAX_RANK];
    H5Sget_simple_extent_dims(fspace, dims, NULL);
    size_t row = 1;
    for (int k = 1; k < ndim; k++) row *= (size_t)dims[k];
    size_t rows_per_read = READ_CHUNK / row ? READ_CHUNK / row : 1;
    accel_status_t st = ACCEL_OK;
    for (hsize_t r0 = 0; r0 < dims[0] && st == ACCEL_OK; r0 += rows_per_read) {
        hsize_t nr = dims[0] - r0 < rows_per_read ? dims[0] - r0 : rows_per_read;
        hsize_t start[H5S_MAX_RANK] = { r0 }, count[H5S_MAX_RANK];
        count[0] = nr;
        for (int k = 1; k < ndim; k++) count[k] = dims[k];
        hsize_t n = nr * row;
        hid_t mspace = H5Screate_simple(1, &n, NULL);
        float *out = dst + r0 * row;
        herr_t r = -1;
        H5E_BEGIN_TRY {
            if (mspace >= 0 &&
                H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL) >= 0) {
                if (w->dtype[index] == DT_FLOAT) {
                    r = H5Dread(d, H5T_NATIVE_FLOAT, mspace, fspace, H5P_DEFAULT, out);
                } else {
                    /* bf16 bits into the upper half of the destination, then widened in place
                     * front to back: writing float i only overwrites 16-bit values j <= i. */
                    unsigned char *bytes = (unsigned char *)out;
                    r = H5Dread(d, H5T_NATIVE_UINT16, mspace, fspace, H5P_DEFAULT, bytes + 2 * n);
                    for (hsize_t q = 0; r >= 0 && q < n; q++) {
                        uint16_t h;            /* memcpy: the two views alias */
                        memcpy(&h, bytes + 2 * n + 2 * q, 2);
                        uint32_t b = (uint32_t)h << 16;
                        memcpy(bytes + 4 * q, &b, 4);
                    }
                }
            }
        } H5E_END_TRY;
        if (mspace >= 0) H5Sclose(mspace);
        if (r < 0) {
            ACCEL_ERROR("%s: reading tensor '%s%s' failed (rows %llu..%llu)\n--> hint: the file "
                        "may be damaged or truncated; check it with accel_ckpt verify or h5dump",
                        w->path, w->prefix, w->names[index], (unsigned long long)r0,
                        (unsigned long long)(r0 + nr - 1));
            st = ACCEL_ERR_IO;
        }
    }
    H5Sclose(fspace);
    return st;
}

/* Reading one checkpoint file (include/accel/ckpt.h, "reading one file"): the read-only handle
 * accel_ckpt and inference use, so that the layout (state groups, the arena list, checksum and
 * metadata groups, the configuration dataset, exported weights at the root) is known here and
 * nowhere else; and the HDF5 export of a state. Local, serial HDF5, no MPI. */
#include "build_config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "accel/ckpt.h"
#include "accel/dtype.h"
#include "accel/log.h"
#include "ckpt_internal.h"

#define EXPORT_CHUNK ((uint64_t)1 << 20)   /* elements per streamed read: 4 MiB of fp32 */
#define MAX_STATES 64

struct accel_ckpt_file {
    char *path;
    hid_t file;
    bool checkpoint, complete;
    int version;
    char *states[MAX_STATES];
    int nstates;
    /* The dataset read last, kept open: tensors are read in pieces, one after the other. */
    char cur[2 * ACCEL_CKPT_NAME_MAX + 2];
    hid_t dset, space;
    accel_ckpt_tensor_info_t cur_info;
    bool cur_bf16_bits;
    /* Checkpoints: every read is checked against the block checksums (B = 0: the root attributes
     * are unusable, so nothing of a state can be trusted). cur_sums: the open tensor's table, NULL
     * when it is missing or malformed (cur_sum_err says why). */
    uint64_t B;
    uint64_t *cur_sums, cur_nblocks;
    const char *cur_sum_err;
    float *scratch;                     /* one block, for the edges of a read */
    bool unchecked;                     /* accel_ckpt_file_set_checked(f, false) */
};

/* "/state/name" ("/name" for the root state). */
static void full_path(char *buf, size_t len, const char *state, const char *name)
{
    snprintf(buf, len, "/%s%s%s", state ? state : "", state && *state && name ? "/" : "", name ? name : "");
}

static void add_state(accel_ckpt_file_t *f, const char *name)
{
    if (f->nstates < MAX_STATES && *name && (f->states[f->nstates] = strdup(name))) f->nstates++;
}

accel_status_t accel_ckpt_file_open(const char *path, accel_ckpt_file_t **out, char *err, size_t errlen)
{
    *out = NULL;
    accel_errf(err, errlen, "%s", "");
    struct stat sb;
    if (access(path, R_OK) || stat(path, &sb)) {
        int e = errno;
        accel_errf(err, errlen, "%s: %s", path, strerror(e));
        return e == ENOENT ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_IO;
    }
    if (!accel_h5_probe(path, (long long)sb.st_size)) {
        accel_errf(err, errlen, "%s is not an HDF5 file", path);
        return ACCEL_ERR_CORRUPT;
    }
    accel_ckpt_file_t *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return ACCEL_ERR_NOMEM;
    }
    f->dset = f->space = -1;
    accel_status_t st = accel_h5_open_read(path, &f->file, NULL, 0);
    if (st != ACCEL_OK) {
        accel_errf(err, errlen, "cannot open %s (truncated or damaged?)", path);
        accel_ckpt_file_close(f);
        return st;
    }
    char format[64] = "", arenas[4096] = "";
    int64_t version = 0, complete = 0;
    if (accel_h5_attr_read_str(f->file, CK_ATTR_FORMAT, format, sizeof format) == ACCEL_OK &&
        !strcmp(format, ACCEL_CKPT_FORMAT_NAME)) {
        f->checkpoint = true;
        if (accel_h5_attr_read_i64(f->file, CK_ATTR_VERSION, &version) == ACCEL_OK) f->version = (int)version;
        f->complete = accel_h5_attr_read_i64(f->file, CK_ATTR_COMPLETE, &complete) == ACCEL_OK && complete == 1;
    }
    if (f->checkpoint && ck_check_format(f->file, path, &f->B, false, false) != ACCEL_OK) f->B = 0;
    /* Files made by hand in the checkpoint layout without any checksum group (test and benchmark
     * weights, tests/infer_weights.h) are read unchecked, with a warning; verify and load refuse
     * them. Once the group exists, every tensor read needs its table. */
    if (f->checkpoint && accel_h5_path_exists(f->file, "/" CK_GROUP_SUMS) <= 0) {
        ACCEL_WARN("checkpoint %s has no checksums (/%s): its tensors are read unchecked\n--> hint: "
                   "'accel_ckpt verify %s' refuses such a file; a checkpoint saved by accel has them",
                   path, CK_GROUP_SUMS, path);
        f->unchecked = true;
    }
    if (accel_h5_attr_read_str(f->file, CK_ATTR_ARENAS, arenas, sizeof arenas) == ACCEL_OK)
        for (char *save = NULL, *a = strtok_r(arenas, ";", &save); a; a = strtok_r(NULL, ";", &save))
            add_state(f, a);
    if (!f->nstates && accel_ckpt_file_has_state(f, "model")) add_state(f, "model");
    *out = f;
    return ACCEL_OK;
}

void accel_ckpt_file_set_checked(accel_ckpt_file_t *f, bool checked)
{
    if (f) f->unchecked = !checked;
}

static void close_cur(accel_ckpt_file_t *f)
{
    free(f->cur_sums);
    f->cur_sums = NULL;
    f->cur_nblocks = 0;
    f->cur_sum_err = NULL;
    if (f->space >= 0) H5Sclose(f->space);
    if (f->dset >= 0) H5Dclose(f->dset);
    f->space = f->dset = -1;
    f->cur[0] = '\0';
}

void accel_ckpt_file_close(accel_ckpt_file_t *f)
{
    if (!f) return;
    close_cur(f);
    free(f->scratch);
    if (f->file >= 0) H5Fclose(f->file);
    for (int i = 0; i < f->nstates; i++) free(f->states[i]);
    free(f->path);
    free(f);
}

void accel_ckpt_file_format(const accel_ckpt_file_t *f, bool *checkpoint, int *version, bool *complete)
{
    if (checkpoint) *checkpoint = f->checkpoint;
    if (version) *version = f->version;
    if (complete) *complete = f->complete;
}

int accel_ckpt_file_states(const accel_ckpt_file_t *f, const char *const **names)
{
    *names = (const char *const *)f->states;
    return f->nstates;
}

bool accel_ckpt_file_has_state(const accel_ckpt_file_t *f, const char *state)
{
    char p[ACCEL_CKPT_NAME_MAX + 2];
    full_path(p, sizeof p, state, NULL);
    if (accel_h5_path_exists(f->file, p) <= 0) return false;
    H5O_info_t oi;
    herr_t r;
    H5E_BEGIN_TRY { r = H5Oget_info_by_name(f->file, p, &oi, H5P_DEFAULT); } H5E_END_TRY;
    return r >= 0 && oi.type == H5O_TYPE_GROUP;
}

/* ------------------------------------------------------------------ tensors */

static const char *type_name(hid_t t, bool bf16_bits)
{
    H5T_class_t c = H5Tget_class(t);
    size_t n = H5Tget_size(t);
    bool sign = c == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_2;
    if (bf16_bits) return "bf16";
    if (c == H5T_FLOAT) return n == 4 ? "fp32" : n == 8 ? "fp64" : n == 2 ? "bf16" : "float";
    if (c == H5T_INTEGER) return n == 8 ? (sign ? "int64" : "uint64") : n == 4 ? (sign ? "int32" : "uint32") : "integer";
    if (c == H5T_STRING) return "string";
    return "other";
}

/* Describe an open dataset; *bf16_bits: uint16 values holding bf16 bit patterns. */
static accel_status_t describe(hid_t d, const char *name, accel_ckpt_tensor_info_t *info, bool *bf16_bits)
{
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%s", name);
    hid_t s = H5Dget_space(d), t = H5Dget_type(d);
    int nd = s >= 0 ? H5Sget_simple_extent_ndims(s) : -1;
    hsize_t dims[H5S_MAX_RANK];
    accel_status_t st = ACCEL_OK;
    if (nd < 0 || t < 0 || (nd > 0 && H5Sget_simple_extent_dims(s, dims, NULL) < 0)) {
        st = ACCEL_ERR_IO;
        goto out;
    }
    if (nd > ACCEL_CKPT_MAX_RANK) {
        st = ACCEL_ERR_IO;
        goto out;
    }
    info->ndim = nd;
    for (int k = 0; k < nd; k++) info->dims[k] = dims[k];
    H5T_class_t c = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    /* Sizes come from the file: an element count that overflows, or data that was never
     * allocated (reads would give fill values, an export would stream them without end), make the
     * tensor unreadable rather than trusted. */
    uint64_t numel = 0;
    bool sized = ck_dims_numel(nd, dims, size, &numel);
    bool allocated = sized && ck_storage_ok(d, numel * size);
    info->numel = sized ? numel : 0;
    char tag[16] = "";
    bool bits = c == H5T_INTEGER && size == 2 &&
                accel_h5_attr_read_str(d, "dtype", tag, sizeof tag) == ACCEL_OK && !strcmp(tag, "bf16");
    info->fp32 = c == H5T_FLOAT && size == 4;
    info->readable = c == H5T_FLOAT || bits;
    snprintf(info->dtype, sizeof info->dtype, "%s", type_name(t, bits));
    if (!allocated) {
        info->fp32 = info->readable = false;
        snprintf(info->dtype, sizeof info->dtype, "%s", sized ? "unalloc" : "toobig");
    }
    info->bytes = H5Dget_storage_size(d);
    haddr_t off = H5Dget_offset(d);
    info->offset = off == HADDR_UNDEF ? -1 : (int64_t)off;
    if (bf16_bits) *bf16_bits = bits;
out:
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    return st;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Append the datasets under group (sorted) to *infos, names prefixed by prefix. */
static accel_status_t list_group(accel_ckpt_file_t *f, const char *group, const char *prefix,
                                 accel_ckpt_tensor_info_t **infos, int *n)
{
    if (!accel_ckpt_file_has_state(f, group)) return ACCEL_ERR_NOT_FOUND;
    char gp[ACCEL_CKPT_NAME_MAX + 2];
    full_path(gp, sizeof gp, group, NULL);
    ck_names_t l;
    accel_status_t st = ck_list_datasets(f->file, gp, &l);
    hid_t g = -1;
    if (st == ACCEL_OK) H5E_BEGIN_TRY { g = H5Gopen2(f->file, gp, H5P_DEFAULT); } H5E_END_TRY;
    if (st == ACCEL_OK && g < 0) st = ACCEL_ERR_IO;
    if (l.n) qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_str);
    accel_ckpt_tensor_info_t *p = st == ACCEL_OK && l.n ? realloc(*infos, sizeof *p * (size_t)(*n + l.n)) : *infos;
    if (!p) st = ACCEL_ERR_NOMEM;
    else *infos = p;
    for (int i = 0; st == ACCEL_OK && i < l.n; i++) {
        /* A dataset that cannot be opened is left out (as h5ls would show it: nothing to say). */
        /* Exported weights keep their tensors at the root next to /meta (configuration,
         * tokenizer): those are not tensors of the root state. */
        if (!*group && (!strncmp(l.v[i], CK_GROUP_META "/", sizeof CK_GROUP_META) ||
                        !strncmp(l.v[i], CK_GROUP_SUMS "/", sizeof CK_GROUP_SUMS)))
            continue;
        hid_t d;
        H5E_BEGIN_TRY { d = H5Dopen2(g, l.v[i], H5P_DEFAULT); } H5E_END_TRY;
        if (d < 0) continue;
        char name[ACCEL_CKPT_NAME_MAX];
        snprintf(name, sizeof name, "%s%s", prefix, l.v[i]);
        if (describe(d, name, &(*infos)[*n], NULL) == ACCEL_OK) (*n)++;
        H5Dclose(d);
    }
    if (g >= 0) H5Gclose(g);
    ck_names_free(&l);
    return st;
}

accel_status_t accel_ckpt_file_list(accel_ckpt_file_t *f, const char *state, accel_ckpt_tensor_info_t **infos,
                                    int *n)
{
    *infos = NULL;
    *n = 0;
    accel_status_t st = list_group(f, state, "", infos, n);
    if (st != ACCEL_OK) {
        free(*infos);
        *infos = NULL;
        *n = 0;
    }
    return st;
}

accel_status_t accel_ckpt_file_list_bookkeeping(accel_ckpt_file_t *f, accel_ckpt_tensor_info_t **infos, int *n)
{
    *infos = NULL;
    *n = 0;
    static const char *const groups[] = { CK_GROUP_SUMS, CK_GROUP_META };
    for (int i = 0; i < 2; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s/", groups[i]);
        accel_status_t st = list_group(f, groups[i], prefix, infos, n);
        if (st != ACCEL_OK && st != ACCEL_ERR_NOT_FOUND) {
            free(*infos);
            *infos = NULL;
            *n = 0;
            return st;
        }
    }
    return ACCEL_OK;
}

/* The checksum table of the open tensor of a checkpoint: a uint64 dataset with one entry per block
 * of B elements, matching the tensor's xxh3_64 attribute. */
static void load_sums(accel_ckpt_file_t *f, const char *state, const char *name)
{
    const accel_ckpt_tensor_info_t *in = &f->cur_info;
    char sp[2 * ACCEL_CKPT_NAME_MAX + 16];
    ck_sum_path(sp, sizeof sp, state, name);
    if (!f->B) { f->cur_sum_err = "the checkpoint's checksum attributes are unusable"; return; }
    if (!in->readable) return;          /* refused anyway */
    uint64_t nb = ck_div_up(in->numel, f->B);
    hsize_t n = 0;
    hid_t d = ck_is_dataset(f->file, sp) ? H5Dopen2(f->file, sp, H5P_DEFAULT) : -1;
    hid_t s = d >= 0 ? H5Dget_space(d) : -1, t = d >= 0 ? H5Dget_type(d) : -1;
    if (s >= 0 && H5Sget_simple_extent_ndims(s) == 1) H5Sget_simple_extent_dims(s, &n, NULL);
    f->cur_sum_err = "its checksum table is missing or malformed";
    if (t >= 0 && H5Tequal(t, H5T_STD_U64LE) > 0 && n == nb && ck_storage_ok(d, nb * sizeof(uint64_t)) &&
        (f->cur_sums = malloc(sizeof(uint64_t) * (nb ? nb : 1)))) {
        if (H5Dread(d, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, f->cur_sums) < 0 ||
            ck_tensor_sums_mismatch(f->dset, state, name, f->cur_sums, nb)) {
            free(f->cur_sums);
            f->cur_sums = NULL;
            f->cur_sum_err = "its checksum table does not match the tensor's xxh3_64 attributes";
        } else {
            f->cur_nblocks = nb;
            f->cur_sum_err = NULL;
        }
    }
    if (t >= 0) H5Tclose(t);
    if (s >= 0) H5Sclose(s);
    if (d >= 0) H5Dclose(d);
}

/* Check the blocks that [begin, end) (just read into buf) touches; edge blocks are read whole
 * into scratch. */
static accel_status_t check_blocks(accel_ckpt_file_t *f, const char *state, const char *name,
                                   uint64_t begin, uint64_t end, const float *buf)
{
    const uint64_t B = f->B, n = f->cur_info.numel;
    int64_t shape[ACCEL_TENSOR_MAX_DIMS];
    for (int k = 0; k < f->cur_info.ndim; k++) shape[k] = (int64_t)f->cur_info.dims[k];
    for (uint64_t k = begin / B; k < ck_div_up(end, B); k++) {
        uint64_t b = k * B, e = n - b > B ? b + B : n, h;
        if (b >= begin && e <= end) {
            h = accel_ckpt_hash_block(buf + (b - begin), e - b);
        } else {
            if (!f->scratch && !(f->scratch = malloc(sizeof(float) * B))) return ACCEL_ERR_NOMEM;
            hsize_t cnt = e - b;
            hid_t ms = H5Screate_simple(1, &cnt, NULL);
            herr_t r = -1;
            H5E_BEGIN_TRY {
                if (ms >= 0 && ck_select_range(f->space, f->cur_info.ndim, shape, b, e) == 0)
                    r = H5Dread(f->dset, H5T_NATIVE_FLOAT, ms, f->space, H5P_DEFAULT, f->scratch);
            } H5E_END_TRY;
            if (ms >= 0) H5Sclose(ms);
            if (r < 0) return ACCEL_ERR_IO;
            h = accel_ckpt_hash_block(f->scratch, e - b);
        }
        if (h != f->cur_sums[k]) {
            ACCEL_ERROR("checkpoint %s: tensor '%s/%s' block %llu (elements %llu..%llu) fails its checksum "
                        "(stored %016llx, computed %016llx)\n--> hint: the file is damaged; 'accel_ckpt "
                        "verify %s' lists every bad block", f->path, state, name, (unsigned long long)k,
                        (unsigned long long)b, (unsigned long long)(e - 1), (unsigned long long)f->cur_sums[k],
                        (unsigned long long)h, f->path);
            return ACCEL_ERR_CORRUPT;
        }
    }
    return ACCEL_OK;
}

/* Make state/name the open dataset. */
static accel_status_t open_cur(accel_ckpt_file_t *f, const char *state, const char *name)
{
    char p[sizeof f->cur];
    full_path(p, sizeof p, state, name);
    if (f->dset >= 0 && !strcmp(p, f->cur)) return ACCEL_OK;
    close_cur(f);
    if (accel_h5_path_exists(f->file, p) <= 0) return ACCEL_ERR_NOT_FOUND;
    H5O_info_t oi;
    herr_t r;
    H5E_BEGIN_TRY {
        r = H5Oget_info_by_name(f->file, p, &oi, H5P_DEFAULT);
        f->dset = r >= 0 && oi.type == H5O_TYPE_DATASET ? H5Dopen2(f->file, p, H5P_DEFAULT) : -1;
    } H5E_END_TRY;
    if (r >= 0 && oi.type != H5O_TYPE_DATASET) return ACCEL_ERR_NOT_FOUND;
    if (f->dset < 0) return ACCEL_ERR_IO;
    f->space = H5Dget_space(f->dset);
    if (f->space < 0 || describe(f->dset, name, &f->cur_info, &f->cur_bf16_bits) != ACCEL_OK) {
        close_cur(f);
        return ACCEL_ERR_IO;
    }
    snprintf(f->cur, sizeof f->cur, "%s", p);
    if (f->checkpoint && state && *state) load_sums(f, state, name);
    return ACCEL_OK;
}

accel_status_t accel_ckpt_file_tensor(accel_ckpt_file_t *f, const char *state, const char *name,
                                      accel_ckpt_tensor_info_t *info)
{
    accel_status_t st = open_cur(f, state, name);
    if (st == ACCEL_OK) *info = f->cur_info;
    return st;
}

accel_status_t accel_ckpt_file_read(accel_ckpt_file_t *f, const char *state, const char *name,
                                    uint64_t begin, uint64_t end, float *buf)
{
    accel_status_t st = open_cur(f, state, name);
    if (st != ACCEL_OK) return st;
    const accel_ckpt_tensor_info_t *in = &f->cur_info;
    if (!in->readable || in->ndim < 1 || in->ndim > ACCEL_TENSOR_MAX_DIMS || begin > end || end > in->numel)
        return ACCEL_ERR_INVALID;
    if (begin == end) return ACCEL_OK;
    bool verify = f->checkpoint && *state && !f->unchecked;
    if (verify && (!f->cur_sums || f->cur_bf16_bits)) {
        ACCEL_ERROR("checkpoint %s: tensor '%s/%s' cannot be read: %s\n--> hint: the file is damaged; "
                    "'accel_ckpt verify %s' tells more", f->path, state, name,
                    f->cur_sum_err ? f->cur_sum_err : "it is not fp32", f->path);
        return ACCEL_ERR_CORRUPT;
    }
    int64_t shape[ACCEL_TENSOR_MAX_DIMS];
    for (int k = 0; k < in->ndim; k++) shape[k] = (int64_t)in->dims[k];
    hsize_t n = end - begin;
    hid_t ms = -1;
    herr_t r = -1;
    H5E_BEGIN_TRY {
        ms = H5Screate_simple(1, &n, NULL);
        if (ms >= 0 && ck_select_range(f->space, in->ndim, shape, begin, end) == 0) {
            if (!f->cur_bf16_bits) {
                r = H5Dread(f->dset, H5T_NATIVE_FLOAT, ms, f->space, H5P_DEFAULT, buf);
            } else {
                /* bf16 bits into the upper half of buf, then widened in place front to back:
                 * writing float i only overwrites 16-bit values j <= i. */
                unsigned char *bytes = (unsigned char *)buf;
                r = H5Dread(f->dset, H5T_NATIVE_UINT16, ms, f->space, H5P_DEFAULT, bytes + 2 * n);
                for (hsize_t q = 0; r >= 0 && q < n; q++) {
                    uint16_t h;                 /* memcpy: the two views alias */
                    memcpy(&h, bytes + 2 * n + 2 * q, 2);
                    uint32_t b = (uint32_t)h << 16;
                    memcpy(bytes + 4 * q, &b, 4);
                }
            }
        }
        if (ms >= 0) H5Sclose(ms);
    } H5E_END_TRY;
    if (r < 0) return ACCEL_ERR_IO;
    return verify ? check_blocks(f, state, name, begin, end, buf) : ACCEL_OK;
}

accel_status_t accel_ckpt_file_config(accel_ckpt_file_t *f, char **yaml)
{
    *yaml = NULL;
    if (f->checkpoint && !f->unchecked) {
        /* A checkpoint's configuration is covered by the /meta checksum: check it first. */
        accel_ckpt_meta_t m;
        bool absent = false;
        accel_status_t mst = ck_meta_read(f->file, f->path, &m, true);
        if (mst == ACCEL_OK) {
            mst = ck_meta_check(f->file, f->path, &m, true, &absent);
            accel_ckpt_meta_free(&m);
        }
        if (mst != ACCEL_OK) return mst;
    }
    char p[64];
    snprintf(p, sizeof p, "/%s/%s", CK_GROUP_META, CK_DSET_CONFIG);
    if (accel_h5_path_exists(f->file, p) <= 0) return ACCEL_OK;
    accel_status_t st = ACCEL_ERR_INVALID;
    H5E_BEGIN_TRY {
        hid_t d = H5Dopen2(f->file, p, H5P_DEFAULT);
        hid_t t = d >= 0 ? H5Dget_type(d) : -1;
        htri_t var = t >= 0 && H5Tget_class(t) == H5T_STRING ? H5Tis_variable_str(t) : -1;
        if (var > 0) {
            /* Variable length, as h5py writes a str. */
            char *s = NULL;
            if (H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, &s) >= 0 && s) {
                *yaml = strdup(s);
                st = *yaml ? ACCEL_OK : ACCEL_ERR_NOMEM;
                H5free_memory(s);
            } else {
                st = ACCEL_ERR_IO;
            }
        } else if (var == 0) {
            size_t n = H5Tget_size(t);
            hsize_t fsize = 0;
            /* the string's size comes from the file: no more than the file can hold */
            *yaml = H5Fget_filesize(f->file, &fsize) >= 0 && n <= fsize ? calloc(n + 1, 1) : NULL;
            st = !*yaml ? ACCEL_ERR_NOMEM : H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, *yaml) < 0 ? ACCEL_ERR_IO : ACCEL_OK;
            if (st != ACCEL_OK) {
                free(*yaml);
                *yaml = NULL;
            }
        }
        if (t >= 0) H5Tclose(t);
        if (d >= 0) H5Dclose(d);
    } H5E_END_TRY;
    return st;
}

/* ------------------------------------------------------------------ export */

/* bf16 as an HDF5 float type (sign 15, exponent 7..14 with bias 127, mantissa 0..6), so h5dump
 * and h5py convert it like any float. */
static hid_t bf16_type(void)
{
    hid_t t = H5Tcopy(H5T_IEEE_F32LE);
    if (t < 0 || H5Tset_fields(t, 15, 7, 8, 0, 7) < 0 || H5Tset_offset(t, 0) < 0 ||
        H5Tset_precision(t, 16) < 0 || H5Tset_size(t, 2) < 0 || H5Tset_ebias(t, 127) < 0) {
        if (t >= 0) H5Tclose(t);
        return -1;
    }
    return t;
}

/* One tensor of a weights file: created, streamed in chunks from fill, tagged with its dtype. */
static accel_status_t write_tensor(const accel_ckpt_wtensor_t *in, int index, accel_ckpt_fill_fn fill, void *ctx,
                                   hid_t out, hid_t ftype, hid_t lcpl, bool bf16, float *buf, uint16_t *half,
                                   const char *tmp)
{
    hsize_t dims[ACCEL_TENSOR_MAX_DIMS];
    int64_t shape[ACCEL_TENSOR_MAX_DIMS];
    uint64_t numel = 1;
    for (int k = 0; k < in->ndim; k++) {
        dims[k] = in->dims[k];
        shape[k] = (int64_t)in->dims[k];
        numel *= in->dims[k];
    }
    char h5err[256] = "";
    accel_status_t st = ACCEL_OK;
    hid_t s = H5Screate_simple(in->ndim, dims, NULL);
    hid_t d = s >= 0 ? H5Dcreate2(out, in->name, ftype, s, lcpl, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (d < 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        ACCEL_ERROR("weights: cannot create dataset /%s in %s: %s", in->name, tmp, h5err);
        st = ACCEL_ERR_HDF5;
    }
    for (uint64_t b = 0; st == ACCEL_OK && b < numel; b += EXPORT_CHUNK) {
        uint64_t e = b + EXPORT_CHUNK < numel ? b + EXPORT_CHUNK : numel;
        st = fill(ctx, index, b, e, buf);
        if (st != ACCEL_OK) break;          /* the filler said what it could not read */
        hsize_t cnt = e - b;
        hid_t ms = H5Screate_simple(1, &cnt, NULL);
        herr_t r = ms >= 0 && ck_select_range(s, in->ndim, shape, b, e) == 0 ? 0 : -1;
        /* HDF5 converts fp32 -> bf16 by truncation; round to nearest even here instead. */
        if (r >= 0 && bf16) {
            for (uint64_t q = 0; q < e - b; q++) half[q] = accel_f32_to_bf16(buf[q]);
            r = H5Dwrite(d, ftype, ms, s, H5P_DEFAULT, half);
        } else if (r >= 0) {
            r = H5Dwrite(d, H5T_NATIVE_FLOAT, ms, s, H5P_DEFAULT, buf);
        }
        if (r < 0) {
            accel_h5_last_error(h5err, sizeof h5err);
            ACCEL_ERROR("weights: writing /%s to %s failed: %s\n--> hint: check free space", in->name, tmp, h5err);
            st = ACCEL_ERR_IO;
        }
        if (ms >= 0) H5Sclose(ms);
    }
    if (st == ACCEL_OK) st = accel_h5_attr_write_str(d, "dtype", bf16 ? "bf16" : "fp32");
    if (d >= 0 && H5Dclose(d) < 0 && st == ACCEL_OK) st = ACCEL_ERR_HDF5;
    if (s >= 0) H5Sclose(s);
    return st;
}

/* /meta of a weights file: the configuration, the tokenizer (1-D uint8 dataset + attributes) and
 * the chat template (1-D uint8 dataset). */
static accel_status_t write_weights_meta(hid_t out, const accel_ckpt_weights_meta_t *m, const char *tmp)
{
    if (!m || (!m->config_yaml && !m->tokenizer && !m->chat_template)) return ACCEL_OK;
    accel_status_t st = ACCEL_OK;
    hid_t g = H5Gcreate2(out, "/" CK_GROUP_META, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) st = ACCEL_ERR_HDF5;
    if (st == ACCEL_OK && m->config_yaml && ck_write_config(g, m->config_yaml) < 0) st = ACCEL_ERR_HDF5;
    if (st == ACCEL_OK && m->source) st = accel_h5_attr_write_str(g, "source", m->source);
    if (st == ACCEL_OK && m->tokenizer) {
        st = accel_h5_write_bytes(g, CK_DSET_TOKENIZER, m->tokenizer, m->tokenizer_len);
        if (st == ACCEL_OK && m->tokenizer_name)
            st = accel_h5_attr_write_str(g, CK_ATTR_TOKENIZER, m->tokenizer_name);
        /* The hash convention of checkpoints: XXH64 of the bytes, 16 hex digits. */
        char hash[24];
        snprintf(hash, sizeof hash, "%016llx", (unsigned long long)XXH64(m->tokenizer, m->tokenizer_len, 0));
        if (st == ACCEL_OK)
            st = accel_h5_attr_write_str(g, CK_ATTR_TOKENIZER_HASH, m->tokenizer_hash ? m->tokenizer_hash : hash);
    }
    if (st == ACCEL_OK && m->chat_template)
        st = accel_h5_write_bytes(g, CK_DSET_CHAT_TEMPLATE, m->chat_template, m->chat_template_len);
    if (g >= 0) H5Gclose(g);
    if (st != ACCEL_OK)
        ACCEL_ERROR("weights: cannot write /%s (configuration, tokenizer, chat template) to %s", CK_GROUP_META, tmp);
    return st;
}

accel_status_t accel_ckpt_weights_write(const char *output, const accel_ckpt_wtensor_t *ts, int n,
                                        accel_ckpt_fill_fn fill, void *ctx, bool bf16,
                                        const accel_ckpt_weights_meta_t *meta)
{
    char tmp[ACCEL_CKPT_PATH_MAX + 8];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", output) >= sizeof tmp) {
        ACCEL_ERROR("weights: output path too long: %s", output);
        return ACCEL_ERR_INVALID;
    }
    accel_h5_quiet_t quiet;
    accel_h5_quiet_begin(&quiet);
    float *buf = malloc(sizeof *buf * EXPORT_CHUNK);
    uint16_t *half = malloc(sizeof *half * EXPORT_CHUNK);
    hid_t fapl = -1, out = -1, ftype = -1, lcpl = -1;
    bool created = false;
    char h5err[256] = "";
    accel_status_t st = ACCEL_OK;
    if (!buf || !half) {
        st = ACCEL_ERR_NOMEM;
        goto out;
    }
    ACCEL_CHECK_GOTO(accel_h5_fapl_serial(&fapl), st, out);
    H5E_BEGIN_TRY {
        out = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
        if (out < 0) accel_h5_last_error(h5err, sizeof h5err);
    } H5E_END_TRY;
    if (out < 0) {
        ACCEL_ERROR("weights: cannot create %s: %s\n--> hint: check the directory and free space", tmp, h5err);
        st = ACCEL_ERR_IO;
        goto out;
    }
    created = true;
    ftype = bf16 ? bf16_type() : H5Tcopy(H5T_IEEE_F32LE);
    lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (ftype < 0 || lcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0) {
        ACCEL_ERROR("weights: cannot set up HDF5 types and properties");
        st = ACCEL_ERR_HDF5;
        goto out;
    }
    st = write_weights_meta(out, meta, tmp);
    for (int i = 0; i < n && st == ACCEL_OK; i++)
        st = write_tensor(&ts[i], i, fill, ctx, out, ftype, lcpl, bf16, buf, half, tmp);
out:
    if (lcpl >= 0) H5Pclose(lcpl);
    if (ftype >= 0) H5Tclose(ftype);
    if (out >= 0 && H5Fclose(out) < 0 && st == ACCEL_OK) {
        ACCEL_ERROR("weights: closing %s failed (disk full?)", tmp);
        st = ACCEL_ERR_IO;
    }
    if (fapl >= 0) H5Pclose(fapl);
    if (created && st != ACCEL_OK) unlink(tmp);
    if (created && st == ACCEL_OK) st = accel_h5_publish(tmp, output);
    free(buf);
    free(half);
    accel_h5_quiet_end(&quiet);
    return st;
}

accel_status_t accel_ckpt_file_tokenizer(accel_ckpt_file_t *f, char **json, size_t *len, char *name,
                                         size_t namelen, char *hash, size_t hashlen)
{
    *json = NULL;
    *len = 0;
    if (name && namelen) name[0] = '\0';
    if (hash && hashlen) hash[0] = '\0';
    hid_t g = -1;
    H5E_BEGIN_TRY { g = H5Gopen2(f->file, "/" CK_GROUP_META, H5P_DEFAULT); } H5E_END_TRY;
    if (g < 0) return ACCEL_ERR_NOT_FOUND;
    accel_status_t st = accel_h5_read_bytes(g, CK_DSET_TOKENIZER, CK_TOKENIZER_MAX, json, len);
    if (st == ACCEL_OK) {
        if (name) accel_h5_attr_read_str(g, CK_ATTR_TOKENIZER, name, namelen);
        if (hash) accel_h5_attr_read_str(g, CK_ATTR_TOKENIZER_HASH, hash, hashlen);
    }
    H5Gclose(g);
    return st;
}

accel_status_t accel_ckpt_file_chat_template(accel_ckpt_file_t *f, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    hid_t g = -1;
    H5E_BEGIN_TRY { g = H5Gopen2(f->file, "/" CK_GROUP_META, H5P_DEFAULT); } H5E_END_TRY;
    if (g < 0) return ACCEL_ERR_NOT_FOUND;
    accel_status_t st = accel_h5_read_bytes(g, CK_DSET_CHAT_TEMPLATE, CK_CHAT_TEMPLATE_MAX, text, len);
    H5Gclose(g);
    return st;
}

accel_status_t accel_ckpt_file_fill(void *ctx, int index, uint64_t begin, uint64_t end, float *dst)
{
    accel_ckpt_file_source_t *c = ctx;
    accel_status_t st = accel_ckpt_file_read(c->f, c->state, c->ts[index].name, begin, end, dst);
    if (st != ACCEL_OK)
        ACCEL_ERROR("export: cannot read %s%s%s from %s (damaged file?)\n--> hint: 'accel_ckpt verify %s' "
                    "tells more", c->state, *c->state ? "/" : "", c->ts[index].name, c->f->path, c->f->path);
    return st;
}

accel_status_t accel_ckpt_file_export_hdf5(accel_ckpt_file_t *f, const char *state, const char *output,
                                           bool bf16, int *ntensors)
{
    if (ntensors) *ntensors = 0;
    accel_ckpt_tensor_info_t *ts = NULL;
    int n = 0;
    accel_status_t st = accel_ckpt_file_list(f, state, &ts, &n);
    if (st != ACCEL_OK || !n) {
        ACCEL_ERROR("export: %s has no tensors in group '%s'", f->path, state);
        free(ts);
        return st == ACCEL_OK || st == ACCEL_ERR_NOT_FOUND ? ACCEL_ERR_NOT_FOUND : st;
    }
    accel_ckpt_wtensor_t *wt = calloc((size_t)n, sizeof *wt);
    if (!wt) {
        free(ts);
        return ACCEL_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        if (!ts[i].fp32 || ts[i].ndim < 1 || ts[i].ndim > ACCEL_TENSOR_MAX_DIMS) {
            ACCEL_ERROR("export: /%s/%s in %s is not an fp32 tensor of 1..%d dimensions (it is %s, %d-D)\n"
                        "--> hint: 'unalloc' or 'toobig' mean a damaged file; 'accel_ckpt verify' tells more",
                        state, ts[i].name, f->path, ACCEL_TENSOR_MAX_DIMS, ts[i].dtype, ts[i].ndim);
            free(ts);
            free(wt);
            return ACCEL_ERR_INVALID;
        }
        wt[i].name = ts[i].name;
        wt[i].ndim = ts[i].ndim;
        for (int k = 0; k < ts[i].ndim; k++) wt[i].dims[k] = ts[i].dims[k];
    }
    /* The export carries what a reader needs to use it alone: the configuration, tokenizer and
     * chat template. */
    accel_ckpt_weights_meta_t meta = { 0 };
    char *yaml = NULL, *tok = NULL, *chat = NULL, tname[128] = "", thash[128] = "";
    size_t toklen = 0, chatlen = 0;
    if (accel_ckpt_file_config(f, &yaml) == ACCEL_OK) meta.config_yaml = yaml;
    if (accel_ckpt_file_tokenizer(f, &tok, &toklen, tname, sizeof tname, thash, sizeof thash) == ACCEL_OK) {
        meta.tokenizer = tok;
        meta.tokenizer_len = toklen;
        meta.tokenizer_name = tname[0] ? tname : NULL;
        meta.tokenizer_hash = thash[0] ? thash : NULL;
    }
    if (accel_ckpt_file_chat_template(f, &chat, &chatlen) == ACCEL_OK) {
        meta.chat_template = chat;
        meta.chat_template_len = chatlen;
    }
    meta.source = f->path;
    accel_ckpt_file_source_t ctx = { f, state, ts };
    st = accel_ckpt_weights_write(output, wt, n, accel_ckpt_file_fill, &ctx, bf16, &meta);
    if (st == ACCEL_OK && ntensors) *ntensors = n;
    free(yaml);
    free(tok);
    free(chat);
    free(wt);
    free(ts);
    return st;
}

/* HDF5 helpers shared by every file format (see h5util.h): quiet error handling, attributes, paths
 * and a serial read-only open. Every HDF5 return is checked; errors that are not an answer for the
 * caller (a missing attribute is one) are logged naming the file, the object and the attribute. */
#include "build_config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "h5util.h"

static pthread_mutex_t g_h5_lock = PTHREAD_MUTEX_INITIALIZER;
void accel_h5_lock(void) { pthread_mutex_lock(&g_h5_lock); }
void accel_h5_unlock(void) { pthread_mutex_unlock(&g_h5_lock); }

/* ------------------------------------------------------------------ errors */

void accel_h5_quiet_begin(accel_h5_quiet_t *q)
{
    if (H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data) < 0) {
        q->func = NULL;
        q->data = NULL;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void accel_h5_quiet_end(const accel_h5_quiet_t *q) { H5Eset_auto2(H5E_DEFAULT, q->func, q->data); }

typedef struct {
    char *buf;
    size_t len;
} last_err_t;

static herr_t walk_cb(unsigned n, const H5E_error2_t *err, void *data)
{
    (void)n;
    last_err_t *le = data;
    /* Walking downward the last entry is the innermost, nearest the cause ("truncated file: eof =
     * ...", the MPI or POSIX error); the outer ones only say which API call failed. */
    if (err->desc && err->desc[0]) snprintf(le->buf, le->len, "%s", err->desc);
    return 0;
}

void accel_h5_last_error(char *buf, size_t len)
{
    if (!len) return;
    buf[0] = '\0';
    last_err_t le = { buf, len };
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, &le);
}

/* "file.h5, object /meta" for messages about an attribute of obj. */
static void where(hid_t obj, char *buf, size_t len)
{
    char file[1024] = "", object[512] = "";
    ssize_t nf = -1, no = -1;
    H5E_BEGIN_TRY {
        nf = H5Fget_name(obj, file, sizeof file);
        no = H5Iget_name(obj, object, sizeof object);
    } H5E_END_TRY;
    snprintf(buf, len, "%s, object %s", nf > 0 ? file : "(unknown file)", no > 0 ? object : "/");
}

static accel_status_t attr_error(hid_t obj, const char *name, const char *what, const char *h5err)
{
    char loc[1600];
    where(obj, loc, sizeof loc);
    ACCEL_ERROR("%s attribute '%s' failed (%s): %s\n--> hint: a read error means a damaged file, a "
                "write error usually a full disk", what, name, loc, h5err[0] ? h5err : "HDF5 error");
    return ACCEL_ERR_HDF5;
}

/* ------------------------------------------------------------------ attributes: write */

static accel_status_t attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *value)
{
    char h5err[256] = "";
    hid_t space = -1, a = -1;
    herr_t rc = -1;
    H5E_BEGIN_TRY {
        space = H5Screate(H5S_SCALAR);
        htri_t ex = space >= 0 ? H5Aexists(obj, name) : -1;
        if (ex > 0 && H5Adelete(obj, name) < 0) ex = -1;      /* replace, not fail */
        if (ex >= 0) a = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
        if (a >= 0) rc = H5Awrite(a, mtype, value);
        if (rc < 0) accel_h5_last_error(h5err, sizeof h5err);
        if (a >= 0 && H5Aclose(a) < 0 && rc >= 0) {
            accel_h5_last_error(h5err, sizeof h5err);
            rc = -1;
        }
        if (space >= 0) H5Sclose(space);
    } H5E_END_TRY;
    return rc < 0 ? attr_error(obj, name, "writing", h5err) : ACCEL_OK;
}

accel_status_t accel_h5_attr_write_str(hid_t obj, const char *name, const char *value)
{
    char h5err[256] = "";
    hid_t t = -1;
    size_t n = strlen(value);
    H5E_BEGIN_TRY {
        t = H5Tcopy(H5T_C_S1);
        if (t >= 0 && (H5Tset_size(t, n ? n : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0)) {
            accel_h5_last_error(h5err, sizeof h5err);
            H5Tclose(t);
            t = -1;
        }
    } H5E_END_TRY;
    if (t < 0) return attr_error(obj, name, "writing", h5err);
    accel_status_t st = attr_write(obj, name, t, t, n ? value : "");
    H5Tclose(t);
    return st;
}

accel_status_t accel_h5_attr_write_i32(hid_t obj, const char *name, int32_t v)
{
    return attr_write(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &v);
}
accel_status_t accel_h5_attr_write_i64(hid_t obj, const char *name, int64_t v)
{
    return attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}
accel_status_t accel_h5_attr_write_u64(hid_t obj, const char *name, uint64_t v)
{
    return attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v);
}
accel_status_t accel_h5_attr_write_f64(hid_t obj, const char *name, double v)
{
    return attr_write(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

/* ------------------------------------------------------------------ attributes: read */

/* A string attribute of type t (fixed or variable length) into value. */
static accel_status_t read_string(hid_t a, hid_t t, char *value, size_t len, char *h5err, size_t errlen)
{
    htri_t var = H5Tis_variable_str(t);
    if (var < 0) goto hdf5;
    if (var) {
        char *s = NULL;
        if (H5Aread(a, t, &s) < 0) goto hdf5;
        snprintf(value, len, "%s", s ? s : "");
        if (s) H5free_memory(s);
        return ACCEL_OK;
    }
    size_t n = H5Tget_size(t);
    if (!n) goto hdf5;
    char *tmp = calloc(n + 1, 1);
    if (!tmp) return ACCEL_ERR_NOMEM;
    if (H5Aread(a, t, tmp) < 0) {
        free(tmp);
        goto hdf5;
    }
    size_t k = strnlen(tmp, n);
    if (H5Tget_strpad(t) == H5T_STR_SPACEPAD)
        while (k > 0 && tmp[k - 1] == ' ') k--;           /* Fortran-style padding is not content */
    tmp[k] = '\0';
    snprintf(value, len, "%s", tmp);
    free(tmp);
    return ACCEL_OK;
hdf5:
    accel_h5_last_error(h5err, errlen);
    return ACCEL_ERR_HDF5;
}

/* kind: 's' string, 'i' int64, 'u' uint64, 'f' double. */
static accel_status_t attr_read(hid_t obj, const char *name, char kind, void *value, size_t len)
{
    accel_status_t st = ACCEL_OK;
    char h5err[256] = "";
    hid_t a = -1, t = -1, space = -1;
    H5E_BEGIN_TRY {
        htri_t ex = H5Aexists(obj, name);
        if (ex == 0) {
            st = ACCEL_ERR_NOT_FOUND;
        } else {
            if (ex > 0) a = H5Aopen(obj, name, H5P_DEFAULT);
            if (a >= 0) t = H5Aget_type(a);
            if (t >= 0) space = H5Aget_space(a);
            if (space < 0) {
                accel_h5_last_error(h5err, sizeof h5err);
                st = ACCEL_ERR_HDF5;
            }
        }
        if (st == ACCEL_OK) {
            H5T_class_t cls = H5Tget_class(t);
            bool ok = H5Sget_simple_extent_npoints(space) == 1 &&
                      (kind == 's' ? cls == H5T_STRING
                                   : cls == H5T_INTEGER || (kind == 'f' && cls == H5T_FLOAT));
            if (!ok) {
                st = ACCEL_ERR_INVALID;
            } else if (kind == 's') {
                st = read_string(a, t, value, len, h5err, sizeof h5err);
            } else {
                /* Into a local first: the caller's value stays untouched on failure. */
                union { int64_t i; uint64_t u; double f; } v;
                hid_t mt = kind == 'i' ? H5T_NATIVE_INT64 : kind == 'u' ? H5T_NATIVE_UINT64 : H5T_NATIVE_DOUBLE;
                if (H5Aread(a, mt, &v) < 0) {
                    accel_h5_last_error(h5err, sizeof h5err);
                    st = ACCEL_ERR_HDF5;
                } else {
                    memcpy(value, &v, 8);
                }
            }
        }
        if (space >= 0) H5Sclose(space);
        if (t >= 0) H5Tclose(t);
        if (a >= 0) H5Aclose(a);
    } H5E_END_TRY;
    if (st == ACCEL_ERR_HDF5) attr_error(obj, name, "reading", h5err);
    return st;
}

accel_status_t accel_h5_attr_read_str(hid_t obj, const char *name, char *value, size_t len)
{
    return attr_read(obj, name, 's', value, len);
}
accel_status_t accel_h5_attr_read_i64(hid_t obj, const char *name, int64_t *v) { return attr_read(obj, name, 'i', v, 0); }
accel_status_t accel_h5_attr_read_u64(hid_t obj, const char *name, uint64_t *v) { return attr_read(obj, name, 'u', v, 0); }
accel_status_t accel_h5_attr_read_f64(hid_t obj, const char *name, double *v) { return attr_read(obj, name, 'f', v, 0); }

/* ------------------------------------------------------------------ byte blobs */

accel_status_t accel_h5_write_bytes(hid_t loc, const char *name, const void *data, size_t n)
{
    hsize_t dim = n;
    hid_t s = H5Screate_simple(1, &dim, NULL), d = -1;
    accel_status_t st = s < 0 ? ACCEL_ERR_HDF5 : ACCEL_OK;
    if (st == ACCEL_OK) d = H5Dcreate2(loc, name, H5T_STD_U8LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (st == ACCEL_OK &&
        (d < 0 || (n && H5Dwrite(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)))
        st = ACCEL_ERR_HDF5;
    if (d >= 0 && H5Dclose(d) < 0) st = ACCEL_ERR_HDF5;
    if (s >= 0) H5Sclose(s);
    return st;
}

accel_status_t accel_h5_read_bytes(hid_t loc, const char *name, size_t max_len, char **data,
                                   size_t *len)
{
    *data = NULL;
    *len = 0;
    htri_t ex;
    H5E_BEGIN_TRY { ex = H5Lexists(loc, name, H5P_DEFAULT); } H5E_END_TRY;
    if (ex <= 0) return ex < 0 ? ACCEL_ERR_HDF5 : ACCEL_ERR_NOT_FOUND;
    hid_t d, t = -1, s = -1;
    H5E_BEGIN_TRY { d = H5Dopen2(loc, name, H5P_DEFAULT); } H5E_END_TRY;
    if (d < 0) return ACCEL_ERR_INVALID;                    /* a group or a dangling link */
    accel_status_t st = ACCEL_ERR_INVALID;
    hsize_t dim = 0;
    t = H5Dget_type(d);
    s = H5Dget_space(d);
    if (t >= 0 && s >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 1 &&
        H5Sget_simple_extent_ndims(s) == 1 && H5Sget_simple_extent_dims(s, &dim, NULL) == 1 &&
        dim <= max_len && accel_h5_dset_allocated(d, dim)) {
        char *buf = malloc((size_t)dim + 1);
        if (!buf) {
            st = ACCEL_ERR_NOMEM;
        } else if (dim && H5Dread(d, H5T_NATIVE_UCHAR, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
            free(buf);
            st = ACCEL_ERR_HDF5;
        } else {
            buf[dim] = '\0';
            *data = buf;
            *len = (size_t)dim;
            st = ACCEL_OK;
        }
    }
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    H5Dclose(d);
    return st;
}

/* ------------------------------------------------------------------ files */

int accel_h5_path_exists(hid_t loc, const char *path)
{
    char buf[1024];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf || buf[0] != '/') return -1;
    if (!buf[1]) return 1;                                  /* the root group */
    int rc = 1;
    H5E_BEGIN_TRY {
        for (char *p = buf + 1;; p++) {
            if (*p != '/' && *p != '\0') continue;
            char c = *p;
            *p = '\0';
            htri_t ex = H5Lexists(loc, buf, H5P_DEFAULT);
            if (ex <= 0) {
                rc = ex < 0 ? -1 : 0;
                break;
            }
            if (!c) break;
            *p = c;
        }
    } H5E_END_TRY;
    return rc;
}

accel_status_t accel_h5_fapl_serial(hid_t *fapl)
{
    *fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (*fapl >= 0 && H5Pset_fapl_sec2(*fapl) >= 0 && H5Pset_file_locking(*fapl, false, true) >= 0)
        return ACCEL_OK;
    if (*fapl >= 0) H5Pclose(*fapl);
    *fapl = -1;
    ACCEL_ERROR("cannot set up HDF5 file access properties (serial driver, no file lock)");
    return ACCEL_ERR_HDF5;
}

accel_status_t accel_h5_open_read(const char *path, hid_t *file, char *err, size_t errlen)
{
    *file = -1;
    if (err && errlen) err[0] = '\0';
    hid_t fapl;
    accel_status_t st = accel_h5_fapl_serial(&fapl);
    if (st != ACCEL_OK) return st;
    H5E_BEGIN_TRY {
        *file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
        if (*file < 0 && err) accel_h5_last_error(err, errlen);
    } H5E_END_TRY;
    H5Pclose(fapl);
    return *file >= 0 ? ACCEL_OK : ACCEL_ERR_CORRUPT;
}

/* Every chunk of a chunked dataset is stored: a chunk never written would read as fill values.
 * (H5Dget_space_status cannot say: it calls a dataset "partly allocated" whenever its stored
 * bytes differ from its elements' size, i.e. when it is compressed or its last chunk is partial.) */
static bool every_chunk_stored(hid_t dset, hid_t dcpl)
{
    hsize_t dims[H5S_MAX_RANK], chunk[H5S_MAX_RANK], stored = 0, want = 1;
    hid_t space = H5Dget_space(dset);
    int rank = space >= 0 ? H5Sget_simple_extent_dims(space, dims, NULL) : -1;
    bool ok = rank >= 0 && H5Pget_chunk(dcpl, rank, chunk) == rank &&
              H5Dget_num_chunks(dset, space, &stored) >= 0;     /* 1.10 takes no H5S_ALL */
    for (int i = 0; ok && i < rank; i++) {
        hsize_t n = chunk[i] ? (dims[i] + chunk[i] - 1) / chunk[i] : 0;
        ok = n > 0 && want <= (hsize_t)-1 / n;
        if (ok) want *= n;
    }
    if (space >= 0) H5Sclose(space);
    return ok && stored == want;
}

bool accel_h5_dset_allocated(hid_t dset, uint64_t nbytes)
{
    if (nbytes == 0) return true;
    H5D_space_status_t ss;
    herr_t r;
    hsize_t have;
    H5D_layout_t lay = H5D_LAYOUT_ERROR;
    bool chunks_ok = false;
    H5E_BEGIN_TRY {
        r = H5Dget_space_status(dset, &ss);
        have = H5Dget_storage_size(dset);
        hid_t dcpl = H5Dget_create_plist(dset);
        if (dcpl >= 0) {
            lay = H5Pget_layout(dcpl);
            if (lay == H5D_CHUNKED) chunks_ok = every_chunk_stored(dset, dcpl);
            H5Pclose(dcpl);
        }
    } H5E_END_TRY;
    if (r < 0) return false;
    /* Chunked data may be compressed (smaller than nbytes), but every chunk must be there. */
    if (lay == H5D_CHUNKED) return chunks_ok && have > 0;
    return ss == H5D_SPACE_STATUS_ALLOCATED && (lay == H5D_CONTIGUOUS || lay == H5D_COMPACT) && have >= nbytes;
}

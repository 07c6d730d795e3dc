/* HDF5 datasets (format in include/accel/dataset.h and docs/datasets.md): a loader that opens a
 * split collectively with the MPI-IO driver and reads exactly the requested samples, and serial
 * writers that publish a file atomically (temporary name, fsync, rename).
 *
 * A read sorts and de-duplicates the requested samples, merges their element ranges into disjoint
 * intervals (consecutive token samples share a token, so their blocks overlap), selects the union
 * of those intervals with H5S_SELECT_OR, and issues one independent H5Dread into a packed buffer.
 * HDF5 delivers a hyperslab union in file order, whatever order the blocks were added in, so the
 * samples are then copied from the packed buffer into request order (validating every value). */
#include "build_config.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/dataset.h"
#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/tokenizer.h"
#include "../h5/h5util.h"

/* A kept tokenizer.json larger than this is damage: real ones are a few MiB (Llama-3: 9 MiB). */
#define DATASET_TOKENIZER_MAX ((size_t)1 << 30)
/* Likewise a kept chat template: real ones are a few KiB (the largest, tens of KiB). */
#define DATASET_CHAT_TEMPLATE_MAX ((size_t)1 << 26)

struct accel_dataset {
    accel_dataset_info_t info;
    char *path;
    char split[32];
    MPI_Comm comm;
    int rank;
    hid_t file, fapl, dxpl;
    hid_t data;                     /* /split/tokens or /split/inputs */
    hid_t labels;                   /* /split/labels (classification) */
    hid_t mask;                     /* /split/loss_mask (token datasets that have one) */
    hid_t docs;                     /* /split/document_start (token datasets that have one) */
    hid_t tok_memtype;              /* memory type tokens are read as */
    size_t tok_memsize;
    /* Tokens stored contiguously, unfiltered, little-endian, as tok_memtype: read with pread from
     * here, outside HDF5 (and its lock: a background checkpoint may hold it for seconds). */
    int raw_fd;                     /* -1: read through HDF5 */
    uint64_t raw_offset;            /* file offset of token 0 */
};

static void open_raw(accel_dataset_t *ds, uint64_t nbytes);

/* Errors found identically by every rank (open-time validation) are printed once, by rank 0 of the
 * dataset's communicator; errors of one rank's read are printed by that rank. */
static void ds_error(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ds_error(int rank, const char *fmt, ...)
{
    if (rank != 0) return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    accel_log(ACCEL_LOG_ERROR, false, "%s", msg);
}

/* ------------------------------------------------------------------ attributes */

/* Why a root attribute could not serve (src/h5 reads it), in the words of the messages below. */
static const char *attr_problem(accel_status_t r, const char *kind)
{
    return r == ACCEL_ERR_NOT_FOUND ? "missing" : r != ACCEL_OK ? kind : "not positive";
}

/* ------------------------------------------------------------------ open */

static accel_status_t open_dataset(accel_dataset_t *ds, const char *name, hid_t *out)
{
    char full[96];
    snprintf(full, sizeof full, "/%s/%s", ds->split, name);
    htri_t exists;
    H5E_BEGIN_TRY { exists = H5Lexists(ds->file, full, H5P_DEFAULT); } H5E_END_TRY;
    if (exists > 0) H5E_BEGIN_TRY { *out = H5Dopen2(ds->file, full, H5P_DEFAULT); } H5E_END_TRY;
    if (exists <= 0 || *out < 0) {
        ds_error(ds->rank, "%s: dataset %s is missing (a %s file has /%s/%s)\n--> hint: the file is "
                 "incomplete or was not written by accel_data; list it with: h5ls -r %s", ds->path,
                 full, ds->info.kind == ACCEL_DATASET_TOKENS ? ACCEL_DATASET_FORMAT_TOKENS
                 : ACCEL_DATASET_FORMAT_CLASSIFICATION, ds->split, name, ds->path);
        return ACCEL_ERR_CORRUPT;
    }
    /* A filter this HDF5 lacks (h5py's lzf, a Blosc or Zstandard plugin not installed) would fail
     * at the first read, in the middle of training: say so now. */
    hid_t dcpl = H5Dget_create_plist(*out);
    int nfilters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
    for (int i = 0; i < nfilters; i++) {
        char fname[64] = "";
        unsigned flags = 0;
        size_t nvalues = 0;
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nvalues, NULL, sizeof fname, fname, NULL);
        htri_t avail;
        H5E_BEGIN_TRY { avail = id >= 0 ? H5Zfilter_avail(id) : 0; } H5E_END_TRY;
        if (avail <= 0) {
            ds_error(ds->rank, "%s: dataset %s is compressed with filter %d (%s), which this HDF5 cannot "
                     "decode\n--> hint: rewrite it without the filter (h5repack -f NONE, on a machine whose "
                     "HDF5 has it; h5py: compression=\"gzip\" or none)", ds->path, full, (int)id,
                     fname[0] ? fname : id == 32000 ? "lzf, h5py's own" : "unnamed");
            H5Pclose(dcpl);
            H5Dclose(*out);
            *out = -1;
            return ACCEL_ERR_UNSUPPORTED;
        }
    }
    if (dcpl >= 0) H5Pclose(dcpl);
    return ACCEL_OK;
}

/* Rank and dims of an open dataset's extent (dims up to 2-D, else 0), and its type. */
typedef struct {
    int rank;
    hsize_t dims[2];
    H5T_class_t cls;
    size_t size;
    H5T_sign_t sign;
} dshape_t;

static dshape_t dataset_shape(hid_t dset)
{
    dshape_t d = { .dims = { 0, 0 } };
    hid_t space = H5Dget_space(dset), type = H5Dget_type(dset);
    d.rank = H5Sget_simple_extent_ndims(space);
    if (d.rank >= 1 && d.rank <= 2) H5Sget_simple_extent_dims(space, d.dims, NULL);
    d.cls = H5Tget_class(type);
    d.size = H5Tget_size(type);
    d.sign = d.cls == H5T_INTEGER ? H5Tget_sign(type) : H5T_SGN_NONE;
    /* An integer whose bits do not fill its bytes (an HDF5 9-bit type, a bit offset) is converted
     * with clamping by HDF5: not a type accel or numpy writes. Reported as "another type". */
    if (d.cls == H5T_INTEGER && (H5Tget_precision(type) != 8 * d.size || H5Tget_offset(type) != 0))
        d.cls = H5T_NO_CLASS;
    H5Tclose(type);
    H5Sclose(space);
    return d;
}

/* An optional per-token byte stream of the split: /split/loss_mask (1 for a training target, 0 for
 * context) or /split/document_start (1 where a document begins). Its values are checked as read. */
static accel_status_t open_token_flags(accel_dataset_t *ds, const char *name, hid_t *dset, bool *has,
                                       const char *hint)
{
    char full[96];
    snprintf(full, sizeof full, "/%s/%s", ds->split, name);
    if (accel_h5_path_exists(ds->file, full) <= 0) return ACCEL_OK;
    ACCEL_CHECK(open_dataset(ds, name, dset));
    const dshape_t m = dataset_shape(*dset);
    const char *why = m.rank != 1 ? "it is not 1-D"
                      : m.cls != H5T_INTEGER || m.size != 1
                          ? "it is not of 1-byte integers (h5py: dtype=np.uint8)"
                      : (int64_t)m.dims[0] != ds->info.ntokens ? "its length differs from the tokens'"
                      : !accel_h5_dset_allocated(*dset, (uint64_t)m.dims[0]) ? "its data was never written"
                      : NULL;
    if (why) {
        ds_error(ds->rank, "%s: dataset %s (%llu elements) does not fit /%s/tokens (%lld): %s\n--> hint: "
                 "%s", ds->path, full, (unsigned long long)m.dims[0], ds->split,
                 (long long)ds->info.ntokens, why, hint);
        return ACCEL_ERR_CORRUPT;
    }
    *has = true;
    return ACCEL_OK;
}

static accel_status_t open_tokens(accel_dataset_t *ds, int context)
{
    accel_dataset_info_t *in = &ds->info;
    int64_t vocab = 0;
    accel_status_t r = accel_h5_attr_read_i64(ds->file, "vocab", &vocab);
    if (r != ACCEL_OK || vocab <= 0 || vocab > INT32_MAX) {
        ds_error(ds->rank, "%s: attribute 'vocab' is %s\n--> hint: a token file states its vocabulary "
                 "size as a positive integer attribute 'vocab' (256 for byte-level tokens)",
                 ds->path, attr_problem(r, "not an integer"));
        return ACCEL_ERR_CORRUPT;
    }
    in->vocab = (int)vocab;
    if (accel_h5_attr_read_str(ds->file, "tokenizer", in->tokenizer, sizeof in->tokenizer) != ACCEL_OK)
        snprintf(in->tokenizer, sizeof in->tokenizer, "unknown");
    /* Files written before the tokenizer was recorded by hash have neither: "" and false. */
    if (accel_h5_attr_read_str(ds->file, "tokenizer_hash", in->tokenizer_hash,
                               sizeof in->tokenizer_hash) != ACCEL_OK)
        in->tokenizer_hash[0] = '\0';
    in->has_tokenizer_json = accel_h5_path_exists(ds->file, "/tokenizer.json") > 0;
    in->has_chat_template = accel_h5_path_exists(ds->file, "/chat_template") > 0;
    ACCEL_CHECK(open_dataset(ds, "tokens", &ds->data));
    const dshape_t d = dataset_shape(ds->data);
    if (d.rank != 1 || d.cls != H5T_INTEGER) {
        ds_error(ds->rank, "%s: dataset /%s/tokens must be a 1-D integer array, but it is %d-D of %s"
                 "\n--> hint: write tokens as a flat uint16 (or uint8) array", ds->path, ds->split,
                 d.rank, d.cls == H5T_INTEGER ? "integers" : d.cls == H5T_FLOAT ? "floats" : "another type");
        return ACCEL_ERR_CORRUPT;
    }
    /* The types accel_data writes (uint8/16/32) and the signed ones numpy gives (int32, int64,
     * range-checked on copy); anything else would be converted with clamping. */
    bool known = d.sign == H5T_SGN_NONE ? (d.size == 1 || d.size == 2 || d.size == 4)
                                        : (d.size == 4 || d.size == 8);
    if (!known) {
        ds_error(ds->rank, "%s: dataset /%s/tokens holds %zu-byte %s integers, not a token type accel "
                 "reads (uint8, uint16, uint32, int32, int64)\n--> hint: write tokens as uint16 (uint32 "
                 "for vocabularies above 65536)", ds->path, ds->split, d.size,
                 d.sign == H5T_SGN_NONE ? "unsigned" : "signed");
        return ACCEL_ERR_CORRUPT;
    }
    uint64_t nbytes;
    if (d.dims[0] > (hsize_t)INT64_MAX / 8 ||
        __builtin_mul_overflow((uint64_t)d.dims[0], (uint64_t)d.size, &nbytes) ||
        !accel_h5_dset_allocated(ds->data, nbytes)) {
        ds_error(ds->rank, "%s: dataset /%s/tokens claims %llu tokens of %zu bytes, but %s\n--> hint: the "
                 "file is damaged or was created without writing its data; rewrite it with accel_data",
                 ds->path, ds->split, (unsigned long long)d.dims[0], d.size,
                 d.dims[0] > (hsize_t)INT64_MAX / 8 ? "that count is out of range"
                                                 : "its data was never written (no storage in the file)");
        return ACCEL_ERR_CORRUPT;
    }
    in->token_bytes = (int)d.size;
    in->token_signed = d.sign != H5T_SGN_NONE;
    /* Read as the file's own integer type (so little-endian contiguous data qualifies for the
     * direct path: uint32 for vocabularies above 65536, int32/int64 as numpy writes them); the
     * copy into int32 range-checks every token. */
    ds->tok_memsize = d.size;
    if (!in->token_signed)
        ds->tok_memtype = d.size == 1 ? H5T_NATIVE_UINT8 : d.size == 2 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT32;
    else
        ds->tok_memtype = d.size == 4 ? H5T_NATIVE_INT32 : H5T_NATIVE_INT64;
    in->ntokens = (int64_t)d.dims[0];
    open_raw(ds, nbytes);
    if (context <= 0) {
        ds_error(ds->rank, "%s: context %d is not positive\n--> hint: a token sample is context+1 "
                 "tokens; set model.context", ds->path, context);
        return ACCEL_ERR_INVALID;
    }
    in->context = context;
    ACCEL_CHECK(open_token_flags(ds, "loss_mask", &ds->mask, &in->has_loss_mask,
                                 "a loss mask holds one uint8 per token, 1 for a training target, 0 for "
                                 "context; rewrite it with accel_data prepare --prompt-field"));
    ACCEL_CHECK(open_token_flags(ds, "document_start", &ds->docs, &in->has_document_starts,
                                 "document starts are one uint8 per token, 1 where a document begins; "
                                 "rewrite the file with accel_data prepare"));
    in->nsamples = in->ntokens > 0 ? (in->ntokens - 1) / context : 0;
    if (in->nsamples < 1) {
        ds_error(ds->rank, "%s: split '%s' holds %lld tokens, too few for one sample at context %d "
                 "(needs %d)\n--> hint: use a smaller context or a bigger corpus",
                 ds->path, ds->split, (long long)in->ntokens, context, context + 1);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

static accel_status_t open_classification(accel_dataset_t *ds)
{
    accel_dataset_info_t *in = &ds->info;
    int64_t classes = 0;
    accel_status_t r = accel_h5_attr_read_i64(ds->file, "classes", &classes);
    if (r != ACCEL_OK || classes <= 0 || classes > INT32_MAX) {
        ds_error(ds->rank, "%s: attribute 'classes' is %s\n--> hint: a classification file states "
                 "its number of classes as a positive integer attribute 'classes'", ds->path,
                 attr_problem(r, "not an integer"));
        return ACCEL_ERR_CORRUPT;
    }
    in->classes = (int)classes;
    ACCEL_CHECK(open_dataset(ds, "inputs", &ds->data));
    ACCEL_CHECK(open_dataset(ds, "labels", &ds->labels));
    const dshape_t x = dataset_shape(ds->data), y = dataset_shape(ds->labels);
    if (x.rank != 2 || x.cls != H5T_FLOAT || x.dims[1] == 0 || x.dims[1] > INT32_MAX) {
        ds_error(ds->rank, "%s: dataset /%s/inputs must be a 2-D float array [N, features], but it is "
                 "%d-D of %s\n--> hint: write inputs as float32 [N, F]", ds->path, ds->split, x.rank,
                 x.cls == H5T_FLOAT ? "floats" : x.cls == H5T_INTEGER ? "integers" : "another type");
        return ACCEL_ERR_CORRUPT;
    }
    if (y.rank != 1 || y.cls != H5T_INTEGER) {
        ds_error(ds->rank, "%s: dataset /%s/labels must be a 1-D integer array [N], but it is %d-D of "
                 "%s\n--> hint: write labels as int32 [N]", ds->path, ds->split, y.rank,
                 y.cls == H5T_INTEGER ? "integers" : y.cls == H5T_FLOAT ? "floats" : "another type");
        return ACCEL_ERR_CORRUPT;
    }
    if (x.dims[0] != y.dims[0]) {
        ds_error(ds->rank, "%s: /%s/inputs has %llu rows but /%s/labels has %llu\n--> hint: every "
                 "sample needs one input row and one label", ds->path, ds->split,
                 (unsigned long long)x.dims[0], ds->split, (unsigned long long)y.dims[0]);
        return ACCEL_ERR_CORRUPT;
    }
    uint64_t xbytes, ybytes;
    if (x.dims[0] > (hsize_t)INT32_MAX * 64 ||
        __builtin_mul_overflow((uint64_t)x.dims[0], (uint64_t)x.dims[1] * x.size, &xbytes) ||
        __builtin_mul_overflow((uint64_t)y.dims[0], (uint64_t)y.size, &ybytes) ||
        !accel_h5_dset_allocated(ds->data, xbytes) ||
        !accel_h5_dset_allocated(ds->labels, ybytes)) {
        ds_error(ds->rank, "%s: /%s/inputs [%llu, %llu] or /%s/labels has no data in the file (never "
                 "written) or a size out of range\n--> hint: the file is damaged; rewrite it", ds->path,
                 ds->split, (unsigned long long)x.dims[0], (unsigned long long)x.dims[1], ds->split);
        return ACCEL_ERR_CORRUPT;
    }
    in->features = (int)x.dims[1];
    in->nsamples = (int64_t)x.dims[0];
    if (in->nsamples < 1) {
        ds_error(ds->rank, "%s: split '%s' holds no samples\n--> hint: write at least one sample per "
                 "split", ds->path, ds->split);
        return ACCEL_ERR_SHAPE;
    }
    return ACCEL_OK;
}

accel_status_t accel_dataset_open(const char *path, const char *split, int context, MPI_Comm comm,
                                  accel_dataset_t **out)
{
    *out = NULL;
    accel_status_t st = ACCEL_OK;
    accel_dataset_t *ds = calloc(1, sizeof *ds);
    if (!ds) return ACCEL_ERR_NOMEM;
    ds->file = ds->fapl = ds->dxpl = ds->data = ds->labels = ds->mask = ds->docs = -1;
    ds->raw_fd = -1;
    ds->comm = comm;
    st = accel_mpi_status(MPI_Comm_rank(comm, &ds->rank), "MPI_Comm_rank (dataset open)");
    if (st != ACCEL_OK) goto fail;
    if (!path || !*path || !split || !*split || strlen(split) >= sizeof ds->split ||
        strchr(split, '/')) {
        ds_error(ds->rank, "accel_dataset_open: bad arguments (path '%s', split '%s')",
                 path ? path : "(null)", split ? split : "(null)");
        st = ACCEL_ERR_INVALID;
        goto fail;
    }
    ds->path = strdup(path);
    if (!ds->path) { st = ACCEL_ERR_NOMEM; goto fail; }
    snprintf(ds->split, sizeof ds->split, "%s", split);
    ds->info.path = ds->path;
    ds->info.split = ds->split;

    /* Checks that every rank makes alike (same shared file), before the collective open, so the
     * messages say what is wrong instead of dumping an HDF5 error stack. */
    struct stat sb;
    if (stat(path, &sb) != 0) {
        ds_error(ds->rank, "cannot open dataset '%s': %s\n--> hint: create one with 'accel_data "
                 "prepare' or 'accel_data synth'", path, strerror(errno));
        st = ACCEL_ERR_NOT_FOUND;
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        ds_error(ds->rank, "dataset '%s' is not a regular file", path);
        st = ACCEL_ERR_INVALID;
        goto fail;
    }
    if (!accel_h5_probe(path, (long long)sb.st_size)) {
        ds_error(ds->rank, "'%s' is not an HDF5 file\n--> hint: accel datasets are HDF5 files made "
                 "by 'accel_data prepare' (text) or 'accel_data synth'", path);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }

    ds->fapl = H5Pcreate(H5P_FILE_ACCESS);
    ds->dxpl = H5Pcreate(H5P_DATASET_XFER);
    if (ds->fapl < 0 || ds->dxpl < 0 || H5Pset_fapl_mpio(ds->fapl, comm, MPI_INFO_NULL) < 0 ||
        H5Pset_dxpl_mpio(ds->dxpl, H5FD_MPIO_INDEPENDENT) < 0) {
        ds_error(ds->rank, "%s: cannot set up the MPI-IO driver", path);
        st = ACCEL_ERR_HDF5;
        goto fail;
    }
    /* Metadata (attributes, dataset headers) is read by every rank; all reads are independent. */
    H5E_BEGIN_TRY { ds->file = H5Fopen(path, H5F_ACC_RDONLY, ds->fapl); } H5E_END_TRY;
    if (ds->file < 0) {
        ds_error(ds->rank, "%s: HDF5 cannot open the file (truncated or damaged?)\n--> hint: check it "
                 "with: h5dump -H %s", path, path);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }

    char format[64] = "";
    accel_status_t r = accel_h5_attr_read_str(ds->file, "format", format, sizeof format);
    if (r != ACCEL_OK) {
        ds_error(ds->rank, "%s: not an accel dataset: the file attribute 'format' is %s\n--> hint: "
                 "expected format \"%s\" or \"%s\"; make datasets with accel_data", path,
                 attr_problem(r, "not a string"), ACCEL_DATASET_FORMAT_TOKENS,
                 ACCEL_DATASET_FORMAT_CLASSIFICATION);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    if (!strcmp(format, ACCEL_DATASET_FORMAT_TOKENS)) ds->info.kind = ACCEL_DATASET_TOKENS;
    else if (!strcmp(format, ACCEL_DATASET_FORMAT_CLASSIFICATION)) ds->info.kind = ACCEL_DATASET_CLASSIFICATION;
    else {
        ds_error(ds->rank, "%s: unknown dataset format \"%s\"\n--> hint: expected \"%s\" or \"%s\"",
                 path, format, ACCEL_DATASET_FORMAT_TOKENS, ACCEL_DATASET_FORMAT_CLASSIFICATION);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    int64_t version = 0;
    r = accel_h5_attr_read_i64(ds->file, "version", &version);
    if (r != ACCEL_OK || version < 1) {
        ds_error(ds->rank, "%s: attribute 'version' is %s\n--> hint: a %s file carries an integer "
                 "attribute 'version' = %d", path, attr_problem(r, "not an integer"), format,
                 ACCEL_DATASET_VERSION_PLAIN);
        st = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    if (version > ACCEL_DATASET_VERSION) {
        ds_error(ds->rank, "%s: %s version %lld is newer than this accel reads (%d)\n--> hint: "
                 "upgrade accel", path, format, (long long)version, ACCEL_DATASET_VERSION);
        st = ACCEL_ERR_UNSUPPORTED;
        goto fail;
    }
    ds->info.version = (int)version;

    char group[40];
    snprintf(group, sizeof group, "/%s", split);
    htri_t has_split;
    H5E_BEGIN_TRY { has_split = H5Lexists(ds->file, group, H5P_DEFAULT); } H5E_END_TRY;
    if (has_split <= 0) {
        ds_error(ds->rank, "%s: there is no split '%s' (group %s)\n--> hint: accel datasets have the "
                 "splits 'train' and 'val'", path, split, group);
        st = ACCEL_ERR_NOT_FOUND;
        goto fail;
    }
    if (ds->info.kind == ACCEL_DATASET_TOKENS) st = open_tokens(ds, context);
    else st = open_classification(ds);
    if (st != ACCEL_OK) goto fail;
    *out = ds;
    return ACCEL_OK;
fail:
    accel_dataset_close(ds);
    return st;
}

void accel_dataset_close(accel_dataset_t *ds)
{
    if (!ds) return;
    if (ds->raw_fd >= 0) close(ds->raw_fd);
    if (ds->labels >= 0) H5Dclose(ds->labels);
    if (ds->mask >= 0) H5Dclose(ds->mask);
    if (ds->docs >= 0) H5Dclose(ds->docs);
    if (ds->data >= 0) H5Dclose(ds->data);
    if (ds->file >= 0) H5Fclose(ds->file);
    if (ds->dxpl >= 0) H5Pclose(ds->dxpl);
    if (ds->fapl >= 0) H5Pclose(ds->fapl);
    free(ds->path);
    free(ds);
}

const accel_dataset_info_t *accel_dataset_info(const accel_dataset_t *ds)
{
    return &ds->info;
}

/* ------------------------------------------------------------------ read */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The unique requested samples in file order, and where each one's elements start in the packed
 * buffer the union selection is read into. */
typedef struct {
    int64_t *uniq;                  /* sorted unique sample indices */
    int64_t *packed;                /* element offset of uniq[k] in the packed buffer */
    int nuniq;
    hsize_t *istart, *ilen;         /* disjoint element intervals, in file order */
    int nint;
    hsize_t total;                  /* elements in the union */
} plan_t;

static void plan_free(plan_t *p)
{
    free(p->uniq);
    free(p->packed);
    free(p->istart);
    free(p->ilen);
}

/* Sample i covers elements [i*stride, i*stride + span) of the dataset's first dimension. */
static accel_status_t plan_build(plan_t *p, const int64_t *indices, int n, int64_t stride, int64_t span)
{
    memset(p, 0, sizeof *p);
    p->uniq = malloc(sizeof *p->uniq * (size_t)n);
    p->packed = malloc(sizeof *p->packed * (size_t)n);
    p->istart = malloc(sizeof *p->istart * (size_t)n);
    p->ilen = malloc(sizeof *p->ilen * (size_t)n);
    if (!p->uniq || !p->packed || !p->istart || !p->ilen) return ACCEL_ERR_NOMEM;
    memcpy(p->uniq, indices, sizeof *p->uniq * (size_t)n);
    qsort(p->uniq, (size_t)n, sizeof *p->uniq, cmp_i64);
    int u = 0;
    for (int k = 0; k < n; k++)
        if (u == 0 || p->uniq[u - 1] != p->uniq[k]) p->uniq[u++] = p->uniq[k];
    p->nuniq = u;
    hsize_t base = 0;               /* packed offset of the current interval */
    for (int k = 0; k < u; k++) {
        hsize_t s = (hsize_t)(p->uniq[k] * stride), e = s + (hsize_t)span;
        if (p->nint > 0 && s <= p->istart[p->nint - 1] + p->ilen[p->nint - 1]) {
            hsize_t *len = &p->ilen[p->nint - 1];
            if (e > p->istart[p->nint - 1] + *len) *len = e - p->istart[p->nint - 1];
        } else {
            if (p->nint > 0) base += p->ilen[p->nint - 1];
            p->istart[p->nint] = s;
            p->ilen[p->nint] = e - s;
            p->nint++;
        }
        p->packed[k] = (int64_t)(base + (s - p->istart[p->nint - 1]));
    }
    p->total = base + p->ilen[p->nint - 1];
    return ACCEL_OK;
}

static int plan_find(const plan_t *p, int64_t index)
{
    const int64_t *hit = bsearch(&index, p->uniq, (size_t)p->nuniq, sizeof *p->uniq, cmp_i64);
    return (int)(hit - p->uniq);
}

/* The direct path for tokens (raw_fd): only where the bytes in the file are the memory type's
 * (contiguous layout, no filters, little-endian; the memory type is the file's size and sign) and
 * lie inside the file; else info.hdf5_reads_why says why not. */
static void open_raw(accel_dataset_t *ds, uint64_t nbytes)
{
    hid_t dcpl = H5Dget_create_plist(ds->data), ftype = H5Dget_type(ds->data);
    haddr_t off = H5Dget_offset(ds->data);
    const char *why = NULL;
    struct stat sb;
    if (dcpl < 0 || ftype < 0)
        why = "HDF5 could not describe the dataset";
    else if (H5Pget_nfilters(dcpl) != 0)
        why = "the tokens are compressed or filtered; h5repack -f NONE -l CONTI makes them direct";
    else if (H5Pget_layout(dcpl) != H5D_CONTIGUOUS)
        why = "the tokens are chunked (h5py's chunks= or maxshape=); h5repack -l CONTI makes them direct";
    else if (H5Tget_order(ftype) != H5T_ORDER_LE)
        why = "the tokens are big-endian";
    else if (off == HADDR_UNDEF || stat(ds->path, &sb) != 0 || (uint64_t)off > (uint64_t)sb.st_size ||
             nbytes > (uint64_t)sb.st_size - (uint64_t)off)
        why = "the tokens' storage is not inside the file";
    if (dcpl >= 0) H5Pclose(dcpl);
    if (ftype >= 0) H5Tclose(ftype);
    ds->info.hdf5_reads_why = why;
    if (why) return;
    ds->raw_fd = open(ds->path, O_RDONLY | O_CLOEXEC);
    ds->raw_offset = (uint64_t)off;
    ds->info.direct_reads = ds->raw_fd >= 0;
    if (!ds->info.direct_reads) ds->info.hdf5_reads_why = "the file cannot be opened a second time";
}

/* read_union's direct form: the same packed buffer, by pread. */
static accel_status_t read_union_raw(accel_dataset_t *ds, const plan_t *p, void *buf)
{
    const size_t es = ds->tok_memsize;
    char *dst = buf;
    for (int k = 0; k < p->nint; k++) {
        size_t want = (size_t)p->ilen[k] * es, got = 0;
        off_t at = (off_t)(ds->raw_offset + (uint64_t)p->istart[k] * es);
        while (got < want) {
            ssize_t r = pread(ds->raw_fd, dst + got, want - got, at + (off_t)got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) {
                ACCEL_ERROR("%s: reading tokens %llu..%llu of /%s/tokens failed: %s\n--> hint: the "
                            "file may be truncated; check it with h5dump", ds->path,
                            (unsigned long long)p->istart[k], (unsigned long long)(p->istart[k] + p->ilen[k] - 1),
                            ds->split, r < 0 ? strerror(errno) : "end of file");
                return ACCEL_ERR_IO;
            }
            got += (size_t)r;
        }
        dst += want;
    }
    ds->info.elements_read += (int64_t)p->total;
    return ACCEL_OK;
}

/* Read the union of the plan's intervals (rows of `cols` elements) from dset into buf. */
static accel_status_t read_union(accel_dataset_t *ds, hid_t dset, const plan_t *p, hsize_t cols,
                                 hid_t memtype, void *buf, const char *what)
{
    accel_status_t st = ACCEL_OK;
    accel_h5_lock();                    /* a background checkpoint may be in HDF5 (ckpt.async) */
    hid_t fspace = H5Dget_space(dset), mspace = -1;
    int rank = H5Sget_simple_extent_ndims(fspace);
    herr_t e = fspace < 0 ? -1 : 0;
    for (int k = 0; k < p->nint && e >= 0; k++) {
        hsize_t start[2] = { p->istart[k], 0 }, count[2] = { p->ilen[k], cols };
        e = H5Sselect_hyperslab(fspace, k == 0 ? H5S_SELECT_SET : H5S_SELECT_OR, start, NULL, count, NULL);
    }
    hsize_t npoints = p->total * (rank == 2 ? cols : 1);
    if (e >= 0 && (hsize_t)H5Sget_select_npoints(fspace) != npoints) e = -1;
    if (e >= 0) mspace = H5Screate_simple(1, &npoints, NULL);
    if (e >= 0 && mspace >= 0) e = H5Dread(dset, memtype, mspace, fspace, ds->dxpl, buf);
    if (e < 0 || mspace < 0) {
        ACCEL_ERROR("%s: reading %llu elements of /%s/%s in %d blocks failed\n--> hint: the file may "
                    "be truncated; check it with h5dump", ds->path, (unsigned long long)npoints,
                    ds->split, what, p->nint);
        st = ACCEL_ERR_HDF5;
    } else {
        ds->info.elements_read += (int64_t)npoints;
    }
    if (mspace >= 0) H5Sclose(mspace);
    if (fspace >= 0) H5Sclose(fspace);
    accel_h5_unlock();
    return st;
}

static accel_status_t read_tokens(accel_dataset_t *ds, const int64_t *indices, int n, int32_t *tokens)
{
    const accel_dataset_info_t *in = &ds->info;
    const int64_t T = in->context, row = T + 1;
    plan_t p;
    accel_status_t st = plan_build(&p, indices, n, T, row);
    void *buf = NULL;
    if (st == ACCEL_OK) {
        buf = malloc(ds->tok_memsize * (size_t)p.total);
        if (!buf) st = ACCEL_ERR_NOMEM;
    }
    if (st == ACCEL_OK)
        st = ds->raw_fd >= 0 ? read_union_raw(ds, &p, buf)
                             : read_union(ds, ds->data, &p, 1, ds->tok_memtype, buf, "tokens");
    for (int j = 0; j < n && st == ACCEL_OK; j++) {
        int k = plan_find(&p, indices[j]);
        int64_t off = p.packed[k];
        int32_t *dst = tokens + (size_t)j * (size_t)row;
        for (int64_t t = 0; t < row; t++) {
            int64_t v = ds->tok_memsize == 1 ? ((const uint8_t *)buf)[off + t]
                        : ds->tok_memsize == 2 ? ((const uint16_t *)buf)[off + t]
                        : ds->tok_memsize == 8 ? ((const int64_t *)buf)[off + t]
                        : in->token_signed ? (int64_t)((const int32_t *)buf)[off + t]
                                           : (int64_t)((const uint32_t *)buf)[off + t];
            if (v < 0 || v >= in->vocab) {
                ACCEL_ERROR("%s: /%s/tokens[%lld] = %lld (in sample %lld) is outside [0, vocab=%d): "
                            "corrupt data\n--> hint: the file is damaged or its 'vocab' attribute is "
                            "wrong; inspect it with h5dump -d /%s/tokens -s %lld -c 1 %s", ds->path,
                            ds->split, (long long)(indices[j] * T + t), (long long)v,
                            (long long)indices[j], in->vocab, ds->split,
                            (long long)(indices[j] * T + t), ds->path);
                st = ACCEL_ERR_CORRUPT;
                break;
            }
            dst[t] = (int32_t)v;
        }
    }
    free(buf);
    plan_free(&p);
    return st;
}

static accel_status_t read_classification(accel_dataset_t *ds, const int64_t *indices, int n,
                                          float *inputs, int32_t *labels)
{
    const accel_dataset_info_t *in = &ds->info;
    const size_t F = (size_t)in->features;
    plan_t p;
    accel_status_t st = plan_build(&p, indices, n, 1, 1);
    float *xb = NULL;
    int32_t *yb = NULL;
    if (st == ACCEL_OK) {
        xb = malloc(sizeof *xb * F * (size_t)p.total);
        yb = malloc(sizeof *yb * (size_t)p.total);
        if (!xb || !yb) st = ACCEL_ERR_NOMEM;
    }
    if (st == ACCEL_OK) st = read_union(ds, ds->data, &p, F, H5T_NATIVE_FLOAT, xb, "inputs");
    if (st == ACCEL_OK) st = read_union(ds, ds->labels, &p, 1, H5T_NATIVE_INT32, yb, "labels");
    for (int j = 0; j < n && st == ACCEL_OK; j++) {
        int64_t off = p.packed[plan_find(&p, indices[j])];
        int32_t y = yb[off];
        if (y < 0 || y >= in->classes) {
            ACCEL_ERROR("%s: /%s/labels[%lld] = %d is outside [0, classes=%d): corrupt data\n--> hint: "
                        "the file is damaged or its 'classes' attribute is wrong", ds->path, ds->split,
                        (long long)indices[j], (int)y, in->classes);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        const float *src = xb + (size_t)off * F;
        for (size_t f = 0; f < F; f++) {
            if (!isfinite(src[f])) {
                ACCEL_ERROR("%s: /%s/inputs[%lld][%zu] is %g: corrupt data\n--> hint: inputs must be "
                            "finite numbers", ds->path, ds->split, (long long)indices[j], f,
                            (double)src[f]);
                st = ACCEL_ERR_CORRUPT;
                break;
            }
        }
        if (st != ACCEL_OK) break;
        memcpy(inputs + (size_t)j * F, src, sizeof *inputs * F);
        labels[j] = y;
    }
    free(xb);
    free(yb);
    plan_free(&p);
    return st;
}

/* Every index names a sample of the split. */
static accel_status_t check_indices(const accel_dataset_t *ds, const int64_t *indices, int n)
{
    for (int j = 0; j < n; j++) {
        if (indices[j] < 0 || indices[j] >= ds->info.nsamples) {
            ACCEL_ERROR("%s: sample index %lld is outside split '%s' (%lld samples)\n--> hint: the "
                        "sampler and the dataset disagree on the dataset size", ds->path,
                        (long long)indices[j], ds->split, (long long)ds->info.nsamples);
            return ACCEL_ERR_INVALID;
        }
    }
    return ACCEL_OK;
}

/* Samples indices[0..n) of a per-token byte stream (open_token_flags) into out, laid out as the
 * tokens; every value must be 0 or 1 (`meaning` says what 1 means, for the message). */
static accel_status_t read_token_flags(accel_dataset_t *ds, hid_t dset, const char *name,
                                       const char *meaning, const int64_t *indices, int n, uint8_t *out)
{
    if (n == 0) return ACCEL_OK;
    ACCEL_CHECK(check_indices(ds, indices, n));
    const int64_t T = ds->info.context, row = T + 1;
    plan_t p;
    accel_status_t st = plan_build(&p, indices, n, T, row);
    uint8_t *buf = NULL;
    if (st == ACCEL_OK && !(buf = malloc((size_t)p.total))) st = ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) st = read_union(ds, dset, &p, 1, H5T_NATIVE_UINT8, buf, name);
    for (int j = 0; j < n && st == ACCEL_OK; j++) {
        const uint8_t *src = buf + p.packed[plan_find(&p, indices[j])];
        for (int64_t t = 0; t < row; t++) {
            if (src[t] > 1) {
                ACCEL_ERROR("%s: /%s/%s[%lld] = %d (in sample %lld) is neither 0 nor 1: corrupt "
                            "data\n--> hint: 1 marks %s, 0 the other tokens", ds->path, ds->split, name,
                            (long long)(indices[j] * T + t), src[t], (long long)indices[j], meaning);
                st = ACCEL_ERR_CORRUPT;
                break;
            }
        }
        memcpy(out + (size_t)j * (size_t)row, src, (size_t)row);
    }
    free(buf);
    plan_free(&p);
    return st;
}

accel_status_t accel_dataset_read_loss_mask(accel_dataset_t *ds, const int64_t *indices, int n,
                                            uint8_t *mask)
{
    if (!ds || n < 0 || (n > 0 && (!indices || !mask)) || !ds->info.has_loss_mask) return ACCEL_ERR_INVALID;
    return read_token_flags(ds, ds->mask, "loss_mask", "a training target", indices, n, mask);
}

accel_status_t accel_dataset_read_document_starts(accel_dataset_t *ds, const int64_t *indices, int n,
                                                  uint8_t *starts)
{
    if (!ds || n < 0 || (n > 0 && (!indices || !starts)) || !ds->info.has_document_starts)
        return ACCEL_ERR_INVALID;
    return read_token_flags(ds, ds->docs, "document_start", "the first token of a document", indices, n,
                            starts);
}

/* How many ones a per-token byte stream of the split holds (read whole, a block at a time). */
static accel_status_t count_token_flags(accel_dataset_t *ds, hid_t dset, const char *name, int64_t *ones)
{
    const int64_t block = 1 << 24, n = ds->info.ntokens;
    uint8_t *buf = malloc((size_t)(n < block ? (n ? n : 1) : block));
    if (!buf) return ACCEL_ERR_NOMEM;
    accel_status_t st = ACCEL_OK;
    for (int64_t at = 0; at < n && st == ACCEL_OK; at += block) {
        int64_t len = n - at < block ? n - at : block;
        plan_t p = { .istart = &(hsize_t){ (hsize_t)at }, .ilen = &(hsize_t){ (hsize_t)len }, .nint = 1,
                     .total = (hsize_t)len };
        st = read_union(ds, dset, &p, 1, H5T_NATIVE_UINT8, buf, name);
        for (int64_t i = 0; i < len && st == ACCEL_OK; i++) {
            if (buf[i] > 1) {
                ACCEL_ERROR("%s: /%s/%s[%lld] = %d is neither 0 nor 1: corrupt data", ds->path, ds->split,
                            name, (long long)(at + i), buf[i]);
                st = ACCEL_ERR_CORRUPT;
            }
            *ones += buf[i];
        }
    }
    free(buf);
    return st;
}

accel_status_t accel_dataset_loss_mask_count(accel_dataset_t *ds, int64_t *trained)
{
    *trained = 0;
    if (!ds || !ds->info.has_loss_mask) return ACCEL_ERR_INVALID;
    return count_token_flags(ds, ds->mask, "loss_mask", trained);
}

accel_status_t accel_dataset_document_count(accel_dataset_t *ds, int64_t *documents)
{
    *documents = 0;
    if (!ds || !ds->info.has_document_starts) return ACCEL_ERR_INVALID;
    return count_token_flags(ds, ds->docs, "document_start", documents);
}

accel_status_t accel_dataset_read(accel_dataset_t *ds, const int64_t *indices, int n,
                                  int32_t *tokens, float *inputs, int32_t *labels)
{
    if (!ds || n < 0 || (n > 0 && !indices)) return ACCEL_ERR_INVALID;
    if (n == 0) return ACCEL_OK;
    const accel_dataset_info_t *in = &ds->info;
    ACCEL_CHECK(check_indices(ds, indices, n));
    if (in->kind == ACCEL_DATASET_TOKENS) {
        if (!tokens) return ACCEL_ERR_INVALID;
        return read_tokens(ds, indices, n, tokens);
    }
    if (!inputs || !labels) return ACCEL_ERR_INVALID;
    return read_classification(ds, indices, n, inputs, labels);
}

/* ------------------------------------------------------------------ write */

/* The attribute writers (src/h5) log their own failures; here they join the herr_t chain. */
static herr_t attr_ok(accel_status_t st) { return st == ACCEL_OK ? 0 : -1; }

/* A contiguous dataset /group/name of rank 1 or 2 holding `data`. */
static herr_t write_array(hid_t file, const char *path, int rank, const hsize_t *dims, hid_t filetype,
                          hid_t memtype, const void *data)
{
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dset = H5Dcreate2(file, path, filetype, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = dset < 0 ? -1 : 0;
    hsize_t n = 1;
    for (int i = 0; i < rank; i++) n *= dims[i];
    if (e >= 0 && n > 0) e = H5Dwrite(dset, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (dset >= 0) H5Dclose(dset);
    H5Pclose(lcpl);
    H5Sclose(space);
    return e;
}

typedef struct {
    char tmp[4096];
    hid_t file;
} writer_t;

static accel_status_t writer_begin(writer_t *w, const char *path)
{
    w->file = -1;
    if ((size_t)snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid()) >= sizeof w->tmp)
        return ACCEL_ERR_INVALID;
    H5E_BEGIN_TRY { w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT); } H5E_END_TRY;
    if (w->file < 0) {
        int err = errno;
        ACCEL_ERROR("cannot create '%s': %s\n--> hint: check that the directory exists and is "
                    "writable", w->tmp, err ? strerror(err) : "HDF5 error");
        return ACCEL_ERR_IO;
    }
    return ACCEL_OK;
}

/* Close and publish atomically (src/h5: fsync, rename, fsync of the directory); or remove the
 * temporary file when st is an error. */
static accel_status_t writer_end(writer_t *w, const char *path, accel_status_t st)
{
    if (w->file >= 0 && H5Fclose(w->file) < 0 && st == ACCEL_OK) {
        ACCEL_ERROR("closing '%s' failed (disk full?)", w->tmp);
        st = ACCEL_ERR_HDF5;
    }
    w->file = -1;
    if (st != ACCEL_OK) {
        unlink(w->tmp);
        return st;
    }
    return accel_h5_publish(w->tmp, path);
}

int accel_dataset_token_bytes(int vocab)
{
    return vocab <= 256 ? 1 : vocab <= 65536 ? 2 : 4;
}

accel_status_t accel_dataset_write_tokens(const char *path, const char *tokenizer, int vocab,
                                          const void *stream, int token_bytes, int64_t ntrain,
                                          int64_t nval, const char *description)
{
    accel_token_meta_t meta = { .tokenizer = tokenizer, .vocab = vocab, .description = description };
    return accel_dataset_write_tokens_meta(path, &meta, stream, token_bytes, ntrain, nval);
}

typedef struct {
    const char *stream;
    int width;
} memory_source_t;

static const void *memory_source(void *ctx, int64_t first, int64_t count)
{
    (void)count;
    const memory_source_t *m = ctx;
    return m->stream + (size_t)first * (size_t)m->width;
}

accel_status_t accel_dataset_write_tokens_meta(const char *path, const accel_token_meta_t *meta,
                                               const void *stream, int token_bytes, int64_t ntrain,
                                               int64_t nval)
{
    if (!stream && ntrain + nval > 0) {
        ACCEL_ERROR("accel_dataset_write_tokens: no stream for %lld + %lld tokens", (long long)ntrain,
                    (long long)nval);
        return ACCEL_ERR_INVALID;
    }
    memory_source_t m = { stream, token_bytes };
    return accel_dataset_write_tokens_from(path, meta, memory_source, &m, INT64_MAX, token_bytes, ntrain,
                                           nval);
}

/* n tokens of the stream from `first` on into a new 1-D dataset, `block` at a time; a source that
 * fails (it said why) sets *source_failed. */
static herr_t write_token_array(hid_t file, const char *name, hsize_t n, hid_t filetype, hid_t memtype,
                                hid_t dcpl, accel_token_source_fn source, void *ctx, int64_t first,
                                int64_t block, bool *source_failed)
{
    hid_t space = H5Screate_simple(1, &n, NULL);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t dset = H5Dcreate2(file, name, filetype, space, lcpl, dcpl, H5P_DEFAULT);
    herr_t e = dset < 0 ? -1 : 0;
    for (hsize_t done = 0; e >= 0 && done < n;) {
        hsize_t count = n - done < (hsize_t)block ? n - done : (hsize_t)block;
        const void *data = source(ctx, first + (int64_t)done, (int64_t)count);
        if (!data) {
            *source_failed = true;
            e = -1;
            break;
        }
        hid_t mspace = H5Screate_simple(1, &count, NULL);
        e = mspace < 0 ? -1 : H5Sselect_hyperslab(space, H5S_SELECT_SET, &done, NULL, &count, NULL);
        if (e >= 0) e = H5Dwrite(dset, memtype, mspace, space, H5P_DEFAULT, data);
        if (mspace >= 0) H5Sclose(mspace);
        done += count;
    }
    if (dset >= 0) H5Dclose(dset);
    H5Pclose(lcpl);
    H5Sclose(space);
    return e;
}

/* Document starts as a byte stream: 1 at each offset of the ascending list, 0 elsewhere. */
typedef struct {
    const int64_t *starts;
    int64_t n, next;                /* next: the first start not yet passed */
    uint8_t *buf;
    int64_t cap;
} starts_source_t;

static const void *starts_source(void *ctx, int64_t first, int64_t count)
{
    starts_source_t *s = ctx;
    if (count > s->cap) {
        uint8_t *b = realloc(s->buf, (size_t)count);
        if (!b) {
            ACCEL_ERROR("accel_dataset_write_tokens: out of memory for document starts");
            return NULL;
        }
        s->buf = b;
        s->cap = count;
    }
    memset(s->buf, 0, (size_t)count);
    while (s->next < s->n && s->starts[s->next] < first) s->next++;     /* calls come in order */
    for (int64_t i = s->next; i < s->n && s->starts[i] < first + count; i++) s->buf[s->starts[i] - first] = 1;
    return s->buf;
}

/* Mostly zeros: chunks of 64 Ki flags compress about a hundredfold, and a sample's read inflates
 * one or two of them. */
#define DOCUMENT_START_CHUNK 65536

static hid_t document_start_dcpl(hsize_t n)
{
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk = n < DOCUMENT_START_CHUNK ? (n ? n : 1) : DOCUMENT_START_CHUNK;
    if (dcpl >= 0 && (H5Pset_chunk(dcpl, 1, &chunk) < 0 || H5Pset_deflate(dcpl, 1) < 0)) {
        H5Pclose(dcpl);
        dcpl = -1;
    }
    return dcpl;
}

static herr_t write_document_starts(hid_t file, const char *name, hsize_t n, starts_source_t *src,
                                    int64_t first, int64_t block, bool *source_failed)
{
    hid_t dcpl = document_start_dcpl(n);
    herr_t e = dcpl < 0 ? -1
                        : write_token_array(file, name, n, H5T_STD_U8LE, H5T_NATIVE_UINT8, dcpl,
                                            starts_source, src, first, block, source_failed);
    if (dcpl >= 0) H5Pclose(dcpl);
    return e;
}

accel_status_t accel_dataset_write_tokens_from(const char *path, const accel_token_meta_t *meta,
                                               accel_token_source_fn source, void *ctx, int64_t block,
                                               int token_bytes, int64_t ntrain, int64_t nval)
{
    int vocab = meta ? meta->vocab : 0;
    if (!path || !meta || !meta->tokenizer || vocab <= 0 || ntrain < 0 || nval < 0 || !source ||
        block < 1 || (token_bytes != 1 && token_bytes != 2 && token_bytes != 4) ||
        (token_bytes < 4 && vocab > (token_bytes == 1 ? 256 : 65536)) ||
        (meta->tokenizer_json_len > 0 && !meta->tokenizer_json) ||
        (meta->chat_template_len > 0 && !meta->chat_template)) {
        ACCEL_ERROR("accel_dataset_write_tokens: bad arguments (vocab %d, %d-byte tokens, %lld + %lld "
                    "tokens)", vocab, token_bytes, (long long)ntrain, (long long)nval);
        return ACCEL_ERR_INVALID;
    }
    writer_t w;
    accel_status_t st = writer_begin(&w, path);
    if (st != ACCEL_OK) return st;
    hid_t ft = token_bytes == 1 ? H5T_STD_U8LE : token_bytes == 2 ? H5T_STD_U16LE : H5T_STD_U32LE;
    hid_t mt = token_bytes == 1 ? H5T_NATIVE_UINT8 : token_bytes == 2 ? H5T_NATIVE_UINT16 : H5T_NATIVE_UINT32;
    herr_t e = attr_ok(accel_h5_attr_write_str(w.file, "format", ACCEL_DATASET_FORMAT_TOKENS));
    if (e >= 0) e = attr_ok(accel_h5_attr_write_i32(w.file, "version", meta->loss_mask ? ACCEL_DATASET_VERSION
                                                                              : ACCEL_DATASET_VERSION_PLAIN));
    if (e >= 0) e = attr_ok(accel_h5_attr_write_i32(w.file, "vocab", vocab));
    if (e >= 0) e = attr_ok(accel_h5_attr_write_str(w.file, "tokenizer", meta->tokenizer));
    if (e >= 0) e = attr_ok(accel_h5_attr_write_str(w.file, "tokenizer_hash",
                                                    meta->tokenizer_hash ? meta->tokenizer_hash : ""));
    if (e >= 0 && meta->description)
        e = attr_ok(accel_h5_attr_write_str(w.file, "description", meta->description));
    bool source_failed = false;
    if (e >= 0)
        e = write_token_array(w.file, "/train/tokens", (hsize_t)ntrain, ft, mt, H5P_DEFAULT, source, ctx, 0,
                              block, &source_failed);
    if (e >= 0)
        e = write_token_array(w.file, "/val/tokens", (hsize_t)nval, ft, mt, H5P_DEFAULT, source, ctx, ntrain,
                              block, &source_failed);
    if (e >= 0 && meta->loss_mask)
        e = write_token_array(w.file, "/train/loss_mask", (hsize_t)ntrain, H5T_STD_U8LE, H5T_NATIVE_UINT8,
                              H5P_DEFAULT, meta->loss_mask, meta->loss_mask_ctx, 0, block, &source_failed);
    if (e >= 0 && meta->loss_mask)
        e = write_token_array(w.file, "/val/loss_mask", (hsize_t)nval, H5T_STD_U8LE, H5T_NATIVE_UINT8,
                              H5P_DEFAULT, meta->loss_mask, meta->loss_mask_ctx, ntrain, block, &source_failed);
    starts_source_t starts = { meta->document_starts, meta->ndocuments, 0, NULL, 0 };
    if (e >= 0 && meta->document_starts)
        e = write_document_starts(w.file, "/train/document_start", (hsize_t)ntrain, &starts, 0, block,
                                  &source_failed);
    if (e >= 0 && meta->document_starts)
        e = write_document_starts(w.file, "/val/document_start", (hsize_t)nval, &starts, ntrain, block,
                                  &source_failed);
    free(starts.buf);
    if (e >= 0 && meta->tokenizer_json)
        e = attr_ok(accel_h5_write_bytes(w.file, "/tokenizer.json", meta->tokenizer_json,
                                         meta->tokenizer_json_len));
    /* Only with conversations: every other file stays as it was. */
    if (e >= 0 && meta->chat_template)
        e = attr_ok(accel_h5_write_bytes(w.file, "/chat_template", meta->chat_template,
                                         meta->chat_template_len));
    if (source_failed) {
        st = ACCEL_ERR_IO;
    } else if (e < 0) {
        ACCEL_ERROR("writing token dataset '%s' failed (disk full?)", w.tmp);
        st = ACCEL_ERR_HDF5;
    }
    return writer_end(&w, path, st);
}

accel_status_t accel_dataset_write_classification(const char *path, int classes, int features,
                                                  const float *train_inputs,
                                                  const int32_t *train_labels, int64_t ntrain,
                                                  const float *val_inputs,
                                                  const int32_t *val_labels, int64_t nval,
                                                  const char *description)
{
    if (!path || classes <= 0 || features <= 0 || ntrain < 0 || nval < 0 ||
        (ntrain > 0 && (!train_inputs || !train_labels)) || (nval > 0 && (!val_inputs || !val_labels))) {
        ACCEL_ERROR("accel_dataset_write_classification: bad arguments (%d classes, %d features, "
                    "%lld + %lld samples)", classes, features, (long long)ntrain, (long long)nval);
        return ACCEL_ERR_INVALID;
    }
    writer_t w;
    accel_status_t st = writer_begin(&w, path);
    if (st != ACCEL_OK) return st;
    hsize_t xtrain[2] = { (hsize_t)ntrain, (hsize_t)features }, xval[2] = { (hsize_t)nval, (hsize_t)features };
    hsize_t ytrain = (hsize_t)ntrain, yval = (hsize_t)nval;
    herr_t e = attr_ok(accel_h5_attr_write_str(w.file, "format", ACCEL_DATASET_FORMAT_CLASSIFICATION));
    if (e >= 0) e = attr_ok(accel_h5_attr_write_i32(w.file, "version", ACCEL_DATASET_VERSION_PLAIN));
    if (e >= 0) e = attr_ok(accel_h5_attr_write_i32(w.file, "classes", classes));
    if (e >= 0 && description) e = attr_ok(accel_h5_attr_write_str(w.file, "description", description));
    if (e >= 0) e = write_array(w.file, "/train/inputs", 2, xtrain, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, train_inputs);
    if (e >= 0) e = write_array(w.file, "/train/labels", 1, &ytrain, H5T_STD_I32LE, H5T_NATIVE_INT32, train_labels);
    if (e >= 0) e = write_array(w.file, "/val/inputs", 2, xval, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, val_inputs);
    if (e >= 0) e = write_array(w.file, "/val/labels", 1, &yval, H5T_STD_I32LE, H5T_NATIVE_INT32, val_labels);
    if (e < 0) {
        ACCEL_ERROR("writing classification dataset '%s' failed (disk full?)", w.tmp);
        st = ACCEL_ERR_HDF5;
    }
    return writer_end(&w, path, st);
}

bool accel_dataset_format_known(const char *format)
{
    return !strcmp(format, ACCEL_DATASET_FORMAT_TOKENS) ||
           !strcmp(format, ACCEL_DATASET_FORMAT_CLASSIFICATION);
}

accel_status_t accel_dataset_file_kind(const char *path, bool *is_hdf5, char *format, size_t flen,
                                       char *description, size_t dlen)
{
    *is_hdf5 = false;
    if (flen) format[0] = '\0';
    if (description && dlen) description[0] = '\0';
    struct stat sb;
    if (stat(path, &sb) != 0) return ACCEL_ERR_NOT_FOUND;
    if (!accel_h5_probe(path, (long long)sb.st_size)) return ACCEL_OK;
    *is_hdf5 = true;
    hid_t f;
    if (accel_h5_open_read(path, &f, NULL, 0) != ACCEL_OK) return ACCEL_OK;  /* HDF5, but unreadable */
    if (accel_h5_attr_read_str(f, "format", format, flen) != ACCEL_OK && flen) format[0] = '\0';
    if (description && dlen && accel_h5_attr_read_str(f, "description", description, dlen) != ACCEL_OK)
        description[0] = '\0';
    H5Fclose(f);
    return ACCEL_OK;
}

/* A file a token dataset keeps as a 1-D uint8 dataset at the root (`name`: "/tokenizer.json",
 * "/chat_template"; `what` names it in messages). */
static accel_status_t read_kept(const char *path, const char *name, const char *what, size_t max,
                                char **data, size_t *len)
{
    if (!path || !data || !len) return ACCEL_ERR_INVALID;
    *data = NULL;
    *len = 0;
    hid_t f = -1;
    char h5err[256] = "";
    accel_status_t st = accel_h5_open_read(path, &f, h5err, sizeof h5err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR("%s: cannot open the dataset to read its %s: %s\n--> hint: check the path "
                    "(data.path) and the file with: accel_data info %s", path, what, h5err, path);
        return st;
    }
    char format[64] = "";
    if (accel_h5_attr_read_str(f, "format", format, sizeof format) != ACCEL_OK ||
        strcmp(format, ACCEL_DATASET_FORMAT_TOKENS)) {
        ACCEL_ERROR("%s: not an accel token dataset (format '%s'), so it keeps no %s\n--> "
                    "hint: make token datasets with accel_data prepare or accel_data import", path,
                    format, what);
        st = ACCEL_ERR_CORRUPT;
        goto cleanup;
    }
    st = accel_h5_read_bytes(f, name, max, data, len);
    if (st != ACCEL_OK && st != ACCEL_ERR_NOT_FOUND) {  /* NOT_FOUND: none kept */
        ACCEL_ERROR("%s: dataset %s cannot be read as a 1-D byte array of at most %zu "
                    "bytes (%s)\n--> hint: the file is damaged; make it again with accel_data", path,
                    name, max, accel_status_str(st));
        st = ACCEL_ERR_CORRUPT;
    }
cleanup:
    H5Fclose(f);
    return st;
}

accel_status_t accel_dataset_tokenizer_json(const char *path, char **json, size_t *len)
{
    /* NOT_FOUND: "bytes", or an import without --tokenizer */
    return read_kept(path, "/tokenizer.json", "tokenizer", DATASET_TOKENIZER_MAX, json, len);
}

accel_status_t accel_dataset_chat_template(const char *path, char **text, size_t *len)
{
    return read_kept(path, "/chat_template", "chat template", DATASET_CHAT_TEMPLATE_MAX, text, len);
}

accel_status_t accel_dataset_tokenizer(const char *path, accel_tokenizer_t **out, char *err,
                                       size_t errlen)
{
    char name[ACCEL_TOKENIZER_NAME_MAX] = "";
    hid_t f = -1;
    accel_status_t st = accel_h5_open_read(path, &f, err, errlen);
    if (st != ACCEL_OK) return st;
    if (accel_h5_attr_read_str(f, "tokenizer", name, sizeof name) != ACCEL_OK) name[0] = '\0';
    H5Fclose(f);
    if (!strcmp(name, ACCEL_TOKENIZER_BYTES)) return accel_tokenizer_bytes(out);
    char *json = NULL;
    size_t len = 0;
    st = accel_dataset_tokenizer_json(path, &json, &len);
    if (st == ACCEL_ERR_NOT_FOUND)
        snprintf(err, errlen, "%s records tokenizer '%s' without its tokenizer.json\n--> hint: make "
                 "the dataset with --tokenizer tokenizer.json (accel_data prepare or import)", path,
                 name[0] ? name : "unknown");
    else if (st != ACCEL_OK)
        snprintf(err, errlen, "%s: cannot read its tokenizer.json: %s", path, accel_status_str(st));
    else
        st = accel_tokenizer_open_recorded(name, json, len, out, err, errlen);
    free(json);
    return st;
}

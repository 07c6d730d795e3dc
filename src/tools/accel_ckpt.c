/* accel_ckpt: inspect, verify, compare and export accel checkpoints (plain HDF5 files).
 *   accel_ckpt ls FILE | info FILE | verify FILE | diff A B | export FILE --format ...
 * Runs as one process without MPI (the serial HDF5 driver); every command streams tensors in
 * chunks, so memory stays far below the model size. */
#include "config.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"

#define CHUNK_ELEMS (1u << 20)     /* elements per streamed read: 4 MiB of fp32 */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: accel_ckpt <command> [options]\n"
            "\n"
            "Inspect accel checkpoints (one HDF5 file per save; h5ls/h5dump/h5py read them too).\n"
            "\n"
            "commands:\n"
            "  ls FILE [-a]             tensors: shape, dtype, bytes, file offset (-a: also checksum\n"
            "                           tables and metadata)\n"
            "  info FILE                metadata: step, tokens, data position, world size, strategy,\n"
            "                           precision, RNG, schedule, loss scale, and the configuration\n"
            "  verify FILE [-v]         every tensor against its checksums, and completeness; exit\n"
            "                           status non-zero on any problem, naming tensor and block\n"
            "  diff A B [--atol X]      per tensor max |a-b| and max relative difference; exit 0 when\n"
            "                           all differences are <= X (default 0), 1 otherwise, 2 on errors\n"
            "  export FILE --format safetensors|hdf5 [--dtype fp32|bf16] [--output OUT] [--group G]\n"
            "                           the consolidated model weights (group G, default 'model') as one\n"
            "                           safetensors or plain HDF5 file (default OUT: FILE with the\n"
            "                           extension .safetensors or .model.h5)\n"
            "  latest DIR               the newest complete checkpoint in DIR\n"
            "\n"
            "options:\n"
            "  -h, --help               this help\n"
            "  -V, --version            print the version\n");
}

/* ------------------------------------------------------------------ helpers */

typedef struct {
    char **v;
    int n, cap;
} strlist_t;

static int strlist_add(strlist_t *l, const char *s)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->v, sizeof *p * (size_t)cap);
        if (!p) return -1;
        l->v = p;
        l->cap = cap;
    }
    return (l->v[l->n++] = strdup(s)) ? 0 : -1;
}

static void strlist_free(strlist_t *l)
{
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static herr_t visit_dsets(hid_t obj, const char *name, const H5O_info_t *info, void *data)
{
    (void)obj;
    if (info->type == H5O_TYPE_DATASET && strcmp(name, ".")) return strlist_add(data, name) ? -1 : 0;
    return 0;
}

/* Datasets under group (relative names, sorted). */
static int list_dsets(hid_t file, const char *group, strlist_t *out)
{
    if (H5Lexists(file, group, H5P_DEFAULT) <= 0) return -1;
    hid_t g = H5Gopen2(file, group, H5P_DEFAULT);
    if (g < 0) return -1;
    herr_t rc = H5Ovisit(g, H5_INDEX_NAME, H5_ITER_INC, visit_dsets, out);
    H5Gclose(g);
    if (out->n) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
    return rc < 0 ? -1 : 0;
}

static bool group_exists(hid_t file, const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++)
        if (*p == '/' || !*p) {
            char c = *p;
            *p = '\0';
            if (H5Lexists(file, buf, H5P_DEFAULT) <= 0) return false;
            if (!c) return true;
            *p = c;
        }
}

static hid_t open_file(const char *path)
{
    if (access(path, R_OK)) {
        fprintf(stderr, "accel_ckpt: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        fprintf(stderr, "accel_ckpt: %s is not an HDF5 file\n", path);
        return -1;
    }
    /* No HDF5 file lock: flock is refused on some parallel file systems. */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_file_locking(fapl, false, true);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (f < 0) fprintf(stderr, "accel_ckpt: cannot open %s (truncated or damaged?)\n", path);
    return f;
}

/* The state groups of a checkpoint, from its 'arenas' attribute. */
static int arenas_of(hid_t file, strlist_t *out)
{
    char buf[4096] = "";
    if (H5Aexists(file, "arenas") > 0) {
        hid_t a = H5Aopen(file, "arenas", H5P_DEFAULT), t = H5Aget_type(a);
        size_t n = H5Tget_size(t);
        if (n < sizeof buf) H5Aread(a, t, buf);
        H5Tclose(t);
        H5Aclose(a);
    }
    for (char *s = NULL, *p = strtok_r(buf, ";", &s); p; p = strtok_r(NULL, ";", &s)) strlist_add(out, p);
    if (!out->n && H5Lexists(file, "model", H5P_DEFAULT) > 0) strlist_add(out, "model");
    return out->n ? 0 : -1;
}

typedef struct {
    hid_t dset, space;
    int ndim;
    hsize_t dims[H5S_MAX_RANK];
    int64_t shape[ACCEL_TENSOR_MAX_DIMS];
    uint64_t numel;
    bool fp32;
} tensor_t;

static int tensor_open(hid_t file, const char *path, tensor_t *t)
{
    memset(t, 0, sizeof *t);
    t->dset = H5Dopen2(file, path, H5P_DEFAULT);
    t->space = t->dset >= 0 ? H5Dget_space(t->dset) : -1;
    if (t->space < 0) return -1;
    t->ndim = H5Sget_simple_extent_ndims(t->space);
    H5Sget_simple_extent_dims(t->space, t->dims, NULL);
    t->numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        t->numel *= t->dims[d];
        if (d < ACCEL_TENSOR_MAX_DIMS) t->shape[d] = (int64_t)t->dims[d];
    }
    hid_t ty = H5Dget_type(t->dset);
    t->fp32 = H5Tget_class(ty) == H5T_FLOAT && H5Tget_size(ty) == 4;
    H5Tclose(ty);
    return 0;
}

static void tensor_close(tensor_t *t)
{
    if (t->space >= 0) H5Sclose(t->space);
    if (t->dset >= 0) H5Dclose(t->dset);
}

/* Read flat elements [b, e) of a tensor (any rank 1..4) as fp32. */
static int tensor_read(tensor_t *t, uint64_t b, uint64_t e, float *buf)
{
    if (t->ndim < 1 || t->ndim > ACCEL_TENSOR_MAX_DIMS) return -1;
    accel_ckpt_box_t boxes[ACCEL_CKPT_MAX_BOXES];
    int n = accel_ckpt_decompose(t->ndim, t->shape, b, e, boxes);
    for (int i = 0; i < n; i++) {
        hsize_t start[ACCEL_TENSOR_MAX_DIMS], count[ACCEL_TENSOR_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) { start[d] = boxes[i].start[d]; count[d] = boxes[i].count[d]; }
        if (H5Sselect_hyperslab(t->space, i ? H5S_SELECT_OR : H5S_SELECT_SET, start, NULL, count, NULL) < 0)
            return -1;
    }
    hsize_t cnt = e - b;
    hid_t ms = H5Screate_simple(1, &cnt, NULL);
    herr_t rc = H5Dread(t->dset, H5T_NATIVE_FLOAT, ms, t->space, H5P_DEFAULT, buf);
    H5Sclose(ms);
    return rc < 0 ? -1 : 0;
}

static void print_shape(FILE *out, int ndim, const hsize_t *dims)
{
    fputc('[', out);
    for (int d = 0; d < ndim; d++) fprintf(out, "%s%llu", d ? ", " : "", (unsigned long long)dims[d]);
    fputc(']', out);
}

static const char *type_name(hid_t dset)
{
    hid_t t = H5Dget_type(dset);
    H5T_class_t c = H5Tget_class(t);
    size_t n = H5Tget_size(t);
    bool sign = c == H5T_INTEGER && H5Tget_sign(t) == H5T_SGN_2;
    H5Tclose(t);
    if (c == H5T_FLOAT) return n == 4 ? "fp32" : n == 8 ? "fp64" : n == 2 ? "bf16" : "float";
    if (c == H5T_INTEGER) return n == 8 ? (sign ? "int64" : "uint64") : n == 4 ? (sign ? "int32" : "uint32") : "integer";
    if (c == H5T_STRING) return "string";
    return "other";
}

/* ------------------------------------------------------------------ ls */

static int ls_group(hid_t file, const char *group, bool *any, unsigned long long *total, int *count)
{
    strlist_t names = { 0 };
    if (list_dsets(file, group, &names) < 0) {
        strlist_free(&names);
        return -1;
    }
    for (int i = 0; i < names.n; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", group, names.v[i]);
        hid_t d = H5Dopen2(file, path, H5P_DEFAULT);
        if (d < 0) continue;
        hid_t s = H5Dget_space(d);
        hsize_t dims[H5S_MAX_RANK];
        int nd = H5Sget_simple_extent_ndims(s);
        H5Sget_simple_extent_dims(s, dims, NULL);
        hsize_t bytes = H5Dget_storage_size(d);
        haddr_t off = H5Dget_offset(d);
        char shape[128];
        FILE *ms = fmemopen(shape, sizeof shape, "w");
        if (nd == 0) fprintf(ms, "scalar");
        else print_shape(ms, nd, dims);
        fclose(ms);
        char offs[32] = "-";
        if (off != HADDR_UNDEF) snprintf(offs, sizeof offs, "%llu", (unsigned long long)off);
        printf("%-48s %-22s %-6s %14llu %14s\n", path + 1, shape, type_name(d), (unsigned long long)bytes, offs);
        *total += bytes;
        (*count)++;
        *any = true;
        H5Sclose(s);
        H5Dclose(d);
    }
    strlist_free(&names);
    return 0;
}

static int cmd_ls(int argc, char **argv)
{
    const char *path = NULL;
    bool all = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-a") || !strcmp(argv[i], "--all")) all = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt ls FILE [-a]\n  One line per tensor: name, shape, dtype, bytes, file "
                   "offset of the data\n  (for dd/hexdump). -a adds the checksum tables and metadata.\n");
            return 0;
        } else if (!path) path = argv[i];
        else { fprintf(stderr, "accel_ckpt ls: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!path) { fprintf(stderr, "usage: accel_ckpt ls FILE [-a]\n"); return 2; }
    hid_t f = open_file(path);
    if (f < 0) return 2;
    strlist_t arenas = { 0 };
    if (arenas_of(f, &arenas) < 0) {
        fprintf(stderr, "accel_ckpt: %s holds no checkpoint state (no 'arenas' attribute, no /model)\n", path);
        H5Fclose(f);
        return 2;
    }
    printf("%-48s %-22s %-6s %14s %14s\n", "# tensor", "shape", "dtype", "bytes", "offset");
    unsigned long long total = 0;
    int count = 0, rc = 0;
    bool any = false;
    for (int i = 0; i < arenas.n; i++) {
        char g[600];
        snprintf(g, sizeof g, "/%s", arenas.v[i]);
        if (ls_group(f, g, &any, &total, &count) < 0) {
            fprintf(stderr, "accel_ckpt: %s: state '%s' is missing\n", path, arenas.v[i]);
            rc = 1;
        }
    }
    printf("# %d tensors, %llu bytes (%.3f GB) of state\n", count, total, total / 1e9);
    if (all) {
        unsigned long long extra = 0;
        int n2 = 0;
        ls_group(f, "/checksums", &any, &extra, &n2);
        ls_group(f, "/meta", &any, &extra, &n2);
        printf("# %d checksum/metadata datasets, %llu bytes\n", n2, extra);
    }
    strlist_free(&arenas);
    H5Fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ info */

static int cmd_info(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("usage: accel_ckpt info FILE\n  The checkpoint's metadata and stored configuration.\n");
        return argc == 2 ? 0 : 2;
    }
    const char *path = argv[1];
    accel_ckpt_meta_t m;
    accel_status_t st = accel_ckpt_read_meta(path, &m);
    if (st != ACCEL_OK) return accel_status_exit_code(st);
    hid_t f = open_file(path);
    strlist_t arenas = { 0 };
    if (f >= 0) arenas_of(f, &arenas);
    int64_t complete = 0;
    if (f >= 0 && H5Aexists(f, "complete") > 0) {
        hid_t a = H5Aopen(f, "complete", H5P_DEFAULT);
        H5Aread(a, H5T_NATIVE_INT64, &complete);
        H5Aclose(a);
    }
    printf("file:            %s\n", path);
    printf("format:          %s version %d%s\n", ACCEL_CKPT_FORMAT_NAME, m.format_version,
           complete == 1 ? "" : " (INCOMPLETE: the save did not finish)");
    printf("written by:      accel %s, %d rank%s, %s\n", m.accel_version, m.world_size,
           m.world_size == 1 ? "" : "s", m.created);
    printf("strategy:        %s\n", m.strategy[0] ? m.strategy : "-");
    printf("precision:       %s\n", m.precision[0] ? m.precision : "-");
    printf("step:            %lld\n", (long long)m.step);
    printf("tokens seen:     %lld\n", (long long)m.tokens);
    printf("data position:   epoch %lld, offset %lld\n", (long long)m.epoch, (long long)m.data_offset);
    printf("rng:             seed %llu, counter %llu\n", (unsigned long long)m.rng_seed,
           (unsigned long long)m.rng_counter);
    printf("lr schedule:     step %lld, lr %.6g\n", (long long)m.sched_step, m.lr);
    printf("loss scale:      %.6g (good steps %lld, skipped steps %lld)\n", m.loss_scale,
           (long long)m.loss_scale_good_steps, (long long)m.skipped_steps);
    printf("state:          ");
    for (int i = 0; i < arenas.n; i++) {
        strlist_t t = { 0 };
        char g[600];
        snprintf(g, sizeof g, "/%s", arenas.v[i]);
        list_dsets(f, g, &t);
        printf(" %s (%d tensors)%s", arenas.v[i], t.n, i + 1 < arenas.n ? "," : "");
        strlist_free(&t);
    }
    printf("\n");
    for (int i = 0; i < m.nextra; i++) printf("extra:           %s = %s\n", m.extra[i].key, m.extra[i].value);
    printf("configuration:\n");
    if (m.config_yaml && m.config_yaml[0]) {
        for (const char *p = m.config_yaml; *p;) {
            const char *nl = strchr(p, '\n');
            int n = nl ? (int)(nl - p) : (int)strlen(p);
            printf("  %.*s\n", n, p);
            p += n + (nl ? 1 : 0);
        }
    } else {
        printf("  (none stored)\n");
    }
    strlist_free(&arenas);
    if (f >= 0) H5Fclose(f);
    accel_ckpt_meta_free(&m);
    return 0;
}

/* ------------------------------------------------------------------ verify */

static int cmd_verify(int argc, char **argv)
{
    const char *path = NULL;
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) verbose = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt verify FILE [-v]\n  Reads every tensor and checks each block of %d "
                   "elements against the stored\n  xxh3 checksums; checks the format, version and that "
                   "the save completed.\n  Exit 0 when sound, non-zero otherwise (BAD lines name tensor "
                   "and block).\n  -v prints one line per good tensor too.\n", ACCEL_CKPT_BLOCK_ELEMS);
            return 0;
        } else if (!path) path = argv[i];
        else { fprintf(stderr, "accel_ckpt verify: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!path) { fprintf(stderr, "usage: accel_ckpt verify FILE [-v]\n"); return 2; }
    int problems = 0;
    accel_status_t st = accel_ckpt_verify(path, stdout, verbose, &problems);
    return accel_status_exit_code(st);
}

/* ------------------------------------------------------------------ diff */

static int cmd_diff(int argc, char **argv)
{
    const char *pa = NULL, *pb = NULL;
    double atol = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--atol") && i + 1 < argc) atol = atof(argv[++i]);
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt diff A B [--atol X]\n  For every tensor of every state: max |a-b| and "
                   "max |a-b|/max(|a|,|b|).\n  Exit 0 when every difference is <= X (default 0: "
                   "identical), 1 when not\n  (or tensors/shapes differ), 2 on errors.\n");
            return 0;
        } else if (!pa) pa = argv[i];
        else if (!pb) pb = argv[i];
        else { fprintf(stderr, "accel_ckpt diff: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!pa || !pb) { fprintf(stderr, "usage: accel_ckpt diff A B [--atol X]\n"); return 2; }
    hid_t fa = open_file(pa), fb = fa >= 0 ? open_file(pb) : -1;
    if (fa < 0 || fb < 0) {
        if (fa >= 0) H5Fclose(fa);
        return 2;
    }
    strlist_t arenas = { 0 }, arenas_b = { 0 };
    arenas_of(fa, &arenas);
    arenas_of(fb, &arenas_b);
    float *x = malloc(sizeof(float) * CHUNK_ELEMS), *y = malloc(sizeof(float) * CHUNK_ELEMS);
    int rc = 0, ndiff = 0, ntensors = 0;
    double worst_abs = 0, worst_rel = 0;
    if (!x || !y) { fprintf(stderr, "accel_ckpt: out of memory\n"); rc = 2; goto out; }
    for (int i = 0; i < arenas_b.n; i++) {
        bool found = false;
        for (int j = 0; j < arenas.n; j++) found |= !strcmp(arenas.v[j], arenas_b.v[i]);
        if (!found) { printf("only in B: state %s\n", arenas_b.v[i]); ndiff++; }
    }
    printf("%-48s %14s %14s\n", "# tensor", "max_abs", "max_rel");
    for (int i = 0; i < arenas.n && rc != 2; i++) {
        char g[600];
        snprintf(g, sizeof g, "/%s", arenas.v[i]);
        strlist_t na = { 0 }, nb = { 0 };
        list_dsets(fa, g, &na);
        if (group_exists(fb, g)) list_dsets(fb, g, &nb);
        else { printf("only in A: state %s\n", arenas.v[i]); ndiff++; }
        for (int k = 0; k < nb.n; k++)
            if (!bsearch(&nb.v[k], na.v, (size_t)na.n, sizeof *na.v, cmp_str)) {
                printf("only in B: %s/%s\n", arenas.v[i], nb.v[k]);
                ndiff++;
            }
        for (int k = 0; k < na.n && nb.n; k++) {
            char path[1200];
            snprintf(path, sizeof path, "%s/%s", g, na.v[k]);
            if (!bsearch(&na.v[k], nb.v, (size_t)nb.n, sizeof *nb.v, cmp_str)) {
                printf("only in A: %s\n", path + 1);
                ndiff++;
                continue;
            }
            tensor_t ta, tb;
            int oa = tensor_open(fa, path, &ta), ob = tensor_open(fb, path, &tb);
            bool same_shape = !oa && !ob && ta.ndim == tb.ndim;
            for (int d = 0; same_shape && d < ta.ndim; d++) same_shape = ta.dims[d] == tb.dims[d];
            if (oa || ob || !ta.fp32 || !tb.fp32 || ta.ndim > ACCEL_TENSOR_MAX_DIMS) {
                printf("%-48s cannot be compared (not an fp32 tensor of 1..4 dims)\n", path + 1);
                ndiff++;
            } else if (!same_shape) {
                printf("%-48s shapes differ: ", path + 1);
                print_shape(stdout, ta.ndim, ta.dims);
                printf(" vs ");
                print_shape(stdout, tb.ndim, tb.dims);
                printf("\n");
                ndiff++;
            } else {
                double mabs = 0, mrel = 0;
                bool nan_mismatch = false;
                for (uint64_t b = 0; b < ta.numel; b += CHUNK_ELEMS) {
                    uint64_t e = b + CHUNK_ELEMS < ta.numel ? b + CHUNK_ELEMS : ta.numel;
                    if (tensor_read(&ta, b, e, x) < 0 || tensor_read(&tb, b, e, y) < 0) {
                        fprintf(stderr, "accel_ckpt: cannot read %s (damaged file?)\n", path + 1);
                        rc = 2;
                        break;
                    }
                    for (uint64_t q = 0; q < e - b; q++) {
                        double u = x[q], v = y[q];
                        if (isnan(u) || isnan(v)) {
                            if (isnan(u) != isnan(v)) nan_mismatch = true;
                            continue;
                        }
                        double dd = fabs(u - v), den = fmax(fabs(u), fabs(v));
                        if (dd > mabs) mabs = dd;
                        if (den > 0 && dd / den > mrel) mrel = dd / den;
                    }
                }
                ntensors++;
                if (nan_mismatch) mabs = mrel = INFINITY;
                printf("%-48s %14.6g %14.6g%s\n", path + 1, mabs, mrel, nan_mismatch ? "  (NaN in one only)" : "");
                if (mabs > worst_abs) worst_abs = mabs;
                if (mrel > worst_rel) worst_rel = mrel;
                if (mabs > atol) ndiff++;
            }
            if (!oa) tensor_close(&ta);
            if (!ob) tensor_close(&tb);
        }
        strlist_free(&na);
        strlist_free(&nb);
    }
    if (rc != 2) {
        printf("# %d tensors compared, max_abs %.6g, max_rel %.6g: %s\n", ntensors, worst_abs, worst_rel,
               ndiff ? "DIFFERENT" : "same");
        rc = ndiff ? 1 : 0;
    }
out:
    free(x);
    free(y);
    strlist_free(&arenas);
    strlist_free(&arenas_b);
    H5Fclose(fa);
    H5Fclose(fb);
    return rc;
}

/* ------------------------------------------------------------------ export */

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
        else if (c < 0x20) fprintf(out, "\\u%04x", c);
        else fputc(c, out);
    }
    fputc('"', out);
}

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

static int cmd_export(int argc, char **argv)
{
    const char *path = NULL, *format = NULL, *dtype = "fp32", *output = NULL, *group = "model";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--format") && i + 1 < argc) format = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = argv[++i];
        else if ((!strcmp(argv[i], "--output") || !strcmp(argv[i], "-o")) && i + 1 < argc) output = argv[++i];
        else if (!strcmp(argv[i], "--group") && i + 1 < argc) group = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: accel_ckpt export FILE --format safetensors|hdf5 [--dtype fp32|bf16]\n"
                   "                         [--output OUT] [--group G]\n"
                   "  Writes the consolidated tensors of group G (default 'model': the fp32\n"
                   "  weights) as one file for inference or other tools:\n"
                   "  safetensors: 8-byte little-endian header size, JSON header (dtype F32/BF16,\n"
                   "               shape, data_offsets), raw data; tensors sorted by name.\n"
                   "  hdf5:        one dataset per tensor at /<name>, fp32 or a bf16 float type.\n"
                   "  bf16 rounds to nearest even. Default OUT: FILE with .safetensors / .model.h5.\n");
            return 0;
        } else if (!path) path = argv[i];
        else { fprintf(stderr, "accel_ckpt export: unexpected argument '%s'\n", argv[i]); return 2; }
    }
    if (!path || !format) {
        fprintf(stderr, "usage: accel_ckpt export FILE --format safetensors|hdf5 [--dtype fp32|bf16] [--output OUT]\n");
        return 2;
    }
    bool st_fmt = !strcmp(format, "safetensors");
    if (!st_fmt && strcmp(format, "hdf5")) {
        fprintf(stderr, "accel_ckpt export: unknown format '%s'\n--> hint: use safetensors or hdf5\n", format);
        return 2;
    }
    int dt = accel_dtype_parse(dtype);
    if (dt != ACCEL_F32 && dt != ACCEL_BF16) {
        fprintf(stderr, "accel_ckpt export: unsupported dtype '%s'\n--> hint: use fp32 or bf16\n", dtype);
        return 2;
    }
    bool bf16 = dt == ACCEL_BF16;
    char outbuf[ACCEL_CKPT_PATH_MAX + 32], tmp[ACCEL_CKPT_PATH_MAX + 64];
    if (!output) {
        snprintf(outbuf, sizeof outbuf, "%s", path);
        char *dot = strrchr(outbuf, '.'), *slash = strrchr(outbuf, '/');
        if (dot && (!slash || dot > slash)) *dot = '\0';
        strcat(outbuf, st_fmt ? ".safetensors" : ".model.h5");
        output = outbuf;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", output);

    hid_t f = open_file(path);
    if (f < 0) return 2;
    int rc = 0;
    strlist_t names = { 0 };
    char g[600];
    snprintf(g, sizeof g, "/%s", group);
    tensor_t *ts = NULL;
    float *buf = malloc(sizeof(float) * CHUNK_ELEMS);
    uint16_t *half = malloc(sizeof(uint16_t) * CHUNK_ELEMS);
    FILE *out = NULL;
    hid_t of = -1, ftype = -1;
    if (!group_exists(f, g) || list_dsets(f, g, &names) < 0 || !names.n) {
        fprintf(stderr, "accel_ckpt export: %s has no tensors in group '%s'\n", path, group);
        rc = 2;
        goto out;
    }
    ts = calloc((size_t)names.n, sizeof *ts);
    if (!ts || !buf || !half) { fprintf(stderr, "accel_ckpt: out of memory\n"); rc = 2; goto out; }
    for (int i = 0; i < names.n; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", g, names.v[i]);
        if (tensor_open(f, p, &ts[i]) < 0 || !ts[i].fp32 || ts[i].ndim < 1 || ts[i].ndim > ACCEL_TENSOR_MAX_DIMS) {
            fprintf(stderr, "accel_ckpt export: %s is not an fp32 tensor of 1..4 dimensions\n", p);
            rc = 2;
            goto out;
        }
    }
    size_t esize = bf16 ? 2 : 4;
    if (st_fmt) {
        /* Header first (it needs only shapes), then the data streamed in the same order. */
        char *hdr = NULL;
        size_t hlen = 0;
        FILE *hs = open_memstream(&hdr, &hlen);
        accel_ckpt_meta_t m;
        bool have_meta = accel_ckpt_read_meta(path, &m) == ACCEL_OK;
        fprintf(hs, "{\"__metadata__\":{\"format\":\"pt\",\"source\":\"accel %s\"", accel_version());
        if (have_meta) fprintf(hs, ",\"step\":\"%lld\"", (long long)m.step);
        fprintf(hs, "}");
        uint64_t off = 0;
        for (int i = 0; i < names.n; i++) {
            fputc(',', hs);
            json_str(hs, names.v[i]);
            fprintf(hs, ":{\"dtype\":\"%s\",\"shape\":[", bf16 ? "BF16" : "F32");
            for (int d = 0; d < ts[i].ndim; d++) fprintf(hs, "%s%llu", d ? "," : "", (unsigned long long)ts[i].dims[d]);
            fprintf(hs, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                    (unsigned long long)(off + ts[i].numel * esize));
            off += ts[i].numel * esize;
        }
        fprintf(hs, "}");
        /* Pad with spaces so the data starts 8-byte aligned (as the safetensors writer does). */
        fflush(hs);
        while (hlen % 8) {
            fputc(' ', hs);
            fflush(hs);
        }
        fclose(hs);
        if (have_meta) accel_ckpt_meta_free(&m);
        out = fopen(tmp, "wb");
        uint8_t le[8];
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)((uint64_t)hlen >> (8 * k));
        if (!out || fwrite(le, 1, 8, out) != 8 || fwrite(hdr, 1, hlen, out) != hlen) rc = 1;
        free(hdr);
        for (int i = 0; i < names.n && !rc; i++)
            for (uint64_t b = 0; b < ts[i].numel && !rc; b += CHUNK_ELEMS) {
                uint64_t e = b + CHUNK_ELEMS < ts[i].numel ? b + CHUNK_ELEMS : ts[i].numel;
                if (tensor_read(&ts[i], b, e, buf) < 0) {
                    fprintf(stderr, "accel_ckpt export: cannot read %s/%s (damaged file?)\n", group, names.v[i]);
                    rc = 2;
                    break;
                }
                if (bf16) {
                    for (uint64_t q = 0; q < e - b; q++) half[q] = accel_f32_to_bf16(buf[q]);
                    if (fwrite(half, 2, e - b, out) != e - b) rc = 1;
                } else if (fwrite(buf, 4, e - b, out) != e - b) {
                    rc = 1;
                }
            }
        if (out && fclose(out)) rc = rc ? rc : 1;
        out = NULL;
    } else {
        hid_t ofapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_file_locking(ofapl, false, true);
        of = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, ofapl);
        H5Pclose(ofapl);
        ftype = bf16 ? bf16_type() : H5Tcopy(H5T_IEEE_F32LE);
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        if (of < 0 || ftype < 0) rc = 1;
        for (int i = 0; i < names.n && !rc; i++) {
            hid_t s = H5Screate_simple(ts[i].ndim, ts[i].dims, NULL);
            hid_t d = H5Dcreate2(of, names.v[i], ftype, s, lcpl, H5P_DEFAULT, H5P_DEFAULT);
            if (d < 0) rc = 1;
            tensor_t w = { .dset = d, .space = s, .ndim = ts[i].ndim, .numel = ts[i].numel };
            memcpy(w.shape, ts[i].shape, sizeof w.shape);
            for (uint64_t b = 0; b < ts[i].numel && !rc; b += CHUNK_ELEMS) {
                uint64_t e = b + CHUNK_ELEMS < ts[i].numel ? b + CHUNK_ELEMS : ts[i].numel;
                if (tensor_read(&ts[i], b, e, buf) < 0) {
                    fprintf(stderr, "accel_ckpt export: cannot read %s/%s (damaged file?)\n", group, names.v[i]);
                    rc = 2;
                    break;
                }
                accel_ckpt_box_t boxes[ACCEL_CKPT_MAX_BOXES];
                int nb = accel_ckpt_decompose(w.ndim, w.shape, b, e, boxes);
                for (int k = 0; k < nb; k++) {
                    hsize_t start[ACCEL_TENSOR_MAX_DIMS], count[ACCEL_TENSOR_MAX_DIMS];
                    for (int q = 0; q < w.ndim; q++) { start[q] = boxes[k].start[q]; count[q] = boxes[k].count[q]; }
                    H5Sselect_hyperslab(s, k ? H5S_SELECT_OR : H5S_SELECT_SET, start, NULL, count, NULL);
                }
                hsize_t cnt = e - b;
                hid_t ms = H5Screate_simple(1, &cnt, NULL);
                /* HDF5 converts fp32 -> bf16 by truncation; round to nearest even here instead. */
                if (bf16) {
                    for (uint64_t q = 0; q < e - b; q++) half[q] = accel_f32_to_bf16(buf[q]);
                    if (H5Dwrite(d, ftype, ms, s, H5P_DEFAULT, half) < 0) rc = 1;
                } else if (H5Dwrite(d, H5T_NATIVE_FLOAT, ms, s, H5P_DEFAULT, buf) < 0) {
                    rc = 1;
                }
                H5Sclose(ms);
            }
            if (d >= 0) {
                hid_t st = H5Tcopy(H5T_C_S1);
                H5Tset_size(st, 4);
                hid_t as = H5Screate(H5S_SCALAR);
                hid_t a = H5Acreate2(d, "dtype", st, as, H5P_DEFAULT, H5P_DEFAULT);
                H5Awrite(a, st, bf16 ? "bf16" : "fp32");
                H5Aclose(a);
                H5Sclose(as);
                H5Tclose(st);
                H5Dclose(d);
            }
            H5Sclose(s);
        }
        H5Pclose(lcpl);
        if (of >= 0 && H5Fclose(of) < 0) rc = rc ? rc : 1;
        of = -1;
    }
    if (rc) {
        if (rc == 1) fprintf(stderr, "accel_ckpt export: writing %s failed: %s\n--> hint: check free space\n", tmp,
                             strerror(errno));
        unlink(tmp);
    } else if (rename(tmp, output)) {
        fprintf(stderr, "accel_ckpt export: renaming %s to %s: %s\n", tmp, output, strerror(errno));
        unlink(tmp);
        rc = 1;
    } else {
        printf("exported %d tensors of '%s' from %s to %s (%s, %s)\n", names.n, group, path, output,
               st_fmt ? "safetensors" : "hdf5", bf16 ? "bf16" : "fp32");
    }
out:
    if (ftype >= 0) H5Tclose(ftype);
    if (ts)
        for (int i = 0; i < names.n; i++)
            if (ts[i].dset > 0) tensor_close(&ts[i]);
    free(ts);
    free(buf);
    free(half);
    strlist_free(&names);
    H5Fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ latest */

static int cmd_latest(int argc, char **argv)
{
    if (argc != 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("usage: accel_ckpt latest DIR\n  Prints the newest complete checkpoint in DIR (the one "
               "'latest' names, or a\n  newer complete step-*.h5); exit 2 when there is none.\n");
        return argc == 2 ? 0 : 2;
    }
    char path[ACCEL_CKPT_PATH_MAX];
    accel_status_t st = accel_ckpt_find_latest(argv[1], path);
    if (st != ACCEL_OK) {
        fprintf(stderr, "accel_ckpt: no complete checkpoint in %s\n", argv[1]);
        return accel_status_exit_code(st);
    }
    printf("%s\n", path);
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = { { "ls", cmd_ls }, { "info", cmd_info }, { "verify", cmd_verify }, { "diff", cmd_diff },
                 { "export", cmd_export }, { "latest", cmd_latest } };
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        printf("accel_ckpt (accel) %s\n", accel_version());
        return 0;
    }
    /* The library reports errors itself; HDF5's stack dumps would only add noise. */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    accel_log_set_identity(0, 1, "accel_ckpt");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "accel_ckpt: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}

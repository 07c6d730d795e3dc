/* Local (single-process, no MPI) checkpoint functions: full verification streamed block by block,
 * finding the newest complete checkpoint of a directory, reading the metadata alone. */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "accel/ckpt.h"
#include "accel/log.h"
#include "ckpt_internal.h"

#define VERIFY_BLOCKS_PER_READ 16   /* 1 Mi elements = 4 MiB per read */
#define VERIFY_MAX_BAD_LINES 20     /* per tensor */

#define PROBLEM(...)                                                                          \
    do {                                                                                      \
        problems++;                                                                           \
        if (report) { fprintf(report, "BAD   "); fprintf(report, __VA_ARGS__); fputc('\n', report); } \
    } while (0)

/* Verify one tensor; returns the number of problems. */
static int verify_one(hid_t file, const char *arena, const char *name, uint64_t B, float *buf,
                      FILE *report, bool verbose, uint64_t *elems)
{
    int problems = 0;
    char dpath[1200], spath[1200];
    snprintf(dpath, sizeof dpath, "/%s/%s", arena, name);
    snprintf(spath, sizeof spath, "/%s/%s/%s", CK_GROUP_SUMS, arena, name);
    hid_t d = H5Dopen2(file, dpath, H5P_DEFAULT);
    hid_t space = d >= 0 ? H5Dget_space(d) : -1, type = d >= 0 ? H5Dget_type(d) : -1;
    int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    hsize_t dims[H5S_MAX_RANK];
    int64_t shape[ACCEL_TENSOR_MAX_DIMS];
    uint64_t n = 1, nblocks = 0, *sums = NULL, whole = 0;
    hid_t sd = -1, ss = -1;
    if (d < 0 || nd < 1 || nd > ACCEL_TENSOR_MAX_DIMS || type < 0 || H5Tget_class(type) != H5T_FLOAT ||
        H5Tget_size(type) != 4) {
        PROBLEM("%s/%s: not a readable fp32 dataset of 1 to %d dimensions", arena, name, ACCEL_TENSOR_MAX_DIMS);
        goto out;
    }
    H5Sget_simple_extent_dims(space, dims, NULL);
    for (int k = 0; k < nd; k++) { shape[k] = (int64_t)dims[k]; n *= dims[k]; }
    *elems += n;
    nblocks = (n + B - 1) / B;
    if (H5Dget_storage_size(d) < n * sizeof(float)) {
        PROBLEM("%s/%s: only %llu of %llu bytes allocated in the file", arena, name,
                (unsigned long long)H5Dget_storage_size(d), (unsigned long long)(n * sizeof(float)));
        goto out;
    }
    sd = accel_h5_path_exists(file, spath) > 0 ? H5Dopen2(file, spath, H5P_DEFAULT) : -1;
    ss = sd >= 0 ? H5Dget_space(sd) : -1;
    hsize_t ns = 0;
    if (ss >= 0 && H5Sget_simple_extent_ndims(ss) == 1) H5Sget_simple_extent_dims(ss, &ns, NULL);
    sums = ns == nblocks ? malloc(sizeof *sums * (ns ? ns : 1)) : NULL;
    if (!sums || H5Dread(sd, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, sums) < 0) {
        PROBLEM("%s/%s: checksum table %s %s (%llu entries, expected %llu)", arena, name, spath,
                sd < 0 ? "missing" : "unreadable", (unsigned long long)ns, (unsigned long long)nblocks);
        goto out;
    }
    if (accel_h5_attr_read_u64(d, CK_ATTR_XXH, &whole) != ACCEL_OK || whole != accel_ckpt_hash_tensor(sums, nblocks))
        PROBLEM("%s/%s: checksum table does not match the tensor's '%s' attribute", arena, name, CK_ATTR_XXH);
    int bad_lines = 0;
    hid_t fs = H5Dget_space(d);
    for (uint64_t k0 = 0; k0 < nblocks && fs >= 0; k0 += VERIFY_BLOCKS_PER_READ) {
        uint64_t k1 = k0 + VERIFY_BLOCKS_PER_READ < nblocks ? k0 + VERIFY_BLOCKS_PER_READ : nblocks;
        uint64_t b = k0 * B, e = k1 * B < n ? k1 * B : n;
        hsize_t cnt = e - b;
        hid_t ms = H5Screate_simple(1, &cnt, NULL);
        int rc = ms < 0 || ck_select_range(fs, nd, shape, b, e) < 0 ||
                 H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, buf) < 0;
        if (ms >= 0) H5Sclose(ms);
        if (rc) {
            PROBLEM("%s/%s: cannot read elements %llu..%llu (file truncated?)", arena, name,
                    (unsigned long long)b, (unsigned long long)(e - 1));
            break;
        }
        for (uint64_t k = k0; k < k1; k++) {
            uint64_t bb = k * B, be = bb + B < n ? bb + B : n;
            uint64_t h = accel_ckpt_hash_block(buf + (bb - b), be - bb);
            if (h != sums[k]) {
                problems++;
                if (report && bad_lines++ < VERIFY_MAX_BAD_LINES)
                    fprintf(report, "BAD   %s/%s: block %llu (elements %llu..%llu) checksum mismatch "
                            "(stored %016llx, computed %016llx)\n", arena, name, (unsigned long long)k,
                            (unsigned long long)bb, (unsigned long long)(be - 1),
                            (unsigned long long)sums[k], (unsigned long long)h);
            }
        }
    }
    if (fs >= 0) H5Sclose(fs);
    if (report && bad_lines > VERIFY_MAX_BAD_LINES)
        fprintf(report, "BAD   %s/%s: ... %d more bad blocks\n", arena, name, bad_lines - VERIFY_MAX_BAD_LINES);
    if (!problems && verbose && report)
        fprintf(report, "OK    %s/%s: %llu elements, %llu blocks, xxh3 %016llx\n", arena, name,
                (unsigned long long)n, (unsigned long long)nblocks, (unsigned long long)whole);
out:
    free(sums);
    if (ss >= 0) H5Sclose(ss);
    if (sd >= 0) H5Dclose(sd);
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    if (d >= 0) H5Dclose(d);
    return problems;
}

static accel_status_t open_checked(const char *path, hid_t *file, uint64_t *B, bool need_complete)
{
    struct stat sb;
    if (stat(path, &sb)) {
        ACCEL_ERROR("checkpoint %s: %s", path, strerror(errno));
        return ACCEL_ERR_NOT_FOUND;
    }
    accel_h5_quiet_t q;
    accel_h5_quiet_begin(&q);
    accel_status_t st = ACCEL_OK;
    char h5err[512] = "";
    if (!S_ISREG(sb.st_mode) || !accel_h5_probe(path, (long long)sb.st_size)) {
        ACCEL_ERROR("%s is not an HDF5 file (%lld bytes)", path, (long long)sb.st_size);
        st = ACCEL_ERR_CORRUPT;
    } else if (accel_h5_open_read(path, file, h5err, sizeof h5err) != ACCEL_OK) {
        ACCEL_ERROR("cannot open checkpoint %s: %s\n--> hint: the file is truncated or damaged", path, h5err);
        st = ACCEL_ERR_CORRUPT;
    } else {
        st = ck_check_format(*file, path, B, need_complete, true);
        if (st != ACCEL_OK) {
            H5Fclose(*file);
            *file = -1;
        }
    }
    accel_h5_quiet_end(&q);
    return st;
}

accel_status_t accel_ckpt_verify(const char *path, FILE *report, bool verbose, int *nproblems)
{
    if (nproblems) *nproblems = 0;
    hid_t file = -1;
    uint64_t B = 0;
    accel_status_t st = open_checked(path, &file, &B, true);
    if (st != ACCEL_OK) {
        if (nproblems) *nproblems = 1;
        return st;
    }
    accel_h5_quiet_t q;
    accel_h5_quiet_begin(&q);
    int problems = 0, ntensors = 0;
    uint64_t elems = 0;
    char arenas[4096] = "";
    float *buf = malloc(sizeof(float) * B * VERIFY_BLOCKS_PER_READ);
    accel_ckpt_meta_t meta;
    if (!buf) {
        st = ACCEL_ERR_NOMEM;
        goto out;
    }
    if (ck_meta_read(file, path, &meta, true) != ACCEL_OK) PROBLEM("metadata (/%s) unreadable", CK_GROUP_META);
    else accel_ckpt_meta_free(&meta);
    if (accel_h5_attr_read_str(file, CK_ATTR_ARENAS, arenas, sizeof arenas) != ACCEL_OK || !arenas[0])
        PROBLEM("root attribute '%s' missing: cannot tell which groups hold tensors", CK_ATTR_ARENAS);
    for (char *save = NULL, *a = strtok_r(arenas, ";", &save); a; a = strtok_r(NULL, ";", &save)) {
        char gpath[600];
        ck_names_t data = { 0 }, sums = { 0 };
        snprintf(gpath, sizeof gpath, "/%s", a);
        if (accel_h5_path_exists(file, gpath) <= 0 || ck_list_datasets(file, gpath, &data) != ACCEL_OK) {
            PROBLEM("state '%s' listed in the file is missing", a);
            continue;
        }
        for (int i = 0; i < data.n; i++, ntensors++)
            problems += verify_one(file, a, data.v[i], B, buf, report, verbose, &elems);
        /* A checksum table without its tensor: the tensor was lost. */
        snprintf(gpath, sizeof gpath, "/%s/%s", CK_GROUP_SUMS, a);
        if (accel_h5_path_exists(file, gpath) > 0 && ck_list_datasets(file, gpath, &sums) == ACCEL_OK)
            for (int i = 0; i < sums.n; i++) {
                char dp[1200];
                snprintf(dp, sizeof dp, "/%s/%s", a, sums.v[i]);
                if (accel_h5_path_exists(file, dp) <= 0) PROBLEM("%s/%s: tensor missing (its checksum table exists)", a, sums.v[i]);
            }
        ck_names_free(&data);
        ck_names_free(&sums);
    }
    if (report)
        fprintf(report, "%s %s: %d tensors, %llu elements, %d problem%s\n", problems ? "FAILED" : "OK",
                path, ntensors, (unsigned long long)elems, problems, problems == 1 ? "" : "s");
    if (problems) st = ACCEL_ERR_CORRUPT;
out:
    free(buf);
    H5Fclose(file);
    accel_h5_quiet_end(&q);
    if (nproblems) *nproblems = problems;
    return st;
}

accel_status_t accel_ckpt_read_meta(const char *path, accel_ckpt_meta_t *meta)
{
    hid_t file = -1;
    uint64_t B;
    accel_ckpt_meta_init(meta);
    accel_status_t st = open_checked(path, &file, &B, false);
    if (st != ACCEL_OK) return st;
    accel_h5_quiet_t q;
    accel_h5_quiet_begin(&q);
    st = ck_meta_read(file, path, meta, true);
    H5Fclose(file);
    accel_h5_quiet_end(&q);
    return st;
}

/* ------------------------------------------------------------------ find latest */

/* Opens as an accel checkpoint with the `complete` mark (the save finished). No data read. */
static bool cheap_check(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) || !S_ISREG(sb.st_mode)) return false;
    accel_h5_quiet_t q;
    accel_h5_quiet_begin(&q);
    bool ok = false;
    hid_t f = -1;
    if (accel_h5_probe(path, (long long)sb.st_size) && accel_h5_open_read(path, &f, NULL, 0) == ACCEL_OK) {
        uint64_t B;
        ok = ck_check_format(f, path, &B, true, false) == ACCEL_OK;
        H5Fclose(f);
    }
    accel_h5_quiet_end(&q);
    return ok;
}

/* The /meta/extra value `key` of a checkpoint ("" when absent or unreadable). */
static void extra_of(const char *path, const char *key, char *out, size_t len)
{
    accel_ckpt_meta_t m;
    const char *v = accel_ckpt_read_meta(path, &m) == ACCEL_OK ? accel_ckpt_meta_get_extra(&m, key) : NULL;
    snprintf(out, len, "%s", v ? v : "");
    accel_ckpt_meta_free(&m);
}

accel_status_t accel_ckpt_find_latest(const char *dir, char *path_out)
{
    char latest_id[64] = "", parent[64];
    path_out[0] = '\0';
    char path[ACCEL_CKPT_PATH_MAX + 300], name[256] = "";
    long long best = -1;
    snprintf(path, sizeof path, "%s/latest", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fgets(name, sizeof name, f)) name[strcspn(name, "\r\n")] = '\0';
        fclose(f);
        long long s = ck_step_of(name, false);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (s >= 0 && cheap_check(path)) {
            best = s;
            ck_fmt(path_out, ACCEL_CKPT_PATH_MAX, "%s", path);
            extra_of(path, ACCEL_CKPT_EXTRA_CKPT_ID, latest_id, sizeof latest_id);
        } else {
            ACCEL_WARN("checkpoint: %s/latest names '%s', which is not a complete checkpoint; looking "
                       "for the newest one in %s", dir, name, dir);
        }
    }
    /* A crash between the rename and the `latest` update leaves a newer complete file. */
    long long *steps;
    size_t n = ck_list_steps(dir, best, &steps);
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/step-%08lld.h5", dir, steps[i]);
        if (cheap_check(path)) {
            /* `latest` is the truth: a higher file is taken only when it continues latest's (a
             * crash between the rename and the `latest` update), never from an abandoned
             * timeline (a rollback resumed from an older step). */
            if (latest_id[0]) {
                extra_of(path, ACCEL_CKPT_EXTRA_PARENT_ID, parent, sizeof parent);
                if (strcmp(parent, latest_id)) {
                    ACCEL_DEBUG("checkpoint: not choosing %s: it does not continue the checkpoint "
                                "%s/latest names", path, dir);
                    continue;
                }
            }
            ck_fmt(path_out, ACCEL_CKPT_PATH_MAX, "%s", path);
            best = steps[i];
            break;
        }
        ACCEL_WARN("checkpoint: skipping %s: not a complete checkpoint", path);
    }
    free(steps);
    if (best < 0 && access(dir, R_OK | X_OK) != 0)
        ACCEL_ERROR("checkpoint directory %s: %s", dir, strerror(errno));
    return best >= 0 ? ACCEL_OK : ACCEL_ERR_NOT_FOUND;
}

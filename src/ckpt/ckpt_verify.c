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

#define VERIFY_READ_ELEMS ((uint64_t)1 << 20)   /* about 4 MiB per read (at least one block) */
#define VERIFY_MAX_BAD_LINES 20     /* per tensor */

#define PROBLEM(...)                                                                          \
    do {                                                                                      \
        problems++;                                                                           \
        if (report) { fprintf(report, "BAD   "); fprintf(report, __VA_ARGS__); fputc('\n', report); } \
    } while (0)

static void shape_str(char *buf, size_t len, int nd, const hsize_t *dims)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < nd && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", d ? ", " : "", (unsigned long long)dims[d]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

/* Verify one tensor; returns the number of problems. want (may be NULL): the model's tensor, whose
 * shape the dataset must have. Every size read from the file is checked before it is used: the
 * element count against overflow and the file's size, the table length against the element count. */
static int verify_one(hid_t file, const char *arena, const char *name, const accel_tensor_t *want,
                      uint64_t B, uint64_t fsize, float *buf, uint64_t bpr, FILE *report, bool verbose,
                      uint64_t *elems)
{
    int problems = 0;
    char dpath[1200], spath[1200], have_s[160], want_s[160];
    snprintf(dpath, sizeof dpath, "/%s/%s", arena, name);
    snprintf(spath, sizeof spath, "/%s/%s/%s", CK_GROUP_SUMS, arena, name);
    hid_t d = -1, space = -1, type = -1, sd = -1, ss = -1, st = -1;
    hsize_t dims[H5S_MAX_RANK];
    int64_t shape[ACCEL_TENSOR_MAX_DIMS];
    uint64_t n = 0, nblocks = 0, *sums = NULL, whole = 0, tbytes = 0;
    int nd = -1;
    if (accel_h5_path_exists(file, dpath) <= 0) {
        PROBLEM("%s/%s: tensor missing%s", arena, name, want ? " (the stored model configuration has it)" : "");
        goto out;
    }
    if (!ck_is_dataset(file, dpath)) {
        PROBLEM("%s/%s: not a dataset (a group or another object stands in its place)", arena, name);
        goto out;
    }
    d = H5Dopen2(file, dpath, H5P_DEFAULT);
    space = d >= 0 ? H5Dget_space(d) : -1;
    type = d >= 0 ? H5Dget_type(d) : -1;
    nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (d < 0 || nd < 1 || nd > ACCEL_TENSOR_MAX_DIMS || type < 0 || H5Tequal(type, H5T_IEEE_F32LE) <= 0) {
        PROBLEM("%s/%s: not a readable fp32 (little-endian IEEE) dataset of 1 to %d dimensions (%d-D)",
                arena, name, ACCEL_TENSOR_MAX_DIMS, nd);
        goto out;
    }
    H5Sget_simple_extent_dims(space, dims, NULL);
    for (int k = 0; k < nd; k++) shape[k] = (int64_t)dims[k];
    shape_str(have_s, sizeof have_s, nd, dims);
    if (want) {
        hsize_t wd[ACCEL_TENSOR_MAX_DIMS];
        bool same = nd == want->ndim;
        for (int k = 0; k < want->ndim; k++) wd[k] = (hsize_t)want->shape[k];
        for (int k = 0; same && k < nd; k++) same = dims[k] == wd[k];
        if (!same) {
            shape_str(want_s, sizeof want_s, want->ndim, wd);
            PROBLEM("%s/%s: shape %s, but the stored model configuration has %s", arena, name, have_s, want_s);
            goto out;
        }
    }
    if (!ck_dims_numel(nd, dims, sizeof(float), &n) || (tbytes = n * sizeof(float)) > fsize) {
        PROBLEM("%s/%s: shape %s claims more data than the file holds (%llu bytes)", arena, name, have_s,
                (unsigned long long)fsize);
        goto out;
    }
    *elems += n;
    nblocks = ck_div_up(n, B);
    if (!ck_storage_ok(d, tbytes)) {
        PROBLEM("%s/%s: only %llu of %llu bytes allocated in the file", arena, name,
                (unsigned long long)H5Dget_storage_size(d), (unsigned long long)tbytes);
        goto out;
    }
    hsize_t ns = 0;
    if (ck_is_dataset(file, spath)) {
        sd = H5Dopen2(file, spath, H5P_DEFAULT);
        ss = sd >= 0 ? H5Dget_space(sd) : -1;
        st = sd >= 0 ? H5Dget_type(sd) : -1;
        if (ss >= 0 && H5Sget_simple_extent_ndims(ss) == 1) H5Sget_simple_extent_dims(ss, &ns, NULL);
    }
    bool table_ok = sd >= 0 && st >= 0 && H5Tequal(st, H5T_STD_U64LE) > 0 && ns == nblocks &&
                    ck_storage_ok(sd, nblocks * sizeof(uint64_t));
    sums = table_ok ? malloc(sizeof *sums * (ns ? ns : 1)) : NULL;
    if (!sums || H5Dread(sd, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, sums) < 0) {
        PROBLEM("%s/%s: checksum table %s %s (%llu entries, expected %llu uint64 for %llu elements in blocks of %llu)",
                arena, name, spath, sd < 0 ? "missing or not a dataset" : "malformed or unreadable",
                (unsigned long long)ns, (unsigned long long)nblocks, (unsigned long long)n, (unsigned long long)B);
        goto out;
    }
    const char *bad = ck_tensor_sums_mismatch(d, arena, name, sums, nblocks);
    if (bad) PROBLEM("%s/%s: checksum table does not match the tensor's '%s' attribute", arena, name, bad);
    whole = accel_ckpt_hash_tensor(sums, nblocks);  /* printed when verbose */
    int bad_lines = 0;
    hid_t fs = H5Dget_space(d);
    for (uint64_t k0 = 0; k0 < nblocks && fs >= 0; k0 += bpr) {
        uint64_t k1 = nblocks - k0 > bpr ? k0 + bpr : nblocks;
        uint64_t b = k0 * B, e = k1 < nblocks ? k1 * B : n;
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
            uint64_t bb = k * B, be = n - bb > B ? bb + B : n;
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
    if (st >= 0) H5Tclose(st);
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

static bool in_layout(const accel_layout_t *layout, const char *name)
{
    return layout && accel_layout_find(layout, name) != NULL;
}

accel_status_t accel_ckpt_verify_layout(const char *path, const accel_layout_t *layout, FILE *report,
                                        bool verbose, int *nproblems)
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
    hsize_t fsize = 0;
    char arenas[4096] = "";
    /* B <= CK_BLOCK_MAX (ck_check_format), so the buffer stays within 64 MiB. */
    uint64_t bpr = B >= VERIFY_READ_ELEMS ? 1 : VERIFY_READ_ELEMS / B;
    float *buf = malloc(sizeof(float) * B * bpr);
    accel_ckpt_meta_t meta;
    if (!buf) {
        st = ACCEL_ERR_NOMEM;
        goto out;
    }
    if (H5Fget_filesize(file, &fsize) < 0) fsize = 0;
    if (ck_meta_read(file, path, &meta, true) != ACCEL_OK) {
        PROBLEM("metadata (/%s) unreadable", CK_GROUP_META);
    } else {
        bool absent = false;
        accel_status_t ms = ck_meta_check(file, path, &meta, false, &absent);
        if (ms != ACCEL_OK && absent)
            PROBLEM("metadata (/%s) has no checksum '%s', which every checkpoint with '%s' carries",
                    CK_GROUP_META, CK_ATTR_META_XXH, CK_ATTR_NAMED_SUMS);
        else if (ms != ACCEL_OK && ck_chat_check(file, path, &meta, false) != ACCEL_OK)
            PROBLEM("chat template (/%s/%s) %s its checksum '%s'%s", CK_GROUP_META, CK_DSET_CHAT_TEMPLATE,
                    meta.chat_template ? "does not match (or lacks)" : "is missing, but not", CK_ATTR_CHAT_XXH,
                    meta.chat_template ? "" : " (in /meta)");
        else if (ms != ACCEL_OK)
            PROBLEM("metadata (/%s: step, lr, configuration...) does not match its checksum '%s'",
                    CK_GROUP_META, CK_ATTR_META_XXH);
        else if (absent && report)
            fprintf(report, "WARN  metadata (/%s) has no checksum '%s' (written by an older accel): not "
                    "verified\n", CK_GROUP_META, CK_ATTR_META_XXH);
        accel_ckpt_meta_free(&meta);
    }
    if (accel_h5_attr_read_str(file, CK_ATTR_ARENAS, arenas, sizeof arenas) != ACCEL_OK || !arenas[0])
        PROBLEM("root attribute '%s' missing: cannot tell which groups hold tensors", CK_ATTR_ARENAS);
    if (!layout && report)
        fprintf(report, "WARN  no model layout given: tensors checked against their checksums only, "
                "not against the model's names and shapes\n");
    for (char *save = NULL, *a = strtok_r(arenas, ";", &save); a; a = strtok_r(NULL, ";", &save)) {
        char gpath[600];
        ck_names_t data = { 0 }, sums = { 0 };
        snprintf(gpath, sizeof gpath, "/%s", a);
        H5O_info_t oi;
        herr_t r = -1;
        if (accel_h5_path_exists(file, gpath) > 0)
            H5E_BEGIN_TRY { r = H5Oget_info_by_name(file, gpath, &oi, H5P_DEFAULT); } H5E_END_TRY;
        if (r < 0 || oi.type != H5O_TYPE_GROUP || ck_list_datasets(file, gpath, &data) != ACCEL_OK) {
            PROBLEM("state '%s' listed in the file is missing or not a group", a);
            continue;
        }
        if (layout) {
            /* The model's tensors, each present with its shape; others are reported and checked. */
            for (int j = 0; j < layout->ntensors; j++, ntensors++)
                problems += verify_one(file, a, layout->tensors[j].name, &layout->tensors[j], B, fsize, buf,
                                       bpr, report, verbose, &elems);
            for (int i = 0; i < data.n; i++)
                if (!in_layout(layout, data.v[i])) {
                    PROBLEM("%s/%s: a tensor the stored model configuration does not have", a, data.v[i]);
                    problems += verify_one(file, a, data.v[i], NULL, B, fsize, buf, bpr, report, verbose, &elems);
                }
        } else {
            for (int i = 0; i < data.n; i++, ntensors++)
                problems += verify_one(file, a, data.v[i], NULL, B, fsize, buf, bpr, report, verbose, &elems);
        }
        /* A checksum table without its tensor: the tensor was lost. */
        snprintf(gpath, sizeof gpath, "/%s/%s", CK_GROUP_SUMS, a);
        if (accel_h5_path_exists(file, gpath) > 0 && ck_list_datasets(file, gpath, &sums) == ACCEL_OK)
            for (int i = 0; i < sums.n; i++) {
                char dp[1200];
                snprintf(dp, sizeof dp, "/%s/%s", a, sums.v[i]);
                if (!ck_is_dataset(file, dp) && !in_layout(layout, sums.v[i]))
                    PROBLEM("%s/%s: tensor missing (its checksum table exists)", a, sums.v[i]);
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

accel_status_t accel_ckpt_verify(const char *path, FILE *report, bool verbose, int *nproblems)
{
    return accel_ckpt_verify_layout(path, NULL, report, verbose, nproblems);
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

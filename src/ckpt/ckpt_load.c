/* Collective checkpoint load, for any world size and any ownership: first every check that needs
 * no tensor data (file, format, version, tensors, shapes, checksum tables), then each rank reads its
 * ranges with collective hyperslab reads and verifies every checksum block it touched (the parts
 * of edge blocks outside its range are read into scratch so whole blocks can be hashed). */
#include "build_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "accel/ckpt.h"
#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/trace.h"
#include "ckpt_internal.h"

typedef struct {
    const accel_tensor_t *t;
    hid_t dset;
    uint64_t nblocks;
    uint64_t *sums;                 /* stored block checksums */
    ck_piece_t *pieces;             /* what this rank reads of the tensor */
    int npieces;
    uint64_t ncalls;                /* H5Dread calls per rank (the most any rank needs) */
} rtensor_t;

static void fmt_shape(char *buf, size_t len, int ndim, const hsize_t *dims)
{
    size_t n = (size_t)snprintf(buf, len, "[");
    for (int d = 0; d < ndim && n < len; d++)
        n += (size_t)snprintf(buf + n, len - n, "%s%llu", d ? ", " : "", (unsigned long long)dims[d]);
    if (n < len) snprintf(buf + n, len - n, "]");
}

static herr_t count_dsets(hid_t obj, const char *name, const H5O_info_t *info, void *data)
{
    (void)obj;
    (void)name;
    if (info->type == H5O_TYPE_DATASET) (*(int *)data)++;
    return 0;
}

/* Open and check one tensor: present, fp32, the layout's shape, a checksum table of the right
 * length whose own checksum matches. Reads the table (collectively: every rank reads all of it). */
static accel_status_t open_tensor(hid_t file, hid_t dxpl, const char *path, const char *arena,
                                  uint64_t B, uint64_t fsize, rtensor_t *r, bool log)
{
    const accel_tensor_t *t = r->t;
    char dpath[600], spath[600], have[128], want[128];
    ck_data_path(dpath, sizeof dpath, arena, t->name);
    ck_sum_path(spath, sizeof spath, arena, t->name);
    int ex = accel_h5_path_exists(file, dpath);
    if (ex <= 0) {
        if (log)
            ACCEL_ERROR("checkpoint %s has no tensor '%s/%s'\n--> hint: it was saved from a different "
                        "model; compare 'accel_ckpt ls %s' with the model configuration", path, arena,
                        t->name, path);
        return ACCEL_ERR_NOT_FOUND;
    }
    r->dset = ck_is_dataset(file, dpath) ? H5Dopen2(file, dpath, H5P_DEFAULT) : -1;
    if (r->dset < 0) {
        if (log)
            ACCEL_ERROR("checkpoint %s: '%s' is not a readable dataset (a group or another object?)\n"
                        "--> hint: the file is damaged; use an earlier checkpoint", path, dpath);
        return ACCEL_ERR_CORRUPT;
    }
    hid_t space = H5Dget_space(r->dset), type = H5Dget_type(r->dset);
    hsize_t dims[H5S_MAX_RANK], wdims[ACCEL_TENSOR_MAX_DIMS];
    int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    if (nd >= 0 && nd <= H5S_MAX_RANK) H5Sget_simple_extent_dims(space, dims, NULL);
    bool fp32 = type >= 0 && H5Tequal(type, H5T_IEEE_F32LE) > 0;
    if (space >= 0) H5Sclose(space);
    if (type >= 0) H5Tclose(type);
    for (int d = 0; d < t->ndim; d++) wdims[d] = (hsize_t)t->shape[d];
    bool same = nd == t->ndim;
    for (int d = 0; same && d < nd; d++) same = dims[d] == wdims[d];
    if (!same) {
        fmt_shape(have, sizeof have, nd < 0 ? 0 : nd, dims);
        fmt_shape(want, sizeof want, t->ndim, wdims);
        if (log)
            ACCEL_ERROR("tensor '%s/%s' has shape %s in checkpoint %s, but the model expects %s\n--> "
                        "hint: the checkpoint was saved from a different model configuration", arena,
                        t->name, have, path, want);
        return ACCEL_ERR_SHAPE;
    }
    if (!fp32) {
        if (log) ACCEL_ERROR("tensor '%s/%s' in checkpoint %s is not fp32 (little-endian IEEE)", arena, t->name, path);
        return ACCEL_ERR_CORRUPT;
    }
    /* The shape is the layout's, so the byte count cannot overflow; the file must hold the bytes. */
    uint64_t tbytes = (uint64_t)t->numel * sizeof(float);
    if (tbytes > fsize || !ck_storage_ok(r->dset, tbytes)) {
        if (log)
            ACCEL_ERROR("checkpoint %s: tensor '%s/%s' has %llu of its %llu bytes allocated in a file of "
                        "%llu bytes\n--> hint: the file is damaged; use an earlier checkpoint", path, arena,
                        t->name, (unsigned long long)H5Dget_storage_size(r->dset), (unsigned long long)tbytes,
                        (unsigned long long)fsize);
        return ACCEL_ERR_CORRUPT;
    }
    r->nblocks = ck_div_up(t->numel, B);
    ex = accel_h5_path_exists(file, spath);
    hid_t sd = ex > 0 && ck_is_dataset(file, spath) ? H5Dopen2(file, spath, H5P_DEFAULT) : -1;
    hid_t ss = sd >= 0 ? H5Dget_space(sd) : -1, stype = sd >= 0 ? H5Dget_type(sd) : -1;
    hsize_t n = 0;
    if (ss >= 0 && H5Sget_simple_extent_ndims(ss) == 1) H5Sget_simple_extent_dims(ss, &n, NULL);
    bool table_ok = stype >= 0 && H5Tequal(stype, H5T_STD_U64LE) > 0 && n == r->nblocks &&
                    ck_storage_ok(sd, r->nblocks * sizeof(uint64_t));
    if (stype >= 0) H5Tclose(stype);
    accel_status_t st = ACCEL_OK;
    r->sums = table_ok ? malloc(sizeof *r->sums * (n ? n : 1)) : NULL;
    if (!table_ok || !r->sums) {
        if (log)
            ACCEL_ERROR("checkpoint %s: the checksum table %s is %s (%llu entries, expected %llu)\n--> "
                        "hint: the file is damaged; use an earlier checkpoint", path, spath,
                        ex > 0 ? "malformed" : "missing", (unsigned long long)n,
                        (unsigned long long)r->nblocks);
        st = ACCEL_ERR_CORRUPT;
    } else if (H5Dread(sd, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, dxpl, r->sums) < 0) {
        if (log) ACCEL_ERROR("checkpoint %s: cannot read the checksum table %s", path, spath);
        st = ACCEL_ERR_CORRUPT;
    } else {
        const char *bad = ck_tensor_sums_mismatch(r->dset, arena, t->name, r->sums, r->nblocks);
        if (bad) {
            if (log)
                ACCEL_ERROR("checkpoint %s: the checksum table of tensor '%s/%s' does not match the "
                            "tensor's '%s' attribute\n--> hint: the file is damaged; use an earlier "
                            "checkpoint", path, arena, t->name, bad);
            st = ACCEL_ERR_CORRUPT;
        }
    }
    if (ss >= 0) H5Sclose(ss);
    if (sd >= 0) H5Dclose(sd);
    return st;
}

/* Read this rank's pieces of one tensor (collective: ncalls calls on every rank, none selected past
 * this rank's last). */
static int read_tensor(hid_t dxpl, rtensor_t *r)
{
    const accel_tensor_t *t = r->t;
    uint64_t chunk = ck_io_chunk();
    hid_t fs = H5Dget_space(r->dset);
    if (fs < 0) return -1;
    int rc = 0;
    float dummy, *mem;
    for (uint64_t c = 0; c < r->ncalls; c++) {
        uint64_t b = 0, e = 0;
        if (!ck_call(r->pieces, r->npieces, chunk, c, &b, &e, &mem)) b = e = 0;
        hsize_t n = e > b ? e - b : 1;
        hid_t ms = H5Screate_simple(1, &n, NULL);
        if (ms < 0 || ck_select_range(fs, t->ndim, t->shape, b, e) < 0 || (e <= b && H5Sselect_none(ms) < 0) ||
            H5Dread(r->dset, H5T_NATIVE_FLOAT, ms, fs, dxpl, e > b ? mem : &dummy) < 0)
            rc = -1;
        if (ms >= 0) H5Sclose(ms);
    }
    H5Sclose(fs);
    return rc;
}

static int read_piece(hid_t dxpl_ind, rtensor_t *r, uint64_t b, uint64_t e, float *buf)
{
    hsize_t n = e - b;
    hid_t fs = H5Dget_space(r->dset), ms = H5Screate_simple(1, &n, NULL);
    int rc = (fs < 0 || ms < 0 || ck_select_range(fs, r->t->ndim, r->t->shape, b, e) < 0 ||
              H5Dread(r->dset, H5T_NATIVE_FLOAT, ms, fs, dxpl_ind, buf) < 0) ? -1 : 0;
    if (ms >= 0) H5Sclose(ms);
    if (fs >= 0) H5Sclose(fs);
    return rc;
}

/* Verify every block overlapping one piece [lb, le) (own[0] = element lb). Edge blocks are completed
 * from the file into scratch (2*B floats). Returns the first bad block, -1 when all good, -2 on a
 * read error. */
static int64_t verify_piece(hid_t dxpl_ind, rtensor_t *r, const ck_piece_t *p, uint64_t B, float *scratch,
                            XXH3_state_t *state, uint64_t *computed)
{
    const uint64_t lb = p->b, le = p->e;
    const float *own = p->mem;
    if (le <= lb) return -1;
    uint64_t n = r->t->numel;
    uint64_t kb = lb / B, ke = ck_div_up(le, B);
    for (uint64_t k = kb; k < ke; k++) {
        uint64_t b = k * B, e = b + B < n ? b + B : n;
        uint64_t h;
        if (b >= lb && e <= le) {
            h = accel_ckpt_hash_block(own + (b - lb), e - b);
        } else {
            uint64_t mb = b > lb ? b : lb, me = e < le ? e : le;
            XXH3_64bits_reset(state);
            if (b < mb) {
                if (read_piece(dxpl_ind, r, b, mb, scratch) < 0) return -2;
                XXH3_64bits_update(state, scratch, (mb - b) * sizeof(float));
            }
            XXH3_64bits_update(state, own + (mb - lb), (me - mb) * sizeof(float));
            if (me < e) {
                if (read_piece(dxpl_ind, r, me, e, scratch + B) < 0) return -2;
                XXH3_64bits_update(state, scratch + B, (e - me) * sizeof(float));
            }
            h = XXH3_64bits_digest(state);
        }
        if (h != r->sums[k]) {
            *computed = h;
            return (int64_t)k;
        }
    }
    return -1;
}

accel_status_t accel_ckpt_load(MPI_Comm comm, const char *path, const accel_layout_t *layout,
                               const accel_ckpt_arena_t *arenas, int narenas,
                               accel_ckpt_meta_t *meta_out)
{
    int rank;
    ACCEL_CHECK(accel_mpi_status(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank (checkpoint load)"));
    bool log = rank == 0;
    accel_h5_quiet_t quiet;
    accel_h5_quiet_begin(&quiet);
    accel_status_t st = ACCEL_OK;
    accel_ckpt_meta_t meta;
    accel_ckpt_meta_init(&meta);
    rtensor_t **rt = NULL;
    ck_piece_t **storage = NULL, **pp = NULL;
    int *np = NULL;
    uint64_t *calls = NULL, B = 0;
    float *scratch = NULL;
    XXH3_state_t *state = NULL;
    hid_t fapl = -1, dxpl = -1, dxpl_ind = -1, file = -1;
    char h5err[512], arena_list[1024] = "";

    if (!path || !layout || !arenas || narenas < 1) {
        if (log) ACCEL_ERROR("checkpoint load: missing path, layout or arenas");
        st = ACCEL_ERR_INVALID;
        goto done;
    }
    for (int i = 0; i < narenas; i++) {
        const accel_ckpt_arena_t *a = &arenas[i];
        bool owns = a->replicated || a->nranges > 0 || a->end > a->begin;
        if (!a->name || !*a->name || (owns && !a->data) || a->nranges < 0 || (a->nranges > 0 && !a->ranges) ||
            (a->replicated && (a->shard_buffer || a->nranges > 0))) {
            ACCEL_ERROR("checkpoint load: arena %d ('%s'): bad name, data pointer or range list", i,
                        a->name ? a->name : "(null)");
            st = ACCEL_ERR_INVALID;
        }
    }
    st = accel_agree(comm, st);
    if (st == ACCEL_OK) st = ck_check_same_call(comm, layout, arenas, narenas, "load");
    if (st != ACCEL_OK) goto done;

    /* What each rank reads of each tensor, and how many calls that takes on the busiest rank. */
    rt = calloc((size_t)narenas, sizeof *rt);
    storage = calloc((size_t)narenas, sizeof *storage);
    pp = malloc(sizeof *pp * (size_t)layout->ntensors);
    np = malloc(sizeof *np * (size_t)layout->ntensors);
    calls = malloc(sizeof *calls * (size_t)layout->ntensors);
    if (!rt || !storage || !pp || !np || !calls) st = ACCEL_ERR_NOMEM;
    for (int i = 0; st == ACCEL_OK && i < narenas; i++) {
        rt[i] = calloc((size_t)layout->ntensors, sizeof **rt);
        if (!rt[i]) { st = ACCEL_ERR_NOMEM; break; }
        for (int j = 0; j < layout->ntensors; j++) {
            rt[i][j].t = &layout->tensors[j];
            rt[i][j].dset = -1;
        }
        if (arenas[i].replicated) {
            storage[i] = malloc(sizeof **storage * (size_t)layout->ntensors);
            if (!storage[i]) { st = ACCEL_ERR_NOMEM; break; }
            for (int j = 0; j < layout->ntensors; j++) {
                const accel_tensor_t *t = &layout->tensors[j];
                storage[i][j] = (ck_piece_t){ 0, t->numel, arenas[i].data + t->offset };
                rt[i][j].pieces = &storage[i][j];
                rt[i][j].npieces = 1;
            }
        } else {
            st = ck_pieces(layout, &arenas[i], false, pp, np, &storage[i]);
            for (int j = 0; st == ACCEL_OK && j < layout->ntensors; j++) {
                rt[i][j].pieces = pp[j];
                rt[i][j].npieces = np[j];
            }
        }
    }
    st = accel_agree(comm, st);
    for (int i = 0; st == ACCEL_OK && i < narenas; i++) {
        for (int j = 0; j < layout->ntensors; j++) calls[j] = ck_calls(rt[i][j].pieces, rt[i][j].npieces, ck_io_chunk());
        st = accel_mpi_allreduce(MPI_IN_PLACE, calls, layout->ntensors, MPI_UINT64_T, MPI_MAX, comm,
                                 "ckpt-read-calls");
        for (int j = 0; j < layout->ntensors; j++) rt[i][j].ncalls = calls[j];
    }
    if (st != ACCEL_OK) {
        if (st == ACCEL_ERR_NOMEM) ACCEL_ERROR("checkpoint load: out of memory");
        goto done;
    }

    /* Cheap checks on one rank first, so a missing file gives one clear line. */
    if (rank == 0) {
        struct stat sb;
        if (stat(path, &sb)) {
            ACCEL_ERROR("checkpoint %s: %s\n--> hint: check the path; accel_ckpt_find_latest or "
                        "'ls DIR' shows the checkpoints there", path, strerror(errno));
            st = ACCEL_ERR_NOT_FOUND;
        } else if (!S_ISREG(sb.st_mode)) {
            ACCEL_ERROR("checkpoint %s is not a regular file", path);
            st = ACCEL_ERR_INVALID;
        } else if (!accel_h5_probe(path, (long long)sb.st_size)) {
            ACCEL_ERROR("checkpoint %s is not an HDF5 file (%lld bytes)\n--> hint: the file is damaged "
                        "or is not a checkpoint; use an earlier one", path, (long long)sb.st_size);
            st = ACCEL_ERR_CORRUPT;
        }
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;

    fapl = H5Pcreate(H5P_FILE_ACCESS);
    dxpl = H5Pcreate(H5P_DATASET_XFER);
    dxpl_ind = H5Pcreate(H5P_DATASET_XFER);
    if (fapl < 0 || dxpl < 0 || dxpl_ind < 0 || H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0 ||
        H5Pset_all_coll_metadata_ops(fapl, true) < 0 || H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0 ||
        H5Pset_dxpl_mpio(dxpl_ind, H5FD_MPIO_INDEPENDENT) < 0)
        st = ACCEL_ERR_HDF5;
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;
    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (file < 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        if (log)
            ACCEL_ERROR("cannot open checkpoint %s: %s\n--> hint: the file is truncated or damaged; "
                        "use an earlier checkpoint", path, h5err);
        st = ACCEL_ERR_CORRUPT;
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;

    st = ck_check_format(file, path, &B, true, log);
    if (st == ACCEL_OK) st = ck_meta_read(file, path, &meta, log);
    bool meta_unsummed = false;
    if (st == ACCEL_OK) st = ck_meta_check(file, path, &meta, log, &meta_unsummed);
    if (st == ACCEL_OK && meta_unsummed && log)
        ACCEL_WARN("checkpoint %s has no metadata checksum '%s' (written by an older accel): its /%s "
                   "values (step, lr, configuration) are not verified", path, CK_ATTR_META_XXH, CK_GROUP_META);
    hsize_t fsize = 0;
    if (st == ACCEL_OK && H5Fget_filesize(file, &fsize) < 0) st = ACCEL_ERR_HDF5;
    if (st == ACCEL_OK) (void)accel_h5_attr_read_str(file, CK_ATTR_ARENAS, arena_list, sizeof arena_list);   /* for messages only */
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;

    /* Phase 1: every tensor present, right shape, checksum table intact. No caller buffer touched. */
    scratch = malloc(sizeof *scratch * 2 * B);
    state = XXH3_createState();
    st = accel_agree(comm, scratch && state ? ACCEL_OK : ACCEL_ERR_NOMEM);
    if (st != ACCEL_OK) {
        if (st == ACCEL_ERR_NOMEM) ACCEL_ERROR("checkpoint load: out of memory");
        goto done;
    }
    for (int i = 0; st == ACCEL_OK && i < narenas; i++) {
        char gpath[300];
        snprintf(gpath, sizeof gpath, "/%s", arenas[i].name);
        if (accel_h5_path_exists(file, gpath) <= 0) {
            if (log)
                ACCEL_ERROR("checkpoint %s has no state '%s' (it holds: %s)\n--> hint: it was saved "
                            "without that state (e.g. another optimizer), or is not for this run", path,
                            arenas[i].name, arena_list[0] ? arena_list : "nothing");
            st = ACCEL_ERR_NOT_FOUND;
            break;
        }
        for (int j = 0; st == ACCEL_OK && j < layout->ntensors; j++)
            st = open_tensor(file, dxpl, path, arenas[i].name, B, (uint64_t)fsize, &rt[i][j], log);
        if (st == ACCEL_OK) {
            int nd = 0;
            hid_t g = H5Gopen2(file, gpath, H5P_DEFAULT);
            if (g >= 0 && H5Ovisit(g, H5_INDEX_NAME, H5_ITER_INC, count_dsets, &nd) >= 0 &&
                nd > layout->ntensors && log)
                ACCEL_WARN("checkpoint %s: '%s' holds %d tensors, the model %d; the others are ignored",
                           path, arenas[i].name, nd, layout->ntensors);
            if (g >= 0) H5Gclose(g);
        }
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;

    /* Phase 2: read and verify. Errors are noted and the loop goes on, so that every rank makes
     * the same collective calls; the verdict is agreed at the end. */
    accel_status_t local = ACCEL_OK;
    for (int i = 0; i < narenas; i++) {
        const accel_ckpt_arena_t *a = &arenas[i];
        for (int j = 0; j < layout->ntensors; j++) {
            rtensor_t *r = &rt[i][j];
            const accel_tensor_t *t = r->t;
            if (r->ncalls == 0) continue;       /* no rank reads this tensor */
            if (read_tensor(dxpl, r) < 0) {
                accel_h5_last_error(h5err, sizeof h5err);
                if (local == ACCEL_OK)
                    ACCEL_ERROR("checkpoint %s: reading tensor '%s/%s' failed: %s\n--> hint: the file "
                                "is truncated or damaged; use an earlier checkpoint", path, a->name,
                                t->name, h5err);
                local = ACCEL_ERR_IO;
                continue;
            }
            uint64_t computed = 0;
            int64_t bad = -1;
            for (int k = 0; k < r->npieces && bad == -1; k++)
                bad = verify_piece(dxpl_ind, r, &r->pieces[k], B, scratch, state, &computed);
            if (bad == -2) {
                if (local == ACCEL_OK)
                    ACCEL_ERROR("checkpoint %s: reading tensor '%s/%s' to check a block failed", path,
                                a->name, t->name);
                local = ACCEL_ERR_IO;
            } else if (bad >= 0) {
                uint64_t b = (uint64_t)bad * B, e = b + B < t->numel ? b + B : t->numel;
                if (local == ACCEL_OK)
                    ACCEL_ERROR("checkpoint %s: tensor '%s/%s' block %lld (elements %llu..%llu) fails its "
                                "checksum (stored %016llx, computed %016llx)\n--> hint: the file is "
                                "damaged; 'accel_ckpt verify %s' lists every bad block; use an earlier "
                                "checkpoint", path, a->name, t->name, (long long)bad,
                                (unsigned long long)b, (unsigned long long)(e - 1),
                                (unsigned long long)r->sums[bad], (unsigned long long)computed, path);
                local = ACCEL_ERR_CORRUPT;
            }
        }
    }
    st = accel_agree(comm, local);
    if (st != ACCEL_OK && log)
        ACCEL_ERROR("checkpoint %s was not loaded (%s); the state buffers are now undefined", path,
                    accel_status_str(st));

done:
    if (rt) {
        for (int i = 0; i < narenas; i++) {
            for (int j = 0; rt[i] && j < layout->ntensors; j++) {
                if (rt[i][j].dset >= 0) H5Dclose(rt[i][j].dset);
                free(rt[i][j].sums);
            }
            free(rt[i]);
        }
        free(rt);
    }
    if (file >= 0) H5Fclose(file);
    if (fapl >= 0) H5Pclose(fapl);
    if (dxpl >= 0) H5Pclose(dxpl);
    if (dxpl_ind >= 0) H5Pclose(dxpl_ind);
    if (state) XXH3_freeState(state);
    free(scratch);
    if (storage)
        for (int i = 0; i < narenas; i++) free(storage[i]);
    free(storage);
    free(pp);
    free(np);
    free(calls);
    if (st == ACCEL_OK && meta_out) *meta_out = meta;
    else accel_ckpt_meta_free(&meta);
    accel_h5_quiet_end(&quiet);
    return st;
}

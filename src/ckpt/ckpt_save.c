/* Checkpoint save in three phases. 1: rank 0 creates the file, the metadata and every dataset with
 * the serial driver (space allocated, nothing written). 2: all ranks reopen it through MPI-IO and
 * write the hyperslabs they own collectively, hash their checksum blocks (reading back the blocks
 * cut by their range end) and fsync. 3: rank 0 stores the gathered checksum tables and the
 * `complete` mark, fsyncs and publishes atomically (rename, then `latest`). Phase 2 changes no HDF5
 * metadata, so an I/O error there cannot desynchronise the ranks' HDF5 state. Every step that can
 * fail on one rank is followed by an agreement (allreduce of the status): all ranks take the same
 * path and no collective is left waiting. */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "accel/ckpt.h"
#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/trace.h"
#include "ckpt_internal.h"

typedef struct {
    const accel_tensor_t *t;
    ck_piece_t *pieces;             /* what this rank writes of the tensor */
    int npieces;
    uint64_t ncalls;                /* H5Dwrite calls per rank (the most any rank needs) */
    uint64_t nblocks;
    uint64_t *hashes;               /* into the arena's block table */
    hid_t dset;                     /* open in the parallel phase */
} wtensor_t;

typedef struct {
    const accel_ckpt_arena_t *a;
    wtensor_t *ts;
    uint64_t *hashes;               /* all blocks of all tensors, in layout order */
    uint64_t nblocks;
    ck_piece_t *storage;            /* the pieces of all tensors */
} warena_t;

/* ------------------------------------------------------------------ argument checks */

static bool arena_name_ok(const char *name)
{
    if (!name || !*name || name[0] == '/' || name[strlen(name) - 1] == '/' || strstr(name, "//"))
        return false;
    size_t n = strlen(CK_GROUP_META);
    if (!strncmp(name, CK_GROUP_META, n) && (name[n] == '\0' || name[n] == '/')) return false;
    n = strlen(CK_GROUP_SUMS);
    if (!strncmp(name, CK_GROUP_SUMS, n) && (name[n] == '\0' || name[n] == '/')) return false;
    return strlen(name) < 256;
}

static accel_status_t check_args(const accel_layout_t *layout, const accel_ckpt_arena_t *arenas,
                                 int narenas, const char *what)
{
    if (!layout || layout->ntensors < 1 || narenas < 1 || !arenas) {
        ACCEL_ERROR("checkpoint %s: nothing to do (%d tensors, %d arenas)", what,
                    layout ? layout->ntensors : 0, narenas);
        return ACCEL_ERR_INVALID;
    }
    for (int i = 0; i < narenas; i++) {
        const accel_ckpt_arena_t *a = &arenas[i];
        if (!arena_name_ok(a->name)) {
            ACCEL_ERROR("checkpoint %s: arena name '%s' is not valid\n--> hint: use a group path such "
                        "as 'model' or 'optim/exp_avg' (not 'meta' or 'checksums')", what,
                        a->name ? a->name : "(null)");
            return ACCEL_ERR_INVALID;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(arenas[j].name, a->name)) {
                ACCEL_ERROR("checkpoint %s: arena '%s' given twice", what, a->name);
                return ACCEL_ERR_INVALID;
            }
        bool owns = a->replicated || a->nranges > 0 || a->end > a->begin;
        if ((owns && !a->data) || a->nranges < 0 || (a->nranges > 0 && !a->ranges) ||
            (a->replicated && (a->shard_buffer || a->nranges > 0))) {
            ACCEL_ERROR("checkpoint %s: arena '%s': no data pointer, a bad range list, or replicated "
                        "with ranges or a shard buffer", what, a->name);
            return ACCEL_ERR_INVALID;
        }
    }
    for (int t = 0; t < layout->ntensors; t++)
        if (strstr(layout->tensors[t].name, "//") || layout->tensors[t].name[0] == '/') {
            ACCEL_ERROR("checkpoint %s: tensor name '%s' cannot be an HDF5 path", what,
                        layout->tensors[t].name);
            return ACCEL_ERR_INVALID;
        }
    return ACCEL_OK;
}

static int cmp_u64pair(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* The number of write calls per tensor: every rank makes the most any rank needs. */
static accel_status_t plan_calls(MPI_Comm comm, const accel_layout_t *layout, warena_t *wa, uint64_t *tmp)
{
    uint64_t chunk = ck_io_chunk();
    for (int t = 0; t < layout->ntensors; t++) tmp[t] = ck_calls(wa->ts[t].pieces, wa->ts[t].npieces, chunk);
    ACCEL_CHECK(accel_mpi_allreduce(MPI_IN_PLACE, tmp, layout->ntensors, MPI_UINT64_T, MPI_MAX, comm,
                                    "ckpt-write-calls"));
    for (int t = 0; t < layout->ntensors; t++) wa->ts[t].ncalls = tmp[t];
    return ACCEL_OK;
}

/* Ownership of one sharded arena: this rank's pieces of each tensor, and a check that the ranges of
 * all ranks tile every tensor. Every rank checks the same gathered ranges, so every rank reaches
 * the same verdict; rank 0 says why. */
static accel_status_t plan_sharded(MPI_Comm comm, int size, const accel_layout_t *layout, warena_t *wa,
                                   uint64_t *tmp)
{
    ck_piece_t **pp = malloc(sizeof *pp * (size_t)layout->ntensors);
    int *np = malloc(sizeof *np * (size_t)layout->ntensors);
    int *counts = malloc(sizeof *counts * (size_t)size), *displs = malloc(sizeof *displs * (size_t)size);
    uint64_t *mine = NULL, *all = NULL, *pos = NULL;
    accel_status_t st = pp && np && counts && displs ? ACCEL_OK : ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) st = ck_pieces(layout, wa->a, true, pp, np, &wa->storage);
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto out;
    for (int t = 0; t < layout->ntensors; t++) {
        wa->ts[t].pieces = pp[t];
        wa->ts[t].npieces = np[t];
    }

    /* Gather every rank's ranges (begin, end). */
    accel_ckpt_range_t one;
    const accel_ckpt_range_t *r;
    int nr = ck_ranges(wa->a, &one, &r), two = 2 * nr;
    st = accel_mpi_allgather(&two, 1, MPI_INT, counts, comm, "ckpt-range-counts");
    if (st != ACCEL_OK) goto out;
    long long total = 0;
    for (int q = 0; q < size; q++) { displs[q] = (int)total; total += counts[q]; }
    mine = malloc(sizeof *mine * (size_t)(two ? two : 1));
    all = malloc(sizeof *all * (size_t)(total ? total : 1));
    pos = calloc((size_t)layout->ntensors, sizeof *pos);
    st = accel_agree(comm, mine && all && pos && total < (1LL << 31) ? ACCEL_OK : ACCEL_ERR_NOMEM);
    if (st != ACCEL_OK) goto out;
    for (int k = 0; k < nr; k++) { mine[2 * k] = r[k].begin; mine[2 * k + 1] = r[k].end; }
    st = accel_mpi_status(MPI_Allgatherv(mine, two, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, comm),
                          "MPI_Allgatherv (ranges)");
    if (st != ACCEL_OK) goto out;
    /* Walk all ranges in begin order: each tensor's pieces then arrive in order and must continue
     * exactly where the previous one ended. */
    qsort(all, (size_t)total / 2, 2 * sizeof *all, cmp_u64pair);
    for (long long k = 0; k < total / 2 && st == ACCEL_OK; k++) {
        uint64_t rb = all[2 * k], re = all[2 * k + 1];
        for (int t = ck_first_tensor_after(layout, rb);
             t < layout->ntensors && layout->tensors[t].offset < re && st == ACCEL_OK; t++) {
            const accel_tensor_t *T = &layout->tensors[t];
            uint64_t b = rb > T->offset ? rb : T->offset, e = re < T->offset + T->numel ? re : T->offset + T->numel;
            if (b >= e) continue;
            b -= T->offset;
            e -= T->offset;
            if (b != pos[t]) {
                ACCEL_ERROR0("checkpoint save: arena '%s', tensor '%s': elements %s %llu are %s\n--> "
                             "hint: the ranges of the ranks must cover every tensor exactly once, or "
                             "mark the arena replicated", wa->a->name, T->name, b > pos[t] ? "from" : "at",
                             (unsigned long long)(b > pos[t] ? pos[t] : b),
                             b > pos[t] ? "held by no rank" : "held twice");
                st = ACCEL_ERR_INVALID;
            }
            pos[t] = e;
        }
    }
    for (int t = 0; t < layout->ntensors && st == ACCEL_OK; t++)
        if (pos[t] != layout->tensors[t].numel) {
            ACCEL_ERROR0("checkpoint save: arena '%s', tensor '%s': elements from %llu are held by no "
                         "rank\n--> hint: the ranges of the ranks must cover every tensor exactly once, "
                         "or mark the arena replicated", wa->a->name, layout->tensors[t].name,
                         (unsigned long long)pos[t]);
            st = ACCEL_ERR_INVALID;
        }
    if (st == ACCEL_OK) st = plan_calls(comm, layout, wa, tmp);
out:
    free(pp);
    free(np);
    free(counts);
    free(displs);
    free(mine);
    free(all);
    free(pos);
    return st;
}

/* A replicated arena: each tensor's checksum blocks are dealt out evenly, starting at a different
 * rank for each tensor so small tensors spread over the ranks. Whole blocks: no read-back needed. */
static accel_status_t plan_replicated(MPI_Comm comm, int size, int rank, const accel_layout_t *layout,
                                      warena_t *wa, uint64_t *tmp)
{
    wa->storage = calloc((size_t)layout->ntensors, sizeof *wa->storage);
    accel_status_t st = accel_agree(comm, wa->storage ? ACCEL_OK : ACCEL_ERR_NOMEM);
    if (st != ACCEL_OK) return st;
    for (int i = 0; i < layout->ntensors; i++) {
        wtensor_t *w = &wa->ts[i];
        uint64_t nb = w->nblocks, n = w->t->numel;
        uint64_t r = (uint64_t)((rank + i) % size);
        uint64_t kb = r * nb / (uint64_t)size, ke = (r + 1) * nb / (uint64_t)size;
        uint64_t lb = kb * ACCEL_CKPT_BLOCK_ELEMS, le = ke * ACCEL_CKPT_BLOCK_ELEMS < n ? ke * ACCEL_CKPT_BLOCK_ELEMS : n;
        w->pieces = &wa->storage[i];
        w->npieces = lb < le ? 1 : 0;
        wa->storage[i] = (ck_piece_t){ lb, le, wa->a->data + w->t->offset + lb };
    }
    return plan_calls(comm, layout, wa, tmp);
}

/* ------------------------------------------------------------------ file system helpers */

static int mkdirs(const char *dir)
{
    char buf[ACCEL_CKPT_PATH_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST) return -1;
    struct stat sb;
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

/* The run a checkpoint file (or a tmp file past its create phase) belongs to: its /meta/extra
 * run_id, "" when it records none (an older file, or a caller that sets none). -1 when the file
 * does not read as a checkpoint's metadata. Serial, rank 0. */
static int file_run_id(const char *path, char *run, size_t len)
{
    run[0] = '\0';
    hid_t f = -1;
    if (accel_h5_open_read(path, &f, NULL, 0) != ACCEL_OK) return -1;
    accel_ckpt_meta_t m;
    accel_status_t st = ck_meta_read(f, path, &m, false);
    H5Fclose(f);
    const char *v = st == ACCEL_OK ? accel_ckpt_meta_get_extra(&m, ACCEL_CKPT_EXTRA_RUN_ID) : NULL;
    snprintf(run, len, "%s", v ? v : "");
    accel_ckpt_meta_free(&m);
    return st == ACCEL_OK ? 0 : -1;
}

/* After a successful save of run `run` at new_step: keep the new file plus the keep_last-1 highest
 * lower steps of the same run. Never removed: another run's checkpoints (a shared directory), files
 * that do not read as checkpoints, and higher steps (an abandoned timeline after a rollback: they go
 * once this timeline has passed them, like any other). Tmp files of interrupted saves go when they
 * are this run's, or unreadable and older than a minute (a crash in the create phase); another
 * run's save may be in progress. A caller without a run_id ("") keeps the old rule for files
 * without one (and any tmp file). */
static void prune(const char *dir, long long new_step, int keep_last, const char *run)
{
    char path[ACCEL_CKPT_PATH_MAX + 300], other[64];
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    time_t now = time(NULL);
    while ((de = readdir(d))) {
        long long s = ck_step_of(de->d_name, true);
        if (s < 0 || s == new_step) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat sb;
        int rc = file_run_id(path, other, sizeof other);
        bool ours = !run[0] || (rc == 0 && !strcmp(other, run)) ||
                    (rc < 0 && stat(path, &sb) == 0 && now - sb.st_mtime > 60);
        if (!ours) {
            ACCEL_DEBUG("checkpoint: keeping %s (%s)", path, rc < 0 ? "a save may be writing it" : "another run's");
            continue;
        }
        if (!unlink(path)) ACCEL_DEBUG("checkpoint: removed %s left by an interrupted save", path);
    }
    closedir(d);
    if (keep_last <= 0) return;
    long long *steps;
    size_t n = ck_list_steps(dir, -1, &steps), kept = 1;   /* the new checkpoint counts as kept */
    for (size_t i = 0; i < n; i++) {
        if (steps[i] >= new_step) continue;                /* the new one; an abandoned timeline's */
        snprintf(path, sizeof path, "%s/step-%08lld.h5", dir, steps[i]);
        if (file_run_id(path, other, sizeof other) < 0 || strcmp(other, run)) continue;
        if (kept++ < (size_t)keep_last) continue;
        if (unlink(path)) ACCEL_WARN("checkpoint: cannot remove old %s: %s", path, strerror(errno));
        else ACCEL_INFO("checkpoint: removed %s (keep_last=%d)", path, keep_last);
    }
    free(steps);
}

/* What is true about dir's checkpoints after a failed save (rank 0): the file `latest` names when
 * it is a complete checkpoint, else the newest complete one, else that there is none. */
static void describe_intact(const char *dir, char *buf, size_t len)
{
    char path[ACCEL_CKPT_PATH_MAX];
    accel_log_level_t lv = accel_log_get_level();
    accel_log_set_level(ACCEL_LOG_ERROR);   /* find_latest's warnings would confuse the message */
    accel_status_t st = dir ? accel_ckpt_find_latest(dir, path) : ACCEL_ERR_NOT_FOUND;
    accel_log_set_level(lv);
    if (st == ACCEL_OK) ck_fmt(buf, len, "the last complete checkpoint, %s, is untouched", path);
    else ck_fmt(buf, len, "there is no complete checkpoint in %s (nothing was lost: none had been saved)",
                dir ? dir : "(null)");
}

/* Test hook: ACCEL_CKPT_TEST_KILL=tensor:N | before-rename | before-latest kills rank 0 there, as a
 * node failure would; the atomicity tests use it to crash a save at a known point. */
static void test_kill(int rank, const char *stage, int ntensors_done)
{
    const char *env = getenv("ACCEL_CKPT_TEST_KILL");
    if (!env || rank != 0) return;
    if (!strncmp(env, "tensor:", 7) && !strcmp(stage, "tensor") && atoi(env + 7) == ntensors_done)
        raise(SIGKILL);
    if (!strcmp(env, stage)) raise(SIGKILL);
}

/* Test hook: ACCEL_CKPT_TEST_FAIL=N makes the last rank report a write error on the N-th tensor
 * (1-based), as a full disk on one writer would; the tests check the cleanup without root. */
static bool test_fail(int rank, int size, int ntensor)
{
    const char *env = getenv("ACCEL_CKPT_TEST_FAIL");
    return env && rank == size - 1 && atoi(env) == ntensor;
}

/* ------------------------------------------------------------------ the save */

static hid_t make_fapl(MPI_Comm comm, bool parallel)
{
    hid_t fapl = -1;
    if (parallel) fapl = H5Pcreate(H5P_FILE_ACCESS);
    else if (accel_h5_fapl_serial(&fapl) != ACCEL_OK) fapl = -1;
    if (fapl < 0) return -1;
    /* Alignment: large tensors start on file-system block / stripe boundaries so collective
     * buffering writes whole stripes (ACCEL_CKPT_ALIGN bytes; default 1 MiB, 0 = off). Metadata
     * is aggregated into blocks of 64 KiB so the small objects stay together at the front. */
    const char *env = getenv("ACCEL_CKPT_ALIGN");
    long long align = env ? atoll(env) : 1 << 20;
    if ((align > 1 && H5Pset_alignment(fapl, (hsize_t)align, (hsize_t)align) < 0) ||
        H5Pset_meta_block_size(fapl, 65536) < 0 ||
        (parallel && (H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL) < 0 ||
                      H5Pset_all_coll_metadata_ops(fapl, true) < 0 ||
                      H5Pset_coll_metadata_write(fapl, true) < 0))) {
        H5Pclose(fapl);
        return -1;
    }
    return fapl;
}

/* Create the data and checksum datasets of one tensor (rank 0, serial file). */
static int create_tensor(hid_t file, hid_t lcpl, hid_t dcpl, const char *arena, const wtensor_t *w)
{
    char path[600];
    hsize_t dims[ACCEL_TENSOR_MAX_DIMS], nb = w->nblocks;
    for (int d = 0; d < w->t->ndim; d++) dims[d] = (hsize_t)w->t->shape[d];
    hid_t s = H5Screate_simple(w->t->ndim, dims, NULL);
    ck_data_path(path, sizeof path, arena, w->t->name);
    hid_t d1 = s >= 0 ? H5Dcreate2(file, path, H5T_IEEE_F32LE, s, lcpl, dcpl, H5P_DEFAULT) : -1;
    if (s >= 0) H5Sclose(s);
    s = H5Screate_simple(1, &nb, NULL);
    ck_sum_path(path, sizeof path, arena, w->t->name);
    hid_t d2 = s >= 0 ? H5Dcreate2(file, path, H5T_STD_U64LE, s, lcpl, dcpl, H5P_DEFAULT) : -1;
    if (s >= 0) H5Sclose(s);
    int rc = d1 < 0 || d2 < 0 ? -1 : 0;
    if (d1 >= 0) H5Dclose(d1);
    if (d2 >= 0) H5Dclose(d2);
    return rc;
}

/* Before HDF5 touches the file: is there room, and may the file grow that large? HDF5 1.10 cannot
 * recover from a failure to extend the file when it closes it (the handle is left half-freed and
 * the process crashes at exit), so an over-estimate of the size is tried first with ftruncate
 * (sparse: EFBIG from a file-size limit shows here) and compared with the free space. */
static int probe_space(const char *tmp, const char *dir, const accel_layout_t *layout, int narenas,
                       char *errmsg, size_t errlen)
{
    const char *env = getenv("ACCEL_CKPT_ALIGN");
    uint64_t align = env ? (uint64_t)atoll(env) : 1 << 20, data = 0, est = 1 << 20;
    for (int j = 0; j < layout->ntensors; j++) {
        uint64_t bytes = layout->tensors[j].numel * sizeof(float);
        uint64_t sums = ck_div_up(layout->tensors[j].numel, ACCEL_CKPT_BLOCK_ELEMS) * 8;
        data += bytes;
        est += bytes + sums + 8192 + (align > 1 && bytes >= align ? align : 0) +
               (align > 1 && sums >= align ? align : 0);
    }
    data *= (uint64_t)narenas;
    est = (est - (1 << 20)) * (uint64_t)narenas + (1 << 20);
    struct statvfs vfs;
    const char *check = getenv("ACCEL_CKPT_SPACE_CHECK");   /* 0: skip the free-space check (tests) */
    if ((!check || strcmp(check, "0")) && statvfs(dir, &vfs) == 0 && vfs.f_blocks > 0 &&
        (uint64_t)vfs.f_bavail * vfs.f_frsize < data) {
        ck_fmt(errmsg, errlen, "%s needs %.3f GB but only %.3f GB are free in %s", tmp, data / 1e9,
               (double)vfs.f_bavail * vfs.f_frsize / 1e9, dir);
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)est)) {
        ck_fmt(errmsg, errlen, "cannot create %s of %.3f GB: %s", tmp, est / 1e9, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* Phase 1, rank 0 alone with the serial driver: the file, its metadata and every dataset, data
 * space allocated (contiguous, no fill). Doing the structure serially means the parallel phase
 * changes no HDF5 metadata, so an I/O error there cannot leave the ranks' metadata caches in
 * different states (which makes a parallel H5Fclose hang). */
static int create_file(const char *tmp, const accel_ckpt_meta_t *meta, int size, const char *arena_list,
                       const char *created, const accel_ckpt_arena_t *arenas, int narenas,
                       const accel_layout_t *layout, const warena_t *wa, char *errmsg, size_t errlen)
{
    char h5err[512];
    hid_t fapl = make_fapl(MPI_COMM_SELF, false), lcpl = H5Pcreate(H5P_LINK_CREATE);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), file = -1;
    int rc = -1;
    if (fapl < 0 || lcpl < 0 || dcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0 ||
        H5Pset_layout(dcpl, H5D_CONTIGUOUS) < 0 || H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 ||
        H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0 || H5Pset_obj_track_times(dcpl, false) < 0) {
        ck_fmt(errmsg, errlen, "cannot set up HDF5 property lists");
        goto out;
    }
    file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, errlen, "cannot create %s: %s", tmp, h5err);
        goto out;
    }
    if (ck_meta_write(file, meta, size, arena_list, created) < 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, errlen, "writing the metadata of %s: %s", tmp, h5err);
        goto out;
    }
    for (int i = 0; i < narenas; i++)
        for (int j = 0; j < layout->ntensors; j++)
            if (create_tensor(file, lcpl, dcpl, arenas[i].name, &wa[i].ts[j]) < 0) {
                accel_h5_last_error(h5err, sizeof h5err);
                ck_fmt(errmsg, errlen, "creating dataset /%s/%s in %s: %s", arenas[i].name,
                       layout->tensors[j].name, tmp, h5err);
                goto out;
            }
    rc = 0;
out:
    if (file >= 0 && H5Fclose(file) < 0 && rc == 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, errlen, "closing %s after creating its datasets: %s", tmp, h5err);
        rc = -1;
    }
    if (fapl >= 0) H5Pclose(fapl);
    if (lcpl >= 0) H5Pclose(lcpl);
    if (dcpl >= 0) H5Pclose(dcpl);
    return rc;
}

/* Collective write of this rank's pieces of one tensor (ncalls calls on every rank, at most
 * ck_io_chunk() elements each; none selected past this rank's last), then the hashes of the blocks
 * whose first element it holds and that lie wholly in one of its pieces. */
static int write_tensor(hid_t dxpl, wtensor_t *w, char *err, size_t errlen)
{
    const accel_tensor_t *t = w->t;
    const uint64_t B = ACCEL_CKPT_BLOCK_ELEMS, chunk = ck_io_chunk();
    hid_t fs = H5Dget_space(w->dset);
    if (fs < 0) return -1;
    int rc = 0;
    float dummy = 0, *mem;
    for (uint64_t c = 0; c < w->ncalls && !rc; c++) {
        uint64_t b = 0, e = 0;
        if (!ck_call(w->pieces, w->npieces, chunk, c, &b, &e, &mem)) b = e = 0;
        hsize_t n = e > b ? e - b : 1;
        hid_t ms = H5Screate_simple(1, &n, NULL);
        if (ms < 0 || ck_select_range(fs, t->ndim, t->shape, b, e) < 0 || (e <= b && H5Sselect_none(ms) < 0) ||
            H5Dwrite(w->dset, H5T_NATIVE_FLOAT, ms, fs, dxpl, e > b ? mem : &dummy) < 0) {
            accel_h5_last_error(err, errlen);      /* before the next HDF5 call clears the stack */
            rc = -1;
        }
        if (ms >= 0) H5Sclose(ms);
    }
    H5Sclose(fs);
    for (int i = 0; i < w->npieces; i++) {
        const ck_piece_t *p = &w->pieces[i];
        for (uint64_t k = ck_div_up(p->b, B); k < ck_div_up(p->e, B); k++) {
            uint64_t b = k * B, e = b + B < t->numel ? b + B : t->numel;
            if (e <= p->e) w->hashes[k] = accel_ckpt_hash_block(p->mem + (b - p->b), e - b);
        }
    }
    return rc;
}

/* Hash the blocks cut by the end of one of this rank's pieces (at most one per piece), reading
 * them back from the file: the part beyond the piece was written by other ranks (or by this rank
 * from another piece). Independent reads: only this rank needs them. */
static int readback_tensor(hid_t dxpl_ind, float *scratch, wtensor_t *w)
{
    const accel_tensor_t *t = w->t;
    const uint64_t B = ACCEL_CKPT_BLOCK_ELEMS;
    for (int i = 0; i < w->npieces; i++) {
        const ck_piece_t *p = &w->pieces[i];
        if (p->e <= p->b) continue;
        uint64_t k = ck_div_up(p->e, B) - 1, b = k * B, e = b + B < t->numel ? b + B : t->numel;
        if (b < p->b || e <= p->e) continue;    /* block not ours, or hashed from memory */
        hsize_t n = e - b;
        hid_t fs = H5Dget_space(w->dset), ms = H5Screate_simple(1, &n, NULL);
        int rc = (fs < 0 || ms < 0 || ck_select_range(fs, t->ndim, t->shape, b, e) < 0 ||
                  H5Dread(w->dset, H5T_NATIVE_FLOAT, ms, fs, dxpl_ind, scratch) < 0) ? -1 : 0;
        if (!rc) w->hashes[k] = accel_ckpt_hash_block(scratch, e - b);
        if (ms >= 0) H5Sclose(ms);
        if (fs >= 0) H5Sclose(fs);
        if (rc) return -1;
    }
    return 0;
}

/* Phase 3, rank 0 alone: the checksum tables (every rank has them after the allreduce), the
 * per-tensor checksum attributes and the `complete` mark, then fsync. */
static int finish_file(const char *tmp, const accel_ckpt_arena_t *arenas, int narenas,
                       const accel_layout_t *layout, const warena_t *wa, char *errmsg, size_t errlen)
{
    char h5err[512], path[600];
    hid_t fapl = make_fapl(MPI_COMM_SELF, false);
    hid_t file = fapl >= 0 ? H5Fopen(tmp, H5F_ACC_RDWR, fapl) : -1;
    int rc = file < 0 ? -1 : 0;
    if (rc) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, errlen, "reopening %s to store checksums: %s", tmp, h5err);
    }
    for (int i = 0; i < narenas && !rc; i++)
        for (int j = 0; j < layout->ntensors && !rc; j++) {
            const wtensor_t *w = &wa[i].ts[j];
            ck_sum_path(path, sizeof path, arenas[i].name, w->t->name);
            hid_t sd = H5Dopen2(file, path, H5P_DEFAULT);
            ck_data_path(path, sizeof path, arenas[i].name, w->t->name);
            hid_t dd = H5Dopen2(file, path, H5P_DEFAULT);
            if (sd < 0 || dd < 0 || H5Dwrite(sd, H5T_NATIVE_UINT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, w->hashes) < 0 ||
                accel_h5_attr_write_u64(dd, CK_ATTR_XXH, accel_ckpt_hash_tensor(w->hashes, w->nblocks)) != ACCEL_OK ||
                accel_h5_attr_write_u64(dd, CK_ATTR_XXH_NAMED, ck_hash_named(arenas[i].name, w->t->name, w->hashes,
                                                                             w->nblocks)) != ACCEL_OK) {
                accel_h5_last_error(h5err, sizeof h5err);
                ck_fmt(errmsg, errlen, "writing the checksums of '%s/%s' to %s: %s", arenas[i].name,
                       w->t->name, tmp, h5err);
                rc = -1;
            }
            if (sd >= 0) H5Dclose(sd);
            if (dd >= 0) H5Dclose(dd);
        }
    if (!rc && (accel_h5_attr_write_i64(file, CK_ATTR_NAMED_SUMS, 1) != ACCEL_OK ||
                accel_h5_attr_write_i64(file, CK_ATTR_COMPLETE, 1) != ACCEL_OK)) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, errlen, "finishing %s: %s", tmp, h5err);
        rc = -1;
    }
    if (file >= 0 && H5Fclose(file) < 0 && !rc) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, errlen, "closing %s: %s", tmp, h5err);
        rc = -1;
    }
    if (!rc && accel_h5_fsync_path(tmp, false)) {
        ck_fmt(errmsg, errlen, "fsync of %s: %s", tmp, strerror(errno));
        rc = -1;
    }
    if (fapl >= 0) H5Pclose(fapl);
    return rc;
}

/* Rank 0's text (data, n bytes; data NULL = none) on every rank: *out malloc'ed with a NUL after
 * it, or NULL. Collective; every rank returns the same status. */
static accel_status_t bcast_blob(MPI_Comm comm, const char *data, size_t n, char **out, const char *what)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    long long len = rank == 0 && data ? (long long)n : -1;
    *out = NULL;
    accel_status_t st = accel_mpi_bcast(&len, 1, MPI_LONG_LONG, 0, comm, "ckpt-meta-length");
    if (st != ACCEL_OK || len < 0) return st;
    if (len >= INT_MAX) {
        if (rank == 0) ACCEL_ERROR("checkpoint save: the %s is %lld bytes, too large", what, len);
        return ACCEL_ERR_INVALID;
    }
    char *buf = malloc((size_t)len + 1);
    st = accel_agree(comm, buf ? ACCEL_OK : ACCEL_ERR_NOMEM);
    if (st != ACCEL_OK) {
        free(buf);
        return st;
    }
    if (rank == 0) memcpy(buf, data, (size_t)len);
    buf[len] = '\0';
    st = accel_mpi_bcast(buf, (int)len, MPI_CHAR, 0, comm, "ckpt-meta");
    if (st != ACCEL_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return ACCEL_OK;
}

static void close_tensors(warena_t *wa, int narenas, int ntensors)
{
    for (int i = 0; wa && i < narenas; i++)
        for (int j = 0; wa[i].ts && j < ntensors; j++) {
            if (wa[i].ts[j].dset >= 0) H5Dclose(wa[i].ts[j].dset);
            wa[i].ts[j].dset = -1;
        }
}

accel_status_t accel_ckpt_save(MPI_Comm comm, const char *dir, const accel_layout_t *layout,
                               const accel_ckpt_arena_t *arenas, int narenas,
                               const accel_ckpt_meta_t *meta_in, int keep_last, char *path_out)
{
    int rank, size;
    if (path_out) path_out[0] = '\0';
    ACCEL_CHECK(accel_mpi_status(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank (checkpoint save)"));
    ACCEL_CHECK(accel_mpi_status(MPI_Comm_size(comm, &size), "MPI_Comm_size (checkpoint save)"));
    accel_h5_quiet_t quiet;
    accel_h5_quiet_begin(&quiet);

    accel_status_t st = ACCEL_OK;
    accel_ckpt_meta_t meta;
    char *yaml = NULL, *tokenizer_json = NULL, *chat_template = NULL, *arena_list = NULL, created[32] = "";
    char tmp[ACCEL_CKPT_PATH_MAX], final[ACCEL_CKPT_PATH_MAX], latest[ACCEL_CKPT_PATH_MAX];
    char errmsg[1024] = "", h5err[512];
    warena_t *wa = NULL;
    uint64_t *tmp_calls = NULL;
    float *scratch = NULL;
    hid_t fapl = -1, dxpl = -1, dxpl_ind = -1, file = -1;
    bool file_created = false;

    /* Rank 0's metadata is the truth: broadcast it (and the YAML text) so the collective attribute
     * writes see identical values everywhere. */
    if (rank == 0) {
        if (meta_in) meta = *meta_in;
        else accel_ckpt_meta_init(&meta);
        ck_now_utc(created, sizeof created);
    }
    st = accel_mpi_bcast(&meta, (int)sizeof meta, MPI_BYTE, 0, comm, "ckpt-meta");
    if (st == ACCEL_OK) st = accel_mpi_bcast(created, sizeof created, MPI_CHAR, 0, comm, "ckpt-time");
    if (st != ACCEL_OK) goto done;
    const accel_ckpt_meta_t *m0 = rank == 0 ? meta_in : NULL;
    st = bcast_blob(comm, m0 ? m0->config_yaml : NULL, m0 && m0->config_yaml ? strlen(m0->config_yaml) : 0,
                    &yaml, "configuration");
    if (st == ACCEL_OK)
        st = bcast_blob(comm, m0 ? m0->tokenizer_json : NULL, m0 ? m0->tokenizer_json_len : 0, &tokenizer_json,
                        "tokenizer.json");
    if (st == ACCEL_OK)
        st = bcast_blob(comm, m0 ? m0->chat_template : NULL, m0 ? m0->chat_template_len : 0, &chat_template,
                        "chat template");
    if (st != ACCEL_OK) goto done;
    meta.config_yaml = yaml;
    meta.tokenizer_json = tokenizer_json;
    meta.chat_template = chat_template;
    if (meta.nextra < 0 || meta.nextra > ACCEL_CKPT_EXTRA_MAX) meta.nextra = 0;

    st = check_args(layout, arenas, narenas, "save");
    st = accel_agree(comm, st);
    if (st == ACCEL_OK) st = ck_check_same_call(comm, layout, arenas, narenas, "save");
    if (st == ACCEL_OK && (!dir || !*dir || meta.step < 0 ||
                           strlen(dir) + 32 >= ACCEL_CKPT_PATH_MAX)) {
        ACCEL_ERROR("checkpoint save: bad directory '%s' or step %lld", dir ? dir : "(null)",
                    (long long)meta.step);
        st = ACCEL_ERR_INVALID;
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;
    snprintf(final, sizeof final, "%s/step-%08lld.h5", dir, (long long)meta.step);
    ck_fmt(tmp, sizeof tmp, "%s.tmp", final);
    snprintf(latest, sizeof latest, "%s/latest", dir);

    if (rank == 0 && mkdirs(dir)) {
        ACCEL_ERROR("checkpoint save: cannot create directory %s: %s\n--> hint: check the path and "
                    "its permissions", dir, strerror(errno));
        st = ACCEL_ERR_IO;
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;

    /* Plan who writes what. */
    wa = calloc((size_t)narenas, sizeof *wa);
    tmp_calls = malloc(sizeof *tmp_calls * (size_t)layout->ntensors);
    size_t list_len = 1;
    for (int i = 0; i < narenas; i++) list_len += strlen(arenas[i].name) + 1;
    arena_list = calloc(list_len, 1);
    if (!wa || !tmp_calls || !arena_list) st = ACCEL_ERR_NOMEM;
    for (int i = 0; st == ACCEL_OK && i < narenas; i++) {
        warena_t *w = &wa[i];
        w->a = &arenas[i];
        if (i) strcat(arena_list, ";");
        strcat(arena_list, arenas[i].name);
        w->ts = calloc((size_t)layout->ntensors, sizeof *w->ts);
        if (!w->ts) { st = ACCEL_ERR_NOMEM; break; }
        for (int j = 0; j < layout->ntensors; j++) {
            w->ts[j].t = &layout->tensors[j];
            w->ts[j].nblocks = ck_div_up(layout->tensors[j].numel, ACCEL_CKPT_BLOCK_ELEMS);
            w->ts[j].dset = -1;
            w->nblocks += w->ts[j].nblocks;
        }
        w->hashes = calloc(w->nblocks, sizeof *w->hashes);
        if (!w->hashes) { st = ACCEL_ERR_NOMEM; break; }
        uint64_t pos = 0;
        for (int j = 0; j < layout->ntensors; j++) {
            w->ts[j].hashes = w->hashes + pos;
            pos += w->ts[j].nblocks;
        }
    }
    scratch = malloc(sizeof(float) * ACCEL_CKPT_BLOCK_ELEMS);
    if (!scratch) st = ACCEL_ERR_NOMEM;
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) {
        if (st == ACCEL_ERR_NOMEM) ACCEL_ERROR0("checkpoint save: out of memory for the plan");
        goto done;
    }
    for (int i = 0; i < narenas && st == ACCEL_OK; i++) {
        if (arenas[i].replicated) st = plan_replicated(comm, size, rank, layout, &wa[i], tmp_calls);
        else st = plan_sharded(comm, size, layout, &wa[i], tmp_calls);
    }
    if (st != ACCEL_OK) goto done;   /* same verdict on every rank */

    /* A checkpoint of another run at this step (a shared directory) is never replaced. The same
     * run's (a rollback's new timeline passing the old one) is. */
    if (rank == 0 && access(final, F_OK) == 0) {
        const char *mine = accel_ckpt_meta_get_extra(&meta, ACCEL_CKPT_EXTRA_RUN_ID);
        char other[64];
        if (mine && *mine && file_run_id(final, other, sizeof other) == 0 && other[0] && strcmp(other, mine)) {
            ACCEL_ERROR("checkpoint save: %s belongs to another run (run_id %s); this run is %s, so it "
                        "is not replaced\n--> hint: give each run its own ckpt.dir", final, other, mine);
            st = ACCEL_ERR_INVALID;
        }
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto done;

    /* Phase 1: rank 0 creates the file and every dataset. */
    if (rank == 0 && (probe_space(tmp, dir, layout, narenas, errmsg, sizeof errmsg) < 0 ||
                      create_file(tmp, &meta, size, arena_list, created, arenas, narenas, layout, wa,
                                  errmsg, sizeof errmsg) < 0))
        st = ACCEL_ERR_IO;
    file_created = true;
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;

    /* Phase 2: every rank opens it through MPI-IO and writes its elements, collectively. */
    fapl = make_fapl(comm, true);
    dxpl = H5Pcreate(H5P_DATASET_XFER);
    dxpl_ind = H5Pcreate(H5P_DATASET_XFER);
    if (fapl < 0 || dxpl < 0 || dxpl_ind < 0 || H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE) < 0 ||
        H5Pset_dxpl_mpio(dxpl_ind, H5FD_MPIO_INDEPENDENT) < 0) {
        ck_fmt(errmsg, sizeof errmsg, "cannot set up HDF5 property lists");
        st = ACCEL_ERR_HDF5;
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;
    file = H5Fopen(tmp, H5F_ACC_RDWR, fapl);
    if (file < 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, sizeof errmsg, "cannot open %s with MPI-IO: %s", tmp, h5err);
        st = ACCEL_ERR_IO;
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;
    for (int i = 0; i < narenas && st == ACCEL_OK; i++)
        for (int j = 0; j < layout->ntensors && st == ACCEL_OK; j++) {
            char dpath[600];
            ck_data_path(dpath, sizeof dpath, arenas[i].name, layout->tensors[j].name);
            wa[i].ts[j].dset = H5Dopen2(file, dpath, H5P_DEFAULT);
            if (wa[i].ts[j].dset < 0) {
                ck_fmt(errmsg, sizeof errmsg, "cannot open %s in %s", dpath, tmp);
                st = ACCEL_ERR_HDF5;
            }
        }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;

    /* The data: one collective write per tensor (more for huge ones), agreed after each. */
    int done_tensors = 0;
    bool reported_mode = false;
    for (int i = 0; i < narenas && st == ACCEL_OK; i++)
        for (int j = 0; j < layout->ntensors && st == ACCEL_OK; j++) {
            wtensor_t *w = &wa[i].ts[j];
            int wrc = write_tensor(dxpl, w, h5err, sizeof h5err);
            if (wrc == 0 && test_fail(rank, size, done_tensors + 1)) {
                ck_fmt(h5err, sizeof h5err, "injected failure (ACCEL_CKPT_TEST_FAIL)");
                wrc = -1;
            }
            if (wrc < 0) {
                ck_fmt(errmsg, sizeof errmsg, "writing tensor '%s/%s' to %s: %s", arenas[i].name,
                       w->t->name, tmp, h5err);
                st = ACCEL_ERR_IO;
            }
            if (!reported_mode && w->t->numel >= ACCEL_CKPT_BLOCK_ELEMS) {
                /* HDF5 may fall back to independent I/O silently; say so at debug level. */
                H5D_mpio_actual_io_mode_t mode;
                uint32_t local_cause = 0, global_cause = 0;
                if (H5Pget_mpio_actual_io_mode(dxpl, &mode) >= 0 && mode == H5D_MPIO_NO_COLLECTIVE &&
                    H5Pget_mpio_no_collective_cause(dxpl, &local_cause, &global_cause) >= 0)
                    ACCEL_DEBUG("checkpoint: tensor '%s' was written independently (HDF5 cause 0x%x)",
                                w->t->name, (unsigned)global_cause);
                reported_mode = true;
            }
            st = accel_agree(comm, st);
            test_kill(rank, "tensor", ++done_tensors);
        }
    if (st != ACCEL_OK) goto fail;

    /* Blocks cut by a range end: read back once every rank's data is in the file. */
    if (H5Fflush(file, H5F_SCOPE_GLOBAL) < 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, sizeof errmsg, "flushing %s: %s", tmp, h5err);
        st = ACCEL_ERR_IO;
    }
    {
        accel_status_t bst = accel_mpi_barrier(comm, "ckpt-data-written");
        if (st == ACCEL_OK) st = bst;
    }
    for (int i = 0; i < narenas && st == ACCEL_OK; i++)
        for (int j = 0; j < layout->ntensors && st == ACCEL_OK; j++)
            if (readback_tensor(dxpl_ind, scratch, &wa[i].ts[j]) < 0) {
                accel_h5_last_error(h5err, sizeof h5err);
                ck_fmt(errmsg, sizeof errmsg, "reading back tensor '%s/%s' from %s for its checksum: %s",
                       arenas[i].name, layout->tensors[j].name, tmp, h5err);
                st = ACCEL_ERR_IO;
            }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;
    close_tensors(wa, narenas, layout->ntensors);
    if (H5Fclose(file) < 0) {
        accel_h5_last_error(h5err, sizeof h5err);
        ck_fmt(errmsg, sizeof errmsg, "closing %s: %s", tmp, h5err);
        st = ACCEL_ERR_IO;
    }
    file = -1;
    /* Every writer flushes its own dirty pages (on a parallel file system one client's fsync
     * does not cover another's). */
    if (st == ACCEL_OK && accel_h5_fsync_path(tmp, false)) {
        ck_fmt(errmsg, sizeof errmsg, "fsync of %s: %s", tmp, strerror(errno));
        st = ACCEL_ERR_IO;
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;

    /* Each block was hashed by exactly one rank, the others hold zero: XOR gathers the tables
     * (on rank 0, which stores them). */
    for (int i = 0; i < narenas && st == ACCEL_OK; i++) {
        uint64_t done = 0;
        while (done < wa[i].nblocks && st == ACCEL_OK) {
            int n = wa[i].nblocks - done > (1u << 26) ? 1 << 26 : (int)(wa[i].nblocks - done);
            uint64_t *p = wa[i].hashes + done;
            st = accel_mpi_reduce(rank == 0 ? MPI_IN_PLACE : p, p, n, MPI_UINT64_T, MPI_BXOR, 0, comm,
                                  "ckpt-checksum-tables");
            done += (uint64_t)n;
        }
    }
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;

    /* Phase 3: rank 0 stores the checksums and marks the file complete. */
    if (rank == 0 && finish_file(tmp, arenas, narenas, layout, wa, errmsg, sizeof errmsg) < 0)
        st = ACCEL_ERR_IO;
    st = accel_agree(comm, st);
    if (st != ACCEL_OK) goto fail;

    /* Publish: rename, then the `latest` pointer. Rank 0 alone; the others wait for its verdict. */
    if (rank == 0) {
        test_kill(rank, "before-rename", 0);
        /* Each rank fsynced its own pages above; publishing fsyncs once more (cheap: nothing
         * dirty is left), renames and fsyncs the directory, and removes tmp on failure. */
        if (accel_h5_publish(tmp, final) != ACCEL_OK) {
            char intact[ACCEL_CKPT_PATH_MAX + 128];
            int e = errno;
            describe_intact(dir, intact, sizeof intact);
            ACCEL_ERROR("checkpoint save failed: renaming %s to %s: %s\n--> hint: check the "
                        "permissions of %s; %s", tmp, final, strerror(e), dir, intact);
            st = ACCEL_ERR_IO;
        }
        if (st == ACCEL_OK) {
            test_kill(rank, "before-latest", 0);
            const char *base = strrchr(final, '/') + 1;
            char content[300];
            snprintf(content, sizeof content, "%s\n", base);
            if (accel_h5_publish_text(latest, content) != ACCEL_OK) {
                /* The new file is complete and find_latest finds it by its step; still an error. */
                ACCEL_ERROR("checkpoint saved as %s, but updating %s failed: %s\n--> hint: check "
                            "free space and permissions in %s", final, latest, strerror(errno), dir);
                st = ACCEL_ERR_IO;
            } else {
                const char *run = accel_ckpt_meta_get_extra(&meta, ACCEL_CKPT_EXTRA_RUN_ID);
                prune(dir, (long long)meta.step, keep_last, run ? run : "");
            }
        }
    }
    {
        /* Rank 0's verdict is everyone's (not an agreement: the others did nothing that can fail). */
        int v = (int)st;
        accel_status_t bst = accel_mpi_bcast(&v, 1, MPI_INT, 0, comm, "ckpt-published");
        st = bst != ACCEL_OK ? bst : (accel_status_t)v;
    }
    if (st == ACCEL_OK) {
        if (path_out) snprintf(path_out, ACCEL_CKPT_PATH_MAX, "%s", final);
        ACCEL_DEBUG("checkpoint: saved %s", final);
    }
    goto done;

fail:
    if (errmsg[0])
        ACCEL_ERROR("checkpoint save failed: %s\n--> hint: check free space and quotas of %s "
                    "(df -h)", errmsg, dir);
    close_tensors(wa, narenas, layout ? layout->ntensors : 0);
    if (file >= 0) H5Fclose(file);
    file = -1;
    /* Only after every rank closed it; an MPI failure here changes nothing (st is an error). */
    (void)accel_mpi_barrier(comm, "ckpt-cleanup");
    if (rank == 0 && file_created) unlink(tmp);
    if (rank == 0) {
        struct statvfs vfs;
        char space[96] = "";
        if (dir && statvfs(dir, &vfs) == 0 && vfs.f_blocks > 0)
            ck_fmt(space, sizeof space, " (%.3f GB free there now)", (double)vfs.f_bavail * vfs.f_frsize / 1e9);
        char intact[ACCEL_CKPT_PATH_MAX + 128];
        describe_intact(dir, intact, sizeof intact);
        ACCEL_ERROR("checkpoint step %lld was NOT saved (%s); %s%s", (long long)meta.step,
                    accel_status_str(st), intact, space);
    }

done:
    if (wa)
        for (int i = 0; i < narenas; i++) {
            free(wa[i].ts);
            free(wa[i].hashes);
            free(wa[i].storage);
        }
    free(wa);
    free(tmp_calls);
    free(scratch);
    free(arena_list);
    free(yaml);
    free(tokenizer_json);
    free(chat_template);
    if (fapl >= 0) H5Pclose(fapl);
    if (dxpl >= 0) H5Pclose(dxpl);
    if (dxpl_ind >= 0) H5Pclose(dxpl_ind);
    accel_h5_quiet_end(&quiet);
    return st;
}

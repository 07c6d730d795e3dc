/* Background checkpoints (ckpt_writer.h): a snapshot of this rank's share of the state and one
 * writer thread per rank that saves it collectively. */
#include "build_config.h"

#define _GNU_SOURCE 1               /* CPU sets, pthread_attr_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/timer.h"
#include "../h5/h5util.h"
#include "ckpt_writer.h"

#define MAX_ARENAS 4

struct accel_ckpt_writer {
    MPI_Comm comm;                  /* the writer's own duplicate of the world */
    float *snap[MAX_ARENAS];        /* the snapshot, one buffer per arena */
    size_t snap_len[MAX_ARENAS];    /* floats allocated */
    bool running;                   /* a save was started and not waited for */
    bool inline_save;               /* ... and ran in the caller's thread (no thread could start) */
    pthread_t thread;
    cpu_set_t cpus;                 /* where the writer runs: the node's CPUs outside this rank's */
    bool own_cpus;                  /* binding (mpirun and srun bind a rank, threads included, to its
                                     * cores: a writer there halves the training thread's speed) */
    /* the save in flight */
    char dir[ACCEL_CKPT_PATH_MAX];
    const accel_layout_t *layout;
    accel_ckpt_arena_t arenas[MAX_ARENAS];
    accel_ckpt_range_t *ranges[MAX_ARENAS];
    int narenas, keep_last;
    accel_ckpt_meta_t meta;
    double t0;
    accel_ckpt_writer_done_t done;
};

accel_status_t accel_ckpt_writer_create(MPI_Comm world, accel_ckpt_writer_t **out)
{
    *out = NULL;
    accel_ckpt_writer_t *w = calloc(1, sizeof *w);
    accel_status_t st = accel_agree(world, w ? ACCEL_OK : ACCEL_ERR_NOMEM);
    if (st != ACCEL_OK) {
        free(w);
        return st;
    }
    st = accel_mpi_status(MPI_Comm_dup(world, &w->comm), "MPI_Comm_dup (checkpoint writer)");
    if (st != ACCEL_OK) {
        free(w);
        return st;
    }
    MPI_Comm_set_errhandler(w->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_name(w->comm, "checkpoint-writer");
    cpu_set_t mine;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (sched_getaffinity(0, sizeof mine, &mine) == 0 && online > 0) {
        CPU_ZERO(&w->cpus);
        for (int c = 0; c < online && c < CPU_SETSIZE; c++)
            if (!CPU_ISSET(c, &mine)) CPU_SET(c, &w->cpus);
        w->own_cpus = CPU_COUNT(&w->cpus) > 0;
    }
    *out = w;
    return ACCEL_OK;
}

void accel_ckpt_writer_destroy(accel_ckpt_writer_t *w)
{
    if (!w) return;
    accel_ckpt_writer_done_t done;
    (void)accel_ckpt_writer_wait(w, &done);
    for (int i = 0; i < MAX_ARENAS; i++) free(w->snap[i]);
    MPI_Comm_free(&w->comm);
    free(w);
}

/* Floats of arena a this rank holds in its buffer (what a save reads). */
static size_t held(const accel_ckpt_arena_t *a, const accel_layout_t *layout)
{
    if (a->replicated) return layout->numel;
    if (a->nranges > 0) {
        size_t n = 0;
        for (int k = 0; k < a->nranges; k++) {
            size_t e = a->ranges[k].offset + (a->ranges[k].end - a->ranges[k].begin);
            if (e > n) n = e;
        }
        return n;
    }
    return a->shard_buffer ? a->end - a->begin : layout->numel;
}

/* After a save: what it took over. */
static void release(accel_ckpt_writer_t *w)
{
    free(w->meta.config_yaml);
    w->meta.config_yaml = NULL;
    for (int i = 0; i < w->narenas; i++) {
        free(w->ranges[i]);
        w->ranges[i] = NULL;
    }
}

/* Snapshot buffer i of at least n floats, its pages touched: a fresh page costs a fault, and the
 * first copy into 1.6 GB of them took 4.3 s instead of 0.08 (Zen 5, KVM). */
static accel_status_t grow(accel_ckpt_writer_t *w, int i, size_t n, const char *name)
{
    if (n <= w->snap_len[i]) return ACCEL_OK;
    free(w->snap[i]);
    w->snap[i] = malloc(sizeof(float) * (n ? n : 1));
    w->snap_len[i] = w->snap[i] ? n : 0;
    if (!w->snap[i]) {
        ACCEL_ERROR("ckpt.async: cannot allocate a %.1f MiB snapshot of '%s'\n--> hint: "
                    "ckpt.async=false saves without one", n * 4.0 / 1048576.0, name);
        return ACCEL_ERR_NOMEM;
    }
    /* One write per page (a memset after malloc may become a calloc, which touches nothing). */
    volatile char *page = (volatile char *)w->snap[i];
    for (size_t b = 0; b < sizeof(float) * n; b += 4096) page[b] = 0;
    return ACCEL_OK;
}

accel_status_t accel_ckpt_writer_prepare(accel_ckpt_writer_t *w, const accel_layout_t *layout,
                                         const accel_ckpt_arena_t *arenas, int narenas)
{
    accel_status_t st = narenas > MAX_ARENAS ? ACCEL_ERR_INVALID : ACCEL_OK;
    for (int i = 0; st == ACCEL_OK && i < narenas; i++) st = grow(w, i, held(&arenas[i], layout), arenas[i].name);
    return accel_agree(w->comm, st);
}

static void *writer_main(void *arg)
{
    accel_ckpt_writer_t *w = arg;
    accel_h5_lock();
    w->done.status = accel_ckpt_save(w->comm, w->dir, w->layout, w->arenas, w->narenas, &w->meta,
                                     w->keep_last, w->done.path);
    accel_h5_unlock();
    w->done.seconds = accel_now() - w->t0;
    return NULL;
}

accel_status_t accel_ckpt_writer_start(accel_ckpt_writer_t *w, const char *dir,
                                       const accel_layout_t *layout, const accel_ckpt_arena_t *arenas,
                                       int narenas, const accel_ckpt_meta_t *meta, int keep_last,
                                       int step, const char *ckpt_id, double *copy_s)
{
    double t0 = accel_now();
    accel_status_t st = w->running || narenas > MAX_ARENAS ? ACCEL_ERR_INVALID : ACCEL_OK;
    /* The snapshot: buffers grown once, then every save copies into them. */
    for (int i = 0; st == ACCEL_OK && i < narenas; i++) {
        size_t n = held(&arenas[i], layout);
        st = grow(w, i, n, arenas[i].name);
        w->ranges[i] = NULL;
        if (st == ACCEL_OK && arenas[i].nranges > 0) {
            w->ranges[i] = malloc(sizeof *w->ranges[i] * (size_t)arenas[i].nranges);
            if (!w->ranges[i]) st = ACCEL_ERR_NOMEM;
            else memcpy(w->ranges[i], arenas[i].ranges, sizeof *w->ranges[i] * (size_t)arenas[i].nranges);
        }
        if (st == ACCEL_OK) {
            memcpy(w->snap[i], arenas[i].data, sizeof(float) * n);
            w->arenas[i] = arenas[i];
            w->arenas[i].data = w->snap[i];
            w->arenas[i].ranges = w->ranges[i];
        }
    }
    st = accel_agree(w->comm, st);
    if (st != ACCEL_OK) {
        for (int i = 0; i < narenas && i < MAX_ARENAS; i++) free(w->ranges[i]);
        return st;
    }
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    w->layout = layout;
    w->narenas = narenas;
    w->keep_last = keep_last;
    w->meta = *meta;                /* config_yaml now ours; tokenizer_json, chat_template stay the caller's */
    w->done = (accel_ckpt_writer_done_t){ .status = ACCEL_OK, .step = step };
    snprintf(w->done.ckpt_id, sizeof w->done.ckpt_id, "%s", ckpt_id);
    w->t0 = t0;
    *copy_s = accel_now() - t0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (w->own_cpus) pthread_attr_setaffinity_np(&attr, sizeof w->cpus, &w->cpus);
    int rc = pthread_create(&w->thread, &attr, writer_main, w);
    if (rc && w->own_cpus) {        /* those CPUs may be outside this job's cgroup: anywhere, then */
        w->own_cpus = false;
        rc = pthread_create(&w->thread, NULL, writer_main, w);
    }
    pthread_attr_destroy(&attr);
    if (rc) {
        /* No thread: save here, synchronously, so nothing is lost. */
        ACCEL_WARN("ckpt.async: cannot start the writer thread (%s); saving in the foreground",
                   strerror(rc));
        writer_main(w);
        w->inline_save = true;      /* reported by accel_ckpt_writer_wait like any other */
    }
    w->running = true;
    return ACCEL_OK;
}

bool accel_ckpt_writer_wait(accel_ckpt_writer_t *w, accel_ckpt_writer_done_t *done)
{
    if (!w || !w->running) return false;
    if (!w->inline_save) pthread_join(w->thread, NULL);
    w->running = w->inline_save = false;
    *done = w->done;
    release(w);
    return true;
}

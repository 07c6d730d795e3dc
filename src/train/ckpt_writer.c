/* Background checkpoints (ckpt_writer.h): a snapshot of this rank's share of the state and one
 * writer thread per rank that saves it collectively. */
#include "build_config.h"

#include <pthread.h>
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
    bool running;
    pthread_t thread;
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
        if (n > w->snap_len[i]) {
            free(w->snap[i]);
            w->snap[i] = malloc(sizeof(float) * (n ? n : 1));
            w->snap_len[i] = w->snap[i] ? n : 0;
            if (!w->snap[i]) {
                ACCEL_ERROR("ckpt.async: cannot allocate a %.1f MiB snapshot of '%s'\n--> hint: "
                            "ckpt.async=false saves without one", n * 4.0 / 1048576.0, arenas[i].name);
                st = ACCEL_ERR_NOMEM;
            }
        }
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
    w->meta = *meta;                /* config_yaml now ours; tokenizer_json stays the caller's */
    w->done = (accel_ckpt_writer_done_t){ .status = ACCEL_OK, .step = step };
    snprintf(w->done.ckpt_id, sizeof w->done.ckpt_id, "%s", ckpt_id);
    w->t0 = t0;
    *copy_s = accel_now() - t0;
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    if (rc) {
        /* No thread: save here, synchronously, so nothing is lost. */
        ACCEL_WARN("ckpt.async: cannot start the writer thread (%s); saving in the foreground",
                   strerror(rc));
        writer_main(w);
        release(w);
        return w->done.status;
    }
    w->running = true;
    return ACCEL_OK;
}

bool accel_ckpt_writer_wait(accel_ckpt_writer_t *w, accel_ckpt_writer_done_t *done)
{
    if (!w || !w->running) return false;
    pthread_join(w->thread, NULL);
    w->running = false;
    *done = w->done;
    release(w);
    return true;
}

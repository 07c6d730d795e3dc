/* Background checkpoints (ckpt.async): at a step boundary the training thread copies its share
 * of the state into a snapshot and hands it to a writer thread, which does the collective
 * parallel-HDF5 save (accel_ckpt_save: tmp file, fsync, rename, `latest`) on its own duplicate of
 * the world communicator while training goes on. One save in flight: starting the next one, or
 * waiting at the end of the run or at a stop, joins it first. Needs MPI_THREAD_MULTIPLE; the
 * writer holds the HDF5 lock (accel_h5_lock) for its whole save, so the training thread's own
 * HDF5 reads wait for it. The writer runs on the node's CPUs outside the rank's binding (a
 * launcher binds a rank's threads to its cores): a save hides when the node has a core to spare. */
#ifndef ACCEL_TRAIN_CKPT_WRITER_H
#define ACCEL_TRAIN_CKPT_WRITER_H

#include <mpi.h>
#include <stdbool.h>

#include "accel/ckpt.h"

typedef struct accel_ckpt_writer accel_ckpt_writer_t;

/* Collective over world (duplicates it for the writer). */
accel_status_t accel_ckpt_writer_create(MPI_Comm world, accel_ckpt_writer_t **out);
/* Waits for a save in flight, then frees. */
void accel_ckpt_writer_destroy(accel_ckpt_writer_t *w);

/* Collective. Allocates (and touches) the snapshot for these arenas now, at start-up, so the first
 * save's copy is only a copy. */
accel_status_t accel_ckpt_writer_prepare(accel_ckpt_writer_t *w, const accel_layout_t *layout,
                                         const accel_ckpt_arena_t *arenas, int narenas);

/* What a finished save reports (the same status on every rank). */
typedef struct {
    accel_status_t status;
    int step;
    char ckpt_id[24];
    char path[ACCEL_CKPT_PATH_MAX];
    double seconds;                 /* from the snapshot to the published file */
} accel_ckpt_writer_done_t;

/* Collective. Copies what this rank will write of each arena into the snapshot (grown on first
 * use) and starts saving it in the background; on success takes over meta->config_yaml (freed
 * when done).
 * A save still in flight must have been waited for (accel_ckpt_writer_wait). *copy_s: the
 * seconds the copy took (the training thread's stall). */
accel_status_t accel_ckpt_writer_start(accel_ckpt_writer_t *w, const char *dir,
                                       const accel_layout_t *layout, const accel_ckpt_arena_t *arenas,
                                       int narenas, const accel_ckpt_meta_t *meta, int keep_last,
                                       int step, const char *ckpt_id, double *copy_s);

/* Waits for the save in flight. false when there was none; else *done says how it ended. */
bool accel_ckpt_writer_wait(accel_ckpt_writer_t *w, accel_ckpt_writer_done_t *done);

#endif

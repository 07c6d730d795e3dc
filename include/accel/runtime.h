/* The process runtime: MPI initialisation, launch detection, topology (node-local and inter-node
 * communicators) and the start-up table. One per process. */
#ifndef ACCEL_RUNTIME_H
#define ACCEL_RUNTIME_H

#include <mpi.h>
#include <stdbool.h>

#include "accel/config.h"
#include "accel/launch.h"
#include "accel/status.h"

#define ACCEL_HOST_MAX 64

/* Where a rank computes, as the runtime records it (the start-up table prints it, the trainer reads
 * it). The record lives here, in core, so that the runtime needs no device code; the device layer
 * fills it in (accel_device_setup in accel/device.h). */
typedef enum { ACCEL_DEVICE_CPU = 0, ACCEL_DEVICE_CUDA } accel_device_kind_t;

typedef struct {
    accel_device_kind_t kind;
    int index;                      /* CUDA ordinal among visible devices, -1 for the CPU */
    char name[128];                 /* "cpu" or the GPU's name */
    size_t memory;                  /* bytes of device memory, 0 for the CPU */
} accel_device_t;

typedef struct {
    int rank, size;                 /* world */
    int local_rank, local_size;     /* ranks on this node */
    int node, nnodes;               /* node index (ordered by lowest world rank) and node count */
    char host[ACCEL_HOST_MAX];
    MPI_Comm world;                 /* MPI_COMM_WORLD */
    MPI_Comm local;                 /* ranks on this node */
    MPI_Comm cross;                 /* ranks with the same local rank on every node (leaders: local 0) */
    accel_launch_t launch;
    accel_device_t device;          /* the CPU until accel_device_setup chooses */
    int threads;                    /* compute threads per rank */
    bool owns_mpi;                  /* accel_init called MPI_Init, so accel_finalize finalizes */
    bool mpi_threads;               /* MPI_THREAD_MULTIPLE provided: a second thread may call MPI
                                     * (the background checkpoint writer, ckpt.async) */
} accel_runtime_t;

/* Initialise MPI (MPI_Init_thread, FUNNELED) unless already initialised, detect the launcher, check
 * it against MPI (under Slurm, MPI size must equal SLURM_NTASKS), build the topology and set the
 * logging identity. Takes OMP_NUM_THREADS from SLURM_CPUS_PER_TASK when unset. Also keeps freed
 * memory in glibc's heap (mallopt mmap/trim thresholds; not when GLIBC_TUNABLES or MALLOC_* are
 * set), so MPI's per-call scratch buffers are not page-faulted in again every step. */
accel_status_t accel_init(int *argc, char ***argv, accel_runtime_t **out);

/* MPI settings accel relies on (the MPI-IO collective-write strategy), set as environment defaults
 * that the user's own settings override. accel_init calls it; programs that call MPI_Init
 * themselves call it first. */
void accel_mpi_defaults(void);

/* Apply the job configuration: log level, pretend nodes (dist.fake_nodes), threads. The device is
 * the device layer's to choose: call accel_device_setup (accel/device.h) next. */
accel_status_t accel_runtime_configure(accel_runtime_t *rt, const accel_config_t *cfg);

/* Rank 0 prints the table rank -> host -> local rank -> device (gathered from every rank). */
accel_status_t accel_runtime_print_table(const accel_runtime_t *rt, FILE *out);

/* Build the node-local and cross-node communicators, grouping ranks into nodes by shared memory,
 * or into fake_nodes equal blocks of consecutive ranks when fake_nodes > 0 (tests). */
accel_status_t accel_runtime_build_topology(accel_runtime_t *rt, int fake_nodes);

/* Main-process-first sections (dataset preparation, downloads, caches): rank 0 runs the section
 * while the others wait at begin; then the others run it (finding the work done). Every rank calls
 * both, in this order:  accel_main_first_begin(rt); ...section...; accel_main_first_end(rt);
 * With local = true the first process is each node's local rank 0 (node-local file systems). */
accel_status_t accel_main_first_begin(const accel_runtime_t *rt, bool local);
accel_status_t accel_main_first_end(const accel_runtime_t *rt, bool local);

/* Free communicators and finalize MPI if accel initialised it. */
void accel_finalize(accel_runtime_t *rt);

/* An MPI return code as a status: ACCEL_OK, or ACCEL_ERR_MPI after logging "<what> failed: <MPI's
 * message>". */
accel_status_t accel_mpi_status(int rc, const char *what);

/* Every rank agrees on success (a collective over comm): returns the rank's own error when it has
 * one, else the lowest status of any rank (that rank has said why), else ACCEL_OK. Call it where
 * a step that can fail on one rank is followed by a collective, so that every rank takes the same
 * path and none waits alone. */
accel_status_t accel_agree(MPI_Comm comm, accel_status_t local);

/* Abort every rank of the job with an exit code (MPI_Abort); used on timeouts and fatal errors. */
void accel_abort(int code) __attribute__((noreturn));

/* Re-run the current program with OpenBLAS's core type set when OpenBLAS misdetects this CPU (it
 * reads OPENBLAS_CORETYPE once at load time, so the fix needs a fresh exec). Call first in main(),
 * before MPI_Init. Does nothing when the detection is right or the user set the variable. */
void accel_blas_fixup(int argc, char **argv);
/* Name of the BLAS core in use ("SkylakeX", ...) or "unknown". */
const char *accel_blas_core(void);
/* Threads for the CPU matrix products (OpenBLAS, and oneDNN's OpenMP); at least 1. */
void accel_blas_set_threads(int threads);
/* Version of the oneDNN library that runs the large fp32 products ("2.6.3"), or NULL when accel was
 * built without it. */
const char *accel_blas_onednn_version(void);

#endif

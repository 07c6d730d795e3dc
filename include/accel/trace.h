/* The flight recorder and the one timeout of every wait (DESIGN.md, decision 7).
 *
 * Each rank keeps a ring of its last ACCEL_TRACE_RING collectives (communicator and its MPI name,
 * sequence number on that communicator, operation, bytes, start and end times). Collectives of the comm layer and the
 * raw MPI ones of accel_mpi_allreduce/accel_agree are recorded. A wait that passes dist.timeout
 * ends the job, but first the rank writes its ring to dist.trace_dir (trace-rank<R>.txt), waits a
 * moment for the other ranks' rings, and the lowest rank that wrote one prints a report naming the
 * ranks that never entered the collective the others wait in. SIGUSR2 writes the ring of a rank
 * at any time. `accel trace DIR` prints the same report from the files. */
#ifndef ACCEL_TRACE_H
#define ACCEL_TRACE_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#include "accel/status.h"

#define ACCEL_TRACE_RING 512

/* Read once, from the job configuration (accel_runtime_configure): where rings are written and
 * how long any wait may take (0 = forever). Installs the SIGUSR2 handler. */
void accel_trace_configure(const char *dir, double timeout_s);
double accel_trace_timeout(void);

/* Record the start of a collective on comm; returns a token for accel_trace_end (-1: none). */
int accel_trace_begin(MPI_Comm comm, const char *what, size_t bytes);
void accel_trace_end(int token);

/* The wait of `token` (what, on comm) passed the timeout: report, write the ring, wait briefly
 * for the others' rings, print the report (lowest rank with a ring) and abort the job (exit 124). */
void accel_trace_hang(int token, double waited_s) __attribute__((noreturn));

/* The blocking collectives outside the comm layer, as their nonblocking forms waited on under the
 * timeout and recorded; `what` is one word (the ring's field), e.g. "bcast-session". */
accel_status_t accel_mpi_allreduce(const void *send, void *recv, int count, MPI_Datatype type,
                                   MPI_Op op, MPI_Comm comm, const char *what);
accel_status_t accel_mpi_reduce(const void *send, void *recv, int count, MPI_Datatype type,
                                MPI_Op op, int root, MPI_Comm comm, const char *what);
accel_status_t accel_mpi_bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm,
                               const char *what);
/* count elements from every rank, of one type on both sides */
accel_status_t accel_mpi_allgather(const void *send, int count, MPI_Datatype type, void *recv,
                                   MPI_Comm comm, const char *what);
/* count elements from every rank into root's recv (ignored elsewhere) */
accel_status_t accel_mpi_gather(const void *send, int count, MPI_Datatype type, void *recv, int root,
                                MPI_Comm comm, const char *what);
accel_status_t accel_mpi_barrier(MPI_Comm comm, const char *what);

/* The report from the rings in dir: which ranks wait in which collective, and which never
 * entered it (no ring, or a ring whose last operation on that communicator is older).
 * ACCEL_ERR_NOT_FOUND when dir holds no ring. */
accel_status_t accel_trace_report(const char *dir, FILE *out);

#endif

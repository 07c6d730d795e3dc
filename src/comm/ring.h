/* Ring collectives (src/comm/ring.c) for the MPI backend. The dependency goes one way: the MPI
 * backend calls the ring, the ring calls only the local reduction (reduce.h), never the backend. */
#ifndef ACCEL_COMM_RING_H
#define ACCEL_COMM_RING_H

#include "accel/comm.h"

/* For reduce-scatter `count` is the total (size x recvcount) and recv one block; for allgather send
 * is this rank's block and recv the total. */
typedef enum { ACCEL_RING_REDUCE_SCATTER, ACCEL_RING_ALLGATHER, ACCEL_RING_ALLREDUCE } accel_ring_kind_t;
typedef struct accel_ring accel_ring_t;
accel_status_t accel_ring_start(accel_comm_t *comm, accel_ring_kind_t kind, const void *send,
                                void *recv, size_t count, accel_dtype_t dtype, accel_redop_t op,
                                accel_ring_t **out);
accel_status_t accel_ring_test(accel_ring_t *ring, int *done);
void accel_ring_free(accel_ring_t *ring);

#endif

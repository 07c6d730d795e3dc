/* Private parts of the communicator: the backend table and the request record. */
#ifndef ACCEL_COMM_INTERNAL_H
#define ACCEL_COMM_INTERNAL_H

#include "accel/comm.h"

typedef struct {
    const char *name;
    accel_status_t (*init)(accel_comm_t *comm);
    void (*fini)(accel_comm_t *comm);
    accel_status_t (*allreduce)(accel_comm_t *comm, const void *send, void *recv, size_t count,
                                accel_dtype_t dtype, accel_redop_t op, accel_request_t *req);
    accel_status_t (*reduce_scatter)(accel_comm_t *comm, const void *send, void *recv,
                                     size_t recvcount, accel_dtype_t dtype, accel_redop_t op,
                                     accel_request_t *req);
    accel_status_t (*allgather)(accel_comm_t *comm, const void *send, void *recv, size_t sendcount,
                                accel_dtype_t dtype, accel_request_t *req);
    accel_status_t (*broadcast)(accel_comm_t *comm, void *buf, size_t count, accel_dtype_t dtype,
                                int root, accel_request_t *req);
    accel_status_t (*barrier)(accel_comm_t *comm, accel_request_t *req);
    /* Poll: *done = 1 when the operation is complete (and post-processed). */
    accel_status_t (*test)(accel_comm_t *comm, accel_request_t *req, int *done);
    /* Called before the job is aborted on a timeout (NCCL: ncclCommAbort). */
    void (*abort)(accel_comm_t *comm);
} accel_comm_backend_ops_t;

struct accel_comm {
    const accel_comm_backend_ops_t *ops;
    MPI_Comm mpi;
    int rank, size;
    double timeout_s;
    size_t bytes_sent;              /* algorithmic bytes sent by this rank (nccl-tests' bus volume) */
    unsigned long ring_seq;         /* ring collectives started: their message tags */
    void *backend;                  /* backend-private state */
};

struct accel_request {
    const char *what;               /* "allreduce", ... for timeout messages */
    size_t count;
    accel_dtype_t dtype;
    accel_redop_t op;
    double start;
    MPI_Request mpi;
    void *event;                    /* NCCL: cudaEvent_t */
    struct accel_ring *ring;        /* MPI backend ring collective, instead of `mpi` */
    /* Work left for completion (MPI backend). */
    void *avg_buf;                  /* divide avg_count elements by the size (ACCEL_AVG) */
    size_t avg_count;
    void *staging;                  /* temporary result to copy into copy_to */
    void *copy_to;
    size_t copy_bytes;
};

/* Ring collectives (src/comm/ring.c) for the MPI backend. For reduce-scatter `count` is the total
 * (size x recvcount) and recv one block; for allgather send is this rank's block and recv the total. */
typedef enum { ACCEL_RING_REDUCE_SCATTER, ACCEL_RING_ALLGATHER, ACCEL_RING_ALLREDUCE } accel_ring_kind_t;
typedef struct accel_ring accel_ring_t;
accel_status_t accel_ring_start(accel_comm_t *comm, accel_ring_kind_t kind, const void *send,
                                void *recv, size_t count, accel_dtype_t dtype, accel_redop_t op,
                                accel_ring_t **out);
accel_status_t accel_ring_test(accel_ring_t *ring, int *done);
void accel_ring_free(accel_ring_t *ring);
/* inout[i] = op(in[i], inout[i]) for n elements (AVG reduces as SUM). */
void accel_comm_reduce_local(const void *in, void *inout, size_t n, accel_dtype_t dtype, accel_redop_t op);

extern const accel_comm_backend_ops_t accel_comm_mpi_ops;
extern const accel_comm_backend_ops_t accel_comm_nccl_ops;

#endif

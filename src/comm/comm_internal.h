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
    int trace;                      /* flight recorder token (accel/trace.h) */
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

extern const accel_comm_backend_ops_t accel_comm_mpi_ops;
extern const accel_comm_backend_ops_t accel_comm_nccl_ops;

#endif

/* Collectives on typed buffers behind one interface. The MPI backend moves host memory; the NCCL
 * backend moves device memory and is bootstrapped from MPI (rank 0 ncclGetUniqueId, MPI_Bcast,
 * ncclCommInitRank). Every wait is bounded by the communicator's timeout: a rank that waits longer
 * reports which collective it was in and aborts the job instead of hanging. */
#ifndef ACCEL_COMM_H
#define ACCEL_COMM_H

#include <mpi.h>
#include <stddef.h>

#include "accel/dtype.h"
#include "accel/status.h"

typedef enum { ACCEL_SUM = 0, ACCEL_AVG, ACCEL_MAX, ACCEL_MIN, ACCEL_REDOP_COUNT } accel_redop_t;
typedef enum { ACCEL_COMM_MPI = 0, ACCEL_COMM_NCCL } accel_comm_backend_t;

typedef struct accel_comm accel_comm_t;
typedef struct accel_request accel_request_t;

/* Wrap an MPI communicator (duplicated, so accel traffic never mixes with the caller's).
 * timeout_s <= 0 means wait forever. For NCCL the calling rank must already have its device set. */
accel_status_t accel_comm_create(MPI_Comm mpi_comm, accel_comm_backend_t backend, double timeout_s,
                                 accel_comm_t **out);
void accel_comm_destroy(accel_comm_t *comm);

int accel_comm_rank(const accel_comm_t *comm);
int accel_comm_size(const accel_comm_t *comm);
MPI_Comm accel_comm_mpi(const accel_comm_t *comm);
const char *accel_comm_backend_name(const accel_comm_t *comm);
/* Total bytes this rank has handed to collectives so far (for communication accounting). */
size_t accel_comm_bytes_sent(const accel_comm_t *comm);

/* Every collective is non-blocking when req is not NULL (complete it with accel_comm_wait), and
 * blocking when req is NULL. send == recv means in place. */
accel_status_t accel_comm_allreduce(accel_comm_t *comm, const void *send, void *recv, size_t count,
                                    accel_dtype_t dtype, accel_redop_t op, accel_request_t **req);
/* recv gets this rank's block of recvcount elements of the reduction of size*recvcount elements. */
accel_status_t accel_comm_reduce_scatter(accel_comm_t *comm, const void *send, void *recv,
                                         size_t recvcount, accel_dtype_t dtype, accel_redop_t op,
                                         accel_request_t **req);
/* recv gets size blocks of sendcount elements, in rank order. */
accel_status_t accel_comm_allgather(accel_comm_t *comm, const void *send, void *recv,
                                    size_t sendcount, accel_dtype_t dtype, accel_request_t **req);
accel_status_t accel_comm_broadcast(accel_comm_t *comm, void *buf, size_t count,
                                    accel_dtype_t dtype, int root, accel_request_t **req);
accel_status_t accel_comm_barrier(accel_comm_t *comm);

/* Wait for a request; frees it. On timeout the job is aborted with a message naming the collective. */
accel_status_t accel_comm_wait(accel_comm_t *comm, accel_request_t *req);
/* Poll a request without blocking (drives MPI progress). *done = 1 when complete (the request is
 * then freed). */
accel_status_t accel_comm_test(accel_comm_t *comm, accel_request_t *req, int *done);

const char *accel_redop_name(accel_redop_t op);

/* NCCL version code, or 0 when built without NCCL. */
int accel_comm_nccl_version(void);

/* The CUDA stream (cudaStream_t) an NCCL communicator's collectives run on, so that callers can
 * order their own device work before a collective with an event; NULL for the MPI backend. */
void *accel_comm_cuda_stream(const accel_comm_t *comm);

#endif

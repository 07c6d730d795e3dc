/* The communicator front end: argument checks, blocking calls as non-blocking + wait, and the
 * timeout that turns a hang into a message and an abort. */
#include "build_config.h"

#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/timer.h"
#include "accel/trace.h"
#include "comm_internal.h"

accel_status_t accel_comm_create(MPI_Comm mpi_comm, accel_comm_backend_t backend, double timeout_s,
                                 accel_comm_t **out)
{
    *out = NULL;
    accel_comm_t *comm = calloc(1, sizeof *comm);
    if (!comm) return ACCEL_ERR_NOMEM;
    comm->ops = backend == ACCEL_COMM_NCCL ? &accel_comm_nccl_ops : &accel_comm_mpi_ops;
    comm->timeout_s = timeout_s;
    if (MPI_Comm_dup(mpi_comm, &comm->mpi) != MPI_SUCCESS) {
        free(comm);
        return ACCEL_ERR_MPI;
    }
    MPI_Comm_set_errhandler(comm->mpi, MPI_ERRORS_RETURN);
    /* A duplicate has no name (MPI): the flight recorder reports it as its parent's, "+comm". */
    char parent[MPI_MAX_OBJECT_NAME] = "", name[MPI_MAX_OBJECT_NAME + 8];
    int len = 0;
    MPI_Comm_get_name(mpi_comm, parent, &len);
    snprintf(name, sizeof name, "%s+comm", len > 0 ? parent : "comm");
    MPI_Comm_set_name(comm->mpi, name);
    MPI_Comm_rank(comm->mpi, &comm->rank);
    MPI_Comm_size(comm->mpi, &comm->size);
    accel_status_t st = comm->ops->init(comm);
    if (st != ACCEL_OK) {
        MPI_Comm_free(&comm->mpi);
        free(comm);
        return st;
    }
    *out = comm;
    return ACCEL_OK;
}

void accel_comm_destroy(accel_comm_t *comm)
{
    if (!comm) return;
    comm->ops->fini(comm);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm->mpi);
    free(comm);
}

int accel_comm_rank(const accel_comm_t *comm) { return comm->rank; }
int accel_comm_size(const accel_comm_t *comm) { return comm->size; }
MPI_Comm accel_comm_mpi(const accel_comm_t *comm) { return comm->mpi; }
const char *accel_comm_backend_name(const accel_comm_t *comm) { return comm->ops->name; }
size_t accel_comm_bytes_sent(const accel_comm_t *comm) { return comm->bytes_sent; }

const char *accel_redop_name(accel_redop_t op)
{
    static const char *const names[] = { "sum", "avg", "max", "min" };
    return (unsigned)op < ACCEL_REDOP_COUNT ? names[op] : "?";
}

static accel_request_t *request_new(const char *what, size_t count, accel_dtype_t dtype, accel_redop_t op)
{
    accel_request_t *req = calloc(1, sizeof *req);
    if (!req) return NULL;
    req->what = what;
    req->count = count;
    req->dtype = dtype;
    req->op = op;
    req->start = accel_now();
    req->trace = -1;
    req->mpi = MPI_REQUEST_NULL;
    return req;
}

static accel_status_t check_args(const accel_comm_t *comm, const char *what, size_t count,
                                 accel_dtype_t dtype, accel_redop_t op)
{
    if (!comm) return ACCEL_ERR_INVALID;
    if ((unsigned)dtype >= ACCEL_DTYPE_COUNT || (unsigned)op >= ACCEL_REDOP_COUNT) {
        ACCEL_ERROR("%s: invalid dtype %d or operation %d", what, (int)dtype, (int)op);
        return ACCEL_ERR_INVALID;
    }
    if (count > (size_t)0x7fffffff) {
        ACCEL_ERROR("%s of %zu elements exceeds the per-call limit of 2^31-1 elements\n"
                    "--> hint: split the buffer into buckets", what, count);
        return ACCEL_ERR_INVALID;
    }
    return ACCEL_OK;
}

/* Start the operation; finish it here when the caller asked for a blocking call. */
static accel_status_t launch(accel_comm_t *comm, accel_request_t *req, accel_status_t st,
                             accel_request_t **out)
{
    if (st != ACCEL_OK) {
        free(req->staging);
        free(req);
        return st;
    }
    req->trace = accel_trace_begin(comm->mpi, req->what, req->count * accel_dtype_size(req->dtype));
    if (out) {
        *out = req;
        return ACCEL_OK;
    }
    return accel_comm_wait(comm, req);
}

accel_status_t accel_comm_allreduce(accel_comm_t *comm, const void *send, void *recv, size_t count,
                                    accel_dtype_t dtype, accel_redop_t op, accel_request_t **out)
{
    if (out) *out = NULL;
    ACCEL_CHECK(check_args(comm, "allreduce", count, dtype, op));
    accel_request_t *req = request_new("allreduce", count, dtype, op);
    if (!req) return ACCEL_ERR_NOMEM;
    comm->bytes_sent += 2 * (comm->size - 1) * count * accel_dtype_size(dtype) / comm->size;
    return launch(comm, req, comm->ops->allreduce(comm, send, recv, count, dtype, op, req), out);
}

accel_status_t accel_comm_reduce_scatter(accel_comm_t *comm, const void *send, void *recv,
                                         size_t recvcount, accel_dtype_t dtype, accel_redop_t op,
                                         accel_request_t **out)
{
    if (out) *out = NULL;
    ACCEL_CHECK(check_args(comm, "reduce-scatter", recvcount * (size_t)comm->size, dtype, op));
    accel_request_t *req = request_new("reduce-scatter", recvcount, dtype, op);
    if (!req) return ACCEL_ERR_NOMEM;
    comm->bytes_sent += (comm->size - 1) * recvcount * accel_dtype_size(dtype);
    return launch(comm, req, comm->ops->reduce_scatter(comm, send, recv, recvcount, dtype, op, req), out);
}

accel_status_t accel_comm_allgather(accel_comm_t *comm, const void *send, void *recv,
                                    size_t sendcount, accel_dtype_t dtype, accel_request_t **out)
{
    if (out) *out = NULL;
    ACCEL_CHECK(check_args(comm, "allgather", sendcount * (size_t)comm->size, dtype, ACCEL_SUM));
    accel_request_t *req = request_new("allgather", sendcount, dtype, ACCEL_SUM);
    if (!req) return ACCEL_ERR_NOMEM;
    comm->bytes_sent += (comm->size - 1) * sendcount * accel_dtype_size(dtype);
    return launch(comm, req, comm->ops->allgather(comm, send, recv, sendcount, dtype, req), out);
}

accel_status_t accel_comm_broadcast(accel_comm_t *comm, void *buf, size_t count,
                                    accel_dtype_t dtype, int root, accel_request_t **out)
{
    if (out) *out = NULL;
    ACCEL_CHECK(check_args(comm, "broadcast", count, dtype, ACCEL_SUM));
    if (root < 0 || root >= comm->size) {
        ACCEL_ERROR("broadcast: root %d is not a rank of a communicator of size %d", root, comm->size);
        return ACCEL_ERR_INVALID;
    }
    accel_request_t *req = request_new("broadcast", count, dtype, ACCEL_SUM);
    if (!req) return ACCEL_ERR_NOMEM;
    if (comm->rank == root) comm->bytes_sent += count * accel_dtype_size(dtype);
    return launch(comm, req, comm->ops->broadcast(comm, buf, count, dtype, root, req), out);
}

accel_status_t accel_comm_barrier(accel_comm_t *comm)
{
    accel_request_t *req = request_new("barrier", 0, ACCEL_U8, ACCEL_SUM);
    if (!req) return ACCEL_ERR_NOMEM;
    return launch(comm, req, comm->ops->barrier(comm, req), NULL);
}

accel_status_t accel_comm_test(accel_comm_t *comm, accel_request_t *req, int *done)
{
    *done = 0;
    accel_status_t st = comm->ops->test(comm, req, done);
    if (st != ACCEL_OK || *done) {
        accel_trace_end(req->trace);
        free(req->staging);
        free(req);
        if (st != ACCEL_OK) *done = 1;
    }
    return st;
}

accel_status_t accel_comm_wait(accel_comm_t *comm, accel_request_t *req)
{
    if (!req) return ACCEL_OK;
    const int trace = req->trace;
    const double start = req->start;
    for (long spins = 0;; spins++) {
        int done = 0;
        accel_status_t st = accel_comm_test(comm, req, &done);
        if (done) return st;
        if (comm->timeout_s > 0 && (spins & 63) == 0 && accel_now() - start > comm->timeout_s) {
            if (comm->ops->abort) comm->ops->abort(comm);
            accel_trace_hang(trace, accel_now() - start);   /* reports and aborts */
        }
        accel_wait_backoff(spins);
    }
}

/* NCCL backend: collectives on device memory, on a dedicated stream, bootstrapped from MPI
 * (rank 0 ncclGetUniqueId, MPI_Bcast, ncclCommInitRank). Completion is a CUDA event; waits poll it
 * together with ncclCommGetAsyncError so a failed peer is reported, and ncclCommAbort runs before
 * the job is aborted on a timeout. */
#include "build_config.h"

#include <stdlib.h>
#include <string.h>

#include "accel/device.h"
#include "accel/log.h"
#include "accel/runtime.h"
#include "comm_internal.h"

#if ACCEL_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

typedef struct {
    ncclComm_t nccl;
    cudaStream_t stream;
    int *scratch;                   /* one device int for barriers */
    cudaEvent_t queued;             /* the compute stream's work queued before a collective */
} nccl_state_t;

#define NCCL_TRY(call)                                                                          \
    do {                                                                                        \
        ncclResult_t r_ = (call);                                                               \
        if (r_ != ncclSuccess) {                                                                \
            ACCEL_ERROR("%s failed: %s", #call, ncclGetErrorString(r_));                        \
            return ACCEL_ERR_NCCL;                                                              \
        }                                                                                       \
    } while (0)

#define CUDA_TRY(call)                                                                          \
    do {                                                                                        \
        cudaError_t e_ = (call);                                                                \
        if (e_ != cudaSuccess) {                                                                \
            ACCEL_ERROR("%s failed: %s", #call, cudaGetErrorString(e_));                        \
            return ACCEL_ERR_CUDA;                                                              \
        }                                                                                       \
    } while (0)

static ncclDataType_t nccl_type(accel_dtype_t dtype)
{
    switch (dtype) {
    case ACCEL_F32: return ncclFloat32;
    case ACCEL_F16: return ncclFloat16;
    case ACCEL_BF16: return ncclBfloat16;
    case ACCEL_I32: return ncclInt32;
    case ACCEL_I64: return ncclInt64;
    default: return ncclUint8;
    }
}

static ncclRedOp_t nccl_op(accel_redop_t op)
{
    switch (op) {
    case ACCEL_AVG: return ncclAvg;
    case ACCEL_MAX: return ncclMax;
    case ACCEL_MIN: return ncclMin;
    default: return ncclSum;
    }
}

static accel_status_t nccl_init(accel_comm_t *comm)
{
    const char *why = NULL;
    if (accel_device_cuda_count(&why) == 0) {
        ACCEL_ERROR("the NCCL backend needs a GPU: %s\n--> hint: use the MPI backend for host memory", why);
        return ACCEL_ERR_UNSUPPORTED;
    }
    nccl_state_t *s = calloc(1, sizeof *s);
    if (!s) return ACCEL_ERR_NOMEM;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = ncclSuccess;
    if (comm->rank == 0) r = ncclGetUniqueId(&id);
    /* Everyone learns whether rank 0 got an id, so a failure there cannot strand the others. */
    int ok = r == ncclSuccess;
    accel_status_t st = accel_mpi_status(MPI_Bcast(&ok, 1, MPI_INT, 0, comm->mpi), "MPI_Bcast (NCCL id)");
    if (st == ACCEL_OK && !ok) {
        ACCEL_ERROR("ncclGetUniqueId failed on rank 0: %s", ncclGetErrorString(r));
        st = ACCEL_ERR_NCCL;
    }
    if (st == ACCEL_OK)
        st = accel_mpi_status(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, comm->mpi), "MPI_Bcast (NCCL id)");
    if (st != ACCEL_OK) {
        free(s);
        return st;
    }
    r = ncclCommInitRank(&s->nccl, comm->size, id, comm->rank);
    if (r != ncclSuccess) ACCEL_ERROR("ncclCommInitRank failed: %s", ncclGetErrorString(r));
    st = accel_agree(comm->mpi, r == ncclSuccess ? ACCEL_OK : ACCEL_ERR_NCCL);
    if (st != ACCEL_OK) {
        if (r == ncclSuccess) ncclCommAbort(s->nccl);
        free(s);
        return st;
    }
    if (cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaEventCreateWithFlags(&s->queued, cudaEventDisableTiming) != cudaSuccess ||
        cudaMalloc((void **)&s->scratch, sizeof(int)) != cudaSuccess) {
        ACCEL_ERROR("cannot create the NCCL stream: %s", cudaGetErrorString(cudaGetLastError()));
        ncclCommAbort(s->nccl);
        free(s);
        return ACCEL_ERR_CUDA;
    }
    comm->backend = s;
    return ACCEL_OK;
}

static void nccl_fini(accel_comm_t *comm)
{
    nccl_state_t *s = comm->backend;
    if (!s) return;
    ncclCommDestroy(s->nccl);
    if (s->queued) cudaEventDestroy(s->queued);
    cudaStreamDestroy(s->stream);
    cudaFree(s->scratch);
    free(s);
}

static accel_status_t record(nccl_state_t *s, accel_request_t *req)
{
    cudaEvent_t ev;
    CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CUDA_TRY(cudaEventRecord(ev, s->stream));
    req->event = ev;
    return ACCEL_OK;
}

/* A collective reads what the rank's compute stream (accel_device_cuda_stream) has queued before
 * it: the communicator's stream waits for that work first. */
static accel_status_t after_compute(nccl_state_t *s)
{
    void *compute = NULL;
    ACCEL_CHECK(accel_device_cuda_stream(&compute));
    CUDA_TRY(cudaEventRecord(s->queued, (cudaStream_t)compute));
    CUDA_TRY(cudaStreamWaitEvent(s->stream, s->queued, 0));
    return ACCEL_OK;
}

static accel_status_t nccl_allreduce(accel_comm_t *comm, const void *send, void *recv, size_t count,
                                     accel_dtype_t dtype, accel_redop_t op, accel_request_t *req)
{
    nccl_state_t *s = comm->backend;
    ACCEL_CHECK(after_compute(s));
    NCCL_TRY(ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), s->nccl, s->stream));
    return record(s, req);
}

static accel_status_t nccl_reduce_scatter(accel_comm_t *comm, const void *send, void *recv,
                                          size_t recvcount, accel_dtype_t dtype, accel_redop_t op,
                                          accel_request_t *req)
{
    nccl_state_t *s = comm->backend;
    ACCEL_CHECK(after_compute(s));
    NCCL_TRY(ncclReduceScatter(send, recv, recvcount, nccl_type(dtype), nccl_op(op), s->nccl, s->stream));
    return record(s, req);
}

static accel_status_t nccl_allgather(accel_comm_t *comm, const void *send, void *recv,
                                     size_t sendcount, accel_dtype_t dtype, accel_request_t *req)
{
    nccl_state_t *s = comm->backend;
    ACCEL_CHECK(after_compute(s));
    NCCL_TRY(ncclAllGather(send, recv, sendcount, nccl_type(dtype), s->nccl, s->stream));
    return record(s, req);
}

static accel_status_t nccl_broadcast(accel_comm_t *comm, void *buf, size_t count, accel_dtype_t dtype,
                                     int root, accel_request_t *req)
{
    nccl_state_t *s = comm->backend;
    ACCEL_CHECK(after_compute(s));
    NCCL_TRY(ncclBroadcast(buf, buf, count, nccl_type(dtype), root, s->nccl, s->stream));
    return record(s, req);
}

static accel_status_t nccl_barrier(accel_comm_t *comm, accel_request_t *req)
{
    nccl_state_t *s = comm->backend;
    ACCEL_CHECK(after_compute(s));
    NCCL_TRY(ncclAllReduce(s->scratch, s->scratch, 1, ncclInt32, ncclSum, s->nccl, s->stream));
    return record(s, req);
}

static accel_status_t nccl_test(accel_comm_t *comm, accel_request_t *req, int *done)
{
    nccl_state_t *s = comm->backend;
    cudaError_t e = cudaEventQuery((cudaEvent_t)req->event);
    if (e == cudaSuccess) {
        *done = 1;
        cudaEventDestroy((cudaEvent_t)req->event);
        return ACCEL_OK;
    }
    if (e != cudaErrorNotReady) {
        ACCEL_ERROR("%s: CUDA error while waiting: %s", req->what, cudaGetErrorString(e));
        return ACCEL_ERR_CUDA;
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(s->nccl, &async);
    if (async != ncclSuccess) {
        ACCEL_ERROR("%s: NCCL reported an asynchronous error: %s", req->what, ncclGetErrorString(async));
        ncclCommAbort(s->nccl);
        s->nccl = NULL;
        return ACCEL_ERR_NCCL;
    }
    return ACCEL_OK;
}

static void nccl_abort(accel_comm_t *comm)
{
    nccl_state_t *s = comm->backend;
    if (s && s->nccl) ncclCommAbort(s->nccl);
    if (s) s->nccl = NULL;
}

int accel_comm_nccl_version(void)
{
    int v = 0;
    ncclGetVersion(&v);
    return v;
}

void *accel_comm_cuda_stream(const accel_comm_t *comm)
{
    if (!comm || comm->ops != &accel_comm_nccl_ops || !comm->backend) return NULL;
    return ((nccl_state_t *)comm->backend)->stream;
}

const accel_comm_backend_ops_t accel_comm_nccl_ops = {
    .name = "nccl",
    .init = nccl_init,
    .fini = nccl_fini,
    .allreduce = nccl_allreduce,
    .reduce_scatter = nccl_reduce_scatter,
    .allgather = nccl_allgather,
    .broadcast = nccl_broadcast,
    .barrier = nccl_barrier,
    .test = nccl_test,
    .abort = nccl_abort,
};

#else /* !ACCEL_HAVE_NCCL */

static accel_status_t nccl_unavailable(accel_comm_t *comm)
{
    (void)comm;
    ACCEL_ERROR("the NCCL backend is not available: accel was built without NCCL\n"
                "--> hint: reconfigure with --with-cuda=DIR pointing at a CUDA toolkit with NCCL");
    return ACCEL_ERR_UNSUPPORTED;
}

static void nccl_nothing(accel_comm_t *comm) { (void)comm; }

int accel_comm_nccl_version(void) { return 0; }

void *accel_comm_cuda_stream(const accel_comm_t *comm)
{
    (void)comm;
    return NULL;
}

const accel_comm_backend_ops_t accel_comm_nccl_ops = {
    .name = "nccl",
    .init = nccl_unavailable,
    .fini = nccl_nothing,
};

#endif

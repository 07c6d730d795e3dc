/* MPI backend: non-blocking MPI collectives on host memory. MPI has no half-precision types, so
 * fp16 and bf16 travel as 2-byte types with user-defined reductions that compute in fp32. */
#include "build_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/runtime.h"
#include "comm_internal.h"
#include "reduce.h"
#include "ring.h"

/* Allreduces of at least this many bytes use the ring (src/comm/ring.c); tunable once from the
 * environment as ACCEL_RING_MIN_BYTES (0 = always, a huge value = never). */
static size_t ring_min_bytes(void)
{
    static long long v = -1;
    if (v < 0) {
        const char *e = getenv("ACCEL_RING_MIN_BYTES");
        v = e && *e ? atoll(e) : 256 * 1024;
        if (v < 0) v = 0;
    }
    return (size_t)v;
}

static MPI_Datatype g_f16 = MPI_DATATYPE_NULL, g_bf16 = MPI_DATATYPE_NULL;
static MPI_Op g_half_ops[3] = { MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL }; /* sum, max, min */

/* MPI's user-defined operations for the 2-byte types: the same element-wise code as the ring. */
static void half_op(void *in, void *inout, int *len, MPI_Datatype *dt, accel_redop_t op)
{
    accel_comm_reduce_local(in, inout, (size_t)*len, *dt == g_bf16 ? ACCEL_BF16 : ACCEL_F16, op);
}
static void half_sum(void *in, void *inout, int *len, MPI_Datatype *dt) { half_op(in, inout, len, dt, ACCEL_SUM); }
static void half_max(void *in, void *inout, int *len, MPI_Datatype *dt) { half_op(in, inout, len, dt, ACCEL_MAX); }
static void half_min(void *in, void *inout, int *len, MPI_Datatype *dt) { half_op(in, inout, len, dt, ACCEL_MIN); }

static accel_status_t mpi_init(accel_comm_t *comm)
{
    (void)comm;
    if (g_f16 != MPI_DATATYPE_NULL) return ACCEL_OK;
    /* Two distinct committed types so the reduction can tell fp16 from bf16. */
    MPI_Datatype f16, bf16;
    ACCEL_CHECK(accel_mpi_status(MPI_Type_contiguous(2, MPI_BYTE, &f16), "MPI_Type_contiguous (fp16)"));
    ACCEL_CHECK(accel_mpi_status(MPI_Type_commit(&f16), "MPI_Type_commit (fp16)"));
    ACCEL_CHECK(accel_mpi_status(MPI_Type_contiguous(2, MPI_BYTE, &bf16), "MPI_Type_contiguous (bf16)"));
    ACCEL_CHECK(accel_mpi_status(MPI_Type_commit(&bf16), "MPI_Type_commit (bf16)"));
    MPI_User_function *ops[3] = { half_sum, half_max, half_min };
    for (int i = 0; i < 3; i++)
        ACCEL_CHECK(accel_mpi_status(MPI_Op_create(ops[i], 1, &g_half_ops[i]), "MPI_Op_create (fp16/bf16)"));
    g_bf16 = bf16;
    g_f16 = f16;                    /* last: it marks the set-up done */
    return ACCEL_OK;
}

static void mpi_fini(accel_comm_t *comm) { (void)comm; }

static MPI_Datatype mpi_type(accel_dtype_t dtype)
{
    switch (dtype) {
    case ACCEL_F32: return MPI_FLOAT;
    case ACCEL_F16: return g_f16;
    case ACCEL_BF16: return g_bf16;
    case ACCEL_I32: return MPI_INT32_T;
    case ACCEL_I64: return MPI_INT64_T;
    case ACCEL_U8: return MPI_UINT8_T;
    default: return MPI_DATATYPE_NULL;
    }
}

/* AVG is a SUM followed by a division when the request completes. */
static MPI_Op mpi_op(accel_redop_t op, accel_dtype_t dtype)
{
    bool half = dtype == ACCEL_F16 || dtype == ACCEL_BF16;
    switch (op) {
    case ACCEL_SUM:
    case ACCEL_AVG: return half ? g_half_ops[0] : MPI_SUM;
    case ACCEL_MAX: return half ? g_half_ops[1] : MPI_MAX;
    case ACCEL_MIN: return half ? g_half_ops[2] : MPI_MIN;
    default: return MPI_OP_NULL;
    }
}

static void divide(void *buf, size_t n, accel_dtype_t dtype, int size)
{
    switch (dtype) {
    case ACCEL_F32: { float *x = buf, s = 1.0f / (float)size; for (size_t i = 0; i < n; i++) x[i] *= s; break; }
    case ACCEL_F16: { uint16_t *x = buf; for (size_t i = 0; i < n; i++) x[i] = accel_f32_to_f16(accel_f16_to_f32(x[i]) / (float)size); break; }
    case ACCEL_BF16: { uint16_t *x = buf; for (size_t i = 0; i < n; i++) x[i] = accel_f32_to_bf16(accel_bf16_to_f32(x[i]) / (float)size); break; }
    case ACCEL_I32: { int32_t *x = buf; for (size_t i = 0; i < n; i++) x[i] /= size; break; }
    case ACCEL_I64: { int64_t *x = buf; for (size_t i = 0; i < n; i++) x[i] /= size; break; }
    case ACCEL_U8: { uint8_t *x = buf; for (size_t i = 0; i < n; i++) x[i] = (uint8_t)(x[i] / size); break; }
    default: break;
    }
}

static accel_status_t mpi_allreduce(accel_comm_t *comm, const void *send, void *recv, size_t count,
                                    accel_dtype_t dtype, accel_redop_t op, accel_request_t *req)
{
    if (op == ACCEL_AVG) { req->avg_buf = recv; req->avg_count = count; }
    /* Large buffers take the bandwidth-optimal ring; small ones are latency-bound (and the ring
     * cuts what one MPI count cannot hold). */
    if (count * accel_dtype_size(dtype) >= ring_min_bytes() || count > INT_MAX)
        return accel_ring_start(comm, ACCEL_RING_ALLREDUCE, send, recv, count, dtype, op, &req->ring);
    return accel_mpi_status(MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count,
                                     mpi_type(dtype), mpi_op(op, dtype), comm->mpi, &req->mpi),
                      "MPI_Iallreduce");
}

static accel_status_t mpi_reduce_scatter(accel_comm_t *comm, const void *send, void *recv,
                                         size_t recvcount, accel_dtype_t dtype, accel_redop_t op,
                                         accel_request_t *req)
{
    size_t esize = accel_dtype_size(dtype), bytes = recvcount * esize;
    const char *s = send;
    char *r = recv;
    /* The result overlaps the input (in place, NCCL style: recv = send + rank*recvcount):
     * reduce into a temporary and copy it over on completion. */
    if (r < s + bytes * (size_t)comm->size && s < r + bytes) {
        req->staging = malloc(bytes ? bytes : 1);
        if (!req->staging) return ACCEL_ERR_NOMEM;
        req->copy_to = recv;
        req->copy_bytes = bytes;
        recv = req->staging;
    }
    if (op == ACCEL_AVG) { req->avg_buf = recv; req->avg_count = recvcount; }
    return accel_ring_start(comm, ACCEL_RING_REDUCE_SCATTER, send, recv, recvcount * (size_t)comm->size,
                            dtype, op, &req->ring);
}

static accel_status_t mpi_allgather(accel_comm_t *comm, const void *send, void *recv,
                                    size_t sendcount, accel_dtype_t dtype, accel_request_t *req)
{
    (void)req;
    return accel_ring_start(comm, ACCEL_RING_ALLGATHER, send, recv, sendcount * (size_t)comm->size,
                            dtype, ACCEL_SUM, &req->ring);
}

static accel_status_t mpi_broadcast(accel_comm_t *comm, void *buf, size_t count, accel_dtype_t dtype,
                                    int root, accel_request_t *req)
{
    if (count > INT_MAX) {
        ACCEL_ERROR("broadcast of %zu elements: the MPI backend broadcasts at most %d at once", count, INT_MAX);
        return ACCEL_ERR_INVALID;
    }
    return accel_mpi_status(MPI_Ibcast(buf, (int)count, mpi_type(dtype), root, comm->mpi, &req->mpi),
                      "MPI_Ibcast");
}

static accel_status_t mpi_barrier(accel_comm_t *comm, accel_request_t *req)
{
    return accel_mpi_status(MPI_Ibarrier(comm->mpi, &req->mpi), "MPI_Ibarrier");
}

static accel_status_t mpi_test(accel_comm_t *comm, accel_request_t *req, int *done)
{
    if (req->ring) {
        accel_status_t st = accel_ring_test(req->ring, done);
        if (st != ACCEL_OK || *done) {
            accel_ring_free(req->ring);
            req->ring = NULL;
            *done = 1;
        }
        ACCEL_CHECK(st);
    } else {
        ACCEL_CHECK(accel_mpi_status(MPI_Test(&req->mpi, done, MPI_STATUS_IGNORE), "MPI_Test"));
    }
    if (!*done) return ACCEL_OK;
    if (req->avg_buf) divide(req->avg_buf, req->avg_count, req->dtype, comm->size);
    if (req->copy_to) memcpy(req->copy_to, req->staging, req->copy_bytes);
    return ACCEL_OK;
}

const accel_comm_backend_ops_t accel_comm_mpi_ops = {
    .name = "mpi",
    .init = mpi_init,
    .fini = mpi_fini,
    .allreduce = mpi_allreduce,
    .reduce_scatter = mpi_reduce_scatter,
    .allgather = mpi_allgather,
    .broadcast = mpi_broadcast,
    .barrier = mpi_barrier,
    .test = mpi_test,
    .abort = NULL,
};

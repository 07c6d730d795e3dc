/* Ring collectives for the MPI backend, as non-blocking state machines over point-to-point
 * messages. Open MPI 4.1's non-blocking reduce-scatter (libnbc) reduces everything on rank 0 and
 * scatters from there: a full-size temporary on rank 0 and twice the traffic. The ring moves the
 * bandwidth-optimal (N-1)/N of the data per rank and needs two blocks of scratch memory.
 *
 * The buffer of count elements is cut into N blocks (block b starts at b*count/N). Reduce-scatter:
 * at step s (0..N-2) rank r sends its running sum of block r-s-1 to rank r+1 and receives the
 * running sum of block r-s-2 from rank r-1, adding its own part; after N-1 steps it holds block r
 * reduced. Allgather: at step s rank r forwards block r-s and receives block r-s-1. Allreduce is a
 * reduce-scatter followed by an allgather in the same buffer. Progress happens in ring_test.
 * MPI counts are ints: a block larger than one message (1 GiB) travels as several, in order on
 * one tag (MPI does not let messages between two ranks on a tag overtake each other). */
#include "build_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "comm_internal.h"   /* struct accel_comm: its MPI communicator, rank, size, tags */
#include "reduce.h"
#include "ring.h"

enum { PHASE_REDUCE = 0, PHASE_GATHER = 1, PHASE_DONE = 2 };

struct accel_ring {
    accel_comm_t *comm;
    accel_ring_kind_t kind;
    int phase, step, n, r, tag;
    const char *send;               /* reduce phase input (count elements) */
    char *recv;                     /* allgather/allreduce: count elements; reduce-scatter: one block */
    size_t count, esize;
    accel_dtype_t dtype;
    accel_redop_t op;
    char *acc, *rbuf;               /* running sum being sent, block being received */
    MPI_Request *req;               /* [2 x messages a block]: the step's receives, then sends */
    int nreq;
    bool posted;
};

/* The most bytes one message carries (ACCEL_RING_MAX_MESSAGE, read once: tests make it small so
 * that every block is cut; at most INT_MAX, the MPI count's range). */
static size_t max_message(void)
{
    static long long v = -1;
    if (v < 0) {
        const char *e = getenv("ACCEL_RING_MAX_MESSAGE");
        v = e && *e ? atoll(e) : 1LL << 30;
        if (v < 1 || v > INT_MAX) v = 1LL << 30;
    }
    return (size_t)v;
}

static size_t block_off(const accel_ring_t *g, int b) { return (size_t)b * g->count / (size_t)g->n; }
static size_t block_len(const accel_ring_t *g, int b) { return block_off(g, b + 1) - block_off(g, b); }
static int wrap(const accel_ring_t *g, int b) { return ((b % g->n) + g->n) % g->n; }

static accel_status_t post(accel_ring_t *g)
{
    int right = (g->r + 1) % g->n, left = (g->r + g->n - 1) % g->n;
    const void *sbuf;
    void *rbuf;
    int sblk, rblk;
    if (g->phase == PHASE_REDUCE) {
        sblk = wrap(g, g->r - g->step - 1);
        rblk = wrap(g, g->r - g->step - 2);
        sbuf = g->step == 0 ? g->send + block_off(g, sblk) * g->esize : g->acc;
        rbuf = g->rbuf;
    } else {
        sblk = wrap(g, g->r - g->step);
        rblk = wrap(g, g->r - g->step - 1);
        sbuf = g->recv + block_off(g, sblk) * g->esize;
        rbuf = g->recv + block_off(g, rblk) * g->esize;
    }
    /* each block in messages of at most max_message() bytes, received and sent in order */
    const size_t most = max_message(), rbytes = block_len(g, rblk) * g->esize, sbytes = block_len(g, sblk) * g->esize;
    const int half = g->nreq / 2;
    int rc = MPI_SUCCESS;
    for (int k = 0; k < half; k++) g->req[k] = g->req[half + k] = MPI_REQUEST_NULL;
    for (size_t o = 0, k = 0; rc == MPI_SUCCESS && (o < rbytes || (o == 0 && k == 0)); o += most, k++)
        rc = MPI_Irecv((char *)rbuf + o, (int)(rbytes - o < most ? rbytes - o : most), MPI_BYTE, left, g->tag,
                       g->comm->mpi, &g->req[k]);
    for (size_t o = 0, k = 0; rc == MPI_SUCCESS && (o < sbytes || (o == 0 && k == 0)); o += most, k++)
        rc = MPI_Isend((const char *)sbuf + o, (int)(sbytes - o < most ? sbytes - o : most), MPI_BYTE, right,
                       g->tag, g->comm->mpi, &g->req[half + k]);
    if (rc != MPI_SUCCESS) {
        ACCEL_ERROR("ring %s: MPI_Isend/MPI_Irecv failed", g->kind == ACCEL_RING_ALLGATHER ? "allgather" : "reduction");
        return ACCEL_ERR_MPI;
    }
    g->posted = true;
    return ACCEL_OK;
}

/* The step's messages arrived: fold the received running sum into this rank's own part. */
static void complete_reduce_step(accel_ring_t *g)
{
    int rblk = wrap(g, g->r - g->step - 2);
    bool last = g->step == g->n - 2;
    char *out = g->acc;
    if (last) out = g->kind == ACCEL_RING_REDUCE_SCATTER ? g->recv : g->recv + block_off(g, rblk) * g->esize;
    size_t len = block_len(g, rblk);
    /* out = own + received; the own part is read before out is written (out may alias it). */
    const char *own = g->send + block_off(g, rblk) * g->esize;
    if (out != own) memcpy(out, own, len * g->esize);
    accel_comm_reduce_local(g->rbuf, out, len, g->dtype, g->op);
}

static void next_phase(accel_ring_t *g)
{
    g->step = 0;
    if (g->phase == PHASE_REDUCE && g->kind == ACCEL_RING_ALLREDUCE) g->phase = PHASE_GATHER;
    else g->phase = PHASE_DONE;
}

accel_status_t accel_ring_test(accel_ring_t *g, int *done)
{
    *done = 0;
    while (g->phase != PHASE_DONE) {
        if (!g->posted) ACCEL_CHECK(post(g));
        int flag = 0;
        if (MPI_Testall(g->nreq, g->req, &flag, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
            ACCEL_ERROR("ring collective: MPI_Testall failed");
            return ACCEL_ERR_MPI;
        }
        if (!flag) return ACCEL_OK;
        g->posted = false;
        if (g->phase == PHASE_REDUCE) complete_reduce_step(g);
        if (++g->step == g->n - 1) next_phase(g);
    }
    *done = 1;
    return ACCEL_OK;
}

void accel_ring_free(accel_ring_t *g)
{
    if (!g) return;
    free(g->acc);
    free(g->rbuf);
    free(g->req);
    free(g);
}

accel_status_t accel_ring_start(accel_comm_t *comm, accel_ring_kind_t kind, const void *send,
                                void *recv, size_t count, accel_dtype_t dtype, accel_redop_t op,
                                accel_ring_t **out)
{
    *out = NULL;
    accel_ring_t *g = calloc(1, sizeof *g);
    if (!g) return ACCEL_ERR_NOMEM;
    *g = (accel_ring_t){ .comm = comm, .kind = kind, .n = comm->size, .r = comm->rank,
                         .tag = 0x4000 + (int)(comm->ring_seq++ % 0x3000), .send = send, .recv = recv,
                         .count = count, .esize = accel_dtype_size(dtype), .dtype = dtype, .op = op };
    /* messages a block takes: the largest block's bytes over max_message(), at least one */
    const size_t blk_bytes = (count / (size_t)g->n + 1) * g->esize, per_block = (blk_bytes + max_message() - 1) / max_message();
    g->nreq = 2 * (int)(per_block > 0 ? per_block : 1);
    g->req = malloc(sizeof *g->req * (size_t)g->nreq);
    if (!g->req) { accel_ring_free(g); return ACCEL_ERR_NOMEM; }
    for (int k = 0; k < g->nreq; k++) g->req[k] = MPI_REQUEST_NULL;
    g->phase = kind == ACCEL_RING_ALLGATHER ? PHASE_GATHER : PHASE_REDUCE;
    if (kind == ACCEL_RING_ALLGATHER) {
        /* The caller's block goes to its place in recv (unless it is there already). */
        char *mine = g->recv + block_off(g, g->r) * g->esize;
        if ((const char *)send != mine) memcpy(mine, send, block_len(g, g->r) * g->esize);
    }
    if (g->n == 1) {
        if (kind == ACCEL_RING_REDUCE_SCATTER || (kind == ACCEL_RING_ALLREDUCE && send != recv))
            memcpy(recv, send, count * g->esize);
        g->phase = PHASE_DONE;
    } else if (g->phase == PHASE_REDUCE) {
        size_t maxblk = block_len(g, 0) + 1;
        g->acc = malloc(maxblk * g->esize);
        g->rbuf = malloc(maxblk * g->esize);
        if (!g->acc || !g->rbuf) { accel_ring_free(g); return ACCEL_ERR_NOMEM; }
    }
    *out = g;
    int done;
    return accel_ring_test(g, &done);    /* post the first step right away */
}

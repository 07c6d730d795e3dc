/* Distributed evaluation (include/accel/eval.h): the padded evaluation order, a gather that drops
 * padding by its flag and checks that every sample arrives exactly once, and the mean metrics.
 * Every check in the gather is made on data all ranks hold after the same collectives, so ranks
 * always agree on success or failure and none is left waiting in a collective. */
#include "build_config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "accel/eval.h"
#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/trace.h"

int64_t accel_eval_nbatches(int64_t nsamples, int world, int m)
{
    if (nsamples <= 0 || world <= 0 || m <= 0) return 0;
    int64_t G = (int64_t)world * m;
    return (nsamples + G - 1) / G;
}

void accel_eval_indices(int64_t nsamples, int world, int rank, int m, int64_t batch, int64_t *index,
                        unsigned char *valid)
{
    int64_t first = batch * (int64_t)world * m + (int64_t)rank * m;
    for (int i = 0; i < m; i++) {
        int64_t pos = first + i;
        index[i] = nsamples > 0 ? pos % nsamples : 0;
        valid[i] = pos < nsamples;
    }
}

/* Per-rank header exchanged first: real rows, width and n_total (ranks must agree on the last two). */
enum { H_ROWS, H_WIDTH, H_TOTAL, H_OK, H_LEN };

/* Every rank learns whether any rank failed a local step (accel_agree), so all take the same path
 * and none waits in a collective the others skipped; the failing rank says which step. */
static accel_status_t agree(MPI_Comm comm, int rank, accel_status_t local, const char *what)
{
    if (local != ACCEL_OK) ACCEL_ERROR("accel_eval_gather: rank %d cannot take part: check %s", rank, what);
    return accel_agree(comm, local);
}

accel_status_t accel_eval_gather(MPI_Comm comm, const float *values, const int64_t *index,
                                 const unsigned char *valid, int n_local, int64_t n_total, int width,
                                 float *out)
{
    int rank, size;
    ACCEL_CHECK(accel_mpi_status(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank (accel_eval_gather)"));
    ACCEL_CHECK(accel_mpi_status(MPI_Comm_size(comm, &size), "MPI_Comm_size (accel_eval_gather)"));
    accel_status_t st = ACCEL_OK;
    int64_t *hdr = NULL, *all_idx = NULL, *my_idx = NULL;
    float *all_val = NULL, *my_val = NULL;
    int *counts = NULL, *displs = NULL;
    unsigned char *seen = NULL;
    MPI_Datatype row = MPI_DATATYPE_NULL;

    /* Local arguments and allocations: a problem is not returned at once but agreed on (agree()),
     * so the other ranks do not wait for this one in the next collective. */
    int64_t mine[H_LEN] = { 0, width, n_total, 1 };
    if (n_local < 0 || width <= 0 || n_total < 0 || (n_local > 0 && (!values || !index)) ||
        (n_total > 0 && !out))
        mine[H_OK] = 0;
    int nreal = 0;
    if (mine[H_OK]) {
        for (int i = 0; i < n_local; i++) nreal += !valid || valid[i];
        mine[H_ROWS] = nreal;
        my_idx = malloc(sizeof *my_idx * (size_t)(nreal ? nreal : 1));
        my_val = malloc(sizeof *my_val * (size_t)(nreal ? nreal : 1) * (size_t)width);
        if (!my_idx || !my_val) mine[H_OK] = 0;
    }
    if (mine[H_OK]) {
        for (int i = 0, k = 0; i < n_local; i++) {
            if (valid && !valid[i]) continue;
            my_idx[k] = index[i];
            memcpy(my_val + (size_t)k * (size_t)width, values + (size_t)i * (size_t)width,
                   sizeof *my_val * (size_t)width);
            k++;
        }
    }
    hdr = malloc(sizeof *hdr * H_LEN * (size_t)size);
    counts = malloc(sizeof *counts * (size_t)size);
    displs = malloc(sizeof *displs * (size_t)size);
    if (!hdr || !counts || !displs) mine[H_OK] = 0;
    /* Agree on whether every rank can take part before the variable-size exchange. */
    st = agree(comm, rank, mine[H_OK] ? ACCEL_OK : ACCEL_ERR_INVALID, "its arguments (n_local, width, "
               "n_total, NULL buffers) or memory");
    if (st != ACCEL_OK) goto out;
    st = accel_mpi_allgather(mine, H_LEN, MPI_INT64_T, hdr, comm, "eval-gather-header");
    if (st != ACCEL_OK) goto out;
    int64_t total = 0;
    for (int r = 0; r < size; r++) {
        const int64_t *h = hdr + (size_t)r * H_LEN;
        if (h[H_WIDTH] != width || h[H_TOTAL] != n_total) {
            if (rank == 0)
                ACCEL_ERROR("accel_eval_gather: ranks disagree: rank %d has width %lld and %lld "
                            "samples, rank 0 has width %d and %lld samples", r, (long long)h[H_WIDTH],
                            (long long)h[H_TOTAL], width, (long long)n_total);
            st = ACCEL_ERR_INVALID;
        }
        total += h[H_ROWS];
    }
    if (st != ACCEL_OK) goto out;
    if (total > INT_MAX) {
        if (rank == 0)
            ACCEL_ERROR("accel_eval_gather: %lld results exceed the %d an MPI count can address"
                        "\n--> hint: evaluate on a subset", (long long)total, INT_MAX);
        st = ACCEL_ERR_UNSUPPORTED;
        goto out;
    }
    for (int r = 0, d = 0; r < size; r++) {
        counts[r] = (int)hdr[(size_t)r * H_LEN + H_ROWS];
        displs[r] = d;
        d += counts[r];
    }
    all_idx = malloc(sizeof *all_idx * (size_t)(total ? total : 1));
    all_val = malloc(sizeof *all_val * (size_t)(total ? total : 1) * (size_t)width);
    seen = calloc((size_t)(n_total ? n_total : 1), 1);
    st = agree(comm, rank, all_idx && all_val && seen ? ACCEL_OK : ACCEL_ERR_NOMEM, "memory for the "
               "gathered results");
    if (st != ACCEL_OK) goto out;
    /* One row = width floats, so the counts stay in samples (width * n could overflow an int). */
    st = accel_mpi_status(MPI_Type_contiguous(width, MPI_FLOAT, &row), "MPI_Type_contiguous (result row)");
    if (st == ACCEL_OK) st = accel_mpi_status(MPI_Type_commit(&row), "MPI_Type_commit (result row)");
    if (st == ACCEL_OK)
        st = accel_mpi_status(MPI_Allgatherv(my_idx, nreal, MPI_INT64_T, all_idx, counts, displs, MPI_INT64_T, comm),
                              "MPI_Allgatherv (accel_eval_gather indices)");
    if (st == ACCEL_OK)
        st = accel_mpi_status(MPI_Allgatherv(my_val, nreal, row, all_val, counts, displs, row, comm),
                              "MPI_Allgatherv (accel_eval_gather values)");
    if (st != ACCEL_OK) goto out;

    /* Place every row at its index; every rank runs the same checks on the same data. */
    int64_t bad_range = 0, dup = 0, missing = 0;
    int64_t first_range = -1, first_dup = -1, first_missing = -1;
    int dup_rank = -1;
    for (int r = 0; r < size; r++) {
        for (int k = displs[r]; k < displs[r] + counts[r]; k++) {
            int64_t i = all_idx[k];
            if (i < 0 || i >= n_total) {
                if (!bad_range++) first_range = i;
                continue;
            }
            if (seen[i]) {
                if (!dup++) { first_dup = i; dup_rank = r; }
                continue;
            }
            seen[i] = 1;
            memcpy(out + (size_t)i * (size_t)width, all_val + (size_t)k * (size_t)width,
                   sizeof *out * (size_t)width);
        }
    }
    for (int64_t i = 0; i < n_total; i++)
        if (!seen[i] && !missing++) first_missing = i;
    if (bad_range || dup || missing) {
        if (rank == 0)
            ACCEL_ERROR("accel_eval_gather: %lld real results for %lld samples: %lld index(es) out of "
                        "range (first %lld), %lld sample(s) counted twice (first %lld, again from rank "
                        "%d), %lld sample(s) missing (first %lld)\n--> hint: mark padding duplicates "
                        "invalid and give every sample to exactly one rank (accel_eval_indices does)",
                        (long long)total, (long long)n_total, (long long)bad_range,
                        (long long)first_range, (long long)dup, (long long)first_dup, dup_rank,
                        (long long)missing, (long long)first_missing);
        st = ACCEL_ERR_INVALID;
    }
out:
    if (row != MPI_DATATYPE_NULL) (void)accel_mpi_status(MPI_Type_free(&row), "MPI_Type_free (result row)");
    free(seen);
    free(all_idx);
    free(all_val);
    free(my_idx);
    free(my_val);
    free(hdr);
    free(counts);
    free(displs);
    return st;
}

accel_status_t accel_eval_mean(const float *gathered, int64_t n_total, int width, double *mean_loss,
                               double *accuracy)
{
    if (!gathered || n_total <= 0 || width <= 0 || !mean_loss) return ACCEL_ERR_INVALID;
    double loss = 0, correct = 0;
    for (int64_t i = 0; i < n_total; i++) {
        loss += gathered[(size_t)i * (size_t)width];
        if (width >= 2) correct += gathered[(size_t)i * (size_t)width + 1];
    }
    *mean_loss = loss / (double)n_total;
    if (accuracy) *accuracy = width >= 2 ? correct / (double)n_total : -1.0;
    return ACCEL_OK;
}

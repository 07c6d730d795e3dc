/* Distributed evaluation over a whole split, with padding that is dropped exactly.
 *
 * Order: the N samples of the split, in index order, cut into global batches of G = world * m
 * samples (m per rank). Rank r of batch b takes the positions [b*G + r*m, b*G + (r+1)*m). The last
 * batch is padded up to G: a position p >= N takes sample (p mod N), a known duplicate, and is
 * flagged invalid (valid[i] = 0), so every rank runs the same number of equal-sized batches.
 *
 * Gather: each rank evaluates its samples and keeps, per sample, `width` floats (e.g. loss and
 * correct), its global index and its valid flag. accel_eval_gather hands EVERY rank all N results
 * ordered by global index, with the padding dropped by its flag, and proves that each real sample
 * arrived exactly once. (Accelerate's gather_for_metrics instead trims the last batch by
 * N % batch, which goes wrong when the last batch is uneven across processes; carrying the index
 * makes the result exact for any N, world size and m.)
 *
 * Typical loop:
 *   int64_t nb = accel_eval_nbatches(N, world, m);
 *   for (b = 0; b < nb; b++) {
 *       accel_eval_indices(N, world, rank, m, b, idx + b*m, valid + b*m);
 *       accel_dataset_read(ds, idx + b*m, m, ...);  model eval -> vals[(b*m + i)*2 + {0,1}]
 *   }
 *   accel_eval_gather(comm, vals, idx, valid, nb*m, N, 2, out);   out: N x 2 on every rank
 *   accel_eval_mean(out, N, 2, &loss, &accuracy);
 */
#ifndef ACCEL_EVAL_H
#define ACCEL_EVAL_H

#include <mpi.h>
#include <stdint.h>

#include "accel/status.h"

/* Number of global batches that cover nsamples: ceil(nsamples / (world * m)); 0 when nsamples <= 0. */
int64_t accel_eval_nbatches(int64_t nsamples, int world, int m);

/* Rank `rank`'s m samples of global batch `batch`: index[i] is the sample's global index and
 * valid[i] is 1 for a real sample, 0 for padding (whose index is position mod nsamples). */
void accel_eval_indices(int64_t nsamples, int world, int rank, int m, int64_t batch, int64_t *index,
                        unsigned char *valid);

/* Collective over comm. Every rank passes its n_local results (values: n_local x width floats,
 * index, valid; valid may be NULL = all real) and receives in `out` (n_total x width floats) the
 * results of all ranks, sample i at row i, padding dropped. Fails with ACCEL_ERR_INVALID on every
 * rank, with a message from rank 0 naming the samples, when an index is out of [0, n_total), a
 * sample arrives twice or never, or ranks disagree on width or n_total. The row counts travel as
 * MPI ints, so at most INT_MAX real samples (ACCEL_ERR_UNSUPPORTED beyond). */
accel_status_t accel_eval_gather(MPI_Comm comm, const float *values, const int64_t *index,
                                 const unsigned char *valid, int n_local, int64_t n_total, int width,
                                 float *out);

/* Means over gathered results, summed in index order (so the result does not depend on the world
 * size): column 0 is the per-sample loss, column 1 (when width >= 2) is 1 for a correct prediction
 * and 0 otherwise. accuracy may be NULL; it is set to -1 when width < 2. */
accel_status_t accel_eval_mean(const float *gathered, int64_t n_total, int width, double *mean_loss,
                               double *accuracy);

#endif

/* Your own training loop, distributed with accel: the C analogue of "add five lines to your loop".
 *
 * The model, loss and update below are plain C written by you (least squares: y = 3x - 1 + noise).
 * accel contributes the marked lines: start-up from mpirun/srun, this rank's share of each global
 * batch (the same data order for any rank count), and averaging the gradients across ranks.
 *
 *   mpicc -O2 $(pkg-config --cflags accel) own_loop.c $(pkg-config --libs accel) -o own_loop
 *   mpirun -np 4 ./own_loop */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <accel/accel.h>

enum { SAMPLES = 4096, GLOBAL_BATCH = 64, STEPS = 300 };

static void data(int64_t i, float *x, float *y)
{
    *x = 4.0f * accel_rng_uniform(7, ACCEL_RNG_DATA, 0, (uint64_t)i) - 2.0f;
    *y = 3.0f * *x - 1.0f + 0.1f * accel_rng_normal(7, ACCEL_RNG_DATA, 1, (uint64_t)i);
}

int main(int argc, char **argv)
{
    accel_runtime_t *rt;                                                     /* accel: 1 */
    if (accel_init(&argc, &argv, &rt) != ACCEL_OK) return 1;                 /* accel: 2 */
    accel_comm_t *comm;
    accel_comm_create(rt->world, ACCEL_COMM_MPI, 60.0, &comm);               /* accel: 3 */
    accel_sampler_t sampler;
    char err[256];
    if (accel_sampler_init(&sampler, 1, SAMPLES, GLOBAL_BATCH, 1, rt->size, rt->rank, true, err,
                           sizeof err) != ACCEL_OK) {                        /* accel: 4 */
        if (rt->rank == 0) fprintf(stderr, "%s\n", err);
        accel_finalize(rt);
        return 2;
    }
    int m = accel_sampler_micro_batch(&sampler);
    int64_t *idx = malloc(sizeof *idx * (size_t)m);

    float w[2] = { 0.0f, 0.0f };             /* your model: y = w0 * x + w1 */
    const float lr = 0.1f;
    double loss = 0;
    for (int step = 0; step < STEPS; step++) {
        accel_sampler_indices(&sampler, 0, idx);
        accel_sampler_advance(&sampler);
        double g[3] = { 0, 0, 0 };           /* dL/dw0, dL/dw1, loss sum over this rank's samples */
        for (int i = 0; i < m; i++) {
            float x, y;
            data(idx[i], &x, &y);
            float r = w[0] * x + w[1] - y;
            g[0] += r * x;
            g[1] += r;
            g[2] += 0.5 * r * r;
        }
        float gf[3] = { (float)g[0], (float)g[1], (float)g[2] };
        accel_comm_allreduce(comm, gf, gf, 3, ACCEL_F32, ACCEL_SUM, NULL);  /* accel: 5 */
        w[0] -= lr * gf[0] / GLOBAL_BATCH;
        w[1] -= lr * gf[1] / GLOBAL_BATCH;
        loss = gf[2] / GLOBAL_BATCH;
    }
    if (rt->rank == 0)
        printf("own_loop: %d ranks, %d steps: w = %.3f, b = %.3f (true 3, -1), loss %.5f\n",
               rt->size, STEPS, w[0], w[1], loss);
    int ok = fabsf(w[0] - 3.0f) < 0.05f && fabsf(w[1] + 1.0f) < 0.05f;
    free(idx);
    accel_sampler_free(&sampler);
    accel_comm_destroy(comm);
    accel_finalize(rt);
    return ok ? 0 : 1;
}

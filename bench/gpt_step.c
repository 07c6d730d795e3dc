/* gpt_step: time the built-in GPT's forward+backward (the compute of one training micro-step,
 * without the optimizer or gradient all-reduce) on the synthetic token task. Every MPI rank runs
 * its own micro-batches, as data-parallel training does; rank 0 prints the summed tokens/s.
 *   mpirun -np 2 bench/gpt_step [iters=N] [micro=N] [key=value ...]
 * key=value are accel configuration overrides (model.layers=4 precision=bf16 ...). */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel.h"

/* CPU time of this process: on a shared machine it shows the cost of the work itself, while
 * wall-clock rates also count time spent waiting for a core. */
static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    accel_blas_fixup(argc, argv);
    int iters = 10, micro = 8, n = 0;
    char **over = calloc((size_t)argc + 1, sizeof *over);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: gpt_step [iters=N] [micro=N] [key=value ...]\n");
            return 0;
        }
        if (!strncmp(argv[i], "iters=", 6)) iters = atoi(argv[i] + 6);
        else if (!strncmp(argv[i], "micro=", 6)) micro = atoi(argv[i] + 6);
        else over[n++] = argv[i];
    }
    accel_runtime_t *rt = NULL;
    accel_config_t cfg;
    char err[1024];
    int rc = 1;
    if (accel_init(&argc, &argv, &rt) != ACCEL_OK) return 1;
    over[n++] = "model.name=gpt";
    if (accel_config_load(&cfg, NULL, n, over, NULL, err, sizeof err) != ACCEL_OK) {
        ACCEL_ERROR0("%s", err);
        goto out;
    }
    if (accel_runtime_configure(rt, &cfg) != ACCEL_OK || accel_device_setup(rt, &cfg) != ACCEL_OK) goto out;
    accel_model_t m;
    if (accel_model_create(&cfg, &m) != ACCEL_OK) goto out;
    float *params, *grads;
    accel_arena_alloc(&m.layout, &params);
    accel_arena_alloc(&m.layout, &grads);
    accel_arena_init_params(&m.layout, params, cfg.seed);
    const int T = cfg.model.context;
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)micro * (T + 1));
    for (int i = 0; i < micro; i++)
        accel_synthetic_tokens(cfg.seed, cfg.model.vocab, T, rt->rank * micro + i, tokens + (size_t)i * (T + 1));
    accel_batch_t b = { .n = micro, .tokens = tokens };
    double loss, t0 = 0, c0 = 0, best = 1e30;
    for (int it = -2; it < iters; it++) {           /* two warm-up passes */
        if (it == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = accel_now();
            c0 = cpu_seconds();
        }
        double ti = accel_now();
        if (m.ops->forward_backward(m.state, &m.layout, params, grads, &b, 1.0f / micro, &loss)) goto out;
        double pass = accel_now() - ti;
        if (it >= 0 && pass < best) best = pass;
    }
    double dt = accel_now() - t0, dc = cpu_seconds() - c0;
    double rates[2] = { (double)iters * micro * T / dt, (double)iters * micro * T / dc }, sums[2];
    MPI_Reduce(rates, sums, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    ACCEL_INFO("gpt %s L=%d C=%d heads=%d T=%d V=%d micro=%d x %d ranks (blas %s): %.0f tokens/s "
               "(%.1f ms per micro-batch per rank, best %.1f; %.0f tokens per CPU-second per rank), loss %.4f", cfg.precision, cfg.model.layers,
               cfg.model.width, cfg.model.heads, T, cfg.model.vocab, micro, rt->size,
               accel_blas_core(), sums[0], 1e3 * dt / iters, 1e3 * best, sums[1] / rt->size, loss / micro);
    rc = 0;
out:
    accel_finalize(rt);
    return rc;
}

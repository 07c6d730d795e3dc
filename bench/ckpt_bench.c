/* Checkpoint throughput benchmark (not a test): save and load a ZeRO-sharded fp32 state of
 * --size-mb megabytes through accel_ckpt_save/load and compare with `dd conv=fdatasync` of the same
 * size measured in the same run on the same directory.
 *
 *   make bench/ckpt_bench
 *   for n in 1 2 4; do mpirun -np $n bench/ckpt_bench --size-mb 1024 --dir /scratch/me/bench; done
 *
 * Each rank allocates and touches only its own shard. Save times include the fsync, rename and
 * `latest` update; the file is removed at the end. */
#include "build_config.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"

static double now(void) { return MPI_Wtime(); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    accel_mpi_defaults();          /* the MPI-IO settings accel_train uses */
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    accel_log_set_identity(rank, size, "bench");
    double size_mb = 1024, tensor_mb = 64;
    int reps = 3;
    const char *dir = "ckpt-bench";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size-mb") && i + 1 < argc) size_mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--tensor-mb") && i + 1 < argc) tensor_mb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else {
            if (rank == 0)
                printf("usage: mpirun -np N ckpt_bench [--size-mb 1024] [--tensor-mb 64] [--reps 3] "
                       "[--dir ckpt-bench]\n");
            MPI_Finalize();
            return strcmp(argv[i], "--help") && strcmp(argv[i], "-h") ? 2 : 0;
        }
    }
    if (reps < 1) reps = 1;

    /* Tensors of [rows, 4096] fp32, tensor_mb each (the last one takes the remainder). */
    accel_layout_t L;
    accel_layout_init(&L);
    int64_t total = (int64_t)(size_mb * 1048576.0 / 4), per = (int64_t)(tensor_mb * 1048576.0 / 4);
    if (per < 4096) per = 4096;
    char name[64];
    for (int64_t done = 0, t = 0; done < total; t++) {
        int64_t n = total - done < per ? total - done : per;
        int64_t shape[2] = { n / 4096 > 0 ? n / 4096 : 1, n >= 4096 ? 4096 : n };
        snprintf(name, sizeof name, "layer.%lld.weight", (long long)t);
        accel_layout_add(&L, name, 2, shape, (int)t, 0, 0, NULL);
        done += shape[0] * shape[1];
        if (shape[0] * shape[1] == 0) break;
    }
    size_t N = L.numel, b = (size_t)rank * N / (size_t)size, e = (size_t)(rank + 1) * N / (size_t)size;
    float *shard = malloc((e - b + 1) * sizeof(float));
    if (!shard) {
        fprintf(stderr, "rank %d: cannot allocate %zu MB\n", rank, (e - b) * 4 >> 20);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < e - b; i++) shard[i] = (float)((b + i) % 1000) * 0.001f;
    /* a shard buffer: shard[0] is arena element b */
    accel_ckpt_arena_t arena = { .name = "model", .data = shard, .begin = b, .end = e, .shard_buffer = true };
    double bytes = (double)accel_layout_params(&L) * 4;

    double *ts = calloc((size_t)reps, sizeof *ts), *tl = calloc((size_t)reps, sizeof *tl);
    char path[ACCEL_CKPT_PATH_MAX];
    int rc = 0;
    for (int r = 0; r < reps && !rc; r++) {
        accel_ckpt_meta_t meta;
        accel_ckpt_meta_init(&meta);
        meta.step = r + 1;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (accel_ckpt_save(MPI_COMM_WORLD, dir, &L, &arena, 1, &meta, 1, path) != ACCEL_OK) rc = 1;
        ts[r] = now() - t0;
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now();
        if (!rc && accel_ckpt_load(MPI_COMM_WORLD, path, &L, &arena, 1, NULL) != ACCEL_OK) rc = 1;
        tl[r] = now() - t0;
    }
    double dd = 0;
    if (rank == 0 && !rc) {
        char cmd[ACCEL_CKPT_PATH_MAX + 200];
        snprintf(cmd, sizeof cmd, "dd if=/dev/zero of='%s/dd.bin' bs=4M count=%d conv=fdatasync 2>/dev/null",
                 dir, (int)(bytes / 4194304.0 + 0.5));
        double t0 = now();
        if (system(cmd) != 0) dd = -1;
        else dd = now() - t0;
        snprintf(cmd, sizeof cmd, "%s/dd.bin", dir);
        unlink(cmd);
    }
    if (rank == 0 && !rc) {
        qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
        qsort(tl, (size_t)reps, sizeof *tl, cmp_double);
        double ms = ts[reps / 2], ml = tl[reps / 2];
        printf("ckpt_bench: %d ranks, %.3f GB of fp32 state in %d tensors, %d reps (medians), dir %s\n",
               size, bytes / 1e9, L.ntensors, reps, dir);
        printf("  save (write+fsync+rename): %8.3f s  %7.3f GB/s\n", ms, bytes / 1e9 / ms);
        printf("  load (read+verify):        %8.3f s  %7.3f GB/s\n", ml, bytes / 1e9 / ml);
        if (dd > 0) printf("  dd conv=fdatasync:         %8.3f s  %7.3f GB/s\n", dd, bytes / 1e9 / dd);
        else printf("  dd conv=fdatasync: failed\n");
        char latest[ACCEL_CKPT_PATH_MAX + 16];
        unlink(path);
        snprintf(latest, sizeof latest, "%s/latest", dir);
        unlink(latest);
        rmdir(dir);
    }
    free(ts);
    free(tl);
    free(shard);
    accel_layout_free(&L);
    MPI_Finalize();
    return rc;
}

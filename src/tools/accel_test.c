/* accel test: a pre-flight check under the real launcher. It verifies every collective on every
 * dtype (blocking and non-blocking) element by element, measures allreduce bandwidth as nccl-tests
 * defines it (algbw = bytes / time; busbw = algbw * 2(n-1)/n), writes and reads back a parallel HDF5
 * file collectively, and ends with one PASSED/FAILED line. Exit status 0 only when all passed. */
#include "build_config.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "tool.h"

typedef struct {
    accel_runtime_t *rt;
    accel_comm_t *comm;
    int checks, failures;
} tester_t;

/* Test value of element i on rank r: small integers, exact in every dtype even after summing
 * over 64 ranks in bf16 (8-bit mantissa): at most 3 * 64 = 192 < 256. */
static double value_of(int r, size_t i) { return (double)((r + (int)i) % 3 + 1); }

static bool is_int(accel_dtype_t dt) { return dt == ACCEL_I32 || dt == ACCEL_I64 || dt == ACCEL_U8; }

/* Expected reduction of element i over all ranks; AVG is computed as the backend does it. */
static double reduce_expected(int n, size_t i, accel_redop_t op, accel_dtype_t dt)
{
    double acc = value_of(0, i);
    for (int r = 1; r < n; r++) {
        double v = value_of(r, i);
        acc = op == ACCEL_MAX ? fmax(acc, v) : op == ACCEL_MIN ? fmin(acc, v) : acc + v;
    }
    if (op == ACCEL_AVG) acc = is_int(dt) ? floor(acc / n) : acc / n;
    return acc;
}

static double tolerance(accel_dtype_t dt, double expected)
{
    if (dt == ACCEL_F16) return 1e-3 * fabs(expected) + 1e-3;
    if (dt == ACCEL_BF16) return 8e-3 * fabs(expected) + 1e-2;
    if (dt == ACCEL_F32) return 1e-6 * fabs(expected);
    return 0;
}

static void record(tester_t *t, bool ok, const char *what, accel_dtype_t dt, const char *op,
                   bool nonblocking, size_t bad_index, double got, double want)
{
    /* All ranks agree on the outcome so the report and the exit status are the same everywhere. */
    bool all = accel_agree(t->rt->world, ok ? ACCEL_OK : ACCEL_ERR_INVALID) == ACCEL_OK;
    t->checks++;
    if (!ok)
        ACCEL_ERROR("%s %s %s (%s): element %zu is %g, expected %g", what, accel_dtype_name(dt), op,
                    nonblocking ? "non-blocking" : "blocking", bad_index, got, want);
    if (!all) t->failures++;
}

static accel_status_t run_collective(tester_t *t, int kind, accel_dtype_t dt, accel_redop_t op, bool nb)
{
    static const char *const names[] = { "allreduce", "reduce-scatter", "allgather", "broadcast" };
    int n = t->rt->size, r = t->rt->rank;
    const size_t block = 1000;                    /* odd sizes catch off-by-block errors */
    size_t total = block * (size_t)n, es = accel_dtype_size(dt);
    char *send = calloc(total, es), *recv = calloc(total, es);
    if (!send || !recv) { free(send); free(recv); return ACCEL_ERR_NOMEM; }
    accel_request_t *req = NULL, **preq = nb ? &req : NULL;
    accel_status_t st = ACCEL_OK;
    size_t count = 0;
    int root = n - 1;
    switch (kind) {
    case 0:
        count = total;
        for (size_t i = 0; i < total; i++) accel_dtype_store(send, dt, i, value_of(r, i));
        st = accel_comm_allreduce(t->comm, send, recv, total, dt, op, preq);
        break;
    case 1:
        count = block;
        for (size_t i = 0; i < total; i++) accel_dtype_store(send, dt, i, value_of(r, i));
        st = accel_comm_reduce_scatter(t->comm, send, recv, block, dt, op, preq);
        break;
    case 2:
        count = total;
        for (size_t i = 0; i < block; i++) accel_dtype_store(send, dt, i, value_of(r, r * block + i));
        st = accel_comm_allgather(t->comm, send, recv, block, dt, preq);
        break;
    default:
        count = total;
        for (size_t i = 0; i < total; i++) accel_dtype_store(recv, dt, i, r == root ? value_of(root, i) : 0);
        st = accel_comm_broadcast(t->comm, recv, total, dt, root, preq);
        break;
    }
    if (st == ACCEL_OK && nb) st = accel_comm_wait(t->comm, req);
    if (st != ACCEL_OK) { free(send); free(recv); return st; }
    size_t bad = 0;
    double got = 0, want = 0;
    bool ok = true;
    for (size_t i = 0; i < count && ok; i++) {
        size_t gi = kind == 1 ? (size_t)r * block + i : i;
        want = kind <= 1 ? reduce_expected(n, gi, op, dt) : kind == 2 ? value_of((int)(i / block), i)
                                                                       : value_of(root, i);
        got = accel_dtype_load(recv, dt, i);
        if (fabs(got - want) > tolerance(dt, want)) { ok = false; bad = i; }
    }
    record(t, ok, names[kind], dt, kind <= 1 ? accel_redop_name(op) : "-", nb, bad, got, want);
    free(send);
    free(recv);
    return ACCEL_OK;
}

static accel_status_t test_collectives(tester_t *t)
{
    for (int nb = 0; nb < 2; nb++)
        for (int dt = 0; dt < ACCEL_DTYPE_COUNT; dt++) {
            for (int kind = 0; kind < 2; kind++)
                for (int op = 0; op < ACCEL_REDOP_COUNT; op++)
                    ACCEL_CHECK(run_collective(t, kind, (accel_dtype_t)dt, (accel_redop_t)op, nb));
            for (int kind = 2; kind < 4; kind++)
                ACCEL_CHECK(run_collective(t, kind, (accel_dtype_t)dt, ACCEL_SUM, nb));
        }
    ACCEL_CHECK(accel_comm_barrier(t->comm));
    t->checks++;
    if (t->rt->rank == 0)
        printf("collectives      %d checks: allreduce and reduce-scatter (sum/avg/max/min), allgather, "
               "broadcast, barrier x {fp32 fp16 bf16 int32 int64 uint8} x {blocking, non-blocking}: %s\n",
               t->checks, t->failures ? "FAILED" : "ok");
    return ACCEL_OK;
}

static accel_status_t test_bandwidth(tester_t *t, size_t max_bytes)
{
    int n = t->rt->size;
    size_t sizes[] = { 8 << 10, 1 << 20, 16 << 20, 64 << 20 };
    float *buf = malloc(max_bytes);
    if (!buf) return ACCEL_ERR_NOMEM;
    if (t->rt->rank == 0)
        printf("allreduce fp32 sum, %d rank%s (algbw = bytes/time, busbw = algbw*2(n-1)/n):\n"
               "  %12s %8s %12s %12s %12s\n", n, n == 1 ? "" : "s", "bytes", "iters", "time (us)",
               "algbw GB/s", "busbw GB/s");
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0] && sizes[s] <= max_bytes; s++) {
        size_t count = sizes[s] / sizeof(float);
        for (size_t i = 0; i < count; i++) buf[i] = 1.0f;
        int iters = sizes[s] <= (1 << 20) ? 50 : 10;
        ACCEL_CHECK(accel_comm_allreduce(t->comm, buf, buf, count, ACCEL_F32, ACCEL_SUM, NULL)); /* warm-up */
        ACCEL_CHECK(accel_comm_barrier(t->comm));
        double t0 = accel_now();
        for (int it = 0; it < iters; it++)
            ACCEL_CHECK(accel_comm_allreduce(t->comm, buf, buf, count, ACCEL_F32, ACCEL_AVG, NULL));
        double dt = (accel_now() - t0) / iters, tmax = 0;
        ACCEL_CHECK(accel_mpi_status(MPI_Allreduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, t->rt->world),
                                     "MPI_Allreduce (bandwidth)"));
        double algbw = (double)sizes[s] / tmax / 1e9;
        double busbw = n > 1 ? algbw * 2.0 * (n - 1) / n : 0.0;
        if (t->rt->rank == 0)
            printf("  %12zu %8d %12.1f %12.3f %12.3f\n", sizes[s], iters, tmax * 1e6, algbw, busbw);
    }
    free(buf);
    return ACCEL_OK;
}

/* Each rank writes its row block of a 2-D dataset collectively, then reads the next rank's block. */
static accel_status_t test_hdf5(tester_t *t, const char *dir)
{
    int n = t->rt->size, r = t->rt->rank;
    char path[4096];
    long tag = 0;
    if (r == 0) tag = (long)getpid();
    ACCEL_CHECK(accel_mpi_status(MPI_Bcast(&tag, 1, MPI_LONG, 0, t->rt->world), "MPI_Bcast (file name)"));
    snprintf(path, sizeof path, "%s/accel-test-%ld.h5", dir, tag);
    const hsize_t rows = 64, cols = 1024;
    hsize_t dims[2] = { rows * (hsize_t)n, cols }, start[2] = { rows * (hsize_t)r, 0 }, count[2] = { rows, cols };
    float *buf = malloc(sizeof(float) * rows * cols);
    if (!buf) return ACCEL_ERR_NOMEM;
    for (hsize_t i = 0; i < rows * cols; i++) buf[i] = (float)(start[0] * cols + i);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_fapl_mpio(fapl, t->rt->world, MPI_INFO_NULL);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    bool ok = true;
    double t0 = accel_now();
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (f < 0) {
        ok = false;
    } else {
        hid_t fs = H5Screate_simple(2, dims, NULL), ms = H5Screate_simple(2, count, NULL);
        hid_t d = H5Dcreate2(f, "data", H5T_NATIVE_FLOAT, fs, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        ok = d >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
             H5Dwrite(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, buf) >= 0;
        if (d >= 0) H5Dclose(d);
        H5Sclose(fs);
        H5Sclose(ms);
        ok = H5Fclose(f) >= 0 && ok;
    }
    double t_write = accel_now() - t0;
    int peer = (r + 1) % n;
    hsize_t pstart[2] = { rows * (hsize_t)peer, 0 };
    size_t bad = 0;
    if (ok) {
        memset(buf, 0, sizeof(float) * rows * cols);
        f = H5Fopen(path, H5F_ACC_RDONLY, fapl);
        hid_t d = f >= 0 ? H5Dopen2(f, "data", H5P_DEFAULT) : -1;
        hid_t fs = d >= 0 ? H5Dget_space(d) : -1, ms = H5Screate_simple(2, count, NULL);
        ok = d >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, pstart, NULL, count, NULL) >= 0 &&
             H5Dread(d, H5T_NATIVE_FLOAT, ms, fs, dxpl, buf) >= 0;
        for (hsize_t i = 0; ok && i < rows * cols; i++)
            if (buf[i] != (float)(pstart[0] * cols + i)) { bad++; }
        if (fs >= 0) H5Sclose(fs);
        H5Sclose(ms);
        if (d >= 0) H5Dclose(d);
        if (f >= 0) H5Fclose(f);
    }
    H5Pclose(fapl);
    H5Pclose(dxpl);
    free(buf);
    if (!ok) ACCEL_ERROR("parallel HDF5 write/read of %s failed", path);
    if (bad) ACCEL_ERROR("parallel HDF5: %zu of %llu elements read back wrong", bad, rows * cols);
    record(t, ok && !bad, "parallel HDF5", ACCEL_F32, "write/read", false, 0, (double)bad, 0);
    ACCEL_CHECK(accel_mpi_status(MPI_Barrier(t->rt->world), "MPI_Barrier (parallel HDF5)"));
    if (r == 0) {
        unlink(path);
        printf("parallel HDF5    %d rank%s wrote %.1f MiB collectively to %s in %.3f s and read it back: %s\n",
               n, n == 1 ? "" : "s", (double)(dims[0] * dims[1] * 4) / 1048576.0, dir, t_write,
               ok && !bad ? "ok" : "FAILED");
    }
    return ACCEL_OK;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: accel test [--dir DIR] [--max-mib N] [--timeout S]\n"
                 "  Pre-flight check; run it the way you run training, e.g.\n"
                 "    srun --mpi=pmix accel test      or      mpirun -np 4 accel test\n"
                 "  --dir DIR      where to write the temporary HDF5 file (default: .)\n"
                 "  --max-mib N    largest allreduce in the bandwidth table (default: 64)\n"
                 "  --timeout S    seconds a collective may wait before the job aborts (default: 120)\n");
}

int accel_cmd_test(int argc, char **argv)
{
    const char *dir = ".";
    long max_mib = 64;
    double timeout = 120;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) { usage(stdout); return 0; }
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) { dir = argv[++i]; continue; }
        if (!strcmp(argv[i], "--max-mib") && i + 1 < argc) { max_mib = atol(argv[++i]); continue; }
        if (!strcmp(argv[i], "--timeout") && i + 1 < argc) { timeout = atof(argv[++i]); continue; }
        fprintf(stderr, "accel test: unexpected argument '%s'\n", argv[i]);
        usage(stderr);
        return 2;
    }
    if (max_mib < 1 || max_mib > 4096) {
        fprintf(stderr, "accel test: --max-mib must be between 1 and 4096\n");
        return 2;
    }
    accel_runtime_t *rt = NULL;
    accel_status_t st = accel_init(&argc, &argv, &rt);
    tester_t t = { .rt = rt };
    if (st == ACCEL_OK) {
        accel_config_t cfg;
        accel_config_defaults(&cfg);
        snprintf(cfg.log.level, sizeof cfg.log.level, "warn");
        st = accel_runtime_configure(rt, &cfg);
        if (st == ACCEL_OK) st = accel_device_setup(rt, &cfg);
    }
    if (st == ACCEL_OK) st = accel_runtime_print_table(rt, stdout);
    if (st == ACCEL_OK) st = accel_comm_create(rt->world, ACCEL_COMM_MPI, timeout, &t.comm);
    if (st == ACCEL_OK) st = test_collectives(&t);
    if (st == ACCEL_OK) st = test_bandwidth(&t, (size_t)max_mib << 20);
    if (st == ACCEL_OK) st = test_hdf5(&t, dir);
    if (st == ACCEL_OK && rt->rank == 0) {
        printf("accel test: %s: %d of %d checks passed on %d rank%s\n", t.failures ? "FAILED" : "PASSED",
               t.checks - t.failures, t.checks, rt->size, rt->size == 1 ? "" : "s");
        fflush(stdout);
    }
    if (st != ACCEL_OK) ACCEL_ERROR("accel test: FAILED: %s", accel_status_str(st));
    accel_comm_destroy(t.comm);
    accel_finalize(rt);
    return st != ACCEL_OK ? accel_status_exit_code(st) : t.failures ? 1 : 0;
}

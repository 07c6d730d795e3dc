/* Multi-rank tests of the communicator and topology (run under mpirun with 2 and 4 ranks):
 * every collective on every dtype and operation, blocking and non-blocking, in place and not,
 * gradient buckets driven by polling alone, node grouping, and the NCCL bootstrap path. With
 * --hang, rank 0 skips a barrier to show that the timeout reports the collective and aborts the
 * job. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accel/accel.h"
#include "../src/train/grad_sync.h"

static int g_rank, g_size;

/* Every test starts by reading the world rank and size. */
static void world(void)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
}

static double value(int r, size_t i) { return (double)((r * 7 + (int)i) % 5 + 1); }

static double expect_reduce(size_t i, accel_redop_t op, accel_dtype_t dt)
{
    double acc = value(0, i);
    for (int r = 1; r < g_size; r++) {
        double v = value(r, i);
        acc = op == ACCEL_MAX ? fmax(acc, v) : op == ACCEL_MIN ? fmin(acc, v) : acc + v;
    }
    if (op == ACCEL_AVG)
        acc = (dt == ACCEL_I32 || dt == ACCEL_I64 || dt == ACCEL_U8) ? floor(acc / g_size) : acc / g_size;
    return acc;
}

static void assert_close(double got, double want, accel_dtype_t dt, const char *what, size_t i)
{
    double tol = dt == ACCEL_BF16 ? 1e-2 * fabs(want) : dt == ACCEL_F16 ? 2e-3 * fabs(want) : 1e-6 * fabs(want);
    ck_assert_msg(fabs(got - want) <= tol, "%s %s element %zu: got %g want %g", what, accel_dtype_name(dt), i, got, want);
}

static accel_comm_t *make_comm(void)
{
    world();
    accel_comm_t *c = NULL;
    ck_assert_int_eq(accel_comm_create(MPI_COMM_WORLD, ACCEL_COMM_MPI, 60, &c), ACCEL_OK);
    ck_assert_int_eq(accel_comm_size(c), g_size);
    ck_assert_int_eq(accel_comm_rank(c), g_rank);
    ck_assert_str_eq(accel_comm_backend_name(c), "mpi");
    return c;
}

/* Loop over dtypes (and ops) with _i: 0/1 blocking/non-blocking, 0/1 separate/in place. */
START_TEST(test_allreduce_all)
{
    accel_comm_t *c = make_comm();
    const size_t n = 777;
    for (int dt = 0; dt < ACCEL_DTYPE_COUNT; dt++)
        for (int op = 0; op < ACCEL_REDOP_COUNT; op++)
            for (int mode = 0; mode < 4; mode++) {
                bool nb = mode & 1, inplace = mode & 2;
                size_t es = accel_dtype_size((accel_dtype_t)dt);
                char *s = malloc(n * es), *r = malloc(n * es);
                for (size_t i = 0; i < n; i++) accel_dtype_store(s, dt, i, value(g_rank, i));
                char *dst = inplace ? s : r;
                accel_request_t *req = NULL;
                ck_assert_int_eq(accel_comm_allreduce(c, s, dst, n, dt, op, nb ? &req : NULL), ACCEL_OK);
                if (nb) ck_assert_int_eq(accel_comm_wait(c, req), ACCEL_OK);
                for (size_t i = 0; i < n; i++) assert_close(accel_dtype_load(dst, dt, i), expect_reduce(i, op, dt), dt, "allreduce", i);
                free(s);
                free(r);
            }
    accel_comm_destroy(c);
}
END_TEST

START_TEST(test_reduce_scatter_all)
{
    accel_comm_t *c = make_comm();
    const size_t block = 301, total = block * (size_t)g_size;
    for (int dt = 0; dt < ACCEL_DTYPE_COUNT; dt++)
        for (int op = 0; op < ACCEL_REDOP_COUNT; op++)
            for (int mode = 0; mode < 4; mode++) {
                bool nb = mode & 1, inplace = mode & 2;
                size_t es = accel_dtype_size((accel_dtype_t)dt);
                char *s = malloc(total * es), *r = malloc(block * es);
                for (size_t i = 0; i < total; i++) accel_dtype_store(s, dt, i, value(g_rank, i));
                /* In place, NCCL style: the result lands on this rank's block of the input. */
                char *dst = inplace ? s + (size_t)g_rank * block * es : r;
                accel_request_t *req = NULL;
                ck_assert_int_eq(accel_comm_reduce_scatter(c, s, dst, block, dt, op, nb ? &req : NULL), ACCEL_OK);
                if (nb) ck_assert_int_eq(accel_comm_wait(c, req), ACCEL_OK);
                for (size_t i = 0; i < block; i++)
                    assert_close(accel_dtype_load(dst, dt, i), expect_reduce((size_t)g_rank * block + i, op, dt), dt, "reduce-scatter", i);
                free(s);
                free(r);
            }
    accel_comm_destroy(c);
}
END_TEST

START_TEST(test_allgather_broadcast_all)
{
    accel_comm_t *c = make_comm();
    const size_t block = 129, total = block * (size_t)g_size;
    for (int dt = 0; dt < ACCEL_DTYPE_COUNT; dt++)
        for (int mode = 0; mode < 4; mode++) {
            bool nb = mode & 1, inplace = mode & 2;
            size_t es = accel_dtype_size((accel_dtype_t)dt);
            char *s = malloc(block * es), *r = malloc(total * es);
            const char *src = s;
            if (inplace) src = r + (size_t)g_rank * block * es;
            for (size_t i = 0; i < block; i++) accel_dtype_store((void *)src, dt, i, value(g_rank, i));
            accel_request_t *req = NULL;
            ck_assert_int_eq(accel_comm_allgather(c, src, r, block, dt, nb ? &req : NULL), ACCEL_OK);
            if (nb) ck_assert_int_eq(accel_comm_wait(c, req), ACCEL_OK);
            for (size_t i = 0; i < total; i++)
                assert_close(accel_dtype_load(r, dt, i), value((int)(i / block), i % block), dt, "allgather", i);
            int root = (mode + dt) % g_size;
            for (size_t i = 0; i < total; i++) accel_dtype_store(r, dt, i, g_rank == root ? value(root, i) : 0);
            ck_assert_int_eq(accel_comm_broadcast(c, r, total, dt, root, nb ? &req : NULL), ACCEL_OK);
            if (nb) ck_assert_int_eq(accel_comm_wait(c, req), ACCEL_OK);
            for (size_t i = 0; i < total; i++) assert_close(accel_dtype_load(r, dt, i), value(root, i), dt, "broadcast", i);
            free(s);
            free(r);
        }
    ck_assert_int_eq(accel_comm_barrier(c), ACCEL_OK);
    ck_assert_int_eq(accel_comm_broadcast(c, NULL, 0, ACCEL_F32, g_size, NULL), ACCEL_ERR_INVALID);
    ck_assert_uint_gt(accel_comm_bytes_sent(c), 0);
    accel_comm_destroy(c);
}
END_TEST

/* Several outstanding non-blocking operations complete independently, in any order. */
START_TEST(test_overlapping_requests)
{
    accel_comm_t *c = make_comm();
    enum { K = 5, N = 4096 };
    float *buf[K];
    accel_request_t *req[K];
    for (int k = 0; k < K; k++) {
        buf[k] = malloc(sizeof(float) * N);
        for (int i = 0; i < N; i++) buf[k][i] = (float)(g_rank + k);
        ck_assert_int_eq(accel_comm_allreduce(c, buf[k], buf[k], N, ACCEL_F32, ACCEL_SUM, &req[k]), ACCEL_OK);
    }
    for (int k = K - 1; k >= 0; k--) {
        ck_assert_int_eq(accel_comm_wait(c, req[k]), ACCEL_OK);
        float want = (float)(g_size * (g_size - 1) / 2 + g_size * k);
        for (int i = 0; i < N; i += 97) ck_assert_float_eq(buf[k][i], want);
        free(buf[k]);
    }
    accel_comm_destroy(c);
}
END_TEST

/* Gradient buckets reduce while the caller only polls (as a model's backward does between its
 * products), with no wait: the reduction of a finished layer must not be left for the end. */
START_TEST(test_grad_sync_progress)
{
    accel_comm_t *c = make_comm();
    accel_layout_t L;
    accel_layout_init(&L);
    const int64_t shape[1] = { 300000 };        /* 1.2 MB a layer: the ring path */
    for (int l = 0; l < 3; l++) {
        char name[16];
        snprintf(name, sizeof name, "layer%d", l);
        ck_assert_int_eq(accel_layout_add(&L, name, 1, shape, l, 0, 0, NULL), ACCEL_OK);
    }
    float *g = NULL;
    ck_assert_int_eq(accel_arena_alloc(&L, &g), ACCEL_OK);
    for (size_t i = 0; i < L.numel; i++) g[i] = (float)(g_rank + 1);
    accel_grad_sync_t *s = NULL;
    ck_assert_int_eq(accel_grad_sync_create(&L, c, g, 1.0, ACCEL_F32, &s), ACCEL_OK);
    ck_assert_int_eq(accel_grad_sync_nbuckets(s), 3);
    accel_grad_sync_begin(s);
    accel_grad_sync_layer_done(s, 2);
    ck_assert_int_eq(accel_grad_sync_in_flight(s), 1);
    const double start = accel_now();
    while (accel_grad_sync_in_flight(s) > 0 && accel_now() - start < 30)
        accel_grad_sync_progress(s);
    ck_assert_msg(accel_grad_sync_in_flight(s) == 0, "polling alone left the bucket unfinished");
    const float sum = (float)(g_size * (g_size + 1) / 2), own = (float)(g_rank + 1);
    const accel_tensor_t *first = accel_layout_find(&L, "layer0");
    const accel_tensor_t *last = accel_layout_find(&L, "layer2");
    ck_assert_float_eq(g[last->offset], sum);
    ck_assert_float_eq(g[last->offset + last->numel - 1], sum);
    ck_assert_float_eq(g[first->offset], own);  /* its bucket has not started */
    accel_grad_sync_layer_done(s, 1);
    accel_grad_sync_layer_done(s, 0);
    ck_assert_int_eq(accel_grad_sync_finish(s), ACCEL_OK);
    ck_assert_int_eq(accel_grad_sync_in_flight(s), 0);
    for (size_t i = 0; i < L.numel; i += 4999) ck_assert_float_eq(g[i], sum);
    accel_grad_sync_destroy(s);
    accel_arena_free(g);
    accel_layout_free(&L);
    accel_comm_destroy(c);
}
END_TEST

START_TEST(test_topology_fake_nodes)
{
    world();
    accel_runtime_t *rt = NULL;
    int argc = 0;
    char **argv = NULL;
    ck_assert_int_eq(accel_init(&argc, &argv, &rt), ACCEL_OK);
    ck_assert_int_eq(rt->size, g_size);
    ck_assert_int_eq(rt->nnodes, 1);                 /* one real machine */
    ck_assert_int_eq(rt->local_size, g_size);
    if (g_size % 2 == 0) {
        ck_assert_int_eq(accel_runtime_build_topology(rt, 2), ACCEL_OK);
        ck_assert_int_eq(rt->nnodes, 2);
        ck_assert_int_eq(rt->local_size, g_size / 2);
        ck_assert_int_eq(rt->node, g_rank / (g_size / 2));
        ck_assert_int_eq(rt->local_rank, g_rank % (g_size / 2));
        int cross_size, cross_rank;
        MPI_Comm_size(rt->cross, &cross_size);
        MPI_Comm_rank(rt->cross, &cross_rank);
        ck_assert_int_eq(cross_size, 2);
        ck_assert_int_eq(cross_rank, rt->node);
        /* The cross-node group holds the ranks with my local rank, one per node. */
        int peer_local = -1;
        MPI_Allreduce(&rt->local_rank, &peer_local, 1, MPI_INT, MPI_MAX, rt->cross);
        ck_assert_int_eq(peer_local, rt->local_rank);
    }
    accel_finalize(rt);
}
END_TEST

/* Rank 0 runs the section first; the others find its work done. */
START_TEST(test_main_process_first)
{
    world();
    accel_runtime_t *rt = NULL;
    int argc = 0;
    char **argv = NULL;
    ck_assert_int_eq(accel_init(&argc, &argv, &rt), ACCEL_OK);
    char path[256];
    long tag = g_rank == 0 ? (long)getpid() : 0;
    MPI_Bcast(&tag, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "/tmp/accel-main-first-%ld", tag);
    for (int local = 0; local < 2; local++) {
        ck_assert_int_eq(accel_main_first_begin(rt, local), ACCEL_OK);
        if (g_rank == 0) {
            usleep(200 * 1000);            /* the others must still be waiting */
            FILE *f = fopen(path, "w");
            ck_assert_ptr_nonnull(f);
            fclose(f);
        } else {
            ck_assert_int_eq(access(path, F_OK), 0);
        }
        ck_assert_int_eq(accel_main_first_end(rt, local), ACCEL_OK);
        MPI_Barrier(MPI_COMM_WORLD);
        if (g_rank == 0) unlink(path);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    accel_finalize(rt);
}
END_TEST

START_TEST(test_nccl_bootstrap_path)
{
    accel_comm_t *c = NULL;
    accel_status_t st = accel_comm_create(MPI_COMM_WORLD, ACCEL_COMM_NCCL, 60, &c);
    if (accel_device_cuda_count(NULL) == 0) {
        /* Built with NCCL but no GPU here (or built without): a clean refusal on every rank. */
        ck_assert_int_eq(st, ACCEL_ERR_UNSUPPORTED);
        ck_assert_ptr_null(c);
        if (accel_built_with_nccl()) ck_assert_int_gt(accel_comm_nccl_version(), 0);
    } else {
        ck_assert_int_eq(st, ACCEL_OK);
        ck_assert_str_eq(accel_comm_backend_name(c), "nccl");
        accel_comm_destroy(c);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("comm");
    TCase *tc = tcase_create("collectives");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_allreduce_all);
    tcase_add_test(tc, test_reduce_scatter_all);
    tcase_add_test(tc, test_allgather_broadcast_all);
    tcase_add_test(tc, test_overlapping_requests);
    tcase_add_test(tc, test_grad_sync_progress);
    tcase_add_test(tc, test_topology_fake_nodes);
    tcase_add_test(tc, test_main_process_first);
    tcase_add_test(tc, test_nccl_bootstrap_path);
    suite_add_tcase(s, tc);
    return s;
}

/* --hang: rank 0 never enters the barrier; the others must time out, say so, and abort the job. */
static int hang_demo(void)
{
    world();
    accel_comm_t *c = NULL;
    if (accel_comm_create(MPI_COMM_WORLD, ACCEL_COMM_MPI, 2.0, &c) != ACCEL_OK) return 1;
    if (g_rank != 0) accel_comm_barrier(c);
    else sleep(60);
    return 0;
}

/* Entered instead of the Check suite when the program's first argument is --hang. */
#define ACCEL_CHECK_ALT_MAIN(argc, argv)                                                      \
    do {                                                                                      \
        if ((argc) > 1 && !strcmp((argv)[1], "--hang")) {                                     \
            int rc_ = hang_demo();                                                            \
            MPI_Finalize();                                                                   \
            return rc_;                                                                       \
        }                                                                                     \
    } while (0)
#include "check_main.h"

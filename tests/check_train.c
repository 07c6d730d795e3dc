/* Unit tests of the train layer (single process): learning-rate schedules, the AdamW step, and the
 * gradient reductions behind clipping and the fp16 overflow check. The multi-rank trainer is tested
 * end to end (tests/train_*.sh, zero_equivalence.sh). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/train/amp.h"
#include "accel/arena.h"
#include "../src/train/devops.h"
#include "../src/train/optim.h"

/* ---------------------------------------------------------------- optimizer */
START_TEST(test_lr_schedules)
{
    accel_optim_config_t c = { .lr = 1.0, .warmup = 4, .min_lr_ratio = 0.1 };
    snprintf(c.schedule, sizeof c.schedule, "cosine");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 0), 0.25, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 3), 1.0, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 4), 1.0, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 0.1, 1e-12);
    snprintf(c.schedule, sizeof c.schedule, "linear");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 0.1, 1e-12);
    ck_assert_double_eq_tol(accel_optim_lr(&c, 21, 12), 0.55, 1e-12);
    snprintf(c.schedule, sizeof c.schedule, "constant");
    ck_assert_double_eq_tol(accel_optim_lr(&c, 20, 19), 1.0, 1e-12);
}
END_TEST

START_TEST(test_adamw_step)
{
    accel_layout_t l;
    accel_layout_init(&l);
    int64_t s[1] = { 2 };
    accel_layout_add(&l, "w", 1, s, 0, 0, 0, NULL);
    accel_layout_add(&l, "b", 1, s, 0, ACCEL_TENSOR_NO_DECAY, 0, NULL);
    accel_optim_config_t c = { .lr = 0.1, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                               .weight_decay = 0.5, .warmup = 0, .min_lr_ratio = 1.0 };
    snprintf(c.name, sizeof c.name, "adamw");
    snprintf(c.schedule, sizeof c.schedule, "constant");
    accel_optim_t opt;
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &opt), ACCEL_OK);
    accel_optim_mark_decay(&opt, &l, 0, l.numel, 0);
    float p[32] = { 0 }, g[32] = { 0 };
    p[0] = 1.0f; g[0] = 0.3f;      /* w[0]: decayed */
    p[16] = 1.0f; g[16] = 0.3f;    /* b[0]: not decayed */
    accel_optim_step(&opt, p, g, 1.0f);
    /* First Adam step moves by lr * sign(g) (bias-corrected m/sqrt(v) = 1), decay by lr*wd*p. */
    ck_assert_float_eq_tol(p[0], 1.0f - 0.1f - 0.1f * 0.5f * 1.0f, 1e-6f);
    ck_assert_float_eq_tol(p[16], 1.0f - 0.1f, 1e-6f);
    ck_assert_float_eq(p[1], 0.0f);
    /* The gradient multiplier applies inside the update: a second step on g/4 with grad_mul 4
     * equals one on g (exactly: powers of two), and differs from one on g/4. */
    accel_optim_t twin, quarter;
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &twin), ACCEL_OK);
    ck_assert_int_eq(accel_optim_create(&c, 10, l.numel, &quarter), ACCEL_OK);
    accel_optim_mark_decay(&twin, &l, 0, l.numel, 0);
    accel_optim_mark_decay(&quarter, &l, 0, l.numel, 0);
    float pt[32], pq[32], g4[32];
    memcpy(pt, p, sizeof p);
    memcpy(pq, p, sizeof p);
    for (int i = 0; i < 32; i++) g4[i] = g[i] / 4;
    const size_t bytes = sizeof(float) * l.numel;
    memcpy(twin.m, opt.m, bytes), memcpy(twin.v, opt.v, bytes);
    memcpy(quarter.m, opt.m, bytes), memcpy(quarter.v, opt.v, bytes);
    twin.step = quarter.step = opt.step;
    accel_optim_step(&opt, p, g, 1.0f);
    accel_optim_step(&twin, pt, g4, 4.0f);
    accel_optim_step(&quarter, pq, g4, 1.0f);
    ck_assert_float_eq(pt[0], p[0]);
    ck_assert_float_eq(pt[16], p[16]);
    ck_assert_float_ne(pq[0], p[0]);
    accel_optim_destroy(&twin);
    accel_optim_destroy(&quarter);
    accel_optim_destroy(&opt);
    accel_layout_free(&l);
}
END_TEST

/* The vectorised reductions behind clipping and the fp16 overflow check: every length (tails
 * shorter than the 16 partial sums included), and a non-finite value anywhere. */
START_TEST(test_grad_reductions)
{
    enum { N = 1000 };
    float *x = malloc(sizeof(float) * N);
    ck_assert_ptr_nonnull(x);
    for (int i = 0; i < N; i++) x[i] = (float)((i * 37) % 101 - 50) * 0.01f;
    ck_assert(accel_sum_squares(x, 0) == 0.0);
    ck_assert(isfinite(accel_sum_squares(x, 0)));
    for (int n = 1; n <= N; n += (n < 40 ? 1 : 97)) {
        double ref = 0;
        for (int i = 0; i < n; i++) ref += (double)x[i] * x[i];
        ck_assert_double_eq_tol(accel_sum_squares(x, (size_t)n), ref, 1e-12 * (ref + 1));
        ck_assert(isfinite(accel_sum_squares(x, (size_t)n)));
        const float bad[3] = { NAN, INFINITY, -INFINITY };
        for (int b = 0; b < 3; b++)
            for (int at = 0; at < n; at += (n > 20 ? n / 7 + 1 : 1)) {
                float keep = x[at];
                x[at] = bad[b];
                /* the fp16 overflow check: a non-finite gradient makes the sum of squares non-finite */
                ck_assert_msg(!isfinite(accel_sum_squares(x, (size_t)n)), "n=%d, %g at %d not seen", n,
                              bad[b], at);
                x[at] = keep;
            }
    }
    free(x);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("train");
    TCase *tc = tcase_create("train");
    tcase_add_test(tc, test_lr_schedules);
    tcase_add_test(tc, test_adamw_step);
    tcase_add_test(tc, test_grad_reductions);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

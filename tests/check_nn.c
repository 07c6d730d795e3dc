/* Unit tests of the nn layer's small models (single process): the MLP's gradients against finite
 * differences. The GPT has its own program (check_gpt, tests/gpt_unit.sh). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/data.h"
#include "accel/model.h"

/* ---------------------------------------------------------------- MLP gradients */
START_TEST(test_mlp_finite_differences)
{
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.model.name, sizeof cfg.model.name, "mlp");
    cfg.model.inputs = 5; cfg.model.hidden = 7; cfg.model.classes = 4; cfg.model.depth = 2;
    accel_model_t m;
    ck_assert_int_eq(accel_model_create(&cfg, &m), ACCEL_OK);
    float *p, *g;
    accel_arena_alloc(&m.layout, &p);
    accel_arena_alloc(&m.layout, &g);
    accel_arena_init_params(&m.layout, p, 3);
    enum { N = 6 };
    float x[N * 5];
    int32_t y[N];
    for (int i = 0; i < N; i++) accel_synthetic_sample(1, 5, 4, 0.0, i, x + i * 5, &y[i]);
    /* Shift biases off zero so no ReLU input sits exactly at its kink. */
    for (int t = 0; t < m.layout.ntensors; t++)
        if (m.layout.tensors[t].flags & ACCEL_TENSOR_NO_DECAY)
            for (size_t k = 0; k < m.layout.tensors[t].numel; k++) p[m.layout.tensors[t].offset + k] = 0.05f;
    accel_batch_t b = { .n = N, .inputs = x, .targets = y };
    double loss;
    ck_assert_int_eq(m.ops->forward_backward(m.state, &m.layout, p, g, &b, 1.0f, &loss), ACCEL_OK);
    for (int t = 0; t < m.layout.ntensors; t++) {
        const accel_tensor_t *T = &m.layout.tensors[t];
        for (size_t k = 0; k < T->numel; k += 3) {
            float *w = p + T->offset + k, saved = *w;
            const float h = 1e-2f;
            double lp, lm;
            float *scratch;
            accel_arena_alloc(&m.layout, &scratch);
            *w = saved + h;
            m.ops->forward_backward(m.state, &m.layout, p, scratch, &b, 1.0f, &lp);
            *w = saved - h;
            m.ops->forward_backward(m.state, &m.layout, p, scratch, &b, 1.0f, &lm);
            *w = saved;
            accel_arena_free(scratch);
            double fd = (lp - lm) / (2.0 * h), an = g[T->offset + k];
            ck_assert_msg(fabs(fd - an) <= 2e-3 + 2e-2 * fabs(fd), "%s[%zu]: analytic %g vs finite difference %g",
                          T->name, k, an, fd);
        }
    }
    /* Gradients accumulate (+=) and scale linearly. */
    float *g2;
    accel_arena_alloc(&m.layout, &g2);
    m.ops->forward_backward(m.state, &m.layout, p, g2, &b, 0.5f, &loss);
    m.ops->forward_backward(m.state, &m.layout, p, g2, &b, 0.5f, &loss);
    for (size_t i = 0; i < m.layout.numel; i++) ck_assert_float_eq_tol(g2[i], g[i], 1e-5f);
    int32_t bad[N] = { 0, 1, 2, 3, 9, 0 };
    accel_batch_t bb = { .n = N, .inputs = x, .targets = bad };
    ck_assert_int_eq(m.ops->forward_backward(m.state, &m.layout, p, g2, &bb, 1.0f, &loss), ACCEL_ERR_INVALID);
    accel_arena_free(g2);
    accel_arena_free(p);
    accel_arena_free(g);
    accel_model_destroy(&m);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("nn");
    TCase *tc = tcase_create("nn");
    tcase_add_test(tc, test_mlp_finite_differences);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

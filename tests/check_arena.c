/* Unit tests of the arena layer (single process): the tensor table and its flat buffers. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/arena.h"
#include "accel/rng.h"

/* ---------------------------------------------------------------- arena */
START_TEST(test_arena_layout)
{
    accel_layout_t l;
    accel_layout_init(&l);
    int64_t s1[2] = { 3, 5 }, s2[1] = { 7 };
    int idx;
    ck_assert_int_eq(accel_layout_add(&l, "a", 2, s1, 0, 0, 0.1f, &idx), ACCEL_OK);
    ck_assert_int_eq(idx, 0);
    ck_assert_int_eq(accel_layout_add(&l, "b", 1, s2, 1, ACCEL_TENSOR_NO_DECAY, -1.0f, &idx), ACCEL_OK);
    ck_assert_int_eq(accel_layout_add(&l, "a", 1, s2, 0, 0, 0, NULL), ACCEL_ERR_INVALID);
    int64_t bad[1] = { 0 };
    ck_assert_int_eq(accel_layout_add(&l, "z", 1, bad, 0, 0, 0, NULL), ACCEL_ERR_INVALID);
    const accel_tensor_t *b = accel_layout_find(&l, "b");
    ck_assert_ptr_nonnull(b);
    ck_assert_uint_eq(b->offset % ACCEL_ARENA_ALIGN, 0);
    ck_assert_uint_eq(b->offset, 16);
    ck_assert_uint_eq(accel_layout_params(&l), 22);
    ck_assert_int_eq(l.nlayers, 2);
    float *p;
    ck_assert_int_eq(accel_arena_alloc(&l, &p), ACCEL_OK);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    accel_arena_init_params(&l, p, 42);
    for (int i = 0; i < 7; i++) ck_assert_float_eq(p[b->offset + i], 1.0f);
    ck_assert_float_eq(p[0], accel_rng_normal(42, ACCEL_RNG_INIT, accel_rng_hash("a"), 0) * 0.1f);
    accel_arena_free(p);
    accel_layout_free(&l);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("arena");
    TCase *tc = tcase_create("arena");
    tcase_add_test(tc, test_arena_layout);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

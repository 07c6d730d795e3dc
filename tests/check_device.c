/* Unit tests of the device layer (single process): device choice for a rank, and the runtime's record
 * of it. Without a GPU the CUDA requests are checked to fail with a reason. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/config.h"
#include "accel/device.h"
#include "accel/runtime.h"

/* ---------------------------------------------------------------- device choice */
START_TEST(test_device_selection)
{
    accel_device_t d;
    ck_assert_int_eq(accel_device_select("cpu", 0, &d), ACCEL_OK);
    ck_assert_int_eq(d.kind, ACCEL_DEVICE_CPU);
    const char *why = NULL;
    if (accel_device_cuda_count(&why) == 0) {
        ck_assert_ptr_nonnull(why);
        ck_assert_int_eq(accel_device_select("cuda", 0, &d), ACCEL_ERR_UNSUPPORTED);
        ck_assert_int_eq(accel_device_select("auto", 0, &d), ACCEL_OK);
        ck_assert_int_eq(d.kind, ACCEL_DEVICE_CPU);
    } else {
        ck_assert_int_eq(accel_device_select("auto", 0, &d), ACCEL_OK);
        ck_assert_int_eq(d.kind, ACCEL_DEVICE_CUDA);
    }
}
END_TEST

/* accel_device_setup fills in the runtime's record after accel_runtime_configure (core leaves it
 * at the CPU): every rank agrees, and the start-up table can print it. */
START_TEST(test_device_setup)
{
    accel_runtime_t *rt = NULL;
    int argc = 0;
    char **argv = NULL;
    ck_assert_int_eq(accel_init(&argc, &argv, &rt), ACCEL_OK);
    ck_assert_int_eq(rt->device.kind, ACCEL_DEVICE_CPU);
    accel_config_t cfg;
    accel_config_defaults(&cfg);
    snprintf(cfg.device, sizeof cfg.device, "cpu");
    ck_assert_int_eq(accel_runtime_configure(rt, &cfg), ACCEL_OK);
    ck_assert_int_eq(accel_device_setup(rt, &cfg), ACCEL_OK);
    ck_assert_int_eq(rt->device.kind, ACCEL_DEVICE_CPU);
    ck_assert_int_eq(rt->device.index, -1);
    ck_assert_str_eq(rt->device.name, "cpu");
    if (accel_device_cuda_count(NULL) == 0) {
        snprintf(cfg.device, sizeof cfg.device, "cuda");
        ck_assert_int_eq(accel_device_setup(rt, &cfg), ACCEL_ERR_UNSUPPORTED);
        snprintf(cfg.device, sizeof cfg.device, "auto");
        ck_assert_int_eq(accel_device_setup(rt, &cfg), ACCEL_OK);
        ck_assert_int_eq(rt->device.kind, ACCEL_DEVICE_CPU);
    }
    accel_finalize(rt);      /* does not finalize MPI: the test main owns it */
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("device");
    TCase *tc = tcase_create("device");
    tcase_add_test(tc, test_device_selection);
    tcase_add_test(tc, test_device_setup);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

/* Check tests of the HDF5 layer (src/h5): attribute round trips (every kind, replacement, missing
 * and mistyped attributes, strings as h5py writes them), atomic publication (the target holds the
 * old file or the new one, never a part, and a failed publication leaves the old one and no
 * temporary file), and the signature probe (HDF5 with and without a user block, text, empty and
 * missing files). Each rank works in its own directory. */
#include "build_config.h"

#include <check.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel/accel.h"
#include "../src/h5/h5util.h"

static char g_dir[256];

static void path_in(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", g_dir, name); }

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
}

static void check_text(const char *path, const char *want)
{
    char buf[256] = "";
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "%s is missing", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    ck_assert_str_eq(buf, want);
}

static long long size_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* ------------------------------------------------------------------ attributes */

START_TEST(test_attr_roundtrip)
{
    char path[400];
    path_in(path, sizeof path, "attrs.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert_int_ge(f, 0);
    hid_t g = H5Gcreate2(f, "grp", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert_int_ge(g, 0);
    ck_assert_int_eq(accel_h5_attr_write_str(f, "s", "hello world"), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_str(f, "empty", ""), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_str(f, "pad", "kept trailing  "), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_i32(f, "i32", -7), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_i64(f, "i64", -(1LL << 40)), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_u64(g, "u64", UINT64_MAX - 5), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_f64(g, "f64", 0.125), ACCEL_OK);
    /* Writing again replaces, with another type and length. */
    ck_assert_int_eq(accel_h5_attr_write_str(f, "s", "hi"), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_i64(f, "replaced", 1), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_str(f, "replaced", "now a string"), ACCEL_OK);
    /* A variable-length string and a space-padded one, as h5py and Fortran codes write them. */
    hid_t vt = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
    ck_assert_int_ge(H5Tset_size(vt, H5T_VARIABLE), 0);
    ck_assert_int_ge(H5Tset_cset(vt, H5T_CSET_UTF8), 0);
    hid_t a = H5Acreate2(f, "vlen", vt, sp, H5P_DEFAULT, H5P_DEFAULT);
    const char *vs = "variable";
    ck_assert_int_ge(H5Awrite(a, vt, &vs), 0);
    H5Aclose(a);
    hid_t ft = H5Tcopy(H5T_C_S1);
    ck_assert_int_ge(H5Tset_size(ft, 8), 0);
    ck_assert_int_ge(H5Tset_strpad(ft, H5T_STR_SPACEPAD), 0);
    a = H5Acreate2(f, "spaces", ft, sp, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert_int_ge(H5Awrite(a, ft, "abc     "), 0);
    H5Aclose(a);
    /* An array attribute is not a scalar. */
    hsize_t two = 2;
    hid_t sp2 = H5Screate_simple(1, &two, NULL);
    int64_t pair[2] = { 1, 2 };
    a = H5Acreate2(f, "array", H5T_STD_I64LE, sp2, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert_int_ge(H5Awrite(a, H5T_NATIVE_INT64, pair), 0);
    H5Aclose(a);
    H5Sclose(sp2);
    H5Tclose(ft);
    H5Tclose(vt);
    H5Sclose(sp);
    H5Gclose(g);
    ck_assert_int_ge(H5Fclose(f), 0);

    ck_assert_int_eq(accel_h5_open_read(path, &f, NULL, 0), ACCEL_OK);
    g = H5Gopen2(f, "grp", H5P_DEFAULT);
    char s[64];
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0;
    ck_assert_int_eq(accel_h5_attr_read_str(f, "s", s, sizeof s), ACCEL_OK);
    ck_assert_str_eq(s, "hi");
    ck_assert_int_eq(accel_h5_attr_read_str(f, "empty", s, sizeof s), ACCEL_OK);
    ck_assert_str_eq(s, "");
    ck_assert_int_eq(accel_h5_attr_read_str(f, "pad", s, sizeof s), ACCEL_OK);
    ck_assert_str_eq(s, "kept trailing  ");     /* NUL-padded: spaces are content */
    ck_assert_int_eq(accel_h5_attr_read_str(f, "spaces", s, sizeof s), ACCEL_OK);
    ck_assert_str_eq(s, "abc");
    ck_assert_int_eq(accel_h5_attr_read_str(f, "vlen", s, sizeof s), ACCEL_OK);
    ck_assert_str_eq(s, "variable");
    ck_assert_int_eq(accel_h5_attr_read_str(f, "replaced", s, sizeof s), ACCEL_OK);
    ck_assert_str_eq(s, "now a string");
    ck_assert_int_eq(accel_h5_attr_read_str(f, "s", s, 2), ACCEL_OK);   /* truncated, terminated */
    ck_assert_str_eq(s, "h");
    ck_assert_int_eq(accel_h5_attr_read_i64(f, "i32", &i), ACCEL_OK);
    ck_assert_int_eq(i, -7);
    ck_assert_int_eq(accel_h5_attr_read_i64(f, "i64", &i), ACCEL_OK);
    ck_assert_int_eq(i, -(1LL << 40));
    ck_assert_int_eq(accel_h5_attr_read_u64(g, "u64", &u), ACCEL_OK);
    ck_assert_uint_eq(u, UINT64_MAX - 5);
    ck_assert_int_eq(accel_h5_attr_read_f64(g, "f64", &d), ACCEL_OK);
    ck_assert(d == 0.125);
    ck_assert_int_eq(accel_h5_attr_read_f64(f, "i32", &d), ACCEL_OK);  /* integers widen to double */
    ck_assert(d == -7.0);

    /* Missing and mistyped: distinct answers, the value untouched. */
    i = 42;
    snprintf(s, sizeof s, "unchanged");
    ck_assert_int_eq(accel_h5_attr_read_i64(f, "nope", &i), ACCEL_ERR_NOT_FOUND);
    ck_assert_int_eq(accel_h5_attr_read_str(f, "nope", s, sizeof s), ACCEL_ERR_NOT_FOUND);
    ck_assert_int_eq(accel_h5_attr_read_i64(f, "s", &i), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_h5_attr_read_i64(g, "f64", &i), ACCEL_ERR_INVALID);  /* no silent truncation */
    ck_assert_int_eq(accel_h5_attr_read_i64(f, "array", &i), ACCEL_ERR_INVALID);
    ck_assert_int_eq(accel_h5_attr_read_str(f, "i64", s, sizeof s), ACCEL_ERR_INVALID);
    ck_assert_int_eq(i, 42);
    ck_assert_str_eq(s, "unchanged");

    ck_assert_int_eq(accel_h5_path_exists(f, "/grp"), 1);
    ck_assert_int_eq(accel_h5_path_exists(f, "/"), 1);
    ck_assert_int_eq(accel_h5_path_exists(f, "/grp/none/deeper"), 0);
    ck_assert_int_eq(accel_h5_path_exists(f, "/none/deeper"), 0);
    H5Gclose(g);
    H5Fclose(f);

    /* Writing to a read-only file fails with a status, not a crash. */
    ck_assert_int_eq(accel_h5_open_read(path, &f, NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_write_i64(f, "x", 1), ACCEL_ERR_HDF5);
    H5Fclose(f);
}
END_TEST

/* ------------------------------------------------------------------ publish */

START_TEST(test_publish)
{
    char path[400], tmp[420], sub[400];
    path_in(path, sizeof path, "target");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);

    /* A new file appears whole; a second one replaces it whole. */
    write_text(tmp, "first");
    ck_assert_int_eq(accel_h5_publish(tmp, path), ACCEL_OK);
    check_text(path, "first");
    ck_assert_int_eq(access(tmp, F_OK), -1);
    write_text(tmp, "second version");
    ck_assert_int_eq(accel_h5_publish(tmp, path), ACCEL_OK);
    check_text(path, "second version");

    /* Failures leave the old file and no temporary one. */
    ck_assert_int_eq(accel_h5_publish(tmp, path), ACCEL_ERR_IO);        /* no tmp file */
    check_text(path, "second version");
    path_in(sub, sizeof sub, "busy");                                     /* a non-empty directory */
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    char inside[460];
    snprintf(inside, sizeof inside, "%s/x", sub);
    write_text(inside, "x");
    write_text(tmp, "third");
    ck_assert_int_eq(accel_h5_publish(tmp, sub), ACCEL_ERR_IO);
    ck_assert_int_eq(access(tmp, F_OK), -1);
    check_text(inside, "x");
    write_text(tmp, "third");
    path_in(sub, sizeof sub, "no/such/dir/target");
    ck_assert_int_eq(accel_h5_publish(tmp, sub), ACCEL_ERR_IO);
    ck_assert_int_eq(access(tmp, F_OK), -1);
    check_text(path, "second version");

    /* Small text files (a `latest` pointer). */
    path_in(sub, sizeof sub, "latest");
    ck_assert_int_eq(accel_h5_publish_text(sub, "step-1\n"), ACCEL_OK);
    ck_assert_int_eq(accel_h5_publish_text(sub, "step-22\n"), ACCEL_OK);
    check_text(sub, "step-22\n");
    char stmp[440];
    snprintf(stmp, sizeof stmp, "%s.tmp", sub);
    ck_assert_int_eq(access(stmp, F_OK), -1);
    path_in(sub, sizeof sub, "no/such/dir/latest");
    ck_assert_int_ne(accel_h5_publish_text(sub, "x"), ACCEL_OK);

    /* An HDF5 file published this way opens and reads back. */
    path_in(path, sizeof path, "pub.h5");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert_int_ge(f, 0);
    ck_assert_int_eq(accel_h5_attr_write_str(f, "format", "test"), ACCEL_OK);
    ck_assert_int_ge(H5Fclose(f), 0);
    ck_assert_int_eq(accel_h5_publish(tmp, path), ACCEL_OK);
    char s[16] = "";
    ck_assert_int_eq(accel_h5_open_read(path, &f, NULL, 0), ACCEL_OK);
    ck_assert_int_eq(accel_h5_attr_read_str(f, "format", s, sizeof s), ACCEL_OK);
    ck_assert_str_eq(s, "test");
    H5Fclose(f);
}
END_TEST

/* ------------------------------------------------------------------ probe */

START_TEST(test_probe)
{
    char path[400], err[256];
    path_in(path, sizeof path, "plain.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    ck_assert_int_ge(f, 0);
    H5Fclose(f);
    ck_assert_int_eq(accel_h5_probe(path, size_of(path)), 1);

    /* After a 512-byte user block the signature is at 512. */
    path_in(path, sizeof path, "userblock.h5");
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    ck_assert_int_ge(H5Pset_userblock(fcpl, 512), 0);
    f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    ck_assert_int_ge(f, 0);
    H5Fclose(f);
    H5Pclose(fcpl);
    ck_assert_int_eq(accel_h5_probe(path, size_of(path)), 1);

    /* Not HDF5: text (also one that is long enough to have byte 512), empty, missing. */
    path_in(path, sizeof path, "text.h5");
    char text[2000];
    memset(text, 'a', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    write_text(path, text);
    ck_assert_int_eq(accel_h5_probe(path, size_of(path)), 0);
    hid_t none = -1;
    ck_assert_int_eq(accel_h5_open_read(path, &none, err, sizeof err), ACCEL_ERR_CORRUPT);
    ck_assert_int_lt(none, 0);
    ck_assert_int_gt(strlen(err), 0);                 /* HDF5's reason, for the caller's message */
    path_in(path, sizeof path, "empty.h5");
    write_text(path, "");
    ck_assert_int_eq(accel_h5_probe(path, 0), 0);
    path_in(path, sizeof path, "missing.h5");
    ck_assert_int_eq(accel_h5_probe(path, 4096), 0);
}
END_TEST

/* ------------------------------------------------------------------ suite */

static void setup(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/check_h5.%d.%d", base, (int)getpid(), rank);
    ck_assert_int_eq(mkdir(g_dir, 0755), 0);
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("h5");
    TCase *tc = tcase_create("h5");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_attr_roundtrip);
    tcase_add_test(tc, test_publish);
    tcase_add_test(tc, test_probe);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

/* TensorBoard event files (src/train/tensorboard.c): CRC32C against its known vector, a written
 * file read back value for value, a flipped byte and a truncated file reported as corrupt (never a
 * crash), and a file written by TensorBoard's own writer (tests/fixtures/tensorboard/, made by
 * make_fixture.sh; its path comes in ACCEL_TB_FIXTURE) read with the values it was given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "accel/tensorboard.h"

static char g_dir[256];

/* A fresh scratch directory per test (removed with its files at the end). */
static void scratch(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/accel-tb.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
}

static void cleanup(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    ck_assert_int_eq(system(cmd), 0);
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

/* Writes version + START at 5 + loss at 5, 6 + one more tag; returns the file's path in path. */
static void write_sample(char *path, size_t len)
{
    char err[512] = "";
    accel_tb_writer_t *w = NULL;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/a/b", g_dir);                 /* parents are created */
    ck_assert_msg(accel_tb_open(dir, &w, err, sizeof err) == ACCEL_OK, "%s", err);
    snprintf(path, len, "%s", accel_tb_path(w));
    ck_assert_ptr_nonnull(strstr(path, "/events.out.tfevents."));
    ck_assert_int_eq(strcmp(path + strlen(path) - 6, ".accel"), 0);
    ck_assert_int_eq(accel_tb_session_start(w, 5), ACCEL_OK);
    ck_assert_int_eq(accel_tb_scalar(w, "train/loss", 5, 2.5f), ACCEL_OK);
    ck_assert_int_eq(accel_tb_scalar(w, "train/loss", 6, 0.1f), ACCEL_OK);
    ck_assert_int_eq(accel_tb_scalar(w, "eval/accuracy", 6, -3e-7f), ACCEL_OK);
    ck_assert_int_eq(accel_tb_flush(w), ACCEL_OK);
    ck_assert_int_eq(accel_tb_close(w), ACCEL_OK);
}

START_TEST(test_crc32c)
{
    ck_assert_uint_eq(accel_tb_crc32c("123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(accel_tb_crc32c("", 0), 0);
    /* RFC 3720 B.4: 32 bytes of zeros, and of 0xff. */
    unsigned char z[32] = { 0 }, ff[32];
    memset(ff, 0xff, sizeof ff);
    ck_assert_uint_eq(accel_tb_crc32c(z, sizeof z), 0x8A9136AAu);
    ck_assert_uint_eq(accel_tb_crc32c(ff, sizeof ff), 0x62A8AB43u);
    uint32_t c = 0xE3069283u;
    ck_assert_uint_eq(accel_tb_masked_crc32c("123456789", 9), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}
END_TEST

START_TEST(test_write_read)
{
    scratch();
    char path[4096], err[512] = "";
    write_sample(path, sizeof path);
    accel_tb_event_t *ev = NULL;
    size_t n = 0;
    ck_assert_msg(accel_tb_read(path, &ev, &n, err, sizeof err) == ACCEL_OK, "%s", err);
    ck_assert_uint_eq(n, 5);
    ck_assert_int_eq(ev[0].kind, ACCEL_TB_EVENT_FILE_VERSION);
    ck_assert_str_eq(ev[0].tag, "brain.Event:2");
    ck_assert(ev[0].wall_time > 1.6e9);
    ck_assert_int_eq(ev[1].kind, ACCEL_TB_EVENT_SESSION_LOG);
    ck_assert_int_eq(ev[1].status, 1);
    ck_assert_int_eq(ev[1].step, 5);
    ck_assert_int_eq(ev[2].kind, ACCEL_TB_EVENT_SCALAR);
    ck_assert_str_eq(ev[2].tag, "train/loss");
    ck_assert_int_eq(ev[2].step, 5);
    ck_assert(ev[2].value == 2.5f);
    ck_assert(ev[3].value == 0.1f && ev[3].step == 6);
    ck_assert_str_eq(ev[4].tag, "eval/accuracy");
    ck_assert(ev[4].value == -3e-7f);
    free(ev);
    /* A second writer in the same directory gets a later name (it sorts after). */
    accel_tb_writer_t *w;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/a/b", g_dir);
    ck_assert_int_eq(accel_tb_open(dir, &w, err, sizeof err), ACCEL_OK);
    ck_assert_int_gt(strcmp(accel_tb_path(w), path), 0);
    ck_assert_int_eq(accel_tb_close(w), ACCEL_OK);
    cleanup();
}
END_TEST

/* Every byte of the file flipped in turn: a CRC error (never a crash, never wrong values). */
START_TEST(test_corrupt)
{
    scratch();
    char path[4096], err[512];
    write_sample(path, sizeof path);
    long size = file_size(path);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    for (long i = 0; i < size; i++) {
        fseek(f, i, SEEK_SET);
        int c = fgetc(f);
        fseek(f, i, SEEK_SET);
        fputc(c ^ 0x10, f);
        fflush(f);
        accel_tb_event_t *ev = (accel_tb_event_t *)1;
        size_t n = 99;
        err[0] = '\0';
        accel_status_t st = accel_tb_read(path, &ev, &n, err, sizeof err);
        ck_assert_msg(st == ACCEL_ERR_CORRUPT, "byte %ld flipped: status %d", i, st);
        ck_assert_ptr_null(ev);
        ck_assert_uint_eq(n, 0);
        ck_assert_msg(strstr(err, "CRC") || strstr(err, "truncated"), "byte %ld: %s", i, err);
        fseek(f, i, SEEK_SET);
        fputc(c, f);
        fflush(f);
    }
    fclose(f);
    /* A flipped data byte names the record and says CRC. */
    f = fopen(path, "r+b");
    fseek(f, 20, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 20, SEEK_SET);
    fputc(c ^ 1, f);
    fclose(f);
    accel_tb_event_t *ev;
    size_t n;
    ck_assert_int_eq(accel_tb_read(path, &ev, &n, err, sizeof err), ACCEL_ERR_CORRUPT);
    ck_assert_msg(strstr(err, "record 1 at byte 0: the CRC of its") != NULL, "%s", err);
    cleanup();
}
END_TEST

/* Cut at every length: whole records only when the cut falls between records; else "truncated". */
START_TEST(test_truncated)
{
    scratch();
    char path[4096], cut[4200], err[512];
    write_sample(path, sizeof path);
    long size = file_size(path);
    unsigned char *all = malloc((size_t)size);
    FILE *f = fopen(path, "rb");
    ck_assert_int_eq(fread(all, 1, (size_t)size, f), size);
    fclose(f);
    snprintf(cut, sizeof cut, "%s.cut", path);
    int whole = 0;
    for (long len = 0; len < size; len++) {
        f = fopen(cut, "wb");
        fwrite(all, 1, (size_t)len, f);
        fclose(f);
        accel_tb_event_t *ev = NULL;
        size_t n = 0;
        accel_status_t st = accel_tb_read(cut, &ev, &n, err, sizeof err);
        if (st == ACCEL_OK) {
            whole++;
        } else {
            ck_assert_int_eq(st, ACCEL_ERR_CORRUPT);
            ck_assert_msg(strstr(err, "truncated") != NULL, "cut at %ld: %s", len, err);
            ck_assert_msg(strstr(err, "--> hint:") != NULL, "cut at %ld: %s", len, err);
        }
        free(ev);
    }
    ck_assert_int_eq(whole, 5);                 /* lengths 0 and the ends of records 1..4 */
    accel_tb_event_t *ev;
    size_t n;
    ck_assert_int_eq(accel_tb_read("/nonexistent/x.tfevents", &ev, &n, err, sizeof err), ACCEL_ERR_NOT_FOUND);
    free(all);
    cleanup();
}
END_TEST

START_TEST(test_open_fails)
{
    scratch();
    char file[300], dir[320], err[512] = "";
    snprintf(file, sizeof file, "%s/file", g_dir);
    FILE *f = fopen(file, "w");
    fclose(f);
    snprintf(dir, sizeof dir, "%s/sub", file);              /* a directory under a regular file */
    accel_tb_writer_t *w = (accel_tb_writer_t *)1;
    ck_assert_int_eq(accel_tb_open(dir, &w, err, sizeof err), ACCEL_ERR_IO);
    ck_assert_ptr_null(w);
    ck_assert_msg(strstr(err, "cannot create the directory") && strstr(err, "Not a directory"), "%s", err);
    ck_assert_int_eq(accel_tb_open(file, &w, err, sizeof err), ACCEL_ERR_IO);  /* DIR is a file */
    ck_assert_int_eq(accel_tb_open("", &w, err, sizeof err), ACCEL_ERR_INVALID);
    cleanup();
}
END_TEST

/* tests/fixtures/tensorboard/make_fixture.sh wrote these with TensorBoard's EventFileWriter. */
START_TEST(test_tensorboard_fixture)
{
    const char *path = getenv("ACCEL_TB_FIXTURE");
    ck_assert_msg(path != NULL, "ACCEL_TB_FIXTURE is not set (tests/tensorboard_unit.sh sets it)");
    accel_tb_event_t *ev = NULL;
    size_t n = 0;
    char err[512] = "";
    ck_assert_msg(accel_tb_read(path, &ev, &n, err, sizeof err) == ACCEL_OK, "%s", err);
    ck_assert_uint_eq(n, 7);
    ck_assert_int_eq(ev[0].kind, ACCEL_TB_EVENT_FILE_VERSION);
    ck_assert_str_eq(ev[0].tag, "brain.Event:2");
    ck_assert(ev[0].wall_time > 1.6e9);
    const struct { int kind; long step; const char *tag; float value; int status; } want[] = {
        { ACCEL_TB_EVENT_SCALAR, 1, "loss", 2.5f, 0 },
        { ACCEL_TB_EVENT_SCALAR, 2, "loss", 1.25f, 0 },     /* one Summary with two values */
        { ACCEL_TB_EVENT_SCALAR, 2, "accuracy", 0.5f, 0 },
        { ACCEL_TB_EVENT_SESSION_LOG, 3, "", 0, 1 },
        { ACCEL_TB_EVENT_SCALAR, 3, "loss", 0.1f, 0 },
        { ACCEL_TB_EVENT_OTHER, 4, "histogram", 0, 0 },     /* a tensor value: skipped, kept as OTHER */
    };
    for (int i = 0; i < 6; i++) {
        const accel_tb_event_t *e = &ev[i + 1];
        ck_assert_msg((int)e->kind == want[i].kind && e->step == want[i].step && !strcmp(e->tag, want[i].tag),
                      "event %d: kind %d step %lld tag '%s'", i + 1, e->kind, (long long)e->step, e->tag);
        ck_assert_msg(e->value == want[i].value, "event %d: value %.9g, expected %.9g", i + 1, e->value,
                      want[i].value);
        ck_assert_int_eq(e->status, want[i].status);
    }
    free(ev);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("tensorboard");
    TCase *tc = tcase_create("tensorboard");
    tcase_add_test(tc, test_crc32c);
    tcase_add_test(tc, test_write_read);
    tcase_add_test(tc, test_corrupt);
    tcase_add_test(tc, test_truncated);
    tcase_add_test(tc, test_open_fails);
    tcase_add_test(tc, test_tensorboard_fixture);
    suite_add_tcase(s, tc);
    return s;
}

#include "check_main.h"

/* TensorBoard event files (include/accel/tensorboard.h): TFRecord framing with CRC32C from ISA-L,
 * Event messages encoded and decoded by protobuf-c from the C code protoc-c generates out of
 * tb_event.proto (a wire-compatible subset of TensorFlow's). */
#include "build_config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <isa-l/crc.h>

#include "accel/tensorboard.h"
#include "tb_event.pb-c.h"

struct accel_tb_writer {
    FILE *f;
    char path[ACCEL_TB_PATH_MAX];
    accel_status_t error;           /* the first write error: every later call reports it */
};

static void say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ISA-L's crc32_iscsi neither inverts the initial value nor the result: both are the caller's, as
 * the CRC32C standard (and TFRecord) wants them. It takes an int length: long inputs go in chunks. */
uint32_t accel_tb_crc32c(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    while (len > 0) {
        int chunk = len > (size_t)(INT_MAX / 2) ? INT_MAX / 2 : (int)len;
        crc = crc32_iscsi((unsigned char *)p, chunk, crc);
        p += chunk;
        len -= (size_t)chunk;
    }
    return crc ^ 0xFFFFFFFFu;
}

uint32_t accel_tb_masked_crc32c(const void *data, size_t len)
{
    uint32_t crc = accel_tb_crc32c(data, len);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ---------------------------------------------------------------- writing */

static double wall_time(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* One TFRecord: length, its masked CRC, the data, their masked CRC. */
static accel_status_t write_record(accel_tb_writer_t *w, const unsigned char *data, size_t len)
{
    if (w->error != ACCEL_OK) return w->error;
    unsigned char head[12], tail[4];
    put_le(head, len, 8);
    put_le(head + 8, accel_tb_masked_crc32c(head, 8), 4);
    put_le(tail, accel_tb_masked_crc32c(data, len), 4);
    if (fwrite(head, 1, sizeof head, w->f) != sizeof head || fwrite(data, 1, len, w->f) != len ||
        fwrite(tail, 1, sizeof tail, w->f) != sizeof tail)
        w->error = ACCEL_ERR_IO;
    return w->error;
}

static accel_status_t write_event(accel_tb_writer_t *w, const Tensorboard__Event *ev)
{
    if (w->error != ACCEL_OK) return w->error;
    unsigned char stack[256];
    size_t len = tensorboard__event__get_packed_size(ev);
    unsigned char *buf = len <= sizeof stack ? stack : malloc(len);
    if (!buf) return ACCEL_ERR_NOMEM;
    tensorboard__event__pack(ev, buf);
    accel_status_t st = write_record(w, buf, len);
    if (buf != stack) free(buf);
    return st;
}

/* mkdir -p: every missing component of `dir`. */
static int make_dirs(const char *dir)
{
    char path[ACCEL_TB_PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
            *p = c;
            if (!c) break;
        }
    }
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    if (!S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* The newest <seconds> of the event files in `dir` (0 when none). */
static long long newest_seconds(const char *dir)
{
    static const char prefix[] = "events.out.tfevents.";
    long long newest = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, sizeof prefix - 1)) continue;
        long long s = strtoll(e->d_name + sizeof prefix - 1, NULL, 10);
        if (s > newest) newest = s;
    }
    closedir(d);
    return newest;
}

accel_status_t accel_tb_open(const char *dir, accel_tb_writer_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!dir || !dir[0]) {
        say(err, errlen, "no directory given");
        return ACCEL_ERR_INVALID;
    }
    if (make_dirs(dir) != 0) {
        say(err, errlen, "cannot create the directory '%s': %s", dir, strerror(errno));
        return ACCEL_ERR_IO;
    }
    accel_tb_writer_t *w = calloc(1, sizeof *w);
    if (!w) return ACCEL_ERR_NOMEM;
    char host[256] = "localhost";
    if (gethostname(host, sizeof host - 1) != 0) snprintf(host, sizeof host, "localhost");
    host[sizeof host - 1] = '\0';
    double now = wall_time();
    long long seconds = (long long)now, newest = newest_seconds(dir);
    if (seconds <= newest) seconds = newest + 1;
    if (snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%010lld.%s.%ld.accel", dir, seconds,
                 host, (long)getpid()) >= (int)sizeof w->path) {
        say(err, errlen, "the event file name in '%s' is too long", dir);
        free(w);
        return ACCEL_ERR_INVALID;
    }
    /* "x": never append to (or truncate) another writer's file. */
    if (!(w->f = fopen(w->path, "wbx"))) {
        say(err, errlen, "cannot create the event file '%s': %s", w->path, strerror(errno));
        free(w);
        return ACCEL_ERR_IO;
    }
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = now;
    ev.what_case = TENSORBOARD__EVENT__WHAT_FILE_VERSION;
    ev.file_version = (char *)ACCEL_TB_FILE_VERSION;
    accel_status_t st = write_event(w, &ev);
    if (st == ACCEL_OK) st = accel_tb_flush(w);
    if (st != ACCEL_OK) {
        say(err, errlen, "cannot write the event file '%s': %s", w->path, strerror(errno));
        accel_tb_close(w);
        return st;
    }
    *out = w;
    return ACCEL_OK;
}

const char *accel_tb_path(const accel_tb_writer_t *w) { return w ? w->path : ""; }

accel_status_t accel_tb_scalar(accel_tb_writer_t *w, const char *tag, int64_t step, float value)
{
    Tensorboard__Summary__Value v = TENSORBOARD__SUMMARY__VALUE__INIT;
    v.tag = (char *)tag;
    v.value_case = TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE;
    v.simple_value = value;
    Tensorboard__Summary__Value *values[1] = { &v };
    Tensorboard__Summary summary = TENSORBOARD__SUMMARY__INIT;
    summary.n_value = 1;
    summary.value = values;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_time();
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SUMMARY;
    ev.summary = &summary;
    return write_event(w, &ev);
}

accel_status_t accel_tb_session_start(accel_tb_writer_t *w, int64_t step)
{
    Tensorboard__SessionLog log = TENSORBOARD__SESSION_LOG__INIT;
    log.status = TENSORBOARD__SESSION_LOG__SESSION_STATUS__START;
    Tensorboard__Event ev = TENSORBOARD__EVENT__INIT;
    ev.wall_time = wall_time();
    ev.step = step;
    ev.what_case = TENSORBOARD__EVENT__WHAT_SESSION_LOG;
    ev.session_log = &log;
    return write_event(w, &ev);
}

accel_status_t accel_tb_flush(accel_tb_writer_t *w)
{
    if (w->error == ACCEL_OK && fflush(w->f) != 0) w->error = ACCEL_ERR_IO;
    return w->error;
}

accel_status_t accel_tb_close(accel_tb_writer_t *w)
{
    if (!w) return ACCEL_OK;
    accel_status_t st = accel_tb_flush(w);
    if (fclose(w->f) != 0 && st == ACCEL_OK) st = ACCEL_ERR_IO;
    free(w);
    return st;
}

/* ---------------------------------------------------------------- reading */

/* Appends the entries of one decoded Event to the list. */
static accel_status_t add_event(const Tensorboard__Event *ev, accel_tb_event_t **list, size_t *n,
                                size_t *cap)
{
    accel_tb_event_t e = { .kind = ACCEL_TB_EVENT_OTHER, .wall_time = ev->wall_time, .step = ev->step };
    size_t count = 1;
    if (ev->what_case == TENSORBOARD__EVENT__WHAT_SUMMARY && ev->summary) count = ev->summary->n_value;
    if (*n + count > *cap) {
        size_t want = 2 * *cap + count + 64;
        accel_tb_event_t *p = realloc(*list, want * sizeof *p);
        if (!p) return ACCEL_ERR_NOMEM;
        *list = p;
        *cap = want;
    }
    switch (ev->what_case) {
    case TENSORBOARD__EVENT__WHAT_FILE_VERSION:
        e.kind = ACCEL_TB_EVENT_FILE_VERSION;
        snprintf(e.tag, sizeof e.tag, "%s", ev->file_version ? ev->file_version : "");
        break;
    case TENSORBOARD__EVENT__WHAT_SESSION_LOG:
        e.kind = ACCEL_TB_EVENT_SESSION_LOG;
        e.status = ev->session_log ? (int)ev->session_log->status : 0;
        break;
    case TENSORBOARD__EVENT__WHAT_SUMMARY:
        if (!ev->summary) break;
        for (size_t i = 0; i < ev->summary->n_value; i++) {
            const Tensorboard__Summary__Value *v = ev->summary->value[i];
            accel_tb_event_t s = e;
            if (v->value_case == TENSORBOARD__SUMMARY__VALUE__VALUE_SIMPLE_VALUE) {
                s.kind = ACCEL_TB_EVENT_SCALAR;
                s.value = v->simple_value;
            }
            snprintf(s.tag, sizeof s.tag, "%s", v->tag ? v->tag : "");
            (*list)[(*n)++] = s;
        }
        return ACCEL_OK;
    default:
        break;
    }
    (*list)[(*n)++] = e;
    return ACCEL_OK;
}

accel_status_t accel_tb_read(const char *path, accel_tb_event_t **events, size_t *n, char *err,
                             size_t errlen)
{
    *events = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        say(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return errno == ENOENT ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_IO;
    }
    unsigned char *data = NULL;
    size_t size = 0, room = 0, got;
    accel_status_t st = ACCEL_OK;
    do {
        if (size == room) {
            unsigned char *p = realloc(data, room = 2 * room + 65536);
            if (!p) { st = ACCEL_ERR_NOMEM; break; }
            data = p;
        }
        got = fread(data + size, 1, room - size, f);
        size += got;
    } while (got > 0);
    if (st == ACCEL_OK && ferror(f)) {
        say(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        st = ACCEL_ERR_IO;
    }
    fclose(f);
    accel_tb_event_t *list = NULL;
    size_t count = 0, cap = 0, off = 0;
    for (long record = 1; st == ACCEL_OK && off < size; record++) {
        size_t left = size - off;
        if (left < 12) {
            say(err, errlen, "%s: record %ld at byte %zu is truncated: %zu bytes where a record header "
                "needs 12\n--> hint: the file ends mid-record (the writer was killed); the records "
                "before it are whole", path, record, off, left);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        const unsigned char *p = data + off;
        uint64_t len = get_le(p, 8);
        if ((uint32_t)get_le(p + 8, 4) != accel_tb_masked_crc32c(p, 8)) {
            say(err, errlen, "%s: record %ld at byte %zu: the CRC of its length does not match (corrupt "
                "file, or not a TensorBoard event file)", path, record, off);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        if (len > left - 12 || left - 12 - len < 4) {
            say(err, errlen, "%s: record %ld at byte %zu is truncated: it needs %llu bytes, the file has "
                "%zu left\n--> hint: the file ends mid-record (the writer was killed); the records "
                "before it are whole", path, record, off, (unsigned long long)len + 16, left);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        if ((uint32_t)get_le(p + 12 + len, 4) != accel_tb_masked_crc32c(p + 12, (size_t)len)) {
            say(err, errlen, "%s: record %ld at byte %zu: the CRC of its %llu data bytes does not match "
                "(corrupt data)", path, record, off, (unsigned long long)len);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        Tensorboard__Event *ev = tensorboard__event__unpack(NULL, (size_t)len, p + 12);
        if (!ev) {
            say(err, errlen, "%s: record %ld at byte %zu is not a valid Event message", path, record, off);
            st = ACCEL_ERR_CORRUPT;
            break;
        }
        st = add_event(ev, &list, &count, &cap);
        tensorboard__event__free_unpacked(ev, NULL);
        off += 16 + (size_t)len;
    }
    free(data);
    if (st != ACCEL_OK) {
        free(list);
        return st;
    }
    *events = list;
    *n = count;
    return ACCEL_OK;
}

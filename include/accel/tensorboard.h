/* TensorBoard event files: a writer of scalars and session logs (what accel_train's
 * train.tensorboard writes, docs/metrics.md) and a reader of the same format that checks every
 * record. The format is TensorFlow's: a TFRecord stream (uint64 length, masked CRC32C of the
 * length, the bytes, masked CRC32C of the bytes; little-endian) of protobuf `Event` messages, the
 * first of which holds file_version "brain.Event:2". A user program can log its own scalars with
 * the writer; `tensorboard --logdir DIR` shows them. */
#ifndef ACCEL_TENSORBOARD_H
#define ACCEL_TENSORBOARD_H

#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"

#define ACCEL_TB_FILE_VERSION "brain.Event:2"
#define ACCEL_TB_TAG_MAX 128
#define ACCEL_TB_PATH_MAX 4096

typedef struct accel_tb_writer accel_tb_writer_t;

/* CRC32C (Castagnoli, as iSCSI and TFRecord use): crc32c("123456789") = 0xE3069283. */
uint32_t accel_tb_crc32c(const void *data, size_t len);
/* TFRecord's masked form of a CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t accel_tb_masked_crc32c(const void *data, size_t len);

/* Creates `dir` (and its parents) and a new event file in it,
 * events.out.tfevents.<seconds>.<host>.<pid>.accel, whose first event is the file_version. The
 * seconds are now, or one more than the newest event file already in `dir`, so that a later run's
 * file sorts (and so is read) after the earlier ones. On failure, err says what failed. */
accel_status_t accel_tb_open(const char *dir, accel_tb_writer_t **out, char *err, size_t errlen);
/* The file being written. */
const char *accel_tb_path(const accel_tb_writer_t *w);
/* One scalar (an Event with one Summary value) at `step`, buffered until accel_tb_flush. */
accel_status_t accel_tb_scalar(accel_tb_writer_t *w, const char *tag, int64_t step, float value);
/* A SessionLog START at `step`: TensorBoard drops the events with step >= `step` that it read
 * before it (a resumed run's orphans: the interrupted run's steps after its checkpoint). */
accel_status_t accel_tb_session_start(accel_tb_writer_t *w, int64_t step);
/* Writes the buffered events to the file (fflush: a crash loses nothing written before). */
accel_status_t accel_tb_flush(accel_tb_writer_t *w);
/* Flushes and closes; returns the first error the writer met (ACCEL_OK for NULL). */
accel_status_t accel_tb_close(accel_tb_writer_t *w);

/* ---------------------------------------------------------------- reading */

typedef enum {
    ACCEL_TB_EVENT_FILE_VERSION,    /* text: the version string */
    ACCEL_TB_EVENT_SCALAR,          /* tag, value (one per Summary value with a simple_value) */
    ACCEL_TB_EVENT_SESSION_LOG,     /* status: 0 unspecified, 1 START, 2 STOP, 3 CHECKPOINT */
    ACCEL_TB_EVENT_OTHER            /* an event with nothing of the above (images, graphs ...) */
} accel_tb_event_kind_t;

typedef struct {
    accel_tb_event_kind_t kind;
    double wall_time;
    int64_t step;
    char tag[ACCEL_TB_TAG_MAX];     /* scalars: the tag; file_version: the version */
    float value;                    /* scalars */
    int status;                     /* session logs */
} accel_tb_event_t;

/* Reads every record of one event file, checking both CRCs of each and decoding the Events:
 * *events (free() it) holds *n entries in file order, a Summary with several scalar values giving
 * one entry per value. A bad CRC, a truncated record or an undecodable message is
 * ACCEL_ERR_CORRUPT, with the record's number and byte offset in err; nothing is returned then. */
accel_status_t accel_tb_read(const char *path, accel_tb_event_t **events, size_t *n, char *err,
                             size_t errlen);

#endif

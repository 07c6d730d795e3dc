/* The HDF5 layer (src/h5), private to libaccel: what every file format built on HDF5 needs and no
 * format owns. Attribute readers and writers, quiet error handling and the innermost HDF5 error
 * for messages, a serial read-only open without file locks, the file-signature probe, and atomic
 * publication of a finished file (temporary name, fsync, rename, fsync of the directory).
 * Functions return accel_status_t and never exit. Layer rule: includes core only. */
#ifndef ACCEL_H5_H5UTIL_H
#define ACCEL_H5_H5UTIL_H

#include <hdf5.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"

/* ------------------------------------------------------------------ threads */

/* Debian's parallel HDF5 is not thread-safe: while the checkpoint writer thread (ckpt.async) is in
 * HDF5, another thread must not call it. The writer holds this lock for its whole save; the
 * training thread's per-step HDF5 calls (dataset reads) take it around each read. */
void accel_h5_lock(void);
void accel_h5_unlock(void);

/* ------------------------------------------------------------------ errors */

/* HDF5 prints its error stack by default; accel reports errors itself, so printing is off between
 * begin and end and restored afterwards (calls nest). */
typedef struct {
    H5E_auto2_t func;
    void *data;
} accel_h5_quiet_t;
void accel_h5_quiet_begin(accel_h5_quiet_t *q);
void accel_h5_quiet_end(const accel_h5_quiet_t *q);

/* The innermost message of the current HDF5 error stack (the MPI-IO or POSIX error, "truncated
 * file: eof = ..."), or "". Call it right after the failing call: the next HDF5 call clears it. */
void accel_h5_last_error(char *buf, size_t len);

/* ------------------------------------------------------------------ attributes */

/* Writers: a scalar attribute on any object (file, group, dataset), replacing one of the same name.
 * Strings are fixed-length, NUL-padded, ASCII. Integers are stored little-endian at the width the
 * name says. Errors are logged with the attribute and file names; ACCEL_ERR_HDF5. */
accel_status_t accel_h5_attr_write_str(hid_t obj, const char *name, const char *value);
accel_status_t accel_h5_attr_write_i32(hid_t obj, const char *name, int32_t value);
accel_status_t accel_h5_attr_write_i64(hid_t obj, const char *name, int64_t value);
accel_status_t accel_h5_attr_write_u64(hid_t obj, const char *name, uint64_t value);
accel_status_t accel_h5_attr_write_f64(hid_t obj, const char *name, double value);

/* Readers: ACCEL_OK when read; ACCEL_ERR_NOT_FOUND when absent (value untouched); ACCEL_ERR_INVALID
 * when it is not a scalar of that kind (strings: fixed or variable length, any character set, as
 * h5py writes them; integers: any integer type; f64: any integer or float type). Neither is logged:
 * the caller words them in its format's terms (and on one rank only). An HDF5 failure reading an
 * attribute that is there (a damaged file) is logged and gives ACCEL_ERR_HDF5. */
accel_status_t accel_h5_attr_read_str(hid_t obj, const char *name, char *value, size_t len);
accel_status_t accel_h5_attr_read_i64(hid_t obj, const char *name, int64_t *value);
accel_status_t accel_h5_attr_read_u64(hid_t obj, const char *name, uint64_t *value);
accel_status_t accel_h5_attr_read_f64(hid_t obj, const char *name, double *value);

/* ------------------------------------------------------------------ byte blobs
 * A file kept inside an HDF5 file (e.g. a tokenizer.json) as a 1-D uint8 dataset: attributes stop
 * at 64 KiB. write: `name` in group `loc`, n bytes (n may be 0). read: *data malloc'ed with a NUL
 * after the *len bytes; ACCEL_ERR_NOT_FOUND when absent, ACCEL_ERR_INVALID when it is not a 1-D
 * 8-bit integer dataset or larger than max_len bytes. Not logged. */
accel_status_t accel_h5_write_bytes(hid_t loc, const char *name, const void *data, size_t n);
accel_status_t accel_h5_read_bytes(hid_t loc, const char *name, size_t max_len, char **data,
                                   size_t *len);

/* ------------------------------------------------------------------ files */

/* 1 when every component of an absolute HDF5 path ("/a/b/c") exists, 0 when one does not, <0 on
 * error (H5Lexists itself fails on a missing intermediate group, hence the walk). */
int accel_h5_path_exists(hid_t loc, const char *path);

/* A file access property list for the serial (sec2) driver without HDF5's file lock: flock is
 * refused on parallel file systems mounted without it, and the temporary-name + rename protocol
 * already keeps readers off files being written. *fapl: close with H5Pclose. */
accel_status_t accel_h5_fapl_serial(hid_t *fapl);

/* Open a file read-only through accel_h5_fapl_serial, quietly. Not logged (callers say what the
 * file was meant to be); the HDF5 reason goes to err (may be NULL). ACCEL_ERR_CORRUPT when HDF5
 * cannot open it. */
accel_status_t accel_h5_open_read(const char *path, hid_t *file, char *err, size_t errlen);

/* 1 when the file of `size` bytes carries the HDF5 superblock signature (at byte 0 or, after a user
 * block, at 512, 1024, 2048, ...), else 0. Checked by hand rather than with H5Fis_hdf5, which opens
 * the file with the serial driver and takes a file lock (refused on parallel file systems mounted
 * without flock). */
int accel_h5_probe(const char *path, long long size);

/* ------------------------------------------------------------------ atomic publication */

/* fsync a file, or a directory (file systems that cannot fsync a directory count as done). Sets
 * errno on failure; not logged. */
int accel_h5_fsync_path(const char *path, bool directory);

/* Publish a finished file: fsync tmp, rename it over path, fsync path's directory. Readers see the
 * old file or the new one, never a part. On failure tmp is removed, path is untouched, and the
 * error is logged naming both; ACCEL_ERR_IO (errno kept). */
accel_status_t accel_h5_publish(const char *tmp, const char *path);

/* Write a small file (a pointer such as a checkpoint's `latest`) atomically: path.tmp, fsync,
 * rename, fsync the directory. Same guarantees as accel_h5_publish. */
accel_status_t accel_h5_publish_text(const char *path, const char *content);

/* The dataset has file space for all of its nbytes of data: contiguous (or compact), allocated
 * and at least nbytes stored; chunked (maybe compressed), every chunk stored. Reading unallocated
 * data gives fill values (zeros), not data: readers of checkpoints and datasets refuse it. Quiet. */
bool accel_h5_dset_allocated(hid_t dset, uint64_t nbytes);

#endif

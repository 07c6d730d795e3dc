/* safetensors files (https://github.com/huggingface/safetensors): an 8-byte little-endian header
 * size, a JSON header (per tensor: dtype, shape, data_offsets into the data area; an optional
 * "__metadata__" object of strings), then the raw little-endian data. One module owns the format
 * (src/ckpt/safetensors.c): the strict reader used by inference, import and init_from, and the
 * streaming writer used by every export. Local, no MPI. */
#ifndef ACCEL_SAFETENSORS_H
#define ACCEL_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"

#define ACCEL_ST_MAX_DIMS 8
#define ACCEL_ST_HEADER_MAX ((uint64_t)100 << 20)   /* the reference reader's limit: 100 MB */

/* U8: raw bytes (MXFP4's and NVFP4's packed values and scales), read as their values 0..255; I8,
 * I32, I64: integers (compressed-tensors' INT8 weights, packed weights and their shapes); none of
 * them written. */
typedef enum { ACCEL_ST_F32 = 0, ACCEL_ST_BF16, ACCEL_ST_F16, ACCEL_ST_U8, ACCEL_ST_F8_E4M3, ACCEL_ST_I32,
               ACCEL_ST_I64, ACCEL_ST_I8 } accel_st_dtype_t;

typedef struct {
    char *name;
    accel_st_dtype_t dtype;
    int ndim;
    uint64_t dims[ACCEL_ST_MAX_DIMS];
    uint64_t numel;
    uint64_t begin, end;            /* byte offsets into the data area */
} accel_st_tensor_t;

typedef struct accel_st accel_st_t;

/* Open and check a file: header size within the file and ACCEL_ST_HEADER_MAX, valid JSON, every
 * tensor with a known dtype (F32, BF16, F16, U8), shape product x element size == byte length,
 * offsets inside the data area, tensors not overlapping. Not logged: err (may be NULL) receives
 * one line naming the file and what is wrong. ACCEL_ERR_NOT_FOUND / ACCEL_ERR_IO (cannot open),
 * ACCEL_ERR_CORRUPT (a bad header), ACCEL_ERR_UNSUPPORTED (another dtype). */
accel_status_t accel_st_open(const char *path, accel_st_t **out, char *err, size_t errlen);
void accel_st_close(accel_st_t *st);
const char *accel_st_path(const accel_st_t *st);
/* Tensors, sorted by name. */
int accel_st_count(const accel_st_t *st);
const accel_st_tensor_t *accel_st_at(const accel_st_t *st, int i);
const accel_st_tensor_t *accel_st_find(const accel_st_t *st, const char *name);
/* A "__metadata__" string, or NULL. */
const char *accel_st_metadata(const accel_st_t *st, const char *key);
/* Flat elements [begin, end) of t as fp32 (BF16, F16 and U8 widened exactly; I32 and I64 rounded
 * to the nearest float, exact below 2^24). */
accel_status_t accel_st_read(const accel_st_t *st, const accel_st_tensor_t *t, uint64_t begin,
                             uint64_t end, float *dst);
/* Flat elements [begin, end) of an I32 tensor as their 32-bit patterns (packed integer weights). */
accel_status_t accel_st_read_u32(const accel_st_t *st, const accel_st_tensor_t *t, uint64_t begin,
                                 uint64_t end, uint32_t *dst);
const char *accel_st_dtype_name(accel_st_dtype_t dtype);
/* f as F8_E4M3 stores it (rounded to nearest even, saturated at 448), back as a float. */
float accel_st_f8_e4m3_round(float f);

/* ------------------------------------------------------------------ writing */

typedef struct {
    const char *name;
    accel_st_dtype_t dtype;         /* F32, BF16 or F8_E4M3 (rounded to nearest even; e4m3 saturates at
                                     * 448), or U8 (values 0..255: packed bytes) */
    int ndim;
    uint64_t dims[ACCEL_ST_MAX_DIMS];
} accel_st_entry_t;

/* Gives elements [begin, end) of entry `index` as fp32 into dst. */
typedef accel_status_t (*accel_st_fill_fn)(void *ctx, int index, uint64_t begin, uint64_t end,
                                           float *dst);

/* Write entries (in the given order) with "__metadata__" = meta[0..2*nmeta) as key, value pairs,
 * streaming the data from fill; publishes atomically (path.tmp, fsync, rename). Logged. */
accel_status_t accel_st_write(const char *path, const accel_st_entry_t *entries, int n,
                              const char *const *meta, int nmeta, accel_st_fill_fn fill, void *ctx);

#endif

/* Test helper (header-only): write a model's initial weights as an accel checkpoint or as exported
 * weights with plain HDF5 calls, in the layout docs/checkpoint-format.md describes (root attributes,
 * /meta/config.yaml, /model/<tensor> fp32 at full shape; exported: /<tensor>, fp32 or bf16). No
 * checksum tables: the inference reader does not need them. One tensor in memory at a time, so
 * big benchmark models can be written on a small machine. Faults for bad-input tests: a missing
 * tensor, a wrong shape, an unfinished save. */
#ifndef ACCEL_TESTS_INFER_WEIGHTS_H
#define ACCEL_TESTS_INFER_WEIGHTS_H

#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

enum { TW_FP32 = 0, TW_BF16_FLOAT, TW_BF16_BITS };

typedef struct {
    int exported;                   /* tensors at the root, no configuration */
    int dtype;                      /* TW_* (bf16 only for exported weights) */
    const char *drop;               /* leave this tensor out */
    const char *reshape;            /* store this tensor with its first dimension + 1 */
    int incomplete;                 /* checkpoint without complete = 1 */
    uint64_t seed;
} tw_opts_t;

static inline uint16_t tw_bf16(float f)    /* round to nearest even, as accel_ckpt export does */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float tw_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline void tw_str_attr(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, value);
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
}

static inline void tw_int_attr(hid_t obj, const char *name, long long value)
{
    hid_t s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_LLONG, &value);
    H5Aclose(a);
    H5Sclose(s);
}

/* Write the weights of a model built from cfg (accel_arena_init_range with o->seed). 0 on success. */
static inline int tw_write(const char *path, const accel_config_t *cfg, const tw_opts_t *o)
{
    accel_model_t m;
    if (accel_model_create(cfg, &m) != ACCEL_OK) return -1;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) { accel_model_destroy(&m); return -1; }
    int rc = 0;
    hid_t grp = f;
    if (!o->exported) {
        tw_str_attr(f, "format", "accel-checkpoint");
        tw_int_attr(f, "format_version", 1);
        tw_str_attr(f, "arenas", "model");
        tw_str_attr(f, "checksum_algorithm", "xxh3_64");
        tw_int_attr(f, "checksum_block_elems", 65536);
        hid_t meta = H5Gcreate2(f, "meta", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        tw_int_attr(meta, "step", 42);
        tw_str_attr(meta, "precision", cfg->precision);
        char *yaml = accel_config_to_yaml(cfg);
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, strlen(yaml) + 1);
        hid_t s = H5Screate(H5S_SCALAR);
        hid_t d = H5Dcreate2(meta, "config.yaml", t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, yaml) < 0) rc = -1;
        H5Dclose(d);
        H5Sclose(s);
        H5Tclose(t);
        free(yaml);
        H5Gclose(H5Gcreate2(meta, "extra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        H5Gclose(meta);
        /* An optimizer group, as the trainer writes: must be ignored. */
        hid_t opt = H5Gcreate2(f, "optim", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Gclose(opt);
        grp = H5Gcreate2(f, "model", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    }
    hid_t ftype = H5Tcopy(H5T_IEEE_F32LE);
    if (o->exported && o->dtype == TW_BF16_FLOAT) {   /* accel_ckpt's bf16 float type */
        H5Tset_fields(ftype, 15, 7, 8, 0, 7);
        H5Tset_offset(ftype, 0);
        H5Tset_precision(ftype, 16);
        H5Tset_size(ftype, 2);
        H5Tset_ebias(ftype, 127);
    } else if (o->exported && o->dtype == TW_BF16_BITS) {
        H5Tclose(ftype);
        ftype = H5Tcopy(H5T_STD_U16LE);
    }
    for (int i = 0; i < m.layout.ntensors && !rc; i++) {
        const accel_tensor_t *t = &m.layout.tensors[i];
        if (o->drop && !strcmp(o->drop, t->name)) continue;
        hsize_t dims[ACCEL_TENSOR_MAX_DIMS];
        for (int k = 0; k < t->ndim; k++) dims[k] = (hsize_t)t->shape[k];
        int reshaped = o->reshape && !strcmp(o->reshape, t->name);
        if (reshaped) dims[0]++;
        size_t n = t->numel;
        float *buf = malloc(sizeof(float) * (reshaped ? n + n / (size_t)t->shape[0] : n));
        uint16_t *half = malloc(sizeof(uint16_t) * n + 2);
        if (!buf || !half) { rc = -1; free(buf); free(half); break; }
        accel_arena_init_range(&m.layout, buf, t->offset, t->offset + n, o->seed);
        if (reshaped) memset(buf + n, 0, sizeof(float) * (n / (size_t)t->shape[0]));
        hid_t s = H5Screate_simple(t->ndim, dims, NULL);
        hid_t d = H5Dcreate2(grp, t->name, ftype, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        herr_t r;
        if (o->exported && o->dtype != TW_FP32 && !reshaped) {
            for (size_t q = 0; q < n; q++) half[q] = tw_bf16(buf[q]);
            r = H5Dwrite(d, o->dtype == TW_BF16_BITS ? H5T_NATIVE_UINT16 : ftype, H5S_ALL, H5S_ALL,
                         H5P_DEFAULT, half);
            tw_str_attr(d, "dtype", "bf16");
        } else {
            r = H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        }
        if (d < 0 || r < 0) rc = -1;
        H5Dclose(d);
        H5Sclose(s);
        free(buf);
        free(half);
    }
    H5Tclose(ftype);
    if (!o->exported) {
        H5Gclose(grp);
        if (!o->incomplete) tw_int_attr(f, "complete", 1);
    }
    if (H5Fclose(f) < 0) rc = -1;
    accel_model_destroy(&m);
    return rc;
}

#endif

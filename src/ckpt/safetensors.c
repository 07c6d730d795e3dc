/* The safetensors format (include/accel/safetensors.h): a strict reader over a read-only mmap of
 * the file, and a streaming writer. The header is parsed with jansson and checked completely when
 * the file is opened, so later reads only copy bytes that are known to lie inside the file. */
#include "build_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "accel/dtype.h"
#include "accel/log.h"
#include "accel/safetensors.h"
#include "../h5/h5util.h"

#define WRITE_CHUNK ((uint64_t)1 << 20)    /* elements per streamed write: 4 MiB of fp32 */

struct accel_st {
    char *path;
    const uint8_t *map;             /* the whole file */
    size_t size;
    const uint8_t *data;            /* the data area (after the header) */
    uint64_t data_size;
    accel_st_tensor_t *t;
    int n;
    json_t *meta;                   /* "__metadata__" or NULL */
};

static const char *const g_dtypes[] = { "F32", "BF16", "F16", "U8", "F8_E4M3", "I32", "I64", "I8" };
static const size_t g_esize[] = { 4, 2, 2, 1, 1, 4, 8, 1 };
#define NDTYPES (sizeof g_dtypes / sizeof *g_dtypes)

const char *accel_st_dtype_name(accel_st_dtype_t d) { return (unsigned)d < NDTYPES ? g_dtypes[d] : "?"; }

/* float8 e4m3fn (FP8 weights): a sign, four exponent bits (bias 7), three mantissa bits; no
 * infinities, S.1111.111 is NaN. */
static float f8_e4m3_to_f32(uint8_t b)
{
    const int e = (b >> 3) & 15, m = b & 7;
    const float v = e ? ldexpf(1.0f + (float)m / 8.0f, e - 7) : ldexpf((float)m / 8.0f, -6);
    return (b & 127) == 127 ? NAN : b & 128 ? -v : v;
}

/* ... and back, rounded to nearest even (e4m3fn's largest, 448, for anything past it: the caller
 * scales its values into range). */
static uint8_t f32_to_f8_e4m3(float f)
{
    const uint8_t sign = signbit(f) ? 128 : 0;
    const float a = fabsf(f);
    if (isnan(f)) return 127;
    if (a >= 448.0f) return sign | 126;
    if (a < 0.015625f) return sign | (uint8_t)nearbyintf(a * 512.0f);  /* subnormal: m / 8 * 2^-6; 8 carries */
    int e;
    const float q = frexpf(a, &e);                 /* a = q 2^e, q in [0.5, 1) */
    const int m = (int)nearbyintf((q * 2.0f - 1.0f) * 8.0f);
    const int code = ((e - 1 + 7) << 3) + m;        /* m = 8 carries into the exponent */
    return sign | (uint8_t)(code > 126 ? 126 : code);
}

float accel_st_f8_e4m3_round(float f) { return f8_e4m3_to_f32(f32_to_f8_e4m3(f)); }

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const accel_st_tensor_t *)a)->name, ((const accel_st_tensor_t *)b)->name);
}

static int cmp_begin(const void *a, const void *b)
{
    const accel_st_tensor_t *x = *(accel_st_tensor_t *const *)a, *y = *(accel_st_tensor_t *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* One header entry into t; a message naming the tensor otherwise. */
static accel_status_t parse_entry(accel_st_t *st, const char *key, json_t *v, accel_st_tensor_t *t,
                                  char *err, size_t errlen)
{
    const char *p = st->path;
    json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
    json_t *offs = json_object_get(v, "data_offsets");
    if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(shape) || !json_is_array(offs) ||
        json_array_size(offs) != 2) {
        accel_errf(err, errlen, "%s: header entry '%s' is not {dtype, shape, data_offsets[2]}", p, key);
        return ACCEL_ERR_CORRUPT;
    }
    int d = -1;
    for (int k = 0; k < (int)NDTYPES; k++)
        if (!strcmp(json_string_value(dt), g_dtypes[k])) d = k;
    if (d < 0) {
        accel_errf(err, errlen, "%s: tensor '%s' has dtype %s, which accel does not read\n--> hint: "
                "accel reads F32, BF16 and F16 weights (and U8: MXFP4's and NVFP4's packed values, F8_E4M3: FP8 "
                "weights and scales, I8: INT8 weights, I32 and I64: packed integer weights and their shapes)", p, key,
                json_string_value(dt));
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (json_array_size(shape) > ACCEL_ST_MAX_DIMS) {
        accel_errf(err, errlen, "%s: tensor '%s' has %zu dimensions (at most %d)", p, key,
                json_array_size(shape), ACCEL_ST_MAX_DIMS);
        return ACCEL_ERR_CORRUPT;
    }
    t->dtype = (accel_st_dtype_t)d;
    t->ndim = (int)json_array_size(shape);
    t->numel = 1;
    for (int k = 0; k < t->ndim; k++) {
        json_t *e = json_array_get(shape, (size_t)k);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || json_integer_value(e) > (json_int_t)1 << 40) {
            accel_errf(err, errlen, "%s: tensor '%s': shape entry %d is not a size", p, key, k);
            return ACCEL_ERR_CORRUPT;
        }
        t->dims[k] = (uint64_t)json_integer_value(e);
        if (t->dims[k] && t->numel > ((uint64_t)1 << 50) / t->dims[k]) {
            accel_errf(err, errlen, "%s: tensor '%s': shape too large", p, key);
            return ACCEL_ERR_CORRUPT;
        }
        t->numel *= t->dims[k];
    }
    json_t *b = json_array_get(offs, 0), *e = json_array_get(offs, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < json_integer_value(b)) {
        accel_errf(err, errlen, "%s: tensor '%s': data_offsets are not [begin, end] with begin <= end", p, key);
        return ACCEL_ERR_CORRUPT;
    }
    t->begin = (uint64_t)json_integer_value(b);
    t->end = (uint64_t)json_integer_value(e);
    if (t->end > st->data_size) {
        accel_errf(err, errlen, "%s: tensor '%s': data_offsets [%llu, %llu] run past the data (%llu bytes)"
                "\n--> hint: the file is truncated or its header is damaged", p, key,
                (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)st->data_size);
        return ACCEL_ERR_CORRUPT;
    }
    if (t->end - t->begin != t->numel * g_esize[d]) {
        accel_errf(err, errlen, "%s: tensor '%s': %llu bytes for a %s tensor of %llu elements (%llu expected)",
                p, key, (unsigned long long)(t->end - t->begin), g_dtypes[d], (unsigned long long)t->numel,
                (unsigned long long)(t->numel * g_esize[d]));
        return ACCEL_ERR_CORRUPT;
    }
    t->name = strdup(key);
    return t->name ? ACCEL_OK : ACCEL_ERR_NOMEM;
}

/* The header: JSON object, every entry sound, no two tensors sharing bytes. */
static accel_status_t parse_header(accel_st_t *st, const char *text, size_t len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, 0, &je);
    accel_status_t s = ACCEL_OK;
    accel_st_tensor_t **order = NULL;
    if (!json_is_object(root)) {
        accel_errf(err, errlen, "%s: the header is not a JSON object (%s, line %d)", st->path,
                root ? "another JSON value" : je.text, je.line);
        s = ACCEL_ERR_CORRUPT;
        goto out;
    }
    size_t cap = json_object_size(root);
    st->t = calloc(cap ? cap : 1, sizeof *st->t);
    if (!st->t) { s = ACCEL_ERR_NOMEM; goto out; }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__")) {
            const char *mk;
            json_t *mv;
            if (!json_is_object(v)) s = ACCEL_ERR_CORRUPT;
            else json_object_foreach(v, mk, mv) if (!json_is_string(mv)) s = ACCEL_ERR_CORRUPT;
            if (s != ACCEL_OK) {
                accel_errf(err, errlen, "%s: __metadata__ is not an object of strings", st->path);
                goto out;
            }
            st->meta = json_incref(v);
            continue;
        }
        s = parse_entry(st, key, v, &st->t[st->n], err, errlen);
        if (s != ACCEL_OK) goto out;
        st->n++;
    }
    order = malloc(sizeof *order * (size_t)(st->n ? st->n : 1));
    if (!order) { s = ACCEL_ERR_NOMEM; goto out; }
    for (int i = 0; i < st->n; i++) order[i] = &st->t[i];
    qsort(order, (size_t)st->n, sizeof *order, cmp_begin);
    for (int i = 1; i < st->n; i++)
        if (order[i]->begin < order[i - 1]->end) {
            accel_errf(err, errlen, "%s: tensors '%s' and '%s' overlap (bytes %llu.. and ..%llu)", st->path,
                    order[i - 1]->name, order[i]->name, (unsigned long long)order[i]->begin,
                    (unsigned long long)order[i - 1]->end);
            s = ACCEL_ERR_CORRUPT;
            goto out;
        }
    qsort(st->t, (size_t)st->n, sizeof *st->t, cmp_name);
out:
    free(order);
    json_decref(root);
    return s;
}

accel_status_t accel_st_open(const char *path, accel_st_t **out, char *err, size_t errlen)
{
    *out = NULL;
    accel_status_t s = ACCEL_OK;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        accel_errf(err, errlen, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_IO;
    }
    accel_st_t *st = calloc(1, sizeof *st);
    struct stat sb;
    if (!st || !(st->path = strdup(path))) { s = ACCEL_ERR_NOMEM; goto fail; }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        accel_errf(err, errlen, "%s is not a regular file", path);
        s = ACCEL_ERR_IO;
        goto fail;
    }
    if (sb.st_size < 8) {
        accel_errf(err, errlen, "%s: %lld bytes: too short for a safetensors file (truncated?)", path,
                (long long)sb.st_size);
        s = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    st->size = (size_t)sb.st_size;
    void *m = mmap(NULL, st->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
        accel_errf(err, errlen, "%s: mmap: %s", path, strerror(errno));
        s = ACCEL_ERR_IO;
        goto fail;
    }
    st->map = m;
    uint64_t hlen = 0;
    for (int k = 0; k < 8; k++) hlen |= (uint64_t)st->map[k] << (8 * k);
    if (hlen < 2 || hlen > ACCEL_ST_HEADER_MAX || hlen > st->size - 8) {
        accel_errf(err, errlen, "%s: header size %llu does not fit the file (%zu bytes) or the limit of "
                "%llu\n--> hint: the file is truncated or not a safetensors file", path,
                (unsigned long long)hlen, st->size, (unsigned long long)ACCEL_ST_HEADER_MAX);
        s = ACCEL_ERR_CORRUPT;
        goto fail;
    }
    st->data = st->map + 8 + hlen;
    st->data_size = st->size - 8 - hlen;
    s = parse_header(st, (const char *)st->map + 8, (size_t)hlen, err, errlen);
    if (s != ACCEL_OK) goto fail;
    close(fd);
    *out = st;
    return ACCEL_OK;
fail:
    close(fd);
    accel_st_close(st);
    return s;
}

void accel_st_close(accel_st_t *st)
{
    if (!st) return;
    if (st->map) munmap((void *)st->map, st->size);
    for (int i = 0; i < st->n; i++) free(st->t[i].name);
    free(st->t);
    json_decref(st->meta);
    free(st->path);
    free(st);
}

const char *accel_st_path(const accel_st_t *st) { return st->path; }
int accel_st_count(const accel_st_t *st) { return st->n; }
const accel_st_tensor_t *accel_st_at(const accel_st_t *st, int i) { return i >= 0 && i < st->n ? &st->t[i] : NULL; }

const accel_st_tensor_t *accel_st_find(const accel_st_t *st, const char *name)
{
    accel_st_tensor_t key = { .name = (char *)name };
    return st->n ? bsearch(&key, st->t, (size_t)st->n, sizeof key, cmp_name) : NULL;
}

const char *accel_st_metadata(const accel_st_t *st, const char *key)
{
    return st->meta ? json_string_value(json_object_get(st->meta, key)) : NULL;
}

accel_status_t accel_st_read(const accel_st_t *st, const accel_st_tensor_t *t, uint64_t begin,
                             uint64_t end, float *dst)
{
    if (begin > end || end > t->numel) return ACCEL_ERR_INVALID;
    const uint8_t *src = st->data + t->begin + begin * g_esize[t->dtype];
    for (uint64_t i = 0; i < end - begin; i++) {
        /* Byte by byte: the data area need not be aligned, and the file is little-endian. */
        const uint8_t *b = src + i * g_esize[t->dtype];
        if (t->dtype == ACCEL_ST_F32) {
            uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&dst[i], &u, 4);
        } else if (t->dtype == ACCEL_ST_U8) {
            dst[i] = (float)b[0];
        } else if (t->dtype == ACCEL_ST_I8) {
            dst[i] = (float)(int8_t)b[0];
        } else if (t->dtype == ACCEL_ST_F8_E4M3) {
            dst[i] = f8_e4m3_to_f32(b[0]);
        } else if (t->dtype == ACCEL_ST_I32) {
            dst[i] = (float)(int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
        } else if (t->dtype == ACCEL_ST_I64) {
            uint64_t u = 0;
            for (int k = 7; k >= 0; k--) u = u << 8 | b[k];
            dst[i] = (float)(int64_t)u;
        } else {
            uint16_t h = (uint16_t)(b[0] | b[1] << 8);
            dst[i] = t->dtype == ACCEL_ST_BF16 ? accel_bf16_to_f32(h) : accel_f16_to_f32(h);
        }
    }
    return ACCEL_OK;
}

accel_status_t accel_st_read_u32(const accel_st_t *st, const accel_st_tensor_t *t, uint64_t begin,
                                 uint64_t end, uint32_t *dst)
{
    if (t->dtype != ACCEL_ST_I32 || begin > end || end > t->numel) return ACCEL_ERR_INVALID;
    const uint8_t *src = st->data + t->begin + begin * 4;
    for (uint64_t i = 0; i < end - begin; i++, src += 4)      /* little-endian, unaligned */
        dst[i] = (uint32_t)src[0] | (uint32_t)src[1] << 8 | (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ writing */

/* The JSON header, padded with spaces so the data starts 8-byte aligned (as the reference writer
 * does). *hdr: malloc'ed. */
static accel_status_t build_header(const accel_st_entry_t *e, int n, const char *const *meta, int nmeta,
                                   char **hdr, size_t *hlen)
{
    json_t *root = json_object(), *m = json_object();
    accel_status_t s = root && m ? ACCEL_OK : ACCEL_ERR_NOMEM;
    for (int i = 0; s == ACCEL_OK && i < nmeta; i++)
        if (json_object_set_new(m, meta[2 * i], json_string(meta[2 * i + 1]))) s = ACCEL_ERR_INVALID;
    if (s == ACCEL_OK && json_object_set(root, "__metadata__", m)) s = ACCEL_ERR_NOMEM;
    uint64_t off = 0;
    for (int i = 0; s == ACCEL_OK && i < n; i++) {
        json_t *shape = json_array();
        uint64_t numel = 1;
        for (int d = 0; d < e[i].ndim; d++) {
            json_array_append_new(shape, json_integer((json_int_t)e[i].dims[d]));
            numel *= e[i].dims[d];
        }
        uint64_t bytes = numel * g_esize[e[i].dtype];
        json_t *offs = json_pack("[II]", (json_int_t)off, (json_int_t)(off + bytes));
        json_t *v = json_pack("{s:s, s:o, s:o}", "dtype", g_dtypes[e[i].dtype], "shape", shape,
                              "data_offsets", offs);
        if (!v || json_object_set_new(root, e[i].name, v)) s = ACCEL_ERR_NOMEM;
        off += bytes;
    }
    /* Keys in insertion order, so the data order is the header order. */
    char *text = s == ACCEL_OK ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (s == ACCEL_OK && !text) s = ACCEL_ERR_NOMEM;
    if (s == ACCEL_OK) {
        size_t len = strlen(text), padded = (len + 7) / 8 * 8;
        *hdr = realloc(text, padded + 1);
        if (!*hdr) { free(text); s = ACCEL_ERR_NOMEM; }
        else {
            memset(*hdr + len, ' ', padded - len);
            (*hdr)[padded] = '\0';
            *hlen = padded;
        }
    }
    json_decref(m);
    json_decref(root);
    return s;
}

accel_status_t accel_st_write(const char *path, const accel_st_entry_t *e, int n,
                              const char *const *meta, int nmeta, accel_st_fill_fn fill, void *ctx)
{
    char tmp[4096 + 8];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) {
        ACCEL_ERROR("safetensors: output path too long: %s", path);
        return ACCEL_ERR_INVALID;
    }
    char *hdr = NULL;
    size_t hlen = 0;
    accel_status_t s = build_header(e, n, meta, nmeta, &hdr, &hlen);
    if (s != ACCEL_OK) {
        ACCEL_ERROR("safetensors: cannot build the header of %s (%s)", path, accel_status_str(s));
        return s;
    }
    float *buf = malloc(sizeof(float) * WRITE_CHUNK);
    uint16_t *half = malloc(sizeof(uint16_t) * WRITE_CHUNK);
    FILE *out = fopen(tmp, "wb");
    uint8_t le[8];
    for (int k = 0; k < 8; k++) le[k] = (uint8_t)((uint64_t)hlen >> (8 * k));
    bool io_error = false;
    if (!buf || !half) s = ACCEL_ERR_NOMEM;
    else if (!out || fwrite(le, 1, 8, out) != 8 || fwrite(hdr, 1, hlen, out) != hlen) io_error = true;
    for (int i = 0; i < n && s == ACCEL_OK && !io_error; i++) {
        uint64_t numel = 1;
        for (int d = 0; d < e[i].ndim; d++) numel *= e[i].dims[d];
        for (uint64_t b = 0; b < numel && s == ACCEL_OK && !io_error; b += WRITE_CHUNK) {
            uint64_t end = b + WRITE_CHUNK < numel ? b + WRITE_CHUNK : numel, cnt = end - b;
            s = fill(ctx, i, b, end, buf);
            if (s != ACCEL_OK) break;       /* the filler said which tensor */
            if (e[i].dtype == ACCEL_ST_BF16) {
                for (uint64_t q = 0; q < cnt; q++) half[q] = accel_f32_to_bf16(buf[q]);
                io_error = fwrite(half, 2, cnt, out) != cnt;
            } else if (e[i].dtype == ACCEL_ST_F8_E4M3 || e[i].dtype == ACCEL_ST_U8) {
                uint8_t *bytes = (uint8_t *)half;
                for (uint64_t q = 0; q < cnt; q++)
                    bytes[q] = e[i].dtype == ACCEL_ST_U8 ? (uint8_t)buf[q] : f32_to_f8_e4m3(buf[q]);
                io_error = fwrite(bytes, 1, cnt, out) != cnt;
            } else {
                io_error = fwrite(buf, 4, cnt, out) != cnt;
            }
        }
    }
    if (out && fclose(out) != 0) io_error = true;
    if (io_error) {
        ACCEL_ERROR("safetensors: writing %s failed: %s\n--> hint: check free space and permissions", tmp,
                    strerror(errno));
        s = ACCEL_ERR_IO;
    }
    if (s == ACCEL_OK) s = accel_h5_publish(tmp, path);
    else if (out) unlink(tmp);
    free(hdr);
    free(buf);
    free(half);
    return s;
}

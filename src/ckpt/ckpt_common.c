/* Checkpoint building blocks shared by save, load and verify: flat-range -> hyperslab decomposition,
 * block checksums, the metadata group and the format check (HDF5 helpers: src/h5). */
#include "build_config.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "accel/ckpt.h"
#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/trace.h"
#include "accel/version.h"
#include "ckpt_internal.h"

/* ------------------------------------------------------------------ decomposition */

/* Split [b, e) (relative to the sub-tensor of dims d..ndim-1 at prefix index `prefix`) into boxes.
 * A flat range of a row-major tensor is a partial first slice of dim d, a run of whole slices and
 * a partial last slice; the partial slices recurse one dimension down. */
static int decompose_rec(int ndim, const int64_t *shape, int d, uint64_t *prefix, uint64_t b,
                         uint64_t e, accel_ckpt_box_t *boxes, int n)
{
    if (b >= e) return n;
    uint64_t inner = 1;
    for (int k = d + 1; k < ndim; k++) inner *= (uint64_t)shape[k];
    if (d == ndim - 1) {
        /* inner == 1: one run along the last dimension */
        accel_ckpt_box_t *bx = &boxes[n];
        for (int k = 0; k < d; k++) { bx->start[k] = prefix[k]; bx->count[k] = 1; }
        bx->start[d] = b;
        bx->count[d] = e - b;
        for (int k = d + 1; k < ACCEL_TENSOR_MAX_DIMS; k++) { bx->start[k] = 0; bx->count[k] = 0; }
        return n + 1;
    }
    uint64_t i0 = b / inner;
    if (b % inner) {
        uint64_t slice_end = (i0 + 1) * inner;
        prefix[d] = i0;
        if (e <= slice_end)
            return decompose_rec(ndim, shape, d + 1, prefix, b - i0 * inner, e - i0 * inner, boxes, n);
        n = decompose_rec(ndim, shape, d + 1, prefix, b - i0 * inner, inner, boxes, n);
        b = slice_end;
    }
    uint64_t full0 = b / inner, full1 = e / inner;
    if (full1 > full0) {
        accel_ckpt_box_t *bx = &boxes[n++];
        for (int k = 0; k < d; k++) { bx->start[k] = prefix[k]; bx->count[k] = 1; }
        bx->start[d] = full0;
        bx->count[d] = full1 - full0;
        for (int k = d + 1; k < ndim; k++) { bx->start[k] = 0; bx->count[k] = (uint64_t)shape[k]; }
        for (int k = ndim; k < ACCEL_TENSOR_MAX_DIMS; k++) { bx->start[k] = 0; bx->count[k] = 0; }
    }
    if (e % inner) {
        prefix[d] = full1;
        n = decompose_rec(ndim, shape, d + 1, prefix, 0, e - full1 * inner, boxes, n);
    }
    return n;
}

int accel_ckpt_decompose(int ndim, const int64_t *shape, uint64_t begin, uint64_t end,
                         accel_ckpt_box_t *boxes)
{
    if (ndim < 1 || ndim > ACCEL_TENSOR_MAX_DIMS || begin >= end) return 0;
    uint64_t prefix[ACCEL_TENSOR_MAX_DIMS] = { 0 };
    return decompose_rec(ndim, shape, 0, prefix, begin, end, boxes, 0);
}

int ck_select_range(hid_t space, int ndim, const int64_t *shape, uint64_t begin, uint64_t end)
{
    if (begin >= end) return H5Sselect_none(space) < 0 ? -1 : 0;
    accel_ckpt_box_t boxes[ACCEL_CKPT_MAX_BOXES];
    int n = accel_ckpt_decompose(ndim, shape, begin, end, boxes);
    for (int i = 0; i < n; i++) {
        hsize_t start[ACCEL_TENSOR_MAX_DIMS], count[ACCEL_TENSOR_MAX_DIMS];
        for (int d = 0; d < ndim; d++) { start[d] = boxes[i].start[d]; count[d] = boxes[i].count[d]; }
        if (H5Sselect_hyperslab(space, i ? H5S_SELECT_OR : H5S_SELECT_SET, start, NULL, count, NULL) < 0)
            return -1;
    }
    return 0;
}

uint64_t ck_io_chunk(void)
{
    static uint64_t chunk;
    if (!chunk) {
        const char *env = getenv("ACCEL_CKPT_IO_CHUNK");
        long long v = env ? atoll(env) : 0;
        chunk = v > 0 ? (uint64_t)v : (uint64_t)1 << 28;   /* 256 Mi elements = 1 GiB of fp32 */
    }
    return chunk;
}

/* ------------------------------------------------------------------ ownership pieces */

int ck_ranges(const accel_ckpt_arena_t *a, accel_ckpt_range_t *one, const accel_ckpt_range_t **out)
{
    if (a->nranges > 0) {
        *out = a->ranges;
        return a->nranges;
    }
    one->begin = a->begin;
    one->end = a->end;
    one->offset = a->shard_buffer ? 0 : a->begin;
    *out = one;
    return a->end > a->begin ? 1 : 0;
}

static int cmp_range_begin(const void *x, const void *y)
{
    const accel_ckpt_range_t *a = *(const accel_ckpt_range_t *const *)x, *b = *(const accel_ckpt_range_t *const *)y;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

int ck_first_tensor_after(const accel_layout_t *L, uint64_t g)
{
    int lo = 0, hi = L->ntensors;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (L->tensors[mid].offset + L->tensors[mid].numel <= g) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

accel_status_t ck_pieces(const accel_layout_t *L, const accel_ckpt_arena_t *a, bool disjoint,
                         ck_piece_t **pieces, int *npieces, ck_piece_t **storage)
{
    accel_ckpt_range_t one;
    const accel_ckpt_range_t *r;
    int nr = ck_ranges(a, &one, &r);
    *storage = NULL;
    for (int t = 0; t < L->ntensors; t++) {
        pieces[t] = NULL;
        npieces[t] = 0;
    }
    for (int t = 1; t < L->ntensors; t++)
        if (L->tensors[t].offset < L->tensors[t - 1].offset + L->tensors[t - 1].numel) {
            ACCEL_ERROR("checkpoint: layout tensors are not in increasing offset order ('%s')", L->tensors[t].name);
            return ACCEL_ERR_INVALID;
        }
    const accel_ckpt_range_t **sorted = malloc(sizeof *sorted * (size_t)(nr ? nr : 1));
    if (!sorted) return ACCEL_ERR_NOMEM;
    for (int k = 0; k < nr; k++) {
        if (r[k].begin > r[k].end || r[k].end > L->numel) {
            ACCEL_ERROR("checkpoint: arena '%s' range %d [%zu, %zu) is outside the layout (%zu elements)",
                        a->name, k, r[k].begin, r[k].end, L->numel);
            free(sorted);
            return ACCEL_ERR_INVALID;
        }
        sorted[k] = &r[k];
    }
    qsort(sorted, (size_t)nr, sizeof *sorted, cmp_range_begin);
    /* Count, then fill: pieces of tensor t are contiguous in storage, in range order. */
    size_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            *storage = malloc(sizeof **storage * (total ? total : 1));
            if (!*storage) { free(sorted); return ACCEL_ERR_NOMEM; }
            size_t pos = 0;
            for (int t = 0; t < L->ntensors; t++) {
                pieces[t] = *storage + pos;
                pos += (size_t)npieces[t];
                npieces[t] = 0;
            }
        }
        for (int k = 0; k < nr; k++) {
            const accel_ckpt_range_t *q = sorted[k];
            for (int t = ck_first_tensor_after(L, q->begin); t < L->ntensors && L->tensors[t].offset < q->end; t++) {
                const accel_tensor_t *T = &L->tensors[t];
                uint64_t b = q->begin > T->offset ? q->begin : T->offset;
                uint64_t e = q->end < T->offset + T->numel ? q->end : T->offset + T->numel;
                if (b >= e) continue;
                if (pass == 0) { npieces[t]++; total++; continue; }
                ck_piece_t *p = &pieces[t][npieces[t]++];
                p->b = b - T->offset;
                p->e = e - T->offset;
                p->mem = a->data + q->offset + (b - q->begin);
                if (disjoint && npieces[t] > 1 && p[-1].e > p->b) {
                    ACCEL_ERROR("checkpoint: arena '%s': two ranges of this rank both hold element %llu of "
                                "tensor '%s'", a->name, (unsigned long long)p->b, T->name);
                    free(sorted);
                    free(*storage);
                    *storage = NULL;
                    return ACCEL_ERR_INVALID;
                }
            }
        }
    }
    free(sorted);
    return ACCEL_OK;
}

uint64_t ck_calls(const ck_piece_t *p, int n, uint64_t chunk)
{
    uint64_t c = 0;
    for (int i = 0; i < n; i++) c += (p[i].e - p[i].b + chunk - 1) / chunk;
    return c;
}

bool ck_call(const ck_piece_t *p, int n, uint64_t chunk, uint64_t c, uint64_t *b, uint64_t *e, float **mem)
{
    for (int i = 0; i < n; i++) {
        uint64_t k = (p[i].e - p[i].b + chunk - 1) / chunk;
        if (c < k) {
            *b = p[i].b + c * chunk;
            *e = *b + chunk < p[i].e ? *b + chunk : p[i].e;
            *mem = p[i].mem + (*b - p[i].b);
            return true;
        }
        c -= k;
    }
    return false;
}

/* ------------------------------------------------------------------ checksums */

uint64_t accel_ckpt_hash_block(const float *values, size_t n)
{
    return XXH3_64bits(values, n * sizeof(float));
}

uint64_t accel_ckpt_hash_tensor(const uint64_t *block_hashes, size_t nblocks)
{
    return XXH3_64bits(block_hashes, nblocks * sizeof(uint64_t));
}

uint64_t ck_hash_named(const char *arena, const char *name, const uint64_t *sums, size_t nblocks)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h) return 0;
    XXH3_64bits_reset(h);
    XXH3_64bits_update(h, arena, strlen(arena));
    XXH3_64bits_update(h, "/", 1);
    XXH3_64bits_update(h, name, strlen(name) + 1);
    XXH3_64bits_update(h, sums, nblocks * sizeof(uint64_t));
    uint64_t d = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return d;
}

const char *ck_tensor_sums_mismatch(hid_t dset, const char *arena, const char *name,
                                    const uint64_t *sums, size_t nblocks)
{
    uint64_t whole = 0;
    if (accel_h5_attr_read_u64(dset, CK_ATTR_XXH, &whole) != ACCEL_OK ||
        whole != accel_ckpt_hash_tensor(sums, nblocks))
        return CK_ATTR_XXH;
    hid_t file = H5Iget_file_id(dset);
    bool named = file >= 0 && H5Aexists(file, CK_ATTR_NAMED_SUMS) > 0;
    if (file >= 0) H5Fclose(file);
    if (!named) return NULL;                        /* written before names were bound */
    if (accel_h5_attr_read_u64(dset, CK_ATTR_XXH_NAMED, &whole) != ACCEL_OK ||
        whole != ck_hash_named(arena, name, sums, nblocks))
        return CK_ATTR_XXH_NAMED;
    return NULL;
}

accel_status_t ck_check_same_call(MPI_Comm comm, const accel_layout_t *layout,
                                  const accel_ckpt_arena_t *arenas, int narenas, const char *what)
{
    XXH3_state_t *h = XXH3_createState();
    uint64_t sig[2] = { 0, 0 }, out[2];
    if (h) {
        XXH3_64bits_reset(h);
        XXH3_64bits_update(h, &narenas, sizeof narenas);
        for (int i = 0; arenas && i < narenas; i++) {
            const char *n = arenas[i].name ? arenas[i].name : "";
            unsigned char rep = arenas[i].replicated;
            XXH3_64bits_update(h, n, strlen(n) + 1);
            XXH3_64bits_update(h, &rep, 1);
        }
        for (int t = 0; layout && t < layout->ntensors; t++) {
            const accel_tensor_t *T = &layout->tensors[t];
            XXH3_64bits_update(h, T->name, strlen(T->name) + 1);
            XXH3_64bits_update(h, T->shape, sizeof(int64_t) * (size_t)T->ndim);
            XXH3_64bits_update(h, &T->offset, sizeof T->offset);
        }
        sig[0] = XXH3_64bits_digest(h);
        XXH3_freeState(h);
    }
    sig[1] = ~sig[0];
    ACCEL_CHECK(accel_mpi_allreduce(sig, out, 2, MPI_UINT64_T, MPI_MAX, comm, "ckpt-signature"));
    if (out[0] != sig[0] || out[1] != sig[1]) {
        int rank = 0;
        if (accel_mpi_status(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank") == ACCEL_OK && rank == 0)
            ACCEL_ERROR("checkpoint %s: the ranks passed different layouts or arena lists (names, "
                        "replicated flags)\n--> hint: every rank must describe the same state", what);
        return ACCEL_ERR_INVALID;
    }
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ names */

void ck_fmt(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

void ck_data_path(char *buf, size_t len, const char *arena, const char *tensor)
{
    snprintf(buf, len, "/%s/%s", arena, tensor);
}

void ck_sum_path(char *buf, size_t len, const char *arena, const char *tensor)
{
    snprintf(buf, len, "/" CK_GROUP_SUMS "/%s/%s", arena, tensor);
}

/* ------------------------------------------------------------------ metadata */

/* Errors every rank finds alike are printed by one of them. */
#define CK_ERR(...) do { if (log) ACCEL_ERROR(__VA_ARGS__); } while (0)

void accel_ckpt_meta_init(accel_ckpt_meta_t *meta) { memset(meta, 0, sizeof *meta); }

void accel_ckpt_meta_free(accel_ckpt_meta_t *meta)
{
    if (!meta) return;
    free(meta->config_yaml);
    meta->config_yaml = NULL;
    free(meta->tokenizer_json);
    meta->tokenizer_json = NULL;
    meta->tokenizer_json_len = 0;
    free(meta->chat_template);
    meta->chat_template = NULL;
    meta->chat_template_len = 0;
}

accel_status_t accel_ckpt_meta_set_extra(accel_ckpt_meta_t *meta, const char *key, const char *value)
{
    if (!key || !*key || strlen(key) >= sizeof meta->extra[0].key || strchr(key, '/') ||
        strlen(value) >= sizeof meta->extra[0].value) {
        ACCEL_ERROR("checkpoint extra '%s': key empty, too long or containing '/', or value too long "
                    "(limits %zu and %zu bytes)", key ? key : "(null)", sizeof meta->extra[0].key - 1,
                    sizeof meta->extra[0].value - 1);
        return ACCEL_ERR_INVALID;
    }
    int i = 0;
    while (i < meta->nextra && strcmp(meta->extra[i].key, key)) i++;
    if (i == meta->nextra) {
        if (meta->nextra == ACCEL_CKPT_EXTRA_MAX) {
            ACCEL_ERROR("checkpoint extra '%s': already %d extra keys", key, ACCEL_CKPT_EXTRA_MAX);
            return ACCEL_ERR_INVALID;
        }
        meta->nextra++;
    }
    snprintf(meta->extra[i].key, sizeof meta->extra[i].key, "%s", key);
    snprintf(meta->extra[i].value, sizeof meta->extra[i].value, "%s", value);
    return ACCEL_OK;
}

const char *accel_ckpt_meta_get_extra(const accel_ckpt_meta_t *meta, const char *key)
{
    for (int i = 0; i < meta->nextra; i++)
        if (!strcmp(meta->extra[i].key, key)) return meta->extra[i].value;
    return NULL;
}

/* The numeric fields, by attribute name: one table for writing and reading. */
#define META_I64(f) { #f, offsetof(accel_ckpt_meta_t, f), 'i' }
#define META_U64(f) { #f, offsetof(accel_ckpt_meta_t, f), 'u' }
#define META_F64(f) { #f, offsetof(accel_ckpt_meta_t, f), 'f' }
static const struct {
    const char *name;
    size_t offset;
    char kind;
} g_meta_fields[] = {
    META_I64(step), META_I64(tokens), META_I64(epoch), META_I64(data_offset),
    META_U64(rng_seed), META_U64(rng_counter), META_F64(lr), META_I64(sched_step),
    META_F64(loss_scale), META_I64(loss_scale_good_steps), META_I64(skipped_steps),
};
#define NMETA (sizeof g_meta_fields / sizeof g_meta_fields[0])

void ck_now_utc(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
}

/* The configuration as a scalar string dataset: YAML can outgrow the 64 KiB attribute limit. */
int ck_write_config(hid_t g, const char *yaml)
{
    size_t n = strlen(yaml);
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR), d = -1;
    int rc = t < 0 || s < 0 || H5Tset_size(t, n ? n : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 ? -1 : 0;
    if (!rc) d = H5Dcreate2(g, CK_DSET_CONFIG, t, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (!rc && (d < 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, n ? yaml : "") < 0)) rc = -1;
    if (d >= 0 && H5Dclose(d) < 0) rc = -1;
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    return rc;
}

int ck_meta_write(hid_t file, const accel_ckpt_meta_t *meta, int world_size, const char *arenas,
                  const char *created)
{
    /* The attribute writers log their own failures: stop at the first. */
#define W(call) do { if ((call) != ACCEL_OK) goto fail; } while (0)
    hid_t g = -1, x = -1;
    W(accel_h5_attr_write_str(file, CK_ATTR_FORMAT, ACCEL_CKPT_FORMAT_NAME));
    W(accel_h5_attr_write_i64(file, CK_ATTR_VERSION, ACCEL_CKPT_FORMAT_VERSION));
    W(accel_h5_attr_write_str(file, CK_ATTR_ALGO, CK_ALGO_NAME));
    W(accel_h5_attr_write_i64(file, CK_ATTR_BLOCK, ACCEL_CKPT_BLOCK_ELEMS));
    W(accel_h5_attr_write_str(file, CK_ATTR_ARENAS, arenas));

    g = H5Gcreate2(file, CK_GROUP_META, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) goto fail;
    for (size_t i = 0; i < NMETA; i++) {
        const char *p = (const char *)meta + g_meta_fields[i].offset;
        switch (g_meta_fields[i].kind) {
        case 'i': W(accel_h5_attr_write_i64(g, g_meta_fields[i].name, *(const int64_t *)p)); break;
        case 'u': W(accel_h5_attr_write_u64(g, g_meta_fields[i].name, *(const uint64_t *)p)); break;
        default: W(accel_h5_attr_write_f64(g, g_meta_fields[i].name, *(const double *)p)); break;
        }
    }
    W(accel_h5_attr_write_i64(g, "world_size", world_size));
    W(accel_h5_attr_write_str(g, "strategy", meta->strategy));
    W(accel_h5_attr_write_str(g, "precision", meta->precision));
    W(accel_h5_attr_write_str(g, "accel_version", accel_version()));
    W(accel_h5_attr_write_str(g, "created", created));
    if (ck_write_config(g, meta->config_yaml ? meta->config_yaml : "") < 0) goto fail;
    if (meta->tokenizer[0]) {
        W(accel_h5_attr_write_str(g, CK_ATTR_TOKENIZER, meta->tokenizer));
        W(accel_h5_attr_write_str(g, CK_ATTR_TOKENIZER_HASH, meta->tokenizer_hash));
    }
    if (meta->tokenizer_json)
        W(accel_h5_write_bytes(g, CK_DSET_TOKENIZER, meta->tokenizer_json, meta->tokenizer_json_len));
    if (meta->chat_template) {
        W(accel_h5_write_bytes(g, CK_DSET_CHAT_TEMPLATE, meta->chat_template, meta->chat_template_len));
        W(accel_h5_attr_write_u64(g, CK_ATTR_CHAT_XXH, XXH3_64bits(meta->chat_template, meta->chat_template_len)));
    }
    x = H5Gcreate2(g, "extra", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (x < 0) goto fail;
    for (int i = 0; i < meta->nextra && i < ACCEL_CKPT_EXTRA_MAX; i++)
        W(accel_h5_attr_write_str(x, meta->extra[i].key, meta->extra[i].value));
    /* The digest of what was just written, as a reader will see it. */
    accel_ckpt_meta_t seen = *meta;
    seen.world_size = world_size;
    snprintf(seen.accel_version, sizeof seen.accel_version, "%s", accel_version());
    snprintf(seen.created, sizeof seen.created, "%s", created);
    W(accel_h5_attr_write_u64(g, CK_ATTR_META_XXH, ck_meta_digest(&seen, arenas)));
    herr_t cx = H5Gclose(x), cg = H5Gclose(g);
    return cx < 0 || cg < 0 ? -1 : 0;
#undef W
fail:
    if (x >= 0) H5Gclose(x);
    if (g >= 0) H5Gclose(g);
    return -1;
}

static herr_t extra_cb(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    accel_ckpt_meta_t *meta = data;
    char value[sizeof meta->extra[0].value] = "";
    if (meta->nextra < ACCEL_CKPT_EXTRA_MAX && strlen(name) < sizeof meta->extra[0].key &&
        accel_h5_attr_read_str(loc, name, value, sizeof value) == ACCEL_OK) {
        snprintf(meta->extra[meta->nextra].key, sizeof meta->extra[0].key, "%s", name);
        snprintf(meta->extra[meta->nextra].value, sizeof meta->extra[0].value, "%s", value);
        meta->nextra++;
    }
    return 0;
}

/* Fields missing in an older file read as zero; only a present but unreadable one is damage. */
#define READ_BAD(st) ((st) != ACCEL_OK && (st) != ACCEL_ERR_NOT_FOUND)

accel_status_t ck_meta_read(hid_t file, const char *path, accel_ckpt_meta_t *meta, bool log)
{
    accel_ckpt_meta_init(meta);
    int64_t v = 0;
    if (accel_h5_attr_read_i64(file, CK_ATTR_VERSION, &v) == ACCEL_OK) meta->format_version = (int)v;
    htri_t ex = H5Lexists(file, CK_GROUP_META, H5P_DEFAULT);
    if (ex <= 0) {
        CK_ERR("checkpoint %s has no /%s group\n--> hint: the file is damaged or not an accel "
                    "checkpoint", path, CK_GROUP_META);
        return ACCEL_ERR_CORRUPT;
    }
    hid_t g = H5Gopen2(file, CK_GROUP_META, H5P_DEFAULT);
    if (g < 0) return ACCEL_ERR_HDF5;
    int bad = 0;
    for (size_t i = 0; i < NMETA; i++) {
        char *p = (char *)meta + g_meta_fields[i].offset;
        accel_status_t rc = g_meta_fields[i].kind == 'i' ? accel_h5_attr_read_i64(g, g_meta_fields[i].name, (int64_t *)p)
               : g_meta_fields[i].kind == 'u' ? accel_h5_attr_read_u64(g, g_meta_fields[i].name, (uint64_t *)p)
               : accel_h5_attr_read_f64(g, g_meta_fields[i].name, (double *)p);
        bad |= READ_BAD(rc);
    }
    if (accel_h5_attr_read_i64(g, "world_size", &v) == ACCEL_OK) meta->world_size = (int)v;
    bad |= READ_BAD(accel_h5_attr_read_str(g, "strategy", meta->strategy, sizeof meta->strategy));
    bad |= READ_BAD(accel_h5_attr_read_str(g, "precision", meta->precision, sizeof meta->precision));
    bad |= READ_BAD(accel_h5_attr_read_str(g, "accel_version", meta->accel_version, sizeof meta->accel_version));
    bad |= READ_BAD(accel_h5_attr_read_str(g, "created", meta->created, sizeof meta->created));

    if (H5Lexists(g, CK_DSET_CONFIG, H5P_DEFAULT) > 0) {
        hid_t d = H5Dopen2(g, CK_DSET_CONFIG, H5P_DEFAULT);
        hid_t t = d >= 0 ? H5Dget_type(d) : -1;
        hsize_t fsize = 0;
        if (t >= 0 && H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t) &&
            H5Fget_filesize(file, &fsize) >= 0 && H5Tget_size(t) <= fsize) {
            size_t n = H5Tget_size(t);   /* bounded by the file's size: it comes from the file */
            meta->config_yaml = calloc(n + 1, 1);
            if (!meta->config_yaml || H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, meta->config_yaml) < 0)
                bad = 1;
        } else {
            bad = 1;
        }
        if (t >= 0) H5Tclose(t);
        if (d >= 0) H5Dclose(d);
    }
    bad |= READ_BAD(accel_h5_attr_read_str(g, "tokenizer", meta->tokenizer, sizeof meta->tokenizer));
    bad |= READ_BAD(accel_h5_attr_read_str(g, "tokenizer_hash", meta->tokenizer_hash,
                                           sizeof meta->tokenizer_hash));
    if (H5Lexists(g, CK_DSET_TOKENIZER, H5P_DEFAULT) > 0 &&
        accel_h5_read_bytes(g, CK_DSET_TOKENIZER, CK_TOKENIZER_MAX, &meta->tokenizer_json,
                            &meta->tokenizer_json_len) != ACCEL_OK)
        bad = 1;
    if (H5Lexists(g, CK_DSET_CHAT_TEMPLATE, H5P_DEFAULT) > 0 &&
        accel_h5_read_bytes(g, CK_DSET_CHAT_TEMPLATE, CK_CHAT_TEMPLATE_MAX, &meta->chat_template,
                            &meta->chat_template_len) != ACCEL_OK)
        bad = 1;
    if (H5Lexists(g, "extra", H5P_DEFAULT) > 0) {
        hid_t x = H5Gopen2(g, "extra", H5P_DEFAULT);
        hsize_t idx = 0;
        if (x < 0 || H5Aiterate2(x, H5_INDEX_NAME, H5_ITER_INC, &idx, extra_cb, meta) < 0) bad = 1;
        if (x >= 0) H5Gclose(x);
    }
    H5Gclose(g);
    if (bad) {
        CK_ERR("checkpoint %s: cannot read its metadata (/%s)\n--> hint: the file is damaged; "
                    "'accel_ckpt verify %s' tells more", path, CK_GROUP_META, path);
        accel_ckpt_meta_free(meta);
        return ACCEL_ERR_CORRUPT;
    }
    return ACCEL_OK;
}

accel_status_t ck_check_format(hid_t file, const char *path, uint64_t *block, bool need_complete,
                               bool log)
{
    char name[64] = "";
    int64_t version = 0, complete = 0, blk = 0;
    char algo[32] = "";
    if (accel_h5_attr_read_str(file, CK_ATTR_FORMAT, name, sizeof name) != ACCEL_OK || strcmp(name, ACCEL_CKPT_FORMAT_NAME)) {
        CK_ERR("%s is an HDF5 file but not an accel checkpoint (root attribute '%s' is '%s', "
                    "expected '%s')", path, CK_ATTR_FORMAT, name, ACCEL_CKPT_FORMAT_NAME);
        return ACCEL_ERR_INVALID;
    }
    if (accel_h5_attr_read_i64(file, CK_ATTR_VERSION, &version) != ACCEL_OK || version < 1) {
        CK_ERR("checkpoint %s: missing or bad '%s' attribute", path, CK_ATTR_VERSION);
        return ACCEL_ERR_CORRUPT;
    }
    if (version > ACCEL_CKPT_FORMAT_VERSION) {
        CK_ERR("checkpoint %s has format version %lld, but this accel (%s) reads versions up to "
                    "%d\n--> hint: load it with a newer accel", path, (long long)version,
                    accel_version(), ACCEL_CKPT_FORMAT_VERSION);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (need_complete && (accel_h5_attr_read_i64(file, CK_ATTR_COMPLETE, &complete) != ACCEL_OK || complete != 1)) {
        CK_ERR("checkpoint %s is incomplete (no '%s' mark): its save did not finish\n--> hint: "
                    "use an earlier checkpoint", path, CK_ATTR_COMPLETE);
        return ACCEL_ERR_CORRUPT;
    }
    if (accel_h5_attr_read_str(file, CK_ATTR_ALGO, algo, sizeof algo) != ACCEL_OK || strcmp(algo, CK_ALGO_NAME) ||
        accel_h5_attr_read_i64(file, CK_ATTR_BLOCK, &blk) != ACCEL_OK || blk <= 0) {
        CK_ERR("checkpoint %s: checksum algorithm '%s' with block %lld is not supported (expected "
                    "'%s')", path, algo, (long long)blk, CK_ALGO_NAME);
        return ACCEL_ERR_CORRUPT;
    }
    if ((uint64_t)blk > CK_BLOCK_MAX) {
        CK_ERR("checkpoint %s: root attribute '%s' is %lld, outside 1..%llu (accel writes %d)\n--> hint: "
               "the file is damaged; use an earlier checkpoint", path, CK_ATTR_BLOCK, (long long)blk,
               (unsigned long long)CK_BLOCK_MAX, ACCEL_CKPT_BLOCK_ELEMS);
        return ACCEL_ERR_CORRUPT;
    }
    *block = (uint64_t)blk;
    return ACCEL_OK;
}

long long ck_step_of(const char *name, bool tmp)
{
    long long step;
    int used = 0;
    if (strncmp(name, "step-", 5) || name[5] < '0' || name[5] > '9' ||
        sscanf(name, "step-%lld%n", &step, &used) != 1 || step < 0)
        return -1;
    return !strcmp(name + used, tmp ? ".h5.tmp" : ".h5") ? step : -1;
}

static int cmp_desc(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

size_t ck_list_steps(const char *dir, long long above, long long **steps)
{
    *steps = NULL;
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long s = ck_step_of(de->d_name, false);
        if (s <= above) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            long long *p = realloc(*steps, cap * sizeof *p);
            if (!p) break;
            *steps = p;
        }
        (*steps)[n++] = s;
    }
    closedir(d);
    if (n > 1) qsort(*steps, n, sizeof **steps, cmp_desc);
    return n;
}

static herr_t collect_dataset(hid_t obj, const char *name, const H5O_info_t *info, void *data)
{
    (void)obj;
    ck_names_t *l = data;
    if (info->type != H5O_TYPE_DATASET) return 0;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->v, sizeof *p * (size_t)cap);
        if (!p) return -1;
        l->v = p;
        l->cap = cap;
    }
    return (l->v[l->n++] = strdup(name)) ? 0 : -1;
}

accel_status_t ck_list_datasets(hid_t file, const char *gpath, ck_names_t *names)
{
    memset(names, 0, sizeof *names);
    hid_t g;
    herr_t r = -1;
    H5E_BEGIN_TRY {
        g = H5Gopen2(file, gpath, H5P_DEFAULT);
        if (g >= 0) r = H5Ovisit(g, H5_INDEX_NAME, H5_ITER_INC, collect_dataset, names);
        if (g >= 0) H5Gclose(g);
    } H5E_END_TRY;
    if (r < 0) {
        ck_names_free(names);
        return ACCEL_ERR_IO;
    }
    return ACCEL_OK;
}

void ck_names_free(ck_names_t *names)
{
    for (int i = 0; i < names->n; i++) free(names->v[i]);
    free(names->v);
    memset(names, 0, sizeof *names);
}

/* ------------------------------------------------------------------ checked sizes */

bool ck_dims_numel(int ndim, const hsize_t *dims, size_t elem_bytes, uint64_t *n)
{
    uint64_t v = 1, bytes;
    for (int k = 0; k < ndim; k++)
        if (!ck_mul(v, (uint64_t)dims[k], &v)) return false;
    if (!ck_mul(v, elem_bytes ? elem_bytes : 1, &bytes) || bytes > (uint64_t)INT64_MAX) return false;
    *n = v;
    return true;
}

int ck_is_dataset(hid_t file, const char *path)
{
    if (accel_h5_path_exists(file, path) <= 0) return 0;
    H5O_info_t oi;
    herr_t r;
    H5E_BEGIN_TRY { r = H5Oget_info_by_name(file, path, &oi, H5P_DEFAULT); } H5E_END_TRY;
    return r >= 0 && oi.type == H5O_TYPE_DATASET;
}

bool ck_storage_ok(hid_t dset, uint64_t nbytes) { return accel_h5_dset_allocated(dset, nbytes); }

/* ------------------------------------------------------------------ metadata digest */

static void dg_str(XXH3_state_t *h, const char *name, const char *v)
{
    XXH3_64bits_update(h, name, strlen(name) + 1);
    v = v ? v : "";
    XXH3_64bits_update(h, v, strlen(v) + 1);
}

static int cmp_extra(const void *a, const void *b)
{
    return strcmp(((const accel_ckpt_extra_t *)a)->key, ((const accel_ckpt_extra_t *)b)->key);
}

uint64_t ck_meta_digest(const accel_ckpt_meta_t *meta, const char *arenas)
{
    XXH3_state_t *h = XXH3_createState();
    if (!h) return 0;
    XXH3_64bits_reset(h);
    for (size_t i = 0; i < NMETA; i++) {
        XXH3_64bits_update(h, g_meta_fields[i].name, strlen(g_meta_fields[i].name) + 1);
        XXH3_64bits_update(h, (const char *)meta + g_meta_fields[i].offset, 8);
    }
    int64_t ws = meta->world_size;
    XXH3_64bits_update(h, "world_size", sizeof "world_size");
    XXH3_64bits_update(h, &ws, sizeof ws);
    dg_str(h, "strategy", meta->strategy);
    dg_str(h, "precision", meta->precision);
    dg_str(h, "accel_version", meta->accel_version);
    dg_str(h, "created", meta->created);
    dg_str(h, CK_DSET_CONFIG, meta->config_yaml);
    dg_str(h, CK_ATTR_TOKENIZER, meta->tokenizer);
    dg_str(h, CK_ATTR_TOKENIZER_HASH, meta->tokenizer[0] ? meta->tokenizer_hash : "");
    uint64_t tl = meta->tokenizer_json ? (uint64_t)meta->tokenizer_json_len : 0;
    XXH3_64bits_update(h, CK_DSET_TOKENIZER, sizeof CK_DSET_TOKENIZER);
    XXH3_64bits_update(h, &tl, sizeof tl);
    if (tl) XXH3_64bits_update(h, meta->tokenizer_json, tl);
    /* extra: written in the caller's order, read back in name order */
    int ne = meta->nextra < 0 ? 0 : meta->nextra > ACCEL_CKPT_EXTRA_MAX ? ACCEL_CKPT_EXTRA_MAX : meta->nextra;
    accel_ckpt_extra_t ex[ACCEL_CKPT_EXTRA_MAX];
    memcpy(ex, meta->extra, sizeof ex[0] * (size_t)ne);
    qsort(ex, (size_t)ne, sizeof ex[0], cmp_extra);
    for (int i = 0; i < ne; i++) dg_str(h, ex[i].key, ex[i].value);
    dg_str(h, CK_ATTR_ARENAS, arenas);
    uint64_t d = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    return d;
}

accel_status_t ck_chat_check(hid_t file, const char *path, const accel_ckpt_meta_t *meta, bool log)
{
    hid_t g;
    H5E_BEGIN_TRY { g = H5Gopen2(file, CK_GROUP_META, H5P_DEFAULT); } H5E_END_TRY;
    if (g < 0) return ACCEL_ERR_CORRUPT;
    uint64_t stored = 0;
    accel_status_t r = accel_h5_attr_read_u64(g, CK_ATTR_CHAT_XXH, &stored);
    H5Gclose(g);
    if (r == ACCEL_ERR_NOT_FOUND && !meta->chat_template) return ACCEL_OK;    /* none kept */
    if (r == ACCEL_OK && meta->chat_template &&
        XXH3_64bits(meta->chat_template, meta->chat_template_len) == stored)
        return ACCEL_OK;
    CK_ERR("checkpoint %s: its chat template (/%s/%s) %s\n--> hint: the file is damaged or was "
           "edited; use an earlier checkpoint", path, CK_GROUP_META, CK_DSET_CHAT_TEMPLATE,
           !meta->chat_template ? "is missing, but its checksum '" CK_ATTR_CHAT_XXH "' is there"
           : r != ACCEL_OK ? "has no readable checksum '" CK_ATTR_CHAT_XXH "'"
           : "does not match its checksum '" CK_ATTR_CHAT_XXH "'");
    return ACCEL_ERR_CORRUPT;
}

accel_status_t ck_meta_check(hid_t file, const char *path, const accel_ckpt_meta_t *meta, bool log, bool *absent)
{
    *absent = false;
    char arenas[4096] = "";
    uint64_t stored = 0;
    /* The chat template has its own checksum, written with it and never without. */
    if (ck_chat_check(file, path, meta, log) != ACCEL_OK) return ACCEL_ERR_CORRUPT;
    hid_t g;
    H5E_BEGIN_TRY { g = H5Gopen2(file, CK_GROUP_META, H5P_DEFAULT); } H5E_END_TRY;
    if (g < 0) return ACCEL_ERR_CORRUPT;
    accel_status_t r = accel_h5_attr_read_u64(g, CK_ATTR_META_XXH, &stored);
    H5Gclose(g);
    if (r == ACCEL_ERR_NOT_FOUND) {
        *absent = true;
        /* Only files from before the checksum lack it; every writer of name-bound tensor checksums
         * (root 'checksums_named', which came later) also wrote it: missing there is damage, e.g.
         * a flipped byte in the attribute's name, and the /meta values would go unchecked. */
        if (H5Aexists(file, CK_ATTR_NAMED_SUMS) > 0) {
            CK_ERR("checkpoint %s: its metadata (/%s) has no checksum '%s', which every checkpoint "
                   "with '%s' carries\n--> hint: the file is damaged; use an earlier checkpoint",
                   path, CK_GROUP_META, CK_ATTR_META_XXH, CK_ATTR_NAMED_SUMS);
            return ACCEL_ERR_CORRUPT;
        }
        return ACCEL_OK;
    }
    (void)accel_h5_attr_read_str(file, CK_ATTR_ARENAS, arenas, sizeof arenas);
    uint64_t have = ck_meta_digest(meta, arenas);
    if (r != ACCEL_OK || have != stored) {
        CK_ERR("checkpoint %s: its metadata (/%s: step, lr, configuration...) does not match its "
               "checksum '%s' (stored %016llx, computed %016llx)\n--> hint: the file is damaged or was "
               "edited; use an earlier checkpoint", path, CK_GROUP_META, CK_ATTR_META_XXH,
               (unsigned long long)stored, (unsigned long long)have);
        return ACCEL_ERR_CORRUPT;
    }
    return ACCEL_OK;
}

/* Parameter layout and flat buffers. Tensors are laid out in registration order, each starting
 * on a 64-byte boundary so vector loops and MPI-IO see aligned data. */
#include "build_config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "accel/arena.h"
#include "accel/log.h"
#include "accel/rng.h"

void accel_layout_init(accel_layout_t *layout) { memset(layout, 0, sizeof *layout); }

void accel_layout_free(accel_layout_t *layout)
{
    free(layout->tensors);
    memset(layout, 0, sizeof *layout);
}

accel_status_t accel_layout_add(accel_layout_t *layout, const char *name, int ndim,
                                const int64_t *shape, int layer, unsigned flags, float init_std,
                                int *index)
{
    if (ndim < 1 || ndim > ACCEL_TENSOR_MAX_DIMS || strlen(name) >= ACCEL_TENSOR_NAME_MAX) {
        ACCEL_ERROR("tensor '%s': bad rank %d or name too long", name, ndim);
        return ACCEL_ERR_INVALID;
    }
    if (accel_layout_find(layout, name)) {
        ACCEL_ERROR("tensor '%s' registered twice", name);
        return ACCEL_ERR_INVALID;
    }
    if (layout->ntensors == layout->capacity) {
        int cap = layout->capacity ? 2 * layout->capacity : 16;
        accel_tensor_t *t = realloc(layout->tensors, sizeof *t * (size_t)cap);
        if (!t) return ACCEL_ERR_NOMEM;
        layout->tensors = t;
        layout->capacity = cap;
    }
    accel_tensor_t *t = &layout->tensors[layout->ntensors];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->numel = 1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] <= 0) {
            ACCEL_ERROR("tensor '%s': dimension %d is %lld", name, d, (long long)shape[d]);
            return ACCEL_ERR_INVALID;
        }
        t->shape[d] = shape[d];
        t->numel *= (size_t)shape[d];
    }
    t->offset = layout->numel;
    t->layer = layer;
    t->flags = flags;
    t->init_std = init_std;
    layout->numel += (t->numel + ACCEL_ARENA_ALIGN - 1) / ACCEL_ARENA_ALIGN * ACCEL_ARENA_ALIGN;
    if (layer + 1 > layout->nlayers) layout->nlayers = layer + 1;
    if (index) *index = layout->ntensors;
    layout->ntensors++;
    return ACCEL_OK;
}

const accel_tensor_t *accel_layout_find(const accel_layout_t *layout, const char *name)
{
    for (int i = 0; i < layout->ntensors; i++)
        if (!strcmp(layout->tensors[i].name, name)) return &layout->tensors[i];
    return NULL;
}

size_t accel_layout_params(const accel_layout_t *layout)
{
    size_t n = 0;
    for (int i = 0; i < layout->ntensors; i++) n += layout->tensors[i].numel;
    return n;
}

accel_status_t accel_arena_alloc(const accel_layout_t *layout, float **buf)
{
    size_t bytes = (layout->numel * sizeof(float) + 63) / 64 * 64;
    *buf = aligned_alloc(64, bytes ? bytes : 64);
    if (!*buf) {
        ACCEL_ERROR("cannot allocate an arena of %zu bytes", bytes);
        return ACCEL_ERR_NOMEM;
    }
    memset(*buf, 0, bytes);
    return ACCEL_OK;
}

void accel_arena_free(float *buf) { free(buf); }

void accel_arena_init_params(const accel_layout_t *layout, float *params, uint64_t seed)
{
    accel_arena_init_range(layout, params, 0, layout->numel, seed);
}

void accel_arena_init_range(const accel_layout_t *layout, float *dst, size_t begin, size_t end,
                            uint64_t seed)
{
    memset(dst, 0, sizeof(float) * (end - begin));          /* padding stays zero */
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        size_t lo = t->offset > begin ? t->offset : begin;
        size_t hi = t->offset + t->numel < end ? t->offset + t->numel : end;
        if (lo >= hi) continue;
        float *p = dst + (lo - begin);
        if (t->init_std > 0 && !(t->flags & ACCEL_TENSOR_INIT_VALUE)) {
            accel_rng_fill_normal(p, hi - lo, t->init_std, seed, ACCEL_RNG_INIT,
                                  accel_rng_hash(t->name), lo - t->offset);
        } else {
            float value = t->flags & ACCEL_TENSOR_INIT_VALUE ? t->init_std : t->init_std < 0 ? -t->init_std : 0.0f;
            for (size_t k = 0; k < hi - lo; k++) p[k] = value;
        }
    }
}

accel_status_t accel_arena_alloc_virtual(const accel_layout_t *layout, float **buf)
{
    size_t bytes = layout->numel * sizeof(float);
    void *p = mmap(NULL, bytes ? bytes : 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        *buf = NULL;
        ACCEL_ERROR("cannot reserve %zu bytes of address space for an arena", bytes);
        return ACCEL_ERR_NOMEM;
    }
    *buf = p;
    return ACCEL_OK;
}

void accel_arena_free_virtual(const accel_layout_t *layout, float *buf)
{
    size_t bytes = layout->numel * sizeof(float);
    if (buf) munmap(buf, bytes ? bytes : 4096);
}

void accel_arena_release(float *buf, size_t begin, size_t end)
{
    static size_t page;
    if (!page) page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t b = (uintptr_t)(buf + begin), e = (uintptr_t)(buf + end);
    uintptr_t lo = (b + page - 1) / page * page, hi = e / page * page;
    if (hi > lo) {
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
        memset((void *)b, 0, lo - b);          /* partial pages shared with neighbours: zero by hand */
        memset((void *)hi, 0, e - hi);
    } else {
        memset((void *)b, 0, e - b);
    }
}

accel_status_t accel_layout_pad_layers(accel_layout_t *layout, size_t multiple)
{
    if (multiple % ACCEL_ARENA_ALIGN) multiple *= ACCEL_ARENA_ALIGN;
    size_t off = 0;
    for (int i = 0; i < layout->ntensors; i++) {
        accel_tensor_t *t = &layout->tensors[i];
        if (i > 0 && t->layer != layout->tensors[i - 1].layer) {
            if (t->layer < layout->tensors[i - 1].layer) {
                ACCEL_ERROR0("tensor '%s' (layer %d) is registered after layer %d: ZeRO shards whole "
                             "layers, so a model must register each layer's tensors together, in "
                             "layer order", t->name, t->layer, layout->tensors[i - 1].layer);
                return ACCEL_ERR_INVALID;
            }
            off = (off + multiple - 1) / multiple * multiple;
        }
        t->offset = off;
        off += (t->numel + ACCEL_ARENA_ALIGN - 1) / ACCEL_ARENA_ALIGN * ACCEL_ARENA_ALIGN;
    }
    layout->numel = (off + multiple - 1) / multiple * multiple;
    return ACCEL_OK;
}

void accel_layout_layer_range(const accel_layout_t *layout, int layer, size_t multiple,
                              size_t *begin, size_t *end)
{
    size_t b = (size_t)-1, e = 0;
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        if (t->layer != layer) continue;
        if (t->offset < b) b = t->offset;
        if (t->offset + t->numel > e) e = t->offset + t->numel;
    }
    if (multiple < 1) multiple = 1;
    *begin = e ? b : 0;
    *end = e ? (e + multiple - 1) / multiple * multiple : 0;
}

/* The dispatcher: runs a model whose layers live on different tiers through its unchanged code.
 *
 * The whole parameter arena is reserved as virtual memory (no physical pages until touched). Layers
 * on the cpu tier are read into their ranges once, at creation. Layers on the disk tier are read
 * into their ranges by a background thread shortly before they are used and handed back to the
 * system (madvise) after, so at most `ring_slots` of them are resident at any time: the ring is a
 * number of layer-sized slots of physical memory, not a separate buffer, and nothing is copied
 * twice. The model calls the layer hooks around every use of a layer (fetch waits until it is
 * there, release gives it back), so it reads params + offset exactly as with a plain arena and
 * its outputs are bitwise the same whatever the map.
 *
 * Prefetch schedule: the order in which a pass fetches disk layers. The first pass assumes
 * ascending layer order; every pass records the real order, and when it differs (the GPT reads the
 * embeddings again for its tied LM head) the next passes use the recorded one. The thread walks the
 * schedule cyclically, so the first layers of the next pass are read while the current pass ends.
 * A fetch the schedule did not foresee (a miss) drops what was prefetched and restarts the walk at
 * that layer: slower, never wrong.
 *
 * HDF5 is not thread-safe here: after creation only the prefetch thread calls it. */
#include "build_config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "accel/infer.h"
#include "accel/log.h"
#include "accel/timer.h"
#include "infer_internal.h"

enum { L_EMPTY = 0, L_LOADING, L_READY };

struct accel_dispatch {
    const accel_model_t *model;
    accel_weights_t *w;
    const accel_device_map_t *map;
    float *params;
    void *reserved;                     /* the mapping params lies in (aligned to 2 MiB) */
    size_t reserved_bytes;
    int nlayers, slots;
    size_t *begin, *end;
    int *tbeg, *tend;
    accel_layer_hooks_t hooks;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t io;
    bool io_started, stop;
    accel_status_t io_status;
    int *seq, nseq, seqcap;             /* schedule: disk layers in fetch order, one pass */
    int *rec, nrec, reccap;             /* this pass's fetches */
    bool recording, pass_miss;
    int64_t next_use;                   /* schedule entry the next fetch should be */
    int64_t next_io;                    /* entries [next_use, next_io) are claimed: resident */
    int loading;                        /* layer being read, or -1 */
    unsigned char *state;
    int *in_use;
    int nresident;                      /* disk layers with pages (loading, ready or in use) */
    accel_dispatch_stats_t stats;
};

static accel_status_t read_layer(accel_dispatch_t *d, int l)
{
    for (int i = d->tbeg[l]; i < d->tend[l]; i++)
        ACCEL_CHECK(accel_weights_read(d->w, i, d->params + d->model->layout.tensors[i].offset));
    return ACCEL_OK;
}

static void evict(accel_dispatch_t *d, int l)
{
    accel_arena_release(d->params, d->begin[l], d->end[l]);
    d->state[l] = L_EMPTY;
    d->nresident--;
}

static int seq_at(const accel_dispatch_t *d, int64_t e) { return d->seq[e % d->nseq]; }

/* Is layer l claimed by an upcoming entry? */
static bool claimed(const accel_dispatch_t *d, int l)
{
    for (int64_t e = d->next_use; e < d->next_io; e++)
        if (seq_at(d, e) == l) return true;
    return false;
}

/* Forget what was prefetched (after the in-flight read lands): claimed layers not in use go. */
static void drop_prefetched(accel_dispatch_t *d)
{
    while (d->loading >= 0) pthread_cond_wait(&d->cv, &d->mu);
    d->next_io = d->next_use;
    for (int l = 0; l < d->nlayers; l++)
        if (d->state[l] == L_READY && !d->in_use[l]) evict(d, l);
}

static void *io_main(void *arg)
{
    accel_dispatch_t *d = arg;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        int l = -1;
        if (d->io_status == ACCEL_OK && d->nseq > 0 && d->next_io - d->next_use < d->slots) {
            int cand = seq_at(d, d->next_io);
            if (d->state[cand] != L_EMPTY) {    /* already there (in use, or twice in the window) */
                d->next_io++;
                pthread_cond_broadcast(&d->cv);
                continue;
            }
            if (d->nresident < d->slots) l = cand;
        }
        if (l < 0) {
            pthread_cond_wait(&d->cv, &d->mu);
            continue;
        }
        d->state[l] = L_LOADING;
        d->loading = l;
        d->nresident++;
        pthread_mutex_unlock(&d->mu);
        double t0 = accel_now();
        accel_status_t st = read_layer(d, l);
        double dt = accel_now() - t0;
        pthread_mutex_lock(&d->mu);
        d->stats.read_seconds += dt;
        d->stats.layer_reads++;
        d->stats.bytes_read += (d->end[l] - d->begin[l]) * sizeof(float);
        d->loading = -1;
        if (st != ACCEL_OK) {
            d->io_status = st;                  /* reported by accel_dispatch_logits */
            evict(d, l);
        } else {
            d->state[l] = L_READY;
            d->next_io++;
        }
        pthread_cond_broadcast(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static accel_status_t grow(int **v, int *cap, int need)
{
    if (need <= *cap) return ACCEL_OK;
    int c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    int *p = realloc(*v, sizeof *p * (size_t)c);
    if (!p) return ACCEL_ERR_NOMEM;
    *v = p;
    *cap = c;
    return ACCEL_OK;
}

/* A fetch the schedule did not foresee: restart the walk at this layer. */
static void miss(accel_dispatch_t *d, int layer)
{
    d->stats.misses++;
    d->pass_miss = true;
    drop_prefetched(d);
    int64_t found = -1;
    for (int64_t e = d->next_use; d->nseq > 0 && e < d->next_use + d->nseq && found < 0; e++)
        if (seq_at(d, e) == layer) found = e;
    if (found >= 0) {
        d->next_use = d->next_io = found;
    } else if (grow(&d->seq, &d->seqcap, d->nseq + 1) == ACCEL_OK) {
        int pos = d->nseq ? (int)(d->next_use % d->nseq) : 0;
        memmove(d->seq + pos + 1, d->seq + pos, sizeof *d->seq * (size_t)(d->nseq - pos));
        d->seq[pos] = layer;
        d->nseq++;
        d->next_use = d->next_io = pos;
    } else {
        d->io_status = ACCEL_ERR_NOMEM;
    }
    pthread_cond_broadcast(&d->cv);
}

static void hook_fetch(void *ctx, int layer, int backward)
{
    (void)backward;
    accel_dispatch_t *d = ctx;
    if (layer < 0 || layer >= d->nlayers || d->map->tier[layer] != ACCEL_TIER_DISK) return;
    pthread_mutex_lock(&d->mu);
    double t0 = accel_now();
    if (d->recording) {
        if (grow(&d->rec, &d->reccap, d->nrec + 1) == ACCEL_OK) d->rec[d->nrec++] = layer;
        else d->io_status = ACCEL_ERR_NOMEM;
    }
    if (d->io_status == ACCEL_OK && !(d->nseq > 0 && seq_at(d, d->next_use) == layer)) miss(d, layer);
    int64_t e = d->next_use;
    while (d->io_status == ACCEL_OK && !(d->next_io > e && d->state[layer] == L_READY)) {
        /* Every slot held by a layer in use and this one not there: it can never come. */
        int held = 0;
        for (int l = 0; l < d->nlayers; l++) held += d->in_use[l] > 0;
        if (d->state[layer] == L_EMPTY && d->loading < 0 && d->nresident >= d->slots &&
            held >= d->slots) {
            ACCEL_ERROR("the model holds %d disk layers at once and asks for layer %d, but the "
                        "ring has %d slots\n--> hint: raise --ring-slots to at least %d", held,
                        layer, d->slots, held + 1);
            d->io_status = ACCEL_ERR_INVALID;
            break;
        }
        pthread_cond_wait(&d->cv, &d->mu);
    }
    if (d->io_status == ACCEL_OK) {
        d->next_use = e + 1;
        d->in_use[layer]++;
    }
    d->stats.wait_seconds += accel_now() - t0;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void hook_release(void *ctx, int layer)
{
    accel_dispatch_t *d = ctx;
    if (layer < 0 || layer >= d->nlayers || d->map->tier[layer] != ACCEL_TIER_DISK) return;
    pthread_mutex_lock(&d->mu);
    if (d->in_use[layer] > 0 && --d->in_use[layer] == 0 && d->state[layer] == L_READY &&
        !claimed(d, layer))
        evict(d, layer);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* The arena as virtual memory (zero pages until touched), 2 MiB aligned so that the layers
 * accel_infer_pad_layout gave huge pages can have transparent huge pages (a hint: the kernel may
 * still use 4 KiB pages; ACCEL_INFER_HUGEPAGES=0 turns the hint off). */
static accel_status_t reserve_arena(accel_dispatch_t *d, const accel_layout_t *layout)
{
    const size_t align = ACCEL_INFER_HUGE_BYTES;
    d->reserved_bytes = layout->numel * sizeof(float) + align;
    void *p = mmap(NULL, d->reserved_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        ACCEL_ERROR("cannot reserve %zu bytes of address space for the parameters", d->reserved_bytes);
        return ACCEL_ERR_NOMEM;
    }
    d->reserved = p;
    d->params = (float *)(((uintptr_t)p + align - 1) / align * align);
    const char *env = getenv("ACCEL_INFER_HUGEPAGES");
    if (env && !strcmp(env, "0")) return ACCEL_OK;
    for (int l = 0; l < d->nlayers; l++) {
        /* Whole huge pages only: the layer's last partial 2 MiB stays in small pages, so no
         * huge page reaches into the untouched gap after it. */
        size_t b = d->begin[l] * sizeof(float), e = d->end[l] * sizeof(float) / align * align;
        if ((d->end[l] - d->begin[l]) * sizeof(float) >= ACCEL_INFER_HUGE_MIN && b % align == 0 && e > b)
            madvise((char *)d->params + b, e - b, MADV_HUGEPAGE);
    }
    return ACCEL_OK;
}

accel_status_t accel_dispatch_create(const accel_model_t *model, accel_weights_t *w,
                                     const accel_device_map_t *map, accel_dispatch_t **out)
{
    *out = NULL;
    const accel_layout_t *layout = &model->layout;
    if (!model->ops || !model->ops->logits_range) {
        ACCEL_ERROR("model '%s' has no logits_range op: layer-by-layer inference needs a language "
                    "model that calls the layer hooks (model.name=gpt)",
                    model->ops ? model->ops->name : "?");
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (map->nlayers != layout->nlayers) {
        ACCEL_ERROR("the device map has %d layers, the model %d", map->nlayers, layout->nlayers);
        return ACCEL_ERR_INVALID;
    }
    for (int l = 0; l < map->nlayers; l++)
        if (map->tier[l] == ACCEL_TIER_GPU) {
            ACCEL_ERROR("layer %d is mapped to the gpu tier, which is not available (accel's GPT "
                        "computes on the CPU)\n--> hint: use cpu and disk", l);
            return ACCEL_ERR_UNSUPPORTED;
        }
    ACCEL_CHECK(accel_weights_check(w, layout));
    accel_dispatch_t *d = calloc(1, sizeof *d);
    if (!d) return ACCEL_ERR_NOMEM;
    d->model = model;
    d->w = w;
    d->map = map;
    d->nlayers = layout->nlayers;
    d->slots = map->ring_slots;
    d->loading = -1;
    size_t n = (size_t)(d->nlayers ? d->nlayers : 1);
    d->begin = calloc(n, sizeof *d->begin);
    d->end = calloc(n, sizeof *d->end);
    d->tbeg = calloc(n, sizeof *d->tbeg);
    d->tend = calloc(n, sizeof *d->tend);
    d->state = calloc(n, 1);
    d->in_use = calloc(n, sizeof *d->in_use);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    d->hooks = (accel_layer_hooks_t){ .fetch = hook_fetch, .release = hook_release, .ctx = d };
    accel_status_t st = ACCEL_OK;
    if (!d->begin || !d->end || !d->tbeg || !d->tend || !d->state || !d->in_use) st = ACCEL_ERR_NOMEM;
    if (st == ACCEL_OK) st = accel_infer_layer_ranges(layout, d->begin, d->end, d->tbeg, d->tend);
    if (st == ACCEL_OK) st = reserve_arena(d, layout);
    /* Resident layers, read here on the calling thread (before the prefetch thread exists). */
    double t0 = accel_now();
    for (int l = 0; l < d->nlayers && st == ACCEL_OK; l++)
        if (map->tier[l] == ACCEL_TIER_CPU) {
            st = read_layer(d, l);
            d->stats.resident_bytes += (d->end[l] - d->begin[l]) * sizeof(float);
        }
    d->stats.load_seconds = accel_now() - t0;
    /* First schedule: disk layers in ascending order (the first pass corrects it). */
    for (int l = 0; l < d->nlayers && st == ACCEL_OK; l++)
        if (map->tier[l] == ACCEL_TIER_DISK) {
            st = grow(&d->seq, &d->seqcap, d->nseq + 1);
            if (st == ACCEL_OK) d->seq[d->nseq++] = l;
        }
    if (st == ACCEL_OK && d->nseq > 0) {
        if (pthread_create(&d->io, NULL, io_main, d) != 0) {
            ACCEL_ERROR("cannot start the prefetch thread");
            st = ACCEL_ERR_NOMEM;
        } else {
            d->io_started = true;
        }
    }
    if (st != ACCEL_OK) {
        accel_dispatch_destroy(d);
        return st;
    }
    *out = d;
    return ACCEL_OK;
}

static bool same_schedule(const accel_dispatch_t *d)
{
    return d->nrec == d->nseq && !memcmp(d->rec, d->seq, sizeof *d->rec * (size_t)d->nrec);
}

/* One pass of the model over the weights: logits_range from `first`, or with cached >= 0 the
 * KV-cached logits after the last token. */
static accel_status_t pass(accel_dispatch_t *d, const int32_t *tokens, int ntokens, int first,
                           int cached, float *out)
{
    const accel_model_t *m = d->model;
    pthread_mutex_lock(&d->mu);
    accel_status_t st = d->io_status;
    d->recording = true;
    d->pass_miss = false;
    d->nrec = 0;
    pthread_mutex_unlock(&d->mu);
    if (st != ACCEL_OK) return st;
    if (cached >= 0 && m->ops->logits_cached)
        st = m->ops->logits_cached(m->state, &m->layout, d->params, tokens, ntokens, cached, out,
                                   &d->hooks);
    else
        st = m->ops->logits_range(m->state, &m->layout, d->params, tokens, ntokens, first, out,
                                  &d->hooks);
    pthread_mutex_lock(&d->mu);
    d->recording = false;
    d->stats.passes++;
    /* A pass that failed half-way may not have released its layers. */
    for (int l = 0; l < d->nlayers; l++)
        if (d->in_use[l]) {
            d->in_use[l] = 0;
            if (d->state[l] == L_READY && !claimed(d, l)) evict(d, l);
        }
    if (d->io_status == ACCEL_OK && d->nrec > 0 && (d->pass_miss || !same_schedule(d))) {
        /* Learn this pass's order and start the next pass from its first entry. */
        drop_prefetched(d);
        if (grow(&d->seq, &d->seqcap, d->nrec) == ACCEL_OK) {
            memcpy(d->seq, d->rec, sizeof *d->rec * (size_t)d->nrec);
            d->nseq = d->nrec;
        }
        d->next_use = d->next_io = 0;
        pthread_cond_broadcast(&d->cv);
    }
    if (st == ACCEL_OK && d->io_status != ACCEL_OK) {
        ACCEL_ERROR("reading a disk layer from %s failed: the logits of this pass are not valid",
                    accel_weights_path(d->w));
        st = d->io_status;
    }
    pthread_mutex_unlock(&d->mu);
    return st;
}

accel_status_t accel_dispatch_logits(accel_dispatch_t *d, const int32_t *tokens, int ntokens,
                                     int first, float *out)
{
    return pass(d, tokens, ntokens, first, -1, out);
}

accel_status_t accel_dispatch_next_logits(accel_dispatch_t *d, const int32_t *tokens, int ntokens,
                                          int cached, float *out)
{
    return pass(d, tokens, ntokens, ntokens - 1, cached < 0 ? 0 : cached, out);
}

void accel_dispatch_stats(const accel_dispatch_t *d, accel_dispatch_stats_t *stats)
{
    pthread_mutex_lock((pthread_mutex_t *)&d->mu);
    *stats = d->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&d->mu);
}

void accel_dispatch_destroy(accel_dispatch_t *d)
{
    if (!d) return;
    if (d->io_started) {
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->io, NULL);
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    if (d->reserved) munmap(d->reserved, d->reserved_bytes);
    free(d->begin);
    free(d->end);
    free(d->tbeg);
    free(d->tend);
    free(d->state);
    free(d->in_use);
    free(d->seq);
    free(d->rec);
    free(d);
}

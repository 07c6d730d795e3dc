/* Bucketed, overlapped gradient allreduce (see include/accel/grad_sync.h). */
#include "build_config.h"

#include <stdlib.h>
#include <string.h>

#include "accel/dtype.h"
#include "grad_sync.h"
#include "accel/log.h"
#include "accel/timer.h"

typedef struct {
    size_t begin, end;              /* element range of the gradient arena */
    int pending;                    /* layers of this bucket still in backward */
    int nlayers;
    accel_request_t *req;
    bool started;
    bool failed;                    /* an MPI error was reported for this bucket */
    uint16_t *staging;              /* half-precision copy when gradients travel as bf16/fp16 */
} bucket_t;

struct accel_grad_sync {
    accel_comm_t *comm;
    float *grads;
    accel_dtype_t dtype;
    bucket_t *buckets;
    int nbuckets;
    int *bucket_of_layer;           /* layer id -> bucket, -1 when the layer owns no tensor */
    int nlayers;
    double first_start;
    accel_grad_sync_stats_t stats;
};

static void layer_range(const accel_layout_t *layout, int layer, size_t *begin, size_t *end)
{
    accel_layout_layer_range(layout, layer, ACCEL_ARENA_ALIGN, begin, end);
}

/* Layers must occupy disjoint, ascending ranges for buckets of whole layers to be ranges. */
static bool layers_contiguous(const accel_layout_t *layout)
{
    size_t prev_end = 0;
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        if (t->layer < 0) return false;
        if (i > 0 && t->layer < layout->tensors[i - 1].layer) return false;
        (void)prev_end;
    }
    for (int l = 0; l < layout->nlayers; l++) {
        size_t b, e;
        layer_range(layout, l, &b, &e);
        if (e == 0) continue;
        if (b < prev_end) return false;
        prev_end = e;
    }
    return true;
}

size_t accel_grad_sync_bucket_elems(double bucket_mb, size_t numel)
{
    if (bucket_mb > 0) {
        size_t n = (size_t)(bucket_mb * 1048576.0 / sizeof(float));
        return n > 0 ? n : 1;
    }
    /* auto: PyTorch DDP's 25 MiB, but an eighth of the arena (at least 1 MiB) for small models, so
     * that their sync also starts during backward instead of after it */
    const size_t mib = 1048576 / sizeof(float), cap = 25 * mib, least = mib;
    size_t eighth = numel / 8;
    return eighth > cap ? cap : eighth < least ? least : eighth;
}

static void start_bucket(accel_grad_sync_t *s, bucket_t *b)
{
    if (b->started) return;
    b->started = true;
    if (s->first_start == 0) s->first_start = accel_now();
    size_t n = b->end - b->begin;
    float *g = s->grads + b->begin;
    accel_status_t st;
    if (s->dtype == ACCEL_F32) {
        st = accel_comm_allreduce(s->comm, g, g, n, ACCEL_F32, ACCEL_SUM, &b->req);
    } else {
        if (s->dtype == ACCEL_BF16)
            for (size_t i = 0; i < n; i++) b->staging[i] = accel_f32_to_bf16(g[i]);
        else
            for (size_t i = 0; i < n; i++) b->staging[i] = accel_f32_to_f16(g[i]);
        st = accel_comm_allreduce(s->comm, b->staging, b->staging, n, s->dtype, ACCEL_SUM, &b->req);
    }
    if (st != ACCEL_OK) {               /* reported by the comm layer; finish() fails the step */
        b->req = NULL;
        b->failed = true;
    }
}

/* Drive outstanding requests: Open MPI progresses non-blocking collectives only inside MPI calls. */
void accel_grad_sync_progress(accel_grad_sync_t *s)
{
    for (int i = 0; i < s->nbuckets; i++) {
        bucket_t *b = &s->buckets[i];
        if (!b->req) continue;
        int done = 0;
        if (accel_comm_test(s->comm, b->req, &done) != ACCEL_OK) b->failed = true;
        if (done) b->req = NULL;   /* the comm layer freed it */
    }
}

int accel_grad_sync_in_flight(const accel_grad_sync_t *s)
{
    int n = 0;
    for (int i = 0; i < s->nbuckets; i++) n += s->buckets[i].req != NULL;
    return n;
}

void accel_grad_sync_layer_done(accel_grad_sync_t *s, int layer)
{
    if (layer < 0 || layer >= s->nlayers || s->bucket_of_layer[layer] < 0) return;
    bucket_t *b = &s->buckets[s->bucket_of_layer[layer]];
    if (--b->pending == 0) start_bucket(s, b);
    accel_grad_sync_progress(s);
}

void accel_grad_sync_destroy(accel_grad_sync_t *s)
{
    if (!s) return;
    for (int i = 0; i < s->nbuckets; i++) free(s->buckets[i].staging);
    free(s->buckets);
    free(s->bucket_of_layer);
    free(s);
}

accel_status_t accel_grad_sync_create(const accel_layout_t *layout, accel_comm_t *comm,
                                      float *grads, double bucket_mb, accel_dtype_t comm_dtype,
                                      accel_grad_sync_t **out)
{
    *out = NULL;
    accel_grad_sync_t *s = calloc(1, sizeof *s);
    if (!s) return ACCEL_ERR_NOMEM;
    s->comm = comm;
    s->grads = grads;
    s->dtype = comm_dtype;
    s->nlayers = layout->nlayers > 0 ? layout->nlayers : 1;
    s->buckets = calloc((size_t)s->nlayers, sizeof *s->buckets);
    s->bucket_of_layer = malloc(sizeof(int) * (size_t)s->nlayers);
    if (!s->buckets || !s->bucket_of_layer) { accel_grad_sync_destroy(s); return ACCEL_ERR_NOMEM; }
    for (int l = 0; l < s->nlayers; l++) s->bucket_of_layer[l] = -1;
    const size_t target = accel_grad_sync_bucket_elems(bucket_mb, layout->numel);

    if (!layers_contiguous(layout)) {
        /* One bucket for the whole arena, reduced after backward: correct, just not overlapped. */
        ACCEL_DEBUG("layers are not contiguous in the arena: gradients sync in one bucket");
        s->buckets[0] = (bucket_t){ .begin = 0, .end = layout->numel, .nlayers = 0 };
        s->nbuckets = 1;
    } else {
        /* Walk layers from the last (first out of backward) to the first, packing whole layers. */
        bucket_t *cur = NULL;
        for (int l = s->nlayers - 1; l >= 0; l--) {
            size_t b, e;
            layer_range(layout, l, &b, &e);
            if (e == 0) continue;
            if (!cur || cur->end - cur->begin >= target) {
                cur = &s->buckets[s->nbuckets++];
                cur->begin = b;
                cur->end = e;
            }
            if (b < cur->begin) cur->begin = b;
            cur->nlayers++;
            s->bucket_of_layer[l] = (int)(cur - s->buckets);
        }
    }
    for (int i = 0; i < s->nbuckets; i++) {
        bucket_t *b = &s->buckets[i];
        s->stats.bytes += (b->end - b->begin) * accel_dtype_size(comm_dtype);
        if (comm_dtype != ACCEL_F32) {
            b->staging = malloc(sizeof(uint16_t) * (b->end - b->begin + 1));
            if (!b->staging) { accel_grad_sync_destroy(s); return ACCEL_ERR_NOMEM; }
        }
    }
    s->stats.buckets = s->nbuckets;
    *out = s;
    return ACCEL_OK;
}

void accel_grad_sync_begin(accel_grad_sync_t *s)
{
    for (int i = 0; i < s->nbuckets; i++) {
        s->buckets[i].pending = s->buckets[i].nlayers;
        s->buckets[i].started = false;
        s->buckets[i].failed = false;
        s->buckets[i].req = NULL;
    }
    s->first_start = 0;
}

accel_status_t accel_grad_sync_finish(accel_grad_sync_t *s)
{
    double t0 = accel_now();
    accel_status_t st = ACCEL_OK;
    for (int i = 0; i < s->nbuckets; i++) start_bucket(s, &s->buckets[i]);
    for (int i = 0; i < s->nbuckets; i++) {
        bucket_t *b = &s->buckets[i];
        if (b->req) {
            accel_status_t w = accel_comm_wait(s->comm, b->req);
            if (w != ACCEL_OK) st = w;
            b->req = NULL;
        }
        if (b->failed) st = ACCEL_ERR_MPI;
        if (s->dtype != ACCEL_F32) {
            float *g = s->grads + b->begin;
            size_t n = b->end - b->begin;
            if (s->dtype == ACCEL_BF16)
                for (size_t k = 0; k < n; k++) g[k] = accel_bf16_to_f32(b->staging[k]);
            else
                for (size_t k = 0; k < n; k++) g[k] = accel_f16_to_f32(b->staging[k]);
        }
    }
    double t1 = accel_now();
    s->stats.exposed_s = t1 - t0;
    s->stats.comm_s = t1 - (s->first_start > 0 ? s->first_start : t0);
    return st;
}

accel_status_t accel_grad_sync_all(accel_grad_sync_t *s)
{
    accel_grad_sync_begin(s);
    return accel_grad_sync_finish(s);
}

const accel_grad_sync_stats_t *accel_grad_sync_stats(const accel_grad_sync_t *s) { return &s->stats; }
int accel_grad_sync_nbuckets(const accel_grad_sync_t *s) { return s->nbuckets; }

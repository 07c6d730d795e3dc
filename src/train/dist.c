/* Distributed model state for ddp / zero1 / zero2 / zero3 / hybrid (see include/accel/dist.h),
 * written once for every device: buffers live in the memory of the device operations table
 * (devops.h) and move through the communicator that fits it (MPI for host memory, NCCL for device
 * memory). A collective that fails inside a model hook is remembered and returned by the next call
 * that returns a status (accel_dist_end_micro), never an abort: a peer left waiting is ended by
 * the comm layer's watchdog (dist.timeout). */
#include "build_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "amp.h"
#include "dist.h"
#include "grad_sync.h"
#include "accel/log.h"
#include "accel/timer.h"
#include "devops.h"

typedef enum { UNIT_RELEASED = 0, UNIT_GATHERING, UNIT_READY } unit_state_t;

/* A layer as ZeRO sees it: its padded arena range, split into `shards` equal slices. */
typedef struct {
    size_t begin, end, slice;
    size_t owned;                   /* offset of this rank's slice in the owned vector */
    unit_state_t state;             /* ZeRO-3 parameters */
    accel_request_t *gather;
    accel_request_t *reduce;        /* gradient reduce-scatter in flight */
    bool reduce_started;
} unit_t;

struct accel_dist {
    const accel_devops_t *ops;
    accel_status_t failed;          /* first failure inside a hook, returned by end_micro */
    accel_strategy_t strategy;
    bool hybrid;
    const accel_layout_t *layout;
    const accel_config_t *cfg;
    accel_comm_t *world;            /* DDP gradients */
    accel_comm_t *shard;            /* ZeRO: the ranks sharing one copy of the model state */
    accel_comm_t *replica;          /* hybrid: same local rank on every node */
    int shards, shard_rank, world_rank, world_size, replicas;
    float *params, *grads, *scratch;
    bool params_virtual, grads_virtual;
    unit_t *units;
    int nunits;
    accel_range_t *ranges;
    int nranges;
    size_t owned_n;
    float *shard_params, *shard_grads, *staging;
    float *host_state[3];           /* device memory: host copies of params, m, v (checkpoints) */
    accel_grad_sync_t *sync;
    accel_layer_hooks_t hooks, eval_hooks;
    int micro, nmicro;
    bool sync_each;
    double exposed_s, inflight_s, first_reduce;
};


/* ------------------------------------------------------------------------ ZeRO communication */

static bool zero(const accel_dist_t *d) { return d->strategy != ACCEL_DDP; }

/* Remember the first failure (the comm layer has said what failed). */
static void note(accel_dist_t *d, accel_status_t st)
{
    if (st != ACCEL_OK && d->failed == ACCEL_OK) d->failed = st;
}

static void start_gather(accel_dist_t *d, unit_t *u)
{
    if (u->state != UNIT_RELEASED || u->slice == 0) return;
    accel_status_t st = accel_comm_allgather(d->shard, d->shard_params + u->owned,
                                             d->params + u->begin, u->slice, ACCEL_F32, &u->gather);
    note(d, st);
    u->state = st == ACCEL_OK ? UNIT_GATHERING : UNIT_READY;
}

static void finish_gather(accel_dist_t *d, unit_t *u)
{
    if (u->state == UNIT_GATHERING) {
        note(d, accel_comm_wait(d->shard, u->gather));
        u->gather = NULL;
    }
    u->state = UNIT_READY;
}

static void release_params(accel_dist_t *d, unit_t *u)
{
    finish_gather(d, u);
    note(d, d->ops->release(d->params, u->begin, u->end));
    u->state = UNIT_RELEASED;
}

/* Gradients of a unit: reduce-scatter this rank's slice into the owned gradients (the first
 * micro-batch of a step writes them directly, later ones go through staging and are added;
 * zero1 reduces once per step, after its last micro-batch, and has no staging). */
static void start_reduce(accel_dist_t *d, unit_t *u)
{
    if (u->reduce_started || u->slice == 0) return;
    u->reduce_started = true;
    if (d->first_reduce == 0) d->first_reduce = accel_now();
    bool direct = d->micro == 0 || d->strategy == ACCEL_ZERO1;
    float *dst = (direct ? d->shard_grads : d->staging) + u->owned;
    accel_status_t st = accel_comm_reduce_scatter(d->shard, d->grads + u->begin, dst, u->slice,
                                                  ACCEL_F32, ACCEL_SUM, &u->reduce);
    if (st != ACCEL_OK) u->reduce = NULL;
    note(d, st);
}

static void reduce_completed(accel_dist_t *d, unit_t *u)
{
    u->reduce = NULL;
    /* ZeRO-2/3: the full-size gradients of this layer are no longer needed. */
    if (d->grads_virtual) note(d, d->ops->release(d->grads, u->begin, u->end));
}

/* Open MPI progresses non-blocking collectives only inside MPI calls: poke them between layers. */
static void progress(accel_dist_t *d)
{
    for (int i = 0; i < d->nunits; i++) {
        unit_t *u = &d->units[i];
        int done = 0;
        if (u->reduce) {
            accel_status_t st = accel_comm_test(d->shard, u->reduce, &done);
            note(d, st);
            if (done || st != ACCEL_OK) reduce_completed(d, u);
        }
        if (u->state == UNIT_GATHERING) {
            accel_status_t st = accel_comm_test(d->shard, u->gather, &done);
            note(d, st);
            if (done || st != ACCEL_OK) { u->gather = NULL; u->state = UNIT_READY; }
        }
    }
}

static unit_t *unit_of(accel_dist_t *d, int layer)
{
    if (layer < 0 || layer >= d->nunits || d->units[layer].slice == 0) return NULL;
    return &d->units[layer];
}

/* ------------------------------------------------------------------------ model hooks */

static void hook_fetch(void *ctx, int layer, int backward)
{
    accel_dist_t *d = ctx;
    if (d->strategy != ACCEL_ZERO3) return;
    unit_t *u = unit_of(d, layer);
    if (!u) return;
    start_gather(d, u);
    finish_gather(d, u);
    /* Prefetch the layer the model will want next, in the direction of the pass. */
    for (int l = backward ? layer - 1 : layer + 1; l >= 0 && l < d->nunits; l += backward ? -1 : 1) {
        unit_t *next = unit_of(d, l);
        if (!next) continue;
        start_gather(d, next);
        break;
    }
    progress(d);
}

static void hook_release(void *ctx, int layer)
{
    accel_dist_t *d = ctx;
    if (d->strategy != ACCEL_ZERO3) return;
    unit_t *u = unit_of(d, layer);
    if (u) release_params(d, u);
}

/* ZeRO-2/3 hand a layer's full-size gradients back once its reduce-scatter completes. MPI moves
 * them only while we poll, so bound the layers in flight: wait for the oldest beyond the window. */
#define REDUCE_WINDOW 2

static void bound_reduces_in_flight(accel_dist_t *d, int newest)
{
    int in_flight = 0;
    for (int l = d->nunits - 1; l >= 0; l--)
        if (d->units[l].reduce) in_flight++;
    /* Backward runs from the last layer down: the oldest reductions have the highest layer ids. */
    for (int l = d->nunits - 1; l > newest && in_flight > REDUCE_WINDOW; l--) {
        unit_t *u = &d->units[l];
        if (!u->reduce) continue;
        note(d, accel_comm_wait(d->shard, u->reduce));
        reduce_completed(d, u);
        in_flight--;
    }
}

static void hook_grads_done(void *ctx, int layer)
{
    accel_dist_t *d = ctx;
    bool last = d->micro + 1 == d->nmicro;
    if (d->strategy == ACCEL_DDP) {
        if (last && !d->sync_each) accel_grad_sync_layer_done(d->sync, layer);
        return;
    }
    /* zero1 reduces once per step, at the boundary; zero2/3 on every micro-batch. */
    if (d->strategy == ACCEL_ZERO1 && !last) return;
    unit_t *u = unit_of(d, layer);
    if (u) start_reduce(d, u);
    progress(d);
    if (d->grads_virtual) bound_reduces_in_flight(d, layer);
}

/* Polls whatever is in flight; with nothing started it touches no MPI. */
static void hook_progress(void *ctx)
{
    accel_dist_t *d = ctx;
    if (d->strategy == ACCEL_DDP) accel_grad_sync_progress(d->sync);
    else progress(d);
}

/* ------------------------------------------------------------------------ creation */

void accel_dist_destroy(accel_dist_t *d)
{
    if (!d) return;
    accel_grad_sync_destroy(d->sync);
    const accel_devops_t *ops = d->ops;
    if (d->params) ops->arena_free(d->layout, d->params_virtual, d->params);
    if (d->grads) ops->arena_free(d->layout, d->grads_virtual, d->grads);
    if (d->scratch) ops->arena_free(d->layout, false, d->scratch);
    ops->free(d->shard_params);
    ops->free(d->shard_grads);
    ops->free(d->staging);
    for (int i = 0; i < 3; i++) free(d->host_state[i]);
    free(d->units);
    free(d->ranges);
    accel_comm_destroy(d->world);
    accel_comm_destroy(d->shard);
    accel_comm_destroy(d->replica);
    free(d);
}

static accel_status_t create_zero(accel_dist_t *d, const accel_runtime_t *rt, const accel_config_t *cfg,
                                  accel_layout_t *layout)
{
    MPI_Comm shard_comm = d->hybrid ? rt->local : rt->world;
    ACCEL_CHECK(accel_comm_create(shard_comm, d->ops->comm, cfg->dist.timeout, &d->shard));
    d->shards = accel_comm_size(d->shard);
    d->shard_rank = accel_comm_rank(d->shard);
    d->replicas = d->world_size / d->shards;
    if (d->hybrid && rt->nnodes > 1)
        ACCEL_CHECK(accel_comm_create(rt->cross, d->ops->comm, cfg->dist.timeout, &d->replica));
    for (int i = 0; i < layout->ntensors; i++)
        if (layout->tensors[i].layer < 0) {
            ACCEL_ERROR0("tensor '%s' belongs to no layer: ZeRO shards layer by layer", layout->tensors[i].name);
            return ACCEL_ERR_INVALID;
        }
    size_t multiple = (size_t)d->shards * ACCEL_ARENA_ALIGN;
    ACCEL_CHECK(accel_layout_pad_layers(layout, multiple));

    d->nunits = layout->nlayers;
    d->units = calloc((size_t)(d->nunits ? d->nunits : 1), sizeof *d->units);
    d->ranges = calloc((size_t)(d->nunits ? d->nunits : 1), sizeof *d->ranges);
    if (!d->units || !d->ranges) return ACCEL_ERR_NOMEM;
    for (int l = 0; l < d->nunits; l++) {
        unit_t *u = &d->units[l];
        accel_layout_layer_range(layout, l, multiple, &u->begin, &u->end);
        u->slice = (u->end - u->begin) / (size_t)d->shards;
        u->owned = d->owned_n;
        if (!u->slice) continue;
        size_t mine = u->begin + (size_t)d->shard_rank * u->slice;
        d->ranges[d->nranges++] = (accel_range_t){ mine, mine + u->slice, u->owned };
        d->owned_n += u->slice;
    }
    const accel_devops_t *ops = d->ops;
    size_t owned_bytes = sizeof(float) * (d->owned_n ? d->owned_n : 1);
    ACCEL_CHECK(ops->alloc(owned_bytes, (void **)&d->shard_params));
    ACCEL_CHECK(ops->alloc(owned_bytes, (void **)&d->shard_grads));
    if (cfg->train.grad_accum > 1 && d->strategy != ACCEL_ZERO1)
        ACCEL_CHECK(ops->alloc(owned_bytes, (void **)&d->staging));
    d->params_virtual = d->strategy == ACCEL_ZERO3;
    d->grads_virtual = d->strategy != ACCEL_ZERO1;
    ACCEL_CHECK(ops->arena_alloc(layout, d->params_virtual, &d->params));
    ACCEL_CHECK(ops->arena_alloc(layout, d->grads_virtual, &d->grads));
    return ACCEL_OK;
}

accel_status_t accel_dist_create(const accel_runtime_t *rt, const accel_config_t *cfg,
                                 const accel_model_ops_t *model, accel_device_kind_t device,
                                 accel_layout_t *layout, accel_dist_t **out)
{
    *out = NULL;
    const accel_devops_t *ops;
    ACCEL_CHECK(accel_devops_for(device, &ops));
    const accel_strategy_t strategy = cfg->dist.strategy_id;
    if (cfg->dist.hybrid && strategy == ACCEL_DDP) {
        ACCEL_ERROR0("dist.hybrid=true shards within a node and replicates across nodes: it needs "
                     "dist.strategy=zero1, zero2 or zero3 (got ddp)");
        return ACCEL_ERR_CONFIG;
    }
    if (strategy == ACCEL_ZERO3 && !model->fetches_layers) {
        ACCEL_ERROR0("model '%s' does not report when it uses each layer's parameters, which "
                     "dist.strategy=zero3 needs to gather them\n--> hint: call accel_batch_layer_fetch/"
                     "release in the model and set fetches_layers, or use zero2", model->name);
        return ACCEL_ERR_UNSUPPORTED;
    }
    accel_dist_t *d = calloc(1, sizeof *d);
    if (!d) return ACCEL_ERR_NOMEM;
    d->ops = ops;
    d->strategy = strategy;
    d->hybrid = cfg->dist.hybrid;
    d->layout = layout;
    d->cfg = cfg;
    d->world_rank = rt->rank;
    d->world_size = rt->size;
    d->replicas = 1;
    d->sync_each = cfg->train.sync_each_batch && cfg->train.grad_accum > 1;
    d->hooks = (accel_layer_hooks_t){ hook_fetch, hook_release, hook_grads_done, d, hook_progress };
    d->eval_hooks = (accel_layer_hooks_t){ hook_fetch, hook_release, NULL, d, hook_progress };
    accel_status_t st;
    ACCEL_CHECK_GOTO(accel_comm_create(rt->world, ops->comm, cfg->dist.timeout, &d->world), st, fail);
    if (zero(d)) {
        ACCEL_CHECK_GOTO(create_zero(d, rt, cfg, layout), st, fail);
    } else {
        ACCEL_CHECK_GOTO(ops->arena_alloc(layout, false, &d->params), st, fail);
        ACCEL_CHECK_GOTO(ops->arena_alloc(layout, false, &d->grads), st, fail);
        if (d->sync_each) ACCEL_CHECK_GOTO(ops->arena_alloc(layout, false, &d->scratch), st, fail);
        /* Gradients travel in comm_dtype through host staging; device memory reduces in fp32. */
        accel_dtype_t comm_dtype = ops->host ? cfg->dist.comm_dtype_id : ACCEL_F32;
        ACCEL_CHECK_GOTO(accel_grad_sync_create(layout, d->world, d->grads, cfg->dist.bucket_mb,
                                                comm_dtype, &d->sync), st, fail);
        d->owned_n = layout->numel;
        d->ranges = malloc(sizeof *d->ranges);
        if (!d->ranges) { st = ACCEL_ERR_NOMEM; goto fail; }
        d->ranges[0] = (accel_range_t){ 0, layout->numel, 0 };
        d->nranges = 1;
        d->shards = 1;
    }
    *out = d;
    return ACCEL_OK;
fail:
    accel_dist_destroy(d);
    return st;
}

/* ------------------------------------------------------------------------ state access */

accel_strategy_t accel_dist_strategy(const accel_dist_t *d) { return d->strategy; }
bool accel_dist_hybrid(const accel_dist_t *d) { return d->hybrid; }
float *accel_dist_params(accel_dist_t *d) { return d->params; }
size_t accel_dist_owned_numel(const accel_dist_t *d) { return d->owned_n; }
float *accel_dist_owned_params(accel_dist_t *d) { return zero(d) ? d->shard_params : d->params; }
float *accel_dist_owned_grads(accel_dist_t *d) { return zero(d) ? d->shard_grads : d->grads; }
bool accel_dist_replicated(const accel_dist_t *d) { return !zero(d); }

int accel_dist_owned_ranges(const accel_dist_t *d, const accel_range_t **ranges)
{
    *ranges = d->ranges;
    return d->nranges;
}

/* The failure a hook remembered, if any (and forget it). */
static accel_status_t take_failure(accel_dist_t *d)
{
    accel_status_t st = d->failed;
    d->failed = ACCEL_OK;
    return st;
}

/* zero1/2: refresh the full parameter arena from the owned slices (one allgather per layer). */
static accel_status_t gather_all(accel_dist_t *d)
{
    for (int l = 0; l < d->nunits; l++) start_gather(d, &d->units[l]);
    for (int l = 0; l < d->nunits; l++) finish_gather(d, &d->units[l]);
    return take_failure(d);
}

accel_status_t accel_dist_params_loaded(accel_dist_t *d)
{
    if (!zero(d)) return ACCEL_OK;
    for (int l = 0; l < d->nunits; l++)
        if (d->units[l].state != UNIT_RELEASED) release_params(d, &d->units[l]);
    return d->strategy == ACCEL_ZERO3 ? ACCEL_OK : gather_all(d);
}

accel_status_t accel_dist_gather_full(accel_dist_t *d)
{
    return d->strategy == ACCEL_ZERO3 ? gather_all(d) : ACCEL_OK;
}

accel_status_t accel_dist_release_full(accel_dist_t *d)
{
    if (d->strategy == ACCEL_ZERO3)
        for (int l = 0; l < d->nunits; l++)
            if (d->units[l].state != UNIT_RELEASED) release_params(d, &d->units[l]);
    return take_failure(d);
}

accel_status_t accel_dist_init_params(accel_dist_t *d, uint64_t seed)
{
    /* The keyed RNG runs on the host: device memory is filled through one host buffer. */
    const accel_devops_t *ops = d->ops;
    float *owned = accel_dist_owned_params(d), *host = owned;
    size_t n = zero(d) ? d->owned_n : d->layout->numel;
    if (!ops->host) {
        host = calloc(n ? n : 1, sizeof(float));
        if (!host) return ACCEL_ERR_NOMEM;
    }
    if (!zero(d))
        accel_arena_init_params(d->layout, host, seed);
    else
        for (int i = 0; i < d->nranges; i++)
            accel_arena_init_range(d->layout, host + d->ranges[i].owned, d->ranges[i].begin,
                                   d->ranges[i].end, seed);
    accel_status_t st = host != owned ? ops->upload(owned, host, sizeof(float) * n) : ACCEL_OK;
    if (host != owned) free(host);
    ACCEL_CHECK(st);
    if (zero(d) && d->strategy != ACCEL_ZERO3) {
        for (int l = 0; l < d->nunits; l++) d->units[l].state = UNIT_RELEASED;
        return gather_all(d);
    }
    return ACCEL_OK;
}

accel_status_t accel_dist_host_state(accel_dist_t *d, accel_optim_t *opt, bool download, float *out[3])
{
    float *live[3] = { accel_dist_owned_params(d), opt->m, opt->v };
    for (int i = 0; i < 3; i++) {
        out[i] = live[i];
        if (d->ops->host || !live[i]) continue;
        if (!d->host_state[i]) {
            d->host_state[i] = malloc(sizeof(float) * (d->owned_n ? d->owned_n : 1));
            if (!d->host_state[i]) return ACCEL_ERR_NOMEM;
        }
        out[i] = d->host_state[i];
        if (download) ACCEL_CHECK(d->ops->download(out[i], live[i], sizeof(float) * d->owned_n));
    }
    return ACCEL_OK;
}

accel_status_t accel_dist_host_state_loaded(accel_dist_t *d, accel_optim_t *opt)
{
    float *live[3] = { accel_dist_owned_params(d), opt->m, opt->v };
    for (int i = 0; i < 3; i++)
        if (!d->ops->host && live[i] && d->host_state[i])
            ACCEL_CHECK(d->ops->upload(live[i], d->host_state[i], sizeof(float) * d->owned_n));
    return accel_dist_params_loaded(d);
}

const accel_devops_t *accel_dist_devops(const accel_dist_t *d) { return d->ops; }

/* ------------------------------------------------------------------------ the step */

const accel_layer_hooks_t *accel_dist_begin_micro(accel_dist_t *d, int micro, int nmicro)
{
    d->micro = micro;
    d->nmicro = nmicro;
    bool last = micro + 1 == nmicro;
    if (micro == 0) {
        d->first_reduce = 0;
        if (!d->grads_virtual) note(d, d->ops->zero(d->grads, sizeof(float) * d->layout->numel));
    }
    for (int l = 0; l < d->nunits; l++) d->units[l].reduce_started = false;
    if (d->sync_each) note(d, d->ops->zero(d->scratch, sizeof(float) * d->layout->numel));
    if (!zero(d) && last && !d->sync_each) accel_grad_sync_begin(d->sync);
    return &d->hooks;
}

float *accel_dist_micro_grads(accel_dist_t *d) { return d->sync_each ? d->scratch : d->grads; }

const accel_layer_hooks_t *accel_dist_eval_hooks(accel_dist_t *d)
{
    return d->strategy == ACCEL_ZERO3 ? &d->eval_hooks : NULL;
}

accel_status_t accel_dist_end_micro(accel_dist_t *d, int micro, int nmicro)
{
    bool last = micro + 1 == nmicro;
    size_t n = d->layout->numel;
    ACCEL_CHECK(take_failure(d));
    if (!zero(d)) {
        if (d->sync_each) {
            ACCEL_CHECK(accel_comm_allreduce(d->world, d->scratch, d->scratch, n, ACCEL_F32, ACCEL_SUM, NULL));
            ACCEL_CHECK(d->ops->add(d->grads, d->scratch, n));
        } else if (last) {
            ACCEL_CHECK(accel_grad_sync_finish(d->sync));
            d->exposed_s += accel_grad_sync_stats(d->sync)->exposed_s;
            d->inflight_s += accel_grad_sync_stats(d->sync)->comm_s;
        }
        return ACCEL_OK;
    }
    if (d->strategy == ACCEL_ZERO1 && !last) return ACCEL_OK;
    double t0 = accel_now();
    for (int l = 0; l < d->nunits; l++) start_reduce(d, &d->units[l]);   /* models without hooks */
    for (int l = 0; l < d->nunits; l++) {
        unit_t *u = &d->units[l];
        if (!u->reduce) continue;
        note(d, accel_comm_wait(d->shard, u->reduce));
        reduce_completed(d, u);
    }
    ACCEL_CHECK(take_failure(d));
    if (micro > 0 && d->strategy != ACCEL_ZERO1)
        ACCEL_CHECK(d->ops->add(d->shard_grads, d->staging, d->owned_n));
    if (last && d->replica)
        ACCEL_CHECK(accel_comm_allreduce(d->replica, d->shard_grads, d->shard_grads, d->owned_n,
                                         ACCEL_F32, ACCEL_SUM, NULL));
    double t1 = accel_now();
    d->exposed_s += t1 - t0;
    d->inflight_s += t1 - (d->first_reduce > 0 ? d->first_reduce : t0);
    d->first_reduce = 0;
    return ACCEL_OK;
}

/* DDP: every rank holds all gradients; each takes an even share for the norm and the checks. */
static void owned_share(const accel_dist_t *d, const float **g, size_t *n)
{
    if (zero(d)) {
        *g = d->shard_grads;
        *n = d->owned_n;
        return;
    }
    size_t N = d->layout->numel;
    size_t lo = N * (size_t)d->world_rank / (size_t)d->world_size;
    size_t hi = N * (size_t)(d->world_rank + 1) / (size_t)d->world_size;
    *g = d->grads + lo;
    *n = hi - lo;
}

accel_status_t accel_dist_grad_sumsq(const accel_dist_t *d, double *sumsq, int *replicas)
{
    const float *g;
    size_t n;
    owned_share(d, &g, &n);
    *replicas = zero(d) ? d->replicas : 1;
    return d->ops->sumsq(g, n, sumsq);
}

accel_status_t accel_dist_poison_grads(accel_dist_t *d)
{
    const float *g;
    size_t n;
    owned_share(d, &g, &n);
    const float inf = INFINITY;
    return n ? d->ops->upload((float *)g, &inf, sizeof inf) : ACCEL_OK;
}

accel_status_t accel_dist_step(accel_dist_t *d, accel_optim_t *opt, float mul, double *lr)
{
    ACCEL_CHECK(accel_optim_update(opt, accel_dist_owned_params(d), accel_dist_owned_grads(d), mul, lr));
    if (!zero(d)) return ACCEL_OK;
    if (d->strategy == ACCEL_ZERO3) {
        /* Layers are fetched on demand; any still resident holds the old values. */
        for (int l = 0; l < d->nunits; l++)
            if (d->units[l].state != UNIT_RELEASED) release_params(d, &d->units[l]);
        return take_failure(d);
    }
    for (int l = 0; l < d->nunits; l++) d->units[l].state = UNIT_RELEASED;
    return gather_all(d);
}

size_t accel_dist_bytes_sent(const accel_dist_t *d)
{
    size_t b = accel_comm_bytes_sent(d->world);
    if (d->shard) b += accel_comm_bytes_sent(d->shard);
    if (d->replica) b += accel_comm_bytes_sent(d->replica);
    return b;
}

void accel_dist_sync_times(const accel_dist_t *d, double *exposed, double *in_flight)
{
    *exposed = d->exposed_s;
    *in_flight = d->inflight_s;
}

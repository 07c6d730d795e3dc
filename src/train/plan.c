/* The micro-batch, before the trainer is built: train.micro_batch=N turned into the
 * train.grad_accum that makes up the global batch, and train.micro_batch=auto planned from the
 * memory estimate (accel estimate-memory's) against a per-rank limit. No trial runs: the largest
 * micro-batch whose estimated peak fits is taken, and the next larger one is printed with what it
 * would need. Every rank plans from the same inputs (the limit is the minimum over ranks), so
 * every rank makes the same choice. */
#include "build_config.h"

#include <stdio.h>
#include <string.h>

#include "accel/log.h"
#include "accel/memory.h"
#include "accel/model.h"
#include "accel/trace.h"
#include "accel/trainer.h"

static double gib(double bytes) { return bytes / 1073741824.0; }

/* The per-rank limit and where it comes from: train.memory_limit, the GPU's memory, or the node's
 * memory shared by its ranks; the smallest over all ranks. */
static accel_status_t memory_limit(const accel_runtime_t *rt, const accel_config_t *cfg,
                                   double *limit, char *why, size_t whylen)
{
    double mine;
    if (cfg->train.memory_limit > 0) {
        mine = (double)cfg->train.memory_limit;
        snprintf(why, whylen, "train.memory_limit");
    } else if (rt->device.kind == ACCEL_DEVICE_CUDA && rt->device.memory > 0) {
        mine = (double)rt->device.memory;
        snprintf(why, whylen, "the memory of %s", rt->device.name);
    } else {
        size_t total = accel_memory_node_total();
        int ranks = rt->local_size > 0 ? rt->local_size : 1;
        mine = (double)total / ranks;
        snprintf(why, whylen, "node memory %.2f GiB / %d rank%s", gib((double)total), ranks,
                 ranks == 1 ? "" : "s");
    }
    ACCEL_CHECK(accel_mpi_allreduce(MPI_IN_PLACE, &mine, 1, MPI_DOUBLE, MPI_MIN, rt->world,
                                    "memory-limit"));
    *limit = mine;
    if (!(mine > 0)) {
        ACCEL_ERROR0("train.micro_batch=auto: this node's memory is unknown (/proc/meminfo)\n"
                     "--> hint: set train.memory_limit (bytes per rank, e.g. 8GiB)");
        return ACCEL_ERR_CONFIG;
    }
    return ACCEL_OK;
}

/* The largest micro-batch (a divisor of per_rank) whose estimate fits; the next larger one. */
static accel_status_t plan(const accel_runtime_t *rt, const accel_config_t *cfg,
                           const accel_model_t *model, double limit, int *micro, double *fit,
                           int *next_micro, double *next)
{
    const int per_rank = cfg->train.global_batch / rt->size;
    if (rt->device.kind != ACCEL_DEVICE_CUDA) {
        accel_memory_estimate_t e_fit, e_next;
        accel_status_t st = accel_memory_plan_micro_batch(cfg, model->ops, &model->layout, rt->size,
                                                          rt->local_size, (size_t)limit, micro,
                                                          &e_fit, next_micro, &e_next);
        *fit = (double)e_fit.total;
        *next = (double)e_next.total;
        return st;
    }
    *micro = *next_micro = 0;
    for (int m = per_rank; m >= 1; m--) {
        if (per_rank % m) continue;
        size_t b = 0;
        double bytes = accel_memory_gpu_estimate(cfg, &model->layout, cfg->dist.strategy_id, rt->size, m,
                                                 &b) == ACCEL_OK ? (double)b : 1e300;
        *fit = bytes;
        if (bytes <= limit) { *micro = m; return ACCEL_OK; }
        *next_micro = m;
        *next = bytes;
    }
    return ACCEL_ERR_NOMEM;
}

accel_status_t accel_trainer_plan_batch(const accel_runtime_t *rt, accel_config_t *cfg)
{
    accel_train_config_t *tr = &cfg->train;
    if (tr->micro_batch == 0) return ACCEL_OK;
    const int world = rt->size;
    if (tr->global_batch < world || tr->global_batch % world) {
        ACCEL_ERROR0("train.global_batch=%d does not divide over %d ranks\n--> hint: use a global "
                     "batch that is a multiple of the number of ranks", tr->global_batch, world);
        return ACCEL_ERR_CONFIG;
    }
    const int per_rank = tr->global_batch / world;
    if (tr->micro_batch > 0) {
        const int mb = tr->micro_batch;
        if (per_rank % mb) {
            ACCEL_ERROR0("train.micro_batch=%d does not divide the %d samples per rank "
                         "(train.global_batch=%d over %d ranks)\n--> hint: choose a divisor of %d, "
                         "or train.micro_batch=auto", mb, per_rank, tr->global_batch, world, per_rank);
            return ACCEL_ERR_CONFIG;
        }
        if (tr->grad_accum != 1 && tr->grad_accum != per_rank / mb) {
            ACCEL_ERROR0("train.micro_batch=%d and train.grad_accum=%d disagree: %d samples per rank "
                         "make %d micro-batches of %d\n--> hint: set only one of the two",
                         mb, tr->grad_accum, per_rank, per_rank / mb, mb);
            return ACCEL_ERR_CONFIG;
        }
        tr->grad_accum = per_rank / mb;
        return ACCEL_OK;
    }
    if (tr->grad_accum != 1) {
        ACCEL_ERROR0("train.micro_batch=auto chooses train.grad_accum itself, but it is set to %d\n"
                     "--> hint: leave train.grad_accum at 1, or give train.micro_batch a number",
                     tr->grad_accum);
        return ACCEL_ERR_CONFIG;
    }
    double limit;
    char why[160];
    ACCEL_CHECK(memory_limit(rt, cfg, &limit, why, sizeof why));
    accel_model_t model;
    ACCEL_CHECK(accel_model_create(cfg, &model));
    int micro, next_micro;
    double fit = 0, next = 0;
    accel_status_t st = plan(rt, cfg, &model, limit, &micro, &fit, &next_micro, &next);
    accel_model_destroy(&model);
    if (st == ACCEL_ERR_NOMEM) {
        ACCEL_ERROR0("train.micro_batch=auto: even a micro-batch of 1 needs an estimated %.2f GiB "
                     "per rank, over the limit of %.2f GiB (%s)\n--> hint: train.recompute=block, "
                     "a ZeRO strategy (dist.strategy=zero3), more ranks, or a larger "
                     "train.memory_limit", gib(fit), gib(limit), why);
        return st;
    }
    ACCEL_CHECK(st);
    tr->micro_batch = micro;
    tr->grad_accum = per_rank / micro;
    char over[128] = "";
    if (next_micro > 0)
        snprintf(over, sizeof over, "; a micro-batch of %d would need %.2f GiB", next_micro, gib(next));
    ACCEL_INFO("micro-batch plan: limit %.2f GiB per rank (%s); micro-batch %d (estimated peak "
               "%.2f GiB) x grad_accum %d x %d ranks = global batch %d%s", gib(limit), why, micro,
               gib(fit), tr->grad_accum, world, tr->global_batch, over);
    return ACCEL_OK;
}

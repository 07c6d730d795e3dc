/* Memory accounting. What accel stores per rank (parameters fp32, gradients fp32, AdamW moments
 * 2 x fp32 plus a one-byte weight-decay mask, and under ZeRO a separate fp32 master slice):
 *   ddp    params 4P + grads 4P + moments 8P (+ mask 1P)              = 16P (17P)
 *   zero1  params 4P + grads 4P + (master 4 + grads 4 + moments 8)P/N
 *   zero2  params 4P + (master 4 + grads 4 + moments 8)P/N + layers in flight
 *   zero3  (master 4 + grads 4 + moments 8)P/N + gathered layers and gradients in flight
 * The ZeRO paper counts 16-bit parameters and gradients (2P each) for mixed precision: 16P, 4P+12P/N,
 * 2P+14P/N, 16P/N; it is printed alongside. P includes the per-layer padding to a multiple of N.
 * Activations are the model's (activation_bytes: what it keeps for backward, train.recompute
 * included). LoRA (lora.rank, src/train/lora.c) keeps the model's weights whole, the adapted
 * layers' base rows and gradients, 4P + 8Pt (plus the vectors' and embeddings' gradients), and the
 * adapters (Pa elements) as ddp or ZeRO keep a model. */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/hf.h"
#include "accel/memory.h"
#include "../nn/gpt_cuda.h"

static size_t read_kib(const char *path, const char *field)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    size_t kib = 0, n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n)) { kib = (size_t)strtoull(line + n, NULL, 10); break; }
    fclose(f);
    return kib * 1024;
}

size_t accel_memory_resident(void) { return read_kib("/proc/self/status", "VmRSS:"); }
size_t accel_memory_peak(void) { return read_kib("/proc/self/status", "VmHWM:"); }
size_t accel_memory_node_total(void) { return read_kib("/proc/meminfo", "MemTotal:"); }
size_t accel_memory_node_available(void) { return read_kib("/proc/meminfo", "MemAvailable:"); }

accel_status_t accel_memory_gpu_estimate(const accel_config_t *cfg, const accel_layout_t *layout,
                                         accel_strategy_t strategy, int world, int micro, size_t *bytes)
{
    const bool sharded = strategy != ACCEL_DDP;
    size_t numel = layout->numel;
    if (sharded) numel += (size_t)layout->nlayers * (size_t)world * ACCEL_ARENA_ALIGN;
    return accel_gpt_cuda_estimate_bytes(cfg, micro, numel, sharded ? numel / (size_t)world : numel,
                                         sharded, bytes);
}

int accel_memory_grad_accum(const accel_config_t *cfg, int world)
{
    const int mb = cfg->train.micro_batch;
    if (mb > 0 && world > 0 && (int64_t)world * mb <= cfg->train.global_batch)
        return cfg->train.global_batch / (world * mb);
    return cfg->train.grad_accum > 0 ? cfg->train.grad_accum : 1;
}

/* Ranks a DDP gradient allreduce (world) or a ZeRO reduce-scatter (the shard group) spans. */
static double shards_or_world(accel_strategy_t strategy, bool hybrid, int world, int ranks_per_node)
{
    return strategy != ACCEL_DDP && hybrid ? ranks_per_node : world;
}

/* LoRA: the adapters' estimate as a model's, then the frozen model's arenas on top. */
static accel_status_t lora_estimate(const accel_config_t *cfg, const accel_model_ops_t *model,
                                    const accel_layout_t *layout, accel_strategy_t strategy, bool hybrid, int world,
                                    int ranks_per_node, accel_memory_estimate_t *out)
{
    accel_config_t plain = *cfg;
    plain.lora.rank = 0;
    accel_layout_t adapters;
    accel_layout_init(&adapters);
    accel_hf_linear_t *l = NULL;
    char err[1024];
    const int n = accel_hf_linears(&cfg->model, cfg->lora.targets, &l, err, sizeof err);
    accel_status_t st = n < 0 ? n : accel_hf_lora_layout(cfg, layout, &adapters, err, sizeof err);
    if (st == ACCEL_OK)
        st = accel_memory_estimate(&plain, model, &adapters, strategy, hybrid, world, ranks_per_node, out);
    /* The gradients the model writes: the adapted tensors', and those of the frozen ones it does
     * not skip (vectors, the embeddings; src/train/lora.c reserves the arena, pages resident as
     * written); the other matrices' products are skipped. */
    double targets = 0, written = 0;
    for (int i = 0; i < n; i++) targets += (double)(l[i].out * l[i].in);
    for (int i = 0; i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        bool adapted = false;
        for (int k = 0; k < n && !adapted; k++) adapted = !strcmp(l[k].accel, t->name);
        if (adapted || t->ndim < 2 || !strcmp(t->name, "wte") || !strcmp(t->name, "wpe")) written += (double)t->numel;
    }
    accel_hf_linears_free(l, n);
    accel_layout_free(&adapters);
    if (st != ACCEL_OK) return st;
    const double f = sizeof(float), P = (double)layout->numel;
    out->params += (size_t)(f * (P + targets));
    out->grads += (size_t)(f * written);
    out->total += (size_t)(f * (P + targets + written));
    out->paper_bytes_per_param = 0;
    return ACCEL_OK;
}

accel_status_t accel_memory_estimate(const accel_config_t *cfg, const accel_model_ops_t *model,
                                     const accel_layout_t *layout, accel_strategy_t strategy,
                                     bool hybrid, int world, int ranks_per_node,
                                     accel_memory_estimate_t *out)
{
    memset(out, 0, sizeof *out);
    if (cfg->lora.rank > 0) return lora_estimate(cfg, model, layout, strategy, hybrid, world, ranks_per_node, out);
    if (world < 1 || ranks_per_node < 1 || world % ranks_per_node) return ACCEL_ERR_INVALID;
    int shards = strategy == ACCEL_DDP ? 1 : hybrid ? ranks_per_node : world;
    /* Pad a copy of the table as the ZeRO strategies do. */
    accel_layout_t padded = *layout;
    padded.tensors = malloc(sizeof *padded.tensors * (size_t)(layout->ntensors ? layout->ntensors : 1));
    if (!padded.tensors) return ACCEL_ERR_NOMEM;
    memcpy(padded.tensors, layout->tensors, sizeof *padded.tensors * (size_t)layout->ntensors);
    accel_status_t st = strategy == ACCEL_DDP ? ACCEL_OK
                        : accel_layout_pad_layers(&padded, (size_t)shards * ACCEL_ARENA_ALIGN);
    double P = (double)padded.numel;
    /* The largest layer bounds what ZeRO-2/3 hold in flight. */
    size_t largest = 0;
    for (int l = 0; l < padded.nlayers; l++) {
        size_t lo = (size_t)-1, hi = 0;
        for (int i = 0; i < padded.ntensors; i++)
            if (padded.tensors[i].layer == l) {
                if (padded.tensors[i].offset < lo) lo = padded.tensors[i].offset;
                if (padded.tensors[i].offset + padded.tensors[i].numel > hi)
                    hi = padded.tensors[i].offset + padded.tensors[i].numel;
            }
        if (hi > lo && hi - lo > largest) largest = hi - lo;
    }
    free(padded.tensors);
    if (st != ACCEL_OK) return st;

    const double f = sizeof(float), N = shards;
    /* the moments, and the weight-decay mask: one byte per owned element (src/train/optim.c) */
    const double moments = (strcmp(cfg->optim.name, "adamw") ? 1 : 2) + 1.0 / f;
    const int accum = accel_memory_grad_accum(cfg, world);
    const int micro = cfg->train.global_batch / (world * accum);
    double in_flight = 2.0 * f * (double)largest;           /* current layer + the next one */
    /* The ring collectives keep two blocks (1/N of the buffer each) of scratch per operation in
     * flight: for ddp and zero1 every bucket/layer can be in flight at the end of backward; zero2/3
     * keep at most two layers' reductions in flight (src/train/dist.c). */
    const double ring_all = world > 1 ? 2.0 * f * P / shards_or_world(strategy, hybrid, world, ranks_per_node) : 0;
    const double ring_window = world > 1 ? 2.0 * 2.0 * f * (double)largest / N : 0;
    switch (strategy) {
    case ACCEL_DDP:
        out->params = (size_t)(f * P);
        out->grads = (size_t)(f * P);
        out->optim = (size_t)(moments * f * P);
        out->comm = (size_t)ring_all;                       /* + half-precision staging: */
        if (strcmp(cfg->dist.comm_dtype, "fp32")) out->comm += (size_t)(2 * P);
        if (cfg->train.sync_each_batch && accum > 1) out->comm += (size_t)(f * P);
        out->paper_bytes_per_param = 16;
        break;
    case ACCEL_ZERO1:
        out->params = (size_t)(f * P);
        out->grads = (size_t)(f * P + f * P / N);
        out->master = (size_t)(f * P / N);
        out->optim = (size_t)(moments * f * P / N);
        out->comm = (size_t)ring_all;
        out->paper_bytes_per_param = 4 + 12 / N;
        break;
    case ACCEL_ZERO2:
        out->params = (size_t)(f * P);
        out->grads = (size_t)(f * P / N * (accum > 1 ? 2 : 1) + in_flight);
        out->master = (size_t)(f * P / N);
        out->optim = (size_t)(moments * f * P / N);
        out->comm = (size_t)ring_window;
        out->paper_bytes_per_param = 2 + 14 / N;
        break;
    case ACCEL_ZERO3:
        out->params = (size_t)in_flight;
        out->grads = (size_t)(f * P / N * (accum > 1 ? 2 : 1) + in_flight);
        out->master = (size_t)(f * P / N);
        out->optim = (size_t)(moments * f * P / N);
        out->comm = (size_t)ring_window;
        out->paper_bytes_per_param = 16 / N;
        break;
    }
    out->activations = model->activation_bytes ? model->activation_bytes(cfg, micro > 0 ? micro : 1) : 0;
    /* ckpt.async copies what the rank saves: parameters (ddp) or its master slice, and the moments
     * (src/train/ckpt_writer.c) */
    out->snapshot = 0;
    if (cfg->ckpt.async && cfg->ckpt.dir[0]) {
        const double arenas = strcmp(cfg->optim.name, "adamw") ? 2 : 3;
        out->snapshot = (size_t)(arenas * f * P / (strategy == ACCEL_DDP ? 1 : N));
    }
    out->total = out->params + out->grads + out->master + out->optim + out->activations + out->comm +
                 out->snapshot;
    out->psi = P;
    return ACCEL_OK;
}

accel_status_t accel_memory_plan_micro_batch(const accel_config_t *cfg, const accel_model_ops_t *model,
                                             const accel_layout_t *layout, int world,
                                             int ranks_per_node, size_t limit, int *micro,
                                             accel_memory_estimate_t *fit, int *next_micro,
                                             accel_memory_estimate_t *next)
{
    *micro = *next_micro = 0;
    memset(fit, 0, sizeof *fit);
    memset(next, 0, sizeof *next);
    if (world < 1 || cfg->train.global_batch < world || cfg->train.global_batch % world)
        return ACCEL_ERR_INVALID;
    const int per_rank = cfg->train.global_batch / world;
    accel_config_t c = *cfg;
    /* Candidates from the largest down: the first that fits is the choice, the one before it
     * (the next larger) is what did not. */
    for (int m = per_rank; m >= 1; m--) {
        if (per_rank % m) continue;
        c.train.grad_accum = per_rank / m;
        c.train.micro_batch = m;
        accel_memory_estimate_t e;
        ACCEL_CHECK(accel_memory_estimate(&c, model, layout, cfg->dist.strategy_id, cfg->dist.hybrid,
                                          world, ranks_per_node, &e));
        if (e.total <= limit) {
            *micro = m;
            *fit = e;
            return ACCEL_OK;
        }
        *next_micro = m;
        *next = e;
        *fit = e;
    }
    return ACCEL_ERR_NOMEM;
}

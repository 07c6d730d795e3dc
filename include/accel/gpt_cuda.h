/* The built-in GPT on a CUDA device: a training engine that keeps fp32 master parameters,
 * gradients and optimizer moments in device memory with the SAME tensor table (offsets) as the CPU
 * model, so checkpoints stay device-independent. Matrix products run in cuBLAS with bf16/fp16/fp32
 * operands and fp32 accumulation; LayerNorm statistics, softmax and the loss are computed in fp32.
 * Gradients are reduced with NCCL on a dedicated stream while backward runs (ddp: bucketed
 * allreduce; zero1: per-layer reduce-scatter, update of the owned slice, allgather).
 *
 * The planning functions (accel_gpt_cuda_plan_*, accel_gpt_cuda_check_config) are plain C and work
 * in every build, GPU or not: they are unit tested on machines without a GPU. The engine functions
 * return ACCEL_ERR_UNSUPPORTED when accel was built without CUDA. */
#ifndef ACCEL_GPT_CUDA_H
#define ACCEL_GPT_CUDA_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/dtype.h"
#include "accel/status.h"

/* ------------------------------------------------------------------ planning (host-only C) */

/* Byte offsets (from one device allocation) of every activation and work buffer of a micro-batch
 * of B sequences. Buffers marked "act" hold the compute type (bf16/fp16/fp32), the others fp32.
 * Every offset is a multiple of ACCEL_GPT_CUDA_ALIGN. */
#define ACCEL_GPT_CUDA_ALIGN 256

typedef struct {
    size_t ln1, ln1_mean, ln1_rstd;  /* act [BT,C]; fp32 [BT] x2 */
    size_t qkvp;                     /* act [3][B][NH][T][hs]: q, k, v per head (bias added) */
    size_t att;                      /* act [B][NH][T][T]: softmax probabilities, 0 above diagonal */
    size_t atty;                     /* act [BT,C]: attention output (heads concatenated) */
    size_t res2;                     /* act [BT,C]: residual after attention */
    size_t ln2, ln2_mean, ln2_rstd;
    size_t fch, fch_gelu;            /* act [BT,4C]: MLP pre-activation (bias added), GELU output */
    size_t res3;                     /* act [BT,C]: block output */
} accel_gpt_cuda_layer_plan_t;

typedef struct {
    int L, NH, C, T, V, B;
    int Vp;                          /* row stride of the logits (V rounded up to 64) */
    size_t act_size;                 /* bytes per activation element (2 or 4) */
    size_t layer_bytes;              /* bytes of one layer's stored activations */
    size_t layers_base;              /* offset of layer 0; layer l at layers_base + l*layer_bytes */
    accel_gpt_cuda_layer_plan_t layer; /* offsets relative to the layer's base */
    size_t x0, lnf, lnf_mean, lnf_rstd, logits;
    size_t s_qkv;                    /* act [BT,3C]: qkv product; d(qkv) in backward */
    size_t s_c;                      /* act [BT,C]: proj / fc-proj products; d(ln) in backward */
    size_t s_4c;                     /* act [BT,4C]: d(fch) in backward */
    size_t s_yp;                     /* act [B,NH,T,hs]: y per head; dy per head in backward */
    size_t s_dqkvp;                  /* act [3][B][NH][T][hs]: dq, dk, dv per head */
    size_t s_att32;                  /* fp32 [B,NH,T,T]: scores; dP in backward */
    size_t s_datt;                   /* act [B,NH,T,T]: dS in backward */
    size_t dres;                     /* act [BT,C]: d(loss)/d(residual) */
    size_t losses;                   /* fp32 [BT]: per-token losses */
    size_t total;                    /* bytes of the whole allocation */
} accel_gpt_cuda_plan_t;

/* Lay out the buffers for dims (L, NH, C, T, V), micro-batch B and activation element size
 * (2 for bf16/fp16, 4 for fp32). ACCEL_ERR_INVALID when a dimension is out of range or a matrix
 * dimension would not fit the int that cuBLAS takes. */
accel_status_t accel_gpt_cuda_plan(int L, int NH, int C, int T, int V, int B, size_t act_size,
                                   accel_gpt_cuda_plan_t *plan);

/* A group of consecutive layers whose gradients are reduced by one collective. Layers complete in
 * backward order (highest id first), so a bucket is ready when its lowest layer is done. */
typedef struct {
    int first_layer, last_layer;     /* layer ids, first <= last */
    size_t begin, end;               /* arena elements [begin, end) */
} accel_gpt_cuda_bucket_t;

/* The span [begin, end) of arena elements of every layer 0..nlayers-1 of the layout, rounded up to
 * `multiple` elements at the end (ZeRO pads layers that way); a layer with no tensor gets
 * begin = end = 0. ACCEL_ERR_INVALID when a tensor belongs to no layer or layers interleave. */
accel_status_t accel_gpt_cuda_plan_layer_spans(const accel_layout_t *layout, size_t multiple,
                                               size_t *begin, size_t *end);

/* Buckets of whole layers, from the highest layer down, each closed once it holds at least
 * bucket_bytes of fp32 gradients (the last one takes what is left). Writes at most nlayers buckets
 * to out and returns how many. Layers with an empty span are folded into a neighbour. */
int accel_gpt_cuda_plan_buckets(const size_t *begin, const size_t *end, int nlayers,
                                size_t bucket_bytes, accel_gpt_cuda_bucket_t *out);

/* 1-D launch geometry: blocks of `block` threads covering n items, capped at max_blocks (grid-stride
 * loops cover the rest); at least one block. */
unsigned accel_gpt_cuda_grid(size_t n, unsigned block, unsigned max_blocks);

/* Device bytes the engine allocates for this configuration (model.*, precision, optim.name) with
 * `micro` samples per micro-batch, an arena of numel elements and owned_n owned elements
 * (sharded: zero1's separate gradient shard). ACCEL_ERR_INVALID when the plan is out of range. */
accel_status_t accel_gpt_cuda_estimate_bytes(const accel_config_t *cfg, int micro, size_t numel,
                                             size_t owned_n, int sharded, size_t *bytes);

/* Whether this job can train on the GPU: the built-in gpt model (no plugin), strategy ddp or zero1
 * without hybrid sharding, precision fp32/bf16/fp16. On refusal writes a message naming the model,
 * strategy or setting (with a "--> hint:") into why and returns ACCEL_ERR_UNSUPPORTED. Settings
 * that are accepted but behave differently on the GPU are described in note (may be empty). */
accel_status_t accel_gpt_cuda_check_config(const accel_config_t *cfg, char *why, size_t whylen,
                                           char *note, size_t notelen);

/* ------------------------------------------------------------------ the engine */

typedef struct accel_gpt_cuda accel_gpt_cuda_t;

/* A piece of the rank's owned vector: arena elements [begin, end) stored at `owned`. */
typedef struct {
    size_t begin, end, owned;
} accel_gpt_cuda_range_t;

typedef struct {
    const accel_config_t *cfg;       /* model.*, precision, dist.bucket_mb, dist.timeout */
    const accel_layout_t *layout;    /* the CPU model's table (padded for ZeRO when sharded) */
    int micro;                       /* samples per micro-batch (the most any call passes) */
    int grad_accum;                  /* micro-batches per optimizer step */
    int sharded;                     /* 0: ddp (owned = the whole arena), 1: zero1 */
    const accel_gpt_cuda_range_t *ranges; /* owned ranges (ddp: one covering the arena) */
    int nranges;
    size_t owned_n;                  /* elements of the owned vector */
    const unsigned char *decay_mask; /* owned_n bytes: 1 where weight decay applies */
    int adam;                        /* 1: AdamW (moments m and v), 0: SGD with momentum (m) */
    MPI_Comm comm;                   /* the data-parallel ranks (NCCL is bootstrapped from it) */
} accel_gpt_cuda_config_t;

/* One optimizer update's hyper-parameters, as the CPU optimizer computes them. */
typedef struct {
    float lr, beta1, beta2, eps, weight_decay, momentum;
    float bias_corr1, bias_corr2;    /* 1 - beta^step (AdamW) */
    float grad_mul;                  /* gradients are multiplied by this first (unscale, clip) */
} accel_gpt_cuda_update_t;

/* Select nothing: the calling rank's device must already be current (accel_device_select). */
accel_status_t accel_gpt_cuda_create(const accel_gpt_cuda_config_t *cfg, accel_gpt_cuda_t **out);
void accel_gpt_cuda_destroy(accel_gpt_cuda_t *g);

/* Host state -> device: the full fp32 parameter arena (layout->numel) and the owned moments
 * (owned_n each; v may be NULL for SGD). */
accel_status_t accel_gpt_cuda_upload(accel_gpt_cuda_t *g, const float *params, const float *m,
                                     const float *v);
/* Device state -> host (waits for the device): full parameters into params (may be NULL), the
 * owned slices of the parameters into owned_params (may be NULL), moments into m and v. */
accel_status_t accel_gpt_cuda_download(accel_gpt_cuda_t *g, float *params, float *owned_params,
                                       float *m, float *v);

/* Micro-batch k of K: n rows of context+1 token ids (host memory, any kind). Forward and backward,
 * gradients (times grad_scale, like the CPU model's contract) added into the device arena; on the
 * last micro-batch the gradient reduction is started as layers finish. Asynchronous: the loss is
 * delivered by accel_gpt_cuda_finish_grads. */
accel_status_t accel_gpt_cuda_forward_backward(accel_gpt_cuda_t *g, const int32_t *tokens, int n,
                                               int k, int K, float grad_scale);

/* After the last micro-batch: wait for the gradient reductions (bounded by dist.timeout, a hung
 * collective aborts the job naming it) and return this rank's summed per-sample loss, the sum of
 * squares of its share of the reduced gradients, how many ranks hold each share, and whether its
 * share is finite. */
accel_status_t accel_gpt_cuda_finish_grads(accel_gpt_cuda_t *g, double *loss_sum, double *sumsq,
                                           int *replicas, int *finite);

/* Apply one optimizer update to the owned state and bring every rank's parameters up to date. */
accel_status_t accel_gpt_cuda_step(accel_gpt_cuda_t *g, const accel_gpt_cuda_update_t *u);

/* Make this rank's share of the gradients NaN (tests: an injected fp16 overflow). */
accel_status_t accel_gpt_cuda_poison_grads(accel_gpt_cuda_t *g);

/* Forward only: per-sample mean token loss of n rows into loss[n]. */
accel_status_t accel_gpt_cuda_eval(accel_gpt_cuda_t *g, const int32_t *tokens, int n, float *loss);

/* The vocabulary logits that follow the last of ntokens (1..context) tokens into out_logits[vocab]
 * (for text generation on the device). */
accel_status_t accel_gpt_cuda_logits(accel_gpt_cuda_t *g, const int32_t *tokens, int ntokens,
                                     float *out_logits);

/* Tests: one forward+backward of n rows from zeroed gradients with grad_scale, no communication;
 * the fp32 gradient arena (layout->numel) into grads and the summed per-sample loss. */
accel_status_t accel_gpt_cuda_gradients(accel_gpt_cuda_t *g, const int32_t *tokens, int n,
                                        float grad_scale, float *grads, double *loss_sum);

/* Bytes this rank handed to collectives, and seconds the gradient reduction was exposed after the
 * last backward kernel was queued (waited for by finish_grads). */
size_t accel_gpt_cuda_bytes_sent(const accel_gpt_cuda_t *g);
double accel_gpt_cuda_exposed_seconds(const accel_gpt_cuda_t *g);
/* Device bytes allocated by the engine. */
size_t accel_gpt_cuda_device_bytes(const accel_gpt_cuda_t *g);
/* Mean device time per optimizer step, in ms, from CUDA events on the compute stream: the first
 * micro-batch's forward (through the loss), all micro-batches' forward+backward, the update. */
void accel_gpt_cuda_timing(accel_gpt_cuda_t *g, double *fwd_ms, double *fb_ms, double *opt_ms);

#endif

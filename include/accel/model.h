/* The model interface: one table of functions serves the built-in models and user plugins
 * (a shared library exporting `accel_model_plugin`, loaded with model.plugin=path.so). */
#ifndef ACCEL_MODEL_H
#define ACCEL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/device.h"
#include "accel/status.h"

/* Layer hooks: how a model lets accel overlap communication with compute. A layer is the tensor
 * table's layer id (the unit of ZeRO-3 gathering and of gradient buckets).
 *   fetch       before the model reads a layer's parameters (forward, or backward when backward=1):
 *               under ZeRO-3 the layer is gathered here, and the next one prefetched
 *   release     after the model's last read of the layer's parameters in this pass
 *   grads_done  once every gradient of the layer is final for the micro-batch: its reduction starts
 *   progress    now and then inside a layer (after each large product): MPI moves the reductions
 *               in flight only inside MPI calls, so a pass that calls it only between layers
 *               leaves part of the last ones' traffic to wait for after backward
 * Models call them through accel_batch_layer_* and accel_batch_progress; a model that calls
 * fetch/release sets fetches_layers in its ops (ZeRO-3 needs it). */
typedef struct {
    void (*fetch)(void *ctx, int layer, int backward);
    void (*release)(void *ctx, int layer);
    void (*grads_done)(void *ctx, int layer);
    void *ctx;
    void (*progress)(void *ctx);    /* last, so plugins built before it still line up */
} accel_layer_hooks_t;

/* A micro-batch on one rank: n samples. Classification models read `inputs` (n x sample_dim floats)
 * and `targets` (n labels); language models read `tokens` (n x (context+1) ids) and, when the data
 * has one, `loss_mask` (laid out as tokens: loss_mask[i*(context+1) + t+1] = 0 means the target
 * tokens[i*(context+1) + t+1] is context, not trained: its loss and gradient are 0). */
typedef struct {
    int n;
    const float *inputs;
    const int32_t *targets;
    const int32_t *tokens;
    const int64_t *index;           /* global sample index of each sample */
    const accel_layer_hooks_t *hooks; /* may be NULL */
    const uint8_t *loss_mask;       /* NULL: every target is trained (ABI 5) */
    /* Packed documents (data.document_mask), Hugging Face's position_ids: positions[i*context + t]
     * is input token t's position in its document, 0 where a document begins, else one more than
     * token t-1's; a token attends to its document's tokens only (the `positions[..]` before it and
     * itself). NULL: 0..context-1, the whole sample one sequence. Read by the built-in gpt and
     * llama, CPU and GPU (accel_model_create refuses data.document_mask for other models). */
    const int32_t *positions;
} accel_batch_t;

static inline void accel_batch_layer_fetch(const accel_batch_t *batch, int layer, int backward)
{
    if (batch && batch->hooks && batch->hooks->fetch) batch->hooks->fetch(batch->hooks->ctx, layer, backward);
}

static inline void accel_batch_layer_release(const accel_batch_t *batch, int layer)
{
    if (batch && batch->hooks && batch->hooks->release) batch->hooks->release(batch->hooks->ctx, layer);
}

static inline void accel_batch_layer_done(const accel_batch_t *batch, int layer)
{
    if (batch && batch->hooks && batch->hooks->grads_done) batch->hooks->grads_done(batch->hooks->ctx, layer);
}

static inline void accel_batch_progress(const accel_batch_t *batch)
{
    if (batch && batch->hooks && batch->hooks->progress) batch->hooks->progress(batch->hooks->ctx);
}

typedef struct accel_model_ops accel_model_ops_t;

typedef struct {
    const accel_model_ops_t *ops;
    void *state;                    /* model-private */
    accel_layout_t layout;          /* parameter table */
    int vocab, context;             /* language models (ops->logits set): model.vocab, model.context */
} accel_model_t;

/* Plugins set .abi = ACCEL_MODEL_ABI; accel refuses a plugin built against another version of this
 * interface instead of crashing in it. ABI 12: accel_config_t (which create() reads) grew
 * model.attention_output_gate and the gated delta-nets' model.linear_* keys in its middle, moving
 * every field after them (11: model.norm, model.norm_bias, model.mlp, model.mlp_bias,
 * model.parallel_block and model.head_bias; 10: the
 * query temperature's keys, the router's group score, optim.router_bias_update; 9: LongRoPE's
 * factor lists, 8: DeepSeek-V3's routing keys, 7: gpt-oss's, 6: OLMo 3's, SmolLM3's, Granite's
 * and Gemma's). */
#define ACCEL_MODEL_ABI 12

struct accel_model_ops {
    unsigned abi;                   /* ACCEL_MODEL_ABI */
    const char *name;
    int fetches_layers;             /* 1: calls accel_batch_layer_fetch/release around parameter use */
    int consumes_tokens;            /* 1: reads batch->tokens (language model); 0: inputs + targets */
    /* Read sizes from cfg, register parameters into layout, allocate private state. */
    accel_status_t (*create)(const accel_config_t *cfg, accel_layout_t *layout, void **state);
    /* Forward and backward over a micro-batch: returns the SUM of per-sample losses in *loss_sum,
     * and ADDS grad_scale * d(loss_sum)/d(params) into grads (callers pass 1/global_batch). A
     * language model's sample loss is the sum of its trained targets' token losses over context
     * (the mean token loss when every target is trained). */
    accel_status_t (*forward_backward)(void *state, const accel_layout_t *layout,
                                       const float *params, float *grads,
                                       const accel_batch_t *batch, float grad_scale,
                                       double *loss_sum);
    /* Forward only: per-sample losses into loss[n] and, for classifiers, correct[n] (may be NULL). */
    accel_status_t (*eval)(void *state, const accel_layout_t *layout, const float *params,
                           const accel_batch_t *batch, float *loss, int *correct);
    void (*destroy)(void *state);
    /* Optional: bytes of activations and work buffers a forward+backward of micro_batch samples
     * keeps (for accel estimate-memory). */
    size_t (*activation_bytes)(const accel_config_t *cfg, int micro_batch);
    /* Optional (language models; NULL otherwise): the vocabulary logits that follow the last of
     * ntokens tokens (1 <= ntokens <= context) into out_logits[vocab]. */
    accel_status_t (*logits)(void *state, const accel_layout_t *layout, const float *params,
                             const int32_t *tokens, int ntokens, float *out_logits);
    /* Optional (language models; added in ABI 3): the logits that follow each of the tokens
     * first..ntokens-1 of one sequence (0 <= first < ntokens <= context) into
     * out_logits[(ntokens - first) x vocab], calling the layer hooks (may be NULL) around every
     * use of a layer's parameters, so that weights can live outside one resident arena (big-model
     * inference streams them layer by layer, include/accel/infer.h). Forward only: the model may
     * keep one layer's activations at a time. `logits` gives the same values as first = ntokens-1
     * with no hooks. */
    accel_status_t (*logits_range)(void *state, const accel_layout_t *layout, const float *params,
                                   const int32_t *tokens, int ntokens, int first,
                                   float *out_logits, const accel_layer_hooks_t *hooks);
    /* Optional, with logits_range: bytes of the buffers logits_range uses for a sequence of the
     * full context (counted in an inference memory budget). */
    size_t (*logits_bytes)(const accel_config_t *cfg);
    /* Optional (language models; added in ABI 4), the KV cache of generation: the logits that
     * follow the last of ntokens tokens of one sequence into out_logits[vocab], where the first
     * `cached` tokens (0 <= cached < ntokens) are those the previous logits, logits_range or
     * logits_cached call on this state was given, with the same parameters: their keys and values
     * are reused and only positions cached..ntokens-1 are computed (one token's work per new
     * token). cached = 0 starts afresh. Hooks as in logits_range. Equals logits_range's last row
     * within float rounding. The cache is the model's: logits_bytes counts it. */
    accel_status_t (*logits_cached)(void *state, const accel_layout_t *layout, const float *params,
                                    const int32_t *tokens, int ntokens, int cached,
                                    float *out_logits, const accel_layer_hooks_t *hooks);
    /* 1: honours batch->loss_mask (added in ABI 5); the trainer refuses masked data otherwise. */
    int reads_loss_mask;
};

/* Built-in models by name ("mlp", "gpt", "llama"), or a plugin when cfg->model.plugin is set. */
accel_status_t accel_model_create(const accel_config_t *cfg, accel_model_t *model);
/* The same model computing on `device`: its parameters, gradients and batches' work live in that
 * device's memory (the trainer keeps them there). A model without a path for the device is refused
 * with a message naming it (ACCEL_ERR_UNSUPPORTED); accel_model_runs_on asks first, quietly, and
 * says why not in why[whylen]. */
accel_status_t accel_model_create_on(const accel_config_t *cfg, accel_device_kind_t device,
                                     accel_model_t *model);
bool accel_model_runs_on(const accel_config_t *cfg, accel_device_kind_t device, char *why,
                         size_t whylen);
void accel_model_destroy(accel_model_t *model);

/* Text generation with a model that has a `logits` op: append nnew tokens to the prompt
 * (nprompt >= 1 ids) and write them to out[nnew]. The model sees at most its context: the most
 * recent tokens. temperature == 0 picks the argmax (greedy, lowest id on ties); otherwise it samples
 * from softmax(logits / temperature) restricted to the top_k most likely ids (top_k <= 0: all),
 * drawing from the keyed RNG (seed, ACCEL_RNG_SAMPLE), so a seed always gives the same text. */
accel_status_t accel_model_generate(const accel_model_t *m, const float *params,
                                    const int32_t *prompt, int nprompt, int nnew, float temperature,
                                    int top_k, uint64_t seed, int32_t *out);

/* The token accel_model_generate picks from logits[V] for new token number `step` (0, 1, ...):
 * the argmax when temperature == 0, else a draw from the keyed RNG (seed, ACCEL_RNG_SAMPLE, step)
 * over softmax(logits / temperature) restricted to the top_k most likely ids (top_k <= 0: all).
 * For loops that compute logits themselves (accel_generate with streamed weights). */
accel_status_t accel_model_pick_token(const float *logits, int V, float temperature, int top_k,
                                      uint64_t seed, int step, int32_t *token);

/* How many of the tokens of a generation window the model may take from its KV cache: the
 * window holds tokens start..start+n-1 of a sequence, the previous pass held
 * prev_start..prev_start+prev_n-1 (prev_n = 0: none). Positions shift when the window slides,
 * so only a window that kept its start and grew reuses the cache. */
static inline int accel_kv_reusable(int prev_start, int prev_n, int start, int n)
{
    return prev_n > 0 && start == prev_start && n > prev_n ? prev_n : 0;
}

extern const accel_model_ops_t accel_model_mlp;
extern const accel_model_ops_t accel_model_gpt;
extern const accel_model_ops_t accel_model_llama;
extern const accel_model_ops_t accel_model_gpt_cuda;   /* the gpt's layers on a CUDA device */
extern const accel_model_ops_t accel_model_llama_cuda; /* the llama's layers on a CUDA device */

#endif

/* Mixture of experts for the CPU decoder (src/nn/decoder.c): the MLP half of a Mixtral, Qwen3-MoE,
 * Qwen2-MoE, gpt-oss or GLM-4.5 block. A router (a linear map to E logits, then a softmax, or each
 * logit's sigmoid as DeepSeek-V3's, in fp32) scores the experts and sends each token to the K best
 * (by score, plus DeepSeek-V3's selection bias, within its best groups when grouped), each a gated
 * MLP (SwiGLU, or gpt-oss's clamped one, with biases for gpt-oss), or a plain one, down(act(up))
 * (Nemotron-H's squared ReLU), with its own weights; the token's output is the sum of those
 * experts' outputs weighted by their scores (renormalized to sum 1 when norm_topk, times scale;
 * Llama 4 weighs each expert's input instead),
 * plus, with a shared expert, an MLP of the same kind every token runs, scaled by the sigmoid of a
 * learned gate (Qwen2-MoE) or as it is (DeepSeek-V3, Nemotron-H). With a latent (Nemotron 3
 * Super's LatentMoE), the routed experts read the rows projected down to it and their weighted sum
 * is projected back up; the router and the shared expert read the rows as they are.
 * Tokens are grouped by expert so each expert runs two dense products over its rows, as
 * transformers' MixtralExperts does. Internal to libaccel. */
#ifndef ACCEL_NN_EXPERTS_H
#define ACCEL_NN_EXPERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/status.h"
#include "gemm_cpu.h"
#include "kernels_cpu.h"

typedef struct {
    int E, K;                       /* experts, experts per token */
    int C, F;                       /* width, each expert's hidden width */
    bool norm_topk;                 /* the K weights divided by their sum */
    int S;                          /* the shared expert's hidden width (0: none) */
    accel_glu_t act;                /* gated experts' activation (the shared expert's: SwiGLU) */
    bool bias;                      /* router and expert biases (gpt-oss) */
    bool sigmoid;                   /* scores: each logit's sigmoid (else a softmax over them) */
    bool select_bias;               /* a fixed bias on the scores that choose (not weigh) experts */
    int groups, topk_groups;        /* experts chosen from each row's topk_groups best of `groups`
                                     * equal groups, a group scored by its two best (1, 1: none) */
    bool group_max;                 /* ... or by its best (DeepSeek-V2's group_limited_greedy) */
    float scale;                    /* the chosen experts' weights times this */
    float norm_eps;                 /* sigmoid scores: added to the sum norm_topk divides by */
    bool shared_gate;               /* the shared expert's output gated (Qwen2-MoE), else added */
    bool loads;                     /* the backward pass adds each expert's load less the mean to
                                     * the selection bias's gradient slot (optim.router_bias_update) */
    bool plain;                     /* plain experts (and shared expert): down(act(up)) ... */
    accel_act_kind_t plain_act;     /* ... with this activation */
    int latent;                     /* the routed experts' input and output width (0: C, no latent) */
    bool input_scaled;              /* each slot's weight multiplies the expert's input row, and the
                                     * outputs are summed as they are (Llama 4) */
} accel_moe_dims_t;

/* What a forward pass over R rows keeps for its backward pass. The per-row arrays are indexed by
 * row; the assignment arrays (R K of them, each a (row, slot) pair) are grouped by expert. */
typedef struct {
    float *probs;                   /* [R, E] the router's scores (softmax or sigmoid) */
    float *weight;                  /* [R, K] each slot's weight (renormalized when norm_topk, scaled) */
    int32_t *expert;                /* [R, K] each slot's expert, most probable first */
    int32_t *order;                 /* [R K] assignments r K + k, grouped by expert, rows ascending */
    int32_t *start;                 /* [E + 1] expert e's assignments: order[start[e] .. start[e+1]) */
    float *xs;                      /* [R K, C] each assignment's input row, in that order (a
                                     * copy of x, times its weight with input_scaled: the backward
                                     * pass gathers it again) */
    float *h;                       /* [R K, 2F] its [gate | up] product (plain: [R K, F], act'(up)) */
    float *hid;                     /* [R K, F] act(gate) * up (plain: act(up)) */
    float *ys;                      /* [R K, C] its expert's output, before the weight (C: the
                                     * experts' width, the latent's with one) */
    float *xl, *yl;                 /* latent: [R, latent] the rows projected down, and the experts'
                                     * weighted sum before the projection up */
    float *sh, *shid, *sy, *sg;     /* shared expert: [R, 2S] [gate | up] (plain: [R, S]), [R, S] hidden, [R, C]
                                     * output, [R] its gate's sigmoid (S = 0 or no gate: unused) */
} accel_moe_acts_t;

/* The width the routed experts read and write: the latent's, else the model's. */
static inline int accel_moe_width(const accel_moe_dims_t *d) { return d->latent ? d->latent : d->C; }

/* The width of an expert's first product, 2F (gate | up) or F (plain), and the shared expert's. */
static inline int accel_moe_in_width(const accel_moe_dims_t *d) { return d->plain ? d->F : 2 * d->F; }
static inline int accel_moe_shared_in_width(const accel_moe_dims_t *d) { return d->plain ? d->S : 2 * d->S; }

/* Weights of one block: router [E, C]; gate_up [E, 2F, W] (expert e's rows [gate | up]; plain: [E, F, W]);
 * down [E, W, F] (W = accel_moe_width); the shared expert's shared_gate_up [2S, C], shared_down
 * [C, S] and its gate [1, C] (NULL without one); with bias, router_b [E], gate_up_b [E, 2F], down_b
 * [E, C]; with select_bias, select_b [E] (no gradient: it only chooses); with a latent, latent_in
 * [latent, C] and latent_out [C, latent]. */
typedef struct {
    const float *router, *gate_up, *down;
    const float *shared_gate_up, *shared_down, *shared_gate;
    const float *router_b, *gate_up_b, *down_b;
    const float *select_b;
    const float *latent_in, *latent_out;
} accel_moe_weights_t;

/* The weights' gradients, laid out as accel_moe_weights_t (added to). A weight matrix's NULL: its
 * gradient is not wanted (a frozen base), its product skipped. */
typedef struct {
    float *router, *gate_up, *down;
    float *shared_gate_up, *shared_down, *shared_gate;
    float *router_b, *gate_up_b, *down_b;
    float *select_b;                /* with loads: the rows' assignments per expert, less R K / E */
    float *latent_in, *latent_out;
} accel_moe_grads_t;

/* Forward over R rows of x [R, C]: routing and every expert's rows into a; with out != NULL,
 * out[r] = the sum over r's slots of weight * ys, in expert order, plus sg * sy with a shared
 * expert (as transformers sums them, before the residual). */
accel_status_t accel_moe_forward(accel_gemm_cpu_t *g, const accel_moe_dims_t *d,
                                 const accel_moe_weights_t *w, const accel_moe_acts_t *a,
                                 const float *x, size_t R, float *out);

/* Floats of the scratch accel_moe_backward takes for R rows. */
size_t accel_moe_scratch_floats(const accel_moe_dims_t *d, size_t R);

/* Backward: dout [R, C] (d of out) into dx [R, C] (overwritten: d of x) and the weights'
 * gradients (added). aux_grad[E] (NULL: none) is added to d(loss)/d(probs) of every row: the
 * load-balancing loss's gradient. */
accel_status_t accel_moe_backward(accel_gemm_cpu_t *g, const accel_moe_dims_t *d,
                                  const accel_moe_weights_t *w, const accel_moe_acts_t *a,
                                  const float *x, size_t R, const float *dout, const float *aux_grad,
                                  float *dx, const accel_moe_grads_t *dw, float *scratch);

/* Adds the forward's routing of R rows to count[E] (assignments per expert) and psum[E] (sum of
 * probabilities): the statistics of the load-balancing loss. */
void accel_moe_route_stats(const accel_moe_dims_t *d, const accel_moe_acts_t *a, size_t R,
                           double *count, double *psum);

#endif

/* Model FLOPs utilisation (MFU): the FLOPs a training step does by the llm.c/PaLM convention and
 * the peak of the device they run on (private to libaccel; the trainer prints both). */
#ifndef ACCEL_TRAIN_FLOPS_H
#define ACCEL_TRAIN_FLOPS_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/config.h"
#include "accel/dtype.h"
#include "accel/status.h"

/* Training FLOPs (forward + backward) per token of a language model, or per sample of any other
 * model. model: "gpt", "llama", "mlp", or anything else (a plugin). nparams: every parameter,
 * the embeddings included (tied ones once); layers, context: model.layers/context; att_width:
 * the attention width, heads x head_dim (model.width unless model.head_dim is set). */
double accel_flops_per_unit(const char *model, bool tokens_model, size_t nparams, int layers,
                            int att_width, int context);

/* The parameters one token's products use: all of them, except in a mixture of experts, where a
 * token runs model.experts_per_token of each block's model.experts expert MLPs (the 6N of the
 * count above is over the active N, as for Mixtral's "12.9B active of 46.7B"). */
size_t accel_flops_active_params(const accel_config_t *cfg, size_t nparams);

/* The layers that attend (the count's L): all of them but model.mlp_only_layers, and with
 * model.linear_attention_pattern=N every N-th only, the others gated delta-nets, and with
 * model.short_conv_kernel=K or model.mamba_heads those of model.attention_layers, the others short
 * convolutions or Mamba-2. Those have no attention scores; a delta-net's recurrence costs about 6
 * key x value dims a value head per token forward (the state's decay and update, S^T k, S^T q), 18
 * with the backward pass (a Mamba-2 layer's alike, with model.mamba_heads: state x head values a
 * head); a convolution 2 K width forward, 6 K width with it: accel_flops_recurrence's per-token
 * FLOPs. */
int accel_flops_attention_layers(const accel_config_t *cfg);
double accel_flops_recurrence(const accel_config_t *cfg);

/* Dense peak TFLOP/s of a CUDA GPU, by the name the driver reports (cudaDeviceProp.name), for
 * products in `dtype` (fp32: plain fp32, accel does not enable TF32). 0 when the GPU is not in the
 * table. *label (may be NULL) gets the table row's name. */
double accel_flops_gpu_peak(const char *device_name, accel_dtype_t dtype, const char **label);

/* One rank's measured peak TFLOP/s of the CPU products the models use in `dtype` (accel_gemm_cpu
 * at the BLAS threads already set, `threads` of them): the best of repeated square products over
 * about `seconds`. *size and *reps (may be NULL) get the product's size and how many ran. */
accel_status_t accel_flops_cpu_peak(accel_dtype_t dtype, int threads, double seconds, double *tflops,
                                    int *size, int *reps);

#endif

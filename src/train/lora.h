/* LoRA fine-tuning inside the trainer (src/train/lora.c): the base model frozen, a low-rank adapter
 * trained on each targeted linear layer, as PEFT's LoRA.
 *
 * The adapters are the trained state: their tensors (per module, PEFT's names: A [r, in] and
 * B [out, r]) make a layout of their own, and the distributed state, the optimizer and checkpoints
 * work on it as they do on a whole model. The model itself reads one arena of its own layout,
 * W0 + scale B A on the targets and W0 elsewhere, and writes its full gradients into another; the
 * adapters' gradients follow by the chain rule, dA = scale B^T dW and dB = scale dW A^T, summed over
 * micro-batches and ranks like any gradient (the map is linear, so projecting before the sum is
 * exact). W0 + scale B A is the forward pass of PEFT's LoRA without dropout. */
#ifndef ACCEL_TRAIN_LORA_H
#define ACCEL_TRAIN_LORA_H

#include <stdbool.h>
#include <stddef.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/status.h"

typedef struct accel_lora accel_lora_t;

/* The adapters lora.targets selects among the linear layers of the model (model.name gpt or llama)
 * whose tensor table is `model`, with their layout (A initialised as PEFT's Kaiming-uniform in
 * variance, B zero, both from the keyed RNG) and the model's arenas. Every tensor of `model` but
 * the adapted weights is marked ACCEL_TENSOR_FROZEN: the model may skip their gradients. `model`
 * must outlive the adapters. */
accel_status_t accel_lora_create(const accel_config_t *cfg, accel_layout_t *model, accel_lora_t **out);
void accel_lora_destroy(accel_lora_t *l);

accel_layout_t *accel_lora_layout(accel_lora_t *l);     /* the adapters' tensors */
float *accel_lora_params(accel_lora_t *l);      /* the arena the model reads (its layout) */
float *accel_lora_grads(accel_lora_t *l);       /* the arena it writes its gradients into */
/* Zeroes the adapted weights' gradients in it before a micro-batch: the only ones read. The model
 * may still add to a frozen tensor's (a norm's, the embedding's), which nobody reads, and the pages
 * of those it skips (the head, the experts) are never touched. */
void accel_lora_zero_grads(accel_lora_t *l);
size_t accel_lora_targets(const accel_lora_t *l, size_t *elements); /* modules adapted, their weights' elements */
float accel_lora_scale(const accel_lora_t *l);

/* A PEFT adapter directory's factors into adapters (the adapters' arena): it must adapt exactly the
 * modules chosen, with lora.rank and lora.alpha's scale, to continue its training. */
accel_status_t accel_lora_read_adapter(accel_lora_t *l, const char *dir, float *adapters);

/* The base weights were just written into accel_lora_params: keep the targets' rows as W0. */
accel_status_t accel_lora_base_loaded(accel_lora_t *l);
/* accel_lora_params = W0 + scale B A on every target, from the adapters' arena. */
void accel_lora_merge(accel_lora_t *l, const float *adapters);
/* adapter_grads += the adapters' gradients from the model's gradients in accel_lora_grads. */
void accel_lora_project(accel_lora_t *l, const float *adapters, float *adapter_grads);

#endif

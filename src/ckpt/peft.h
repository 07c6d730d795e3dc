/* PEFT LoRA adapters (https://github.com/huggingface/peft), the one owner of their format: a
 * directory with adapter_config.json and adapter_model.safetensors, read to be merged into the
 * base model's weights as they are read, W + scale B A (DoRA: rows rescaled), as PEFT's
 * merge_and_unload computes it; and the low-rank factors an exported adapter is made of. hf.c
 * matches the adapter's modules to the base model's tensors and writes exports. Local, no MPI. */
#ifndef ACCEL_CKPT_PEFT_H
#define ACCEL_CKPT_PEFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/safetensors.h"
#include "accel/status.h"

#define ACCEL_PEFT_NAME_MAX 256

typedef enum {
    PEFT_LORA,                      /* a linear layer's A [r, in] and B [out, r] */
    PEFT_EMBEDDING,                 /* an embedding's A [r, vocab] and B [width, r]: (B A) transposed */
    PEFT_FULL                       /* a whole tensor in place of the base's (modules_to_save, a
                                     * saved base_layer, bias = "all") */
} accel_peft_kind_t;

typedef struct {
    char name[ACCEL_PEFT_NAME_MAX]; /* LoRA: the module as PEFT names it without "base_model.model."
                                     * (model.layers.0.self_attn.q_proj); full: the tensor (lm_head.weight) */
    accel_peft_kind_t kind;
    const accel_st_tensor_t *a, *b; /* LoRA: A and B; full: a alone */
    const accel_st_tensor_t *mag;   /* DoRA (use_dora): the magnitude of each output row [out], else NULL */
    double scale;                   /* lora_alpha / r (alpha_pattern's alpha), / sqrt(r) with use_rslora */
    double alpha;                   /* ... its alpha (experts' scale: accel_peft_merge_expert) */
} accel_peft_module_t;

typedef struct accel_peft accel_peft_t;

/* True when dir holds adapter_config.json and no config.json (a model directory wins). */
bool accel_peft_is_adapter(const char *dir);

/* Open and check an adapter directory: peft_type LORA without the variants merging cannot give
 * (DoRA, LoRA biases, ...), every tensor's name one PEFT saves, A and B of each module alike in
 * rank and float. Not logged: err receives the reason. */
accel_status_t accel_peft_open(const char *dir, accel_peft_t **out, char *err, size_t errlen);
void accel_peft_close(accel_peft_t *p);
const char *accel_peft_dir(const accel_peft_t *p);
const accel_st_t *accel_peft_file(const accel_peft_t *p);
int accel_peft_count(const accel_peft_t *p);
const accel_peft_module_t *accel_peft_module(const accel_peft_t *p, int i);

/* The base model's directory: `base` when given, else adapter_config.json's base_model_name_or_path
 * as a directory (as it is, or beside the adapter), else that hub id's snapshot in the Hugging Face
 * cache ($HF_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub or ~/.cache/huggingface/hub;
 * the revision adapter_config.json names, else main). */
accel_status_t accel_peft_base(const accel_peft_t *p, const char *base, char *out, size_t len, char *err,
                               size_t errlen);

/* Adds LoRA module i's scale B A to the base weight w, stored [out, in] (transposed: [in, out], as
 * GPT-2's Conv1D stores it; an embedding's delta is transposed again); with DoRA, each output row
 * of the sum then scaled to its magnitude (PEFT's merge: m / ||W + scale B A|| by row). */
accel_status_t accel_peft_merge(const accel_peft_t *p, int i, float *w, bool transposed);

/* LoRA on a stacked experts parameter (PEFT's target_parameters): A [r E, in] and B [out, r E] hold
 * E experts' factors, expert e's rows e r .. e r + r - 1 of A and columns k E + e of B, scale
 * alpha / r. Adds expert e's scale B_e A_e to w, [out, in] (transposed: [in, out]). */
accel_status_t accel_peft_merge_expert(const accel_peft_t *p, int i, uint64_t e, uint64_t E, float *w,
                                       bool transposed);

/* The best rank-r approximation of d [m, n] (row-major) as B [m, r] A [r, n], d ~ B A, with the
 * singular values split evenly between them (randomized SVD: r + 8 probes, two power iterations,
 * the small problem in double); components of r past the rank are zero. *err: ||d - B A|| / ||d||
 * (Frobenius; 0 when d is 0). */
accel_status_t accel_peft_factor(const float *d, uint64_t m, uint64_t n, int r, float *a, float *b, double *err);

#endif

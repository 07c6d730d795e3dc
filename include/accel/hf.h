/* Hugging Face models <-> accel weights: the one owner of the tensor-name, layout and
 * configuration mapping (src/ckpt/hf.c, driven by one table; docs/huggingface.md). Reads
 * GPT2LMHeadModel and the Llama family (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)
 * from a model directory (config.json + model.safetensors or sharded with
 * model.safetensors.index.json), and writes a directory transformers' from_pretrained loads.
 * Local, no MPI. */
#ifndef ACCEL_HF_H
#define ACCEL_HF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/status.h"

#define ACCEL_HF_NAME_MAX 128

/* One accel tensor of a gpt or llama model (names and shapes as src/nn/decoder.c registers them). */
typedef struct {
    char name[ACCEL_HF_NAME_MAX];
    int ndim;
    uint64_t dims[2];
} accel_hf_tensor_t;

/* accel's tensors of cfg's model (model.name gpt or llama), in registration order. *out is
 * malloc'ed; returns the count, or a negative status. */
int accel_hf_accel_tensors(const accel_model_config_t *m, accel_hf_tensor_t **out);

/* A linear layer of cfg's model as PEFT names it, where a LoRA adapter can sit: its weight is the
 * `out` rows rows[0..out) of the accel tensor `accel` ([*, in]), in the module's output order. */
typedef struct {
    char module[ACCEL_HF_NAME_MAX]; /* model.layers.0.self_attn.q_proj */
    char accel[ACCEL_HF_NAME_MAX];  /* h.0.attn.qkv.weight */
    uint64_t out, in;
    uint64_t *rows;                 /* [out], malloc'ed */
    bool conv1d;                    /* the Hugging Face file stores it [in, out] (GPT-2's Conv1D:
                                     * PEFT's fan_in_fan_out) */
    int entry;                      /* internal */
} accel_hf_linear_t;

/* A LoRA module's factors as accel names them (PEFT's, without "base_model.model."): printf
 * formats of the module's name. */
#define ACCEL_HF_LORA_A "%s.lora_A.weight"
#define ACCEL_HF_LORA_B "%s.lora_B.weight"

/* The linear layers of the blocks (attention, MLP, shared experts: not the embeddings, the head, the
 * MoE routers or stacked experts, which PEFT's LoRA does not adapt either) of cfg's model that `targets` chooses, as PEFT's target_modules does: "all-linear" (or
 * NULL) every one, else names comma-separated, each matching a module it equals or ends in after a
 * dot. In registration order; *out is malloc'ed (free with accel_hf_linears_free). Returns the
 * count, or a negative status with err saying why (a name no layer has: the names there are). */
int accel_hf_linears(const accel_model_config_t *m, const char *targets, accel_hf_linear_t **out, char *err,
                     size_t errlen);
void accel_hf_linears_free(accel_hf_linear_t *l, int n);
/* The tensors a LoRA fine-tune of cfg trains and its checkpoints hold (lora.rank, lora.targets): for
 * each module accel_hf_linears chooses, in its order, A [rank, in] and B [out, rank], named
 * ACCEL_HF_LORA_A/B, in the layer of the tensor of `model` (the model's layout) holding its
 * weight; A drawn with the variance of PEFT's initialisation, B zero. Into `out` (initialised). */
accel_status_t accel_hf_lora_layout(const accel_config_t *cfg, const accel_layout_t *model, accel_layout_t *out,
                                    char *err, size_t errlen);
/* Their scale: lora.alpha / lora.rank, or / sqrt(lora.rank) with lora.rslora (PEFT's). */
double accel_hf_lora_scale(const accel_config_t *cfg);

/* w, the accel tensor l->accel ([*, in]), += scale B A on l's rows: A [r, in], B [out, r], scratch
 * out x in floats. A LoRA module merged, as PEFT's merge computes it. */
void accel_hf_linear_add(const accel_hf_linear_t *l, int r, float scale, const float *a, const float *b, float *w,
                         float *scratch);

/* True when path looks like a Hugging Face model: a directory with config.json (or a PEFT
 * adapter's adapter_config.json), or a *.safetensors file next to a config.json without accel's
 * own metadata. */
bool accel_hf_is_model(const char *path);

typedef struct accel_hf accel_hf_t;

/* Open a Hugging Face model (directory, or a .safetensors file inside one): config.json
 * translated and checked (what accel cannot compute is refused naming the key), every shard
 * opened and checked, every tensor accel needs present with its shape. Not logged: err
 * receives the reason. */
accel_status_t accel_hf_open(const char *path, accel_hf_t **out, char *err, size_t errlen);
/* A PEFT LoRA adapter (a directory with adapter_config.json and adapter_model.safetensors) on its
 * base model, merged as the weights are read: W + scale B A for each module, as PEFT's
 * merge_and_unload; its whole tensors (modules_to_save) in place of the base's; its tokenizer and
 * chat template, where it keeps them, in place of the base's. base NULL: adapter_config.json's
 * base_model_name_or_path, a directory or a Hugging Face cache snapshot (src/ckpt/peft.h).
 * accel_hf_open opens an adapter directory so. Every module must find its tensor in the base, of
 * its shape; variants merging cannot reproduce (DoRA, ...) are refused. */
accel_status_t accel_hf_open_adapter(const char *adapter, const char *base, accel_hf_t **out, char *err,
                                     size_t errlen);
/* True when path is a PEFT adapter directory (adapter_config.json, no config.json). */
bool accel_hf_is_adapter(const char *path);
/* The Hugging Face model directory path stands on: path itself when it is one, the base an adapter
 * directory names (as accel_hf_open_adapter finds it) when it is an adapter. */
accel_status_t accel_hf_base_of(const char *path, char *out, size_t len, char *err, size_t errlen);
/* Each LoRA module of a PEFT adapter directory, its factors as fp32: fn(ctx, module (PEFT's name,
 * model.layers.0.self_attn.q_proj), rank, alpha, scale, A [rank, in], B [out, rank], out, in). An
 * adapter that holds more than LoRA factors (DoRA magnitudes, whole tensors, embeddings' factors)
 * is refused: err says which module. fn's failure ends the walk and is returned. */
typedef accel_status_t (*accel_hf_factor_fn)(void *ctx, const char *module, int rank, double alpha, double scale,
                                             const float *a, const float *b, uint64_t out, uint64_t in);
accel_status_t accel_hf_adapter_factors(const char *dir, accel_hf_factor_fn fn, void *ctx, char *err,
                                        size_t errlen);
/* The adapter directory merged in, or NULL. */
const char *accel_hf_adapter(const accel_hf_t *hf);
void accel_hf_close(accel_hf_t *hf);
/* The configuration (defaults + the model keys from config.json) and its YAML. */
const accel_config_t *accel_hf_config(const accel_hf_t *hf);
const char *accel_hf_config_yaml(const accel_hf_t *hf);
const char *accel_hf_architecture(const accel_hf_t *hf);
/* accel's tensors (as accel_hf_accel_tensors), and one of them read whole as fp32. */
int accel_hf_tensors(const accel_hf_t *hf, const accel_hf_tensor_t **tensors);
accel_status_t accel_hf_read(accel_hf_t *hf, const char *accel_name, float *dst, char *err, size_t errlen);
/* The directory's tokenizer.json (malloc'ed, *len bytes), or NULL when there is none. */
char *accel_hf_tokenizer(const accel_hf_t *hf, size_t *len);
/* The directory's chat template as transformers finds it (malloc'ed, *len bytes, NUL-terminated):
 * chat_template.jinja, else tokenizer_config.json's "chat_template" (a string, or of a list of
 * {"name", "template"} the one named "default"); NULL when there is none. */
char *accel_hf_chat_template(const accel_hf_t *hf, size_t *len);

/* Gives one accel tensor (whole, numel elements) as fp32. */
typedef accel_status_t (*accel_hf_get_fn)(void *ctx, const char *accel_name, uint64_t numel, float *dst);

/* The tokenizer that goes with an export: its tokenizer.json bytes (NULL: none), name, and the
 * beginning/end-of-text tokens (id -1 and text NULL when unknown), for config.json,
 * generation_config.json and tokenizer_config.json; and the chat template's text (NULL: none). */
typedef struct {
    const char *json;
    size_t len;
    const char *name;
    int bos_id, eos_id;
    const char *bos, *eos;
    const char *chat_template;
    size_t chat_template_len;
} accel_hf_tokenizer_t;

/* The weights an export writes: fp32, bf16, or quantized as compressed-tensors writes them, each
 * block linear layer's weight (the rest bf16; config.json's quantization_config says so, its ignore
 * list naming the linear layers left in bf16): FP8 (float-quantized, the FP8-dynamic scheme: e4m3
 * by rows with an F32 X.weight_scale [rows, 1] = max |row| / 448) or NVFP4 (nvfp4-pack-quantized,
 * weights only: X.weight_packed two e2m1 a byte, X.weight_scale e4m3 by 16, X.weight_global_scale). */
typedef enum { ACCEL_HF_FP32 = 0, ACCEL_HF_BF16, ACCEL_HF_FP8, ACCEL_HF_NVFP4 } accel_hf_dtype_t;

/* Write outdir/model.safetensors (HF names and layouts; a tied head is not stored), config.json
 * and generation_config.json, plus outdir/tokenizer.json and a minimal tokenizer_config.json when
 * tok->json is given, and outdir/chat_template.jinja (where transformers 5 saves and looks for the
 * template) when tok->chat_template is (tok may be NULL). Logged. */
accel_status_t accel_hf_export(const accel_config_t *cfg, accel_hf_get_fn get, void *ctx, accel_hf_dtype_t dtype,
                               const char *outdir, const accel_hf_tokenizer_t *tok);

/* Write outdir as a PEFT LoRA adapter from the factors a LoRA fine-tune trained (cfg's lora.*, the
 * tensors ACCEL_HF_LORA_A/B of each module lora.targets chooses, read through get), exactly as they
 * are; adapter_config.json names base. */
accel_status_t accel_hf_export_lora(const accel_config_t *cfg, accel_hf_get_fn get, void *ctx, const char *base,
                                    const char *outdir);
/* Write outdir as a PEFT LoRA adapter of the Hugging Face model `base` (a directory; its config
 * the same model as cfg's): every matrix whose weights (get) differ from the base's as rank-`rank`
 * factors of the difference (truncated SVD: exact when the difference has that rank, else its best
 * approximation, the error logged), lora_alpha = rank; every other tensor that differs whole
 * (modules_to_save; biases with bias = "all"), and the matrices whose module's last name is in the
 * comma-separated `whole` (e.g. "lm_head,embed_tokens"). adapter_config.json names base as
 * base_model_name_or_path. Logged. */
accel_status_t accel_hf_export_adapter(const accel_config_t *cfg, accel_hf_get_fn get, void *ctx, const char *base,
                                       int rank, const char *whole, const char *outdir);

#endif

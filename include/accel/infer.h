/* Big-model inference: run a language model whose weights are larger than the memory at hand.
 *
 * The answer to Accelerate's init_empty_weights + load_checkpoint_and_dispatch(device_map="auto",
 * max_memory=...), in C and with prefetch:
 *   1. empty initialisation: accel_model_create builds the model and its tensor table without
 *      allocating any weight memory;
 *   2. a device map puts every layer (the tensor table's layer id, never split) on a tier: gpu,
 *      cpu (resident) or disk (read from the weights file each time it is used), filling the
 *      fastest tier first within max_memory, or as the user spells it out;
 *   3. a dispatcher reserves the whole parameter arena as virtual memory, reads the resident
 *      layers into it, and streams the disk layers through it: a background thread reads the next
 *      layers into their arena ranges (at most `ring_slots` disk layers resident at once) while
 *      the current one computes, and the model's layer hooks wait for a layer before it is used
 *      and hand its pages back after. The model code is unchanged: it reads params + offset.
 * Design and memory accounting: docs/inference.md. Tool: accel_generate. */
#ifndef ACCEL_INFER_H
#define ACCEL_INFER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "accel/arena.h"
#include "accel/config.h"
#include "accel/model.h"
#include "accel/status.h"
#include "accel/tokenizer.h"

typedef enum { ACCEL_TIER_GPU = 0, ACCEL_TIER_CPU, ACCEL_TIER_DISK, ACCEL_NTIERS } accel_tier_t;

/* "gpu", "cpu", "disk"; accel_tier_parse returns -1 for anything else. */
const char *accel_tier_name(accel_tier_t tier);
int accel_tier_parse(const char *name);

/* ------------------------------------------------------------------ weights files */

/* An opened weights file: an accel checkpoint (step-*.h5: tensors in /model, configuration in
 * /meta/config.yaml; extra groups and attributes are ignored), exported or imported weights (HDF5:
 * tensors at the root, configuration in /meta/config.yaml; fp32, any HDF5 float type such as
 * accel_ckpt's bf16, or uint16 holding bf16 bits with a "dtype" attribute "bf16"; safetensors with
 * the configuration in its metadata), or a Hugging Face model directory (docs/huggingface.md).
 * HDF5 files are read with plain serial HDF5 (sec2 driver, no file lock). HDF5 here is not thread-safe: while a dispatcher built on it exists, only the
 * dispatcher may call HDF5. */
typedef struct accel_weights accel_weights_t;

accel_status_t accel_weights_open(const char *path, accel_weights_t **w);
void accel_weights_close(accel_weights_t *w);
const char *accel_weights_path(const accel_weights_t *w);
/* "checkpoint" or "exported weights". */
const char *accel_weights_kind(const accel_weights_t *w);
/* The stored effective configuration (YAML), or NULL when the file has none. */
const char *accel_weights_config_yaml(const accel_weights_t *w);
/* The configuration: defaults, then the stored one (if any), then "key=value" overrides, then
 * ACCEL_* variables. On error *err holds a message. */
accel_status_t accel_weights_load_config(const accel_weights_t *w, int noverrides,
                                         char *const overrides[], accel_config_t *cfg, char *err,
                                         size_t errlen);
/* The tokenizer the weights were trained with, as the file keeps it (/meta/tokenizer.json of a
 * checkpoint or HDF5 weights file, the metadata of accel's safetensors export, a Hugging Face
 * directory's tokenizer.json). ACCEL_ERR_NOT_FOUND (err untouched) when none is kept; other
 * errors with err saying why. Free with accel_tokenizer_free. */
accel_status_t accel_weights_tokenizer(const accel_weights_t *w, accel_tokenizer_t **tok, char *err,
                                       size_t errlen);
/* The chat template the weights keep (its Jinja text, NUL-terminated, *len bytes without the NUL;
 * len may be NULL): /meta/chat_template of a checkpoint or HDF5 weights file, the metadata
 * accel_chat_template of accel's safetensors export, a Hugging Face directory's
 * chat_template.jinja or tokenizer_config.json "chat_template" (the "default" of a list). Read
 * when the weights are opened and owned by w (valid until accel_weights_close); NULL (*len = 0)
 * when there is none or it cannot be read. Parse it with accel_chat_template_parse
 * (include/accel/chat.h). */
const char *accel_weights_chat_template(const accel_weights_t *w, size_t *len);
/* Every tensor of the layout is in the file with the layout's shape and a float type; prints the
 * first problem (a missing tensor, a wrong shape or type). Tensors the layout lacks are ignored
 * (counted in a warning). Keeps the datasets open for accel_weights_read. */
accel_status_t accel_weights_check(accel_weights_t *w, const accel_layout_t *layout);
/* Read tensor `index` of the layout checked above into dst[numel] (fp32). */
accel_status_t accel_weights_read(accel_weights_t *w, int index, float *dst);

/* ------------------------------------------------------------------ device maps */

/* Give every layer its own whole pages (padding between layers), so a layer's memory can be
 * handed back exactly: 2 MiB huge pages for layers of at least ACCEL_INFER_HUGE_MIN bytes (the
 * dispatcher asks for transparent huge pages there: streaming them is several times faster than
 * faulting 4 KiB pages), system pages otherwise. Call on the model's layout before mapping or
 * dispatching. */
#define ACCEL_INFER_HUGE_BYTES ((size_t)2 << 20)
#define ACCEL_INFER_HUGE_MIN ((size_t)8 << 20)
accel_status_t accel_infer_pad_layout(accel_layout_t *layout);

typedef struct {
    size_t max_memory[ACCEL_NTIERS];    /* bytes per tier; SIZE_MAX = no limit (the gpu tier is 0
                                           when no GPU can run the model) */
    int ring_slots;                     /* disk layers resident at once (>= 2; 0 = default 2) */
    size_t workspace;                   /* activations and buffers, counted in the cpu budget */
} accel_map_opts_t;

typedef struct {
    int nlayers;
    accel_tier_t *tier;                 /* per layer */
    size_t *bytes;                      /* per layer: bytes of its (page-padded) arena range */
    int ring_slots;
    size_t ring_bytes;                  /* ring_slots x the largest disk layer (0: no disk layer) */
    size_t workspace;
    size_t tier_bytes[ACCEL_NTIERS];    /* weight bytes per tier */
    size_t cpu_total;                   /* resident weights + ring + workspace */
    size_t max_memory[ACCEL_NTIERS];    /* the budgets it was made for */
} accel_device_map_t;

/* Bytes for people: "512 B", "12.0 MiB", "1.50 GiB", "unlimited" (SIZE_MAX); out: 32 bytes. */
const char *accel_infer_fmt_bytes(size_t bytes, char *out, size_t outlen);
/* "cpu=64MiB,disk=10GiB,gpu=0" into max_memory[tier]; tiers not named keep their value. */
accel_status_t accel_parse_max_memory(const char *spec, size_t max_memory[ACCEL_NTIERS], char *err,
                                      size_t errlen);

/* device_map=auto: each layer, in layer order, goes to the fastest tier with room left (gpu, cpu,
 * then disk); the ring is sized for the largest disk layer, choosing the ring size that keeps the
 * most bytes resident. Fails (with a message) when even the ring and the workspace exceed the cpu
 * budget, or the disk budget cannot hold what is left. */
accel_status_t accel_device_map_auto(const accel_layout_t *layout, const accel_map_opts_t *o,
                                     accel_device_map_t *map);
/* An explicit map: comma-separated "LAYERS=TIER" items, LAYERS being "N", "A-B", "A-" (to the last
 * layer) or "*" (every layer not named elsewhere), e.g. "0-3=cpu,4-=disk" or "0=cpu,*=disk".
 * Every layer needs exactly one tier. Checked against the budgets in o. */
accel_status_t accel_device_map_parse(const char *spec, const accel_layout_t *layout,
                                      const accel_map_opts_t *o, accel_device_map_t *map,
                                      char *err, size_t errlen);
/* The map as a table: layer, tensors, tier, bytes; then the totals per tier, ring and workspace. */
void accel_device_map_print(const accel_device_map_t *map, const accel_layout_t *layout, FILE *out);
void accel_device_map_free(accel_device_map_t *map);

/* ------------------------------------------------------------------ dispatch */

typedef struct accel_dispatch accel_dispatch_t;

typedef struct {
    double load_seconds;                /* reading the resident layers at creation */
    double read_seconds;                /* the prefetch thread reading disk layers */
    double wait_seconds;                /* the compute thread waiting for a disk layer */
    size_t resident_bytes;              /* weights read at creation */
    size_t bytes_read;                  /* disk layers streamed since creation */
    int64_t layer_reads;                /* disk layer reads */
    int64_t misses;                     /* fetches the prefetch schedule did not foresee */
    int64_t passes;                     /* accel_dispatch_logits calls */
} accel_dispatch_stats_t;

/* Build the dispatcher: check the weights against the model's (padded) layout, reserve the arena,
 * read the cpu-tier layers and start the prefetch thread for the disk tier. model (ops with
 * logits_range), w and map must outlive it. */
accel_status_t accel_dispatch_create(const accel_model_t *model, accel_weights_t *w,
                                     const accel_device_map_t *map, accel_dispatch_t **out);
/* Logits after tokens first..ntokens-1 of one sequence (see logits_range in model.h) into
 * out[(ntokens - first) x vocab]. The values do not depend on the map. */
accel_status_t accel_dispatch_logits(accel_dispatch_t *d, const int32_t *tokens, int ntokens,
                                     int first, float *out);
/* The logits after the last of ntokens tokens into out[vocab], where the first `cached` tokens
 * are those of the previous pass (the model's KV cache, see logits_cached in model.h: only the
 * new positions are computed; 0 = afresh). A model without a KV cache recomputes the window. */
accel_status_t accel_dispatch_next_logits(accel_dispatch_t *d, const int32_t *tokens, int ntokens,
                                          int cached, float *out);
void accel_dispatch_stats(const accel_dispatch_t *d, accel_dispatch_stats_t *stats);
/* Stops the prefetch thread and releases the arena. */
void accel_dispatch_destroy(accel_dispatch_t *d);

#endif

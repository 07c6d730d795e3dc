/* Job configuration: the schema of every key, YAML loading (libyaml), overrides and ACCEL_* variables.
 * Adding a key = one line in g_schema plus a field in accel_config_t. */
#include "build_config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "accel/config.h"

extern char **environ;

/* KEY_COUNT: an int >= 0 or "auto" (stored as ACCEL_AUTO); KEY_BYTES: a size in bytes, written
 * plain or with a unit (KiB MiB GiB TiB, or KB MB GB TB in powers of 1000), stored as int64. */
typedef enum { KEY_INT, KEY_U64, KEY_INT64, KEY_DOUBLE, KEY_BOOL, KEY_STRING, KEY_COUNT, KEY_BYTES } key_type_t;

typedef struct {
    const char *key;
    key_type_t type;
    size_t offset;
    size_t size;                    /* strings: buffer size */
    const char *def;
    const char *choices;            /* "a|b|c" for enumerations, NULL otherwise */
    const char *help;
} key_spec_t;

#define F(field) offsetof(accel_config_t, field), sizeof(((accel_config_t *)0)->field)

static const key_spec_t g_schema[] = {
    { "seed", KEY_U64, F(seed), "1234", NULL, "seed of all keyed randomness (weights, data order, dropout)" },
    { "device", KEY_STRING, F(device), "auto", "auto|cpu|cuda", "where to compute: auto picks the node-local GPU when one is usable" },
    { "precision", KEY_STRING, F(precision), "fp32", "fp32|bf16|fp16", "compute precision (master weights stay fp32)" },
    { "threads", KEY_INT, F(threads), "0", NULL, "compute threads per rank; 0 = OMP_NUM_THREADS, else cores / ranks on the node" },

    { "model.name", KEY_STRING, F(model.name), "gpt", "mlp|gpt|llama", "built-in model: mlp, gpt (GPT-2) or llama (Llama 2/3, Mistral, Qwen2 family)" },
    { "model.plugin", KEY_STRING, F(model.plugin), "", NULL, "shared library with a user model (overrides model.name)" },
    { "model.inputs", KEY_INT, F(model.inputs), "32", NULL, "mlp: input features" },
    { "model.hidden", KEY_INT, F(model.hidden), "128", NULL, "mlp: hidden width" },
    { "model.classes", KEY_INT, F(model.classes), "10", NULL, "mlp: output classes" },
    { "model.depth", KEY_INT, F(model.depth), "2", NULL, "mlp: hidden layers" },
    { "model.layers", KEY_INT, F(model.layers), "4", NULL, "gpt, llama: transformer blocks" },
    { "model.heads", KEY_INT, F(model.heads), "4", NULL, "gpt, llama: attention heads" },
    { "model.width", KEY_INT, F(model.width), "128", NULL, "gpt, llama: embedding width" },
    { "model.context", KEY_INT, F(model.context), "64", NULL, "gpt, llama: context length in tokens" },
    { "model.vocab", KEY_INT, F(model.vocab), "256", NULL, "gpt, llama: vocabulary size (256 = bytes)" },
    { "model.kv_heads", KEY_INT, F(model.kv_heads), "0", NULL, "llama: key/value heads (grouped-query attention; 1 = multi-query); 0 = model.heads" },
    { "model.ffn_width", KEY_INT, F(model.ffn_width), "0", NULL, "llama: SwiGLU hidden width; 0 = 8/3 x width rounded up to a multiple of 64" },
    { "model.rope_theta", KEY_DOUBLE, F(model.rope_theta), "10000", NULL, "llama: RoPE base frequency" },
    { "model.rope_scaling", KEY_STRING, F(model.rope_scaling), "none", "none|llama3", "llama: RoPE frequency scaling (llama3: Llama-3.1 style, the four keys below)" },
    { "model.rope_factor", KEY_DOUBLE, F(model.rope_factor), "8", NULL, "llama: rope_scaling=llama3: low frequencies divided by this" },
    { "model.rope_low_freq_factor", KEY_DOUBLE, F(model.rope_low_freq_factor), "1", NULL, "llama: rope_scaling=llama3: wavelengths above original_context / this are scaled" },
    { "model.rope_high_freq_factor", KEY_DOUBLE, F(model.rope_high_freq_factor), "4", NULL, "llama: rope_scaling=llama3: wavelengths below original_context / this are kept" },
    { "model.rope_original_context", KEY_INT, F(model.rope_original_context), "8192", NULL, "llama: rope_scaling=llama3: the context the model was pre-trained with" },
    { "model.rms_eps", KEY_DOUBLE, F(model.rms_eps), "1e-5", NULL, "llama: RMSNorm epsilon" },
    { "model.tie_embeddings", KEY_BOOL, F(model.tie_embeddings), "true", NULL, "the LM head reuses the token embedding; false = a separate lm_head (llama; gpt is always tied)" },
    { "model.attention_bias", KEY_BOOL, F(model.attention_bias), "false", NULL, "llama: biases on the q, k and v projections (Qwen2)" },

    { "data.path", KEY_STRING, F(data.path), "", NULL, "HDF5 dataset (accel_data); empty = built-in data: the synthetic task for classifiers, the Debian text corpus (prepared on first use) for language models; 'synthetic' = synthetic tokens" },
    { "data.samples", KEY_INT64, F(data.samples), "65536", NULL, "size of the synthetic training set" },
    { "data.eval_samples", KEY_INT64, F(data.eval_samples), "2048", NULL, "size of the synthetic validation set (a dataset's val split is evaluated whole)" },
    { "data.drop_last", KEY_BOOL, F(data.drop_last), "true", NULL, "drop an epoch's tail that does not fill a global batch (false: pad it with known duplicates)" },
    { "data.noise", KEY_DOUBLE, F(data.noise), "0.05", NULL, "fraction of random labels in the synthetic task" },

    { "train.steps", KEY_INT, F(train.steps), "600", NULL, "optimizer steps" },
    { "train.global_batch", KEY_INT, F(train.global_batch), "32", NULL, "samples per optimizer step over all ranks" },
    { "train.grad_accum", KEY_INT, F(train.grad_accum), "1", NULL, "micro-batches accumulated per optimizer step" },
    { "train.micro_batch", KEY_COUNT, F(train.micro_batch), "0", NULL, "samples per rank in one forward/backward pass: 0 = train.global_batch / (ranks x train.grad_accum); N = that many, train.grad_accum then making up the global batch; auto = the largest whose estimated peak memory fits train.memory_limit (no trial runs)" },
    { "train.memory_limit", KEY_BYTES, F(train.memory_limit), "0", NULL, "bytes per rank train.micro_batch=auto plans for (e.g. 8GiB); 0 = the device's memory, or on CPUs the node's memory divided by its ranks" },
    { "train.recompute", KEY_STRING, F(train.recompute), "none", "none|mlp|block", "activation recompute (gpt, llama on CPUs): mlp = keep no MLP activations and recompute them in backward; block = keep only each block's input and recompute the block in backward" },
    { "train.sync_each_batch", KEY_BOOL, F(train.sync_each_batch), "false", NULL, "all-reduce gradients after every micro-batch" },
    { "train.clip", KEY_DOUBLE, F(train.clip), "1.0", NULL, "clip gradients to this global norm; 0 = off" },
    { "train.loss_scale", KEY_DOUBLE, F(train.loss_scale), "65536", NULL, "fp16: initial dynamic loss scale (halved on overflow)" },
    { "train.loss_scale_window", KEY_INT, F(train.loss_scale_window), "2000", NULL, "fp16: overflow-free steps before the loss scale doubles" },
    { "train.peak_tflops", KEY_DOUBLE, F(train.peak_tflops), "0", NULL, "peak TFLOP/s of one rank's device in the training precision, the denominator of the MFU printed; 0 = auto: a table for known GPUs, a short matrix-product measurement on CPUs" },
    { "train.log_every", KEY_INT, F(train.log_every), "25", NULL, "steps between progress lines" },
    { "train.eval_every", KEY_INT, F(train.eval_every), "0", NULL, "optimizer steps between held-out evaluations (progress line and metrics row); 0 = only the final one" },
    { "train.sample_tokens", KEY_INT, F(train.sample_tokens), "200", NULL, "language models: tokens of text generated at the end; 0 = none" },
    { "train.sample_prompt", KEY_STRING, F(train.sample_prompt), "The ", NULL, "language models: prompt of the generated sample" },
    { "train.init_from", KEY_STRING, F(train.init_from), "", NULL, "start training (step 0, fresh optimizer and schedule) from these weights: an accel checkpoint, weights exported by accel_ckpt (hdf5, safetensors, hf), an 'accel_ckpt import' file or a Hugging Face model directory; the model keys come from the file; ignored when resume finds a checkpoint" },
    { "train.metrics", KEY_STRING, F(train.metrics), "", NULL, "JSON-lines metrics file written by rank 0 (docs/metrics.md); a resume keeps its rows up to the checkpoint's step" },
    { "train.tensorboard", KEY_STRING, F(train.tensorboard), "", NULL, "directory for TensorBoard event files written by rank 0 (docs/metrics.md); empty = none; a resume continues the same run" },

    { "optim.name", KEY_STRING, F(optim.name), "adamw", "adamw|sgd", "optimizer" },
    { "optim.lr", KEY_DOUBLE, F(optim.lr), "0.003", NULL, "peak learning rate" },
    { "optim.beta1", KEY_DOUBLE, F(optim.beta1), "0.9", NULL, "AdamW beta1" },
    { "optim.beta2", KEY_DOUBLE, F(optim.beta2), "0.999", NULL, "AdamW beta2" },
    { "optim.eps", KEY_DOUBLE, F(optim.eps), "1e-8", NULL, "AdamW epsilon" },
    { "optim.weight_decay", KEY_DOUBLE, F(optim.weight_decay), "0.01", NULL, "decoupled weight decay (not on biases and norms)" },
    { "optim.momentum", KEY_DOUBLE, F(optim.momentum), "0.9", NULL, "SGD momentum" },
    { "optim.schedule", KEY_STRING, F(optim.schedule), "cosine", "constant|linear|cosine", "learning-rate schedule over train.steps" },
    { "optim.warmup", KEY_INT, F(optim.warmup), "30", NULL, "linear warm-up, in optimizer steps" },
    { "optim.min_lr_ratio", KEY_DOUBLE, F(optim.min_lr_ratio), "0.1", NULL, "final learning rate as a fraction of optim.lr" },

    { "dist.strategy", KEY_STRING, F(dist.strategy), "ddp", "ddp|zero1|zero2|zero3", "data-parallel strategy" },
    { "dist.hybrid", KEY_BOOL, F(dist.hybrid), "false", NULL, "shard within a node, replicate across nodes" },
    { "dist.bucket_mb", KEY_DOUBLE, F(dist.bucket_mb), "0", NULL, "gradient bucket size in MiB; 0 = auto: 25, less for small models so backward overlaps 8 buckets" },
    { "dist.comm_dtype", KEY_STRING, F(dist.comm_dtype), "fp32", "fp32|bf16|fp16", "type gradients travel in between ranks" },
    { "dist.fake_nodes", KEY_INT, F(dist.fake_nodes), "0", NULL, "testing: group ranks into this many pretend nodes; 0 = real topology" },
    { "dist.timeout", KEY_DOUBLE, F(dist.timeout), "600", NULL, "seconds any collective or I/O wait may take before the job aborts; 0 = forever" },

    { "log.level", KEY_STRING, F(log.level), "info", "error|warn|info|debug|trace", "log level (ACCEL_LOG_LEVEL)" },
    { "log.all_ranks", KEY_BOOL, F(log.all_ranks), "false", NULL, "informational messages from every rank, not only rank 0" },

    { "ckpt.dir", KEY_STRING, F(ckpt.dir), "", NULL, "directory of checkpoints (one parallel-HDF5 file each); empty = no checkpoints" },
    { "ckpt.every", KEY_INT, F(ckpt.every), "0", NULL, "optimizer steps between checkpoints; 0 = only at the end and when stopped by a signal" },
    { "ckpt.keep_last", KEY_INT, F(ckpt.keep_last), "3", NULL, "checkpoints kept; older ones are removed only after a new one is complete; 0 = all" },
    { "resume", KEY_STRING, F(resume), "", NULL, "continue from a checkpoint: auto (the newest in ckpt.dir, if any) or a file path" },

    { "debug.stop_step", KEY_INT, F(debug.stop_step), "0", NULL, "testing: debug.stop_rank raises the stop trigger at this step; 0 = off" },
    { "debug.stop_rank", KEY_INT, F(debug.stop_rank), "0", NULL, "testing: the rank that raises the stop trigger" },
    { "debug.overflow_step", KEY_INT, F(debug.overflow_step), "0", NULL, "testing: debug.overflow_rank injects an inf gradient at this step; 0 = off" },
    { "debug.overflow_rank", KEY_INT, F(debug.overflow_rank), "0", NULL, "testing: the rank that injects the overflow" },
};
#define NKEYS (sizeof g_schema / sizeof g_schema[0])

/* Enumerated keys parsed once, where the configuration is read: the value of each of the key's
 * choices (in the order of its "a|b|c"), stored in an int-sized enum field next to its text. */
static const int g_dtype_ids[] = { ACCEL_F32, ACCEL_BF16, ACCEL_F16 };   /* "fp32|bf16|fp16" */
static const int g_strategy_ids[] = { ACCEL_DDP, ACCEL_ZERO1, ACCEL_ZERO2, ACCEL_ZERO3 };
static const int g_recompute_ids[] = { ACCEL_RECOMPUTE_NONE, ACCEL_RECOMPUTE_MLP, ACCEL_RECOMPUTE_BLOCK };
static const struct {
    const char *key;
    const int *ids;
    size_t offset;
} g_enum_ids[] = {
    { "precision", g_dtype_ids, offsetof(accel_config_t, precision_id) },
    { "dist.strategy", g_strategy_ids, offsetof(accel_config_t, dist.strategy_id) },
    { "dist.comm_dtype", g_dtype_ids, offsetof(accel_config_t, dist.comm_dtype_id) },
    { "train.recompute", g_recompute_ids, offsetof(accel_config_t, train.recompute_id) },
};
_Static_assert(sizeof(accel_dtype_t) == sizeof(int) && sizeof(accel_strategy_t) == sizeof(int) &&
               sizeof(accel_recompute_t) == sizeof(int),
               "enumerated keys are stored as int");

const char *accel_strategy_name(accel_strategy_t s)
{
    static const char *const names[] = { "ddp", "zero1", "zero2", "zero3" };
    return (unsigned)s < 4 ? names[s] : "?";
}

static void set_enum_id(accel_config_t *cfg, const char *key, int choice)
{
    for (size_t i = 0; i < sizeof g_enum_ids / sizeof g_enum_ids[0]; i++)
        if (!strcmp(g_enum_ids[i].key, key))
            *(int *)((char *)cfg + g_enum_ids[i].offset) = g_enum_ids[i].ids[choice];
}

static const key_spec_t *find_key(const char *key)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (!strcmp(g_schema[i].key, key)) return &g_schema[i];
    return NULL;
}

/* Suggest the closest known key for a typo: the one sharing the longest prefix. */
static const char *closest_key(const char *key)
{
    const char *best = NULL;
    size_t best_len = 2;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t n = 0;
        while (key[n] && key[n] == g_schema[i].key[n]) n++;
        const char *dot = strchr(key, '.'), *kdot = strchr(g_schema[i].key, '.');
        const char *leaf = dot ? dot + 1 : key, *kleaf = kdot ? kdot + 1 : g_schema[i].key;
        if (!strcmp(leaf, kleaf)) n += 8;          /* same leaf in another section */
        if (n > best_len) { best_len = n; best = g_schema[i].key; }
    }
    return best;
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) { *out = true; return true; }
        if (!strcasecmp(v, no[i])) { *out = false; return true; }
    }
    return false;
}

/* "123", "1.5GiB", "800MB" -> bytes (binary units KiB..TiB, decimal KB..TB); false when malformed
 * or beyond int64. */
static bool parse_bytes(const char *v, int64_t *out)
{
    static const struct { const char *unit; double scale; } units[] = {
        { "", 1 }, { "B", 1 }, { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
        { "TiB", 1099511627776.0 }, { "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
    };
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || end == v || errno || !isfinite(x) || x < 0) return false;
    while (*end == ' ') end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            double bytes = x * units[i].scale;
            if (bytes >= 9.2e18) return false;
            *out = (int64_t)bytes;
            return true;
        }
    return false;
}

/* The position of v among "a|b|c", or -1. */
static int choice_index(const char *choices, const char *v)
{
    size_t n = strlen(v);
    int i = 0;
    for (const char *p = choices; p && *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return i;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

accel_status_t accel_config_set(accel_config_t *cfg, const char *key, const char *value, char *err,
                                size_t errlen)
{
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    const key_spec_t *k = find_key(key);
    if (!k) {
        const char *hint = closest_key(key);
        if (hint)
            snprintf(err, errlen, "unknown configuration key '%s'\n--> hint: did you mean '%s'? "
                     "('accel config --defaults' lists every key)", key, hint);
        else
            snprintf(err, errlen, "unknown configuration key '%s'\n--> hint: "
                     "'accel config --defaults' lists every key", key);
        return ACCEL_ERR_CONFIG;
    }
    char *field = (char *)cfg + k->offset;
    char *end = NULL;
    errno = 0;
    switch (k->type) {
    case KEY_INT: {
        long v = strtol(value, &end, 10);
        if (!*value || *end || errno || v < INT_MIN || v > INT_MAX) goto bad_type;
        if (v < 0) goto negative;
        *(int *)field = (int)v;
        break;
    }
    case KEY_INT64: {
        long long v = strtoll(value, &end, 10);
        if (!*value || *end || errno) goto bad_type;
        if (v < 0) goto negative;
        *(int64_t *)field = v;
        break;
    }
    case KEY_U64: {
        if (value[0] == '-') goto negative;
        unsigned long long v = strtoull(value, &end, 10);
        if (!*value || *end || errno) goto bad_type;
        *(uint64_t *)field = v;
        break;
    }
    case KEY_DOUBLE: {
        double v = strtod(value, &end);
        if (!*value || *end || errno || !isfinite(v)) goto bad_type;
        if (v < 0) goto negative;
        *(double *)field = v;
        break;
    }
    case KEY_BOOL:
        if (!parse_bool(value, (bool *)field)) goto bad_type;
        break;
    case KEY_COUNT: {
        if (!strcmp(value, "auto")) { *(int *)field = ACCEL_AUTO; break; }
        long v = strtol(value, &end, 10);
        if (!*value || *end || errno || v > INT_MAX) goto bad_type;
        if (v < 0) goto negative;
        *(int *)field = (int)v;
        break;
    }
    case KEY_BYTES: {
        if (value[0] == '-') goto negative;
        int64_t v;
        if (!parse_bytes(value, &v)) goto bad_type;
        *(int64_t *)field = v;
        break;
    }
    case KEY_STRING:
        int choice = k->choices ? choice_index(k->choices, value) : -1;
        if (k->choices && choice < 0) {
            snprintf(err, errlen, "configuration key '%s' has value '%s'; expected one of %s",
                     key, value, k->choices);
            return ACCEL_ERR_CONFIG;
        }
        if (strlen(value) >= k->size) {
            snprintf(err, errlen, "configuration key '%s': value is longer than %zu characters",
                     key, k->size - 1);
            return ACCEL_ERR_CONFIG;
        }
        snprintf(field, k->size, "%s", value);
        if (choice >= 0) set_enum_id(cfg, k->key, choice);
        break;
    }
    return ACCEL_OK;
bad_type:
    snprintf(err, errlen, "configuration key '%s' expects %s, got '%s'", key,
             k->type == KEY_BOOL ? "true or false"
             : k->type == KEY_DOUBLE ? "a number"
             : k->type == KEY_COUNT ? "an integer or auto"
             : k->type == KEY_BYTES ? "a size in bytes, optionally with a unit (e.g. 512MiB, 8GiB, 2GB)"
             : "an integer", value);
    return ACCEL_ERR_CONFIG;
negative:
    snprintf(err, errlen, "configuration key '%s' must not be negative, got '%s'", key, value);
    return ACCEL_ERR_CONFIG;
}

void accel_config_defaults(accel_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NKEYS; i++)
        (void)accel_config_set(cfg, g_schema[i].key, g_schema[i].def, NULL, 0);
}

/* Walk a YAML node: mappings nest keys with '.', scalars are values. */
static accel_status_t load_node(accel_config_t *cfg, yaml_document_t *doc, yaml_node_t *node,
                                const char *prefix, const char *path, char *err, size_t errlen)
{
    if (node->type == YAML_SCALAR_NODE) {
        if (!*prefix) {
            if (node->data.scalar.length == 0) return ACCEL_OK;   /* empty document */
            snprintf(err, errlen, "%s:%lu: expected a mapping of configuration keys, found '%s'",
                     path, (unsigned long)node->start_mark.line + 1,
                     (const char *)node->data.scalar.value);
            return ACCEL_ERR_CONFIG;
        }
        char msg[512];
        accel_status_t st = accel_config_set(cfg, prefix, (const char *)node->data.scalar.value,
                                             msg, sizeof msg);
        if (st != ACCEL_OK)
            snprintf(err, errlen, "%s:%lu: %s", path, (unsigned long)node->start_mark.line + 1, msg);
        return st;
    }
    if (node->type == YAML_SEQUENCE_NODE) {
        snprintf(err, errlen, "%s:%lu: key '%s' has a list value; every key takes a single value",
                 path, (unsigned long)node->start_mark.line + 1, prefix);
        return ACCEL_ERR_CONFIG;
    }
    if (node->type != YAML_MAPPING_NODE) return ACCEL_OK;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *kn = yaml_document_get_node(doc, p->key);
        yaml_node_t *vn = yaml_document_get_node(doc, p->value);
        if (!kn || kn->type != YAML_SCALAR_NODE) {
            snprintf(err, errlen, "%s:%lu: mapping keys must be plain names", path,
                     kn ? (unsigned long)kn->start_mark.line + 1 : 0UL);
            return ACCEL_ERR_CONFIG;
        }
        char key[256];
        int n = snprintf(key, sizeof key, "%s%s%s", prefix, *prefix ? "." : "",
                         (const char *)kn->data.scalar.value);
        if (n >= (int)sizeof key) {
            snprintf(err, errlen, "%s:%lu: key too long", path, (unsigned long)kn->start_mark.line + 1);
            return ACCEL_ERR_CONFIG;
        }
        /* A mapping under a leaf key, or a scalar where a section is expected, is a type error. */
        if (vn && vn->type == YAML_MAPPING_NODE && find_key(key)) {
            snprintf(err, errlen, "%s:%lu: key '%s' takes a single value, not a mapping", path,
                     (unsigned long)vn->start_mark.line + 1, key);
            return ACCEL_ERR_CONFIG;
        }
        if (vn && vn->type == YAML_SCALAR_NODE && !find_key(key)) {
            size_t len = strlen(key);
            for (size_t i = 0; i < NKEYS; i++)
                if (!strncmp(g_schema[i].key, key, len) && g_schema[i].key[len] == '.') {
                    snprintf(err, errlen, "%s:%lu: '%s' is a section (e.g. '%s'), not a value", path,
                             (unsigned long)kn->start_mark.line + 1, key, g_schema[i].key);
                    return ACCEL_ERR_CONFIG;
                }
        }
        accel_status_t st = vn ? load_node(cfg, doc, vn, key, path, err, errlen) : ACCEL_OK;
        if (st != ACCEL_OK) return st;
    }
    return ACCEL_OK;
}

/* YAML from an open stream; path names it in messages. Closes f. */
static accel_status_t load_stream(accel_config_t *cfg, FILE *f, const char *path, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    accel_status_t st = ACCEL_OK;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%lu:%lu: malformed YAML: %s%s%s", path,
                 (unsigned long)parser.problem_mark.line + 1,
                 (unsigned long)parser.problem_mark.column + 1,
                 parser.problem ? parser.problem : "parse error",
                 parser.context ? " " : "", parser.context ? parser.context : "");
        st = ACCEL_ERR_CONFIG;
        goto out_parser;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root) st = load_node(cfg, &doc, root, "", path, err, errlen);
    yaml_document_delete(&doc);
out_parser:
    yaml_parser_delete(&parser);
    fclose(f);
    return st;
}

static accel_status_t load_file(accel_config_t *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open configuration file '%s': %s", path, strerror(errno));
        return errno == ENOENT ? ACCEL_ERR_NOT_FOUND : ACCEL_ERR_IO;
    }
    return load_stream(cfg, f, path, err, errlen);
}

accel_status_t accel_config_from_yaml(accel_config_t *cfg, const char *yaml, const char *what, char *err,
                                      size_t errlen)
{
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    err[0] = '\0';
    accel_config_defaults(cfg);
    FILE *f = fmemopen((void *)yaml, strlen(yaml), "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read the stored configuration: %s", what, strerror(errno));
        return ACCEL_ERR_IO;
    }
    return load_stream(cfg, f, what, err, errlen);
}

bool accel_config_is_override(const char *text)
{
    const char *eq = strchr(text, '=');
    if (!eq || eq == text) return false;
    for (const char *p = text; p < eq; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '_') return false;
    return true;
}

/* ACCEL_TRAIN_GLOBAL_BATCH <-> train.global_batch */
static void env_name(const char *key, char *out, size_t outlen)
{
    size_t n = (size_t)snprintf(out, outlen, "ACCEL_");
    for (const char *p = key; *p && n + 1 < outlen; p++)
        out[n++] = *p == '.' ? '_' : (char)toupper((unsigned char)*p);
    out[n] = '\0';
}

static const char *env_lookup(char *const envp[], const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

accel_status_t accel_config_load(accel_config_t *cfg, const char *path, int noverrides,
                                 char *const overrides[], char *const envp[], char *err,
                                 size_t errlen)
{
    char dummy[8];
    if (!err) { err = dummy; errlen = sizeof dummy; }
    err[0] = '\0';
    accel_config_defaults(cfg);
    if (path) {
        accel_status_t st = load_file(cfg, path, err, errlen);
        if (st != ACCEL_OK) return st;
    }
    for (int i = 0; i < noverrides; i++) {
        const char *eq = strchr(overrides[i], '=');
        if (!accel_config_is_override(overrides[i])) {
            snprintf(err, errlen, "argument '%s' is not a key=value override", overrides[i]);
            return ACCEL_ERR_CONFIG;
        }
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - overrides[i]), overrides[i]);
        char msg[512];
        accel_status_t st = accel_config_set(cfg, key, eq + 1, msg, sizeof msg);
        if (st != ACCEL_OK) {
            snprintf(err, errlen, "command line: %s", msg);
            return st;
        }
    }
    if (!envp) envp = environ;
    for (size_t i = 0; i < NKEYS; i++) {
        char name[128];
        env_name(g_schema[i].key, name, sizeof name);
        const char *v = env_lookup(envp, name);
        if (!v) continue;
        char msg[512];
        accel_status_t st = accel_config_set(cfg, g_schema[i].key, v, msg, sizeof msg);
        if (st != ACCEL_OK) {
            snprintf(err, errlen, "environment variable %s: %s", name, msg);
            return st;
        }
    }
    return ACCEL_OK;
}

static void format_value(const accel_config_t *cfg, const key_spec_t *k, char *out, size_t outlen)
{
    const char *field = (const char *)cfg + k->offset;
    switch (k->type) {
    case KEY_INT: snprintf(out, outlen, "%d", *(const int *)field); break;
    case KEY_INT64: snprintf(out, outlen, "%lld", (long long)*(const int64_t *)field); break;
    case KEY_U64: snprintf(out, outlen, "%llu", (unsigned long long)*(const uint64_t *)field); break;
    case KEY_DOUBLE: snprintf(out, outlen, "%.9g", *(const double *)field); break;
    case KEY_BOOL: snprintf(out, outlen, "%s", *(const bool *)field ? "true" : "false"); break;
    case KEY_COUNT:
        if (*(const int *)field == ACCEL_AUTO) snprintf(out, outlen, "auto");
        else snprintf(out, outlen, "%d", *(const int *)field);
        break;
    case KEY_BYTES: snprintf(out, outlen, "%lld", (long long)*(const int64_t *)field); break;
    case KEY_STRING: {
        /* Plain when YAML reads it back unchanged, else double-quoted with escapes. */
        bool plain = *field && !isspace((unsigned char)field[0]) && !isspace((unsigned char)field[strlen(field) - 1]) &&
                     !strpbrk(field, ":#\"'{}[],&*!|>%@`\\") && !strchr("-?", field[0]);
        if (plain) {
            snprintf(out, outlen, "%s", field);
            break;
        }
        size_t n = 0;
        out[n++] = '"';
        for (const char *p = field; *p && n + 3 < outlen; p++) {
            if (*p == '"' || *p == '\\') out[n++] = '\\';
            if (*p == '\n') { out[n++] = '\\'; out[n++] = 'n'; continue; }
            out[n++] = *p;
        }
        out[n++] = '"';
        out[n] = '\0';
        break;
    }
    }
}

/* Print keys nested by section; the schema is grouped by section so one pass suffices. */
static void emit_yaml(const accel_config_t *cfg, FILE *out, bool comments)
{
    char section[64] = "";
    for (size_t i = 0; i < NKEYS; i++) {
        const key_spec_t *k = &g_schema[i];
        const char *dot = strchr(k->key, '.');
        char value[ACCEL_STR_MAX + 8];
        format_value(cfg, k, value, sizeof value);
        if (dot) {
            size_t len = (size_t)(dot - k->key);
            if (strlen(section) != len || strncmp(section, k->key, len)) {
                snprintf(section, sizeof section, "%.*s", (int)len, k->key);
                fprintf(out, "%s:\n", section);
            }
            if (comments)
                fprintf(out, "  # %s%s%s\n", k->help, k->choices ? ": " : "", k->choices ? k->choices : "");
            fprintf(out, "  %s: %s\n", dot + 1, value);
        } else {
            section[0] = '\0';
            if (comments)
                fprintf(out, "# %s%s%s\n", k->help, k->choices ? ": " : "", k->choices ? k->choices : "");
            fprintf(out, "%s: %s\n", k->key, value);
        }
    }
}

void accel_config_print(const accel_config_t *cfg, FILE *out) { emit_yaml(cfg, out, false); }

void accel_config_print_commented(const accel_config_t *cfg, FILE *out) { emit_yaml(cfg, out, true); }

char *accel_config_to_yaml(const accel_config_t *cfg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    emit_yaml(cfg, f, false);
    fclose(f);
    return buf;
}

accel_status_t accel_config_adopt_model(accel_config_t *cfg, const accel_config_t *from, const char *what,
                                        const char *const *free_keys, char *err, size_t errlen)
{
    accel_config_t defaults;
    accel_config_defaults(&defaults);
    for (size_t i = 0; i < NKEYS; i++) {
        const key_spec_t *k = &g_schema[i];
        if (strncmp(k->key, "model.", 6) || !strcmp(k->key, "model.plugin")) continue;
        bool is_free = false;
        for (const char *const *fk = free_keys; fk && *fk; fk++) is_free |= !strcmp(*fk, k->key);
        char mine[ACCEL_STR_MAX + 8], theirs[ACCEL_STR_MAX + 8], def[ACCEL_STR_MAX + 8];
        format_value(cfg, k, mine, sizeof mine);
        format_value(from, k, theirs, sizeof theirs);
        format_value(&defaults, k, def, sizeof def);
        bool user_set = strcmp(mine, def) != 0;
        if (is_free && user_set) continue;          /* the user's choice, the file does not fix it */
        if (user_set && strcmp(mine, theirs)) {
            snprintf(err, errlen, "%s=%s contradicts %s, which holds a model with %s=%s\n--> hint: drop "
                     "%s from the command line and configuration (the model comes from the file)",
                     k->key, mine, what, k->key, theirs, k->key);
            return ACCEL_ERR_CONFIG;
        }
        memcpy((char *)cfg + k->offset, (const char *)from + k->offset, k->size);
    }
    return ACCEL_OK;
}

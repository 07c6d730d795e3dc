/* The training loop behind accel_train. Each rank computes the gradients of its share of every
 * global batch (scaled by 1/global_batch, times the fp16 loss scale), the distributed state
 * (src/train/dist.c) sums them across ranks — overlapped with backward — and every rank applies the
 * same update to what it owns. Decisions every rank must share (the loss, an overflow, a stop
 * request, the gradient norm) travel in one small allreduce per step. */
#include "build_config.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "accel/ckpt.h"
#include "accel/data.h"
#include "accel/dataset.h"
#include "accel/eval.h"
#include "accel/hf.h"
#include "accel/infer.h"
#include "accel/log.h"
#include "accel/memory.h"
#include "accel/timer.h"
#include "accel/tokenizer.h"
#include "accel/trace.h"
#include "accel/trainer.h"
#include "amp.h"
#include "balance.h"
#include "ckpt_writer.h"
#include "devops.h"
#include "dist.h"
#include "flops.h"
#include "init_from.h"
#include "lora.h"
#include "metrics.h"
#include "optim.h"

struct accel_trainer {
    accel_runtime_t *rt;
    const accel_config_t *cfg;
    accel_model_t model;
    accel_lora_t *lora;             /* lora.rank > 0: the adapters trained, the model frozen; else NULL */
    accel_layout_t *state_layout;   /* what the dist, the optimizer and checkpoints hold: the model's
                                     * tensors, or the LoRA adapters' */
    accel_dist_t *dist;
    accel_loss_scaler_t scaler;
    accel_optim_t optim;
    accel_balance_t balance;        /* optim.router_bias_update: the selection biases this rank owns */
    accel_sampler_t sampler;
    int micro;                      /* samples per rank per micro-step */
    bool tokens_model;              /* the model reads token rows; else inputs + labels */
    accel_dataset_t *train_set, *val_set; /* NULL: synthetic data */
    int64_t val_samples;
    float *inputs;
    int32_t *targets;
    int32_t *tokens;                /* token rows for language models (micro x (context+1)) */
    uint8_t *loss_mask;             /* their loss masks (filled when the data has them) */
    bool batch_masked;              /* the last load_batch filled loss_mask */
    uint8_t *doc_start;             /* data.document_mask: where documents begin in the token rows */
    int32_t *positions;             /* ... and each input token's position in its document */
    int64_t *index;
    unsigned char *valid;           /* evaluation: 0 marks a padding duplicate */
    char train_set_path[ACCEL_STR_MAX];
    /* The tokenizer the data was made with (name and hash on every rank; the tokenizer.json bytes
     * on rank 0, which saves checkpoints' metadata and prints the sample). */
    char tok_name[ACCEL_TOKENIZER_NAME_MAX], tok_hash[ACCEL_TOKENIZER_HASH_LEN + 8];
    char *tok_json;
    size_t tok_json_len;
    /* The chat template the data's conversations were rendered with (rank 0, NULL: none), else
     * train.init_from's or the resumed checkpoint's: checkpoints keep it for exports. */
    char *chat_template;
    size_t chat_template_len;
    accel_metrics_t *metrics;       /* rank 0: train.metrics, train.tensorboard; else NULL */
    size_t rss_start;               /* resident bytes before any model state existed */
    int start_step;                 /* optimizer steps done before this run (resume) */
    bool resumed;                   /* the state came from a checkpoint (resume) */
    /* Run identity (docs/checkpoint-format.md, "Runs and timelines"): random at a fresh start,
     * the checkpoint's on resume; the model's tensor table hash; the ckpt_id this state continues. */
    char run_id[40], model_hash[24], parent_id[24];
    accel_ckpt_writer_t *writer;    /* ckpt.async: the background checkpoint writer; else NULL */
    char session[24];               /* random per process start, the same on every rank: with the
                                     * step it makes each checkpoint's ckpt_id */
    double last_lr;
    bool stop_requested;
    const char *unit_name;          /* progress unit: samples or tokens */
    double units_per_sample;
    double compute_s, update_s;     /* this run: forward+backward and optimizer time */
    accel_device_kind_t device;     /* where the model computes and its state lives */
    double flops_per_sample;        /* the model's training FLOPs per sample (flops.c) */
    double peak_tflops;             /* one rank's peak for MFU; 0 = unknown: no MFU printed */
    bool peak_given;                /* train.peak_tflops set it (else measured or the GPU table) */
    bool mfu_warned;                /* an MFU above 100% was explained once */
};

typedef struct {
    double loss, lr, grad_norm;
    bool stop, skipped;
} step_outcome_t;

/* The parameters the model reads: the dist's arena, or under LoRA the frozen base with the
 * adapters merged. */
static float *model_params(accel_trainer_t *t)
{
    return t->lora ? accel_lora_params(t->lora) : accel_dist_params(t->dist);
}

void accel_trainer_destroy(accel_trainer_t *t)
{
    if (!t) return;
    accel_ckpt_writer_destroy(t->writer);   /* first: a save in flight reads the layout */
    accel_metrics_close(t->metrics);
    free(t->tok_json);
    free(t->chat_template);
    free(t->inputs);
    free(t->targets);
    free(t->tokens);
    free(t->loss_mask);
    free(t->doc_start);
    free(t->positions);
    free(t->index);
    free(t->valid);
    accel_dataset_close(t->val_set);
    accel_dataset_close(t->train_set);
    accel_sampler_free(&t->sampler);
    accel_optim_destroy(&t->optim);
    accel_balance_destroy(&t->balance);
    accel_dist_destroy(t->dist);
    accel_lora_destroy(t->lora);
    accel_model_destroy(&t->model);
    free(t);
}

/* ---------------------------------------------------------------- data */

/* Where the batches come from: an HDF5 dataset (data.path), the Debian text corpus for language
 * models (prepared by rank 0 on first use), or built-in synthetic data. Checks that the data fits
 * the model before any step runs. */
static accel_status_t open_data(accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    const char *path = cfg->data.path;
    if (!strcmp(path, "synthetic") || (!path[0] && !t->tokens_model)) {
        if (cfg->data.document_mask) {
            ACCEL_ERROR0("data.document_mask=true: synthetic data has no documents\n--> hint: set "
                         "data.path to a dataset made by accel_data prepare, or data.document_mask=false");
            return ACCEL_ERR_INVALID;
        }
        t->val_samples = cfg->data.eval_samples;
        return ACCEL_OK;
    }
    if (!path[0]) {
        path = ACCEL_CORPUS_DEFAULT_OUTPUT;
        /* Rank 0 prepares the default corpus once; the others wait, then find it. */
        ACCEL_CHECK(accel_main_first_begin(t->rt, false));
        accel_status_t st = ACCEL_OK;
        struct stat sb;
        if (stat(path, &sb) != 0) {
            char err[1024];
            ACCEL_INFO("preparing the default corpus %s from %s (byte-level tokens)", path,
                       ACCEL_CORPUS_DEFAULT_INPUT);
            if (mkdir("data", 0777) != 0 && errno != EEXIST) {
                ACCEL_ERROR("cannot create directory 'data': %s", strerror(errno));
                st = ACCEL_ERR_IO;
            } else {
                st = accel_corpus_prepare(NULL, 0, path, 0.1, cfg->model.context, NULL, err, sizeof err);
                if (st != ACCEL_OK) ACCEL_ERROR("preparing the default corpus failed: %s", err);
            }
        }
        /* Everyone learns whether it worked, so no rank opens a file that is not there. */
        ACCEL_CHECK(accel_main_first_end(t->rt, false));
        ACCEL_CHECK(accel_agree(t->rt->world, st));
    }
    snprintf(t->train_set_path, sizeof t->train_set_path, "%s", path);
    ACCEL_CHECK(accel_dataset_open(path, "train", cfg->model.context, t->rt->world, &t->train_set));
    ACCEL_CHECK(accel_dataset_open(path, "val", cfg->model.context, t->rt->world, &t->val_set));
    const accel_dataset_info_t *info = accel_dataset_info(t->train_set);
    if (t->tokens_model != (info->kind == ACCEL_DATASET_TOKENS)) {
        ACCEL_ERROR0("%s holds %s data but model '%s' expects %s\n--> hint: use a %s dataset or "
                     "another model", path, info->kind == ACCEL_DATASET_TOKENS ? "token" : "classification",
                     t->model.ops->name, t->tokens_model ? "tokens" : "feature vectors and labels",
                     t->tokens_model ? "token" : "classification");
        return ACCEL_ERR_SHAPE;
    }
    if (t->tokens_model && info->vocab > cfg->model.vocab) {
        ACCEL_ERROR0("%s has a vocabulary of %d tokens but model.vocab is %d\n--> hint: set "
                     "model.vocab=%d", path, info->vocab, cfg->model.vocab, info->vocab);
        return ACCEL_ERR_SHAPE;
    }
    if (!t->tokens_model && (info->features != cfg->model.inputs || info->classes > cfg->model.classes)) {
        ACCEL_ERROR0("%s has %d features and %d classes but the model has model.inputs=%d and "
                     "model.classes=%d\n--> hint: set model.inputs=%d model.classes=%d", path,
                     info->features, info->classes, cfg->model.inputs, cfg->model.classes,
                     info->features, info->classes);
        return ACCEL_ERR_SHAPE;
    }
    t->val_samples = accel_dataset_info(t->val_set)->nsamples;
    ACCEL_INFO("data: %s: %lld training and %lld validation samples%s", path,
               (long long)info->nsamples, (long long)t->val_samples,
               t->tokens_model ? " of context+1 tokens" : "");
    if (!t->tokens_model) return ACCEL_OK;
    if (info->has_loss_mask || accel_dataset_info(t->val_set)->has_loss_mask) {
        if (!t->model.ops->reads_loss_mask) {
            ACCEL_ERROR0("%s has a loss mask (prompt/completion data), which model '%s' does not "
                         "read\n--> hint: train a built-in language model (gpt, llama) on it, or "
                         "give the plugin .reads_loss_mask", path, t->model.ops->name);
            return ACCEL_ERR_UNSUPPORTED;
        }
        ACCEL_INFO("data: a loss mask trains %s; the loss is the mean over the trained tokens of "
                   "each global batch", info->has_loss_mask ? "the marked tokens only (completions, "
                   "assistant messages)" : "all training tokens and the validation split's completions");
    }
    if (cfg->data.document_mask) {
        const bool val_has = accel_dataset_info(t->val_set)->has_document_starts;
        if (!info->has_document_starts || !val_has) {
            ACCEL_ERROR0("data.document_mask=true, but %s does not record where its documents begin "
                         "(its %s split has no document_start)\n--> hint: accel_data prepare records "
                         "them, and accel_data import does for llm.c shards or with --document-start ID; "
                         "or set data.document_mask=false",
                         path, !info->has_document_starts ? "train" : "val");
            return ACCEL_ERR_UNSUPPORTED;
        }
        ACCEL_INFO("data: documents are attended to one at a time (data.document_mask): positions "
                   "restart at each document, whose first token is not a target");
    }
    snprintf(t->tok_name, sizeof t->tok_name, "%s", info->tokenizer);
    snprintf(t->tok_hash, sizeof t->tok_hash, "%s", info->tokenizer_hash);
    accel_status_t st = ACCEL_OK;
    if (t->rt->rank == 0 && info->has_tokenizer_json)
        st = accel_dataset_tokenizer_json(path, &t->tok_json, &t->tok_json_len);
    if (st == ACCEL_ERR_NOT_FOUND) st = ACCEL_OK;
    if (st == ACCEL_OK && t->rt->rank == 0 && info->has_chat_template)
        st = accel_dataset_chat_template(path, &t->chat_template, &t->chat_template_len);
    return accel_agree(t->rt->world, st == ACCEL_ERR_NOT_FOUND ? ACCEL_OK : st);
}

/* data.document_mask: the n rows' document starts (t->doc_start) become each input token's
 * position in its document, and a document's first token stops being a target (it cannot be
 * predicted from the document before: Hugging Face's DataCollatorWithFlattening leaves it out too);
 * without the data's own loss mask (has_mask false) every other target is trained. */
static void document_positions(accel_trainer_t *t, int n, bool has_mask)
{
    const int T = t->cfg->model.context;
    for (int i = 0; i < n; i++) {
        const uint8_t *start = t->doc_start + (size_t)i * (size_t)(T + 1);
        uint8_t *mask = t->loss_mask + (size_t)i * (size_t)(T + 1);
        int32_t *pos = t->positions + (size_t)i * (size_t)T;
        for (int k = 0; k < T; k++) pos[k] = k == 0 || start[k] ? 0 : pos[k - 1] + 1;
        for (int k = 0; k <= T; k++) mask[k] = (has_mask ? mask[k] : 1) && !start[k];
    }
}

/* Fill the batch buffers with samples index[0..n) of the training set or, with val, of the
 * validation set. Dataset read errors can hit one rank alone: the caller agrees before going on. */
static accel_status_t load_batch(accel_trainer_t *t, const int64_t *index, int n, bool val)
{
    const accel_config_t *cfg = t->cfg;
    accel_dataset_t *ds = val ? t->val_set : t->train_set;
    const bool has_mask = ds && accel_dataset_info(ds)->has_loss_mask;
    t->batch_masked = has_mask || (ds && t->doc_start);
    if (ds) {
        accel_status_t st = accel_dataset_read(ds, index, n, t->tokens, t->inputs, t->targets);
        if (st == ACCEL_OK && has_mask) st = accel_dataset_read_loss_mask(ds, index, n, t->loss_mask);
        if (st == ACCEL_OK && t->doc_start) {
            st = accel_dataset_read_document_starts(ds, index, n, t->doc_start);
            if (st == ACCEL_OK) document_positions(t, n, has_mask);
        }
        return st;
    }
    int64_t base = val ? cfg->data.samples : 0;     /* validation samples follow the training ones */
    if (t->tokens_model) {
        for (int i = 0; i < n; i++)
            accel_synthetic_tokens(cfg->seed, cfg->model.vocab, cfg->model.context, base + index[i],
                                   t->tokens + (size_t)i * ((size_t)cfg->model.context + 1));
        return ACCEL_OK;
    }
    for (int i = 0; i < n; i++)
        accel_synthetic_sample(cfg->seed, cfg->model.inputs, cfg->model.classes, cfg->data.noise,
                               base + index[i], t->inputs + (size_t)i * cfg->model.inputs, &t->targets[i]);
    return ACCEL_OK;
}

/* The targets sample i of the last loaded batch trains: all T of them without a loss mask. */
static int sample_targets(const accel_trainer_t *t, int i)
{
    const int T = t->cfg->model.context;
    if (!t->batch_masked) return T;
    const uint8_t *m = t->loss_mask + (size_t)i * (size_t)(T + 1) + 1;
    int n = 0;
    for (int k = 0; k < T; k++) n += m[k];
    return n;
}

/* Distributed evaluation of the validation set: every sample exactly once, padding duplicates of
 * the last global batch dropped by their global index (accel_eval_gather). */
static accel_status_t evaluate(accel_trainer_t *t, double *loss, double *accuracy)
{
    const int m = t->micro, world = t->rt->size, rank = t->rt->rank;
    const int64_t N = t->val_samples, nb = accel_eval_nbatches(N, world, m);
    const size_t rows = nb * m > 0 ? (size_t)(nb * m) : 1;
    float *vals = malloc(sizeof(float) * 2 * rows);
    float *l = malloc(sizeof(float) * (size_t)m);
    int *c = malloc(sizeof(int) * (size_t)m);
    int64_t *all_index = malloc(sizeof(int64_t) * rows);
    unsigned char *all_valid = malloc(rows);
    float *gathered = malloc(sizeof(float) * 2 * (size_t)(N ? N : 1));
    accel_status_t st = vals && l && c && all_index && all_valid && gathered ? ACCEL_OK : ACCEL_ERR_NOMEM;
    for (int64_t b = 0; b < nb && st == ACCEL_OK; b++) {
        accel_eval_indices(N, world, rank, m, b, t->index, t->valid);
        st = load_batch(t, t->index, m, true);
        if (st != ACCEL_OK) break;
        accel_batch_t batch = { .n = m, .inputs = t->inputs, .targets = t->targets, .tokens = t->tokens,
                                .index = t->index, .hooks = t->lora ? NULL : accel_dist_eval_hooks(t->dist),
                                .loss_mask = t->batch_masked ? t->loss_mask : NULL,
                                .positions = t->doc_start ? t->positions : NULL };
        memset(c, 0, sizeof(int) * (size_t)m);
        st = t->model.ops->eval(t->model.state, &t->model.layout, model_params(t), &batch, l, c);
        for (int i = 0; i < m; i++) {
            vals[2 * (b * m + i)] = l[i];
            /* with a loss mask, the sample's trained targets in place of the (unused) accuracy */
            vals[2 * (b * m + i) + 1] = t->batch_masked ? (float)sample_targets(t, i) : (float)c[i];
            all_index[b * m + i] = t->index[i];
            all_valid[b * m + i] = t->valid[i];
        }
    }
    st = accel_agree(t->rt->world, st);     /* a failing rank has said why */
    if (st == ACCEL_OK)
        st = accel_eval_gather(t->rt->world, vals, all_index, all_valid, (int)(nb * m), N, 2, gathered);
    if (st == ACCEL_OK) st = accel_eval_mean(gathered, N, 2, loss, accuracy);
    if (st == ACCEL_OK && t->val_set && (accel_dataset_info(t->val_set)->has_loss_mask || t->doc_start)) {
        /* the mean over the trained targets: sum(sample losses) x T / sum(trained targets) */
        *loss = *accuracy > 0 ? *loss * t->cfg->model.context / *accuracy : NAN;
        *accuracy = 0;
    }
    free(vals); free(l); free(c); free(all_index); free(all_valid); free(gathered);
    return st;
}

/* One evaluation after `step` optimizer steps (periodic or final, the same code so the values
 * compare): a progress line and, with `row`, an eval row in the metrics. */
static accel_status_t evaluate_step(accel_trainer_t *t, int step, double t0, bool row, double *loss,
                                    double *accuracy)
{
    if (t->val_samples == 0) {              /* no held-out set (synthetic data.eval_samples=0) */
        *loss = *accuracy = NAN;
        return ACCEL_OK;
    }
    ACCEL_CHECK(evaluate(t, loss, accuracy));
    if (isnan(*loss)) {                     /* a loss mask that trains none of the held-out tokens */
        ACCEL_WARN0("eval step %d: the validation split's loss mask trains none of its tokens: no "
                    "held-out loss", step);
        return ACCEL_OK;
    }
    char acc[48] = "";
    if (!t->tokens_model) snprintf(acc, sizeof acc, ", accuracy %.1f%%", 100.0 * *accuracy);
    ACCEL_INFO("eval step %d: held-out loss %.4f%s (%lld samples)", step, *loss, acc, (long long)t->val_samples);
    if (row) accel_metrics_eval(t->metrics, step, *loss, *accuracy, (long long)t->val_samples, accel_now() - t0);
    return ACCEL_OK;
}

/* ---------------------------------------------------------------- checkpoints */

/* The state a checkpoint holds: parameters (fp32 master values) and optimizer moments, as this
 * rank owns them (DDP: replicated; ZeRO: one slice per layer), plus the training position. The
 * arenas are host views of them (device memory is copied there first when `download`). A local
 * step that can fail on one rank before collective I/O: every rank agrees on it. */
static accel_status_t state_arenas(accel_trainer_t *t, bool download, accel_ckpt_arena_t *arenas,
                                   int *narenas, accel_ckpt_range_t **ranges)
{
    float *data[3];
    *ranges = NULL;
    accel_status_t st = accel_dist_host_state(t->dist, &t->optim, download, data);
    const accel_range_t *owned;
    int nowned = accel_dist_owned_ranges(t->dist, &owned);
    bool replicated = accel_dist_replicated(t->dist);
    if (st == ACCEL_OK && !replicated) {
        *ranges = malloc(sizeof **ranges * (size_t)(nowned ? nowned : 1));
        if (!*ranges) st = ACCEL_ERR_NOMEM;
    }
    st = accel_agree(t->rt->world, st);
    if (st != ACCEL_OK) {
        free(*ranges);
        *ranges = NULL;
        return st;
    }
    if (!replicated) {
        for (int i = 0; i < nowned; i++)
            (*ranges)[i] = (accel_ckpt_range_t){ owned[i].begin, owned[i].end, owned[i].owned };
    }
    bool adam = t->optim.v != NULL;
    const char *names[3] = { "model", adam ? "optim/exp_avg" : "optim/momentum", "optim/exp_avg_sq" };
    int n = adam ? 3 : 2;
    for (int i = 0; i < n; i++)
        arenas[i] = (accel_ckpt_arena_t){ .name = names[i], .data = data[i], .replicated = replicated,
                                          .ranges = *ranges, .nranges = replicated ? 0 : nowned };
    *narenas = n;
    return ACCEL_OK;
}

/* nbytes random bytes as hex into out (2*nbytes+1 chars): /dev/urandom, else time and pid mixed
 * (an id, not a secret). */
static void random_hex(char *out, int nbytes)
{
    unsigned char b[32];
    int fd = open("/dev/urandom", O_RDONLY);
    ssize_t got = fd >= 0 ? read(fd, b, (size_t)nbytes) : -1;
    if (fd >= 0) close(fd);
    if (got != nbytes) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = XXH64(&ts, sizeof ts, (uint64_t)getpid());
        for (int i = 0; i < nbytes; i++) {
            if (i % 8 == 0) x = XXH64(&x, sizeof x, (uint64_t)i);
            b[i] = (unsigned char)(x >> (8 * (i % 8)));
        }
    }
    for (int i = 0; i < nbytes; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

/* The model's identity in checkpoints: XXH64 of its tensor table (names and shapes). */
static void model_hash(const accel_layout_t *layout, char *out, size_t len)
{
    XXH64_state_t *h = XXH64_createState();
    uint64_t v = 0;
    if (h && XXH64_reset(h, 0) == XXH_OK) {
        for (int i = 0; i < layout->ntensors; i++) {
            const accel_tensor_t *T = &layout->tensors[i];
            XXH64_update(h, T->name, strlen(T->name) + 1);
            XXH64_update(h, T->shape, sizeof T->shape[0] * (size_t)T->ndim);
        }
        v = XXH64_digest(h);
    }
    XXH64_freeState(h);
    snprintf(out, len, "%016llx", (unsigned long long)v);
}

/* debug.hang_at: debug.hang_rank stops responding at `point` until the job is killed (the
 * others' next collective times out and the flight recorder names this rank). */
static void debug_hang(const accel_trainer_t *t, const char *point)
{
    if (strcmp(t->cfg->debug.hang_at, point) || t->cfg->debug.hang_rank != t->rt->rank) return;
    ACCEL_WARN("debug.hang_at=%s: this rank stops responding here", point);
    for (;;) sleep(1);
}

/* How a save ended, said once, whether it ran here or in the background. */
static void save_done(accel_trainer_t *t, accel_status_t st, int step, const char *ckpt_id,
                      const char *path, double seconds, bool background)
{
    if (st == ACCEL_OK) {
        /* The next checkpoint continues this one. */
        snprintf(t->parent_id, sizeof t->parent_id, "%s", ckpt_id);
        ACCEL_INFO("checkpoint: step %d saved to %s in %.2f s%s", step, path, seconds,
                   background ? " (in the background)" : "");
    } else {
        /* accel_ckpt_save said which checkpoint, if any, is intact. */
        ACCEL_ERROR0("checkpoint at step %d was NOT saved (%s)%s", step, accel_status_str(st),
                     background ? "" : "; the training state in memory is unchanged");
    }
}

/* ckpt.async: wait for the save in flight, if any, and say how it ended (its status). */
static accel_status_t finish_background_save(accel_trainer_t *t)
{
    accel_ckpt_writer_done_t d;
    if (!t->writer || !accel_ckpt_writer_wait(t->writer, &d)) return ACCEL_OK;
    save_done(t, d.status, d.step, d.ckpt_id, d.path, d.seconds, true);
    return d.status;
}

/* A checkpoint of the state after steps_done steps. With ckpt.async the state is copied and saved
 * in the background (after the previous background save has finished); `wait` (the run's last
 * save, a stop's) waits for it too. */
static accel_status_t save_checkpoint(accel_trainer_t *t, int steps_done, bool wait)
{
    const accel_config_t *cfg = t->cfg;
    debug_hang(t, "save");
    (void)finish_background_save(t);        /* its outcome is reported; the state is still here */
    accel_ckpt_arena_t arenas[3];
    accel_ckpt_range_t *ranges;
    int n;
    ACCEL_CHECK(state_arenas(t, true, arenas, &n, &ranges));
    accel_ckpt_meta_t meta;
    accel_ckpt_meta_init(&meta);
    meta.step = steps_done;
    meta.tokens = (int64_t)steps_done * cfg->train.global_batch * (int64_t)t->units_per_sample;
    meta.epoch = t->sampler.epoch;
    meta.data_offset = t->sampler.offset;
    meta.rng_seed = cfg->seed;
    meta.lr = t->last_lr;
    meta.sched_step = t->optim.step;
    meta.loss_scale = t->scaler.enabled ? t->scaler.scale : 0;
    meta.loss_scale_good_steps = t->scaler.good_steps;
    meta.skipped_steps = t->scaler.skipped;
    snprintf(meta.strategy, sizeof meta.strategy, "%s", cfg->dist.strategy);
    snprintf(meta.precision, sizeof meta.precision, "%s", cfg->precision);
    meta.config_yaml = accel_config_to_yaml(cfg);
    snprintf(meta.tokenizer, sizeof meta.tokenizer, "%s", t->tok_name);
    snprintf(meta.tokenizer_hash, sizeof meta.tokenizer_hash, "%s", t->tok_hash);
    meta.tokenizer_json = t->tok_json;
    meta.tokenizer_json_len = t->tok_json_len;
    meta.chat_template = t->chat_template;
    meta.chat_template_len = t->chat_template_len;
    /* Every rank computes the same id (HDF5 writes /meta collectively): this start's session and
     * the step, so a rollback that saves the same step again gets a new one. */
    char ckpt_id[24];
    char key[64];
    int klen = snprintf(key, sizeof key, "%s/%d", t->session, steps_done);
    snprintf(ckpt_id, sizeof ckpt_id, "%016llx", (unsigned long long)XXH64(key, (size_t)klen, 0));
    accel_ckpt_meta_set_extra(&meta, ACCEL_CKPT_EXTRA_RUN_ID, t->run_id);
    accel_ckpt_meta_set_extra(&meta, ACCEL_CKPT_EXTRA_MODEL_HASH, t->model_hash);
    accel_ckpt_meta_set_extra(&meta, ACCEL_CKPT_EXTRA_CKPT_ID, ckpt_id);
    accel_ckpt_meta_set_extra(&meta, ACCEL_CKPT_EXTRA_PARENT_ID, t->parent_id);
    if (t->writer) {
        double copy_s = 0;
        accel_status_t st = accel_ckpt_writer_start(t->writer, cfg->ckpt.dir, t->state_layout, arenas, n,
                                                    &meta, cfg->ckpt.keep_last, steps_done, ckpt_id,
                                                    &copy_s);
        free(ranges);                       /* the writer keeps copies; config_yaml is its now */
        if (st != ACCEL_OK) {
            free(meta.config_yaml);         /* unless it never started */
            save_done(t, st, steps_done, ckpt_id, "", 0, false);
            return st;
        }
        ACCEL_INFO("checkpoint: step %d copied in %.3f s, saving in the background", steps_done, copy_s);
        return wait ? finish_background_save(t) : ACCEL_OK;
    }
    char path[ACCEL_CKPT_PATH_MAX] = "";
    double t0 = accel_now();
    accel_status_t st = accel_ckpt_save(t->rt->world, cfg->ckpt.dir, t->state_layout, arenas, n, &meta,
                                        cfg->ckpt.keep_last, path);
    free(meta.config_yaml);
    free(ranges);
    save_done(t, st, steps_done, ckpt_id, path, accel_now() - t0, false);
    return st;
}

/* resume=auto's choice (rank 0): a checkpoint of another model belongs to another run. */
static accel_status_t same_model(const accel_trainer_t *t, const char *path)
{
    accel_ckpt_meta_t m;
    accel_status_t st = accel_ckpt_read_meta(path, &m);
    const char *mh = st == ACCEL_OK ? accel_ckpt_meta_get_extra(&m, ACCEL_CKPT_EXTRA_MODEL_HASH) : NULL;
    const char *rid = st == ACCEL_OK ? accel_ckpt_meta_get_extra(&m, ACCEL_CKPT_EXTRA_RUN_ID) : NULL;
    st = ACCEL_OK;
    if (mh && *mh && strcmp(mh, t->model_hash)) {
        ACCEL_ERROR("resume=auto: cannot resume from %s: it belongs to another run (run_id %s, model "
                    "%s), and this run (new run_id %s, model %s) has another model; %s/latest names "
                    "that run's checkpoint\n--> hint: give this run its own ckpt.dir, or name the "
                    "checkpoint to start from with resume=PATH", path, rid && *rid ? rid : "unknown", mh,
                    t->run_id, t->model_hash, t->cfg->ckpt.dir);
        st = ACCEL_ERR_CONFIG;
    }
    accel_ckpt_meta_free(&m);
    return st;
}

/* resume=auto: the newest complete checkpoint in ckpt.dir (none: start fresh); resume=PATH: that
 * file. Restores parameters, optimizer moments, the schedule, the loss scale and the data position,
 * whatever world size or strategy wrote it. */
static accel_status_t resume(accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    if (!cfg->resume[0]) return ACCEL_OK;
    char path[ACCEL_CKPT_PATH_MAX] = "";
    int found = 1;
    if (!strcmp(cfg->resume, "auto")) {
        if (!cfg->ckpt.dir[0]) {
            ACCEL_ERROR0("resume=auto needs ckpt.dir (where to look for checkpoints)");
            return ACCEL_ERR_CONFIG;
        }
        if (t->rt->rank == 0) found = accel_ckpt_find_latest(cfg->ckpt.dir, path) == ACCEL_OK;
        ACCEL_CHECK(accel_mpi_bcast(&found, 1, MPI_INT, 0, t->rt->world, "bcast-resume"));
        ACCEL_CHECK(accel_mpi_bcast(path, sizeof path, MPI_CHAR, 0, t->rt->world, "bcast-resume"));
        if (!found) {
            ACCEL_INFO("resume=auto: no checkpoint in %s yet; starting from step 0", cfg->ckpt.dir);
            return ACCEL_OK;
        }
        /* Never continue another run's checkpoint (a shared ckpt.dir): its model must be ours. */
        ACCEL_CHECK(accel_agree(t->rt->world, t->rt->rank == 0 ? same_model(t, path) : ACCEL_OK));
    } else {
        snprintf(path, sizeof path, "%s", cfg->resume);
    }
    accel_ckpt_arena_t arenas[3];
    accel_ckpt_range_t *ranges;
    int n;
    ACCEL_CHECK(state_arenas(t, false, arenas, &n, &ranges));
    accel_ckpt_meta_t meta;
    accel_ckpt_meta_init(&meta);
    accel_status_t st = accel_ckpt_load(t->rt->world, path, t->state_layout, arenas, n, &meta);
    free(ranges);
    if (st != ACCEL_OK) {
        ACCEL_ERROR0("cannot resume from %s: %s\n--> hint: 'accel_ckpt verify %s' says what is wrong; "
                     "training does not start from a partial or mismatched state", path,
                     accel_status_str(st), path);
        accel_ckpt_meta_free(&meta);
        return st;
    }
    if (meta.step >= cfg->train.steps)
        ACCEL_WARN0("%s is at step %lld, which is not below train.steps=%d: nothing left to train",
                    path, (long long)meta.step, cfg->train.steps);
    t->start_step = (int)meta.step;
    t->resumed = true;
    /* A template the data lacks came from train.init_from at the run's start: keep it. */
    if (t->rt->rank == 0 && !t->chat_template && meta.chat_template) {
        t->chat_template = meta.chat_template;
        t->chat_template_len = meta.chat_template_len;
        meta.chat_template = NULL;
    }
    /* The run goes on under the checkpoint's identity (an older file has none: keep the new id). */
    const char *rid = accel_ckpt_meta_get_extra(&meta, ACCEL_CKPT_EXTRA_RUN_ID);
    const char *cid = accel_ckpt_meta_get_extra(&meta, ACCEL_CKPT_EXTRA_CKPT_ID);
    if (rid && *rid) snprintf(t->run_id, sizeof t->run_id, "%s", rid);
    snprintf(t->parent_id, sizeof t->parent_id, "%s", cid ? cid : "");
    t->optim.step = meta.sched_step;
    t->last_lr = meta.lr;
    if (t->scaler.enabled && meta.loss_scale > 0) {
        t->scaler.scale = meta.loss_scale;
        t->scaler.good_steps = (int)meta.loss_scale_good_steps;
    }
    t->scaler.skipped = meta.skipped_steps;
    accel_sampler_seek(&t->sampler, meta.epoch, meta.data_offset);
    ACCEL_INFO("resumed from %s: step %lld (saved by %d rank%s with %s, %s); data at epoch %lld, "
               "sample %lld", path, (long long)meta.step, meta.world_size, meta.world_size == 1 ? "" : "s",
               meta.strategy, meta.precision, (long long)meta.epoch, (long long)meta.data_offset);
    accel_ckpt_meta_free(&meta);
    return accel_dist_host_state_loaded(t->dist, &t->optim);
}

/* The tokenizer of train.init_from's weights (tok, on rank 0; NULL when they keep none) against the
 * data's: a model trained on other token ids would learn from noise. Data without a known
 * tokenizer (a pre-tokenized import) takes the weights' one, so checkpoints and exports carry it. */
static accel_status_t init_from_tokenizer(accel_trainer_t *t, const char *path, const accel_tokenizer_t *tok)
{
    if (!tok || !t->tokens_model || !t->train_set) return ACCEL_OK;
    const char *hash = accel_tokenizer_hash(tok);
    if ((t->tok_hash[0] && strcmp(t->tok_hash, hash)) || !strcmp(t->tok_name, ACCEL_TOKENIZER_BYTES)) {
        ACCEL_ERROR("the data %s was made with tokenizer '%s'%s%s%s but train.init_from=%s was "
                    "trained with tokenizer '%s' (xxh64 %s)\n--> hint: prepare the data with the "
                    "model's tokenizer: accel_data prepare --tokenizer %s ...", t->train_set_path,
                    t->tok_name, t->tok_hash[0] ? " (xxh64 " : "", t->tok_hash, t->tok_hash[0] ? ")" : "",
                    path, accel_tokenizer_name(tok), hash, path);
        return ACCEL_ERR_SHAPE;
    }
    if (t->tok_json) return ACCEL_OK;
    size_t len = 0;
    const char *json = accel_tokenizer_json(tok, &len);
    if (!(t->tok_json = malloc(len + 1))) return ACCEL_ERR_NOMEM;
    memcpy(t->tok_json, json, len);
    t->tok_json[len] = '\0';
    t->tok_json_len = len;
    snprintf(t->tok_name, sizeof t->tok_name, "%s", accel_tokenizer_name(tok));
    snprintf(t->tok_hash, sizeof t->tok_hash, "%s", hash);
    ACCEL_INFO("tokenizer: the data records none; checkpoints keep train.init_from's '%s'", t->tok_name);
    return ACCEL_OK;
}

/* LoRA's train.init_from: the frozen base into the model's arena on every start, resumed or not (a
 * checkpoint holds the adapters only); a PEFT adapter directory gives its base and, on a fresh start,
 * the adapters to train further. Then the model reads W0 + scale B A. */
static accel_status_t lora_init_from(accel_trainer_t *t)
{
    const char *path = t->cfg->train.init_from;
    char base[ACCEL_STR_MAX], err[1024] = "";
    const bool adapter = accel_hf_is_adapter(path);
    accel_status_t st = adapter ? accel_hf_base_of(path, base, sizeof base, err, sizeof err) : ACCEL_OK;
    if (st != ACCEL_OK) {
        ACCEL_ERROR0("train.init_from=%s: %s", path, err);
        return st;
    }
    double t0 = accel_now();
    accel_tokenizer_t *tok = NULL;
    char *chat = NULL;
    size_t chat_len = 0;
    const bool first = t->rt->rank == 0 && !t->resumed;
    st = accel_init_from_load(t->rt->world, adapter ? base : path, &t->model.layout, accel_lora_params(t->lora),
                              true, NULL, 0, first ? &tok : NULL, first ? &chat : NULL, &chat_len);
    if (st != ACCEL_OK) {
        ACCEL_ERROR0("cannot read the base model of train.init_from=%s: %s", path, accel_status_str(st));
        return st;
    }
    st = accel_agree(t->rt->world, t->resumed ? ACCEL_OK : init_from_tokenizer(t, path, tok));
    accel_tokenizer_free(tok);
    if (st == ACCEL_OK && chat && !t->chat_template && t->tokens_model && t->train_set) {
        t->chat_template = chat;
        t->chat_template_len = chat_len;
        chat = NULL;
    }
    free(chat);
    if (st != ACCEL_OK) return st;
    ACCEL_CHECK(accel_lora_base_loaded(t->lora));
    if (adapter && !t->resumed) {           /* the adapter's factors in place of fresh ones */
        float *data[3];
        ACCEL_CHECK(accel_agree(t->rt->world, accel_dist_host_state(t->dist, &t->optim, true, data)));
        float *full = NULL;
        st = accel_arena_alloc(t->state_layout, &full);
        if (st == ACCEL_OK) st = accel_lora_read_adapter(t->lora, path, full);
        const accel_range_t *r;
        const int nr = accel_dist_owned_ranges(t->dist, &r);
        for (int i = 0; st == ACCEL_OK && i < nr; i++)
            memcpy(data[0] + r[i].owned, full + r[i].begin, sizeof(float) * (r[i].end - r[i].begin));
        accel_arena_free(full);
        ACCEL_CHECK(accel_agree(t->rt->world, st));
        ACCEL_CHECK(accel_dist_host_state_loaded(t->dist, &t->optim));
    }
    accel_lora_merge(t->lora, accel_dist_params(t->dist));
    size_t elements;
    const size_t n = accel_lora_targets(t->lora, &elements);
    ACCEL_INFO("LoRA: the base from %s read in %.2f s and frozen; %zu modules adapted (%zu weights), rank %d, "
               "scale %g, %zu adapter parameters trained%s", adapter ? base : path, accel_now() - t0, n, elements,
               t->cfg->lora.rank, (double)accel_lora_scale(t->lora), accel_layout_params(t->state_layout),
               t->resumed ? " (resumed)" : adapter ? ", from the adapter's factors" : "");
    return ACCEL_OK;
}

/* train.init_from: the parameters from a weights file, everything else fresh (step 0, optimizer
 * moments zero, the schedule and the data from the start). A resumed run keeps its checkpoint. */
static accel_status_t init_from(accel_trainer_t *t)
{
    const char *path = t->cfg->train.init_from;
    if (t->lora) return lora_init_from(t);
    if (!path[0]) return ACCEL_OK;
    if (t->resumed) {
        ACCEL_INFO("note: resuming from a checkpoint, so train.init_from=%s is ignored (it only "
                   "starts a new run)", path);
        return ACCEL_OK;
    }
    float *data[3];
    accel_status_t st = accel_agree(t->rt->world, accel_dist_host_state(t->dist, &t->optim, true, data));
    if (st != ACCEL_OK) return st;
    const accel_range_t *ranges;
    int nranges = accel_dist_owned_ranges(t->dist, &ranges);
    double t0 = accel_now();
    accel_tokenizer_t *tok = NULL;
    char *chat = NULL;
    size_t chat_len = 0;
    st = accel_init_from_load(t->rt->world, path, &t->model.layout, data[0], accel_dist_replicated(t->dist),
                              ranges, nranges, t->rt->rank == 0 ? &tok : NULL, t->rt->rank == 0 ? &chat : NULL,
                              &chat_len);
    if (st != ACCEL_OK) {
        ACCEL_ERROR0("cannot start from train.init_from=%s: %s\n--> hint: the model keys must describe "
                     "these weights (they come from the file when it stores a configuration)", path,
                     accel_status_str(st));
        return st;
    }
    st = accel_agree(t->rt->world, init_from_tokenizer(t, path, tok));
    accel_tokenizer_free(tok);
    /* The weights' chat template, when the data keeps none (e.g. plain text on an instruct model):
     * the checkpoints then export with it. */
    if (st == ACCEL_OK && chat && !t->chat_template && t->tokens_model && t->train_set) {
        t->chat_template = chat;
        t->chat_template_len = chat_len;
        chat = NULL;
        ACCEL_INFO("chat template: the data keeps none; checkpoints keep train.init_from's (%zu bytes)",
                   t->chat_template_len);
    }
    free(chat);
    if (st != ACCEL_OK) return st;
    ACCEL_CHECK(accel_dist_host_state_loaded(t->dist, &t->optim));
    ACCEL_INFO("initialised the parameters from train.init_from=%s in %.2f s; step 0, fresh optimizer "
               "and schedule", path, accel_now() - t0);
    return ACCEL_OK;
}

/* lora.rank > 0: what LoRA cannot do here is refused by name, then the adapters are made. */
static accel_status_t lora_setup(accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    if (!cfg->train.init_from[0]) {
        ACCEL_ERROR0("lora.rank=%d needs train.init_from: the model whose weights stay frozen under the "
                     "adapters\n--> hint: train.init_from=a Hugging Face model directory, an accel "
                     "checkpoint or a PEFT adapter directory (trained further)", cfg->lora.rank);
        return ACCEL_ERR_CONFIG;
    }
    if (t->device != ACCEL_DEVICE_CPU) {
        ACCEL_ERROR0("lora.rank=%d: LoRA training runs on the CPU so far, and this job computes on %s\n--> "
                     "hint: device=cpu", cfg->lora.rank, cfg->device);
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (cfg->dist.strategy_id == ACCEL_ZERO3) {
        ACCEL_ERROR0("lora.rank=%d with dist.strategy=zero3: every rank keeps the frozen base whole, and "
                     "zero3 would shard only the adapters\n--> hint: ddp, zero1 or zero2 (the adapters' "
                     "optimizer state is small)", cfg->lora.rank);
        return ACCEL_ERR_CONFIG;
    }
    if (cfg->optim.router_bias_update > 0) {
        ACCEL_ERROR0("lora.rank=%d freezes the base, the routers' selection biases too: "
                     "optim.router_bias_update=%g would move them\n--> hint: optim.router_bias_update=0",
                     cfg->lora.rank, cfg->optim.router_bias_update);
        return ACCEL_ERR_CONFIG;
    }
    return accel_lora_create(cfg, &t->model.layout, &t->lora);
}

/* Where this job computes: the runtime's device, unless the model has no path there (then
 * device=cuda is an error naming the model, and device=auto trains on the CPU, saying why). */
static accel_status_t choose_device(accel_trainer_t *t)
{
    t->device = t->rt->device.kind;
    char why[512];
    if (t->cfg->lora.rank > 0 && t->device != ACCEL_DEVICE_CPU)     /* lora_setup refuses device=cuda */
        snprintf(why, sizeof why, "LoRA training (lora.rank) runs on the CPU so far");
    else if (t->device == ACCEL_DEVICE_CPU || accel_model_runs_on(t->cfg, t->device, why, sizeof why))
        return ACCEL_OK;
    if (!strcmp(t->cfg->device, "cuda")) return ACCEL_OK;   /* accel_model_create_on says why */
    const char *reason = strncmp(why, "device=cuda: ", 13) ? why : why + 13;
    int len = (int)strcspn(reason, "\n");
    ACCEL_WARN0("device=auto: %.*s, so this job trains on the CPU although a GPU is present\n"
                "--> hint: set device=cpu to silence this", len, reason);
    t->device = ACCEL_DEVICE_CPU;
    return ACCEL_OK;
}

/* ------------------------------------------------------------------ start-up checks of outputs */

/* Open MPI 4.1's default MPI-IO component (ompio) aborts the process (glibc's buffer overflow check)
 * when MPI_File_open gets a path longer than 244 characters: measured with Open MPI 4.1.4, 245
 * aborts, 244 works, with 1 and 2 ranks, absolute or relative (romio321 has no such limit). The
 * checkpoint files and the datasets are opened through MPI-IO, so longer paths are refused here
 * instead of killing the job at its first save. */
#define MPIIO_PATH_MAX 244

static bool romio_selected(void)
{
    const char *io = getenv("OMPI_MCA_io");
    return io && io[0] != '^' && strstr(io, "romio");
}

static accel_status_t mpiio_path_ok(const char *key, const char *value, const char *example, size_t len)
{
    if (len <= MPIIO_PATH_MAX || romio_selected()) return ACCEL_OK;
    ACCEL_ERROR("%s=%s: the path accel opens through MPI-IO (%s) has %zu characters, but Open MPI's "
                "MPI-IO component ompio aborts the process above %d\n--> hint: use a shorter path "
                "(e.g. a symbolic link to the directory), or run with mpirun --mca io romio321",
                key, value, example, len, MPIIO_PATH_MAX);
    return ACCEL_ERR_CONFIG;
}

/* mkdir -p (0 or -1 with errno). */
static int make_dirs(const char *dir)
{
    char buf[ACCEL_STR_MAX + 8];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) { errno = ENAMETOOLONG; return -1; }
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) && errno != EEXIST) return -1;
    struct stat sb;
    if (stat(buf, &sb)) return -1;
    if (!S_ISDIR(sb.st_mode)) { errno = ENOTDIR; return -1; }
    return 0;
}

/* The directory exists (created if needed) and a file can be created in it: a probe file, removed
 * at once (access() would say yes to root on a read-only mount). */
static accel_status_t dir_writable(const char *key, const char *dir)
{
    char probe[ACCEL_STR_MAX + 64];
    int fd = -1;
    if (make_dirs(dir) == 0) {
        snprintf(probe, sizeof probe, "%s/.accel-write-test.%ld", dir, (long)getpid());
        fd = open(probe, O_WRONLY | O_CREAT | O_EXCL, 0644);
    }
    if (fd < 0) {
        ACCEL_ERROR("%s=%s: cannot write there: %s\n--> hint: give a directory this job can create and "
                    "write (checked before step 1, so no training is lost at the first write)", key, dir,
                    strerror(errno));
        return ACCEL_ERR_IO;
    }
    close(fd);
    unlink(probe);
    return ACCEL_OK;
}

/* Every output path is writable, and every path opened through MPI-IO short enough, before the
 * first step: a read-only ckpt.dir used to show only at the first save, after the run. Rank 0
 * checks (the paths are shared); every rank learns the verdict. */
static accel_status_t check_outputs(const accel_runtime_t *rt, const accel_config_t *cfg)
{
    accel_status_t st = ACCEL_OK;
    if (rt->rank == 0) {
        char name[64];
        if (cfg->ckpt.dir[0]) {
            int n = snprintf(name, sizeof name, "/step-%08d.h5.tmp", cfg->train.steps);
            char example[ACCEL_STR_MAX + 64];
            snprintf(example, sizeof example, "%s%s", cfg->ckpt.dir, name);
            st = mpiio_path_ok("ckpt.dir", cfg->ckpt.dir, example, strlen(cfg->ckpt.dir) + (size_t)n);
            if (st == ACCEL_OK) st = dir_writable("ckpt.dir", cfg->ckpt.dir);
        }
        if (st == ACCEL_OK && cfg->data.path[0] && strcmp(cfg->data.path, "synthetic"))
            st = mpiio_path_ok("data.path", cfg->data.path, cfg->data.path, strlen(cfg->data.path));
        if (st == ACCEL_OK && cfg->resume[0] && strcmp(cfg->resume, "auto"))
            st = mpiio_path_ok("resume", cfg->resume, cfg->resume, strlen(cfg->resume));
        if (st == ACCEL_OK && cfg->train.metrics[0]) {
            /* A fresh run rewrites the metrics file: never a file of another kind (a checkpoint or a
             * dataset named by mistake). JSON lines start with '{'. */
            FILE *f = fopen(cfg->train.metrics, "rb");
            int c = f ? fgetc(f) : EOF;
            if (f) fclose(f);
            if (c != EOF && c != '{') {
                ACCEL_ERROR("train.metrics=%s exists and is not a metrics file (JSON lines); refusing "
                            "to overwrite it\n--> hint: name another file, or remove it yourself",
                            cfg->train.metrics);
                return accel_agree(rt->world, ACCEL_ERR_CONFIG);
            }
            /* Append mode: creates a missing file, changes nothing in an existing one. */
            f = fopen(cfg->train.metrics, "a");
            if (!f) {
                ACCEL_ERROR("train.metrics=%s: cannot write it: %s\n--> hint: give a file in an "
                            "existing directory this job can write, or train.metrics= (empty) for "
                            "none", cfg->train.metrics, strerror(errno));
                st = ACCEL_ERR_IO;
            } else {
                fclose(f);
            }
        }
        /* train.tensorboard: accel_metrics_open creates and opens its event file before step 1. */
    }
    return accel_agree(rt->world, st);
}

/* optim.router_bias_update: the model must have selection biases to move (DeepSeek-V3's routing),
 * in host memory (the CPU decoder's). */
static accel_status_t setup_balance(accel_trainer_t *t, const accel_range_t *ranges, int nranges)
{
    const double rate = t->cfg->optim.router_bias_update;
    bool any = false;
    for (int i = 0; i < t->model.layout.ntensors; i++)
        any |= (t->model.layout.tensors[i].flags & ACCEL_TENSOR_LOADS) != 0;
    if (rate > 0 && (!any || !accel_dist_devops(t->dist)->host)) {
        ACCEL_ERROR0("optim.router_bias_update=%g moves the selection biases of DeepSeek-V3's routing, which this "
                     "model %s\n--> hint: model.name=llama with model.experts, model.router_scores=sigmoid and "
                     "model.router_select_bias=true (on the CPU), or leave optim.router_bias_update at 0", rate,
                     any ? "keeps in device memory" : "has not");
        return ACCEL_ERR_CONFIG;
    }
    return rate > 0 ? accel_balance_create(&t->model.layout, ranges, nranges, &t->balance) : ACCEL_OK;
}

/* A checkpoint directory belongs to one run (rank 0, after resume): a new run does not move into a
 * directory holding another run's checkpoints (its saves would take over `latest`, so that run's
 * resume=auto would continue this one), and a resumed run only into its own. */
static accel_status_t check_ckpt_owner(const accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    char path[ACCEL_CKPT_PATH_MAX];
    if (!cfg->ckpt.dir[0] || accel_ckpt_find_latest(cfg->ckpt.dir, path) != ACCEL_OK) return ACCEL_OK;
    accel_ckpt_meta_t m;
    const char *rid = accel_ckpt_read_meta(path, &m) == ACCEL_OK ? accel_ckpt_meta_get_extra(&m, ACCEL_CKPT_EXTRA_RUN_ID) : NULL;
    char other[64];
    snprintf(other, sizeof other, "%s", rid && *rid ? rid : "");
    accel_ckpt_meta_free(&m);
    if (!t->resumed) {
        ACCEL_ERROR("ckpt.dir=%s already holds checkpoints of another run (newest: %s, run_id %s); "
                    "this new run (run_id %s) would take over %s/latest and mix its checkpoints with "
                    "them\n--> hint: resume=auto to continue that run, another ckpt.dir for a new run, "
                    "or remove the old checkpoints first", cfg->ckpt.dir, path, other[0] ? other : "unknown",
                    t->run_id, cfg->ckpt.dir);
        return ACCEL_ERR_CONFIG;
    }
    if (other[0] && strcmp(other, t->run_id)) {
        ACCEL_ERROR("ckpt.dir=%s holds checkpoints of another run (newest: %s, run_id %s), but this run "
                    "continues run %s (resume=%s)\n--> hint: give this run its own ckpt.dir",
                    cfg->ckpt.dir, path, other, t->run_id, cfg->resume);
        return ACCEL_ERR_CONFIG;
    }
    return ACCEL_OK;
}

accel_status_t accel_trainer_create(accel_runtime_t *rt, const accel_config_t *cfg,
                                    accel_trainer_t **out)
{
    *out = NULL;
    if (cfg->train.steps < 1) {
        ACCEL_ERROR0("train.steps must be at least 1 (got %d)", cfg->train.steps);
        return ACCEL_ERR_CONFIG;
    }
    const struct { const char *key; int rank; } debug_ranks[] = {   /* need the world size */
        { "debug.stop_rank", cfg->debug.stop_rank },
        { "debug.overflow_rank", cfg->debug.overflow_rank },
        { "debug.hang_rank", cfg->debug.hang_rank },
    };
    for (size_t i = 0; i < sizeof debug_ranks / sizeof debug_ranks[0]; i++)
        if (debug_ranks[i].rank >= rt->size) {
            ACCEL_ERROR0("%s=%d, but this job has %d rank(s)\n--> hint: name a rank below %d",
                         debug_ranks[i].key, debug_ranks[i].rank, rt->size, rt->size);
            return ACCEL_ERR_CONFIG;
        }
    const int mb = cfg->train.micro_batch;
    if (mb == ACCEL_AUTO || (mb > 0 && (int64_t)mb * rt->size * cfg->train.grad_accum != cfg->train.global_batch)) {
        ACCEL_ERROR0("train.micro_batch=%s is not planned: train.grad_accum=%d x %d ranks x %s does "
                     "not make the global batch %d\n--> hint: call accel_trainer_plan_batch before "
                     "accel_trainer_create", cfg->train.micro_batch == ACCEL_AUTO ? "auto" : "N",
                     cfg->train.grad_accum, rt->size, mb == ACCEL_AUTO ? "auto" : "micro_batch",
                     cfg->train.global_batch);
        return ACCEL_ERR_CONFIG;
    }
    ACCEL_CHECK(check_outputs(rt, cfg));
    accel_trainer_t *t = calloc(1, sizeof *t);
    if (!t) return ACCEL_ERR_NOMEM;
    t->rss_start = accel_memory_resident();
    t->rt = rt;
    t->cfg = cfg;
    accel_status_t st;
    char err[512] = "";
    ACCEL_CHECK_GOTO(choose_device(t), st, fail);
    ACCEL_CHECK_GOTO(accel_model_create_on(cfg, t->device, &t->model), st, fail);
    if (cfg->lora.rank > 0) ACCEL_CHECK_GOTO(lora_setup(t), st, fail);
    t->state_layout = t->lora ? accel_lora_layout(t->lora) : &t->model.layout;
    ACCEL_CHECK_GOTO(accel_dist_create(rt, cfg, t->model.ops, t->device, t->state_layout, &t->dist),
                     st, fail);
    ACCEL_CHECK_GOTO(accel_dist_init_params(t->dist, cfg->seed), st, fail);
    ACCEL_CHECK_GOTO(accel_optim_create_on(&cfg->optim, cfg->train.steps, accel_dist_owned_numel(t->dist),
                                           accel_dist_devops(t->dist), &t->optim), st, fail);
    const accel_range_t *ranges;
    int nranges = accel_dist_owned_ranges(t->dist, &ranges);
    for (int i = 0; i < nranges; i++)
        accel_optim_mark_decay(&t->optim, t->state_layout, ranges[i].begin, ranges[i].end, ranges[i].owned);
    ACCEL_CHECK_GOTO(setup_balance(t, ranges, nranges), st, fail);
    accel_loss_scaler_init(&t->scaler, cfg->precision_id == ACCEL_F16, cfg->train.loss_scale,
                           cfg->train.loss_scale_window);
    t->tokens_model = t->model.ops->consumes_tokens;
    ACCEL_CHECK_GOTO(open_data(t), st, fail);
    int64_t ntrain = t->train_set ? accel_dataset_info(t->train_set)->nsamples : cfg->data.samples;
    st = accel_sampler_init(&t->sampler, cfg->seed, ntrain, cfg->train.global_batch,
                            cfg->train.grad_accum, rt->size, rt->rank, true, err, sizeof err);
    if (st != ACCEL_OK) {
        ACCEL_ERROR0("%s%s%s", err, t->train_set ? " in " : "", t->train_set ? t->train_set_path : "");
        goto fail;
    }
    t->sampler.drop_last = cfg->data.drop_last;
    t->micro = accel_sampler_micro_batch(&t->sampler);
    t->unit_name = t->tokens_model ? "tokens" : "samples";
    t->units_per_sample = t->tokens_model ? cfg->model.context : 1.0;
    size_t m = (size_t)t->micro;
    t->index = malloc(sizeof(int64_t) * m);
    t->valid = malloc(m);
    if (t->tokens_model) {
        t->tokens = malloc(sizeof(int32_t) * m * (size_t)(cfg->model.context + 1));
        t->loss_mask = malloc(m * (size_t)(cfg->model.context + 1));
        if (!t->tokens || !t->loss_mask) { st = ACCEL_ERR_NOMEM; goto fail; }
        if (cfg->data.document_mask) {
            t->doc_start = malloc(m * (size_t)(cfg->model.context + 1));
            t->positions = malloc(sizeof(int32_t) * m * (size_t)cfg->model.context);
            if (!t->doc_start || !t->positions) { st = ACCEL_ERR_NOMEM; goto fail; }
        }
    } else {
        t->inputs = malloc(sizeof(float) * m * (size_t)cfg->model.inputs);
        t->targets = malloc(sizeof(int32_t) * m);
        if (!t->inputs || !t->targets) { st = ACCEL_ERR_NOMEM; goto fail; }
    }
    if (!t->index || !t->valid) { st = ACCEL_ERR_NOMEM; goto fail; }
    model_hash(t->state_layout, t->model_hash, sizeof t->model_hash);
    if (rt->rank == 0) {
        random_hex(t->run_id, 16);                  /* a fresh run's; resume replaces it */
        random_hex(t->session, 8);
    }
    debug_hang(t, "startup");
    ACCEL_CHECK_GOTO(accel_mpi_bcast(t->session, sizeof t->session, MPI_CHAR, 0, rt->world,
                                     "bcast-session"), st, fail);
    ACCEL_CHECK_GOTO(resume(t), st, fail);
    ACCEL_CHECK_GOTO(init_from(t), st, fail);
    ACCEL_CHECK_GOTO(accel_agree(rt->world, rt->rank == 0 ? check_ckpt_owner(t) : ACCEL_OK), st, fail);
    ACCEL_CHECK_GOTO(accel_mpi_bcast(t->run_id, sizeof t->run_id, MPI_CHAR, 0, rt->world,
                                     "bcast-run-id"), st, fail);
    if (cfg->ckpt.dir[0])
        ACCEL_INFO("checkpoints: run_id %s (%s), model %s, in %s", t->run_id, t->resumed ? "resumed" :
                   "a new run", t->model_hash, cfg->ckpt.dir);
    ACCEL_CHECK_GOTO(accel_metrics_open(rt, cfg, t->start_step, t->resumed, t->unit_name, &t->metrics), st, fail);
    if (cfg->ckpt.async && cfg->ckpt.dir[0]) {
        if (!rt->mpi_threads) {
            ACCEL_ERROR0("ckpt.async=true needs an MPI that provides MPI_THREAD_MULTIPLE (the writer "
                         "thread calls MPI while training does); this one does not\n--> hint: "
                         "ckpt.async=false, or an MPI built with thread support");
            st = ACCEL_ERR_CONFIG;
            goto fail;
        }
        ACCEL_CHECK_GOTO(accel_ckpt_writer_create(rt->world, &t->writer), st, fail);
        accel_ckpt_arena_t arenas[3];
        accel_ckpt_range_t *ranges;
        int n;
        ACCEL_CHECK_GOTO(state_arenas(t, false, arenas, &n, &ranges), st, fail);
        st = accel_ckpt_writer_prepare(t->writer, t->state_layout, arenas, n);
        free(ranges);
        if (st != ACCEL_OK) goto fail;
    }
    *out = t;
    return ACCEL_OK;
fail:
    accel_trainer_destroy(t);
    return st;
}

/* The data's tokenizer, to print the sample: the kept tokenizer.json, or "bytes" (also for synthetic
 * data, whose samples then show what the model learnt as bytes); NULL (no sample) for a dataset
 * whose tokens have no known text (pre-tokenized without a tokenizer). */
static bool sample_bytes(const accel_trainer_t *t)
{
    return !strcmp(t->tok_name, ACCEL_TOKENIZER_BYTES) || !t->train_set;
}

static accel_tokenizer_t *sample_tokenizer(const accel_trainer_t *t)
{
    accel_tokenizer_t *tok = NULL;
    char err[1024];
    if (!t->tok_json) return sample_bytes(t) && accel_tokenizer_bytes(&tok) == ACCEL_OK ? tok : NULL;
    if (accel_tokenizer_open_recorded(t->tok_name, t->tok_json, t->tok_json_len, &tok, err,
                                      sizeof err) != ACCEL_OK) {
        ACCEL_WARN("no sample: the data's tokenizer cannot be read: %s", err);
        return NULL;
    }
    return tok;
}

/* A short generated text from the trained language model, in the data's tokenizer. Under ZeRO-3
 * every rank helps gather the full parameters; rank 0 generates. */
static accel_status_t print_sample(accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    const char *prompt = cfg->train.sample_prompt;
    int nnew = cfg->train.sample_tokens;
    if (!prompt[0] || nnew <= 0 || !t->tokens_model) return ACCEL_OK;
    bool known = t->tok_json || (sample_bytes(t) && t->model.vocab >= 256);
    int ok = t->rt->rank == 0 ? known : 0;             /* every rank takes the same branch */
    ACCEL_CHECK(accel_mpi_bcast(&ok, 1, MPI_INT, 0, t->rt->world, "bcast-sample"));
    if (!ok) return ACCEL_OK;
    ACCEL_CHECK(accel_dist_gather_full(t->dist));
    accel_status_t st = ACCEL_OK;
    if (t->rt->rank == 0) {
        accel_tokenizer_t *tok = sample_tokenizer(t);
        int32_t *ids = NULL;
        size_t np = 0, cap = 0;
        char *text = NULL;
        size_t tlen = 0;
        if (tok) {
            cap = (size_t)nnew + 16;
            ids = malloc(sizeof *ids * cap);
            if (!ids) st = ACCEL_ERR_NOMEM;
            if (st == ACCEL_OK && accel_tokenizer_bos(tok) >= 0) ids[np++] = accel_tokenizer_bos(tok);
            if (st == ACCEL_OK) st = accel_tokenizer_encode(tok, prompt, strlen(prompt), &ids, &np, &cap);
            if (st == ACCEL_OK && np + (size_t)nnew > cap) {
                int32_t *p = realloc(ids, sizeof *ids * (np + (size_t)nnew));
                if (p) ids = p;
                else st = ACCEL_ERR_NOMEM;
            }
            for (size_t i = 0; st == ACCEL_OK && i < np; i++)
                if (ids[i] >= t->model.vocab) st = ACCEL_ERR_SHAPE;   /* no sample; training is fine */
            if (st == ACCEL_OK)
                st = accel_model_generate(&t->model, model_params(t), ids, (int)np, nnew, 0.8f,
                                          40, cfg->seed, ids + np);
            if (st == ACCEL_OK && !t->tok_json) {          /* bytes: a larger id shows as '?' */
                if (!(text = malloc((size_t)nnew + 1))) st = ACCEL_ERR_NOMEM;
                for (int i = 0; text && i < nnew; i++) text[i] = ids[np + i] < 256 ? (char)ids[np + i] : '?';
                if (text) text[tlen = (size_t)nnew] = '\0';
            } else if (st == ACCEL_OK) {
                st = accel_tokenizer_decode(tok, ids + np, (size_t)nnew, &text, &tlen);
            }
        }
        if (st == ACCEL_OK && text) {
            /* Control bytes (a byte-level model's early noise) would garble the terminal. */
            for (size_t i = 0; i < tlen; i++)
                if ((unsigned char)text[i] < 32 && text[i] != '\n' && text[i] != '\t') text[i] = '?';
            printf("sample (temperature 0.8, top-k 40):\n%s%s\n", prompt, text);
            fflush(stdout);
        } else if (st == ACCEL_ERR_SHAPE || st == ACCEL_ERR_INVALID) {
            ACCEL_WARN("no sample: the prompt does not encode within model.vocab=%d with tokenizer "
                       "'%s'", t->model.vocab, tok ? accel_tokenizer_name(tok) : "?");
            st = ACCEL_OK;
        }
        free(text);
        free(ids);
        accel_tokenizer_free(tok);
    }
    accel_status_t rel = accel_dist_release_full(t->dist);
    return st != ACCEL_OK ? st : rel;
}

/* The denominator of MFU, printed once: train.peak_tflops, the GPU table, or on CPUs a ~0.2 s
 * product measured by every rank at once (as they will compute), averaged over the ranks. A GPU
 * missing from the table gets no MFU rather than a guess. Collective. */
static accel_status_t setup_mfu(accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    const accel_runtime_t *rt = t->rt;
    t->flops_per_sample = t->units_per_sample *
        (accel_flops_per_unit(t->model.ops->name, t->tokens_model,
                              accel_flops_active_params(cfg, accel_layout_params(&t->model.layout)),
                              accel_flops_attention_layers(cfg), cfg->model.head_dim ? cfg->model.heads * cfg->model.head_dim
                                                                                    : cfg->model.width, cfg->model.context) +
         (t->tokens_model && !cfg->model.plugin[0] ? accel_flops_recurrence(cfg) : 0.0));
    const char *dt = accel_dtype_name(cfg->precision_id), *label;
    t->peak_tflops = cfg->train.peak_tflops;
    t->peak_given = t->peak_tflops > 0;
    if (t->peak_tflops > 0) {
        ACCEL_INFO("peak: %.4g TFLOP/s per rank (train.peak_tflops)", t->peak_tflops);
    } else if (t->device == ACCEL_DEVICE_CUDA) {
        t->peak_tflops = accel_flops_gpu_peak(rt->device.name, cfg->precision_id, &label);
        if (t->peak_tflops > 0)
            ACCEL_INFO("peak: %.4g TFLOP/s per rank (%s, %s dense, datasheet)", t->peak_tflops, label, dt);
        else
            ACCEL_INFO("peak unknown for %s %s: set train.peak_tflops for MFU", rt->device.name, dt);
    } else {
        double mine[2] = { 0, 0 }, all[2];
        int size = 0, reps = 0;
        if (accel_flops_cpu_peak(cfg->precision_id, rt->threads, 0.2, &mine[0], &size, &reps) != ACCEL_OK ||
            !(mine[0] > 0))
            mine[1] = 1;
        ACCEL_CHECK(accel_mpi_allreduce(mine, all, 2, MPI_DOUBLE, MPI_SUM, rt->world, "measured-peak"));
        t->peak_tflops = all[1] > 0 ? 0 : all[0] / rt->size;
        if (t->peak_tflops > 0)
            ACCEL_INFO("peak: %.4g TFLOP/s per rank (measured: best %s %d^3 product of %d in 0.2 s, "
                       "%d thread%s, mean over ranks)", t->peak_tflops, dt, size, reps, rt->threads,
                       rt->threads == 1 ? "" : "s");
        else
            ACCEL_INFO("peak unknown: the %s product measurement failed; set train.peak_tflops for MFU", dt);
    }
    return ACCEL_OK;
}

/* Achieved TFLOP/s per rank at `samples_per_s` over all ranks, and MFU as "<sep>MFU 12.34%" (empty
 * when the peak is unknown). */
static double rank_tflops(const accel_trainer_t *t, double samples_per_s)
{
    return samples_per_s * t->flops_per_sample / t->rt->size / 1e12;
}

static const char *mfu_text(accel_trainer_t *t, const char *sep, double tflops, char *buf,
                            size_t len)
{
    buf[0] = '\0';
    if (!(t->peak_tflops > 0)) return buf;
    snprintf(buf, len, "%sMFU %.2f%%", sep, 100.0 * tflops / t->peak_tflops);
    /* More than the peak: the peak is wrong, most often measured while other work shared the cores. */
    if (tflops > t->peak_tflops && !t->mfu_warned) {
        t->mfu_warned = true;
        ACCEL_WARN0("MFU above 100%%: %.3g TFLOP/s per rank against a peak of %.3g (%s)\n"
                    "--> hint: %s", tflops, t->peak_tflops,
                    t->peak_given ? "train.peak_tflops" : "measured at start-up",
                    t->peak_given ? "train.peak_tflops is one rank's peak in TFLOP/s"
                                  : "the measurement ran while other work shared the cores; set "
                                    "train.peak_tflops, or run on an idle node");
    }
    return buf;
}

static void print_header(const accel_trainer_t *t)
{
    const accel_config_t *cfg = t->cfg;
    const accel_runtime_t *rt = t->rt;
    size_t nparams = accel_layout_params(&t->model.layout);
    ACCEL_INFO("model %s: %zu parameters (%.2f MiB fp32) in %d tensors", t->model.ops->name, nparams,
               nparams * 4.0 / 1048576.0, t->model.layout.ntensors);
    ACCEL_INFO("global batch %d = %d ranks x %d grad_accum x %d micro-batch; %d optimizer steps; "
               "%s lr %.3g, %s schedule, %d warm-up steps", cfg->train.global_batch, rt->size,
               cfg->train.grad_accum, t->micro, cfg->train.steps, cfg->optim.name, cfg->optim.lr,
               cfg->optim.schedule, cfg->optim.warmup);
    ACCEL_INFO("strategy %s%s, precision %s; this rank owns %zu of %zu state elements%s",
               cfg->dist.strategy, cfg->dist.hybrid ? " (hybrid: sharded within nodes)" : "",
               cfg->precision, accel_dist_owned_numel(t->dist), t->state_layout->numel,
               t->lora ? " (LoRA adapters; the base frozen)" : "");
    if (t->device != ACCEL_DEVICE_CPU)
        ACCEL_INFO("device: %s (%s:%d); state and collectives in device memory (%s)", rt->device.name,
                   accel_dist_devops(t->dist)->name, rt->device.index,
                   accel_dist_devops(t->dist)->comm == ACCEL_COMM_NCCL ? "NCCL" : "MPI");
}

/* Signals that ask for a graceful stop (Slurm sends SIGUSR1/SIGTERM before a time limit or
 * preemption): noted here, acted on by every rank together at the next step boundary. */
static volatile sig_atomic_t g_stop_signal;
static void on_stop_signal(int sig) { g_stop_signal = sig; }

void accel_trainer_request_stop(accel_trainer_t *t) { t->stop_requested = true; }

/* One optimizer step: forward/backward over grad_accum micro-batches with the gradient reduction
 * overlapped, then the decisions every rank takes together, then the update. */
static accel_status_t train_step(accel_trainer_t *t, int step, step_outcome_t *out)
{
    const accel_config_t *cfg = t->cfg;
    const accel_layout_t *layout = &t->model.layout;
    const int K = cfg->train.grad_accum;
    const float scale = (float)(t->scaler.scale / cfg->train.global_batch);
    double loss_local = 0, trained_local = 0;
    for (int k = 0; k < K; k++) {
        accel_sampler_indices(&t->sampler, k, t->index);
        /* A read can fail on one rank alone: every rank learns it before the collectives. */
        accel_status_t rd = accel_agree(t->rt->world, load_batch(t, t->index, t->micro, false));
        if (rd != ACCEL_OK) {
            ACCEL_ERROR("reading training samples failed: %s", accel_status_str(rd));
            return rd;
        }
        const accel_layer_hooks_t *hooks = accel_dist_begin_micro(t->dist, k, K);
        accel_batch_t b = { .n = t->micro, .inputs = t->inputs, .targets = t->targets,
                            .tokens = t->tokens, .index = t->index, .hooks = t->lora ? NULL : hooks,
                            .loss_mask = t->batch_masked ? t->loss_mask : NULL,
                            .positions = t->doc_start ? t->positions : NULL };
        for (int i = 0; t->tokens_model && i < t->micro; i++) trained_local += sample_targets(t, i);
        double l = 0, c0 = accel_now();
        if (t->lora) {      /* the model's gradients, then the adapters' from them */
            accel_lora_zero_grads(t->lora);
            ACCEL_CHECK(t->model.ops->forward_backward(t->model.state, layout, model_params(t),
                                                       accel_lora_grads(t->lora), &b, scale, &l));
            accel_lora_project(t->lora, accel_dist_params(t->dist), accel_dist_micro_grads(t->dist));
        } else {
            ACCEL_CHECK(t->model.ops->forward_backward(t->model.state, layout, accel_dist_params(t->dist),
                                                       accel_dist_micro_grads(t->dist), &b, scale, &l));
        }
        t->compute_s += accel_now() - c0;
        ACCEL_CHECK(accel_dist_end_micro(t->dist, k, K));
        loss_local += l;
    }
    accel_sampler_advance(&t->sampler);
    if (cfg->debug.overflow_step == step + 1 && cfg->debug.overflow_rank == t->rt->rank)
        ACCEL_CHECK(accel_dist_poison_grads(t->dist));

    accel_balance_take(&t->balance, accel_dist_owned_grads(t->dist));   /* loads, not gradients */
    int replicas = 1;
    double sumsq;
    ACCEL_CHECK(accel_dist_grad_sumsq(t->dist, &sumsq, &replicas));
    bool stop_here = t->stop_requested || g_stop_signal ||
                     (cfg->debug.stop_step == step + 1 && cfg->debug.stop_rank == t->rt->rank);
    bool overflow = t->scaler.enabled && !isfinite(sumsq);
    double flags[5] = { loss_local, stop_here ? 1 : 0, overflow ? 1 : 0, sumsq / replicas, trained_local };
    double global[5];
    ACCEL_CHECK(accel_mpi_allreduce(flags, global, 5, MPI_DOUBLE, MPI_SUM, t->rt->world,
                                    "step-allreduce"));
    /* The loss is the mean over the global batch's trained targets. The gradients were scaled for
     * global_batch x T of them (every target of a language model trained; the samples of a
     * classifier): a loss mask leaves fewer, so the loss and gradients are scaled up by `per`
     * (exactly 1 without one), whatever the ranks and micro-batches the targets fell in. */
    const double full = t->tokens_model ? (double)cfg->train.global_batch * cfg->model.context : 0;
    const double per = t->tokens_model && global[4] > 0 ? full / global[4] : 1.0;
    out->loss = global[0] / cfg->train.global_batch * per;
    out->stop = global[1] > 0;
    double old_scale = t->scaler.scale;
    out->skipped = accel_loss_scaler_update(&t->scaler, global[2] > 0);
    out->lr = accel_optim_lr(&cfg->optim, cfg->train.steps, t->optim.step);
    out->grad_norm = 0;
    if (out->skipped) {
        ACCEL_WARN("step %d: fp16 gradient overflow on %g rank(s); the step is skipped on every rank, "
                   "loss scale %g -> %g", step + 1, global[2], old_scale, t->scaler.scale);
        return ACCEL_OK;
    }
    if (t->tokens_model && global[4] == 0) {
        ACCEL_WARN0("step %d: the global batch holds no trained tokens (its loss mask marks all of "
                    "them as context); the step is skipped", step + 1);
        out->skipped = true;
        out->loss = 0;              /* no tokens, no loss (the metrics row says skipped) */
        return ACCEL_OK;
    }
    if (!isfinite(out->loss) || !isfinite(global[3])) {
        ACCEL_ERROR0("the training loss became %g at step %d\n--> hint: lower optim.lr, set "
                     "train.clip, or use precision=fp32", out->loss, step + 1);
        return ACCEL_ERR_INVALID;
    }
    double norm = sqrt(global[3]) / old_scale * per;
    out->grad_norm = norm;
    double mul = per / old_scale;
    if (cfg->train.clip > 0 && norm > cfg->train.clip) mul *= cfg->train.clip / (norm + 1e-6);
    double u0 = accel_now();
    accel_balance_apply(&t->balance, accel_dist_owned_params(t->dist), (float)t->cfg->optim.router_bias_update);
    accel_status_t st = accel_dist_step(t->dist, &t->optim, (float)mul, &out->lr);
    if (st == ACCEL_OK && t->lora) accel_lora_merge(t->lora, accel_dist_params(t->dist));
    t->update_s += accel_now() - u0;
    return st;
}

accel_status_t accel_trainer_run(accel_trainer_t *t, accel_train_result_t *result)
{
    const accel_config_t *cfg = t->cfg;
    memset(result, 0, sizeof *result);
    print_header(t);
    ACCEL_CHECK(setup_mfu(t));
    struct sigaction sa, old_usr1, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGUSR1, &sa, &old_usr1);
    sigaction(SIGTERM, &sa, &old_term);
    double t0 = accel_now(), last_log = t0;
    long samples_since_log = 0;
    size_t bytes0 = accel_dist_bytes_sent(t->dist);
    accel_status_t st = ACCEL_OK;
    int done_here = 0;
    double first_s = 0, steps_s = 0; /* time in train_step: this run's first step, the later ones */
    char mfu[48];
    for (int step = t->start_step; step < cfg->train.steps; step++) {
        step_outcome_t o;
        double s0 = accel_now();
        st = train_step(t, step, &o);
        if (st != ACCEL_OK) break;
        double step_s = accel_now() - s0;
        double step_tflops = step_s > 0 ? rank_tflops(t, cfg->train.global_batch / step_s) : 0;
        *(done_here == 0 ? &first_s : &steps_s) += step_s;
        t->last_lr = o.lr;
        if (done_here++ == 0) result->first_loss = o.loss;
        result->last_loss = o.loss;
        result->steps = step + 1;
        result->skipped += o.skipped;
        samples_since_log += cfg->train.global_batch;
        if (t->metrics) {
            accel_metrics_step_t row = {
                .step = step + 1, .loss = o.loss, .lr = o.lr, .grad_norm = o.grad_norm,
                .loss_scale = t->scaler.scale, .skipped = o.skipped, .time = accel_now() - t0,
                .tflops = step_tflops, .mfu = t->peak_tflops > 0 ? step_tflops / t->peak_tflops : -1,
                .units_per_s = step_s > 0 ? cfg->train.global_batch * t->units_per_sample / step_s : 0,
                .memory_gib = accel_memory_peak() / 1073741824.0 };
            accel_metrics_step(t->metrics, &row);
        }
        bool last = step + 1 == cfg->train.steps || o.stop;
        if ((cfg->train.log_every > 0 && (step + 1) % cfg->train.log_every == 0) || last || step == 0) {
            double now = accel_now();
            double rate = samples_since_log / (now - last_log > 1e-9 ? now - last_log : 1e-9);
            double per_step = (now - t0) / done_here;
            double tf = rank_tflops(t, rate);
            ACCEL_INFO("step %5d/%d  loss %.4f  lr %.3e  grad-norm %.3f  %.0f %s/s  %.3g TFLOP/s/rank%s  "
                       "%.1f s left", step + 1, cfg->train.steps, o.loss, o.lr, o.grad_norm,
                       rate * t->units_per_sample, t->unit_name, tf, mfu_text(t, "  ", tf, mfu, sizeof mfu),
                       per_step * (cfg->train.steps - step - 1));
            last_log = now;
            samples_since_log = 0;
        }
        /* Checkpoints: every ckpt.every steps, at a stop request, and at the end. A failed
         * periodic save is reported and training goes on from the intact in-memory state. */
        bool save = cfg->ckpt.dir[0] && (last || (cfg->ckpt.every > 0 && (step + 1) % cfg->ckpt.every == 0));
        if (save) {
            accel_status_t cs = save_checkpoint(t, step + 1, last);
            if (cs != ACCEL_OK && last) result->checkpoint_failed = true;
        }
        /* Periodic evaluation; the last step's is the final one below, not done twice. Its time
         * is left out of the next progress line's throughput. */
        if (cfg->train.eval_every > 0 && (step + 1) % cfg->train.eval_every == 0 && !last) {
            double e0 = accel_now(), el, ea;
            st = evaluate_step(t, step + 1, t0, true, &el, &ea);
            if (st != ACCEL_OK) break;
            last_log += accel_now() - e0;
        }
        if (o.stop) {
            ACCEL_INFO("stop requested%s: every rank stops after step %d%s",
                       g_stop_signal ? " by a signal" : "", step + 1,
                       cfg->ckpt.dir[0] ? " (checkpoint written)" : "");
            result->stopped = true;
            result->signalled = g_stop_signal != 0;
            break;
        }
    }
    sigaction(SIGUSR1, &old_usr1, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    /* A background save still in flight (the loop ended early): wait for it, and say how it ended. */
    if (finish_background_save(t) != ACCEL_OK) result->checkpoint_failed = true;
    ACCEL_CHECK(st);
    result->seconds = accel_now() - t0;
    double exposed, in_flight;
    accel_dist_sync_times(t->dist, &exposed, &in_flight);
    int nsteps = done_here > 0 ? done_here : 1;
    result->bytes_per_step = (double)(accel_dist_bytes_sent(t->dist) - bytes0) / nsteps;
    if (done_here == 1) steps_s = first_s;
    if (done_here > 0 && steps_s > 0) {
        /* The mean over the steps after the first (its warm-up: first touches, BLAS start-up), or
         * over the first when it is all this run did; checkpoint saves between steps not counted. */
        int counted = done_here > 1 ? done_here - 1 : 1;
        double rate = counted * (double)cfg->train.global_batch / steps_s, tf = rank_tflops(t, rate);
        ACCEL_INFO("throughput: %.0f %s/s, %.4g TFLOP/s per rank%s over %d step%s (%.4g FLOP per "
                   "%s)%s", rate * t->units_per_sample, t->unit_name, tf,
                   mfu_text(t, ", ", tf, mfu, sizeof mfu), counted, counted == 1 ? "" : "s",
                   t->flops_per_sample / t->units_per_sample, t->tokens_model ? "token" : "sample",
                   done_here > 1 ? ", first step excluded" : "");
    }
    debug_hang(t, "end");
    if (done_here > 0) {
        /* The fastest and slowest rank's compute: their gap is time the gradient sync waits. */
        double mine[3] = { -t->compute_s, t->compute_s, t->update_s }, ext[3];
        ACCEL_CHECK(accel_mpi_allreduce(mine, ext, 3, MPI_DOUBLE, MPI_MAX, t->rt->world,
                                        "compute-summary"));
        ACCEL_INFO("%s: forward+backward %.2f ms/step on the fastest rank, %.2f on the "
                   "slowest; optimizer update %.2f ms/step", accel_dist_devops(t->dist)->name,
                   -1e3 * ext[0] / nsteps, 1e3 * ext[1] / nsteps, 1e3 * ext[2] / nsteps);
    }
    if (done_here > 0 && in_flight > 0)
        ACCEL_INFO("gradient sync: %.2f ms/step in flight, %.2f ms/step exposed after backward "
                   "(%.0f%% hidden); %.2f MiB sent per step by this rank",
                   1e3 * in_flight / nsteps, 1e3 * exposed / nsteps, 100.0 * (1.0 - exposed / in_flight),
                   result->bytes_per_step / 1048576.0);
    /* Peak resident memory above start-up, per rank: what the model state, activations and
     * communication buffers really took (compare with accel estimate-memory). */
    double mine = (double)(accel_memory_peak() - t->rss_start), peak[2] = { mine, -mine }, ext[2];
    ACCEL_CHECK(accel_mpi_allreduce(peak, ext, 2, MPI_DOUBLE, MPI_MAX, t->rt->world, "peak-memory"));
    result->peak_bytes = ext[0];
    ACCEL_INFO("memory: peak resident %.1f MiB per rank above start-up (max over ranks; min %.1f MiB)",
               ext[0] / 1048576.0, -ext[1] / 1048576.0);
    /* A run that trained no step (resumed at the end) adds no rows: its step has them already. */
    const int at = done_here > 0 ? result->steps : t->start_step;
    double eval_loss, accuracy;
    ACCEL_CHECK(evaluate_step(t, at, t0, done_here > 0, &eval_loss, &accuracy));
    char held[96] = "no held-out set";
    if (!isnan(eval_loss))
        snprintf(held, sizeof held, "held-out loss %.4f", eval_loss);
    if (!isnan(eval_loss) && !t->tokens_model)
        snprintf(held + strlen(held), sizeof held - strlen(held), ", accuracy %.1f%%", 100.0 * accuracy);
    ACCEL_INFO("done: step %d of %d (%d in this run) in %.2f s; train loss %.4f -> %.4f; %s%s",
               result->steps, cfg->train.steps, done_here, result->seconds, result->first_loss, result->last_loss, held,
               result->skipped ? " (some fp16 steps skipped)" : "");
    if (t->tokens_model && cfg->train.sample_tokens > 0) ACCEL_CHECK(print_sample(t));
    if (done_here > 0)
        accel_metrics_summary(t->metrics, at, done_here, result->skipped, result->peak_bytes,
                              result->seconds, result->bytes_per_step);
    return ACCEL_OK;
}

/* train.init_from: start training (step 0, fresh optimizer and schedule, data from the start)
 * from weights made elsewhere: an accel checkpoint, an export (hdf5, safetensors, hf), an
 * `accel_ckpt import` file or a Hugging Face model directory. Two halves: the model keys come
 * from the file before the model is built (accel_trainer_init_config), and once the
 * distributed state exists every rank reads the tensors it holds a part of
 * (accel_init_from_load), whatever the strategy (ddp: everything; ZeRO: its slices). */
#include "build_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/infer.h"
#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/trainer.h"
#include "init_from.h"

accel_status_t accel_trainer_init_config(accel_config_t *cfg, char *err, size_t errlen)
{
    const char *path = cfg->train.init_from;
    if (!path[0]) return ACCEL_OK;
    accel_weights_t *w = NULL;
    accel_status_t st = accel_weights_open(path, &w);
    if (st != ACCEL_OK) {
        snprintf(err, errlen, "train.init_from=%s cannot be read (%s; the reason is above)", path,
                 accel_status_str(st));
        return st;
    }
    if (!accel_weights_config_yaml(w)) {
        /* An export from an older accel: the user's model keys must describe it. */
        ACCEL_WARN0("train.init_from=%s stores no model configuration: the model keys of the job "
                    "configuration must match it", path);
        accel_weights_close(w);
        return ACCEL_OK;
    }
    accel_config_t from;
    char msg[1024];
    st = accel_weights_load_config(w, 0, NULL, &from, msg, sizeof msg);
    if (st == ACCEL_OK) {
        /* A rotary model's context is not in its weights: a shorter (or longer) training
         * context is the user's choice. A learned position table fixes it. */
        static const char *const rope_free[] = { "model.context", NULL };
        const char *const *free_keys = !strcmp(from.model.name, "llama") ? rope_free : NULL;
        char what[ACCEL_STR_MAX + 32];
        snprintf(what, sizeof what, "train.init_from=%s", path);
        st = accel_config_adopt_model(cfg, &from, what, free_keys, msg, sizeof msg);
    }
    if (st != ACCEL_OK) snprintf(err, errlen, "%s", msg);
    accel_weights_close(w);
    return st;
}

accel_status_t accel_init_from_load(MPI_Comm comm, const char *path, const accel_layout_t *layout,
                                    float *params, bool replicated, const accel_range_t *ranges,
                                    int nranges, accel_tokenizer_t **tok, char **chat, size_t *chat_len)
{
    accel_weights_t *w = NULL;
    accel_status_t st = accel_weights_open(path, &w);
    if (st == ACCEL_OK) st = accel_weights_check(w, layout);
    if (tok) *tok = NULL;
    if (chat) {
        *chat = NULL;
        *chat_len = 0;
    }
    size_t clen = 0;
    const char *ct = st == ACCEL_OK && chat ? accel_weights_chat_template(w, &clen) : NULL;
    if (ct) {
        if ((*chat = malloc(clen + 1))) {
            memcpy(*chat, ct, clen + 1);
            *chat_len = clen;
        } else {
            st = ACCEL_ERR_NOMEM;
        }
    }
    if (st == ACCEL_OK && tok) {
        char err[2048] = "";
        st = accel_weights_tokenizer(w, tok, err, sizeof err);
        if (st == ACCEL_ERR_NOT_FOUND) st = ACCEL_OK;        /* the weights keep none */
        else if (st != ACCEL_OK) ACCEL_ERROR("train.init_from=%s: %s", path, err);
    }
    st = accel_agree(comm, st);
    float *tmp = NULL;
    for (int i = 0; st == ACCEL_OK && i < layout->ntensors; i++) {
        const accel_tensor_t *t = &layout->tensors[i];
        const size_t b = t->offset, e = t->offset + t->numel;
        if (replicated) {
            st = accel_weights_read(w, i, params + b);
            continue;
        }
        /* ZeRO: read a tensor only when this rank holds a slice of it. */
        bool needed = false;
        for (int k = 0; k < nranges && !needed; k++) needed = ranges[k].begin < e && ranges[k].end > b;
        if (!needed) continue;
        float *p = realloc(tmp, sizeof(float) * (t->numel ? t->numel : 1));
        if (!p) { st = ACCEL_ERR_NOMEM; break; }
        tmp = p;
        st = accel_weights_read(w, i, tmp);
        for (int k = 0; st == ACCEL_OK && k < nranges; k++) {
            size_t lo = ranges[k].begin > b ? ranges[k].begin : b, hi = ranges[k].end < e ? ranges[k].end : e;
            if (lo < hi)
                memcpy(params + ranges[k].owned + (lo - ranges[k].begin), tmp + (lo - b), sizeof(float) * (hi - lo));
        }
    }
    free(tmp);
    accel_weights_close(w);
    st = accel_agree(comm, st);
    if (st != ACCEL_OK && tok) {
        accel_tokenizer_free(*tok);
        *tok = NULL;
    }
    if (st != ACCEL_OK && chat) {
        free(*chat);
        *chat = NULL;
        *chat_len = 0;
    }
    return st;
}

/* Text generation for any model with a `logits` op: greedy (temperature 0) or sampled with
 * temperature and top-k from the keyed RNG, so a seed always reproduces the same tokens. Models
 * with a KV cache (logits_cached) compute one new position per token while the sequence fits the
 * context; past it the window slides, positions shift and each token recomputes its window. */
#include "build_config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "accel/log.h"
#include "accel/model.h"
#include "accel/rng.h"

typedef struct {
    float z;
    int id;
} scored_t;

/* Descending by logit, ascending id on ties: a total order, so top-k is deterministic. */
static int by_score(const void *a, const void *b)
{
    const scored_t *x = a, *y = b;
    if (x->z != y->z) return x->z > y->z ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int argmax(const float *z, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (z[i] > z[best]) best = i;
    return best;
}

static int sample(const float *z, int V, float temperature, int top_k, float u, scored_t *work)
{
    for (int i = 0; i < V; i++) work[i] = (scored_t){ z[i] / temperature, i };
    qsort(work, (size_t)V, sizeof *work, by_score);
    int k = top_k > 0 && top_k < V ? top_k : V;
    double total = 0;
    for (int i = 0; i < k; i++) total += exp((double)work[i].z - (double)work[0].z);
    double target = (double)u * total, acc = 0;
    for (int i = 0; i < k; i++) {
        acc += exp((double)work[i].z - (double)work[0].z);
        if (acc > target) return work[i].id;
    }
    return work[k - 1].id;              /* u * total rounded up to the last bucket */
}

accel_status_t accel_model_pick_token(const float *logits, int V, float temperature, int top_k,
                                      uint64_t seed, int step, int32_t *token)
{
    if (V < 1 || !(temperature >= 0.0f) || isinf(temperature) || step < 0) {
        ACCEL_ERROR("pick_token needs V >= 1, a finite temperature >= 0 and step >= 0 (got V=%d "
                    "temperature=%g step=%d)", V, (double)temperature, step);
        return ACCEL_ERR_INVALID;
    }
    if (temperature == 0.0f) {
        *token = argmax(logits, V);
        return ACCEL_OK;
    }
    scored_t *work = malloc(sizeof(scored_t) * (size_t)V);
    if (!work) return ACCEL_ERR_NOMEM;
    float u = accel_rng_uniform(seed, ACCEL_RNG_SAMPLE, 0, (uint64_t)step);
    *token = sample(logits, V, temperature, top_k, u, work);
    free(work);
    return ACCEL_OK;
}

accel_status_t accel_model_generate(const accel_model_t *m, const float *params,
                                    const int32_t *prompt, int nprompt, int nnew, float temperature,
                                    int top_k, uint64_t seed, int32_t *out)
{
    if (!m->ops || !m->ops->logits) {
        ACCEL_ERROR0("model '%s' cannot generate text (it has no logits op)\n--> hint: use a "
                     "language model such as model.name=gpt", m->ops ? m->ops->name : "?");
        return ACCEL_ERR_UNSUPPORTED;
    }
    if (nprompt < 1 || nnew < 0 || !(temperature >= 0.0f) || isinf(temperature)) {
        ACCEL_ERROR0("generate needs a prompt of at least one token, nnew >= 0 and a finite "
                     "temperature >= 0 (got nprompt=%d nnew=%d temperature=%g)", nprompt, nnew,
                     (double)temperature);
        return ACCEL_ERR_INVALID;
    }
    const int V = m->vocab, ctx = m->context;
    int32_t *seq = malloc(sizeof(int32_t) * ((size_t)nprompt + (size_t)nnew));
    float *logits = malloc(sizeof(float) * (size_t)V);
    scored_t *work = temperature > 0 ? malloc(sizeof(scored_t) * (size_t)V) : NULL;
    accel_status_t st = ACCEL_OK;
    if (!seq || !logits || (temperature > 0 && !work)) {
        st = ACCEL_ERR_NOMEM;
        goto out;
    }
    memcpy(seq, prompt, sizeof(int32_t) * (size_t)nprompt);
    int prev_start = 0, prev_n = 0;
    for (int i = 0; i < nnew; i++) {
        int len = nprompt + i, window = len < ctx ? len : ctx, start = len - window;
        if (m->ops->logits_cached) {
            int cached = accel_kv_reusable(prev_start, prev_n, start, window);
            ACCEL_CHECK_GOTO(m->ops->logits_cached(m->state, &m->layout, params, seq + start,
                                                   window, cached, logits, NULL), st, out);
            prev_start = start;
            prev_n = window;
        } else {
            ACCEL_CHECK_GOTO(m->ops->logits(m->state, &m->layout, params, seq + start, window,
                                            logits), st, out);
        }
        int next;
        if (temperature == 0.0f) {
            next = argmax(logits, V);
        } else {
            float u = accel_rng_uniform(seed, ACCEL_RNG_SAMPLE, 0, (uint64_t)i);
            next = sample(logits, V, temperature, top_k, u, work);
        }
        seq[len] = next;
        out[i] = next;
    }
out:
    free(seq);
    free(logits);
    free(work);
    return st;
}

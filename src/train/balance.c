/* DeepSeek-V3's auxiliary-loss-free load balancing: see balance.h. */
#include "build_config.h"

#include <stdlib.h>

#include "balance.h"

accel_status_t accel_balance_create(const accel_layout_t *layout, const accel_range_t *ranges, int nranges,
                                    accel_balance_t *b)
{
    *b = (accel_balance_t){ 0 };
    for (int pass = 0; pass < 2; pass++) {          /* count, then fill */
        size_t n = 0;
        for (int i = 0; i < layout->ntensors; i++) {
            const accel_tensor_t *t = &layout->tensors[i];
            if (!(t->flags & ACCEL_TENSOR_LOADS)) continue;
            for (int r = 0; r < nranges; r++) {
                const size_t lo = t->offset > ranges[r].begin ? t->offset : ranges[r].begin;
                const size_t hi = t->offset + t->numel < ranges[r].end ? t->offset + t->numel : ranges[r].end;
                for (size_t e = lo; e < hi; e++, n++)
                    if (pass) b->at[n] = ranges[r].owned + (e - ranges[r].begin);
            }
        }
        if (pass || !n) {
            b->n = n;
            return ACCEL_OK;
        }
        b->at = malloc(sizeof *b->at * n);
        b->sign = calloc(n, sizeof *b->sign);
        if (!b->at || !b->sign) {
            accel_balance_destroy(b);
            return ACCEL_ERR_NOMEM;
        }
    }
    return ACCEL_OK;
}

void accel_balance_take(accel_balance_t *b, float *owned_grads)
{
    for (size_t i = 0; i < b->n; i++) {
        float *g = owned_grads + b->at[i];
        b->sign[i] = *g > 0.0f ? 1.0f : *g < 0.0f ? -1.0f : 0.0f;
        *g = 0.0f;
    }
}

void accel_balance_apply(const accel_balance_t *b, float *owned_params, float rate)
{
    for (size_t i = 0; i < b->n; i++) owned_params[b->at[i]] -= rate * b->sign[i];
}

void accel_balance_destroy(accel_balance_t *b)
{
    free(b->at);
    free(b->sign);
    *b = (accel_balance_t){ 0 };
}

/* Mixed precision support: the dynamic loss scale for fp16 and the checks around it. Master weights
 * and optimizer moments stay fp32; bf16/fp16 are compute (and optionally communication) types. */
#ifndef ACCEL_AMP_H
#define ACCEL_AMP_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { ACCEL_PREC_FP32 = 0, ACCEL_PREC_BF16, ACCEL_PREC_FP16 } accel_precision_t;

/* "fp32" | "bf16" | "fp16" -> precision; -1 when unknown. */
int accel_precision_parse(const char *name);

/* Dynamic loss scale (the fp16 recipe): start high, halve on overflow and skip that step, double
 * after `window` overflow-free steps. Disabled (scale 1, never skips) for fp32 and bf16. */
typedef struct {
    bool enabled;
    double scale;
    int window;                     /* good steps before the scale grows */
    int good_steps;                 /* since the last overflow or growth */
    long skipped;                   /* steps skipped so far */
} accel_loss_scaler_t;

void accel_loss_scaler_init(accel_loss_scaler_t *s, bool enabled, double initial, int window);
/* Record the outcome of a step (overflow on ANY rank); returns true when the step must be skipped. */
bool accel_loss_scaler_update(accel_loss_scaler_t *s, bool overflow);

#endif

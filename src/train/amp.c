/* Loss scaling and finiteness checks for mixed precision. */
#include "build_config.h"

#include <math.h>
#include <string.h>

#include "amp.h"

int accel_precision_parse(const char *name)
{
    if (!strcmp(name, "fp32")) return ACCEL_PREC_FP32;
    if (!strcmp(name, "bf16")) return ACCEL_PREC_BF16;
    if (!strcmp(name, "fp16")) return ACCEL_PREC_FP16;
    return -1;
}

void accel_loss_scaler_init(accel_loss_scaler_t *s, bool enabled, double initial, int window)
{
    s->enabled = enabled;
    s->scale = enabled ? initial : 1.0;
    s->window = window > 0 ? window : 2000;
    s->good_steps = 0;
    s->skipped = 0;
}

bool accel_loss_scaler_update(accel_loss_scaler_t *s, bool overflow)
{
    if (!s->enabled) return false;
    if (overflow) {
        s->scale *= 0.5;
        if (s->scale < 1.0 / 65536.0) s->scale = 1.0 / 65536.0;
        s->good_steps = 0;
        s->skipped++;
        return true;
    }
    if (++s->good_steps >= s->window) {
        s->scale *= 2.0;
        s->good_steps = 0;
    }
    return false;
}

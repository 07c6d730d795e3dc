/* Private helpers shared by the device map and the dispatcher (src/infer). */
#ifndef ACCEL_INFER_INTERNAL_H
#define ACCEL_INFER_INTERNAL_H

#include <stddef.h>

#include "accel/arena.h"
#include "accel/status.h"

/* Per layer (0 .. layout->nlayers-1): arena element range [begin, end) and tensor index range
 * [tbeg, tend). Layers must be registered in order and every tensor must belong to a layer. Any
 * output pointer may be NULL. */
accel_status_t accel_infer_layer_ranges(const accel_layout_t *layout, size_t *begin, size_t *end,
                                        int *tbeg, int *tend);

#endif

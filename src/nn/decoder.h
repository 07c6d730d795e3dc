/* What the decoder's backends share (src/nn/decoder.c on the CPU, src/nn/gpt_cuda.c on CUDA): an
 * engine internal, not installed. */
#ifndef ACCEL_NN_DECODER_H
#define ACCEL_NN_DECODER_H

#include <stdint.h>

#include "accel/status.h"

/* Token ids outside the vocabulary would index past wte: both backends refuse them with this check
 * of B rows of n_per_row ids at row stride `stride` (a NULL batch is refused too). */
accel_status_t accel_gpt_check_tokens(const int32_t *tokens, int B, int n_per_row, int stride, int V);

#endif

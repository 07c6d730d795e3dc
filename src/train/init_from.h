/* train.init_from inside the trainer (src/train/init_from.c). */
#ifndef ACCEL_TRAIN_INIT_FROM_H
#define ACCEL_TRAIN_INIT_FROM_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

#include "accel/arena.h"
#include "accel/status.h"
#include "accel/tokenizer.h"
#include "dist.h"

/* Collective over comm: every rank opens path and writes the model parameters it holds into
 * params (replicated: the whole arena; otherwise the owned vector described by ranges). A rank
 * that passes tok receives the tokenizer the weights keep (NULL when none), one that passes chat
 * their chat template (malloc'ed text of *chat_len bytes, NUL-terminated; NULL when none). Every
 * rank returns the same status; the parameters are undefined after a failure. */
accel_status_t accel_init_from_load(MPI_Comm comm, const char *path, const accel_layout_t *layout,
                                    float *params, bool replicated, const accel_range_t *ranges,
                                    int nranges, accel_tokenizer_t **tok, char **chat, size_t *chat_len);

#endif

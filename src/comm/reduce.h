/* Element-wise reductions on host buffers, shared by the MPI backend's user-defined operations
 * (fp16/bf16) and the ring collectives. A leaf of src/comm: it calls nothing else there. */
#ifndef ACCEL_COMM_REDUCE_H
#define ACCEL_COMM_REDUCE_H

#include <stddef.h>

#include "accel/comm.h"

/* inout[i] = op(in[i], inout[i]) for n elements (AVG reduces as SUM); fp16 and bf16 compute in fp32. */
void accel_comm_reduce_local(const void *in, void *inout, size_t n, accel_dtype_t dtype, accel_redop_t op);

#endif

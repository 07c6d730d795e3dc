/* The host reference kernels alone (ref_accel_gk_*), from tests/gpu_mock.c. */
#define ACCEL_GPU_REF_ONLY 1
#include "gpu_mock.c"

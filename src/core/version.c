/* Version and build features. */
#include "build_config.h"

#include "accel/version.h"

const char *accel_version(void) { return PACKAGE_VERSION; }
int accel_built_with_cuda(void) { return ACCEL_HAVE_CUDA; }
int accel_built_with_nccl(void) { return ACCEL_HAVE_NCCL; }

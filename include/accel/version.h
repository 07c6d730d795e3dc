/* accel's version and build features. */
#ifndef ACCEL_VERSION_H
#define ACCEL_VERSION_H

const char *accel_version(void);
/* 1 when the library was built with CUDA / NCCL. */
int accel_built_with_cuda(void);
int accel_built_with_nccl(void);

#endif

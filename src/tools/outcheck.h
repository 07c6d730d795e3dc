/* Output-file guard shared by the writer tools (accel_data, accel_ckpt): a tool overwrites only a
 * file of the kind it writes itself; --force lets it replace a file of another kind, except an accel
 * checkpoint, which no tool ever overwrites (training state is not reproducible). */
#ifndef ACCEL_TOOLS_OUTCHECK_H
#define ACCEL_TOOLS_OUTCHECK_H

#include <stdbool.h>

/* What kind of file a tool writes (and may therefore replace without --force). */
typedef enum {
    ACCEL_OUT_DATASET,        /* accel_data: an HDF5 file with format accel-tokens / accel-classification */
    ACCEL_OUT_WEIGHTS_H5,     /* accel_ckpt export --format hdf5, import: HDF5 weights (no format attribute) */
    ACCEL_OUT_SAFETENSORS,    /* accel_ckpt export --format safetensors */
    ACCEL_OUT_DIRECTORY       /* accel_ckpt export --format hf: a directory */
} accel_out_kind_t;

/* 0 when `path` may be written (missing, or of kind `kind`, or --force and not a checkpoint);
 * -1 after printing "TOOL: output 'PATH' exists and is ...; refusing ..." with a hint. */
int accel_out_check(const char *tool, const char *path, accel_out_kind_t kind, bool force);

#endif

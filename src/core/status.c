/* Status code strings and their mapping to tool exit codes. */
#include "build_config.h"

#include <stdarg.h>
#include <stdio.h>

#include "accel/log.h"
#include "accel/status.h"

const char *accel_status_str(accel_status_t status)
{
    switch (status) {
    case ACCEL_OK: return "success";
    case ACCEL_ERR_INVALID: return "invalid argument or input";
    case ACCEL_ERR_NOMEM: return "out of memory";
    case ACCEL_ERR_IO: return "I/O error";
    case ACCEL_ERR_CONFIG: return "configuration error";
    case ACCEL_ERR_MPI: return "MPI error";
    case ACCEL_ERR_CUDA: return "CUDA error";
    case ACCEL_ERR_NCCL: return "NCCL error";
    case ACCEL_ERR_HDF5: return "HDF5 error";
    case ACCEL_ERR_TIMEOUT: return "timed out";
    case ACCEL_ERR_UNSUPPORTED: return "not supported here";
    case ACCEL_ERR_LAUNCH: return "inconsistent launch";
    case ACCEL_ERR_NOT_FOUND: return "not found";
    case ACCEL_ERR_SHAPE: return "shape mismatch";
    case ACCEL_ERR_CORRUPT: return "corrupt data";
    case ACCEL_ERR_STOPPED: return "stopped on request";
    }
    return "unknown status";
}

int accel_status_exit_code(accel_status_t status)
{
    switch (status) {
    case ACCEL_OK: return 0;
    case ACCEL_ERR_INVALID:
    case ACCEL_ERR_CONFIG:
    case ACCEL_ERR_NOT_FOUND:
    case ACCEL_ERR_SHAPE:
    case ACCEL_ERR_CORRUPT:
    case ACCEL_ERR_LAUNCH: return 2;
    default: return 1;
    }
}

void accel_log_trace_error(const char *file, int line, const char *expr, accel_status_t st)
{
    accel_log(ACCEL_LOG_DEBUG, false, "%s:%d: %s -> %s", file, line, expr, accel_status_str(st));
}

void accel_errf(char *err, size_t len, const char *fmt, ...)
{
    if (!err || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
}

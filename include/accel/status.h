/* Status codes returned by every accel function, and the macros that carry an error up the stack.
 * The library never exits: tools turn a status into a message and an exit code.
 *
 * Where a job can be aborted (MPI_Abort through accel_abort), and why:
 *  - the watchdog (src/comm/comm.c): a collective that has not completed after dist.timeout seconds
 *    means a peer never joined it; every other rank would wait forever, so the job ends (exit 124)
 *    with a message naming the collective. It is the library's only abort.
 *  - accel_train (src/tools/accel_train.c): when training fails on one rank of several, the others
 *    may be waiting in a collective; the tool ends the job rather than leave them hanging.
 * Everything else returns a status; failures that one rank alone can meet (reading data, a device
 * error, a collective failing inside a model hook) are agreed on by every rank (accel_agree) or
 * returned at the next call that returns a status. */
#ifndef ACCEL_STATUS_H
#define ACCEL_STATUS_H

#include <stddef.h>

typedef enum {
    ACCEL_OK = 0,
    ACCEL_ERR_INVALID = -1,     /* bad argument or bad input data */
    ACCEL_ERR_NOMEM = -2,       /* allocation failed */
    ACCEL_ERR_IO = -3,          /* file system error */
    ACCEL_ERR_CONFIG = -4,      /* bad configuration: unknown key, wrong type, malformed YAML */
    ACCEL_ERR_MPI = -5,         /* an MPI call failed */
    ACCEL_ERR_CUDA = -6,        /* a CUDA call failed */
    ACCEL_ERR_NCCL = -7,        /* an NCCL call failed */
    ACCEL_ERR_HDF5 = -8,        /* an HDF5 call failed */
    ACCEL_ERR_TIMEOUT = -9,     /* a wait took longer than comm.timeout */
    ACCEL_ERR_UNSUPPORTED = -10,/* feature not built in, or not available on this machine */
    ACCEL_ERR_LAUNCH = -11,     /* the job was launched inconsistently (e.g. size != SLURM_NTASKS) */
    ACCEL_ERR_NOT_FOUND = -12,  /* file, tensor or key does not exist */
    ACCEL_ERR_SHAPE = -13,      /* shape or size mismatch */
    ACCEL_ERR_CORRUPT = -14,    /* data fails a checksum or format check */
    ACCEL_ERR_STOPPED = -15,    /* a stop was requested (signal, trigger) */
} accel_status_t;

/* Short description of a status code ("invalid argument", ...). Never NULL. */
const char *accel_status_str(accel_status_t status);
/* printf into a caller's error buffer (err[len]; nothing when err is NULL or len 0): how functions
 * that do not log say why they failed. */
void accel_errf(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Exit code a tool should return for a status: 0 for ACCEL_OK, 2 for input and configuration
 * errors, 1 for everything else. */
int accel_status_exit_code(accel_status_t status);

/* Evaluate an accel call; on error log where it failed and return the status to the caller. */
#define ACCEL_CHECK(call)                                                                   \
    do {                                                                                    \
        accel_status_t accel_check_st_ = (call);                                            \
        if (accel_check_st_ != ACCEL_OK) {                                                  \
            accel_log_trace_error(__FILE__, __LINE__, #call, accel_check_st_);              \
            return accel_check_st_;                                                         \
        }                                                                                   \
    } while (0)

/* Same, but jump to a cleanup label with the status stored in `st`. */
#define ACCEL_CHECK_GOTO(call, st, label)                                                   \
    do {                                                                                    \
        (st) = (call);                                                                      \
        if ((st) != ACCEL_OK) {                                                             \
            accel_log_trace_error(__FILE__, __LINE__, #call, (st));                         \
            goto label;                                                                     \
        }                                                                                   \
    } while (0)

void accel_log_trace_error(const char *file, int line, const char *expr, accel_status_t st);

#endif

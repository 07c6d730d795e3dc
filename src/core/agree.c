/* The two MPI helpers every layer uses: an MPI return code turned into a status that names the
 * call, and "every rank agrees on success" (one small allreduce, so that no rank goes on into a
 * collective the others skip). */
#include "build_config.h"

#include "accel/log.h"
#include "accel/runtime.h"
#include "accel/trace.h"

accel_status_t accel_mpi_status(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return ACCEL_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    ACCEL_ERROR("%s failed: %s", what, msg);
    return ACCEL_ERR_MPI;
}

accel_status_t accel_agree(MPI_Comm comm, accel_status_t local)
{
    /* Statuses are 0 or negative: the minimum is an error whenever any rank has one. */
    int mine = (int)local, lowest = 0;
    accel_status_t st = accel_mpi_allreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, comm,
                                            "agree");
    if (st != ACCEL_OK) return local != ACCEL_OK ? local : st;
    if (local != ACCEL_OK) return local;
    return (accel_status_t)lowest;
}

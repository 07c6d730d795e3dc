/* Shared main() for Check test programs that may run under mpirun: MPI is initialised once here,
 * tests run in-process (CK_NOFORK: a forked child cannot use MPI), rank 0 prints the Check summary,
 * and the failure count is summed over ranks so every rank exits with the same status.
 * A test file defines `static Suite *make_suite(void)` and then includes this header; it may define
 * ACCEL_CHECK_ALT_MAIN(argc, argv) first, a statement run after MPI_Init that can return early
 * (e.g. a special mode selected by an argument). */
#ifndef ACCEL_CHECK_MAIN_H
#define ACCEL_CHECK_MAIN_H

#include <check.h>
#include <mpi.h>
#include <stdlib.h>

#include "accel/log.h"
#include "accel/runtime.h"

static Suite *make_suite(void);

int main(int argc, char **argv)
{
    int provided, rank, size;
    accel_mpi_defaults();          /* the MPI settings accel programs run with */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    accel_log_set_identity(rank, size, "test");
#ifdef ACCEL_CHECK_ALT_MAIN
    ACCEL_CHECK_ALT_MAIN(argc, argv);
#endif
    SRunner *sr = srunner_create(make_suite());
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, rank == 0 ? CK_NORMAL : CK_SILENT);
    int failed = srunner_ntests_failed(sr), total = 0;
    srunner_free(sr);
    MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return total ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif

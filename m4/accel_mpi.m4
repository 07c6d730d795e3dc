# ACCEL_PROG_MPICC: use the MPI C compiler wrapper (mpicc) as CC unless the user set CC.
AC_DEFUN([ACCEL_PROG_MPICC], [
  AC_ARG_VAR([MPICC], [MPI C compiler wrapper])
  AS_IF([test -z "$CC"], [
    AC_CHECK_PROGS([MPICC], [mpicc], [none])
    AS_IF([test "x$MPICC" = xnone],
      [AC_MSG_ERROR([no MPI C compiler (mpicc) found.
--> hint: on Debian install Open MPI: apt-get install libopenmpi-dev openmpi-bin])])
    CC=$MPICC])
])

# ACCEL_CHECK_OPENMPI: CC must compile and link MPI programs, and the MPI must be Open MPI
# (the parallel HDF5 we link must be built against the same MPI).
AC_DEFUN([ACCEL_CHECK_OPENMPI], [
  AC_CHECK_HEADER([mpi.h], [],
    [AC_MSG_ERROR([mpi.h not found with CC=$CC.
--> hint: build with the MPI wrapper (CC=mpicc) or install libopenmpi-dev])])
  AC_MSG_CHECKING([for MPI_Init_thread])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[int p; MPI_Init_thread(0, 0, MPI_THREAD_FUNNELED, &p); MPI_Finalize();]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([cannot link MPI programs with CC=$CC])])
  AC_MSG_CHECKING([whether MPI is Open MPI])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
      [[#ifndef OMPI_MAJOR_VERSION
        #error not Open MPI
        #endif]])],
    [AC_MSG_RESULT([yes])
     accel_mpi_version=`mpirun --version 2>/dev/null | head -n1`
     AS_IF([test -z "$accel_mpi_version"], [accel_mpi_version="Open MPI"])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([accel needs Open MPI (parallel HDF5 and PMIx launch are checked against it).
--> hint: apt-get install libopenmpi-dev openmpi-bin])])
  AC_PATH_PROG([MPIRUN], [mpirun], [mpirun])
])

# ACCEL_CHECK_PMIX: PMIx client library (Slurm's srun --mpi=pmix and Open MPI's mpirun both speak it).
AC_DEFUN([ACCEL_CHECK_PMIX], [
  PKG_CHECK_MODULES([PMIX], [pmix >= 3],
    [accel_pmix_version=`$PKG_CONFIG --modversion pmix`],
    [AC_MSG_ERROR([PMIx not found.
--> hint: apt-get install libpmix-dev])])
])

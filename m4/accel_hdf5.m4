# ACCEL_CHECK_PHDF5: parallel HDF5 built against Open MPI. A serial HDF5 is refused:
# checkpoints are written collectively with MPI-IO.
AC_DEFUN([ACCEL_CHECK_PHDF5], [
  PKG_CHECK_MODULES([HDF5], [hdf5-openmpi >= 1.10],
    [accel_hdf5_version=`$PKG_CONFIG --modversion hdf5-openmpi`],
    [PKG_CHECK_MODULES([HDF5], [hdf5 >= 1.10],
       [accel_hdf5_version=`$PKG_CONFIG --modversion hdf5`],
       [AC_MSG_ERROR([HDF5 not found.
--> hint: apt-get install libhdf5-openmpi-dev (the Open MPI flavour of parallel HDF5)])])])
  accel_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $HDF5_CFLAGS"
  AC_MSG_CHECKING([whether HDF5 is built for parallel I/O])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>]],
      [[#if !H5_HAVE_PARALLEL
        #error serial HDF5
        #endif
        H5Pset_fapl_mpio(0, MPI_COMM_WORLD, MPI_INFO_NULL);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([only a serial HDF5 was found ($HDF5_CFLAGS); accel writes checkpoints collectively and needs parallel HDF5.
--> hint: apt-get install libhdf5-openmpi-dev, or point PKG_CONFIG_PATH at a parallel HDF5 built with Open MPI])])
  CPPFLAGS=$accel_save_CPPFLAGS
])

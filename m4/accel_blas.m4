# ACCEL_CHECK_BLAS: a CBLAS for CPU matrix products. OpenBLAS is preferred; when found,
# ACCEL_HAVE_OPENBLAS lets accel fix OpenBLAS's CPU misdetection and thread count at run time.
AC_DEFUN([ACCEL_CHECK_BLAS], [
  accel_have_openblas=0
  PKG_CHECK_MODULES([BLAS], [openblas],
    [accel_blas_name="OpenBLAS `$PKG_CONFIG --modversion openblas`"; accel_have_openblas=1],
    [PKG_CHECK_MODULES([BLAS], [cblas],
      [accel_blas_name="CBLAS `$PKG_CONFIG --modversion cblas`"],
      [AC_MSG_ERROR([no CBLAS found.
--> hint: apt-get install libopenblas-dev])])])
  accel_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $BLAS_CFLAGS"
  AC_CHECK_HEADER([cblas.h], [], [AC_MSG_ERROR([cblas.h not found with $BLAS_CFLAGS])])
  CPPFLAGS=$accel_save_CPPFLAGS
  AC_DEFINE_UNQUOTED([ACCEL_HAVE_OPENBLAS], [$accel_have_openblas], [1 when the CBLAS is OpenBLAS])
])

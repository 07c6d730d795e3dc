# ACCEL_CHECK_CHECK: the Check unit-test framework (needed for 'make check' only).
AC_DEFUN([ACCEL_CHECK_CHECK], [
  PKG_CHECK_MODULES([CHECK], [check >= 0.11],
    [accel_check_version=`$PKG_CONFIG --modversion check`],
    [accel_check_version="not found: 'make check' will fail (apt-get install check)"])
])

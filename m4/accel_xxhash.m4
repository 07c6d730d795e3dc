# ACCEL_CHECK_XXHASH: xxHash (XXH3-64) for tensor checksums.
AC_DEFUN([ACCEL_CHECK_XXHASH], [
  PKG_CHECK_MODULES([XXHASH], [libxxhash >= 0.8],
    [accel_xxhash_version=`$PKG_CONFIG --modversion libxxhash`],
    [AC_MSG_ERROR([xxhash not found.
--> hint: apt-get install libxxhash-dev])])
])

# ACCEL_CHECK_ISAL: Intel ISA-L, for CRC32C (crc32_iscsi, SSE4.2/AVX-512 where the CPU has them):
# the checksums of TensorBoard's TFRecord framing (src/train/tensorboard.c).
AC_DEFUN([ACCEL_CHECK_ISAL], [
  PKG_CHECK_MODULES([ISAL], [libisal >= 2.25],
    [accel_isal_version=`$PKG_CONFIG --modversion libisal`],
    [AC_MSG_ERROR([ISA-L (libisal) not found.
--> hint: apt-get install libisal-dev])])
  accel_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $ISAL_CFLAGS"
  AC_CHECK_HEADER([isa-l/crc.h], [], [AC_MSG_ERROR([ISA-L's header <isa-l/crc.h> not found.
--> hint: apt-get install libisal-dev])])
  CPPFLAGS=$accel_save_CPPFLAGS
])

# ACCEL_CHECK_UNISTRING: GNU libunistring normalises text (NFC/NFKC/NFD/NFKD, lowercase) for the
# normalizers of Hugging Face tokenizer.json files (Qwen2 uses NFC). It ships no pkg-config file:
# header and library are probed directly; UNISTRING_LIBS is what to link.
AC_DEFUN([ACCEL_CHECK_UNISTRING], [
  AC_CHECK_HEADER([uninorm.h], [],
    [AC_MSG_ERROR([libunistring headers (uninorm.h) not found.
--> hint: apt-get install libunistring-dev])])
  accel_save_LIBS=$LIBS
  AC_CHECK_LIB([unistring], [u8_normalize], [UNISTRING_LIBS=-lunistring],
    [AC_MSG_ERROR([libunistring (u8_normalize) not found.
--> hint: apt-get install libunistring-dev])])
  LIBS=$accel_save_LIBS
  AC_SUBST([UNISTRING_LIBS])
  AC_COMPUTE_INT([accel_unistring_hex], [_LIBUNISTRING_VERSION], [#include <unistring/version.h>],
    [accel_unistring_hex=0])
  accel_unistring_version="$(( accel_unistring_hex >> 16 )).$(( (accel_unistring_hex >> 8) & 255 ))"
])

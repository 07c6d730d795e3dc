# ACCEL_CHECK_PCRE2: PCRE2 (8-bit, UTF mode with Unicode properties) runs the pre-tokenizer
# regular expressions of Hugging Face tokenizers (\p{L}, \p{N}, lookahead).
AC_DEFUN([ACCEL_CHECK_PCRE2], [
  PKG_CHECK_MODULES([PCRE2], [libpcre2-8 >= 10.34],
    [accel_pcre2_version=`$PKG_CONFIG --modversion libpcre2-8`],
    [AC_MSG_ERROR([PCRE2 not found.
--> hint: apt-get install libpcre2-dev])])
])

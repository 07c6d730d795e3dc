# ACCEL_CHECK_JANSSON: jansson parses JSON (tokenizer.json, Hugging Face config.json, safetensors
# headers, JSONL data).
AC_DEFUN([ACCEL_CHECK_JANSSON], [
  PKG_CHECK_MODULES([JANSSON], [jansson >= 2.13],
    [accel_jansson_version=`$PKG_CONFIG --modversion jansson`],
    [AC_MSG_ERROR([jansson not found.
--> hint: apt-get install libjansson-dev])])
])

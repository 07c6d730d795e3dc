# ACCEL_CHECK_PROTOBUF_C: protobuf-c, the library that encodes TensorBoard's Event messages
# (src/train/tensorboard.c), and protoc-c, which generates their C code from src/train/tb_event.proto
# at build time.
AC_DEFUN([ACCEL_CHECK_PROTOBUF_C], [
  PKG_CHECK_MODULES([PROTOBUF_C], [libprotobuf-c >= 1.3],
    [accel_protobuf_c_version=`$PKG_CONFIG --modversion libprotobuf-c`],
    [AC_MSG_ERROR([protobuf-c (libprotobuf-c) not found.
--> hint: apt-get install libprotobuf-c-dev])])
  AC_ARG_VAR([PROTOC_C], [the protobuf-c compiler (protoc-c)])
  AC_PATH_PROG([PROTOC_C], [protoc-c])
  AS_IF([test -z "$PROTOC_C"], [AC_MSG_ERROR([protoc-c (the protobuf-c compiler) not found.
--> hint: apt-get install protobuf-c-compiler, or set PROTOC_C=/path/to/protoc-c])])
])

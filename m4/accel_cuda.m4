# ACCEL_CHECK_CUDA: optional CUDA toolkit and NCCL.
#   --with-cuda[=DIR]  use the toolkit in DIR (default: /usr/local/cuda when present)
#   --without-cuda     CPU-only build
# Defines ACCEL_HAVE_CUDA and ACCEL_HAVE_NCCL to 0 or 1 (tested with #if, never #ifdef).
# Nothing here needs a GPU: CUDA code is compiled and linked on GPU-less build machines too.
AC_DEFUN([ACCEL_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@], [CUDA toolkit and NCCL prefix (default: /usr/local/cuda when present)])],
    [], [with_cuda=check])
  AC_ARG_VAR([NVCC], [CUDA compiler])
  AC_ARG_VAR([NVCC_ARCH], [nvcc -gencode flags (default: sm_80 and sm_90)])
  accel_have_cuda=0
  accel_have_nccl=0
  accel_cuda_summary="disabled (--without-cuda)"
  accel_nccl_summary="disabled"
  AS_IF([test "x$with_cuda" != xno], [
    AS_CASE([$with_cuda], [check|yes], [accel_cuda_dir=/usr/local/cuda], [accel_cuda_dir=$with_cuda])
    AS_IF([test -d "$accel_cuda_dir"], [
      AC_PATH_PROG([NVCC], [nvcc], [no], [$accel_cuda_dir/bin])
      CUDA_CPPFLAGS="-I$accel_cuda_dir/include"
      CUDA_LDFLAGS="-L$accel_cuda_dir/lib64 -Wl,-rpath,$accel_cuda_dir/lib64"
      accel_save_CPPFLAGS=$CPPFLAGS; accel_save_LDFLAGS=$LDFLAGS; accel_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"
      AC_CHECK_HEADER([cuda_runtime.h],
        [AC_CHECK_LIB([cudart], [cudaGetDeviceCount],
          [AC_CHECK_LIB([cublas], [cublasCreate_v2], [accel_have_cuda=1], [], [-lcudart])])])
      AS_IF([test $accel_have_cuda = 1 && test "x$NVCC" != xno], [
        CUDA_LIBS="-lcublas -lcudart"
        AC_CHECK_HEADER([nccl.h],
          [AC_CHECK_LIB([nccl], [ncclCommInitRank], [accel_have_nccl=1; NCCL_LIBS="-lnccl"], [], [-lcudart])])
      ], [accel_have_cuda=0])
      CPPFLAGS=$accel_save_CPPFLAGS; LDFLAGS=$accel_save_LDFLAGS; LIBS=$accel_save_LIBS
    ])
    AS_IF([test $accel_have_cuda = 1],
      [accel_cuda_summary="yes ($accel_cuda_dir, `$NVCC --version | sed -n 's/.*release \(@<:@0-9.@:>@*\).*/\1/p'`)"],
      [AS_IF([test "x$with_cuda" != xcheck],
         [AC_MSG_ERROR([CUDA was requested but no usable toolkit (nvcc, cuda_runtime.h, libcudart, libcublas) was found in $accel_cuda_dir.
--> hint: pass --with-cuda=DIR with the toolkit prefix, or --without-cuda])])
       accel_cuda_summary="no (no toolkit in $accel_cuda_dir)"])
    AS_IF([test $accel_have_nccl = 1], [accel_nccl_summary="yes"],
          [test $accel_have_cuda = 1], [accel_nccl_summary="no (nccl.h/libnccl not found: GPU collectives disabled)"])
  ])
  AS_IF([test -z "$NVCC_ARCH"],
    [NVCC_ARCH="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"])
  AC_DEFINE_UNQUOTED([ACCEL_HAVE_CUDA], [$accel_have_cuda], [1 when built with CUDA])
  AC_DEFINE_UNQUOTED([ACCEL_HAVE_NCCL], [$accel_have_nccl], [1 when built with NCCL])
  AM_CONDITIONAL([ACCEL_CUDA], [test $accel_have_cuda = 1])
  AM_CONDITIONAL([ACCEL_NCCL], [test $accel_have_nccl = 1])
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_LDFLAGS])
  AC_SUBST([CUDA_LIBS])
  AC_SUBST([NCCL_LIBS])
])

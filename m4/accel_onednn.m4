# ACCEL_CHECK_ONEDNN: oneDNN (optional) for fp32 matrix products, used where it is faster than the
# CBLAS (large products on AVX-512), and for bf16 products on AMX CPUs (its matmul primitive).
# --without-onednn leaves fp32 products to the CBLAS and bf16 ones to accel's kernel.
# Debian builds oneDNN on OpenMP: accel then links the OpenMP runtime to give oneDNN one thread
# per rank, as it does OpenBLAS.
AC_DEFUN([ACCEL_CHECK_ONEDNN], [
  AC_ARG_WITH([onednn],
    [AS_HELP_STRING([--without-onednn], [do not use oneDNN for fp32 products or bf16 products on AMX])],
    [], [with_onednn=check])
  accel_have_onednn=0
  accel_onednn_summary="no (fp32 products on $accel_blas_name)"
  AS_IF([test "x$with_onednn" != xno], [
    AC_CHECK_HEADER([oneapi/dnnl/dnnl.h],
      [AC_CHECK_LIB([dnnl], [dnnl_sgemm], [accel_have_onednn=1])])
    AS_IF([test $accel_have_onednn = 1], [
      DNNL_LIBS=-ldnnl
      AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <oneapi/dnnl/dnnl_config.h>
#if DNNL_CPU_RUNTIME != DNNL_RUNTIME_OMP
#error not OpenMP
#endif]])],
        [AC_CHECK_LIB([gomp], [omp_set_num_threads], [DNNL_LIBS="$DNNL_LIBS -lgomp"],
          [AC_MSG_ERROR([oneDNN runs on OpenMP but omp_set_num_threads was not found in libgomp.
--> hint: configure --without-onednn])])
         AC_DEFINE([ACCEL_ONEDNN_OPENMP], [1], [Define when oneDNN threads through OpenMP])])
      AC_COMPUTE_INT([accel_dnnl_major], [DNNL_VERSION_MAJOR], [[#include <oneapi/dnnl/dnnl_version.h>]])
      AC_COMPUTE_INT([accel_dnnl_minor], [DNNL_VERSION_MINOR], [[#include <oneapi/dnnl/dnnl_version.h>]])
      accel_onednn_summary="oneDNN $accel_dnnl_major.$accel_dnnl_minor (large fp32 products; bf16 on AMX)"],
      [AS_IF([test "x$with_onednn" = xyes], [AC_MSG_ERROR([oneDNN not found.
--> hint: apt-get install libdnnl-dev])])])
  ])
  AC_SUBST([DNNL_LIBS])
  AC_DEFINE_UNQUOTED([ACCEL_HAVE_ONEDNN], [$accel_have_onednn], [1 when oneDNN runs fp32 products])
])

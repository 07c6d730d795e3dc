# ACCEL_CHECK_YAML: libyaml parses the job configuration.
AC_DEFUN([ACCEL_CHECK_YAML], [
  PKG_CHECK_MODULES([YAML], [yaml-0.1 >= 0.1.4],
    [accel_yaml_version=`$PKG_CONFIG --modversion yaml-0.1`],
    [AC_MSG_ERROR([libyaml not found.
--> hint: apt-get install libyaml-dev])])
])

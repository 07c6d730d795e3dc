#!/bin/sh
# Unit tests of the core layer (tests/check_core.c), as a singleton MPI process. Each layer has its
# own Check program and runner (check_device: device_unit.sh, check_data: data_unit.sh, ...).
. "$top_srcdir/tests/lib.sh"
exec timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/check_core"

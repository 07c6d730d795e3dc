#!/bin/sh
# Unit tests of the device layer (tests/check_device.c), as a singleton MPI process.
. "$top_srcdir/tests/lib.sh"
exec timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/check_device"

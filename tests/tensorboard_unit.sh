#!/bin/sh
# TensorBoard event files (tests/check_tensorboard.c): CRC32C, write/read, corruption and
# truncation, and a file written by TensorBoard's own writer (tests/fixtures/tensorboard/).
. "$top_srcdir/tests/lib.sh"
ACCEL_TB_FIXTURE="$top_srcdir/tests/fixtures/tensorboard/tensorboard_writer.tfevents"
export ACCEL_TB_FIXTURE
exec timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/check_tensorboard"

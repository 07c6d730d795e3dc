#!/bin/sh
# Each CUDA kernel of the GPT engine and of the Llama layers against its host reference (the Llama
# ones: the CPU model's functions; grouped-query attention end to end through cuBLAS), in
# fp32/bf16/fp16, with the relative error of every output printed (tests/gpu_kernels_check.c).
# Skipped where no GPU is usable; the harness (and the emulated device's Llama kernels against the
# CPU) is checked on the emulated device everywhere CUDA is built.
. "${top_srcdir:-.}/tests/lib.sh"
mock="$top_builddir/tests/gpu_kernels_mockcheck"
prog="$top_builddir/tests/gpu_kernels_check"
[ -x "$prog" ] || skip "accel was built without CUDA (no tests/gpu_kernels_check)"
timeout -k 10 "$TEST_TIMEOUT" "$mock" > harness.log 2>&1 || fail "the kernel-check harness fails on the emulated device: $(grep -v '^ok' harness.log | tail -20)"
timeout -k 10 "$TEST_TIMEOUT" "$prog"; rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || fail "gpu_kernels_check failed (exit $rc): the FAIL lines above name the kernels"
pass "every CUDA kernel agrees with its host reference"

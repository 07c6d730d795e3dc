#!/bin/sh
# Unit tests of the built-in GPT (tests/check_gpt.c): finite-difference gradients of every tensor,
# accumulation, causality, bf16/fp16 against fp32, bad token ids, generation, kernels.
# Run once as the process starts, and once more with OpenBLAS on the AVX-512 kernels the training
# tools select (accel_blas_fixup), so both sets of BLAS kernels are covered; then once with each
# bf16 product path (oneDNN, accel's kernel, the emulation) that this machine runs.
. "${top_srcdir:-.}/tests/lib.sh"
prog="$top_builddir/tests/check_gpt"
[ -x "$prog" ] || fail "$prog is not built (make check builds it)"
timeout -k 10 "$TEST_TIMEOUT" "$prog" || fail "check_gpt failed"
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then
    core=SkylakeX
    grep -q avx512_bf16 /proc/cpuinfo && core=Cooperlake
    OPENBLAS_CORETYPE=$core timeout -k 10 "$TEST_TIMEOUT" "$prog" || fail "check_gpt failed with OPENBLAS_CORETYPE=$core"
fi
# Every bf16 product path this machine runs, forced in turn (gemm_cpu.h): the same tests pass on each.
for_each_bf16_path timeout -k 10 "$TEST_TIMEOUT" "$prog"
pass "gpt unit tests"

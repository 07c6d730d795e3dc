#!/bin/sh
# GPU engine vs CPU reference, tensor by tensor (tests/gpu_gpt_check.c): gradients of a tiny GPT in
# fp32, bf16 and fp16 (relative error per tensor printed), evaluation losses, AdamW and SGD updates;
# the same for tiny Llamas (grouped-query and multi-query attention, tied and separate heads, q/k/v
# biases, Llama-3.1 RoPE scaling, contexts of 23 and 19).
# Skipped (77) where no GPU is usable.
. "${top_srcdir:-.}/tests/lib.sh"
prog="$top_builddir/tests/gpu_gpt_check"
[ -x "$prog" ] || fail "$prog is not built (make check builds it)"
timeout -k 10 "$TEST_TIMEOUT" "$prog"; rc=$?
[ "$rc" -eq 77 ] && exit 77
[ "$rc" -eq 0 ] || fail "gpu_gpt_check failed (exit $rc): see the per-tensor errors above"
pass "GPU gradients, evaluation and updates (gpt and llama) agree with the CPU reference"

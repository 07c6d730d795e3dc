#!/bin/sh
# The built-in Llama against Hugging Face transformers (tests/check_llama.c): logits, loss and the
# gradient of every tensor of fifteen tiny models (GQA, MQA, Llama-3.1 RoPE scaling, Qwen2 biases,
# MHA, packed documents through position_ids, the mixtures of experts, OLMo 2, OLMoE, OLMo 3 with
# its sliding layers and YaRN, Gemma 3 with its sandwich norms and per-layer-type RoPE, gpt-oss with
# its sinks, biases and clamped SwiGLU experts) against the
# fixtures tests/fixtures/llama/*.h5 (made
# by tests/make_llama_fixtures.sh; Python is not needed here). Run once as the process starts, and once more with OpenBLAS on the AVX-512
# kernels the training tools select, and with each bf16 product path, like tests/gpt_unit.sh.
. "${top_srcdir:-.}/tests/lib.sh"
prog="$top_builddir/tests/check_llama"
[ -x "$prog" ] || fail "$prog is not built (make check builds it)"
ACCEL_LLAMA_FIXTURES="$top_srcdir/tests/fixtures/llama"
[ -d "$ACCEL_LLAMA_FIXTURES" ] || fail "no fixtures in $ACCEL_LLAMA_FIXTURES"
# The fixtures are read in place, in a source tree that may be read-only (make distcheck).
HDF5_USE_FILE_LOCKING=FALSE
export ACCEL_LLAMA_FIXTURES HDF5_USE_FILE_LOCKING
timeout -k 10 "$TEST_TIMEOUT" "$prog" || fail "check_llama failed"
if grep -q avx512f /proc/cpuinfo 2>/dev/null; then
    core=SkylakeX
    grep -q avx512_bf16 /proc/cpuinfo && core=Cooperlake
    OPENBLAS_CORETYPE=$core timeout -k 10 "$TEST_TIMEOUT" "$prog" || fail "check_llama failed with OPENBLAS_CORETYPE=$core"
fi
# Every bf16 product path this machine runs, forced in turn (gemm_cpu.h): the same tests pass on each.
for_each_bf16_path timeout -k 10 "$TEST_TIMEOUT" "$prog"
pass "llama against transformers"

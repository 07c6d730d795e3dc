#!/bin/sh
# The GPU path's host-side logic, on every machine (tests/check_gpt_cuda.c: device buffer plan,
# gradient buckets, launch geometry, which jobs the GPU path accepts), and the messages a user
# sees: device=cuda without a GPU names the reason; with a GPU, a model or strategy without a GPU
# path is refused by name instead of silently training on the CPU.
. "${top_srcdir:-.}/tests/lib.sh"
unset ACCEL_DEVICE      # lib.sh keeps the other tests on the CPU; these choose their device
prog="$top_builddir/tests/check_gpt_cuda"
[ -x "$prog" ] || fail "$prog is not built (make check builds it)"
timeout -k 10 "$TEST_TIMEOUT" "$prog" || fail "check_gpt_cuda failed"
tiny="model.name=gpt model.layers=1 model.heads=2 model.width=16 model.context=8 model.vocab=32 \
data.path=synthetic train.steps=2 train.global_batch=2 train.sample_tokens=0"
probe=$("$top_builddir/tests/gpu_gpt_check" --probe 2>&1); rc=$?
if [ "$rc" -eq 77 ]; then
    # shellcheck disable=SC2086
    expect_fail "device=cuda but no usable GPU" "$ACCEL_TRAIN" $tiny device=cuda
    # device=auto without a GPU trains on the CPU
    # shellcheck disable=SC2086
    timeout -k 10 "$TEST_TIMEOUT" "$ACCEL_TRAIN" $tiny device=auto > auto.log 2>&1 ||
        fail "device=auto without a GPU did not train on the CPU: $(cat auto.log)"
    pass "no GPU here ($probe): device=cuda refused, device=auto trains on the CPU"
    exit 0
fi
[ "$rc" -eq 0 ] || fail "GPU probe failed: $probe"
# shellcheck disable=SC2086
expect_fail "model 'mlp' has no GPU path" "$ACCEL_TRAIN" model.name=mlp data.path=synthetic \
    train.steps=2 train.global_batch=2 device=cuda
# shellcheck disable=SC2086
expect_fail "dist.strategy=ddp or zero1, not zero3" "$ACCEL_TRAIN" $tiny device=cuda dist.strategy=zero3
# shellcheck disable=SC2086
timeout -k 10 "$TEST_TIMEOUT" "$ACCEL_TRAIN" model.name=mlp data.path=synthetic train.steps=2 \
    train.global_batch=2 device=auto > mlp_auto.log 2>&1 || fail "mlp with device=auto failed: $(cat mlp_auto.log)"
grep -q "has no GPU path.*so this job trains on the CPU" mlp_auto.log || fail "mlp with device=auto did not warn: $(cat mlp_auto.log)"
pass "GPU present: models and strategies without a GPU path are refused by name"

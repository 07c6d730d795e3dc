#!/bin/sh
# Bad input gives a clear message naming the problem and a non-zero exit: never a crash or a hang.
. "$top_srcdir/tests/lib.sh"
make_scratch
printf 'train:\n  stpes: 10\n' > "$SCRATCH/unknown.yaml"
printf 'model: {name: mlp\n' > "$SCRATCH/malformed.yaml"
printf 'train:\n  steps: lots\n' > "$SCRATCH/type.yaml"
printf '\001\002\377binary\n' > "$SCRATCH/binary.yaml"
expect_fail "unknown configuration key 'train.stpes'" "$ACCEL_TRAIN" "$SCRATCH/unknown.yaml"
expect_fail "did you mean 'train.steps'" "$ACCEL_TRAIN" "$SCRATCH/unknown.yaml"
expect_fail "malformed YAML" "$ACCEL_TRAIN" "$SCRATCH/malformed.yaml"
expect_fail "'train.steps' expects an integer, got 'lots'" "$ACCEL_TRAIN" "$SCRATCH/type.yaml"
expect_fail "cannot open configuration file '$SCRATCH/missing.yaml'" "$ACCEL_TRAIN" "$SCRATCH/missing.yaml"
expect_fail "malformed YAML" "$ACCEL_TRAIN" "$SCRATCH/binary.yaml"
expect_fail "unknown configuration key 'bogus.key'" "$ACCEL_TRAIN" bogus.key=1
expect_fail "expected one of fp32|bf16|fp16" "$ACCEL_TRAIN" precision=fp64
expect_fail "not divisible by ranks x train.grad_accum" "$ACCEL_TRAIN" train.global_batch=30 train.grad_accum=4
expect_fail "unknown option '--bogus'" "$ACCEL_TRAIN" --bogus
expect_fail "more than one configuration file" "$ACCEL_TRAIN" a.yaml b.yaml
expect_fail "environment variable ACCEL_TRAIN_STEPS" env ACCEL_TRAIN_STEPS=x "$ACCEL_TRAIN"
if ! "$top_builddir/tests/gpu_gpt_check" --probe > /dev/null 2>&1; then    # no usable GPU here
    expect_fail "device=cuda but no usable GPU" env -u ACCEL_DEVICE "$ACCEL_TRAIN" device=cuda train.steps=1
fi
expect_fail "cannot load model plugin" "$ACCEL_TRAIN" model.plugin="$SCRATCH/none.so"
# Under mpirun every rank fails the same way, once reported, and the job exits non-zero.
expect_fail "unknown configuration key 'train.stpes'" run_mpi 2 "$ACCEL_TRAIN" "$SCRATCH/unknown.yaml"
expect_fail "not divisible" run_mpi 4 "$ACCEL_TRAIN" train.global_batch=6
n=$(run_mpi 2 "$ACCEL_TRAIN" "$SCRATCH/unknown.yaml" 2>&1 | grep -c "unknown configuration key")
[ "$n" -eq 1 ] || fail "the error was printed $n times instead of once"
exit 0

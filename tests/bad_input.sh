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
expect_fail "binary.yaml:1: byte 0 (0x01): control characters are not allowed" "$ACCEL_TRAIN" "$SCRATCH/binary.yaml"
expect_fail "unknown configuration key 'bogus.key'" "$ACCEL_TRAIN" bogus.key=1
expect_fail "expected one of fp32|bf16|fp16" "$ACCEL_TRAIN" precision=fp64
expect_fail "not divisible by ranks x train.grad_accum" "$ACCEL_TRAIN" train.global_batch=30 train.grad_accum=4
expect_fail "unknown option '--bogus'" "$ACCEL_TRAIN" --bogus
expect_fail "more than one configuration file" "$ACCEL_TRAIN" a.yaml b.yaml
expect_fail "environment variable ACCEL_TRAIN_STEPS" env ACCEL_TRAIN_STEPS=x "$ACCEL_TRAIN"
# The bf16 product path: a value that names none, and a path this machine cannot run.
expect_fail "ACCEL_BF16_GEMM=fast is not a bf16 product path" env ACCEL_BF16_GEMM=fast "$ACCEL_TRAIN" precision=bf16 train.steps=1
case " $(bf16_paths) " in *" sbgemm "*) ;; *)
    expect_fail "ACCEL_BF16_GEMM=sbgemm: the BLAS has no cblas_sbgemm" env ACCEL_BF16_GEMM=sbgemm "$ACCEL_TRAIN" precision=bf16 train.steps=1 ;;
esac
if ! "$top_builddir/tests/gpu_gpt_check" --probe > /dev/null 2>&1; then    # no usable GPU here
    expect_fail "device=cuda but no usable GPU" env -u ACCEL_DEVICE "$ACCEL_TRAIN" device=cuda train.steps=1
fi
expect_fail "cannot load model plugin" "$ACCEL_TRAIN" model.plugin="$SCRATCH/none.so"
# Hostile configurations (tests/check_core.c has the unit tests): duplicate keys, a second document,
# nesting 200,000 deep (minutes of parsing once), values out of range, text that is not UTF-8, and a
# debug rank beyond the world size.
printf 'model:\n  name: mlp\n  name: gpt\n' > "$SCRATCH/dup.yaml"
printf 'train.steps: 3\n---\ntrain.steps: 4\n' > "$SCRATCH/twodocs.yaml"
awk 'BEGIN { s = "model: "; for (i = 0; i < 200000; i++) s = s "["; print s }' > "$SCRATCH/deep.yaml"
printf 'ckpt:\n  dir: caf\351\n' > "$SCRATCH/latin1.yaml"
expect_fail "key 'model.name' is given twice, on line 2 and on line 3" "$ACCEL_TRAIN" "$SCRATCH/dup.yaml"
expect_fail "a second YAML document" "$ACCEL_TRAIN" "$SCRATCH/twodocs.yaml"
expect_fail "deep.yaml:1: key 'model' has a list value" timeout 20 "$ACCEL_TRAIN" "$SCRATCH/deep.yaml"
expect_fail "latin1.yaml:2: byte 16 (0xe9): incomplete UTF-8 octet sequence" "$ACCEL_TRAIN" "$SCRATCH/latin1.yaml"
expect_fail "configuration key 'ckpt.dir': value is not valid UTF-8 (byte 3 is 0xe9)" "$ACCEL_TRAIN" ckpt.dir="$(printf 'caf\351')"
expect_fail "'optim.beta1' has value '2', outside its range [0, 1)" "$ACCEL_TRAIN" optim.beta1=2
expect_fail "'optim.eps' has value '0', outside its range (0, 1]" "$ACCEL_TRAIN" optim.eps=0
expect_fail "'optim.min_lr_ratio' has value '5', outside its range [0, 1]" "$ACCEL_TRAIN" optim.min_lr_ratio=5
expect_fail "'threads' has value '100000', outside its range [0, 1024]" "$ACCEL_TRAIN" threads=100000
expect_fail "'data.samples' has value '4611686018427387904', outside its range" "$ACCEL_TRAIN" data.samples=4611686018427387904
expect_fail "debug.stop_rank=5, but this job has 2 rank(s)" \
    run_mpi 2 "$ACCEL_TRAIN" model.name=mlp train.steps=2 debug.stop_step=1 debug.stop_rank=5
expect_fail "debug.overflow_rank=1, but this job has 1 rank(s)" \
    "$ACCEL_TRAIN" model.name=mlp train.steps=2 precision=fp16 debug.overflow_step=1 debug.overflow_rank=1
# Under mpirun every rank fails the same way, once reported, and the job exits non-zero.
expect_fail "unknown configuration key 'train.stpes'" run_mpi 2 "$ACCEL_TRAIN" "$SCRATCH/unknown.yaml"
expect_fail "not divisible" run_mpi 4 "$ACCEL_TRAIN" train.global_batch=6
n=$(run_mpi 2 "$ACCEL_TRAIN" "$SCRATCH/unknown.yaml" 2>&1 | grep -c "unknown configuration key")
[ "$n" -eq 1 ] || fail "the error was printed $n times instead of once"
exit 0

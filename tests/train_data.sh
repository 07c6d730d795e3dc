#!/bin/sh
# accel_train on HDF5 datasets: training on a classification dataset, distributed evaluation whose
# result does not depend on the rank count (padding duplicates dropped exactly), pad-with-duplicates
# epochs, and clear errors for missing, mismatched or corrupt datasets.
. "$top_srcdir/tests/lib.sh"
make_scratch
D="$top_builddir/accel_data"
"$D" synth --kind classification --output "$SCRATCH/cls.h5" --samples 1000 --features 12 --classes 4 >/dev/null \
    || fail "accel_data synth"
args="model.name=mlp data.path=$SCRATCH/cls.h5 model.inputs=12 model.classes=4 train.steps=30 train.global_batch=24 log.level=warn"
for np in 1 2 3; do
    run_mpi $np "$ACCEL_TRAIN" $args train.metrics="$SCRATCH/m$np.jsonl" > "$SCRATCH/o$np" 2>&1 \
        || fail "training on the dataset with $np ranks: $(tail -3 "$SCRATCH/o$np")"
done
# The validation split has 125 samples: with 3 ranks x 8 the last batch carries padding duplicates.
e1=$(grep eval_loss "$SCRATCH/m1.jsonl"); e2=$(grep eval_loss "$SCRATCH/m2.jsonl"); e3=$(grep eval_loss "$SCRATCH/m3.jsonl")
loss_of() { echo "$1" | sed 's/.*"eval_loss": \([^,]*\),.*/\1/'; }
acc_of() { echo "$1" | sed 's/.*"eval_accuracy": \([^,]*\),.*/\1/'; }
for e in "$e2" "$e3"; do
    awk -v a="$(loss_of "$e1")" -v b="$(loss_of "$e")" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * a) }' \
        || fail "evaluation differs with the rank count: $e1 vs $e"
    [ "$(acc_of "$e1")" = "$(acc_of "$e")" ] || fail "accuracy differs with the rank count: $e1 vs $e"
done
pass "evaluation identical on 1, 2, 3 ranks: $e1"
# Without drop_last the epoch's tail is padded with known duplicates (1000 = 41 x 24 + 16).
run_mpi 2 "$ACCEL_TRAIN" $args data.drop_last=false train.steps=45 > "$SCRATCH/pad" 2>&1 || fail "drop_last=false: $(tail -3 "$SCRATCH/pad")"
# Bad datasets.
expect_fail "has 12 features and 4 classes but the model has model.inputs=32" "$ACCEL_TRAIN" model.name=mlp data.path="$SCRATCH/cls.h5" train.steps=1
expect_fail "$SCRATCH/none.h5" "$ACCEL_TRAIN" data.path="$SCRATCH/none.h5"
printf 'not hdf5 at all' > "$SCRATCH/junk.h5"
expect_fail "junk.h5" "$ACCEL_TRAIN" data.path="$SCRATCH/junk.h5"
head -c 3000 "$SCRATCH/cls.h5" > "$SCRATCH/trunc.h5"
expect_fail "trunc.h5" run_mpi 2 "$ACCEL_TRAIN" $args data.path="$SCRATCH/trunc.h5"
"$D" synth --kind tokens --output "$SCRATCH/tok.h5" --samples 200 --context 16 >/dev/null || fail "synth tokens"
expect_fail "holds token data but model 'mlp' expects feature vectors" "$ACCEL_TRAIN" model.name=mlp data.path="$SCRATCH/tok.h5"
exit 0

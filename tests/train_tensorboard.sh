#!/bin/sh
# TensorBoard output of accel_train (train.tensorboard=DIR, docs/metrics.md), read back with
# tests/tb_dump (every record's CRCs checked, protobuf-c decoding):
#  - 1 and 2 ranks: one event file (rank 0's), file_version first, every train/ tag once per step,
#    train/loss equal (as float32) to the metrics file's loss at every step, eval/loss and
#    eval/accuracy at the evaluation steps equal to the eval rows;
#  - stopped at step 6 and resumed from the step-4 checkpoint: a second file whose first event after
#    the version is a SessionLog START at step 5, and after TensorBoard's purge rule exactly one
#    value per step and tag, equal to the (trimmed) metrics file;
#  - a DIR that cannot be created fails before training on every rank, with a clear message.
. "$top_srcdir/tests/lib.sh"
make_scratch
S=$SCRATCH
DUMP="$top_builddir/tests/tb_dump"
CHECK="$top_builddir/tests/metrics_check"
gpt="model.name=gpt model.layers=2 model.width=64 model.heads=4 model.context=32 model.vocab=256
     data.path=synthetic data.eval_samples=16 train.steps=8 train.global_batch=8 train.log_every=4
     train.sample_tokens=0 train.eval_every=3 seed=5"
TAGS="train/loss train/lr train/grad_norm train/loss_scale train/tokens_per_s train/tflops train/memory_gib"

train() { # NAME NP ARGS...
    name=$1 np=$2; shift 2
    run_mpi "$np" "$ACCEL_TRAIN" $gpt train.tensorboard="$S/$name.tb" train.metrics="$S/$name.jsonl" "$@" \
        >> "$S/$name.out" 2>&1 || { cat "$S/$name.out"; fail "$name: training failed"; }
    "$CHECK" "$S/$name.jsonl" > "$S/$name.rows" || fail "$name: bad metrics file"
    "$DUMP" --purged "$S/$name.tb" > "$S/$name.series" || fail "$name: unreadable event files"
}

# same NAME KIND TAG: the TensorBoard series TAG (after the purge rule) has exactly the steps of the
# metrics rows of KIND, each value equal to the row's as float32 (rounding a double to float32 moves
# it by at most half a float32 ulp, 6e-8 relative: the bar is one ulp).
same() {
    awk -v kind="$2" -v tag="$3" '
        FNR == NR { if ($1 == kind) { want[$2] = $3; n++ } next }
        $1 == tag { if ($2 in got) { print "step " $2 " twice"; exit 1 }
                    if (!($2 in want)) { print "step " $2 " has no metrics row"; exit 1 }
                    got[$2] = 1; d = $3 - want[$2]; if (d < 0) d = -d
                    r = want[$2] < 0 ? -want[$2] : want[$2]
                    if (d > 1.2e-7 * r + 1e-30) { print "step " $2 ": " $3 " vs " want[$2]; exit 1 }
                    m++ }
        END { if (m != n || n == 0) { print m " values for " n " rows"; exit 1 } }' \
        "$S/$1.rows" "$S/$1.series" || fail "$1: TensorBoard $3 does not match the $2 rows"
}

check_run() { # NAME: one file, version first, tags per step, values equal to the metrics file
    name=$1
    "$DUMP" "$S/$name.tb" > "$S/$name.raw" || fail "$name: unreadable event files"
    [ "$(sed -n 2p "$S/$name.raw")" = "version 0 brain.Event:2" ] ||
        fail "$name: the first event is not file_version brain.Event:2: $(head -3 "$S/$name.raw")"
    for tag in $TAGS; do
        [ "$(awk -v t="$tag" '$1 == t { printf "%s ", $2 }' "$S/$name.series")" = "1 2 3 4 5 6 7 8 " ] ||
            fail "$name: $tag at steps $(awk -v t="$tag" '$1 == t { printf "%s ", $2 }' "$S/$name.series")"
    done
    [ "$(awk '$1 == "eval/loss" { printf "%s ", $2 }' "$S/$name.series")" = "3 6 8 " ] ||
        fail "$name: eval/loss at steps $(awk '$1 == "eval/loss" { printf "%s ", $2 }' "$S/$name.series")"
    same "$name" train train/loss
    same "$name" eval eval/loss
    awk '$1 == "eval/accuracy" { n++ } END { exit n != 3 }' "$S/$name.series" || fail "$name: eval/accuracy"
}

for np in 1 2; do
    train r$np $np
    [ "$(ls "$S/r$np.tb" | wc -l)" -eq 1 ] || fail "r$np: expected one event file (rank 0's): $(ls "$S/r$np.tb")"
    ls "$S/r$np.tb" | grep -Eq '^events\.out\.tfevents\.[0-9]{10}\.[^.]+(\.[^.]+)*\.[0-9]+\.accel$' ||
        fail "r$np: file name $(ls "$S/r$np.tb")"
    check_run r$np
    grep -q "tensorboard: writing $S/r$np.tb/events.out.tfevents." "$S/r$np.out" || fail "r$np: no 'tensorboard: writing' line"
    pass "$np rank(s): one event file, 8 steps x $(echo $TAGS | wc -w) train tags, eval at 3 6 8, train/loss and eval/loss = metrics rows (float32)"
done

# Stop at 6 (checkpoints at 4 and 6), resume from 4: steps 5 and 6 of the first file are orphans.
train cut 2 ckpt.dir="$S/ck" ckpt.every=4 debug.stop_step=6 debug.stop_rank=1
awk '$1 == "train/loss" && $2 == 6' "$S/cut.series" | grep -q . || fail "the stopped run has no train/loss at step 6"
train cut 2 ckpt.dir="$S/ck" resume="$S/ck/step-00000004.h5"
grep -q "resumed from $S/ck/step-00000004.h5: step 4" "$S/cut.out" || fail "did not resume from step 4"
"$DUMP" "$S/cut.tb" > "$S/cut.raw" || fail "cut: unreadable event files"
[ "$(grep -c '^file ' "$S/cut.raw")" -eq 2 ] || fail "resume: expected 2 event files: $(grep '^file ' "$S/cut.raw")"
awk '/^file / { f++; next } f == 2 && !/^version/ { print; exit }' "$S/cut.raw" | grep -qx "start 5" ||
    fail "resume: the second file does not open with a SessionLog START at step 5: $(awk '/^file / { f++ } f == 2' "$S/cut.raw" | head -3)"
[ "$(grep -c '^start ' "$S/cut.raw")" -eq 1 ] || fail "resume: more than one START"
check_run cut
same cut train train/loss
pass "stopped at 6, resumed from 4: START at step 5 in a second file; after the purge one value per step and tag, equal to the metrics rows"
# Without the purge the orphans are there (the test above would catch a missing START).
[ "$("$DUMP" "$S/cut.tb" | awk '$1 == "scalar" && $2 == "train/loss"' | wc -l)" -eq 10 ] ||
    fail "resume: expected 10 raw train/loss events (8 + the orphaned 5 and 6)"

# A directory under a regular file: a clear error before training, on every rank (no hang).
: > "$S/plain"
expect_fail "train.tensorboard=$S/plain/tb: cannot create the directory '$S/plain/tb': Not a directory" \
    run_mpi 2 "$ACCEL_TRAIN" $gpt train.tensorboard="$S/plain/tb"
out=$(run_mpi 2 "$ACCEL_TRAIN" $gpt train.tensorboard="$S/plain/tb" 2>&1)
echo "$out" | grep -q "step *1/" && fail "training started despite the bad train.tensorboard: $out"
echo "$out" | grep -q -- "--> hint:" || fail "no hint for the bad train.tensorboard: $out"
pass "train.tensorboard under a regular file fails before the first step, with a hint"

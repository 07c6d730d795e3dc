#!/bin/sh
# Background checkpoints (ckpt.async=true, src/train/ckpt_writer.c) on 2 ranks:
# - ddp and zero1 save files whose every tensor equals the synchronous run's, and each verifies,
#   also while reading an HDF5 token dataset;
# - a resume from a background checkpoint continues exactly like the uninterrupted run;
# - rank 0 killed in the middle of a background save leaves the previous checkpoint and `latest`
#   intact, and resume=auto then finishes the run;
# - a failing background save (a write error on one rank) is reported, training goes on, and the
#   run exits non-zero when its last save fails, with no tmp file left;
# - a stop (debug.stop_step) and a preemption (SIGUSR1, exit 3) wait for their checkpoint.
. "$top_srcdir/tests/lib.sh"
make_scratch
CKPT="$top_builddir/accel_ckpt"
run="model.name=gpt model.layers=2 model.width=64 model.heads=4 model.context=32 model.vocab=256
     data.path=synthetic train.global_batch=8 train.sample_tokens=0 train.peak_tflops=1 ckpt.every=2
     ckpt.keep_last=0 log.level=info"

for strategy in ddp zero1; do
    for a in false true; do
        (cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $run train.steps=6 dist.strategy=$strategy \
            ckpt.dir="$SCRATCH/$strategy-$a" ckpt.async=$a > $strategy-$a.log 2>&1) ||
            fail "$strategy ckpt.async=$a: $(tail -20 "$SCRATCH/$strategy-$a.log")"
    done
    grep -q "checkpoint: step 4 copied in .* s, saving in the background" "$SCRATCH/$strategy-true.log" ||
        fail "$strategy: no background save in the log: $(cat "$SCRATCH/$strategy-true.log")"
    grep -q "checkpoint: step 6 saved to .* (in the background)" "$SCRATCH/$strategy-true.log" ||
        fail "$strategy: the last background save was not waited for"
    for s in 2 4 6; do
        f=$(printf 'step-%08d.h5' $s)
        "$CKPT" verify "$SCRATCH/$strategy-true/$f" > /dev/null || fail "$strategy: background $f does not verify"
        "$CKPT" diff "$SCRATCH/$strategy-false/$f" "$SCRATCH/$strategy-true/$f" > "$SCRATCH/diff" 2>&1 ||
            fail "$strategy: background $f differs from the synchronous one: $(tail -5 "$SCRATCH/diff")"
    done
    pass "$strategy: background checkpoints at steps 2, 4, 6 verify and equal the synchronous ones tensor by tensor"
done

# A token dataset in HDF5: its reads (direct, by pread) go on during background saves; same files.
"$top_builddir/accel_data" synth --kind tokens --output "$SCRATCH/tok.h5" --samples 400 --context 32 > /dev/null ||
    fail "accel_data synth"
for a in false true; do
    (cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $run train.steps=6 data.path="$SCRATCH/tok.h5" \
        ckpt.dir="$SCRATCH/data-$a" ckpt.async=$a > data-$a.log 2>&1) ||
        fail "HDF5 data, ckpt.async=$a: $(tail -20 "$SCRATCH/data-$a.log")"
done
"$CKPT" diff "$SCRATCH/data-false/step-00000004.h5" "$SCRATCH/data-true/step-00000004.h5" > "$SCRATCH/diff" 2>&1 ||
    fail "HDF5 data: background step 4 differs from the synchronous one: $(tail -5 "$SCRATCH/diff")"
pass "training on an HDF5 token dataset: background checkpoints equal the synchronous ones"

# Resume from the background step-4 checkpoint: the step-6 checkpoint is the uninterrupted run's.
(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $run train.steps=6 dist.strategy=zero1 ckpt.async=true \
    resume="$SCRATCH/zero1-true/step-00000004.h5" ckpt.dir="$SCRATCH/resumed" > resumed.log 2>&1) ||
    fail "resume from a background checkpoint: $(tail -20 "$SCRATCH/resumed.log")"
"$CKPT" diff "$SCRATCH/zero1-false/step-00000006.h5" "$SCRATCH/resumed/step-00000006.h5" > "$SCRATCH/diff" 2>&1 ||
    fail "resumed from step 4: step 6 differs from the uninterrupted run: $(tail -5 "$SCRATCH/diff")"
pass "resumed from a background checkpoint: step 6 equals the uninterrupted run's"

# Rank 0 killed in the middle of the step-4 background save.
K="$SCRATCH/killed"
(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $run train.steps=2 ckpt.async=true ckpt.dir="$K" > k1.log 2>&1) ||
    fail "first run: $(tail -20 "$SCRATCH/k1.log")"
(cd "$SCRATCH" && ACCEL_CKPT_TEST_KILL=tensor:3 run_mpi 2 -x ACCEL_CKPT_TEST_KILL "$ACCEL_TRAIN" $run \
    train.steps=6 ckpt.async=true ckpt.dir="$K" resume=auto > k2.log 2>&1) &&
    fail "a run whose rank 0 was killed during a background save succeeded"
[ "$(cat "$K/latest")" = "step-00000002.h5" ] || fail "killed: latest is '$(cat "$K/latest")'"
"$CKPT" verify "$K/step-00000002.h5" > /dev/null || fail "killed: step 2 no longer verifies"
[ ! -e "$K/step-00000004.h5" ] || fail "killed: a step-4 checkpoint was published"
(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $run train.steps=6 ckpt.async=true ckpt.dir="$K" resume=auto > k3.log 2>&1) ||
    fail "resume=auto after the kill: $(tail -20 "$SCRATCH/k3.log")"
grep -q "resum.* step 2\|from step 2\|step-00000002" "$SCRATCH/k3.log" || fail "did not resume from step 2: $(head -40 "$SCRATCH/k3.log")"
[ "$(cat "$K/latest")" = "step-00000006.h5" ] || fail "after the resume: latest is '$(cat "$K/latest")'"
pass "rank 0 killed during a background save: step 2 and latest intact, resume=auto finished the run"

# A write error on one rank in every save: each background failure is reported, training goes on.
F="$SCRATCH/failing"
(cd "$SCRATCH" && ACCEL_CKPT_TEST_FAIL=3 run_mpi 2 -x ACCEL_CKPT_TEST_FAIL "$ACCEL_TRAIN" $run train.steps=6 \
    ckpt.async=true ckpt.dir="$F" train.metrics=f.jsonl > f.log 2>&1); rc=$?
[ $rc = 1 ] || fail "failing saves: exit $rc, expected 1 (the last save failed): $(tail -20 "$SCRATCH/f.log")"
for s in 2 4 6; do
    grep -q "checkpoint at step $s was NOT saved" "$SCRATCH/f.log" || fail "no failure reported for step $s: $(cat "$SCRATCH/f.log")"
done
grep -q '"step": 6, "kind": "train"' "$SCRATCH/f.jsonl" ||
    fail "training did not go on to step 6 after a failed background save: $(cat "$SCRATCH/f.jsonl")"
[ -z "$(ls "$F" 2>/dev/null | grep tmp)" ] || fail "failing saves left tmp files: $(ls "$F")"
pass "failing background saves: each reported, training reached step 6, exit 1, no tmp file"

# A stop waits for its checkpoint.
(cd "$SCRATCH" && run_mpi 2 "$ACCEL_TRAIN" $run train.steps=40 ckpt.every=0 ckpt.async=true \
    ckpt.dir="$SCRATCH/stopped" debug.stop_step=3 debug.stop_rank=1 > s.log 2>&1) ||
    fail "stop run: $(tail -20 "$SCRATCH/s.log")"
grep -q "checkpoint: step 3 saved to .* (in the background)" "$SCRATCH/s.log" || fail "the stop's checkpoint was not waited for: $(cat "$SCRATCH/s.log")"
[ "$(cat "$SCRATCH/stopped/latest")" = "step-00000003.h5" ] || fail "stop: latest is '$(cat "$SCRATCH/stopped/latest")'"
"$CKPT" verify "$SCRATCH/stopped/step-00000003.h5" > /dev/null || fail "stop: step 3 does not verify"
pass "a stop at step 3 waited for its background checkpoint"

# Preemption: SIGUSR1 to the ranks (as srun delivers Slurm's warning) while background saves run
# every step: the stop's checkpoint is waited for, verifies, and the run exits 3 (requeue).
P="$SCRATCH/preempted"
run_mpi 2 "$ACCEL_TRAIN" $run train.steps=100000 ckpt.every=1 ckpt.keep_last=2 ckpt.async=true \
    ckpt.dir="$P" > "$SCRATCH/p.log" 2>&1 &
pid=$!
wait_for_line "$SCRATCH/p.log" "saved to .*step-00000020.h5" || true
signal_ranks USR1 "ckpt.dir=$P"
wait $pid; rc=$?
[ "$rc" -eq 3 ] || fail "preempted async run exited $rc, expected 3: $(tail -5 "$SCRATCH/p.log")"
last=$(sed -n 's/.*every rank stops after step \([0-9]*\).*/\1/p' "$SCRATCH/p.log")
[ -n "$last" ] || fail "no stop line: $(tail -5 "$SCRATCH/p.log")"
want=$(printf 'step-%08d.h5' "$last")
[ "$(cat "$P/latest")" = "$want" ] || fail "preempted at step $last, but latest is '$(cat "$P/latest")'"
"$CKPT" verify "$P/$want" > /dev/null || fail "the preemption checkpoint $want does not verify"
pass "SIGUSR1 with background saves every step: stopped after step $last, $want waited for, verifies, exit 3"

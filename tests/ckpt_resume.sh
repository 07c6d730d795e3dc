#!/bin/sh
# Checkpoint/resume end to end with accel_train:
#  - at the same world size and strategy, resuming continues bit-identically;
#  - saved by 4 ranks with zero2, resumed by 2 ranks with ddp (and 2 x zero3 -> 3 x zero1): the loss
#    trajectory stays within 1e-5 relative of the uninterrupted run, the data order continues;
#  - SIGUSR1 (Slurm's warning signal) makes every rank save at the next step boundary and exit 3;
#  - a corrupt or mismatched checkpoint stops the run with a clear message, never a partial load.
. "$top_srcdir/tests/lib.sh"
make_scratch
S=$SCRATCH
args="model.name=gpt data.path=synthetic model.layers=2 model.width=32 model.heads=2 model.context=16
      train.steps=40 train.global_batch=12 seed=5 train.sample_tokens=0 data.eval_samples=12"
steps() { grep '"kind": "train"' "$1" | sed 's/, "time.*//'; }
run_mpi 2 "$ACCEL_TRAIN" $args train.metrics="$S/full.jsonl" >/dev/null || fail "uninterrupted run"

# Same world size: bit-identical.
run_mpi 2 "$ACCEL_TRAIN" $args ckpt.dir="$S/a" debug.stop_step=17 debug.stop_rank=1 train.metrics="$S/a.jsonl" \
    > "$S/a1.out" 2>&1 || fail "first half: $(tail -3 "$S/a1.out")"
[ -f "$S/a/step-00000017.h5" ] || fail "no checkpoint at the stop"
"$top_builddir/accel_ckpt" verify "$S/a/step-00000017.h5" >/dev/null || fail "the checkpoint does not verify"
run_mpi 2 "$ACCEL_TRAIN" $args ckpt.dir="$S/a" resume=auto train.metrics="$S/a.jsonl" > "$S/a2.out" 2>&1 \
    || fail "resume: $(tail -3 "$S/a2.out")"
grep -q "resumed from $S/a/step-00000017.h5: step 17" "$S/a2.out" || fail "did not resume: $(cat "$S/a2.out")"
steps "$S/full.jsonl" > "$S/full.steps"
steps "$S/a.jsonl" > "$S/a.steps"
cmp -s "$S/full.steps" "$S/a.steps" || { diff "$S/full.steps" "$S/a.steps" | head; fail "resume is not bit-identical"; }
pass "same world size: 40 steps bit-identical after a stop at 17 and resume=auto"

compare() { compare_losses "$1" "$2" 1e-5 40; }
elastic() { # NAME NP1 STRATEGY1 NP2 STRATEGY2
    run_mpi $2 "$ACCEL_TRAIN" $args ckpt.dir="$S/$1" dist.strategy=$3 debug.stop_step=13 train.metrics="$S/$1.jsonl" \
        > "$S/$1.out" 2>&1 || fail "$1 first part: $(tail -3 "$S/$1.out")"
    run_mpi $4 "$ACCEL_TRAIN" $args ckpt.dir="$S/$1" dist.strategy=$5 resume=auto train.metrics="$S/$1.jsonl" \
        >> "$S/$1.out" 2>&1 || fail "$1 resume: $(tail -3 "$S/$1.out")"
    grep -q "saved by $2 ranks with $3" "$S/$1.out" || fail "$1: resume did not report the saving world"
    res=$(compare "$S/full.jsonl" "$S/$1.jsonl") || fail "$1: $res"
    pass "$2 ranks $3 -> $4 ranks $5: $res"
}
elastic e1 4 zero2 2 ddp
elastic e2 2 ddp 4 zero3
elastic e3 2 zero3 3 zero1

# Preemption: SIGUSR1 to every rank -> checkpoint at the next step boundary, exit status 3.
run_mpi 2 "$ACCEL_TRAIN" $args train.steps=100000 ckpt.dir="$S/p" > "$S/p.out" 2>&1 &
pid=$!
wait_for_line "$S/p.out" "step  *25/" 100 || true
signal_ranks USR1 "ckpt.dir=$S/p"
wait $pid; rc=$?
[ "$rc" -eq 3 ] || fail "preempted run exited $rc, expected 3: $(tail -5 "$S/p.out")"
grep -q "stop requested by a signal" "$S/p.out" || fail "signal not reported"
"$top_builddir/accel_ckpt" verify "$(ls "$S"/p/step-*.h5 | tail -1)" >/dev/null || fail "preemption checkpoint does not verify"
pass "SIGUSR1: checkpoint written, exit 3"

# Bad checkpoints stop the run before training on wrong weights.
expect_fail "cannot resume from $S/none.h5" run_mpi 2 "$ACCEL_TRAIN" $args resume="$S/none.h5"
expect_fail "cannot resume from" run_mpi 2 "$ACCEL_TRAIN" $args model.width=64 ckpt.dir="$S/a" resume=auto
f=$S/a/step-00000040.h5
cp "$f" "$S/corrupt.h5"
off=$("$top_builddir/accel_ckpt" ls "$S/corrupt.h5" | awk '$1 == "model/wte" { print $NF }')
[ -n "$off" ] && printf '\377\377\377\377' | dd of="$S/corrupt.h5" bs=1 seek=$((off + 100)) conv=notrunc 2>/dev/null
expect_fail "cannot resume from $S/corrupt.h5" run_mpi 2 "$ACCEL_TRAIN" $args resume="$S/corrupt.h5"
expect_fail "resume=auto needs ckpt.dir" "$ACCEL_TRAIN" $args resume=auto
exit 0

#!/bin/sh
# Periodic evaluation (train.eval_every) and the metrics file (docs/metrics.md), read by a JSON parser:
#  - eval_every=5 over 12 steps evaluates at steps 5, 10 and the final 12, with the same held-out
#    loss on 1, 2 and 4 ranks and under every strategy, with grad accumulation; evaluating does not
#    change training (the train rows equal those of an eval_every=0 run, which has one eval row);
#  - a run stopped at step 6, resumed from its step-4 checkpoint, leaves steps 1..12 once each;
#  - a negative train.eval_every is refused.
. "$top_srcdir/tests/lib.sh"
make_scratch
S=$SCRATCH
CHECK="$top_builddir/tests/metrics_check"
args="model.name=mlp train.steps=12 train.global_batch=24 seed=3 optim.lr=0.01 data.eval_samples=50"
rows() { "$CHECK" "$1" > "$1.rows" || fail "$1 is not a valid metrics file: $(head -3 "$1")"; }
# evals FILE: "step loss" of the eval rows.
evals() { awk '$1 == "eval" { print $2, $3 }' "$1.rows"; }
train() { # NAME NP ARGS...
    name=$1 np=$2; shift 2
    run_mpi "$np" "$ACCEL_TRAIN" $args train.metrics="$S/$name.jsonl" "$@" > "$S/$name.out" 2>&1 \
        || { cat "$S/$name.out"; fail "$name: training failed"; }
    rows "$S/$name.jsonl"
}
# same_evals A B TOL: the eval rows of two runs are at the same steps with losses within TOL relative.
same_evals() {
    evals "$S/$1.jsonl" > "$S/$1.ev"; evals "$S/$2.jsonl" > "$S/$2.ev"
    awk -v tol="$3" 'FNR == NR { ref[$1] = $2; n++; next }
        { if (!($1 in ref)) exit 1; d = $2 - ref[$1]; if (d < 0) d = -d; if (d > tol * ref[$1]) exit 1; m++ }
        END { exit !(m == n && n > 0) }' "$S/$1.ev" "$S/$2.ev" ||
        { paste "$S/$1.ev" "$S/$2.ev"; fail "$2: eval rows differ from $1's"; }
}

train r1 1 train.eval_every=5
[ "$(evals "$S/r1.jsonl" | cut -d' ' -f1 | tr '\n' ' ')" = "5 10 12 " ] ||
    fail "eval rows at steps $(evals "$S/r1.jsonl" | cut -d' ' -f1 | tr '\n' ' '), expected 5 10 12"
[ "$(awk '$1 == "train"' "$S/r1.jsonl.rows" | wc -l)" -eq 12 ] || fail "expected 12 train rows"
[ "$(grep -c "eval step" "$S/r1.out")" -eq 3 ] || fail "expected 3 eval progress lines: $(grep eval "$S/r1.out")"
grep -q "eval step 10: held-out loss [0-9.]*, accuracy [0-9.]*% (50 samples)" "$S/r1.out" ||
    fail "no progress line for the step-10 evaluation: $(grep eval "$S/r1.out")"
pass "eval_every=5 over 12 steps: eval rows at steps 5, 10, 12 and progress lines"
for np in 2 4; do
    train r$np $np train.eval_every=5
    same_evals r1 r$np 1e-6
done
pass "the held-out losses agree on 1, 2 and 4 ranks (1e-6 relative)"
for z in ddp zero1 zero2 zero3; do
    train $z 2 train.eval_every=5 dist.strategy=$z train.grad_accum=2
    same_evals r1 $z 1e-6
done
pass "ddp, zero1, zero2 and zero3 with grad_accum=2 evaluate alike"

train off 2 train.eval_every=0
[ "$(evals "$S/off.jsonl" | cut -d' ' -f1)" = 12 ] || fail "eval_every=0: expected only the final eval row"
res=$(compare_losses "$S/off.jsonl" "$S/r2.jsonl" 0 12) || fail "evaluating changed training: $res"
pass "eval_every=0 evaluates once at the end; periodic evaluation leaves training as it was ($res)"

# Stop at step 6 (checkpoints at 4 and 6), then resume from step 4: the rows of steps 5 and 6 and a
# torn last line are dropped, then training appends.
train cut 2 train.eval_every=5 ckpt.dir="$S/ck" ckpt.every=4 debug.stop_step=6 debug.stop_rank=1
[ -f "$S/ck/step-00000004.h5" ] && [ -f "$S/ck/step-00000006.h5" ] || fail "no checkpoints at steps 4 and 6"
awk '$1 == "train" && $2 == 6' "$S/cut.jsonl.rows" | grep -q . || fail "the stopped run has no row for step 6"
printf '{"step": 3, "kind": "tra' >> "$S/cut.jsonl"
train cut 2 train.eval_every=5 ckpt.dir="$S/ck" resume="$S/ck/step-00000004.h5"
grep -q "resumed from $S/ck/step-00000004.h5: step 4" "$S/cut.out" || fail "did not resume from step 4"
awk '{ print $1, $2 }' "$S/cut.jsonl.rows" | sort | uniq -d > "$S/dup"
[ -s "$S/dup" ] && fail "rows repeated after resume: $(cat "$S/dup")"
[ "$(awk '$1 == "train" { print $2 }' "$S/cut.jsonl.rows" | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 9 10 11 12 " ] ||
    fail "train rows after resume: $(awk '$1 == "train" { print $2 }' "$S/cut.jsonl.rows" | tr '\n' ' ')"
same_evals r2 cut 0
res=$(compare_losses "$S/r2.jsonl" "$S/cut.jsonl" 0 12) || fail "resumed run: $res"
pass "stopped at 6, resumed from 4: steps 1..12 and eval rows 5, 10, 12 once each ($res)"

expect_fail "train.eval_every' must not be negative" "$ACCEL_TRAIN" $args train.eval_every=-5

# data.eval_samples=0: no held-out set, no evaluation, a clean end (it once failed after the whole run).
out=$(run_mpi 2 "$ACCEL_TRAIN" $args data.eval_samples=0 train.eval_every=2 2>&1) ||
    fail "data.eval_samples=0: $(echo "$out" | tail -5)"
echo "$out" | grep -q "done: step .*; no held-out set" || fail "data.eval_samples=0: no 'no held-out set' in: $(echo "$out" | tail -5)"
! echo "$out" | grep -q "eval step" || fail "data.eval_samples=0 still evaluated"
pass "data.eval_samples=0: trains without evaluating and ends cleanly"

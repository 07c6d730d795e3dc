#!/bin/sh
# The flight recorder (src/core/trace.c): one rank of a 4-rank run is stopped with SIGSTOP; within
# dist.timeout + 10 s the job ends (exit 124 from the watchdog), the report printed by the lowest
# waiting rank names the stopped rank and the collective the others wait in (with its
# communicator's name), and `accel trace DIR`
# gives the same verdict from the rings. SIGUSR2 writes one rank's ring on demand.
. "$top_srcdir/tests/lib.sh"
make_scratch
run="model.name=gpt model.layers=2 model.width=64 model.heads=2 model.context=32 data.path=synthetic
     train.steps=1000000 train.global_batch=8 train.sample_tokens=0 log.level=warn dist.timeout=5
     dist.trace_dir=$SCRATCH/trace"
rank_pid() {   # rank_pid R: the pid of world rank R of this test's job
    for p in $(pgrep -f "accel_train .*dist.trace_dir=$SCRATCH/trace"); do
        r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
        [ "$r" = "$1" ] && { echo "$p"; return 0; }
    done
    return 1
}
(cd "$SCRATCH" && run_mpi 4 "$ACCEL_TRAIN" $run > job.log 2>&1; echo $? > job.rc) &
job=$!
# Wait until training runs (rank 2 exists and the job has started stepping), then stop rank 2.
for i in $(seq 60); do pid=$(rank_pid 2) && break; sleep 0.5; done
[ -n "${pid:-}" ] || fail "rank 2 never started: $(cat "$SCRATCH/job.log")"
sleep 4
kill -USR2 "$pid" || fail "SIGUSR2 to rank 2"
sleep 1
[ -s "$SCRATCH/trace/trace-rank2.txt" ] || fail "SIGUSR2 wrote no ring for rank 2"
n=$(grep -c "^op " "$SCRATCH/trace/trace-rank2.txt") || fail "rank 2's ring records no collective"
rm -f "$SCRATCH/trace/trace-rank2.txt"
pass "SIGUSR2: rank 2 wrote its ring ($n records)"
kill -STOP "$pid"
t0=$(date +%s)
while kill -0 $job 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt 60 ]; do sleep 0.5; done
took=$(( $(date +%s) - t0 ))
kill -CONT "$pid" 2>/dev/null; kill -9 "$pid" 2>/dev/null
wait $job 2>/dev/null
[ "$took" -le 15 ] || fail "the job ran $took s after rank 2 stopped (dist.timeout 5 + 10)"
[ "$(cat "$SCRATCH/job.rc")" = 124 ] || fail "exit $(cat "$SCRATCH/job.rc"), expected 124: $(tail -20 "$SCRATCH/job.log")"
grep -q "timed out after [0-9]* s in .* #[0-9]* on communicator [0-9]* (MPI_COMM_WORLD[+a-z]*, 4 ranks" "$SCRATCH/job.log" ||
    fail "no timeout message: $(tail -20 "$SCRATCH/job.log")"
report=$(sed -n '/^flight recorder/,$p' "$SCRATCH/job.log")
echo "$report" | grep -q "^  waiting in [a-z-]* #[0-9]* on communicator [0-9]* (MPI_COMM_WORLD[+a-z]*, 4 ranks): 0 1 3$" ||
    fail "the report does not name ranks 0 1 3 as waiting: $report
$(tail -30 "$SCRATCH/job.log")"
echo "$report" | grep -q "^  rank 2 left no ring\|^  rank 2 never entered\|^  rank 2 wrote its ring" ||
    fail "the report does not name rank 2: $report"
pass "rank 2 stopped: the job ended after $took s (dist.timeout 5), the report names it: $(echo "$report" | tr '\n' '|')"
out=$("$ACCEL" trace "$SCRATCH/trace") || fail "accel trace: $out"
echo "$out" | grep -q "rank 2" || fail "accel trace does not name rank 2: $out"
pass "accel trace DIR: $(echo "$out" | tr '\n' '|')"
expect_fail "no flight-recorder rings" "$ACCEL" trace "$SCRATCH/none"

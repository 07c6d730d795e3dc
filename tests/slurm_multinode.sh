#!/bin/sh
# accel on 2 (virtual) Slurm nodes x 2 tasks: accel test passes and sees 2 nodes with 2 local ranks
# each, no rank talks before all have finished MPI_Init, and training gives exactly the losses of
# mpirun -np 4 on one node.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/slurm/cluster.sh"
slurm_cluster_up 2 2
S=$SCRATCH

out=$(run_srun --mpi=pmix -N 2 -n 4 "$ACCEL" test --max-mib 1 --dir "$S" 2>&1) \
    || { echo "$out"; fail "srun -N 2 -n 4 accel test"; }
echo "$out" | grep -q "accel: 4 ranks on 2 nodes, launched by srun" || { echo "$out"; fail "accel test: not 4 ranks on 2 nodes"; }
echo "$out" | grep -q "accel test: PASSED" || { echo "$out"; fail "accel test did not pass"; }
# rank host node local-rank: ranks 0,1 on n1 (node 0), 2,3 on n2 (node 1), local ranks 0,1 on each.
table=$(echo "$out" | sed -n 's/^  \([0-9]\) *\(n[12]\) *\([01]\) *\([01]\) .*/\1 \2 \3 \4/p' | tr '\n' ';')
[ "$table" = "0 n1 0 0;1 n1 0 1;2 n2 1 0;3 n2 1 1;" ] || { echo "$out"; fail "rank table: got '$table'"; }
pass "srun -N 2 -n 4 accel test: PASSED, 2 nodes, 2 local ranks on each"

# Start-up order: no rank may send before every rank has finished MPI_Init. Slurm's PMIx plugin
# releases Open MPI's closing MPI_Init barrier early on one node (by up to tens of ms), and a message
# that reaches a rank still inside MPI_Init crashes it; accel_init fences before talking. The probe
# (LD_PRELOAD) stamps each rank's MPI_Init return and its first communicating MPI call.
PROBE=$top_builddir/tests/.libs/startup_probe.so
[ -f "$PROBE" ] || fail "$PROBE not built (make check builds it)"
for i in 1 2 3; do
    out=$(run_srun --mpi=pmix -N 2 -n 4 env LD_PRELOAD="$PROBE" "$ACCEL" env 2>&1 >/dev/null) \
        || { echo "$out"; fail "srun accel env with the start-up probe"; }
    gap=$(echo "$out" | awk '/^startup-probe:/ {
            if ($4 == "initialized") { n++; if ($5 > last) last = $5 }
            if ($4 == "talks" && (first == "" || $5 < first)) first = $5 }
        END { if (n != 4 || first == "") print "none"; else printf "%.3f", (first - last) * 1000 }')
    [ "$gap" != none ] || { echo "$out"; fail "start-up probe: expected 4 ranks' stamps"; }
    awk -v g="$gap" 'BEGIN { exit !(g > 0) }' \
        || { echo "$out"; fail "a rank talked ${gap#-} ms before the last rank had finished MPI_Init"; }
done
pass "start-up order: every rank finished MPI_Init before any rank talked (3 launches; last gap $gap ms)"

run_mpi 4 "$ACCEL_TRAIN" train.steps=10 train.metrics="$S/mpirun.jsonl" >"$S/mpirun.out" 2>&1 \
    || { cat "$S/mpirun.out"; fail "mpirun -np 4 accel_train"; }
run_srun --mpi=pmix -N 2 -n 4 "$ACCEL_TRAIN" train.steps=10 train.metrics="$S/srun.jsonl" >"$S/srun.out" 2>&1 \
    || { cat "$S/srun.out"; fail "srun -N 2 -n 4 accel_train"; }
grep -q "4 ranks on 2 nodes, launched by srun" "$S/srun.out" || { cat "$S/srun.out"; fail "training not on 2 nodes"; }
same_losses "$S/mpirun.jsonl" "$S/srun.jsonl" 10
pass "srun -N 2 -n 4 accel_train: same losses as mpirun -np 4"

# Hybrid sharding on real (virtual) nodes: shard within each node, replicate across the two; the
# losses match ddp within 1e-5 relative (a different summation order, not bitwise).
run_srun --mpi=pmix -N 2 -n 4 "$ACCEL_TRAIN" train.steps=10 dist.strategy=zero3 dist.hybrid=true \
    train.metrics="$S/hybrid.jsonl" >"$S/hybrid.out" 2>&1 || { cat "$S/hybrid.out"; fail "srun hybrid zero3"; }
grep -q "strategy zero3 (hybrid: sharded within nodes)" "$S/hybrid.out" || { cat "$S/hybrid.out"; fail "not hybrid"; }
compare_losses "$S/mpirun.jsonl" "$S/hybrid.jsonl" 1e-5 10 || fail "hybrid differs from ddp"
pass "srun -N 2 -n 4 hybrid zero3: matches ddp"

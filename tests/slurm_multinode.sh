#!/bin/sh
# accel on 2 (virtual) Slurm nodes x 2 tasks: accel test passes and sees 2 nodes with 2 local ranks
# each, and training gives exactly the losses of mpirun -np 4 on one node.
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

#!/bin/sh
# Distrust of files (issue 25): a short mutation campaign over a small checkpoint and a token
# dataset (every mutated copy refused, or read back bitwise identical; no crash, no hang), then
# the checkpoint fuzz harness over its seed corpus. Long runs: tests/fuzz/mutate_ckpt --n 10000.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
export OMPI_MCA_mpi_warn_on_fork=0
N=${CKPT_MUTATIONS:-300}
out="$SCRATCH/mutate.out"
timeout 300 "$top_builddir/tests/fuzz/mutate_ckpt" --dir "$SCRATCH" --n "$N" --data-n 150 \
    --seed "${CKPT_MUTATE_SEED:-2025}" >"$out" 2>&1
rc=$?
cat "$out"
[ $rc -eq 0 ] || fail "mutation campaign (exit $rc): wrong acceptances, crashes or hangs above"
grep -q "^checkpoint *TOTAL *$N " "$out" || fail "mutation campaign did not run $N checkpoint cases"
pass "mutation campaign: $N checkpoint and 150 dataset mutations, none accepted wrongly, no crash or hang"

timeout 120 "$top_builddir/tests/fuzz/ckpt_regress" "${top_srcdir:-.}/tests/fuzz/corpus/ckpt" \
    || fail "ckpt_regress (fuzz_ckpt.c) over tests/fuzz/corpus/ckpt"
pass "fuzz_ckpt over its corpus"

# The defects of the fuzz campaign, one file each, through the tools: a clean refusal naming the
# object and the value (exit 1..125: no signal, no timeout).
em="$SCRATCH/emit"
mkdir -p "$em"
timeout 120 "$top_builddir/tests/fuzz/mutate_ckpt" --dir "$SCRATCH/e" --emit "$em" || fail "mutate_ckpt --emit"
refuses() {   # refuses TEXT CMD...: exit status 1..125 and TEXT in the output
    want=$1; shift
    out=$(timeout 60 "$@" 2>&1); rc=$?
    [ $rc -ge 1 ] && [ $rc -le 125 ] || fail "expected a refusal (exit 1..125) from: $* (exit $rc)
$out"
    echo "$out" | grep -q -- "$want" || fail "'$want' not in the output of: $*
$out"
}
V="$top_builddir/accel_ckpt verify"
refuses "'checksum_block_elems' is 576460752303423488, outside" $V "$em/ckpt_block_2p59.h5"
refuses "'checksum_block_elems' is 2305843009213693952, outside" $V "$em/ckpt_block_2p61.h5"
refuses "shape \[1152921504606846976, 4\], but the stored model configuration has \[2100, 32\]" $V "$em/ckpt_chunked_2p62.h5"
refuses "shape \[67200\], but the stored model configuration has \[2100, 32\]" $V "$em/ckpt_reshaped.h5"
refuses "model/wte: not a readable fp32" $V "$em/ckpt_swap_table.h5"
refuses "model/wte: not a dataset (a group" $V "$em/ckpt_group.h5"
refuses "model/wte: tensor missing (the stored model configuration has it)" $V "$em/ckpt_delete_pair.h5"
refuses "does not match the tensor's 'xxh3_64' attribute" $V "$em/ckpt_swap_two.h5"
refuses "does not match its checksum 'meta_xxh3_64'" $V "$em/ckpt_meta_lr.h5"
refuses "has no checksum 'meta_xxh3_64', which every checkpoint with 'checksums_named' carries" $V "$em/ckpt_meta_unsummed.h5"
refuses "/model/wte is not an fp32 tensor of 1..4 dimensions (it is toobig" \
    "$top_builddir/accel_ckpt" export "$em/ckpt_chunked_2p62.h5" --format safetensors -o "$SCRATCH/x.safetensors"
refuses "/model/wte is not an fp32 tensor of 1..4 dimensions (it is toobig" \
    "$top_builddir/accel_ckpt" export "$em/ckpt_chunked_2p62.h5" --format hdf5 -o "$SCRATCH/x.h5"
[ ! -e "$SCRATCH/x.safetensors" ] && [ ! -e "$SCRATCH/x.h5" ] || fail "export left output behind"
pass "accel_ckpt verify and export refuse the fuzz campaign's checkpoints"

# accel_generate reads through the file reader, which checks each block it reads and /meta.
G="$top_builddir/accel_generate"
refuses "checksum attributes are unusable" "$G" "$em/ckpt_block_2p61.h5" --prompt a -n 1
refuses "its checksum table does not match the tensor's xxh3_64 attribute" "$G" "$em/ckpt_swap_two.h5" --prompt a -n 1
refuses "does not match its checksum 'meta_xxh3_64'" "$G" "$em/ckpt_meta_lr.h5" --prompt a -n 1
refuses "has no checksum 'meta_xxh3_64', which every checkpoint" "$G" "$em/ckpt_meta_unsummed.h5" --prompt a -n 1
refuses "shape \[1152921504606846976, 4\]" "$G" "$em/ckpt_chunked_2p62.h5" --prompt a -n 1
pass "accel_generate refuses them"

T="$top_builddir/accel_train"
targs="model.name=gpt model.layers=1 model.width=16 model.heads=2 model.vocab=500 train.global_batch=2 train.steps=1"
refuses "never written" "$T" $targs model.context=16 data.path="$em/data_unallocated.h5"
refuses "another type" "$T" $targs model.context=16 data.path="$em/data_9bit.h5"
refuses "1152921504606846976 tokens\|4611686018427387904 tokens" "$T" $targs model.context=1 data.path="$em/data_2p62.h5"
pass "accel_train refuses unallocated, 9-bit and 2^62-token datasets"

# Multi-rank: a real checkpoint of a 2-rank zero3 run with a damaged checksum block size; resuming
# it on 2 ranks with zero1 and zero3 is refused on every rank, with no crash and no hang.
small="model.name=gpt model.layers=2 model.width=32 model.heads=2 model.context=16 data.path=synthetic
       train.global_batch=4 train.sample_tokens=0 log.level=warn"
(cd "$SCRATCH" && run_mpi 2 "$T" $small train.steps=2 dist.strategy=zero3 ckpt.dir=mr > mr.log 2>&1) ||
    fail "2-rank zero3 run with checkpoints: $(tail -5 "$SCRATCH/mr.log")"
ck=$(ls "$SCRATCH"/mr/step-*.h5 | tail -1)
"$top_builddir/tests/fuzz/mutate_ckpt" --set-root-attr "$ck" checksum_block_elems 2305843009213693952 ||
    fail "cannot damage $ck"
for s in zero1 zero3; do
    out=$(cd "$SCRATCH" && run_mpi 2 "$T" $small train.steps=4 dist.strategy=$s resume="$ck" 2>&1); rc=$?
    [ $rc -ge 1 ] && [ $rc -le 125 ] || fail "2-rank $s resume of a damaged block size: exit $rc
$out"
    echo "$out" | grep -q "checksum_block_elems' is 2305843009213693952, outside" ||
        fail "2-rank $s resume did not name the damaged attribute: $out"
done
pass "2-rank zero1 and zero3 resumes refuse a checkpoint whose checksum block size is 2^61"

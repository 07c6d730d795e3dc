#!/bin/sh
# Checkpoints written by one world size and ownership pattern, read back by others: every element
# of every tensor of three state arenas is compared, and elements a rank does not own must stay
# untouched. Checksums must not depend on how the writers split the tensors.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
DRIVER="$top_builddir/tests/ckpt_driver"
CKPT="$top_builddir/accel_ckpt"

save() { # NP DIR STEP PATTERN
    run_mpi "$1" "$DRIVER" save "$2" "$3" "$4" >/dev/null || fail "save on $1 ranks ($4) into $2"
}
load() { # NP FILE PATTERN
    run_mpi "$1" "$DRIVER" load "$2" "$3" || fail "load of $2 on $1 ranks with pattern $3"
}

# 4 uneven writers (one owns nothing), read by 2, 1, 3 and 4 ranks with other ownership.
save 4 "$SCRATCH/w4" 7 uneven
F4="$SCRATCH/w4/step-00000007.h5"
load 2 "$F4" zero
load 1 "$F4" zero
load 3 "$F4" uneven
load 3 "$F4" reverse
load 4 "$F4" replicated
pass "4 uneven writers -> 2, 1, 3, 4 readers"

# Replicated state written by 2 ranks; a single writer; 3 writers in reverse order.
save 2 "$SCRATCH/w2" 7 replicated
save 1 "$SCRATCH/w1" 7 zero
save 3 "$SCRATCH/w3" 7 reverse
load 4 "$SCRATCH/w2/step-00000007.h5" uneven
load 1 "$SCRATCH/w2/step-00000007.h5" replicated
load 4 "$SCRATCH/w1/step-00000007.h5" reverse
load 2 "$SCRATCH/w3/step-00000007.h5" uneven
pass "replicated, single and reversed writers"

# Several ranges per rank: ZeRO-like layer slices, and many stripes (several pieces of one tensor
# per rank, checksum blocks cut between pieces of the same rank).
save 3 "$SCRATCH/wl" 7 layers
save 4 "$SCRATCH/ws" 7 striped
load 4 "$SCRATCH/wl/step-00000007.h5" striped
load 2 "$SCRATCH/ws/step-00000007.h5" layers
load 1 "$SCRATCH/ws/step-00000007.h5" striped
load 3 "$F4" layers
pass "multi-range ownership (layer slices, stripes)"

# Transfers split into many calls per tensor (the 2 GiB guard), writers and readers alike.
mkdir -p "$SCRATCH/chunk"
ACCEL_CKPT_IO_CHUNK=1000 run_mpi 3 -x ACCEL_CKPT_IO_CHUNK "$DRIVER" save "$SCRATCH/chunk" 7 uneven >/dev/null \
    || fail "save with 1000-element transfers"
ACCEL_CKPT_IO_CHUNK=777 run_mpi 2 -x ACCEL_CKPT_IO_CHUNK "$DRIVER" load "$SCRATCH/chunk/step-00000007.h5" reverse \
    || fail "load with 777-element transfers"
ACCEL_CKPT_IO_CHUNK=3001 run_mpi 3 -x ACCEL_CKPT_IO_CHUNK "$DRIVER" load "$SCRATCH/chunk/step-00000007.h5" striped \
    || fail "load of stripes with 3001-element transfers"
pass "chunked transfers"

# Same data, different writers: identical checksum tables, verify and diff agree.
for d in w4 w2 w1 w3 wl ws chunk; do
    "$CKPT" verify -v "$SCRATCH/$d/step-00000007.h5" > "$SCRATCH/$d.verify" || fail "verify $d: $(cat "$SCRATCH/$d.verify")"
    grep '^OK  ' "$SCRATCH/$d.verify" > "$SCRATCH/$d.sums"
    cmp -s "$SCRATCH/w4.sums" "$SCRATCH/$d.sums" || fail "checksums of the $d file differ from the 4-writer file"
done
[ "$(wc -l < "$SCRATCH/w4.sums")" -eq 18 ] || fail "expected 18 verified tensors"
"$CKPT" diff "$F4" "$SCRATCH/w1/step-00000007.h5" > "$SCRATCH/diff.out" || fail "diff of equal files: $(cat "$SCRATCH/diff.out")"
grep -q 'same' "$SCRATCH/diff.out" || fail "diff did not say same"
pass "checksums independent of the writers (4, 2 replicated, 1, 3 reversed, layer slices, stripes, chunked)"

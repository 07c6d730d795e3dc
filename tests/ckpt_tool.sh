#!/bin/sh
# accel_ckpt on a real checkpoint: --help, ls, info, verify, diff, export (safetensors fp32/bf16,
# hdf5 fp32/bf16) read back independently; a flipped data byte is caught by verify (naming tensor
# and block) and refused by load; bad input gives clear messages.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
DRIVER="$top_builddir/tests/ckpt_driver"
CKPT="$top_builddir/accel_ckpt"
PY=/usr/bin/python3

run_mpi 2 "$DRIVER" save "$SCRATCH/c" 42 uneven --seed 5 >/dev/null || fail "save"
F="$SCRATCH/c/step-00000042.h5"

for c in "" ls info verify diff export latest; do
    "$CKPT" $c --help > "$SCRATCH/help" 2>&1 || fail "accel_ckpt $c --help exits non-zero"
    grep -q usage "$SCRATCH/help" || fail "accel_ckpt $c --help prints no usage"
done
pass "--help"

"$CKPT" ls "$F" > "$SCRATCH/ls" || fail "ls"
grep -q '^model/h.0.attn.qkv.weight  *\[3, 40, 1200\]  *fp32  *576000 ' "$SCRATCH/ls" || fail "ls line: $(cat "$SCRATCH/ls")"
grep -q '^optim/exp_avg_sq/conv  *\[5, 7, 33, 61\] ' "$SCRATCH/ls" || fail "ls 4-D tensor"
grep -q '^# 18 tensors, 4626432 bytes' "$SCRATCH/ls" || fail "ls total: $(tail -1 "$SCRATCH/ls")"
"$CKPT" ls -a "$F" | grep -q '^checksums/model/big  *\[3\]  *uint64' || fail "ls -a shows checksum tables"
h5ls -r "$F" | grep -q '/model/lnf/gain  *Dataset {64}' || fail "h5ls reads the file"
pass "ls"

"$CKPT" info "$F" > "$SCRATCH/info" || fail "info"
for want in "step:            42" "tokens seen:     42000" "epoch 2, offset 12345" "seed 5, counter 99" \
            "2 ranks" "strategy:        zero1" "optim/exp_avg_sq (6 tensors)" "note = hello" "    name: test"; do
    grep -qF "$want" "$SCRATCH/info" || fail "info lacks '$want': $(cat "$SCRATCH/info")"
done
pass "info"

"$CKPT" verify "$F" > "$SCRATCH/v" || fail "verify of a good file: $(cat "$SCRATCH/v")"
grep -q "^OK .*18 tensors, 1156608 elements, 0 problems" "$SCRATCH/v" || fail "verify summary"
pass "verify (good file)"

# Flip one byte inside block 1 of optim/exp_avg/conv (at its file offset from ls).
off=$(awk '$1 == "optim/exp_avg/conv" { print $NF }' "$SCRATCH/ls")
[ -n "$off" ] || fail "no offset for optim/exp_avg/conv"
cp "$F" "$SCRATCH/bad.h5"
printf '\125' | dd of="$SCRATCH/bad.h5" bs=1 seek=$((off + 4 * 65536 + 123)) conv=notrunc 2>/dev/null
expect_fail "BAD   optim/exp_avg/conv: block 1 (elements 65536..70454) checksum mismatch" "$CKPT" verify "$SCRATCH/bad.h5"
expect_fail "tensor 'optim/exp_avg/conv' block 1" run_mpi 2 "$DRIVER" load "$SCRATCH/bad.h5" zero --seed 5
"$CKPT" diff "$F" "$SCRATCH/bad.h5" > "$SCRATCH/d"; rc=$?
[ $rc -eq 1 ] || fail "diff of different files exits $rc, expected 1"
grep -q "DIFFERENT" "$SCRATCH/d" || fail "diff summary"
awk '$1 == "optim/exp_avg/conv" && $2 > 0 { f = 1 } $1 == "model/conv" && $2 != 0 { g = 1 } END { exit !(f && !g) }' \
    "$SCRATCH/d" || fail "diff does not single out optim/exp_avg/conv: $(cat "$SCRATCH/d")"
pass "flipped byte caught by verify, load and diff"

# Truncated and non-HDF5 inputs.
head -c 3000000 "$F" > "$SCRATCH/trunc.h5"
expect_fail "truncated" "$CKPT" verify "$SCRATCH/trunc.h5"
echo hello > "$SCRATCH/text.h5"
expect_fail "not an HDF5 file" "$CKPT" verify "$SCRATCH/text.h5"
expect_fail "No such file" "$CKPT" info "$SCRATCH/none.h5"
expect_fail "unknown format" "$CKPT" export "$F" --format onnx
expect_fail "unsupported dtype" "$CKPT" export "$F" --format safetensors --dtype int8
pass "bad input"

# Exports, read back by a standard-library safetensors reader and by h5dump.
"$CKPT" export "$F" --format safetensors --output "$SCRATCH/m.safetensors" >/dev/null || fail "export safetensors"
"$PY" "$top_srcdir/tests/ckpt_safetensors.py" "$SCRATCH/m.safetensors" 5 fp32 || fail "safetensors fp32"
"$CKPT" export "$F" --format safetensors --dtype bf16 --output "$SCRATCH/m16.safetensors" >/dev/null || fail "export bf16"
"$PY" "$top_srcdir/tests/ckpt_safetensors.py" "$SCRATCH/m16.safetensors" 5 bf16 || fail "safetensors bf16"
"$CKPT" export "$F" --format hdf5 >/dev/null || fail "export hdf5"
[ -f "$SCRATCH/c/step-00000042.model.h5" ] || fail "default export name"
h5dump -d /h.0.bias -c 3 "$SCRATCH/c/step-00000042.model.h5" > "$SCRATCH/h1" || fail "h5dump export"
h5dump -d /model/h.0.bias -c 3 "$F" > "$SCRATCH/h2"
[ "$(grep -m1 '(0):' "$SCRATCH/h1")" = "$(grep -m1 '(0):' "$SCRATCH/h2")" ] || fail "hdf5 export values differ"
"$CKPT" export "$F" --format hdf5 --dtype bf16 --output "$SCRATCH/m16.h5" >/dev/null || fail "export hdf5 bf16"
h5ls -r "$SCRATCH/m16.h5" | grep -q '/lnf/gain  *Dataset {64}' || fail "bf16 hdf5 export layout"
pass "export safetensors/hdf5, fp32/bf16"

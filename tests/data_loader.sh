#!/bin/sh
# The parallel loader under mpirun on 1, 2 and 4 ranks: every rank reads its samples (round-robin
# cover, sampler order, unsorted repeats, empty reads) and they must equal the bytes of the source
# text at the expected offsets; then the val split is evaluated with padding and gathered exactly
# (tests/check_dataset.c does the checking).
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"
CHK="$top_builddir/tests/check_dataset"
[ -x "$AD" ] && [ -x "$CHK" ] || fail "accel_data or tests/check_dataset is not built"
make_scratch
S=$SCRATCH

# Source text: two files (given in this order, so the stream is their concatenation).
CORPUS=/usr/share/common-licenses
if [ -f "$CORPUS/GPL-2" ] && [ -f "$CORPUS/BSD" ]; then
    cp "$CORPUS/GPL-2" "$S/one.txt"; cp "$CORPUS/BSD" "$S/two.txt"
else
    i=0; while [ $i -lt 600 ]; do echo "row $i of a generated text, $((i * 7919 % 1000))"; i=$((i + 1)); done > "$S/one.txt"
    head -c 1500 "$S/one.txt" | tr 'a-z' 'A-Z' > "$S/two.txt"
fi
cat "$S/one.txt" "$S/two.txt" > "$S/source.txt"
out=$(timeout 60 "$AD" prepare --output "$S/text.h5" --val-fraction 0.15 --context 16 "$S/one.txt" "$S/two.txt" 2>&1) \
    || fail "prepare: $out"

for np in 1 2 4; do
    # context 16, micro 3; and context 37, micro 5 (sample counts not divisible by the batch)
    for args in "--context 16 --micro 3" "--context 37 --micro 5"; do
        out=$(run_mpi "$np" "$CHK" tokens "$S/text.h5" "$S/source.txt" $args 2>&1); rc=$?
        [ "$rc" -eq 0 ] || { printf '%s\n' "$out"; fail "check_dataset tokens ($args) on $np rank(s) exited $rc"; }
        printf '%s\n' "$out" | grep -q ' 0 mismatches, 0 errors' || { printf '%s\n' "$out"; fail "tokens ($args) on $np rank(s)"; }
        printf '%s\n' "$out" | grep -q 'gathered exactly' || { printf '%s\n' "$out"; fail "eval gather ($args) on $np rank(s)"; }
    done
    pass "token loader and eval on $np rank(s): $(printf '%s\n' "$out" | grep '^check_dataset')"
done

# The default corpus, exactly as prepare lists it: the stream is the listed files in order.
if [ -d "$CORPUS" ]; then
    out=$(cd "$S" && timeout 60 "$AD" prepare 2>&1) || fail "prepare (default corpus): $out"
    printf '%s\n' "$out" | sed -n 's/^  read \(.*[^ ]\)  *[0-9]* bytes$/\1/p' > "$S/list"
    [ -s "$S/list" ] || fail "prepare listed no files: $out"
    : > "$S/corpus.txt"
    while IFS= read -r f; do cat "$f" >> "$S/corpus.txt"; done < "$S/list"
    out=$(run_mpi 4 "$CHK" tokens "$S/data/corpus.h5" "$S/corpus.txt" --context 64 --micro 4 2>&1); rc=$?
    [ "$rc" -eq 0 ] || { printf '%s\n' "$out"; fail "check_dataset on the default corpus exited $rc"; }
    pass "default corpus on 4 ranks: $(printf '%s\n' "$out" | grep '^check_dataset')"
fi

# Classification: samples must equal the keyed synthetic generator's.
timeout 60 "$AD" synth --kind classification --output "$S/cls.h5" --samples 101 --val-samples 13 \
    --features 5 --classes 3 --seed 9 --noise 0.1 >/dev/null || fail "synth classification"
for np in 1 2 4; do
    out=$(run_mpi "$np" "$CHK" classification "$S/cls.h5" --seed 9 --features 5 --classes 3 --noise 0.1 --micro 2 2>&1); rc=$?
    [ "$rc" -eq 0 ] || { printf '%s\n' "$out"; fail "check_dataset classification on $np rank(s) exited $rc"; }
    pass "classification loader and eval on $np rank(s)"
done

# The checker itself must notice wrong data: a source that differs by one byte fails.
cp "$S/source.txt" "$S/wrong.txt"
printf 'X' | dd of="$S/wrong.txt" bs=1 seek=1000 conv=notrunc 2>/dev/null
out=$(run_mpi 2 "$CHK" tokens "$S/text.h5" "$S/wrong.txt" --context 16 2>&1); rc=$?
[ "$rc" -eq 1 ] || { printf '%s\n' "$out"; fail "check_dataset accepted a wrong source (exit $rc)"; }
printf '%s\n' "$out" | grep -q 'token .* source byte 1000' || fail "check_dataset did not name the wrong byte: $out"
pass "check_dataset detects a one-byte difference"
exit 0

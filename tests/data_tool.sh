#!/bin/sh
# accel_data end to end: prepare (default corpus and given files), info, synth (both kinds), the
# files readable by the HDF5 tools, and bad input rejected with a clear message and no crash.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"
[ -x "$AD" ] || fail "$AD is not built"
command -v h5ls >/dev/null && command -v h5dump >/dev/null || skip "h5ls/h5dump missing (apt-get install hdf5-tools)"
make_scratch
S=$SCRATCH
t() { timeout -k 5 60 "$@"; }

# --help on the tool and every subcommand, without MPI start-up
for c in "" prepare synth info; do
    out=$(t "$AD" $c --help) || fail "accel_data $c --help failed"
    printf '%s\n' "$out" | grep -q "usage: accel_data" || fail "accel_data $c --help prints no usage"
done
t "$AD" prepare --help | grep -q 'token = byte value' || fail "prepare --help does not explain the bytes tokenizer"
t "$AD" prepare --help | grep -q '/usr/share/common-licenses' || fail "prepare --help does not name the default corpus"
pass "--help on every subcommand"

# ---- prepare on the default corpus (Debian base-files), written to data/corpus.h5 under cwd
CORPUS=/usr/share/common-licenses
if [ -d "$CORPUS" ]; then
    out=$(cd "$S" && t "$AD" prepare 2>&1) || fail "prepare on the default corpus failed: $out"
    [ -f "$S/data/corpus.h5" ] || fail "prepare did not write data/corpus.h5"
    # expected size: the distinct non-empty regular files (links to them count once)
    want=$(find -L "$CORPUS" -type f ! -name '.*' -size +0 -exec stat -L -c '%d:%i %s' {} + | sort -u | awk '{s+=$2} END {print s}')
    printf '%s\n' "$out" | grep -q "bytes -> $want tokens" || fail "prepare read the wrong amount (want $want bytes): $out"
    nfiles=$(printf '%s\n' "$out" | grep -c '^  read ')
    printf '%s\n' "$out" | grep -q "read $nfiles file(s)" || fail "prepare file count does not match its listing: $out"
    info=$(t "$AD" info "$S/data/corpus.h5" --context 64) || fail "info on the corpus failed: $info"
    for w in "format: accel-tokens, version 1" "tokenizer: bytes" "vocab 256" "samples at context 64" \
             "token reads: direct (pread from the file, outside HDF5)"; do
        printf '%s\n' "$info" | grep -qF "$w" || fail "info lacks '$w': $info"
    done
    tr=$(printf '%s\n' "$info" | sed -n 's/^train: \([0-9]*\) tokens.*/\1/p')
    va=$(printf '%s\n' "$info" | sed -n 's/^val  : \([0-9]*\) tokens.*/\1/p')
    [ $((tr + va)) -eq "$want" ] || fail "train $tr + val $va != $want bytes"
    # val is the last 10%: round(0.1 * total)
    [ "$va" -eq "$(awk -v n="$want" 'BEGIN {printf "%.0f", n * 0.1}')" ] || fail "val split has $va tokens"
    pass "prepare on $CORPUS: $nfiles files, $want bytes, train $tr / val $va tokens"
else
    echo "note: $CORPUS missing, default-corpus case not run"
fi

# ---- prepare on given files: the token stream is the files' bytes, concatenated in order
printf 'The quick brown fox jumps over the lazy dog.\n' > "$S/a.txt"
i=0; while [ $i -lt 20 ]; do echo "line $i: pack my box with five dozen liquor jugs"; i=$((i + 1)); done > "$S/b.txt"
out=$(t "$AD" prepare --output "$S/ab.h5" --val-fraction 0.25 --context 8 "$S/a.txt" "$S/b.txt" 2>&1) || fail "prepare a b: $out"
total=$(cat "$S/a.txt" "$S/b.txt" | wc -c)
nval=$(awk -v n="$total" 'BEGIN {printf "%.0f", n * 0.25}')
printf '%s\n' "$out" | grep -q "train $((total - nval)), val $nval" || fail "prepare a b split wrong: $out"
h5ls -r "$S/ab.h5" | grep -q "/train/tokens *Dataset {$((total - nval))}" || fail "h5ls: $(h5ls -r "$S/ab.h5")"
h5dump -a /format "$S/ab.h5" | grep -q '"accel-tokens"' || fail "h5dump cannot read the format attribute"
h5dump -a /vocab "$S/ab.h5" | grep -q '256' || fail "h5dump: vocab attribute"
# the first tokens are the bytes of a.txt ("The" = 84 104 101)
h5dump -d /train/tokens -s 0 -c 3 "$S/ab.h5" | grep -q '84, 104, 101' || fail "h5dump: first tokens are not 'The'"
# the last val token is the last byte of b.txt (newline, 10)
h5dump -d /val/tokens -s $((nval - 1)) -c 1 "$S/ab.h5" | grep -q '): 10$' || fail "h5dump: last val token is not a newline"
pass "prepare on two files: $total bytes, val $nval; h5ls and h5dump read it"

# ---- the same tokens rewritten by h5repack as h5py writes them with chunks= or compression=:
# accepted (the last chunk partial), read through HDF5 (info says why), the same samples trained
if command -v h5repack > /dev/null; then
    h5repack -l /train/tokens:CHUNK=100 -f /train/tokens:GZIP=1 "$S/ab.h5" "$S/abz.h5" || fail "h5repack"
    info=$(t "$AD" info "$S/abz.h5" --context 8) || fail "info on a compressed dataset: $info"
    printf '%s\n' "$info" | grep -q "token reads: through HDF5 (the tokens are compressed or filtered; h5repack" ||
        fail "info does not say why reads go through HDF5: $info"
    tiny="model.name=gpt model.layers=1 model.heads=2 model.width=16 model.context=8 model.vocab=256
          train.steps=3 train.global_batch=2 train.sample_tokens=0 data.eval_samples=0 log.level=warn"
    for f in ab abz; do
        run_mpi 1 "$ACCEL_TRAIN" $tiny data.path="$S/$f.h5" train.metrics="$S/$f.jsonl" > "$S/$f.log" 2>&1 ||
            fail "training on $f.h5: $(tail -5 "$S/$f.log")"
    done
    compare_losses "$S/ab.jsonl" "$S/abz.jsonl" 0 3 || fail "the compressed dataset trains differently"
    pass "a chunked, compressed copy (h5repack): accepted, read through HDF5, trains the same"
fi

# a directory: files in name order, hidden and empty files skipped, a link read once
mkdir "$S/dir"
cp "$S/b.txt" "$S/dir/2.txt"; cp "$S/a.txt" "$S/dir/1.txt"
: > "$S/dir/empty.txt"; echo hidden > "$S/dir/.hidden"; ln -s 1.txt "$S/dir/0link"
out=$(t "$AD" prepare --output "$S/dir.h5" --context 4 "$S/dir" 2>&1) || fail "prepare dir: $out"
printf '%s\n' "$out" | grep -q "read 2 file(s), $total bytes" || fail "prepare dir read the wrong files: $out"
printf '%s\n' "$out" | grep '^  read ' | head -1 | grep -q '1.txt' || fail "prepare dir: not in name order: $out"
pass "prepare on a directory"

# ---- synth, both kinds
out=$(t "$AD" synth --kind tokens --output "$S/tok.h5" --samples 50 --val-samples 7 --vocab 1000 --context 12 --seed 3) || fail "synth tokens: $out"
info=$(t "$AD" info "$S/tok.h5" --context 12) || fail "info synth tokens: $info"
printf '%s\n' "$info" | grep -q "vocab 1000, stored as 2-byte" || fail "synth tokens info: $info"
printf '%s\n' "$info" | grep -q "train: 601 tokens, 50 samples" || fail "synth tokens info: $info"
printf '%s\n' "$info" | grep -q "val  : 85 tokens, 7 samples" || fail "synth tokens info: $info"
h5ls -r "$S/tok.h5" | grep -q "/val/tokens *Dataset {85}" || fail "h5ls synth tokens"
out=$(t "$AD" synth --kind classification --output "$S/cls.h5" --samples 64 --val-samples 10 --features 6 --classes 3) || fail "synth cls: $out"
info=$(t "$AD" info "$S/cls.h5") || fail "info synth cls: $info"
for w in "format: accel-classification, version 1" "classes: 3, features: 6" "train: 64 samples" "val  : 10 samples"; do
    printf '%s\n' "$info" | grep -qF "$w" || fail "info lacks '$w': $info"
done
h5ls -r "$S/cls.h5" | grep -q "/train/inputs *Dataset {64, 6}" || fail "h5ls synth cls: $(h5ls -r "$S/cls.h5")"
h5dump -d /train/labels -c 4 "$S/cls.h5" >/dev/null || fail "h5dump cannot read labels"
# same options, same file contents
t "$AD" synth --kind classification --output "$S/cls2.h5" --samples 64 --val-samples 10 --features 6 --classes 3 >/dev/null
[ "$(h5dump -d /val/inputs "$S/cls.h5" | tail -n +3)" = "$(h5dump -d /val/inputs "$S/cls2.h5" | tail -n +3)" ] || fail "synth is not deterministic"
# an existing accel dataset may be overwritten
t "$AD" synth --kind tokens --output "$S/tok.h5" --samples 5 >/dev/null || fail "synth could not overwrite its own dataset"
pass "synth tokens and classification; info; h5ls/h5dump"

# ---- files written by h5py (a common way to make datasets) are accepted, when h5py is here
if /usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null; then
    /usr/bin/python3 - "$S/py.h5" <<'EOF' || fail "h5py could not write a dataset"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    f.attrs["format"] = "accel-tokens"; f.attrs["version"] = 1; f.attrs["vocab"] = 300; f.attrs["tokenizer"] = "test"
    f["train/tokens"] = (np.arange(500) % 300).astype("uint16"); f["val/tokens"] = np.arange(50, dtype="uint16")
EOF
    info=$(t "$AD" info "$S/py.h5" --context 10) || fail "info on an h5py-written file: $info"
    printf '%s\n' "$info" | grep -q "train: 500 tokens, 49 samples" || fail "h5py file info: $info"
    pass "h5py-written dataset accepted"
fi

# ---- bad input: clear message, non-zero exit, no crash, no file left behind
echo "precious text" > "$S/notes.txt"
cp "$S/ab.h5" "$S/trunc.h5"; truncate -s 2000 "$S/trunc.h5"
h5copy -i "$S/ab.h5" -o "$S/other.h5" -s /train -d /train || fail "h5copy failed"
echo "tiny" > "$S/tiny.txt"
expect_fail "cannot read input '$S/nope.txt'" t "$AD" prepare --output "$S/x.h5" "$S/nope.txt"
expect_fail "is empty" t "$AD" prepare --output "$S/x.h5" "$S/dir/empty.txt"
mkdir "$S/emptydir"
expect_fail "holds no non-empty files" t "$AD" prepare --output "$S/x.h5" "$S/emptydir"
expect_fail "outside (0, 1)" t "$AD" prepare --output "$S/x.h5" --val-fraction 0 "$S/a.txt"
expect_fail "outside (0, 1)" t "$AD" prepare --output "$S/x.h5" --val-fraction 1 "$S/a.txt"
expect_fail "outside (0, 1)" t "$AD" prepare --output "$S/x.h5" --val-fraction -0.5 "$S/a.txt"
expect_fail "is not a number" t "$AD" prepare --output "$S/x.h5" --val-fraction abc "$S/a.txt"
expect_fail "too little data" t "$AD" prepare --output "$S/x.h5" "$S/tiny.txt"
expect_fail "too little data" t "$AD" prepare --output "$S/x.h5" --context 40 "$S/a.txt"
expect_fail "not an HDF5 file; refusing to overwrite" t "$AD" prepare --output "$S/notes.txt" "$S/b.txt"
[ "$(cat "$S/notes.txt")" = "precious text" ] || fail "prepare clobbered a text file"
expect_fail "not an accel dataset; refusing" t "$AD" synth --kind tokens --output "$S/other.h5"
# an accel checkpoint is an accel file but not a dataset: never replaced without --force
t "$ACCEL_TRAIN" model.name=mlp data.path=synthetic train.steps=1 train.global_batch=2 \
    ckpt.dir="$S/ck" log.level=warn > /dev/null 2>&1 || fail "could not write a checkpoint to protect"
ck=$(ls "$S"/ck/*.h5 | head -n 1)
sum=$(cksum < "$ck")
expect_fail "format 'accel-checkpoint'" t "$AD" synth --kind tokens --output "$ck"
[ "$(cksum < "$ck")" = "$sum" ] || fail "synth overwrote a checkpoint"
expect_fail "cannot create" t "$AD" prepare --output "$S/no/such/dir/x.h5" "$S/b.txt"
expect_fail "needs a value" t "$AD" prepare --output
expect_fail "unknown option '--bogus'" t "$AD" prepare --bogus
expect_fail "No such file" t "$AD" info "$S/nope.h5"
expect_fail "not an HDF5 file" t "$AD" info "$S/notes.txt"
expect_fail "cannot open the file" t "$AD" info "$S/trunc.h5"
expect_fail "'format' is missing" t "$AD" info "$S/other.h5"
expect_fail "too few for one sample at context 300" t "$AD" info "$S/ab.h5" --context 300
expect_fail "which file?" t "$AD" info
expect_fail "neither 'tokens' nor 'classification'" t "$AD" synth --kind images --output "$S/x.h5"
expect_fail "--kind and --output are required" t "$AD" synth --kind tokens
expect_fail "not an integer in [2, 65536]" t "$AD" synth --kind tokens --output "$S/x.h5" --vocab 70000
expect_fail "unknown command 'frobnicate'" t "$AD" frobnicate
[ ! -e "$S/x.h5" ] || fail "a failed command left $S/x.h5 behind"
ls "$S" | grep -q '\.tmp\.' && fail "a temporary file was left behind: $(ls "$S")"
pass "bad input rejected"
exit 0

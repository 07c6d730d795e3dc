#!/bin/sh
# accel_data import (llm.c shards, .npy arrays) and prepare --jsonl against the committed fixtures
# of tests/make_data_fixtures.sh: the dataset holds exactly the source token stream (read back
# through the loader by tests/token_dump and compared with the expected *.u32 streams), several
# inputs make one stream split where documented, vocabularies over 65536 are stored as uint32 and
# train, and every wrong-format input is refused with a clear message and a non-zero exit.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data"
TD="$top_builddir/tests/token_dump"
F="$top_srcdir/tests/fixtures/data"
[ -x "$AD" ] && [ -x "$TD" ] || fail "accel_data or tests/token_dump is not built"
[ -f "$F/gpt2.bin" ] || fail "fixtures missing in $F (tests/make_data_fixtures.sh makes them)"
make_scratch
S=$SCRATCH
t() { timeout -k 5 60 "$@"; }

# same_stream DATASET EXPECTED.u32: /train then /val, read through the loader, equal the expected
# stream byte for byte; prints token_dump's summary into $S/dump.
same_stream() {
    t "$TD" "$1" "$S/got.u32" > "$S/dump" 2>&1 || fail "token_dump $1: $(cat "$S/dump")"
    cmp "$S/got.u32" "$2" > "$S/cmp" 2>&1 || fail "$1 does not hold the stream of $(basename "$2"): $(cat "$S/cmp"); $(cat "$S/dump")"
}
dump_has() { grep -qF -- "$1" "$S/dump" || fail "token_dump says '$(cat "$S/dump")', expected '$1'"; }
ntok() { echo $(($(wc -c < "$1") / 4)); }

for c in import prepare; do
    t "$AD" $c --help | grep -q "usage: accel_data $c" || fail "accel_data $c --help"
done
t "$AD" import --help | grep -q '20240801 version 7' || fail "import --help does not describe llm.c Llama-3 shards"
t "$AD" prepare --help | grep -q 'preceded by' || fail "prepare --help does not state the separator rule"
pass "--help for import and prepare"

# ---- llm.c shards: GPT-2 (uint16) and Llama-3 (uint32), vocab from the header kind
out=$(t "$AD" import --output "$S/gpt2.h5" --context 8 "$F/gpt2.bin") || fail "import gpt2.bin: $out"
printf '%s\n' "$out" | grep -q 'vocab 50257 (from the llm.c header), stored as uint16' || fail "gpt2 import: $out"
same_stream "$S/gpt2.h5" "$F/gpt2.bin.u32"
dump_has "train 1350 val 150 width 2 vocab 50257 tokenizer llm.c-gpt2 hash - json 0"
pass "llm.c GPT-2 shard: 1500 tokens exactly, train 1350 / val 150"
out=$(t "$AD" import --output "$S/llama3.h5" --context 8 "$F/llama3.bin") || fail "import llama3.bin: $out"
same_stream "$S/llama3.h5" "$F/llama3.bin.u32"
dump_has "width 4 vocab 128256 tokenizer llm.c-llama3"
if command -v h5dump > /dev/null; then
    h5dump -H -d /train/tokens "$S/llama3.h5" | grep -q H5T_STD_U32LE || fail "Llama-3 tokens are not stored as uint32"
fi
info=$(t "$AD" info "$S/llama3.h5") || fail "info llama3: $info"
for w in "tokenizer: llm.c-llama3, vocab 128256, stored as 4-byte integers (uint32)" "tokenizer hash: none" "tokenizer.json: not kept"; do
    printf '%s\n' "$info" | grep -qF "$w" || fail "info lacks '$w': $info"
done
pass "llm.c Llama-3 shard: uint32 tokens up to 128255, info shows tokenizer, hash, width"

# ---- .npy arrays of every accepted dtype
for case in "u16.npy 50257 2" "i32.npy 1000 2" "i64.npy 1000 2" "big_u32.npy 100000 4"; do
    set -- $case
    out=$(t "$AD" import --output "$S/$1.h5" --vocab "$2" --context 8 "$F/$1") || fail "import $1: $out"
    same_stream "$S/$1.h5" "$F/$1.u32"
    dump_has "width $3 vocab $2 tokenizer npy hash -"
done
if command -v h5dump > /dev/null; then
    h5dump -H -d /train/tokens "$S/big_u32.npy.h5" | grep -q H5T_STD_U32LE || fail "vocab 100000 is not stored as uint32"
fi
pass ".npy uint16, int32, int64, uint32 (vocab 100000 -> uint32 on disk, read back by the loader)"

# ---- several inputs, one stream, in order; the split is the last round(F * total) tokens
# (a copy: the same file named twice is read once)
cp "$F/gpt2.bin" "$S/again.bin"
cat "$F/gpt2.bin.u32" "$F/u16.npy.u32" "$F/gpt2.bin.u32" > "$S/want.u32"
out=$(t "$AD" import --output "$S/multi.h5" --vocab 50257 --val-fraction 0.25 --context 8 \
      "$F/gpt2.bin" "$F/u16.npy" "$S/again.bin") || fail "import of three files: $out"
same_stream "$S/multi.h5" "$S/want.u32"
total=$(ntok "$S/want.u32"); nval=$(awk -v n="$total" 'BEGIN {printf "%.0f", n * 0.25}')
dump_has "train $((total - nval)) val $nval width 2 vocab 50257 tokenizer pretokenized"
[ "$(printf '%s\n' "$out" | grep -c '^  import ')" -eq 3 ] || fail "import does not list each file: $out"
pass "three inputs -> one stream of $total tokens in order; val = the last $nval"
# --val: those files are /val exactly (llm.c's train and val shards)
cat "$F/gpt2.bin.u32" "$F/u16.npy.u32" > "$S/want.u32"
out=$(t "$AD" import --output "$S/val.h5" --vocab 50257 --context 8 "$F/gpt2.bin" --val "$F/u16.npy") || fail "import --val: $out"
same_stream "$S/val.h5" "$S/want.u32"
dump_has "train 1500 val 900 width 2"
expect_fail "is both a training input and a --val file" t "$AD" import --output "$S/x.h5" --vocab 50257 "$F/gpt2.bin" --val "$F/gpt2.bin"
expect_fail "--val and --val-fraction both" t "$AD" import --output "$S/x.h5" --vocab 50257 --val-fraction 0.2 "$F/gpt2.bin" --val "$F/u16.npy"
pass "import --val: /val is exactly the --val file"

# ---- JSON Lines with the byte tokenizer: the documents' UTF-8 bytes, nothing between them
out=$(t "$AD" prepare --jsonl --output "$S/docs.h5" --context 4 --val-fraction 0.2 "$F/docs.jsonl") || fail "prepare --jsonl: $out"
printf '%s\n' "$out" | grep -q '6 documents' || fail "prepare --jsonl did not find 6 documents: $out"
printf '%s\n' "$out" | grep -q 'documents are concatenated as they are' || fail "prepare --jsonl does not print the separator rule: $out"
same_stream "$S/docs.h5" "$F/docs.jsonl.bytes.u32"
dump_has "width 1 vocab 256 tokenizer bytes hash -"
out=$(t "$AD" prepare --jsonl-field meta --output "$S/meta.h5" --context 4 --val-fraction 0.2 "$F/docs.jsonl") || fail "--jsonl-field meta: $out"
same_stream "$S/meta.h5" "$F/docs.jsonl.meta.bytes.u32"
# several JSONL inputs: the documents of each file in order
cat "$F/docs.jsonl.bytes.u32" "$F/docs.jsonl.bytes.u32" > "$S/want2.u32"
cp "$F/docs.jsonl" "$S/again.jsonl"
t "$AD" prepare --jsonl --output "$S/docs2.h5" --context 4 "$F/docs.jsonl" "$S/again.jsonl" > /dev/null || fail "prepare --jsonl x2"
same_stream "$S/docs2.h5" "$S/want2.u32"
pass "JSON Lines (non-ASCII, escapes, surrogate pair, blank line) with bytes: exact UTF-8 stream; --jsonl-field"

# ---- streams longer than --buffer: tokens spill to an unlinked temporary file beside the output
# and JSON Lines are read in blocks (lines cross block ends; a line longer than a block grows it);
# the datasets hold the same streams, and nothing is left in the directory
mkdir -p "$S/spill"
cat "$F/gpt2.bin.u32" "$F/u16.npy.u32" "$F/gpt2.bin.u32" > "$S/want.u32"
out=$(t "$AD" import --buffer 1KiB --output "$S/spill/multi.h5" --vocab 50257 --val-fraction 0.25 --context 8 \
      "$F/gpt2.bin" "$F/u16.npy" "$S/again.bin") || fail "import --buffer 1KiB: $out"
printf '%s\n' "$out" | grep -q "from the token stream's temporary file" || fail "import --buffer 1KiB did not spill: $out"
printf '%s\n' "$out" | grep -q "^peak memory [0-9]* MiB$" || fail "import does not print its peak memory: $out"
same_stream "$S/spill/multi.h5" "$S/want.u32"
for b in 16 100 1KiB; do
    out=$(t "$AD" prepare --jsonl --buffer $b --output "$S/spill/docs$b.h5" --context 4 --val-fraction 0.2 \
          "$F/docs.jsonl" "$S/again.jsonl") || fail "prepare --jsonl --buffer $b: $out"
    printf '%s\n' "$out" | grep -q '6 documents' || fail "prepare --jsonl --buffer $b did not find 6 documents: $out"
    same_stream "$S/spill/docs$b.h5" "$S/want2.u32"
done
printf '%s\n' "$out" | grep -q "^peak memory [0-9]* MiB$" || fail "prepare does not print its peak memory: $out"
out=$(t "$AD" prepare --buffer 64 --output "$S/spill/forced.h5" --context 8 --force "$F/binary.dat") ||
    fail "prepare --buffer 64 --force: $out"
t "$TD" "$S/spill/forced.h5" "$S/got.u32" > /dev/null || fail "token_dump spilled forced"
od -An -v -tu4 "$S/got.u32" | tr -s ' ' '\n' | grep -v '^$' > "$S/got.txt"
od -An -v -tu1 "$F/binary.dat" | tr -s ' ' '\n' | grep -v '^$' | cmp -s - "$S/got.txt" ||
    fail "prepare --buffer 64 did not keep the file's bytes"
# an error on a line in a later block still names its line
{ cat "$F/docs.jsonl"; cat "$F/bad_notjson.jsonl"; } > "$S/late.jsonl"
n=$(($(wc -l < "$F/docs.jsonl") + 3))
expect_fail "late.jsonl:$n: not JSON" t "$AD" prepare --jsonl --buffer 32 --output "$S/spill/x.h5" "$S/late.jsonl"
expect_fail "--buffer '8' is not a size of at least 16 bytes" t "$AD" prepare --buffer 8 --output "$S/spill/x.h5" "$F/text.txt"
expect_fail "--buffer 'lots' is not a size" t "$AD" import --buffer lots --output "$S/spill/x.h5" "$F/gpt2.bin"
left=$(ls -A "$S/spill" | grep -v '^\(multi\|docs16\|docs100\|docs1KiB\|forced\)\.h5$')
[ -z "$left" ] || fail "files left beside the outputs: $left"
pass "streams longer than --buffer (import 1 KiB, JSON Lines 16 B-1 KiB blocks, bytes 64 B): the same datasets, error lines counted across blocks, nothing left behind"
# a full disk while spilling: a clear message, no output, no temporary file (root: a 64 KiB tmpfs)
if [ "$(id -u)" = 0 ] && mkdir -p "$S/full" && mount -t tmpfs -o size=64k tmpfs "$S/full" 2>/dev/null; then
    head -c 300000 /dev/zero | tr '\0' 'a' > "$S/big.txt"
    expect_fail "temporary file in $S/full failed: No space left on device" \
        t "$AD" prepare --buffer 4KiB --output "$S/full/x.h5" "$S/big.txt"
    left=$(ls -A "$S/full")
    umount "$S/full"
    [ -z "$left" ] || fail "a failed spill left: $left"
    pass "disk full while spilling: refused with the reason, nothing left"
else
    echo "SKIP (part): disk-full spill (needs root to mount a small tmpfs)"
fi

# ---- token datasets written by h5py the ways users write them (tests/make_h5py_fixtures.sh): each
# gives the same stream through the loader; accel_data info says how it reads them; h5py's lzf
# filter, which this HDF5 cannot decode, is refused when the file is opened
H="$F/h5py"
for f in int64 gzip_shuffle appended fletcher32 bigendian; do
    same_stream "$H/$f.h5" "$H/tokens.u32"
    dump_has "train 2500 val 500"
done
info() { t "$AD" info "$H/$1.h5" --context 16 | grep '^token reads' || true; }
for w in "int64:direct" "gzip_shuffle:compressed or filtered" "appended:the tokens are chunked" \
         "fletcher32:compressed or filtered" "bigendian:the tokens are big-endian"; do
    info "${w%%:*}" | grep -q "${w#*:}" || fail "info ${w%%:*}.h5: $(info "${w%%:*}"), expected '${w#*:}'"
done
expect_fail "/train/tokens is compressed with filter 32000 (lzf" t "$AD" info "$H/lzf.h5"
out=$(run_mpi 1 "$ACCEL_TRAIN" model.name=gpt model.layers=1 model.heads=2 model.width=16 model.context=16 \
      model.vocab=1000 train.steps=2 train.global_batch=2 data.path="$H/lzf.h5" 2>&1) && fail "trained on lzf.h5: $out"
printf '%s\n' "$out" | grep -q "which this HDF5 cannot decode" || fail "accel_train on lzf.h5 did not say why: $out"
pass "h5py-written datasets (int64, gzip+shuffle, appended in pieces, fletcher32, big-endian): the same stream; lzf refused at open"

# ---- --force tokenizes a non-text file as bytes
out=$(t "$AD" prepare --force --output "$S/forced.h5" --context 8 "$F/binary.dat") || fail "prepare --force: $out"
t "$TD" "$S/forced.h5" "$S/got.u32" > /dev/null || fail "token_dump forced"
od -An -v -tu1 "$F/binary.dat" | tr -s ' ' '\n' | grep -v '^$' > "$S/want.txt"
od -An -v -tu4 "$S/got.u32" | tr -s ' ' '\n' | grep -v '^$' > "$S/got.txt"
cmp "$S/want.txt" "$S/got.txt" > /dev/null || fail "prepare --force did not keep the file's bytes"
pass "prepare --force on binary input keeps its bytes"

# ---- training on a uint32 dataset (vocab 100000), and the vocabulary check
T="model.name=gpt model.layers=1 model.heads=2 model.width=16 model.context=16 train.steps=3 train.global_batch=4 log.level=warn"
t "$AD" import --output "$S/big.h5" --vocab 100000 --context 16 "$F/big_u32.npy" > /dev/null || fail "import big"
out=$(run_mpi 1 "$ACCEL_TRAIN" $T model.vocab=100000 data.path="$S/big.h5" train.metrics="$S/big.jsonl" 2>&1) \
    || fail "accel_train on the uint32 dataset: $out"
[ "$(grep -c '"kind": "train"' "$S/big.jsonl")" -ge 3 ] || fail "accel_train wrote no steps: $(cat "$S/big.jsonl")"
expect_fail "has a vocabulary of 100000 tokens but model.vocab is 50000" run_mpi 1 "$ACCEL_TRAIN" $T model.vocab=50000 data.path="$S/big.h5"
pass "accel_train: 3 steps on the uint32 dataset (vocab 100000)"

# ---- wrong input: a clear message naming what is wrong, exit 2, nothing written
X="$S/x.h5"
expect_fail "looks like an llm.c token shard, not text" t "$AD" prepare --output "$X" "$F/gpt2.bin"
expect_fail "accel_data import" t "$AD" prepare --output "$X" "$F/gpt2.bin"
expect_fail "looks like a NumPy .npy array, not text" t "$AD" prepare --output "$X" "$F/u16.npy"
expect_fail "accel_data import" t "$AD" prepare --output "$X" "$F/u16.npy"
expect_fail "looks like JSON Lines" t "$AD" prepare --output "$X" "$F/docs.jsonl"
expect_fail "accel_data prepare --jsonl" t "$AD" prepare --output "$X" "$F/docs.jsonl"
expect_fail "holds a NUL byte at offset 24" t "$AD" prepare --output "$X" "$F/binary.dat"
expect_fail "llm.c evaluation file" t "$AD" prepare --output "$X" "$F/bad_eval.bin"
expect_fail "is JSON Lines (every line a JSON object), not pre-tokenized" t "$AD" import --output "$X" --vocab 300 "$F/docs.jsonl"
expect_fail "accel_data prepare --jsonl" t "$AD" import --output "$X" --vocab 300 "$F/docs.jsonl"
expect_fail "is text, not pre-tokenized" t "$AD" import --output "$X" --vocab 300 "$F/text.txt"
expect_fail "the header says 1500 tokens (4024 bytes with the header) but the file has 3024 bytes" t "$AD" import --output "$X" "$F/bad_truncated.bin"
expect_fail "its first int32 is 20240521, not the magic 20240520 or 20240801" t "$AD" import --output "$X" "$F/bad_magic.bin"
expect_fail "an llm.c evaluation file (magic 20240522" t "$AD" import --output "$X" "$F/bad_eval.bin"
expect_fail "bad_toolarge.bin: token 60000 at position 2 (of 4) is >= vocab 50257" t "$AD" import --output "$X" "$F/bad_toolarge.bin"
expect_fail "i32.npy: token 5" t "$AD" import --output "$X" --vocab 5 "$F/i32.npy"
expect_fail "token -3 at position 2 (of 4) is negative" t "$AD" import --output "$X" --vocab 100 "$F/bad_negative.npy"
expect_fail "dtype '<f4' (float32) is not a token type" t "$AD" import --output "$X" --vocab 100 "$F/bad_f32.npy"
expect_fail "dtype '>u2' (big-endian uint16) is not a token type" t "$AD" import --output "$X" --vocab 100 "$F/bad_be.npy"
expect_fail "shape (3, 4) is 2-D" t "$AD" import --output "$X" --vocab 100 "$F/bad_2d.npy"
expect_fail "fortran_order is True" t "$AD" import --output "$X" --vocab 100 "$F/bad_fortran.npy"
expect_fail "malformed .npy header: 'shape' is not a tuple" t "$AD" import --output "$X" --vocab 100 "$F/bad_hdr_tuple.npy"
expect_fail "malformed .npy header: it has a key other than" t "$AD" import --output "$X" --vocab 100 "$F/bad_hdr_extra.npy"
expect_fail "malformed .npy header: 'descr', 'fortran_order' or 'shape' is missing" t "$AD" import --output "$X" --vocab 100 "$F/bad_hdr_missing.npy"
expect_fail "malformed .npy header: it is not a dict literal" t "$AD" import --output "$X" --vocab 100 "$F/bad_hdr_junk.npy"
expect_fail "shape (20,) of <u2 needs 40 bytes after the header but the file has 20" t "$AD" import --output "$X" --vocab 100 "$F/bad_npy_truncated.npy"
expect_fail "the vocabulary is unknown: a .npy array does not record it" t "$AD" import --output "$X" "$F/u16.npy"
expect_fail "--vocab V" t "$AD" import --output "$X" "$F/u16.npy"
expect_fail "of different kinds (GPT-2 and Llama-3)" t "$AD" import --output "$X" "$F/gpt2.bin" "$F/llama3.bin"
expect_fail "bad_notjson.jsonl:3: not JSON" t "$AD" prepare --jsonl --output "$X" "$F/bad_notjson.jsonl"
expect_fail "bad_nofield.jsonl:2: no field \"text\" (the object has \"body\", \"id\")" t "$AD" prepare --jsonl --output "$X" "$F/bad_nofield.jsonl"
expect_fail "bad_nonstring.jsonl:2: field \"text\" is an integer, not a string" t "$AD" prepare --jsonl --output "$X" "$F/bad_nonstring.jsonl"
expect_fail "bad_utf8.jsonl:2: invalid UTF-8" t "$AD" prepare --jsonl --output "$X" "$F/bad_utf8.jsonl"
expect_fail "bad_nofield.jsonl:1: no field \"body2\"" t "$AD" prepare --jsonl-field body2 --output "$X" "$F/bad_nofield.jsonl"
expect_fail "cannot read tokenizer '$S/none/tokenizer.json': No such file" t "$AD" prepare --tokenizer "$S/none/tokenizer.json" --output "$X" "$F/text.txt"
expect_fail "cannot read tokenizer '$S/none.json': No such file" t "$AD" import --tokenizer "$S/none.json" --output "$X" "$F/gpt2.bin"
expect_fail "--output is required" t "$AD" import "$F/gpt2.bin"
expect_fail "not an integer in [2," t "$AD" import --output "$X" --vocab 0 "$F/gpt2.bin"
[ ! -e "$X" ] || fail "a failed command left $X behind"
ls "$S" | grep -q '\.tmp\.' && fail "a temporary file was left behind: $(ls "$S")"
pass "wrong-format input refused"
exit 0

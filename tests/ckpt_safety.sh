#!/bin/sh
# No run loses or clobbers data (issue 25):
#  1. writer tools (accel_data prepare/import/synth, accel_ckpt export/import) never overwrite a
#     checkpoint (not even with --force) and another kind of file only with --force;
#  2. a checkpoint directory belongs to one run: a new run does not move into another's, resume=auto
#     does not continue another model's checkpoint, pruning and saving leave another run's files alone;
#  3. rollback: after resuming from an older step, `latest` is the truth for resume=auto; the
#     abandoned timeline's newer files are kept (not chosen) until the new timeline passes them;
#  4. output paths are checked before step 1 (unwritable ckpt.dir / metrics, a metrics file that is
#     another kind of file, paths too long for Open MPI's MPI-IO), with every rank agreeing (1 and
#     2 ranks, no hang);
#  5. a failed save says truthfully which checkpoint, if any, is intact.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
S=$SCRATCH
AD="$top_builddir/accel_data"
CKPT="$top_builddir/accel_ckpt"
gpt="model.name=gpt model.layers=2 model.width=32 model.heads=2 model.context=16 data.path=synthetic
     train.sample_tokens=0 train.global_batch=4 data.eval_samples=4 seed=3"
train() { NP=$1; shift; run_mpi "$NP" "$ACCEL_TRAIN" $gpt "$@"; }
sum() { cksum < "$1"; }
# CKPT_SAFETY_PART=N runs part N alone (to see each part fail on a build without the fixes).
part() { [ -z "${CKPT_SAFETY_PART:-}" ] || [ "$CKPT_SAFETY_PART" = "$1" ]; }

# ------------------------------------------------------------------ 1. writer tools
if part 1; then
train 1 train.steps=2 ckpt.dir="$S/ck1" > "$S/t1.out" 2>&1 || fail "first run: $(tail -3 "$S/t1.out")"
ck="$S/ck1/step-00000002.h5"
c0=$(sum "$ck")
printf 'precious text\n' > "$S/notes.txt"
printf 'some text to tokenize, long enough for a sample or two at context 4.\n%.0s' 1 2 3 4 5 > "$S/in.txt"
expect_fail "accel checkpoint" "$AD" synth --kind tokens --output "$ck" --force
expect_fail "accel checkpoint" "$AD" prepare --output "$ck" --force --context 4 "$S/in.txt"
expect_fail "accel checkpoint" "$AD" import --output "$ck" --force --vocab 256 "$S/in.txt"
expect_fail "accel checkpoint" "$CKPT" export "$ck" --format safetensors --output "$ck"
expect_fail "accel checkpoint" "$CKPT" export "$ck" --format hdf5 --output "$ck" --force
expect_fail "accel checkpoint" "$CKPT" import "$S/nope" -o "$ck" --force
[ "$(sum "$ck")" = "$c0" ] || fail "a tool overwrote a checkpoint"
"$CKPT" verify "$ck" > /dev/null || fail "the checkpoint no longer verifies"
# another kind: only with --force; the same kind: replaced
expect_fail "not an HDF5 file; refusing" "$CKPT" export "$ck" --format hdf5 --output "$S/notes.txt"
expect_fail "not an HDF5 file; refusing" "$CKPT" export "$ck" --format safetensors --output "$S/notes.txt"
[ "$(cat "$S/notes.txt")" = "precious text" ] || fail "export clobbered a text file"
"$AD" synth --kind tokens --output "$S/ds.h5" > /dev/null || fail "synth"
"$AD" synth --kind tokens --output "$S/ds.h5" --seed 9 > /dev/null || fail "synth over its own dataset"
expect_fail "an accel dataset" "$CKPT" export "$ck" --format hdf5 --output "$S/ds.h5"
"$CKPT" export "$ck" --format safetensors --output "$S/w.safetensors" > /dev/null || fail "export safetensors"
"$CKPT" export "$ck" --format safetensors --output "$S/w.safetensors" > /dev/null || fail "export over its own kind"
expect_fail "a safetensors file" "$AD" synth --kind tokens --output "$S/w.safetensors"
"$CKPT" export "$ck" --format hdf5 --output "$S/w.h5" > /dev/null || fail "export hdf5"
"$CKPT" export "$ck" --format hdf5 --output "$S/w.h5" > /dev/null || fail "export hdf5 over its own kind"
expect_fail "not an accel dataset" "$AD" synth --kind tokens --output "$S/w.h5"
"$CKPT" export "$ck" --format hdf5 --output "$S/notes.txt" --force > /dev/null || fail "--force over a text file"
"$AD" synth --help | grep -q "accel checkpoint never" || fail "synth --help says nothing of checkpoints"
"$CKPT" export --help | grep -q "never an accel checkpoint" || fail "export --help says nothing of --force"
pass "writer tools never overwrite a checkpoint; another kind only with --force"

fi
# ------------------------------------------------------------------ 2. one run per directory
if part 2; then
A="$S/shared"
train 2 train.steps=4 ckpt.every=2 ckpt.keep_last=2 ckpt.dir="$A" > "$S/a.out" 2>&1 || fail "run A: $(tail -3 "$S/a.out")"
a2=$(sum "$A/step-00000002.h5"); a4=$(sum "$A/step-00000004.h5")
# another model, new run, same directory: refused before anything is written
expect_fail "already holds checkpoints of another run" train 2 model.width=64 train.steps=2 ckpt.dir="$A"
# another model with resume=auto: never continues run A's checkpoint
expect_fail "belongs to another run" train 2 model.width=64 train.steps=2 ckpt.dir="$A" resume=auto
[ "$(sum "$A/step-00000002.h5")" = "$a2" ] && [ "$(sum "$A/step-00000004.h5")" = "$a4" ] || fail "run A's checkpoints changed"
[ "$(cat "$A/latest")" = "step-00000004.h5" ] || fail "run A's latest changed"
# another run's files that do end up in a directory (copied, an older accel): a resumed run neither
# picks them, nor prunes them, nor replaces them
B="$S/b"
train 2 model.width=64 train.steps=5 ckpt.dir="$S/other5" > /dev/null 2>&1 || fail "run C (step 5)"
train 2 model.width=64 train.steps=6 ckpt.dir="$S/other6" > /dev/null 2>&1 || fail "run C (step 6)"
train 1 train.steps=4 ckpt.every=2 ckpt.keep_last=2 ckpt.dir="$B" > /dev/null 2>&1 || fail "run B"
cp "$S/other5/step-00000005.h5" "$S/other6/step-00000006.h5" "$B/"
o5=$(sum "$B/step-00000005.h5"); o6=$(sum "$B/step-00000006.h5")
[ "$("$CKPT" latest "$B")" = "$B/step-00000004.h5" ] || fail "find_latest picks another run's newer file: $("$CKPT" latest "$B")"
train 2 train.steps=10 ckpt.every=2 ckpt.keep_last=2 ckpt.dir="$B" resume=auto > "$S/b2.out" 2>&1 \
    || fail "run B resumed: $(tail -5 "$S/b2.out")"
grep -q "resumed from $B/step-00000004.h5" "$S/b2.out" || fail "run B did not resume from its own step 4: $(grep resum "$S/b2.out")"
grep -q "belongs to another run" "$S/b2.out" || fail "saving over another run's step 6 was not refused"
[ "$(sum "$B/step-00000005.h5")" = "$o5" ] && [ "$(sum "$B/step-00000006.h5")" = "$o6" ] || fail "another run's files were changed"
[ "$(ls "$B" | tr '\n' ' ')" = "latest step-00000005.h5 step-00000006.h5 step-00000008.h5 step-00000010.h5 " ] \
    || fail "pruning in a shared directory left: $(ls "$B")"
pass "a checkpoint directory belongs to one run (1 and 2 ranks)"

fi
# ------------------------------------------------------------------ 3. rollback
if part 3; then
R="$S/roll"
train 2 train.steps=6 ckpt.every=1 ckpt.keep_last=3 ckpt.dir="$R" > /dev/null 2>&1 || fail "rollback: first run"
[ "$(ls "$R" | tr '\n' ' ')" = "latest step-00000004.h5 step-00000005.h5 step-00000006.h5 " ] || fail "rollback: first run left $(ls "$R")"
six=$(sum "$R/step-00000006.h5")
train 2 train.steps=5 ckpt.every=1 ckpt.keep_last=2 ckpt.dir="$R" resume="$R/step-00000004.h5" > "$S/r.out" 2>&1 \
    || fail "rollback: resume from step 4: $(tail -3 "$S/r.out")"
[ "$(cat "$R/latest")" = "step-00000005.h5" ] || fail "rollback: latest is $(cat "$R/latest")"
[ -f "$R/step-00000004.h5" ] || fail "rollback: the resume point step 4 was pruned: $(ls "$R")"
[ "$(sum "$R/step-00000006.h5")" = "$six" ] || fail "rollback: the abandoned step 6 was removed or changed"
[ "$("$CKPT" latest "$R")" = "$R/step-00000005.h5" ] || fail "rollback: find_latest gives $("$CKPT" latest "$R"), not latest's step 5"
train 2 train.steps=7 ckpt.every=1 ckpt.keep_last=2 ckpt.dir="$R" resume=auto > "$S/r2.out" 2>&1 \
    || fail "rollback: resume=auto: $(tail -3 "$S/r2.out")"
grep -q "resumed from $R/step-00000005.h5" "$S/r2.out" || fail "rollback: resume=auto did not take latest's step 5: $(grep resum "$S/r2.out")"
[ "$(ls "$R" | tr '\n' ' ')" = "latest step-00000006.h5 step-00000007.h5 " ] || fail "rollback: once passed, old files go: $(ls "$R")"
[ "$(sum "$R/step-00000006.h5")" != "$six" ] || fail "rollback: step 6 is still the abandoned timeline's"
pass "rollback: latest is the truth; the abandoned timeline is kept until passed"

fi
# ------------------------------------------------------------------ 4. start-up checks
if part 4; then
printf 'x' > "$S/afile"
for np in 1 2; do
    out=$(train $np train.steps=3 ckpt.dir="$S/afile/ck" 2>&1); rc=$?
    [ $rc -ne 0 ] && [ $rc -lt 124 ] || fail "$np ranks: ckpt.dir under a file: exit $rc"
    printf '%s\n' "$out" | grep -q "ckpt.dir=$S/afile/ck: cannot write there" || fail "$np ranks: no start-up message: $out"
    printf '%s\n' "$out" | grep -qE "step +1/|done: step" && fail "$np ranks: trained before finding ckpt.dir unwritable"
done
expect_fail "train.metrics=$S/no/dir/m.jsonl: cannot write it" train 2 train.steps=2 train.metrics="$S/no/dir/m.jsonl"
"$AD" synth --kind tokens --output "$S/m.h5" > /dev/null || fail "synth m.h5"; m0=$(sum "$S/m.h5")
expect_fail "is not a metrics file (JSON lines); refusing" train 2 train.steps=2 train.metrics="$S/m.h5"
[ "$(sum "$S/m.h5")" = "$m0" ] || fail "train.metrics overwrote a dataset"
RO="$S/ro"
mkdir -p "$RO"
if [ "$(id -u)" = 0 ]; then
    mount -t tmpfs -o ro,size=1m tmpfs "$RO" 2>/dev/null && trap 'umount "$RO" 2>/dev/null; rm -rf "$SCRATCH"' EXIT || RO=
else
    chmod 555 "$RO"
fi
if [ -n "$RO" ]; then
    expect_fail "ckpt.dir=$RO: cannot write there" train 2 train.steps=2 ckpt.dir="$RO"
    expect_fail "ckpt.dir=$RO/sub: cannot write there" train 1 train.steps=2 ckpt.dir="$RO/sub"
    expect_fail "train.tensorboard=$RO/tb: cannot create the directory" train 2 train.steps=2 train.tensorboard="$RO/tb"
else
    echo "SKIP (part): read-only directory (root without mount)"
fi
# Open MPI's ompio aborts on MPI_File_open paths above 244 characters: 244 works, 245 is refused.
long() { d="$S/L"; while [ ${#d} -lt "$1" ]; do d="$d/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"; done; printf '%s' "$d" | cut -c1-"$1"; }
d=$(long 223)   # + "/step-00000001.h5.tmp" = 244
train 2 train.steps=1 ckpt.dir="$d" > "$S/l.out" 2>&1 || fail "ckpt path of 244 characters: $(tail -3 "$S/l.out")"
[ -f "$d/step-00000001.h5" ] || fail "no checkpoint at 244 characters"
d=$(long 224)
expect_fail "aborts the process above 244" train 2 train.steps=1 ckpt.dir="$d"
[ ! -e "$d/step-00000001.h5.tmp" ] || fail "a tmp file was created under a too long path"
ds=$(long 242).h5
mkdir -p "$(dirname "$ds")"
"$AD" synth --kind tokens --output "$ds" --context 16 > /dev/null || fail "synth at a long path"
expect_fail "data.path=$ds: the path" train 2 train.steps=1 data.path="$ds"
pass "output paths checked before step 1, every rank agreeing"

fi
# ------------------------------------------------------------------ 5. truthful failure messages
if part 5; then
failing() { ACCEL_CKPT_TEST_FAIL=2 run_mpi 2 -x ACCEL_CKPT_TEST_FAIL "$ACCEL_TRAIN" $gpt "$@"; }
out=$(failing train.steps=2 ckpt.dir="$S/f" 2>&1)
printf '%s\n' "$out" | grep -q "there is no complete checkpoint in $S/f" || fail "first failed save: $out"
printf '%s\n' "$out" | grep -qi "previous checkpoint" && fail "a failed first save claims a previous checkpoint: $out"
train 2 train.steps=2 ckpt.dir="$S/f" > /dev/null 2>&1 || fail "a good save after the failed one"
out=$(failing train.steps=4 ckpt.dir="$S/f" resume=auto 2>&1)
printf '%s\n' "$out" | grep -q "the last complete checkpoint, $S/f/step-00000002.h5, is untouched" || fail "second failed save: $out"
pass "a failed save says which checkpoint, if any, is intact"
fi
exit 0

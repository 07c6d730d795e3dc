#!/bin/sh
# Regenerates the data-import fixtures (tests/fixtures/data/) that tests/data_import.sh and
# tests/data_tokenizer.sh check accel_data against: llm.c token shards written exactly as llm.c's
# dev/data/data_common.py write_datafile writes them, real numpy.save .npy arrays, JSON Lines
# documents, a tiny Hugging Face tokenizer.json trained with the `tokenizers` library, wrong-format
# files, and for each good input the token stream it must give (*.u32: uint32 little-endian).
#
# Python is an oracle here, never a dependency of accel: `make check` only reads the committed
# files. Re-run it after changing tests/data_fixtures.py; with the same numpy and tokenizers
# versions the files come out byte for byte the same.
#
#   tests/make_data_fixtures.sh [OUTDIR]        (default tests/fixtures/data)
#
# Python: $PYTHON, else bench/.venv/bin/python of this tree or of /work/main, with numpy and
# tokenizers installed (python -m pip install numpy tokenizers).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$top/tests/fixtures/data"}
py=${PYTHON:-}
for p in "$top/bench/.venv/bin/python" /work/main/bench/.venv/bin/python; do
    [ -n "$py" ] && break
    [ -x "$p" ] && py=$p
done
[ -n "$py" ] || py=python3
"$py" -c 'import numpy, tokenizers' || { echo "need numpy and tokenizers for $py"; exit 1; }
mkdir -p "$out"
exec "$py" "$top/tests/data_fixtures.py" "$out"

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
# Python: bench/venv.sh ($PYTHON, else bench/.venv with numpy and tokenizers, made when missing).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$top/tests/fixtures/data"}
. "$top/bench/venv.sh"
python_with "import numpy, tokenizers" numpy tokenizers
mkdir -p "$out"
exec "$py" "$top/tests/data_fixtures.py" "$out"

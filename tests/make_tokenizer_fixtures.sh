#!/bin/sh
# Regenerates tests/fixtures/tokenizer/ (the reference ids of Hugging Face `tokenizers` that
# tests/check_tokenizer.c compares against). Run by hand; make check only reads the committed files.
#
#   sh tests/make_tokenizer_fixtures.sh   (Python: bench/venv.sh; PYTHON=/path/to/python for another)
#
# Deterministic: the texts come from /usr/share/common-licenses and seeded generators, and the
# trainer of `tokenizers` is deterministic, so a re-run rewrites the same files (for one version).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/venv.sh"
python_with "import tokenizers" tokenizers
out=$top/tests/fixtures/tokenizer
mkdir -p "$out"
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false "$py" "$top/tests/tokenizer_reference.py" "$out"
ls -l "$out"

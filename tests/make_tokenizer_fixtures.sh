#!/bin/sh
# Regenerates tests/fixtures/tokenizer/ (the reference ids of Hugging Face `tokenizers` that
# tests/check_tokenizer.c compares against). Run by hand; make check only reads the committed files.
#
#   python3 -m venv bench/.venv && bench/.venv/bin/pip install tokenizers
#   sh tests/make_tokenizer_fixtures.sh            (PYTHON=/path/to/python to use another one)
#
# Deterministic: the texts come from /usr/share/common-licenses and seeded generators, and the
# trainer of `tokenizers` is deterministic, so a re-run rewrites the same files (for one version).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$top/bench/.venv/bin/python}
[ -x "$PYTHON" ] || { echo "make_tokenizer_fixtures: $PYTHON not found
--> hint: python3 -m venv bench/.venv && bench/.venv/bin/pip install tokenizers" >&2; exit 1; }
out=$top/tests/fixtures/tokenizer
mkdir -p "$out"
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false "$PYTHON" "$top/tests/tokenizer_reference.py" "$out"
ls -l "$out"

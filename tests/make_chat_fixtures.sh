#!/bin/sh
# Regenerates the chat-template fixtures (tests/fixtures/chat/) that accel's Jinja-subset
# interpreter for Hugging Face chat templates and `accel_data prepare` on chat data are checked
# against: chat templates written for accel (templates/*.jinja, family styles plus a feature
# stress test), conversations (cases.json), transformers' renderings of every template x case x
# add_generation_prompt (expected.json, with generation spans or the error raised), a tiny
# byte-level BPE tokenizer with chat tokens (tok/), and chat JSON Lines with the token ids and
# loss masks they must give (sft_*.jsonl, *.u32: uint32 little-endian, *.mask: one 0/1 byte per
# token).
#
# Python (transformers, jinja2, tokenizers) is an oracle here, never a dependency of accel: `make
# check` only reads the committed files. Re-run it after changing tests/chat_reference.py; with the
# same transformers, jinja2 and tokenizers versions the files come out byte for byte the same (no
# template reads the date, the BPE trainer runs on one thread).
#
#   tests/make_chat_fixtures.sh [OUTDIR]        (default tests/fixtures/chat)
#
# Python: bench/venv.sh ($PYTHON, else bench/.venv, with the packages installed when missing).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-"$top/tests/fixtures/chat"}
. "$top/bench/venv.sh"
python_with "import jinja2, transformers, tokenizers" jinja2 transformers tokenizers
mkdir -p "$out"
RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false exec "$py" "$top/tests/chat_reference.py" "$out"

#!/bin/sh
# accel past 32-bit counts: a block whose stacked experts hold 2.2e9 floats (bench/big_experts.py
# writes it as a Hugging Face directory, 6.6 GB in bf16, with transformers' logits of the same
# model), scored by accel_generate straight from the directory; prints the logits' agreement, the
# time and the peak memory. Needs about 20 GB of memory and 7 GB of disk (BIG_DIR, default a
# temporary directory). Not a test: make check cannot hold it.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/venv.sh"
python_with "import torch, transformers, numpy" torch transformers numpy
dir=${BIG_DIR:-$(mktemp -d)}
trap 'rm -rf "$dir/big"' EXIT
"$py" "$top/bench/big_experts.py" "$dir/big"
rm -f "$dir/big.logits"
/usr/bin/time -f "accel_generate: %e s, peak %M KB resident" \
    "$top/accel_generate" "$dir/big" -q --score "$dir/big/tokens.bin" --logits-out "$dir/big.logits" > /dev/null
"$top/tests/hf_compare" logits "$dir/big" "$dir/big.logits" || true
lscpu | sed -n 's/^Model name: *//p'

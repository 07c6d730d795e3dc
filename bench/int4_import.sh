#!/bin/sh
# accel_ckpt import of compressed-tensors' INT4 (pack-quantized, groups of 32) against the same
# model in bf16: a Llama of about a billion parameters (bench/int4_import.py writes both, random
# weights), imported to fp32 HDF5; prints each import's time and rate, and checks that the two
# imports hold the same weights (the INT4 values times their scales are exact in bf16 here).
# Each import writes 4 bytes a parameter: the disk's write speed bounds both.
# Needs about 12 GB of disk (INT4_DIR, default a temporary directory). Not a test.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/venv.sh"
python_with "import torch, safetensors, compressed_tensors" torch safetensors compressed-tensors
dir=${INT4_DIR:-$(mktemp -d)}
trap 'rm -rf "$dir/int4_model" "$dir/bf16.h5" "$dir/int4.h5"' EXIT
"$py" "$top/bench/int4_import.py" "$dir/int4_model" "${LAYERS:-16}"
for kind in bf16 int4; do
    sync                            # the other import's writes out of the way
    /usr/bin/time -f "import $kind: %e s, peak %M KB resident" \
        "$top/accel_ckpt" import "$dir/int4_model/$kind" -o "$dir/$kind.h5" --force > /dev/null
done
"$top/accel_ckpt" diff "$dir/bf16.h5" "$dir/int4.h5" 2>&1 | tail -2 || true
lscpu | sed -n 's/^Model name: *//p'

#!/bin/sh
# accel_ckpt import of a PEFT LoRA adapter (merged into its base as it is read) against the base
# alone, and PEFT's own merge of the same files (transformers + peft from PyPI, bf16) as the peer:
# a Llama of about a billion parameters with a rank-16 adapter on its 112 linear layers
# (bench/lora_merge.py, random weights). Prints each one's time and peak memory, and the largest
# difference between accel's merge and PEFT's (PEFT merges in bf16: rounding); then the way back,
# export --format peft of the merged model against the base at the adapter's rank (its time, and
# the relative error of the factors it prints). Needs about 12 GB of
# disk (LORA_DIR, default a temporary directory). Not a test.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/venv.sh"
python_with "import torch, safetensors, transformers, peft" torch safetensors transformers peft
dir=${LORA_DIR:-$(mktemp -d)}
trap 'rm -rf "$dir/base" "$dir/adapter" "$dir/peft_merged" "$dir/extracted" "$dir"/*.h5' EXIT
"$py" "$top/bench/lora_merge.py" "$dir" "${LAYERS:-16}" "${RANK:-16}"
for src in base adapter base adapter; do    # twice each: the page cache makes single runs vary
    sync
    /usr/bin/time -f "accel_ckpt import $src: %e s, peak %M KB resident" \
        "$top/accel_ckpt" import "$dir/$src" -o "$dir/$src.h5" --force > /dev/null
done
sync
/usr/bin/time -f "PEFT merge (the peer): %e s in all, peak %M KB resident" "$py" "$top/bench/lora_merge.py" --peer "$dir"
"$top/accel_ckpt" import "$dir/peft_merged" -o "$dir/peft.h5" --force > /dev/null
"$top/accel_ckpt" diff "$dir/adapter.h5" "$dir/peft.h5" 2>&1 | tail -2 || true
# And back: the merged import exported as an adapter of the base at the adapter's rank (exact).
/usr/bin/time -f "accel_ckpt export --format peft --rank ${RANK:-16}: %e s, peak %M KB resident" \
    "$top/accel_ckpt" export "$dir/adapter.h5" --format peft --base "$dir/base" --rank "${RANK:-16}" \
    --output "$dir/extracted" --force 2>&1 | grep -v '^\[rank.*wrote' || true
lscpu | sed -n 's/^Model name: *//p'

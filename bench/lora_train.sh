#!/bin/sh
# LoRA fine-tuning (lora.rank, docs/lora.md) against full fine-tuning and against PEFT's LoRA in
# torch (the peer, bench/lora_train.py): a Llama of SmolLM-135M's shape (30 layers, width 576, vocab
# 49152, tied head; random fp32 weights), rank 16 on every linear layer of the blocks, fp32, one
# rank of 2 threads, BATCH x CONTEXT tokens a step (default 4 x 256). Prints tokens/s, the peak
# resident memory and the checkpoint's size of each; LoRA on every linear layer and on q_proj,v_proj
# only (PEFT's default for Llama). Not a test.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/venv.sh"
python_with "import torch, transformers, peft" torch transformers peft
dir=${LORA_DIR:-$(mktemp -d)}
trap 'rm -rf "$dir"' EXIT
steps=${STEPS:-6} batch=${BATCH:-4} context=${CONTEXT:-256} rank=${RANK:-16}
export OMP_NUM_THREADS=${THREADS:-2}
"$py" "$top/bench/lora_train.py" --make "$dir"
"$top/accel_data" import --output "$dir/data.h5" --vocab 49152 --context "$context" --val-fraction 0.003 \
    "$dir/tokens.npy" > /dev/null     # a held-out split of 3 samples: the final evaluation is not timed
run() { # NAME ARGS...: one accel_train run, its throughput line and peak memory
    name=$1; shift
    /usr/bin/time -f "%M" -o "$dir/$name.rss" "$top/accel_train" train.init_from="$dir/base" data.path="$dir/data.h5" \
        model.context="$context" train.global_batch="$batch" train.steps=$((steps + 1)) optim.lr=1e-4 \
        train.sample_tokens=0 threads="${THREADS:-2}" ckpt.dir="$dir/$name" "$@" > "$dir/$name.out" 2>&1 ||
        { tail -5 "$dir/$name.out"; exit 1; }
    tps=$(sed -n 's/.*throughput: \([0-9.]*\) tokens\/s.*/\1/p' "$dir/$name.out")
    size=$(du -k "$dir/$name"/step-*.h5 | tail -1 | cut -f1)
    echo "accel $name: $tps tokens/s, peak $(cat "$dir/$name.rss") KB resident, checkpoint $size KB"
}
run full
run lora lora.rank="$rank" lora.alpha=$((2 * rank))
run lora-qv lora.rank="$rank" lora.alpha=$((2 * rank)) lora.targets=q_proj,v_proj
for kind in full lora lora-qv; do
    /usr/bin/time -f "torch $kind: peak %M KB resident" "$py" "$top/bench/lora_train.py" "$dir" "$kind" "$steps" "$batch" \
        "$context" "$rank" 2>&1 | grep -v Warning
done
lscpu | sed -n 's/^Model name: *//p'
lscpu | grep -o 'avx512_bf16\|amx_bf16' | sort -u | tr '\n' ' '; echo

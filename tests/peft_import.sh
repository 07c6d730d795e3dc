#!/bin/sh
# PEFT LoRA adapters merged into their base models (src/ckpt/peft.c, docs/huggingface.md), on the
# committed adapters tests/fixtures/peft/<name>/ that PEFT itself made on fixtures of
# tests/fixtures/hf/ (tests/peft_reference.py: Llama with every linear layer, the embedding and the
# LM head as a whole tensor, a rank and an alpha by pattern; GPT-2's Conv1D layers in BF16 with
# rank-stabilized scales; GPT-NeoX's q, k, v fused by head; GLM-4's interleaved RoPE pairs; Gemma 3's
# language model beside a vision tower, under transformers 5's names, its tied embedding adapted).
# No Python here:
#   1. accel_ckpt import of each adapter: accel's logits equal PEFT's merge_and_unload within 1e-5,
#      from the import and from the adapter directory read directly;
#   2. train.init_from=ADAPTER_DIR: step 0's loss is the merged model's, the loss falls (2 ranks, zero3);
#   3. the base found by --base, beside the adapter, or in the Hugging Face cache by hub id and
#      revision, and a clear message when it is nowhere;
#   4. bad input is refused with a message: DoRA and other variants, another peft_type, a pickle
#      only, the adapter of another model, a shape that does not fit, an LM head tied to the embedding.
. "${top_srcdir:-.}/tests/lib.sh"
CKPT="$top_builddir/accel_ckpt"
GEN="$top_builddir/accel_generate"
CMP="$top_builddir/tests/hf_compare"
FIX="$top_srcdir/tests/fixtures/peft"
HFFIX="$top_srcdir/tests/fixtures/hf"
[ -x "$CMP" ] || fail "$CMP is not built (make check builds it)"
HDF5_USE_FILE_LOCKING=FALSE
export HDF5_USE_FILE_LOCKING
make_scratch
cd "$SCRATCH" || fail "no scratch"
# The adapters name their bases "../../hf/<name>" (beside them): copies keep that shape.
mkdir -p fix/peft && cp -r "$FIX"/* fix/peft/ && ln -s "$(cd "$HFFIX" && pwd)" fix/hf || fail "copy the fixtures"

# ---------------------------------------------------------------- 1: import, logits
for dir in fix/peft/*/; do
    name=$(basename "$dir")
    timeout -k 10 "$TEST_TIMEOUT" "$CKPT" import "$dir" -o "$name.h5" > "import_$name.log" 2>&1 ||
        { cat "import_$name.log"; fail "import $name"; }
    grep -q "LoRA adapter merged into" "import_$name.log" || { cat "import_$name.log"; fail "$name: the import does not say it merged"; }
    timeout -k 10 "$TEST_TIMEOUT" "$GEN" "$name.h5" -q --score "$dir/tokens.bin" --logits-out "$name.logits" \
        > /dev/null 2>gen.err || { cat gen.err; fail "accel_generate on the import of $name"; }
    "$CMP" logits "$dir" "$name.logits" || fail "$name: logits/loss differ from PEFT's merged model"
    timeout -k 10 "$TEST_TIMEOUT" "$GEN" "$dir" -q --score "$dir/tokens.bin" --logits-out "$name.dir.logits" \
        > /dev/null 2>gen.err || { cat gen.err; fail "accel_generate on the adapter directory $name"; }
    "$CMP" logits "$dir" "$name.dir.logits" || fail "$name: logits from the adapter directory differ"
    pass "$name: merged as PEFT merges it (import and directory)"
done
grep -q "the vision tower's 4 left out with the tower" import_lora_gemma3_vl.log ||
    fail "lora_gemma3_vl: the vision tower's modules are not counted as left out"

# ---------------------------------------------------------------- 2: train.init_from
cat fix/peft/*/tokens.bin fix/peft/*/tokens.bin | head -c 100 > text.txt
timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/accel_data" prepare --output d.h5 --val-fraction 0.2 --context 16 \
    text.txt > /dev/null || fail "accel_data prepare"
head -c 65 text.txt > batch.txt
want=$(timeout -k 10 "$TEST_TIMEOUT" "$GEN" lora_llama.h5 -q --score batch.txt | sed -n 's/.*mean loss \([0-9.]*\) nats.*/\1/p')
[ -n "$want" ] || fail "no reference loss for lora_llama.h5"
run_mpi 2 "$ACCEL_TRAIN" train.init_from=fix/peft/lora_llama data.path=d.h5 train.global_batch=4 train.steps=6 \
    train.log_every=1 train.sample_tokens=0 optim.warmup=0 optim.lr=1e-2 dist.strategy=zero3 \
    train.metrics=m.jsonl > train.log 2>&1 || { cat train.log; fail "init_from an adapter directory"; }
grep -q "LoRA adapter merged into" train.log || fail "init_from: the run does not say it merged the adapter"
awk -v want="$want" '
    /"kind": "train"/ { sub(/.*"step": /, ""); s = $0 + 0; l = $0; sub(/.*"loss": /, "", l); l += 0;
               if (!n++) { first = l; fs = s } last = l }
    END { d = first - want; if (d < 0) d = -d;
          printf "init_from lora_llama: first step %d, loss %.7f (merged model on the batch %.6f, |diff| %.2g), last %.4f\n",
                 fs, first, want, d, last;
          exit !(fs == 1 && d <= 1e-5 && last < first - 0.1) }' m.jsonl ||
    fail "init_from an adapter: the first loss is not the merged model's, or the loss does not fall"
pass "train.init_from=ADAPTER_DIR (2 ranks, zero3) starts from the merged model"

# ---------------------------------------------------------------- 3: where the base is
mkdir -p lone && cp fix/peft/lora_llama/adapter_config.json fix/peft/lora_llama/adapter_model.safetensors lone/ ||
    fail "copy an adapter"
expect_fail "hf download ../../hf/llama_gqa" "$CKPT" import lone -o lone.h5
timeout -k 10 "$TEST_TIMEOUT" "$CKPT" import lone --base "$HFFIX/llama_gqa" -o lone.h5 > /dev/null 2>&1 ||
    fail "import --base"
timeout -k 10 "$TEST_TIMEOUT" "$GEN" lone.h5 -q --score "$FIX/lora_llama/tokens.bin" --logits-out lone.logits \
    > /dev/null 2>&1 && "$CMP" logits "$FIX/lora_llama" lone.logits > /dev/null || fail "import --base: other logits"
pass "import --base DIR: the same merged model"
expect_fail "names the base of a PEFT adapter, but" "$CKPT" import "$HFFIX/llama_gqa" --base "$HFFIX/llama_gqa" -o x.h5
expect_fail "is not a Hugging Face model directory" "$CKPT" import lone --base "$SCRATCH" -o x.h5
# A hub id, found in a Hugging Face cache as huggingface_hub lays it out (refs/main -> a snapshot).
hub="$SCRATCH/cache/hub/models--tiny-org--llama-gqa"
mkdir -p "$hub/refs" "$hub/snapshots" && printf 0123abcd > "$hub/refs/main" &&
    ln -s "$(cd "$HFFIX/llama_gqa" && pwd)" "$hub/snapshots/0123abcd" || fail "make a cache"
sed 's|"base_model_name_or_path": "[^"]*"|"base_model_name_or_path": "tiny-org/llama-gqa"|' \
    fix/peft/lora_llama/adapter_config.json > lone/adapter_config.json
HF_HOME="$SCRATCH/cache" timeout -k 10 "$TEST_TIMEOUT" "$CKPT" import lone -o hub.h5 > hub.log 2>&1 ||
    { cat hub.log; fail "import with the base in HF_HOME's cache"; }
grep -q "snapshots/0123abcd" hub.log || { cat hub.log; fail "the cache's snapshot is not the base"; }
HF_HUB_CACHE="$SCRATCH/cache/hub" timeout -k 10 "$TEST_TIMEOUT" "$CKPT" import lone -o hub.h5 --force > /dev/null 2>&1 ||
    fail "import with the base in HF_HUB_CACHE"
expect_fail "nor in the Hugging Face cache" env HF_HOME="$SCRATCH/nowhere" HF_HUB_CACHE= "$CKPT" import lone -o x.h5
sed 's|"revision": null|"revision": "0123abcd"|' lone/adapter_config.json > lone/c.json && mv lone/c.json lone/adapter_config.json
rm "$hub/refs/main"
HF_HOME="$SCRATCH/cache" timeout -k 10 "$TEST_TIMEOUT" "$CKPT" import lone -o hub.h5 --force > /dev/null 2>&1 ||
    fail "import with the adapter's revision as the cache's snapshot"
pass "the base found in the Hugging Face cache by hub id (refs/main, and the adapter's revision)"

# ---------------------------------------------------------------- 4: refusals
spoil() {   # NAME ADAPTER SED: a copy of the adapter with SED applied to its adapter_config.json
    rm -rf "$1" && cp -r "fix/peft/$2" "$1" || fail "copy $2"
    sed "$3" "fix/peft/$2/adapter_config.json" > "$1/adapter_config.json"
}
spoil dora lora_llama 's|"use_dora": false|"use_dora": true|'
expect_fail "use_dora is set: accel merges plain LoRA" "$CKPT" import dora -o x.h5
spoil bias lora_llama 's|"lora_bias": false|"lora_bias": true|'
expect_fail "lora_bias is set" "$CKPT" import bias -o x.h5
spoil ia3 lora_llama 's|"peft_type": "LORA"|"peft_type": "IA3"|'
expect_fail "peft_type IA3: accel merges LoRA adapters (peft_type LORA) only" "$CKPT" import ia3 -o x.h5
spoil broken lora_llama 's|"peft_type"|peft_type|'
expect_fail "adapter_config.json" "$CKPT" import broken -o x.h5
spoil pickle lora_llama 's|x|x|' && mv pickle/adapter_model.safetensors pickle/adapter_model.bin
expect_fail "adapter_model.bin (a pickle)" "$CKPT" import pickle -o x.h5
spoil nobase lora_llama 's|"base_model_name_or_path": "[^"]*",||'
expect_fail "names no base model" "$CKPT" import nobase -o x.h5
expect_fail "module transformer.h.0.attn.c_attn has no place in accel's llama model" \
    "$CKPT" import fix/peft/lora_gpt2 --base "$HFFIX/llama_gqa" -o x.h5
expect_fail "module gpt_neox.layers.0.mlp.dense_4h_to_h (rank 2) makes a delta of shape [32, 64]" \
    "$CKPT" import fix/peft/lora_neox --base "$HFFIX/gpt_neox_seq" -o x.h5
expect_fail "the base ties its LM head to the embedding" "$CKPT" import fix/peft/lora_llama --base "$HFFIX/llama_rope31" -o x.h5
expect_fail "use_dora is set" "$GEN" dora -q --score "$FIX/lora_llama/tokens.bin"
[ ! -e x.h5 ] || fail "a refused import left x.h5 behind"
pass "bad adapters refused, nothing written"

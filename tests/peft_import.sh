#!/bin/sh
# PEFT LoRA adapters merged into their base models (src/ckpt/peft.c, docs/huggingface.md), on the
# committed adapters tests/fixtures/peft/<name>/ that PEFT itself made on fixtures of
# tests/fixtures/hf/ (tests/peft_reference.py: Llama with every linear layer, the embedding and the
# LM head as a whole tensor, a rank and an alpha by pattern; GPT-2's Conv1D layers in BF16 with
# rank-stabilized scales; GPT-NeoX's q, k, v fused by head; GLM-4's interleaved RoPE pairs; Gemma 3's
# language model beside a vision tower, under transformers 5's names, its tied embedding adapted;
# gpt-oss's stacked experts (target_parameters) on its dense and its MXFP4 save; Granite MoE's
# experts under the names transformers 5 gives them; DoRA on Llama's projections and on GPT-2's Conv1D).
# No Python here:
#   1. accel_ckpt import of each adapter: accel's logits equal PEFT's merge_and_unload within 1e-5,
#      from the import and from the adapter directory read directly;
#   2. train.init_from=ADAPTER_DIR: step 0's loss is the merged model's, the loss falls (2 ranks, zero3);
#   3. the base found by --base, beside the adapter, or in the Hugging Face cache by hub id and
#      revision, and a clear message when it is nowhere;
#   4. bad input is refused with a message: DoRA without its magnitudes, other variants, another peft_type, a pickle
#      only, the adapter of another model, a shape that does not fit, an LM head tied to the embedding;
#   5. accel_ckpt export --format peft: each merged fixture exported again at its rank (the LM head
#      whole where the adapter kept it so) imports to the same logits; a checkpoint trained from
#      an adapter, exported at the full rank, imports to the checkpoint's own logits; the adapter's
#      configuration; the base found from the checkpoint's train.init_from; refusals (no base,
#      another model's base, no change). tests/peft_reference.py
#      --check has PEFT itself load the exports.
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
    train.metrics=m.jsonl ckpt.dir=ck ckpt.every=6 > train.log 2>&1 || { cat train.log; fail "init_from an adapter directory"; }
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
expect_fail "use_dora is set, but module model.layers.0.mlp.down_proj has no lora_magnitude_vector" "$CKPT" import dora -o x.h5
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
expect_fail "module model.layers.0.block_sparse_moe.experts has no place in accel's llama model" \
    "$CKPT" import fix/peft/lora_granite_moe --base "$HFFIX/granite" -o x.h5
expect_fail "use_dora is set" "$GEN" dora -q --score "$FIX/lora_llama/tokens.bin"
[ ! -e x.h5 ] || fail "a refused import left x.h5 behind"
pass "bad adapters refused, nothing written"

# ---------------------------------------------------------------- 5: export --format peft
for spec in lora_llama:llama_gqa:4:lm_head lora_gpt2:gpt2:3: lora_neox:gpt_neox:2: lora_glm4:glm4:2: \
            lora_gpt_oss:gpt_oss:2: lora_gpt_oss_mxfp4:gpt_oss_mxfp4:2: lora_granite_moe:granite_moe:2:; do
    name=${spec%%:*} rest=${spec#*:}
    base=${rest%%:*} rest=${rest#*:}
    rank=${rest%%:*} whole=${rest#*:}
    timeout -k 10 "$TEST_TIMEOUT" "$CKPT" export "$name.h5" --format peft --base "$HFFIX/$base" --rank "$rank" \
        ${whole:+--whole "$whole"} --output "$name.peft" > "export_$name.log" 2>&1 || { cat "export_$name.log"; fail "export $name"; }
    grep -q "relative error" "export_$name.log" || fail "$name: the export does not say how close its factors are"
    timeout -k 10 "$TEST_TIMEOUT" "$CKPT" import "$name.peft" -o "$name.again.h5" > /dev/null 2>&1 || fail "import of the export of $name"
    timeout -k 10 "$TEST_TIMEOUT" "$GEN" "$name.again.h5" -q --score "$FIX/$name/tokens.bin" --logits-out "$name.again.logits" \
        > /dev/null 2>&1 || fail "accel_generate on the export of $name"
    "$CMP" logits "$FIX/$name" "$name.again.logits" || fail "$name: the exported adapter gives other logits"
done
grep -q '"r": 4' lora_llama.peft/adapter_config.json && grep -q '"lm_head"' lora_llama.peft/adapter_config.json &&
    grep -q '"base_model_name_or_path"' lora_llama.peft/adapter_config.json || fail "lora_llama.peft: its adapter_config.json"
grep -q '"fan_in_fan_out": true' lora_gpt2.peft/adapter_config.json || fail "lora_gpt2.peft: GPT-2's Conv1D layers not fan_in_fan_out"
grep -q '"model.layers.1.mlp.experts.down_proj"' lora_gpt_oss_mxfp4.peft/adapter_config.json &&
    grep -q '"model.layers.1.block_sparse_moe.experts.gate_up_proj"' lora_granite_moe.peft/adapter_config.json ||
    fail "the experts' target_parameters are not named as transformers 5 names them"
pass "export --format peft of the merged fixtures: the same logits again"
# A full fine-tune's change has full rank: at the rank of the smallest dimension (16) the factors
# hold it exactly, at rank 2 they do not; the norms changed go whole (modules_to_save).
ck=$(ls ck/step-*.h5 | tail -1)
[ -n "$ck" ] || fail "the init_from run kept no checkpoint"
# The base by default: the checkpoint's train.init_from, an adapter, whose own base it is.
"$CKPT" export "$ck" --format peft --rank 16 --output full.peft > full.log 2>&1 ||
    { cat full.log; fail "export of a trained checkpoint"; }
grep -q "the base: .*llama_gqa (train.init_from=fix/peft/lora_llama)" full.log || { cat full.log; fail "export: not the init_from's base"; }
grep -q "modules_to_save" full.peft/adapter_config.json && grep -q '"model.norm"' full.peft/adapter_config.json ||
    fail "full.peft: the changed norms are not kept whole"
timeout -k 10 "$TEST_TIMEOUT" "$GEN" "$ck" -q --score "$FIX/lora_llama/tokens.bin" --logits-out ck.logits > /dev/null 2>&1 &&
    "$CKPT" import full.peft -o full.h5 > /dev/null 2>&1 &&
    timeout -k 10 "$TEST_TIMEOUT" "$GEN" full.h5 -q --score "$FIX/lora_llama/tokens.bin" --logits-out full.logits > /dev/null 2>&1 ||
    fail "score the checkpoint and its adapter"
cmp -s ck.logits full.logits && fail "the logits are bit for bit the same: the comparison is not reading them"
od -An -v -f ck.logits > ck.txt && od -An -v -f full.logits > full.txt
paste -d' ' ck.txt full.txt | awk '{ n = NF / 2; for (i = 1; i <= n; i++) { d = $i - $(i + n); if (d < 0) d = -d;
    a = $i < 0 ? -$i : $i; if (a > s) s = a; if (d > w) w = d } }
    END { printf "checkpoint against its rank-16 adapter: max |logit difference| %.2e (largest |logit| %.2f)\n", w, s;
          exit !(w <= 1e-4 * (s > 1 ? s : 1)) }' || fail "a full-rank export does not reproduce the checkpoint"
"$CKPT" export "$ck" --format peft --base "$HFFIX/llama_gqa" --rank 2 --output low.peft > low.log 2>&1 || fail "export at rank 2"
awk '/relative error/ { sub(/.*largest /, ""); exit !($1 + 0 > 0.05) }' low.log || { cat low.log; fail "rank 2: the error printed is not the truncation's"; }
pass "export --format peft of a trained checkpoint: exact at full rank, the truncation's error printed at rank 2"
expect_fail "records no train.init_from" "$CKPT" export lora_llama.h5 --format peft --output x.peft
expect_fail "is an adapter; name the model directory it adapts" "$CKPT" export "$ck" --format peft --base fix/peft/lora_llama --output x.peft
expect_fail "an adapter holds the change from its own base" "$CKPT" export "$ck" --format peft --base "$HFFIX/gpt2" --output x.peft
"$CKPT" import "$HFFIX/llama_gqa" -o plain.h5 > /dev/null 2>&1 || fail "import llama_gqa"
expect_fail "no change to hold" "$CKPT" export plain.h5 --format peft --base "$HFFIX/llama_gqa" --output x.peft
expect_fail "a vision-language model" "$CKPT" export lora_gemma3_vl.h5 --format peft --base "$HFFIX/gemma3_vl" --output x.peft
[ ! -e x.peft/adapter_model.safetensors ] || fail "a refused export left an adapter behind"
pass "export --format peft: bad requests refused"

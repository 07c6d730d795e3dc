#!/bin/sh
# LoRA fine-tuning (lora.* keys, src/train/lora.c, docs/lora.md) end to end. No Python here: the
# oracle is tests/fixtures/lora_train/, made by tests/lora_reference.py (PEFT's LoRA on the Llama
# fixture, trained by torch's AdamW).
#   1. Training PEFT's initial adapter (train.init_from=ADAPTER) gives PEFT's loss at every step and
#      its held-out loss within 2e-5; the weights it ends with (exported --format peft, merged) are
#      PEFT's final adapter's within 1e-5: on a Llama with every linear layer adapted, and on a
#      Qwen2-MoE with q, v and the shared expert's down projection only (the weights accel then
#      skips the gradients of: the experts, the routers, the rest);
#   2. 1, 2 and 4 ranks, ddp, zero1 and zero2, gradient accumulation: the same trajectory; a stop at
#      step 5 on 2 ranks resumes on 4 with zero1 on it; the checkpoint holds the adapters only;
#   3. a LoRA checkpoint reads as its base with the adapters merged: accel_generate, export --format
#      hf and the exported adapter give the same text; train.init_from of the adapter goes on where
#      the checkpoint stopped;
#   4. GPT-2's Conv1D layers (fan_in_fan_out), lora.targets by name, rank-stabilized scale;
#   5. what LoRA cannot do is refused naming the key; accel estimate-memory counts LoRA's state.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
S=$SCRATCH
TRAIN="$top_builddir/accel_train"
CKPT="$top_builddir/accel_ckpt"
GEN="$top_builddir/accel_generate"
DATA="$top_builddir/accel_data"
FIX="$top_srcdir/tests/fixtures/lora_train"
HF="$top_srcdir/tests/fixtures/hf"
case $FIX in /*) ;; *) FIX="$(pwd)/$FIX" HF="$(pwd)/$HF" ;; esac

num() { sed -n "s/.*\"$2\": *\([-0-9.e+]*\).*/\1/p" "$1" | head -1; }
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= t * (a < 0 ? -a : a)) }'; }

# 1. PEFT's trajectory, on each case of tests/lora_reference.py.
str() { sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" "$1" | head -1; }
for case in llama qwen2_moe; do
    F="$FIX/$case"
    timeout -k 5 60 "$DATA" import --output "$S/$case.h5" --vocab "$(num "$F/expected.json" vocab)" --context 8 \
        "$F/train.npy" --val "$F/val.npy" > "$S/import.out" 2>&1 || fail "accel_data import: $(cat "$S/import.out")"
    peft="train.init_from=$F/init lora.rank=$(num "$F/expected.json" rank) lora.alpha=$(num "$F/expected.json" alpha)
          lora.targets=$(str "$F/expected.json" targets) data.path=$S/$case.h5 model.context=8 train.global_batch=6
          train.steps=8 optim.lr=0.01 optim.schedule=constant optim.warmup=0 train.clip=0 train.sample_tokens=0
          log.level=warn"
    run_mpi 1 "$TRAIN" $peft train.metrics="$S/$case.jsonl" ckpt.dir="$S/$case" > "$S/$case.out" 2>&1 ||
        fail "$case: LoRA on PEFT's adapter: $(tail -5 "$S/$case.out")"
    i=0
    for want in $(tr -d ' \n' < "$F/expected.json" | sed 's/.*"losses":\[\([^]]*\)\].*/\1/' | tr ',' ' '); do
        i=$((i + 1))
        got=$(grep "\"step\": $i, \"kind\": \"train\"" "$S/$case.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
        close "$want" "$got" 2e-5 || fail "$case, step $i: loss $got, PEFT's $want"
    done
    [ "$i" = 8 ] || fail "$case: expected.json holds $i losses, not 8"
    want=$(num "$F/expected.json" val_loss) got=$(num "$S/$case.jsonl" eval_loss)
    close "$want" "$got" 2e-5 || fail "$case: held-out loss $got, PEFT's $want"
    "$CKPT" export "$S/$case/step-00000008.h5" --format peft --output "$S/$case.peft" > "$S/exp.out" 2>&1 ||
        fail "$case: export --format peft: $(cat "$S/exp.out")"
    "$CKPT" import "$S/$case.peft" -o "$S/$case.mine.h5" > /dev/null 2>&1 &&
        "$CKPT" import "$F/final" -o "$S/$case.peft.h5" > /dev/null 2>&1 || fail "$case: cannot import the adapters"
    "$CKPT" diff "$S/$case.peft.h5" "$S/$case.mine.h5" --atol 1e-5 > "$S/diff.out" 2>&1 ||
        fail "$case: the trained weights differ from PEFT's: $(tail -3 "$S/diff.out")"
    pass "LoRA ($case, lora.targets=$(str "$F/expected.json" targets)): PEFT's losses over 8 steps and its held-out loss ($got) within 2e-5; its final weights within 1e-5"
done

# 2. Ranks and strategies: one trajectory.
args="train.init_from=$HF/llama_gqa lora.rank=3 lora.alpha=6 data.path=synthetic model.context=16
      train.global_batch=8 train.steps=12 optim.lr=0.01 train.sample_tokens=0 data.eval_samples=16 log.level=warn"
train() { # NAME NP ARGS...
    name=$1; np=$2; shift 2
    run_mpi "$np" "$TRAIN" $args train.metrics="$S/$name.jsonl" "$@" > "$S/$name.out" 2>&1 ||
        fail "$name: $(tail -5 "$S/$name.out")"
}
compare() { res=$(compare_losses "$S/$1.jsonl" "$S/$2.jsonl" 1e-5 "${3:-12}") || fail "$2 differs from $1: $res"; }
train one 1 ckpt.dir="$S/one"
for np in 2 4; do train "ddp-$np" $np; compare one "ddp-$np"; done
for s in zero1 zero2; do train "$s" 4 dist.strategy=$s; compare one "$s"; done
train accum 2 train.grad_accum=2
compare one accum
train stop 2 ckpt.dir="$S/ck" debug.stop_step=5
train resumed 4 ckpt.dir="$S/ck" resume=auto dist.strategy=zero1
cat "$S/stop.jsonl" "$S/resumed.jsonl" > "$S/elastic.jsonl"
compare one elastic
"$CKPT" ls "$S/one/step-00000012.h5" > "$S/ls.out" 2>&1 || fail "accel_ckpt ls: $(cat "$S/ls.out")"
grep -q "model.layers.1.mlp.down_proj.lora_B.weight" "$S/ls.out" && ! grep -q "/model/wte" "$S/ls.out" ||
    fail "the checkpoint does not hold the adapters alone: $(cat "$S/ls.out")"
# verify checks the adapters against the stored configuration, a full fine-tune's tensors against
# its model, each without a word on stderr.
train full 1 train.steps=1 ckpt.dir="$S/full" lora.rank=0
for ck in "$S/one/step-00000012.h5" "$S/full/step-00000001.h5"; do
    "$CKPT" verify "$ck" > "$S/verify.out" 2> "$S/verify.err" || fail "$ck does not verify: $(cat "$S/verify.out")"
    [ ! -s "$S/verify.err" ] || fail "accel_ckpt verify $ck warns: $(cat "$S/verify.err")"
done
first=$(grep -m1 '"kind": "train"' "$S/one.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(grep '"step": 12, "kind": "train"' "$S/one.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f) }' || fail "LoRA did not learn: $first -> $last"
pass "LoRA: 1/2/4 ranks, ddp/zero1/zero2, grad_accum and a 2 -> 4 rank resume on one trajectory; loss $first -> $last"

# 3. The checkpoint as a model.
ck="$S/one/step-00000012.h5"
gen() { timeout -k 5 60 "$GEN" "$1" --prompt "ab" -n 12 -q 2> "$S/gen.err" || fail "accel_generate $1: $(cat "$S/gen.err")"; }
ref=$(gen "$ck")
"$CKPT" export "$ck" --format peft --output "$S/one.peft" > /dev/null 2>&1 || fail "export --format peft"
"$CKPT" export "$ck" --format hf --output "$S/one.hf" > "$S/hf.out" 2>&1 || fail "export --format hf: $(cat "$S/hf.out")"
grep -q "LoRA adapters merged" "$S/hf.out" || fail "export --format hf does not say it merged: $(cat "$S/hf.out")"
[ "$(gen "$S/one.peft")" = "$ref" ] || fail "the exported adapter generates another text"
[ "$(gen "$S/one.hf")" = "$ref" ] || fail "the merged export generates another text"
e1=$(num "$S/one.jsonl" eval_loss)
train more 1 train.init_from="$S/one.peft" train.steps=1 optim.lr=1e-12
close "$e1" "$(num "$S/more.jsonl" eval_loss)" 1e-6 || fail "training the exported adapter further starts elsewhere"
grep -q "from the adapter's factors" "$S/more.out" || run_mpi 1 "$TRAIN" $args train.init_from="$S/one.peft" train.steps=1 \
    log.level=info 2>&1 | grep -q "from the adapter's factors" || fail "the adapter's factors were not trained further"
pass "LoRA: the checkpoint, its adapter and its merged export generate the same text; the adapter trains on from it"

# 4. GPT-2's Conv1D layers, targets by name, rsLoRA.
g="train.init_from=$HF/gpt2 lora.rank=2 lora.alpha=3 lora.rslora=true lora.targets=c_attn,c_fc data.path=synthetic
   model.context=16 train.global_batch=4 train.steps=6 optim.lr=0.01 train.sample_tokens=0 data.eval_samples=8 log.level=warn"
run_mpi 2 "$TRAIN" $g ckpt.dir="$S/g" > "$S/g.out" 2>&1 || fail "GPT-2 LoRA: $(tail -5 "$S/g.out")"
"$CKPT" export "$S/g/step-00000006.h5" --format peft --output "$S/g.peft" > /dev/null 2>&1 || fail "GPT-2: export --format peft"
tr -d ' \n' < "$S/g.peft/adapter_config.json" > "$S/g.json"
for want in '"fan_in_fan_out":true' '"use_rslora":true' '"r":2' '"transformer.h.1.mlp.c_fc"' '"lora_alpha":3'; do
    grep -qF "$want" "$S/g.json" || fail "GPT-2's adapter_config.json lacks $want: $(cat "$S/g.json")"
done
! grep -q "c_proj" "$S/g.json" || fail "lora.targets=c_attn,c_fc adapted c_proj too: $(cat "$S/g.json")"
[ "$(gen "$S/g/step-00000006.h5")" = "$(gen "$S/g.peft")" ] || fail "GPT-2: the adapter generates another text"
pass "LoRA: GPT-2's Conv1D layers (fan_in_fan_out), two targets by name, rank-stabilized scale"

# 5. Refusals.
base="train.init_from=$HF/llama_gqa data.path=synthetic model.context=16 train.global_batch=4 train.steps=1 train.sample_tokens=0"
expect_fail "needs train.init_from" run_mpi 1 "$TRAIN" lora.rank=4 model.name=llama train.steps=1
expect_fail "zero3" run_mpi 1 "$TRAIN" $base lora.rank=4 dist.strategy=zero3
expect_fail "no linear layer of this model is named 'qq_proj'" run_mpi 1 "$TRAIN" $base lora.rank=4 lora.targets=q_proj,qq_proj
expect_fail "lora.rank=40 is larger" run_mpi 1 "$TRAIN" $base lora.rank=40
expect_fail "optim.router_bias_update" run_mpi 1 "$TRAIN" $base lora.rank=4 optim.router_bias_update=0.001
expect_fail "lora.rank=4 lora.alpha=8, as the adapter was trained" run_mpi 1 "$TRAIN" $base train.init_from="$FIX/llama/init" lora.rank=2
expect_fail "lora.targets must name the adapter's modules" run_mpi 1 "$TRAIN" $base train.init_from="$FIX/llama/init" lora.rank=4 \
    lora.alpha=8 lora.targets=q_proj
expect_fail "--rank and --whole do not apply" "$CKPT" export "$ck" --format peft --rank 8 --output "$S/x.peft"
cp -r "$HF/llama_gqa" "$S/base"
run_mpi 1 "$TRAIN" $base train.init_from="$S/base" lora.rank=2 ckpt.dir="$S/gone" > "$S/gone.out" 2>&1 ||
    fail "LoRA on a copied base: $(tail -3 "$S/gone.out")"
rm -rf "$S/base"
expect_fail "and the model they adapt (train.init_from=$S/base) cannot be read" "$GEN" "$S/gone/step-00000001.h5" --prompt a -n 2
pass "LoRA: refusals name the key"

# accel estimate-memory counts the frozen model beside the adapters, and shows no zero3.
"$top_builddir/accel" estimate-memory $base lora.rank=4 --world 1,2 > "$S/est.out" 2>&1 || fail "estimate-memory: $(cat "$S/est.out")"
grep -q "LoRA (lora.rank=4)" "$S/est.out" && grep -q "^zero2 " "$S/est.out" && ! grep -q "^zero3 " "$S/est.out" ||
    fail "estimate-memory with lora.rank: $(cat "$S/est.out")"
pass "LoRA: accel estimate-memory accounts for the frozen model and the adapters"

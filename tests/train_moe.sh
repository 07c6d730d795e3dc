#!/bin/sh
# Training a mixture of experts (model.experts: Mixtral / Qwen3-MoE blocks) end to end: the loss
# falls; 1 rank = 2 ranks (ddp; zero3 with accumulation: each expert's weights are sharded like any
# tensor) without the load-balancing loss, whose statistics are a micro-batch's; with it, the same
# micro-batches give the same run under ddp and zero3, the loss is higher by the coefficient times
# the balance term (K = experts_per_token when the routing is balanced), and evaluation reports the cross-entropy alone; train.recompute keeps the run;
# a checkpoint resumes it exactly and exports to Hugging Face (tests/hf_roundtrip.py loads such
# exports in transformers); Qwen2-MoE's shared expert trains alike, and GLM-4.5's blocks (DeepSeek-V3's
# routing, ungated shared experts, a dense first block), with DeepSeek-V3's bias balancing too; bad keys are refused. The layers themselves are checked against
# transformers in tests/check_llama.c (fixtures mixtral_moe, qwen3_moe) and by finite differences
# in tests/check_gpt.c.
. "${top_srcdir:-.}/tests/lib.sh"
AD="$top_builddir/accel_data" CKPT="$top_builddir/accel_ckpt"
[ -x "$AD" ] && [ -x "$ACCEL_TRAIN" ] && [ -x "$CKPT" ] || fail "accel_data, accel_train or accel_ckpt is missing (make)"
make_scratch
S=$SCRATCH
t() { timeout -k 5 180 "$@"; }

awk 'BEGIN { srand(3); for (i = 0; i < 400; i++) { n = 5 + int(rand() * 40); s = "";
        for (k = 0; k < n; k++) s = s sprintf("%sw%d", k ? " " : "", int(rand() * 30));
        print s } }' > "$S/text.txt"
t "$AD" prepare --context 32 --output "$S/d.h5" "$S/text.txt" > "$S/out" 2>&1 || fail "prepare: $(cat "$S/out")"

model="model.name=llama model.layers=2 model.heads=4 model.kv_heads=2 model.width=32 model.context=32 \
model.vocab=256 model.experts=4 model.experts_per_token=2 model.ffn_width=24 data.path=$S/d.h5 \
train.global_batch=8 train.steps=20 train.log_every=5 optim.lr=3e-3 optim.warmup=3 train.sample_tokens=0 \
ckpt.dir= train.eval_every=10"
train() {   # train NAME NP ARGS...: metrics into NAME.jsonl
    name=$1; np=$2; shift 2
    # shellcheck disable=SC2086
    run_mpi "$np" "$ACCEL_TRAIN" $model train.metrics="$S/$name.jsonl" "$@" > "$S/$name.log" 2>&1 ||
        fail "$name: training failed: $(tail -20 "$S/$name.log")"
}
loss_at() { awk -v s="$2" '/"kind": "train"/ && $0 ~ "\"step\": " s "," { sub(/.*"loss": /, ""); print $0 + 0 }' "$1"; }

train plain1 1
first=$(loss_at "$S/plain1.jsonl" 1) last=$(loss_at "$S/plain1.jsonl" 20)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || fail "the loss does not fall: $first -> $last"
grep -q "parameters" "$S/plain1.log" || fail "no parameter count in the log"
train plain2 2
compare_losses "$S/plain1.jsonl" "$S/plain2.jsonl" 1e-5 20 || fail "1 and 2 ranks differ"
train plain2z3 2 dist.strategy=zero3 train.grad_accum=2
compare_losses "$S/plain1.jsonl" "$S/plain2z3.jsonl" 1e-5 20 || fail "zero3 with accumulation differs"
train plain1rc 1 train.recompute=block
compare_losses "$S/plain1.jsonl" "$S/plain1rc.jsonl" 1e-6 20 || fail "train.recompute=block changes the run"
pass "experts: the loss falls ($first -> $last); 1 rank = 2 ranks (ddp, zero3 with accumulation) = recompute"

# The load-balancing loss: the same micro-batches under ddp and zero3 give the same run; the first
# step's loss is the cross-entropy plus coefficient x E sum_e f_e P_e, f_e the assignments' share of
# expert e (they sum to K = 2) and P_e its mean probability: K when balanced, as a fresh router is.
train aux2 2 model.router_aux_loss=0.5
train aux2z3 2 model.router_aux_loss=0.5 dist.strategy=zero3
compare_losses "$S/aux2.jsonl" "$S/aux2z3.jsonl" 1e-5 20 || fail "with router_aux_loss: ddp and zero3 differ"
a=$(loss_at "$S/aux2.jsonl" 1) p=$(loss_at "$S/plain2.jsonl" 1)
awk -v a="$a" -v p="$p" 'BEGIN { d = a - p; exit !(d > 0.5 * 2 * 0.95 && d < 0.5 * 2 * 1.2) }' ||
    fail "step 1 with router_aux_loss=0.5: $a, without: $p (the term is 0.5 x E sum f P, about 0.5 x 2)"
ev() { awk '/"kind": "eval"/ && /"step": 10,/ { sub(/.*"loss": /, ""); print $0 + 0; exit }' "$1"; }
[ -n "$(ev "$S/aux2.jsonl")" ] || fail "no evaluation at step 10"
if compare_losses "$S/plain2.jsonl" "$S/aux2.jsonl" 1e-3 > /dev/null; then fail "router_aux_loss changes nothing"; fi
pass "router_aux_loss: ddp = zero3, step 1 adds $(awk -v a="$a" -v p="$p" 'BEGIN { printf "%.4f", a - p }') (0.5 x about K = 2)"

# Checkpoint, resume, export.
train ck 2 ckpt.dir="$S/ck" debug.stop_step=10 debug.stop_rank=1
train ck 2 ckpt.dir="$S/ck" resume=auto       # metrics append to ck.jsonl
grep -q "resumed from $S/ck/step-00000010.h5" "$S/ck.log" || fail "no resume: $(tail -5 "$S/ck.log")"
compare_losses "$S/plain2.jsonl" "$S/ck.jsonl" 0 20 || fail "the resumed run differs"
last=$(cat "$S/ck/latest")
t "$CKPT" export "$S/ck/$last" --format hf --output "$S/hf" > "$S/out" 2>&1 || fail "export: $(cat "$S/out")"
grep -q '"MixtralForCausalLM"' "$S/hf/config.json" && grep -q '"num_local_experts": 4' "$S/hf/config.json" ||
    fail "the export is not a Mixtral with 4 experts: $(cat "$S/hf/config.json")"
t "$CKPT" import "$S/hf" -o "$S/back.h5" > "$S/out" 2>&1 || fail "import of the export: $(cat "$S/out")"
pass "experts: checkpoint, exact resume, export to MixtralForCausalLM and back"

# Qwen2-MoE's gated shared expert beside the routed ones: 1 rank = 2 ranks under zero3, the export
# is a Qwen2MoeForCausalLM with it.
train shared1 1 model.shared_expert_ffn=40 model.attention_bias=true ckpt.dir="$S/sh"
train shared2 2 model.shared_expert_ffn=40 model.attention_bias=true dist.strategy=zero3
compare_losses "$S/shared1.jsonl" "$S/shared2.jsonl" 1e-5 20 || fail "shared expert: 1 and 2 ranks (zero3) differ"
if compare_losses "$S/plain1.jsonl" "$S/shared1.jsonl" 1e-3 > /dev/null; then fail "the shared expert changes nothing"; fi
t "$CKPT" export "$S/sh/$(cat "$S/sh/latest")" --format hf --output "$S/hf2" > "$S/out" 2>&1 || fail "export: $(cat "$S/out")"
grep -q '"Qwen2MoeForCausalLM"' "$S/hf2/config.json" && grep -q '"shared_expert_intermediate_size": 40' "$S/hf2/config.json" ||
    fail "the export is not a Qwen2-MoE with its shared expert: $(cat "$S/hf2/config.json")"
pass "shared expert: 1 rank = 2 ranks (zero3), exported as Qwen2MoeForCausalLM"

# GLM-4.5's blocks: sigmoid scores with a selection bias, 2 groups of which each token's experts come
# from the best, weights renormalized and scaled, ungated shared experts, layer 0 dense. 1 rank = 2
# ranks under zero3, the loss falls, the export is a Glm4MoeForCausalLM that imports back.
glm="model.router_scores=sigmoid model.router_select_bias=true model.router_groups=2 model.router_topk_groups=1 \
model.router_scale=2.5 model.shared_expert_ffn=48 model.shared_expert_gate=false model.dense_layers=1 \
model.dense_ffn_width=64 model.qk_norm=true model.attention_bias=true model.rope_dim=4"
# shellcheck disable=SC2086
train glm1 1 $glm ckpt.dir="$S/glm"
# shellcheck disable=SC2086
train glm2 2 $glm dist.strategy=zero3
compare_losses "$S/glm1.jsonl" "$S/glm2.jsonl" 1e-5 20 || fail "GLM-4.5 blocks: 1 and 2 ranks (zero3) differ"
first=$(loss_at "$S/glm1.jsonl" 1) last=$(loss_at "$S/glm1.jsonl" 20)
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || fail "GLM-4.5 blocks: the loss does not fall: $first -> $last"
t "$CKPT" export "$S/glm/$(cat "$S/glm/latest")" --format hf --output "$S/hf3" > "$S/out" 2>&1 || fail "export: $(cat "$S/out")"
grep -q '"Glm4MoeForCausalLM"' "$S/hf3/config.json" && grep -q '"n_shared_experts": 2' "$S/hf3/config.json" &&
    grep -q '"first_k_dense_replace": 1' "$S/hf3/config.json" ||
    fail "the export is not a GLM-4.5 with 2 shared experts and a dense block: $(cat "$S/hf3/config.json")"
t "$CKPT" import "$S/hf3" -o "$S/back3.h5" > "$S/out" 2>&1 || fail "import of the GLM-4.5 export: $(cat "$S/out")"
pass "GLM-4.5 blocks: 1 rank = 2 ranks (zero3), the loss falls, exported as Glm4MoeForCausalLM and back"

# DeepSeek-V3's auxiliary-loss-free balancing (optim.router_bias_update=0.01): each step moves every
# selection bias by 0.01 against its expert's load over the global batch, so after 5 steps each is
# an odd multiple of 0.01 up to 0.05; the loads are the global batch's, so 1 rank = 2 ranks under
# zero3 with accumulation, biases included.
# shellcheck disable=SC2086
train bal1 1 $glm optim.router_bias_update=0.01 train.steps=5 ckpt.dir="$S/bal1"
# shellcheck disable=SC2086
train bal2 2 $glm optim.router_bias_update=0.01 train.steps=5 dist.strategy=zero3 train.grad_accum=2 ckpt.dir="$S/bal2"
compare_losses "$S/bal1.jsonl" "$S/bal2.jsonl" 1e-5 5 || fail "router_bias_update: 1 and 2 ranks (zero3) differ"
t "$CKPT" diff "$S/bal1/$(cat "$S/bal1/latest")" "$S/bal2/$(cat "$S/bal2/latest")" --atol 1e-5 > "$S/out" 2>&1 ||
    fail "router_bias_update: the checkpoints of 1 and 2 ranks differ: $(cat "$S/out")"
t "$CKPT" export "$S/bal1/$(cat "$S/bal1/latest")" --format hdf5 --output "$S/bal1.h5" > /dev/null 2>&1 || fail "export of bal1"
h5dump -y -d /h.1.mlp.router.select_bias -w 400 "$S/bal1.h5" | sed -n '/DATA {/,/}/{/}/q;/DATA {/d;p}' | tr ',' '\n' |
    awk 'NF { n++; v = $1 / 0.01; k = int(v + (v < 0 ? -0.5 : 0.5));
              if ((v - k) ^ 2 > 1e-6 || k % 2 == 0 || k > 5 || k < -5) bad = bad " " $1 }
         END { if (n != 4 || bad != "") { print "select_bias:" bad " (" n " values)"; exit 1 } }' ||
    fail "router_bias_update: the selection biases are not odd multiples of 0.01 up to 0.05 after 5 steps"
pass "router_bias_update: each bias moved 0.01 a step against its load; 1 rank = 2 ranks (zero3, accumulation)"

# shellcheck disable=SC2086
expect_fail "model.experts_per_token must be 1..model.experts" t "$ACCEL_TRAIN" $model model.experts_per_token=5
# shellcheck disable=SC2086
expect_fail "model.shared_expert_ffn needs model.experts" t "$ACCEL_TRAIN" $model model.experts=0 model.shared_expert_ffn=8
expect_fail "gpt: model.experts is a llama key" t "$ACCEL_TRAIN" model.name=gpt model.experts=4 data.path=synthetic
# shellcheck disable=SC2086
expect_fail "model.router_groups must divide model.experts" t "$ACCEL_TRAIN" $model model.router_groups=3
# shellcheck disable=SC2086
expect_fail "model.experts_per_token exceeds the experts of model.router_topk_groups groups" \
    t "$ACCEL_TRAIN" $model model.router_groups=2 model.experts_per_token=3 model.router_scores=sigmoid
# shellcheck disable=SC2086
expect_fail "model.router_aux_loss is the softmax router's load-balancing loss" \
    t "$ACCEL_TRAIN" $model model.router_scores=sigmoid model.router_aux_loss=0.01
# shellcheck disable=SC2086
expect_fail "model.dense_layers must leave a block with experts" t "$ACCEL_TRAIN" $model model.dense_layers=2
# shellcheck disable=SC2086
expect_fail "model.router_scores (and the other model.router_* keys, model.dense_layers) shape a mixture of experts" \
    t "$ACCEL_TRAIN" $model model.experts=0 model.router_scale=2
# shellcheck disable=SC2086
expect_fail "optim.router_bias_update=0.01 moves the selection biases of DeepSeek-V3's routing, which this model has not" \
    t "$ACCEL_TRAIN" $model optim.router_bias_update=0.01
# shellcheck disable=SC2086
expect_fail "model.shared_expert_gate is false, which shapes the shared expert" t "$ACCEL_TRAIN" $model model.shared_expert_gate=false
# A dense first block beside softmax routing is DeepSeek-V2's, not a model transformers loads without MLA.
train dense_soft 1 model.dense_layers=1 train.steps=2 ckpt.dir="$S/ds"
expect_fail "Glm4MoeForCausalLM: sigmoid scores with the selection bias" \
    t "$CKPT" export "$S/ds/$(cat "$S/ds/latest")" --format hf --output "$S/hf4"
pass "bad mixture-of-experts keys refused"

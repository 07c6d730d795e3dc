#!/bin/sh
# model.name=llama end to end with accel_train, as the GPT's tests do it (equality with Hugging Face
# is tests/llama_unit.sh):
#  - 1, 2 and 4 ranks, every strategy (ddp, zero1-3, hybrid zero on two pretend nodes) and gradient
#    accumulation give the same fp32 loss trajectory within 1e-5 relative over 40 steps, for a
#    grouped-query Llama with an untied head and q/k/v biases; the distributed evaluation agrees;
#  - bf16 and fp16 stay within 2% of fp32; the loss falls;
#  - a checkpoint saved by 4 ranks with zero3 resumes on 2 ranks with ddp on the same trajectory;
#  - generation from the checkpoint gives the same text with and without the KV cache, resident
#    and with half the layers streamed from disk;
#  - configurations that cannot work are refused naming the key.
. "${top_srcdir:-.}/tests/lib.sh"
make_scratch
S=$SCRATCH
args="model.name=llama data.path=synthetic model.layers=3 model.width=32 model.heads=4 model.kv_heads=2
      model.ffn_width=40 model.context=16 model.tie_embeddings=false model.attention_bias=true
      model.rope_theta=5000 model.rms_eps=1e-6 train.steps=40 train.global_batch=8 seed=5
      optim.lr=0.01 train.sample_tokens=0 data.eval_samples=24 log.level=warn"
train() { # NAME NP ARGS...
    name=$1; np=$2; shift 2
    run_mpi $np "$ACCEL_TRAIN" $args train.metrics="$S/$name.jsonl" "$@" > "$S/$name.out" 2>&1 \
        || fail "$name: $(tail -5 "$S/$name.out")"
}
compare() { res=$(compare_losses "$S/$1.jsonl" "$S/$2.jsonl" ${3:-1e-5} 40) || fail "$2 differs from $1: $res"; }
eval_loss() { sed -n 's/.*"eval_loss": \([^,}]*\).*/\1/p' "$S/$1.jsonl" | tail -1; }

train ddp 1
for np in 2 4; do train "ddp-$np" $np; compare ddp "ddp-$np"; done
for s in zero1 zero2 zero3; do train "$s" 4 dist.strategy=$s; compare ddp "$s"; done
train hybrid 4 dist.strategy=zero3 dist.hybrid=true dist.fake_nodes=2
compare ddp hybrid
for s in ddp zero3; do train "accum-$s" 2 dist.strategy=$s train.grad_accum=2; compare ddp "accum-$s"; done
e1=$(eval_loss ddp) e4=$(eval_loss ddp-4)
[ -n "$e1" ] && awk -v a="$e1" -v b="$e4" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-5 * a) }' ||
    fail "held-out loss on 1 rank ($e1) and 4 ranks ($e4) differ"
first=$(grep -m1 '"kind": "train"' "$S/ddp.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(grep '"step": 40, "kind": "train"' "$S/ddp.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
awk -v f="$first" -v l="$last" 'BEGIN { exit !(l < f - 1.0) }' || fail "llama did not learn: $first -> $last"
pass "llama: 1/2/4 ranks, ddp/zero1/zero2/zero3/hybrid and grad_accum agree; loss $first -> $last, held-out $e1"

for p in bf16 fp16; do train "$p" 2 precision=$p; compare ddp "$p" 0.02; done
pass "llama: bf16 and fp16 within 2% of fp32"

# Checkpoint: 4 ranks zero3, stopped at step 13, resumed by 2 ranks ddp.
train e1 4 dist.strategy=zero3 ckpt.dir="$S/ck" debug.stop_step=13
train e1b 2 ckpt.dir="$S/ck" resume=auto log.level=info
grep -q "saved by 4 ranks with zero3" "$S/e1b.out" || fail "resume did not report the saving world: $(cat "$S/e1b.out")"
cat "$S/e1.jsonl" "$S/e1b.jsonl" > "$S/elastic.jsonl"
compare ddp elastic
"$top_builddir/accel_ckpt" verify "$S/ck/latest" >/dev/null 2>&1 ||
    "$top_builddir/accel_ckpt" verify "$S/ck/$(cat "$S/ck/latest")" >/dev/null || fail "the checkpoint does not verify"
pass "llama: 4 ranks zero3 -> 2 ranks ddp resumes on the uninterrupted trajectory"

# Generation: KV cache or not, resident or streamed, the same greedy text (past the context too).
G="$top_builddir/accel_generate"
gen() { "$G" "$S/ck" --prompt "ab" -n 40 -q "$@" 2>"$S/gen.err" || fail "accel_generate $*: $(cat "$S/gen.err")"; }
ref=$(gen --no-kv-cache)
[ "$(gen)" = "$ref" ] || fail "the KV cache changes the generated text"
[ "$(gen --device-map '0-1=cpu,*=disk')" = "$ref" ] || fail "streamed layers change the generated text"
[ "$(gen --device-map '0-1=cpu,*=disk' --no-kv-cache)" = "$ref" ] || fail "streamed, no cache: different text"
pass "llama: generation equal with and without the KV cache, resident and streamed"

# Configurations that cannot work, refused naming the key.
expect_fail "model.kv_heads" "$ACCEL_TRAIN" $args model.kv_heads=3
expect_fail "model.heads" "$ACCEL_TRAIN" $args model.width=36 model.heads=4 model.kv_heads=1
expect_fail "model.width=30 is not divisible by model.heads=4" "$ACCEL_TRAIN" $args model.width=30
expect_fail "model.rope_high_freq_factor" "$ACCEL_TRAIN" $args model.rope_scaling=llama3 model.rope_high_freq_factor=0.5
expect_fail "model.rms_eps" "$ACCEL_TRAIN" $args model.rms_eps=0
expect_fail "expected one of none|llama3|yarn" "$ACCEL_TRAIN" $args model.rope_scaling=dynamic
# Latent attention: every head its own key and value, value heads no wider than the heads, its
# companion keys only with it, no q/k/v biases.
expect_fail "model.kv_heads must be model.heads (or 0) with model.kv_lora_rank" "$ACCEL_TRAIN" $args model.kv_lora_rank=8
expect_fail "model.v_head_dim must be at most the head size" "$ACCEL_TRAIN" $args model.kv_heads=0 \
    model.attention_bias=false model.kv_lora_rank=8 model.v_head_dim=12
expect_fail "model.q_lora_rank shapes latent attention: set model.kv_lora_rank" "$ACCEL_TRAIN" $args model.q_lora_rank=8
expect_fail "model.kv_lora_rank (latent attention) takes no attention biases" "$ACCEL_TRAIN" $args model.kv_heads=0 \
    model.kv_lora_rank=8 model.attention_bias=true
expect_fail "gpt: model.kv_lora_rank is a llama key" "$ACCEL_TRAIN" model.name=gpt model.kv_lora_rank=8
# LongRoPE: one factor for each pair RoPE turns, both lists, and only with rope_scaling=longrope.
expect_fail "model.rope_short_factor must hold one number for each pair of values RoPE turns in a head, 4" \
    "$ACCEL_TRAIN" $args model.rope_scaling=longrope model.rope_short_factor=1,2 model.rope_long_factor=1,2,3,4
expect_fail "model.rope_long_factor must hold one number for each pair of values RoPE turns in a head, 3 (model.rope_dim / 2" \
    "$ACCEL_TRAIN" $args model.rope_scaling=longrope model.rope_dim=6 model.rope_short_factor=1,2,3
expect_fail "model.rope_long_factor is LongRoPE's: it needs model.rope_scaling=longrope" "$ACCEL_TRAIN" $args model.rope_long_factor=1,2,3,4
expect_fail "model.rope_attention_factor scales model.rope_scaling=yarn or longrope only" "$ACCEL_TRAIN" $args \
    model.rope_scaling=llama3 model.rope_attention_factor=1.2
expect_fail "configuration key 'model.rope_short_factor' expects a list of numbers" "$ACCEL_TRAIN" $args model.rope_short_factor=1,,2
expect_fail "gpt: model.rope_short_factor is a llama key" "$ACCEL_TRAIN" model.name=gpt model.rope_short_factor=1
expect_fail "model.router_group_score scores the groups of model.router_groups > 1" "$ACCEL_TRAIN" $args \
    model.experts=4 model.experts_per_token=2 model.router_group_score=max
expect_fail "expected one of top2|max" "$ACCEL_TRAIN" $args model.router_group_score=sum
expect_fail "model.qk_norm_after_rope places the q/k norms: it needs model.qk_norm=true" "$ACCEL_TRAIN" $args \
    model.qk_norm_after_rope=true
expect_fail "gpt: model.qk_norm_after_rope is a llama key" "$ACCEL_TRAIN" model.name=gpt model.qk_norm_after_rope=true
expect_fail "model.query_scale_beta needs model.query_scale_context" "$ACCEL_TRAIN" $args model.query_scale_beta=0.1
expect_fail "model.query_scale_context is the period of model.query_scale_beta's steps" "$ACCEL_TRAIN" $args \
    model.query_scale_context=8
expect_fail "gpt: model.query_scale_beta is a llama key" "$ACCEL_TRAIN" model.name=gpt model.query_scale_beta=0.1 \
    model.query_scale_context=8
expect_fail "gpt: model.kv_heads is a llama key" "$ACCEL_TRAIN" model.name=gpt model.kv_heads=2
expect_fail "gpt: model.tie_embeddings is a llama key" "$ACCEL_TRAIN" model.name=gpt model.tie_embeddings=false
expect_fail "model.qk_norm_scope is all, which needs model.qk_norm=true" "$ACCEL_TRAIN" $args model.qk_norm_scope=all
expect_fail "gpt: model.sliding_window is a llama key" "$ACCEL_TRAIN" model.name=gpt model.sliding_window=8
expect_fail "gpt: model.norm_position is a llama key" "$ACCEL_TRAIN" model.name=gpt model.norm_position=post
expect_fail "model.sliding_window_pattern needs model.sliding_window" "$ACCEL_TRAIN" $args model.sliding_window_pattern=4
expect_fail "model.sliding_rope is plain, which needs model.sliding_window" "$ACCEL_TRAIN" $args model.sliding_rope=plain
expect_fail "expected one of scaled|plain" "$ACCEL_TRAIN" $args model.sliding_window=4 model.sliding_rope=none
expect_fail "gpt: model.sliding_window_pattern is a llama key" "$ACCEL_TRAIN" model.name=gpt model.sliding_window_pattern=2
expect_fail "gpt: model.no_rope_pattern is a llama key" "$ACCEL_TRAIN" model.name=gpt model.no_rope_pattern=4
expect_fail "gpt: model.activation is a llama key" "$ACCEL_TRAIN" model.name=gpt model.activation=gelu_tanh
expect_fail "gpt: model.norm_unit_offset is a llama key" "$ACCEL_TRAIN" model.name=gpt model.norm_unit_offset=true
expect_fail "gpt: model.logit_softcap is a llama key" "$ACCEL_TRAIN" model.name=gpt model.logit_softcap=30
expect_fail "gpt: model.residual_multiplier is a llama key" "$ACCEL_TRAIN" model.name=gpt model.residual_multiplier=0.2
expect_fail "model.attention_multiplier and model.query_pre_attn_scalar both set the score scale" "$ACCEL_TRAIN" $args model.attention_multiplier=0.1 model.query_pre_attn_scalar=8
expect_fail "expected one of pre|post|both" "$ACCEL_TRAIN" $args model.norm_position=sandwich
expect_fail "expected one of silu|gelu_tanh" "$ACCEL_TRAIN" $args model.activation=relu
expect_fail "model.sliding_rope_theta needs model.sliding_rope=plain" "$ACCEL_TRAIN" $args model.sliding_window=4 model.sliding_rope_theta=100
expect_fail "model.experts are SwiGLU experts with norms before or after them" "$ACCEL_TRAIN" $args model.experts=4 model.experts_per_token=2 model.norm_position=both
expect_fail "model.embed_scale" "$ACCEL_TRAIN" $args model.embed_scale=0
expect_fail "gpt: model.attention_sinks is a llama key" "$ACCEL_TRAIN" model.name=gpt model.attention_sinks=true
expect_fail "gpt: model.expert_bias is a llama key" "$ACCEL_TRAIN" model.name=gpt model.expert_bias=true
expect_fail "gpt: model.swiglu_limit is a llama key" "$ACCEL_TRAIN" model.name=gpt model.swiglu_limit=3
expect_fail "model.expert_bias needs model.experts" "$ACCEL_TRAIN" $args model.expert_bias=true
expect_fail "model.swiglu_alpha and model.swiglu_limit shape model.activation=clamped_swiglu" "$ACCEL_TRAIN" $args model.swiglu_limit=3
expect_fail "model.rope_truncate is false, which shapes model.rope_scaling=yarn only" "$ACCEL_TRAIN" $args model.rope_truncate=false
expect_fail "model.attention_out_bias and model.residual_multiplier together" "$ACCEL_TRAIN" $args model.attention_out_bias=true model.residual_multiplier=0.5
expect_fail "model.swiglu_limit" "$ACCEL_TRAIN" $args model.activation=clamped_swiglu model.swiglu_limit=0
pass "llama: impossible configurations refused naming the key"

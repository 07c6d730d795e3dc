#!/bin/sh
# Training speed of accel_train against PyTorch on this machine, same model, same step, same run.
#   sh bench/train_speed.sh                       (from the top of a built tree) the GPT
#   BENCH_MODEL=llama sh bench/train_speed.sh     the Llama against transformers' LlamaForCausalLM
#   BENCH_MODEL=qwen3 sh bench/train_speed.sh     Qwen3's attention against Qwen3ForCausalLM
#   BENCH_MODEL=mixtral sh bench/train_speed.sh   the Llama's mixture of experts against MixtralForCausalLM
#   BENCH_MODEL=gemma3 sh bench/train_speed.sh    Gemma 3's blocks against Gemma3ForCausalLM
#   BENCH_MODEL=gpt_oss sh bench/train_speed.sh   gpt-oss's blocks against GptOssForCausalLM
#   BENCH_MODEL=glm4_moe sh bench/train_speed.sh  GLM-4.5's blocks against Glm4MoeForCausalLM
#   BENCH_MODEL=qwen3_5 sh bench/train_speed.sh   Qwen3.5's blocks against Qwen3_5ForCausalLM
#   BENCH_MODEL=lfm2 sh bench/train_speed.sh      LFM2's blocks against Lfm2ForCausalLM
#   BENCH_MODEL=lfm3 sh bench/train_speed.sh      LFM3's blocks against Lfm3ForCausalLM
#   BENCH_MODEL=granite4_h sh bench/train_speed.sh  Granite 4.0-H's against GraniteMoeHybridForCausalLM
#   BENCH_MODEL=nemotron_h sh bench/train_speed.sh  Nemotron-H's against NemotronHForCausalLM
#   BENCH_MODEL=llama4 sh bench/train_speed.sh    Llama 4's blocks against Llama4ForCausalLM
#   BENCH_MODEL=olmo_hybrid sh bench/train_speed.sh  OLMo Hybrid's against OlmoHybridForCausalLM
#   BENCH_MODEL=apertus sh bench/train_speed.sh   Apertus's blocks against ApertusForCausalLM
#   BENCH_MODEL=mamba sh bench/train_speed.sh     Mamba's blocks against MambaForCausalLM
#   BENCH_ROUNDS=5 BENCH_STEPS=60 sh bench/train_speed.sh
# gpt (the issue's shape): 4 layers, 4 heads, width 256, context 128, byte vocabulary; the peer is
# bench/gpt_torch.py (the same GPT written in PyTorch).
# llama: 4 layers, width 256, 4 heads, 2 key/value heads (grouped-query attention), SwiGLU width
# 688, context 128, byte vocabulary, tied LM head, RoPE base 10000, RMSNorm eps 1e-5, no biases; the
# peer is bench/llama_torch.py (transformers' LlamaForCausalLM).
# qwen3: the llama with Qwen3's attention: head_dim 128 (q and the attention output 512 wide over a
# width of 256, Qwen3-0.6B's 2:1), q/k RMSNorm per head; peer: Qwen3ForCausalLM (llama_torch.py
# --head-dim 128 --qk-norm).
# mixtral: the llama with each block's MLP a sparse mixture of 8 SwiGLU experts of width 344, 2 per
# token (top-2 of a bias-free linear router's softmax, the two weights renormalized to sum to 1), so
# that a token's active MLP (2 x 344) computes as much as the dense llama's 688; load-balancing loss
# with coefficient 0.02 (Mixtral fine-tuned with output_router_logits), added to the loss each rank
# optimizes over its micro-batch; peer: MixtralForCausalLM (llama_torch.py --experts 8
# --experts-per-token 2 --router-aux-loss 0.02) with transformers' grouped_mm experts (the fastest
# of its experts implementations on this CPU, fp32 and bf16: see llama_torch.py).
# gemma3: the qwen3 shape (heads of 128, per-head q/k norms) with Gemma 3's blocks: 1 + weight norms
# before and after attention and the MLP, GeGLU, embeddings times sqrt(width), scores by
# 1/sqrt(query_pre_attn_scalar 128), layers 1 and 3 of 4 sliding over 64 keys of the 128 with
# plain RoPE of base 10000, layers 2 and 4 full with base 1e6; peer: Gemma3ForCausalLM
# (llama_torch.py --gemma3 with --head-dim 128).
# glm4_moe: the mixtral shape with GLM-4.5's blocks: 8 experts of 344 in 4 groups, each token's 2
# from its best 2 groups by sigmoid score plus the selection bias, weights renormalized and scaled
# by 2.5, two ungated shared experts (one SwiGLU of 688), layer 1 a dense SwiGLU of 688, per-head
# q/k norms, q/k/v biases, RoPE on half of each head, untied head, no load-balancing loss; peer:
# Glm4MoeForCausalLM (llama_torch.py --glm4-moe) with grouped_mm experts.
# qwen3_5: the llama shape with Qwen3.5's blocks: layers 1-3 gated delta-nets (4 key heads, 8 value
# heads, heads of 64, a convolution of 4), layer 4 attention over heads of 64 with its output gate,
# per-head q/k norms, RoPE on a quarter of each head, 1 + weight norms; peer: Qwen3_5ForCausalLM
# (llama_torch.py --qwen3-5: transformers' chunked PyTorch delta-nets). Its FLOPs per token add the
# delta-nets' recurrence, 18 key x value dims a value head (state decay and update, S^T k, S^T q:
# about 6 forward, twice that backward) in place of attention's 6 L C T on those layers.
# lfm2: the llama shape with LFM2's blocks: layers 1, 2 and 4 gated short convolutions of width 3
# (in: b|c|x, the convolution, out), layer 3 attention with per-head q/k norms; peer:
# Lfm2ForCausalLM (llama_torch.py --lfm2: transformers' PyTorch convolutions). Its FLOPs per token
# count 6 K C for each convolution layer in place of attention's 6 C T.
# lfm3: the llama shape with LFM3's blocks: layers 1 and 4 gated short convolutions of width 7,
# layer 2 attention sliding over 64 keys (plain RoPE at 1e4), layer 3 full attention (proportional
# RoPE on half of each head's pairs at 1e6), 4 heads of 64, a sigmoid gate per head, per-head q/k
# norms, norms after every sublayer; peer: Lfm3ForCausalLM (llama_torch.py --lfm3).
# granite4_h: the llama shape with Granite 4.0-H's blocks: layers 1, 2 and 4 Mamba-2 (8 heads of 64,
# a state of 64, one group, a convolution of 4 with its bias), layer 3 attention without RoPE, the
# SwiGLU MLP of 688 (its shared MLP, no experts); peer: GraniteMoeHybridForCausalLM (llama_torch.py
# --granite4-h: transformers' PyTorch chunked scan). FLOPs per token count 18 state x head values a
# head for each Mamba-2 layer, as for the delta-nets.
# nemotron_h: the llama width with Nemotron-H's layers of one mixer, 8 of them: M - M - * - M -
# (Mamba-2 as granite4_h's, squared-ReLU MLPs of 1032: two matrices as wide as the llama's SwiGLU
# of 688, attention without RoPE), an untied head; peer: NemotronHForCausalLM (llama_torch.py
# --nemotron-h). FLOPs per token: one attention layer, three Mamba-2 ones.
# llama4: the llama shape with Llama 4's blocks: layers 2 and 4 without RoPE (whole context, the
# query temperature over steps of 32), layers 1 and 3 in chunks of 64 with unweighted q/k norms;
# layers 2 and 4 8 experts of 344, one a token, its input scaled by its sigmoid score, beside a
# shared expert of 344 (a token's active MLP as wide as the llama's), layers 1 and 3 a dense SwiGLU
# of 688, an untied head; peer: Llama4ForCausalLM (llama_torch.py --llama4), whose experts run
# every token. FLOPs per token count the active parameters and attention over the whole context.
# olmo_hybrid: the qwen3_5 shape with OLMo Hybrid's blocks: layers 1-3 gated delta-nets (4 key heads,
# 8 value heads, heads of 64, a convolution of 4, beta up to 2) with norms before them, layer 4
# attention with OLMo 2's norms after it and whole-projection q/k norms, an untied head; peer:
# OlmoHybridForCausalLM (llama_torch.py --olmo-hybrid). FLOPs per token as qwen3_5's.
# apertus: the llama shape with Apertus's blocks: per-head q/k norms, the plain MLP up -> xIELU ->
# down of 1032 (two matrices as wide as the llama's SwiGLU of 688, as Apertus-8B's 21504 beside
# Llama 3 8B's 14336), each layer's xIELU alphas trained, an untied head; peer: ApertusForCausalLM
# (llama_torch.py --apertus).
# mamba: 8 layers of Mamba's blocks at width 256 (a norm and a Mamba-1 mixer of 512 channels, a
# state of 16, a convolution of 4, dt rank 16), tied; peer: MambaForCausalLM (llama_torch.py
# --mamba: transformers' PyTorch scan, token by token: its runs time BENCH_PEER_STEPS, default 3,
# steps after 1). FLOPs per token: 6N + 18 I N a layer for the recurrence.
# All: micro-batch 8 per rank, 2 ranks, AdamW, gradient clipping to 1.0; accel: mpirun -np 2
# accel_train on synthetic tokens, one thread per rank; PyTorch: DistributedDataParallel over gloo,
# 2 processes, torch.set_num_threads(1), fp32 and bf16 autocast, each in three variants: eager with
# the attention written out (manual), eager with scaled_dot_product_attention (sdpa), and sdpa under
# torch.compile (compile). Prints the CPU and the flags that matter (AVX-512, AVX512-BF16, AMX),
# which implementation oneDNN runs for accel's products (ONEDNN_VERBOSE on a short run), tokens/s,
# achieved GFLOP/s (6N + 6LCT FLOPs per token: N parameters, for mixtral the active ones as accel's
# trainer counts them, all but E-K experts per layer; causal attention), the share of this
# machine's measured single-core sgemm peak (per rank; bf16 can exceed 100%), and the ratio of
# accel's median to the best PyTorch variant's median, for fp32 and bf16 (targets: fp32 1.5x; bf16
# 2x with AMX, 1.5x with AVX512-BF16 only).
# The eight runs of a round (accel and the three PyTorch variants, fp32 and bf16) are interleaved in
# BENCH_ROUNDS rounds (default 3) after a discarded warm-up run of each, and the ratios are taken
# between medians: a shared or virtual machine drifts by 10% and more from one minute to the next.
# On a CPU without native bf16 products (no avx512_bf16 or AMX: oneDNN's bf16 is unsupported there)
# PyTorch's bf16 GEMMs fall back to a slow path and a step takes seconds; its bf16 runs then time
# BENCH_SLOW_STEPS (8) steps after 2 warm-up steps so that a run stays within minutes.
#
# Python: the virtual environment bench/.venv at the top of the tree (VENV=path to use another;
# tests/make_llama_fixtures.sh makes the same one). When it is missing it is created with
# python3 -m venv and torch + transformers from PyPI (the Linux torch wheel from PyPI is large: its
# CUDA libraries come along; no other index is needed). BENCH_NO_TORCH=1 skips the reference.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
make -s bench/gemm_peak >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
MODEL=${BENCH_MODEL:-gpt}
L=4 H=4 KV=2 C=256 F=688 T=128 V=256 MICRO=8 RANKS=2 STEPS=${BENCH_STEPS:-40} WARM=5 SLOW_STEPS=${BENCH_SLOW_STEPS:-8} ROUNDS=${BENCH_ROUNDS:-3}
PEER_STEPS=${BENCH_PEER_STEPS:-}     # the peer's timed steps (after 1 warm-up) where its step takes seconds
HS=$((C / H)) NA=
case $MODEL in
gpt)    # wte + wpe + per layer qkv, proj, fc, fc-proj with biases and two LayerNorms + the final one
        N=$(( V*C + T*C + L*(12*C*C + 13*C) + 2*C ))
        model_args="model.name=gpt model.layers=$L model.heads=$H model.width=$C model.context=$T model.vocab=$V"
        peer_script=bench/gpt_torch.py
        peer_args="--layers $L --heads $H --width $C --context $T"
        shape="GPT: $L layers, $H heads, width $C, context $T, vocab $V" ;;
llama)  # embeddings (tied head) + per layer q, k, v, o, gate, up, down and two RMSNorms + the final one
        N=$(( V*C + L*(2*C*C + 2*C*KV*HS + 3*C*F + 2*C) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$F model.context=$T model.vocab=$V model.rope_theta=10000 model.rms_eps=1e-5
            model.tie_embeddings=true model.attention_bias=false"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V"
        shape="Llama: $L layers, $H heads, $KV kv heads, width $C, ffn $F, context $T, vocab $V, tied head" ;;
qwen3)  # as llama, with q and o over H x HD and k, v over KV x HD, plus two HD-wide norms per layer
        HD=128
        N=$(( V*C + L*(2*C*H*HD + 2*C*KV*HD + 3*C*F + 2*C + 2*HD) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.head_dim=$HD model.qk_norm=true model.ffn_width=$F model.context=$T model.vocab=$V
            model.rope_theta=10000 model.rms_eps=1e-5 model.tie_embeddings=true model.attention_bias=false"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V --head-dim $HD --qk-norm"
        shape="Qwen3-style: $L layers, $H heads of $HD, $KV kv heads, width $C, ffn $F, context $T, vocab $V, tied head" ;;
mixtral) # as llama with E experts of gate, up, down (F = one expert's width) and an E x C router per layer
        E=8 K=2 AUX=0.02 F=344
        N=$(( V*C + L*(2*C*C + 2*C*KV*HS + E*3*C*F + E*C + 2*C) + C ))
        NA=$(( N - L*(E - K)*3*F*C ))   # active: the E-K experts a token skips (src/train/flops.c)
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$F model.experts=$E model.experts_per_token=$K model.router_norm_topk=true
            model.router_aux_loss=$AUX model.context=$T model.vocab=$V model.rope_theta=10000
            model.rms_eps=1e-5 model.tie_embeddings=true model.attention_bias=false"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V
            --experts $E --experts-per-token $K --router-aux-loss $AUX --experts-impl grouped_mm"
        shape="Mixtral-style: $L layers, $H heads, $KV kv heads, width $C, $E experts of ffn $F, top-$K, router aux loss $AUX, context $T, vocab $V, tied head" ;;
gemma3) # as qwen3, with two more C-wide norms per layer (after attention and after the MLP)
        HD=128 WIN=64
        N=$(( V*C + L*(2*C*H*HD + 2*C*KV*HD + 3*C*F + 4*C + 2*HD) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.head_dim=$HD model.qk_norm=true model.ffn_width=$F model.context=$T model.vocab=$V
            model.rms_eps=1e-6 model.tie_embeddings=true model.norm_position=both model.norm_unit_offset=true
            model.activation=gelu_tanh model.embed_scale=16 model.sliding_window=$WIN
            model.sliding_window_pattern=2 model.sliding_rope=plain model.sliding_rope_theta=10000
            model.rope_theta=1000000"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V --head-dim $HD
            --gemma3 --sliding-window $WIN --rms-eps 1e-6"
        shape="Gemma3-style: $L layers, $H heads of $HD, $KV kv heads, width $C, GeGLU ffn $F, layers 1, 3 sliding over $WIN keys, context $T, vocab $V, tied head" ;;
gpt_oss) # as mixtral untied, with q/k/v/o biases, a sink per head, biased router and experts
        E=8 K=2 F=344 WIN=64
        N=$(( 2*V*C + L*(2*C*C + 2*C*KV*HS + 2*C + 2*KV*HS + H + E*3*C*F + E*C + E + E*2*F + E*C + 2*C) + C ))
        NA=$(( N - L*(E - K)*3*F*C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$F model.experts=$E model.experts_per_token=$K model.router_norm_topk=true
            model.expert_bias=true model.activation=clamped_swiglu model.attention_bias=true
            model.attention_out_bias=true model.attention_sinks=true model.sliding_window=$WIN
            model.sliding_window_pattern=2 model.rope_scaling=yarn model.rope_factor=32
            model.rope_original_context=4096 model.rope_truncate=false model.rope_theta=150000
            model.context=$T model.vocab=$V model.rms_eps=1e-5 model.tie_embeddings=false"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V
            --experts $E --experts-per-token $K --experts-impl grouped_mm --gpt-oss --sliding-window $WIN"
        shape="gpt-oss-style: $L layers, $H heads, $KV kv heads, width $C, sinks, q/k/v/o biases, layers 1, 3 sliding over $WIN keys, $E biased experts of clamped SwiGLU ffn $F, top-$K, context $T, vocab $V, untied head" ;;
glm4_moe) # untied; per layer attention with q/k/v biases and per-head q/k norms; layer 1 dense, the
        # others a router, its selection bias, E experts and the shared ones (S wide)
        E=8 K=2 F=344 S=688 FD=688
        N=$(( 2*V*C + C + L*(2*C*C + 2*C*KV*HS + C + 2*KV*HS + 2*HS + 2*C) + 3*C*FD
              + (L - 1)*(E*C + E + E*3*C*F + 3*C*S) ))
        NA=$(( N - (L - 1)*(E - K)*3*F*C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$F model.experts=$E model.experts_per_token=$K model.router_norm_topk=true
            model.router_scores=sigmoid model.router_select_bias=true model.router_groups=4
            model.router_topk_groups=2 model.router_scale=2.5 model.shared_expert_ffn=$S
            model.shared_expert_gate=false model.dense_layers=1 model.dense_ffn_width=$FD
            model.qk_norm=true model.attention_bias=true model.rope_dim=$((HS / 2))
            model.context=$T model.vocab=$V model.rope_theta=10000 model.rms_eps=1e-5 model.tie_embeddings=false"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V
            --experts $E --experts-per-token $K --experts-impl grouped_mm --glm4-moe"
        shape="GLM-4.5-style: $L layers, $H heads, $KV kv heads, width $C, q/k norms, q/k/v biases, half-head RoPE, layer 1 dense ffn $FD, then $E experts of ffn $F in 4 groups, top-$K from 2 groups by sigmoid + selection bias, scale 2.5, 2 shared experts, context $T, vocab $V, untied head" ;;
qwen3_5) # tied; 3 delta-net layers (in: q|k|v|z|b|a, the convolution, dt_bias, A_log, the gated norm,
        # out) and 1 attention layer (q and its gate, k, v, o, q/k norms), each with two norms and SwiGLU
        HD=64 HK=4 HV=8 CK=4
        CWD=$(( 2*HK*HD + HV*HD ))
        LIN=$(( (CWD + HV*HD + 2*HV)*C + CWD*CK + 2*HV + HD + C*HV*HD ))
        ATTN=$(( 2*C*H*HD + 2*C*KV*HD + C*H*HD + 2*HD ))
        N=$(( V*C + 3*LIN + ATTN + L*(3*C*F + 2*C) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.head_dim=$HD model.qk_norm=true model.ffn_width=$F model.context=$T model.vocab=$V
            model.rope_theta=10000 model.rms_eps=1e-6 model.tie_embeddings=true model.norm_unit_offset=true
            model.attention_output_gate=true model.rope_dim=$((HD / 4)) model.linear_attention_pattern=4
            model.linear_key_heads=$HK model.linear_value_heads=$HV model.linear_key_dim=$HD model.linear_value_dim=$HD"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V --head-dim $HD
            --qwen3-5 --linear-heads $HK --rms-eps 1e-6"
        shape="Qwen3.5-style: $L layers (3 gated delta-nets of $HK key / $HV value heads of $HD, 1 gated attention of $H heads of $HD, $KV kv heads), width $C, ffn $F, context $T, vocab $V, tied head" ;;
lfm2)   # tied; 3 convolution layers (in [3C, C], the convolution [C, K], out [C, C]) and 1 attention
        # layer (q, k, v, o, q/k norms), each with two norms and SwiGLU
        CK=3
        N=$(( V*C + 3*(4*C*C + C*CK) + (2*C*C + 2*C*KV*HS + 2*HS) + L*(3*C*F + 2*C) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.qk_norm=true model.ffn_width=$F model.context=$T model.vocab=$V model.rope_theta=10000
            model.rms_eps=1e-5 model.tie_embeddings=true model.short_conv_kernel=$CK model.attention_layers=2"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V --lfm2"
        shape="LFM2-style: $L layers (3 gated short convolutions of width $CK, layer 3 attention of $H heads, $KV kv heads, q/k norms), width $C, ffn $F, context $T, vocab $V, tied head" ;;
lfm3)   # tied; 2 convolution layers, 2 attention layers (q, k, v, o over heads of HD, the head gate,
        # q/k norms), each with four norms and SwiGLU
        CK=7 HD=64 WIN=64
        N=$(( V*C + 2*(4*C*C + C*CK) + 2*(2*C*H*HD + 2*C*KV*HD + H*C + 2*HD) + L*(3*C*F + 4*C) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.head_dim=$HD model.qk_norm=true model.ffn_width=$F model.context=$T model.vocab=$V
            model.rms_eps=1e-5 model.tie_embeddings=true model.short_conv_kernel=$CK model.attention_layers=1,2
            model.norm_position=both model.attention_head_gate=true model.sliding_window=$WIN
            model.sliding_layers=1 model.sliding_rope=plain model.sliding_rope_theta=10000
            model.rope_scaling=proportional model.rope_proportion=0.5 model.rope_theta=1000000"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V --head-dim $HD
            --sliding-window $WIN --lfm3"
        shape="LFM3-style: $L layers (convolutions of width $CK on 1 and 4, attention of $H heads of $HD, $KV kv heads, sliding over $WIN keys on 2, full on 3, head gates, sandwich norms), width $C, ffn $F, context $T, vocab $V, tied head" ;;
granite4_h) # tied; 3 Mamba-2 layers (in: z|x|B|C|dt, the convolution and its bias, dt_bias, A_log, D,
        # the gated norm, out), 1 attention layer (q, k, v, o), each with two norms and SwiGLU
        MH=8 MN=64
        MI=$((2 * C)) MCW=$((2 * C + 2 * MN))
        MAMBA=$(( (MI + MCW + MH)*C + MCW*4 + MCW + 3*MH + MI + C*MI ))
        N=$(( V*C + 3*MAMBA + 2*C*C + 2*C*KV*HS + L*(3*C*F + 2*C) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$F model.context=$T model.vocab=$V model.rms_eps=1e-6 model.tie_embeddings=true
            model.mamba_heads=$MH model.mamba_state=$MN model.attention_layers=2 model.no_rope_pattern=1"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V --rms-eps 1e-6
            --granite4-h --mamba-heads $MH --mamba-state $MN"
        shape="Granite-4.0-H-style: $L layers (Mamba-2 on 1, 2, 4: $MH heads of $((MI / MH)), state $MN; attention without RoPE on 3, $H heads, $KV kv heads), width $C, ffn $F, context $T, vocab $V, tied head" ;;
nemotron_h) # untied; 8 layers of one mixer: 3 Mamba-2 (as granite4_h's), 1 attention, 4 plain MLPs
        MH=8 MN=64 NL=8 NF=1032
        MI=$((2 * C)) MCW=$((2 * C + 2 * MN))
        MAMBA=$(( (MI + MCW + MH)*C + MCW*4 + MCW + 3*MH + MI + C*MI ))
        N=$(( 2*V*C + 3*MAMBA + 2*C*C + 2*C*KV*HS + 4*2*C*NF + NL*C + C ))
        model_args="model.name=llama model.layers=$NL model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$NF model.context=$T model.vocab=$V model.rms_eps=1e-5 model.tie_embeddings=false
            model.mamba_heads=$MH model.mamba_state=$MN model.attention_layers=4 model.no_rope_pattern=1
            model.mlp=plain model.activation=relu2 model.mixer_only_layers=0,2,4,6 model.mlp_only_layers=1,3,5,7"
        peer_script=bench/llama_torch.py
        peer_args="--layers $NL --heads $H --kv-heads $KV --width $C --ffn $NF --context $T --vocab $V --rms-eps 1e-5
            --nemotron-h --mamba-heads $MH --mamba-state $MN"
        shape="Nemotron-H-style: $NL layers of one mixer (M - M - * - M -: Mamba-2 $MH heads of $((MI / MH)), state $MN; relu2 MLPs of $NF; attention without RoPE, $H heads, $KV kv heads), width $C, context $T, vocab $V, untied head" ;;
llama4) # untied; per layer attention (q, k, v, o) and two norms; layers 1, 3 a dense SwiGLU (FD),
        # layers 2, 4 a router, E experts and the shared one (S wide)
        E=8 K=1 F=344 S=344 FD=688 WIN=64
        N=$(( 2*V*C + C + L*(2*C*C + 2*C*KV*HS + 2*C) + 2*3*C*FD + 2*(E*C + E*3*C*F + 3*C*S) ))
        NA=$(( N - 2*(E - K)*3*F*C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$F model.experts=$E model.experts_per_token=$K model.router_scores=sigmoid
            model.router_norm_topk=false model.expert_input_scaled=true model.expert_layers=1,3
            model.shared_expert_ffn=$S model.shared_expert_gate=false model.dense_ffn_width=$FD
            model.no_rope_pattern=2 model.qk_norm=true model.qk_norm_weights=false model.qk_norm_after_rope=true
            model.qk_norm_layers=rope model.sliding_window=$WIN model.sliding_window_pattern=2
            model.sliding_chunked=true model.query_scale_beta=0.1 model.query_scale_context=32
            model.query_scale_offset=1 model.query_scale_layers=no_rope model.rope_theta=500000
            model.context=$T model.vocab=$V model.rms_eps=1e-5 model.tie_embeddings=false"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V
            --experts $E --experts-per-token $K --sliding-window $WIN --llama4"
        shape="Llama-4-style: $L layers, $H heads, $KV kv heads, width $C, layers 2, 4 without RoPE (temperature), 1, 3 in chunks of $WIN with unweighted q/k norms; layers 2, 4 $E experts of ffn $F, top-$K scaling their input, a shared expert of $S; layers 1, 3 dense ffn $FD; context $T, vocab $V, untied head" ;;
olmo_hybrid) # untied; 3 delta-net layers (q, k, v, g, a, b, the convolution, dt_bias, A_log, the gated
        # norm, o) and 1 attention layer (q, k, v, o, whole-projection q/k norms), each with two norms and SwiGLU
        HD=64 HK=4 HV=8 CK=4
        CWD=$(( 2*HK*HD + HV*HD ))
        LIN=$(( (CWD + HV*HD + 2*HV)*C + CWD*CK + 2*HV + HD + C*HV*HD ))
        ATTN=$(( 2*C*C + 2*C*KV*HS + C + KV*HS ))
        N=$(( 2*V*C + 3*LIN + ATTN + L*(3*C*F + 2*C) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$F model.context=$T model.vocab=$V model.rope_theta=10000 model.rms_eps=1e-6
            model.tie_embeddings=false model.qk_norm=true model.qk_norm_scope=all model.norm_position=post
            model.linear_attention_pattern=4 model.linear_key_heads=$HK model.linear_value_heads=$HV
            model.linear_key_dim=$HD model.linear_value_dim=$HD model.linear_allow_neg_eigval=true
            model.linear_norm_eps=1e-5"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $F --context $T --vocab $V --head-dim $HD
            --olmo-hybrid --linear-heads $HK --rms-eps 1e-6"
        shape="OLMo-Hybrid-style: $L layers (3 gated delta-nets of $HK key / $HV value heads of $HD, norms before; 1 attention of $H heads, $KV kv heads, OLMo 2's norms after), width $C, ffn $F, context $T, vocab $V, untied head" ;;
apertus) # untied; per layer q, k, v, o, two per-head q/k norms, up, down, the 4 xIELU values, two norms
        FP=1032
        N=$(( 2*V*C + L*(2*C*C + 2*C*KV*HS + 2*HS + 2*C*FP + 4 + 2*C) + C ))
        model_args="model.name=llama model.layers=$L model.heads=$H model.kv_heads=$KV model.width=$C
            model.ffn_width=$FP model.mlp=plain model.activation=xielu model.qk_norm=true model.context=$T
            model.vocab=$V model.rope_theta=10000 model.rms_eps=1e-5 model.tie_embeddings=false
            model.attention_bias=false"
        peer_script=bench/llama_torch.py
        peer_args="--layers $L --heads $H --kv-heads $KV --width $C --ffn $FP --context $T --vocab $V --apertus"
        shape="Apertus-style: $L layers, $H heads, $KV kv heads, per-head q/k norms, width $C, plain xIELU ffn $FP, context $T, vocab $V, untied head" ;;
mamba)  # tied; per layer in [2I, C], conv [I, 4] + bias, x_proj [R + 2N, I], dt_proj [I, R] + bias, A_log
        # [I, N], D [I], out [C, I], the norm; the final norm
        NL=8 MI=$((2 * C)) MN=16 MR=$(( (C + 15) / 16 ))
        N=$(( V*C + NL*(2*MI*C + 5*MI + (MR + 2*MN)*MI + MI*MR + MI + MI*MN + MI + C*MI + C) + C ))
        model_args="model.name=llama model.layers=$NL model.heads=1 model.width=$C model.context=$T model.vocab=$V
            model.rms_eps=1e-5 model.tie_embeddings=true model.mamba1_width=$MI model.mamba_state=$MN
            model.mixer_only_layers=$(seq -s, 0 $((NL - 1)))"
        peer_script=bench/llama_torch.py
        peer_args="--layers $NL --width $C --context $T --vocab $V --rms-eps 1e-5 --mamba --mamba-state $MN"
        PEER_STEPS=${PEER_STEPS:-3}     # transformers' scan runs token by token in Python: seconds a step
        shape="Mamba-style: $NL layers of a Mamba-1 mixer ($MI channels, state $MN, dt rank $MR), width $C, context $T, vocab $V, tied head" ;;
*)      echo "BENCH_MODEL must be gpt, llama, qwen3, mixtral, gemma3, gpt_oss, glm4_moe, qwen3_5, lfm2, lfm3, granite4_h, nemotron_h, llama4, olmo_hybrid, apertus or mamba (got '$MODEL')" >&2; exit 2 ;;
esac
NA=${NA:-$N}    # the parameters a token's products use (all of them but in a mixture of experts)
ATT=$C
case $MODEL in qwen3|gemma3) ATT=$((H * HD)) ;; esac     # the attention FLOPs count heads x head_dim
FLOP_TOKEN=$(( 6*NA + 6*L*ATT*T ))
[ "$MODEL" = qwen3_5 ] && FLOP_TOKEN=$(( 6*NA + 6*H*HD*T + 3*18*HV*HD*HD ))     # 1 attention, 3 delta-net layers
[ "$MODEL" = olmo_hybrid ] && FLOP_TOKEN=$(( 6*NA + 6*C*T + 3*18*HV*HD*HD ))     # 1 attention (width C), 3 delta-nets
[ "$MODEL" = lfm2 ] && FLOP_TOKEN=$(( 6*NA + 6*C*T + 3*6*CK*C ))                 # 1 attention, 3 convolution layers
[ "$MODEL" = lfm3 ] && FLOP_TOKEN=$(( 6*NA + 2*6*H*HD*T + 2*6*CK*C ))            # 2 attention, 2 convolution layers
[ "$MODEL" = granite4_h ] && FLOP_TOKEN=$(( 6*NA + 6*C*T + 3*18*MH*MN*(MI / MH) ))  # 1 attention, 3 Mamba-2 layers
[ "$MODEL" = nemotron_h ] && FLOP_TOKEN=$(( 6*NA + 6*C*T + 3*18*MH*MN*(MI / MH) ))  # the same mixers
[ "$MODEL" = mamba ] && FLOP_TOKEN=$(( 6*NA + NL*18*MI*MN ))                        # no attention; 8 Mamba-1 layers
peak=$(OMP_NUM_THREADS=1 ./bench/gemm_peak)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
fam=$(lscpu | sed -n 's/^CPU family: *//p' | head -n 1)
mod=$(lscpu | sed -n 's/^Model: *//p' | head -n 1)
flags=$(lscpu | sed -n 's/^Flags: *//p' | tr ' ' '\n' | grep -E '^(avx2|fma|f16c|avx_vnni|avx512.*|amx.*)$' | tr '\n' ' ')
case "$flags" in *avx512*) ;; *) flags="$flags(no AVX-512)" ;; esac
case "$flags" in *amx*) ;; *) flags="$flags (no AMX)" ;; esac
echo "CPU: $cpu (family $fam model $mod), $(nproc) cores; flags: $flags"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$shape:"
echo "  N = $N parameters$([ "$NA" = "$N" ] || echo " ($NA active per token)"), $FLOP_TOKEN FLOP/token; micro-batch $MICRO x $RANKS ranks, $STEPS timed steps after $WARM"
echo "machine: single-core sgemm peak $peak GFLOP/s (best size and library)"
versions=$(./accel env)     # accel env also starts MPI: run it once
echo "accel products: $(echo "$versions" | sed -n 's/^BLAS *//p'); oneDNN $(echo "$versions" | sed -n 's/^oneDNN *//p')"

report() { # NAME TOKENS_PER_S
    awk -v n="$1" -v tps="$2" -v f="$FLOP_TOKEN" -v p="$peak" -v r="$RANKS" 'BEGIN {
        g = tps * f / 1e9; printf "%-30s %12.0f %12.1f %13.0f%%\n", n, tps, g, 100 * g / r / p }'
}
accel_tps() { # PRECISION
    timeout 600 mpirun -np $RANKS ./accel_train $model_args data.path=synthetic data.eval_samples=16 threads=1 \
        train.global_batch=$((MICRO*RANKS)) train.steps=$((STEPS+WARM)) train.sample_tokens=0 train.clip=1 \
        optim.name=adamw precision=$1 log.level=warn train.metrics="$out/$1.jsonl" >/dev/null
    awk -v w=$WARM -v tok=$((MICRO*RANKS*T)) '
        /"kind": "train"/ { s = $0; sub(/.*"time": /, "", s); sub(/[,}].*/, "", s); t[++n] = s + 0 }
        END { printf "%.0f", (n - w) * tok / (t[n] - t[w]) }' "$out/$1.jsonl"
}
median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
torch_tps() { # PRECISION VARIANT
    s=$STEPS w=$WARM
    # without native bf16 GEMMs (avx512_bf16/AMX) PyTorch's bf16 steps take seconds: fewer of them
    if [ "$1" = bf16 ] && [ "$torch_bf16" = False ] && [ "$s" -gt "$SLOW_STEPS" ]; then s=$SLOW_STEPS w=2; fi
    if [ -n "$PEER_STEPS" ]; then s=$PEER_STEPS w=1; fi
    line=$(OMP_NUM_THREADS=1 timeout 900 "$py" $peer_script --ranks $RANKS $peer_args \
           --micro $MICRO --steps $s --warmup $w --precision $1 --variant $2 2>"$out/torch.err") || {
        echo "pytorch run failed:" >&2; tail -n 20 "$out/torch.err" >&2; exit 1; }
    echo "$line" >"$out/torch.$1.$2.line"
    echo "$line" | sed 's/.*: \([0-9]*\) tokens.*/\1/'
}
# Which implementation oneDNN runs for accel's bf16 products (its verbose mode, a short run of one
# rank; train.peak_tflops skips the start-up peak measurement): kind, implementation, data types,
# and how many calls of 2 steps used it. ACCEL_BF16_GEMM
# (empty: the automatic choice) picks the path.
onednn_impls() { # ACCEL_BF16_GEMM value
    ACCEL_BF16_GEMM=$1 ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 timeout 300 ./accel_train $model_args \
        data.path=synthetic data.eval_samples=0 threads=1 train.global_batch=$MICRO train.steps=2 \
        train.sample_tokens=0 train.peak_tflops=1 precision=bf16 log.level=warn 2>/dev/null |
        awk -F, '/^(onednn|dnnl)_verbose,exec,/ { n[$4 " " $5 " " $7]++ }
                 END { for (k in n) printf "    %s (%d calls in 2 steps)\n", k, n[k] }' | sort
}

torch=no torch_bf16=True
venv=${VENV:-"$top/bench/.venv"}
py="$venv/bin/python"
if [ "${BENCH_NO_TORCH:-0}" != 1 ]; then
    if ! "$py" -c 'import torch, transformers' 2>/dev/null; then
        echo "creating/filling the virtual environment $venv (torch, transformers from PyPI)"
        { [ -x "$py" ] || python3 -m venv "$venv"; } &&
            "$py" -m pip install -q torch transformers || echo "pip install failed"
    fi
    if "$py" -c 'import torch, transformers' 2>/dev/null; then
        torch=yes
        echo "peer: $("$py" -c 'import torch, transformers; print("torch", torch.__version__, "transformers",
            transformers.__version__, "- cpu capability", torch.backends.cpu.get_cpu_capability())')"
        torch_bf16=$("$py" -c 'import torch; print(torch.ops.mkldnn._is_mkldnn_bf16_supported())' 2>/dev/null || echo True)
        if [ "$torch_bf16" = False ]; then
            echo "peer: no native bf16 GEMM on this CPU (oneDNN bf16 unsupported): PyTorch's bf16 runs time $SLOW_STEPS steps after 2"
        fi
    else
        echo "pytorch: not available in $venv - reference skipped"
    fi
fi

VARIANTS="manual sdpa compile"
echo "accel's bf16 $(echo "$versions" | sed -n 's/^bf16 products *//p')"
echo "  fp32 products: oneDNN's sgemm for the large ones (its BLAS-like API, which its verbose mode does not list), OpenBLAS for the rest"
case "$versions" in *"bf16 products"*onednn*)
    echo "  oneDNN's implementations for the bf16 step on the onednn path (verbose):"
    impls=$(onednn_impls onednn)
    if [ -n "$impls" ]; then echo "$impls"; else echo "    (no oneDNN verbose output)"; fi ;;
esac

# warm-up, discarded: page cache, oneDNN's kernel cache, Python's imports, torch.compile's cache
STEPS_SAVED=$STEPS; STEPS=5; accel_tps fp32 >/dev/null
[ $torch = no ] || for v in $VARIANTS; do torch_tps fp32 $v >/dev/null; torch_tps bf16 $v >/dev/null; done
STEPS=$STEPS_SAVED
printf '%-30s %12s %12s %14s\n' "run" "tokens/s" "GFLOP/s" "of core peak"
A32= A16=
for v in $VARIANTS; do eval "T32_$v= T16_$v="; done
r=1
while [ $r -le "$ROUNDS" ]; do
    for p in fp32 bf16; do
        x=$(accel_tps $p)
        if [ $p = fp32 ]; then A32="$A32 $x"; else A16="$A16 $x"; fi
        report "round $r accel $p" "$x"
        [ $torch = yes ] || continue
        for v in $VARIANTS; do
            x=$(torch_tps $p $v); report "round $r pytorch $p $v" "$x"
            if [ $p = fp32 ]; then eval "T32_$v=\"\$T32_$v $x\""; else eval "T16_$v=\"\$T16_$v $x\""; fi
        done
    done
    r=$((r + 1))
done
[ $torch = no ] || { echo "last pytorch lines:"; cat "$out"/torch.*.line | sed 's/^/  /'; }
echo "median of $ROUNDS rounds (load average now: $(cut -d' ' -f1-3 /proc/loadavg)):"
a32=$(echo $A32 | median); a16=$(echo $A16 | median)
report "accel fp32" "$a32"
report "accel bf16" "$a16"
if [ $torch = yes ]; then
    # the best PyTorch variant of each precision, by median
    best() { # fp32|bf16: reports each variant's median (stderr); prints "variant median rounds..."
        for v in $VARIANTS; do
            eval "l=\$T${1#??}_$v"; m=$(echo $l | median)
            report "pytorch $1 $v" "$m" >&2
            echo "$v $m $l"
        done | sort -k2,2n | tail -n 1
    }
    set -- $(best fp32 2>"$out/best32"); cat "$out/best32"; v32=$1 t32=$2; shift 2; T32=$*
    set -- $(best bf16 2>"$out/best16"); cat "$out/best16"; v16=$1 t16=$2; shift 2; T16=$*
    ratios() { # ACCEL_LIST TORCH_LIST: the per-round ratios, lowest and highest
        echo "$1|$2" | awk -F'|' '{ n = split($1, a, " "); split($2, b, " "); lo = 1e9; hi = 0
            for (i = 1; i <= n; i++) { q = a[i] / b[i]; if (q < lo) lo = q; if (q > hi) hi = q }
            printf "%.2f-%.2fx", lo, hi }'
    }
    case "$flags" in *amx*) t16_target=2 ;; *avx512_bf16*) t16_target=1.5 ;; *) t16_target="none (no native bf16)" ;; esac
    awk -v a="$a32" -v t="$t32" -v b="$a16" -v u="$t16" -v r32="$(ratios "$A32" "$T32")" \
        -v r16="$(ratios "$A16" "$T16")" -v v32="$v32" -v v16="$v16" -v g16="$t16_target" 'BEGIN {
        printf "accel / best pytorch (medians): fp32 %.2fx against %s (rounds %s; target 1.5x), bf16 %.2fx against %s (rounds %s; target %s%s)\n",
               a / t, v32, r32, b / u, v16, r16, g16, g16 ~ /^[0-9]/ ? "x" : "" }'
fi

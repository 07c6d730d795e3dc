#!/bin/sh
# Hugging Face interchange end to end (docs/huggingface.md), on the committed fixtures
# tests/fixtures/hf/<name>/ (tiny random GPT-2, Llama GQA/untied, Mistral, Qwen2 with biases, Qwen3
# with q/k norms and head_dim apart from the width, Llama with llama3 RoPE scaling, a sharded save,
# a bf16 save, Qwen3 in fine-grained FP8, Ministral 3 in per-tensor FP8, the mixtures of experts, Phi-3, Phi-3.5 and Phi-4-mini with LongRoPE, EXAONE 4,
# DeepSeek-V3, Moonlight and DeepSeek-V2-Lite with latent attention (and V2's group-limited routing), Mistral Small 4 and GLM-4.7-Flash
# (latent attention, softmax or GLM-4.5's experts), ERNIE 4.5 dense and MoE (interleaved RoPE pairs;
# softmax routing with a selection bias), HunYuan dense (q/k norms after RoPE, NTK alpha), Ministral 3
# with the query temperature, alone and
# in a Mistral3ForConditionalGeneration beside a vision tower, OLMo 2, OLMo 3 with its sliding layers, SmolLM3
# with a layer without RoPE, Granite, Gemma, Gemma 2, Gemma 3, Gemma 3 with a vision tower, gpt-oss
# dense and with MXFP4 experts, Llama with q/k/v/o biases, Seed-OSS with an o bias alone, GLM and
# GLM-4 with RoPE on part of each head, Granite MoE, GLM-4.5's experts with DeepSeek-V3's routing
# and a multi-token prediction block, dots.llm1 (the same experts under Qwen3's attention),
# MiniMax-M2, K-EXAONE, Solar Open, Mellum, Youtu-LLM, Helium, InternLM3, IQuest-Coder, Ministral 8B,
# StarCoder2, Nemotron, Jais 2 and StableLM (LayerNorms), Arcee (AFM: relu2 under RMSNorms), GPT-NeoX
# (Pythia: q, k, v fused by head, attention and the MLP side by side; and one after the other),
# Cohere and Cohere 2 (Command R, Aya, Command R7B: LayerNorms without biases, SwiGLU beside attention),
# Phi-1/1.5/2 and GPT-J (the MLP beside attention through one norm, a bias on the LM head),
# Qwen3.5 (gated delta-net layers and gated attention), alone, with Qwen3.5-MoE's experts and in a
# Qwen3_5ForConditionalGeneration beside a vision tower and an MTP block, Qwen3-Next (its fused,
# grouped input projections; an MTP block), Apertus (xIELU), Mamba, Falcon Mamba and Jamba (Mamba-1),
# and the language models of Qwen2.5-VL, Qwen3-VL, Qwen3-VL-MoE and GLM-4.5V, a Llama in compressed-tensors'
# INT8 (W8A16), FP8 (by channel, tensor, block), W8A8 INT8 and NVFP4; made by tests/make_hf_fixtures.sh, which
# also recorded transformers' fp32 logits and loss on fixed tokens). No Python here:
#   1. accel_ckpt import of each fixture; accel's logits equal HF's within 1e-5, the loss within 1e-6 (plus two
#      float32 ulps of transformers' loss)
#      (the imported file, and the fixture directory read directly);
#   2. export --format hf of the import reproduces the fixture's tensors exactly (names, shapes,
#      values) and its config.json architecture fields;
#   3. accel_generate runs on the hdf5, safetensors and hf exports and the fixture with no model keys;
#   4. train.init_from (fixture directory and imported file; 1, 2 and 4 ranks; ddp, zero3): step 0,
#      first loss = the imported model's loss on that batch, the loss falls; a contradicting model key
#      is refused; resume wins over init_from;
#   5. bad input is refused with a message: unsupported architecture, missing tensor, wrong shape,
#      truncated file, out-of-range offsets, a missing shard, unsupported settings.
. "${top_srcdir:-.}/tests/lib.sh"
CKPT="$top_builddir/accel_ckpt"
GEN="$top_builddir/accel_generate"
CMP="$top_builddir/tests/hf_compare"
FIX="$top_srcdir/tests/fixtures/hf"
[ -x "$CMP" ] && [ -x "$top_builddir/tests/check_hf" ] || fail "$CMP or tests/check_hf is not built (make check builds them)"
HDF5_USE_FILE_LOCKING=FALSE
export HDF5_USE_FILE_LOCKING
make_scratch
cd "$SCRATCH" || fail "no scratch"
# The modules alone (Check): safetensors round trips and refusals, the HF table against the models.
TMPDIR="$SCRATCH" timeout -k 10 "$TEST_TIMEOUT" "$top_builddir/tests/check_hf" || fail "check_hf"
pass "check_hf"

# ---------------------------------------------------------------- 1, 2: import, logits, export
for dir in "$FIX"/*/; do
    name=$(basename "$dir")
    "$CKPT" import "$dir" -o "$name.h5" > import.log 2>&1 || { cat import.log; fail "import $name"; }
    rm -f "$name.logits"
    "$GEN" "$name.h5" -q --score "$dir/tokens.bin" --logits-out "$name.logits" > /dev/null 2>gen.err ||
        { cat gen.err; fail "accel_generate on the import of $name"; }
    "$CMP" logits "$dir" "$name.logits" || fail "$name: logits/loss differ from transformers"
    rm -f "$name.dir.logits"
    "$GEN" "$dir" -q --score "$dir/tokens.bin" --logits-out "$name.dir.logits" > /dev/null 2>gen.err ||
        { cat gen.err; fail "accel_generate on the fixture directory $name"; }
    "$CMP" logits "$dir" "$name.dir.logits" || fail "$name: logits from the HF directory differ"
    "$CKPT" export "$name.h5" --format hf --output "$name.hf" > /dev/null || fail "export --format hf of $name"
    # Phi-3's fused tensors go out under Mistral's names, Gemma 3's language model without its
    # vision tower as Gemma3ForCausalLM (Ministral 3's as Ministral3ForCausalLM, Qwen3-VL's as
    # Qwen3ForCausalLM, Qwen3-VL-MoE's as Qwen3MoeForCausalLM, Qwen2.5-VL's as Qwen2ForCausalLM,
    # GLM-4.5V's as Glm4MoeForCausalLM without its MTP block, GLM-4.1V's as Glm4ForCausalLM), gpt-oss's MXFP4
    # experts widened, GLM-4.5, DeepSeek-V3 and K-EXAONE without their multi-token prediction blocks, dots.llm1
    # and Solar Open as the GLM-4.5 they equal (GLM-4.7-Flash as the DeepSeek-V3 it equals, ERNIE 4.5 as the Llama
    # it equals: its RoPE pairs in rotate-half order, Helium alike as the Qwen2 its q, k, v biases
    # make it; InternLM3 and IQuest-Coder as the Llama they are; HunYuan with its NTK alpha folded
    # into rope_theta, HunYuan-MoE alike), Moonlight's
    # RoPE pairs interleaved (DeepSeek-V3's default), Qwen3-FP8's weights dequantized, LFM2's MLP
    # width as Lfm2MLP made it (block_auto_adjust_ff_dim false), LFM2-VL's and LFM3-VL's language models
    # without their vision towers, Nemotron 3 Super's kind without its MTP block, Llama 4's language
    # model without its vision tower, CWM as the Ministral it equals (Mistral's blocks, layer_types),
    # EXAONE 3.5 as the Llama it is, EXAONE 4.5's, Granite Vision 4's, SmolVLM's, Idefics3's and
    # Granite-Docling's language models without their vision towers, Kimi K2 Thinking's INT4 experts
    # dequantized (and Kimi K2.5's language model with them), GLM-OCR's as GLM-4 without its MTP block:
    # the same model, its logits
    case $name in phi3) as=MistralForCausalLM ;; gemma3_vl) as=Gemma3ForCausalLM ;; gpt_oss_mxfp4) as=GptOssForCausalLM ;;
                  glm4_moe|dots1|solar_open) as=Glm4MoeForCausalLM ;; deepseek_v3|moonlight|glm4_moe_lite|kimi_k2_int4|kimi_k25) as=DeepseekV3ForCausalLM ;;
                  ministral3_vl|ministral3_fp8) as=Ministral3ForCausalLM ;; ernie4_5) as=LlamaForCausalLM ;;
                  hunyuan_dense) as=HunYuanDenseV1ForCausalLM ;; hunyuan_moe) as=HunYuanMoEV1ForCausalLM ;;
                  internlm3|iquestcoder) as=LlamaForCausalLM ;; helium) as=Qwen2ForCausalLM ;;
                  exaone_moe) as=ExaoneMoeForCausalLM ;; mellum) as=MellumForCausalLM ;;
                  qwen3_vl) as=Qwen3ForCausalLM ;; qwen3_vl_moe) as=Qwen3MoeForCausalLM ;;
                  qwen2_5_vl) as=Qwen2ForCausalLM ;; glm4v_moe) as=Glm4MoeForCausalLM ;; glm4v|glm_ocr) as=Glm4ForCausalLM ;;
                  qwen3_fp8) as=Qwen3ForCausalLM ;; qwen3_5_vl) as=Qwen3_5ForCausalLM ;; qwen3_next) as=Qwen3NextForCausalLM ;;
                  lfm2|lfm2_vl) as=Lfm2ForCausalLM ;; lfm3|lfm3_vl) as=Lfm3ForCausalLM ;;
                  nemotron_h_latent) as=NemotronHForCausalLM ;; llama4_vl) as=Llama4ForCausalLM ;;
                  cwm) as=MinistralForCausalLM ;; exaone) as=LlamaForCausalLM ;;
                  exaone4_5_vl) as=Exaone4ForCausalLM ;; granite4_vision|granite_docling) as=GraniteForCausalLM ;;
                  smolvlm|idefics3|llama_w8a16|llama_fp8_*|llama_w8a8|llama_nvfp4) as=LlamaForCausalLM ;;
                  *) as= ;; esac
    if [ -n "$as" ]; then
        grep -q "\"$as\"" "$name.hf/config.json" || fail "$name: not exported as the $as it equals"
        rm -f "$name.hf.logits"
        "$GEN" "$name.hf" -q --score "$dir/tokens.bin" --logits-out "$name.hf.logits" > /dev/null 2>gen.err ||
            { cat gen.err; fail "accel_generate on the export of $name"; }
        "$CMP" logits "$dir" "$name.hf.logits" || fail "$name: the export's logits differ"
    else
        "$CMP" tensors "$dir" "$name.hf" || fail "$name: the hf export does not reproduce the fixture's tensors"
        "$CMP" config "$dir/config.json" "$name.hf/config.json" || fail "$name: config.json differs"
    fi
    pass "$name: import, logits and loss equal to transformers, hf export reproduces the fixture"
done
# accel estimate-memory plans for train.init_from's model, as accel_train takes it (Phi-4-mini's
# fixture: 256 x 32 tied embeddings, 2 blocks of 6,208, the final norm's 32), and refuses a model
# key that contradicts it.
"$ACCEL" estimate-memory "train.init_from=$FIX/phi4_mini" --world 1 > est.out 2>&1 || { cat est.out; fail "estimate-memory with init_from"; }
grep -q "^model llama: 20640 parameters" est.out || { cat est.out; fail "estimate-memory did not plan for train.init_from's model"; }
expect_fail "model.width=64 contradicts train.init_from=$FIX/phi4_mini" "$ACCEL" estimate-memory \
    "train.init_from=$FIX/phi4_mini" model.width=64
pass "estimate-memory: train.init_from's model (20640 parameters), a contradicting key refused"
score() {   # OUT WEIGHTS FIXTURE [KEY=VALUE...]: accel's logits on the fixture's tokens into OUT
    out=$1 w=$2 fx=$3
    shift 3
    rm -f "$out"
    "$GEN" "$w" -q --score "$FIX/$fx/tokens.bin" --logits-out "$out" "$@" > /dev/null 2>gen.err ||
        { cat gen.err; fail "accel_generate $w $*"; }
}
needs() {   # FIXTURE KEY=VALUE...: each key, turned off, moves the import's logits off transformers'
    fx=$1
    shift
    for k in "$@"; do
        score needs.logits "$fx.h5" "$fx" "$k"
        "$CMP" logits "$FIX/$fx" needs.logits > /dev/null && fail "$fx: $k changes nothing"
    done
}
without() {  # TAG FIXTURE SED INFO: the fixture with SED deleting keys from its config.json imports
             # with INFO (a line of accel_ckpt info) in its configuration: the family's default
    rm -rf "$1" && cp -r "$FIX/$2" "$1" && sed -i "$3" "$1/config.json"
    cmp -s "$FIX/$2/config.json" "$1/config.json" && fail "$1: config.json not rewritten"
    "$CKPT" import "$1" -o "$1.h5" > /dev/null 2>&1 || fail "import of $2 without the key ($1)"
    "$CKPT" info "$1.h5" | grep -q "$4" || fail "$1: no '$4' in the imported configuration"
}
same() {    # DIR FIXTURE: another config.json of the fixture's model gives transformers' logits
    score same.logits "$1" "$2"
    "$CMP" logits "$FIX/$2" same.logits || fail "$1: logits differ from transformers' on $2"
}
hub_form() { # DIR FIXTURE SED GONE: the fixture with SED rewriting its config.json (GONE no longer
             # in it: the hub's older form of a key) gives transformers' logits
    rm -rf "$1" && cp -r "$FIX/$2" "$1" && sed -i "$3" "$1/config.json"
    grep -q "$4" "$1/config.json" && fail "$1: $4 still there"
    same "$1" "$2"
}
# Mistral v0.1's sliding window (4 keys of 16; without it 5 apart), YaRN (factor 4 over an original
# context of 4; without it 2 apart): the fixtures' logits need them.
needs mistral_sw model.sliding_window=0
needs qwen3_yarn model.rope_scaling=none
pass "mistral_sw, qwen3_yarn: transformers' logits need the sliding window and YaRN"
# StarCoder2's window, Nemotron's 1 + weight LayerNorms and half-head RoPE, Arcee's squared ReLU
# and YaRN, StableLM's quarter-head RoPE: the fixtures' logits need each.
needs starcoder2 model.sliding_window=0
needs nemotron model.norm_unit_offset=false model.rope_dim=0
needs arcee model.activation=gelu_tanh model.rope_scaling=none
needs stablelm model.rope_dim=0
pass "starcoder2, nemotron, arcee, stablelm: transformers' logits need the window, LayerNorm1P, partial RoPE, relu2, YaRN"
# GPT-NeoX: the fixture's logits need the MLP beside attention, the exact GELU and RoPE on a quarter
# of each head; Pythia's config.json (transformers 4's rotary_pct and rotary_emb_base, no
# rope_parameters) gives the same.
needs gpt_neox model.parallel_block=none model.activation=gelu_tanh model.rope_dim=0
hub_form pythia_hub gpt_neox '/"rope_parameters": {/,/^  },/c\
  "rotary_emb_base": 10000, "rotary_pct": 0.25,' rope_parameters
pass "gpt_neox: transformers' logits need the parallel blocks, the exact GELU and the partial RoPE; Pythia's config.json gives the same"
# Cohere: the logits need logit_scale; Cohere 2's its window pattern and its full layers without
# RoPE; Command R7B's config.json (transformers 4's sliding_window_pattern, no layer_types) gives the same.
needs cohere model.logits_scaling=1
needs cohere2 model.no_rope_pattern=0 model.sliding_window_pattern=0 model.logits_scaling=1
hub_form r7b_hub cohere2 '/"layer_types": \[/,/^  \],/c\
  "sliding_window_pattern": 4,' layer_types
pass "cohere, cohere2: transformers' logits need logit_scale, the window pattern and the NoPE full layers; Command R7B's config.json gives the same"
# Phi and GPT-J: the logits need their partial RoPE (GPT-J's pairs interleaved in its files).
needs phi model.rope_dim=0
needs gptj model.rope_dim=0
pass "phi, gptj: transformers' logits need the partial RoPE"
# Qwen3.5: the logits need the quarter-head RoPE and the norms by 1 + weight (but the delta-nets'
# gated ones, which are not: tests/check_gpt.c's gradients and hf_roundtrip.py check those); a
# config.json with full_attention_interval instead of layer_types gives the same.
needs qwen3_5 model.rope_dim=0 model.norm_unit_offset=false
hub_form q35_hub qwen3_5 '/"layer_types": \[/,/^  \],/c\
  "full_attention_interval": 4,' layer_types
pass "qwen3_5: transformers' logits need the partial RoPE and the 1 + weight norms; full_attention_interval gives the same"
# LFM2: the logits need its RoPE's theta (1e6 by default); the hub's config.json of LFM2-1.2B
# (block_ff_dim, tie_embedding, full_attn_idxs without layer_types, a top-level rope_theta) gives
# the same.
needs lfm2 model.rope_theta=10000
needs lfm2_moe model.router_scale=1
needs lfm3 model.rope_proportion=1 model.sliding_rope_theta=1000000
hub_form lfm2_hub lfm2 's/"intermediate_size": 36/"block_ff_dim": 36/; s/"tie_word_embeddings": true/"tie_embedding": true/
/"layer_types": \[/,/^  \],/d
/"rope_parameters": {/,/^  },/c\
  "rope_theta": 1000000.0,' layer_types
grep -q '"block_ff_dim": 36' lfm2_hub/config.json && grep -q '"tie_embedding"' lfm2_hub/config.json ||
    fail "lfm2_hub: config.json not rewritten"
pass "lfm2, lfm2_moe: transformers' logits need the RoPE theta, the routed scale; LFM2-1.2B's config.json form gives the same"
# LFM3: the logits need its proportional RoPE on the full layers and the sliding ones' own theta; a
# config.json without layer_types and rope_parameters (Lfm3Config's defaults, the fixture's) gives
# the same.
hub_form lfm3_bare lfm3 '/"layer_types": \[/,/^  \],/d
/"rope_parameters": {/,/^  },/d' rope_parameters
pass "lfm3: transformers' logits need the proportional RoPE and the sliding theta; its defaults give the same"
# Granite 4.0-H: the logits need Granite's scalars and (the dense one) RoPE; the hub's config.json
# (layers_block_type with mamba / attention, a bare Infinity in time_step_limit as Python writes
# it) gives the same.
needs granite4_h model.residual_multiplier=1 model.embed_scale=1
needs granite4_h_dense model.no_rope_pattern=1
hub_form granite4_hub granite4_h '/"layer_types": \[/,/^  \],/c\
  "layers_block_type": ["mamba", "mamba", "attention", "mamba"],
/"time_step_limit": \[/,/^  \],/c\
  "time_step_limit": [0.0, Infinity],' '"layer_types"'
pass "granite4_h, granite4_h_dense: transformers' logits need the scalars and RoPE; the hub's config.json gives the same"
# Bamba: the logits need its RoPE on half of each head; a config.json as Python writes it (a bare
# Infinity in time_step_limit, mamba_d_head "auto") gives the same.
needs bamba model.rope_dim=0
hub_form bamba_hub bamba '/"time_step_limit": \[/,/^  \],/c\
  "time_step_limit": [0.0, Infinity],
s/"mamba_d_head": 16/"mamba_d_head": "auto"/' '"__float__"'
pass "bamba: transformers' logits need the partial RoPE; its config.json as Python writes it gives the same"
# Nemotron-H: the logits need its attention without RoPE and (Nemotron 3 Nano's kind) the routed
# scale; the hub's config.json (hybrid_override_pattern with num_hidden_layers, mamba_n_groups and
# mamba_conv_bias, a bare Infinity in time_step_limit) gives the same.
# OLMo Hybrid: transformers' logits need its delta-nets' beta up to 2, their gated norm's 1e-5 and
# OLMo 2's norms after its attention layer.
needs olmo_hybrid model.linear_allow_neg_eigval=false model.linear_norm_eps=0 model.norm_position=pre
pass "olmo_hybrid: transformers' logits need beta up to 2, the gated norm's epsilon and norms after attention"
needs flex_olmo model.norm_position=pre
pass "flex_olmo: transformers' logits need OLMo 2's norms after the sublayers under OLMoE's experts"
# Llama 4: transformers' logits need its chunks (8 of 16 positions), experts weighing their input,
# q/k norms on the RoPE layers only, the temperature's offset (positions counted from 1) and llama3
# RoPE; the hub's config.json (Scout's: attn_temperature_tuning 4, which Python takes as true; no
# layer_types or moe_layers: interleave_moe_layer_step says; no_rope_layers empty: the interval's)
# gives the same.
needs llama4 model.sliding_chunked=false model.expert_input_scaled=false model.qk_norm_layers=all \
    model.query_scale_offset=0 model.rope_scaling=none
hub_form llama4_hub llama4 's/"attn_temperature_tuning": true/"attn_temperature_tuning": 4/
/"layer_types": \[/,/^  \],/d
/"no_rope_layers": \[/,/^  \],/c\
  "no_rope_layers": [],
/"moe_layers": \[/,/^  \],/d' '"moe_layers"'
pass "llama4: transformers' logits need its chunks, input-weighed experts, q/k norms on RoPE layers, the temperature's offset; the hub's config.json gives the same"
# Scout's max_position_embeddings (10,485,760) is past accel's longest context: imported at
# 1,048,576 (said so), the same model at any context. accel_generate sizes a rotary model's context
# to what a run holds (its buffers at 1,048,576 positions would take terabytes), unless told.
rm -rf l4long && cp -r "$FIX/llama4" l4long &&
    sed -i 's/"max_position_embeddings": 16/"max_position_embeddings": 10485760/' l4long/config.json
"$CKPT" import l4long -o l4long.h5 > l4long.log 2>&1 || { cat l4long.log; fail "import of llama4 with Scout's context"; }
grep -q "past accel's longest context" l4long.log || { cat l4long.log; fail "l4long: the shorter context is not said"; }
"$CKPT" info l4long.h5 | grep -q "context: 1048576" || fail "l4long: not imported at model.context=1048576"
score l4long.logits l4long.h5 llama4
"$CMP" logits "$FIX/llama4" l4long.logits || fail "l4long: logits differ from transformers'"
"$GEN" l4long.h5 --prompt hello -n 6 --temperature 0 > l4gen.out 2> l4gen.err || { cat l4gen.err; fail "l4long: generation"; }
grep -q "context: 11 of the model's 1048576 positions" l4gen.err || { cat l4gen.err; fail "l4long: the run's context not said"; }
# Apertus: the logits need xIELU (its layer 1's beta and eps set apart in the fixture: read from the
# files) and Llama 3's RoPE scaling; the hub's config.json (transformers 4's rope_theta and
# rope_scaling) gives the same; without any, ApertusConfig's Llama 3 x8 at theta 12M; a
# hidden_act other than xielu is refused.
needs apertus model.activation=relu2 model.rope_scaling=none
# Falcon Mamba: the logits need its norms on dt, B and C; Mamba's config.json without
# time_step_rank gives its "auto" rank, ceil(32 / 16) = 2.
needs falcon_mamba model.mamba1_norms=none
needs jamba model.mamba1_norms=plain model.no_rope_pattern=0
without mamba_auto mamba '/"time_step_rank":/d' "mamba1_dt_rank: 2"
same mamba_auto mamba
pass "falcon_mamba, mamba, jamba: transformers' logits need Falcon Mamba's and Jamba's norms, Jamba's attention without positions; Mamba's auto dt rank"
hub_form apertus_hub apertus '/"rope_parameters": {/,/^  },/c\
  "rope_theta": 10000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8},' rope_parameters
without apertus_norope apertus '/"rope_parameters": {/,/^  },/d' "rope_theta: 12000000"
"$CKPT" info apertus_norope.h5 | grep -q "rope_original_context: 8192" || fail "apertus: not ApertusConfig's default RoPE"
pass "apertus: transformers' logits need xIELU and the RoPE scaling; the hub's config.json gives the same; ApertusConfig's default RoPE"
# CWM: the logits need its window on the layers layer_types names (not a pattern: listed by
# number) and Llama 3's RoPE scaling; without layer_types, CwmConfig's (the first of every 4
# full: the fixture's); without rope_parameters, CwmConfig's x16 over 8192 at theta 1M.
needs cwm model.sliding_layers=1,2 model.rope_scaling=none
without cwm_notypes cwm '/"layer_types": \[/,/\],/d' "sliding_layers: \[1, 2, 3\]"
same cwm_notypes cwm
without cwm_norope cwm '/"rope_parameters": {/,/^  },/d' "rope_original_context: 8192"
pass "cwm: transformers' logits need the listed sliding layers and the RoPE scaling; CwmConfig's layer types and RoPE"
# EXAONE 3.5: the hub's config.json (ExaoneForCausalLM, its code's key names) gives transformers'
# logits too; an activation other than silu is refused.
hub_form exaone_hub exaone 's/"LlamaForCausalLM"/"ExaoneForCausalLM"/; s/"num_hidden_layers"/"num_layers"/; s/"rms_norm_eps"/"layer_norm_epsilon"/; s/"hidden_act"/"activation_function"/' '"num_hidden_layers"'
rm -rf exaone_gelu && cp -r "$FIX/exaone" exaone_gelu && sed -i 's/"hidden_act": "silu"/"activation_function": "gelu"/' exaone_gelu/config.json
expect_fail "hidden_act = gelu: accel's Llama uses SwiGLU (silu)" "$CKPT" import exaone_gelu -o x.h5
pass "exaone: the hub's config.json gives transformers' logits; a GELU is refused"
# Granite SWA, Granite MoE SWA: the logits need the sinks, the sliding layers (GraniteSWAConfig's
# pattern listed by number) and the sliding layers' own RoPE base (layer_rope_theta); no RoPE
# (base 0) on every N-th layer imports as model.no_rope_pattern, on other layers it is refused.
# Granite MoE Shared: the logits need Granite's scalars on its shared MLP too.
needs granite_swa model.attention_sinks=false model.sliding_layers=1,2 model.sliding_rope_theta=0
needs granite_moe_swa model.attention_sinks=false model.sliding_window_pattern=0
needs granite_moe_shared model.residual_multiplier=1
rm -rf granite_nope && cp -r "$FIX/granite_swa" granite_nope
tac "$FIX/granite_swa/config.json" | sed '0,/^    100000\.0$/s//    0.0/' | tac > granite_nope/config.json
"$CKPT" import granite_nope -o granite_nope.h5 > /dev/null 2>&1 || fail "granite_swa with a layer without RoPE: import"
"$CKPT" info granite_nope.h5 | grep -q "no_rope_pattern: 5" || fail "granite_swa: layer 4's base 0 is not model.no_rope_pattern=5"
sed -i 's/^    100000\.0,$/    0.0,/' granite_nope/config.json
expect_fail "layers without RoPE are every model.no_rope_pattern-th" "$CKPT" import granite_nope -o x.h5
pass "granite_swa, granite_moe_swa, granite_moe_shared: transformers' logits need the sinks, sliding layers, RoPE bases and scalars; NoPE every N-th layer imported, elsewhere refused"
pass "llama4: Scout's 10,485,760 positions imported as accel's longest context, 1,048,576, said so; generation sized to the run"
needs nemotron_h model.no_rope_pattern=0
needs nemotron_h_moe model.router_scale=1 model.no_rope_pattern=0
hub_form nemotron_h_hub nemotron_h '/"layers_block_type": \[/,/^  \],/c\
  "hybrid_override_pattern": "M-M*-M", "num_hidden_layers": 6,
s/"n_groups": 2/"mamba_n_groups": 2/; s/"use_conv_bias": true/"mamba_conv_bias": true/
/"time_step_limit": \[/,/^  \],/c\
  "time_step_limit": [0.0, Infinity],' '"layers_block_type"'
pass "nemotron_h, nemotron_h_moe: transformers' logits need attention without RoPE and the routed scale; the hub's config.json gives the same"
# Nemotron 3 Super's kind: the experts in a latent; its MTP block (mtp.*) is left out, said so.
needs nemotron_h_latent model.router_scale=1
"$CKPT" import "$FIX/nemotron_h_latent" -o nemotron_h_mtp.h5 > import.log 2>&1 || { cat import.log; fail "import nemotron_h_latent"; }
grep -q "its multi-token prediction block(s) after layer 5 (5 tensors" import.log ||
    { cat import.log; fail "nemotron_h_latent: the MTP block is not reported as left out"; }
pass "nemotron_h_latent: transformers' logits need the routed scale; the MTP block left out"
# LongRoPE: Phi-3.5's 16 tokens fit its original context of 16 (the short factors), Phi-4-mini's
# pass its 8 (the long ones, on 6 of each head's 8 values): the fixtures' logits need those factors
# and the attention factor, and the other list changes nothing. The hub's config.json layout
# (rope_scaling with the lists alone, the original context at the top level, Phi-3's early type
# name "su") gives the same.
needs phi3_5 model.rope_short_factor=1,1,1,1 model.rope_attention_factor=1
needs phi4_mini model.rope_long_factor=1,1,1 model.rope_attention_factor=1
score lr.logits phi3_5.h5 phi3_5 model.rope_long_factor=7,7,7,7
"$CMP" logits "$FIX/phi3_5" lr.logits || fail "phi3_5: the long factors moved a sequence within the original context"
score lr.logits phi4_mini.h5 phi4_mini model.rope_short_factor=7,7,7
"$CMP" logits "$FIX/phi4_mini" lr.logits || fail "phi4_mini: the short factors moved a sequence past the original context"
rm -rf phi35_hub && cp -r "$FIX/phi3_5" phi35_hub
sed -i '/"rope_parameters": {/,/^  },/c\
  "rope_theta": 10000.0,\
  "rope_scaling": {"type": "su", "long_factor": [1.5, 3.0, 9.0, 30.0], "short_factor": [1.0, 1.25, 2.5, 6.0]},' phi35_hub/config.json
grep -q rope_parameters phi35_hub/config.json && fail "phi35_hub: rope_parameters still there"
same phi35_hub phi3_5
pass "phi3_5, phi4_mini: transformers' logits need LongRoPE's short or long factors (as the length chooses) and its attention factor; the hub's config.json layout gives the same"
# OLMo 3 (layers 0-2 slide over 4 keys with plain RoPE, layer 3 sees all 16 with YaRN): the
# fixture's logits need each part. The same model in transformers 4's config.json (a flat
# rope_scaling, the full-attention layers'; no layer_types: every 4th layer full) gives them too.
needs olmo3 model.sliding_rope=scaled model.sliding_window_pattern=0 model.rope_scaling=none
rm -rf olmo3_v4 && cp -r "$FIX/olmo3" olmo3_v4
sed -i '/"layer_types": \[/,/\],/d; /"rope_parameters": {/,/^  },/c\
  "rope_theta": 500000.0,\
  "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4},' olmo3_v4/config.json
grep -q layer_types olmo3_v4/config.json && fail "olmo3_v4: layer_types still there"
same olmo3_v4 olmo3
pass "olmo3: transformers' logits need the window pattern, the plain RoPE of the sliding layers and YaRN; transformers 4's config.json gives the same"
# SmolLM3 (layer 3 of 4 without RoPE): the fixture's logits need it; without no_rope_layers, its
# no_rope_layer_interval says the same.
needs smollm3 model.no_rope_pattern=0
rm -rf s3_interval && cp -r "$FIX/smollm3" s3_interval
sed -i '/"no_rope_layers": \[/,/\],/d' s3_interval/config.json
grep -q no_rope_layers s3_interval/config.json && fail "s3_interval: no_rope_layers still there"
same s3_interval smollm3
pass "smollm3: transformers' logits need the layer without RoPE; no_rope_layer_interval alone gives the same"
# DeepSeek-V3 (latent attention: the queries through a latent, RoPE on 4 of each head's 10 values,
# its pairs interleaved in the files; YaRN with mscale and mscale_all_dim; GLM-4.5's experts) and
# Moonlight (one query projection, pairs not interleaved): the logits need YaRN's two scales.
needs deepseek_v3 model.attention_multiplier=0 model.rope_attention_factor=1
# DeepSeek-V2-Lite (no query latent, a softmax router whose top 2 weigh as they are, times 1.5):
# the logits need the scale and the scores' mscale.
needs deepseek_v2 model.router_scale=1 model.attention_multiplier=0
# DeepSeek-V2 and V2.5 (236B): group_limited_greedy, each group scored by its best probability;
# the logits need the group limit and that score (not the sum of the two best).
needs deepseek_v2_group model.router_topk_groups=4 model.router_group_score=top2
pass "deepseek_v3, deepseek_v2: transformers' logits need YaRN's mscale (cos and sin) and mscale_all_dim (the scores), V2's routed scale"
# Ministral 3 and Mistral Small 4 (the query temperature: steps of 4 in 16 tokens, beta 0.3; Small
# 4's latent attention under a softmax router, top 2 renormalized, the scores' YaRN scale) and
# GLM-4.7-Flash (latent attention under GLM-4.5's experts): the logits need each part. Ministral 3
# as the hub has it (Mistral3ForConditionalGeneration) is its language model, checked above.
needs ministral3 model.query_scale_context=1000 model.query_scale_beta=0.01
needs mistral4 model.query_scale_context=1000 model.router_norm_topk=false model.attention_multiplier=0
needs glm4_moe_lite model.router_scale=1 model.router_topk_groups=4
pass "ministral3, mistral4, glm4_moe_lite: transformers' logits need the query temperature, Mistral Small 4's routing and score scale, GLM-4.7-Flash's routing"
# ERNIE 4.5's MoE (softmax probabilities plus a selection bias choose 2 of 8, renormalized, two
# shared experts, layer 0 dense): the logits need the renormalization.
needs ernie4_5_moe model.router_norm_topk=false
pass "ernie4_5_moe: transformers' logits need the renormalized top k"
# HunYuan (q/k norms after RoPE, RoPE's base stretched by NTK alpha 1000): the logits need both.
needs hunyuan_dense model.qk_norm_after_rope=false model.rope_theta=10000
pass "hunyuan_dense: transformers' logits need the q/k norms after RoPE and the NTK alpha"
# MiniMax-M2 (sigmoid scores plus the selection bias choose 2 of 8, renormalized; whole-projection
# q/k norms; RoPE on 4 of each head's 8 values): the logits need each part. Its release's
# config.json (rotary_dim at the top level, rope_theta beside it, no rope_parameters) gives the same.
needs minimax_m2 model.router_norm_topk=false model.router_scores=softmax model.rope_dim=0
rm -rf mm2_hub && cp -r "$FIX/minimax_m2" mm2_hub
sed -i '/"rope_parameters": {/,/^  },/c\
  "rope_theta": 5000000.0,' mm2_hub/config.json
grep -q rope_parameters mm2_hub/config.json && fail "mm2_hub: rope_parameters still there"
same mm2_hub minimax_m2
pass "minimax_m2: transformers' logits need the renormalized sigmoid top k and the partial RoPE; its release's config.json gives the same"
# Solar Open (GLM-4.5's routing in every block: the best 2 of 4 groups, times 1.5, under Llama's
# attention with q, k, v biases): the logits need the group limit and the scale.
needs solar_open model.router_topk_groups=4 model.router_scale=1
pass "solar_open: transformers' logits need the group limit and the routed scale"
# K-EXAONE (EXAONE 4's attention under norms before the sublayers: layers 0-2 slide over 4 keys,
# layer 3 sees all without RoPE; layer 0 dense, then DeepSeek-V3's experts): the logits need the
# window, the layer without RoPE, the dense block and the routed scale; its MTP block (mtp.*) is
# left out, said so.
needs exaone_moe model.sliding_window_pattern=1 model.no_rope_pattern=0 model.router_scale=1
"$CKPT" import "$FIX/exaone_moe" -o kexaone.h5 > import.log 2>&1 || { cat import.log; fail "import exaone_moe"; }
grep -q "its multi-token prediction block(s) after layer 3 (5 tensors" import.log ||
    { cat import.log; fail "exaone_moe: the MTP block is not reported as left out"; }
pass "exaone_moe: transformers' logits need the window, the layer without RoPE and the routed scale; the MTP block left out"
# Mellum (Qwen3-MoE's blocks; layers 0-2 slide over 4 keys with plain RoPE at theta 10000, layer 3
# full at 500000; layer 0 dense): the logits need the window, its layers' own RoPE and the
# renormalized top k; its MTP block (mtp.*) is left out, said so.
needs mellum model.sliding_window_pattern=1 model.sliding_rope_theta=500000 model.router_norm_topk=false
"$CKPT" import "$FIX/mellum" -o mellum_mtp.h5 > import.log 2>&1 || { cat import.log; fail "import mellum"; }
grep -q "its multi-token prediction block(s) after layer 3 (5 tensors" import.log ||
    { cat import.log; fail "mellum: the MTP block is not reported as left out"; }
pass "mellum: transformers' logits need the window, the sliding layers' RoPE and the renormalized top k; the MTP block left out"
# Qwen3-VL-MoE's language model (its experts stacked as x @ W, as the hub's files hold them): its
# router renormalizes the top k without a norm_topk_prob key, and the logits need that.
needs qwen3_vl_moe model.router_norm_topk=false
pass "qwen3_vl_moe: transformers' logits need the renormalized top k its router always takes"
# GLM-4.5V's language model (GLM-4.5's routing, q/k/v biases on by its defaults, half of each head
# turned): the logits need the group limit and the scale; its MTP block under
# model.language_model.layers.2 is left out, said so.
needs glm4v_moe model.router_topk_groups=4 model.router_scale=1
"$CKPT" import "$FIX/glm4v_moe" -o glm45v.h5 > import.log 2>&1 || { cat import.log; fail "import glm4v_moe"; }
grep -q "its multi-token prediction block(s) after layer 1 (5 tensors" import.log ||
    { cat import.log; fail "glm4v_moe: the MTP block is not reported as left out"; }
pass "glm4v_moe: transformers' logits need the group limit and the routed scale; the MTP block left out"
# GLM-4.1V's language model is GLM-4's, with RoPE on the whole head where its config names no
# partial_rotary_factor (GLM-4's own default is half): the fixture's half is read, and without it
# the whole head turns.
needs glm4v model.rope_dim=0
without glm4v_whole glm4v '/"partial_rotary_factor": 0.5,/d' "rope_dim: 0"
pass "glm4v: transformers' logits need half of each head turned; without the key, the whole head"
# Ministral 8B (layers 0 and 2 slide over 4 keys, 1 and 3 full, as layer_types says): the logits
# need the pattern; without layer_types every layer slides (transformers' default).
needs ministral model.sliding_window_pattern=0
without ministral_all ministral '/"layer_types": \[/,/\],/d' "sliding_window_pattern: 0"
pass "ministral: transformers' logits need the window's layer_types; without them every layer slides"
# YaRN's mscale and mscale_all_dim on any family (Ministral 3 writes 1 and 1): cos and sin scaled by
# their mscales' ratio, as transformers' YaRN does; equal ones give 1 where the default is
# 0.1 ln(factor) + 1.
rm -rf mscale && cp -r "$FIX/qwen3_yarn" mscale
sed -i 's/"factor": 4.0,/"factor": 4.0, "mscale": 0.707, "mscale_all_dim": 0.707,/' mscale/config.json
grep -q mscale_all_dim mscale/config.json || fail "mscale: config not rewritten"
"$CKPT" import mscale -o mscale.h5 > /dev/null 2>&1 || fail "import of YaRN with mscale and mscale_all_dim"
score mscale.logits mscale.h5 qwen3_yarn
score factor1.logits qwen3_yarn.h5 qwen3_yarn model.rope_attention_factor=1
cmp -s mscale.logits factor1.logits || fail "YaRN with equal mscales is not the attention factor 1"
pass "qwen3_yarn with mscale = mscale_all_dim: the attention factor 1, as transformers' YaRN"
# EXAONE 4 (norms after the sublayers, per-head q/k norms, layers 0-2 sliding over 4 keys with
# Llama 3.1's RoPE, layer 3 full without RoPE): the fixture's logits need each part; the window
# pattern written as "LLLG" without layer_types gives the same; without a window (EXAONE 4.0
# 1.2B's null) every layer is full and has RoPE.
needs exaone4 model.no_rope_pattern=0 model.sliding_window_pattern=0 model.rope_scaling=none
rm -rf ex4_lllg && cp -r "$FIX/exaone4" ex4_lllg
sed -i '/"layer_types": \[/,/\],/d; s/"sliding_window_pattern": 4/"sliding_window_pattern": "LLLG"/' ex4_lllg/config.json
grep -q '"LLLG"' ex4_lllg/config.json && ! grep -q layer_types ex4_lllg/config.json || fail "ex4_lllg: config not rewritten"
same ex4_lllg exaone4
rm -rf ex4_global && cp -r "$FIX/exaone4" ex4_global
sed -i '/"layer_types": \[/,/\],/d; s/"sliding_window": 4/"sliding_window": null/' ex4_global/config.json
"$CKPT" import ex4_global -o ex4_global.h5 > /dev/null 2>&1 || fail "import of EXAONE 4 without a window"
"$CKPT" info ex4_global.h5 > ex4_global.info 2>&1
grep -q "sliding_window: 0$" ex4_global.info && grep -q "no_rope_pattern: 0$" ex4_global.info ||
    { cat ex4_global.info; fail "EXAONE 4 without a window: layers without RoPE or a window"; }
pass "exaone4: transformers' logits need its layers without RoPE, its window pattern and Llama 3.1's RoPE; \"LLLG\" reads alike; no window, no NoPE"
# Gemma 3 (1 + weight norms before and after the sublayers, GeGLU, embeddings times sqrt(16),
# scores by 1/sqrt(6), layer 0 sliding with RoPE of theta 1e4, layer 1 full with 1e6 scaled
# linearly): the fixture's logits need each part; transformers 4's config.json (rope_theta,
# rope_local_base_freq, a flat rope_scaling, sliding_window_pattern) gives them too, and Gemma 1's
# legacy hidden_act "gelu" is its tanh GELU.
needs gemma3 model.norm_unit_offset=false model.embed_scale=1 model.activation=silu model.query_pre_attn_scalar=0 \
      model.sliding_rope_theta=0 model.rope_scaling=none model.sliding_window_pattern=0
needs gemma2 model.attention_softcap=0 model.logit_softcap=0 model.sliding_window_pattern=0
needs vaultgemma model.attention_softcap=0 model.logit_softcap=0 model.sliding_window_pattern=0
needs granite model.embed_scale=1 model.attention_multiplier=0 model.residual_multiplier=1 model.logits_scaling=1
needs granite_moe model.residual_multiplier=1 model.logits_scaling=1
needs hyperclovax model.residual_multiplier=1 model.logits_scaling=1 model.norm_position=pre
needs hunyuan_moe model.router_norm_topk=false model.qk_norm_after_rope=false
rm -rf gemma3_v4 && cp -r "$FIX/gemma3" gemma3_v4
sed -i '/"layer_types": \[/,/\],/d; /"rope_parameters": {/,/^  },/c\
  "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "sliding_window_pattern": 2,\
  "rope_scaling": {"rope_type": "linear", "factor": 2.0},' gemma3_v4/config.json
grep -q 'layer_types\|rope_parameters' gemma3_v4/config.json && fail "gemma3_v4: transformers 5's keys still there"
same gemma3_v4 gemma3
rm -rf gemma_gelu && cp -r "$FIX/gemma" gemma_gelu
sed -i 's/"hidden_act": "gelu_pytorch_tanh"/"hidden_act": "gelu"/' gemma_gelu/config.json
same gemma_gelu gemma
# Gemma 3 with a vision tower: transformers' in-memory names (model.language_model.*, as 4.5x saved
# them; the same length as the hub's language_model.model.*, so the header keeps its size) read alike.
rm -rf gemma3_vl_inner && cp -r "$FIX/gemma3_vl" gemma3_vl_inner
perl -pi -e 's/language_model\.model\./model.language_model./g' gemma3_vl_inner/model.safetensors
same gemma3_vl_inner gemma3_vl
pass "gemma3, gemma2, vaultgemma, hyperclovax, granite, granite_moe: transformers' logits need every Gemma part (Gemma 2's soft caps too) and Granite's scalars (on its experts too); transformers 4's config.json gives the same; Gemma 1's legacy gelu is the tanh one; both namings of Gemma 3's language model beside its vision tower"
# gpt-oss (sinks, q/k/v/o biases, layer 0 sliding over 4 keys, YaRN without truncation, biased
# experts of SwiGLU clamped at 1.5): the fixture's logits need each part. The hub's config.json
# layout (rope_theta and rope_scaling, no layer_types, no swiglu_alpha) gives the same; the MXFP4
# experts as the hub ships them (gpt_oss_mxfp4, above) read as transformers dequantizes them.
needs gpt_oss model.attention_sinks=false model.swiglu_limit=100 model.swiglu_alpha=1 model.rope_truncate=true \
      model.sliding_window_pattern=0
rm -rf oss_hub && cp -r "$FIX/gpt_oss" oss_hub
sed -i '/"layer_types": \[/,/\],/d; /"swiglu_alpha"/d; /"rope_parameters": {/,/^  },/c\
  "rope_theta": 150000.0,\
  "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false},' oss_hub/config.json
grep -q 'layer_types\|rope_parameters\|swiglu_alpha' oss_hub/config.json && fail "oss_hub: transformers 5's keys still there"
same oss_hub gpt_oss
pass "gpt_oss: transformers' logits need the sinks, the clamp, YaRN untruncated and the sliding layer; the hub's config.json layout gives the same; MXFP4 experts read as transformers dequantizes them"
# GLM (RoPE on half of each head, its pairs interleaved in the files) and GLM-4 (3/4 turned, norms
# after the sublayers too): the fixtures' logits need the partial RoPE and GLM-4's norms.
needs glm model.rope_dim=0
needs glm4 model.rope_dim=0 model.norm_position=pre
pass "glm, glm4: transformers' logits need RoPE on part of each head and GLM-4's norms after the sublayers"
# GLM-4.5 (DeepSeek-V3's routing: sigmoid scores plus a selection bias, 2 of 4 groups, weights
# renormalized and scaled; a dense first block; ungated shared experts; RoPE on half of each head,
# rotate_half's pairs): the logits need each part (tests/hf_reference.py asserts that the selection
# bias and the group limit each move some token's experts); the MTP block is left out, said so.
needs glm4_moe model.router_scale=1 model.router_scores=softmax model.router_norm_topk=false \
      model.router_topk_groups=4 model.rope_dim=0
"$CKPT" import "$FIX/glm4_moe" -o glm45.h5 > import.log 2>&1 || { cat import.log; fail "import glm4_moe"; }
grep -q "its multi-token prediction block(s) after layer 2 (5 tensors" import.log ||
    { cat import.log; fail "glm4_moe: the MTP block is not reported as left out"; }
sed 's/"num_nextn_predict_layers": 1/"num_nextn_predict_layers": 0/' "$FIX/glm4_moe/config.json" > glm_nomtp.json
mkdir -p glm_nomtp && cp glm_nomtp.json glm_nomtp/config.json && ln -sf "$FIX/glm4_moe/model.safetensors" glm_nomtp/
expect_fail "tensor model.layers.3.e" "$CKPT" import glm_nomtp -o glm_nomtp.h5
needs dots1 model.router_scale=1 model.router_topk_groups=2 model.router_norm_topk=true
pass "glm4_moe, dots1: transformers' logits need the routed scale, sigmoid scores, renormalization, group limit and partial RoPE; the MTP block is left out only where config.json declares it"
# A mixture of experts streamed from disk a block at a time (a 100 KiB budget holds two): the
# resident run's logits, bit for bit.
"$GEN" "$FIX/mixtral" -q --max-memory cpu=100KiB,disk=10MiB --score "$FIX/mixtral/tokens.bin" \
    --logits-out mixtral.streamed.logits > /dev/null 2>gen.err || { cat gen.err; fail "streamed Mixtral"; }
cmp -s mixtral.dir.logits mixtral.streamed.logits || fail "streamed Mixtral logits differ from the resident run's"
pass "Mixtral streamed block by block: the same logits"
# bf16 out: the bf16 fixture's values are bf16 numbers, so a bf16 export gives them back exactly.
"$CKPT" export llama_bf16.h5 --format hf --dtype bf16 --output bf16.hf > /dev/null || fail "export bf16"
"$CMP" tensors "$FIX/llama_bf16" bf16.hf || fail "bf16 export differs from the bf16 fixture"
grep -q '"bfloat16"' bf16.hf/config.json || fail "bf16 export: config.json does not say bfloat16"
pass "bf16 fixture: a bf16 hf export reproduces it"

# ---------------------------------------------------------------- 3: every export runs without model keys
for name in gpt2 llama_gqa qwen2_bias qwen3; do
    "$CKPT" export "$name.h5" --format safetensors --output "$name.safetensors" > /dev/null || fail "safetensors export"
    "$CKPT" export "$name.h5" --format hdf5 --output "$name.model.h5" > /dev/null || fail "hdf5 export"
    for w in "$name.model.h5" "$name.safetensors" "$name.hf" "$FIX/$name" "$FIX/$name/model.safetensors"; do
        rm -f x.logits
        "$GEN" "$w" -q --score "$FIX/$name/tokens.bin" --logits-out x.logits > /dev/null 2>gen.err ||
            { cat gen.err; fail "accel_generate $w"; }
        "$CMP" logits "$FIX/$name" x.logits > /dev/null || fail "accel_generate $w: logits differ"
        "$GEN" "$w" -q --prompt "ab" -n 4 > /dev/null 2>&1 || fail "accel_generate $w --prompt"
    done
    "$CKPT" diff "$name.h5" "$name.model.h5" > diff.txt || { cat diff.txt; fail "$name: the hdf5 export differs from the import"; }
    "$CKPT" ls "$name.safetensors" > /dev/null 2>&1 && fail "accel_ckpt ls read a safetensors file as HDF5"
    pass "$name: accel_generate on the hdf5, safetensors and hf exports and the HF directory, no model keys"
done

# ---------------------------------------------------------------- 4: train.init_from
# A corpus of 100 bytes: 80 training tokens = 4 samples of 16+1 at context 16 (one global batch),
# so the first step's loss is the model's mean loss over exactly the windows --score sees.
cat "$FIX"/*/tokens.bin | head -c 100 > text.txt
"$top_builddir/accel_data" prepare --output d.h5 --val-fraction 0.2 --context 16 text.txt > /dev/null ||
    fail "accel_data prepare"
head -c 65 text.txt > batch.txt
train_case() {     # NP STRATEGY INIT_FROM REF_WEIGHTS TAG [KEY=VALUE...]
    np=$1 strat=$2 init=$3 ref=$4 tag=$5
    shift 5
    want=$("$GEN" "$ref" -q --score batch.txt "$@" | sed -n 's/.*mean loss \([0-9.]*\) nats.*/\1/p')
    [ -n "$want" ] || fail "no reference loss for $ref"
    rm -f "m_$tag.jsonl"
    run_mpi "$np" "$ACCEL_TRAIN" "train.init_from=$init" data.path=d.h5 train.global_batch=4 train.steps=6 \
        train.log_every=1 train.sample_tokens=0 optim.warmup=0 optim.lr=1e-2 dist.strategy="$strat" \
        "train.metrics=m_$tag.jsonl" "$@" > "train_$tag.log" 2>&1 || { cat "train_$tag.log"; fail "init_from $tag"; }
    grep -q "initialised the parameters from train.init_from" "train_$tag.log" || fail "$tag: no init_from line"
    awk -v want="$want" -v tag="$tag" '
        /"kind": "train"/ { sub(/.*"step": /, ""); s = $0 + 0; l = $0; sub(/.*"loss": /, "", l); l += 0;
                   if (!n++) { first = l; fs = s } last = l }
        END { d = first - want; if (d < 0) d = -d;
              printf "%s: first step %d, loss %.7f (model on the batch %.6f, |diff| %.2g), last %.4f\n", tag, fs, first, want, d, last;
              exit !(fs == 1 && d <= 1e-5 && last < first - 0.1) }' "m_$tag.jsonl" ||
        fail "$tag: the first loss is not the imported model's, or the loss does not fall"
}
train_case 1 ddp "$FIX/llama_gqa" "$FIX/llama_gqa" llama_dir_1_ddp
train_case 2 ddp "$FIX/llama_gqa" "$FIX/llama_gqa" llama_dir_2_ddp
train_case 2 zero3 "$FIX/llama_gqa" "$FIX/llama_gqa" llama_dir_2_zero3
train_case 1 zero3 gpt2.h5 gpt2.h5 gpt2_imp_1_zero3
train_case 2 zero3 gpt2.h5 gpt2.h5 gpt2_imp_2_zero3
train_case 2 ddp qwen2_bias.h5 qwen2_bias.h5 qwen2_imp_2_ddp
train_case 2 zero3 "$FIX/qwen3" "$FIX/qwen3" qwen3_dir_2_zero3
train_case 4 zero2 "$FIX/llama_sharded" "$FIX/llama_sharded" llama_sharded_4_zero2
train_case 2 ddp "$FIX/qwen3_moe" "$FIX/qwen3_moe" qwen3_moe_dir_2_ddp
train_case 2 zero3 qwen3_moe.h5 qwen3_moe.h5 qwen3_moe_imp_2_zero3
train_case 2 zero2 "$FIX/qwen2_moe" "$FIX/qwen2_moe" qwen2_moe_dir_2_zero2
train_case 2 ddp "$FIX/phi3" "$FIX/phi3" phi3_dir_2_ddp
train_case 2 zero3 "$FIX/phi4_mini" "$FIX/phi4_mini" phi4_mini_dir_2_zero3
train_case 2 zero2 "$FIX/exaone4" "$FIX/exaone4" exaone4_dir_2_zero2
train_case 2 zero3 "$FIX/deepseek_v3" "$FIX/deepseek_v3" deepseek_v3_dir_2_zero3
train_case 1 ddp moonlight.h5 moonlight.h5 moonlight_imp_1_ddp
train_case 2 zero2 "$FIX/deepseek_v2" "$FIX/deepseek_v2" deepseek_v2_dir_2_zero2
train_case 1 ddp deepseek_v2_group.h5 deepseek_v2_group.h5 deepseek_v2_group_imp_1_ddp
train_case 2 zero3 "$FIX/mistral4" "$FIX/mistral4" mistral4_dir_2_zero3
train_case 2 zero2 "$FIX/glm4_moe_lite" "$FIX/glm4_moe_lite" glm4_moe_lite_dir_2_zero2
train_case 2 ddp "$FIX/ministral3_vl" "$FIX/ministral3_vl" ministral3_vl_dir_2_ddp
train_case 2 zero3 "$FIX/ernie4_5_moe" "$FIX/ernie4_5_moe" ernie4_5_moe_dir_2_zero3
train_case 1 ddp "$FIX/ernie4_5" "$FIX/ernie4_5" ernie4_5_dir_1_ddp
train_case 2 zero2 "$FIX/hunyuan_dense" "$FIX/hunyuan_dense" hunyuan_dense_dir_2_zero2
train_case 2 zero3 "$FIX/minimax_m2" "$FIX/minimax_m2" minimax_m2_dir_2_zero3
train_case 2 zero2 "$FIX/solar_open" "$FIX/solar_open" solar_open_dir_2_zero2
train_case 2 ddp "$FIX/helium" "$FIX/helium" helium_dir_2_ddp
train_case 1 zero3 "$FIX/internlm3" "$FIX/internlm3" internlm3_dir_1_zero3
train_case 2 zero3 "$FIX/exaone_moe" "$FIX/exaone_moe" exaone_moe_dir_2_zero3
train_case 2 zero2 "$FIX/youtu" "$FIX/youtu" youtu_dir_2_zero2
train_case 2 ddp "$FIX/mellum" "$FIX/mellum" mellum_dir_2_ddp
train_case 2 zero3 "$FIX/qwen3_vl_moe" "$FIX/qwen3_vl_moe" qwen3_vl_moe_dir_2_zero3
train_case 1 ddp "$FIX/qwen3_vl" "$FIX/qwen3_vl" qwen3_vl_dir_1_ddp
train_case 2 zero2 "$FIX/qwen2_5_vl" "$FIX/qwen2_5_vl" qwen2_5_vl_dir_2_zero2
train_case 2 zero3 "$FIX/glm4v_moe" "$FIX/glm4v_moe" glm4v_moe_dir_2_zero3
train_case 2 ddp "$FIX/ministral" "$FIX/ministral" ministral_dir_2_ddp
train_case 2 zero2 "$FIX/glm4v" "$FIX/glm4v" glm4v_dir_2_zero2
train_case 2 zero3 "$FIX/olmo2" "$FIX/olmo2" olmo2_dir_2_zero3
train_case 2 zero2 "$FIX/olmo3" "$FIX/olmo3" olmo3_dir_2_zero2
train_case 2 ddp "$FIX/smollm3" "$FIX/smollm3" smollm3_dir_2_ddp
train_case 2 zero3 "$FIX/gemma3" "$FIX/gemma3" gemma3_dir_2_zero3
train_case 2 zero3 "$FIX/starcoder2" "$FIX/starcoder2" starcoder2_dir_2_zero3
train_case 2 zero2 "$FIX/nemotron" "$FIX/nemotron" nemotron_dir_2_zero2
train_case 1 ddp "$FIX/jais2" "$FIX/jais2" jais2_dir_1_ddp
train_case 2 ddp "$FIX/arcee" "$FIX/arcee" arcee_dir_2_ddp
train_case 2 zero3 "$FIX/stablelm" "$FIX/stablelm" stablelm_dir_2_zero3
train_case 2 zero3 "$FIX/gpt_neox" "$FIX/gpt_neox" gpt_neox_dir_2_zero3
train_case 1 ddp "$FIX/gpt_neox_seq" "$FIX/gpt_neox_seq" gpt_neox_seq_dir_1_ddp
train_case 2 zero3 "$FIX/cohere" "$FIX/cohere" cohere_dir_2_zero3
train_case 2 ddp "$FIX/cohere2" "$FIX/cohere2" cohere2_dir_2_ddp
train_case 2 zero3 "$FIX/phi" "$FIX/phi" phi_dir_2_zero3
train_case 2 ddp "$FIX/gptj" "$FIX/gptj" gptj_dir_2_ddp
train_case 2 zero3 "$FIX/qwen3_5" "$FIX/qwen3_5" qwen3_5_dir_2_zero3
train_case 2 zero2 "$FIX/qwen3_5_moe" "$FIX/qwen3_5_moe" qwen3_5_moe_dir_2_zero2
train_case 2 ddp "$FIX/qwen3_next" "$FIX/qwen3_next" qwen3_next_dir_2_ddp
train_case 1 ddp "$FIX/qwen3_5_vl" "$FIX/qwen3_5_vl" qwen3_5_vl_dir_1_ddp
train_case 2 zero3 "$FIX/lfm2" "$FIX/lfm2" lfm2_dir_2_zero3
train_case 2 zero2 "$FIX/lfm2_moe" "$FIX/lfm2_moe" lfm2_moe_dir_2_zero2
train_case 2 ddp "$FIX/lfm3" "$FIX/lfm3" lfm3_dir_2_ddp
train_case 2 zero2 "$FIX/granite4_h" "$FIX/granite4_h" granite4_h_dir_2_zero2
train_case 2 zero3 "$FIX/granite4_h_dense" "$FIX/granite4_h_dense" granite4_h_dense_dir_2_zero3
train_case 2 zero3 "$FIX/nemotron_h" "$FIX/nemotron_h" nemotron_h_dir_2_zero3
train_case 2 zero2 "$FIX/bamba" "$FIX/bamba" bamba_dir_2_zero2
train_case 2 zero2 "$FIX/nemotron_h_moe" "$FIX/nemotron_h_moe" nemotron_h_moe_dir_2_zero2
train_case 2 ddp "$FIX/nemotron_h_latent" "$FIX/nemotron_h_latent" nemotron_h_latent_dir_2_ddp
train_case 2 zero2 "$FIX/llama4" "$FIX/llama4" llama4_dir_2_zero2
train_case 2 zero3 "$FIX/flex_olmo" "$FIX/flex_olmo" flex_olmo_dir_2_zero3
train_case 2 ddp "$FIX/olmo_hybrid" "$FIX/olmo_hybrid" olmo_hybrid_dir_2_ddp
train_case 1 ddp "$FIX/gemma" "$FIX/gemma" gemma_dir_1_ddp
train_case 2 ddp "$FIX/gemma3_vl" "$FIX/gemma3_vl" gemma3_vl_dir_2_ddp
train_case 2 zero2 "$FIX/gemma2" "$FIX/gemma2" gemma2_dir_2_zero2
train_case 2 zero3 "$FIX/granite" "$FIX/granite" granite_dir_2_zero3
train_case 2 zero3 "$FIX/gpt_oss_mxfp4" "$FIX/gpt_oss_mxfp4" gpt_oss_mxfp4_dir_2_zero3
train_case 2 zero2 "$FIX/glm4" "$FIX/glm4" glm4_dir_2_zero2
train_case 2 ddp "$FIX/granite_moe" "$FIX/granite_moe" granite_moe_dir_2_ddp
train_case 2 zero2 "$FIX/dots1" "$FIX/dots1" dots1_dir_2_zero2
train_case 2 zero3 "$FIX/apertus" "$FIX/apertus" apertus_dir_2_zero3
# Mamba's config.json holds no context (accel's 2048): the corpus's 16, as a run sets it
train_case 2 zero2 "$FIX/mamba" "$FIX/mamba" mamba_dir_2_zero2 model.context=16
train_case 2 zero3 "$FIX/falcon_mamba" "$FIX/falcon_mamba" falcon_mamba_dir_2_zero3 model.context=16
train_case 2 zero2 "$FIX/jamba" "$FIX/jamba" jamba_dir_2_zero2
trained_keeps() {  # FIXTURE IMPORTED STRATEGY BLOCKS FIXED: 3 steps from the fixture under STRATEGY on 2 ranks,
                   # saved: each of the BLOCKS block tensors moved but those matching FIXED (an awk regex),
                   # which came out as they went in
    fx=$1 imp=$2 strat=$3 blocks=$4 fixed=$5
    rm -rf "ck_$fx"
    run_mpi 2 "$ACCEL_TRAIN" "train.init_from=$FIX/$fx" data.path=d.h5 train.global_batch=4 train.steps=3 \
        train.sample_tokens=0 optim.warmup=0 optim.lr=1e-2 dist.strategy="$strat" "ckpt.dir=ck_$fx" > "t_$fx.log" 2>&1 ||
        { cat "t_$fx.log"; fail "init_from $fx"; }
    "$CKPT" export "$("$CKPT" latest "ck_$fx")" --format hdf5 --output "t_$fx.h5" > /dev/null ||
        fail "export the trained $fx checkpoint"
    "$CKPT" diff "$imp" "t_$fx.h5" > "d_$fx.txt"
    awk -v blocks="$blocks" -v fixed="$fixed" '/^\/h\.[0-9]+\./ { n++; if (($1 ~ fixed) != ($2 == 0)) bad = bad " " $1 }
         END { exit !(n == blocks && bad == "") }' "d_$fx.txt" ||
        { cat "d_$fx.txt"; fail "$fx: trained, a weight stood still or one of $fixed moved"; }
}
# GLM-4.5 under ZeRO-3: the routers' selection bias only chooses experts (no gradient); Apertus
# under ZeRO-2: xIELU's alphas move, its beta and eps are fixed buffers (as transformers keeps them).
trained_keeps glm4_moe glm45.h5 zero3 35 select_bias
trained_keeps apertus apertus.h5 zero2 24 'act[.](beta|eps)'
pass "train.init_from: step 0 from the weights, first loss = the model's, the loss falls (1/2/4 ranks, ddp/zero2/zero3; Qwen3-MoE, Qwen2-MoE, Phi-3, OLMo 2, OLMo 3, SmolLM3, Granite, Gemma, Gemma 2, Gemma 3, gpt-oss in MXFP4, GLM-4, Granite MoE, dots.llm1 and Apertus too: Mixtral's fixture adds the load-balancing loss to training; GLM-4.5's selection bias and Apertus's xIELU beta and eps stay as imported)"
expect_fail "model.layers=3 contradicts train.init_from=$FIX/gpt2, which holds a model with model.layers=2" \
    "$ACCEL_TRAIN" "train.init_from=$FIX/gpt2" model.layers=3 data.path=d.h5
"$ACCEL_TRAIN" "train.init_from=$FIX/gpt2" model.layers=2 data.path=d.h5 train.global_batch=4 train.steps=1 \
    train.sample_tokens=0 > same.log 2>&1 || { cat same.log; fail "a model key equal to the file's is refused"; }
# A checkpoint in ckpt.dir: resume wins, init_from is noted and ignored. (A fresh run refuses a
# ckpt.dir holding another run's checkpoints: start from an empty one, also when the test reruns.)
rm -rf ck
run_mpi 1 "$ACCEL_TRAIN" "train.init_from=gpt2.h5" data.path=d.h5 train.global_batch=4 train.steps=2 \
    train.sample_tokens=0 ckpt.dir=ck > r1.log 2>&1 || { cat r1.log; fail "init_from with ckpt.dir"; }
run_mpi 1 "$ACCEL_TRAIN" "train.init_from=gpt2.h5" data.path=d.h5 train.global_batch=4 train.steps=3 \
    train.sample_tokens=0 ckpt.dir=ck resume=auto > r2.log 2>&1 || { cat r2.log; fail "resume with init_from"; }
grep -q "resumed from" r2.log && grep -q "train.init_from=gpt2.h5 is ignored" r2.log ||
    { cat r2.log; fail "resume did not win over init_from"; }
pass "a contradicting model key is refused; resume wins over train.init_from"

# ---------------------------------------------------------------- tokenizer: import stores it, export writes it
cp -r "$FIX/gpt2" tok && printf '{"version":"1.0","model":{"type":"BPE"}}' > tok/tokenizer.json
"$CKPT" import tok -o tok.h5 > /dev/null || fail "import with tokenizer.json"
"$CKPT" export tok.h5 --format hf --output tok.hf > /dev/null || fail "export with tokenizer"
cmp -s tok/tokenizer.json tok.hf/tokenizer.json && [ -f tok.hf/tokenizer_config.json ] ||
    fail "tokenizer.json did not travel through import and export"
"$CKPT" export tok.h5 --format hdf5 --output tok2.h5 > /dev/null && "$CKPT" export tok2.h5 --format hf --output tok2.hf > /dev/null &&
    cmp -s tok/tokenizer.json tok2.hf/tokenizer.json || fail "the hdf5 export lost the tokenizer"
"$CKPT" info tok.h5 > info.txt || fail "accel_ckpt info on a weights file"
grep -q "tokenizer: *tok (.*hash [0-9a-f]\{16\})" info.txt && grep -q "name: gpt" info.txt || { cat info.txt; fail "info: tokenizer or configuration missing"; }
pass "tokenizer.json: import stores it, exports carry it, export --format hf writes it"

# ---------------------------------------------------------------- chat template: import stores it, export writes it
CT="$top_srcdir/tests/fixtures/chat/templates/chatml_generation.jinja"
rm -rf chat && cp -r "$FIX/gpt2" chat && cp "$CT" chat/chat_template.jinja
"$CKPT" import chat -o chat.h5 > import.log 2>&1 || { cat import.log; fail "import with chat_template.jinja"; }
grep -q ", chat template) to chat.h5" import.log || { cat import.log; fail "import does not say it stored the chat template"; }
"$CKPT" info chat.h5 > info.txt && grep -q "chat template: *kept ($(wc -c < "$CT") bytes" info.txt ||
    { cat info.txt; fail "info: the imported chat template"; }
"$CKPT" export chat.h5 --format hf --output chat.hf > /dev/null || fail "export with a chat template"
cmp chat/chat_template.jinja chat.hf/chat_template.jinja || fail "chat_template.jinja did not travel through import and export"
"$CKPT" export chat.h5 --format hdf5 --output chat2.h5 > /dev/null && "$CKPT" export chat2.h5 --format hf --output chat2.hf > /dev/null &&
    cmp -s "$CT" chat2.hf/chat_template.jinja || fail "the hdf5 export lost the chat template"
# Without chat_template.jinja: tokenizer_config.json's "chat_template", a string or the "default" of a
# list (JSON escapes decoded); an export of a file without one writes no chat_template.jinja.
rm -rf chatcfg && cp -r "$FIX/gpt2" chatcfg && rm -f chatcfg/chat_template.jinja
printf '{"chat_template": "{%%- for m in messages %%}{{ m.content }}\\n{%%- endfor %%}\\t\\"q\\""}' > chatcfg/tokenizer_config.json
printf '{%%- for m in messages %%}{{ m.content }}\n{%%- endfor %%}\t"q"' > want.jinja
"$CKPT" import chatcfg -o chatcfg.h5 > /dev/null && "$CKPT" export chatcfg.h5 --format hf --output chatcfg.hf > /dev/null ||
    fail "import/export with tokenizer_config.json's chat_template"
cmp want.jinja chatcfg.hf/chat_template.jinja || fail "tokenizer_config.json's chat_template (a string) did not travel"
printf '{"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D\\n"}]}' > chatcfg/tokenizer_config.json
printf 'D\n' > want.jinja
"$CKPT" import chatcfg -o chatcfg.h5 > /dev/null && "$CKPT" export chatcfg.h5 --format hf --output chatcfg2.hf > /dev/null ||
    fail "import/export with named chat templates"
cmp want.jinja chatcfg2.hf/chat_template.jinja || fail "the \"default\" of tokenizer_config.json's named templates did not travel"
[ ! -e gpt2.hf/chat_template.jinja ] && [ ! -e tok.hf/chat_template.jinja ] || fail "an export without a chat template wrote chat_template.jinja"
"$CKPT" info gpt2.h5 | grep -q "chat template: *(none stored)" || fail "info of a file without a chat template"
# train.init_from an HF directory with a template, on data without one: the checkpoints keep it.
rm -rf ckc
run_mpi 1 "$ACCEL_TRAIN" train.init_from=chat data.path=d.h5 train.global_batch=4 train.steps=1 \
    train.sample_tokens=0 ckpt.dir=ckc > c1.log 2>&1 || { cat c1.log; fail "init_from an HF directory with a chat template"; }
"$CKPT" export ckc/step-00000001.h5 --format hf --output ckc.hf > /dev/null || fail "export of the init_from checkpoint"
cmp -s "$CT" ckc.hf/chat_template.jinja || fail "train.init_from's chat template is not in its checkpoints"
pass "chat template: import stores it (chat_template.jinja, tokenizer_config.json), exports and init_from carry it"

# ---------------------------------------------------------------- 5: refused input
bad() {     # NAME FIXTURE: a copy of the fixture to spoil
    rm -rf "$1" && cp -r "$FIX/$2" "$1"
}
refused() { # NAME FIXTURE SED MESSAGE: the fixture with SED applied to its config.json is refused, naming MESSAGE
    bad "$1" "$2" && sed -i "$3" "$1/config.json"
    expect_fail "$4" "$CKPT" import "$1" -o x.h5
}
refused bert gpt2 's/"GPT2LMHeadModel"/"BertModel"/; s/"gpt2"/"bert"/' "architectures = BertModel"
refused missing llama_gqa 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "tensor model.layers.2.input_layernorm.weight is missing"
refused shape llama_gqa 's/"intermediate_size": 32/"intermediate_size": 48/' "has shape [32, 16], but config.json gives [48, 16]"
bad trunc gpt2 && head -c 3000 "$FIX/gpt2/model.safetensors" > trunc/model.safetensors
expect_fail "run past the data" "$CKPT" import trunc -o x.h5
expect_fail "run past the data" "$GEN" trunc -q --prompt a
bad tiny gpt2 && head -c 5 "$FIX/gpt2/model.safetensors" > tiny/model.safetensors
expect_fail "too short for a safetensors file" "$CKPT" import tiny -o x.h5
bad offs gpt2 && hdr='{"transformer.wte.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8000]}}'
{ printf "\\$(printf %03o ${#hdr})\\000\\000\\000\\000\\000\\000\\000"; printf '%s' "$hdr"; printf '12345678'; } > offs/model.safetensors
expect_fail "data_offsets [0, 8000] run past the data" "$CKPT" import offs -o x.h5
bad overlap gpt2 && hdr='{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
{ printf "\\$(printf %03o ${#hdr})\\000\\000\\000\\000\\000\\000\\000"; printf '%s' "$hdr"; printf '12345678'; } > overlap/model.safetensors
expect_fail "overlap" "$CKPT" import overlap -o x.h5
bad dtype gpt2 && hdr='{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}'
{ printf "\\$(printf %03o ${#hdr})\\000\\000\\000\\000\\000\\000\\000"; printf '%s' "$hdr"; printf '12345678'; } > dtype/model.safetensors
expect_fail "has dtype F64, which accel does not read" "$CKPT" import dtype -o x.h5
bad shard llama_sharded && rm shard/model-00002-of-00003.safetensors
expect_fail "names shard model-00002-of-00003.safetensors" "$CKPT" import shard -o x.h5
refused sw mistral 's/"sliding_window": null/"sliding_window": -8/' "sliding_window = -8"
refused rope llama_rope31 's/"rope_type": "llama3"/"rope_type": "dynamic"/' "rope_scaling type = dynamic"
refused act llama_gqa 's/"hidden_act": "silu"/"hidden_act": "gelu"/' "hidden_act = gelu"
refused hd mistral 's/"head_dim": 4/"head_dim": 8/' "q_proj.weight has shape [16, 16], but config.json gives [32, 16]"
refused hdodd mistral 's/"head_dim": 4/"head_dim": 5/' "head_dim = 5: accel needs an even head size"
refused clip olmoe 's/"clip_qkv": null/"clip_qkv": 8.0/' "clip_qkv = 8"
refused partial phi3 's/"partial_rotary_factor": 1.0/"partial_rotary_factor": 0.75/' "partial_rotary_factor = 0.75 turns 3 of a head's 4 values"
refused longrope phi3 's/"rope_type": "default"/"rope_type": "longrope"/' "rope_scaling longrope needs short_factor, a list of 1 to 128 numbers"
refused lrcount phi4_mini '/^      5\.0,$/d' \
    "rope_scaling longrope has 3 short and 2 long factors: it needs one for each of the 3 pairs"
refused lrneg phi4_mini 's/^      20\.0$/      -20.0/' "rope_scaling long_factor[2] is not a number in (0, 1e6]"
# compressed-tensors: only symmetric weights in their order: pack-quantized integers of 4 or 8 bits
# with their scales and shapes, FP8 or INT8 with their scales, NVFP4 by 16 with its global scale.
refused ctasym kimi_k2_int4 's/"symmetric": true/"symmetric": false/' "accel reads symmetric weights in their order"
refused ctbits kimi_k2_int4 's/"num_bits": 4/"num_bits": 3/' "3 bits"
refused ctfmt kimi_k2_int4 's/"pack-quantized"/"marlin-24"/' "compressed-tensors with format marlin-24"
refused ctint4 kimi_k2_int4 's/"pack-quantized"/"int-quantized"/' "(format int-quantized): type int, 4 bits"
refused fp8asym llama_fp8_dynamic 's/"symmetric": true/"symmetric": false/' "symmetric false, strategy channel"
refused fp8tok llama_fp8_dynamic 's/"strategy": "channel"/"strategy": "token"/' "strategy token"
refused nvfp4g llama_nvfp4 's/"group_size": 16/"group_size": 32/g' "(format nvfp4-pack-quantized): type float, 4 bits, symmetric true, strategy tensor_group, group_size 32"
refused i8noq llama_w8a8 's/"quantization_config"/"quantization_cfg"/' "is I8, but config.json declares no int-quantized"
bad fp8nosc llama_fp8_dynamic && perl -pi -e 's/layers\.1\.mlp\.up_proj\.weight_scale/layers.1.mlp.up_proj.weight_scalf/' fp8nosc/model.safetensors
expect_fail "tensor model.layers.1.mlp.up_proj.weight_scale is missing (the scales of FP8 model.layers.1.mlp.up_proj.weight)" \
    "$CKPT" import fp8nosc -o x.h5
bad nvfp4nog llama_nvfp4 && perl -pi -e 's/layers\.1\.mlp\.up_proj\.weight_global_scale/layers.1.mlp.up_proj.weight_global_scalf/' nvfp4nog/model.safetensors
expect_fail "tensor model.layers.1.mlp.up_proj.weight_global_scale is missing (the global_scale of model.layers.1.mlp.up_proj.weight_packed)" \
    "$CKPT" import nvfp4nog -o x.h5
refused ctorder kimi_k2_int4 's/"actorder": null/"actorder": "group"/' "actorder group"
refused ctgroup kimi_k2_int4 's/"group_size": 8/"group_size": 16/' "gate_proj.weight_packed's scales are F32, BF16 or F16 [8, 1]"
refused ctword kimi_k2_int4 's/"group_size": 8/"group_size": 4/' "packs 8 values a word into rows of 16 by groups of 4"
refused hymoe hunyuan_moe 's/"num_experts": 4/"num_experts": 4, "moe_intermediate_size": 8/' "moe_intermediate_size = 8 and num_shared_expert = 1 with intermediate_size = 12"
refused hytopk hunyuan_moe '0,/^    2,$/s//    1,/' "num_experts = 4, moe_topk = -1"
refused q3bias qwen3 's/"attention_bias": false/"attention_bias": true/' "attention_bias = true on Qwen3ForCausalLM adds an o_proj bias"
# EXAONE 4's full layers go without RoPE by its pattern: other layer types are refused.
refused e4types exaone4 '0,/"sliding_attention",/s/"sliding_attention",/"full_attention",/' "2 of 4 layers attend through a sliding window of 4 (layer_types / max_window_layers), not all but every N-th"
refused o3rope olmo3 's/"rope_type": "default"/"rope_type": "linear"/' "the sliding layers' RoPE (linear) is neither the full layers' nor plain RoPE"
bad o3len olmo3 && sed -i 's/"num_hidden_layers": 4/"num_hidden_layers": 3/' o3len/config.json
refused s3nope smollm3 '0,/^    1,/s//    0,/' "no_rope_layers: layer 1 has RoPE: accel's layers without it are none or every N-th"
refused s3sw smollm3 's/"use_sliding_window": false/"use_sliding_window": true/; s/"sliding_window": null/"sliding_window": 4/' "SmolLM3's window is on its NoPE layers"
refused g3vl gemma3_vl 's/"text_config"/"txt_config"/' "Gemma3ForConditionalGeneration without a text_config object"
refused g3vl2 gemma3_vl '0,/"intermediate_size": 32/s//"intermediate_size": 48/' \
    "tensor language_model.model.layers.0.mlp.gate_proj.weight has shape [32, 16], but config.json gives [48, 16]"
refused grzero granite 's/"residual_multiplier": 0.5/"residual_multiplier": 0.0/' "residual_multiplier = 0: accel needs a number in (0, 1e6]"
refused g3cap gemma3 's/"final_logit_softcapping": null/"final_logit_softcapping": -30.0/' "final_logit_softcapping = -30: accel needs 0..1e9 (or null)"
refused g3bi gemma3 's/"use_bidirectional_attention": false/"use_bidirectional_attention": true/' "use_bidirectional_attention = true"
refused g3act gemma3 's/"hidden_activation": "gelu_pytorch_tanh"/"hidden_activation": "gelu"/' "hidden_activation = gelu: accel's Gemma uses the tanh GELU"
refused g3rope gemma3 's/"rope_type": "default"/"rope_type": "yarn"/' "the sliding layers' RoPE (yarn) is neither the full layers' nor plain RoPE"
expect_fail "layer_types has 4 entries for num_hidden_layers = 3" "$CKPT" import o3len -o x.h5
refused ossq gpt_oss 's/"model_type": "gpt_oss",/"model_type": "gpt_oss", "quantization_config": {"quant_method": "gptq"},/' "quantization_config quant_method = gptq: accel reads unquantized weights"
refused ossdense gpt_oss 's/"model_type": "gpt_oss",/"model_type": "gpt_oss", "quantization_config": {"quant_method": "mxfp4"},/' "tensor model.layers.0.mlp.experts.gate_up_proj_blocks is missing"
bad ossscales gpt_oss_mxfp4 && perl -pi -e 's/layers\.1\.mlp\.experts\.down_proj_scales/layers.1.mlp.experts.down_proj_scalez/' ossscales/model.safetensors
expect_fail "tensor model.layers.1.mlp.experts.down_proj_scales is missing (the scales of model.layers.1.mlp.experts.down_proj_blocks)" \
    "$CKPT" import ossscales -o x.h5
refused ossbits gpt_oss_mxfp4 's/"quant_method": "mxfp4"/"quant_method": "gptq"/' "quantization_config quant_method = gptq"
refused moedense qwen3_moe 's/"mlp_only_layers": \[\]/"mlp_only_layers": [1]/' "some blocks have a dense MLP, and accel's experts are in every block"
refused moestep qwen3_moe 's/"decoder_sparse_step": 1/"decoder_sparse_step": 2/' "decoder_sparse_step = 2"
refused jitter mixtral 's/"router_jitter_noise": 0.0/"router_jitter_noise": 0.01/' "router_jitter_noise = 0.01"
refused shared0 qwen2_moe 's/"shared_expert_intermediate_size": 20/"shared_expert_intermediate_size": 0/' "shared_expert_intermediate_size = 0"
# Qwen3 with layer 0 sliding and layer 1 not: all but every 2nd layer, which accel has.
bad q3sw2 qwen3 && sed -i '0,/"full_attention"/s//"sliding_attention"/; s/"use_sliding_window": false/"use_sliding_window": true/; s/"sliding_window": null/"sliding_window": 4/' q3sw2/config.json
"$CKPT" import q3sw2 -o q3sw2.h5 > /dev/null 2>&1 || fail "Qwen3 with every 2nd layer full is refused"
"$CKPT" export q3sw2.h5 --format hf --output q3sw2.hf > /dev/null || fail "export of Qwen3 with every 2nd layer full"
"$CMP" config q3sw2/config.json q3sw2.hf/config.json > /dev/null || fail "q3sw2: layer_types not exported as imported"
# Qwen3 with layer 1 sliding and layer 0 not, OLMo 3 with layer 0 full: not all but every N-th,
# the sliding layers listed by number (model.sliding_layers); exported as imported.
listed() {  # TAG FIXTURE SED WANT: the fixture with SED applied imports with WANT in its configuration
    bad "$1" "$2" && sed -i "$3" "$1/config.json"
    "$CKPT" import "$1" -o "$1.h5" > /dev/null 2>&1 || fail "$1: layer types not a pattern are refused"
    "$CKPT" info "$1.h5" | grep -q "$4" || fail "$1: no '$4' in the imported configuration"
    "$CKPT" export "$1.h5" --format hf --output "$1.hf" > /dev/null || fail "export of $1"
    "$CMP" config "$1/config.json" "$1.hf/config.json" > /dev/null || fail "$1: layer_types not exported as imported"
}
listed q3sw qwen3 's/"full_attention"$/"sliding_attention"/; s/"use_sliding_window": false/"use_sliding_window": true/; s/"sliding_window": null/"sliding_window": 4/' 'sliding_layers: \[1\]'
listed o3types olmo3 '0,/"sliding_attention",/s/"sliding_attention",/"full_attention",/' 'sliding_layers: \[1, 2\]'
pass "q3sw, o3types: layer types other than a pattern imported as model.sliding_layers and exported as they were"
export_refused() {  # TAG MESSAGE KEY=VALUE...: a Llama with the keys trains a step; its hf export is refused
    tag=$1 want=$2
    shift 2
    (run_mpi 1 "$ACCEL_TRAIN" model.name=llama model.layers=2 model.width=16 model.heads=2 model.context=16 \
        model.vocab=256 data.path=synthetic train.steps=1 train.global_batch=2 train.sample_tokens=0 \
        "ckpt.dir=$tag" ckpt.every=1 "$@" > "$tag.log" 2>&1) || { cat "$tag.log"; fail "training a Llama with $*"; }
    expect_fail "$want" "$CKPT" export "$tag/step-00000001.h5" --format hf --output "$tag.hf"
}
# A window layout no Hugging Face family has: Mixtral's experts whose layers slide but every 2nd
# (a Llama's go out as Ministral's, Qwen3-MoE's as Mellum's).
export_refused swp "has no Hugging Face counterpart here" model.sliding_window=4 model.sliding_window_pattern=2 \
    model.experts=2 model.experts_per_token=1
# Norms after the sublayers with per-head q/k norms are EXAONE 4's, whose full layers are exactly its
# layers without RoPE: a window pattern without them is refused.
export_refused ex4nope "norms after the sublayers with per-head q/k norms in this combination" \
    model.norm_position=post model.qk_norm=true model.sliding_window=4 model.sliding_window_pattern=2
# LongRoPE goes out as Phi-3's, which has Llama's blocks: with q, k, v biases, refused.
export_refused lrbias "model.rope_scaling=longrope with attention biases has no Hugging Face counterpart" \
    model.rope_scaling=longrope model.rope_short_factor=1,2,3,4 model.rope_long_factor=2,3,4,5 model.attention_bias=true
# Layers without RoPE are SmolLM3's, which has Llama's blocks: with Qwen3's q/k norms, refused.
export_refused nope "layers without RoPE (model.no_rope_pattern=2) with q/k norms have no Hugging Face counterpart" \
    model.no_rope_pattern=2 model.qk_norm=true
# GeGLU alone (Llama's norms and embeddings otherwise) is no Gemma: refused.
export_refused geglu "model.activation=gelu_tanh, model.embed_scale=1, model.norm_position=pre, model.qk_norm=false have no Hugging Face counterpart" \
    model.activation=gelu_tanh
# Sinks on a dense Llama are no gpt-oss (whose MLP is biased experts of clamped SwiGLU): refused.
export_refused sinks "model.attention_sinks=true, model.attention_out_bias=false, model.expert_bias=false, model.activation=silu in this combination have no Hugging Face counterpart" \
    model.attention_sinks=true
refused topk mixtral 's/"num_experts_per_tok": 2/"num_experts_per_tok": 5/' "4 experts with num_experts_per_tok = 5"
refused experts mixtral 's/"num_local_experts": 4/"num_local_experts": 3/' "gate.weight has shape [4, 16], but config.json gives [3, 16]"
refused tie gpt2 's/"tie_word_embeddings": true/"tie_word_embeddings": false/' "tie_word_embeddings = false"
bad untied llama_gqa && sed -i 's/"tie_word_embeddings": false/"tie_word_embeddings": true/' untied/config.json
expect_fail "tie_word_embeddings = true, but lm_head.weight differs" "$GEN" untied -q --prompt a
# Llama's attention_bias means q, k, v and o biases (llama_bias above): a file without them is refused.
refused lbias llama_gqa 's/"attention_bias": false/"attention_bias": true/' "tensor model.layers.0.self_attn.q_proj.bias is missing"
# Part of each head turned is GLM's, Phi-3's, MiniMax-M2's, Nemotron's and StableLM's alone: another family's partial_rotary_factor is
# refused on import, an odd count of values too, and partial RoPE with q/k norms on export.
refused llpart llama_gqa 's/"model_type": "llama",/"model_type": "llama", "partial_rotary_factor": 0.5,/' \
    "partial_rotary_factor = 0.5 on LlamaForCausalLM: accel turns part of a head for GLM, Phi-3, MiniMax-M2"
refused glmodd glm 's/"partial_rotary_factor": 0.5/"partial_rotary_factor": 0.375/' "partial_rotary_factor = 0.375 turns 3 of a head's 8 values"
export_refused glmqk "model.rope_dim=4 or model.norm_position=pre without Gemma's norms, with other parts, has no Hugging Face counterpart" \
    model.rope_dim=4 model.qk_norm=true
# An output projection bias with q/k norms is neither Llama's nor Seed-OSS's: its export is refused.
export_refused q3obias "model.attention_out_bias=true with q/k norms has no Hugging Face counterpart" \
    model.attention_out_bias=true model.qk_norm=true
# ERNIE 4.5's routing renormalizes its top k: without, softmax routing with a selection bias has no
# Hugging Face family; its bias-carrying projections and sparse layers other than every one after
# the dense ones are refused on import.
export_refused erniek "softmax routing with a selection bias in this combination has no Hugging Face counterpart" \
    model.experts=4 model.experts_per_token=2 model.router_select_bias=true model.router_norm_topk=false
# The query temperature beside experts without latent attention, HunYuan's norms after RoPE with a
# window: no Hugging Face family has them.
export_refused qsmoe "model.query_scale_beta with experts has no Hugging Face counterpart" \
    model.query_scale_beta=0.1 model.query_scale_context=4 model.experts=2 model.experts_per_token=1
export_refused hysw "model.qk_norm_after_rope=true in this combination has no Hugging Face counterpart" \
    model.qk_norm=true model.qk_norm_after_rope=true model.sliding_window=4
# MiniMax-M2: Mixtral's load-balancing loss over a softmax has no place beside its sigmoid router;
# its combination with a shared expert or RoPE scaling has no Hugging Face family.
refused mm2aux minimax_m2 's/"output_router_logits": false/"output_router_logits": true/' \
    "output_router_logits = true: transformers then adds Mixtral's load-balancing loss"
export_refused mm2yarn "sigmoid experts with the selection bias under whole-projection q/k norms in this combination" \
    model.experts=4 model.experts_per_token=2 model.router_scores=sigmoid model.router_select_bias=true \
    model.qk_norm=true model.qk_norm_scope=all model.rope_scaling=linear model.rope_factor=2
# InternLM3's qkv_bias and bias put biases on the MLP too (transformers needs both alike).
refused ilmbias internlm3 's/"mlp_bias": false/"mlp_bias": false, "qkv_bias": true, "bias": true/' \
    "qkv_bias / bias = true on InternLM3ForCausalLM: they put biases on the MLP too"
# Dense latent attention is Youtu-LLM's with Llama's blocks alone: with Gemma's embedding scale its
# export is refused.
export_refused ytemb "latent attention (model.kv_lora_rank=8) in this combination has no Hugging Face counterpart" \
    model.kv_lora_rank=8 model.head_dim=8 model.rope_dim=4 model.embed_scale=2
# Mellum's layers have RoPE on the whole head, unscaled: its export with YaRN is refused.
export_refused mlmyarn "Qwen3-MoE's experts with leading dense blocks or a window pattern in this combination" \
    model.experts=4 model.experts_per_token=2 model.qk_norm=true model.dense_layers=1 model.rope_scaling=yarn \
    model.rope_factor=2 model.rope_original_context=8
# K-EXAONE's dense blocks lead: a dense block after a sparse one is refused.
refused kexsparse exaone_moe '25s/"sparse",/"dense",/' 'mlp_layer_types[2] is not "sparse" after the dense blocks'
refused erniebias ernie4_5 's/"use_bias": false/"use_bias": true/' "use_bias = true: accel's ERNIE 4.5 has no biases"
refused hyalpha hunyuan_dense 's/"alpha": 1000.0/"alpha": 0.0/' "rope_scaling type = dynamic"
refused ernieint ernie4_5_moe 's/"moe_layer_interval": 1/"moe_layer_interval": 2/' \
    "moe_layer_interval = 2: accel's blocks with experts are every block after the leading dense ones"
# GLM-4.5 / dots.llm1: experts left in no block, groups that cannot hold a token's experts, and a
# dots.llm1 size transformers has no default for.
refused glmdense glm4_moe 's/"first_k_dense_replace": 1/"first_k_dense_replace": 3/' "first_k_dense_replace = 3 of 3 layers: accel needs experts in at least one block"
refused glmgroups glm4_moe 's/"n_group": 4/"n_group": 3/' "n_group = 3, topk_group = 2 for 8 experts, 2 a token"
# Fine-grained FP8 (qwen3_fp8: e4m3 weights by blocks of 12 x 8, the edges partial): its
# quantization_config must give the blocks, an FP8 tensor needs one, and its scales must be there.
refused fp8nob qwen3_fp8 's/^      12,$/      0,/' "quantization_config fp8 with weight_block_size not two positive integers"
refused fp8noq qwen3_fp8 's/"quantization_config"/"quantization_cfg"/' "is F8_E4M3, but config.json declares no fp8 quantization_config"
bad fp8nos qwen3_fp8 && perl -pi -e 's/layers\.1\.mlp\.up_proj\.weight_scale_inv/layers.1.mlp.up_proj.weight_scale_inx/' fp8nos/model.safetensors
expect_fail "tensor model.layers.1.mlp.up_proj.weight_scale_inv is missing (the scales of FP8 model.layers.1.mlp.up_proj.weight)" \
    "$CKPT" import fp8nos -o x.h5
# Per-tensor FP8 (ministral3_fp8: weight_block_size null, one scale a weight, static activation
# scales beside): a weight_block_size that is neither a list nor null is refused.
refused fp8wbs ministral3_fp8 's/"weight_block_size": null/"weight_block_size": 128/' "quantization_config fp8 with weight_block_size neither a list nor null"
refused dsv2tk deepseek_v2 's/"topk_method": "greedy"/"topk_method": "noaux_tc"/' "topk_method = noaux_tc: accel routes DeepSeek-V2 by greedy or group_limited_greedy"
refused dsvhd deepseek_v3 's/"v_head_dim": 6/"v_head_dim": 12/' "v_head_dim = 12, kv_lora_rank = 10, q_lora_rank = 12: accel's latent attention needs"
refused dssoft deepseek_v3 's/"model_type": "deepseek_v3",/"model_type": "deepseek_v3", "scoring_func": "softmax",/' "scoring_func = softmax: accel's DeepSeek-V3 router scores by sigmoid"
refused litetypes glm4_moe_lite 's/^    "sparse"$/    "dense"/' 'mlp_layer_types[2] is not "sparse" after the dense blocks'
refused m4partial mistral4 's/"partial_rotary_factor": 0.4/"partial_rotary_factor": 0.5/' "partial_rotary_factor = 0.5 turns 5 of a head's 10 values, not qk_rope_head_dim = 4"
refused m3beta ministral3 's/"llama_4_scaling_beta": 0.3/"llama_4_scaling_beta": -1/' "llama_4_scaling_beta = -1 with original_max_position_embeddings = 4"
refused m3text ministral3_vl 's/"model_type": "ministral3"/"model_type": "pixtral_text"/' \
    "Mistral3ForConditionalGeneration with a language model accel does not run: text_config model_type pixtral_text"
refused dotsnoe dots1 '/"n_routed_experts"/d' "n_routed_experts is missing (Dots1ForCausalLM has no default for it)"
refused gelu gpt2 's/"gelu_new"/"relu"/' "activation_function = relu"
# LayerNorms and plain MLPs: StableLM's per-head q/k LayerNorms and parallel blocks (StableLM 2 12B)
# are refused, a plain MLP of another activation too; each family's parts and the other families'
# combinations refused on export.
refused slmqk stablelm 's/"qk_layernorm": false/"qk_layernorm": true/' "qk_layernorm = true: accel's StableLM blocks"
refused slmpar stablelm 's/"use_parallel_residual": false/"use_parallel_residual": true/' "use_parallel_residual = true"
refused nemsilu nemotron 's/"hidden_act": "relu2"/"hidden_act": "silu"/' \
    "hidden_act = silu on NemotronForCausalLM: accel's plain MLP takes relu2, the tanh GELU"
refused sc2part starcoder2 's/"model_type": "starcoder2",/"model_type": "starcoder2", "partial_rotary_factor": 0.5,/' \
    "partial_rotary_factor = 0.5 on Starcoder2ForCausalLM"
export_refused arceeoff "model.norm=rms with model.mlp=plain (ArceeForCausalLM) and model.norm_unit_offset" \
    model.mlp=plain model.activation=relu2 model.norm_unit_offset=true
export_refused sc2bias "biases on some projections and not others (StarCoder2's use_bias is every projection's)" \
    model.norm=layer model.mlp=plain model.activation=gelu_tanh model.attention_bias=true
export_refused jaiswin "and a sliding window (StarCoder2's" \
    model.norm=layer model.mlp=plain model.activation=relu2 model.sliding_window=4
export_refused slmqkn "experts, latent attention, q/k norms" model.norm=layer model.qk_norm=true
refused neoxact gpt_neox 's/"hidden_act": "gelu"/"hidden_act": "silu"/' \
    "hidden_act = silu on GPTNeoXForCausalLM: accel's plain MLP takes relu2, the tanh GELU"
refused neoxffn gpt_neox 's/"intermediate_size": 64/"intermediate_size": 48/' \
    "gpt_neox.layers.0.mlp.dense_h_to_4h.weight has shape [64, 32], but config.json gives [48, 32]"
export_refused onenorm "(GPTNeoXForCausalLM) and model.parallel_block (GPT-NeoX's two_norms" model.norm=layer model.mlp=plain \
    model.activation=gelu model.mlp_bias=true model.parallel_block=one_norm
export_refused neoxgqa "grouped-query heads, model.head_dim, an MLP without biases" model.norm=layer model.mlp=plain \
    model.activation=gelu model.mlp_bias=true model.kv_heads=1
refused cohqk cohere 's/"use_qk_norm": false/"use_qk_norm": true/' "use_qk_norm = true: accel's Cohere blocks have no per-head LayerNorms"
refused cohscale cohere 's/"logit_scale": 0.25/"logit_scale": 0/' "logit_scale = 0: accel needs a number in (0, 1e6]"
refused phiqk phi 's/"qk_layernorm": false/"qk_layernorm": true/' "qk_layernorm = true: accel's Phi blocks"
refused gptjrot gptj 's/"rotary_dim": 4/"rotary_dim": null/' "rotary_dim is missing or null"
export_refused headb "model.head_bias (Phi's and GPT-J's alone)" model.head_bias=true model.tie_embeddings=false
export_refused lnnob "LayerNorms without biases (Cohere's alone: SwiGLU beside attention through norm1)" \
    model.norm=layer model.norm_bias=false
export_refused cohwin "layers without RoPE (but Cohere 2's full ones)" model.norm=layer model.norm_bias=false \
    model.parallel_block=one_norm model.sliding_window=4 model.sliding_window_pattern=2
# Qwen3.5: full attention layers other than every N-th, value heads not a multiple of the key
# heads; its parts with other families' refused on export.
refused q35types qwen3_5 '0,/"linear_attention",/s//"full_attention",/' \
    "layer_types[1] = linear_attention: accel's full attention layers are every N-th"
refused q35heads qwen3_5 's/"linear_num_value_heads": 4/"linear_num_value_heads": 3/' \
    "linear_num_value_heads = 3 is not a multiple of linear_num_key_heads = 2"
refused nextdense qwen3_next 's/"mlp_only_layers": \[\]/"mlp_only_layers": [1]/' \
    "mlp_only_layers with 1 layers: some blocks have a dense MLP"
refused q35conv qwen3_5 's/"linear_conv_kernel_dim": 4/"linear_conv_kernel_dim": 3/' \
    "linear_attn.conv1d.weight has shape [40, 1, 4], but config.json gives [40, 1, 3]"
export_refused q35gate "model.attention_output_gate=true with gated delta-net layers without attention's output gate" \
    model.attention_output_gate=true
export_refused q35norm "norms by weight, not 1 + weight" model.linear_attention_pattern=2 \
    model.attention_output_gate=true model.qk_norm=true
export_refused q35moe "experts other than Qwen3.5-MoE's" model.linear_attention_pattern=2 \
    model.attention_output_gate=true model.qk_norm=true model.norm_unit_offset=true model.experts=2 \
    model.experts_per_token=1
# LFM2: convolution biases, a layer type of another family, a convolution wider than its weights;
# short convolutions with other families' parts refused on export.
refused lfm2bias lfm2 's/"conv_bias": false/"conv_bias": true/' "conv_bias = true: accel's short convolutions have no biases"
refused lfm2type lfm2 '0,/"conv",/s//"sliding_attention",/' \
    "layer_types[0] = sliding_attention: LFM2's layers are conv or full_attention"
refused lfm2conv lfm2 's/"conv_L_cache": 3/"conv_L_cache": 4/' \
    "conv.conv.weight has shape [16, 1, 3], but config.json gives [16, 1, 4]"
export_refused lfm2qk "model.short_conv_kernel=3 with attention without per-head q/k norms" \
    model.short_conv_kernel=3 "model.attention_layers=[1]"
export_refused lfm2moe "model.short_conv_kernel=3 with latent attention, or experts other than LFM2-MoE's" \
    model.short_conv_kernel=3 model.qk_norm=true model.experts=2 model.experts_per_token=1
refused g4proj granite4_h 's/"mamba_proj_bias": false/"mamba_proj_bias": true/' \
    "mamba_proj_bias = true: accel's Mamba-2 projections have no biases"
refused g4step granite4_h '/"time_step_limit": \[/,/^  \],/c\
  "time_step_limit": [0.0, 10.0],' "time_step_limit other than [0, inf]"
refused g4type granite4_h '0,/"linear_attention",/s//"sliding_attention",/' \
    "layer_types[0] = sliding_attention: Granite 4.0-H's layers are mamba or attention"
refused g4pos granite4_h 's/"position_embedding_type": "nope"/"position_embedding_type": "alibi"/' \
    "position_embedding_type = alibi"
export_refused g4qk "model.mamba_heads=4 with q/k norms" model.mamba_heads=4 "model.attention_layers=[1]" \
    model.qk_norm=true
refused bambaidx bamba 's/"attn_layer_indices": \[/"attn_layer_indices": [9, /' \
    "attn_layer_indices[0] = 9: accel needs layer numbers below num_hidden_layers = 4"
export_refused bambaqk "model.rope_dim half the head (Bamba's) and q/k norms" model.mamba_heads=2 \
    "model.attention_layers=[1]" model.rope_dim=4 model.qk_norm=true
refused nhmlpb nemotron_h_moe 's/"mlp_bias": false/"mlp_bias": true/' "mlp_bias = true: accel's Nemotron-H projections"
refused nhact nemotron_h 's/"mamba_hidden_act": "silu"/"mamba_hidden_act": "gelu"/' "mamba_hidden_act = gelu"
refused nhtype nemotron_h '0,/"linear_attention",/s//"sliding_attention",/' \
    "layer 0's type is not Mamba-2, attention, an MLP or experts"
refused nhorder nemotron_h_moe '/"layers_block_type": \[/,/^  \],/c\
  "layers_block_type": ["linear_attention", "moe", "full_attention", "moe", "linear_attention", "mlp"],' \
    "layer 5 is a dense MLP after layer 1's experts"
refused nhbias nemotron_h 's/"use_bias": false/"use_bias": true/' "use_bias = true: accel's Nemotron-H projections"
export_refused nhwhole "model.mlp_only_layers / model.mixer_only_layers with a layer with both sublayers" \
    "model.mixer_only_layers=[0]" model.mlp=plain model.activation=relu2 model.no_rope_pattern=1 \
    model.tie_embeddings=false
export_refused nhlat "model.expert_latent=4 outside Nemotron-H's layers" model.experts=2 model.experts_per_token=1 \
    model.expert_latent=4
export_refused nhrope "model.mlp_only_layers / model.mixer_only_layers with RoPE or a window" \
    "model.mixer_only_layers=[0]" "model.mlp_only_layers=[1]" model.mlp=plain model.activation=relu2 \
    model.tie_embeddings=false
refused ohtypes olmo_hybrid '0,/"linear_attention"/s//"full_attention"/' \
    "layer_types[1] = linear_attention: accel's full attention layers are every N-th"
export_refused ohgate "model.linear_attention_pattern=2 with model.norm_position=post (OLMo Hybrid's) and gated attention" \
    model.linear_attention_pattern=2 model.norm_position=post model.qk_norm=true model.qk_norm_scope=all \
    model.attention_output_gate=true model.linear_norm_eps=1e-5
export_refused ohqwen "OLMo Hybrid's delta-nets" model.linear_attention_pattern=2 model.attention_output_gate=true \
    model.qk_norm=true model.norm_unit_offset=true model.linear_allow_neg_eigval=true
refused l4types llama4 '0,/"chunked_attention",/s//"full_attention",/' \
    "layer_types[0] = full_attention: accel's Llama 4 attends in chunks on its layers with RoPE"
refused l4experts llama4 's/"num_local_experts": 4/"num_local_experts": 0/' "num_local_experts = 0"
export_refused l4keys "Llama 4's keys" model.sliding_window=4 model.sliding_chunked=true
export_refused l4router "model.expert_input_scaled (Llama 4's experts) with experts other than Llama 4's" \
    model.experts=2 model.experts_per_token=1 model.expert_input_scaled=true
refused mambabias mamba 's/"use_bias": false/"use_bias": true/' "use_bias = true: accel's Mamba-1 projections"
export_refused m1mlp "attention or MLP layers (Mamba's layers are each a Mamba-1 mixer alone)" model.mamba1_width=32 \
    model.mamba_state=4 model.mixer_only_layers=0
refused jambabias jamba 's/"mamba_proj_bias": false/"mamba_proj_bias": true/' "mamba_proj_bias = true: accel's Mamba-1"
export_refused j1norm "Mamba-1 layers without weighted norms on dt, B and C" model.mamba1_width=32 model.mamba_state=4 \
    model.attention_layers=1 model.no_rope_pattern=1
refused apact apertus 's/"hidden_act": "xielu"/"hidden_act": "relu2"/' "hidden_act = relu2 on ApertusForCausalLM"
export_refused apnoqk "xielu without per-head q/k norms before RoPE on every layer (Apertus has them)" model.mlp=plain \
    model.activation=xielu
refused lfm3bias lfm3 's/"attention_bias": false/"attention_bias": true/' "attention_bias = true: accel's LFM3 attention"
refused lfm3type lfm3 '0,/"conv",/s//"linear_attention",/' \
    "layer_types[0] = linear_attention: LFM3's layers are conv, sliding_attention or full_attention"
export_refused lfm3pat "a window pattern (model.sliding_layers says which layers slide)" model.short_conv_kernel=3 \
    "model.attention_layers=[1]" model.qk_norm=true model.norm_position=both model.sliding_window=4 \
    model.sliding_window_pattern=2
export_refused normeps "model.router_norm_eps=1e-06 outside LFM2-MoE" model.experts=2 model.experts_per_token=1 \
    model.router_scores=sigmoid model.router_norm_eps=1e-6
expect_fail "nowhere: No such file or directory" "$CKPT" import "$SCRATCH/nowhere" -o x.h5
expect_fail "neither model.safetensors nor model.safetensors.index.json" sh -c "mkdir -p empty && cp '$FIX/gpt2/config.json' empty/ && '$CKPT' import empty -o x.h5"
pass "bad Hugging Face input refused with messages"

# ---------------------------------------------------------------- 6: FP8 and NVFP4 exports
# export --dtype fp8 (compressed-tensors' FP8-dynamic): the blocks' linear layers float8 e4m3 by rows
# with F32 scales, the rest bf16; accel reads it back (each weight within 1/16 of the original: e4m3
# keeps three mantissa bits), generates from it, and refuses fp8 for the other formats.
"$CKPT" export llama_gqa.h5 --format hf --dtype fp8 --output fp8.hf > /dev/null || fail "export --dtype fp8"
grep -q '"float-quantized"' fp8.hf/config.json && grep -q '"lm_head"' fp8.hf/config.json ||
    fail "fp8.hf: its quantization_config (the format, lm_head left in bf16)"
"$CKPT" import fp8.hf -o fp8.h5 > /dev/null 2>&1 || fail "import of the FP8 export"
rel=$("$CKPT" diff llama_gqa.h5 fp8.h5 2>&1 | sed -n 's/.*max_rel \([0-9.e+-]*\).*/\1/p')
awk -v r="$rel" 'BEGIN { exit !(r != "" && r + 0 > 0.01 && r + 0 <= 0.0625) }' ||
    fail "the FP8 export's weights are not within 1/16 of the original (max_rel '$rel')"
"$GEN" fp8.hf -q --score "$FIX/llama_gqa/tokens.bin" > /dev/null 2>&1 || fail "accel_generate on the FP8 export"
expect_fail "fp8, nvfp4: with --format hf" "$CKPT" export llama_gqa.h5 --format safetensors --dtype fp8 --output x.safetensors
expect_fail "none of this model's matrices is a linear layer" "$CKPT" export gpt2.h5 --format hf --dtype fp8 --output x.hf
pass "export --dtype fp8: e4m3 weights by rows within 1/16 (max_rel $rel), read back by accel"
# NVFP4 (weights only): e2m1 by groups of 16, each value within about a sixth of its group's
# largest (the fixture's weights reach about 1.2: 0.25 bounds it); read back and generated from.
"$CKPT" export llama_gqa.h5 --format hf --dtype nvfp4 --output nvfp4.hf > /dev/null || fail "export --dtype nvfp4"
grep -q '"nvfp4-pack-quantized"' nvfp4.hf/config.json || fail "nvfp4.hf: its quantization_config"
"$CKPT" import nvfp4.hf -o nvfp4.h5 > /dev/null 2>&1 || fail "import of the NVFP4 export"
abs=$("$CKPT" diff llama_gqa.h5 nvfp4.h5 2>&1 | sed -n 's/.*max_abs \([0-9.e+-]*\),.*/\1/p')
awk -v a="$abs" 'BEGIN { exit !(a != "" && a + 0 > 0.01 && a + 0 <= 0.25) }' ||
    fail "the NVFP4 export's weights are not within a group's step of the original (max_abs '$abs')"
"$GEN" nvfp4.hf -q --score "$FIX/llama_gqa/tokens.bin" > /dev/null 2>&1 || fail "accel_generate on the NVFP4 export"
pass "export --dtype nvfp4: e2m1 by groups of 16 (max_abs $abs), read back by accel"

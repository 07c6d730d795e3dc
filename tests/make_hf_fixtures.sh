#!/bin/sh
# Regenerates the Hugging Face fixtures (tests/fixtures/hf/<name>/) that tests/hf_import.sh imports,
# runs and exports: tests/hf_reference.py builds seventy-three tiny random models (GPT2LMHeadModel;
# LlamaForCausalLM with GQA and an untied head, and with attention_bias (q, k, v, o); SeedOssForCausalLM
# with an o_proj bias alone; GlmForCausalLM and Glm4ForCausalLM with RoPE on part of each head; MistralForCausalLM, with and without a sliding
# window; Qwen2ForCausalLM with its q/k/v biases; Qwen3ForCausalLM with q/k norms and head_dim apart
# from the width, and with YaRN; Llama with llama3 rope_scaling; one saved sharded with
# model.safetensors.index.json; one in bf16; MixtralForCausalLM, Qwen3MoeForCausalLM,
# Qwen2MoeForCausalLM and OlmoeForCausalLM with 4 experts; Phi3ForCausalLM with a sliding window, and with LongRoPE as Phi-3.5-mini (short factors) and Phi-4-mini (long factors, 3/4 of each head); Exaone4ForCausalLM with three sliding layers and a full one without RoPE; Qwen3ForCausalLM in fine-grained FP8 (e4m3 by blocks, scored dequantized); Ministral3ForCausalLM with the query temperature, alone, in per-tensor FP8 and as the language model of a Mistral3ForConditionalGeneration; Mistral4ForCausalLM (latent attention, softmax experts stacked as transformers 5 saves them); Glm4MoeLiteForCausalLM (GLM-4.7-Flash); Ernie4_5ForCausalLM (interleaved RoPE pairs) and Ernie4_5_MoeForCausalLM (softmax routing with a selection bias); HunYuanDenseV1ForCausalLM (q/k norms after RoPE, NTK alpha); MiniMaxM2ForCausalLM (sigmoid experts with a selection bias under whole-projection q/k norms, RoPE on half of each head); SolarOpenForCausalLM (GLM-4.5's experts in every block, q/k/v biases); HeliumForCausalLM (interleaved RoPE pairs, q/k/v biases); Llama saved as InternLM3ForCausalLM and IQuestCoderForCausalLM; ExaoneMoeForCausalLM (K-EXAONE: EXAONE 4's window and NoPE layer under norms before, a dense block, DeepSeek-V3's experts, an MTP block under mtp.); YoutuForCausalLM (latent attention on dense blocks, tied); MellumForCausalLM (Qwen3-MoE with 3 sliding layers of plain RoPE at their own theta, a full one, a dense block, an MTP block under mtp.); Qwen3VLForConditionalGeneration and Qwen3VLMoeForConditionalGeneration (tiny vision towers; the MoE's experts saved as x @ W as the hub's); Qwen2_5_VLForConditionalGeneration with the hub's flat config.json; Glm4vMoeForConditionalGeneration with an MTP block; Glm4vForConditionalGeneration; MinistralForCausalLM (every other layer sliding); Starcoder2ForCausalLM (LayerNorms, c_fc -> tanh GELU -> c_proj, biases, a window), NemotronForCausalLM (LayerNorm1P, relu2, RoPE on half of each head, biases), Jais2ForCausalLM (LayerNorms, relu2, biases), ArceeForCausalLM (relu2 under RMSNorms, YaRN) and StableLmForCausalLM (LayerNorms over SwiGLU, q/k/v biases, RoPE on a quarter of each head); GPTNeoXForCausalLM as Pythia (q, k, v fused by head, the exact GELU, attention and the MLP side by side, RoPE on a quarter of each head) and one after the other with the tanh GELU; CohereForCausalLM (LayerNorms without biases, SwiGLU beside attention, interleaved RoPE pairs, logit_scale) and Cohere2ForCausalLM (three sliding layers, a full one without RoPE, q/k/v/o biases); PhiForCausalLM and GPTJForCausalLM (the MLP beside attention through one norm, a biased LM head; GPT-J's RoPE pairs interleaved); DeepseekV3ForCausalLM with latent attention, as DeepSeek-V3 (YaRN with mscale, an MTP block stored) and as Moonlight (no query latent, RoPE pairs not interleaved); DeepseekV2ForCausalLM as DeepSeek-V2-Lite (softmax routing), and routed by group_limited_greedy as V2;
# Olmo2ForCausalLM; Olmo3ForCausalLM with every 4th layer full and YaRN on those; SmolLM3ForCausalLM
# with every 4th layer without RoPE; GraniteForCausalLM with its four scalars, and GraniteMoeForCausalLM with them on 4 experts; GemmaForCausalLM; Gemma2ForCausalLM with its soft caps;
# Gemma3ForCausalLM, and the same as the
# language model of a Gemma3ForConditionalGeneration with a tiny vision tower; GptOssForCausalLM
# with attention sinks, a sliding layer, YaRN and clamped SwiGLU experts, and the same saved with
# its experts in MXFP4 as the hub's gpt-oss), saves them with save_pretrained and records HF's fp32 logits and loss on
# fixed tokens (the mixtures of experts, SmolLM3, Granite and the Gemmas scored in float64; the
# compressed-tensors Llamas (INT8 packed, FP8 by channel, tensor and block, W8A8 INT8, NVFP4: written
# by compressed_tensors' own compressors) scored dequantized in float64);
# then tests/peft_reference.py makes PEFT LoRA adapters on some of them (tests/fixtures/peft) and
# records the merged models' logits (peft from PyPI besides), and tests/lora_reference.py trains one
# with PEFT and torch's AdamW (tests/fixtures/lora_train), the oracle of accel's LoRA training.
#
# Python is an oracle here, never a dependency of accel: `make check` only reads the committed
# fixtures. With ROUNDTRIP=1 (and accel built in the tree) it then runs tests/hf_roundtrip.py:
# from_pretrained on accel's export --format hf, missing/unexpected keys and logits vs accel.
#
#   tests/make_hf_fixtures.sh [NAME...]          (default: all, into tests/fixtures/hf)
#
# It uses the virtual environment bench/.venv at the top of the source tree (VENV=path to use
# another), creating it when missing: python3 -m venv bench/.venv, then
# bench/.venv/bin/pip install torch transformers safetensors numpy h5py (from PyPI).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/venv.sh"
python_with "import torch, transformers, safetensors, numpy, h5py" torch transformers safetensors numpy h5py

"$py" "$top/tests/hf_reference.py" "$top/tests/fixtures/hf" "$@"
# PEFT adapters on those fixtures (tests/fixtures/peft), when no names were given.
if [ $# = 0 ]; then
    python_with "import peft" peft
    (cd "$top/tests" && "$py" peft_reference.py fixtures/hf fixtures/peft)
    (cd "$top/tests" && "$py" lora_reference.py fixtures/hf fixtures/lora_train)
fi
if [ "${ROUNDTRIP:-0}" = 1 ]; then
    "$py" "$top/tests/hf_roundtrip.py" --build "${BUILD:-$top}"
    (cd "$top/tests" && "$py" peft_reference.py --check "${BUILD:-$top}" fixtures/hf fixtures/peft)
fi

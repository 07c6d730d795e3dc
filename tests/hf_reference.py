"""Tiny random Hugging Face models and their reference outputs for tests/hf_import.sh.

Run by tests/make_hf_fixtures.sh with the venv python (bench/.venv: torch, transformers,
safetensors, numpy; tests/make_hf_fixtures.sh makes it with `python3 -m venv bench/.venv &&
bench/.venv/bin/pip install torch transformers safetensors numpy h5py` when it is missing).

Each model is built from a config with random weights (no hub download), saved with
save_pretrained into tests/fixtures/hf/<name>/, and scored in float32 on fixed tokens:
  tokens.bin      context+1 byte tokens (accel_generate --score reads them as text)
  ref_logits.f32  float32 logits [context, vocab] of HF on tokens[:-1] (little-endian, raw)
  ref.json        {"loss": mean cross-entropy of tokens[1:], "context": T, "vocab": V, and for a model
                  whose fp32 logits are sensitive (opts "tol") "tolerance_scale": hf_compare's bars
                  times it}
Weights are drawn with a larger std than transformers' 0.02 so the logits are not all ~0 and a
wrong mapping cannot hide in rounding.
"""
import json
import os
import sys

import numpy as np
import torch
import transformers as tf

V, T = 256, 16


def gpt2():
    return tf.GPT2LMHeadModel(tf.GPT2Config(vocab_size=V, n_positions=T, n_embd=16, n_layer=2,
                                            n_head=4, activation_function="gelu_new",
                                            bos_token_id=0, eos_token_id=0))


def llama_gqa():
    return tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32,
                                              num_hidden_layers=2, num_attention_heads=4,
                                              num_key_value_heads=2, max_position_embeddings=T,
                                              rms_norm_eps=1e-6, rope_theta=500000.0,
                                              tie_word_embeddings=False, bos_token_id=1,
                                              eos_token_id=2))


def llama_bias():
    # Llama's attention_bias: biases on q, k, v and o alike.
    return tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32,
                                              num_hidden_layers=2, num_attention_heads=4,
                                              num_key_value_heads=2, max_position_embeddings=T,
                                              rms_norm_eps=1e-6, attention_bias=True,
                                              tie_word_embeddings=False, bos_token_id=1,
                                              eos_token_id=2))


def seed_oss():
    # Seed-OSS: a Llama whose q/k/v and o biases are keys of their own (here o alone) and whose
    # heads are apart from the width (4 x 8 over 16, as Seed-OSS-36B's 80 x 128 over 5120).
    return tf.SeedOssForCausalLM(tf.SeedOssConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
        attention_bias=False, attention_out_bias=True, attention_dropout=0.0, residual_dropout=0.0,
        rms_norm_eps=1e-6, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def glm():
    # GLM-4-9B's blocks: RoPE on the first half of each head (partial_rotary_factor 0.5) with its
    # pairs interleaved (values 2i and 2i + 1 turn together), q/k/v biases, a fused gate_up_proj.
    return tf.GlmForCausalLM(tf.GlmConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5,
        attention_bias=True, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def glm4():
    # GLM-4-0414: GLM's attention and MLP with norms after attention and the MLP too
    # (post_self_attn_layernorm, post_mlp_layernorm), RoPE on 3/4 of each head here.
    cfg = tf.Glm4Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5,
        attention_bias=True, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        partial_rotary_factor=0.75)
    return tf.Glm4ForCausalLM(cfg)


def llama_rope31():
    return tf.LlamaForCausalLM(tf.LlamaConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=T,
        rope_theta=10000.0, tie_word_embeddings=True,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8}))


def mistral():
    return tf.MistralForCausalLM(tf.MistralConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        sliding_window=None, tie_word_embeddings=False, head_dim=4))


def mistral_sw():
    # Mistral v0.1's sliding window, 4 keys of a 16-token context: every position past the fourth
    # forgets the start.
    return tf.MistralForCausalLM(tf.MistralConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        sliding_window=4, tie_word_embeddings=False))


def phi3():
    # Phi-3 / Phi-4: a Llama whose q|k|v and gate|up are one tensor each (qkv_proj, gate_up_proj),
    # here with Phi-3-mini-4k's kind of sliding window (6 keys of 16).
    return tf.Phi3ForCausalLM(tf.Phi3Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        original_max_position_embeddings=T, sliding_window=6, tie_word_embeddings=False,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def phi3_5():
    # Phi-3.5-mini's LongRoPE: each frequency divided by its short factor while the sequence fits the
    # original context (16 here, the fixture's 16 tokens), by its long one past it; cos and sin
    # scaled by sqrt(1 + ln 4 / ln 16) for the extension to 64.
    return tf.Phi3ForCausalLM(tf.Phi3Config(
        vocab_size=V, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4 * T,
        original_max_position_embeddings=T, sliding_window=None, tie_word_embeddings=False,
        rope_scaling={"rope_type": "longrope", "short_factor": [1.0, 1.25, 2.5, 6.0],
                      "long_factor": [1.5, 3.0, 9.0, 30.0]},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def phi4_mini():
    # Phi-4-mini: LongRoPE on 3/4 of each head (6 of 8 values: 3 factors), tied embeddings; the
    # original context is 8, so the fixture's 16 tokens take the long factors.
    return tf.Phi3ForCausalLM(tf.Phi3Config(
        vocab_size=V, hidden_size=32, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        original_max_position_embeddings=T // 2, sliding_window=None, tie_word_embeddings=True,
        partial_rotary_factor=0.75,
        rope_scaling={"rope_type": "longrope", "short_factor": [1.0, 2.0, 4.0],
                      "long_factor": [1.0, 5.0, 20.0]},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def exaone4():
    # EXAONE 4.0 (32B's layout): OLMo 2's norms after attention and the MLP, Qwen3's q/k norms on
    # each head (head_dim 8 over a width of 16), layers 0-2 sliding over 4 keys of 16 with RoPE
    # (Llama 3.1's scaling), layer 3 full and without RoPE.
    return tf.Exaone4ForCausalLM(tf.Exaone4Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
        sliding_window=4, sliding_window_pattern=4, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 8.0,
                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def exaone4_5_vl():
    # EXAONE 4.5: Exaone4_5_ForConditionalGeneration, a tiny vision tower of Qwen2.5-VL's kind beside
    # EXAONE 4's language model (the fixture exaone4's layout: layers 0-2 sliding with RoPE, layer 3
    # full without); scored on text.
    text = dict(model_type="exaone4", vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
                num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
                sliding_window=4, sliding_window_pattern=4, rms_norm_eps=1e-5, tie_word_embeddings=False,
                rope_parameters={"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 8.0,
                                 "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 8},
                pad_token_id=0, bos_token_id=1, eos_token_id=2)
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=16, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=1, window_size=16, fullatt_block_indexes=[0])
    return tf.Exaone4_5_ForConditionalGeneration(tf.Exaone4_5_Config(
        text_config=text, vision_config=vision, image_token_id=255, video_token_id=254,
        vision_start_token_id=253, vision_end_token_id=252, tie_word_embeddings=False))


def granite4_vision():
    # Granite Vision 4: Granite4VisionForConditionalGeneration, a tiny CLIP tower and Window Q-Former
    # projector (its features join the language model only at image tokens) beside Granite's
    # language model with its four scalars; scored on text.
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-6, tie_word_embeddings=False,
                embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=2.5,
                pad_token_id=0, bos_token_id=1, eos_token_id=2)
    vision = dict(model_type="clip_vision_model", hidden_size=64, intermediate_size=32, num_hidden_layers=1,
                  num_attention_heads=1, image_size=16, patch_size=4)
    return tf.Granite4VisionForConditionalGeneration(tf.Granite4VisionConfig(
        text_config=text, vision_config=vision, image_token_index=255, downsample_rate="1/2",
        deepstack_layer_map=[[0, 0]], spatial_target_layers=[0, 1, 0, 1], image_grid_pinpoints=[[16, 16]],
        qformer_config=dict(intermediate_size=32, num_hidden_layers=1), tie_word_embeddings=False))


# A tiny SigLIP tower, the VLMs' of the Idefics3 kind.
SIGLIP_TINY = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16,
                   patch_size=4)


def idefics3_kind(model_cls, config_cls, theta):
    """The tiny SigLIP tower and pixel-shuffle connector beside a Llama (model.text_model.*, GQA 2:1)
    as SmolVLM and Idefics3 lay them out; scored on text."""
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": theta},
                pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return model_cls(config_cls(text_config=text, vision_config=SIGLIP_TINY, scale_factor=2, image_token_id=255,
                                tie_word_embeddings=False))


def smolvlm():
    # SmolVLM / SmolVLM2 (HuggingFaceTB's): Idefics3's kind under its own class.
    return idefics3_kind(tf.SmolVLMForConditionalGeneration, tf.SmolVLMConfig, 100000.0)


def idefics3():
    # Idefics3 (HuggingFaceM4/Idefics3-8B-Llama3).
    return idefics3_kind(tf.Idefics3ForConditionalGeneration, tf.Idefics3Config, 500000.0)


def granite_docling():
    # Granite-Docling (IBM's 258M document converter): Granite's language model with its four
    # scalars (model.text_model.*, tied) beside a tiny SigLIP tower and connector; scored on text.
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=True,
                embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=2.5,
                pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return tf.GraniteDoclingForConditionalGeneration(tf.GraniteDoclingConfig(
        text_config=text, vision_config=dict(SIGLIP_TINY, out_hidden_size=16), image_token_id=255))


def hunyuan_moe():
    # Tencent's Hunyuan-A13B (HunYuanMoEV1ForCausalLM): HunYuan's attention (per-head q/k norms after
    # RoPE, its NTK alpha), every block 4 SwiGLU experts, the softmax's top 2 renormalized (router
    # mlp.gate.wg), beside an ungated shared MLP (mlp.shared_mlp), all of intermediate_size; the
    # per-layer lists of its hub config.
    return tf.HunYuanMoEV1ForCausalLM(tf.HunYuanMoEV1Config(
        vocab_size=V, hidden_size=16, intermediate_size=12, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, num_experts=4, moe_topk=[2, 2],
        rms_norm_eps=1e-5, tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2,
        rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "alpha": 1000.0, "factor": 1.0}))


def olmo2():
    # OLMo 2: norms after attention and the MLP (none before), q/k norms over the whole projections.
    return tf.Olmo2ForCausalLM(tf.Olmo2Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        rope_theta=500000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
        pad_token_id=0, bos_token_id=None, eos_token_id=1))


def olmo3():
    # OLMo 3: OLMo 2's blocks, every layer but each 4th sliding (4 keys of 16), YaRN on the
    # full-attention layers only (factor 4 over an original context of 4), plain RoPE on the others.
    return tf.Olmo3ForCausalLM(tf.Olmo3Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T, sliding_window=4,
        rope_parameters={"full_attention": {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 4.0,
                                            "original_max_position_embeddings": 4},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 500000.0}},
        rms_norm_eps=1e-6, tie_word_embeddings=False, pad_token_id=0, bos_token_id=None,
        eos_token_id=1))


def smollm3():
    # SmolLM3: a Llama whose every 4th layer has no RoPE (NoPE), tied, theta 2e6 as SmolLM3-3B's.
    return tf.SmolLM3ForCausalLM(tf.SmolLM3Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        rope_parameters={"rope_type": "default", "rope_theta": 2000000.0}, rms_norm_eps=1e-6,
        tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def gemma():
    # Gemma 1: a Llama with 1 + weight RMSNorms, GeGLU (legacy hidden_act "gelu" means the tanh
    # one), embeddings times sqrt(hidden_size), tied, head_dim 8 apart from the width.
    return tf.GemmaForCausalLM(tf.GemmaConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=1, head_dim=8, max_position_embeddings=T,
        hidden_act="gelu_pytorch_tanh", rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=2,
        eos_token_id=1))


def granite():
    # IBM Granite 3: a Llama with four scalars: embeddings times 3, scores by 0.2 (not
    # 1/sqrt(head_dim)), attention's and the MLP's outputs by 0.5 before the residual, logits / 2.5.
    return tf.GraniteForCausalLM(tf.GraniteConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=2.5,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, rms_norm_eps=1e-6,
        tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def granite_moe():
    # Granite 3 MoE: Granite's four scalars on Mixtral-like experts (4 of 12, 2 per token, the
    # top-2 logits softmaxed), every expert in one tensor: input_linear [E, 2F, C] (gate | up),
    # output_linear [E, C, F], router.layer.
    return tf.GraniteMoeForCausalLM(tf.GraniteMoeConfig(
        vocab_size=V, hidden_size=16, intermediate_size=12, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        num_local_experts=4, num_experts_per_tok=2, embedding_multiplier=3.0, attention_multiplier=0.2,
        residual_multiplier=0.5, logits_scaling=2.5, rms_norm_eps=1e-6, tie_word_embeddings=True,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def granite_moe_shared():
    # Granite MoE with a shared expert (granite-3.x-moe's successors): Granite MoE's experts and
    # scalars, and shared_mlp (input_linear [2S, C], gate | up; output_linear), ungated, beside them.
    return tf.GraniteMoeSharedForCausalLM(tf.GraniteMoeSharedConfig(
        vocab_size=V, hidden_size=16, intermediate_size=12, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        num_local_experts=4, num_experts_per_tok=2, shared_intermediate_size=20, embedding_multiplier=3.0,
        attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=2.5, rms_norm_eps=1e-6,
        tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def granite_swa():
    # Granite with sliding windows and sinks: Granite's scalars on Llama's blocks, the first of
    # every 4 layers full and the others sliding over 4 keys (GraniteSWAConfig's default pattern),
    # a sink logit per head, the sliding layers' RoPE at a base of their own (layer_rope_theta).
    return tf.GraniteSWAForCausalLM(tf.GraniteSWAConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=5,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T, sliding_window=4,
        layer_rope_theta=[100000.0, 10.0, 10.0, 10.0, 100000.0],
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0}, embedding_multiplier=3.0,
        attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=2.5, rms_norm_eps=1e-5,
        tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def granite_moe_swa():
    # Granite MoE with sliding windows and sinks (granite-swash): GraniteSWA's attention (every
    # other layer sliding here, its layer types given) over Granite MoE's experts and a shared MLP.
    return tf.GraniteMoeSWAForCausalLM(tf.GraniteMoeSWAConfig(
        vocab_size=V, hidden_size=16, intermediate_size=12, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T, sliding_window=4,
        layer_types=["sliding_attention", "full_attention"], num_local_experts=4, num_experts_per_tok=2,
        shared_intermediate_size=20, embedding_multiplier=3.0, attention_multiplier=0.2,
        residual_multiplier=0.5, logits_scaling=2.5, rms_norm_eps=1e-6, tie_word_embeddings=False,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def hyperclovax():
    # HyperCLOVA X SEED (NAVER): Granite's scalars on Llama's blocks with norms after attention and
    # the MLP too (Peri-LN: post_norm1, post_norm2, their outputs times residual_multiplier), its
    # logits_scaling a multiplier (Granite's divides), heads of 8 over the width 16.
    return tf.HyperCLOVAXForCausalLM(tf.HyperCLOVAXConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=T,
        embedding_multiplier=3.0, attention_multiplier=0.2, residual_multiplier=0.5, logits_scaling=0.5,
        use_post_norm=True, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def exaone():
    # EXAONE 3.0 / 3.5 (LG AI Research): Llama's blocks, which transformers builds as
    # LlamaForCausalLM (config model_type "exaone") and saves under the names of EXAONE's own code
    # (transformer.h.N.attn.attention.q_proj, mlp.c_fc_0 / c_fc_1 / c_proj, ln_1, ln_2), Llama 3's
    # RoPE scaling (EXAONE 3.5's), GQA 2:1.
    return tf.AutoModelForCausalLM.from_config(tf.ExaoneConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def gemma2():
    # Gemma 2: Gemma 3's four norms a block without q/k norms, one RoPE, every other layer sliding
    # (over 4 keys), scores soft-capped at 3 and logits at 4 (small, so that the tiny model's values
    # reach tanh's bend; Gemma 2 ships 50 and 30), query_pre_attn_scalar 6 (head_dim 8).
    return tf.Gemma2ForCausalLM(tf.Gemma2Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
        query_pre_attn_scalar=6, sliding_window=4, attn_logit_softcapping=3.0, final_logit_softcapping=4.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=2, eos_token_id=1))


def vaultgemma():
    # VaultGemma (Google's differentially private Gemma): Gemma 2's blocks without the norms after
    # the sublayers (its norm before the MLP named pre_feedforward_layernorm), every other layer
    # sliding over 4 keys, soft caps 3 and 4, query_pre_attn_scalar 6 (head_dim 8), tied.
    return tf.VaultGemmaForCausalLM(tf.VaultGemmaConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
        query_pre_attn_scalar=6, sliding_window=4, attn_logit_softcapping=3.0, final_logit_softcapping=4.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=2, eos_token_id=1))


def gemma3():
    # Gemma 3 (text): norms before and after attention and the MLP, per-head q/k norms, scores
    # scaled by 1/sqrt(query_pre_attn_scalar 6) (head_dim 8), layer 0 sliding over 4 keys with
    # plain RoPE of theta 10000, layer 1 full with theta 1e6 and linear scaling by 2.
    return tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
        query_pre_attn_scalar=6, sliding_window=4, layer_types=["sliding_attention", "full_attention"],
        rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        rms_norm_eps=1e-6, pad_token_id=0, bos_token_id=2, eos_token_id=1))


def gemma3_vl():
    # Gemma 3 4B and up: Gemma3ForConditionalGeneration, a SigLIP vision tower and projector beside
    # gemma3's language model (text_config), scored on text alone; accel imports the language model.
    text = gemma3().config.to_dict()
    vision = tf.SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                   num_attention_heads=2, image_size=28, patch_size=14)
    return tf.Gemma3ForConditionalGeneration(tf.Gemma3Config(
        text_config=text, vision_config=vision.to_dict(), mm_tokens_per_image=4, image_token_index=255,
        boi_token_index=253, eoi_token_index=254))


def olmoe():
    # OLMoE: Llama's blocks with OLMo's whole-projection q/k norms and 4 experts of 12, 2 per token.
    return tf.OlmoeForCausalLM(tf.OlmoeConfig(
        vocab_size=V, hidden_size=16, intermediate_size=12, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        num_experts=4, num_experts_per_tok=2, norm_topk_prob=False, rms_norm_eps=1e-5,
        tie_word_embeddings=False, pad_token_id=0, bos_token_id=None, eos_token_id=1))


def qwen2():
    return tf.Qwen2ForCausalLM(tf.Qwen2Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        rope_theta=1000000.0, tie_word_embeddings=True, use_sliding_window=False))


def qwen3():
    # head_dim 8 with 4 heads of a width-16 model: the attention is twice the width (Qwen3-0.6B's
    # 16 x 128 heads over a width of 1024 in small), with q/k norms and tied embeddings.
    return tf.Qwen3ForCausalLM(tf.Qwen3Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        use_sliding_window=False))


def mixtral():
    # 4 experts, 2 per token, renormalized; the load-balancing loss on (it changes training only).
    return tf.MixtralForCausalLM(tf.MixtralConfig(
        vocab_size=V, hidden_size=16, intermediate_size=24, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T,
        num_local_experts=4, num_experts_per_tok=2, output_router_logits=True,
        router_aux_loss_coef=0.02, sliding_window=None, tie_word_embeddings=False))


def qwen3_moe():
    # Qwen3's attention (head_dim 8 over width 16, q/k norms) and 4 experts of 12, 2 per token,
    # their weights as the softmax gives them (norm_topk_prob false).
    return tf.Qwen3MoeForCausalLM(tf.Qwen3MoeConfig(
        vocab_size=V, hidden_size=16, intermediate_size=12, moe_intermediate_size=12,
        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
        max_position_embeddings=T, num_experts=4, num_experts_per_tok=2, norm_topk_prob=False,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
        use_sliding_window=False))


def qwen2_moe():
    # Qwen2-MoE: q/k/v biases, 4 experts of 12, 2 per token as the softmax gives them, and a shared
    # expert of 20 gated by a sigmoid.
    return tf.Qwen2MoeForCausalLM(tf.Qwen2MoeConfig(
        vocab_size=V, hidden_size=16, intermediate_size=12, moe_intermediate_size=12,
        shared_expert_intermediate_size=20, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, num_experts=4, num_experts_per_tok=2,
        norm_topk_prob=False, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=False,
        use_sliding_window=False))


def gpt_oss():
    # gpt-oss: q/k/v/o biases, one learnt sink logit per head (a key without a value in the
    # softmax), layer 0 sliding over 4 keys and layer 1 full, YaRN on both as gpt-oss's (factor 4
    # over an original context of 4, beta 32/1, truncate false), 4 experts of 96 with biases, top 2
    # softmaxed over their own router logits, and a SwiGLU clamped at 1.5 (gpt-oss ships 7) so the
    # random weights hit it: gate above, up on both sides. gate_up_proj is [E, H, 2I] with gate and
    # up interleaved along 2I (gate j at 2j, up j at 2j + 1). Width 64 apart from the 4 x 8 heads,
    # and 64 and 96 inputs to the experts: 2 and 3 MXFP4 blocks of 32 a row in gpt_oss_mxfp4.
    return tf.GptOssForCausalLM(tf.GptOssConfig(
        vocab_size=V, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_local_experts=4,
        num_experts_per_tok=2, sliding_window=4, max_position_embeddings=T,
        rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0,
                         "original_max_position_embeddings": 4, "beta_fast": 32.0,
                         "beta_slow": 1.0, "truncate": False},
        swiglu_limit=1.5, tie_word_embeddings=False, pad_token_id=0, bos_token_id=None,
        eos_token_id=1))


# The shape GLM-4.5's and dots.llm1's fixtures share: layer 0 a dense SwiGLU of 24
# (first_k_dense_replace 1), layers 1-2 with 8 experts of 8, 2 a token.
DS_MOE = dict(vocab_size=V, hidden_size=16, intermediate_size=24, moe_intermediate_size=8,
              num_hidden_layers=3, first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=2,
              head_dim=8, n_routed_experts=8, num_experts_per_tok=2, max_position_embeddings=T,
              rope_theta=10000.0, tie_word_embeddings=False)


def glm4_moe():
    # GLM-4.5 (DeepSeek-V3's routing): the experts in 4 groups, each token's 2 chosen from its 2
    # best groups by sigmoid score plus the selection bias (e_score_correction_bias), weighted by
    # their scores renormalized and times 2.5, beside 2 ungated shared experts (one MLP of 16);
    # q/k/v biases, per-head q/k norms, RoPE on the first half of each head (rotate_half pairs, not
    # GLM's interleaved ones). One multi-token prediction block is declared: save_glm4_moe writes
    # its tensors as the hub's files have them, for accel to leave out.
    return tf.Glm4MoeForCausalLM(tf.Glm4MoeConfig(
        **DS_MOE, n_shared_experts=2, n_group=4, topk_group=2, routed_scaling_factor=2.5,
        norm_topk_prob=True, use_qk_norm=True, attention_bias=True, rms_norm_eps=1e-5,
        num_nextn_predict_layers=1))


def dots1():
    # rednote's dots.llm1: GLM-4.5's experts under Qwen3's attention (per-head q/k norms, RoPE on
    # the whole head, no biases): the experts in 2 groups, 2 a token from the best group, sigmoid
    # scores plus the selection bias, weights not renormalized (dots1's default) and times 1.5,
    # one ungated shared expert.
    return tf.Dots1ForCausalLM(tf.Dots1Config(
        **DS_MOE, n_shared_experts=1, n_group=2, topk_group=1, routed_scaling_factor=1.5,
        norm_topk_prob=False, rms_norm_eps=1e-6))


# DeepSeek-V3's latent attention: heads of 6 + 4 (RoPE on the 4, its pairs interleaved in the
# files), values of 6, keys and values from a latent of 10, queries through one of 12.
DS_MLA = dict(q_lora_rank=12, kv_lora_rank=10, qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=6)
DS_V3 = {k: v for k, v in DS_MOE.items() if k not in ("head_dim", "rope_theta", "num_key_value_heads")}


def deepseek_v3():
    # DeepSeek-V3 / R1, Kimi K2: latent attention (DS_MLA) and GLM-4.5's experts (DeepSeek-V3's
    # routing: 8 in 4 groups, 2 a token from the best 2 groups, scale 2.5, one ungated shared
    # expert, a dense first block), YaRN factor 4 over an original context of 4 with mscale 1 and
    # mscale_all_dim 0.5 (cos and sin by their ratio, the scores by the latter's squared). One
    # multi-token prediction block is declared and stored, as the hub's files have it.
    return tf.DeepseekV3ForCausalLM(tf.DeepseekV3Config(
        **DS_V3, **DS_MLA, num_key_value_heads=4, n_shared_experts=1, n_group=4, topk_group=2,
        routed_scaling_factor=2.5, norm_topk_prob=True, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 4, "beta_fast": 32.0, "beta_slow": 1.0,
                         "mscale": 1.0, "mscale_all_dim": 0.5}))


def moonlight():
    # Moonlight-16B-A3B's kind of DeepSeek-V3: queries by one projection (q_lora_rank null), one
    # group, plain RoPE, here with its pairs not interleaved (rope_interleave false).
    mla = dict(DS_MLA, q_lora_rank=None)
    return tf.DeepseekV3ForCausalLM(tf.DeepseekV3Config(
        **DS_V3, **mla, num_key_value_heads=4, n_shared_experts=2, n_group=1, topk_group=1,
        routed_scaling_factor=2.446, norm_topk_prob=True, rms_norm_eps=1e-5, rope_interleave=False,
        rope_parameters={"rope_type": "default", "rope_theta": 50000.0}))


def kimi_k2_int4():
    # Kimi K2 Thinking's kind of DeepSeek-V3 (Moonshot's): latent attention, one expert group, a
    # shared expert, scale 2.827, no MTP block; its routed experts in compressed-tensors' INT4 as
    # published (save_ct: 4 bits by groups of 8 here, 32 there), the rest plain.
    return tf.DeepseekV3ForCausalLM(tf.DeepseekV3Config(
        **DS_V3, **DS_MLA, num_key_value_heads=4, n_shared_experts=1, n_group=1, topk_group=1,
        routed_scaling_factor=2.827, norm_topk_prob=True, rms_norm_eps=1e-6, num_nextn_predict_layers=0,
        rope_parameters={"rope_type": "default", "rope_theta": 50000.0}))


def memory_slice(params, name):
    """The model's parameter (or its slice) a file tensor holds: transformers 5 keeps experts stacked
    in memory (gate_up_proj [E, 2F, C], gate first; down_proj [E, C, F]) and saves one each."""
    if name in params:
        return params[name]
    import re
    m = re.match(r"(.*\.experts)\.(\d+)\.(gate|up|down)_proj\.weight$", name)
    e, kind = int(m.group(2)), m.group(3)
    if kind == "down":
        return params[m.group(1) + ".down_proj"][e]
    gu = params[m.group(1) + ".gate_up_proj"][e]
    half = gu.shape[0] // 2
    return gu[:half] if kind == "gate" else gu[half:]


def kimi_k25():
    # Kimi K2.5 (Moonshot's): Kimi_K25ForConditionalGeneration, a tiny MoonViT tower and projector
    # beside Kimi K2 Thinking's language model (kimi_k2_int4's, its routed experts in INT4 as
    # published; the top level's quantization_config); the hub's names (language_model.model.layers.*:
    # transformers 5 saves "blocks" for them, its vision tower's renaming undone too widely);
    # scored on text.
    text = dict(DS_V3, **DS_MLA)
    text.update(model_type="deepseek_v3", num_key_value_heads=4, n_shared_experts=1, n_group=1, topk_group=1,
                routed_scaling_factor=2.827, norm_topk_prob=True, rms_norm_eps=1e-6, num_nextn_predict_layers=0,
                rope_parameters={"rope_type": "default", "rope_theta": 50000.0})
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, pos_emb_height=4,
                  pos_emb_width=4, patch_size=4)
    return tf.Kimi_K25ForConditionalGeneration(tf.Kimi_K25Config(
        text_config=text, vision_config=vision, projection_hidden_size=16, image_token_id=255, video_token_id=254,
        vision_start_token_id=253, vision_end_token_id=252, tie_word_embeddings=False))


KIMI_K25_NAMES = (lambda n: n.replace("language_model.model.blocks.", "language_model.model.layers."),
                  lambda n: n.replace("language_model.model.", "model.language_model."))
# What Kimi K2 Thinking's quantization_config leaves out: all but the routed experts.
KIMI_IGNORE = ["lm_head", "re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|down)_proj.*"]


def save_ct(model, out, bits, group, only, ignore, names=(lambda n: n, lambda n: n)):
    """compressed-tensors' pack-quantized weights as Kimi K2 Thinking's and W4A16 releases hold them:
    each weight whose name has `only` in it quantized symmetrically to `bits`-bit integers by groups
    of `group` values of a row (None: one scale a row), packed by compressed_tensors' own
    pack_to_int32 into I32 weight_packed, with BF16 weight_scale and I64 weight_shape; config.json's
    quantization_config says so, its `ignore` list the rest. names: the hub's name of a saved tensor, and
    the model's in memory of a hub name. The model in memory becomes those dequantized weights, the
    reference."""
    from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32, unpack_from_int32
    from safetensors.torch import load_file, save_file
    model.save_pretrained(out, safe_serialization=True)
    path = os.path.join(out, "model.safetensors")
    hub, memory = names
    tensors = {hub(k): v for k, v in load_file(path).items()}
    params = dict(model.named_parameters())
    qmax = (1 << (bits - 1)) - 1
    for name in list(tensors):
        w = tensors[name]
        if w.dim() != 2 or only not in name:
            continue
        rows, cols = w.shape
        assert torch.equal(memory_slice(params, memory(name)).detach(), w), f"{name}: not where the file has it"
        g = group or cols
        groups = w.reshape(rows, cols // g, g)
        scale = (groups.abs().amax(dim=2) / qmax).to(torch.bfloat16).float()
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        q = torch.clamp(torch.round(groups / scale[:, :, None]), -qmax - 1, qmax).to(torch.int8).reshape(rows, cols)
        packed = pack_to_int32(q, bits)
        assert torch.equal(unpack_from_int32(packed, bits, torch.Size([rows, cols])), q)
        stem = name[:-len(".weight")]
        del tensors[name]
        tensors[stem + ".weight_packed"] = packed.contiguous()
        tensors[stem + ".weight_scale"] = scale.to(torch.bfloat16).contiguous()
        tensors[stem + ".weight_shape"] = torch.tensor([rows, cols], dtype=torch.int64)
        deq = (q.float().reshape(rows, cols // g, g) * scale[:, :, None]).reshape(rows, cols)
        with torch.no_grad():
            memory_slice(params, memory(name)).copy_(deq)
    save_file(tensors, path, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    weights = {"num_bits": bits, "type": "int", "symmetric": True, "group_size": group,
               "strategy": "group" if group else "channel", "dynamic": False, "actorder": None,
               "block_structure": None, "observer": "minmax", "observer_kwargs": {}}
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": "pack-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights, "input_activations": None,
                                      "output_activations": None}},
        "ignore": ignore,
        "kv_cache_scheme": None}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def save_ct_naive(model, out, kind, strategy, block=None, static=False):
    """compressed-tensors' other weight formats, written by compressed_tensors' own compressors from
    scales computed here (max |w| / the type's largest value, by `strategy`: tensor, channel, group
    of 16, or block of `block` rows x columns):
      float-quantized (kind "fp8": float8_e4m3fn X.weight, as RedHatAI's FP8-dynamic and FP8
        releases; static: per-tensor X.input_scale beside it, as the FP8 static ones),
      int-quantized (kind "int8": I8 X.weight, W8A8 INT8),
      nvfp4-pack-quantized (kind "nvfp4": two e2m1 values a byte in X.weight_packed, e4m3 scales by
        groups of 16 in X.weight_scale, over X.weight_global_scale, a power of two here so
        transformers' bf16 dequantization is exact).
    Every model.layers linear layer; lm_head ignored. The model in memory becomes the dequantized
    weights, the reference: the decompressor's, with its 8-bit products exact in fp32 (it rounds them
    to the bf16 of the scales), as accel computes them."""
    from compressed_tensors.compressors.naive_quantized.base import (FloatQuantizationCompressor,
                                                                     IntQuantizationCompressor)
    from compressed_tensors.compressors.nvfp4.base import NVFP4PackedCompressor
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme
    from safetensors.torch import load_file, save_file
    model.save_pretrained(out, safe_serialization=True)
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    fp4 = kind == "nvfp4"
    wargs = {"num_bits": 4 if fp4 else 8, "type": "int" if kind == "int8" else "float", "symmetric": True,
             "strategy": "tensor_group" if fp4 else strategy, "dynamic": False,
             "group_size": 16 if fp4 or strategy == "group" else None,
             "block_structure": list(block) if strategy == "block" else None}
    aargs = {"num_bits": 4 if fp4 else 8, "type": wargs["type"], "symmetric": True,
             "strategy": "tensor_group" if fp4 else "tensor" if static else "token", "dynamic": "local" if fp4 else not static,
             "group_size": 16 if fp4 else None}
    scheme = QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(**wargs),
                                input_activations=QuantizationArgs(**aargs))
    comp = {"fp8": FloatQuantizationCompressor, "int8": IntQuantizationCompressor, "nvfp4": NVFP4PackedCompressor}[kind]
    qmax = {"fp8": 448.0, "int8": 127.0, "nvfp4": 6.0}[kind]
    params = dict(model.named_parameters())
    for name in list(tensors):
        w = tensors[name]
        if w.dim() != 2 or not name.startswith("model.layers."):
            continue
        rows, cols = w.shape
        if strategy == "tensor" and not fp4:
            scale = (w.abs().max() / qmax).reshape(1)
        elif strategy == "channel":
            scale = w.abs().amax(dim=1, keepdim=True) / qmax
        elif strategy == "block":
            b0, b1 = block
            pad = torch.zeros(-(-rows // b0) * b0, -(-cols // b1) * b1)
            pad[:rows, :cols] = w.abs()
            scale = pad.reshape(pad.shape[0] // b0, b0, pad.shape[1] // b1, b1).amax(dim=(1, 3)) / qmax
        else:   # groups of 16 along a row
            scale = w.abs().reshape(rows, cols // 16, 16).amax(dim=2) / qmax
        state = {"weight": w}
        if fp4:     # scales in e4m3 relative to a global scale: e4m3's range used, a power of two
            glob = torch.tensor([2.0 ** torch.floor(torch.log2(448.0 / scale.max())).item()])
            scale = (scale * glob).to(torch.float8_e4m3fn).float()
            state["weight_global_scale"] = glob
        else:
            scale = scale.to(torch.bfloat16).float()
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        state["weight_scale"] = scale if fp4 else scale.to(torch.bfloat16)    # NVFP4's: made e4m3 by compress
        packed = comp.compress(dict(state), scheme)
        deq = comp.decompress(dict(packed), scheme)["weight"].float()
        if not fp4:     # the decompressor multiplies in the scales' bf16; the exact product, in fp32:
            exact = comp.decompress({**packed, "weight_scale": packed["weight_scale"].float()}, scheme)["weight"]
            assert (exact - deq).abs().max() <= exact.abs().max() * 2.0 ** -8, f"{name}: not the decompressor's"
            deq = exact.float()
        stem = name[:-len(".weight")]
        del tensors[name]
        for k, v in packed.items():
            tensors[f"{stem}.{k}"] = v.contiguous()
        if static:  # the static activations' scale, which accel does not need
            tensors[f"{stem}.input_scale"] = torch.tensor([0.05], dtype=torch.bfloat16)
        if fp4:
            tensors[f"{stem}.input_global_scale"] = torch.tensor([64.0])
        with torch.no_grad():
            params[name].copy_(deq)
    save_file(tensors, path, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    fmt = {"fp8": "float-quantized", "int8": "int-quantized", "nvfp4": "nvfp4-pack-quantized"}[kind]
    cfg["quantization_config"] = {
        "quant_method": "compressed-tensors", "format": fmt, "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": scheme.weights.model_dump(mode="json"),
                                      "input_activations": scheme.input_activations.model_dump(mode="json"),
                                      "output_activations": None, "format": fmt}},
        "ignore": ["lm_head"], "kv_cache_scheme": None}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


FP8_BLOCK = (12, 8)     # rows x columns: partial blocks at the edges of every 16- and 32-wide matrix


def save_fp8(model, out, block=FP8_BLOCK):
    """Fine-grained FP8 as DeepSeek-V3's and Qwen3-FP8's hub files hold it: every linear layer's
    weight in float8 e4m3 by blocks of `block`, each block times its weight_scale_inv (float32,
    max |w| / 448), config.json's quantization_config fp8. block None: per tensor, as Ministral 3's
    and Mistral Small 4's files (one scale a weight, shape []; weight_block_size null), with the
    static activation scales (activation_scheme static) they carry too. The model in memory
    becomes those dequantized weights, the reference."""
    from safetensors.torch import load_file, save_file
    model.save_pretrained(out, safe_serialization=True)
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    b0, b1 = block if block else (None, None)
    params = dict(model.named_parameters())
    for name in list(tensors):
        w = tensors[name]
        if w.dim() != 2 or "embed_tokens" in name or "lm_head" in name:
            continue
        rows, cols = w.shape
        if block is None:
            scale = (w.abs().max() / 448.0).clamp(min=1e-12)
            q = (w / scale).to(torch.float8_e4m3fn)
            tensors[name] = q.contiguous()
            tensors[name + "_scale_inv"] = scale.reshape(()).contiguous()
            tensors[name[:-len(".weight")] + ".activation_scale"] = torch.tensor(0.05)
            with torch.no_grad():
                params[name].copy_(q.float() * scale)
            continue
        r, c = -(-rows // b0), -(-cols // b1)
        pad = torch.zeros(r * b0, c * b1)
        pad[:rows, :cols] = w
        blocks = pad.view(r, b0, c, b1)
        scale = blocks.abs().amax(dim=(1, 3)) / 448.0
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        q = (blocks / scale[:, None, :, None]).to(torch.float8_e4m3fn)
        deq = (q.float() * scale[:, None, :, None]).view(r * b0, c * b1)[:rows, :cols]
        tensors[name] = q.view(r * b0, c * b1)[:rows, :cols].contiguous()
        tensors[name + "_scale_inv"] = scale.contiguous()
        with torch.no_grad():
            params[name].copy_(deq)
    save_file(tensors, path, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3",
                                  "activation_scheme": "static" if block is None else "dynamic",
                                  "weight_block_size": list(block) if block else None}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def deepseek_v2():
    # DeepSeek-V2-Lite: latent attention without a query latent (its RoPE pairs interleaved, as its
    # complex rotation turns them), a softmax router whose top 2 of 8 probabilities weigh the
    # experts as they are (not renormalized) times 1.5, two ungated shared experts, a dense first
    # block; YaRN with mscale = mscale_all_dim = 0.707 (the scores scaled by its square).
    mla = {k: v for k, v in DS_MLA.items() if k != "q_lora_rank"}
    return tf.DeepseekV2ForCausalLM(tf.DeepseekV2Config(
        **DS_V3, **mla, q_lora_rank=None, num_key_value_heads=4, n_shared_experts=2,
        topk_method="greedy", routed_scaling_factor=1.5, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 4, "beta_fast": 32.0, "beta_slow": 1.0,
                         "mscale": 0.707, "mscale_all_dim": 0.707}))


def deepseek_v2_group():
    # DeepSeek-V2 and V2.5 (236B): deepseek_v2's model routed by group_limited_greedy, the 8 experts
    # in 4 groups each scored by its best probability, a token's 2 experts from its best group (by
    # the best alone, the groups matter only where a token takes more experts than groups, as
    # V2's 6 from 3).
    model = deepseek_v2()
    cfg = model.config
    cfg.topk_method, cfg.n_group, cfg.topk_group = "group_limited_greedy", 4, 1
    return tf.DeepseekV2ForCausalLM(cfg)


def glm4_moe_lite():
    # GLM-4.7-Flash: DeepSeek-V3's latent attention with GLM-4.5's experts (sigmoid scores with the
    # selection bias, 8 in 4 groups, 2 a token from the best 2, scale 1.8, one shared expert), its
    # dense first block named by mlp_layer_types, plain RoPE on the 4 values of each head's RoPE part.
    cfg = {k: v for k, v in DS_V3.items() if k != "first_k_dense_replace"}
    return tf.Glm4MoeLiteForCausalLM(tf.Glm4MoeLiteConfig(
        **cfg, **DS_MLA, num_key_value_heads=4, n_shared_experts=1, n_group=4, topk_group=2,
        routed_scaling_factor=1.8, norm_topk_prob=True, rms_norm_eps=1e-5,
        mlp_layer_types=["dense", "sparse", "sparse"],
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}))


# Llama 4's attention temperature as Mistral's configs give it: queries at position p times
# 1 + beta ln(1 + floor(p / 4)), steps of the YaRN original context of 4 (three within 16 tokens).
MISTRAL_YARN = {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0, "original_max_position_embeddings": 4,
                "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                "llama_4_scaling_beta": 0.3}


def mistral4():
    # Mistral Small 4: latent attention (DS_MLA, RoPE part 4 of each head's 10), a softmax router
    # whose top 2 of 8 probabilities are renormalized and scaled by 1.5, one ungated shared expert, a
    # dense first block; YaRN with mscale = mscale_all_dim = 1 (the scores by mscale(4)^2) and the
    # query temperature. transformers 5 saves its experts stacked (gate_up_proj, down_proj).
    return tf.Mistral4ForCausalLM(tf.Mistral4Config(
        **DS_V3, **DS_MLA, num_key_value_heads=4, n_shared_experts=1, n_group=1, topk_group=1,
        routed_scaling_factor=1.5, norm_topk_prob=True, rms_norm_eps=1e-6,
        rope_parameters=dict(MISTRAL_YARN, partial_rotary_factor=0.4)))


def ministral3():
    # Ministral 3: Mistral's blocks (GQA, heads of 8 apart from the width 16) with the query
    # temperature over YaRN, untied.
    return tf.Ministral3ForCausalLM(tf.Ministral3Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5,
        tie_word_embeddings=False, rope_parameters=dict(MISTRAL_YARN), sliding_window=None,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def ministral3_vl():
    # Ministral 3 as the hub has it: Mistral3ForConditionalGeneration, a Pixtral vision tower and
    # projector beside ministral3's language model (text_config, tied here), scored on text alone.
    text = ministral3().config.to_dict()
    text["tie_word_embeddings"] = True
    vision = tf.PixtralVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                    num_attention_heads=2, image_size=28, patch_size=14, head_dim=8)
    return tf.Mistral3ForConditionalGeneration(tf.Mistral3Config(
        text_config=text, vision_config=vision.to_dict(), image_token_index=255, spatial_merge_size=2,
        tie_word_embeddings=True))


def ernie4_5():
    # ERNIE 4.5 (0.3B's kind): a Llama whose RoPE pairs are interleaved (GLM's rotation on the whole
    # head), heads of 8 apart from the width 16, tied.
    return tf.Ernie4_5ForCausalLM(tf.Ernie4_5Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5, use_bias=False,
        tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def ernie4_5_moe():
    # ERNIE 4.5 MoE (21B-A3B's kind): softmax probabilities plus a selection bias choose 2 of 8
    # experts, their probabilities renormalized, beside 2 ungated shared experts; layer 0 dense.
    return tf.Ernie4_5_MoeForCausalLM(tf.Ernie4_5_MoeConfig(
        vocab_size=V, hidden_size=16, intermediate_size=40, num_hidden_layers=3, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5, use_bias=False,
        moe_num_experts=8, moe_k=2, moe_intermediate_size=8, moe_num_shared_experts=2,
        moe_layer_start_index=1, moe_layer_end_index=-1, moe_layer_interval=1, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def hunyuan_dense():
    # Tencent's HunYuan dense (Hunyuan-7B's kind): Llama's blocks with per-head q/k norms taken
    # after RoPE (query_layernorm, key_layernorm), RoPE's base stretched by NTK alpha 1000 (its
    # "dynamic" type with a fixed alpha), heads of 8 apart from the width 16, tied.
    return tf.HunYuanDenseV1ForCausalLM(tf.HunYuanDenseV1Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5,
        tie_word_embeddings=True, rope_parameters={"rope_type": "dynamic", "rope_theta": 10000.0, "alpha": 1000.0,
                                                   "factor": 1.0},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def minimax_m2():
    # MiniMax-M2's kind: Mixtral's blocks and names, 8 experts of 8, 2 a token chosen by sigmoid
    # score plus the selection bias (block_sparse_moe.e_score_correction_bias) and weighted by
    # their scores renormalized; RMSNorm over the whole q and k projections (OLMo 2's, before
    # RoPE); RoPE on the first half of each head of 8 (rotary_dim 4, rotate_half pairs).
    return tf.MiniMaxM2ForCausalLM(tf.MiniMaxM2Config(
        vocab_size=V, hidden_size=16, intermediate_size=8, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, rotary_dim=4, max_position_embeddings=T, num_local_experts=8,
        num_experts_per_tok=2, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 5000000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def solar_open():
    # Upstage's Solar Open: GLM-4.5's experts in every block (8 of 8 in 4 groups, 2 a token from the
    # 2 best groups by sigmoid score plus the selection bias, renormalized, times 1.5, one ungated
    # shared expert) under Llama's attention with q, k, v biases and RoPE on the whole head.
    return tf.SolarOpenForCausalLM(tf.SolarOpenConfig(
        vocab_size=V, hidden_size=16, moe_intermediate_size=8, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, n_routed_experts=8,
        num_experts_per_tok=2, n_shared_experts=1, n_group=4, topk_group=2, routed_scaling_factor=1.5,
        norm_topk_prob=True, attention_bias=True, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def internlm3():
    # InternLM3 (8B's kind): transformers' Llama under its own config class, saved under the
    # release's architecture name (opts "arch"); qkv_bias and bias off, as the release; heads of 8
    # apart from the width 16, untied.
    return tf.LlamaForCausalLM(tf.InternLM3Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 50000000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def iquestcoder():
    # IQuest-Coder-V1's kind: transformers' Llama under its own config class and name; GQA 4:1,
    # untied.
    return tf.LlamaForCausalLM(tf.IQuestCoderConfig(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=1, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def helium():
    # Kyutai's Helium: a Llama whose RoPE pairs are interleaved (values 2i, 2i + 1 turn together),
    # q, k, v biases (Granite's attention, o_proj without), 4 heads of 4 over the width 16.
    return tf.HeliumForCausalLM(tf.HeliumConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=4, max_position_embeddings=T, rms_norm_eps=1e-8, attention_bias=True,
        tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def exaone_moe():
    # LG's K-EXAONE: EXAONE 4's attention (per-head q/k norms; layers 0-2 slide over 4 keys with
    # RoPE, layer 3 sees all without) under norms before the sublayers, layer 0 a dense SwiGLU of
    # 24, layers 1-3 DeepSeek-V3's experts (8 of 8 in 2 groups, 2 a token from the best group by
    # sigmoid score plus the selection bias, renormalized, times 2.5, one ungated shared expert).
    # An MTP block is saved under mtp. as the release's files hold one (save_glm4_moe).
    return tf.ExaoneMoeForCausalLM(tf.ExaoneMoeConfig(
        vocab_size=V, hidden_size=16, intermediate_size=24, moe_intermediate_size=8, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T, num_experts=8,
        num_experts_per_tok=2, num_shared_experts=1, n_group=2, topk_group=1, routed_scaling_factor=2.5,
        first_k_dense_replace=1, sliding_window=4, sliding_window_pattern=4, rms_norm_eps=1e-5,
        tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def youtu():
    # Tencent's Youtu-LLM: DeepSeek-V3's latent attention (DS_MLA: queries through a latent, RoPE on
    # 4 of each head's 10 values, its pairs interleaved in the files) on Llama's dense blocks, tied.
    # No padding token: transformers 5's YoutuPreTrainedModel zeroes the pad_token_id row of the
    # embedding when it loads a file (its _init_weights), so the reference would not be the file's.
    return tf.YoutuForCausalLM(tf.YoutuConfig(
        vocab_size=V, hidden_size=16, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, max_position_embeddings=T, rms_norm_eps=1e-6, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1600000.0}, pad_token_id=None, bos_token_id=1,
        eos_token_id=2, **DS_MLA))


def mellum():
    # JetBrains' Mellum: Qwen3-MoE's attention (per-head q/k norms) and experts (8 of 8, 2 a token,
    # softmax, renormalized); layers 0-2 slide over 4 keys with plain RoPE at theta 10000, layer 3
    # sees all with theta 500000 (a RoPE per layer type); layer 0 a dense SwiGLU of 24. An MTP block
    # is saved under mtp. (save_glm4_moe), as transformers leaves one out.
    return tf.MellumForCausalLM(tf.MellumConfig(
        vocab_size=V, hidden_size=16, intermediate_size=24, moe_intermediate_size=8, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T, num_experts=8,
        num_experts_per_tok=2, norm_topk_prob=True, sliding_window=4,
        layer_types=["sliding_attention"] * 3 + ["full_attention"], mlp_layer_types=["dense"] + ["sparse"] * 3,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 500000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
        rms_norm_eps=1e-6, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def qwen3_vl():
    # Qwen3-VL as the hub has it: Qwen3VLForConditionalGeneration, a tiny vision tower beside qwen3's
    # kind of language model (per-head q/k norms, heads of 8 apart from the width 16), M-RoPE in
    # sections [2, 1, 1] interleaved; scored on text alone, where M-RoPE's three position streams
    # coincide and it is plain RoPE.
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-6,
                tie_word_embeddings=False, rope_parameters={"rope_type": "default", "rope_theta": 5000000.0,
                                                            "mrope_section": [2, 1, 1], "mrope_interleaved": True})
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=16, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=1, num_position_embeddings=16,
                  deepstack_visual_indexes=[0])
    return tf.Qwen3VLForConditionalGeneration(tf.Qwen3VLConfig(
        text_config=text, vision_config=vision, image_token_id=255, video_token_id=254,
        vision_start_token_id=253, vision_end_token_id=252))


def qwen3_vl_moe():
    # Qwen3-VL-MoE (30B-A3B's kind): qwen3_vl's language model with 4 experts of 12, 2 a token,
    # softmax, renormalized (always: no norm_topk_prob key), in both layers. Saved with its experts
    # as the hub's files hold them: gate_up_proj
    # [E, width, 2 x 12] and down_proj [E, 12, width], x @ W (transformers transposes them).
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=32, moe_intermediate_size=12, num_experts=4,
                num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                max_position_embeddings=T, rms_norm_eps=1e-6, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [2, 1, 1],
                                 "mrope_interleaved": True})
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=16, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=1, num_position_embeddings=16,
                  deepstack_visual_indexes=[0])
    return tf.Qwen3VLMoeForConditionalGeneration(tf.Qwen3VLMoeConfig(
        text_config=text, vision_config=vision, image_token_id=255, video_token_id=254,
        vision_start_token_id=253, vision_end_token_id=252))


def save_experts_xw(model, out):
    """save_pretrained, then every stacked expert tensor transposed to [E, in, out] (x @ W), as
    Qwen3-VL-MoE's hub files hold them."""
    from safetensors.torch import load_file, save_file
    model.save_pretrained(out, safe_serialization=True)
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    for n in list(tensors):
        if n.endswith((".mlp.experts.gate_up_proj", ".mlp.experts.down_proj")):
            tensors[n] = tensors[n].transpose(1, 2).contiguous()
    save_file(tensors, path, metadata={"format": "pt"})


def qwen2_5_vl():
    # Qwen2.5-VL: Qwen2_5_VLForConditionalGeneration, a tiny vision tower beside Qwen2's kind of
    # language model (q, k, v biases), M-RoPE in sections [1, 0, 1]; saved with the hub's flat
    # config.json (text keys at the top level, rope_scaling {"type": "mrope"}: flatten_vl_config)
    # and names (model.layers.*, visual.*); scored on text alone, where M-RoPE is plain RoPE.
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-6, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [1, 0, 1]},
                bos_token_id=1, eos_token_id=2)
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=16, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=1, window_size=16, fullatt_block_indexes=[0])
    return tf.Qwen2_5_VLForConditionalGeneration(tf.Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=255, video_token_id=254,
        vision_start_token_id=253, vision_end_token_id=252))


def glm_ocr():
    # GLM-OCR: GlmOcrForConditionalGeneration, glm4v's layout without q, k, v biases; its files' MTP
    # block after the last layer (save_glm4_moe), which transformers skips; scored on text.
    return glm4v_kind(tf.GlmOcrForConditionalGeneration, tf.GlmOcrConfig)


def flatten_vl_config(out):
    """config.json as Qwen2-VL's and Qwen2.5-VL's hub releases have it: text_config's keys at the
    top level, rope_scaling {"type": "mrope", "mrope_section": ...} and rope_theta beside it."""
    path = os.path.join(out, "config.json")
    with open(path) as f:
        config = json.load(f)
    text = config.pop("text_config")
    rope = text.pop("rope_parameters")
    for k in ("model_type", "architectures"):
        text.pop(k, None)
    config.update(text)
    config["rope_theta"] = rope.pop("rope_theta")
    config["rope_scaling"] = {"type": "mrope", "mrope_section": rope["mrope_section"]}
    with open(path, "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")


def glm4v_moe():
    # GLM-4.5V / GLM-4.6V: Glm4vMoeForConditionalGeneration, a tiny vision tower beside GLM-4.5's
    # kind of language model (q, k, v biases and RoPE on half of each head by its defaults, no q/k
    # norms; layer 0 dense, then 8 experts in 4 groups, 2 a token, times 1.5, one shared expert),
    # M-RoPE in sections [1, 1, 0]; scored on text alone. An MTP block is saved at
    # model.language_model.layers.2 as the hub's files hold one (save_glm4_moe).
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=24, moe_intermediate_size=8, num_hidden_layers=2,
                first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, n_group=4, topk_group=2,
                routed_scaling_factor=1.5, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 0],
                                 "partial_rotary_factor": 0.5})
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=16, patch_size=4,
                  image_size=16, spatial_merge_size=2, temporal_patch_size=1)
    return tf.Glm4vMoeForConditionalGeneration(tf.Glm4vMoeConfig(
        text_config=text, vision_config=vision, image_token_id=255, video_token_id=254,
        image_start_token_id=253, image_end_token_id=252, video_start_token_id=251, video_end_token_id=250))


def ministral():
    # Ministral 8B (2410): Mistral's blocks whose layers slide or not as layer_types says (layers
    # 0 and 2 over 4 keys, 1 and 3 full), heads of 8 over the width 32.
    return tf.MinistralForCausalLM(tf.MinistralConfig(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
        sliding_window=4, layer_types=["sliding_attention", "full_attention"] * 2,
        rope_parameters={"rope_type": "default", "rope_theta": 100000000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def cwm():
    # Meta's Code World Model: Llama's blocks whose layers slide as layer_types says, the first of
    # every 4 full (CwmConfig's default: not every N-th counted from 1, so accel lists the sliding
    # layers by number), Llama 3's RoPE scaling, heads of 8 over the width 32.
    return tf.CwmForCausalLM(tf.CwmConfig(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=5, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
        sliding_window=4, rope_parameters={"rope_type": "llama3", "rope_theta": 1000000.0, "factor": 16.0,
                                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                           "original_max_position_embeddings": 8},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def starcoder2():
    # StarCoder2: LayerNorms with biases, the plain MLP c_fc -> tanh GELU -> c_proj, use_bias on
    # every projection, a window of 4 on every layer, GQA 2:1, tied.
    return tf.Starcoder2ForCausalLM(tf.Starcoder2Config(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, norm_epsilon=1e-5, use_bias=True, sliding_window=4,
        hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 999999.4420358813}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def nemotron():
    # Nemotron (Minitron, Nemotron-Mini): LayerNorm1P (1 + weight, a bias), the plain MLP up ->
    # relu2 -> down, RoPE on half of each head of 8 (partial_rotary_factor 0.5), q/k/v/o and MLP
    # biases on (the releases have none: the test covers them), untied.
    return tf.NemotronForCausalLM(tf.NemotronConfig(
        vocab_size=V, hidden_size=16, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, norm_eps=1e-5, hidden_act="relu2",
        attention_bias=True, mlp_bias=True, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def jais2():
    # Jais 2: LayerNorms with biases, up -> relu2 -> down, q/k/v/o and MLP biases (its defaults),
    # untied.
    return tf.Jais2ForCausalLM(tf.Jais2Config(
        vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=4, max_position_embeddings=T, layer_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def arcee():
    # Arcee's AFM-4.5B: Llama's blocks with the plain up -> relu2 -> down MLP, YaRN (x4 over 8).
    return tf.ArceeForCausalLM(tf.ArceeConfig(
        vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 4}, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def apertus():
    # Apertus (Swiss AI): Llama's attention with Qwen3's per-head q/k norms, its norm names
    # (attention_layernorm, feedforward_layernorm), the plain up -> xIELU -> down MLP, Llama 3's RoPE
    # scaling. xIELU's alphas are trained parameters (drawn below as every vector); its beta and eps
    # buffers are set apart on layer 1, so the import must read them from the files.
    model = tf.ApertusForCausalLM(tf.ApertusConfig(
        vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8},
        pad_token_id=0, bos_token_id=1, eos_token_id=2, dtype=torch.float32))
    act = model.model.layers[1].mlp.act_fn
    act.beta.fill_(0.375)
    act.eps.fill_(-0.25)
    return model


def stablelm():
    # StableLM 2 (1.6B's kind): LayerNorms with biases over Llama's SwiGLU, q/k/v biases, RoPE on
    # a quarter of each head of 16, untied.
    return tf.StableLmForCausalLM(tf.StableLmConfig(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=T, layer_norm_eps=1e-5, use_qkv_bias=True,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def gpt_neox():
    # GPT-NeoX (Pythia, GPT-NeoX-20B): LayerNorms, q/k/v fused per head (query_key_value rows
    # [head, q|k|v, head size]), biases everywhere, RoPE on a quarter of each head of 8 (rotary_pct),
    # the exact GELU, attention and the MLP side by side on the block's input (use_parallel_residual),
    # untied (embed_out).
    return tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(
        vocab_size=V, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=T, layer_norm_eps=1e-5, hidden_act="gelu", use_parallel_residual=True,
        rotary_pct=0.25, rotary_emb_base=10000, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def gpt_neox_seq():
    # GPT-NeoX with its blocks one after the other (use_parallel_residual false), RoPE on half of
    # each head, the tanh GELU.
    return tf.GPTNeoXForCausalLM(tf.GPTNeoXConfig(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=T, layer_norm_eps=1e-5, hidden_act="gelu_new", use_parallel_residual=False,
        rotary_pct=0.5, rotary_emb_base=500.0, tie_word_embeddings=False, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def cohere():
    # Cohere's Command R, Aya (CohereForCausalLM): LayerNorms without biases, SwiGLU beside attention
    # through the one norm, RoPE pairs interleaved, logits times logit_scale, tied, GQA 2:1.
    return tf.CohereForCausalLM(tf.CohereConfig(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, layer_norm_eps=1e-5, logit_scale=0.25,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def cohere2():
    # Command R7B, Command A (Cohere2ForCausalLM): Cohere's blocks with layers 0-2 sliding over 4
    # keys with RoPE and layer 3 full without it (sliding_window_pattern 4), q/k/v/o biases.
    return tf.Cohere2ForCausalLM(tf.Cohere2Config(
        vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, layer_norm_eps=1e-5, logit_scale=0.5, sliding_window=4,
        attention_bias=True, rope_parameters={"rope_type": "default", "rope_theta": 50000.0}, pad_token_id=0,
        bos_token_id=1, eos_token_id=2))


def phi():
    # Phi-1, Phi-1.5, Phi-2 (PhiForCausalLM): LayerNorms, q/k/v/dense and fc1/fc2 biases, the tanh
    # GELU MLP beside attention through the one norm, RoPE on 0.4 of each head of 10 (4 values),
    # an LM head with a bias, untied.
    return tf.PhiForCausalLM(tf.PhiConfig(
        vocab_size=V, hidden_size=40, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=T, layer_norm_eps=1e-5, hidden_act="gelu_new", tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.4},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def gptj():
    # GPT-J 6B's kind (GPTJForCausalLM): LayerNorms, q/k/v/out without biases, fc_in/fc_out with,
    # the tanh GELU MLP beside attention through ln_1, RoPE on the first 4 values of each head of 8
    # with its pairs interleaved (rotary_dim), an LM head with a bias, untied.
    return tf.GPTJForCausalLM(tf.GPTJConfig(
        vocab_size=V, n_embd=32, n_layer=2, n_head=4, n_positions=T, rotary_dim=4, n_inner=None,
        activation_function="gelu_new", layer_norm_epsilon=1e-5, tie_word_embeddings=False, pad_token_id=0,
        bos_token_id=1, eos_token_id=2))


def qwen3_5():
    # Qwen3.5 (Qwen3_5ForCausalLM, the text model of Qwen3_5ForConditionalGeneration): layers 0-2
    # gated delta-nets (2 key heads of 4, 4 value heads of 6, a convolution of 4), layer 3 attention
    # whose q_proj also gives a gate per head value (its output times sigmoid(gate)), per-head q/k
    # norms, RoPE on a quarter of each head of 8; every norm by 1 + weight but the gated one.
    return tf.Qwen3_5ForCausalLM(tf.Qwen3_5TextConfig(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-6,
        linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=4, linear_value_head_dim=6,
        linear_conv_kernel_dim=4, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def qwen3_5_moe():
    # Qwen3.5-MoE (Qwen3_5MoeForCausalLM): qwen3_5's layers (delta-net heads of 8) with, in every block, 4 experts of 12
    # (2 per token, softmax, renormalized) beside a shared expert of 20 gated by a sigmoid.
    return tf.Qwen3_5MoeForCausalLM(tf.Qwen3_5MoeTextConfig(
        vocab_size=V, hidden_size=16, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-6, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4, num_experts=4,
        num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=20,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def qwen3_next():
    # Qwen3-Next (Qwen3NextForCausalLM): Qwen3.5-MoE's blocks with the delta-nets' input projections
    # fused and grouped by key head (in_proj_qkvz, in_proj_ba), the top k not renormalized
    # (norm_topk_prob false: Qwen3.5-MoE's router cannot say that, so it exports as Qwen3-Next).
    return tf.Qwen3NextForCausalLM(tf.Qwen3NextConfig(
        vocab_size=V, hidden_size=16, intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, rms_norm_eps=1e-6, linear_num_key_heads=2,
        linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=8, linear_conv_kernel_dim=4,
        num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12, shared_expert_intermediate_size=20,
        norm_topk_prob=False, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def lfm2():
    # LFM2 (Lfm2ForCausalLM): layers 0, 1, 3 gated short convolutions of width 3 (in_proj to b|c|x,
    # c * conv(b * x), out_proj), layer 2 attention with per-head q/k norms; the MLP's width from
    # intermediate_size 36 as Lfm2MLP adjusts it (2/3 -> 24, x 1.5 -> 36, up to a multiple of 8 -> 40); the
    # final norm is embedding_norm; tied embeddings.
    return tf.Lfm2ForCausalLM(tf.Lfm2Config(
        vocab_size=V, hidden_size=16, intermediate_size=36, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, norm_eps=1e-5, conv_L_cache=3,
        block_multiple_of=8, block_ffn_dim_multiplier=1.5, full_attn_idxs=[2],
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def lfm2_moe():
    # LFM2-MoE (Lfm2MoeForCausalLM): lfm2's layers; block 0 dense (intermediate_size 24, as it is),
    # blocks 1-3 4 experts of 12, 2 a token by sigmoid scores plus a selection bias (expert_bias),
    # their weights renormalized over their sum + 1e-6 and scaled by 1.5.
    return tf.Lfm2MoeForCausalLM(tf.Lfm2MoeConfig(
        vocab_size=V, hidden_size=16, intermediate_size=24, moe_intermediate_size=12, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=T, norm_eps=1e-5, conv_L_cache=3,
        num_dense_layers=1, num_experts=4, num_experts_per_tok=2, routed_scaling_factor=1.5,
        layer_types=["conv", "conv", "full_attention", "conv"], pad_token_id=0, bos_token_id=1, eos_token_id=2))


def lfm3():
    # LFM3 (Lfm3ForCausalLM): its default layer pattern over 6 layers (2 full attention, 4 sliding over
    # 4 keys, the others gated short convolutions of width 7), norms after every sublayer too, each
    # attention head's output times a sigmoid gate (g_proj), per-head q/k norms; the full layers'
    # RoPE proportional (half of each head's 4 pairs turn, theta 1e6), the sliding ones' plain at 1e4.
    return tf.Lfm3ForCausalLM(tf.Lfm3Config(
        vocab_size=V, hidden_size=16, intermediate_size=24, num_hidden_layers=6, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=T, norm_eps=1e-5, sliding_window=4,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def lfm2_vl():
    # LFM2-VL as the hub has it: Lfm2VlForConditionalGeneration, a tiny SigLIP2 vision tower and its
    # projector beside lfm2's language model (layer 1 of 3 attention), the LM head tied at the top.
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=36, num_hidden_layers=3, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=T, norm_eps=1e-5, conv_L_cache=3,
                block_multiple_of=8, block_ffn_dim_multiplier=1.5, full_attn_idxs=[1])
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, patch_size=4,
                  num_patches=16)
    return tf.Lfm2VlForConditionalGeneration(tf.Lfm2VlConfig(
        text_config=text, vision_config=vision, image_token_id=255, projector_hidden_size=32))


def lfm3_vl():
    # LFM3-VL as the hub has it: Lfm3VlForConditionalGeneration, a tiny vision tower and projector
    # beside lfm3's language model (4 layers: layer 2 full attention, the others convolutions).
    text = dict(vocab_size=V, hidden_size=16, intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, head_dim=8, max_position_embeddings=T, norm_eps=1e-5, sliding_window=4,
                pad_token_id=0, bos_token_id=1, eos_token_id=2)
    vision = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                  num_key_value_heads=2, patch_size=4)
    return tf.Lfm3VlForConditionalGeneration(tf.Lfm3VlConfig(text_config=text, vision_config=vision,
                                                             image_token_id=255))


def granite4_h():
    # Granite 4.0-H (GraniteMoeHybridForCausalLM): layers 0, 1, 3 Mamba-2 (4 heads of 8, 2 groups of B
    # and C, a state of 4, a convolution of 4 with its bias), layer 2 attention without RoPE
    # (position_embedding_type nope); in every block 4 experts of 12 (Granite's top 2, softmax over
    # their logits) beside an ungated shared MLP of 20; Granite's four scalars.
    return tf.GraniteMoeHybridForCausalLM(tf.GraniteMoeHybridConfig(
        vocab_size=V, hidden_size=16, intermediate_size=12, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, num_local_experts=4,
        num_experts_per_tok=2, shared_intermediate_size=20, position_embedding_type="nope",
        layer_types=["mamba", "mamba", "attention", "mamba"], mamba_n_heads=4, mamba_n_groups=2,
        mamba_d_state=4, mamba_d_conv=4, mamba_expand=2, embedding_multiplier=3.0, attention_multiplier=0.2,
        residual_multiplier=0.5, logits_scaling=2.0, tie_word_embeddings=True,
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def granite4_h_dense():
    # Granite 4.0-H-1B's kind: granite4_h's layers with no experts (the shared MLP of 24 alone; its
    # unused intermediate_size the same) and RoPE on its attention layer.
    return tf.GraniteMoeHybridForCausalLM(tf.GraniteMoeHybridConfig(
        vocab_size=V, hidden_size=16, intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, num_local_experts=0,
        shared_intermediate_size=24, position_embedding_type="rope",
        layer_types=["mamba", "attention", "mamba", "mamba"], mamba_n_heads=2, mamba_n_groups=1,
        mamba_d_state=6, mamba_d_conv=3, mamba_expand=2, embedding_multiplier=2.0, attention_multiplier=0.25,
        residual_multiplier=0.7, logits_scaling=1.5, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        pad_token_id=0, bos_token_id=1, eos_token_id=2))


def bamba():
    # Bamba (BambaForCausalLM): Granite 4.0-H's kind of blocks without its scalars or experts: layers
    # 0, 2, 3 Mamba-2 (4 heads of 16, 2 groups of B and C, a state of 4, a convolution of 4 with its
    # bias), layer 1 attention with RoPE on half of each head of 8 (BambaConfig's fixed 0.5), SwiGLU
    # of 24 in every block, an untied head.
    return tf.BambaForCausalLM(tf.BambaConfig(
        vocab_size=V, hidden_size=32, intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, attn_layer_indices=[1],
        mamba_n_heads=4, mamba_n_groups=2, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2,
        tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def olmo_hybrid():
    # OLMo Hybrid (OlmoHybridForCausalLM): 4 layers, 0-2 gated delta-nets (2 key heads of 12, 4 value
    # heads of 6: q, k, v, g, a, b projections apart, a convolution of 4, beta = 2 sigmoid(b), the
    # output's gated norm at 1e-5) with norms before them, layer 3 attention with OLMo 2's norms
    # after the sublayers and q/k norms over the whole projections (RoPE at 5e5), SwiGLU of 40.
    return tf.OlmoHybridForCausalLM(tf.OlmoHybridConfig(
        vocab_size=V, hidden_size=32, intermediate_size=40, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, linear_num_key_heads=2, linear_num_value_heads=4,
        linear_key_head_dim=12, linear_value_head_dim=6, linear_conv_kernel_dim=4,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


def flex_olmo():
    # FlexOlmo (FlexOlmoForCausalLM): OLMo 2's blocks (norms after the sublayers, q/k norms over the
    # whole projections) with OLMoE's experts: 4 SwiGLU experts of 16, 2 a token, not renormalized.
    return tf.FlexOlmoForCausalLM(tf.FlexOlmoConfig(
        vocab_size=V, hidden_size=32, intermediate_size=16, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, num_experts=4, num_experts_per_tok=2, norm_topk_prob=False,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0}, pad_token_id=0, bos_token_id=1,
        eos_token_id=2))


# Llama 4's text model (Llama4TextConfig), shared by its fixtures: 4 layers, every 2nd (1, 3) without
# RoPE, attending to the whole context with the query temperature (floor_scale 4, attn_scale 0.1: it
# steps at positions 3, 7, 11, 15), the others in chunks of 8 positions with unweighted q/k norms
# after its pairwise (complex) RoPE, llama3-scaled with Scout's equal low and high frequency factors
# (a sharp cut: transformers warns, and computes it); experts on layers 1 and 3
# (interleave_moe_layer_step 2): 4 SwiGLU experts of 12, one a token, its input scaled by the sigmoid
# of its router logit, beside a shared expert of 12; layers 0 and 2 a dense SwiGLU of 20.
LLAMA4_TEXT = dict(vocab_size=V, hidden_size=32, intermediate_size=12, intermediate_size_mlp=20, num_hidden_layers=4,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
                   rms_norm_eps=1e-5, num_local_experts=4, num_experts_per_tok=1, interleave_moe_layer_step=2,
                   no_rope_layer_interval=2, attention_chunk_size=8, attn_temperature_tuning=True, floor_scale=4,
                   attn_scale=0.1, use_qk_norm=True, tie_word_embeddings=False,
                   rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 1.0, "original_max_position_embeddings": 8},
                   pad_token_id=0, bos_token_id=1, eos_token_id=2)


def llama4():
    # Llama 4 Scout / Maverick's language model (Llama4ForCausalLM), an untied head.
    return tf.Llama4ForCausalLM(tf.Llama4TextConfig(**LLAMA4_TEXT))


def llama4_vl():
    # Llama4ForConditionalGeneration (the hub's Llama 4 releases): the language model above under
    # language_model., beside a small vision tower and projector accel leaves out.
    vision = tf.Llama4VisionConfig(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                                   vision_output_dim=16, image_size=28, patch_size=14, projector_input_dim=16,
                                   projector_output_dim=32, rope_theta=10000)
    return tf.Llama4ForConditionalGeneration(tf.Llama4Config(text_config=tf.Llama4TextConfig(**LLAMA4_TEXT),
                                                             vision_config=vision, boi_token_index=3, eoi_token_index=4,
                                                             image_token_index=5))


# Nemotron-H's sizes shared by its fixtures: Mamba-2 of 4 heads of 8, 2 groups of B and C, a state of
# 4, a convolution of 4 with its bias; attention without RoPE over heads of 8, 2 key/value heads.
NEMOTRON_H = dict(vocab_size=V, hidden_size=16, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
                  max_position_embeddings=T, layer_norm_epsilon=1e-5, mamba_num_heads=4, mamba_head_dim=8,
                  n_groups=2, ssm_state_size=4, conv_kernel=4, use_conv_bias=True, tie_word_embeddings=False,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2)


def mamba():
    # Mamba (state-spaces' mamba-*-hf, MambaForCausalLM): every layer a norm and a Mamba-1 mixer: 64
    # channels (expand 2), each a state of 4 decaying by exp(dt A), dt of rank 2 (auto: ceil(32 /
    # 16)), a convolution of 4 with its bias; tied.
    return tf.MambaForCausalLM(tf.MambaConfig(
        vocab_size=V, hidden_size=32, state_size=4, num_hidden_layers=2, expand=2, conv_kernel=4,
        layer_norm_epsilon=1e-5, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def falcon_mamba():
    # Falcon Mamba (FalconMambaForCausalLM): Mamba's blocks with RMS norms without weights on dt, B
    # and C (mixer_rms_eps); 40 channels (two blocks of 16 and one of 8 in accel), dt of rank 3,
    # no convolution bias, untied.
    return tf.FalconMambaForCausalLM(tf.FalconMambaConfig(
        vocab_size=V, hidden_size=20, state_size=4, num_hidden_layers=2, expand=2, conv_kernel=3,
        time_step_rank=3, use_conv_bias=False, layer_norm_epsilon=1e-5, mixer_rms_eps=1e-6,
        tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2))


def jamba():
    # Jamba (AI21's Jamba 1.5, 1.7): Bamba's blocks with Mamba-1 mixers (64 channels, a state of 4, dt
    # rank 2, weighted RMS norms on dt, B and C) on layers 0, 1, 3, attention without positions on
    # layer 2 (attn_layer_period 4, offset 2), 4 SwiGLU experts of 24, the softmax's top 2 not
    # renormalized, on layers 1 and 3 (expert_layer_period 2, offset 1), a dense SwiGLU of 24 on 0
    # and 2; untied.
    return tf.JambaForCausalLM(tf.JambaConfig(
        vocab_size=V, hidden_size=32, intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-6, num_experts=4, num_experts_per_tok=2,
        expert_layer_period=2, expert_layer_offset=1, attn_layer_period=4, attn_layer_offset=2, mamba_d_state=4,
        mamba_d_conv=4, mamba_expand=2, use_mamba_kernels=False, tie_word_embeddings=False, pad_token_id=0,
        bos_token_id=1, eos_token_id=2))


def nemotron_h():
    # Nemotron-H / Nemotron Nano 2 (NemotronHForCausalLM): every layer a norm and one mixer, here
    # Mamba-2, the plain squared-ReLU MLP of 24 and attention: M - M * - M, an untied head.
    return tf.NemotronHForCausalLM(tf.NemotronHConfig(
        intermediate_size=24, **NEMOTRON_H,
        layers_block_type=["linear_attention", "mlp", "linear_attention", "full_attention", "mlp", "linear_attention"]))


def nemotron_h_moe():
    # Nemotron 3 Nano's kind: Mamba-2, attention and layers of 8 plain squared-ReLU experts of 12, 2
    # a token by DeepSeek-V3's sigmoid routing (a selection bias, the top 2 renormalized and scaled
    # by 2.5) beside a shared expert of 20: M E * E M E (its unused intermediate_size the experts',
    # as accel exports it).
    return tf.NemotronHForCausalLM(tf.NemotronHConfig(
        intermediate_size=12, **NEMOTRON_H,
        layers_block_type=["linear_attention", "moe", "full_attention", "moe", "linear_attention", "moe"],
        n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=12, moe_shared_expert_intermediate_size=20,
        n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5))


def nemotron_h_latent():
    # Nemotron 3 Super's kind (LatentMoE): nemotron_h_moe's layers and routing with the routed experts
    # reading and writing a latent of 8 (fc1_latent_proj down before them, fc2_latent_proj up after);
    # the router and the shared expert read the hidden states. Saved with an MTP block under mtp.,
    # as Super's files hold one (transformers builds none; accel skips it).
    return tf.NemotronHForCausalLM(tf.NemotronHConfig(
        intermediate_size=12, **NEMOTRON_H,
        layers_block_type=["linear_attention", "moe", "full_attention", "moe", "linear_attention", "moe"],
        n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=12, moe_shared_expert_intermediate_size=20,
        moe_latent_size=8, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5))


def qwen3_5_vl():
    # Qwen3.5 as the hub has it: Qwen3_5ForConditionalGeneration, a tiny vision tower beside the
    # language model (qwen3_5's blocks, heads of 16 with RoPE on a quarter, M-RoPE sections [1, 1, 0]
    # interleaved: plain RoPE on text), saved with an MTP block under mtp. (transformers builds
    # none; accel skips it).
    text = dict(vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, max_position_embeddings=T, rms_norm_eps=1e-6,
                linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
                linear_conv_kernel_dim=4, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                                 "mrope_section": [1, 1, 0], "mrope_interleaved": True})
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32, patch_size=4,
                  spatial_merge_size=2, temporal_patch_size=1, num_position_embeddings=16)
    return tf.Qwen3_5ForConditionalGeneration(tf.Qwen3_5Config(
        text_config=text, vision_config=vision, image_token_id=255, video_token_id=254,
        vision_start_token_id=253, vision_end_token_id=252))


def glm4v_kind(model_cls, config_cls):
    """A tiny vision tower beside GLM-4's kind of language model (norms after the sublayers too, a
    fused gate_up_proj, interleaved RoPE pairs on half of each head of 8), M-RoPE in sections
    [1, 1, 0]."""
    text = dict(vocab_size=V, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, max_position_embeddings=T, rms_norm_eps=1e-5, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 0],
                                 "partial_rotary_factor": 0.5})
    vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=32, patch_size=4,
                  image_size=16, spatial_merge_size=2, temporal_patch_size=1)
    return model_cls(config_cls(
        text_config=text, vision_config=vision, image_token_id=255, video_token_id=254,
        image_start_token_id=253, image_end_token_id=252, video_start_token_id=251, video_end_token_id=250))


def glm4v():
    # GLM-4.1V / GLM-4.6V-Flash: Glm4vForConditionalGeneration, glm4v_kind with q/k/v biases; scored on
    # text.
    return glm4v_kind(tf.Glm4vForConditionalGeneration, tf.Glm4vConfig)


def sigmoid_bias_margin(model, tokens, gates):
    """MiniMax-M2's and LFM2-MoE's routers (gates: the modules called with (x, selection bias)):
    the smallest gap between a token's k-th and next choice score (its sigmoid score plus the
    selection bias); the bias must change some token's experts."""
    inputs, k, moved, gaps = [], model.config.num_experts_per_tok, False, []
    hooks = [gate.register_forward_hook(lambda m, a, o: inputs.append((m, a[0], a[1]))) for gate in gates]
    with torch.no_grad():
        model(tokens[None, :-1])
        for gate, x, bias in inputs:
            s = torch.sigmoid(torch.nn.functional.linear(x.double(), gate.weight.double()))
            c = (s + bias.double()).sort(-1, descending=True)
            gaps.append((c.values[:, k - 1] - c.values[:, k]).min().item())
            plain = s.topk(k, -1).indices.sort(-1).values
            moved |= bool((plain != c.indices[:, :k].sort(-1).values).any())
    for h in hooks:
        h.remove()
    assert moved, "the selection bias changes no token's experts: raise it"
    return min(gaps)


def ernie_margin(model, tokens):
    """ERNIE 4.5's router: the smallest gap between a token's k-th and next choice score (its
    probability plus the selection bias); the bias must change some token's experts."""
    inputs, k, moved, gaps = [], model.config.moe_k, False, []
    hooks = [layer.mlp.gate.register_forward_hook(lambda m, a, o: inputs.append((m, a[0])))
             for layer in model.model.layers if hasattr(layer.mlp, "gate")]
    with torch.no_grad():
        model(tokens[None, :-1])
    for gate, x in inputs:
        p = torch.softmax(x.reshape(-1, x.shape[-1]).double() @ gate.weight.double().T, -1)
        c = p + gate.moe_statics.e_score_correction_bias.double().squeeze()
        moved |= (c.topk(k, -1).indices.sort(-1).values != p.topk(k, -1).indices.sort(-1).values).any().item()
        c = c.sort(-1, descending=True).values
        gaps.append((c[:, k - 1] - c[:, k]).min().item())
    for h in hooks:
        h.remove()
    assert moved, "the selection bias changes no token's experts"
    return min(gaps)


def softmax_gate_margin(model, tokens):
    """DeepSeek-V2's router: the smallest gap between a token's k-th and next probability (within
    its chosen groups with group_limited_greedy, and between the topk_group-th and next group's
    best; the group limit must change some token's experts)."""
    cfg = model.config
    grouped = getattr(cfg, "topk_method", "greedy") == "group_limited_greedy"
    inputs = []
    hooks = [layer.mlp.gate.register_forward_hook(lambda m, a, o: inputs.append((m, a[0])))
             for layer in model.model.layers if hasattr(layer.mlp, "gate")]
    with torch.no_grad():
        model(tokens[None, :-1])
    k = model.config.num_experts_per_tok
    gaps, moved = [], False
    for gate, x in inputs:
        p = torch.softmax(x.reshape(-1, x.shape[-1]).double() @ gate.weight.double().T, -1)
        if grouped:
            grp = p.view(p.shape[0], cfg.n_group, -1).max(-1).values
            gs = grp.sort(-1, descending=True).values
            gaps.append((gs[:, cfg.topk_group - 1] - gs[:, cfg.topk_group]).min().item())
            keep = torch.zeros_like(grp).scatter_(1, grp.topk(cfg.topk_group, -1).indices, 1)
            masked = p.masked_fill(~keep.repeat_interleave(p.shape[1] // cfg.n_group, 1).bool(), 0.0)
            moved |= (masked.topk(k, -1).indices.sort(-1).values != p.topk(k, -1).indices.sort(-1).values).any().item()
            p = masked
        p = p.sort(-1, descending=True).values
        gaps.append((p[:, k - 1] - p[:, k]).min().item())
    for h in hooks:
        h.remove()
    assert moved or not grouped, "the group limit changes no token's experts"
    return min(gaps)


def save_glm4_moe(model, out, prefix=None):
    """save_pretrained, then the MTP block's tensors added at model.layers.<layers> as GLM-4.5's
    files hold them, or under prefix (K-EXAONE's mtp.): transformers builds no MTP block; accel
    must skip them."""
    from safetensors.torch import load_file, save_file
    model.save_pretrained(out, safe_serialization=True)
    path = os.path.join(out, "model.safetensors")
    tensors = load_file(path)
    L, C = model.config.get_text_config().num_hidden_layers, model.config.get_text_config().hidden_size
    g = torch.Generator().manual_seed(5)
    for name, shape in (("eh_proj.weight", (C, 2 * C)), ("enorm.weight", (C,)), ("hnorm.weight", (C,)),
                        ("shared_head.norm.weight", (C,)), ("input_layernorm.weight", (C,))):
        tensors[f"{prefix or f'model.layers.{L}.'}{name}"] = torch.randn(shape, generator=g)
    save_file(tensors, path, metadata={"format": "pt"})


def glm_routing_margin(model, tokens):
    """GLM-4.5's routing margins: over every token of every MoE block, the smallest gap between
    the topk_group-th and next group score, and between the k-th and next choice score within the
    chosen groups (near ties would let accel and transformers choose apart). Also asserts that
    the selection bias and the group limit each change some token's experts, so that the
    reference logits hold accel to both."""
    cfg, inputs = model.config.get_text_config(), []

    def choose(s, groups):
        grp = s.view(s.shape[0], cfg.n_group, -1).topk(2, -1).values.sum(-1)
        keep = torch.zeros_like(grp).scatter_(1, grp.topk(groups, -1).indices, 1)
        mask = keep.repeat_interleave(s.shape[1] // cfg.n_group, 1).bool()
        return s.masked_fill(~mask, float("-inf")).topk(cfg.num_experts_per_tok, -1).indices.sort(-1).values

    mlps = [getattr(layer, "mlp", None) or layer.mixer     # Nemotron-H's: its layers' one mixer
            for layer in getattr(model.model, "language_model", model.model).layers]
    hooks = [mlp.gate.register_forward_hook(lambda m, a, o: inputs.append((m, a[0]))) for mlp in mlps
             if hasattr(mlp, "gate") and hasattr(mlp.gate, "e_score_correction_bias")]
    with torch.no_grad():
        model(tokens[None, :-1])
        gaps = []
        for gate, x in inputs:
            s = torch.sigmoid(x.reshape(-1, x.shape[-1]).double() @ gate.weight.double().T)
            s = s + gate.e_score_correction_bias.double()
            grp = s.view(s.shape[0], cfg.n_group, -1).topk(2, -1).values.sum(-1)
            gs = grp.sort(-1, descending=True).values
            if cfg.topk_group < cfg.n_group:
                gaps.append((gs[:, cfg.topk_group - 1] - gs[:, cfg.topk_group]).min().item())
            keep = torch.zeros_like(grp).scatter_(1, grp.topk(cfg.topk_group, -1).indices, 1)
            mask = keep.repeat_interleave(s.shape[1] // cfg.n_group, 1).bool()
            cs = s.masked_fill(~mask, float("-inf")).sort(-1, descending=True).values
            k = cfg.num_experts_per_tok
            gaps.append((cs[:, k - 1] - cs[:, k]).min().item())
            plain = s - gate.e_score_correction_bias.double()
            moved_bias = (choose(s, cfg.topk_group) != choose(plain, cfg.topk_group)).any().item()
            moved_groups = (choose(s, cfg.topk_group) != choose(s, cfg.n_group)).any().item()
            assert moved_bias and (moved_groups or cfg.n_group == 1), \
                "the selection bias or the group limit changes no choice"
    for h in hooks:
        h.remove()
    return min(gaps)


# e2m1 magnitudes of the codes 0-7; 8-15 are their negatives (transformers' mxfp4.FP4_VALUES).
FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def mxfp4(w):
    """w [E, rows, K] (K the input dimension, a multiple of 32) in MXFP4 as the hub's gpt-oss
    stores it: blocks [E, rows, K/32, 16] uint8, two e2m1 codes a byte (the even element in the
    low nibble), scales [E, rows, K/32] uint8 (the block's power-of-two exponent + 127), and w's
    values in MXFP4, float32. Rounding: each block of 32 takes the least exponent e with
    max |w| <= 6 * 2^e (nothing saturates), each value the e2m1 magnitude nearest |w| / 2^e
    (ties to the smaller) with w's sign."""
    x = w.astype(np.float64).reshape(*w.shape[:-1], -1, 32)
    e = np.ceil(np.log2(np.abs(x).max(-1, keepdims=True) / 6.0))
    assert (np.abs(x) <= 6.0 * 2.0 ** e).all() and (np.abs(e) < 127).all()
    code = np.abs(np.abs(x[..., None]) / 2.0 ** e[..., None] - FP4).argmin(-1) + 8 * (x < 0)
    q = np.where(code >= 8, -1.0, 1.0) * FP4[code & 7] * 2.0 ** e
    blocks = (code[..., 0::2] | code[..., 1::2] << 4).astype(np.uint8)
    return blocks, (e[..., 0] + 127).astype(np.uint8, order="C"), q.reshape(w.shape).astype(np.float32)


def save_mxfp4(model, out):
    """Rounds model's expert weights to MXFP4 in place (the model scored is that one) and saves it
    as the hub's openai/gpt-oss-20b: <proj>_blocks and <proj>_scales for gate_up_proj [E, H, 2I]
    and down_proj [E, I, H] (both quantized along their input dimension: MXFP4 of the transposes,
    rows 2I and H), the rest (expert biases included) as save_pretrained writes it, float32."""
    from safetensors.torch import load_file, save_file
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    packed = {}
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith(("experts.gate_up_proj", "experts.down_proj")):
                blocks, scales, q = mxfp4(p.detach().transpose(1, 2).numpy())
                p.copy_(torch.from_numpy(q).transpose(1, 2))
                blocks, scales = torch.from_numpy(blocks), torch.from_numpy(scales)
                packed[n + "_blocks"], packed[n + "_scales"] = blocks, scales
                # transformers' own dequantizer gives back exactly the values scored.
                assert torch.equal(convert_moe_packed_tensors(blocks, scales, dtype=torch.float32), p)
    model.save_pretrained(out, safe_serialization=True)
    f = os.path.join(out, "model.safetensors")
    tensors = {n: t for n, t in load_file(f).items() if n + "_blocks" not in packed}
    save_file({**tensors, **packed}, f, metadata={"format": "pt"})
    with open(os.path.join(out, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = {
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"], "quant_method": "mxfp4"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")


def logit_margin(model, tokens, routers, logits_of=lambda o: o[0] if isinstance(o, tuple) else o):
    """Routers that choose by their logits (Granite's, Llama 4's; routers: the modules giving them,
    logits_of their logits from what they return: the first of a tuple or the output itself): the
    smallest gap between a token's k-th and (k+1)-th logit over every block."""
    outs, k = [], model.config.get_text_config().num_experts_per_tok
    hooks = [r.register_forward_hook(lambda m, a, o: outs.append(logits_of(o).double())) for r in routers]
    with torch.no_grad():
        model(tokens[None, :-1])
    for h in hooks:
        h.remove()
    return min((o.sort(-1, descending=True).values[..., k - 1] - o.sort(-1, descending=True).values[..., k]).min().item()
               for o in outs)


def routing_margin(model, tokens):
    """The smallest gap between a token's k-th and (k+1)-th router probability over every block:
    a gap near float32 rounding would let accel and transformers route a token differently."""
    with torch.no_grad():
        out = model(tokens[None, :-1], output_router_logits=True)
    k = model.config.get_text_config().num_experts_per_tok
    k = k[0] if isinstance(k, list) else k      # HunYuan-MoE's moe_topk: one per layer
    gaps = [(p[:, k - 1] - p[:, k]).min().item()
            for p in (torch.softmax(r.double(), -1).sort(-1, descending=True).values
                      for r in out.router_logits)]
    return min(gaps)


def qwen3_yarn():
    # Qwen3 with YaRN (transformers' rope_type yarn): factor 4 over an original context of 4, so
    # across the 16 positions every frequency band is in play and cos, sin carry its 1.139 scale.
    return tf.Qwen3ForCausalLM(tf.Qwen3Config(
        vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=T,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 4},
        rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=False))


def llama_sharded():
    return llama_gqa()


def llama_bf16():
    return llama_gqa()


CASES = {
    "gpt2": (gpt2, {}),
    "llama_gqa": (llama_gqa, {}),
    "llama_rope31": (llama_rope31, {}),
    "llama_bias": (llama_bias, {}),
    "seed_oss": (seed_oss, {}),
    "glm": (glm, {}),
    "glm4": (glm4, {}),
    "mistral": (mistral, {}),
    "mistral_sw": (mistral_sw, {}),
    "phi3": (phi3, {}),
    "phi3_5": (phi3_5, {}),
    "phi4_mini": (phi4_mini, {}),
    "olmo2": (olmo2, {}),
    "exaone4": (exaone4, {}),
    "olmo3": (olmo3, {}),
    "smollm3": (smollm3, {"score64": True}),
    "gemma": (gemma, {"score64": True}),
    "granite": (granite, {"score64": True}),
    "gemma2": (gemma2, {"score64": True}),
    "granite_moe": (granite_moe, {"score64": True}),
    "gemma3": (gemma3, {"score64": True}),
    "gemma3_vl": (gemma3_vl, {"score64": True}),
    "olmoe": (olmoe, {"score64": True}),
    "qwen2_bias": (qwen2, {}),
    "qwen3": (qwen3, {}),
    # qwen3's model with every linear layer in fine-grained FP8 (Qwen3-8B-FP8's layout), scored as
    # those dequantized values.
    "qwen3_fp8": (qwen3, {"fp8": True, "seed_of": "qwen3", "score64": True}),
    "qwen3_yarn": (qwen3_yarn, {}),
    "mixtral": (mixtral, {"score64": True}),
    "qwen3_moe": (qwen3_moe, {"score64": True}),
    "qwen2_moe": (qwen2_moe, {"score64": True}),
    "glm4_moe": (glm4_moe, {"score64": True}),
    "dots1": (dots1, {"score64": True}),
    "deepseek_v3": (deepseek_v3, {"score64": True}),
    "moonlight": (moonlight, {"score64": True}),
    "deepseek_v2": (deepseek_v2, {"score64": True}),
    "deepseek_v2_group": (deepseek_v2_group, {"score64": True, "seed_of": "deepseek_v2"}),
    "glm4_moe_lite": (glm4_moe_lite, {"score64": True}),
    "ernie4_5": (ernie4_5, {}),
    "hunyuan_dense": (hunyuan_dense, {}),
    "ernie4_5_moe": (ernie4_5_moe, {"score64": True, "seed_of": "ernie-moe"}),
    "minimax_m2": (minimax_m2, {"score64": True, "seed_of": "minimax-m2"}),
    "solar_open": (solar_open, {"score64": True, "seed_of": "solar-open"}),
    "internlm3": (internlm3, {"arch": "InternLM3ForCausalLM"}),
    "iquestcoder": (iquestcoder, {"arch": "IQuestCoderForCausalLM"}),
    "helium": (helium, {}),
    "exaone_moe": (exaone_moe, {"score64": True}),
    "youtu": (youtu, {}),
    "mellum": (mellum, {"score64": True, "seed_of": "Mellum"}),
    "qwen3_vl": (qwen3_vl, {}),
    "qwen3_vl_moe": (qwen3_vl_moe, {"score64": True, "seed_of": "qwen3-vl-moe"}),
    "qwen2_5_vl": (qwen2_5_vl, {}),
    "glm4v_moe": (glm4v_moe, {"score64": True}),
    "glm_ocr": (glm_ocr, {}),
    "glm4v": (glm4v, {"std": 0.15}),
    "ministral": (ministral, {"score64": True}),
    "mistral4": (mistral4, {"score64": True}),
    "ministral3": (ministral3, {}),
    "ministral3_vl": (ministral3_vl, {}),
    # ministral3's model with every linear layer in per-tensor FP8 and static activation scales
    # (Ministral 3's and Mistral Small 4's hub layout), scored as those dequantized values.
    "ministral3_fp8": (ministral3, {"fp8": True, "fp8_block": None, "seed_of": "ministral3", "score64": True}),
    # Matrices at std 0.15: over a width of 64 the products' scale of the width-16 models at 0.3.
    "gpt_oss": (gpt_oss, {"score64": True, "std": 0.15, "seed_of": "gpt-oss"}),
    # gpt_oss's weights (same seed), the experts' saved in MXFP4 as the hub's gpt-oss and scored
    # as those MXFP4 values, loaded by transformers' own dequantizer.
    "gpt_oss_mxfp4": (gpt_oss, {"score64": True, "std": 0.15, "mxfp4": True, "seed_of": "gpt-oss"}),
    "starcoder2": (starcoder2, {}),
    "nemotron": (nemotron, {}),
    "jais2": (jais2, {}),
    "arcee": (arcee, {}),
    "apertus": (apertus, {}),
    "stablelm": (stablelm, {}),
    "gpt_neox": (gpt_neox, {}),
    "gpt_neox_seq": (gpt_neox_seq, {}),
    "cohere": (cohere, {}),
    "cohere2": (cohere2, {}),
    "phi": (phi, {}),
    "gptj": (gptj, {}),
    # Scored in float64, its bars 3x hf_compare's: the delta-nets make its fp32 logits sensitive, a
    # 1-ulp change of the weights moving transformers' own by up to 1.7x the 1e-5 bar (accel's land
    # between 0.3x and 1.2x of it as the BLAS kernels round; tests/hf_compare.c).
    "qwen3_5": (qwen3_5, {"score64": True, "tol": 3}),
    "qwen3_5_vl": (qwen3_5_vl, {}),
    "qwen3_next": (qwen3_next, {"score64": True}),
    "lfm2": (lfm2, {}),
    "lfm2_moe": (lfm2_moe, {"score64": True}),
    "lfm3": (lfm3, {}),
    "lfm2_vl": (lfm2_vl, {}),
    "lfm3_vl": (lfm3_vl, {}),
    "granite4_h": (granite4_h, {"score64": True}),
    "granite4_h_dense": (granite4_h_dense, {}),
    "bamba": (bamba, {"score64": True}),
    "nemotron_h": (nemotron_h, {}),
    "mamba": (mamba, {}),
    "falcon_mamba": (falcon_mamba, {}),
    "jamba": (jamba, {"score64": True}),
    "nemotron_h_moe": (nemotron_h_moe, {"score64": True, "seed_of": "nemotron-h-moe"}),
    "nemotron_h_latent": (nemotron_h_latent, {"score64": True}),
    "qwen3_5_moe": (qwen3_5_moe, {"score64": True, "seed_of": "qwen3.5-moe-5"}),
    "olmo_hybrid": (olmo_hybrid, {"score64": True}),
    "flex_olmo": (flex_olmo, {"score64": True, "seed_of": "flex-olmo-1"}),
    "llama4": (llama4, {"score64": True}),
    "llama4_vl": (llama4_vl, {"score64": True}),
    "cwm": (cwm, {}),
    "vaultgemma": (vaultgemma, {}),
    "granite_moe_shared": (granite_moe_shared, {"score64": True}),
    "granite_swa": (granite_swa, {}),
    "granite_moe_swa": (granite_moe_swa, {"score64": True}),
    "hyperclovax": (hyperclovax, {}),
    "exaone": (exaone, {}),
    "exaone4_5_vl": (exaone4_5_vl, {}),
    "granite4_vision": (granite4_vision, {}),
    "smolvlm": (smolvlm, {}),
    "idefics3": (idefics3, {}),
    "granite_docling": (granite_docling, {}),
    "kimi_k2_int4": (kimi_k2_int4, {"ct": (4, 8, ".mlp.experts.", KIMI_IGNORE), "seed_of": "kimi-k2-int4"}),
    "kimi_k25": (kimi_k25, {"ct": (4, 8, ".mlp.experts.", KIMI_IGNORE, KIMI_K25_NAMES)}),
    # W8A16 by channels (RedHat's quantized.w8a16 releases' scheme): every linear layer but the head
    "llama_w8a16": (llama_gqa, {"ct": (8, None, "model.layers.", ["lm_head"]), "seed_of": "llama-w8a16"}),
    # compressed-tensors' FP8, INT8 and NVFP4 weights (RedHatAI's FP8-dynamic, FP8, W8A8 and NVFP4 releases).
    "llama_fp8_dynamic": (llama_gqa, {"ctn": ("fp8", "channel"), "seed_of": "llama-fp8-dynamic"}),
    "llama_fp8_static": (llama_gqa, {"ctn": ("fp8", "tensor", None, True), "seed_of": "llama-fp8-static"}),
    "llama_fp8_block": (llama_gqa, {"ctn": ("fp8", "block", (12, 8)), "seed_of": "llama-fp8-block"}),
    "llama_w8a8": (llama_gqa, {"ctn": ("int8", "group"), "seed_of": "llama-w8a8"}),
    "llama_nvfp4": (llama_gqa, {"ctn": ("nvfp4", "tensor_group"), "seed_of": "llama-nvfp4"}),
    "hunyuan_moe": (hunyuan_moe, {"score64": True}),
    "llama_sharded": (llama_sharded, {"max_shard_size": "20KB"}),
    "llama_bf16": (llama_bf16, {"dtype": torch.bfloat16}),
}


def main(out_root, names):
    torch.manual_seed(0)
    rng = np.random.default_rng(7)
    tokens = torch.tensor(rng.integers(0, V, size=T + 1), dtype=torch.long)
    for name in names or CASES:
        make, opts = CASES[name]
        torch.manual_seed(sum(map(ord, opts.get("seed_of", name))))
        model = make().float().eval()
        with torch.no_grad():
            for n, p in model.named_parameters():
                if p.dim() > 1:
                    p.normal_(0.0, opts.get("std", 0.3))
                elif n.endswith("sinks"):
                    p.normal_(0.0, 1.0)  # gpt-oss's sink logits: large enough to matter
                elif "norm" in n or "ln_" in n:
                    p.normal_(1.0, 0.1)
                else:
                    p.normal_(0.0, 0.1)
            for n, b in model.named_buffers():
                if n.endswith("e_score_correction_bias") or n.endswith("expert_bias"):
                    b.normal_(0.0, 0.1)  # GLM-4.5's selection bias: enough to change choices
            for n, p in model.named_parameters():
                if n.endswith("moe_statics.e_score_correction_bias"):
                    p.normal_(0.0, 0.05)  # ERNIE 4.5's, beside probabilities of about 1/8
        if "dtype" in opts:
            # bf16 on disk: round the weights first, so the fp32 reference is the bf16 model.
            model = model.to(opts["dtype"]).float()
        out = os.path.join(out_root, name)
        os.makedirs(out, exist_ok=True)
        for f in os.listdir(out):
            os.remove(os.path.join(out, f))
        save = model.to(opts["dtype"]) if "dtype" in opts else model
        kw = {"max_shard_size": opts["max_shard_size"]} if "max_shard_size" in opts else {}
        if opts.get("mxfp4"):
            save_mxfp4(model, out)
        elif opts.get("fp8"):
            save_fp8(model, out, opts.get("fp8_block", FP8_BLOCK))
        elif opts.get("ct"):
            save_ct(model, out, *opts["ct"])
        elif opts.get("ctn"):
            save_ct_naive(model, out, *opts["ctn"])
        elif name in ("glm4_moe", "deepseek_v3"):
            save_glm4_moe(model, out)
        elif name in ("exaone_moe", "mellum", "qwen3_5_vl", "qwen3_next", "nemotron_h_latent"):
            save_glm4_moe(model, out, "mtp.")
        elif name == "qwen3_vl_moe":
            save_experts_xw(model, out)
        elif name in ("glm4v_moe", "glm_ocr"):
            save_glm4_moe(model, out, f"model.language_model.layers.{model.config.text_config.num_hidden_layers}.")
        else:
            save.save_pretrained(out, safe_serialization=True, **kw)
        if name == "qwen2_5_vl":
            flatten_vl_config(out)
        if "arch" in opts:  # a family transformers builds from another's class: the release's name
            with open(os.path.join(out, "config.json")) as f:
                config = json.load(f)
            config["architectures"] = [opts["arch"]]
            with open(os.path.join(out, "config.json"), "w") as f:
                json.dump(config, f, indent=2, sort_keys=True)
                f.write("\n")
        # The reference is what from_pretrained gives in fp32 from the saved files (a bf16 model
        # cast back in memory would keep bf16-rounded rotary frequencies, unlike a fresh load).
        # MoE models and SmolLM3 are scored in float64 (eager experts: the grouped product takes no
        # float64) and rounded: transformers' own fp32 is 1.6e-5 off that truth on Mixtral and
        # 1.1e-5 on SmolLM3, past the test's 1e-5.
        cls = type(model)
        if opts.get("ct") or opts.get("ctn"):  # the dequantized weights, in float64 (eager experts)
            for c in (model.config, model.config.get_text_config()):
                c._experts_implementation = "eager"
            model = model.double().eval()
        elif opts.get("fp8"):  # the dequantized weights; transformers' own FP8 loader checked to agree
            scored = model.double().eval()
            try:
                own = cls.from_pretrained(out, dtype=torch.float32, quantization_config=tf.FineGrainedFP8Config(
                    dequantize=True, weight_block_size=opts.get("fp8_block", FP8_BLOCK)))
                worst = max((p.double() - scored.state_dict()[n]).abs().max().item() for n, p in own.state_dict().items())
                assert worst < 1e-6, f"{name}: transformers' FP8 loader gives other weights ({worst:.3g})"
            except (ImportError, RuntimeError, ValueError) as e:  # no CPU path in this transformers
                print(f"{name}: transformers' FP8 loader not compared ({type(e).__name__}: {e})")
            model = scored
        elif opts.get("score64"):
            moe = {"experts_implementation": "eager"} if hasattr(model.config.get_text_config(), "num_experts_per_tok") else {}
            if opts.get("mxfp4"):  # transformers' MXFP4 loader, dequantizing (no GPU kernels)
                moe["quantization_config"] = tf.Mxfp4Config(dequantize=True)
            model = cls.from_pretrained(out, dtype=torch.float64, **moe).eval()
        else:
            model = cls.from_pretrained(out, dtype=torch.float32).eval()
        if name == "minimax_m2":
            margin = sigmoid_bias_margin(model, tokens, [layer.mlp.gate for layer in model.model.layers])
            assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        elif name.startswith("granite4_h"):  # no experts: no routing to check
            if model.config.num_local_experts:
                margin = logit_margin(model, tokens, [layer.block_sparse_moe.router for layer in model.model.layers])
                assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        elif name in ("nemotron_h", "bamba", "olmo_hybrid", "mamba", "falcon_mamba"):  # no experts: no routing to check
            pass
        elif name.startswith("llama4"):     # its routers give (scores, logits); the VLM scored by its text model
            text = model.language_model if name == "llama4_vl" else model
            margin = logit_margin(text, tokens, [layer.feed_forward.router for layer in text.model.layers
                                                 if hasattr(layer.feed_forward, "router")], lambda o: o[1])
            assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        elif name == "lfm2_moe":
            margin = sigmoid_bias_margin(model, tokens, [layer.feed_forward.gate for layer in model.model.layers
                                                         if hasattr(layer.feed_forward, "gate")])
            assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        elif name == "ernie4_5_moe":
            margin = ernie_margin(model, tokens)
            assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        elif name in ("deepseek_v2", "deepseek_v2_group", "mistral4"):
            margin = softmax_gate_margin(model, tokens)
            assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        elif hasattr(model.config.get_text_config(), "n_group"):
            margin = glm_routing_margin(model, tokens)
            assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        elif hasattr(model.config.get_text_config(), "num_experts_per_tok"):
            margin = routing_margin(model, tokens)
            assert margin > 1e-3, f"{name}: a token's routing is a near tie ({margin:.2g}): change the seed"
        # transformers 5.24's Llama4ForConditionalGeneration.forward fails on text alone (it reads
        # image_outputs its language model does not give): its language model scores the tokens
        scorer = model.language_model if name == "llama4_vl" else model
        with torch.no_grad():
            logits = scorer(tokens[None, :-1]).logits[0]
            loss = torch.nn.functional.cross_entropy(logits, tokens[1:]).item()
            logits = logits.float()
        logits.numpy().astype("<f4").tofile(os.path.join(out, "ref_logits.f32"))
        with open(os.path.join(out, "tokens.bin"), "wb") as f:
            f.write(bytes(tokens.tolist()))
        ref = {"loss": loss, "context": T, "vocab": V, "architecture": type(model).__name__}
        if opts.get("tol"):     # hf_compare's bars times this: the model's own fp32 is that sensitive
            ref["tolerance_scale"] = opts["tol"]
        with open(os.path.join(out, "ref.json"), "w") as f:
            json.dump(ref, f, indent=1)
        print(f"{name}: {type(model).__name__}, loss {loss:.6f}, files {sorted(os.listdir(out))}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

"""accel's `export --format hf` loaded by transformers' from_pretrained (not part of make check).

For (a) models trained a few steps by accel_train (GPT-2 and Llama configurations; some also
exported with --dtype fp8, scored by transformers' compressed-tensors loader against accel reading
that FP8 export) and (b) the committed fixtures imported with `accel_ckpt import`, this exports a
Hugging Face directory,
loads it with AutoModelForCausalLM.from_pretrained(output_loading_info=True), and reports the
missing and unexpected keys (both must be 0) and the largest |logit difference| between
transformers (float64) and accel_generate --logits-out on the same tokens (must be within
1e-5 (s + |logit|), s the position's largest |logit| and at least 1, as tests/hf_compare.c).

    bench/.venv/bin/python tests/hf_roundtrip.py [--build DIR]     (DIR: where accel is built)
Exit status 0 when every case passes. tests/make_hf_fixtures.sh runs it with ROUNDTRIP=1.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers as tf

TOL = 1e-5
# Trained cases also exported with --dtype fp8 and nvfp4 (compressed-tensors FP8-dynamic, NVFP4A16):
# Llama kinds, dense and MoE (its stacked experts stay bf16: no Linear layers in transformers 5).
FP8_CASES = ("trained_llama", "trained_qwen3", "trained_mixtral", "trained_gemma3")
# (transformers 5.24 leaves a Mixtral's unquantized experts in bf16 under its NVFP4 loader, which
# then fails in float64: the dense ones)
NVFP4_CASES = ("trained_llama", "trained_qwen3", "trained_gemma3")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def check(build, name, weights, work, tokens, quant=None):
    """quant fp8 or nvfp4: export --dtype quant, and accel scores the export itself (its weights are
    the quantized ones)."""
    hf_dir = os.path.join(work, name + ".hf")
    run([os.path.join(build, "accel_ckpt"), "export", weights, "--format", "hf", "--output", hf_dir]
        + (["--dtype", quant] if quant else []))
    # Scored in float64 (the truth, not transformers' own fp32 rounding, which is up to 1e-5 off on
    # some fixtures); the mixtures of experts through the eager loop, which takes float64.
    cfg = tf.AutoConfig.from_pretrained(hf_dir)
    moe = {"experts_implementation": "eager"} if hasattr(cfg, "num_experts_per_tok") else {}
    # the class config.json names (AutoModelForCausalLM does not list every one: Mistral4ForCausalLM)
    cls = getattr(tf, (cfg.architectures or [""])[0], None) or tf.AutoModelForCausalLM
    if quant:   # compressed-tensors' decompressor: exact on accel's exports (F32 scales; NVFP4: a power-of-two global)
        moe["quantization_config"] = tf.CompressedTensorsConfig(run_compressed=False)
    model, info = cls.from_pretrained(hf_dir, dtype=torch.float64, output_loading_info=True, **moe)
    model.eval()
    missing, unexpected = info["missing_keys"], info["unexpected_keys"]
    tok_path = os.path.join(work, name + ".tokens")
    with open(tok_path, "wb") as f:
        f.write(bytes(tokens))
    logits_path = os.path.join(work, name + ".logits")
    if os.path.exists(logits_path):
        os.remove(logits_path)
    run([os.path.join(build, "accel_generate"), hf_dir if quant else weights, "-q", "--score", tok_path,
         "--logits-out", logits_path])
    ours = np.fromfile(logits_path, "<f4")
    with torch.no_grad():
        ref = model(torch.tensor(tokens[:-1])[None]).logits[0].float().numpy().ravel()
    diff = float(np.abs(ours[:ref.size] - ref).max()) if ours.size >= ref.size else float("inf")
    rows = ref.reshape(len(tokens) - 1, -1)
    scale = np.maximum(1.0, np.abs(rows).max(axis=1, keepdims=True))
    bound = (TOL * (scale + np.abs(rows))).ravel()
    close = ours.size >= ref.size and bool(np.all(np.abs(ours[:ref.size] - ref) <= bound))
    ok = not missing and not unexpected and close
    print(f"{name:28s} {type(model).__name__:22s} missing {len(missing)} unexpected {len(unexpected)} "
          f"max|logit diff| {diff:.3g}  {'OK' if ok else 'FAIL'}"
          + (f"  missing={list(missing)} unexpected={list(unexpected)}" if missing or unexpected else ""))
    return ok


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--build", default=os.path.dirname(here))
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    fixtures = os.path.join(here, "fixtures", "hf")
    rng = np.random.default_rng(11)
    ok = True
    with tempfile.TemporaryDirectory() as work:
        # (a) trained by accel
        base = ["model.context=16", "model.vocab=256", "data.path=synthetic", "train.steps=5",
                "train.global_batch=4", "train.sample_tokens=0", "train.log_every=0",
                "data.eval_samples=4"]
        for name, keys in [
            ("trained_gpt", ["model.name=gpt", "model.layers=2", "model.width=32", "model.heads=4"]),
            ("trained_llama", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                               "model.kv_heads=2", "model.ffn_width=48", "model.tie_embeddings=false",
                               "model.rope_theta=50000", "model.rms_eps=1e-6"]),
            ("trained_llama3_tied", ["model.name=llama", "model.layers=1", "model.width=32",
                                     "model.heads=2", "model.rope_scaling=llama3",
                                     "model.rope_original_context=8"]),
            ("trained_qwen2_bias", ["model.name=llama", "model.layers=1", "model.width=32",
                                    "model.heads=4", "model.kv_heads=2", "model.attention_bias=true"]),
            ("trained_qwen3", ["model.name=llama", "model.layers=2", "model.width=32",
                               "model.heads=4", "model.kv_heads=2", "model.head_dim=16",
                               "model.qk_norm=true", "model.rope_theta=1000000", "model.rms_eps=1e-6"]),
            ("trained_mixtral", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.ffn_width=24", "model.tie_embeddings=false",
                                 "model.experts=4", "model.experts_per_token=2",
                                 "model.router_aux_loss=0.02"]),
            ("trained_qwen3_moe", ["model.name=llama", "model.layers=2", "model.width=32",
                                   "model.heads=4", "model.kv_heads=2", "model.head_dim=16",
                                   "model.qk_norm=true", "model.experts=8", "model.experts_per_token=3",
                                   "model.router_norm_topk=false", "model.ffn_width=16"]),
            ("trained_mistral_sw", ["model.name=llama", "model.layers=2", "model.width=32",
                                    "model.heads=4", "model.kv_heads=2", "model.sliding_window=5",
                                    "model.tie_embeddings=false"]),
            ("trained_qwen3_sw", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                  "model.kv_heads=2", "model.qk_norm=true", "model.sliding_window=6"]),
            ("trained_llama_yarn", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.rope_scaling=yarn", "model.rope_factor=4",
                                    "model.rope_original_context=4", "model.rope_beta_fast=8"]),
            ("trained_olmo2", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                               "model.kv_heads=2", "model.qk_norm=true", "model.qk_norm_scope=all",
                               "model.norm_position=post", "model.tie_embeddings=false"]),
            ("trained_olmo3", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                               "model.kv_heads=2", "model.qk_norm=true", "model.qk_norm_scope=all",
                               "model.norm_position=post", "model.tie_embeddings=false",
                               "model.sliding_window=5", "model.sliding_window_pattern=2",
                               "model.sliding_rope=plain", "model.rope_scaling=yarn", "model.rope_factor=4",
                               "model.rope_original_context=4"]),
            ("trained_qwen3_swp", ["model.name=llama", "model.layers=3", "model.width=32", "model.heads=4",
                                   "model.kv_heads=2", "model.qk_norm=true", "model.sliding_window=6",
                                   "model.sliding_window_pattern=3"]),
            ("trained_smollm3", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.no_rope_pattern=2", "model.rope_theta=2000000"]),
            ("trained_gemma3", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                "model.kv_heads=2", "model.head_dim=16", "model.norm_position=both",
                                "model.norm_unit_offset=true", "model.activation=gelu_tanh",
                                "model.embed_scale=5.656854152679443", "model.qk_norm=true",
                                "model.query_pre_attn_scalar=12", "model.sliding_window=5",
                                "model.sliding_window_pattern=2", "model.sliding_rope=plain",
                                "model.sliding_rope_theta=10000", "model.rope_theta=1000000",
                                "model.rope_scaling=linear", "model.rope_factor=4"]),
            ("trained_phi3_5", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                "model.kv_heads=2", "model.tie_embeddings=false", "model.rope_scaling=longrope",
                                "model.rope_original_context=8", "model.rope_factor=3",
                                "model.rope_short_factor=1,1.5,2,4", "model.rope_long_factor=2,3,5,8",
                                "model.sliding_window=5"]),
            ("trained_phi4_mini", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                   "model.kv_heads=2", "model.rope_dim=6", "model.rope_scaling=longrope",
                                   "model.rope_original_context=16", "model.rope_factor=8",
                                   "model.rope_short_factor=[1, 2, 4]", "model.rope_long_factor=[1, 3, 9]"]),
            ("trained_exaone4", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.norm_position=post", "model.qk_norm=true",
                                 "model.sliding_window=5", "model.sliding_window_pattern=2",
                                 "model.no_rope_pattern=2", "model.tie_embeddings=false",
                                 "model.rope_scaling=llama3", "model.rope_original_context=8"]),
            ("trained_exaone4_global", ["model.name=llama", "model.layers=2", "model.width=32",
                                        "model.heads=4", "model.kv_heads=2", "model.norm_position=post",
                                        "model.qk_norm=true"]),
            ("trained_deepseek_v3", ["model.name=llama", "model.layers=3", "model.width=32", "model.heads=4",
                                     "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                     "model.shared_expert_ffn=16", "model.shared_expert_gate=false",
                                     "model.router_scores=sigmoid", "model.router_select_bias=true",
                                     "model.router_groups=2", "model.router_topk_groups=1", "model.router_scale=2",
                                     "model.dense_layers=1", "model.dense_ffn_width=40",
                                     "model.tie_embeddings=false", "model.kv_lora_rank=12", "model.q_lora_rank=10",
                                     "model.head_dim=12", "model.rope_dim=4", "model.v_head_dim=8",
                                     "model.rope_scaling=yarn", "model.rope_factor=4",
                                     "model.rope_original_context=8", "model.attention_multiplier=0.4"]),
            ("trained_moonlight", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                   "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                   "model.shared_expert_ffn=32", "model.shared_expert_gate=false",
                                   "model.router_scores=sigmoid", "model.router_select_bias=true",
                                   "model.kv_lora_rank=12", "model.head_dim=12", "model.rope_dim=4"]),
            ("trained_deepseek_v2", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                     "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                     "model.shared_expert_ffn=32", "model.shared_expert_gate=false",
                                     "model.router_norm_topk=false", "model.router_scale=1.5",
                                     "model.dense_layers=1", "model.kv_lora_rank=12", "model.head_dim=12",
                                     "model.rope_dim=4", "model.v_head_dim=8"]),
            ("trained_ministral3", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.head_dim=16", "model.tie_embeddings=false",
                                    "model.rope_scaling=yarn", "model.rope_factor=4", "model.rope_original_context=4",
                                    "model.rope_attention_factor=1", "model.rope_theta=1000000",
                                    "model.query_scale_beta=0.3", "model.query_scale_context=4"]),
            ("trained_ministral3_plain", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                          "model.kv_heads=2", "model.sliding_window=6",
                                          "model.query_scale_beta=0.2", "model.query_scale_context=5"]),
            ("trained_mistral4", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                  "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                  "model.shared_expert_ffn=16", "model.shared_expert_gate=false",
                                  "model.router_groups=2", "model.router_topk_groups=1", "model.router_scale=1.5",
                                  "model.dense_layers=1", "model.kv_lora_rank=12", "model.q_lora_rank=10",
                                  "model.head_dim=12", "model.rope_dim=4", "model.v_head_dim=8",
                                  "model.rope_scaling=yarn", "model.rope_factor=4", "model.rope_original_context=4",
                                  "model.attention_multiplier=0.4", "model.query_scale_beta=0.3",
                                  "model.query_scale_context=4", "model.tie_embeddings=false"]),
            ("trained_deepseek_v2_group", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                           "model.experts=8", "model.experts_per_token=3", "model.ffn_width=16",
                                           "model.shared_expert_ffn=32", "model.shared_expert_gate=false",
                                           "model.router_norm_topk=false", "model.router_groups=4",
                                           "model.router_topk_groups=2", "model.router_group_score=max",
                                           "model.kv_lora_rank=12", "model.head_dim=12", "model.rope_dim=4"]),
            ("trained_ernie4_5_moe", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                      "model.kv_heads=2", "model.head_dim=16", "model.experts=4",
                                      "model.experts_per_token=2", "model.ffn_width=16", "model.shared_expert_ffn=32",
                                      "model.shared_expert_gate=false", "model.router_select_bias=true",
                                      "model.dense_layers=1", "model.tie_embeddings=false"]),
            ("trained_minimax_m2", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.head_dim=16", "model.rope_dim=8", "model.qk_norm=true",
                                    "model.qk_norm_scope=all", "model.experts=8", "model.experts_per_token=2",
                                    "model.ffn_width=16", "model.router_scores=sigmoid",
                                    "model.router_select_bias=true", "optim.router_bias_update=0.01",
                                    "model.tie_embeddings=false"]),
            ("trained_exaone_moe", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.head_dim=16", "model.qk_norm=true", "model.experts=8",
                                    "model.experts_per_token=2", "model.ffn_width=16", "model.shared_expert_ffn=16",
                                    "model.shared_expert_gate=false", "model.router_scores=sigmoid",
                                    "model.router_select_bias=true", "optim.router_bias_update=0.01",
                                    "model.router_groups=2", "model.router_topk_groups=1", "model.router_scale=2.5",
                                    "model.dense_layers=1", "model.dense_ffn_width=48", "model.sliding_window=5",
                                    "model.sliding_window_pattern=4", "model.no_rope_pattern=4",
                                    "model.tie_embeddings=false"]),
            ("trained_youtu", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                               "model.kv_lora_rank=12", "model.q_lora_rank=10", "model.head_dim=12",
                               "model.rope_dim=4", "model.v_head_dim=8", "model.rope_theta=1600000"]),
            ("trained_mellum", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                "model.kv_heads=2", "model.head_dim=16", "model.qk_norm=true", "model.experts=8",
                                "model.experts_per_token=2", "model.ffn_width=16", "model.dense_layers=1",
                                "model.dense_ffn_width=48", "model.sliding_window=5", "model.sliding_window_pattern=4",
                                "model.sliding_rope=plain", "model.sliding_rope_theta=10000", "model.rope_theta=500000",
                                "model.router_aux_loss=0.01", "model.tie_embeddings=false"]),
            ("trained_ministral", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                   "model.kv_heads=2", "model.sliding_window=5", "model.sliding_window_pattern=2",
                                   "model.tie_embeddings=false"]),
            ("trained_starcoder2", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.norm=layer", "model.mlp=plain",
                                    "model.activation=gelu_tanh", "model.mlp_bias=true", "model.attention_bias=true",
                                    "model.attention_out_bias=true", "model.sliding_window=5", "model.rms_eps=1e-5"]),
            ("trained_nemotron", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                  "model.kv_heads=2", "model.norm=layer", "model.norm_unit_offset=true",
                                  "model.mlp=plain", "model.activation=relu2", "model.rope_dim=4",
                                  "model.tie_embeddings=false"]),
            ("trained_jais2", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                               "model.norm=layer", "model.mlp=plain", "model.activation=relu2", "model.mlp_bias=true",
                               "model.attention_bias=true", "model.attention_out_bias=true",
                               "model.tie_embeddings=false"]),
            ("trained_arcee", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                               "model.kv_heads=2", "model.mlp=plain", "model.activation=relu2",
                               "model.rope_scaling=yarn", "model.rope_factor=4", "model.rope_original_context=4",
                               "model.tie_embeddings=false"]),
            ("trained_cwm", ["model.name=llama", "model.layers=5", "model.width=32", "model.heads=4",
                             "model.kv_heads=2", "model.sliding_window=4", "model.sliding_layers=1,2,3",
                             "model.rope_scaling=llama3", "model.rope_factor=16", "model.rope_original_context=8",
                             "model.rope_theta=1000000", "model.tie_embeddings=false"]),
            ("trained_granite_swa", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                     "model.kv_heads=2", "model.embed_scale=4", "model.attention_multiplier=0.05",
                                     "model.residual_multiplier=0.3", "model.logits_scaling=3",
                                     "model.attention_sinks=true", "model.sliding_window=5",
                                     "model.sliding_window_pattern=2", "model.sliding_rope=plain",
                                     "model.sliding_rope_theta=100", "model.no_rope_pattern=4"]),
            ("trained_granite_moe_swa", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                         "model.kv_heads=2", "model.embed_scale=4", "model.attention_multiplier=0.05",
                                         "model.residual_multiplier=0.3", "model.logits_scaling=3",
                                         "model.attention_sinks=true", "model.sliding_window=5",
                                         "model.sliding_layers=0", "model.experts=4", "model.experts_per_token=2",
                                         "model.ffn_width=16", "model.shared_expert_ffn=24",
                                         "model.shared_expert_gate=false", "model.router_aux_loss=0.01"]),
            ("trained_granite_moe_shared", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                            "model.kv_heads=2", "model.embed_scale=4",
                                            "model.attention_multiplier=0.05", "model.residual_multiplier=0.3",
                                            "model.logits_scaling=3", "model.experts=4", "model.experts_per_token=2",
                                            "model.ffn_width=16", "model.shared_expert_ffn=24",
                                            "model.shared_expert_gate=false", "model.router_aux_loss=0.01"]),
            ("trained_hyperclovax", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                     "model.kv_heads=2", "model.norm_position=both", "model.embed_scale=4",
                                     "model.attention_multiplier=0.05", "model.residual_multiplier=0.3",
                                     "model.logits_scaling=4", "model.tie_embeddings=false"]),
            ("trained_hunyuan_moe", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                     "model.kv_heads=2", "model.qk_norm=true", "model.qk_norm_after_rope=true",
                                     "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                     "model.shared_expert_ffn=16", "model.shared_expert_gate=false",
                                     "model.tie_embeddings=true"]),
            ("trained_apertus", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.mlp=plain", "model.activation=xielu", "model.qk_norm=true",
                                 "model.rope_theta=12000000", "model.tie_embeddings=false"]),
            ("trained_mamba", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=1",
                               "model.mamba1_width=64", "model.mamba_state=4", "model.mamba_conv_kernel=4",
                               "model.mixer_only_layers=0,1", "model.tie_embeddings=true"]),
            ("trained_falcon_mamba", ["model.name=llama", "model.layers=2", "model.width=20", "model.heads=1",
                                      "model.mamba1_width=40", "model.mamba_state=4", "model.mamba1_dt_rank=3",
                                      "model.mamba_conv_kernel=3", "model.mamba_conv_bias=false",
                                      "model.mamba1_norms=plain", "model.mixer_only_layers=0,1",
                                      "model.tie_embeddings=false"]),
            ("trained_jamba", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                               "model.kv_heads=2", "model.ffn_width=24", "model.dense_ffn_width=24",
                               "model.mamba1_width=64", "model.mamba_state=4", "model.mamba1_norms=weighted",
                               "model.mamba1_norm_eps=1e-5", "model.attention_layers=2", "model.no_rope_pattern=1", "model.experts=4",
                               "model.experts_per_token=2", "model.router_norm_topk=false", "model.expert_layers=1,3",
                               "model.tie_embeddings=false"]),
            ("trained_stablelm", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                  "model.norm=layer", "model.attention_bias=true", "model.rope_dim=4",
                                  "model.tie_embeddings=false"]),
            ("trained_gpt_neox", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                  "model.norm=layer", "model.mlp=plain", "model.activation=gelu", "model.mlp_bias=true",
                                  "model.attention_bias=true", "model.attention_out_bias=true", "model.rope_dim=2",
                                  "model.parallel_block=two_norms", "model.tie_embeddings=false"]),
            ("trained_gpt_neox_seq", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                      "model.norm=layer", "model.mlp=plain", "model.activation=gelu_tanh",
                                      "model.mlp_bias=true", "model.attention_bias=true",
                                      "model.attention_out_bias=true", "model.rope_dim=4",
                                      "model.rope_scaling=linear", "model.rope_factor=2"]),
            ("trained_cohere", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                "model.kv_heads=2", "model.norm=layer", "model.norm_bias=false",
                                "model.parallel_block=one_norm", "model.logits_scaling=8"]),
            ("trained_cohere2", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.norm=layer", "model.norm_bias=false",
                                 "model.parallel_block=one_norm", "model.logits_scaling=2", "model.sliding_window=5",
                                 "model.sliding_window_pattern=4", "model.no_rope_pattern=4",
                                 "model.attention_bias=true", "model.attention_out_bias=true",
                                 "model.rope_theta=50000"]),
            ("trained_phi", ["model.name=llama", "model.layers=2", "model.width=40", "model.heads=4",
                             "model.norm=layer", "model.mlp=plain", "model.activation=gelu_tanh", "model.mlp_bias=true",
                             "model.attention_bias=true", "model.attention_out_bias=true", "model.rope_dim=4",
                             "model.parallel_block=one_norm", "model.head_bias=true", "model.tie_embeddings=false"]),
            ("trained_gptj", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                              "model.norm=layer", "model.mlp=plain", "model.activation=gelu_tanh", "model.mlp_bias=true",
                              "model.rope_dim=4", "model.parallel_block=one_norm", "model.head_bias=true",
                              "model.tie_embeddings=false"]),
            ("trained_qwen3_5", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.head_dim=16", "model.rope_dim=4", "model.qk_norm=true",
                                 "model.norm_unit_offset=true", "model.attention_output_gate=true",
                                 "model.linear_attention_pattern=4", "model.linear_key_heads=2",
                                 "model.linear_value_heads=4", "model.linear_key_dim=8", "model.linear_value_dim=6",
                                 "model.rope_theta=10000000", "model.tie_embeddings=false"]),
            ("trained_qwen3_5_moe", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                     "model.kv_heads=2", "model.head_dim=8", "model.rope_dim=2", "model.qk_norm=true",
                                     "model.norm_unit_offset=true", "model.attention_output_gate=true",
                                     "model.linear_attention_pattern=2", "model.linear_key_heads=2",
                                     "model.linear_value_heads=2", "model.experts=4", "model.experts_per_token=2",
                                     "model.ffn_width=16", "model.shared_expert_ffn=24", "model.router_norm_topk=true",
                                     "model.router_aux_loss=0.001", "model.tie_embeddings=false"]),
            ("trained_qwen3_next", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.head_dim=8", "model.rope_dim=2", "model.qk_norm=true",
                                    "model.norm_unit_offset=true", "model.attention_output_gate=true",
                                    "model.linear_attention_pattern=2", "model.linear_key_heads=2",
                                    "model.linear_value_heads=4", "model.experts=4", "model.experts_per_token=2",
                                    "model.ffn_width=16", "model.shared_expert_ffn=24", "model.router_norm_topk=false",
                                    "model.tie_embeddings=false"]),
            ("trained_lfm2", ["model.name=llama", "model.layers=5", "model.width=32", "model.heads=4",
                              "model.kv_heads=2", "model.qk_norm=true", "model.short_conv_kernel=3",
                              "model.attention_layers=[1,4]", "model.ffn_width=48", "model.rope_theta=1000000",
                              "model.rms_eps=1e-5"]),
            ("trained_lfm2_moe", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                  "model.kv_heads=2", "model.qk_norm=true", "model.short_conv_kernel=3",
                                  "model.attention_layers=[2]", "model.experts=4", "model.experts_per_token=2",
                                  "model.ffn_width=16", "model.dense_layers=1", "model.dense_ffn_width=40",
                                  "model.router_scores=sigmoid", "model.router_select_bias=true",
                                  "model.router_norm_eps=1e-6", "model.router_scale=1.5"]),
            ("trained_lfm3", ["model.name=llama", "model.layers=6", "model.width=32", "model.heads=4",
                              "model.kv_heads=2", "model.head_dim=16", "model.qk_norm=true",
                              "model.short_conv_kernel=5", "model.attention_layers=[2,4]",
                              "model.norm_position=both", "model.attention_head_gate=true",
                              "model.sliding_window=5", "model.sliding_layers=[4]", "model.sliding_rope=plain",
                              "model.sliding_rope_theta=10000", "model.rope_scaling=proportional",
                              "model.rope_proportion=0.5", "model.rope_theta=1000000"]),
            ("trained_granite4_h", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.mamba_heads=4", "model.mamba_groups=2",
                                    "model.mamba_state=8", "model.attention_layers=[2]", "model.no_rope_pattern=1",
                                    "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                    "model.shared_expert_ffn=24", "model.shared_expert_gate=false",
                                    "model.embed_scale=4", "model.attention_multiplier=0.05",
                                    "model.residual_multiplier=0.3", "model.logits_scaling=3",
                                    "model.tie_embeddings=false"]),
            ("trained_granite4_h_dense", ["model.name=llama", "model.layers=3", "model.width=32", "model.heads=4",
                                          "model.kv_heads=2", "model.mamba_heads=2", "model.mamba_state=8",
                                          "model.mamba_conv_kernel=3", "model.attention_layers=[1]",
                                          "model.embed_scale=2", "model.attention_multiplier=0.1",
                                          "model.residual_multiplier=0.5", "model.logits_scaling=2"]),
            ("trained_nemotron_h", ["model.name=llama", "model.layers=5", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.head_dim=16", "model.mamba_heads=4",
                                    "model.mamba_head_dim=16", "model.mamba_groups=2", "model.mamba_state=8",
                                    "model.attention_layers=[2]", "model.mixer_only_layers=[0,2,4]",
                                    "model.mlp_only_layers=[1,3]", "model.no_rope_pattern=1", "model.mlp=plain",
                                    "model.activation=relu2", "model.ffn_width=48", "model.tie_embeddings=false"]),
            ("trained_nemotron_h_moe", ["model.name=llama", "model.layers=6", "model.width=32", "model.heads=4",
                                        "model.kv_heads=2", "model.head_dim=16", "model.mamba_heads=4",
                                        "model.mamba_head_dim=16", "model.mamba_groups=2", "model.mamba_state=8",
                                        "model.attention_layers=[2]", "model.mixer_only_layers=[0,2,4]",
                                        "model.mlp_only_layers=[1,3,5]", "model.no_rope_pattern=1",
                                        "model.mlp=plain", "model.activation=relu2", "model.experts=4",
                                        "model.experts_per_token=2", "model.ffn_width=16", "model.dense_layers=2",
                                        "model.dense_ffn_width=40", "model.router_scores=sigmoid",
                                        "model.router_select_bias=true", "model.router_scale=2.5",
                                        "model.shared_expert_ffn=24", "model.shared_expert_gate=false",
                                        "model.tie_embeddings=false"]),
            ("trained_nemotron_h_latent", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                           "model.kv_heads=2", "model.mamba_heads=4", "model.mamba_head_dim=16",
                                           "model.mamba_groups=2", "model.mamba_state=8", "model.attention_layers=[2]",
                                           "model.mixer_only_layers=[0,2]", "model.mlp_only_layers=[1,3]",
                                           "model.no_rope_pattern=1", "model.mlp=plain", "model.activation=relu2",
                                           "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                           "model.expert_latent=12", "model.router_scores=sigmoid",
                                           "model.router_select_bias=true", "model.router_scale=2.5",
                                           "model.shared_expert_ffn=24", "model.shared_expert_gate=false",
                                           "model.tie_embeddings=false"]),
            ("trained_bamba", ["model.name=llama", "model.layers=3", "model.width=32", "model.heads=4",
                               "model.kv_heads=2", "model.mamba_heads=4", "model.mamba_groups=2", "model.mamba_state=8",
                               "model.attention_layers=[1]", "model.rope_dim=4", "model.ffn_width=40",
                               "model.tie_embeddings=false"]),
            ("trained_llama4", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                "model.kv_heads=2", "model.head_dim=8", "model.experts=4", "model.experts_per_token=1",
                                "model.ffn_width=16", "model.shared_expert_ffn=16", "model.shared_expert_gate=false",
                                "model.router_scores=sigmoid", "model.router_norm_topk=false",
                                "model.expert_input_scaled=true",
                                "model.expert_layers=[1,3]", "model.dense_ffn_width=40", "model.qk_norm=true",
                                "model.qk_norm_weights=false", "model.qk_norm_after_rope=true",
                                "model.qk_norm_layers=rope", "model.no_rope_pattern=2", "model.sliding_window=5",
                                "model.sliding_window_pattern=2", "model.sliding_chunked=true",
                                "model.query_scale_beta=0.1", "model.query_scale_context=4",
                                "model.query_scale_offset=1", "model.query_scale_layers=no_rope",
                                "model.rope_theta=500000", "model.tie_embeddings=false"]),
            ("trained_hunyuan", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.head_dim=16", "model.qk_norm=true",
                                 "model.qk_norm_after_rope=true", "model.rope_theta=500000"]),
            ("trained_granite", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.embed_scale=4", "model.attention_multiplier=0.05",
                                 "model.residual_multiplier=0.3", "model.logits_scaling=3"]),
            ("trained_gemma2", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                "model.kv_heads=2", "model.head_dim=16", "model.norm_position=both",
                                "model.norm_unit_offset=true", "model.activation=gelu_tanh",
                                "model.embed_scale=5.656854152679443", "model.sliding_window=5",
                                "model.sliding_window_pattern=2", "model.attention_softcap=5",
                                "model.logit_softcap=3"]),
            ("trained_vaultgemma", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.head_dim=16", "model.norm_unit_offset=true",
                                    "model.activation=gelu_tanh", "model.embed_scale=5.656854152679443",
                                    "model.sliding_window=5", "model.sliding_window_pattern=2",
                                    "model.attention_softcap=5", "model.logit_softcap=3"]),
            ("trained_gemma", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                               "model.kv_heads=1", "model.norm_unit_offset=true", "model.activation=gelu_tanh",
                               "model.embed_scale=5.656854152679443"]),
            ("trained_olmoe", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                               "model.kv_heads=2", "model.qk_norm=true", "model.qk_norm_scope=all",
                               "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                               "model.router_norm_topk=false", "model.tie_embeddings=false"]),
            ("trained_flex_olmo", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                   "model.kv_heads=2", "model.qk_norm=true", "model.qk_norm_scope=all",
                                   "model.norm_position=post", "model.experts=4", "model.experts_per_token=2",
                                   "model.ffn_width=16", "model.router_norm_topk=false", "model.rope_theta=500000",
                                   "model.tie_embeddings=false"]),
            ("trained_olmo_hybrid", ["model.name=llama", "model.layers=4", "model.width=32", "model.heads=4",
                                     "model.kv_heads=2", "model.qk_norm=true", "model.qk_norm_scope=all",
                                     "model.norm_position=post", "model.linear_attention_pattern=4",
                                     "model.linear_key_heads=2", "model.linear_value_heads=4", "model.linear_key_dim=12",
                                     "model.linear_value_dim=6", "model.linear_allow_neg_eigval=true",
                                     "model.linear_norm_eps=1e-5", "model.ffn_width=40", "model.rope_theta=500000",
                                     "model.tie_embeddings=false"]),
            ("trained_qwen2_moe", ["model.name=llama", "model.layers=2", "model.width=32",
                                   "model.heads=4", "model.kv_heads=2", "model.attention_bias=true",
                                   "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                   "model.shared_expert_ffn=24", "model.router_norm_topk=false",
                                   "model.router_aux_loss=0.01", "model.tie_embeddings=false"]),
            ("trained_llama_bias", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                    "model.kv_heads=2", "model.attention_bias=true",
                                    "model.attention_out_bias=true", "model.tie_embeddings=false"]),
            ("trained_seed_oss", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                  "model.kv_heads=2", "model.head_dim=16", "model.attention_out_bias=true",
                                  "model.rope_theta=10000000", "model.tie_embeddings=false"]),
            ("trained_granite_moe", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                     "model.kv_heads=2", "model.embed_scale=4", "model.attention_multiplier=0.05",
                                     "model.residual_multiplier=0.3", "model.logits_scaling=3", "model.experts=4",
                                     "model.experts_per_token=2", "model.ffn_width=16", "model.router_aux_loss=0.01"]),
            ("trained_glm", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                             "model.kv_heads=2", "model.head_dim=16", "model.rope_dim=8",
                             "model.attention_bias=true", "model.tie_embeddings=false"]),
            ("trained_glm4", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                              "model.kv_heads=2", "model.rope_dim=4", "model.norm_position=both",
                              "model.tie_embeddings=false"]),
            ("trained_glm4_moe", ["model.name=llama", "model.layers=3", "model.width=32", "model.heads=4",
                                  "model.kv_heads=2", "model.head_dim=16", "model.rope_dim=8",
                                  "model.attention_bias=true", "model.qk_norm=true", "model.experts=8",
                                  "model.experts_per_token=2", "model.ffn_width=16", "model.shared_expert_ffn=32",
                                  "model.shared_expert_gate=false", "model.router_scores=sigmoid",
                                  "model.router_select_bias=true", "model.router_groups=4",
                                  "model.router_topk_groups=2", "model.router_scale=2.5", "model.dense_layers=1",
                                  "model.dense_ffn_width=48", "model.tie_embeddings=false"]),
            ("trained_gpt_oss", ["model.name=llama", "model.layers=2", "model.width=32", "model.heads=4",
                                 "model.kv_heads=2", "model.head_dim=8", "model.attention_bias=true",
                                 "model.attention_out_bias=true", "model.attention_sinks=true",
                                 "model.experts=4", "model.experts_per_token=2", "model.ffn_width=16",
                                 "model.expert_bias=true", "model.activation=clamped_swiglu",
                                 "model.swiglu_limit=0.5", "model.sliding_window=5",
                                 "model.sliding_window_pattern=2", "model.rope_scaling=yarn",
                                 "model.rope_factor=4", "model.rope_original_context=4",
                                 "model.rope_truncate=false", "model.rope_theta=150000",
                                 "model.tie_embeddings=false"]),
        ]:
            if a.only not in name:
                continue
            ck = os.path.join(work, name)
            run([os.path.join(build, "accel_train"), *base, *keys, f"ckpt.dir={ck}"],
                env={**os.environ, "ACCEL_DEVICE": "cpu"})
            latest = open(os.path.join(ck, "latest")).read().strip()
            tokens = rng.integers(0, 256, size=17).tolist()
            ok &= check(build, name, os.path.join(ck, latest), work, tokens)
            for quant, cases in (("fp8", FP8_CASES), ("nvfp4", NVFP4_CASES)):  # transformers' compressed-
                if name in cases:                                               # tensors loader
                    ok &= check(build, name + "_" + quant, os.path.join(ck, latest), work, tokens, quant)
        # (b) imported fixtures
        for fx in sorted(os.listdir(fixtures)):
            if a.only not in "imported_" + fx:
                continue
            imp = os.path.join(work, fx + ".h5")
            run([os.path.join(build, "accel_ckpt"), "import", os.path.join(fixtures, fx), "-o", imp])
            tokens = list(open(os.path.join(fixtures, fx, "tokens.bin"), "rb").read())
            ok &= check(build, "imported_" + fx, imp, work, tokens)
    print("hf_roundtrip:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

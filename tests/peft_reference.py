"""PEFT LoRA adapters on the Hugging Face fixtures, and the merged models' reference outputs, for
tests/peft_import.sh.

Run by tests/make_hf_fixtures.sh (after hf_reference.py) with the venv python (bench/.venv with
peft from PyPI besides torch and transformers). Each adapter is made by PEFT itself on a fixture
of tests/fixtures/hf/, its factors drawn at random (PEFT starts B at zero: a merge of that would
prove nothing), saved with save_pretrained into tests/fixtures/peft/<name>/ with its
base_model_name_or_path made relative to the adapter ("../../hf/<base>"), and scored as PEFT's
merge_and_unload of the saved adapter on the saved base gives it, in float32, on the tokens of
hf_reference.py:
  tokens.bin      context+1 byte tokens
  ref_logits.f32  float32 logits [context, vocab] of the merged model on tokens[:-1]
  ref.json        {"loss", "context", "vocab", "architecture"}
With --check BUILD it is the oracle of accel's adapter export instead (check() below).
"""
import json
import os
import sys

import numpy as np
import peft
import torch
import transformers as tf
from safetensors.torch import load_file, save_file

from hf_reference import T, V

CASES = {
    # Llama: every linear layer, the embedding (lora_embedding_A/B) and the LM head as a whole
    # tensor (modules_to_save), a rank and an alpha apart by pattern.
    "lora_llama": ("llama_gqa", dict(
        r=4, lora_alpha=8, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                           "down_proj", "embed_tokens"],
        modules_to_save=["lm_head"], rank_pattern={"layers.1.self_attn.q_proj": 2},
        alpha_pattern={r"layers\.0\.mlp\..*": 3})),
    # GPT-2: Conv1D layers, stored [in, out] (fan_in_fan_out), rank-stabilized scale, saved in BF16.
    "lora_gpt2": ("gpt2", dict(r=3, lora_alpha=5, use_rslora=True, fan_in_fan_out=True,
                               target_modules=["c_attn", "c_proj", "c_fc"]), {"bf16": True}),
    # GPT-NeoX: q, k, v fused by head, which accel reads rearranged.
    "lora_neox": ("gpt_neox", dict(r=2, lora_alpha=4, target_modules=["query_key_value", "dense",
                                                                       "dense_h_to_4h", "dense_4h_to_h"])),
    # GLM-4: q and k with RoPE pairs interleaved, which accel reads reordered.
    "lora_glm4": ("glm4", dict(r=2, lora_alpha=2, target_modules=["q_proj", "k_proj", "o_proj", "gate_up_proj"])),
    # Gemma 3's language model beside a vision tower: transformers 5 names it model.language_model.
    # where the files have language_model.model.; the tower's own modules go with the tower; the
    # embedding, tied to the head, takes a LoRA too.
    "lora_gemma3_vl": ("gemma3_vl", dict(r=2, lora_alpha=4, target_modules=r".*(q_proj|v_proj|fc1|embed_tokens)")),
    # DoRA: LoRA, then each output row scaled to a learned magnitude; on Llama's projections and on
    # GPT-2's Conv1D layers (stored [in, out]: the magnitudes go with the columns).
    "dora_llama": ("llama_gqa", dict(r=2, lora_alpha=4, use_dora=True,
                                     target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                                                     "down_proj"])),
    "dora_gpt2": ("gpt2", dict(r=2, lora_alpha=2, use_dora=True, fan_in_fan_out=True, target_modules=["c_attn", "c_fc"])),
    # gpt-oss as OpenAI's fine-tuning recipe adapts it: its experts' stacked parameters
    # (target_parameters: x @ W, gate and up interleaved) beside attention's modules; on the dense
    # save and on the hub's MXFP4 one (dequantized by transformers for the reference).
    "lora_gpt_oss": ("gpt_oss", dict(r=2, lora_alpha=4, target_modules=["q_proj", "o_proj"],
                                     target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"])),
    "lora_gpt_oss_mxfp4": ("gpt_oss_mxfp4", dict(r=2, lora_alpha=3, target_modules=["v_proj"],
                                                 target_parameters=["mlp.experts.gate_up_proj", "mlp.experts.down_proj"]),
                           {"mxfp4": True}),
    # Granite MoE: its experts' stacked [E, out, in] weights, which the files call input_linear and
    # output_linear and transformers 5 (and so PEFT) experts.gate_up_proj and experts.down_proj.
    "lora_granite_moe": ("granite_moe", dict(r=2, lora_alpha=2, target_modules=["k_proj"],
                                             target_parameters=["block_sparse_moe.experts.gate_up_proj",
                                                                "block_sparse_moe.experts.down_proj"])),
}


def load(cls, base_dir, opts):
    """The base in float32 (MXFP4 experts dequantized, as transformers does on a CPU)."""
    kw = {"quantization_config": tf.Mxfp4Config(dequantize=True)} if opts.get("mxfp4") else {}
    model = cls.from_pretrained(base_dir, dtype=torch.float32, **kw)
    return model.float() if opts.get("mxfp4") else model


def main(hf_root, out_root, names):
    rng = np.random.default_rng(7)
    tokens = torch.tensor(rng.integers(0, V, size=T + 1), dtype=torch.long)    # as hf_reference.py's
    for name in names or CASES:
        base, kw, *rest = CASES[name]
        opts = rest[0] if rest else {}
        torch.manual_seed(sum(map(ord, name)))
        base_dir = os.path.join(hf_root, base)
        cls = getattr(tf, json.load(open(os.path.join(base_dir, "config.json")))["architectures"][0])
        model = peft.get_peft_model(load(cls, base_dir, opts), peft.LoraConfig(**kw))
        with torch.no_grad():
            for n, p in model.named_parameters():
                if p.requires_grad and "lora_magnitude_vector" in n:    # DoRA's: near the rows' norms
                    p.mul_(1.0 + 0.3 * torch.randn_like(p))
                elif p.requires_grad:
                    p.normal_(0.0, 0.3)
                    if opts.get("bf16"):
                        p.copy_(p.to(torch.bfloat16).float())
        out = os.path.join(out_root, name)
        os.makedirs(out, exist_ok=True)
        for f in os.listdir(out):
            os.remove(os.path.join(out, f))
        model.save_pretrained(out)
        os.remove(os.path.join(out, "README.md"))
        path = os.path.join(out, "adapter_model.safetensors")
        if opts.get("bf16"):   # the values are bf16's already: the file says so
            save_file({k: v.to(torch.bfloat16) for k, v in load_file(path).items()}, path, metadata={"format": "pt"})
        with open(os.path.join(out, "adapter_config.json")) as f:
            cfg = json.load(f)
        cfg["base_model_name_or_path"] = os.path.join("..", "..", "hf", base)
        with open(os.path.join(out, "adapter_config.json"), "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
        # The reference: PEFT's merge of the files as saved, onto the base as saved.
        fresh = peft.PeftModel.from_pretrained(load(cls, base_dir, opts), out)
        merged = fresh.merge_and_unload().eval()
        with torch.no_grad():
            logits = merged(tokens[None, :-1]).logits[0]
            loss = torch.nn.functional.cross_entropy(logits, tokens[1:]).item()
            base_logits = load(cls, base_dir, opts)(tokens[None, :-1]).logits[0]
        moved = (logits - base_logits).abs().max().item()
        assert moved > 0.1, f"{name}: the adapter barely changes the logits ({moved:.3g})"
        logits.float().numpy().astype("<f4").tofile(os.path.join(out, "ref_logits.f32"))
        with open(os.path.join(out, "tokens.bin"), "wb") as f:
            f.write(bytes(tokens.tolist()))
        with open(os.path.join(out, "ref.json"), "w") as f:
            json.dump({"loss": loss, "context": T, "vocab": V, "architecture": cls.__name__}, f, indent=1)
        print(f"{name}: LoRA on {base} ({cls.__name__}), loss {loss:.6f}, logits moved {moved:.3f}, "
              f"files {sorted(os.listdir(out))}")


EXPORT_RANKS = {"lora_llama": (4, "lm_head"), "lora_gpt2": (3, ""), "lora_neox": (2, ""), "lora_glm4": (2, ""),
                "lora_gpt_oss": (2, ""), "lora_gpt_oss_mxfp4": (2, ""), "lora_granite_moe": (2, "")}


def check(build, hf_root, peft_root):
    """PEFT as the oracle of accel's adapter export: each fixture adapter imported by accel (merged),
    exported again with `accel_ckpt export --format peft` at its rank, loaded by PEFT onto its base
    and merged: the logits must be the fixture's (PEFT's merge of the original adapter)."""
    import subprocess
    import tempfile
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (rank, whole) in EXPORT_RANKS.items():
            base, opts = os.path.join(hf_root, CASES[name][0]), (CASES[name][2:] or [{}])[0]
            merged, out = os.path.join(tmp, name + ".h5"), os.path.join(tmp, name + ".peft")
            subprocess.run([os.path.join(build, "accel_ckpt"), "import", os.path.join(peft_root, name), "-o", merged],
                           check=True, capture_output=True)
            cmd = [os.path.join(build, "accel_ckpt"), "export", merged, "--format", "peft", "--base", base,
                   "--rank", str(rank), "--output", out] + (["--whole", whole] if whole else [])
            subprocess.run(cmd, check=True, capture_output=True)
            cls = getattr(tf, json.load(open(os.path.join(base, "config.json")))["architectures"][0])
            model = peft.PeftModel.from_pretrained(load(cls, base, opts), out)
            model = model.merge_and_unload().eval()
            tokens = torch.tensor(list(open(os.path.join(peft_root, name, "tokens.bin"), "rb").read()))
            with torch.no_grad():
                logits = model(tokens[None, :-1]).logits[0].numpy()
            ref = np.fromfile(os.path.join(peft_root, name, "ref_logits.f32"), dtype="<f4").reshape(logits.shape)
            diff = float(np.abs(logits - ref).max() / max(1.0, np.abs(ref).max()))
            worst = max(worst, diff)
            print(f"{name}: accel's export (rank {rank}) loaded by PEFT: max |logit - reference| / scale {diff:.2e}")
    assert worst < 1e-5, f"PEFT's merge of accel's exported adapters is off by {worst:.2e}"


if __name__ == "__main__":
    if sys.argv[1] == "--check":    # peft_reference.py --check BUILD_DIR HF_ROOT PEFT_ROOT
        check(*sys.argv[2:5])
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3:])

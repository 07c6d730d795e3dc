"""A Llama of about a billion parameters written twice as a Hugging Face directory for
bench/int4_import.sh: OUT/bf16 (every weight bf16) and OUT/int4 (its linear layers in
compressed-tensors' pack-quantized INT4, groups of 32, BF16 scales, as Kimi K2 Thinking's experts
and the W4A16 releases; embeddings, norms and head bf16). Random weights: the figures are the
import's speed, not a model's quality.

    python bench/int4_import.py OUT [LAYERS]
"""
import json
import os
import sys

import torch
from compressed_tensors.compressors.pack_quantized.helpers import pack_to_int32
from safetensors.torch import save_file

import llama_1b
from llama_1b import C, V

out = sys.argv[1]
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 16
torch.manual_seed(0)
config = llama_1b.config(layers)
shapes = llama_1b.SHAPES
plain, packed = {}, {}
for t in ("model.embed_tokens.weight", "lm_head.weight"):
    plain[t] = packed[t] = (torch.randn(V, C) * 0.02).to(torch.bfloat16)
plain["model.norm.weight"] = packed["model.norm.weight"] = torch.ones(C, dtype=torch.bfloat16)
for l in range(layers):
    for n in ("input_layernorm", "post_attention_layernorm"):
        plain[f"model.layers.{l}.{n}.weight"] = packed[f"model.layers.{l}.{n}.weight"] = torch.ones(C, dtype=torch.bfloat16)
    for n, (r, c) in shapes.items():
        q = torch.randint(-8, 8, (r, c), dtype=torch.int8)
        scale = torch.exp2(-torch.randint(8, 11, (r, c // 32)).float()).to(torch.bfloat16)  # powers of
        # two: every value times its scale is exact in bf16, so the two files hold the same model
        stem = f"model.layers.{l}.{n}"
        plain[stem + ".weight"] = (q.float().view(r, c // 32, 32) * scale.float()[:, :, None]).view(r, c).to(torch.bfloat16)
        packed[stem + ".weight_packed"] = pack_to_int32(q, 4)
        packed[stem + ".weight_scale"] = scale
        packed[stem + ".weight_shape"] = torch.tensor([r, c], dtype=torch.int64)
weights = {"num_bits": 4, "type": "int", "symmetric": True, "group_size": 32, "strategy": "group", "actorder": None}
for kind, tensors in (("bf16", plain), ("int4", packed)):
    d = os.path.join(out, kind)
    os.makedirs(d, exist_ok=True)
    save_file(tensors, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg = dict(config)
    if kind == "int4":
        cfg["quantization_config"] = {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                      "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}},
                                      "ignore": ["lm_head"]}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
n = sum(t.numel() for t in plain.values())
print(f"{n} parameters; files: bf16 {os.path.getsize(os.path.join(out, 'bf16', 'model.safetensors')) / 2**30:.2f} GiB, "
      f"int4 {os.path.getsize(os.path.join(out, 'int4', 'model.safetensors')) / 2**30:.2f} GiB")

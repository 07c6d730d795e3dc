"""A Llama of about a billion parameters (bf16, random weights) and a PEFT LoRA adapter on every
linear layer of its blocks, for bench/lora_merge.sh: OUT/base (config.json, model.safetensors) and
OUT/adapter (adapter_config.json, adapter_model.safetensors as PEFT's save_pretrained writes them,
rank RANK, fp32 factors, base_model_name_or_path "../base"). With --peer, PEFT's own merge of the
same files (from_pretrained in bf16, PeftModel.from_pretrained, merge_and_unload, save_pretrained
to OUT/peft_merged) is timed instead.

    python bench/lora_merge.py OUT [LAYERS] [RANK]
    python bench/lora_merge.py --peer OUT
"""
import json
import os
import sys
import time

import torch
from safetensors.torch import save_file

import llama_1b
from llama_1b import C, V

if sys.argv[1] == "--peer":
    import peft
    import transformers as tf
    out = sys.argv[2]
    t0 = time.perf_counter()
    model = tf.LlamaForCausalLM.from_pretrained(os.path.join(out, "base"), dtype=torch.bfloat16)
    model = peft.PeftModel.from_pretrained(model, os.path.join(out, "adapter")).merge_and_unload()
    t1 = time.perf_counter()
    model.save_pretrained(os.path.join(out, "peft_merged"))
    t2 = time.perf_counter()
    print(f"PEFT (torch {torch.__version__}, peft {peft.__version__}, {torch.get_num_threads()} threads): "
          f"load + merge_and_unload {t1 - t0:.1f} s, save_pretrained (bf16) {t2 - t1:.1f} s")
    sys.exit(0)

out = sys.argv[1]
layers = int(sys.argv[2]) if len(sys.argv) > 2 else 16
rank = int(sys.argv[3]) if len(sys.argv) > 3 else 16
torch.manual_seed(0)
config = llama_1b.config(layers)
shapes = llama_1b.SHAPES
base, lora = {}, {}
for t in ("model.embed_tokens.weight", "lm_head.weight"):
    base[t] = (torch.randn(V, C) * 0.02).to(torch.bfloat16)
base["model.norm.weight"] = torch.ones(C, dtype=torch.bfloat16)
for l in range(layers):
    for n in ("input_layernorm", "post_attention_layernorm"):
        base[f"model.layers.{l}.{n}.weight"] = torch.ones(C, dtype=torch.bfloat16)
    for n, (r, c) in shapes.items():
        stem = f"model.layers.{l}.{n}"
        base[stem + ".weight"] = (torch.randn(r, c) * 0.02).to(torch.bfloat16)
        lora[f"base_model.model.{stem}.lora_A.weight"] = torch.randn(rank, c) * 0.01
        lora[f"base_model.model.{stem}.lora_B.weight"] = torch.randn(r, rank) * 0.01
for d, tensors in (("base", base), ("adapter", lora)):
    os.makedirs(os.path.join(out, d), exist_ok=True)
    save_file(tensors, os.path.join(out, d, "model.safetensors" if d == "base" else "adapter_model.safetensors"),
              metadata={"format": "pt"})
with open(os.path.join(out, "base", "config.json"), "w") as f:
    json.dump(config, f, indent=2)
with open(os.path.join(out, "adapter", "adapter_config.json"), "w") as f:
    json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank, "base_model_name_or_path": "../base",
               "target_modules": sorted({n.split(".")[1] for n in shapes}), "bias": "none", "use_rslora": False,
               "use_dora": False, "fan_in_fan_out": False, "task_type": "CAUSAL_LM"}, f, indent=2)
n = sum(t.numel() for t in base.values())
print(f"{n} parameters, {sum(t.numel() for t in lora.values())} in the adapter (rank {rank}, "
      f"{len(lora) // 2} modules)")

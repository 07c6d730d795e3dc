"""LoRA fine-tuning's peer for bench/lora_train.sh: a Llama of SmolLM-135M's shape (random fp32
weights) and PEFT's LoRA on every linear layer of its blocks, trained by torch's AdamW in fp32.

    python bench/lora_train.py --make OUT          OUT/base (config.json, model.safetensors) and
                                                   OUT/tokens.npy (random tokens)
    python bench/lora_train.py OUT lora|lora-qv|full STEPS BATCH CONTEXT RANK
        times STEPS steps of BATCH x CONTEXT tokens after a discarded first one: PEFT's LoRA of
        rank RANK (alpha 2 RANK) on every linear layer (lora) or q_proj and v_proj (lora-qv), or
        every weight trained; prints tokens/s
"""
import os
import sys
import time

import numpy as np
import torch
import transformers as tf

CONFIG = dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
              num_key_value_heads=3, vocab_size=49152, max_position_embeddings=2048, rms_norm_eps=1e-5,
              rope_theta=10000.0, tie_word_embeddings=True, hidden_act="silu")

if sys.argv[1] == "--make":
    out = sys.argv[2]
    torch.manual_seed(0)
    model = tf.LlamaForCausalLM(tf.LlamaConfig(**CONFIG)).to(torch.float32)
    model.save_pretrained(os.path.join(out, "base"))
    g = np.random.default_rng(1)
    np.save(os.path.join(out, "tokens.npy"), g.integers(0, CONFIG["vocab_size"], 1 << 20).astype(np.int32))
    sys.exit(0)

out, kind, steps, batch, context, rank = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
model = tf.LlamaForCausalLM.from_pretrained(os.path.join(out, "base"), dtype=torch.float32)
if kind.startswith("lora"):
    import peft
    targets = ["q_proj", "v_proj"] if kind == "lora-qv" else "all-linear"
    model = peft.get_peft_model(model, peft.LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=targets,
                                                       lora_dropout=0.0, task_type="CAUSAL_LM"))
trained = [p for p in model.parameters() if p.requires_grad]
opt = torch.optim.AdamW(trained, lr=1e-4, weight_decay=0.01)
tokens = torch.from_numpy(np.load(os.path.join(out, "tokens.npy")).astype(np.int64))
model.train()
t0 = None
for s in range(steps + 1):
    x = tokens[s * batch * context:(s + 1) * batch * context + 1]
    rows = torch.stack([x[i * context:i * context + context + 1] for i in range(batch)])
    opt.zero_grad(set_to_none=True)
    logits = model(input_ids=rows[:, :-1]).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), rows[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    if s == 0:
        t0 = time.perf_counter()
dt = time.perf_counter() - t0
print(f"torch {torch.__version__} {kind} ({sum(p.numel() for p in trained)} trained parameters, "
      f"{torch.get_num_threads()} threads): {steps * batch * context / dt:.0f} tokens/s, loss {loss.item():.4f}")

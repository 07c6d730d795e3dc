"""LoRA fine-tuning as PEFT does it, the oracle of accel_train's lora.* keys (tests/lora_train.sh).

Run by tests/make_hf_fixtures.sh (after hf_reference.py and peft_reference.py) with the venv python
(bench/.venv: torch, transformers, peft from PyPI). For each case of CASES, on a fixture of
tests/fixtures/hf/, PEFT makes an adapter, its factors drawn at random (PEFT starts B at zero, where
A's gradient is zero too: a first step would test half the chain rule), and trains it with torch's
AdamW (constant learning rate, decoupled weight decay on A and B, no clipping, no dropout) for STEPS
steps, each over the whole training stream, as accel_train does with train.global_batch = every
sample. Into tests/fixtures/lora_train/<case>/:
  init/           the adapter before training (PEFT's save_pretrained; base_model_name_or_path
                  ../../../hf/<base>, relative to it)
  final/          the adapter after STEPS steps
  train.npy       the training token stream: SAMPLES windows of CONTEXT+1 tokens, each overlapping
                  the next by one (accel's samples)
  val.npy         a held-out stream of the same kind
  expected.json   {"losses": the mean token loss of each step before its update, "val_loss": the
                  held-out loss after training, and the hyperparameters}
"""
import json
import os
import sys

import numpy as np
import peft
import torch
import transformers as tf

CASES = {
    # Llama: every linear layer of the blocks.
    "llama": ("llama_gqa", 4, 8, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    # Qwen2-MoE: queries, values and the shared expert's down projection only; the experts, the
    # routers, keys (fused with q and v in accel) and the rest frozen (accel skips their weights'
    # gradients: what is left must be what PEFT trains).
    "qwen2_moe": ("qwen2_moe", 2, 6, ["q_proj", "v_proj", "down_proj"]),
}
CONTEXT, SAMPLES, VAL_SAMPLES, STEPS = 8, 6, 4, 8
LR, BETAS, EPS, WD = 1e-2, (0.9, 0.999), 1e-8, 0.01


def windows(stream, n):
    return torch.stack([stream[i * CONTEXT:i * CONTEXT + CONTEXT + 1] for i in range(n)])


def mean_loss(model, batch):
    logits = model(input_ids=batch[:, :-1]).logits
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))


def make(hf_root, out, base_name, rank, alpha, targets):
    torch.manual_seed(7)
    base = tf.AutoModelForCausalLM.from_pretrained(os.path.join(hf_root, base_name), dtype=torch.float32)
    vocab = base.config.vocab_size
    cfg = peft.LoraConfig(r=rank, lora_alpha=alpha, target_modules=targets, lora_dropout=0.0, bias="none",
                          task_type="CAUSAL_LM")
    model = peft.get_peft_model(base, cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn_like(p) * 0.2)
    os.makedirs(out, exist_ok=True)
    model.save_pretrained(os.path.join(out, "init"))
    g = torch.Generator().manual_seed(11)
    train = torch.randint(0, vocab, (SAMPLES * CONTEXT + 1,), generator=g)
    val = torch.randint(0, vocab, (VAL_SAMPLES * CONTEXT + 1,), generator=g)
    np.save(os.path.join(out, "train.npy"), train.numpy().astype(np.int32))
    np.save(os.path.join(out, "val.npy"), val.numpy().astype(np.int32))
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=LR, betas=BETAS, eps=EPS,
                            weight_decay=WD)
    batch, losses = windows(train, SAMPLES), []
    model.train()
    for _ in range(STEPS):
        opt.zero_grad()
        loss = mean_loss(model, batch)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        val_loss = mean_loss(model, windows(val, VAL_SAMPLES)).item()
    model.save_pretrained(os.path.join(out, "final"))
    for d in ("init", "final"):             # the model card PEFT writes: nothing accel reads
        if os.path.exists(os.path.join(out, d, "README.md")):
            os.remove(os.path.join(out, d, "README.md"))
    for d in ("init", "final"):             # the base as the fixtures' tree reaches it
        path = os.path.join(out, d, "adapter_config.json")
        with open(path) as f:
            c = json.load(f)
        c["base_model_name_or_path"] = os.path.join("..", "..", "..", "hf", base_name)
        with open(path, "w") as f:
            json.dump(c, f, indent=2, sort_keys=True)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"losses": losses, "val_loss": val_loss, "rank": rank, "alpha": alpha,
                   "targets": ",".join(targets), "context": CONTEXT,
                   "samples": SAMPLES, "steps": STEPS, "lr": LR, "beta1": BETAS[0], "beta2": BETAS[1],
                   "eps": EPS, "weight_decay": WD, "vocab": vocab, "peft": peft.__version__,
                   "torch": torch.__version__}, f, indent=1)
    print(f"{out}: losses {losses[0]:.6f} -> {losses[-1]:.6f}, held-out {val_loss:.6f}")


if __name__ == "__main__":
    hf_root = sys.argv[1] if len(sys.argv) > 1 else "fixtures/hf"
    root = sys.argv[2] if len(sys.argv) > 2 else "fixtures/lora_train"
    for name in sys.argv[3:] or CASES:
        make(hf_root, os.path.join(root, name), *CASES[name])

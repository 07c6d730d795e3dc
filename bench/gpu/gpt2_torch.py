"""PyTorch reference of accel's GPT training step, for bench/gpu/gpt2_bench.sh (GPU or CPU).

The model is accel's built-in GPT (src/nn/gpt.c), parameter for parameter: token + position
embeddings, pre-LayerNorm blocks (LayerNorm eps 1e-5, one fused qkv Linear [3C, C] with q|k|v and
head h at columns h*C/H, causal softmax attention scaled by 1/sqrt(C/H), output projection, MLP
C -> 4C -> C with the tanh GELU), a final LayerNorm and an LM head tied to the token embedding;
loss = mean next-token cross-entropy. Initialisation as accel: N(0, 0.02) for embeddings, qkv and
fc weights, N(0, 0.02/sqrt(2L)) for the two residual projections, zero biases, unit LayerNorm
weights. Training step as accel_train's defaults (src/core/config.c): AdamW lr 3e-3, betas (0.9,
0.999), eps 1e-8, weight decay 0.01 on 2-D tensors only (weights and embeddings; none on biases and
LayerNorm), gradient clipping at global norm 1.0, fp32 master weights, bf16 autocast. (accel's
warm-up + cosine schedule is left out: it changes no cost.)

Modes:
  eager       plain PyTorch
  accelerate  Hugging Face Accelerate: Accelerator(mixed_precision="bf16") prepares the model and
              optimizer; accelerator.backward and accelerator.clip_grad_norm_
  compile     torch.compile of the eager model (compilation happens in the warm-up steps)

Prints a human line and one machine line `RESULT {json}`: tokens/s over the timed steps (after
the warm-up steps, timed between device synchronisations), ms/step, MFU = (6N + 6LCT) FLOP/token x
tokens/s / peak, with N the parameter count (embeddings included, as bench/train_speed.sh) and
6LCT the causal attention products, and peak memory (CUDA: torch's max allocated and reserved;
CPU: the process's maximum resident size). Peak FLOP/s: --peak-flops, default 989e12 on CUDA =
NVIDIA's H100 SXM5 dense BF16 tensor-core figure (H100 datasheet: 1979 TFLOPS with 2:4 sparsity,
half of it dense; the H200 has the same); none on the CPU (MFU printed as 0 unless given).

A mode that this PyTorch lacks (torch.compile before 2.0, accelerate not installed) prints
`SKIP <reason>` and exits 0 without a RESULT line.

    python3 gpt2_torch.py --mode eager --layers 12 --heads 12 --width 768 --context 1024 \\
        --vocab 50257 --micro 16 --steps 30 --warmup 10 --device cuda
"""
import argparse
import json
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

LN_EPS = 1e-5


class Block(nn.Module):
    def __init__(self, width, heads, attn):
        super().__init__()
        self.heads = heads
        self.attn = attn
        self.ln1 = nn.LayerNorm(width, eps=LN_EPS)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width, eps=LN_EPS)
        self.fc = nn.Linear(width, 4 * width)
        self.fcp = nn.Linear(4 * width, width)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, hs).transpose(1, 2) for t in (q, k, v))
        if self.attn == "sdpa":
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
            y = att @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fcp(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, heads, width, context, vocab, attn):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, attn) for _ in range(layers))
        self.lnf = nn.LayerNorm(width, eps=LN_EPS)
        std, res_std = 0.02, 0.02 / math.sqrt(2.0 * layers)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight") or name.endswith("fcp.weight"):
                nn.init.normal_(p, 0.0, res_std)
            elif p.dim() == 2:
                nn.init.normal_(p, 0.0, std)
            elif "ln" in name and name.endswith("weight"):
                nn.init.ones_(p)
            else:
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()          # tied LM head
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))


def skip(reason):
    print(f"SKIP {reason}", flush=True)
    sys.exit(0)


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device):
    """Achieved bf16 matrix-product rate on this GPU (8192^3, random data, mean of 20 after 3)."""
    n = 8192
    a = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    sync(device)
    t0 = time.perf_counter()
    for _ in range(20):
        a @ b
    sync(device)
    return 2 * n ** 3 * 20 / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["eager", "accelerate", "compile"], default="eager")
    for name, default in [("layers", 12), ("heads", 12), ("width", 768), ("context", 1024),
                          ("vocab", 50257), ("micro", 16), ("steps", 30), ("warmup", 10), ("seed", 1234)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--attn", choices=["auto", "sdpa", "manual"], default="auto",
                    help="sdpa = F.scaled_dot_product_attention (flash attention on the GPU; "
                         "PyTorch >= 2.0), manual = softmax(QK^T)V as accel's CPU path; auto = sdpa if present")
    ap.add_argument("--peak-flops", type=float, default=None,
                    help="peak FLOP/s for the MFU (default: 989e12 on CUDA, the H100 SXM dense bf16 figure)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0 = PyTorch's default)")
    ap.add_argument("--matmul-peak", action="store_true", help="also measure the bf16 matrix-product rate")
    args = ap.parse_args()

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        skip("--device cuda but torch.cuda.is_available() is False")
    if args.threads:
        torch.set_num_threads(args.threads)
    attn = args.attn
    if attn == "auto":
        attn = "sdpa" if hasattr(F, "scaled_dot_product_attention") else "manual"
    if attn == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        skip(f"torch {torch.__version__} has no scaled_dot_product_attention (use --attn manual)")
    if args.mode == "compile" and not hasattr(torch, "compile"):
        skip(f"torch {torch.__version__} has no torch.compile (PyTorch >= 2.0)")
    accelerator = None
    if args.mode == "accelerate":
        try:
            from accelerate import Accelerator
            import accelerate
        except ImportError as e:
            skip(f"Hugging Face Accelerate is not installed ({e})")
        accelerator = Accelerator(mixed_precision="bf16" if args.precision == "bf16" else "no",
                                  cpu=(device == "cpu"))
    # (No TF32 switches: under bf16 autocast every product is bf16, and PyTorch >= 2.9 objects to
    # mixing its legacy allow_tf32 flags with the newer fp32_precision settings.)

    torch.manual_seed(args.seed)
    model = GPT(args.layers, args.heads, args.width, args.context, args.vocab, attn).to(device)
    nparams = sum(p.numel() for p in model.parameters())
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.999), eps=1e-8)
    if accelerator is not None:
        model, opt = accelerator.prepare(model, opt)
    fwd = model
    if args.mode == "compile":
        fwd = torch.compile(model)

    B, T, V = args.micro, args.context, args.vocab
    g = torch.Generator(device="cpu").manual_seed(args.seed)
    batches = [torch.randint(0, V, (B, T + 1), generator=g).to(device) for _ in range(4)]
    use_autocast = args.precision == "bf16" and accelerator is None

    def step(i):
        data = batches[i % len(batches)]
        x, y = data[:, :-1], data[:, 1:]
        if use_autocast:
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                loss = fwd(x, y)
        else:
            loss = fwd(x, y)      # accelerate: prepare() wrapped forward in its autocast
        if accelerator is not None:
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    t_start = time.perf_counter()
    for i in range(args.warmup):
        loss = step(i)
    sync(device)
    t_warm = time.perf_counter() - t_start
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for i in range(args.steps):
        loss = step(args.warmup + i)
    sync(device)
    dt = time.perf_counter() - t0
    final_loss = float(loss.item())

    tokens = args.steps * B * T
    tps = tokens / dt
    flop_token = 6 * nparams + 6 * args.layers * args.width * T
    peak = args.peak_flops if args.peak_flops else (989e12 if device == "cuda" else 0.0)
    mfu = tps * flop_token / peak if peak > 0 else 0.0
    res = {"mode": args.mode, "device": device, "torch": torch.__version__, "attn": attn,
           "precision": args.precision, "params": nparams, "micro": B, "context": T,
           "steps": args.steps, "warmup": args.warmup, "warmup_s": round(t_warm, 3),
           "tokens_per_s": round(tps, 1), "ms_per_step": round(1e3 * dt / args.steps, 3),
           "flop_per_token": flop_token, "peak_flops": peak, "mfu": round(mfu, 4),
           "loss": round(final_loss, 4)}
    if accelerator is not None:
        res["accelerate"] = accelerate.__version__
    if device == "cuda":
        res["gpu"] = torch.cuda.get_device_name()
        res["peak_alloc_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        res["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
        res["peak_gib"] = res["peak_reserved_gib"]
    else:
        res["peak_gib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    if args.matmul_peak and device == "cuda":
        del batches
        res["matmul_bf16_flops"] = round(matmul_peak(device) / 1e12, 1) * 1e12
    print(f"torch {torch.__version__} {args.mode} ({device}, {args.precision}, attention {attn}): "
          f"{tps:.0f} tokens/s, {res['ms_per_step']:.1f} ms/step, MFU {100 * mfu:.1f}%, "
          f"peak {res['peak_gib']:.2f} GiB, loss {final_loss:.3f}, warm-up {t_warm:.1f} s", flush=True)
    print("RESULT " + json.dumps(res), flush=True)


if __name__ == "__main__":
    main()

"""PyTorch reference for bench/train_speed.sh: the same GPT and training step as accel_train.

GPT-2-style decoder (token + position embeddings, pre-LayerNorm blocks with causal multi-head
self-attention and a tanh-GELU MLP, final LayerNorm, tied LM head), byte vocabulary, AdamW,
data-parallel with DistributedDataParallel over gloo, one process per rank started here (torchrun
is broken in Debian's torch 1.13 on Python 3.11). Prints one line: tokens/s over the timed steps.
--variant picks how PyTorch runs it: manual (eager, attention written out with a mask, as nanoGPT's
slow path), sdpa (eager, F.scaled_dot_product_attention) or compile (sdpa under torch.compile).

    python3 gpt_torch.py --ranks 2 --layers 4 --heads 4 --width 256 --context 128 --micro 8 \
        --steps 30 --warmup 5 --precision fp32|bf16 --variant manual|sdpa|compile
"""
import argparse
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

from ddp_step import add_variant_argument, timed_steps, wrap_variant


class Block(nn.Module):
    def __init__(self, width, heads, sdpa):
        super().__init__()
        self.heads = heads
        self.sdpa = sdpa
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.fcp = nn.Linear(4 * width, width)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        hs = C // self.heads
        q, k, v = (t.view(B, T, self.heads, hs).transpose(1, 2) for t in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
            att = att.masked_fill(mask[:T, :T] == 0, float("-inf")).softmax(dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.proj(y)
        return x + self.fcp(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, heads, width, context, vocab, sdpa):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads, sdpa) for _ in range(layers))
        self.lnf = nn.LayerNorm(width)
        self.register_buffer("mask", torch.tril(torch.ones(context, context)))

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x, self.mask)
        logits = self.lnf(x) @ self.wte.weight.t()           # tied LM head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def run(rank, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)
    model = GPT(args.layers, args.heads, args.width, args.context, 256, args.variant != "manual")
    ddp = wrap_variant(nn.parallel.DistributedDataParallel(model), args.variant)
    g = torch.Generator().manual_seed(rank)
    data = torch.randint(0, 256, (args.micro, args.context + 1), generator=g)
    x, y = data[:, :-1], data[:, 1:]
    t, loss = timed_steps(model, lambda: ddp(x, y), args)
    if rank == 0:
        tokens = args.steps * args.micro * args.context * args.ranks
        print(f"torch {torch.__version__} {args.precision} {args.variant}: {tokens / t:.0f} tokens/s "
              f"({1e3 * t / args.steps:.1f} ms/step, loss {loss.item():.3f})", flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in [("ranks", 2), ("layers", 4), ("heads", 4), ("width", 256), ("context", 128),
                          ("micro", 8), ("steps", 30), ("warmup", 5), ("threads", 1), ("port", 29517)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    add_variant_argument(ap)
    args = ap.parse_args()
    mp.spawn(run, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    sys.exit(main())

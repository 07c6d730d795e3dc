"""The training step both PyTorch peers time (bench/gpt_torch.py, bench/llama_torch.py), the same as
accel's: AdamW with weight decay on matrices only, fp32 or bf16 autocast, gradients clipped to a
global norm of 1.0, and a barrier after each step so every rank's time covers the slowest; and the
three ways PyTorch can run the model (--variant)."""
import time

import torch
import torch.distributed as dist


VARIANTS = ("manual", "sdpa", "compile")


def add_variant_argument(parser):
    parser.add_argument("--variant", choices=VARIANTS, default="sdpa",
                        help="eager with the attention written out, eager with "
                             "scaled_dot_product_attention, or that under torch.compile")


def wrap_variant(ddp, variant):
    """The DDP-wrapped model as the variant runs it: torch.compile compiles the DDP module, whose
    optimizer splits the graph at the gradient buckets (the recommended order)."""
    return torch.compile(ddp) if variant == "compile" else ddp


def timed_steps(model, loss_of, args):
    """Runs args.warmup + args.steps steps of loss_of() (the DDP-wrapped forward) on model's
    parameters; returns the seconds of the last args.steps and the last loss."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=3e-4)
    times = []
    for _ in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        if args.precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_of()
        else:
            loss = loss_of()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        dist.barrier()
        times.append(time.perf_counter() - t0)
    return sum(times[args.warmup:]), loss

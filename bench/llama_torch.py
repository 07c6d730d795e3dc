"""PyTorch reference for bench/train_speed.sh: Hugging Face LlamaForCausalLM (with --qk-norm
Qwen3ForCausalLM, --head-dim its head size; with --experts MixtralForCausalLM), the same step as
accel_train.

The model is transformers' LlamaForCausalLM built from a LlamaConfig that matches accel's
model.name=llama keys and defaults: num_key_value_heads (model.kv_heads), intermediate_size
(model.ffn_width), rope_theta 10000 (model.rope_theta), rms_norm_eps 1e-5 (model.rms_eps),
tie_word_embeddings True (model.tie_embeddings), attention_bias False (model.attention_bias), no MLP
bias; attention by --variant: manual (attn_implementation "eager": the attention written out),
sdpa (attn_implementation "sdpa") or compile (sdpa under torch.compile). Byte vocabulary (256), random weights. The loss is the mean
cross-entropy over all T positions of a (T+1)-token sample (inputs [:-1], targets [1:]), as accel
computes it; HF's built-in shifted loss would predict only T-1 of them.

Step: AdamW (lr 3e-4, weight decay 0.01 on matrices, none on norms), gradient clipping to 1.0,
DistributedDataParallel over gloo, one process per rank started with torch.multiprocessing,
torch.set_num_threads(1) per rank. bf16: torch.autocast("cpu", dtype=torch.bfloat16) around the
forward, fp32 master weights (accel precision=bf16 keeps fp32 master weights too).
Prints one line: tokens/s over the timed steps (all ranks).

--experts E (BENCH_MODEL=mixtral): transformers' MixtralForCausalLM instead, from a MixtralConfig
with the same keys and num_local_experts E, num_experts_per_tok --experts-per-token K,
intermediate_size --ffn (one expert's width), router_jitter_noise 0, sliding_window None (accel's
model.experts, model.experts_per_token, model.router_norm_topk=true: Mixtral renormalizes the top-k
weights). --router-aux-loss COEF > 0 (model.router_aux_loss): output_router_logits, and the loss is
the cross-entropy above + COEF x the model's aux_loss (transformers' load_balancing_loss_func over
every layer's router logits of the rank's micro-batch, as accel adds it). --experts-impl picks
transformers' experts implementation (config._experts_implementation): grouped_mm (its default
where the model supports it, torch.nn.functional.grouped_mm: the tokens sorted by expert, one
grouped product per projection), eager (a Python loop over the experts hit, F.linear on each
one's tokens) or batched_mm (each token-expert pair gathers its own expert's weights: a bmm of
S matrix-vector products). On the Zen 5 this was written on (torch 2.15, transformers 5.24, 2 ranks
x 1 thread, 8 experts of 344, top-2) grouped_mm is the fastest in every case, and the default:
fp32 sdpa 6084 tokens/s (eager 5696, batched_mm 93), bf16 sdpa 6539 (eager 3656, batched_mm 115),
compile fp32 6556 (eager 5644), compile bf16 7212 (eager 5623). Under bf16 autocast grouped_mm is
not autocast-enabled and casts its input to the fp32 master weights: the expert products stay fp32
while attention, router and head run in bf16 (eager's F.linear runs them in bf16, but is slower);
under torch.compile with fp32 weights transformers routes grouped_mm through its custom-op
fallback (a product per expert). Casting input and weights to bf16 inside grouped_mm under
autocast (a local patch, not used here) was no faster: 6707 tokens/s manual, 6125 sdpa, against
7216 and 6595 as transformers runs it.

--gemma3 (BENCH_MODEL=gemma3): transformers' Gemma3ForCausalLM from a Gemma3TextConfig with the
same sizes, hidden_activation gelu_pytorch_tanh, query_pre_attn_scalar = --head-dim, layers 1 and 3
of 4 sliding over --sliding-window keys (layer_types), RoPE base 1e6 on the full layers and 1e4 on
the sliding ones, no soft-capping: accel's model.norm_position=both, model.norm_unit_offset,
model.activation=gelu_tanh, model.embed_scale=sqrt(width), model.qk_norm, model.sliding_window,
model.sliding_window_pattern=2, model.sliding_rope=plain, model.sliding_rope_theta=10000.

--qwen3-5 (BENCH_MODEL=qwen3_5): transformers' Qwen3_5ForCausalLM from a Qwen3_5TextConfig with
the same sizes: layers 1-3 of every 4 gated delta-nets (--linear-heads key heads, twice as many value
heads, heads of --head-dim, a convolution of 4), every 4th attention with its output gate, per-head
q/k norms, RoPE on a quarter of each head, norms by 1 + weight, rms_norm_eps --rms-eps; without the
flash-linear-attention package (as here) transformers runs its delta-nets' chunked PyTorch
fallback, whatever --variant says of attention.

--lfm2 (BENCH_MODEL=lfm2): transformers' Lfm2ForCausalLM from an Lfm2Config with the same sizes:
layer 3 of every 4 attention (per-head q/k norms), the others gated short convolutions of width 3,
the MLP's width as given (block_auto_adjust_ff_dim false), norm_eps --rms-eps; without the
causal-conv1d package (as here) transformers runs its convolutions' PyTorch reference.

--lfm3 (BENCH_MODEL=lfm3): transformers' Lfm3ForCausalLM from an Lfm3Config with the same sizes
and 4 layers: gated short convolutions of width 7 on layers 1 and 4, layer 2 attention sliding
over --sliding-window keys (plain RoPE at 1e4), layer 3 full attention (proportional RoPE on half
of each head's pairs at 1e6), heads of --head-dim, a sigmoid gate per head, norms after every
sublayer.

--granite4-h (BENCH_MODEL=granite4_h): transformers' GraniteMoeHybridForCausalLM from a
GraniteMoeHybridConfig with the same sizes and 4 layers: Mamba-2 on layers 1, 2 and 4
(--mamba-heads heads of 2 x width / heads values, one group, a state of --mamba-state, a convolution
of 4), attention without RoPE on layer 3, no experts (its shared MLP of --ffn is the MLP), Granite's
scalars at 1; without the mamba-ssm package (as here) transformers runs its PyTorch chunked scan.

--nemotron-h (BENCH_MODEL=nemotron_h): transformers' NemotronHForCausalLM from a NemotronHConfig
with the same width and --layers layers of one mixer each, M - M - * - M - (Mamba-2 of --mamba-heads
heads of 2 x width / heads values, one group, a state of --mamba-state, a convolution of 4 with
its bias; a squared-ReLU MLP of --ffn; attention without RoPE), an untied head; without the
mamba-ssm package transformers runs its PyTorch chunked scan.

--olmo-hybrid (BENCH_MODEL=olmo_hybrid): transformers' OlmoHybridForCausalLM from an
OlmoHybridConfig with the same sizes: layers 1-3 gated delta-nets (--linear-heads key heads, twice as
many value heads, heads of --head-dim, a convolution of 4, beta up to 2), norms before them; layer 4
attention with OLMo 2's norms after it and q/k norms over the whole projections; an untied head
(transformers' chunked PyTorch delta-nets, as for --qwen3-5).

--mamba (BENCH_MODEL=mamba): transformers' MambaForCausalLM from a MambaConfig with the same width
and --layers layers, each a norm and a Mamba-1 mixer (expand 2, a state of --mamba-state, a
convolution of 4, dt rank ceil(width / 16)), tied; without the mamba-ssm package transformers runs
its PyTorch scan token by token (under torch.compile, its associative scan).

--apertus (BENCH_MODEL=apertus): transformers' ApertusForCausalLM from an ApertusConfig with the
same sizes: per-head q/k norms, the plain MLP up -> xIELU -> down of --ffn (each layer's trained
alphas; transformers' Python xIELU without the xielu CUDA package), plain RoPE, an untied head.

--llama4 (BENCH_MODEL=llama4): transformers' Llama4ForCausalLM from a Llama4TextConfig with the
same sizes: layers 2 and 4 without RoPE, attending to the whole context with the query temperature
(floor_scale 32), layers 1 and 3 in chunks of --sliding-window positions with unweighted q/k norms
after RoPE (theta 5e5); layers 2 and 4 --experts SwiGLU experts of --ffn, --experts-per-token a
token, the input scaled by the sigmoid of its router logit, beside a shared expert of --ffn; layers
1 and 3 a dense SwiGLU of 2 x --ffn; an untied head. transformers' Llama4TextExperts runs every
expert on every token (the unchosen ones on rows scaled to 0), as the model's reference code does.

--packed L (bench/document_mask.sh): each row packs documents of 1..2L-1 tokens (uniform, mean L)
the way Hugging Face trains packed data without padding (DataCollatorWithFlattening, TRL's
padding_free): position_ids restart at every document, transformers builds the block-diagonal
causal mask from them, and a document's first token is not a target (label -100).

    python llama_torch.py --ranks 2 --layers 4 --heads 4 --kv-heads 2 --width 256 --ffn 688 \
        --context 128 --micro 8 --steps 30 --warmup 5 --precision fp32|bf16 --variant manual|sdpa|compile
    python llama_torch.py ... --ffn 344 --experts 8 --experts-per-token 2 --router-aux-loss 0.02
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

from ddp_step import add_variant_argument, timed_steps, wrap_variant


def build(args):
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM
    kw = dict(vocab_size=args.vocab, hidden_size=args.width, intermediate_size=args.ffn,
              num_hidden_layers=args.layers, num_attention_heads=args.heads,
              num_key_value_heads=args.kv_heads, max_position_embeddings=args.context,
              rms_norm_eps=args.rms_eps, tie_word_embeddings=True, attention_bias=False,
              hidden_act="silu", attention_dropout=0.0)
    if args.head_dim:
        kw["head_dim"] = args.head_dim
    if args.qk_norm:            # Qwen3: q/k norms; its MLP has no bias and no mlp_bias key
        kw["use_sliding_window"] = False
    else:
        kw["mlp_bias"] = False
    # transformers 5 keeps the RoPE base in rope_parameters; 4.x has a rope_theta argument
    if int(transformers.__version__.split(".")[0]) >= 5:
        kw["rope_parameters"] = {"rope_type": "default", "rope_theta": args.rope_theta}
    else:
        kw["rope_theta"] = args.rope_theta
    if args.gemma3:             # Gemma 3's blocks (its own keys: no mlp_bias, rope per layer type)
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig
        for k in ("mlp_bias", "hidden_act", "rope_parameters", "rope_theta", "use_sliding_window"):
            kw.pop(k, None)
        kw.update(hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=args.head_dim,
                  sliding_window=args.sliding_window,
                  layer_types=["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(args.layers)],
                  rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                   "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                  attn_logit_softcapping=None, final_logit_softcapping=None)
        cfg, cls = Gemma3TextConfig(**kw), Gemma3ForCausalLM
    elif args.gpt_oss:          # gpt-oss: sinks, q/k/v/o biases, biased experts of clamped SwiGLU;
        from transformers import GptOssConfig, GptOssForCausalLM    # eager attention (no sdpa: sinks)
        for k in ("mlp_bias", "hidden_act", "rope_parameters", "rope_theta", "attention_bias"):
            kw.pop(k, None)
        kw.update(num_local_experts=args.experts, num_experts_per_tok=args.experts_per_token,
                  head_dim=args.width // args.heads, sliding_window=args.sliding_window,
                  tie_word_embeddings=False, attention_bias=True,
                  layer_types=["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(args.layers)])
        cfg = GptOssConfig(**kw)    # its default RoPE: YaRN x32 over 4096, theta 150000, untruncated
        cfg._experts_implementation = args.experts_impl
        cls = GptOssForCausalLM
    elif args.glm4_moe:         # GLM-4.5: DeepSeek-V3's routing, shared experts, a dense first block
        from transformers import Glm4MoeConfig, Glm4MoeForCausalLM
        for k in ("mlp_bias", "hidden_act", "attention_bias"):
            kw.pop(k, None)
        kw.update(n_routed_experts=args.experts, num_experts_per_tok=args.experts_per_token,
                  moe_intermediate_size=args.ffn, intermediate_size=2 * args.ffn, n_shared_experts=2,
                  n_group=4, topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True,
                  first_k_dense_replace=1, use_qk_norm=True, attention_bias=True,
                  head_dim=args.width // args.heads, tie_word_embeddings=False, num_nextn_predict_layers=0)
        if "rope_parameters" in kw:
            kw["rope_parameters"]["partial_rotary_factor"] = 0.5
        cfg = Glm4MoeConfig(**kw)
        cfg._experts_implementation = args.experts_impl
        cls = Glm4MoeForCausalLM
    elif args.qwen3_5:          # Qwen3.5: gated delta-nets and gated attention
        from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
        for k in ("mlp_bias", "use_sliding_window"):
            kw.pop(k, None)
        kw.update(linear_num_key_heads=args.linear_heads, linear_num_value_heads=2 * args.linear_heads,
                  linear_key_head_dim=args.head_dim, linear_value_head_dim=args.head_dim,
                  linear_conv_kernel_dim=4, full_attention_interval=4,
                  rope_parameters={"rope_type": "default", "rope_theta": args.rope_theta,
                                   "partial_rotary_factor": 0.25})
        cfg, cls = Qwen3_5TextConfig(**kw), Qwen3_5ForCausalLM
    elif args.lfm2:             # LFM2: gated short convolutions on layers 1, 2, 4, attention on 3
        from transformers import Lfm2Config, Lfm2ForCausalLM
        for k in ("mlp_bias", "use_sliding_window", "hidden_act", "attention_bias", "attention_dropout",
                  "rms_norm_eps", "head_dim"):
            kw.pop(k, None)
        kw.update(norm_eps=args.rms_eps, conv_L_cache=3, conv_bias=False, block_auto_adjust_ff_dim=False,
                  layer_types=["full_attention" if i % 4 == 2 else "conv" for i in range(args.layers)])
        cfg, cls = Lfm2Config(**kw), Lfm2ForCausalLM
    elif args.lfm3:             # LFM3: convolutions on layers 1 and 4, sliding attention on 2, full on 3
        from transformers import Lfm3Config, Lfm3ForCausalLM
        for k in ("mlp_bias", "use_sliding_window", "hidden_act", "attention_dropout", "rms_norm_eps"):
            kw.pop(k, None)
        kw.update(norm_eps=args.rms_eps, conv_L_cache=7, conv_bias=False, sliding_window=args.sliding_window,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2,     # its defaults lie past a byte vocabulary
                  layer_types=["conv", "sliding_attention", "full_attention", "conv"][:args.layers],
                  rope_parameters={"full_attention": {"rope_type": "proportional", "rope_theta": 1000000.0,
                                                      "partial_rotary_factor": 0.5},
                                   "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
        cfg, cls = Lfm3Config(**kw), Lfm3ForCausalLM
    elif args.granite4_h:       # Granite 4.0-H: Mamba-2 on layers 1, 2 and 4, attention without RoPE on 3
        from transformers import GraniteMoeHybridConfig, GraniteMoeHybridForCausalLM
        for k in ("mlp_bias", "use_sliding_window", "hidden_act", "rope_parameters", "rope_theta"):
            kw.pop(k, None)
        kw.update(num_local_experts=0, shared_intermediate_size=args.ffn, position_embedding_type="nope",
                  layer_types=["mamba", "mamba", "attention", "mamba"][:args.layers], mamba_n_heads=args.mamba_heads,
                  mamba_n_groups=1, mamba_d_state=args.mamba_state, mamba_d_conv=4, mamba_expand=2,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
        cfg, cls = GraniteMoeHybridConfig(**kw), GraniteMoeHybridForCausalLM
    elif args.nemotron_h:       # Nemotron-H: one mixer a layer, M - M - * - M -
        from transformers import NemotronHConfig, NemotronHForCausalLM
        for k in ("mlp_bias", "use_sliding_window", "hidden_act", "rope_parameters", "rope_theta", "rms_norm_eps",
                  "num_hidden_layers", "tie_word_embeddings"):
            kw.pop(k, None)
        types = (["linear_attention", "mlp", "linear_attention", "mlp", "full_attention", "mlp",
                  "linear_attention", "mlp"] * 2)[:args.layers]
        kw.update(layers_block_type=types, layer_norm_epsilon=args.rms_eps, mlp_hidden_act="relu2",
                  mamba_num_heads=args.mamba_heads, mamba_head_dim=2 * args.width // args.mamba_heads, n_groups=1,
                  ssm_state_size=args.mamba_state, conv_kernel=4, use_conv_bias=True, head_dim=args.width // args.heads,
                  tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2)
        cfg, cls = NemotronHConfig(**kw), NemotronHForCausalLM
    elif args.olmo_hybrid:      # OLMo Hybrid: delta-nets on layers 1-3, OLMo 3's attention on 4
        from transformers import OlmoHybridConfig, OlmoHybridForCausalLM
        for k in ("mlp_bias", "hidden_act", "rope_theta"):
            kw.pop(k, None)
        kw.update(linear_num_key_heads=args.linear_heads, linear_num_value_heads=2 * args.linear_heads,
                  linear_key_head_dim=args.head_dim, linear_value_head_dim=args.head_dim, linear_conv_kernel_dim=4,
                  layer_types=["full_attention" if i % 4 == 3 else "linear_attention" for i in range(args.layers)],
                  tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2)
        cfg, cls = OlmoHybridConfig(**kw), OlmoHybridForCausalLM
    elif args.mamba:            # Mamba: every layer a norm and a Mamba-1 mixer, tied
        from transformers import MambaConfig, MambaForCausalLM
        cfg = MambaConfig(vocab_size=args.vocab, hidden_size=args.width, state_size=args.mamba_state,
                          num_hidden_layers=args.layers, expand=2, conv_kernel=4, layer_norm_epsilon=args.rms_eps,
                          pad_token_id=0, bos_token_id=1, eos_token_id=2, tie_word_embeddings=True)
        cls = MambaForCausalLM
    elif args.apertus:          # Apertus: the plain xIELU MLP, per-head q/k norms, its norm names
        from transformers import ApertusConfig, ApertusForCausalLM
        for k in ("mlp_bias", "rope_theta", "use_sliding_window"):
            kw.pop(k, None)
        kw.update(hidden_act="xielu", tie_word_embeddings=False, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                  dtype=torch.float32, rope_parameters={"rope_type": "default", "rope_theta": args.rope_theta})
        cfg, cls = ApertusConfig(**kw), ApertusForCausalLM
    elif args.llama4:           # Llama 4: chunks and NoPE layers, experts weighing their input
        from transformers import Llama4ForCausalLM, Llama4TextConfig
        for k in ("mlp_bias", "rope_theta"):
            kw.pop(k, None)
        kw.update(num_local_experts=args.experts, num_experts_per_tok=args.experts_per_token,
                  intermediate_size_mlp=2 * args.ffn, interleave_moe_layer_step=2, no_rope_layer_interval=2,
                  attention_chunk_size=args.sliding_window, attn_temperature_tuning=True, floor_scale=32,
                  attn_scale=0.1, use_qk_norm=True, head_dim=args.width // args.heads, tie_word_embeddings=False,
                  rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
        cfg, cls = Llama4TextConfig(**kw), Llama4ForCausalLM
    elif args.experts:          # Mixtral: a sparse MoE block of SwiGLU experts; no bias keys at all
        from transformers import MixtralConfig, MixtralForCausalLM
        for k in ("attention_bias", "mlp_bias"):
            kw.pop(k, None)
        kw.update(num_local_experts=args.experts, num_experts_per_tok=args.experts_per_token,
                  output_router_logits=args.router_aux_loss > 0, router_aux_loss_coef=args.router_aux_loss,
                  router_jitter_noise=0.0, sliding_window=None)
        cfg = MixtralConfig(**kw)
        cfg._experts_implementation = args.experts_impl
        cls = MixtralForCausalLM
    else:
        cfg = (Qwen3Config if args.qk_norm else LlamaConfig)(**kw)
        cls = Qwen3ForCausalLM if args.qk_norm else LlamaForCausalLM
    cfg._attn_implementation = "eager" if args.variant == "manual" or args.gpt_oss or args.mamba else "sdpa"
    model = cls(cfg).float()
    model.config.use_cache = False
    return model


def run(rank, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.manual_seed(1234)
    model = build(args)
    model.train()
    nparams = sum(p.numel() for p in model.parameters())
    ddp = wrap_variant(nn.parallel.DistributedDataParallel(model), args.variant)
    g = torch.Generator().manual_seed(rank)
    data = torch.randint(0, args.vocab, (args.micro, args.context + 1), generator=g)
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()
    pos = None
    if args.packed:
        start = torch.zeros(args.micro, args.context + 1, dtype=torch.bool)
        for b in range(args.micro):
            t = 0
            while t <= args.context:
                start[b, t] = True
                t += int(torch.randint(1, 2 * args.packed, (1,), generator=g))
        pos = torch.zeros(args.micro, args.context, dtype=torch.long)
        for t in range(1, args.context):
            pos[:, t] = torch.where(start[:, t], 0, pos[:, t - 1] + 1)
        y = torch.where(start[:, 1:], -100, y)

    aux = args.experts and args.router_aux_loss > 0

    def loss_of():
        if aux:     # Mixtral: + coefficient x transformers' load-balancing loss over the micro-batch
            out = ddp(input_ids=x, position_ids=pos, use_cache=False, output_router_logits=True)
        else:
            out = ddp(input_ids=x, position_ids=pos, use_cache=False)
        logits = out.logits
        loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.view(-1), ignore_index=-100)
        return loss + args.router_aux_loss * out.aux_loss if aux else loss

    t, loss = timed_steps(model, loss_of, args)
    if rank == 0:
        import transformers
        tokens = args.steps * args.micro * args.context * args.ranks
        print(f"torch {torch.__version__} transformers {transformers.__version__} {args.precision} {args.variant}: "
              f"{tokens / t:.0f} tokens/s ({1e3 * t / args.steps:.1f} ms/step, loss {loss.item():.3f}, "
              f"{nparams} parameters, attn {model.config._attn_implementation}"
              + (f", experts {model.config._experts_implementation}" if args.experts else "") + ")", flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in [("ranks", 2), ("layers", 4), ("heads", 4), ("kv-heads", 2), ("width", 256),
                          ("ffn", 688), ("context", 128), ("vocab", 256), ("micro", 8), ("steps", 30),
                          ("warmup", 5), ("threads", 1), ("port", 29518), ("head-dim", 0),
                          ("packed", 0), ("experts", 0), ("experts-per-token", 2), ("sliding-window", 0)]:
        ap.add_argument("--" + name, type=int, default=default)
    ap.add_argument("--rope-theta", type=float, default=10000.0)
    ap.add_argument("--rms-eps", type=float, default=1e-5)
    ap.add_argument("--qk-norm", action="store_true", help="Qwen3ForCausalLM (q/k norms)")
    ap.add_argument("--gemma3", action="store_true", help="Gemma3ForCausalLM (with --head-dim, --sliding-window)")
    ap.add_argument("--qwen3-5", action="store_true", help="Qwen3_5ForCausalLM (with --head-dim, --linear-heads)")
    ap.add_argument("--linear-heads", type=int, default=4, help="--qwen3-5: the delta-nets' key heads")
    ap.add_argument("--lfm2", action="store_true", help="Lfm2ForCausalLM (layer 3 of every 4 attention)")
    ap.add_argument("--granite4-h", action="store_true",
                    help="GraniteMoeHybridForCausalLM (4 layers: mamba, mamba, attention, mamba; dense)")
    ap.add_argument("--nemotron-h", action="store_true",
                    help="NemotronHForCausalLM (--layers layers of one mixer: M - M - * - M -)")
    ap.add_argument("--mamba-heads", type=int, default=8, help="--granite4-h, --nemotron-h: Mamba-2 heads")
    ap.add_argument("--mamba-state", type=int, default=64, help="--granite4-h, --nemotron-h: Mamba-2 state size")
    ap.add_argument("--lfm3", action="store_true",
                    help="Lfm3ForCausalLM (4 layers: conv, sliding, full, conv; with --head-dim, --sliding-window)")
    ap.add_argument("--gpt-oss", action="store_true", help="GptOssForCausalLM (with --experts, --sliding-window)")
    ap.add_argument("--olmo-hybrid", action="store_true",
                    help="OlmoHybridForCausalLM (delta-nets of --linear-heads key heads of --head-dim on 3 layers of 4)")
    ap.add_argument("--mamba", action="store_true",
                    help="MambaForCausalLM (--layers Mamba-1 mixers of 2 x --width channels, a state of --mamba-state)")
    ap.add_argument("--apertus", action="store_true",
                    help="transformers' ApertusForCausalLM (plain xIELU MLP of --ffn, per-head q/k norms)")
    ap.add_argument("--llama4", action="store_true",
                    help="Llama4ForCausalLM (with --experts on every 2nd layer, chunks of --sliding-window)")
    ap.add_argument("--glm4-moe", action="store_true",
                    help="Glm4MoeForCausalLM (with --experts: 4 groups, 2 shared experts of --ffn, layer 1 dense of 2 x --ffn)")
    ap.add_argument("--router-aux-loss", type=float, default=0.0,
                    help="--experts: load-balancing loss coefficient (0: off)")
    ap.add_argument("--experts-impl", choices=["eager", "batched_mm", "grouped_mm"], default="grouped_mm",
                    help="--experts: transformers' experts implementation")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    add_variant_argument(ap)
    args = ap.parse_args()
    mp.spawn(run, args=(args,), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    sys.exit(main())

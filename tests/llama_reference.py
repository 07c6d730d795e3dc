#!/usr/bin/env python3
"""Reference fixtures for accel's built-in Llama (tests/check_llama.c), computed with Hugging Face
transformers, in the manner of llm.c's test_gpt2: a tiny model with random weights, two token
sequences, and what transformers computes for them -- the logits of every position, the loss and
the gradient of every parameter -- stored in HDF5 under accel's tensor names and shapes.

This is an oracle only: accel never imports Python. tests/make_llama_fixtures.sh sets up the
virtual environment (torch, transformers, h5py, numpy from PyPI) and runs this script, which
writes tests/fixtures/llama/<case>.h5 (or the directory given with --out).

Precision. The model is built in float64 (model.double(), eager attention). Stock transformers
still rounds a few intermediates to float32 even in a float64 model: RMSNorm casts its input to
float32, eager attention takes the softmax in float32, and the rotary embedding computes its
inverse frequencies, angles, cos and sin in float32. The fixtures are computed with those three
steps replaced by float64 versions of the same formulas (patch_float64 below), so they are exact
to float64 and an fp32 implementation is compared with the truth, not with float32 noise. To
show the replacements change nothing but the rounding, every case is also run through stock
transformers; the largest logit and gradient differences between the two are printed and kept as
attributes (stock_logits_max_abs_diff, stock_grads_max_rel_diff: about 1e-6 for both, 5e-6 for
olmo3, the deepest, 2e-6 for gemma3), and the float64 inverse frequencies must equal
transformers' own to float32 precision. (OLMo's RMSNorms, Olmo2RMSNorm, OlmoeRMSNorm and
Olmo3RMSNorm, also normalize in float32 -- Olmo2RMSNorm and Olmo3RMSNorm multiply by the weight
before casting back, OlmoeRMSNorm after, the same formula in float64 -- and are replaced like
Llama's; OLMo 2's and OLMo 3's rotary embeddings return cos and sin in float32. Gemma3RMSNorm
normalizes in float32 and multiplies by 1 + weight in float32: replaced by the same formula in
float64.)

Mixtures of experts (mixtral_moe: MixtralForCausalLM, qwen3_moe: Qwen3MoeForCausalLM, qwen2_moe:
Qwen2MoeForCausalLM, olmoe: OlmoeForCausalLM; accel's model.experts). Their routers take the softmax of the router logits in float32 and the
load-balancing loss (load_balancing_loss_func) accumulates in float32: patch_float64 also replaces
the router's forward and that function by float64 versions of the same formulas. The experts run
transformers' eager loop (config._experts_implementation = "eager"). The routing is a discrete
choice, and accel routes in float32: the script asserts that, in every layer and for every token,
the K-th largest router probability exceeds the (K+1)-th by at least ROUTER_GAP (so float32 rounding
cannot change the choice), and that stock transformers routes every token to the same experts.
Qwen2-MoE adds a shared expert (accel's model.shared_expert_ffn): every token's block output is the
routed experts' sum plus sigmoid(shared_expert_gate(x)) * shared_expert(x), a SwiGLU MLP of width
shared_expert_intermediate_size; transformers computes it in the model's dtype (float64: nothing to
patch). A case with router_aux_loss_coef (mixtral_moe, qwen2_moe, olmoe: output_router_logits=True) adds the load-balancing loss
of all layers' router logits of the whole batch (no attention mask), and accel's loss is then
  sum over b of (mean over t of CE) + B * coef * aux
-- B times transformers' loss (mean CE over the B T targets + coef * aux), which is cross-checked.

OLMo (olmo2: Olmo2ForCausalLM, olmoe: OlmoeForCausalLM, olmo3: below). All have q/k RMSNorms
over the WHOLE q projection output (H hs wide) and k projection output (KV hs wide), applied before
RoPE (accel's model.qk_norm=true with model.qk_norm_scope=all; Qwen3's act on each head, hs wide).
OLMo 2's blocks are post-norm (accel's model.norm_position=post):
  h = x + post_attention_layernorm(self_attn(x)),  out = h + post_feedforward_layernorm(mlp(h))
with no norm before attention or MLP (the final norm stays). OLMoE is pre-norm like Llama, with
a router whose forward is Qwen3-MoE's (top-k weights not renormalized here) and transformers'
load_balancing_loss_func, both patched like the other mixtures'.

OLMo 3 (olmo3: Olmo3ForCausalLM) has OLMo 2's blocks and attention that differs by layer
(config.layer_types): every 4th layer ((l+1) % 4 == 0) is "full_attention", the others
"sliding_attention", whose queries see the last sliding_window keys (key j from query i iff
i - window < j <= i; accel's model.sliding_window with model.sliding_window_pattern=4). Its RoPE is
per layer type too (rope_parameters {"full_attention": ..., "sliding_attention": ...}): YaRN on the
full layers (rope_type yarn: inverse frequencies kept, blended or divided by the factor, cos and sin
scaled by 0.1 ln(factor) + 1; accel's model.rope_scaling=yarn), plain RoPE at the same theta on the
sliding ones (accel's model.sliding_rope=plain). Olmo3RotaryEmbedding computes one set per type in
float32, replaced by float64 ones from the same formulas (_compute_yarn_parameters, truncate on).
The window is in the attention mask transformers builds (create_sliding_window_causal_mask); eager
attention takes the mask as it is. The script asserts that the logits change far beyond the test's
tolerance without the window, with the sliding layers' RoPE scaled like the full layers' and with
the full layers' RoPE plain (attributes no_window_logits_max_abs_diff, ...).

Gemma 3 (gemma3: Gemma3ForCausalLM, Gemma3TextConfig) normalizes before and after both sublayers
(accel's model.norm_position=both):
  h = x + post_attention_layernorm(attn(input_layernorm(x)))
  out = h + post_feedforward_layernorm(mlp(pre_feedforward_layernorm(h)))
Its RMSNorms (Gemma3RMSNorm: the block norms, the final one, and per-head q/k norms hs wide before
RoPE) multiply by 1 + weight (accel's model.norm_unit_offset): the weights are offsets, stored as
transformers holds them (no +1 in the fixture) and drawn around 0. The MLP is GeGLU with the tanh
GELU (gelu_pytorch_tanh, accel's model.activation=gelu_tanh), the scores are scaled by
query_pre_attn_scalar^-0.5 (model.query_pre_attn_scalar, not head_dim), the embeddings are tied
and multiplied by sqrt(width) (Gemma3TextScaledWordEmbedding; model.embed_scale). That factor is
the float32 number nearest sqrt(width), as accel holds it: transformers makes the buffer in float32,
so the float64 model already has that value (asserted), and the script sets it explicitly all the
same. Like OLMo 3 it has sliding and full layers (window_pattern 2 here) and a RoPE per layer type:
the full layers' at rope_theta with linear scaling (every inverse frequency divided by the factor;
accel's model.rope_scaling=linear), the sliding layers' plain at their own base (accel's
model.sliding_rope=plain with model.sliding_rope_theta); Gemma3RotaryEmbedding computes them in
float32, replaced by float64 ones. No softcapping, causal attention. Besides OLMo 3's three
checks, the script asserts that the logits change far beyond the tolerance with the full layers'
RoPE unscaled, the sliding layers' at the full layers' base, and each Gemma feature switched off
in turn (weights as gains, no post norms, no pre norms, no q/k norms, SwiGLU, unscaled embeddings,
scores scaled by head_dim^-0.5; the exact GELU instead of the tanh one changes them by about 1e-3).

gpt-oss (gpt_oss: GptOssForCausalLM) is a pre-norm Llama with a mixture of experts and five parts more:
attention sinks (a learned logit per head, self_attn.sinks, that joins every softmax's denominator
and attends to nothing; accel's model.attention_sinks), biases on q, k, v AND o (attention_bias;
accel's model.attention_bias with model.attention_out_bias), a router with a bias whose softmax over
the top-k logits is accel's renormalized top-k, experts with biases (model.expert_bias) applying a
clamped SwiGLU, (up' + 1) gate' sigmoid(alpha gate') with gate' = min(gate, limit) and up' = up
clamped to +-limit (model.activation=clamped_swiglu, model.swiglu_alpha, model.swiglu_limit), and
YaRN on every layer with the ramp's bounds NOT rounded outwards (rope_parameters truncate=False;
model.rope_truncate=false). Every 2nd layer is full, the others slide (GptOssConfig's default
layer_types; model.sliding_window_pattern=2), with the same RoPE. GptOssRMSNorm normalizes in
float32 and GptOssRotaryEmbedding computes its angles in float32 (and returns cos and sin hs/2
wide, applied to the halves of a head: rotate_half's pairs): both replaced by float64 versions.
Its eager attention (with the sinks) and its router already compute in the model's dtype; the
attention is replaced all the same by the same formula (gpt_oss_attention_forward64). Its experts
hold gate_up_proj [E, C, 2F] and down_proj [E, F, C], used as x @ W, with gate and up INTERLEAVED
along 2F (gate j in column 2j, up j in 2j+1) in gate_up_proj and gate_up_proj_bias: the fixture
stores them in accel's layout (below), de-interleaved and transposed, gradients alike. The clamp
has kinks and the routing switches, which makes finite differences unsafe but not autograd; as
for the routing, the script asserts that no routed gate or up value lies within CLAMP_GAP of a
kink (so that float32 clamps the same values), and that the logits change far beyond the test's
tolerance without the window, without the sinks, without the clamp, with the YaRN bounds
truncated, with plain RoPE and with cos and sin unscaled.

HDF5 layout of a fixture (what check_llama.c reads):
  attribute config      "key=value key=value ...": accel configuration keys, applied in order
  attributes            case, generator, torch_version, transformers_version, ... (provenance)
  /tokens               int32   [B, T+1]   B token sequences
  /logits               float32 [B, T, V]  logits of positions 0..T-1 (inputs tokens[:, :T])
  /loss                 float64 scalar     sum over b of mean over t of CE(logits[b,t], tokens[b,t+1])
  /params/<name>        float32            the weights, under accel's names and shapes
  /grads/<name>         float32            d loss / d <name>
Packed cases (several documents in a row, accel's data.document_mask) also have
  /positions            int32   [B, T]     position of input token t in its document (HF position_ids)
  /loss_mask            uint8   [B, T+1]   loss_mask[b, t+1] = 0: target tokens[b, t+1] is not trained
and their /loss is accel's: sum over b of (sum over trained targets of CE) / T.

Packed documents. A packed case lists each row's documents by length (summing to T+1 tokens; the
first may be the tail of a longer one, the last may end past the inputs). Its rows are built with
transformers' own DataCollatorWithFlattening (one feature per document): position_ids restart at
0 at every document start, and the label of a document's first token is -100 (the token that
begins a document is not predicted from the one before it). The model gets position_ids and no
attention_mask and no cache, so transformers finds the packed sequences itself
(find_packed_sequence_indices) and builds the block-diagonal causal mask; the script asserts that
every document's logits equal those of the document run alone, and that they would differ without
the mask.

accel's tensor table (row-major, [out, in] like torch's Linear.weight; hs = head_dim, else
width / heads):
  wte                      [V, C]          model.embed_tokens.weight
  h.L.norm1.weight         [C]             layers[L].input_layernorm.weight
  h.L.attn.qkv.weight      [(H+2KV)hs, C]  cat(q_proj, k_proj, v_proj weights) along rows
  h.L.attn.qkv.bias        [(H+2KV)hs]     cat of the three biases (attention_bias only)
  h.L.attn.q_norm.weight   [hs]            self_attn.q_norm.weight (qk_norm: Qwen3)
  h.L.attn.k_norm.weight   [hs]            self_attn.k_norm.weight (qk_norm: Qwen3)
                           [H hs], [KV hs] the same, over the whole projections (OLMo 2, OLMoE, OLMo 3)
  h.L.attn.proj.weight     [C, H hs]       o_proj.weight
  h.L.post_norm1.weight    [C]             post_attention_layernorm.weight (Gemma 3 only)
  h.L.norm2.weight         [C]             post_attention_layernorm.weight
  h.L.post_norm2.weight    [C]             post_feedforward_layernorm.weight (Gemma 3 only)
  h.L.mlp.gate_up.weight   [2F, C]         cat(gate_proj, up_proj weights) along rows
  h.L.mlp.down.weight      [C, F]          down_proj.weight
  normf.weight             [C]             model.norm.weight
  lm_head.weight           [V, C]          lm_head.weight (untied models only)
In OLMo 2's and OLMo 3's post-norm blocks norm1 is post_attention_layernorm (it normalizes the attention's
output) and norm2 is post_feedforward_layernorm (the MLP's output). In Gemma 3's blocks norm1 is
input_layernorm, post_norm1 post_attention_layernorm, norm2 pre_feedforward_layernorm and post_norm2
post_feedforward_layernorm.
With E experts of width F (Mixtral's and OLMoE's intermediate_size, Qwen3-MoE's moe_intermediate_size) the two
MLP tensors are replaced by
  h.L.mlp.router.weight           [E, C]      mlp.gate.weight (Mixtral's block_sparse_moe.gate)
  h.L.mlp.experts.gate_up.weight  [E 2F, C]   mlp.experts.gate_up_proj [E, 2F, C] (the same bytes):
                                              expert e's rows e 2F .. e 2F+F-1 its gate (w1,
                                              gate_proj), the next F its up (w3, up_proj)
  h.L.mlp.experts.down.weight     [E C, F]    mlp.experts.down_proj [E, C, F]: expert e's rows
                                              e C .. e C+C-1 its down (w2, down_proj)
gpt-oss (the same bytes re-ordered: its gate_up_proj is [E, C, 2F] with gate and up interleaved
along 2F, its down_proj [E, F, C], both x @ W) adds
  h.L.attn.proj.bias              [C]         self_attn.o_proj.bias
  h.L.attn.sinks                  [H]         self_attn.sinks
  h.L.mlp.router.bias             [E]         mlp.router.bias (its weight: mlp.router.weight)
  h.L.mlp.experts.gate_up.weight  [E 2F, C]   expert e's rows e 2F + j: gate_up_proj[e, :, 2j] (gate
                                              j), rows e 2F + F + j: gate_up_proj[e, :, 2j+1] (up j)
  h.L.mlp.experts.gate_up.bias    [E 2F]      gate_up_proj_bias [E, 2F] de-interleaved the same way
  h.L.mlp.experts.down.weight     [E C, F]    down_proj [E, F, C] transposed per expert
  h.L.mlp.experts.down.bias       [E C]       down_proj_bias [E, C]
and with a shared expert of width S (Qwen2-MoE's shared_expert_intermediate_size) also
  h.L.mlp.shared.gate_up.weight   [2S, C]     cat(shared_expert.gate_proj, shared_expert.up_proj
                                              weights) along rows
  h.L.mlp.shared.down.weight      [C, S]      shared_expert.down_proj.weight
  h.L.mlp.shared_gate.weight      [1, C]      shared_expert_gate.weight
Within q_proj's rows head h owns rows h*hs .. h*hs+hs-1, and transformers' RoPE rotates the
pairs (d, d + hs/2) of a head (rotate_half), not adjacent pairs: accel takes the weights as they
are, so it must rotate the same pairs.
"""

import argparse
import math
import os
import platform
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F
import transformers
from transformers import (DataCollatorWithFlattening, Gemma3ForCausalLM, Gemma3TextConfig, GptOssConfig,
                          GptOssForCausalLM, LlamaConfig,
                          LlamaForCausalLM, MixtralConfig, MixtralForCausalLM, Olmo2Config, Olmo2ForCausalLM,
                          Olmo3Config, Olmo3ForCausalLM,
                          OlmoeConfig, OlmoeForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM, Qwen2MoeConfig, Qwen2MoeForCausalLM,
                          Qwen3MoeConfig, Qwen3MoeForCausalLM)
from transformers.models.gemma3 import modeling_gemma3
from transformers.models.gpt_oss import modeling_gpt_oss
from transformers.models.llama import modeling_llama
from transformers.models.mixtral import modeling_mixtral
from transformers.models.olmo2 import modeling_olmo2
from transformers.models.olmoe import modeling_olmoe
from transformers.models.qwen2 import modeling_qwen2
from transformers.models.qwen2_moe import modeling_qwen2_moe
from transformers.models.qwen3_moe import modeling_qwen3_moe

B = 2   # sequences per case
# Float datasets are stored chunked, byte-shuffled and deflated (HDF5's standard filters: any
# HDF5 reads them, the reader needs no code for it). Tiny ones are left contiguous.
PACK = dict(shuffle=True, compression="gzip", compression_opts=9)

# The cases. Sizes are tiny (the fixtures are committed); every feature accel's Llama has gets
# one case where it matters: grouped-query, multi-query and plain multi-head attention, tied and
# untied embeddings, Llama-3.1 RoPE scaling, Qwen2's q/k/v biases, a SwiGLU width that is no
# multiple of 64, odd vocabularies and contexts, five RoPE bases and two RMSNorm epsilons, post-norm
# blocks and q/k norms over whole projections (OLMo 2, OLMoE, OLMo 3), sliding windows on some
# layers and YaRN on the others (OLMo 3); Gemma 3's norms before and after both sublayers, 1 + weight
# RMSNorms, GeGLU, scaled embeddings, query_pre_attn_scalar, and sliding layers with their own RoPE
# base beside full layers with linear RoPE scaling; gpt-oss's attention sinks, output projection
# bias, biased experts of clamped SwiGLU and YaRN with untruncated bounds.
CASES = [
    dict(name="llama_gqa", arch="llama", layers=2, heads=4, kv_heads=2, width=32, ffn=32,
         context=12, vocab=61, tied=False, theta=10000.0, eps=1e-6, bias=False, seed=101),
    dict(name="llama_mqa", arch="llama", layers=2, heads=4, kv_heads=1, width=32, ffn=40,
         context=13, vocab=67, tied=True, theta=500000.0, eps=1e-5, bias=False, seed=202),
    # Llama 3.1's factors (8, 1, 4). Head size 16: 8 frequencies, wavelengths 2*pi * 10000^(i/8)
    # = 6.3, 19.9, 62.8, 199, ... With original_max_position_embeddings = 32 the bands are
    # wavelength < 32/4: kept (6.3), 8..32: smoothed (19.9), > 32: divided by 8 (the other six).
    # A kept band needs original/4 > 2*pi (no wavelength is shorter than 2*pi), and transformers
    # wants the context longer than the original one, hence context 40.
    dict(name="llama_rope31", arch="llama", layers=2, heads=2, kv_heads=1, width=32, ffn=32,
         context=40, vocab=61, tied=True, theta=10000.0, eps=1e-5, bias=False, seed=303,
         llama3=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                     original_max_position_embeddings=32)),
    dict(name="qwen2_bias", arch="qwen2", layers=2, heads=4, kv_heads=2, width=32, ffn=24,
         context=12, vocab=73, tied=False, theta=1000000.0, eps=1e-6, bias=True, seed=404),
    dict(name="llama_mha", arch="llama", layers=2, heads=4, kv_heads=4, width=32, ffn=36,
         context=14, vocab=79, tied=True, theta=10000.0, eps=1e-5, bias=False, seed=505),
    # Packed documents (accel's data.document_mask): `docs` gives each row's documents by length,
    # T+1 tokens a row. Documents of length 1 (inside a row, at a row's start, and one that is only
    # the last target), a row whose last target begins a document (not trained), rows of 4 and 5
    # documents, the longest document about half the context.
    dict(name="llama_packed", arch="llama", layers=2, heads=4, kv_heads=2, width=32, ffn=32,
         context=24, vocab=61, tied=False, theta=10000.0, eps=1e-6, bias=False, seed=606,
         docs=[[7, 1, 9, 8], [5, 12, 1, 6, 1]]),
    dict(name="qwen2_packed", arch="qwen2", layers=2, heads=4, kv_heads=1, width=32, ffn=24,
         context=20, vocab=53, tied=True, theta=1000000.0, eps=1e-6, bias=True, seed=707,
         docs=[[1, 4, 10, 6], [13, 3, 1, 2, 2]]),
    # Mixtures of experts: E experts of width `ffn`, each token routed to the top `topk` of the
    # router's softmax, their weights renormalized to sum 1 (norm_topk) or not. Mixtral (always
    # renormalized) with the load-balancing loss in the loss (aux: router_aux_loss_coef with
    # output_router_logits); Qwen3-MoE with head_dim apart from width / heads (4 x 12 = 48 != 32),
    # q/k norms, norm_topk_prob=False, every layer sparse and no auxiliary loss. Their seeds are
    # ones for which every token's routing is clear (ROUTER_GAP; about half the seeds are not) and
    # every expert of every layer gets tokens.
    dict(name="mixtral_moe", arch="mixtral", layers=2, heads=4, kv_heads=2, width=32, ffn=12,
         experts=4, topk=2, norm_topk=True, aux=0.02,
         context=12, vocab=59, tied=False, theta=1000000.0, eps=1e-5, bias=False, seed=811),
    dict(name="qwen3_moe", arch="qwen3_moe", layers=2, heads=4, kv_heads=2, width=32, head_dim=12, ffn=12,
         experts=4, topk=2, norm_topk=False, aux=0.0,
         context=13, vocab=71, tied=True, theta=1000000.0, eps=1e-6, bias=False, seed=921),
    # Qwen2-MoE: a shared expert beside the routed ones (a SwiGLU of width `shared_ffn`, its output
    # scaled by sigmoid(shared_expert_gate(x)) and added to theirs), q/k/v biases, top-k weights not
    # renormalized, every layer sparse, and the load-balancing loss.
    dict(name="qwen2_moe", arch="qwen2_moe", layers=2, heads=4, kv_heads=2, width=32, ffn=12,
         experts=4, topk=2, norm_topk=False, aux=0.05, shared_ffn=20,
         context=12, vocab=67, tied=False, theta=1000000.0, eps=1e-6, bias=True, seed=1031),
    # OLMo 2: post-norm blocks (accel's model.norm_position=post: h = x + norm1(attn(x)), out = h +
    # norm2(mlp(h)), no norm before attention or MLP) and q/k norms over the whole q and k
    # projections (model.qk_norm_scope=all: RMSNorms H hs and KV hs wide, before RoPE).
    dict(name="olmo2", arch="olmo2", layers=2, heads=4, kv_heads=2, width=32, ffn=40,
         context=14, vocab=59, tied=False, theta=500000.0, eps=1e-6, bias=False, seed=1141),
    # OLMoE: pre-norm, the q/k norms of OLMo 2 (whole projections), E experts, top-k weights not
    # renormalized, every layer sparse, and the load-balancing loss.
    dict(name="olmoe", arch="olmoe", layers=2, heads=4, kv_heads=2, width=32, ffn=12,
         experts=4, topk=2, norm_topk=False, aux=0.05,
         context=12, vocab=73, tied=False, theta=10000.0, eps=1e-5, bias=False, seed=1251),
    # OLMo 3: OLMo 2's blocks, and per-layer attention: layers 0, 1, 2 slide (each query sees the
    # last `window` keys, itself included) with plain RoPE, layer 3 ((l+1) % 4 == 0) attends to the
    # whole causal context with YaRN (accel's model.sliding_window_pattern=4, sliding_rope=plain).
    # YaRN over head size 8 (4 frequencies, theta 10: wavelengths 2*pi * 10^(i/4) = 6.3, 11.2, 19.9,
    # 35.3): with original_max_position_embeddings 12 the ramp's bounds are dimensions 0 (32
    # turns, floored) and 2 (1 turn, 1.12 ceiled), so frequency 0 is kept, 1 blended half and half,
    # 2 and 3 divided by the factor 4; cos and sin are scaled by 0.1 ln 4 + 1. The context is
    # factor * original (transformers warns otherwise) and far longer than the window.
    dict(name="olmo3", arch="olmo3", layers=4, heads=4, kv_heads=2, width=32, ffn=40,
         context=48, vocab=67, tied=False, theta=10.0, eps=1e-6, bias=False, seed=1361,
         window=5, window_pattern=4,
         yarn=dict(factor=4.0, original_max_position_embeddings=12, beta_fast=32.0, beta_slow=1.0)),
    # Gemma 3 (text): norms before and after attention and MLP (accel's model.norm_position=both),
    # RMSNorms that multiply by 1 + weight (model.norm_unit_offset: the weights are offsets, drawn
    # around 0), per-head q/k norms (hs wide, before RoPE), GeGLU (gelu tanh), the embeddings times
    # sqrt(width) rounded to float32 (model.embed_scale), scores times query_pre_attn_scalar^-0.5
    # (12, not head_dim 16; head_dim apart from width / heads 8), tied embeddings. Layers 0 and 2
    # slide (window 5) with plain RoPE of theta 1e4 (model.sliding_rope_theta), layers 1 and 3
    # ((l+1) % 2 == 0) are full with theta 1e6 and linear scaling (inverse frequencies / 4).
    dict(name="gemma3", arch="gemma3", layers=4, heads=4, kv_heads=2, width=32, head_dim=16, ffn=40,
         context=40, vocab=67, tied=True, theta=1000000.0, eps=1e-6, bias=False, seed=1471,
         window=5, window_pattern=2, sliding_theta=10000.0, query_pre_attn_scalar=12,
         linear=dict(factor=4.0)),
    # gpt-oss: attention sinks (drawn with std SINK_STD, so that they take a good share of the
    # softmax), q/k/v/o biases, E = 4 biased experts of clamped SwiGLU (limit 2: 8.5% of the routed
    # up values and 3.2% of the gate values are clamped; alpha gpt-oss's 1.702), top 2
    # with the router's bias and the softmax over the top-k logits (accel's renormalized top-k),
    # untied head, head_dim 8 given explicitly (GptOssConfig has one), layer 0 sliding over 4 keys,
    # layer 1 full (GptOssConfig's default layer_types), YaRN on both at theta 150000 (gpt-oss's)
    # with truncate False. Over head size 8 (4 frequencies, wavelengths 6.3, 124, 2433, 47890) and
    # original_max_position_embeddings 2048 the ramp's bounds are dimensions 0.779 (32 turns) and
    # 1.942 (1 turn): frequency 0 kept, 1 blended (0.19 of the way to / 4; truncated, the bounds
    # would be 0 and 2 and it would be 0.5), 2 and 3 divided by the factor 4; cos and sin scaled
    # by 0.1 ln 4 + 1. (gpt-oss's own 4096 over theta 150000 needs head size 64 for bands; over
    # head size 8 an original context of 4 keeps every frequency: bounds -1.31 and -0.15.) The
    # context is far shorter than factor * original (transformers warns; YaRN does not read the
    # context).
    dict(name="gpt_oss", arch="gpt_oss", layers=2, heads=4, kv_heads=2, width=32, head_dim=8, ffn=24,
         experts=4, topk=2, norm_topk=True, aux=0.0,
         context=16, vocab=57, tied=False, theta=150000.0, eps=1e-5, bias=True, seed=1593,
         window=4, window_pattern=2, swiglu_alpha=1.702, swiglu_limit=2.0,
         yarn=dict(factor=4.0, original_max_position_embeddings=2048, beta_fast=32.0, beta_slow=1.0,
                   truncate=False)),
]

# Weight scales: large enough that every gradient is far above float32 noise and the attention
# is neither uniform nor one-hot, small enough that the logits stay O(1).
MATRIX_STD = 0.2        # every projection matrix (fan-in 24..40: gain ~1.0..1.3)
EMBED_STD = 0.2         # token embedding (also the LM head when tied: logits of std ~1 either way)
NORM_STD = 0.1          # norm gains: 1 + N(0, 0.1^2) (Gemma's offsets: N(0, 0.1^2), the same gains)
BIAS_STD = 0.1          # q, k, v biases (gpt-oss: o, the router's and the experts' too)
                        # (a router and the experts' stacked matrices are projection matrices too)
SINK_STD = 1.0          # gpt-oss's attention sinks (logits beside the scores, which are O(1))
ROUTER_GAP = 1e-3       # least gap between the K-th and (K+1)-th router probability of any token
CLAMP_GAP = 1e-3        # least distance of a routed gate or up value from its clamp's bound (gpt-oss)


def qk_norm_scope(case):
    """Where a case's q/k RMSNorms act: "head" (Qwen3: over each head, a weight of hs), "all" (OLMo 2,
    OLMoE: over the whole q projection, H hs wide, and the whole k projection, KV hs wide), or
    None (no q/k norms)."""
    return {"qwen3_moe": "head", "olmo2": "all", "olmoe": "all", "olmo3": "all", "gemma3": "head"}.get(case["arch"])


def norm_position(case):
    """Where a case's blocks normalize (accel's model.norm_position): "pre", the inputs of attention
    and MLP (Llama); "post", their outputs (OLMo 2, OLMo 3); "both" (Gemma 3)."""
    return {"olmo2": "post", "olmo3": "post", "gemma3": "both"}.get(case["arch"], "pre")


def post_norm(case):
    """Whether a case's blocks normalize the outputs of attention and MLP (OLMo 2, OLMo 3) rather
    than their inputs."""
    return norm_position(case) == "post"


def oss(case):
    """Whether a case is gpt-oss: sinks, an output bias, biased experts of clamped SwiGLU, YaRN on
    every layer (its sliding layers' RoPE is the full layers')."""
    return case["arch"] == "gpt_oss"


def rope_by_type(case):
    """Whether a case's RoPE differs by layer type (OLMo 3, Gemma 3: the rotary embedding keeps a
    set per type, accel's model.sliding_rope=plain); gpt-oss's sliding layers have the full ones'."""
    return case["arch"] in ("olmo3", "gemma3")


def gemma(case):
    """Whether a case is Gemma 3: 1 + weight RMSNorms, GeGLU, scaled embeddings, query_pre_attn_scalar."""
    return case["arch"] == "gemma3"


def embed_scale(case):
    """Gemma's factor of the embeddings: sqrt(width) rounded to float32, as accel holds it (and as
    transformers' Gemma3TextScaledWordEmbedding does, its buffer being created in float32)."""
    return float(np.float32(math.sqrt(case["width"])))


def fmt(x):
    """A number as accel's config parser reads it back exactly."""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    return repr(float(x))


def accel_config(case):
    """The accel configuration of a case, as `key=value` pairs in the order they are applied."""
    c = case
    kv = [
        ("model.name", "llama"),
        ("model.layers", c["layers"]),
        ("model.heads", c["heads"]),
        ("model.kv_heads", c["kv_heads"]),
        ("model.width", c["width"]),
        ("model.ffn_width", c["ffn"]),
        ("model.context", c["context"]),
        ("model.vocab", c["vocab"]),
        ("model.rope_theta", c["theta"]),
        ("model.rms_eps", c["eps"]),
        ("model.tie_embeddings", c["tied"]),
        ("model.attention_bias", c["bias"]),
    ]
    if "llama3" in c:
        r = c["llama3"]
        kv += [
            ("model.rope_scaling", "llama3"),
            ("model.rope_factor", r["factor"]),
            ("model.rope_low_freq_factor", r["low_freq_factor"]),
            ("model.rope_high_freq_factor", r["high_freq_factor"]),
            ("model.rope_original_context", r["original_max_position_embeddings"]),
        ]
    elif "linear" in c:
        kv += [("model.rope_scaling", "linear"), ("model.rope_factor", c["linear"]["factor"])]
    elif "yarn" in c:
        r = c["yarn"]
        kv += [
            ("model.rope_scaling", "yarn"),
            ("model.rope_factor", r["factor"]),
            ("model.rope_original_context", r["original_max_position_embeddings"]),
            ("model.rope_beta_fast", r["beta_fast"]),
            ("model.rope_beta_slow", r["beta_slow"]),
        ]
        if not r.get("truncate", True):     # gpt-oss: the ramp's bounds as computed
            kv.append(("model.rope_truncate", False))
    else:
        kv.append(("model.rope_scaling", "none"))
    if "head_dim" in c:
        kv.append(("model.head_dim", c["head_dim"]))
    if norm_position(c) != "pre":
        kv.append(("model.norm_position", norm_position(c)))
    if gemma(c):
        kv += [
            ("model.norm_unit_offset", True),
            ("model.activation", "gelu_tanh"),
            ("model.embed_scale", embed_scale(c)),
            ("model.query_pre_attn_scalar", c["query_pre_attn_scalar"]),
        ]
    if oss(c):
        kv += [
            ("model.attention_sinks", True),
            ("model.attention_out_bias", True),
            ("model.activation", "clamped_swiglu"),
            ("model.swiglu_alpha", c["swiglu_alpha"]),
            ("model.swiglu_limit", c["swiglu_limit"]),
        ]
    if qk_norm_scope(c) == "head":
        kv.append(("model.qk_norm", True))
    elif qk_norm_scope(c) == "all":
        kv += [("model.qk_norm", True), ("model.qk_norm_scope", "all")]
    if "experts" in c:
        kv += [
            ("model.experts", c["experts"]),
            ("model.experts_per_token", c["topk"]),
            ("model.router_norm_topk", c["norm_topk"]),
            ("model.router_aux_loss", c["aux"]),
        ]
        if oss(c):
            kv.append(("model.expert_bias", True))
    if "shared_ffn" in c:
        kv.append(("model.shared_expert_ffn", c["shared_ffn"]))
    if "window" in c:
        # OLMo 3, Gemma 3: every window_pattern-th layer full (with the scaled RoPE), the others
        # slide (plain RoPE; Gemma 3's at its own base). gpt-oss: the same RoPE on every layer.
        kv += [
            ("model.sliding_window", c["window"]),
            ("model.sliding_window_pattern", c["window_pattern"]),
        ]
        if rope_by_type(c):
            kv.append(("model.sliding_rope", "plain"))
        if "sliding_theta" in c:
            kv.append(("model.sliding_rope_theta", c["sliding_theta"]))
    return " ".join(f"{k}={v if isinstance(v, str) else fmt(v)}" for k, v in kv)


def hf_model(case):
    """The transformers model of a case, float64, eager attention, weights not yet set."""
    c = case
    rope = {"rope_type": "default", "rope_theta": c["theta"]}
    if "llama3" in c:
        rope = {"rope_type": "llama3", "rope_theta": c["theta"], **c["llama3"]}
    kw = dict(vocab_size=c["vocab"], hidden_size=c["width"], intermediate_size=c["ffn"],
              num_hidden_layers=c["layers"], num_attention_heads=c["heads"],
              num_key_value_heads=c["kv_heads"], max_position_embeddings=c["context"],
              rms_norm_eps=c["eps"], tie_word_embeddings=c["tied"], hidden_act="silu",
              attention_dropout=0.0, pad_token_id=None, bos_token_id=None, eos_token_id=None)
    config_cls = {"llama": LlamaConfig, "qwen2": Qwen2Config, "mixtral": MixtralConfig,
                  "qwen3_moe": Qwen3MoeConfig, "qwen2_moe": Qwen2MoeConfig, "olmo2": Olmo2Config,
                  "olmoe": OlmoeConfig, "olmo3": Olmo3Config, "gemma3": Gemma3TextConfig,
                  "gpt_oss": GptOssConfig}[c["arch"]]
    if hasattr(config_cls(), "rope_parameters"):    # transformers 5
        kw["rope_parameters"] = rope
    else:                                           # transformers 4.x
        kw["rope_theta"] = c["theta"]
        if "llama3" in c:
            kw["rope_scaling"] = dict(rope)
    if c["arch"] == "olmo3":
        # Per layer type: YaRN on the full-attention layers, plain RoPE at the same theta on the
        # sliding ones (Olmo3RotaryEmbedding keeps one set of frequencies per type).
        kw["rope_parameters"] = {"full_attention": {"rope_type": "yarn", "rope_theta": c["theta"], **c["yarn"]},
                                 "sliding_attention": {"rope_type": "default", "rope_theta": c["theta"]}}
    if c["arch"] == "llama":
        kw.update(attention_bias=c["bias"], mlp_bias=False)
        cfg = LlamaConfig(**kw)
        cls = LlamaForCausalLM
    elif c["arch"] == "qwen2":
        assert c["bias"], "Qwen2 always has q/k/v biases"
        kw.update(use_sliding_window=False, sliding_window=None)
        cfg = Qwen2Config(**kw)
        cls = Qwen2ForCausalLM
    elif c["arch"] == "mixtral":
        assert not c["bias"] and "head_dim" not in c and c["norm_topk"], "Mixtral: no biases, head_dim = width / heads, renormalized top-k"
        kw.update(sliding_window=None, num_local_experts=c["experts"], num_experts_per_tok=c["topk"],
                  router_jitter_noise=0.0, output_router_logits=c["aux"] > 0, router_aux_loss_coef=c["aux"])
        cfg = MixtralConfig(**kw)
        cls = MixtralForCausalLM
    elif c["arch"] == "qwen2_moe":
        assert c["bias"] and "head_dim" not in c, "Qwen2-MoE: q/k/v biases, head_dim = width / heads"
        # intermediate_size (the width of a dense layer's MLP) is unused: every layer is sparse.
        kw.update(use_sliding_window=False, sliding_window=None, qkv_bias=True,
                  num_experts=c["experts"], num_experts_per_tok=c["topk"], moe_intermediate_size=c["ffn"],
                  shared_expert_intermediate_size=c["shared_ffn"], norm_topk_prob=c["norm_topk"],
                  decoder_sparse_step=1, mlp_only_layers=[], output_router_logits=c["aux"] > 0,
                  router_aux_loss_coef=c["aux"])
        cfg = Qwen2MoeConfig(**kw)
        cls = Qwen2MoeForCausalLM
    elif c["arch"] == "olmo2":
        assert not c["bias"] and "head_dim" not in c and "experts" not in c, "OLMo 2: no biases, head_dim = width / heads"
        kw.update(attention_bias=False)
        cfg = Olmo2Config(**kw)
        cls = Olmo2ForCausalLM
    elif c["arch"] == "olmo3":
        assert not c["bias"] and "head_dim" not in c and "experts" not in c, "OLMo 3: no biases, head_dim = width / heads"
        assert c["context"] > c["window"], "the window must matter"
        # layer_types left to Olmo3Config's default: sliding but every window_pattern-th (4) layer.
        kw.update(attention_bias=False, sliding_window=c["window"])
        cfg = Olmo3Config(**kw)
        cls = Olmo3ForCausalLM
    elif c["arch"] == "gemma3":
        assert not c["bias"] and "experts" not in c and c["tied"], "Gemma 3: no biases, tied embeddings"
        assert c["context"] > c["window"], "the window must matter"
        assert c["query_pre_attn_scalar"] != head_size(c), "query_pre_attn_scalar must matter"
        assert head_size(c) * c["heads"] != c["width"], "head_dim apart from width / heads"
        # Gemma3TextConfig names the activation hidden_activation (gelu_pytorch_tanh: GeGLU with
        # the tanh GELU). Per layer type: linear scaling on the full layers, plain RoPE at its own
        # base on the sliding ones; layer_types given explicitly (sliding but every window_pattern-th).
        del kw["hidden_act"]
        kw.update(head_dim=c["head_dim"], hidden_activation="gelu_pytorch_tanh", attention_bias=False,
                  query_pre_attn_scalar=c["query_pre_attn_scalar"], sliding_window=c["window"],
                  layer_types=[layer_type(c, l) for l in range(c["layers"])],
                  rope_parameters={"full_attention": {"rope_type": "linear", "rope_theta": c["theta"], **c["linear"]},
                                   "sliding_attention": {"rope_type": "default", "rope_theta": c["sliding_theta"]}},
                  attn_logit_softcapping=None, final_logit_softcapping=None, use_bidirectional_attention=False)
        cfg = Gemma3TextConfig(**kw)
        cls = Gemma3ForCausalLM
    elif c["arch"] == "gpt_oss":
        assert c["bias"] and not c["tied"] and c["norm_topk"] and c["aux"] == 0.0, \
            "gpt-oss: q/k/v/o biases, untied head, renormalized top-k (here without the load-balancing loss)"
        assert c["context"] > c["window"] and c["window_pattern"] == 2, "the window must matter; every 2nd layer full"
        assert "yarn" in c and c["yarn"]["truncate"] is False
        # One RoPE (YaRN) for every layer; layer_types left to GptOssConfig's default (sliding but
        # every 2nd layer); intermediate_size is every expert's width.
        kw.update(head_dim=c["head_dim"], attention_bias=True, sliding_window=c["window"],
                  num_local_experts=c["experts"], num_experts_per_tok=c["topk"],
                  swiglu_alpha=c["swiglu_alpha"], swiglu_limit=c["swiglu_limit"],
                  rope_parameters={"rope_type": "yarn", "rope_theta": c["theta"], **c["yarn"]},
                  output_router_logits=False, router_aux_loss_coef=0.0)
        cfg = GptOssConfig(**kw)
        cls = GptOssForCausalLM
    elif c["arch"] == "olmoe":
        # OlmoeAttention sizes q_norm by hidden_size and k_norm by (hidden_size / heads) KV: the whole
        # projections only when head_dim = width / heads.
        assert not c["bias"] and "head_dim" not in c, "OLMoE: no biases, head_dim = width / heads"
        # intermediate_size is the width of every expert (every layer is sparse).
        kw.update(attention_bias=False, clip_qkv=None, num_experts=c["experts"], num_experts_per_tok=c["topk"],
                  norm_topk_prob=c["norm_topk"], output_router_logits=c["aux"] > 0, router_aux_loss_coef=c["aux"])
        cfg = OlmoeConfig(**kw)
        cls = OlmoeForCausalLM
    else:
        assert c["arch"] == "qwen3_moe" and not c["bias"]
        kw.update(use_sliding_window=False, sliding_window=None, head_dim=c.get("head_dim"),
                  attention_bias=False, num_experts=c["experts"], num_experts_per_tok=c["topk"],
                  moe_intermediate_size=c["ffn"], norm_topk_prob=c["norm_topk"], decoder_sparse_step=1,
                  mlp_only_layers=[], output_router_logits=c["aux"] > 0, router_aux_loss_coef=c["aux"])
        cfg = Qwen3MoeConfig(**kw)
        cls = Qwen3MoeForCausalLM
    cfg._attn_implementation = "eager"
    if "experts" in c:
        cfg._experts_implementation = "eager"       # transformers' reference loop over the experts
    torch.manual_seed(0)                            # the init is overwritten; keep it quiet and fixed
    model = cls(cfg).double().eval()
    assert model.config._attn_implementation == "eager", model.config._attn_implementation
    if "experts" in c:
        assert model.config._experts_implementation == "eager", model.config._experts_implementation
    assert model.model.embed_tokens.padding_idx is None     # a padding row would get no gradient
    tied = model.lm_head.weight is model.model.embed_tokens.weight
    assert tied == c["tied"], f"tie_word_embeddings={c['tied']} but lm_head is embed_tokens: {tied}"
    if c["arch"] == "qwen2_moe":    # Qwen2MoeConfig writes 0 for no window (use_sliding_window=False)
        assert model.config.sliding_window == 0 and set(model.config.layer_types) == {"full_attention"}
    elif c["arch"] in ("olmo2", "olmoe"):    # no sliding window in their configurations
        assert getattr(model.config, "sliding_window", None) is None and getattr(model.config, "clip_qkv", None) is None
    elif c["arch"] in ("olmo3", "gemma3", "gpt_oss"):  # the window on every layer but each window_pattern-th
        assert model.config.sliding_window == c["window"] and getattr(model.config, "clip_qkv", None) is None
        types = [layer_type(c, l) for l in range(c["layers"])]
        assert model.config.layer_types == types, (model.config.layer_types, types)
        assert {"sliding_attention", "full_attention"} <= set(types)
        for l, layer in enumerate(model.model.layers):
            assert layer.self_attn.sliding_window == (c["window"] if types[l] == "sliding_attention" else None)
    elif c["arch"] != "llama":
        assert model.config.sliding_window is None
    if gemma(c):
        # No softcapping, causal, GeGLU; the float64 model's embedding factor is already sqrt(width)
        # rounded to float32 (Gemma3TextScaledWordEmbedding makes its buffer in float32, .double()
        # keeps the value): set it explicitly all the same, the value accel uses.
        assert model.config.attn_logit_softcapping is None and model.config.final_logit_softcapping is None
        assert model.config.use_bidirectional_attention is False and model.config.hidden_activation == "gelu_pytorch_tanh"
        e = model.model.embed_tokens
        assert type(e) is modeling_gemma3.Gemma3TextScaledWordEmbedding and e.embed_scale.dtype == torch.float64
        assert e.embed_scale.item() == embed_scale(c), (e.embed_scale.item(), embed_scale(c))
        with torch.no_grad():
            e.embed_scale.fill_(embed_scale(c))
        for layer in model.model.layers:
            assert layer.self_attn.scaling == c["query_pre_attn_scalar"] ** -0.5
            assert type(layer.mlp.act_fn).__name__ == "GELUTanh", type(layer.mlp.act_fn)
            assert torch.equal(layer.mlp.act_fn(torch.tensor([0.5, -1.0], dtype=torch.float64)),
                               F.gelu(torch.tensor([0.5, -1.0], dtype=torch.float64), approximate="tanh"))
    if oss(c):
        assert model.config.swiglu_alpha == c["swiglu_alpha"] and model.config.swiglu_limit == c["swiglu_limit"]
        assert model.config.rope_parameters["truncate"] is False and model.config.rope_parameters["rope_type"] == "yarn"
    if c["arch"] not in ("llama", "olmo3", "gemma3", "gpt_oss"):
        assert all(getattr(layer.self_attn, "sliding_window", None) is None for layer in model.model.layers)
    hs = head_size(c)
    for layer in model.model.layers:
        a = layer.self_attn
        has_bias = a.q_proj.bias is not None
        assert has_bias == c["bias"] and (a.k_proj.bias is not None) == has_bias \
            and (a.v_proj.bias is not None) == has_bias
        # accel's attention output bias: gpt-oss only (model.attention_out_bias); and its sinks.
        assert (a.o_proj.bias is not None) == oss(c) and hasattr(a, "sinks") == oss(c)
        if oss(c):
            assert a.sinks.shape == (c["heads"],) and a.o_proj.bias.shape == (c["width"],)
        assert a.head_dim == hs and a.o_proj.weight.shape == (c["width"], c["heads"] * hs)
        scope = qk_norm_scope(c)
        assert hasattr(a, "q_norm") == (scope is not None) and hasattr(a, "k_norm") == hasattr(a, "q_norm")
        if scope is not None:
            qn, kn = (hs, hs) if scope == "head" else (c["heads"] * hs, c["kv_heads"] * hs)
            assert a.q_norm.weight.shape == (qn,) and a.k_norm.weight.shape == (kn,), \
                (a.q_norm.weight.shape, a.k_norm.weight.shape)
        # OLMo 2's and 3's blocks have no input_layernorm; Llama's no post_feedforward_layernorm;
        # Gemma 3's have both and a pre_feedforward_layernorm.
        assert hasattr(layer, "input_layernorm") == (norm_position(c) != "post")
        assert hasattr(layer, "post_feedforward_layernorm") == (norm_position(c) != "pre")
        assert hasattr(layer, "pre_feedforward_layernorm") == (norm_position(c) == "both")
        if oss(c):
            E, F_, C = c["experts"], c["ffn"], c["width"]
            mlp = layer.mlp
            assert type(mlp) is modeling_gpt_oss.GptOssMLP, type(mlp)
            assert mlp.router.weight.shape == (E, C) and mlp.router.bias.shape == (E,) and mlp.router.top_k == c["topk"]
            assert mlp.experts.gate_up_proj.shape == (E, C, 2 * F_) and mlp.experts.gate_up_proj_bias.shape == (E, 2 * F_)
            assert mlp.experts.down_proj.shape == (E, F_, C) and mlp.experts.down_proj_bias.shape == (E, C)
            assert mlp.experts.alpha == c["swiglu_alpha"] and mlp.experts.limit == c["swiglu_limit"]
            assert sorted(n for n, _ in mlp.named_parameters()) == \
                ["experts.down_proj", "experts.down_proj_bias", "experts.gate_up_proj", "experts.gate_up_proj_bias",
                 "router.bias", "router.weight"]
        elif "experts" in c:
            E, F_, C = c["experts"], c["ffn"], c["width"]
            mlp = layer.mlp
            assert type(mlp).__name__.endswith("SparseMoeBlock"), type(mlp)
            assert mlp.gate.weight.shape == (E, C) and mlp.gate.top_k == c["topk"]
            assert mlp.experts.gate_up_proj.shape == (E, 2 * F_, C)
            assert mlp.experts.down_proj.shape == (E, C, F_)
            assert getattr(mlp.gate, "norm_topk_prob", True) == c["norm_topk"]
            assert getattr(mlp, "jitter_noise", 0.0) == 0.0
            shared = ["shared_expert.down_proj.weight", "shared_expert.gate_proj.weight",
                      "shared_expert.up_proj.weight", "shared_expert_gate.weight"] if "shared_ffn" in c else []
            assert sorted(n for n, _ in mlp.named_parameters()) == \
                ["experts.down_proj", "experts.gate_up_proj", "gate.weight"] + shared
            if "shared_ffn" in c:
                S, se = c["shared_ffn"], mlp.shared_expert
                assert se.gate_proj.weight.shape == (S, C) and se.up_proj.weight.shape == (S, C)
                assert se.down_proj.weight.shape == (C, S) and mlp.shared_expert_gate.weight.shape == (1, C)
                assert se.gate_proj.bias is None and se.up_proj.bias is None and se.down_proj.bias is None
                assert mlp.shared_expert_gate.bias is None
        else:
            assert layer.mlp.gate_proj.bias is None and layer.mlp.down_proj.bias is None
    return model


def bf16_exact(v):
    """v rounded to the nearest bfloat16 number (8 significant bits), kept in float64: exact in
    float32, and its float32 bit pattern ends in 16 zero bits, which the compressed fixture stores
    almost for free (the gradients, full float32, take most of a file)."""
    return v.to(torch.bfloat16).to(torch.float64)


def set_weights(model, seed, norm_offset=False):
    """Random weights that make the comparison sensitive. Every value is a bfloat16 number, so the
    float32 fixture holds exactly the weights the float64 reference used. norm_offset (Gemma 3):
    the RMSNorms multiply by 1 + weight, so their weights are drawn around 0, for the same gains."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():     # a tied lm_head is listed once, as embed_tokens
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                v = (0.0 if norm_offset else 1.0) + NORM_STD * r
            elif name.endswith(".bias") or name.endswith("_proj_bias"):    # gpt-oss's experts: gate_up_proj_bias, ...
                v = BIAS_STD * r
            elif name.endswith("self_attn.sinks"):                          # gpt-oss
                v = SINK_STD * r
            elif "embed_tokens" in name:
                v = EMBED_STD * r
            else:    # a projection: a Linear's [out, in], or transformers' stacked experts [E, out, in]
                assert p.dim() == 2 or (p.dim() == 3 and ".experts." in name), name
                v = MATRIX_STD * r
            p.copy_(bf16_exact(v))


# ---------------------------------------------------------------- float64 throughout

def head_size(case):
    """The size of an attention head: head_dim where the case sets it, else width / heads."""
    return case.get("head_dim") or case["width"] // case["heads"]


def layer_type(case, l):
    """transformers' layer_types[l] of a case: with a window (OLMo 3, Gemma 3) every window_pattern-th
    layer ((l+1) % window_pattern == 0) is "full_attention", the others "sliding_attention"
    (Olmo3Config's and Gemma3TextConfig's default rule and accel's model.sliding_window_pattern);
    without one every layer is full."""
    if "window" not in case:
        return "full_attention"
    return "full_attention" if (l + 1) % case["window_pattern"] == 0 else "sliding_attention"


def yarn_attention_factor(case):
    """YaRN's factor of cos and sin (transformers' get_mscale without mscale): 0.1 ln(factor) + 1."""
    f = case["yarn"]["factor"]
    return 1.0 if f <= 1 else 0.1 * math.log(f) + 1.0


def inv_freq_reference(case, plain=False, theta=None):
    """RoPE inverse frequencies in float64, transformers' formulas (default, llama3, yarn and
    linear), and the band of each frequency under llama3 or yarn scaling; plain: the unscaled ones
    (OLMo 3's and Gemma 3's sliding layers, at the case's sliding_theta where it has one). theta:
    this base instead of the case's."""
    hs = head_size(case)
    if theta is None:
        theta = case.get("sliding_theta", case["theta"]) if plain else case["theta"]
    inv = 1.0 / theta ** (np.arange(0, hs, 2, dtype=np.float64) / hs)
    if plain or ("llama3" not in case and "yarn" not in case and "linear" not in case):
        return inv, None
    if "linear" in case:
        # _compute_linear_scaling_rope_parameters: every inverse frequency divided by the factor.
        return inv / case["linear"]["factor"], None
    if "yarn" in case:
        # _compute_yarn_parameters: frequency i is kept (extrapolated) below dimension `low`,
        # divided by the factor (interpolated) above `high`, a linear ramp in i between; low and
        # high are the dimensions that turn beta_fast and beta_slow times over the original
        # context, rounded outwards with truncate (its default; gpt-oss: off), clamped to 0 .. hs-1.
        r = case["yarn"]
        factor, orig = r["factor"], r["original_max_position_embeddings"]
        corr = lambda rot: hs * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(case["theta"]))
        low, high = corr(r["beta_fast"]), corr(r["beta_slow"])
        if r.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, hs - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(hs // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
        extrapolation = 1.0 - ramp
        out = (inv / factor) * (1.0 - extrapolation) + inv * extrapolation
        bands = ["kept" if e == 1.0 else "scaled" if e == 0.0 else "blended" for e in extrapolation]
        return out, bands
    r = case["llama3"]
    factor, lff, hff = r["factor"], r["low_freq_factor"], r["high_freq_factor"]
    orig = r["original_max_position_embeddings"]
    low_wavelen, high_wavelen = orig / lff, orig / hff
    out, bands = inv.copy(), []
    for i, f in enumerate(inv):
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            bands.append("kept")
        elif wavelen > low_wavelen:
            out[i] = f / factor
            bands.append("scaled")
        else:
            s = (orig / wavelen - lff) / (hff - lff)
            out[i] = (1 - s) * f / factor + s * f
            bands.append("smoothed")
    return out, bands


def rmsnorm_forward64(self, x):
    """transformers' RMSNorm without the cast to float32."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return self.weight * (x * torch.rsqrt(variance + self.variance_epsilon))


def gemma3_rmsnorm_forward64(self, x):
    """transformers' Gemma3RMSNorm without the casts to float32: x / rms(x) * (1 + weight)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + self.weight)


def gemma3_rmsnorm_no_offset64(self, x):
    """gemma3_rmsnorm_forward64 with the weight as the gain (a Llama RMSNorm): the generator's check
    that the fixture depends on model.norm_unit_offset."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


# RMSNorm classes whose float64 forward is not rmsnorm_forward64.
NORM_FORWARD64 = {"Gemma3RMSNorm": gemma3_rmsnorm_forward64}


def eager_attention_forward64(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """transformers' eager attention with the softmax in the tensors' own precision. A sliding
    window (OLMo 3's and Gemma 3's sliding layers) is in attention_mask: transformers' eager
    attention ignores the argument too. scaling: head_dim^-0.5, or Gemma 3's
    query_pre_attn_scalar^-0.5 (Gemma's eager attention also takes a softcap: never given here)."""
    assert kwargs.get("sliding_window") == getattr(module, "sliding_window", None)
    assert scaling is not None and scaling == module.scaling and kwargs.get("softcap") is None
    key_states = modeling_llama.repeat_kv(key, module.num_key_value_groups)
    value_states = modeling_llama.repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = F.softmax(attn_weights, dim=-1)
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


def rotary_forward64(inv_freq, scaling, half=False):
    """A rotary embedding's forward(x, position_ids) in float64: cos and sin hs wide (the angles
    twice, for rotate_half), or hs/2 wide (half: GptOssRotaryEmbedding's, applied to a head's
    halves), times scaling."""
    inv = torch.tensor(inv_freq, dtype=torch.float64)

    def forward(x, position_ids):
        freqs = position_ids[..., None].to(torch.float64) * inv
        emb = freqs if half else torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * scaling).to(x.dtype), (emb.sin() * scaling).to(x.dtype)
    return forward


def gpt_oss_attention_forward64(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    """transformers' eager attention of gpt-oss (the sinks as one more logit per query, dropped after
    the softmax) written out in the tensors' own precision. Stock transformers computes it in the
    model's dtype already (float64 here); it also subtracts each row's maximum first, which changes
    nothing but the rounding."""
    assert kwargs.get("sliding_window") == module.sliding_window and kwargs.get("s_aux") is module.sinks
    assert scaling is not None and scaling == module.scaling and module.sinks.shape == (query.shape[1],)
    key_states = modeling_gpt_oss.repeat_kv(key, module.num_key_value_groups)
    value_states = modeling_gpt_oss.repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    sinks = module.sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], 1)
    probs = F.softmax(torch.cat([attn_weights, sinks], dim=-1), dim=-1)
    attn_weights = probs[..., :-1]      # the sink's share attends to nothing
    attn_output = torch.matmul(attn_weights, value_states)
    return attn_output.transpose(1, 2).contiguous(), attn_weights


# Attention modules whose float64 eager attention is not eager_attention_forward64.
ATTENTION_FORWARD64 = {modeling_gpt_oss: gpt_oss_attention_forward64}


def rotary_by_type_forward64(rope):
    """Olmo3RotaryEmbedding.forward(x, position_ids, layer_type) (Gemma3RotaryEmbedding's is the
    same) in float64: rope maps a layer type to (inverse frequencies, factor of cos and sin)."""
    by_type = {t: rotary_forward64(inv, scaling) for t, (inv, scaling) in rope.items()}

    def forward(x, position_ids, layer_type):
        return by_type[layer_type](x, position_ids)
    return forward


def mixtral_router_forward64(self, hidden_states):
    """transformers' MixtralTopKRouter.forward with the softmax in float64 (not router_logits.float())."""
    hidden_states = hidden_states.reshape(-1, self.hidden_dim)
    router_logits = F.linear(hidden_states, self.weight)
    router_probs = F.softmax(router_logits, dim=-1)
    router_top_value, router_indices = torch.topk(router_probs, self.top_k, dim=-1)
    router_top_value = router_top_value / router_top_value.sum(dim=-1, keepdim=True)
    return router_logits, router_top_value, router_indices


def qwen3_moe_router_forward64(self, hidden_states):
    """transformers' Qwen3MoeTopKRouter.forward with the softmax in float64 (not dtype=torch.float)."""
    hidden_states = hidden_states.reshape(-1, self.hidden_dim)
    router_logits = F.linear(hidden_states, self.weight)
    router_probs = F.softmax(router_logits, dim=-1)
    router_top_value, router_indices = torch.topk(router_probs, self.top_k, dim=-1)
    if self.norm_topk_prob:
        router_top_value = router_top_value / router_top_value.sum(dim=-1, keepdim=True)
    router_top_value = router_top_value.to(router_logits.dtype)
    return router_logits, router_top_value, router_indices


# Qwen2MoeTopKRouter.forward and OlmoeTopKRouter.forward are the same code as Qwen3MoeTopKRouter.forward.
ROUTER_FORWARD64 = {"MixtralTopKRouter": mixtral_router_forward64, "Qwen3MoeTopKRouter": qwen3_moe_router_forward64,
                    "Qwen2MoeTopKRouter": qwen3_moe_router_forward64, "OlmoeTopKRouter": qwen3_moe_router_forward64}


def load_balancing_loss_func64(gate_logits, num_experts=None, top_k=2, attention_mask=None):
    """transformers' load_balancing_loss_func (no attention mask) with float64 sums instead of its
    float32 ones: E * sum_e f_e P_e over the rows of every layer, f_e the share of the top-k
    assignments that go to expert e (counted over the rows, so the f_e sum to top_k), P_e the mean
    router probability of e."""
    if gate_logits is None or not isinstance(gate_logits, tuple):
        return 0
    assert attention_mask is None, "the fixtures' load-balancing loss has no attention mask"
    tokens_per_expert_sum = torch.zeros(num_experts, dtype=torch.float64)
    router_prob_sum = torch.zeros(num_experts, dtype=torch.float64)
    total_rows = 0
    for layer_gate in gate_logits:
        routing_weights = F.softmax(layer_gate.to(torch.float64), dim=-1)
        _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        tokens_per_expert_sum = tokens_per_expert_sum + torch.bincount(
            selected_experts.reshape(-1), minlength=num_experts).to(torch.float64)
        router_prob_sum = router_prob_sum + routing_weights.sum(dim=0)
        total_rows += routing_weights.shape[0]
    tokens_per_expert = tokens_per_expert_sum / total_rows
    router_prob_per_expert = router_prob_sum / total_rows
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts


class patch_float64:
    """Within the block: RMSNorm (Gemma3RMSNorm: with its 1 + weight), eager attention and the
    rotary embedding of `model` in float64, and for a mixture of experts the router's softmax and
    the load-balancing loss too. inv_freq: the inverse frequencies (cos and sin unscaled), or for a
    rotary embedding per layer type (OLMo 3, Gemma 3) a dict layer type -> (inverse frequencies,
    factor of cos and sin), or for gpt-oss (one YaRN for every layer) a tuple (inverse frequencies,
    factor of cos and sin). (Gemma 3's embedding factor is set in hf_model; gpt-oss's router and
    experts compute in the model's dtype.)"""

    def __init__(self, model, inv_freq):
        self.model, self.inv_freq = model, inv_freq

    def __enter__(self):
        norm_cls = type(self.model.model.norm)
        # Every RMSNorm of the model (block norms, q/k norms, the final one) is of that class.
        assert all(type(m) is norm_cls for m in self.model.modules() if type(m).__name__.endswith("RMSNorm"))
        mod = sys.modules[type(self.model.model.layers[0].self_attn).__module__]
        self.saved = (norm_cls, norm_cls.forward, mod, mod.eager_attention_forward)
        norm_cls.forward = NORM_FORWARD64.get(norm_cls.__name__, rmsnorm_forward64)
        mod.eager_attention_forward = ATTENTION_FORWARD64.get(mod, eager_attention_forward64)
        rot = self.model.model.rotary_emb
        if isinstance(self.inv_freq, dict):     # Olmo3/Gemma3RotaryEmbedding: forward(x, position_ids, layer_type)
            assert set(self.inv_freq) == set(rot.layer_types), (set(self.inv_freq), rot.layer_types)
            rot.forward = rotary_by_type_forward64(self.inv_freq)
        elif isinstance(self.inv_freq, tuple):  # GptOssRotaryEmbedding: cos and sin hs/2 wide, scaled (YaRN)
            assert type(rot) is modeling_gpt_oss.GptOssRotaryEmbedding
            rot.forward = rotary_forward64(*self.inv_freq, half=True)
        else:
            assert rot.attention_scaling == 1.0
            rot.forward = rotary_forward64(self.inv_freq, rot.attention_scaling)
        self.moe = None
        gate = getattr(self.model.model.layers[0].mlp, "gate", None)
        if gate is not None and not isinstance(gate, torch.nn.Linear):    # a router: a mixture of experts
            router_cls = type(gate)
            assert mod in (modeling_mixtral, modeling_qwen3_moe, modeling_qwen2_moe, modeling_olmoe) \
                and router_cls.__module__ == mod.__name__
            assert all(type(layer.mlp.gate) is router_cls for layer in self.model.model.layers)
            self.moe = (router_cls, router_cls.forward, mod.load_balancing_loss_func)
            router_cls.forward = ROUTER_FORWARD64[router_cls.__name__]
            mod.load_balancing_loss_func = load_balancing_loss_func64   # called by name from ForCausalLM.forward
        return self

    def __exit__(self, *exc):
        norm_cls, norm_forward, mod, eager = self.saved
        norm_cls.forward = norm_forward
        mod.eager_attention_forward = eager
        del self.model.model.rotary_emb.forward      # back to the class's method
        if self.moe:
            router_cls, router_forward, lb = self.moe
            router_cls.forward = router_forward
            mod.load_balancing_loss_func = lb
        return False


class capture_routing:
    """Within the block: every router call of `model` appends (router logits, chosen experts) of
    its rows, [N, E] and [N, K], to self.calls (layer after layer, pass after pass)."""

    def __init__(self, model):
        self.model, self.calls, self.handles = model, [], []

    def __enter__(self):
        for layer in self.model.model.layers:
            router = layer.mlp.router if hasattr(layer.mlp, "router") else layer.mlp.gate     # gpt-oss: router
            self.handles.append(router.register_forward_hook(
                lambda mod, args, out: self.calls.append((out[0].detach().clone(), out[2].detach().clone()))))
        return self

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        return False


# ---------------------------------------------------------------- the computation

def run(model, tokens):
    """Logits [B, T, V], accel's loss (sum over sequences of the mean over positions) and the
    gradients (a dict parameter -> tensor) of the model on tokens [B, T+1]."""
    model.zero_grad(set_to_none=True)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    logits = model(input_ids=inputs).logits
    nb, nt, nv = logits.shape
    per_token = F.cross_entropy(logits.reshape(nb * nt, nv), targets.reshape(nb * nt), reduction="none")
    loss = per_token.reshape(nb, nt).mean(dim=1).sum()
    loss.backward()
    grads = {p: p.grad.detach().clone() for p in model.parameters()}
    return logits.detach().clone(), loss.item(), grads


def run_moe(model, case, tokens):
    """run() for a mixture of experts: accel's loss is the sum over sequences of the mean over
    positions of the cross-entropy, plus, with an auxiliary loss coefficient, B * coef * the
    load-balancing loss that transformers computes (load_balancing_loss_func: stock, or float64
    under patch_float64) from all layers' router logits of the whole batch. Also returns that
    load-balancing loss (None without it)."""
    model.zero_grad(set_to_none=True)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    out = model(input_ids=inputs, output_router_logits=case["aux"] > 0)
    logits = out.logits
    nb, nt, nv = logits.shape
    per_token = F.cross_entropy(logits.reshape(nb * nt, nv), targets.reshape(nb * nt), reduction="none")
    loss = per_token.reshape(nb, nt).mean(dim=1).sum()
    aux = None
    if case["aux"] > 0:
        assert out.aux_loss is not None and out.aux_loss.requires_grad    # float32 in stock transformers
        aux = out.aux_loss
        loss = loss + nb * case["aux"] * aux
        aux = aux.item()
    else:
        assert out.aux_loss is None
    loss.backward()
    grads = {p: p.grad.detach().clone() for p in model.parameters()}
    return logits.detach().clone(), loss.item(), grads, aux


def check_routing(case, patched_calls, stock_calls):
    """That the routing is robust: for every router call of the float64 run (one per layer), the
    K-th largest probability (the softmax of the router logits, in float64) exceeds the (K+1)-th by
    at least ROUTER_GAP, so that accel's float32 routing picks the same experts; and that stock
    transformers picked the same experts for every token; and that every expert of every layer gets
    tokens (else its gradient is zero). Returns the smallest gap and the tokens of each expert,
    [layers, E]."""
    K, E = case["topk"], case["experts"]
    assert len(patched_calls) == case["layers"] and len(stock_calls) == case["layers"], \
        (len(patched_calls), len(stock_calls))
    gaps, counts = [], []
    for l, ((logits, idx), (s_logits, s_idx)) in enumerate(zip(patched_calls, stock_calls)):
        assert logits.dtype == torch.float64 and logits.shape == (B * case["context"], E), (logits.dtype, logits.shape)
        probs = F.softmax(logits, dim=-1)
        top = probs.sort(dim=-1, descending=True).values
        gap = top[:, K - 1] - top[:, K] if K < E else torch.full((logits.shape[0],), math.inf, dtype=torch.float64)
        worst = int(gap.argmin())
        if gap[worst] < ROUTER_GAP:
            raise SystemExit(f"{case['name']}: layer {l}, token {worst}: router probabilities {top[worst].tolist()}: "
                             f"the {K}-th and {K + 1}-th differ by {gap[worst].item():.2e} < {ROUTER_GAP:g}; "
                             f"float32 routing could choose differently: change the case's seed")
        assert torch.equal(idx.sort(dim=-1).values, probs.topk(K, dim=-1).indices.sort(dim=-1).values), l
        if not torch.equal(idx.sort(dim=-1).values, s_idx.sort(dim=-1).values):
            raise SystemExit(f"{case['name']}: layer {l}: stock transformers routes differently from the float64 run")
        gaps.append(gap.min().item())
        counts.append(np.bincount(idx.reshape(-1).numpy(), minlength=E))
        assert counts[-1].min() > 0, f"{case['name']}: layer {l}: an expert gets no token: {counts[-1]}"
    return min(gaps), np.stack(counts)


def packed_rows(case, tokens):
    """positions [B, T], the shifted labels [B, T] (target tokens[b, t+1], -100 where it is not
    trained) and accel's loss_mask [B, T+1] of a packed case's token rows [B, T+1], as transformers'
    DataCollatorWithFlattening makes them from the rows' documents."""
    T = case["context"]
    collate = DataCollatorWithFlattening(return_tensors="pt")
    positions, labels = [], []
    for b, lengths in enumerate(case["docs"]):
        assert len(lengths) >= 3 and sum(lengths) == T + 1 and min(lengths) >= 1, (case["name"], b, lengths)
        ends = np.cumsum(lengths)
        feats = [{"input_ids": tokens[b, e - n:e].tolist(), "labels": tokens[b, e - n:e].tolist()}
                 for n, e in zip(lengths, ends)]
        out = collate(feats)
        assert out["input_ids"].shape == (1, T + 1) and torch.equal(out["input_ids"][0], tokens[b])
        positions.append(out["position_ids"][0, :T])
        labels.append(out["labels"][0])
    positions = torch.stack(positions)              # int64 [B, T]
    labels = torch.stack(labels)                    # [B, T+1], input-aligned, -100 at document starts
    loss_mask = (labels != -100).to(torch.uint8)
    # accel's rules for batch->positions: 0 at a row's start, else 0 (a document begins) or one more.
    for b in range(B):
        assert positions[b, 0] == 0
        for t in range(1, T):
            assert positions[b, t] == 0 or positions[b, t] == positions[b, t - 1] + 1
        starts = [t for t in range(T + 1) if t == 0 or (t < T and positions[b, t] == 0)]
        assert [t for t in range(T + 1) if loss_mask[b, t] == 0] == starts or \
            [t for t in range(T + 1) if loss_mask[b, t] == 0] == starts + [T], (b, starts, loss_mask[b])
    assert loss_mask[:, 0].sum() == 0
    return positions, labels[:, 1:].contiguous(), loss_mask


def run_packed(model, tokens, positions, shift_labels):
    """run() for packed rows: position_ids, no attention mask, no cache (so that transformers builds
    the packed block-diagonal mask), and accel's loss: per row the sum over trained targets of the
    cross-entropy over T, summed over rows."""
    model.zero_grad(set_to_none=True)
    inputs = tokens[:, :-1]
    logits = model(input_ids=inputs, position_ids=positions, use_cache=False).logits
    nb, nt, nv = logits.shape
    per_token = F.cross_entropy(logits.reshape(nb * nt, nv), shift_labels.reshape(nb * nt),
                                ignore_index=-100, reduction="none")
    loss = per_token.sum() / nt
    loss.backward()
    grads = {p: p.grad.detach().clone() for p in model.parameters()}
    return logits.detach().clone(), loss.item(), grads


def check_packing(model, case, tokens, positions, logits):
    """That transformers masked the packed rows: every document's logits (in `logits`, from
    run_packed) against the document run alone (default positions); and, so that the comparison
    means something, the same rows with the same position_ids but one plain causal mask (an
    all-ones attention_mask turns the packed-sequence detection off). Returns the largest
    difference of the first and the smallest (over the rows) largest difference of the second on
    the documents after a row's first."""
    T = case["context"]
    alone = 0.0
    with torch.no_grad():
        for b in range(B):
            starts = [t for t in range(T) if positions[b, t] == 0] + [T]
            for s, e in zip(starts[:-1], starts[1:]):
                solo = model(input_ids=tokens[b:b + 1, s:e], use_cache=False).logits[0]
                alone = max(alone, (solo - logits[b, s:e]).abs().max().item())
        unmasked = model(input_ids=tokens[:, :-1], position_ids=positions, use_cache=False,
                         attention_mask=torch.ones_like(positions)).logits
    first_end = [next(t for t in range(1, T) if positions[b, t] == 0) for b in range(B)]
    leak = min((unmasked[b, first_end[b]:] - logits[b, first_end[b]:]).abs().max().item() for b in range(B))
    return alone, leak


# Gemma 3's features, each switched off in turn by check_layer_types (see `altered`).
GEMMA_CHANGES = ("no_norm_offset", "no_post_norms", "no_pre_norms", "no_qk_norm", "silu", "gelu_erf",
                 "no_embed_scale", "head_dim_scaling")
# What each change must move the logits by at least: far beyond the test's tolerance (1e-5); the tanh
# GELU against the exact one (which accel does not offer) only well beyond it.
EFFECT_MIN = {"gelu_erf": 1e-4}


class altered:
    """Within the block (inside patch_float64): `model` with one of Gemma 3's features switched off:
    RMSNorms that multiply by the weight, not 1 + weight (no_norm_offset); no norm after attention
    and MLP (no_post_norms, accel's norm_position=pre) or before them (no_pre_norms, =post); no q/k
    norms; SwiGLU (silu) or the exact GELU (gelu_erf) for the tanh GELU; embeddings not scaled;
    scores scaled by head_dim^-0.5 instead of query_pre_attn_scalar^-0.5."""

    def __init__(self, model, case, change):
        self.model, self.case, self.change, self.undo = model, case, change, []

    def _swap(self, obj, attr, value):
        """obj.attr = value until the block ends; a module's forward set on the instance (shadowing
        its class's) is deleted then, anything else (a class's forward, a submodule, a number) set
        back."""
        old = getattr(obj, attr)
        setattr(obj, attr, value)
        if attr == "forward" and not isinstance(obj, type):
            assert "forward" in vars(obj)
            self.undo.append(lambda: delattr(obj, attr))
        else:
            self.undo.append(lambda: setattr(obj, attr, old))

    def __enter__(self):
        m, c = self.model.model, self.change
        identity = lambda x: x
        if c == "no_norm_offset":
            cls = type(m.norm)
            assert cls.forward is gemma3_rmsnorm_forward64, "inside patch_float64 only"
            self._swap(cls, "forward", gemma3_rmsnorm_no_offset64)
        elif c == "no_embed_scale":
            with torch.no_grad():
                m.embed_tokens.embed_scale.fill_(1.0)
            self.undo.append(lambda: m.embed_tokens.embed_scale.fill_(embed_scale(self.case)))
        per_layer = c not in ("no_norm_offset", "no_embed_scale")
        for layer in m.layers if per_layer else []:
            a = layer.self_attn
            if c == "no_post_norms":
                self._swap(layer.post_attention_layernorm, "forward", identity)
                self._swap(layer.post_feedforward_layernorm, "forward", identity)
            elif c == "no_pre_norms":
                self._swap(layer.input_layernorm, "forward", identity)
                self._swap(layer.pre_feedforward_layernorm, "forward", identity)
            elif c == "no_qk_norm":
                self._swap(a.q_norm, "forward", identity)
                self._swap(a.k_norm, "forward", identity)
            elif c == "silu":
                self._swap(layer.mlp, "act_fn", torch.nn.SiLU())
            elif c == "gelu_erf":
                self._swap(layer.mlp, "act_fn", torch.nn.GELU())
            elif c == "head_dim_scaling":
                self._swap(a, "scaling", a.head_dim ** -0.5)
            else:
                raise ValueError(c)
        return self

    def __exit__(self, *exc):
        with torch.no_grad():
            for u in reversed(self.undo):
                u()
        return False


def check_layer_types(model, case, tokens, rope, logits):
    """That the per-layer attention of OLMo 3 and Gemma 3 matters: the float64 logits (`logits`,
    from run) against the same weights with, in turn, no window (transformers' config.sliding_window
    = the context: every layer sees the whole causal context), the sliding layers' RoPE scaled like
    the full layers' (YaRN, or Gemma 3's linear scaling at the full layers' base), and the full
    layers' RoPE plain like the sliding ones'. Gemma 3 also: the full layers' RoPE at their base
    without the linear factor (full_rope_unscaled), the sliding layers' at the full layers' base
    (sliding_rope_full_theta), and each of its other features switched off (`altered`). Each must
    change the logits far beyond the test's tolerance. Returns the largest change of each, by
    attribute name."""
    full, sliding = rope["full_attention"], rope["sliding_attention"]
    variants = {"no_window": (rope, case["context"], None),
                "sliding_rope_scaled": ({"full_attention": full, "sliding_attention": full}, case["window"], None),
                "full_rope_plain": ({"full_attention": sliding, "sliding_attention": sliding}, case["window"], None)}
    if gemma(case):
        at_theta = (inv_freq_reference(case, plain=True, theta=case["theta"])[0], 1.0)
        variants["full_rope_unscaled"] = ({"full_attention": at_theta, "sliding_attention": sliding}, case["window"], None)
        variants["sliding_rope_full_theta"] = ({"full_attention": full, "sliding_attention": at_theta}, case["window"], None)
        for change in GEMMA_CHANGES:
            variants[change] = (rope, case["window"], change)
    effects = {}
    saved = model.config.sliding_window
    try:
        for k, (r, window, change) in variants.items():
            model.config.sliding_window = window    # read by create_sliding_window_causal_mask at every call
            with torch.no_grad(), patch_float64(model, r):
                if change is None:
                    other = model(input_ids=tokens[:, :-1]).logits
                else:
                    with altered(model, case, change):
                        other = model(input_ids=tokens[:, :-1]).logits
            effects[f"{k}_logits_max_abs_diff"] = (other - logits).abs().max().item()
    finally:
        model.config.sliding_window = saved
    with torch.no_grad(), patch_float64(model, rope):    # and back: the same logits again
        assert torch.equal(model(input_ids=tokens[:, :-1]).logits, logits)
    short = {k: v for k, v in effects.items() if not v > EFFECT_MIN.get(k[:-len("_logits_max_abs_diff")], 1e-2)}
    assert not short, short
    return effects


def check_clamp(model, case, tokens, rope):
    """gpt-oss's clamped SwiGLU: every routed token's gate and up values of every expert (the
    float64 run), their shares beyond the clamp's bounds (the gate above limit, up beyond
    +-limit), which must both be positive (the clamp is exercised) and well below one, and the
    least distance of any of them from its bound, which must be at least CLAMP_GAP (so that
    float32 clamps the same values: a value on the other side would pass or stop a gradient).
    Returns them by attribute name."""
    limit = case["swiglu_limit"]
    gates, ups, undo = [], [], []
    for layer in model.model.layers:
        ex = layer.mlp.experts
        assert ex.limit == limit and "_apply_gate" not in vars(ex)

        def apply_gate(gate_up, ex=ex):
            gates.append(gate_up[..., ::2].detach().clone())    # GptOssExperts._apply_gate's split
            ups.append(gate_up[..., 1::2].detach().clone())
            return type(ex)._apply_gate(ex, gate_up)
        ex._apply_gate = apply_gate
        undo.append(ex)
    try:
        with torch.no_grad(), patch_float64(model, rope):
            model(input_ids=tokens[:, :-1])
    finally:
        for ex in undo:
            del ex._apply_gate
    gate, up = torch.cat([g.reshape(-1) for g in gates]), torch.cat([u.reshape(-1) for u in ups])
    assert gate.dtype == torch.float64 and gate.numel() == case["layers"] * B * case["context"] * case["topk"] * case["ffn"]
    out = {"clamp_gate_share": (gate > limit).double().mean().item(),
           "clamp_up_share": (up.abs() > limit).double().mean().item(),
           "clamp_min_margin": min((gate - limit).abs().min().item(), (up.abs() - limit).abs().min().item())}
    assert 0 < out["clamp_gate_share"] < 0.5 and 0 < out["clamp_up_share"] < 0.5, out
    if out["clamp_min_margin"] < CLAMP_GAP:
        raise SystemExit(f"{case['name']}: a routed gate or up value lies {out['clamp_min_margin']:.2e} from the clamp's "
                         f"bound (< {CLAMP_GAP:g}): float32 could clamp it differently: change the case's seed")
    return out


def check_gpt_oss(model, case, tokens, rope, logits):
    """That gpt-oss's parts matter: the float64 logits (`logits`, from run_moe) against the same
    weights with, in turn, no window (config.sliding_window = the context), no sinks (-inf: each
    softmax over the keys alone), no clamp (limit +inf), YaRN's bounds rounded outwards (truncate
    on), plain RoPE (no YaRN: inverse frequencies kept, cos and sin unscaled) and YaRN's frequencies
    with cos and sin unscaled. Each must change the logits far beyond the test's tolerance. Returns
    the largest change of each, by attribute name."""
    inv, scaling = rope
    truncated, _ = inv_freq_reference(dict(case, yarn=dict(case["yarn"], truncate=True)))
    plain, _ = inv_freq_reference(case, plain=True)
    assert not np.allclose(truncated, inv, rtol=1e-3, atol=0) and not np.allclose(plain, inv, rtol=1e-3, atol=0)
    variants = {"no_window": {"window": case["context"]}, "no_sinks": {"sinks": -math.inf},
                "no_clamp": {"limit": math.inf}, "rope_truncated": {"rope": (truncated, scaling)},
                "rope_plain": {"rope": (plain, 1.0)}, "rope_unscaled_cos_sin": {"rope": (inv, 1.0)}}
    layers = model.model.layers
    saved = model.config.sliding_window
    sinks = [layer.self_attn.sinks.detach().clone() for layer in layers]
    effects = {}
    try:
        for k, v in variants.items():
            model.config.sliding_window = v.get("window", saved)
            with torch.no_grad():
                for layer in layers:
                    if "sinks" in v:
                        layer.self_attn.sinks.fill_(v["sinks"])
                    layer.mlp.experts.limit = v.get("limit", case["swiglu_limit"])
                with patch_float64(model, v.get("rope", rope)):
                    other = model(input_ids=tokens[:, :-1]).logits
                for layer, sk in zip(layers, sinks):
                    layer.self_attn.sinks.copy_(sk)
                    layer.mlp.experts.limit = case["swiglu_limit"]
            effects[f"{k}_logits_max_abs_diff"] = (other - logits).abs().max().item()
    finally:
        model.config.sliding_window = saved
        with torch.no_grad():
            for layer, sk in zip(layers, sinks):
                layer.self_attn.sinks.copy_(sk)
                layer.mlp.experts.limit = case["swiglu_limit"]
    with torch.no_grad(), patch_float64(model, rope):    # and back: the same logits again
        assert torch.equal(model(input_ids=tokens[:, :-1]).logits, logits)
    short = {k: v for k, v in effects.items() if not v > 1e-2}
    assert not short, short
    return effects


def accel_tensors(model, case, value):
    """accel's name -> array, value(p) giving each HF parameter's data or gradient."""
    cat = lambda *ps: torch.cat([value(p) for p in ps], dim=0)
    m = model.model
    out = {"wte": value(m.embed_tokens.weight)}
    for l, layer in enumerate(m.layers):
        a, mlp = layer.self_attn, layer.mlp
        # Post-norm (OLMo 2): norm1 normalizes the attention's output, norm2 the MLP's. Gemma 3:
        # norm1 and norm2 the inputs, post_norm1 and post_norm2 the outputs.
        out[f"h.{l}.norm1.weight"] = value(layer.post_attention_layernorm.weight if post_norm(case)
                                           else layer.input_layernorm.weight)
        if norm_position(case) == "both":
            out[f"h.{l}.post_norm1.weight"] = value(layer.post_attention_layernorm.weight)
        out[f"h.{l}.attn.qkv.weight"] = cat(a.q_proj.weight, a.k_proj.weight, a.v_proj.weight)
        if case["bias"]:
            out[f"h.{l}.attn.qkv.bias"] = cat(a.q_proj.bias, a.k_proj.bias, a.v_proj.bias)
        if qk_norm_scope(case):
            out[f"h.{l}.attn.q_norm.weight"] = value(a.q_norm.weight)
            out[f"h.{l}.attn.k_norm.weight"] = value(a.k_norm.weight)
        out[f"h.{l}.attn.proj.weight"] = value(a.o_proj.weight)
        if oss(case):
            out[f"h.{l}.attn.proj.bias"] = value(a.o_proj.bias)
            out[f"h.{l}.attn.sinks"] = value(a.sinks)
        if norm_position(case) == "both":
            out[f"h.{l}.norm2.weight"] = value(layer.pre_feedforward_layernorm.weight)
            out[f"h.{l}.post_norm2.weight"] = value(layer.post_feedforward_layernorm.weight)
        else:
            out[f"h.{l}.norm2.weight"] = value(layer.post_feedforward_layernorm.weight if post_norm(case)
                                               else layer.post_attention_layernorm.weight)
        if oss(case):
            # gpt-oss's experts are x @ W: gate_up_proj [E, C, 2F] with gate j in column 2j and up j
            # in 2j+1, down_proj [E, F, C]. accel's: [E 2F, C], expert e's rows [gate | up]; [E C, F].
            ex = mlp.experts
            gu, gub = value(ex.gate_up_proj), value(ex.gate_up_proj_bias)      # [E, C, 2F], [E, 2F]
            dn, dnb = value(ex.down_proj), value(ex.down_proj_bias)            # [E, F, C], [E, C]
            E, C, F2 = gu.shape
            gu = torch.cat([gu[:, :, 0::2], gu[:, :, 1::2]], dim=2)             # [E, C, gate | up]
            gub = torch.cat([gub[:, 0::2], gub[:, 1::2]], dim=1)
            out[f"h.{l}.mlp.router.weight"] = value(mlp.router.weight)
            out[f"h.{l}.mlp.router.bias"] = value(mlp.router.bias)
            out[f"h.{l}.mlp.experts.gate_up.weight"] = gu.transpose(1, 2).reshape(E * F2, C)
            out[f"h.{l}.mlp.experts.gate_up.bias"] = gub.reshape(E * F2)
            out[f"h.{l}.mlp.experts.down.weight"] = dn.transpose(1, 2).reshape(E * C, dn.shape[1])
            out[f"h.{l}.mlp.experts.down.bias"] = dnb.reshape(E * C)
        elif "experts" in case:
            # transformers' [E, 2F, C] (gate rows, then up rows, of each expert) and [E, C, F],
            # stacked along the rows: the same bytes.
            gu, dn = value(mlp.experts.gate_up_proj), value(mlp.experts.down_proj)
            out[f"h.{l}.mlp.router.weight"] = value(mlp.gate.weight)
            out[f"h.{l}.mlp.experts.gate_up.weight"] = gu.reshape(gu.shape[0] * gu.shape[1], gu.shape[2])
            out[f"h.{l}.mlp.experts.down.weight"] = dn.reshape(dn.shape[0] * dn.shape[1], dn.shape[2])
            if "shared_ffn" in case:
                se = mlp.shared_expert
                out[f"h.{l}.mlp.shared.gate_up.weight"] = cat(se.gate_proj.weight, se.up_proj.weight)
                out[f"h.{l}.mlp.shared.down.weight"] = value(se.down_proj.weight)
                out[f"h.{l}.mlp.shared_gate.weight"] = value(mlp.shared_expert_gate.weight)
        else:
            out[f"h.{l}.mlp.gate_up.weight"] = cat(mlp.gate_proj.weight, mlp.up_proj.weight)
            out[f"h.{l}.mlp.down.weight"] = value(mlp.down_proj.weight)
    out["normf.weight"] = value(m.norm.weight)
    if not case["tied"]:
        out["lm_head.weight"] = value(model.lm_head.weight)
    # Every parameter of the HF model appears exactly once.
    assert sum(t.numel() for t in out.values()) == sum(p.numel() for p in model.parameters())
    return {k: v.detach().cpu().numpy() for k, v in out.items()}


def expected_shapes(case):
    C, V, F_, L = case["width"], case["vocab"], case["ffn"], case["layers"]
    hs = head_size(case)
    qkv = (case["heads"] + 2 * case["kv_heads"]) * hs
    s = {"wte": (V, C), "normf.weight": (C,)}
    for l in range(L):
        s[f"h.{l}.norm1.weight"] = (C,)
        s[f"h.{l}.attn.qkv.weight"] = (qkv, C)
        if case["bias"]:
            s[f"h.{l}.attn.qkv.bias"] = (qkv,)
        if qk_norm_scope(case) == "head":
            s[f"h.{l}.attn.q_norm.weight"] = (hs,)
            s[f"h.{l}.attn.k_norm.weight"] = (hs,)
        elif qk_norm_scope(case) == "all":
            s[f"h.{l}.attn.q_norm.weight"] = (case["heads"] * hs,)
            s[f"h.{l}.attn.k_norm.weight"] = (case["kv_heads"] * hs,)
        s[f"h.{l}.attn.proj.weight"] = (C, case["heads"] * hs)
        if oss(case):
            s[f"h.{l}.attn.proj.bias"] = (C,)
            s[f"h.{l}.attn.sinks"] = (case["heads"],)
        s[f"h.{l}.norm2.weight"] = (C,)
        if norm_position(case) == "both":
            s[f"h.{l}.post_norm1.weight"] = (C,)
            s[f"h.{l}.post_norm2.weight"] = (C,)
        if "experts" in case:
            E = case["experts"]
            s[f"h.{l}.mlp.router.weight"] = (E, C)
            s[f"h.{l}.mlp.experts.gate_up.weight"] = (E * 2 * F_, C)
            s[f"h.{l}.mlp.experts.down.weight"] = (E * C, F_)
            if oss(case):
                s[f"h.{l}.mlp.router.bias"] = (E,)
                s[f"h.{l}.mlp.experts.gate_up.bias"] = (E * 2 * F_,)
                s[f"h.{l}.mlp.experts.down.bias"] = (E * C,)
            if "shared_ffn" in case:
                S = case["shared_ffn"]
                s[f"h.{l}.mlp.shared.gate_up.weight"] = (2 * S, C)
                s[f"h.{l}.mlp.shared.down.weight"] = (C, S)
                s[f"h.{l}.mlp.shared_gate.weight"] = (1, C)
        else:
            s[f"h.{l}.mlp.gate_up.weight"] = (2 * F_, C)
            s[f"h.{l}.mlp.down.weight"] = (C, F_)
    if not case["tied"]:
        s["lm_head.weight"] = (V, C)
    return s


def make_case(case, outdir, verbose=True):
    name = case["name"]
    model = hf_model(case)
    set_weights(model, case["seed"], norm_offset=gemma(case))
    g = torch.Generator().manual_seed(case["seed"] + 1)
    tokens = torch.randint(0, case["vocab"], (B, case["context"] + 1), generator=g)
    packed = "docs" in case

    # RoPE frequencies: ours (float64) against transformers' (computed in float32). With layer
    # types (OLMo 3, Gemma 3) one set per type: the full layers' scaled (OLMo 3: YaRN, cos and sin
    # scaled too; Gemma 3: linear, inverse frequencies divided by the factor), the sliding layers'
    # plain (Gemma 3's at their own base); patch_float64 then takes the dict `rope`. gpt-oss: one
    # YaRN for every layer, cos and sin scaled; patch_float64 takes the tuple `rope`.
    inv_freq, bands = inv_freq_reference(case)
    rot = model.model.rotary_emb
    if rope_by_type(case):
        plain_inv, _ = inv_freq_reference(case, plain=True)
        full_scaling = yarn_attention_factor(case) if "yarn" in case else 1.0
        rope = {"full_attention": (inv_freq, full_scaling), "sliding_attention": (plain_inv, 1.0)}
        for t, (inv, scaling) in rope.items():
            rel = np.max(np.abs(getattr(rot, f"{t}_inv_freq").double().numpy() - inv) / inv)
            assert rel < 1e-6, f"{name}: {t} RoPE inverse frequencies differ from transformers' by {rel:.2e}"
            assert abs(getattr(rot, f"{t}_attention_scaling") - scaling) <= 1e-15, (t, scaling)
        assert not np.array_equal(inv_freq, plain_inv)
        if "yarn" in case:
            assert rope["full_attention"][1] > 1.0
        if "linear" in case:    # the full layers: theta's frequencies / factor; the sliding: sliding_theta's
            assert rot.rope_type == {"full_attention": "linear", "sliding_attention": "default"}, rot.rope_type
            assert np.allclose(inv_freq * case["linear"]["factor"], inv_freq_reference(case, plain=True, theta=case["theta"])[0],
                               rtol=1e-15, atol=0)
    else:
        hf_inv = rot.inv_freq.double().numpy()
        rel = np.max(np.abs(hf_inv - inv_freq) / inv_freq)
        assert rel < 1e-6, f"{name}: RoPE inverse frequencies differ from transformers' by {rel:.2e}"
        rope = inv_freq
        if oss(case):
            scaling = yarn_attention_factor(case)
            assert scaling > 1.0 and abs(rot.attention_scaling - scaling) <= 1e-15, (rot.attention_scaling, scaling)
            rope = (inv_freq, scaling)
    if "llama3" in case:
        assert {"kept", "smoothed", "scaled"} <= set(bands), f"{name}: RoPE bands {bands}"
    if "yarn" in case:
        assert {"kept", "blended", "scaled"} <= set(bands), f"{name}: RoPE bands {bands}"

    # Stock transformers: the cross-check of the loss against its own loss function, and the
    # reference for what the float64 patches change.
    moe = "experts" in case
    effects, clamp = {}, None
    if moe:
        assert not packed
        with capture_routing(model) as s_route:
            s_logits, s_loss, s_grads, s_aux = run_moe(model, case, tokens)
        # transformers' own loss: the mean over the B T targets (shift_labels: the targets as they
        # are), plus router_aux_loss_coef times the load-balancing loss of these inputs' routing.
        with torch.no_grad():
            hf_out = model(input_ids=tokens[:, :-1], labels=tokens[:, :-1], shift_labels=tokens[:, 1:].contiguous(),
                           output_router_logits=case["aux"] > 0)
            hf_mean = hf_out.loss.item()
        with patch_float64(model, rope), capture_routing(model) as route:
            logits, loss, grads, aux = run_moe(model, case, tokens)
        assert abs(hf_mean * B - loss) <= 1e-6 * abs(loss), (hf_mean * B, loss)
        min_gap, expert_tokens = check_routing(case, route.calls, s_route.calls)
        if oss(case):
            clamp = check_clamp(model, case, tokens, rope)
            effects = check_gpt_oss(model, case, tokens, rope, logits)
        aux_share = None
        if case["aux"] > 0:
            # What the load-balancing loss adds to the router's gradients (relative to the largest):
            # far above the test's tolerance, so a model that leaves it out fails.
            assert abs(hf_out.aux_loss.item() - aux) <= 1e-6 * aux, (hf_out.aux_loss.item(), aux)
            with patch_float64(model, rope):
                _, _, plain_grads, _ = run_moe(model, dict(case, aux=0.0), tokens)
            routers = [layer.mlp.gate.weight for layer in model.model.layers]
            aux_share = min(((grads[p] - plain_grads[p]).abs().max() / grads[p].abs().max()).item() for p in routers)
            assert aux_share > 1e-2, aux_share
    elif not packed:
        s_logits, s_loss, s_grads = run(model, tokens)
        with torch.no_grad():
            hf_mean = model(input_ids=tokens, labels=tokens).loss.item()    # mean over B*T targets
        with patch_float64(model, rope):
            logits, loss, grads = run(model, tokens)
        assert abs(hf_mean * B - loss) <= 1e-6 * abs(loss), (hf_mean * B, loss)
        if rope_by_type(case):
            effects = check_layer_types(model, case, tokens, rope, logits)
    else:
        positions, shift_labels, loss_mask = packed_rows(case, tokens)
        s_logits, s_loss, s_grads = run_packed(model, tokens, positions, shift_labels)
        s_alone, s_leak = check_packing(model, case, tokens, positions, s_logits)
        with patch_float64(model, rope):
            logits, loss, grads = run_packed(model, tokens, positions, shift_labels)
            alone, leak = check_packing(model, case, tokens, positions, logits)
        # The documents are masked from each other, in stock transformers and with the float64
        # patches alike (so the patched eager attention applies the mask it is given).
        assert alone < 1e-12 and s_alone < 1e-5, (name, alone, s_alone)
        assert leak > 1e-2 and s_leak > 1e-2, (name, leak, s_leak)
        # transformers' causal-LM loss with num_items_in_batch = T is accel's convention (it takes
        # the cross-entropy in float32, hence the tolerance).
        with torch.no_grad():
            hf_loss = model.loss_function(logits=logits, labels=None, vocab_size=case["vocab"],
                                          num_items_in_batch=case["context"], shift_labels=shift_labels).item()
        assert abs(hf_loss - loss) <= 1e-6 * abs(loss), (hf_loss, loss)
    stock_logits = (s_logits - logits).abs().max().item()
    stock_aux = abs(s_aux - aux) if moe and case["aux"] > 0 else None
    stock_grads = max(((s_grads[p] - grads[p]).abs().max() / grads[p].abs().max()).item()
                      for p in model.parameters())
    assert stock_logits < 1e-5 and stock_grads < 1e-4, (stock_logits, stock_grads)

    params = accel_tensors(model, case, lambda p: p.detach())
    gradients = accel_tensors(model, case, lambda p: grads[p])
    shapes = expected_shapes(case)
    assert set(params) == set(shapes), set(params) ^ set(shapes)
    for k, v in params.items():
        assert v.shape == shapes[k], (k, v.shape, shapes[k])
        assert np.array_equal(v.astype(np.float32).astype(np.float64), v), k   # exact in float32

    os.makedirs(outdir, exist_ok=True)
    path = os.path.join(outdir, name + ".h5")
    tmp = path + ".tmp"
    with h5py.File(tmp, "w", libver=("v110", "v110")) as f:
        attrs = {
            "config": accel_config(case),
            "case": name,
            "hf_class": type(model).__name__,
            "generator": "tests/llama_reference.py (tests/make_llama_fixtures.sh)",
            "torch_version": torch.__version__,
            "transformers_version": transformers.__version__,
            "h5py_version": h5py.__version__,
            "numpy_version": np.__version__,
            "python_version": platform.python_version(),
            "loss_convention": "sum over sequences of the mean over positions of cross-entropy" if not packed else
                               "sum over sequences of (sum over trained targets of cross-entropy) / T",
            "precision": "float64 reference (RMSNorm, softmax, RoPE in float64); stored float32"
                         + ("; embeddings times sqrt(width) rounded to float32" if gemma(case) else "") if not moe else
                         "float64 reference (RMSNorm, softmax, RoPE, router softmax, load-balancing loss in float64); "
                         "stored float32",
        }
        if oss(case):
            attrs["precision"] = ("float64 reference (RMSNorm, RoPE in float64; attention with sinks, router and "
                                  "experts in the model's float64); stored float32")
        if moe:
            attrs["experts_implementation"] = model.config._experts_implementation
            if case["aux"] > 0:
                attrs["loss_convention"] = ("sum over sequences of the mean over positions of cross-entropy, "
                                            "plus B * router_aux_loss_coef * load-balancing loss of the batch")
        for k, v in attrs.items():
            f.attrs[k] = np.bytes_(v.encode("ascii"))
        f.attrs["seed"] = np.int64(case["seed"])
        f.attrs["stock_logits_max_abs_diff"] = np.float64(stock_logits)
        f.attrs["stock_grads_max_rel_diff"] = np.float64(stock_grads)
        f.attrs["rope_inv_freq"] = inv_freq
        if gemma(case):
            f.attrs["embed_scale"] = np.float64(embed_scale(case))
        if rope_by_type(case):
            f.attrs["rope_attention_factor"] = np.float64(rope["full_attention"][1])
            f.attrs["rope_inv_freq_sliding"] = rope["sliding_attention"][0]
        elif oss(case):
            f.attrs["rope_attention_factor"] = np.float64(rope[1])
        if "window" in case:
            f.attrs["layer_types"] = np.bytes_(" ".join(layer_type(case, l) for l in range(case["layers"])).encode("ascii"))
        for k, v in effects.items():
            f.attrs[k] = np.float64(v)
        if clamp:
            for k, v in clamp.items():
                f.attrs[k] = np.float64(v)
        if moe:
            f.attrs["router_min_topk_gap"] = np.float64(min_gap)
            f.attrs["router_tokens_per_expert"] = expert_tokens.astype(np.int64)
            if case["aux"] > 0:
                f.attrs["router_aux_loss_coef"] = np.float64(case["aux"])
                f.attrs["load_balancing_loss"] = np.float64(aux)
                f.attrs["stock_load_balancing_loss_abs_diff"] = np.float64(stock_aux)
                f.attrs["router_grads_aux_rel_share"] = np.float64(aux_share)
        if bands:
            f.attrs["rope_bands"] = np.bytes_(" ".join(bands).encode("ascii"))
        if packed:
            f.attrs["documents"] = np.bytes_(" | ".join(" ".join(map(str, r)) for r in case["docs"]).encode("ascii"))
            f.attrs["packed_doc_alone_max_abs_diff"] = np.float64(alone)
            f.attrs["packed_unmasked_min_max_abs_diff"] = np.float64(leak)
        f.create_dataset("tokens", data=tokens.numpy().astype("<i4"))
        f.create_dataset("logits", data=logits.numpy().astype("<f4"), **PACK)
        f.create_dataset("loss", data=np.float64(loss))
        if packed:
            f.create_dataset("positions", data=positions.numpy().astype("<i4"))
            f.create_dataset("loss_mask", data=loss_mask.numpy().astype("u1"))
        gp, gg = f.create_group("params"), f.create_group("grads")
        for k in params:
            gp.create_dataset(k, data=params[k].astype("<f4"), **PACK)
            gg.create_dataset(k, data=gradients[k].astype("<f4"), **PACK)
    os.replace(tmp, path)

    if verbose:
        lg = logits.numpy()
        print(f"{name}: {type(model).__name__}, {sum(p.numel() for p in model.parameters())} parameters, "
              f"loss {loss:.6f} (ln V = {math.log(case['vocab']):.3f} per position), "
              f"logits std {lg.std():.3f} max {np.abs(lg).max():.3f}, {os.path.getsize(path)} bytes")
        if bands:
            print(f"  RoPE bands: {' '.join(bands)}"
                  + (f" (full-attention layers; cos and sin x {rope['full_attention'][1]:.6f})" if rope_by_type(case) else
                     f" (every layer; cos and sin x {rope[1]:.6f})" if oss(case) else ""))
        if "window" in case:
            print(f"  layer types: {' '.join(layer_type(case, l) for l in range(case['layers']))}, window {case['window']}; "
                  "the logits change by " + ", ".join(f"{v:.2e} {k[:-len('_logits_max_abs_diff')]}" for k, v in effects.items()))
        if clamp:
            print(f"  clamped SwiGLU (limit {case['swiglu_limit']:g}): {clamp['clamp_gate_share']:.3f} of the routed gate "
                  f"values above the limit, {clamp['clamp_up_share']:.3f} of the up values beyond +-limit; the nearest "
                  f"is {clamp['clamp_min_margin']:.2e} from its bound (>= {CLAMP_GAP:g})")
        print(f"  stock transformers vs float64: logits {stock_logits:.2e}, gradients {stock_grads:.2e} (relative)"
              + (f", load-balancing loss {stock_aux:.2e}" if stock_aux is not None else ""))
        if moe:
            print(f"  routing: top-{case['topk']} of {case['experts']} experts, tokens per expert (layer by layer) "
                  f"{expert_tokens.tolist()}, least gap between the {case['topk']}-th and {case['topk'] + 1}-th "
                  f"probability {min_gap:.2e} (>= {ROUTER_GAP:g}); stock transformers routes the same")
            if case["aux"] > 0:
                print(f"  load-balancing loss {aux:.6f} (x {case['aux']:g} x B = {B * case['aux'] * aux:.6f} of the loss); "
                      f"it changes the router gradients by >= {aux_share:.2e} of their largest")
        if packed:
            print(f"  documents {case['docs']}: packed logits vs each document alone {alone:.2e} "
                  f"(stock {s_alone:.2e}); without the mask they would differ by >= {leak:.2e}")
        small = sorted((np.abs(v).max(), k) for k, v in gradients.items())[:3]
        print("  smallest gradients (max |g|): " + ", ".join(f"{k} {m:.2e}" for m, k in small))
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "llama"),
                    help="output directory (default: tests/fixtures/llama next to this script)")
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, h5py {h5py.__version__}, "
          f"numpy {np.__version__}")
    names = [c["name"] for c in CASES]
    for n in args.case or []:
        if n not in names:
            ap.error(f"unknown case {n} (cases: {' '.join(names)})")
    for case in CASES:
        if args.case and case["name"] not in args.case:
            continue
        make_case(case, args.out)


if __name__ == "__main__":
    main()

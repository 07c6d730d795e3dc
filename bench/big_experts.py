"""A Hugging Face model whose one block's stacked experts hold more than 2^31 - 1 floats (2100
experts of 2048 x 2 x 256: 2.2e9, as DeepSeek-V3's 7.5e9 and Mistral Small 4's 2^31 do): GLM-4.5's
routing, the 4 real experts last (2096..2099, past element 2^31 of the stacked tensor), every other
one zero with a selection bias of -1e4 (never chosen), so that its logits are the 4-expert model's,
which transformers computes here (fp32, weights rounded to bf16 as the file holds them). Run by
bench/big_experts.sh (7 GB of disk, 20 GB of memory); not part of make check.

  bench/.venv/bin/python bench/big_experts.py OUT_DIR"""
import json, os, struct, sys
import numpy as np, torch, transformers as tf
out, E_BIG, V, T = sys.argv[1], 2100, 256, 16
torch.manual_seed(0)
cfg = tf.Glm4MoeConfig(vocab_size=V, hidden_size=2048, intermediate_size=512, moe_intermediate_size=256,
                       num_hidden_layers=1, first_k_dense_replace=0, num_attention_heads=16, num_key_value_heads=4,
                       head_dim=128, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, n_group=1,
                       topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0, use_qk_norm=False,
                       attention_bias=False, max_position_embeddings=T, tie_word_embeddings=False,
                       num_nextn_predict_layers=0)
m = tf.Glm4MoeForCausalLM(cfg).float().eval()
with torch.no_grad():
    for n, p in m.named_parameters():
        p.copy_((torch.randn_like(p) * (0.05 if p.dim() > 1 else 0.1) + (1.0 if "norm" in n else 0.0)).bfloat16().float())
    for n, b in m.named_buffers():
        if n.endswith("e_score_correction_bias"): b.copy_((torch.randn_like(b) * 0.1).bfloat16().float())
tokens = torch.tensor(np.random.default_rng(7).integers(0, V, size=T + 1))
with torch.no_grad():
    logits = m(tokens[None, :-1]).logits[0]
loss = torch.nn.functional.cross_entropy(logits, tokens[1:]).item()
os.makedirs(out, exist_ok=True)
logits.numpy().astype("<f4").tofile(f"{out}/ref_logits.f32")
open(f"{out}/tokens.bin", "wb").write(bytes(tokens.tolist()))
json.dump({"loss": loss, "context": T, "vocab": V, "architecture": "Glm4MoeForCausalLM"}, open(f"{out}/ref.json", "w"))
c = cfg.to_dict(); c["n_routed_experts"] = E_BIG; c["architectures"] = ["Glm4MoeForCausalLM"]
json.dump(c, open(f"{out}/config.json", "w"), indent=1)
sd = {k: v for k, v in m.state_dict().items()}
pad = E_BIG - 4
tensors = []      # (name, dtype, shape, writer)
def plain(k):
    v = sd[k]
    if v.dtype == torch.float32 and "e_score_correction_bias" not in k:
        return (k, "BF16", list(v.shape), lambda f, v=v: f.write(v.bfloat16().view(torch.int16).numpy().tobytes()))
    return (k, "F32", list(v.shape), lambda f, v=v: f.write(v.float().numpy().tobytes()))
for k in sd:
    if ".mlp.experts." in k:
        continue
    if k.endswith("mlp.gate.weight"):
        w = torch.cat([torch.zeros(pad, 2048), sd[k]]).bfloat16()
        tensors.append((k, "BF16", list(w.shape), lambda f, w=w: f.write(w.view(torch.int16).numpy().tobytes())))
    elif k.endswith("e_score_correction_bias"):
        b = torch.cat([torch.full((pad,), -1e4), sd[k]]).float()
        tensors.append((k, "F32", list(b.shape), lambda f, b=b: f.write(b.numpy().tobytes())))
    else:
        tensors.append(plain(k))
gu, dn = sd["model.layers.0.mlp.experts.gate_up_proj"], sd["model.layers.0.mlp.experts.down_proj"]
print("in-memory experts", gu.shape, dn.shape)
zero_gu, zero_dn = bytes(2 * 256 * 2048 * 2), bytes(2048 * 256 * 2)
for e in range(E_BIG):
    r = e - pad
    for part, shape in (("gate_proj", [256, 2048]), ("up_proj", [256, 2048]), ("down_proj", [2048, 256])):
        name = f"model.layers.0.mlp.experts.{e}.{part}.weight"
        if r < 0:
            z = zero_dn if part == "down_proj" else zero_gu[:256 * 2048 * 2]
            tensors.append((name, "BF16", shape, lambda f, z=z: f.write(z)))
        else:
            w = gu[r][:256] if part == "gate_proj" else gu[r][256:] if part == "up_proj" else dn[r]
            w = w.contiguous().bfloat16()
            assert list(w.shape) == shape, (name, w.shape)
            tensors.append((name, "BF16", shape, lambda f, w=w: f.write(w.view(torch.int16).numpy().tobytes())))
hdr, off = {}, 0
for name, dt, shape, _ in tensors:
    n = int(np.prod(shape)) * (2 if dt == "BF16" else 4)
    hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
    off += n
h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
with open(f"{out}/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h))); f.write(h)
    for t in tensors: t[3](f)
print("wrote", off / 1e9, "GB; loss", loss)

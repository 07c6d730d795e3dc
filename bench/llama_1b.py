"""The Llama of about a billion parameters the import benchmarks write (bench/int4_import.py,
bench/lora_merge.py): width 2048, MLP 5632, vocabulary 32000, 16 heads over 4 key/value heads."""
C, F, V, H, KV = 2048, 5632, 32000, 16, 4
HS = C // H

# Each block's linear layers: name -> (out, in).
SHAPES = {"self_attn.q_proj": (H * HS, C), "self_attn.k_proj": (KV * HS, C), "self_attn.v_proj": (KV * HS, C),
          "self_attn.o_proj": (C, H * HS), "mlp.gate_proj": (F, C), "mlp.up_proj": (F, C), "mlp.down_proj": (C, F)}


def config(layers):
    """config.json of the model with `layers` blocks (bf16, untied head)."""
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": C, "intermediate_size": F,
            "num_hidden_layers": layers, "num_attention_heads": H, "num_key_value_heads": KV,
            "max_position_embeddings": 2048, "vocab_size": V, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "bfloat16"}

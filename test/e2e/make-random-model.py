#!/usr/bin/env python3
"""Writes a small random bf16 Qwen3 checkpoint with a given vocabulary size
(standard library only), so the text features of solc/solrun can be tested
with a real tokenizer on the CPU: hidden 16, 1 layer, 2 heads, 1 KV head
(or KV_HEADS, the optional third argument: 2 for full multi-head attention).
With --moe the MLP is a Qwen3-MoE mixture of 4 experts (top 2); with
--qwen2-moe a Qwen2-MoE one (q/k/v biases, no q/k norms) with a shared
expert beside it, scaled by its sigmoid gate.

  make-random-model.py OUT VOCAB [KV_HEADS] [--moe | --qwen2-moe]"""
import json
import random
import struct
import sys
from pathlib import Path

qwen2 = "--qwen2-moe" in sys.argv
moe = "--moe" in sys.argv or qwen2
args = [a for a in sys.argv[1:] if a not in ("--moe", "--qwen2-moe")]
out, vocab = Path(args[0]), int(args[1])
H, I, NH, HD, E = 16, 32, 2, 8, 4
KV = int(args[2]) if len(args) > 2 else 1
out.mkdir(parents=True, exist_ok=True)
config = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": H,
          "intermediate_size": I, "num_hidden_layers": 1, "num_attention_heads": NH,
          "num_key_value_heads": KV, "head_dim": HD, "vocab_size": vocab,
          "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
          "tie_word_embeddings": True, "hidden_act": "silu", "torch_dtype": "bfloat16"}
if moe:
    config.update({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
                   "num_experts": E, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
                   "norm_topk_prob": True})
if qwen2:
    config.update({"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe",
                   "shared_expert_intermediate_size": 8, "norm_topk_prob": False,
                   "decoder_sparse_step": 1, "mlp_only_layers": []})
(out / "config.json").write_text(json.dumps(config))
shapes = {"model.embed_tokens.weight": [vocab, H], "model.norm.weight": [H]}
p = "model.layers.0."
shapes.update({p + "input_layernorm.weight": [H], p + "post_attention_layernorm.weight": [H],
               p + "self_attn.q_proj.weight": [NH * HD, H], p + "self_attn.k_proj.weight": [KV * HD, H],
               p + "self_attn.v_proj.weight": [KV * HD, H], p + "self_attn.o_proj.weight": [H, NH * HD],
               })
if qwen2:
    shapes.update({p + "self_attn.q_proj.bias": [NH * HD], p + "self_attn.k_proj.bias": [KV * HD],
                   p + "self_attn.v_proj.bias": [KV * HD],
                   p + "mlp.shared_expert.gate_proj.weight": [8, H],
                   p + "mlp.shared_expert.up_proj.weight": [8, H],
                   p + "mlp.shared_expert.down_proj.weight": [H, 8],
                   p + "mlp.shared_expert_gate.weight": [1, H]})
else:
    shapes.update({p + "self_attn.q_norm.weight": [HD], p + "self_attn.k_norm.weight": [HD]})
if moe:
    shapes[p + "mlp.gate.weight"] = [E, H]
    for e in range(E):
        x = f"{p}mlp.experts.{e}."
        shapes.update({x + "gate_proj.weight": [8, H], x + "up_proj.weight": [8, H],
                       x + "down_proj.weight": [H, 8]})
else:
    shapes.update({p + "mlp.gate_proj.weight": [I, H], p + "mlp.up_proj.weight": [I, H],
                   p + "mlp.down_proj.weight": [H, I]})
rng = random.Random(0)
header, chunks, offset = {}, [], 0
for name, shape in shapes.items():
    n = 1
    for d in shape:
        n *= d
    norm = name.endswith("norm.weight")
    # bf16 = the upper half of a float32
    raw = b"".join(struct.pack("<f", (1.0 if norm else 0.0) + rng.gauss(0, 0.1 if norm else 0.5))[2:]
                   for _ in range(n))
    header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
    chunks.append(raw)
    offset += len(raw)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
with open(out / "model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    for c in chunks:
        f.write(c)

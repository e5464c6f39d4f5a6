#!/usr/bin/env python3
"""Writes the tiny test models under test/models/ and their Transformers goldens.

For each architecture Sol imports (Llama, Qwen2, Qwen3, Mistral, Phi-3, Gemma 2,
Gemma 3, Qwen3-MoE, Mixtral) this builds a
small model with seeded random weights, saves it as a bf16 safetensors
checkpoint, then loads that checkpoint back in float32 on the CPU with eager
attention and records what Transformers computes from it:

  <out>/<arch>/config.json, generation_config.json, model.safetensors
  <out>/<arch>/golden.json               input ids, 32 greedy ids, eos, notes
  <out>/<arch>/golden_logits.safetensors "logits": float32 [24, vocab],
                                         teacher-forced over the input ids
  <out>/README.md                        how they were made, per-model facts

The script checks what the goldens rely on and stops with a message if a check
fails: the reloaded weights equal the bf16-rounded ones, the cached generate()
matches a cache-free greedy loop, sdpa agrees with eager, the RoPE scaling
changed the frequencies it should, and the sliding window limits attention
(Mistral, Phi-3: the receptive field is 2*(window-1)+1 tokens over two layers;
Gemma: a model without the window computes the same logits before the window
fills and different ones after).

Needs torch, transformers >= 5, safetensors and numpy. CPU only.

  python3 scripts/make-test-models.py --out test/models --tar /tmp/models.tar
"""

import argparse
import json
import math
import platform
import shutil
import sys
import tarfile
import time
from pathlib import Path

NUM_INPUT_IDS = 24
NUM_GREEDY_IDS = 32
MIN_DISTINCT_GREEDY = 16  # try another seed when the greedy chain has fewer distinct ids
MAX_SEED_TRIES = 6
SIZE_BUDGET_BYTES = 4_500_000  # the models this script writes must stay below this


def log(msg):
    print(f"[make-test-models] {msg}", flush=True)


def fail(msg):
    print(f"[make-test-models] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


try:
    import numpy  # noqa: F401  (transformers needs it; fail here with a clear message)
    import safetensors
    import safetensors.torch
    import torch
    import transformers
    from transformers import (
        GenerationConfig,
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
        Qwen3Config,
        Qwen3ForCausalLM,
        Phi3Config,
        Phi3ForCausalLM,
        Gemma2Config,
        Gemma2ForCausalLM,
        Gemma3ForCausalLM,
        Gemma3TextConfig,
        MixtralConfig,
        MixtralForCausalLM,
        Qwen3MoeConfig,
        Qwen3MoeForCausalLM,
        Qwen2MoeConfig,
        Qwen2MoeForCausalLM,
        GptOssConfig,
        GptOssForCausalLM,
    )
except ImportError as e:  # pragma: no cover - environment problem
    fail(f"missing Python package ({e}); needs torch, transformers>=5, safetensors, numpy")


# ---------------------------------------------------------------------------
# The models. Sizes are chosen so that all four checkpoints plus goldens stay
# under SIZE_BUDGET_BYTES while still exercising every feature Sol imports.
# ---------------------------------------------------------------------------

def llama_spec():
    return dict(
        name="llama",
        config_cls=LlamaConfig,
        model_cls=LlamaForCausalLM,
        kwargs=dict(
            vocab_size=2048,
            hidden_size=128,
            intermediate_size=256,
            num_hidden_layers=2,
            num_attention_heads=8,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            # llama3 scaling with original 64: wavelengths of head_dim 16 at
            # theta 1e4 span 6..19869 tokens, so the three regimes (kept,
            # smoothed, divided by factor) all occur.
            rope_parameters=dict(
                rope_type="llama3",
                rope_theta=10000.0,
                factor=8.0,
                low_freq_factor=1.0,
                high_freq_factor=4.0,
                original_max_position_embeddings=64,
            ),
            tie_word_embeddings=True,
            attention_bias=True,
            mlp_bias=True,
            hidden_act="silu",
        ),
        features="tied embeddings, GQA 8q/2kv, head_dim 16, llama3 RoPE scaling "
        "(factor 8, low 1, high 4, original 64), bias on q/k/v/o and gate/up/down",
    )


def qwen2_spec(rope_linear=True):
    rope = dict(rope_type="default", rope_theta=1000000.0)
    if rope_linear:
        rope = dict(rope_type="linear", rope_theta=1000000.0, factor=2.0)
    return dict(
        name="qwen2",
        config_cls=Qwen2Config,
        model_cls=Qwen2ForCausalLM,
        kwargs=dict(
            vocab_size=1000,  # not a power of two: catches tail handling in the LM head
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=rope,
            tie_word_embeddings=False,
            use_sliding_window=False,
            hidden_act="silu",
        ),
        features="untied LM head, vocab 1000, bias on q/k/v (none on o), GQA 4q/2kv, "
        + ("RoPE theta 1e6 with linear scaling factor 2" if rope_linear else "RoPE theta 1e6, no scaling"),
    )


def qwen3_spec():
    return dict(
        name="qwen3",
        config_cls=Qwen3Config,
        model_cls=Qwen3ForCausalLM,
        kwargs=dict(
            vocab_size=1024,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,  # heads * head_dim = 128 != hidden 64
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
            tie_word_embeddings=True,
            attention_bias=False,
            use_sliding_window=False,
            hidden_act="silu",
        ),
        features="per-head q_norm/k_norm, head_dim 32 set explicitly (4 heads x 32 = 128 != hidden 64), "
        "tied embeddings, GQA 4q/2kv, RoPE theta 1e6",
    )


def qwen3_moe_spec():
    return dict(
        name="qwen3-moe",
        config_cls=Qwen3MoeConfig,
        model_cls=Qwen3MoeForCausalLM,
        # qwen3's attention; three layers, the last one dense.
        kwargs=dict(
            qwen3_spec()["kwargs"],
            intermediate_size=96,  # the dense MLP of mlp_only_layers
            moe_intermediate_size=32,
            num_experts=8,
            num_experts_per_tok=2,
            norm_topk_prob=True,
            decoder_sparse_step=1,
            mlp_only_layers=[2],
            num_hidden_layers=3,
            tie_word_embeddings=False,
        ),
        features="mixture of experts: 8 experts, top-2 with norm_topk_prob, moe_intermediate_size 32; "
        "layer 2 dense (mlp_only_layers); q_norm/k_norm, GQA 4q/2kv",
    )


def mixtral_spec():
    return dict(
        name="mixtral",
        config_cls=MixtralConfig,
        model_cls=MixtralForCausalLM,
        kwargs=dict(
            vocab_size=1024,
            hidden_size=64,
            intermediate_size=48,
            num_local_experts=4,
            num_experts_per_tok=2,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
            sliding_window=None,
            tie_word_embeddings=False,
            hidden_act="silu",
        ),
        features="mixture of experts: 4 experts, top-2 (block_sparse_moe), GQA 4q/2kv, no window",
    )


def qwen2_moe_spec():
    return dict(
        name="qwen2-moe",
        config_cls=Qwen2MoeConfig,
        model_cls=Qwen2MoeForCausalLM,
        kwargs=dict(
            vocab_size=1024,
            hidden_size=64,
            intermediate_size=64,  # the dense MLP of mlp_only_layers
            moe_intermediate_size=32,
            shared_expert_intermediate_size=48,
            num_experts=4,
            num_experts_per_tok=2,
            norm_topk_prob=False,
            decoder_sparse_step=1,
            mlp_only_layers=[1],
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            use_sliding_window=True,
            sliding_window=8,
            max_window_layers=1,
            tie_word_embeddings=False,
            hidden_act="silu",
        ),
        features="mixture of experts: 4 experts, top-2 without renormalisation, a shared expert "
        "(width 48) scaled by sigmoid(shared_expert_gate); layer 1 dense (mlp_only_layers); "
        "q/k/v biases; sliding_window 8 in layer 0; GQA 4q/2kv",
    )


def gpt_oss_spec():
    return dict(
        name="gpt-oss",
        config_cls=GptOssConfig,
        model_cls=GptOssForCausalLM,
        kwargs=dict(
            vocab_size=1024,
            hidden_size=64,
            intermediate_size=32,
            num_local_experts=4,
            num_experts_per_tok=2,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            sliding_window=8,
            layer_types=["sliding_attention", "full_attention"],
            rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=4.0,
                                 beta_fast=32.0, beta_slow=1.0, truncate=False,
                                 original_max_position_embeddings=64),
            attention_bias=True,
            swiglu_limit=7.0,
            tie_word_embeddings=False,
            hidden_act="silu",
        ),
        features="mixture of experts: 4 experts, top-2 softmax over the top logits, router and "
        "expert biases, clamped SwiGLU (limit 7), gate_up_proj [E, H, 2I] interleaved; attention "
        "sinks, biases on q/k/v/o, sliding_window 8 in layer 0, yarn (factor 4, truncate false); "
        "GQA 4q/2kv",
    )


def mistral_spec():
    return dict(
        name="mistral",
        config_cls=MistralConfig,
        model_cls=MistralForCausalLM,
        kwargs=dict(
            vocab_size=1024,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=256,
            rms_norm_eps=1e-5,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            sliding_window=8,  # < 24 prompt ids: the window matters in prefill and decode
            tie_word_embeddings=False,
            hidden_act="silu",
        ),
        features="sliding_window 8 in every layer (a query at position i attends to keys "
        "i-7..i), untied LM head, GQA 4q/2kv, no biases",
    )


PHI3_ROTARY_PAIRS = 12  # head_dim 32 x partial_rotary_factor 0.75 = 24 dims


def phi3_spec():
    short = [1.0 + 0.05 * i for i in range(PHI3_ROTARY_PAIRS)]
    long = [1.0 + 0.6 * i for i in range(PHI3_ROTARY_PAIRS)]
    return dict(
        name="phi3",
        config_cls=Phi3Config,
        model_cls=Phi3ForCausalLM,
        kwargs=dict(
            vocab_size=512,
            hidden_size=96,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=3,
            num_key_value_heads=1,
            max_position_embeddings=256,
            original_max_position_embeddings=64,
            partial_rotary_factor=0.75,
            rms_norm_eps=1e-5,
            rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                 short_factor=short, long_factor=long),
            sliding_window=12,
            tie_word_embeddings=False,
            hidden_act="silu",
        ),
        # The 24 + 32 tokens stay below original_max_position_embeddings (64):
        # past it Transformers' Phi-3 recomputes the whole cache with the long
        # factors, which Sol does not (it switches per position).
        features="fused qkv_proj and gate_up_proj, head_dim 32 with partial_rotary_factor 0.75 "
        "(24 rotated dims), longrope (12 short and long factors, original 64 of 256 positions, "
        "attention factor sqrt(1 + ln 4 / ln 64)), sliding_window 12, GQA 3q/1kv, untied LM head",
    )


def gemma2_spec():
    return dict(
        name="gemma2",
        config_cls=Gemma2Config,
        model_cls=Gemma2ForCausalLM,
        kwargs=dict(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            rope_parameters=dict(rope_type="default", rope_theta=10000.0),
            query_pre_attn_scalar=24,
            sliding_window=8,  # layer 0 slides, layer 1 attends to everything
            attn_logit_softcapping=5.0,  # small caps, so that they bite
            final_logit_softcapping=8.0,
            hidden_activation="gelu_pytorch_tanh",
            tie_word_embeddings=True,
        ),
        alternating_window=True,
        # sdpa cannot soft-cap attention scores.
        skip_sdpa="Gemma 2's attention-logit soft-capping runs in eager attention only",
        features="(1 + w) RMSNorms before and after attention and MLP, embeddings x sqrt(64), "
        "GeGLU (gelu_pytorch_tanh), head_dim 32, query_pre_attn_scalar 24, attention soft-cap 5, "
        "final soft-cap 8, sliding_window 8 in layer 0 only, GQA 4q/2kv, tied",
    )


def gemma3_spec():
    return dict(
        name="gemma3",
        config_cls=Gemma3TextConfig,
        model_cls=Gemma3ForCausalLM,
        kwargs=dict(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=3,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=32,
            max_position_embeddings=256,
            rms_norm_eps=1e-6,
            query_pre_attn_scalar=32,
            sliding_window=8,
            layer_types=["sliding_attention", "sliding_attention", "full_attention"],
            hidden_activation="gelu_pytorch_tanh",
            tie_word_embeddings=True,
        ),
        # Per layer type: set on the config after construction (set_gemma3_rope).
        rope_by_layer_type=dict(
            full_attention=dict(rope_type="linear", rope_theta=1000000.0, factor=4.0),
            sliding_attention=dict(rope_type="default", rope_theta=10000.0),
        ),
        alternating_window=True,
        features="q_norm/k_norm with (1 + w), sandwich norms, embeddings x sqrt(64), GeGLU, "
        "layer_types sliding/sliding/full with window 8, local rope theta 1e4 and global theta "
        "1e6 with linear factor 4, head_dim 32, GQA 4q/2kv, tied",
    )


def set_gemma3_rope(config, by_type):
    """Gives each layer type its rope, in whichever form this transformers keeps it."""
    rp = getattr(config, "rope_parameters", None)
    if isinstance(rp, dict) and "full_attention" in rp:
        config.rope_parameters = {k: dict(v) for k, v in by_type.items()}
    else:  # transformers 4's fields
        full = by_type["full_attention"]
        config.rope_theta = full["rope_theta"]
        config.rope_scaling = {k: v for k, v in full.items() if k != "rope_theta"}
        config.rope_local_base_freq = by_type["sliding_attention"]["rope_theta"]


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------

def randomize_weights(model, seed):
    """Overwrites every parameter from a seeded generator.

    Transformers' default init (norms = 1, biases = 0) would hide a missing norm
    weight or bias in Sol, so norms get 1 + 0.1*randn and biases 0.1*randn.
    Matrices get std 1/sqrt(fan_in), so every sublayer's output is as large as
    its input and the context (not the current token's own embedding, nor the
    biases) decides the next token: the greedy chain then varies instead of
    repeating one token. q/k projections get 1.5/sqrt(fan_in) so attention is
    far from uniform and RoPE, masks and the sliding window change the output.
    """
    gen = torch.Generator().manual_seed(seed)
    counts = {"norm": 0, "bias": 0, "qk": 0, "other": 0}
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied weights appear once
            shape = tuple(p.shape)
            noise = torch.randn(shape, generator=gen, dtype=torch.float32)
            if name.endswith("norm.weight"):
                value = 1.0 + 0.1 * noise
                counts["norm"] += 1
            elif name.endswith((".bias", "_bias")):
                value = 0.1 * noise
                counts["bias"] += 1
            elif name.endswith(".sinks"):
                # gpt-oss's per-head sink logits: as large as the scores.
                value = noise
                counts["other"] += 1
            elif p.dim() == 3:
                # Stacked expert weights (transformers 5): [experts, out, in],
                # or gpt-oss's [experts, in, out].
                transposed = getattr(model.get_submodule(name.rsplit(".", 1)[0]),
                                     "experts_are_transposed", False)
                fan_in = shape[1] if transposed else shape[2]
                value = (1.0 / math.sqrt(fan_in)) * noise
                counts["other"] += 1
            elif p.dim() == 2:
                # Linear weights are [out, in]; embeddings [vocab, hidden] (hidden is what
                # the tied LM head contracts over).
                fan_in = shape[1]
                gain = 1.5 if name.endswith(("q_proj.weight", "k_proj.weight",
                                             "qkv_proj.weight")) else 1.0
                value = (gain / math.sqrt(fan_in)) * noise
                counts["qk" if gain != 1.0 else "other"] += 1
            else:
                fail(f"unexpected parameter {name} of shape {shape}: update randomize_weights")
            p.copy_(value.to(p.dtype))
    return counts


def read_safetensors_names(directory):
    names = {}
    for f in sorted(Path(directory).glob("*.safetensors")):
        with open(f, "rb") as fh:
            header_len = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(header_len))
        for k, v in header.items():
            if k != "__metadata__":
                names[k] = (v["dtype"], v["shape"], f.name)
    return names


def rewrite_json(path, updates):
    data = json.loads(Path(path).read_text())
    data.update(updates)
    Path(path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


# ---------------------------------------------------------------------------
# Checks and goldens
# ---------------------------------------------------------------------------

def load_fp32(spec, directory, attn):
    model = spec["model_cls"].from_pretrained(directory, dtype=torch.float32, attn_implementation=attn)
    model.eval()
    impl = getattr(model.config, "_attn_implementation", None)
    if impl is None:
        log(f"  note: cannot read config._attn_implementation; trusting attn_implementation={attn!r}")
    elif impl != attn:
        fail(f"{spec['name']}: asked for attn_implementation={attn!r}, model uses {impl!r}")
    p = next(model.parameters())
    if p.dtype != torch.float32 or p.device.type != "cpu":
        fail(f"{spec['name']}: reloaded model is {p.dtype} on {p.device}, expected float32 on cpu")
    return model


def greedy_without_cache(model, input_ids, steps):
    """The reference greedy chain: a full forward per step, no KV cache."""
    ids = input_ids.clone()
    margins = []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(input_ids=ids[None], use_cache=False).logits[0, -1]
            top2 = torch.topk(logits, 2)
            margins.append(float(top2.values[0] - top2.values[1]))
            ids = torch.cat([ids, logits.argmax().reshape(1)])
    return ids[input_ids.numel():].tolist(), margins


def generate_ids(model, input_ids, steps, eos):
    with torch.no_grad():
        out = model.generate(
            input_ids=input_ids[None],
            attention_mask=torch.ones_like(input_ids[None]),
            max_new_tokens=steps,
            min_new_tokens=steps,
            do_sample=False,
            eos_token_id=eos,
            pad_token_id=eos,
        )
    if hasattr(out, "sequences"):
        out = out.sequences
    return out[0, input_ids.numel():].tolist()


def default_inv_freq(theta, head_dim):
    return 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))


def model_inv_freq(model):
    rotary = getattr(model.model, "rotary_emb", None)
    if rotary is None or not hasattr(rotary, "inv_freq"):
        fail(f"{type(model).__name__}: cannot find model.model.rotary_emb.inv_freq to check RoPE scaling")
    return rotary.inv_freq.detach().float().cpu()


def rotary_inv_freqs(model):
    """Every inv_freq-like buffer of the model's rotary embeddings, by name."""
    found = {}
    for mod_name, mod in model.named_modules():
        if "rotary" not in mod_name:
            continue
        for buf_name, buf in mod.named_buffers(recurse=False):
            if "inv_freq" in buf_name and "original" not in buf_name:
                found[f"{mod_name}.{buf_name}"] = buf.detach().float().cpu()
    return found


def check_rope_special(spec, model, notes):
    """longrope (Phi-3) and per-layer-type ropes (Gemma 3)."""
    kw = spec["kwargs"]
    head_dim = kw.get("head_dim") or kw["hidden_size"] // kw["num_attention_heads"]
    found = rotary_inv_freqs(model)
    log(f"  rotary buffers: {sorted(found)}")
    if spec["name"] == "phi3":
        rope = kw["rope_parameters"]
        dim = int(head_dim * kw["partial_rotary_factor"])
        short = torch.tensor(rope["short_factor"], dtype=torch.float32)
        expected = 1.0 / (short * rope["rope_theta"] ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        # The buffer in use switches to the long factors once a forward pass went past
        # original_max_position_embeddings; the original copy keeps the short ones.
        got = model.model.rotary_emb.original_inv_freq.detach().float().cpu()
        if got.shape != expected.shape or not torch.allclose(got, expected, rtol=1e-6, atol=0):
            fail(f"phi3: longrope inv_freq {got.tolist()} is not 1 / (short_factor * theta^(2i/{dim})) "
                 f"= {expected.tolist()}")
        notes.append(f"longrope: inv_freq up to position {kw['original_max_position_embeddings']} is "
                     f"1 / (short_factor[i] * theta^(2i/{dim})) over the {dim} rotated dims")
        return got.tolist()
    expected = {}
    for layer_type, rope in spec["rope_by_layer_type"].items():
        f = default_inv_freq(rope["rope_theta"], head_dim)
        if rope["rope_type"] == "linear":
            f = f / rope["factor"]
        expected[layer_type] = f
    for layer_type, f in expected.items():
        if not any(v.shape == f.shape and torch.allclose(v, f, rtol=1e-6, atol=0) for v in found.values()):
            fail(f"{spec['name']}: no rotary buffer holds the {layer_type} frequencies {f.tolist()} "
                 f"(buffers: { {k: v.tolist() for k, v in found.items()} })")
    notes.append("per-layer-type RoPE verified: sliding layers theta 1e4, full layers theta 1e6 / 4 "
                 "(linear)")
    return {k: v.tolist() for k, v in expected.items()}


def check_window_by_override(spec, directory, ref, input_ids, window, notes):
    """The same weights without a window: equal logits before the window fills, different after."""
    wide = spec["model_cls"].from_pretrained(directory, dtype=torch.float32,
                                             attn_implementation="eager", sliding_window=4096)
    wide.eval()
    with torch.no_grad():
        a = ref(input_ids=input_ids[None], use_cache=False).logits[0]
        b = wide(input_ids=input_ids[None], use_cache=False).logits[0]
    diff = (a - b).abs().amax(dim=-1)
    if bool((diff[:window] > 1e-5).any()):
        fail(f"{spec['name']}: logits before position {window} change without the window: {diff.tolist()}")
    if not bool((diff[window:] > 1e-4).any()):
        fail(f"{spec['name']}: the sliding window changes no logits: {diff.tolist()}")
    notes.append(f"sliding window verified: without it the logits at positions 0..{window - 1} are the "
                 f"same and later ones differ (up to {float(diff.max()):.3g})")


def check_rope(spec, model, notes):
    kw = spec["kwargs"]
    if spec["name"] in ("phi3", "gemma3"):
        return check_rope_special(spec, model, notes)
    rope = kw["rope_parameters"]
    head_dim = kw.get("head_dim") or kw["hidden_size"] // kw["num_attention_heads"]
    base = default_inv_freq(rope["rope_theta"], head_dim)
    got = model_inv_freq(model)
    if got.shape != base.shape:
        fail(f"{spec['name']}: inv_freq has shape {tuple(got.shape)}, expected {tuple(base.shape)}")
    rtype = rope["rope_type"]
    same = torch.isclose(got, base, rtol=1e-6, atol=0)
    if rtype == "default":
        if not bool(same.all()):
            fail(f"{spec['name']}: default RoPE but inv_freq differs from theta^(-2i/d)")
    elif rtype == "linear":
        if not torch.allclose(got, base / rope["factor"], rtol=1e-6, atol=0):
            fail(f"{spec['name']}: linear RoPE factor {rope['factor']} not applied to inv_freq")
    elif rtype == "llama3":
        divided = torch.isclose(got, base / rope["factor"], rtol=1e-6, atol=0)
        smoothed = ~same & ~divided
        if not (bool(same.any()) and bool(divided.any()) and bool(smoothed.any())):
            fail(f"{spec['name']}: llama3 RoPE should keep, smooth and divide some frequencies each; "
                 f"kept={same.tolist()} divided={divided.tolist()}")
        notes.append(f"llama3 RoPE: of {got.numel()} frequencies {int(same.sum())} kept, "
                     f"{int(smoothed.sum())} smoothed, {int(divided.sum())} divided by {rope['factor']}")
    log(f"  rope {rtype}: inv_freq = {[float(f'{x:.6g}') for x in got.tolist()]}")
    return got.tolist()


def check_sliding_window(model, input_ids, window, layers, notes):
    """Changing token 0 must change exactly the logits at positions < 2*(window-1)+1 (2 layers)."""
    reach = layers * (window - 1)  # last position that token 0 can still influence
    changed = input_ids.clone()
    changed[0] = (changed[0] + 1) % model.config.vocab_size
    with torch.no_grad():
        a = model(input_ids=input_ids[None], use_cache=False).logits[0]
        b = model(input_ids=changed[None], use_cache=False).logits[0]
    diff = (a - b).abs().amax(dim=-1)
    if not bool(diff[reach] > 0):
        fail(f"sliding window: position {reach} should still depend on token 0 (window {window}, "
             f"{layers} layers), diff {float(diff[reach])}")
    if bool((diff[reach + 1:] > 1e-6).any()):
        fail(f"sliding window: positions > {reach} depend on token 0; the window is not applied "
             f"(diffs {diff.tolist()})")
    notes.append(f"sliding window verified: with window {window} and {layers} layers token 0 influences "
                 f"positions 0..{reach} only (HF masks key j for query i unless i-{window} < j <= i)")


def save_random_model(spec, out, seed, bos, eos):
    """Builds the model with seeded random weights, saves it in bf16 to `out`, and
    reloads it in float32 (eager), checking the reloaded weights are exactly the bf16 ones."""
    name = spec["name"]
    kw = spec["kwargs"]
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    torch.manual_seed(seed)
    config = spec["config_cls"](bos_token_id=bos, eos_token_id=eos, pad_token_id=None, **kw)
    if "rope_by_layer_type" in spec:
        set_gemma3_rope(config, spec["rope_by_layer_type"])
    model = spec["model_cls"](config)
    model.eval()
    counts = randomize_weights(model, seed)
    log(f"{name}: seed {seed}, {sum(p.numel() for p in model.parameters())} parameters "
        f"(randomized: {counts['norm']} norm weights, {counts['bias']} biases, "
        f"{counts['qk']} q/k projections, {counts['other']} other matrices)")
    model = model.to(torch.bfloat16)
    model.generation_config = GenerationConfig(bos_token_id=bos, eos_token_id=eos, do_sample=False)
    model.save_pretrained(out)  # transformers 5 always writes safetensors
    if not (out / "model.safetensors").exists():
        fail(f"{name}: save_pretrained wrote no model.safetensors in {out} (files: "
             f"{sorted(p.name for p in out.iterdir())})")
    if not (out / "generation_config.json").exists():
        model.generation_config.save_pretrained(out)
    tensors = read_safetensors_names(out)
    bad = {k: v[0] for k, v in tensors.items() if v[0] != "BF16"}
    if bad:
        fail(f"{name}: tensors not saved as BF16: {bad}")
    has_lm_head = "lm_head.weight" in tensors
    if kw["tie_word_embeddings"] == has_lm_head:
        fail(f"{name}: tie_word_embeddings={kw['tie_word_embeddings']} but lm_head.weight "
             f"{'is' if has_lm_head else 'is not'} in the checkpoint")
    bf16_state = {k: v.detach().float().clone() for k, v in model.state_dict().items()}
    del model

    ref = load_fp32(spec, out, "eager")
    for k, v in ref.state_dict().items():
        if k not in bf16_state:
            continue  # non-persistent buffers
        if not torch.equal(v, bf16_state[k]):
            fail(f"{name}: reloaded tensor {k} differs from the saved bf16 weights")
    missing = [k for k in bf16_state if k not in ref.state_dict()]
    if missing:
        fail(f"{name}: tensors missing after reload: {missing}")
    return ref, tensors


def make_one(spec, out_root, base_seed, hf_versions):
    name = spec["name"]
    out = out_root / name
    t0 = time.time()
    kw = spec["kwargs"]
    vocab = kw["vocab_size"]
    bos = 1
    eos = vocab - 1  # placeholder; replaced below if the greedy chain produces it
    notes = []

    # 1-2. Random model, saved and reloaded. A seed whose greedy chain collapses onto a few
    # repeated tokens tests decoding weakly, so a few seeds are tried (deterministically).
    gen = torch.Generator().manual_seed(base_seed + 1000)
    input_ids = torch.randint(0, vocab, (NUM_INPUT_IDS,), generator=gen, dtype=torch.int64)
    best = None
    for attempt in range(MAX_SEED_TRIES + 1):
        seed = base_seed + 100_000 * attempt if attempt < MAX_SEED_TRIES else best[1]
        ref, tensors = save_random_model(spec, out, seed, bos, eos)
        greedy, margins = greedy_without_cache(ref, input_ids, NUM_GREEDY_IDS)
        distinct = len(set(greedy))
        if distinct >= MIN_DISTINCT_GREEDY or attempt == MAX_SEED_TRIES:
            break
        if best is None or distinct > best[0]:
            best = (distinct, seed)
        if attempt + 1 < MAX_SEED_TRIES:
            log(f"{name}: seed {seed} gives {distinct} distinct greedy ids (< {MIN_DISTINCT_GREEDY}); "
                f"trying another seed")
        else:
            log(f"{name}: no seed reached {MIN_DISTINCT_GREEDY} distinct greedy ids; using seed "
                f"{best[1]} ({best[0]} distinct)")
    seed_tries = attempt + 1

    # 3. Pick an eos id that never occurs in the greedy chain (computed without cache).
    used = set(greedy) | set(input_ids.tolist()) | {bos}
    if eos in used:
        eos = next(i for i in range(vocab - 1, -1, -1) if i not in used)
        log(f"{name}: placeholder eos occurs in the greedy chain, using eos {eos}")
        rewrite_json(out / "config.json", {"eos_token_id": eos})
        rewrite_json(out / "generation_config.json", {"eos_token_id": eos})
        ref = load_fp32(spec, out, "eager")
    for path in ("config.json", "generation_config.json"):
        saved = json.loads((out / path).read_text()).get("eos_token_id")
        if saved != eos:
            fail(f"{name}: {path} has eos_token_id {saved!r}, expected {eos}")

    # 4. Goldens: teacher-forced logits and generate().
    with torch.no_grad():
        logits = ref(input_ids=input_ids[None], use_cache=False).logits[0].float().contiguous()
    if tuple(logits.shape) != (NUM_INPUT_IDS, vocab):
        fail(f"{name}: logits shape {tuple(logits.shape)}, expected {(NUM_INPUT_IDS, vocab)}")
    if not bool(torch.isfinite(logits).all()):
        fail(f"{name}: logits contain inf/nan")
    generated = generate_ids(ref, input_ids, NUM_GREEDY_IDS, eos)
    if generated != greedy:
        fail(f"{name}: generate() with KV cache gives {generated}, the cache-free greedy loop gives "
             f"{greedy}")
    if eos in generated:
        fail(f"{name}: eos {eos} occurs in the greedy ids")
    distinct = len(set(greedy))
    if distinct < 8:
        log(f"WARNING: {name}: only {distinct} distinct ids in the greedy chain; it tests decoding weakly")
    top2 = torch.topk(logits, 2, dim=-1).values
    logit_margins = (top2[:, 0] - top2[:, 1]).tolist()

    # 5. Cross-checks: sdpa agrees with eager; RoPE scaling; sliding window.
    sdpa_diff = None
    if spec.get("skip_sdpa"):
        notes.append(f"sdpa not compared: {spec['skip_sdpa']}")
    else:
        sdpa = load_fp32(spec, out, "sdpa")
        with torch.no_grad():
            sdpa_logits = sdpa(input_ids=input_ids[None], use_cache=False).logits[0].float()
        sdpa_diff = float((sdpa_logits - logits).abs().max())
        log(f"{name}: max |sdpa - eager| logits = {sdpa_diff:.3g}")
        if sdpa_diff > 1e-4:
            fail(f"{name}: sdpa and eager disagree by {sdpa_diff} (> 1e-4)")
        del sdpa
    inv_freq = check_rope(spec, ref, notes)
    if spec.get("alternating_window"):
        check_window_by_override(spec, out, ref, input_ids, kw["sliding_window"], notes)
    elif kw.get("sliding_window"):
        check_sliding_window(ref, input_ids, kw["sliding_window"], kw["num_hidden_layers"], notes)

    # 6. Write goldens.
    safetensors.torch.save_file({"logits": logits}, str(out / "golden_logits.safetensors"),
                                metadata={"format": "pt", "what": "teacher-forced logits of golden.json input_ids"})
    config_json = json.loads((out / "config.json").read_text())
    golden = {
        "architecture": spec["model_cls"].__name__,
        "model_type": config_json.get("model_type"),
        "features": spec["features"],
        "input_ids": input_ids.tolist(),
        "greedy_ids": greedy,
        "num_greedy_ids": NUM_GREEDY_IDS,
        "distinct_greedy_ids": len(set(greedy)),
        "eos_token_id": eos,
        "bos_token_id": bos,
        "bos_prepended": False,
        "logits_file": "golden_logits.safetensors",
        "logits_shape": [NUM_INPUT_IDS, vocab],
        "min_top2_margin_logits": min(logit_margins),
        "min_top2_margin_greedy": min(margins),
        "rope_inv_freq": inv_freq,
        "max_abs_diff_sdpa_vs_eager": sdpa_diff,
        "seed": seed,
        "seeds_tried": seed_tries,
        "compute": "float32 on CPU, attn_implementation=eager, weights = the bf16 checkpoint "
                   "upcast to float32",
        "notes": [
            "Goldens are float32 compute on bf16-rounded weights; a bf16-compute run of the same "
            "checkpoint gives different logits and may give a different greedy continuation.",
            "greedy_ids are the 32 tokens after input_ids (no bos prepended); they equal both "
            "generate(do_sample=False) and a cache-free argmax loop (first index wins ties); "
            "eos_token_id never occurs in them, so a run to 32 tokens never stops early.",
            "logits[i] are the next-token logits after input_ids[0..i] (one forward pass).",
        ] + notes,
        "versions": hf_versions,
    }
    (out / "golden.json").write_text(json.dumps(golden, indent=2) + "\n")
    log(f"{name}: greedy ids {greedy}")
    log(f"{name}: eos {eos}, min top-2 margin logits {min(logit_margins):.4g}, greedy {min(margins):.4g}; "
        f"{time.time() - t0:.1f}s")
    return dict(name=name, golden=golden, tensors=tensors, config=config_json, dir=out)


def dir_bytes(path):
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def write_readme(out_root, results, versions, rope_note):
    rows = []
    for r in results:
        cfg = r["config"]
        n_params = sum(math.prod(v[1]) for v in r["tensors"].values())
        rows.append(
            f"| `{r['name']}/` | {r['golden']['architecture']} | {cfg.get('vocab_size')} | "
            f"{cfg.get('hidden_size')} | {cfg.get('intermediate_size')} | {cfg.get('num_hidden_layers')} | "
            f"{cfg.get('num_attention_heads')}/{cfg.get('num_key_value_heads')} | "
            f"{cfg.get('head_dim') or cfg['hidden_size'] // cfg['num_attention_heads']} | "
            f"{n_params} | {r['golden']['eos_token_id']} | {r['golden']['features']} |")
    checks = []
    for r in results:
        for n in r["golden"]["notes"][3:]:
            checks.append(f"- `{r['name']}`: {n}")
    text = f"""# Tiny test models and their Transformers goldens

Made by `scripts/make-test-models.py` (do not edit by hand; run it again instead):

    python3 scripts/make-test-models.py --out test/models

with {versions['transformers_line']} on the CPU. Each folder is a Hugging Face checkpoint
(`config.json` as transformers 5 writes it, i.e. with `rope_parameters` and `dtype`,
`generation_config.json`, `model.safetensors` in bf16) plus goldens:

- `golden.json`: `input_ids` (24 ids drawn with a fixed seed, no bos prepended), `greedy_ids`
  (the next 32 ids under greedy decoding), `eos_token_id` (chosen so that it never occurs in the
  greedy ids: a run of 32 tokens never stops early), `architecture`, `notes`, and checks.
- `golden_logits.safetensors`: one float32 tensor `logits` of shape [24, vocab]; row i holds the
  next-token logits after `input_ids[0..i]` (teacher-forced, one forward pass).

**Goldens are float32 compute on bf16-rounded weights**: the saved bf16 checkpoint is loaded
again with `dtype=torch.float32` and `attn_implementation="eager"` on the CPU. A bf16-compute run of
the same weights gives slightly different logits and may pick a different greedy token where the
top-2 margin is small; `min_top2_margin_*` in `golden.json` says how small it gets. The CPU
reference executor (float32) should match the logits to about 1e-4 relative; the CUDA executor
(bf16) needs a looser tolerance.

| folder | class | vocab | hidden | intermediate | layers | heads q/kv | head_dim | parameters | eos | what it exercises |
|---|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Weights: every parameter is drawn from a seeded generator: matrices (embeddings and LM head
included) N(0, 1/fan_in), except q_proj/k_proj N(0, 2.25/fan_in) (so attention is far from uniform
and RoPE, masks and the sliding window change the output); every norm weight 1 + 0.1·N(0,1) and
every bias 0.1·N(0,1), so that a missing norm weight or bias shows up in the logits (the default
init, norms 1 and biases 0, would hide it). With Transformers' std 0.02 the residual stream of
these tiny models is dominated by the current token and the biases, and the greedy chain
repeats one token; with unit-gain matrices the context decides. The script tries up to
{MAX_SEED_TRIES} seeds per model (deterministically) until the 32 greedy ids hold at least
{MIN_DISTINCT_GREEDY} distinct ids; `seed` and `distinct_greedy_ids` in `golden.json` record the result.

{rope_note}

Checks the script made before writing the goldens (it stops otherwise):
- the reloaded float32 weights equal the bf16 ones bit for bit, and tied models have no
  `lm_head.weight` in the checkpoint while untied ones do;
- `generate()` (KV cache) returns the same 32 ids as a cache-free argmax loop;
- sdpa and eager attention agree (max |difference| of logits ≤ 1e-4);
- the RoPE inverse frequencies are the expected ones for each scaling type;
{chr(10).join(checks)}

Total size: {versions['total_bytes']} bytes (budget {SIZE_BUDGET_BYTES}).
"""
    (out_root / "README.md").write_text(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="test/models", help="output directory (default test/models)")
    ap.add_argument("--tar", help="also pack the output directory into this tar file")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--only", nargs="*",
                    choices=["llama", "qwen2", "qwen3", "mistral", "phi3", "gemma2", "gemma3",
                             "qwen3-moe", "mixtral", "qwen2-moe", "gpt-oss"],
                    help="make only these models (default: all)")
    args = ap.parse_args()

    major = int(transformers.__version__.split(".")[0])
    if major < 5:
        fail(f"needs transformers >= 5 (rope_parameters, dtype=); found {transformers.__version__}")
    versions = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "safetensors": safetensors.__version__,
        "python": platform.python_version(),
    }
    versions_line = (f"transformers {versions['transformers']}, torch {versions['torch']}, "
                     f"safetensors {versions['safetensors']}, Python {versions['python']}")
    log(versions_line)
    torch.set_num_threads(max(1, min(8, torch.get_num_threads())))

    out_root = Path(args.out)
    out_root.mkdir(parents=True, exist_ok=True)

    # Qwen2 with linear RoPE scaling if Qwen2Config accepts it, else without.
    rope_note = "Qwen2 uses linear RoPE scaling (factor 2) on theta 1e6: Qwen2Config accepted it."
    qwen2 = qwen2_spec(rope_linear=True)
    try:
        cfg = Qwen2Config(**qwen2["kwargs"])
        if cfg.rope_parameters.get("rope_type") != "linear":
            raise ValueError(f"rope_parameters became {cfg.rope_parameters}")
    except Exception as e:  # noqa: BLE001 - any refusal means "not supported"
        log(f"Qwen2Config refused linear RoPE scaling ({e}); qwen2 is made without scaling")
        rope_note = f"Qwen2 has no RoPE scaling: Qwen2Config refused linear scaling ({e})."
        qwen2 = qwen2_spec(rope_linear=False)

    specs = [llama_spec(), qwen2, qwen3_spec(), mistral_spec(), phi3_spec(), gemma2_spec(),
             gemma3_spec(), qwen3_moe_spec(), mixtral_spec(), qwen2_moe_spec(), gpt_oss_spec()]
    results = []
    for i, spec in enumerate(specs):  # a model's seed depends on its place in the full list
        if args.only and spec["name"] not in args.only:
            # Kept as it is: its README row comes from the files already there.
            d = out_root / spec["name"]
            if (d / "golden.json").exists():
                results.append(dict(name=spec["name"], dir=d,
                                    golden=json.loads((d / "golden.json").read_text()),
                                    config=json.loads((d / "config.json").read_text()),
                                    tensors=read_safetensors_names(d)))
            continue
        log(f"--- {spec['name']} ({spec['model_cls'].__name__})")
        results.append(make_one(spec, out_root, args.seed + 17 * i, versions))

    versions["transformers_line"] = versions_line
    # The models this script writes (test/models/onnx has its own script).
    def total_bytes():
        return (out_root / "README.md").stat().st_size + sum(dir_bytes(r["dir"]) for r in results)
    versions["total_bytes"] = 0
    write_readme(out_root, results, versions, rope_note)
    versions["total_bytes"] = total_bytes()
    write_readme(out_root, results, versions, rope_note)
    total = total_bytes()
    for r in results:
        log(f"{r['name']}: {dir_bytes(r['dir'])} bytes")
    log(f"total {total} bytes in {out_root}")
    if total > SIZE_BUDGET_BYTES:
        log(f"WARNING: {total} bytes exceeds the {SIZE_BUDGET_BYTES}-byte budget for test/models/")

    if args.tar:
        with tarfile.open(args.tar, "w") as tar:
            for f in sorted(out_root.rglob("*")):
                if f.is_file():
                    tar.add(f, arcname=str(f.relative_to(out_root)))
        log(f"packed into {args.tar} (extract with: tar -xf {args.tar} -C test/models)")
    log("done")


if __name__ == "__main__":
    main()

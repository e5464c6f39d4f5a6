#!/usr/bin/env python3
"""Writes a full-size random-weight bf16 checkpoint with the real config of a model.

The weights are random (nothing is downloaded), but config.json is the one the
real model publishes, in the Hugging Face Hub format (`rope_theta`,
`rope_scaling`, `torch_dtype`), so solc sees exactly the shapes, RoPE scaling,
tying and token ids of the real model. Use it to compare Sol with Transformers
on real shapes and to benchmark decode speed.

  python3 scripts/make-shape-model.py --shape llama-3.2-1b --out /tmp/llama-3.2-1b

With --config-only, only config.json and generation_config.json are written
(no torch needed), for `solc --load-format dummy`, which compiles a shape
without weights (the runtime fills them at random).

Shapes: llama-3.2-1b, llama-3.1-8b, llama-3.1-70b, qwen2.5-1.5b, qwen2.5-7b, phi-3.5-mini,
phi-4-mini, gemma-2-9b, gemma-3-4b (the text model). The model is built on the GPU in bf16 (no float32 copy), re-initialised from a seeded
generator (matrices N(0, 0.02^2), norm weights 1 + 0.05*N(0,1) (Gemma's,
which are used as 1 + w, 0.05*N(0,1)), biases 0.02*N(0,1)), checked with one forward pass (finite, non-constant logits) and
saved as safetensors shards of at most 5 GB (plus model.safetensors.index.json
when there is more than one shard) with generation_config.json. A tokenizer is
copied in when one is found (--tokenizer-dir, or third_party/tokenizers/, which
scripts/fetch-test-data fills).

Needs torch with CUDA, transformers >= 5, safetensors.
"""

import argparse
import json
import shutil
import sys
import time
from pathlib import Path


def log(msg):
    print(f"[make-shape-model] {msg}", flush=True)


def fail(msg):
    print(f"[make-shape-model] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


# The published config.json and generation_config.json of each base model.
LLAMA_3_2_1B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 8192,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 16,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 32.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}

LLAMA_3_1_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 8.0,
        "high_freq_factor": 4.0,
        "low_freq_factor": 1.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}

# Llama-3.1-70B: 141 GB of bf16, more than one H200 holds (solc
# --tensor-parallel-size 2); --config-only writes its config for solc
# --load-format dummy.
LLAMA_3_1_70B = dict(LLAMA_3_1_8B, hidden_size=8192, intermediate_size=28672,
                     num_attention_heads=64, num_hidden_layers=80,
                     num_key_value_heads=8)

# Mixtures of experts (config only: --config-only, for solc --load-format
# dummy; their parameter counts are not checked by expected_parameters).
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "decoder_sparse_step": 1,
    "eos_token_id": 151645,
    "head_dim": 128,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 6144,
    "max_position_embeddings": 40960,
    "max_window_layers": 48,
    "mlp_only_layers": [],
    "model_type": "qwen3_moe",
    "moe_intermediate_size": 768,
    "norm_topk_prob": True,
    "num_attention_heads": 32,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 48,
    "num_key_value_heads": 4,
    "output_router_logits": False,
    "rms_norm_eps": 1e-06,
    "rope_scaling": None,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.001,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}

# openai/gpt-oss-20b's, its experts MXFP4 as in the published checkpoint.
GPT_OSS_20B = {
    "architectures": ["GptOssForCausalLM"],
    "attention_bias": True,
    "attention_dropout": 0.0,
    "eos_token_id": 200002,
    "head_dim": 64,
    "hidden_act": "silu",
    "hidden_size": 2880,
    "initializer_range": 0.02,
    "intermediate_size": 2880,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "max_position_embeddings": 131072,
    "model_type": "gpt_oss",
    "num_attention_heads": 64,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 8,
    "num_local_experts": 32,
    "output_router_logits": False,
    "pad_token_id": 199999,
    "quantization_config": {"modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
        "lm_head"], "quant_method": "mxfp4"},
    "rms_norm_eps": 1e-05,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                     "original_max_position_embeddings": 4096, "rope_type": "yarn",
                     "truncate": False},
    "rope_theta": 150000,
    "router_aux_loss_coef": 0.9,
    "sliding_window": 128,
    "swiglu_limit": 7.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 201088,
}

# Qwen/Qwen1.5-MoE-A2.7B's.
QWEN1_5_MOE_A2_7B = {
    "architectures": ["Qwen2MoeForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "decoder_sparse_step": 1,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "initializer_range": 0.02,
    "intermediate_size": 5632,
    "max_position_embeddings": 8192,
    "max_window_layers": 21,
    "model_type": "qwen2_moe",
    "moe_intermediate_size": 1408,
    "norm_topk_prob": False,
    "num_attention_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "output_router_logits": False,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.001,
    "shared_expert_intermediate_size": 5632,
    "sliding_window": 32768,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}

MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1000000.0,
    "router_aux_loss_coef": 0.02,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 32000,
}

QWEN2_5_1_5B = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 1536,
    "initializer_range": 0.02,
    "intermediate_size": 8960,
    "max_position_embeddings": 131072,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 12,
    "num_hidden_layers": 28,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1",
    "use_cache": True,
    "use_mrope": False,
    "use_sliding_window": False,
    "vocab_size": 151936,
}

# Qwen2.5-7B and larger pad the vocabulary to 152064 (the 0.5B-3B models use 151936).
QWEN2_5_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 151643,
    "eos_token_id": 151643,
    "hidden_act": "silu",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.1",
    "use_cache": True,
    "use_mrope": False,
    "use_sliding_window": False,
    "vocab_size": 152064,
}

# Phi-3.5-mini's shape and rope settings; its 48 short and long longrope
# factors are not at hand, so these rise smoothly over the same ranges (1 to
# about 3, and 1 to about 60); they change the frequencies, not the cost.
PHI_3_5_MINI = {
    "architectures": ["Phi3ForCausalLM"],
    "attention_dropout": 0.0,
    "bos_token_id": 1,
    "embd_pdrop": 0.0,
    "eos_token_id": 32000,
    "hidden_act": "silu",
    "hidden_size": 3072,
    "initializer_range": 0.02,
    "intermediate_size": 8192,
    "max_position_embeddings": 131072,
    "model_type": "phi3",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 32,
    "original_max_position_embeddings": 4096,
    "pad_token_id": 32000,
    "resid_pdrop": 0.0,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "long_factor": [round(1.0 + 59.0 * (i / 47) ** 3, 4) for i in range(48)],
        "short_factor": [round(1.0 + 2.0 * (i / 47) ** 2, 4) for i in range(48)],
        "type": "longrope",
    },
    "rope_theta": 10000.0,
    "sliding_window": 262144,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 32064,
}

# Phi-4-mini's shape: GQA, head dim 128 with rope on 3/4 of each head
# (partial_rotary_factor 0.75, so 48 longrope factors), tied embeddings and a
# 200,064-row vocabulary. Its factors are synthesized as Phi-3.5-mini's are.
PHI_4_MINI = dict(
    PHI_3_5_MINI,
    bos_token_id=199999,
    eos_token_id=199999,
    num_attention_heads=24,
    num_key_value_heads=8,
    pad_token_id=199999,
    partial_rotary_factor=0.75,
    tie_word_embeddings=True,
    vocab_size=200064,
)

GEMMA_2_9B = {
    "architectures": ["Gemma2ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_logit_softcapping": 50.0,
    "bos_token_id": 2,
    "cache_implementation": "hybrid",
    "eos_token_id": 1,
    "final_logit_softcapping": 30.0,
    "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 3584,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "gemma2",
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "pad_token_id": 0,
    "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 256000,
}

# The text model of Gemma-3-4B (its text_config, as Gemma3ForCausalLM reads it).
GEMMA_3_4B = {
    "architectures": ["Gemma3ForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "attn_logit_softcapping": None,
    "bos_token_id": 2,
    "eos_token_id": [1, 106],
    "final_logit_softcapping": None,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 2560,
    "initializer_range": 0.02,
    "intermediate_size": 10240,
    "max_position_embeddings": 131072,
    "model_type": "gemma3_text",
    "num_attention_heads": 8,
    "num_hidden_layers": 34,
    "num_key_value_heads": 4,
    "pad_token_id": 0,
    "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06,
    "rope_local_base_freq": 10000.0,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "rope_theta": 1000000.0,
    "sliding_window": 1024,
    "sliding_window_pattern": 6,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
    "use_cache": True,
    "vocab_size": 262208,
}

PHI_GENERATION = {"bos_token_id": 1, "eos_token_id": [32007, 32001, 32000], "pad_token_id": 32000}
PHI_4_GENERATION = {"bos_token_id": 199999, "eos_token_id": [200020, 199999], "pad_token_id": 199999}
GEMMA_GENERATION = {"bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0}

LLAMA_GENERATION = {"bos_token_id": 128000, "do_sample": True, "eos_token_id": 128001,
                    "temperature": 0.6, "top_p": 0.9}
QWEN_GENERATION = {"bos_token_id": 151643, "do_sample": False, "eos_token_id": 151643,
                   "max_new_tokens": 2048}

SHAPES = {
    # name: (config, generation config, tokenizer folder under third_party/tokenizers,
    #        parameter count)
    "llama-3.2-1b": (LLAMA_3_2_1B, LLAMA_GENERATION, "llama3.1", 1_235_814_400),
    "llama-3.1-8b": (LLAMA_3_1_8B, LLAMA_GENERATION, "llama3.1", 8_030_261_248),
    "llama-3.1-70b": (LLAMA_3_1_70B, LLAMA_GENERATION, "llama3.1", 70_553_706_496),
    "qwen3-30b-a3b": (QWEN3_30B_A3B, QWEN_GENERATION, "qwen3", None),
    "mixtral-8x7b": (MIXTRAL_8X7B, {"bos_token_id": 1, "eos_token_id": 2}, None, None),
    "gpt-oss-20b": (GPT_OSS_20B, {"eos_token_id": [200002, 199999]}, None, None),
    "qwen1.5-moe-a2.7b": (QWEN1_5_MOE_A2_7B, QWEN_GENERATION, "qwen3", None),
    "qwen2.5-1.5b": (QWEN2_5_1_5B, QWEN_GENERATION, "qwen3", 1_543_714_304),
    "qwen2.5-7b": (QWEN2_5_7B, QWEN_GENERATION, "qwen3", 7_615_616_512),
    # No tokenizer of these families is fetched (none).
    "phi-3.5-mini": (PHI_3_5_MINI, PHI_GENERATION, None, 3_821_079_552),
    "phi-4-mini": (PHI_4_MINI, PHI_4_GENERATION, None, 3_836_021_760),
    "gemma-2-9b": (GEMMA_2_9B, GEMMA_GENERATION, None, 9_241_705_984),
    "gemma-3-4b": (GEMMA_3_4B, GEMMA_GENERATION, None, 3_880_263_168),
}

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def expected_parameters(cfg):
    """Parameter count implied by a config.json (tied embeddings count once)."""
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", h // heads)
    qkv_bias = cfg["model_type"] == "qwen2" or cfg.get("attention_bias", False)
    attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    if qkv_bias:
        attn += heads * hd + 2 * kv * hd
    if cfg.get("attention_bias", False):
        attn += h  # o_proj bias
    mlp = 3 * h * inter
    gemma = cfg["model_type"] in ("gemma2", "gemma3_text")
    per_layer = attn + mlp + (4 if gemma else 2) * h  # Gemma: norms around both
    if cfg["model_type"] == "gemma3_text":
        per_layer += 2 * hd  # q_norm, k_norm
    embed = cfg["vocab_size"] * h
    return layers * per_layer + h + embed * (1 if cfg["tie_word_embeddings"] else 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", required=True, choices=sorted(SHAPES))
    ap.add_argument("--out", required=True, help="output model directory (replaced if it exists)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-shard-size", default="5GB")
    ap.add_argument("--embed-std", type=float, default=0.02,
                    help="std of the embedding (and a tied LM head); default 0.02")
    ap.add_argument("--residual-std", type=float, default=0.02,
                    help="std of o_proj and down_proj, the projections that write into the "
                         "residual stream; default 0.02")
    ap.add_argument("--tokenizer-dir",
                    help="folder with tokenizer.json/tokenizer_config.json to copy in (default: "
                         "third_party/tokenizers/<family> of the repository, if present)")
    ap.add_argument("--no-tokenizer", action="store_true", help="do not copy a tokenizer")
    ap.add_argument("--config-only", action="store_true",
                    help="write config.json and generation_config.json only (for solc "
                         "--load-format dummy)")
    args = ap.parse_args()

    if args.config_only:
        cfg, gen_cfg, _, param_count = SHAPES[args.shape]
        if param_count is not None and expected_parameters(cfg) != param_count:
            fail(f"internal: config of {args.shape} implies {expected_parameters(cfg)} "
                 f"parameters, the real model has {param_count}")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
        (out / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")
        log(f"wrote {out}/config.json (no weights)")
        return

    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as e:
        fail(f"missing Python package ({e}); needs torch, transformers>=5, safetensors")
    if not torch.cuda.is_available():
        fail("no CUDA device: this script builds the model on the GPU")
    log(f"transformers {transformers.__version__}, torch {torch.__version__}, "
        f"GPU {torch.cuda.get_device_name(0)}")

    cfg, gen_cfg, tokenizer_family, param_count = SHAPES[args.shape]
    if param_count is None:
        fail(f"{args.shape} is a mixture of experts: only --config-only writes it")
    if expected_parameters(cfg) != param_count:
        fail(f"internal: config of {args.shape} implies {expected_parameters(cfg)} parameters, "
             f"the real model has {param_count}")
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    t_start = time.time()

    # 1. Build on the GPU directly in bf16.
    config = AutoConfig.from_pretrained(out)
    torch.manual_seed(args.seed)
    previous_dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            try:
                model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
            except TypeError:
                model = AutoModelForCausalLM.from_config(config)
    finally:
        torch.set_default_dtype(previous_dtype)
    dtypes = {p.dtype for p in model.parameters()}
    devices = {p.device.type for p in model.parameters()}
    if dtypes != {torch.bfloat16} or devices != {"cuda"}:
        fail(f"model was built with dtypes {dtypes} on {devices}, expected bfloat16 on cuda")
    n_params = sum(p.numel() for p in model.parameters())
    if n_params != param_count:
        fail(f"{args.shape}: model has {n_params} parameters, the real model has {param_count}")
    torch.cuda.synchronize()
    t_build = time.time()
    log(f"built {type(model).__name__} with {n_params:,} parameters in {t_build - t_start:.1f}s")

    # 2. Seeded re-initialisation on the GPU, in place, in bf16.
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    gemma = cfg["model_type"] in ("gemma2", "gemma3_text")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                # Gemma's norms multiply by 1 + w: the same gains need w near 0.
                p.normal_(0.0 if gemma else 1.0, 0.05, generator=gen)
            elif name.endswith(".bias"):
                p.normal_(0.0, 0.02, generator=gen)
            elif name.endswith("embed_tokens.weight") or name.endswith("lm_head.weight"):
                p.normal_(0.0, args.embed_std, generator=gen)
            elif name.endswith("o_proj.weight") or name.endswith("down_proj.weight"):
                p.normal_(0.0, args.residual_std, generator=gen)
            elif p.dim() == 2:
                p.normal_(0.0, 0.02, generator=gen)
            else:
                fail(f"unexpected parameter {name} of shape {tuple(p.shape)}")
    torch.cuda.synchronize()
    t_init = time.time()
    log(f"initialised weights in {t_init - t_build:.1f}s")

    # 3. One forward pass: logits must be finite and depend on the input.
    model.eval()
    ids = torch.randint(0, cfg["vocab_size"], (1, 64), device="cuda",
                        generator=torch.Generator(device="cuda").manual_seed(args.seed + 1))
    with torch.no_grad():
        logits = model(input_ids=ids, use_cache=False).logits[0].float()
    if not bool(torch.isfinite(logits).all()):
        fail("logits contain inf/nan after initialisation")
    top2 = torch.topk(logits, 2, dim=-1).values
    margin = top2[:, 0] - top2[:, 1]
    distinct = int(logits.argmax(-1).unique().numel())
    log(f"bf16 logits over 64 random ids: std over vocab {float(logits.std(-1).mean()):.3f}, "
        f"top-2 margin median {float(margin.median()):.3f} min {float(margin.min()):.4f}, "
        f"{distinct} distinct argmax ids")
    if distinct < 2 or float(logits.std(-1).mean()) < 1e-3:
        fail("logits are degenerate (constant argmax or no spread) after initialisation")
    del logits
    torch.cuda.synchronize()
    t_check = time.time()

    # 4. Save (transformers 5 always writes safetensors), then restore the Hub-format configs.
    model.save_pretrained(out, max_shard_size=args.max_shard_size)
    t_save = time.time()
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps(gen_cfg, indent=2) + "\n")
    AutoConfig.from_pretrained(out)  # the rewritten config must still load

    shards = sorted(out.glob("*.safetensors"))
    if not shards:
        fail(f"save_pretrained wrote no .safetensors files in {out}")
    weight_bytes = sum(f.stat().st_size for f in shards)
    index = out / "model.safetensors.index.json"
    if len(shards) > 1 and not index.exists():
        fail(f"{len(shards)} shards but no {index.name}")
    log(f"saved {len(shards)} shard(s), {weight_bytes / 1e9:.2f} GB"
        f"{' + ' + index.name if index.exists() else ''} in {t_save - t_check:.1f}s")

    # 5. Tokenizer.
    if not args.no_tokenizer and tokenizer_family:
        tok_dir = Path(args.tokenizer_dir) if args.tokenizer_dir else (
            Path(__file__).resolve().parent.parent / "third_party" / "tokenizers" / tokenizer_family)
        copied = []
        if tok_dir.is_dir():
            for name in TOKENIZER_FILES:
                if (tok_dir / name).exists():
                    shutil.copy(tok_dir / name, out / name)
                    copied.append(name)
        if copied:
            log(f"copied {', '.join(copied)} from {tok_dir}")
        elif args.tokenizer_dir:
            fail(f"--tokenizer-dir {tok_dir} holds none of {TOKENIZER_FILES}")
        else:
            log(f"no tokenizer copied ({tok_dir} not found); pass --tokenizer-dir to add one")

    log(f"{args.shape} written to {out} in {time.time() - t_start:.1f}s total "
        f"(build {t_build - t_start:.1f}s, init {t_init - t_build:.1f}s, check {t_check - t_init:.1f}s, "
        f"save {t_save - t_check:.1f}s)")
    for f in sorted(out.iterdir()):
        log(f"  {f.name}  {f.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()

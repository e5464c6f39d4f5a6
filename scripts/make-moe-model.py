#!/usr/bin/env python3
"""Writes a random-weight mixture-of-experts checkpoint with a real model's
widths and fewer layers.

make-shape-model.py writes mixtures of experts as config.json only (for solc
--load-format dummy): the whole Qwen3-30B-A3B shape is 61 GB. What needs real
weights at those widths, AWQ calibration of the experts' inputs above all,
takes a few layers of it instead:

  python3 scripts/make-moe-model.py --shape qwen3-30b-a3b --layers 4 --out /tmp/moe4

The config is the published one (make-shape-model.py's) with
num_hidden_layers replaced; weights are written under the checkpoint's own
names (per-expert gate/up/down projections), matrices N(0, 0.02^2), norm
weights 1 + 0.05 N(0, 1), in bf16 safetensors shards of at most 4 GB. The
shape's tokenizer is copied in from third_party/tokenizers when it is there
(or --tokenizer-dir). Needs torch and safetensors (on the GPU when there is
one, else the CPU).
"""

import argparse
import importlib.util
import json
import shutil
import sys
from pathlib import Path


def log(msg):
    print(f"[make-moe-model] {msg}", flush=True)


def fail(msg):
    print(f"[make-moe-model] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def shapes_module():
    path = Path(__file__).resolve().parent / "make-shape-model.py"
    spec = importlib.util.spec_from_file_location("make_shape_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tensor_shapes(cfg):
    """Name -> shape of every weight of a Qwen3-MoE checkpoint."""
    h, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    heads, kv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    experts, width = cfg["num_experts"], cfg["moe_intermediate_size"]
    dense = set(cfg.get("mlp_only_layers") or [])
    step = cfg.get("decoder_sparse_step", 1)
    out = {"model.embed_tokens.weight": [cfg["vocab_size"], h], "model.norm.weight": [h]}
    if not cfg["tie_word_embeddings"]:
        out["lm_head.weight"] = [cfg["vocab_size"], h]
    for i in range(layers):
        p = f"model.layers.{i}."
        out.update({
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
            p + "self_attn.q_proj.weight": [heads * hd, h],
            p + "self_attn.k_proj.weight": [kv * hd, h],
            p + "self_attn.v_proj.weight": [kv * hd, h],
            p + "self_attn.o_proj.weight": [h, heads * hd],
            p + "self_attn.q_norm.weight": [hd], p + "self_attn.k_norm.weight": [hd]})
        if i in dense or (i + 1) % step != 0:
            inter = cfg["intermediate_size"]
            out.update({p + "mlp.gate_proj.weight": [inter, h], p + "mlp.up_proj.weight": [inter, h],
                        p + "mlp.down_proj.weight": [h, inter]})
            continue
        out[p + "mlp.gate.weight"] = [experts, h]
        for e in range(experts):
            x = f"{p}mlp.experts.{e}."
            out.update({x + "gate_proj.weight": [width, h], x + "up_proj.weight": [width, h],
                        x + "down_proj.weight": [h, width]})
    return out


def main():
    shapes = shapes_module()
    moe = {"qwen3-30b-a3b": (shapes.QWEN3_30B_A3B, shapes.QWEN_GENERATION, "qwen3")}
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", required=True, choices=sorted(moe))
    ap.add_argument("--layers", type=int, required=True, help="decoder layers to write (>= 1)")
    ap.add_argument("--out", required=True, help="output model directory (replaced if it exists)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer-dir", help="folder with tokenizer.json to copy in")
    args = ap.parse_args()
    base, generation, family = moe[args.shape]
    if args.layers < 1 or args.layers > base["num_hidden_layers"]:
        fail(f"--layers must be 1..{base['num_hidden_layers']}, not {args.layers}")
    try:
        import torch
        from safetensors.torch import save_file
    except ImportError as e:
        fail(f"missing Python package ({e}); needs torch and safetensors")

    cfg = dict(base, num_hidden_layers=args.layers)
    cfg["max_window_layers"] = min(cfg.get("max_window_layers", args.layers), args.layers)
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator(device=device).manual_seed(args.seed)
    shard, shard_bytes, index, total = {}, 0, {}, 0
    files = []

    def flush():
        nonlocal shard, shard_bytes
        if not shard:
            return
        name = f"model-{len(files) + 1:05d}.safetensors"
        save_file(shard, str(out / name), metadata={"format": "pt"})
        files.append(name)
        for key in shard:
            index[key] = name
        shard, shard_bytes = {}, 0

    for name, shape in tensor_shapes(cfg).items():
        t = torch.empty(shape, dtype=torch.bfloat16, device=device)
        if name.endswith("norm.weight"):
            t.normal_(1.0, 0.05, generator=gen)
        else:
            t.normal_(0.0, 0.02, generator=gen)
        shard[name] = t.cpu()
        shard_bytes += t.numel() * 2
        total += t.numel() * 2
        if shard_bytes >= 4 << 30:
            flush()
    flush()
    if len(files) > 1:
        (out / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {"total_size": total}, "weight_map": index}, indent=2) + "\n")
    else:
        (out / files[0]).rename(out / "model.safetensors")
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (out / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    tok = Path(args.tokenizer_dir) if args.tokenizer_dir else (
        Path(__file__).resolve().parent.parent / "third_party" / "tokenizers" / family)
    copied = [n for n in shapes.TOKENIZER_FILES if (tok / n).exists()]
    for n in copied:
        shutil.copy(tok / n, out / n)
    log(f"{args.shape} with {args.layers} layers: {total / 1e9:.2f} GB in {len(files)} shard(s) "
        f"at {out}; tokenizer: {', '.join(copied) if copied else f'none ({tok} has none)'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes a Mixtral checkpoint that computes what a trained dense Llama does.

  make-moe-from-dense.py DENSE OUT [--experts 4] [--top-k 2]

Each layer's MLP becomes a mixture of --experts experts, each the dense MLP
with its intermediate channels in another order (gate and up rows, down
columns: the same function, other weights, so int4 groups differ from
expert to expert), and a router of small pseudo-random weights. Mixtral
renormalises the top k routing weights, so the mixture's output is the
dense MLP's whatever the routing: the model knows what the dense one learned
(sol-tiny's held-out perplexity), and quantizing its experts is measured on
activations of real text. Attention, norms, embeddings and the tokenizer
are copied. Standard library only (CI has no numpy).
"""
import argparse
import json
import random
import shutil
import struct
import sys
from array import array
from pathlib import Path


def read_safetensors(path):
    data = path.read_bytes()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "BF16":
            sys.exit(f"{path}: {name} is {info['dtype']}, expected BF16")
        begin, end = info["data_offsets"]
        values = array("H")
        values.frombytes(data[base + begin:base + end])
        tensors[name] = (info["shape"], values)
    return tensors


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        shape, values = tensors[name]
        blob = values.tobytes()
        header[name] = {"dtype": "BF16", "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for blob in blobs:
            f.write(blob)


def bf16(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def permute_rows(values, rows, cols, order):
    out = array("H")
    for r in order:
        out.extend(values[r * cols:(r + 1) * cols])
    return out


def permute_columns(values, rows, cols, order):
    out = array("H", bytes(2 * rows * cols))
    for r in range(rows):
        row = values[r * cols:(r + 1) * cols]
        out[r * cols:(r + 1) * cols] = array("H", (row[c] for c in order))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dense", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--experts", type=int, default=4)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    config = json.loads((args.dense / "config.json").read_text())
    if config.get("model_type") != "llama":
        sys.exit(f"{args.dense}: a Llama checkpoint is expected")
    hidden, width = config["hidden_size"], config["intermediate_size"]
    tensors = read_safetensors(args.dense / "model.safetensors")
    rng = random.Random(args.seed)
    out = {}
    for name, tensor in tensors.items():
        if ".mlp." not in name:
            out[name] = tensor
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}"
        gate = tensors[f"{prefix}.mlp.gate_proj.weight"][1]
        up = tensors[f"{prefix}.mlp.up_proj.weight"][1]
        down = tensors[f"{prefix}.mlp.down_proj.weight"][1]
        moe = f"{prefix}.block_sparse_moe"
        for e in range(args.experts):
            order = list(range(width))
            if e:
                rng.shuffle(order)
            out[f"{moe}.experts.{e}.w1.weight"] = (
                [width, hidden], permute_rows(gate, width, hidden, order))
            out[f"{moe}.experts.{e}.w3.weight"] = (
                [width, hidden], permute_rows(up, width, hidden, order))
            out[f"{moe}.experts.{e}.w2.weight"] = (
                [hidden, width], permute_columns(down, hidden, width, order))
        out[f"{moe}.gate.weight"] = ([args.experts, hidden], array(
            "H", (bf16(rng.gauss(0.0, 0.05))
                  for _ in range(args.experts * hidden))))

    args.out.mkdir(parents=True, exist_ok=True)
    config.update({"architectures": ["MixtralForCausalLM"],
                   "model_type": "mixtral",
                   "num_local_experts": args.experts,
                   "num_experts_per_tok": args.top_k,
                   "output_router_logits": False,
                   "router_aux_loss_coef": 0.001,
                   "router_jitter_noise": 0.0, "sliding_window": None})
    config.pop("mlp_bias", None)
    config.pop("pretraining_tp", None)
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    write_safetensors(args.out / "model.safetensors", out)
    for extra in ("tokenizer.json", "tokenizer_config.json",
                  "generation_config.json", "heldout.txt"):
        if (args.dense / extra).exists():
            shutil.copy(args.dense / extra, args.out / extra)
    print(f"{args.out}: {config['num_hidden_layers']} layers of "
          f"{args.experts} experts (top {args.top_k}) from {args.dense}")


if __name__ == "__main__":
    main()

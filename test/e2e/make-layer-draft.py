#!/usr/bin/env python3
"""Writes a draft model for speculative-decoding tests: the first --layers
decoder layers of a Llama-style checkpoint, with its embeddings, final norm,
LM head and tokenizer (so the same vocabulary and tokenizer).

The early layers' residual stream, normed and projected to the vocabulary,
predicts the next token far better than chance but far worse than the whole
model: drafts are accepted often enough to exercise acceptance and rejection.
It costs no training and no bytes in the repository (sol-tiny's trained draft,
models/sol-tiny/train.py --preset sol-draft, is made on a GPU).

Standard library only: the safetensors file is a little-endian u64 header
length, a JSON header of name -> dtype/shape/byte offsets, then the bytes.

  python3 test/e2e/make-layer-draft.py models/sol-tiny OUT_DIR --layers 2
"""

import argparse
import json
import re
import shutil
import struct
import sys
from pathlib import Path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="checkpoint folder (config.json, model.safetensors)")
    ap.add_argument("out", type=Path)
    ap.add_argument("--layers", type=int, default=2)
    args = ap.parse_args()

    config = json.loads((args.model / "config.json").read_text())
    total = config["num_hidden_layers"]
    if not 1 <= args.layers <= total:
        sys.exit(f"make-layer-draft: --layers must be in 1..{total}, got {args.layers}")
    data = (args.model / "model.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]

    layer = re.compile(r"model\.layers\.(\d+)\.")
    kept, chunks, offset = {}, [], 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        m = layer.match(name)
        if m and int(m.group(1)) >= args.layers:
            continue
        begin, end = info["data_offsets"]
        chunks.append(body[begin:end])
        kept[name] = dict(info, data_offsets=[offset, offset + end - begin])
        offset += end - begin
    if "__metadata__" in header:
        kept["__metadata__"] = header["__metadata__"]
    head = json.dumps(kept, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)

    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        for c in chunks:
            f.write(c)
    config["num_hidden_layers"] = args.layers
    for key in ("layer_types", "sliding_window_pattern"):
        if isinstance(config.get(key), list):
            config[key] = config[key][:args.layers]
    (args.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for extra in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (args.model / extra).exists():
            shutil.copy(args.model / extra, args.out / extra)
    print(f"make-layer-draft: {args.out}: {args.layers} of {total} layers, "
          f"{len([k for k in kept if k != '__metadata__'])} tensors, {offset:,} bytes")


if __name__ == "__main__":
    main()

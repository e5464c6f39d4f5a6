#!/usr/bin/env python3
"""Exports Hugging Face decoder checkpoints to ONNX with torch.onnx's dynamo
exporter (the default since torch 2.9), with a KV cache: inputs input_ids,
attention_mask, position_ids, past_key_values.{i}.key/value; outputs logits,
present.{i}.key/value. This is how test/models/onnx/dynamo* were made (on the
GPU machine, which has torch and transformers; CPU is enough for the tiny
models):

    python3 scripts/export-dynamo-onnx.py --out test/models/onnx \\
        --opset 18 23 --models test/models/llama test/models/qwen3 ...

--shape llama-3.2-1b makes a Llama-3.2-1B-shaped model with random weights
instead (for timing; weights in external data).
"""
import argparse
import json
import os
import shutil
import sys
import time
import traceback

import torch


SHAPES = {
    "llama-3.2-1b": dict(
        architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=128256,
        hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64,
        max_position_embeddings=131072, rms_norm_eps=1e-5, tie_word_embeddings=True,
        rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=32.0,
                             low_freq_factor=1.0, high_freq_factor=4.0,
                             original_max_position_embeddings=8192),
        bos_token_id=128000, eos_token_id=128001, hidden_act="silu"),
}


class WithCache(torch.nn.Module):
    """The model over a cache given as flat tensors, returning flat presents."""

    def __init__(self, model, layers):
        super().__init__()
        self.model = model
        self.layers = layers

    def forward(self, input_ids, attention_mask, position_ids, past):
        from transformers import DynamicCache
        try:
            cache = DynamicCache(config=self.model.config)
        except TypeError:
            cache = DynamicCache()
        for i in range(self.layers):
            cache.update(past[2 * i], past[2 * i + 1], i)
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids, past_key_values=cache,
                         use_cache=True)
        pkv = out.past_key_values
        presents = []
        for i in range(self.layers):
            if hasattr(pkv, "layers"):
                presents += [pkv.layers[i].keys, pkv.layers[i].values]
            else:
                presents += [pkv.key_cache[i], pkv.value_cache[i]]
        return (out.logits, *presents)


class WithoutCache(torch.nn.Module):
    """The model without a cache: every call sees the whole sequence."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, position_ids):
        out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                         position_ids=position_ids, use_cache=False)
        return out.logits


def export(model, config, out_dir, opset, external, cache=True):
    layers = config.num_hidden_layers
    kv = config.num_key_value_heads
    dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    batch, seq, past_len = 2, 4, 3
    dtype = next(model.parameters()).dtype
    ids = torch.randint(0, config.vocab_size, (batch, seq))
    mask = torch.ones(batch, past_len + seq, dtype=torch.int64)
    pos = torch.arange(past_len, past_len + seq).unsqueeze(0).expand(batch, seq).contiguous()
    past = tuple(torch.randn(batch, kv, past_len, dim, dtype=dtype) for _ in range(2 * layers))
    b = torch.export.Dim("batch_size", min=1, max=64)
    s = torch.export.Dim("sequence_length", min=1, max=4096)
    p = torch.export.Dim("past_sequence_length", min=1, max=8192)
    t = torch.export.Dim("total_sequence_length", min=2, max=12288)
    dynamic = {
        "input_ids": {0: b, 1: s},
        "attention_mask": {0: b, 1: t},
        "position_ids": {0: b, 1: s},
        "past": tuple({0: b, 2: p} for _ in range(2 * layers)),
    }
    names_in = ["input_ids", "attention_mask", "position_ids"] + [
        f"past_key_values.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    names_out = ["logits"] + [f"present.{i}.{kind}" for i in range(layers) for kind in ("key", "value")]
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    if cache:
        wrapper, args = WithCache(model, layers).eval(), (ids, mask, pos, past)
    else:
        # Without past the mask covers just the sequence.
        wrapper, args = WithoutCache(model).eval(), (ids, mask[:, :seq], pos - past_len)
        dynamic = {"input_ids": {0: b, 1: s}, "attention_mask": {0: b, 1: s},
                   "position_ids": {0: b, 1: s}}
        names_in, names_out = names_in[:3], names_out[:1]
    with torch.no_grad():
        program = torch.onnx.export(
            wrapper, args, dynamo=True, opset_version=opset,
            input_names=names_in, output_names=names_out, dynamic_shapes=dynamic)
    program.save(path, external_data=external)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--opset", type=int, nargs="+", default=[18])
    ap.add_argument("--models", nargs="*", default=[])
    ap.add_argument("--shape", choices=sorted(SHAPES))
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--attn", choices=["eager", "sdpa"], default="eager",
                    help="transformers' attention: sdpa exports as opset 23's Attention op")
    ap.add_argument("--no-cache", action="store_true",
                    help="export without past_key_values/present (logits only)")
    ap.add_argument("--external-data", action="store_true",
                    help="weights in model.onnx.data beside the graph")
    args = ap.parse_args()
    from transformers import AutoConfig, AutoModelForCausalLM

    jobs = []
    for m in args.models:
        jobs.append((os.path.basename(m.rstrip("/")), m))
    if args.shape:
        jobs.append((args.shape, None))
    failures = 0
    for name, src in jobs:
        if src:
            model = AutoModelForCausalLM.from_pretrained(
                src, dtype=getattr(torch, args.dtype), attn_implementation=args.attn)
            config = model.config
        else:
            config = AutoConfig.for_model(**SHAPES[args.shape])
            torch.manual_seed(0)
            model = AutoModelForCausalLM.from_config(
                config, dtype=getattr(torch, args.dtype), attn_implementation=args.attn)
        model.eval()
        for opset in args.opset:
            style = (f"dynamo{opset}" + ("-sdpa" if args.attn == "sdpa" else "")
                     + ("-nocache" if args.no_cache else ""))
            out_dir = os.path.join(args.out, style, name)
            t = time.time()
            try:
                path = export(model, config, out_dir, opset,
                              external=src is None or args.external_data,
                              cache=not args.no_cache)
                if src:
                    for f in ("config.json", "generation_config.json"):
                        if os.path.exists(os.path.join(src, f)):
                            shutil.copy(os.path.join(src, f), out_dir)
                else:
                    config.save_pretrained(out_dir)
                    model.save_pretrained(os.path.join(args.out, "safetensors", name))
                print(f"{name} opset {opset}: {path} in {time.time() - t:.1f} s", flush=True)
            except Exception:
                failures += 1
                print(f"{name} opset {opset}: FAILED", flush=True)
                traceback.print_exc()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

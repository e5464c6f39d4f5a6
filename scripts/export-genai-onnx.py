#!/usr/bin/env python3
"""Exports Hugging Face checkpoints with onnxruntime-genai's model builder and checks
each graph with onnxruntime against the checkpoint's goldens.

This is how test/models/onnx/genai/ was made, on the GPU machine (torch, transformers,
onnx_ir and onnxruntime are there; CPU is enough for the tiny models). The builder is
not a pip package there: pass the folder of its sources, `src/python/py/models` of a
clone of microsoft/onnxruntime-genai (it holds builder.py and builders/):

    python3 scripts/export-genai-onnx.py --builder DIR --out OUT \\
        --models test/models/qwen3 test/models/llama \\
        --variants fp32:cpu fp16:cuda int4:cpu

Each variant is `precision:execution_provider[:key=value,...]` with the builder's
`--extra_options` after the second colon (`int4:cpu:is_symmetric=false`), written to
OUT/<precision>-<ep>[-<tag>]/<model>/. The test checkpoints carry no tokenizer; the
builder's tokenizer copy is skipped when there is none.

The check runs the graph with onnxruntime on the CPU:
  full    the golden input_ids in one pass with an empty past: logits against
          golden_logits.safetensors (relative L2 error, argmax on rows whose golden
          top-2 margin exceeds 1e-2);
  greedy  then golden.json's greedy continuation one token at a time, present -> past.
It prints one line per graph and writes OUT/check.json. Quantized graphs
(MatMulNBits) differ from their checkpoint by design: their check reports
the numbers without failing, and scripts/make-onnx-ort-goldens.js writes
onnxruntime's own goldens beside them. The builder writes neither
config.json nor generation_config.json (genai_config.json says what they
would); neither is copied.
"""
import argparse
import json
import os
import runpy
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

MARGIN = 1e-2


def run_builder(builder_dir, argv):
    """Runs builder.py as __main__ in this process (the --run-builder mode)."""
    sys.path.insert(0, builder_dir)
    import builders.base as base

    save_processing = base.Model.save_processing

    def save_processing_if_any(self, name, extra_kwargs, out_dir):
        if not os.path.exists(os.path.join(name, "tokenizer.json")) and not os.path.exists(
                os.path.join(name, "tokenizer_config.json")):
            print(f"no tokenizer in {name}: not copied", flush=True)
            return
        save_processing(self, name, extra_kwargs, out_dir)

    base.Model.save_processing = save_processing_if_any
    sys.argv = [os.path.join(builder_dir, "builder.py")] + argv
    runpy.run_path(sys.argv[0], run_name="__main__")


def read_safetensors_f32(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        s, e = info["data_offsets"]
        out[name] = np.frombuffer(data[s:e], dtype=np.float32).reshape(info["shape"])
    return out


class Runner:
    def __init__(self, path):
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        self.s = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name: i for i in self.s.get_inputs()}
        self.outputs = [o.name for o in self.s.get_outputs()]
        self.past_names = sorted(n for n in self.inputs if n.startswith("past_key_values."))

    def past_dtype(self, name):
        t = self.inputs[name].type
        return {"tensor(float)": np.float32, "tensor(float16)": np.float16}[t]

    def empty_past(self, kv_heads, head_dim, capacity):
        # A sliding-window cache (GroupQueryAttention's sliding_window_cache)
        # needs a buffer of at least the window: past_present_share_buffer,
        # as onnxruntime-genai runs it.
        return {n: np.zeros((1, kv_heads, capacity, head_dim), dtype=self.past_dtype(n))
                for n in self.past_names}

    def step(self, ids, start, past):
        feeds = {"input_ids": np.array([ids], dtype=np.int64)}
        total = start + len(ids)
        if "attention_mask" in self.inputs:
            feeds["attention_mask"] = np.ones((1, total), dtype=np.int64)
        if "position_ids" in self.inputs:
            feeds["position_ids"] = np.arange(start, total, dtype=np.int64)[None, :]
        feeds.update(past)
        out = dict(zip(self.outputs, self.s.run(None, feeds)))
        present = {}
        for n in self.past_names:
            present[n] = out[n.replace("past_key_values.", "present.")]
        return out["logits"][0].astype(np.float32), present


def run_golden_inputs(path, golden, decoder):
    """Teacher-forced logits of golden.json's input ids, then its greedy length
    of greedy ids."""
    r = Runner(path)
    ids = golden["input_ids"]
    shared = any(n.op_type == "GroupQueryAttention" and any(
        a.name == "sliding_window_cache" and a.i for a in n.attribute) for n in graph_nodes(path))
    capacity = len(ids) + len(golden["greedy_ids"]) if shared else 0
    logits, past = r.step(ids, 0, r.empty_past(decoder["num_key_value_heads"], decoder["head_size"], capacity))
    greedy = [int(logits[-1].argmax())]
    pos = len(ids)
    for _ in range(len(golden["greedy_ids"]) - 1):
        step_logits, past = r.step([greedy[-1]], pos, past)
        pos += 1
        greedy.append(int(step_logits[-1].argmax()))
    return logits, greedy


def graph_nodes(path):
    import onnx

    return onnx.load(path, load_external_data=False).graph.node


def check(path, golden_dir, loose):
    golden = json.load(open(os.path.join(golden_dir, "golden.json")))
    want = read_safetensors_f32(os.path.join(golden_dir, "golden_logits.safetensors"))["logits"]
    decoder = json.load(open(os.path.join(os.path.dirname(path), "genai_config.json")))["model"]["decoder"]
    logits, greedy = run_golden_inputs(path, golden, decoder)
    rel = float(np.linalg.norm(logits - want) / np.linalg.norm(want))
    top2 = np.sort(want, axis=-1)[:, -2:]
    sure = (top2[:, 1] - top2[:, 0]) > MARGIN
    bad = int(np.sum((logits.argmax(-1) != want.argmax(-1)) & sure))
    first_diff = next((i for i, (a, b) in enumerate(zip(greedy, golden["greedy_ids"])) if a != b), None)
    limit = {"fp32": 1e-4, "fp16": 1e-2}.get(loose)
    ok = first_diff is None and bad == 0 and limit is not None and rel <= limit
    return dict(rel_l2=rel, argmax_mismatch=bad, argmax_checked=int(sure.sum()), greedy_first_diff=first_diff,
                greedy_equal=first_diff is None, limit=limit, ok=ok if limit is not None else None)


def graph_stats(path):
    import onnx

    m = onnx.load(path, load_external_data=False)
    ops = {}
    for n in m.graph.node:
        key = (n.domain or "ai.onnx") + "::" + n.op_type
        ops[key] = ops.get(key, 0) + 1
    return dict(opset={o.domain or "ai.onnx": o.version for o in m.opset_import}, nodes=len(m.graph.node),
                ops=dict(sorted(ops.items())), inputs=[i.name for i in m.graph.input],
                outputs=[o.name for o in m.graph.output])


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--run-builder":
        run_builder(sys.argv[2], sys.argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--builder", required=True, help="onnxruntime-genai's src/python/py/models")
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", nargs="+", required=True, help="checkpoint folders (with golden.json)")
    ap.add_argument("--variants", nargs="+", default=["fp32:cpu"])
    ap.add_argument("--no-check", action="store_true",
                    help="export only (models without goldens, such as shape models)")
    args = ap.parse_args()
    results = []
    failures = 0
    for variant in args.variants:
        parts = variant.split(":")
        precision, ep = parts[0], parts[1]
        extra = parts[2].split(",") if len(parts) > 2 and parts[2] else []
        tag = f"{precision}-{ep}" + ("-" + "-".join(e.replace("=", "_") for e in extra) if extra else "")
        for src in args.models:
            name = os.path.basename(src.rstrip("/"))
            out_dir = os.path.join(args.out, tag, name)
            shutil.rmtree(out_dir, ignore_errors=True)
            cmd = [sys.executable, os.path.abspath(__file__), "--run-builder", args.builder, "-i", src, "-o", out_dir,
                   "-p", precision, "-e", ep, "-c", os.path.join(args.out, ".cache")]
            if extra:
                cmd += ["--extra_options"] + extra
            t = time.time()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            row = dict(model=name, variant=tag, seconds=round(time.time() - t, 1), dir=out_dir)
            if proc.returncode != 0:
                failures += 1
                row["error"] = (proc.stdout + proc.stderr)[-3000:]
                print(f"{tag} {name}: builder FAILED\n{row['error']}", flush=True)
                results.append(row)
                continue
            path = os.path.join(out_dir, "model.onnx")
            row["graph"] = graph_stats(path)
            if args.no_check:
                print(f"{tag} {name}: {row['graph']['nodes']} nodes in {row['seconds']} s", flush=True)
                results.append(row)
                continue
            try:
                row["check"] = check(path, src, precision)
            except Exception as e:  # the report says which graph onnxruntime could not run
                row["check"] = dict(error=f"{type(e).__name__}: {e}")
            c = row["check"]
            if c.get("ok") is False or "error" in c:
                failures += 1
            print(f"{tag} {name}: {row['graph']['nodes']} nodes, check {json.dumps(c)}", flush=True)
            results.append(row)
    with open(os.path.join(args.out, "check.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes bench/RESULTS.md, the one table of measured results, from the JSON
reports that scripts/gpu-check writes to $OUT.

  bench/make-results.py --previous bench/RESULTS.md RUN_DIR... > /tmp/RESULTS.md
  mv /tmp/RESULTS.md bench/RESULTS.md

A RUN_DIR is one gpu-check call's $OUT (copied back from the GPU machine). It
holds run.json ({"date", "commit", "gpu"}, written by gpu-check) and any of:

  bench.json                   step 4: Llama-3.2-1B shape, batch-1 decode
  bench-8b.json, prefill-8b.json
                               step 9: Llama-3.1-8B shape, batch-1 decode and a
                               2,048-token prompt's TTFT
  prefill-SHAPE-default.json   step 10: a 2,048-token prompt's TTFT
  engine.json                  step 7: 64 concurrent sequences, the prefix
                               cache's TTFT, 1,000 offline requests
  serve-SHAPE.json             step 11: solbench against solrun --serve
  trained/quality-MODEL[-fp8].json
                               step 18: a plan of a trained model against
                               Transformers on held-out text (bench/quality.py)
  ab/ab.json (or ab.json)      step 19: this build against an older one
                               (scripts/gpu-ab)
  quant.json                   step 21: quantized plans against the bf16 plan
                               and Transformers (bench/quant_bench.py)
  onnx.json                    step 22: a torch.onnx export's plan against the
                               checkpoint's (bench/onnx_bench.py)
  decode-SHAPE.json, engine-SHAPE.json
                               step 25: the Phi-3 / Gemma shapes' batch-1 decode
                               and 64 concurrent sequences
  onnx-genai.json              step 24: onnxruntime-genai's export, the same
  moe_bench.json               step 27: mixture-of-experts shapes from their
                               configs (bench/tp_bench.py)

Runs on another GPU than an H200 (run.json's "gpu") are refused: the table
is one H200's.

Each report gives one or more rows, keyed by the workload (the first column).
A later RUN_DIR (by date, then by position on the command line) replaces an
earlier one's row of the same workload; rows of --previous whose workload no
RUN_DIR measured are kept as they were, with their own date and commit.
--date and --commit stand in for a RUN_DIR's run.json when it has none.
"""

import argparse
import json
import os
import re
import sys

HEADER = """# Measured results

One table, written by `bench/make-results.py` from the JSON reports of `scripts/gpu-check`
(see [README.md](README.md)); edit the script, not the table. One NVIDIA H200; checkpoints with
random weights of the real shapes (`scripts/make-shape-model.py`), bf16, greedy, EOS ignored.
The baseline ran in the same call, on the same checkpoint, prompts and lengths. *Commit* is the
tree that was measured; for runs made before gpu-check recorded it, the commit that recorded
the run (its binaries were built from the work just before it).
"""
COLUMNS = ["workload", "Sol", "baseline (same run)", "date", "commit", "command"]

SHAPES = {"llama-3.2-1b": "Llama-3.2-1B", "llama-3.1-8b": "Llama-3.1-8B",
          "qwen2.5-1.5b": "Qwen2.5-1.5B", "qwen2.5-7b": "Qwen2.5-7B",
          "phi-3.5-mini": "Phi-3.5-mini", "phi-4-mini": "Phi-4-mini", "gemma-2-9b": "Gemma-2-9B",
          "gemma-3-4b": "Gemma-3-4B (text)", "qwen3-30b-a3b": "Qwen3-30B-A3B",
          "mixtral-8x7b": "Mixtral-8x7B", "gpt-oss-20b": "gpt-oss-20b (MXFP4)",
          "qwen1.5-moe-a2.7b": "Qwen1.5-MoE-A2.7B"}


def fail(msg):
    print(f"make-results.py: {msg}", file=sys.stderr)
    sys.exit(1)


def shape_of(text):
    """The shape named in a path (a model folder or a plan file)."""
    for key, name in SHAPES.items():
        if key in os.path.basename(str(text)):
            return name
    return os.path.basename(str(text).rstrip("/")) or "?"


def n(x, digits=1):
    return f"{x:,.{digits}f}"


def command(step, script, env=""):
    return f"`{env}SOL_GPU_STEPS={step} scripts/gpu-check` (`bench/{script}`)"


def decode_rows(d, step):
    """bench/decode_bench.py: tok/s for decode runs, TTFT for long prompts."""
    shape = shape_of(d["model"])
    sol = next(r for r in d["rows"] if r["engine"].startswith("sol"))
    hf = [r for r in d["rows"] if not r["engine"].startswith("sol")]
    version = d.get("versions", {}).get("transformers", "")
    who = f"Transformers {version}".strip()
    if d["new_tokens"] <= 8:
        workload = f"{shape} shape, {n(d['prompt_tokens'], 0)}-token prompt: TTFT"
        figure = f"{sol['ttft_ms']:.1f} ms"
        base = "; ".join(f"{r['ttft_ms']:.1f} ms ({who} {label(r['engine'])})" for r in hf)
    else:
        workload = (f"{shape} shape, batch 1, prompt {d['prompt_tokens']} + "
                    f"{d['new_tokens']} new: decode tok/s")
        figure = (f"{n(sol['decode_tokens_per_s'])} (TPOT {sol['tpot_ms']:.3f} ms, "
                  f"{sol['fraction_of_bandwidth_bound']:.0%} of the "
                  f"{d['bandwidth_bytes_per_s'] / 1e12:.1f} TB/s bound)")
        base = "; ".join(f"{n(r['decode_tokens_per_s'])} ({who} {label(r['engine'])})"
                         for r in hf)
    script = "decode_bench.py"
    return [(workload, figure, base or "—", command(step, script))]


def label(engine):
    """`generate()` and how, from a decode_bench row's engine name."""
    m = re.search(r"\((.*)\)", engine)
    how = m.group(1) if m else ""
    how = how.replace("bf16, sdpa, ", "").replace("torch.compile", "`torch.compile`")
    return f"`generate()`, {how}" if how else "`generate()`"


def engine_rows(d, step=7):
    """bench/engine_bench.py: concurrent sequences, prefix cache, offline."""
    shape = shape_of(d.get("model", ""))
    cmd = command(step, "engine_bench.py")
    rows = []
    c = d.get("concurrent")
    if c:
        sol = next(r for r in c["rows"] if r["engine"] == "sol")
        hf = [r for r in c["rows"] if r["engine"] != "sol"]
        rows.append((
            f"{shape} shape, {c['concurrency']} concurrent sequences, prompt "
            f"{c['prompt_tokens']} + {c['new_tokens']} new: decode tok/s",
            f"{n(sol['decode_tok_s'], 0)} ({n(sol['output_tok_s'], 0)} end to end)",
            "; ".join(f"{n(r['decode_tok_s'], 0)} (Transformers `generate()`, one batch)"
                      for r in hf) or "—", cmd))
    p = d.get("prefix")
    if p and p.get("cached_median_ttft_ms"):
        cfg = p["raw_cached"]["config"]
        rows.append((
            f"{shape} shape, {cfg['input_len'][0]}-token prompt after a cached "
            f"{n(cfg['prefix_len'], 0)}-token prefix: median TTFT",
            f"{p['cached_median_ttft_ms']:.2f} ms ({p['uncached_median_ttft_ms']:.2f} ms "
            f"uncached: {p['cached_median_share']:.0%})", "—", cmd))
    o = d.get("offline")
    if o:
        cfg = o["raw"]["config"]
        lo, hi = cfg["input_len"]
        olo, ohi = cfg["output_len"]
        rows.append((
            f"{shape} shape, {n(cfg['num_prompts'], 0)} offline requests, prompts "
            f"{lo}-{n(hi, 0)}, outputs {olo}-{ohi}: total tok/s",
            f"{n(o['total_tok_s'], 0)} (peak KV {n(o['peak_kv_tokens'], 0)} tokens)", "—", cmd))
    return rows


def serve_rows(d, name):
    """bench/serve_bench.py: throughput lost to HTTP serving per concurrency."""
    shape = shape_of(d.get("plan") or name)
    rows = sorted(d["rows"], key=lambda r: r["concurrency"])
    levels = " / ".join(str(r["concurrency"]) for r in rows)
    env = "" if shape == "Llama-3.2-1B" else f"SOL_SERVE_SHAPES={name} "
    return [(f"{shape} shape, `solbench` against `solrun --serve`, concurrency {levels}, "
             f"prompt {d['input_len']} + {d['output_len']}: output tok/s lost to serving",
             " / ".join(f"{r['overhead']:.1%}" for r in rows),
             "`solrun --bench` (in-process, same workload): "
             + " / ".join(n(r["bench_output_tok_s"], 0) for r in rows) + " tok/s",
             command(11, "serve_bench.py", env))]


def quality_rows(d, name):
    """bench/quality.py --hf: a trained model's plan against Transformers."""
    model = name[len("quality-"):-len(".json")]
    fp8 = model.endswith("-fp8")
    model = model[: -len("-fp8")] if fp8 else model
    who = {"sol-tiny": "sol-tiny (models/sol-tiny)",
           "llama-1b": "Llama-3.2-1B shape trained with sol-tiny's recipe"}.get(model, model)
    sol, bf16 = d["rows"]["sol"], d["rows"]["hf_bf16"]

    def cell(r):
        return (f"perplexity {r['perplexity']:.3f} ({r['perplexity_delta_pct']:+.3f}%), "
                f"top-1 {r['top1_agreement_pct']:.2f}%, KL {r['kl_mean_nats']:.1e}, "
                f"relative logit error {r['rel_logit_error']:.1e}")
    kv = ", fp8 KV cache" if fp8 else ""
    workload = (f"{who}{kv}, held-out text, {n(d['positions'], 0)} positions: against "
                "Transformers float32")
    base = (f"Transformers bf16: {cell(bf16)}; float32 perplexity "
            f"{sol['perplexity_ref']:.3f}")
    # The fp8 KV cache is reported, not gated (its quantisation costs logit
    # error by design); a bf16 plan must pass every gate.
    gates = "" if fp8 else " (all gates passed)" if d.get("passed") else " (gates: " + "; ".join(
        g["name"] + (" passed" if g["passed"] else " FAILED") for g in d.get("gates", [])) + ")"
    return [(workload, f"{cell(sol)}{gates}", base,
             "`SOL_GPU_STEPS=18 scripts/gpu-check` (`bench/quality.py`)")]


AB_NAMES = {"1b-decode": "Llama-3.2-1B shape, batch 1, prompt 128 + 128 new: decode tok/s",
            "1b-64": "Llama-3.2-1B shape, 64 sequences, prompt 128 + 256 new: decode tok/s",
            "8b-decode": "Llama-3.1-8B shape, batch 1, prompt 128 + 128 new: decode tok/s"}


def ab_rows(d, old_commit):
    """scripts/gpu-ab: this build's median against an older build's, same call."""
    rows = []
    for key, r in d.items():
        fig = r.get("tok_s") or r.get("decode_tok_s")
        extra = (f", greedy ids agree {r['ids_agree']}/{r['ids']}"
                 if "ids_agree" in r else "")
        # What was found about ids that part (added to ab.json by hand).
        extra += f"; {r['note']}" if r.get("note") else ""
        rows.append((f"A/B: {AB_NAMES.get(key, key)}",
                     f"{n(fig['new'])} ({r['ratio']:.3f} of the older build{extra})",
                     f"{n(fig['old'])} (build {old_commit})",
                     "`SOL_GPU_STEPS=19 scripts/gpu-check` (`scripts/gpu-ab`)"))
    return rows


def quant_rows(d):
    """bench/quant_bench.py: each quantized plan beside the bf16 plan."""
    rows = []
    # A run with options of its own (--sequences 1, --skip-hf) names them.
    how = (f"`bench/quant_bench.py {d['options']}`" if d.get("options")
           else command(21, "quant_bench.py"))
    for entry in d["shapes"]:
        shape = SHAPES.get(entry["shape"], entry["shape"])
        base = next((r for r in entry["rows"] if r["scheme"] == "bf16"), None)
        hf = entry.get("transformers_bf16_tokens_per_s")
        for r in entry["rows"]:
            if r["scheme"] == "bf16" or base is None:
                continue
            rows.append((
                f"{shape} shape, `--quant {r['scheme']}` ({r['weight_bytes'] / 1e9:.2f} GB of "
                f"weights), batch 1, prompt {d['prompt_tokens']} + {d['new_tokens']} new: "
                "decode tok/s",
                f"{n(r['decode_tokens_per_s'])} ({r['decode_tokens_per_s'] / base['decode_tokens_per_s']:.2f}"
                f"x bf16, {r['fraction_of_bandwidth_bound']:.0%} of its bound)",
                f"{n(base['decode_tokens_per_s'])} (Sol bf16 plan)"
                + (f"; {n(hf)} (Transformers bf16 `generate()`)" if hf else ""),
                how))
            if r.get("ttft_ms") is not None and base.get("ttft_ms"):
                rows.append((
                    f"{shape} shape, `--quant {r['scheme']}`, a {n(d['ttft_tokens'], 0)}-token "
                    "prompt: TTFT ms",
                    f"{r['ttft_ms']:.2f} ({r['ttft_ms'] / base['ttft_ms']:.2f}x bf16)",
                    f"{base['ttft_ms']:.2f} (Sol bf16 plan)",
                    how))
            if r.get("decode_64_tokens_per_s") is None or \
                    base.get("decode_64_tokens_per_s") is None:
                continue  # a batch-1 run (quant_bench.py --sequences 1)
            rows.append((
                f"{shape} shape, `--quant {r['scheme']}`, 64 sequences, prompt 128 + 256 new: "
                "decode tok/s",
                f"{n(r['decode_64_tokens_per_s'], 0)} "
                f"({r['decode_64_tokens_per_s'] / base['decode_64_tokens_per_s']:.2f}x bf16)",
                f"{n(base['decode_64_tokens_per_s'], 0)} (Sol bf16 plan)",
                how))
    return rows


ONNX_SOURCES = {
    22: "a torch.onnx dynamo export (opset 18, float32 weights in external data)",
    24: "onnxruntime-genai's model builder (bf16, CUDA: GroupQueryAttention, "
        "SkipSimplifiedLayerNormalization, bf16 cos/sin caches)",
}


def onnx_rows(d, step=22):
    """bench/onnx_bench.py: the plan of an ONNX export beside the checkpoint's."""
    plans = d["plans"]
    ckpt, onnx = plans["checkpoint"], plans["onnx"]
    agree = ("same ops" if d["same_ops"] else "other ops") + ", " + (
        "same greedy ids" if d["same_ids"] else "other greedy ids")
    return [(
        f"Llama-3.2-1B shape from {ONNX_SOURCES[step]}, batch 1, prompt "
        f"{d['prompt_tokens']} + {d['new_tokens']} new: decode tok/s",
        f"{n(onnx['decode_tokens_per_s'])} ({d['onnx_over_checkpoint']:.3f}x the checkpoint's "
        f"plan; {agree}; {onnx['ops']} ops)",
        f"{n(ckpt['decode_tokens_per_s'])} (Sol plan of the safetensors checkpoint)",
        command(step, "onnx_bench.py"))]


def moe_rows(d):
    """bench/tp_bench.py on one GPU: a mixture's batch-1 and 64-sequence decode
    against the bound of the bytes its routed experts read, and a long
    prompt's TTFT, beside Transformers."""
    cmd = command(27, "tp_bench.py")
    rows = []
    hf = {r["shape"]: r for r in d["rows"] if r["engine"] == "transformers"}
    for r in d["rows"]:
        if r["engine"] != "sol" or r.get("gpus", 1) != 1 or "error" in r:
            continue
        shape = SHAPES.get(r["shape"], r["shape"])
        t = hf.get(r["shape"], {})
        who = "Transformers `generate()`, bf16"
        if r.get("batch1_tok_s"):
            rows.append((
                f"{shape} shape (dummy weights), batch 1, prompt {d['prompt_tokens']} + "
                f"{d['new_tokens']} new: decode tok/s",
                f"{n(r['batch1_tok_s'])} ({r['fraction_of_bound']:.0%} of the "
                f"{d['bandwidth'] / 1e12:.1f} TB/s bound of the "
                f"{r['active_gb_batch1']:.2f} GB a token reads)",
                f"{n(t['batch1_tok_s'])} ({who})" if t.get("batch1_tok_s") else "—", cmd))
        if r.get("seqs64_output_tok_s"):
            rows.append((
                f"{shape} shape (dummy weights), {d['concurrency']} sequences, prompt "
                f"{d['prompt_tokens']} + {d['new_tokens']} new: output tok/s",
                f"{n(r['seqs64_output_tok_s'])} ({r['seqs64_fraction_of_bound']:.0%} of the "
                f"bound of the experts they touch)",
                f"{n(t['seqs64_output_tok_s'])} ({who}, one batch)"
                if t.get("seqs64_output_tok_s") else "—", cmd))
        if r.get("ttft_2048_ms"):
            rows.append((
                f"{shape} shape (dummy weights), 2,048-token prompt: TTFT",
                f"{r['ttft_2048_ms']:.1f} ms",
                f"{t['ttft_2048_ms']:.1f} ms ({who})" if t.get("ttft_2048_ms") else "—",
                cmd))
    return rows


def load(path):
    with open(path) as f:
        return json.load(f)


def spec_rows(d, name):
    """bench/spec_bench.py: speculation at batch 1 (n-gram on copy prompts, a draft model
    on held-out text) and under load."""
    method = "ngram"
    for suffix in ("-ngram", "-draft"):
        if name.endswith(suffix):
            name, method = name[:-len(suffix)], suffix[1:]
    model = {"sol-tiny": "sol-tiny (trained)",
             "llama-1b": "Llama-3.2-1B shape (trained here)"}.get(name, name)
    w, s = d["workload"], d["sol"]
    hf = d.get("transformers")
    what = ("n-gram speculation" if method == "ngram"
            else f"draft-model speculation ({os.path.basename(w['speculative_config']['model'])})")
    workload = ("prompts that copy from their context" if w.get("kind", "copy") == "copy"
                else "held-out text prompts")
    base = (f"{n(hf['spec_tokens_per_s'])} ({hf['speedup']:.2f}x over its "
            f"{n(hf['plain_tokens_per_s'])}; Transformers {hf.get('method', 'prompt lookup')})"
            if hf else "—")
    # Step 26 trains the 1B-shaped model itself when step 18 did not.
    cmd = "`SOL_GPU_STEPS=26 scripts/gpu-check` (`bench/spec_bench.py`)"
    parted = ""
    if s.get("differences"):
        parted = (f"; ids equal with and without on {s['ids_equal']} of {s['prompts']} "
                  f"prompts, largest teacher-forced logit gap where they part "
                  f"{s['max_difference_gap']:.3f}")
    rows = [(f"{model}, batch 1, {w['prompts']} {workload}, {w['max_tokens']} new: decode "
             f"tok/s with {what}",
             f"{n(s['spec_tokens_per_s'])} ({s['speedup']:.2f}x over plain "
             f"{n(s['plain_tokens_per_s'])}; {s['acceptance_rate']:.0%} of proposed tokens "
             f"accepted, {s['mean_accepted_length']:.2f} tokens a step{parted})",
             base, cmd)]
    for b in d.get("batches", []):
        rows.append((f"{model}, {b['max_num_seqs']} sequences (`solrun --bench`): output "
                     f"tok/s with {what}",
                     f"{n(b['spec_output_tokens_per_s'])} ({b['speedup']:.2f}x plain)",
                     f"{n(b['plain_output_tokens_per_s'])} (Sol without speculation)", cmd))
    return rows


def run_rows(run_dir, args):
    """The rows of one gpu-check $OUT, with its date and commit."""
    meta = {}
    if os.path.exists(os.path.join(run_dir, "run.json")):
        meta = load(os.path.join(run_dir, "run.json"))
    date = meta.get("date") or args.date
    commit = meta.get("commit") if meta.get("commit") not in (None, "", "unknown") else args.commit
    if not date or not commit:
        fail(f"{run_dir} has no run.json with a date and a known commit (scripts/gpu-check "
             "writes one; .carry/bin/COMMIT names the commit); give --date and --commit")
    if meta.get("gpu") and "H200" not in meta["gpu"]:
        fail(f"{run_dir} ran on {meta['gpu']}; the table holds one H200's figures")
    rows = []
    names = sorted(os.listdir(run_dir))
    for sub in ("trained", "ab"):
        if os.path.isdir(os.path.join(run_dir, sub)):
            names += [os.path.join(sub, f) for f in sorted(os.listdir(os.path.join(run_dir, sub)))]
    for name in names:
        path = os.path.join(run_dir, name)
        base = os.path.basename(name)
        try:
            if name in ("bench.json",):
                rows += decode_rows(load(path), 4)
            elif name in ("bench-8b.json", "prefill-8b.json"):
                rows += decode_rows(load(path), 9)
            elif re.fullmatch(r"prefill-.+-default\.json", name):
                rows += decode_rows(load(path), 10)
            elif name == "quant.json":
                rows += quant_rows(load(path))
            elif name == "onnx.json":
                rows += onnx_rows(load(path))
            elif name == "moe_bench.json":
                rows += moe_rows(load(path))
            elif name == "onnx-genai.json":
                rows += onnx_rows(load(path), 24)
            elif re.fullmatch(r"decode-.+\.json", name):
                rows += decode_rows(load(path), 25)
            elif re.fullmatch(r"spec-.+\.json", name):
                rows += spec_rows(load(path), name[len("spec-"):-len(".json")])
            elif name == "engine.json":
                rows += engine_rows(load(path))
            elif re.fullmatch(r"engine-.+\.json", name):
                rows += engine_rows(load(path), 25)
            elif re.fullmatch(r"serve-.+\.json", name):
                rows += serve_rows(load(path), name[len("serve-"):-len(".json")])
            elif name.startswith("trained/") and re.fullmatch(r"quality-[^/]+\.json", base) \
                    and not base.endswith("-vs-bf16.json"):
                rows += quality_rows(load(path), base)
            elif name == os.path.join("ab", "ab.json") or (
                    name == "ab.json" and os.path.join("ab", "ab.json") not in names):
                rows += ab_rows(load(path), meta.get("old_commit", args.old_commit or "older"))
        except (KeyError, StopIteration, ValueError, TypeError) as e:
            fail(f"{path}: not the report this script expects ({type(e).__name__}: {e})")
    if not rows:
        fail(f"{run_dir}: no report this script reads (bench.json, engine.json, ...)")
    # Within one run, a row with a baseline beats one without (step 9's
    # 8B prompt against step 10's).
    best = {}
    for workload, figure, base, cmd in rows:
        if workload not in best or best[workload][1] == "—":
            best[workload] = (figure, base, cmd)
    return date, [(w, f, b, date, commit, c) for w, (f, b, c) in best.items()]


KINDS = ["batch 1", "concurrent", "64 sequences", "cached", "offline", "-token prompt: TTFT",
         "solbench", "held-out"]


def order(cells):
    """Rows by shape, then by kind of workload."""
    workload = cells[0]
    ab = workload.startswith("A/B: ")
    bare = workload[len("A/B: "):] if ab else workload
    shape = next((i for i, name in enumerate(SHAPES.values()) if bare.startswith(name)),
                 len(SHAPES))
    kind = next((i for i, k in enumerate(KINDS) if k in workload), len(KINDS))
    return ab, shape, kind, workload


def read_previous(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("| ") and not line.startswith("| workload |"):
                cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
                if len(cells) != len(COLUMNS):
                    fail(f"{path}: a row without {len(COLUMNS)} cells: {line.strip()}")
                rows.append(tuple(cells))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="RUN_DIR")
    ap.add_argument("--previous", help="the current RESULTS.md, whose other rows are kept")
    ap.add_argument("--date", help="YYYY-MM-DD of runs without run.json")
    ap.add_argument("--commit", help="the measured commit of runs without run.json")
    ap.add_argument("--old-commit", help="the older build an A/B run (ab/ab.json) measured against")
    args = ap.parse_args()

    table = {}
    for cells in read_previous(args.previous) if args.previous else []:
        table[cells[0]] = cells
    runs = []
    for i, run_dir in enumerate(args.runs):
        if not os.path.isdir(run_dir):
            fail(f"{run_dir} is not a folder")
        date, rows = run_rows(run_dir, args)
        runs.append((date, i, rows))
    for _, _, rows in sorted(runs):
        for cells in rows:
            table[cells[0]] = cells

    print(HEADER)
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for cells in sorted(table.values(), key=order):
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()

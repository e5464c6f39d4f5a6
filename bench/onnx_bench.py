#!/usr/bin/env python3
"""ONNX plan against checkpoint plan: the same model compiled from its
safetensors checkpoint and from an ONNX export of it (same weights) must give
the same plan ops, the same greedy tokens and the same batch-1 decode speed.

  python3 bench/onnx_bench.py --solc .carry/bin/solc --solrun .carry/bin/solrun \\
      --checkpoint /tmp/llama-3.2-1b --onnx /tmp/onnx/dynamo18/llama-3.2-1b

Prints a table and JSON (--json-out): compile time, plan size, op list
equality, decode tok/s (median of --runs after a warm-up) of each plan, their
ratio, and whether the generated ids agree.
"""
import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path


def compile_plan(solc, source, plan):
    t = time.perf_counter()
    r = subprocess.run([solc, str(source), "-q", "-o", str(plan)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"solc {source} failed: {(r.stderr or r.stdout)[-2000:]}")
    return time.perf_counter() - t


def plan_ops(solrun, plan):
    r = subprocess.run([solrun, "--info", "--ops", str(plan)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"solrun --info failed: {r.stderr[-1000:]}")
    # The op kinds in order; buffer and weight names differ between sources.
    ops, listing = [], False
    for line in r.stdout.splitlines():
        listing |= line.startswith("ops:")
        m = re.match(r"\s*\d+\s+(\S+)", line)
        if listing and m:
            ops.append(m.group(1))
    return ops, r.stdout


def decode(solrun, plan, prompt, new_tokens, runs):
    cmd = [solrun, str(plan), "--prompt-ids", ",".join(map(str, prompt)), "--max-tokens",
           str(new_tokens), "--ignore-eos", "--json", "--device", "cuda"]
    rates, ids = [], None
    for i in range(1 + runs):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"solrun failed: {(r.stderr or r.stdout)[-1500:]}")
        out = json.loads(r.stdout.strip().splitlines()[-1])
        if i == 0:
            ids = out.get("ids")
            continue
        rates.append(float(out["timing"]["decode_tokens_per_s"]))
    return statistics.median(rates), ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--checkpoint", required=True, help="Hugging Face checkpoint folder")
    ap.add_argument("--onnx", required=True, help="ONNX file or folder of the same model")
    ap.add_argument("--work-dir", default="/tmp/sol-onnx-bench")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    vocab = json.loads((Path(args.checkpoint) / "config.json").read_text())["vocab_size"]
    prompt = [random.Random(0).randrange(vocab) for _ in range(args.prompt_tokens)]

    rows = {}
    for name, source in (("checkpoint", args.checkpoint), ("onnx", args.onnx)):
        plan = work / f"{name}.plan"
        seconds = compile_plan(args.solc, source, plan)
        ops, _ = plan_ops(args.solrun, plan)
        rate, ids = decode(args.solrun, plan, prompt, args.new_tokens, args.runs)
        rows[name] = {"compile_s": round(seconds, 1), "plan_gb": round(plan.stat().st_size / 1e9, 3),
                      "ops": len(ops), "decode_tokens_per_s": round(rate, 1), "ids": ids,
                      "op_kinds": ops}
    same_ops = rows["checkpoint"]["op_kinds"] == rows["onnx"]["op_kinds"]
    same_ids = rows["checkpoint"]["ids"] == rows["onnx"]["ids"]
    ratio = rows["onnx"]["decode_tokens_per_s"] / rows["checkpoint"]["decode_tokens_per_s"]
    report = {"checkpoint": args.checkpoint, "onnx": args.onnx, "prompt_tokens": args.prompt_tokens,
              "new_tokens": args.new_tokens, "runs": args.runs, "same_ops": same_ops,
              "same_ids": same_ids, "onnx_over_checkpoint": round(ratio, 4),
              "plans": {k: {x: v for x, v in r.items() if x not in ("ids", "op_kinds")}
                        for k, r in rows.items()}}
    print("| plan | compile s | plan GB | ops | decode tok/s |")
    print("|---|---|---|---|---|")
    for k, r in rows.items():
        print(f"| {k} | {r['compile_s']} | {r['plan_gb']} | {r['ops']} | {r['decode_tokens_per_s']} |")
    print(f"same ops: {same_ops}; same greedy ids: {same_ids}; onnx / checkpoint: {ratio:.4f}")
    print(json.dumps(report))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0 if same_ops and same_ids else 1


if __name__ == "__main__":
    sys.exit(main())

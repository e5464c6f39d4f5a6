#!/usr/bin/env python3
"""Runs plans of one tiny model compiled with different KV-cache layouts.

On the golden prompt of --model, each plan gives its teacher-forced logits
(`solrun --logits-out`) and 32 greedy ids (`--ignore-eos --json`) on the CPU
reference executor. Prints one line per plan: the relative L2 error of its
logits against the Transformers goldens and whether its greedy ids equal the
goldens'. Exits 1 when a plan given with --exact does not reproduce the
greedy ids exactly or its logits are off by more than --max-rel-err, or when
a --close plan's ids are not all in the vocabulary, not exactly as many as
asked, or its logits are off by more than --close-rel-err.
Standard library only.
"""
import argparse
import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path


def read_f32_tensor(path, name):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    t = header[name]
    begin, end = t["data_offsets"]
    raw = data[8 + n + begin : 8 + n + end]
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


def run_plan(solrun, plan, ids, count):
    prompt = ",".join(map(str, ids))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "logits.f32"
        subprocess.run([solrun, plan, "--device", "cpu", "--prompt-ids", prompt,
                        "--max-tokens", "0", "--logits-out", str(out)], check=True)
        raw = out.read_bytes()
    logits = struct.unpack(f"<{len(raw) // 4}f", raw)
    run = subprocess.run([solrun, plan, "--device", "cpu", "--prompt-ids", prompt,
                          "--max-tokens", str(count), "--ignore-eos", "--json"],
                         check=True, capture_output=True, text=True)
    return logits, json.loads(run.stdout)["ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--exact", action="append", default=[], help="NAME=PLAN")
    ap.add_argument("--close", action="append", default=[], help="NAME=PLAN")
    ap.add_argument("--max-rel-err", type=float, default=1e-2)
    ap.add_argument("--close-rel-err", type=float, default=0.1)
    args = ap.parse_args()

    golden = json.loads((Path(args.model) / "golden.json").read_text())
    want_ids = golden["greedy_ids"]
    want = read_f32_tensor(Path(args.model) / "golden_logits.safetensors", "logits")
    config = json.loads((Path(args.model) / "config.json").read_text())
    vocab = config["vocab_size"]
    failed = False
    for kind, specs in (("exact", args.exact), ("close", args.close)):
        for spec in specs:
            name, plan = spec.split("=", 1)
            logits, ids = run_plan(args.solrun, plan, golden["input_ids"], len(want_ids))
            if len(logits) != len(want):
                sys.exit(f"FAIL: {name}: {len(logits)} logits, goldens have {len(want)}")
            num = sum((a - b) ** 2 for a, b in zip(logits, want))
            rel = math.sqrt(num / sum(b * b for b in want))
            same = sum(a == b for a, b in zip(ids, want_ids))
            print(f"{name}: logits rel L2 error {rel:.3e}, greedy "
                  f"{'identical' if ids == want_ids else 'different'} "
                  f"({same}/{len(want_ids)} ids equal), {len(ids)} ids")
            if not math.isfinite(rel):
                failed = True
            elif kind == "exact":
                failed |= ids != want_ids or rel > args.max_rel_err
            else:
                failed |= (len(ids) != len(want_ids) or rel > args.close_rel_err
                           or not all(0 <= i < vocab for i in ids))
    if failed:
        print("FAIL")
        sys.exit(1)


if __name__ == "__main__":
    main()

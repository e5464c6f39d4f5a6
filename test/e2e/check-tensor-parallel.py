#!/usr/bin/env python3
"""Checks that a model split over tensor-parallel ranks computes what it does
whole.

Compiles MODEL once as it is and once per --ranks N with
`solc --tensor-parallel-size N`, runs each plan on the reference executor
(which simulates the N ranks: an all-reduce is a sum) over the golden input
ids of --ids (a tiny model folder with golden.json), and compares the
teacher-forced logits with the unsplit plan's: relative L2 error <=
--max-rel-err (float32 rounding: the ranks add their partial products in
another order) and the greedy continuation identical. Standard library
only (CI has no numpy).
"""
import argparse
import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path


def run_logits(solrun, plan, prompt, out):
    subprocess.run([solrun, str(plan), "--device", "cpu", "--prompt-ids", prompt,
                    "--max-tokens", "0", "--logits-out", str(out)], check=True)
    raw = Path(out).read_bytes()
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def run_greedy(solrun, plan, prompt, tokens):
    run = subprocess.run([solrun, str(plan), "--device", "cpu", "--prompt-ids", prompt,
                          "--max-tokens", str(tokens), "--ignore-eos", "--json"],
                         check=True, capture_output=True, text=True)
    return json.loads(run.stdout)["ids"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--model", required=True, help="what solc compiles")
    ap.add_argument("--ids", required=True, help="folder with golden.json (input ids)")
    ap.add_argument("--ranks", default="2,4", help="comma-separated tensor-parallel sizes")
    ap.add_argument("--name", help="name to print (default: the model folder's)")
    ap.add_argument("--max-rel-err", type=float, default=1e-5)
    ap.add_argument("--greedy-tokens", type=int, default=16)
    ap.add_argument("solc_args", nargs="*", help="more solc arguments (after --)")
    args = ap.parse_args()

    golden = json.loads((Path(args.ids) / "golden.json").read_text())
    prompt = ",".join(map(str, golden["input_ids"]))
    name = args.name or Path(args.model).name
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)

        def compile_plan(ranks):
            plan = tmp / f"tp{ranks}.plan"
            subprocess.run([args.solc, args.model, "--gpu", "none", "-q", "-o", str(plan),
                            "--tensor-parallel-size", str(ranks)] + args.solc_args, check=True)
            return plan

        whole = compile_plan(1)
        want = run_logits(args.solrun, whole, prompt, tmp / "tp1.f32")
        want_ids = run_greedy(args.solrun, whole, prompt, args.greedy_tokens)
        for ranks in (int(r) for r in args.ranks.split(",")):
            plan = compile_plan(ranks)
            got = run_logits(args.solrun, plan, prompt, tmp / f"tp{ranks}.f32")
            if len(got) != len(want):
                sys.exit(f"FAIL: {name} tp={ranks} wrote {len(got)} logits, the unsplit plan {len(want)}")
            num = sum((a - b) ** 2 for a, b in zip(got, want))
            den = sum(b * b for b in want)
            rel = math.sqrt(num / den)
            got_ids = run_greedy(args.solrun, plan, prompt, args.greedy_tokens)
            same = got_ids == want_ids
            ok = math.isfinite(rel) and rel <= args.max_rel_err and same
            failed |= not ok
            print(f"{name} tp={ranks}: logits rel L2 vs unsplit {rel:.1e} (max {args.max_rel_err:g}), "
                  f"greedy {'identical' if same else 'DIFFERENT'} over {len(want_ids)} tokens"
                  f"{'' if ok else ' FAIL'}")
            if not same:
                print(f"  unsplit {want_ids}\n  split   {got_ids}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""CI gate of a trained model directory (models/sol-tiny): quality on CPU.

Compiles DIR with `solc --gpu none`, then on the CPU reference executor:
  perplexity  `solrun --perplexity DIR/heldout.txt --limit-tokens ci.limit
              --window ci.window --stride ci.stride --json` must be within
              --tolerance (relative, default 0.5%) of ci.perplexity_fp32
              (Transformers float32) from DIR/eval.json;
  goldens     each goldens[i].prompt_ids, run with `--max-tokens len(ids)
              --ignore-eos --json`, must give exactly goldens[i].ids.
Prints one line per check and exits non-zero when any fails. Standard
library only (CI has no numpy).
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--model", required=True, help="model directory with eval.json and heldout.txt")
    ap.add_argument("--tolerance", type=float, default=0.005,
                    help="largest |ppl / ppl_fp32 - 1| (default 0.005)")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    model = Path(args.model)
    ev = json.loads((model / "eval.json").read_text())
    ci = ev["ci"]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        plan = str(Path(tmp) / "model.plan")
        subprocess.run([args.solc, str(model), "--gpu", "none", "-q", "-o", plan], check=True)

        got = run_json([args.solrun, plan, "--device", args.device,
                        "--perplexity", str(model / "heldout.txt"),
                        "--limit-tokens", str(ci["limit"]), "--window", str(ci["window"]),
                        "--stride", str(ci["stride"]), "--json"])
        want = float(ci["perplexity_fp32"])
        rel = got["perplexity"] / want - 1
        ok = abs(rel) <= args.tolerance
        failures += not ok
        print(f"{model.name}: perplexity {got['perplexity']:.4f} vs fp32 {want:.4f} "
              f"({rel * 100:+.3f}%, max {args.tolerance * 100:g}%) over {got['tokens']} tokens, "
              f"window {got['window']} stride {got['stride']}: {'ok' if ok else 'FAIL'}")

        for i, golden in enumerate(ev["goldens"]):
            prompt, ids = golden["prompt_ids"], golden["ids"]
            res = run_json([args.solrun, plan, "--device", args.device,
                            "--prompt-ids", ",".join(map(str, prompt)),
                            "--max-tokens", str(len(ids)), "--ignore-eos", "--json"])
            ok = res["ids"] == ids
            failures += not ok
            line = f"{model.name}: golden {i}: prompt {len(prompt)} ids, {len(ids)} greedy ids "
            if ok:
                print(line + "identical: ok")
            else:
                first = next((k for k, (a, b) in enumerate(zip(res["ids"], ids)) if a != b),
                             min(len(res["ids"]), len(ids)))
                print(line + f"differ from index {first}: FAIL\n  want {ids}\n  got  {res['ids']}")
    if failures:
        print(f"{model.name}: {failures} check(s) failed")
        sys.exit(1)


if __name__ == "__main__":
    main()

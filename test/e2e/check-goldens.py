#!/usr/bin/env python3
"""Checks a plan against the Transformers goldens of a tiny test model.

Runs `solrun --logits-out` on the golden input ids (teacher-forced logits of
every position) and `solrun --max-tokens 32 --ignore-eos --json` (greedy
continuation), and compares them with golden_logits.safetensors and
golden.json: relative L2 error of the logits <= --max-rel-err, greedy ids
identical (up to the first tie, where the golden records its steps' top-2
margins); with --logits-only, the logits alone. Standard library only (CI
has no numpy).
"""
import argparse
import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path


TIE_MARGIN = 1e-3


def read_f32_tensor(path, name):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    t = header[name]
    if t["dtype"] != "F32":
        sys.exit(f"{path}: {name} is {t['dtype']}, expected F32")
    begin, end = t["data_offsets"]
    raw = data[8 + n + begin : 8 + n + end]
    return list(struct.unpack(f"<{len(raw) // 4}f", raw)), t["shape"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--model", required=True, help="tiny model folder with golden.json")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-rel-err", type=float, default=1e-2)
    ap.add_argument("--logits-only", action="store_true",
                    help="skip the greedy comparison (plans that differ from "
                         "the goldens by design, such as quantized ones)")
    args = ap.parse_args()

    golden = json.loads((Path(args.model) / "golden.json").read_text())
    ids = golden["input_ids"]
    want_logits, shape = read_f32_tensor(Path(args.model) / "golden_logits.safetensors", "logits")
    prompt = ",".join(map(str, ids))

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "logits.f32"
        subprocess.run([args.solrun, args.plan, "--device", args.device, "--prompt-ids", prompt,
                        "--max-tokens", "0", "--logits-out", str(out)], check=True)
        raw = out.read_bytes()
    got = struct.unpack(f"<{len(raw) // 4}f", raw)
    if len(got) != len(want_logits):
        sys.exit(f"FAIL: solrun wrote {len(got)} logits, goldens have {len(want_logits)} ({shape})")
    num = sum((a - b) ** 2 for a, b in zip(got, want_logits))
    den = sum(b * b for b in want_logits)
    rel = math.sqrt(num / den)
    if not math.isfinite(rel):
        sys.exit("FAIL: non-finite logits")

    if args.logits_only:
        print(f"{Path(args.model).name}: logits rel L2 error {rel:.3e} (max {args.max_rel_err:g})")
        sys.exit(1 if rel > args.max_rel_err else 0)

    run = subprocess.run([args.solrun, args.plan, "--device", args.device, "--prompt-ids", prompt,
                          "--max-tokens", str(len(golden["greedy_ids"])), "--ignore-eos", "--json"],
                         check=True, capture_output=True, text=True)
    result = json.loads(run.stdout)
    # Goldens that record each greedy step's top-2 margin (onnxruntime's, of
    # quantized graphs) are compared up to the first tie: past it either
    # token is right.
    want = golden["greedy_ids"]
    tie = next((i for i, m in enumerate(golden.get("greedy_top2_margins", [])) if m < TIE_MARGIN), None)
    compared = want if tie is None else want[:tie]
    got = result["ids"][: len(compared)]
    greedy_ok = got == compared
    until = "" if tie is None else f" (step {tie + 1} of {len(want)} is a tie: top-2 margin below {TIE_MARGIN:g})"
    print(f"{Path(args.model).name}: logits rel L2 error {rel:.3e} (max {args.max_rel_err:g}), "
          f"greedy {'identical' if greedy_ok else 'DIFFERENT'} over {len(compared)} tokens{until}")
    if not greedy_ok:
        print(f"  want {golden['greedy_ids']}\n  got  {result['ids']}")
    if rel > args.max_rel_err or not greedy_ok:
        sys.exit(1)


if __name__ == "__main__":
    main()

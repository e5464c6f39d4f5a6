#!/usr/bin/env python3
"""Checks `solrun --perplexity-ids ... --json` against independent computations.

  goldens  the result of one window covering all of a tiny model's golden
           input ids: its NLL must equal the one of golden_logits.safetensors
           (Transformers float32, teacher-forced over the whole prefix) within
           --rel-tol.
  windows  the result of a strided pass (--window/--stride) with --logits-out:
           the windows are recomputed here (Transformers' recipe), each is run
           alone with `solrun --prompt-ids <window> --max-tokens 0
           --logits-out`, and every scored row and the NLL must agree.

Log-softmax in double (Python floats). Standard library only (CI has no numpy).
"""
import argparse
import json
import math
import struct
import subprocess
import sys
import tempfile
from pathlib import Path


def read_f32(path):
    raw = Path(path).read_bytes()
    return struct.unpack(f"<{len(raw) // 4}f", raw)


def read_safetensors_f32(path, name):
    data = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    t = json.loads(data[8 : 8 + n])[name]
    assert t["dtype"] == "F32", t
    begin, end = t["data_offsets"]
    raw = data[8 + n + begin : 8 + n + end]
    return struct.unpack(f"<{len(raw) // 4}f", raw), t["shape"]


def logprob(row, target):
    m = max(row)
    return row[target] - m - math.log(sum(math.exp(x - m) for x in row))


def windows(n, w, s):
    """(begin, end, score_from) of Transformers' strided recipe."""
    out, prev_end, begin = [], 0, 0
    while True:
        end = min(begin + w, n)
        score_from = max(prev_end, begin + 1)
        if score_from < end:
            out.append((begin, end, score_from))
        if end == n:
            return out
        prev_end, begin = end, begin + s


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def check_fields(result, tokens, window, stride):
    for key, want in (("tokens", tokens), ("window", window), ("stride", stride)):
        if result[key] != want:
            fail(f"{key} is {result[key]}, expected {want}")
    if not math.isclose(result["perplexity"], math.exp(result["nll"]), rel_tol=1e-12):
        fail(f"perplexity {result['perplexity']} is not exp(nll {result['nll']})")


def goldens(args):
    golden = json.loads((Path(args.model) / "golden.json").read_text())
    ids = golden["input_ids"]
    logits, shape = read_safetensors_f32(Path(args.model) / "golden_logits.safetensors", "logits")
    vocab = shape[-1]
    nll = -sum(logprob(logits[(t - 1) * vocab : t * vocab], ids[t]) for t in range(1, len(ids)))
    nll /= len(ids) - 1
    result = json.loads(Path(args.result).read_text())
    check_fields(result, len(ids) - 1, result["window"], result["stride"])
    if result["window"] < len(ids):
        fail(f"window {result['window']} does not cover the {len(ids)} golden ids")
    rel = abs(result["nll"] / nll - 1)
    if rel > args.rel_tol:
        fail(f"nll {result['nll']:.8f}, goldens' {nll:.8f} (relative error {rel:.2e})")
    print(f"nll {result['nll']:.6f} matches the goldens' {nll:.6f} over {len(ids) - 1} positions "
          f"(relative error {rel:.1e})")


def strided(args):
    ids = json.loads(Path(args.ids).read_text())
    result = json.loads(Path(args.result).read_text())
    w, s = result["window"], result["stride"]
    rows = read_f32(args.logits)
    spans = windows(len(ids), w, s)
    scored = sum(end - score_from for _, end, score_from in spans)
    check_fields(result, scored, w, s)
    if len(rows) % scored:
        fail(f"--logits-out holds {len(rows)} floats, not a multiple of {scored} rows")
    vocab = len(rows) // scored
    total, row, worst = 0.0, 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "alone.f32"
        for begin, end, score_from in spans:
            prompt = ",".join(map(str, ids[begin:end]))
            subprocess.run([args.solrun, args.plan, "--device", "cpu", "--prompt-ids", prompt,
                            "--max-tokens", "0", "--logits-out", str(out)], check=True)
            alone = read_f32(out)
            for t in range(score_from, end):
                want = alone[(t - 1 - begin) * vocab : (t - begin) * vocab]
                got = rows[row * vocab : (row + 1) * vocab]
                worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
                total += logprob(want, ids[t])
                row += 1
    nll = -total / scored
    if worst > args.abs_tol:
        fail(f"logits rows differ from the windows run alone by up to {worst:.3e}")
    if abs(result["nll"] / nll - 1) > args.rel_tol:
        fail(f"nll {result['nll']:.10f}, windows run alone {nll:.10f}")
    print(f"{scored} positions in {len(spans)} windows: logits and nll match each window run alone")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["goldens", "windows"])
    ap.add_argument("--result", required=True, help="solrun --perplexity-ids ... --json output")
    ap.add_argument("--model", help="goldens: the tiny model folder with golden.json")
    ap.add_argument("--solrun", help="windows: the solrun binary")
    ap.add_argument("--plan", help="windows: the plan")
    ap.add_argument("--ids", help="windows: the ids file (a JSON array)")
    ap.add_argument("--logits", help="windows: the --logits-out file")
    ap.add_argument("--rel-tol", type=float, default=1e-4)
    ap.add_argument("--abs-tol", type=float, default=1e-4)
    args = ap.parse_args()
    goldens(args) if args.mode == "goldens" else strided(args)


if __name__ == "__main__":
    main()

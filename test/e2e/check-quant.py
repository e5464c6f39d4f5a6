#!/usr/bin/env python3
"""CI gate of solc --quant on a trained model directory (models/sol-tiny).

Compiles DIR with `solc --gpu none` (with kernels for --device cuda) unquantized and with each --quant scheme,
scores the first --positions ids of DIR/heldout.txt with every plan on the
CPU reference executor (`solrun --perplexity --argmax-out`), and compares
each quantized plan with the unquantized one:
  perplexity delta   (ppl / ppl_bf16 - 1), at most the scheme's gate
  top-1 agreement    share of positions where both plans' argmax agree,
                     at least the scheme's gate
Gates (the quantization issue's table): int8 +0.5% and 95%, fp8 +1.5% and
92%; int4-awq +6%, and, against int4-rtn at the same group size, at most
two-thirds of its perplexity increase and a higher top-1 agreement (both
when int4-rtn is also run). int4-rtn, the baseline AWQ is measured against,
has no gate of its own; it must stay within a sanity bound (+20%, 50%) that
only a broken kernel or format misses. int4-awq calibrates on
--calib-tokens of solc's built-in text. Prints one line per scheme and
exits non-zero when one fails. Standard library only (CI has no numpy).
"""
import argparse
import array
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GATES = {  # scheme: (max perplexity increase, min top-1 agreement)
    "int8": (0.005, 0.95),
    "fp8": (0.015, 0.92),
    "int4-rtn": (0.20, 0.50),
    "int4-awq": (0.06, 0.50),
}
# int4-awq against int4-rtn: at most this share of rtn's perplexity increase.
AWQ_SHARE_OF_RTN = 2 / 3


def score(solrun, plan, text, positions, window, stride, argmax_path, device,
          step_tokens=0):
    steps = ["--max-num-batched-tokens", str(step_tokens)] if step_tokens else []
    out = subprocess.run(
        [solrun, plan, "--device", device, "--perplexity", text,
         "--limit-tokens", str(positions), "--window", str(window),
         "--stride", str(stride), "--json", "--argmax-out", argmax_path, *steps],
        check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    ids = array.array("i")
    with open(argmax_path, "rb") as f:
        ids.frombytes(f.read())
    if len(ids) != result["tokens"]:
        sys.exit(f"{plan}: {len(ids)} argmax ids for {result['tokens']} scored positions")
    return result, ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--model", required=True, help="model directory with heldout.txt")
    ap.add_argument("--schemes", default="int8,fp8,int4-rtn,int4-awq")
    ap.add_argument("--calib-tokens", type=int, default=4096,
                    help="int4-awq's calibration tokens (solc --calib-tokens)")
    ap.add_argument("--calib-device", default="auto",
                    help="where int4-awq calibrates (solc --calib-device)")
    ap.add_argument("--positions", type=int, default=2048)
    ap.add_argument("--window", type=int, default=1024)
    ap.add_argument("--stride", type=int, default=512)
    ap.add_argument("--device", default="cpu",
                    help="cpu (plans compiled with --gpu none) or cuda")
    ap.add_argument("--text", help="held-out text (default MODEL/heldout.txt)")
    ap.add_argument("--step-tokens", type=int, default=0,
                    help="run the windows in steps of at most this many tokens "
                         "(solrun --max-num-batched-tokens), e.g. 64 for the "
                         "quantized batched-decode kernels")
    args = ap.parse_args()

    model = Path(args.model)
    text = args.text or str(model / "heldout.txt")
    gpu_flags = ["--gpu", "none"] if args.device == "cpu" else []
    failures = 0
    compile_seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        def compile_and_score(name, flags):
            plan = str(Path(tmp) / f"{name}.plan")
            start = time.monotonic()
            subprocess.run([args.solc, str(model), *gpu_flags, "-q", "-o", plan, *flags],
                           check=True)
            compile_seconds[name] = time.monotonic() - start
            return score(args.solrun, plan, text, args.positions, args.window, args.stride,
                         str(Path(tmp) / f"{name}.argmax"), args.device, args.step_tokens)

        base, base_ids = compile_and_score("bf16", [])
        print(f"{model.name}: unquantized perplexity {base['perplexity']:.4f} over "
              f"{base['tokens']} tokens, window {base['window']} stride {base['stride']}")
        measured = {}
        for scheme in args.schemes.split(","):
            max_increase, min_top1 = GATES[scheme]
            flags = ["--quant", scheme]
            if scheme == "int4-awq":
                flags += ["--calib-tokens", str(args.calib_tokens),
                          "--calib-device", args.calib_device]
            got, ids = compile_and_score(scheme, flags)
            delta = got["perplexity"] / base["perplexity"] - 1
            top1 = sum(a == b for a, b in zip(ids, base_ids)) / len(ids)
            measured[scheme] = (delta, top1)
            ok = delta <= max_increase and top1 >= min_top1
            against = ""
            if scheme == "int4-awq" and "int4-rtn" in measured:
                rtn_delta, rtn_top1 = measured["int4-rtn"]
                ok = ok and delta <= AWQ_SHARE_OF_RTN * rtn_delta and top1 > rtn_top1
                against = (f"; int4-rtn {rtn_delta * 100:+.3f}% (max "
                           f"{AWQ_SHARE_OF_RTN * rtn_delta * 100:+.3f}%), {rtn_top1 * 100:.2f}%")
            failures += not ok
            print(f"{model.name} --quant {scheme}: perplexity {got['perplexity']:.4f} "
                  f"({delta * 100:+.3f}%, max +{max_increase * 100:g}%), top-1 agreement "
                  f"{top1 * 100:.2f}% (min {min_top1 * 100:g}%){against}: "
                  f"{'ok' if ok else 'FAIL'}"
                  + (f" (solc {compile_seconds[scheme]:.1f} s, calibration on "
                     f"{args.calib_device})" if scheme == "int4-awq" else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

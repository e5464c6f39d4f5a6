#!/usr/bin/env python3
"""Already-quantized checkpoints compile to the plans solc --quant makes.

For each --formats entry, sol-make-quantized-checkpoint writes MODEL as an
AutoAWQ, GPTQ or compressed-tensors fp8 checkpoint (quantized with Sol's own
quantizer) and the bf16 reference checkpoint whose `solc --quant` gives the
same codes and scales. Both are compiled with `solc --gpu none` (the
quantized one without --quant) and run on the CPU reference executor:
greedy ids from --prompt-ids, the teacher-forced logits of those ids and,
with --text, the perplexity of its first --positions ids and the argmax at
every position. The results must be identical, bit for bit. Prints one line per format and exits non-zero when
one differs. Standard library only (CI has no numpy).

With --act-order (gptq formats) the checkpoint is quantized in a shuffled
input order (desc_act) and the reference holds its dequantized weights,
compiled without --quant: the plans compute the same products in another
order of the inputs, so the greedy ids must be equal and, with --text, the
perplexity within 1e-4 (relative) and the argmax equal at 99% of positions.

fp8-blocks (Transformers' fine-grained fp8, a scale per --block-size block)
and fp8-block (compressed-tensors' block strategy) import dequantized to
bf16: their reference holds those bf16 weights and compiles without --quant,
and the results must be identical.
"""
import argparse
import filecmp
import json
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

# The solc --quant scheme of the reference; None: the reference holds the
# weights the importer dequantizes to and compiles without --quant.
SOL_SCHEME = {"awq": "int4-rtn", "gptq": "int4-rtn", "gptq_v2": "int4-rtn",
              "fp8-channel": "fp8", "fp8-tensor": "fp8", "fp8-blocks": None,
              "fp8-block": None}


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True, help="sol-make-quantized-checkpoint")
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--model", required=True, help="bf16 checkpoint directory")
    ap.add_argument("--formats", default="awq,gptq,gptq_v2,fp8-channel,fp8-tensor")
    ap.add_argument("--group-size", type=int, default=128)
    ap.add_argument("--block-size", default="128,128", help="fp8-block(s): rows,cols a scale")
    ap.add_argument("--opt-level", type=int, default=2, help="solc -O level of both plans")
    ap.add_argument("--text", help="held-out text for the perplexity (needs a tokenizer)")
    ap.add_argument("--positions", type=int, default=512)
    ap.add_argument("--prompt-ids", default="0,100,200,300")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--act-order", action="store_true",
                    help="gptq: act-order checkpoints against their dequantized weights")
    args = ap.parse_args()

    model = Path(args.model)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        results = {}  # reference checkpoint -> its results, reused when equal

        def evaluate(name, checkpoint, flags):
            plan = tmp / f"{name}.plan"
            run([args.solc, str(checkpoint), "--gpu", "none", "-q", f"-O{args.opt_level}",
                 "-o", str(plan), *flags])
            greedy = json.loads(run([args.solrun, str(plan), "--device", "cpu",
                                     "--prompt-ids", args.prompt_ids, "--max-tokens",
                                     str(args.max_tokens), "--ignore-eos", "--json"]))
            logits = tmp / f"{name}.logits"
            run([args.solrun, str(plan), "--device", "cpu", "--prompt-ids", args.prompt_ids,
                 "--max-tokens", "0", "--logits-out", str(logits)])
            result = {"ids": greedy["ids"], "logits": logits.read_bytes()}
            if args.text:
                argmax = tmp / f"{name}.argmax"
                ppl = json.loads(run([args.solrun, str(plan), "--device", "cpu",
                                      "--perplexity", args.text, "--limit-tokens",
                                      str(args.positions), "--json",
                                      "--argmax-out", str(argmax)]))
                result["nll"] = ppl["nll"]
                result["perplexity"] = ppl["perplexity"]
                result["argmax"] = argmax.read_bytes()
            return result

        for fmt in args.formats.split(","):
            out, ref = tmp / fmt, tmp / f"{fmt}-ref"
            run([args.tool, str(model), "--format", fmt, "--group-size",
                 str(args.group_size), "--block-size", *args.block_size.split(","),
                 "--out", str(out), "--reference", str(ref),
                 *(["--act-order"] if args.act_order else [])])
            scheme = SOL_SCHEME[fmt]
            got = evaluate(fmt, out, [])
            if args.act_order:
                want = evaluate(f"{fmt}-ref", ref, [])
                ok = got["ids"] == want["ids"]
                what = f"{len(got['ids'])} greedy ids"
                if args.text:
                    ids = [struct.unpack(f"<{len(r['argmax']) // 4}i", r["argmax"])
                           for r in (got, want)]
                    same = sum(a == b for a, b in zip(*ids))
                    share = same / max(1, len(ids[1]))
                    rel = abs(got["perplexity"] - want["perplexity"]) / want["perplexity"]
                    ok = ok and rel < 1e-4 and share >= 0.99
                    what = (f"perplexity {got['perplexity']:.4f} against "
                            f"{want['perplexity']:.4f} (relative {rel:.1e}), argmax "
                            f"{100 * share:.1f}% equal and {what}")
                failures += not ok
                print(f"{model.name} {fmt} act-order: {what} against its dequantized "
                      f"weights in bf16: {'ok' if ok else 'FAIL'}")
                if got["ids"] != want["ids"]:
                    print(f"  ids: {got['ids']} != {want['ids']}")
                continue
            want = None
            for (other_scheme, other_ref), other in results.items():
                if other_scheme == scheme and filecmp.cmp(
                        other_ref / "model.safetensors", ref / "model.safetensors",
                        shallow=False):
                    want = other
            if want is None:
                flags = ["--quant", scheme] if scheme else []
                if scheme == "int4-rtn":
                    flags += ["--group-size", str(args.group_size)]
                want = evaluate(f"{fmt}-ref", ref, flags)
                results[(scheme, ref)] = want
            same = got == want
            failures += not same
            what = f"the prompt's logits and {len(got['ids'])} greedy ids"
            if args.text:
                what = (f"perplexity {got['perplexity']:.4f} over {args.positions} ids, "
                        f"argmax at every position, {what}")
            against = (f"solc --quant {scheme}" if scheme
                       else "its dequantized weights in bf16")
            print(f"{model.name} {fmt}: {what} "
                  f"{'equal' if same else 'DIFFER'} to {against}"
                  f": {'ok' if same else 'FAIL'}")
            if not same:
                for key in got:
                    if got[key] != want[key] and key not in ("argmax", "logits"):
                        print(f"  {key}: {got[key]} != {want[key]}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Quantized plans against the bf16 plan and Transformers, same run, one GPU.

For each --shape (a random-weight checkpoint made by scripts/make-shape-model.py
in /tmp, reused when there) and each --schemes entry (bf16 = no --quant):

  solc MODEL [--quant SCHEME] -o PLAN     compile time, plan size, weight bytes
  batch 1   solrun PLAN --prompt-ids (128 seeded ids) --max-tokens 128
            --ignore-eos --json: medians of --runs runs after a warm-up
            (decode tok/s, TPOT), and the fraction of the bandwidth bound
            (weight bytes / --bandwidth per token)
  8, 64     solrun PLAN --bench --num-prompts S --input-len 128
  seqs      --output-len 256 --max-num-seqs S: decode tok/s = S / mean TPOT
            (--sequences 1 leaves them out)
  TTFT      solrun PLAN --prompt-ids (--ttft-tokens seeded ids, default 2,048)
            --max-tokens 1 --json: the median time to the first token of
            --runs runs after a warm-up, the prefill's speed (0 leaves it out)

beside Transformers bf16 generate() (sdpa, dynamic cache) on the same
checkpoint and prompt (bench/decode_bench.py's measurement; --skip-hf leaves
it out). Random weights measure speed only; quality is bench/quality.py's and
test/e2e/check-quant.py's on trained weights.

  python3 bench/quant_bench.py --solc build/bin/solc --solrun build/bin/solrun \\
      --shape llama-3.2-1b --json-out /tmp/quant.json

Prints one JSON object and a table; exit code 0 if every row ran.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import decode_bench  # noqa: E402  (the Transformers rows, solrun JSON parsing)

REPO = Path(__file__).resolve().parent.parent


def log(msg):
    print(f"[quant_bench] {msg}", file=sys.stderr, flush=True)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} failed (exit {r.returncode}): "
                           f"{(r.stderr or r.stdout)[-1500:]}")
    return r.stdout


def weight_bytes(solrun, plan):
    """The plan's weight bytes, from `solrun --info` ("weights: N tensors, X GB")."""
    info = run([solrun, plan, "--info"])
    m = re.search(r"^weights:\s+\d+ tensors, ([0-9.]+) GB", info, re.M)
    if not m:
        raise RuntimeError(f"solrun --info printed no weight size: {info[:400]!r}")
    return float(m.group(1)) * 1e9


def fmt(v, spec=".0f"):
    """A figure, or '-' for one not measured."""
    return "-" if v is None else format(v, spec)


def ratio(a, b):
    return None if a is None or not b else a / b


def scheme_row(args, model, scheme, prompt):
    plan = f"/tmp/quant-bench-{model.name}-{scheme}.plan"
    flags = [] if scheme == "bf16" else ["--quant", scheme]
    t = time.time()
    run([args.solc, str(model), "-q", "-o", plan, *flags])
    solc_s = time.time() - t
    wbytes = weight_bytes(args.solrun, plan)
    decode = [args.solrun, plan, "--prompt-ids", ",".join(map(str, prompt)), "--max-tokens",
            str(args.new_tokens), "--ignore-eos", "--json", "--device", "cuda"]
    tpots, rates, ids = [], [], None
    for i in range(1 + args.runs):
        out = decode_bench.parse_solrun_json(run(decode))
        if i == 0:
            ids = out.get("ids", [])
            continue
        tpots.append(float(out["timing"]["tpot_ms"]))
        rates.append(float(out["timing"]["decode_tokens_per_s"]))
    def batched(seqs):
        cmd = [args.solrun, plan, "--bench", "--json", "--num-prompts", str(seqs), "--input-len",
               "128", "--output-len", "256", "--max-num-seqs", str(seqs), "--device", "cuda"]
        return [seqs * 1000.0 / decode_bench.parse_solrun_json(run(cmd))["mean_tpot_ms"]
                for _ in range(args.batch_runs)]
    ttft = None
    if args.ttft_tokens > 0:
        long_prompt = [random.Random(1).randrange(1000, 30000) for _ in range(args.ttft_tokens)]
        prefill = [args.solrun, plan, "--prompt-ids", ",".join(map(str, long_prompt)),
                   "--max-tokens", "1", "--ignore-eos", "--json", "--device", "cuda"]
        ttfts = [float(decode_bench.parse_solrun_json(run(prefill))["timing"]["ttft_ms"])
                 for _ in range(1 + args.runs)][1:]
        ttft = statistics.median(ttfts)
    seqs8 = batched(8) if 8 in args.sequences else None
    seqs64 = batched(64) if 64 in args.sequences else None
    tpot = statistics.median(tpots)
    bound_ms = wbytes / args.bandwidth * 1000.0
    row = {"scheme": scheme, "solc_s": solc_s, "plan_bytes": Path(plan).stat().st_size,
           "weight_bytes": wbytes, "tpot_ms": tpot, "decode_tokens_per_s": statistics.median(rates),
           "fraction_of_bandwidth_bound": bound_ms / tpot, "tpot_ms_runs": tpots,
           "decode_8_tokens_per_s": statistics.median(seqs8) if seqs8 else None,
           "decode_64_tokens_per_s": statistics.median(seqs64) if seqs64 else None,
           "decode_64_runs": seqs64, "ttft_ms": ttft, "ids": ids}
    log(f"{model.name} {scheme}: {row['decode_tokens_per_s']:.1f} tok/s batch 1 "
        f"({100 * row['fraction_of_bandwidth_bound']:.1f}% of bound), "
        f"{fmt(row['decode_8_tokens_per_s'])} at 8 sequences, "
        f"{fmt(row['decode_64_tokens_per_s'])} at 64, TTFT {fmt(ttft, '.2f')} ms, "
        f"plan {wbytes / 1e9:.2f} GB")
    Path(plan).unlink(missing_ok=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--shape", action="append", help="shape(s) of scripts/make-shape-model.py "
                    "(default llama-3.2-1b and llama-3.1-8b)")
    ap.add_argument("--schemes", default="bf16,int8,fp8,int4-rtn")
    ap.add_argument("--runs", type=int, default=3, help="timed batch-1 runs after a warm-up")
    ap.add_argument("--batch-runs", type=int, default=1, help="64-sequence runs")
    ap.add_argument("--sequences", default="1,8,64",
                    help="which of batch 1, 8 and 64 sequences to measure (batch 1 always)")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--hf-runs", type=int, default=3)
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--bandwidth", type=float, default=4.3e12, help="bytes/s for the bound")
    ap.add_argument("--ttft-tokens", type=int, default=2048,
                    help="prompt of the TTFT runs (0: none)")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    args.sequences = {int(v) for v in args.sequences.split(",") if v}
    if not args.sequences <= {1, 8, 64}:
        ap.error(f"--sequences takes 1, 8 and 64, got {sorted(args.sequences)}")
    # decode_bench's Transformers measurement reads these.
    args.prompt_tokens, args.static_compile, args.compile_timeout = 128, False, 0

    prompt = [random.Random(0).randrange(1000, 30000) for _ in range(args.prompt_tokens)]
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().splitlines()
    # The options that change what is measured, for bench/make-results.py.
    options = []
    if args.sequences != {1, 8, 64}:
        options.append("--sequences " + ",".join(map(str, sorted(args.sequences))))
    if args.skip_hf:
        options.append("--skip-hf")
    if args.ttft_tokens != 2048:
        options.append(f"--ttft-tokens {args.ttft_tokens}")
    report = {"gpu": gpu[0] if gpu else None,
              "date": time.strftime("%Y-%m-%d"), "prompt_tokens": args.prompt_tokens,
              "new_tokens": args.new_tokens, "ttft_tokens": args.ttft_tokens,
              "options": " ".join(options), "shapes": []}
    failed = False
    for shape in args.shape or ["llama-3.2-1b", "llama-3.1-8b"]:
        model = Path(f"/tmp/{shape}")
        if not (model / "config.json").exists():
            log(f"making {model}")
            run([sys.executable, str(REPO / "scripts/make-shape-model.py"), "--shape", shape,
                 "--out", str(model)])
        entry = {"shape": shape, "rows": [], "errors": []}
        for scheme in args.schemes.split(","):
            try:
                entry["rows"].append(scheme_row(args, model, scheme, prompt))
            except RuntimeError as e:
                failed = True
                entry["errors"].append({"scheme": scheme, "error": str(e)})
                log(f"{shape} {scheme}: {e}")
        if not args.skip_hf:
            try:
                rows, _ = decode_bench.hf_rows(args, model, prompt, 0.0, [])
                entry["transformers_bf16_tokens_per_s"] = rows[0]["decode_tokens_per_s"]
            except Exception as e:  # noqa: BLE001 - report the baseline's failure, keep ours
                failed = True
                entry["errors"].append({"scheme": "transformers", "error": str(e)[:500]})
        report["shapes"].append(entry)

    for entry in report["shapes"]:
        for r in entry["rows"]:
            r.pop("ids", None)
    print(json.dumps(report))
    for entry in report["shapes"]:
        hf = entry.get("transformers_bf16_tokens_per_s")
        print(f"\n{entry['shape']}: batch 1 (prompt {args.prompt_tokens}, {args.new_tokens} new) and "
              f"64 sequences (128 + 256); Transformers bf16 batch 1: "
              f"{'-' if hf is None else format(hf, '.1f')} tok/s")
        print(f"{'scheme':<10} {'plan GB':>8} {'tok/s':>9} {'of bound':>9} {'vs bf16':>8} "
              f"{'8-seq tok/s':>12} {'vs bf16':>8} {'64-seq tok/s':>13} {'vs bf16':>8} "
              f"{'TTFT ms':>8} {'vs bf16':>8} {'solc s':>7}")
        base = next((r for r in entry["rows"] if r["scheme"] == "bf16"), None)
        for r in entry["rows"]:
            rel = {key: ratio(r.get(key), base.get(key) if base else None)
                   for key in ("decode_tokens_per_s", "decode_8_tokens_per_s",
                               "decode_64_tokens_per_s", "ttft_ms")}
            print(f"{r['scheme']:<10} {r['weight_bytes'] / 1e9:>8.2f} {r['decode_tokens_per_s']:>9.1f} "
                  f"{100 * r['fraction_of_bandwidth_bound']:>8.1f}% "
                  f"{fmt(rel['decode_tokens_per_s'], '.3f'):>8} "
                  f"{fmt(r['decode_8_tokens_per_s']):>12} "
                  f"{fmt(rel['decode_8_tokens_per_s'], '.3f'):>8} "
                  f"{fmt(r['decode_64_tokens_per_s']):>13} "
                  f"{fmt(rel['decode_64_tokens_per_s'], '.3f'):>8} "
                  f"{fmt(r.get('ttft_ms'), '.2f'):>8} {fmt(rel['ttft_ms'], '.3f'):>8} "
                  f"{r['solc_s']:>7.1f}")
        for e in entry["errors"]:
            print(f"{e['scheme']:<10} failed: {e['error'][:300]}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

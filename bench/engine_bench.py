#!/usr/bin/env python3
"""Batched engine benchmarks of issue 6: Sol against Hugging Face Transformers, same run.

Workloads (random prompt ids from a seeded RNG, greedy, ignore EOS, one CUDA GPU):

  concurrent   --concurrency sequences (default 64) of --prompt-tokens (128) decode
               --new-tokens (256) tokens together.
               sol: `solrun PLAN --bench --num-prompts C --input-len P --output-len N
                    --max-num-seqs C --json`; decode tok/s = C / mean TPOT (the batch's
                    steady decode rate) and the end-to-end output tok/s.
               transformers: generate() on the C prompts as one batch (bf16, sdpa,
                    dynamic cache), min_new_tokens = max_new_tokens = N; decode tok/s =
                    C * (N - 1) / (total - TTFT), TTFT = generate(max_new_tokens=1).
  prefix       --prefix-tokens (1024) shared ids + 8 own ids per request, 16 requests one
               at a time (--max-concurrency 1, so TTFT has no queue in it), 8 new tokens:
               mean TTFT with and without --enable-prefix-caching (the first cached
               request fills the cache); the ratio is the cached TTFT's share. The
               medians leave that first request out.
  offline      --offline-prompts (1000) requests, prompts uniform in 32..1024, outputs
               uniform in 32..512, all submitted at once: tokens/s and peak KV use.

  python3 bench/engine_bench.py --solrun build/bin/solrun --plan /tmp/x.plan \\
      --model /tmp/llama-3.2-1b --json-out /tmp/engine.json

Prints one JSON object and a table; exit code 0 when every requested workload ran.
"""

import argparse
import json
import platform
import subprocess
import sys
import time


def log(msg):
    print(f"[engine-bench] {msg}", file=sys.stderr, flush=True)


def solrun_bench(args, extra):
    cmd = [args.solrun, args.plan, "--bench", "--json", "--device", "cuda",
           "--seed", str(args.seed)] + extra
    log(" ".join(cmd))
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"solrun failed ({p.returncode}): {p.stderr.strip()[-2000:]}")
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    r = json.loads(line)
    r["wall_s"] = time.time() - t0
    return r


def sol_concurrent(args):
    c, n = args.concurrency, args.new_tokens
    r = solrun_bench(args, ["--num-prompts", str(c), "--input-len", str(args.prompt_tokens),
                            "--output-len", str(n), "--max-num-seqs", str(c)])
    tpot = r["mean_tpot_ms"]
    return {"engine": "sol", "decode_tok_s": c * 1000.0 / tpot if tpot > 0 else None,
            "output_tok_s": r["output_tokens_per_s"], "mean_tpot_ms": tpot,
            "mean_ttft_ms": r["mean_ttft_ms"], "elapsed_s": r["elapsed_s"], "raw": r}


def hf_concurrent(args):
    import torch
    from transformers import AutoModelForCausalLM
    c, n, p = args.concurrency, args.new_tokens, args.prompt_tokens
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16,
                                                 attn_implementation="sdpa").cuda().eval()
    vocab = model.config.vocab_size
    g = torch.Generator().manual_seed(args.seed)
    ids = torch.randint(0, vocab, (c, p), generator=g).cuda()
    mask = torch.ones_like(ids)

    def run(new):
        torch.cuda.synchronize()
        t0 = time.time()
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new,
                           min_new_tokens=new, do_sample=False, pad_token_id=0)
        torch.cuda.synchronize()
        return time.time() - t0

    run(4)  # warm-up
    ttft = run(1)
    total = run(n)
    decode = c * (n - 1) / (total - ttft)
    del model
    torch.cuda.empty_cache()
    return {"engine": f"transformers generate (bf16, sdpa, batch {c})",
            "decode_tok_s": decode, "output_tok_s": c * n / total,
            "mean_tpot_ms": (total - ttft) * 1000.0 / (n - 1), "mean_ttft_ms": ttft * 1000.0,
            "elapsed_s": total}


def sol_prefix(args):
    common = ["--num-prompts", "16", "--prefix-len", str(args.prefix_tokens), "--input-len", "8",
              "--output-len", "8", "--max-concurrency", "1"]
    cold = solrun_bench(args, common)
    warm = solrun_bench(args, common + ["--enable-prefix-caching"])
    # The mean over the cached run includes its first request, which fills the
    # cache; the median is what a request that hits the cache sees.
    return {"uncached_ttft_ms": cold["mean_ttft_ms"], "cached_ttft_ms": warm["mean_ttft_ms"],
            "cached_share": warm["mean_ttft_ms"] / cold["mean_ttft_ms"],
            "uncached_median_ttft_ms": cold.get("median_ttft_ms"),
            "cached_median_ttft_ms": warm.get("median_ttft_ms"),
            "cached_median_share": (warm["median_ttft_ms"] / cold["median_ttft_ms"]
                                    if cold.get("median_ttft_ms") else None),
            "hit_rate": warm["prefix_cache_hit_rate"], "raw_uncached": cold, "raw_cached": warm}


def sol_offline(args):
    r = solrun_bench(args, ["--num-prompts", str(args.offline_prompts),
                            "--random-input-len", "32:1024", "--random-output-len", "32:512"])
    return {"requests_per_s": r["requests_per_s"], "output_tok_s": r["output_tokens_per_s"],
            "total_tok_s": r["total_tokens_per_s"], "peak_kv_tokens": r["peak_kv_tokens"],
            "peak_kv_blocks": r["peak_kv_blocks_used"], "kv_blocks_total": r["kv_blocks_total"],
            "preemptions": r["preemptions"], "elapsed_s": r["elapsed_s"], "raw": r}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--plan", required=True, help="plan of --model")
    ap.add_argument("--model", required=True, help="the Hugging Face checkpoint of the plan")
    ap.add_argument("--workloads", default="concurrent,prefix,offline")
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=256)
    ap.add_argument("--prefix-tokens", type=int, default=1024)
    ap.add_argument("--offline-prompts", type=int, default=1000)
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    report = {"model": args.model, "plan": args.plan, "host": platform.node(), "errors": []}
    try:
        import torch
        report["gpu"] = torch.cuda.get_device_name(0)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        report["gpu"] = f"unknown ({e})"
    for w in args.workloads.split(","):
        try:
            if w == "concurrent":
                rows = [sol_concurrent(args)]
                if not args.skip_hf:
                    rows.append(hf_concurrent(args))
                report["concurrent"] = {"concurrency": args.concurrency,
                                        "prompt_tokens": args.prompt_tokens,
                                        "new_tokens": args.new_tokens, "rows": rows}
            elif w == "prefix":
                report["prefix"] = sol_prefix(args)
            elif w == "offline":
                report["offline"] = sol_offline(args)
            else:
                raise ValueError(f"unknown workload {w!r}")
        except Exception as e:  # noqa: BLE001 - one workload failing must not hide the others
            report["errors"].append(f"{w}: {e}")
            log(f"{w} failed: {e}")

    print(json.dumps(report, indent=2))
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(report, f, indent=2)
    print(f"\nengine benchmarks on {report['gpu']}: {args.model}")
    if "concurrent" in report:
        c = report["concurrent"]
        print(f"{c['concurrency']} concurrent sequences, prompt {c['prompt_tokens']}, "
              f"{c['new_tokens']} new tokens, greedy")
        print(f"{'engine':50s} {'decode tok/s':>13s} {'e2e out tok/s':>14s} {'TPOT ms':>9s} "
              f"{'TTFT ms':>9s}")
        for r in c["rows"]:
            print(f"{r['engine']:50s} {r['decode_tok_s']:13.0f} {r['output_tok_s']:14.0f} "
                  f"{r['mean_tpot_ms']:9.3f} {r['mean_ttft_ms']:9.1f}")
    if "prefix" in report:
        p = report["prefix"]
        print(f"shared {args.prefix_tokens}-token prefix, one request at a time: TTFT "
              f"{p['uncached_ttft_ms']:.2f} ms uncached, {p['cached_ttft_ms']:.2f} ms cached "
              f"({100 * p['cached_share']:.0f}%), hit rate {p['hit_rate']:.2f}")
        if p.get("cached_median_share") is not None:
            print(f"  medians (leaving out the request that fills the cache): "
                  f"{p['uncached_median_ttft_ms']:.2f} ms uncached, "
                  f"{p['cached_median_ttft_ms']:.2f} ms cached "
                  f"({100 * p['cached_median_share']:.0f}%)")
    if "offline" in report:
        o = report["offline"]
        print(f"offline {args.offline_prompts} requests (prompts 32-1024, outputs 32-512): "
              f"{o['total_tok_s']:.0f} tok/s total, {o['output_tok_s']:.0f} output tok/s, "
              f"{o['requests_per_s']:.1f} req/s, peak KV {o['peak_kv_tokens']} tokens "
              f"({o['peak_kv_blocks']}/{o['kv_blocks_total']} blocks), "
              f"{o['preemptions']} preemptions")
    for e in report["errors"]:
        print(f"ERROR {e}")
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())

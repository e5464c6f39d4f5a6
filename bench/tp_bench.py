#!/usr/bin/env python3
"""Decode of full-size shapes from their configs alone: tensor parallelism, mixtures of experts.

Sol on one and several GPUs, beside Transformers. For each --shape NAME:RANKS
(default "llama-3.1-8b:1,2 llama-3.1-70b:2"; also the mixtures of experts
"qwen3-30b-a3b:1 mixtral-8x7b:1 gpt-oss-20b:1 qwen1.5-moe-a2.7b:1"):

  weights  the real config.json of the shape (scripts/make-shape-model.py
           --config-only), compiled with `solc --load-format dummy
           --tensor-parallel-size N`: no checkpoint on disk, solrun fills the
           weights with seeded random values at load, on the GPU (a 70B checkpoint does not
           fit the two-GPU machine's disk);
  batch 1  `solrun PLAN --prompt-ids (--prompt-tokens seeded random ids)
           --max-tokens --new-tokens --ignore-eos --json --device cuda`: one
           warm-up and --runs timed runs, median decode tokens/s;
  N seqs   `solrun PLAN --bench --num-prompts --concurrency --input-len
           --prompt-tokens --output-len --new-tokens --json`: output tokens/s;
  prompt   `solrun PLAN --prompt-ids (--long-prompt-tokens ids) --max-tokens
           1 --json`: the time to the first token of a long prompt (a
           mixture of experts' prompt step runs its grouped GEMMs);
  bound    a decode step reads every weight once, spread over the ranks:
           tokens/s <= ranks x --bandwidth (4.3e12 B/s, an H200's measured
           copy rate) / weight bytes (solrun --info); fraction = measured /
           bound (batch 1). A mixture of experts reads only its routed
           experts: at batch 1 the weights less the (E - K) / E of the
           experts no token chose; at N sequences less the experts none of
           them chose, (1 - K/E)^N of them if routing is uniform.

Transformers, same run: for shapes that fit one GPU, AutoModelForCausalLM
.from_config in bf16 on GPU 0 (random weights), generate() of --new-tokens at
batch 1 and at --concurrency sequences (sdpa, dynamic cache); shapes that do
not fit one GPU report null with the reason.

  python3 bench/tp_bench.py --solc build/bin/solc --solrun build/bin/solrun \\
      --json-out /tmp/tp.json

Prints one JSON object and a table; exit code 0 if every Sol row ran.
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

REPO = Path(__file__).resolve().parent.parent
H200_BYTES = 139e9  # usable memory of one H200


def log(msg):
    print(f"[tp-bench] {msg}", file=sys.stderr, flush=True)


def run(cmd, timeout):
    log(" ".join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          timeout=timeout)


def weight_bytes(solrun, plan):
    info = run([solrun, plan, "--info"], 120)
    m = re.search(r"^weights:\s+\d+ tensors, ([0-9.]+) GB", info.stdout, re.M)
    if not m:
        raise RuntimeError(f"solrun --info printed no weights line:\n{info.stdout}{info.stderr}")
    return float(m.group(1)) * 1e9


def expert_bytes(config):
    """Bytes of every layer's experts (bf16), and the fraction of them a token
    reads (K / E); 0 and 1 for a dense model."""
    experts = config.get("num_experts") or config.get("num_local_experts")
    if not experts:
        return 0.0, 1.0
    width = config.get("moe_intermediate_size") or config["intermediate_size"]
    layers = config["num_hidden_layers"]
    dense = set(config.get("mlp_only_layers") or [])
    step = config.get("decoder_sparse_step", 1) or 1
    moe_layers = sum(1 for i in range(layers) if i not in dense and (i + 1) % step == 0)
    # bf16, or MXFP4 (gpt-oss's checkpoints: 4 bits and an exponent byte per 32).
    mxfp4 = (config.get("quantization_config") or {}).get("quant_method") == "mxfp4"
    per_layer = 3 * config["hidden_size"] * width * (17 / 32 if mxfp4 else 2) * experts
    return float(per_layer * moe_layers), config["num_experts_per_tok"] / experts


def sol_rows(args, shape, ranks, config_dir, work):
    plan = work / f"{shape}-tp{ranks}.plan"
    t0 = time.time()
    r = run([args.solc, config_dir, "--load-format", "dummy", "--tensor-parallel-size", ranks,
             "-q", "-o", plan], 3600)
    if r.returncode != 0:
        raise RuntimeError(f"solc failed: {r.stderr.strip()}")
    compile_s = time.time() - t0
    bytes_ = weight_bytes(args.solrun, plan)
    rng = random.Random(args.seed)
    config = json.loads((config_dir / "config.json").read_text())
    vocab = config["vocab_size"]
    experts, chosen = expert_bytes(config)
    active1 = bytes_ - experts * (1 - chosen)
    activeN = bytes_ - experts * (1 - chosen) ** args.concurrency
    ids = ",".join(str(rng.randrange(vocab)) for _ in range(args.prompt_tokens))
    rates = []
    for i in range(args.runs + 1):
        r = run([args.solrun, plan, "--device", "cuda", "--prompt-ids", ids, "--max-tokens",
                 args.new_tokens, "--ignore-eos", "--json"], 1800)
        if r.returncode != 0:
            raise RuntimeError(f"solrun failed: {r.stderr.strip()[-2000:]}")
        if i > 0:  # the first run warms up (and captures the graphs)
            rates.append(json.loads(r.stdout)["timing"]["decode_tokens_per_s"])
    long_ids = ",".join(str(rng.randrange(vocab)) for _ in range(args.long_prompt_tokens))
    r = run([args.solrun, plan, "--device", "cuda", "--prompt-ids", long_ids, "--max-tokens", 1,
             "--json"], 1800)
    if r.returncode != 0:
        raise RuntimeError(f"solrun (long prompt) failed: {r.stderr.strip()[-2000:]}")
    ttft_long = json.loads(r.stdout)["timing"]["ttft_ms"]
    r = run([args.solrun, plan, "--device", "cuda", "--bench", "--num-prompts", args.concurrency,
             "--input-len", args.prompt_tokens, "--output-len", args.new_tokens,
             "--seed", args.seed, "--json"], 1800)
    if r.returncode != 0:
        raise RuntimeError(f"solrun --bench failed: {r.stderr.strip()[-2000:]}")
    many = json.loads(r.stdout)
    bound = ranks * args.bandwidth / active1
    boundN = args.concurrency * ranks * args.bandwidth / activeN
    batch1 = statistics.median(rates)
    manyRate = many["output_tokens_per_s"]
    return {"engine": "sol", "shape": shape, "gpus": ranks, "weight_gb": bytes_ / 1e9,
            "active_gb_batch1": active1 / 1e9, "compile_s": compile_s,
            "batch1_tok_s": batch1, "batch1_runs": rates,
            f"ttft_{args.long_prompt_tokens}_ms": ttft_long,
            "bound_tok_s": bound, "fraction_of_bound": batch1 / bound,
            f"seqs{args.concurrency}_output_tok_s": manyRate,
            f"seqs{args.concurrency}_bound_tok_s": boundN,
            f"seqs{args.concurrency}_fraction_of_bound": manyRate / boundN,
            f"seqs{args.concurrency}_mean_tpot_ms": many.get("mean_tpot_ms")}


def hf_row(args, shape, config_dir, bytes_):
    row = {"engine": "transformers", "shape": shape, "gpus": 1}
    if bytes_ > 0.8 * H200_BYTES:
        row["skipped"] = (f"{bytes_ / 1e9:.0f} GB of weights do not fit one GPU; Transformers "
                          "splits layers over GPUs (device_map) rather than tensors")
        return row
    try:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as e:
        row["skipped"] = f"missing Python package: {e}"
        return row
    config = AutoConfig.from_pretrained(config_dir)
    torch.manual_seed(args.seed)
    with torch.device("cuda:0"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.eval()
    gen = torch.Generator(device="cuda:0").manual_seed(args.seed)
    with torch.no_grad():
        for p in model.parameters():  # the scale Sol's random weights have
            if p.dim() >= 2:  # matrices, and stacked experts
                p.uniform_(-0.02, 0.02, generator=gen)
            else:
                p.uniform_(0.98, 1.02, generator=gen)

    def decode_rate(batch):
        ids = torch.randint(0, config.vocab_size, (batch, args.prompt_tokens), device="cuda:0",
                            generator=gen)
        kw = dict(do_sample=False, min_new_tokens=args.new_tokens, pad_token_id=0)
        with torch.no_grad():
            model.generate(ids, max_new_tokens=2, **{**kw, "min_new_tokens": 2})  # warm-up
            torch.cuda.synchronize()
            t0 = time.time()
            model.generate(ids, max_new_tokens=1, **{**kw, "min_new_tokens": 1})
            torch.cuda.synchronize()
            ttft = time.time() - t0
            t0 = time.time()
            model.generate(ids, max_new_tokens=args.new_tokens, **kw)
            torch.cuda.synchronize()
            total = time.time() - t0
        return batch * (args.new_tokens - 1) / (total - ttft)

    ids = torch.randint(0, config.vocab_size, (1, args.long_prompt_tokens), device="cuda:0",
                        generator=gen)
    with torch.no_grad():
        model(ids, use_cache=False)  # warm-up
        torch.cuda.synchronize()
        t0 = time.time()
        model(ids, use_cache=False)
        torch.cuda.synchronize()
    row[f"ttft_{args.long_prompt_tokens}_ms"] = (time.time() - t0) * 1e3
    row["batch1_tok_s"] = decode_rate(1)
    row[f"seqs{args.concurrency}_output_tok_s"] = decode_rate(args.concurrency)
    del model
    torch.cuda.empty_cache()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solc", required=True)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--shapes", default="llama-3.1-8b:1,2 llama-3.1-70b:2",
                    help="space-separated NAME:RANKS,... (scripts/make-shape-model.py shapes)")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--long-prompt-tokens", type=int, default=2048,
                    help="prompt of the time-to-first-token row")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bandwidth", type=float, default=4.3e12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--work-dir", default="/tmp/sol-tp-bench")
    ap.add_argument("--json-out")
    args = ap.parse_args()

    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    rows, ok = [], True
    for spec in args.shapes.split():
        shape, ranks = spec.split(":")
        config_dir = work / shape
        subprocess.run([sys.executable, REPO / "scripts/make-shape-model.py", "--shape", shape,
                        "--out", config_dir, "--config-only"], check=True)
        bytes_ = 0
        for n in (int(r) for r in ranks.split(",")):
            try:
                row = sol_rows(args, shape, n, config_dir, work)
                bytes_ = row["weight_gb"] * 1e9
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                row, ok = {"engine": "sol", "shape": shape, "gpus": n, "error": str(e)}, False
            rows.append(row)
            log(f"row {json.dumps(row)}")  # kept when a time limit cuts the run
        if not args.skip_hf:
            try:
                rows.append(hf_row(args, shape, config_dir, bytes_))
            except Exception as e:  # a baseline failure is reported, not fatal
                rows.append({"engine": "transformers", "shape": shape, "gpus": 1,
                             "error": repr(e)})
            log(f"row {json.dumps(rows[-1])}")
    report = {"bench": "tp_bench", "prompt_tokens": args.prompt_tokens,
              "new_tokens": args.new_tokens, "concurrency": args.concurrency,
              "bandwidth": args.bandwidth, "rows": rows}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")
    key = f"seqs{args.concurrency}_output_tok_s"
    ttft = f"ttft_{args.long_prompt_tokens}_ms"
    print(f"\n{'shape':<16}{'engine':<14}{'GPUs':>5}{'batch-1 tok/s':>15}{'of bound':>10}"
          f"{f'{args.concurrency} seqs tok/s':>16}{'of bound':>10}"
          f"{f'TTFT {args.long_prompt_tokens} ms':>16}")
    for r in rows:
        if "error" in r or "skipped" in r:
            print(f"{r['shape']:<16}{r['engine']:<14}{r['gpus']:>5}  "
                  f"{r.get('error') or r.get('skipped')}")
            continue
        frac = f"{r['fraction_of_bound']:.0%}" if "fraction_of_bound" in r else ""
        fracN = r.get(f"seqs{args.concurrency}_fraction_of_bound")
        fracN = f"{fracN:.0%}" if fracN is not None else ""
        print(f"{r['shape']:<16}{r['engine']:<14}{r['gpus']:>5}{r['batch1_tok_s']:>15.1f}"
              f"{frac:>10}{r[key]:>16.1f}{fracN:>10}{r.get(ttft, float('nan')):>16.1f}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

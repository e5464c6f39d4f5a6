#!/usr/bin/env python3
"""Serving overhead of issue 7: `solbench` against `solrun --serve` beside `solrun --bench`.

At each concurrency C (default 1, 4, 16, 64) the same workload (random prompt ids of
--input-len tokens, --output-len new tokens, greedy, ignore EOS, max(16, 4 C) requests) runs
twice on one GPU:

  bench   `solrun PLAN --bench --max-concurrency C --max-num-seqs S --json`: the engine
          driven in-process, no HTTP;
  serve   `solbench --concurrency C` against one `solrun PLAN --serve --max-num-seqs S`
          (streamed /v1/completions, prompts as token ids, one connection per request).

The overhead is 1 - serve output tok/s / bench output tok/s (the issue's target: under 5%).
Prints one JSON object and a table; exit code 0 when every level ran.

  python3 bench/serve_bench.py --solrun build/bin/solrun --solbench build/bin/solbench \\
      --plan /tmp/x.plan --json-out /tmp/serve.json
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time


def log(msg):
    print(f"[serve-bench] {msg}", file=sys.stderr, flush=True)


def prompts_for(c):
    return max(16, 4 * c)


def run_bench(args, c):
    cmd = [args.solrun, args.plan, "--bench", "--json", "--seed", str(args.seed),
           "--num-prompts", str(prompts_for(c)), "--input-len", str(args.input_len),
           "--output-len", str(args.output_len), "--max-concurrency", str(c),
           "--max-num-seqs", str(args.max_num_seqs)]
    log(" ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"solrun --bench failed ({p.returncode}): {p.stderr[-2000:]}")
    return json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])


def start_server(args):
    cmd = [args.solrun, args.plan, "--serve", "--port", "0", "--served-model-name", "bench",
           "--max-num-seqs", str(args.max_num_seqs)]
    log(" ".join(cmd))
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, text=True)
    deadline = time.time() + args.start_timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            err.seek(0)
            raise RuntimeError(f"solrun --serve exited ({proc.returncode}): {err.read()[-2000:]}")
        err.seek(0)
        m = re.search(r"serving \S+ on http://([^:\s]+):(\d+)", err.read())
        if m:
            return proc, err, f"http://{m.group(1)}:{m.group(2)}/v1"
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("solrun --serve did not report its address in time")


def run_solbench(args, url, levels):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [args.solbench, "--url", url, "--model", "bench",
               "--concurrency", ",".join(str(c) for c in levels),
               "--input-len", str(args.input_len), "--output-len", str(args.output_len),
               "--seed", str(args.seed), "--warmup", "2", "--json", out.name,
               "--vocab-size", str(args.vocab_size)]
        if args.html_out:
            cmd += ["--html", args.html_out]
        log(" ".join(cmd))
        p = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(p.stdout)
        if p.returncode != 0:
            raise RuntimeError(f"solbench failed ({p.returncode}): {p.stderr[-2000:]}")
        return json.load(open(out.name))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--solbench", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--concurrency", default="1,4,16,64")
    ap.add_argument("--input-len", type=int, default=512)
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--max-num-seqs", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab-size", type=int, default=32000,
                    help="solbench's random prompt ids come from this vocabulary")
    ap.add_argument("--start-timeout", type=float, default=300)
    ap.add_argument("--json-out")
    ap.add_argument("--html-out", help="solbench's HTML report")
    args = ap.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]

    bench = {c: run_bench(args, c) for c in levels}
    proc, err, url = start_server(args)
    try:
        served = run_solbench(args, url, levels)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        err.seek(0)
        server_log = err.read()

    rows = []
    for level in served["levels"]:
        c = level["concurrency"]
        b = bench[c]
        serve_tps = level["output_tokens_per_s"]
        bench_tps = b["output_tokens_per_s"]
        rows.append({
            "concurrency": c, "requests": level["completed"], "failed": level["failed"],
            "bench_output_tok_s": bench_tps, "serve_output_tok_s": serve_tps,
            "overhead": 1.0 - serve_tps / bench_tps if bench_tps else None,
            "bench_mean_ttft_ms": b["mean_ttft_ms"], "bench_mean_tpot_ms": b["mean_tpot_ms"],
            "serve_ttft_ms": level["ttft_ms"], "serve_tpot_ms": level["tpot_ms"],
            "serve_itl_ms": level["itl_ms"],
        })
    report = {"plan": args.plan, "input_len": args.input_len, "output_len": args.output_len,
              "max_num_seqs": args.max_num_seqs, "rows": rows,
              "server_log_tail": server_log[-3000:], "solbench": served, "bench": bench}
    print(json.dumps(report, indent=1))
    if args.json_out:
        json.dump(report, open(args.json_out, "w"), indent=1)
    print(f"\nserving overhead: {args.plan}, prompt {args.input_len}, output {args.output_len}")
    print(f"{'conc':>5} {'reqs':>5} {'bench tok/s':>12} {'serve tok/s':>12} {'overhead':>9} "
          f"{'TTFT p50':>9} {'TPOT p50':>9}")
    for r in rows:
        print(f"{r['concurrency']:>5} {r['requests']:>5} {r['bench_output_tok_s']:>12.1f} "
              f"{r['serve_output_tok_s']:>12.1f} {100 * r['overhead']:>8.1f}% "
              f"{r['serve_ttft_ms']['p50']:>9.2f} {r['serve_tpot_ms']['p50']:>9.3f}")
    return 0 if all(r["failed"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Batch-1 greedy decode benchmark: Sol against Hugging Face Transformers, same run.

Same model folder, same 128 random prompt ids (seeded), 128 new tokens,
greedy, batch 1, on one CUDA GPU:

  transformers   generate() in bf16, sdpa attention, default (dynamic) cache.
                 Warm-up once; TTFT = wall time of generate(max_new_tokens=1);
                 total = wall time of generate(max_new_tokens=128);
                 TPOT = (total - TTFT) / 127; tokens/s = 1 / TPOT. Medians over --hf-runs.
  transformers   the same with cache_implementation="static" (generate then
  static+compile compiles the decode step with torch.compile); only reported if it
                 finishes within --compile-timeout seconds, skipped with the reason otherwise.
  sol            solc MODEL -o PLAN, then `solrun PLAN --prompt-ids ... --max-tokens 128
                 --ignore-eos --json --device cuda`: one warm-up and --runs timed runs;
                 medians of the TTFT, TPOT and decode tokens/s that solrun reports.

Each row also gives the fraction of the bandwidth bound: a batch-1 decode step
reads every weight once, so TPOT >= weight bytes / --bandwidth (4.3e12 B/s,
the measured device-to-device copy rate of an H200); fraction = bound / TPOT.
Weight bytes come from the checkpoint's safetensors headers.

Without --model, a random-weight Llama-3.2-1B-shaped checkpoint is made with
scripts/make-shape-model.py in /tmp (reused if it is already there).

  python3 bench/decode_bench.py --solc build/bin/solc --solrun build/bin/solrun \\
      --json-out /tmp/bench.json

Prints one JSON object and a table; exit code 0 if every requested row ran.
"""

import argparse
import gc
import json
import platform
import signal
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def log(msg):
    print(f"[decode-bench] {msg}", file=sys.stderr, flush=True)


def fail(msg):
    print(f"[decode-bench] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def checkpoint_weight_bytes(model_dir):
    """Sum of the tensor data sizes in every *.safetensors file (from the headers)."""
    total, files = 0, sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        fail(f"no *.safetensors files in {model_dir}")
    for f in files:
        with open(f, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            header = json.loads(fh.read(n))
        for name, t in header.items():
            if name != "__metadata__":
                begin, end = t["data_offsets"]
                total += end - begin
    return total


def ensure_model(args):
    if args.model:
        if not (Path(args.model) / "config.json").is_file():
            fail(f"{args.model} has no config.json: --model must be a Hugging Face checkpoint folder")
        return Path(args.model)
    model = Path(f"/tmp/sol-bench-{args.shape}")
    if (model / "config.json").is_file() and list(model.glob("*.safetensors")) and not args.regenerate:
        log(f"reusing {model}")
        return model
    script = REPO / "scripts" / "make-shape-model.py"
    log(f"making {args.shape} with {script}")
    r = subprocess.run([sys.executable, str(script), "--shape", args.shape, "--out", str(model)])
    if r.returncode != 0:
        fail(f"make-shape-model.py failed (exit {r.returncode})")
    return model


@contextmanager
def time_limit(seconds):
    def on_alarm(signum, frame):
        raise TimeoutError(f"took longer than {seconds}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(seconds))
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def row_from(engine, ttft_ms, total_ms, tpot_ms, bound_ms, extra=None):
    row = {
        "engine": engine,
        "ttft_ms": ttft_ms,
        "tpot_ms": tpot_ms,
        "decode_tokens_per_s": 1000.0 / tpot_ms if tpot_ms > 0 else None,
        "total_ms": total_ms,
        "fraction_of_bandwidth_bound": bound_ms / tpot_ms if tpot_ms > 0 else None,
    }
    row.update(extra or {})
    return row


# --------------------------------------------------------------------------
# Transformers
# --------------------------------------------------------------------------

def hf_rows(args, model_dir, prompt, bound_ms, skipped):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, GenerationConfig

    t0 = time.time()
    kwargs = dict(dtype=torch.bfloat16, attn_implementation="sdpa")
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir, device_map="cuda", **kwargs)
    except (ValueError, ImportError, TypeError) as e:
        log(f"device_map='cuda' refused ({e}); loading on the CPU and moving")
        model = AutoModelForCausalLM.from_pretrained(model_dir, **kwargs).to("cuda")
    model.eval()
    log(f"transformers: loaded in {time.time() - t0:.1f}s")
    ids = torch.tensor([prompt], dtype=torch.long, device="cuda")
    mask = torch.ones_like(ids)
    gen_defaults = model.generation_config
    eos = gen_defaults.eos_token_id
    pad = gen_defaults.pad_token_id if gen_defaults.pad_token_id is not None else (
        eos[0] if isinstance(eos, list) else eos)
    n_new = args.new_tokens

    def config(n, **extra):
        # min_new_tokens = n: never stop at eos, like solrun --ignore-eos.
        return GenerationConfig(max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                eos_token_id=eos, pad_token_id=pad, **extra)

    def timed(n, **extra):
        torch.cuda.synchronize()
        t = time.perf_counter()
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, generation_config=config(n, **extra))
        torch.cuda.synchronize()
        elapsed = (time.perf_counter() - t) * 1000.0
        seq = out.sequences if hasattr(out, "sequences") else out
        if seq.shape[1] != len(prompt) + n:
            raise RuntimeError(f"generate returned {seq.shape[1] - len(prompt)} new tokens, asked for {n}")
        return elapsed, seq[0, len(prompt):].tolist()

    def measure(label, **extra):
        timed(n_new, **extra)  # warm-up (and compilation, for the static cache)
        timed(1, **extra)
        ttft = statistics.median(timed(1, **extra)[0] for _ in range(args.hf_runs))
        totals, tokens = [], None
        for _ in range(args.hf_runs):
            ms, tokens = timed(n_new, **extra)
            totals.append(ms)
        total = statistics.median(totals)
        tpot = (total - ttft) / (n_new - 1)
        log(f"{label}: TTFT {ttft:.2f} ms, total {total:.1f} ms, TPOT {tpot:.3f} ms")
        return row_from(label, ttft, total, tpot, bound_ms,
                        {"runs": args.hf_runs, "total_ms_runs": totals}), tokens

    rows = []
    version = f"transformers {transformers.__version__}"
    row, hf_tokens = measure(f"{version} generate (bf16, sdpa, dynamic cache)")
    rows.append(row)

    if args.static_compile:
        label = f"{version} generate (bf16, sdpa, static cache + torch.compile)"
        extra = {"cache_implementation": "static"}
        try:
            from transformers import CompileConfig
            extra["compile_config"] = CompileConfig(fullgraph=True, mode="reduce-overhead")
        except ImportError:
            pass
        try:
            with time_limit(args.compile_timeout):
                t = time.time()
                row, _ = measure(label, **extra)
                row["setup_s"] = time.time() - t
            rows.append(row)
        except Exception as e:  # noqa: BLE001 - an optional row: report why and go on
            reason = f"{type(e).__name__}: {str(e)[:300]}"
            log(f"static cache + compile skipped: {reason}")
            skipped.append({"engine": label, "reason": reason})

    del model
    gc.collect()
    torch.cuda.empty_cache()
    return rows, hf_tokens


# --------------------------------------------------------------------------
# Sol
# --------------------------------------------------------------------------

def parse_solrun_json(stdout):
    text = stdout.strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):  # tolerate log lines before the object
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    raise RuntimeError(f"solrun printed no JSON object; stdout ends with: {text[-500:]!r}")


def sol_row(args, model_dir, prompt, bound_ms):
    plan = Path(args.plan) if args.plan else Path(f"/tmp/sol-bench-{model_dir.name}.plan")
    t = time.time()
    r = subprocess.run([args.solc, str(model_dir), "-o", str(plan)] + args.solc_arg,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"solc failed (exit {r.returncode}): {(r.stderr or r.stdout)[-1500:]}")
    compile_s = time.time() - t
    log(f"sol: solc took {compile_s:.1f}s, plan {plan} ({plan.stat().st_size / 1e9:.2f} GB)")
    cmd = [args.solrun, str(plan), "--prompt-ids", ",".join(map(str, prompt)), "--max-tokens",
           str(args.new_tokens), "--ignore-eos", "--json", "--device", "cuda"]
    runs = []
    for i in range(1 + args.runs):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            raise RuntimeError(f"solrun failed (exit {r.returncode}): {(r.stderr or r.stdout)[-1500:]}")
        out = parse_solrun_json(r.stdout)
        timing = out.get("timing") or {}
        missing = [k for k in ("ttft_ms", "tpot_ms", "decode_tokens_per_s") if k not in timing]
        if missing:
            raise RuntimeError(f"solrun --json output lacks timing.{missing}: {json.dumps(out)[:500]}")
        ids = list(out.get("ids", []))
        if len(ids) == len(prompt) + args.new_tokens and ids[:len(prompt)] == prompt:
            ids = ids[len(prompt):]
        if len(ids) != args.new_tokens:
            raise RuntimeError(f"solrun generated {len(ids)} ids, asked for {args.new_tokens} "
                               f"(finish_reason {out.get('finish_reason')!r})")
        if i == 0:
            log(f"sol: warm-up run took {wall:.2f}s wall")
            continue
        runs.append({"ttft_ms": float(timing["ttft_ms"]), "tpot_ms": float(timing["tpot_ms"]),
                     "decode_tokens_per_s": float(timing["decode_tokens_per_s"]), "wall_s": wall,
                     "ids": ids})
        log(f"sol run {i}: TTFT {timing['ttft_ms']:.2f} ms, TPOT {timing['tpot_ms']:.3f} ms, "
            f"{timing['decode_tokens_per_s']:.1f} tok/s")
    ttft = statistics.median(r["ttft_ms"] for r in runs)
    tpot = statistics.median(r["tpot_ms"] for r in runs)
    tps = statistics.median(r["decode_tokens_per_s"] for r in runs)
    row = row_from("sol", ttft, ttft + tpot * (args.new_tokens - 1), tpot, bound_ms, {
        "decode_tokens_per_s": tps,  # as solrun reports it (median of runs)
        "runs": args.runs,
        "solc_s": compile_s,
        "solrun_wall_s_runs": [r["wall_s"] for r in runs],
        "tpot_ms_runs": [r["tpot_ms"] for r in runs],
    })
    return row, runs[-1]["ids"]


# --------------------------------------------------------------------------

def print_table(report):
    print(f"decode benchmark: {report['model']} ({report['weight_bytes'] / 1e9:.2f} GB of weights), "
          f"prompt {report['prompt_tokens']}, {report['new_tokens']} new tokens, batch 1, greedy, "
          f"{report['gpu']}")
    print(f"bandwidth bound: {report['bound_tpot_ms']:.3f} ms/token = "
          f"{report['bound_tokens_per_s']:.0f} tok/s at {report['bandwidth_bytes_per_s']:.3g} B/s")
    header = f"{'engine':<72} {'TTFT ms':>9} {'TPOT ms':>9} {'tok/s':>9} {'of bound':>9}"
    print(header)
    print("-" * len(header))
    def num(x, fmt):
        return "-" if x is None else format(x, fmt)

    for r in report["rows"]:
        frac = r["fraction_of_bandwidth_bound"]
        print(f"{r['engine']:<72} {num(r['ttft_ms'], '.2f'):>9} {num(r['tpot_ms'], '.3f'):>9} "
              f"{num(r['decode_tokens_per_s'], '.1f'):>9} {num(None if frac is None else 100 * frac, '.1f'):>8}%")
    for s in report["skipped"]:
        print(f"{s['engine']:<72} skipped: {s['reason']}")
    if report.get("greedy_agreement") is not None:
        print(f"greedy ids: sol and transformers agree on the first {report['greedy_agreement']} "
              f"of {report['new_tokens']} tokens (both bf16; a late divergence is expected)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--model", help="Hugging Face checkpoint folder (default: make --shape in /tmp)")
    ap.add_argument("--shape", default="llama-3.2-1b",
                    choices=["llama-3.2-1b", "llama-3.1-8b", "qwen2.5-1.5b", "qwen2.5-7b",
                             "phi-3.5-mini", "gemma-2-9b", "gemma-3-4b"],
                    help="shape for make-shape-model.py when --model is not given")
    ap.add_argument("--regenerate", action="store_true", help="remake the /tmp shape model")
    ap.add_argument("--solc", help="path of solc")
    ap.add_argument("--solrun", help="path of solrun")
    ap.add_argument("--plan", help="plan path (default /tmp/sol-bench-<model>.plan)")
    ap.add_argument("--solc-arg", action="append", default=[], help="extra solc argument (repeatable)")
    ap.add_argument("--skip-sol", action="store_true", help="only the Transformers rows")
    ap.add_argument("--skip-hf", action="store_true", help="only the Sol row")
    ap.add_argument("--no-static-compile", dest="static_compile", action="store_false",
                    help="skip the static cache + torch.compile row")
    ap.add_argument("--compile-timeout", type=int, default=600,
                    help="seconds allowed for the static+compile row, compilation included")
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=5, help="timed solrun runs after one warm-up")
    ap.add_argument("--hf-runs", type=int, default=5, help="timed generate() calls per measurement")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bandwidth", type=float, default=4.3e12, help="bytes/s for the bound")
    ap.add_argument("--json-out", help="also write the JSON report here")
    args = ap.parse_args()
    if not args.skip_sol and not (args.solc and args.solrun):
        ap.error("pass --solc and --solrun (or --skip-sol for the Transformers rows only)")
    if args.new_tokens < 2:
        ap.error("--new-tokens must be >= 2 (TPOT needs a decode step)")

    import numpy as np
    import torch

    if not torch.cuda.is_available():
        fail("no CUDA device")
    model_dir = ensure_model(args)
    cfg = json.loads((model_dir / "config.json").read_text())
    vocab = int(cfg["vocab_size"])
    prompt = np.random.default_rng(args.seed).integers(0, vocab, size=args.prompt_tokens).tolist()
    weight_bytes = checkpoint_weight_bytes(model_dir)
    bound_ms = weight_bytes / args.bandwidth * 1000.0

    report = {
        "model": str(model_dir),
        "architecture": (cfg.get("architectures") or ["?"])[0],
        "gpu": torch.cuda.get_device_name(0),
        "prompt_tokens": args.prompt_tokens,
        "new_tokens": args.new_tokens,
        "batch": 1,
        "sampling": "greedy, eos ignored",
        "prompt_seed": args.seed,
        "weight_bytes": weight_bytes,
        "bandwidth_bytes_per_s": args.bandwidth,
        "bound_tpot_ms": bound_ms,
        "bound_tokens_per_s": 1000.0 / bound_ms,
        "versions": {"torch": torch.__version__, "python": platform.python_version()},
        "rows": [],
        "skipped": [],
        "greedy_agreement": None,
    }
    errors = []
    hf_tokens = sol_tokens = None
    if not args.skip_hf:
        try:
            import transformers
            report["versions"]["transformers"] = transformers.__version__
            rows, hf_tokens = hf_rows(args, model_dir, prompt, bound_ms, report["skipped"])
            report["rows"].extend(rows)
        except Exception as e:  # noqa: BLE001 - still run Sol, report the failure
            errors.append(f"transformers: {type(e).__name__}: {e}")
            log(errors[-1])
    if not args.skip_sol:
        try:
            row, sol_tokens = sol_row(args, model_dir, prompt, bound_ms)
            report["rows"].append(row)
        except Exception as e:  # noqa: BLE001
            errors.append(f"sol: {type(e).__name__}: {e}")
            log(errors[-1])
    if hf_tokens is not None and sol_tokens is not None:
        k = 0
        while k < min(len(hf_tokens), len(sol_tokens)) and hf_tokens[k] == sol_tokens[k]:
            k += 1
        report["greedy_agreement"] = k
    report["errors"] = errors

    text = json.dumps(report, indent=2)
    print(text)
    if args.json_out:
        Path(args.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json_out).write_text(text + "\n")
    print_table(report)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()

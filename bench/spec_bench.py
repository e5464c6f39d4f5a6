#!/usr/bin/env python3
"""Speculative decoding benchmark: batch-1 greedy decode with and without
n-gram speculation, Sol beside Transformers' prompt lookup, same run.

Workload ("copy"): prompts that quote a passage of held-out text and then
start it again, so that the continuation copies from the context, as a
summary, an edit or a retrieval answer does: prompt = passage + "\\n\\n" +
its first quarter; --max-tokens new tokens, greedy, EOS ignored. Passages are
--passage-words words from --text, one per prompt, spread over the file.

  sol            `solrun PLAN --prompt P --max-tokens N --ignore-eos --json`
                 without and with --speculative-config (default: ngram, 4
                 tokens, lookup 2..4); medians over prompts of the decode
                 tokens/s solrun reports; the speculative run's ids must equal
                 the plain run's (greedy), and its acceptance is reported.
  transformers   (with --hf MODEL_DIR) generate() in bf16 on the same prompts
                 (tokenized by the model's tokenizer), plain and with
                 prompt_lookup_num_tokens (Transformers' n-gram speculation);
                 tokens/s = new tokens / (wall time - time of the first token).

The speedup is speculative tokens/s over plain tokens/s of the same engine.
Needs a trained model: on random weights nothing copies.

  python3 bench/spec_bench.py --solrun build/bin/solrun --plan sol-tiny.plan \\
      --text models/sol-tiny/data/val.txt --device cpu --prompts 2

Prints one JSON object and a table; exit code 0 if every row ran and the ids
agreed.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def log(msg):
    print(f"[spec-bench] {msg}", file=sys.stderr, flush=True)


def fail(msg):
    print(f"[spec-bench] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def copy_prompts(text_path, count, words_per_passage):
    words = Path(text_path).read_text(encoding="utf-8").split()
    if len(words) < words_per_passage * count:
        fail(f"{text_path} has {len(words)} words; {count} passages of "
             f"{words_per_passage} need more (fewer --prompts or --passage-words)")
    stride = len(words) // count
    prompts = []
    for i in range(count):
        passage = words[i * stride:i * stride + words_per_passage]
        start = passage[:max(1, len(passage) // 4)]
        prompts.append(" ".join(passage) + "\n\n" + " ".join(start))
    return prompts


def run_sol(args, prompt, spec):
    cmd = [args.solrun, args.plan, "--prompt", prompt, "--max-tokens",
           str(args.max_tokens), "--ignore-eos", "--json", "--device", args.device]
    if spec:
        cmd += ["--speculative-config", spec]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{' '.join(cmd[:3])} ... failed: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def sol_rows(args, prompts):
    plain, spec, agree = [], [], 0
    proposed = accepted = drafts = 0
    run_sol(args, prompts[0], None)  # warm-up (kernel cache, page cache)
    for i, prompt in enumerate(prompts):
        a = run_sol(args, prompt, None)
        b = run_sol(args, prompt, args.spec)
        plain.append(a["timing"]["decode_tokens_per_s"])
        spec.append(b["timing"]["decode_tokens_per_s"])
        agree += a["ids"] == b["ids"]
        s = b.get("speculative", {})
        proposed += s.get("proposed_tokens", 0)
        accepted += s.get("accepted_tokens", 0)
        drafts += s.get("num_drafts", 0)
        log(f"prompt {i}: {plain[-1]:.1f} -> {spec[-1]:.1f} tok/s, "
            f"{s.get('accepted_tokens', 0)}/{s.get('proposed_tokens', 0)} accepted, "
            f"ids {'equal' if a['ids'] == b['ids'] else 'DIFFERENT'}")
    return {
        "plain_tokens_per_s": statistics.median(plain),
        "spec_tokens_per_s": statistics.median(spec),
        "speedup": statistics.median(spec) / statistics.median(plain),
        "ids_equal": agree,
        "prompts": len(prompts),
        "proposed_tokens": proposed,
        "accepted_tokens": accepted,
        "acceptance_rate": accepted / proposed if proposed else 0.0,
        "mean_accepted_length": 1.0 + accepted / drafts if drafts else 0.0,
    }


def hf_rows(args, prompts):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import transformers

    tok = AutoTokenizer.from_pretrained(args.hf)
    model = AutoModelForCausalLM.from_pretrained(args.hf, dtype=torch.bfloat16).cuda().eval()

    def timed(ids, **kw):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.generate(ids, max_new_tokens=1, do_sample=False, **kw)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=args.max_tokens, min_new_tokens=args.max_tokens,
                             do_sample=False, **kw)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        first = t1 - t0
        return (args.max_tokens - 1) / max(1e-9, (t2 - t1) - first), out

    plain, spec = [], []
    with torch.no_grad():
        for i, prompt in enumerate(prompts):
            ids = tok(prompt, return_tensors="pt").input_ids.cuda()
            if i == 0:
                timed(ids)  # warm-up
            a, _ = timed(ids)
            b, _ = timed(ids, prompt_lookup_num_tokens=args.hf_lookup_tokens)
            plain.append(a)
            spec.append(b)
    return {
        "engine": f"transformers {transformers.__version__} generate (bf16)",
        "plain_tokens_per_s": statistics.median(plain),
        "spec_tokens_per_s": statistics.median(spec),
        "speedup": statistics.median(spec) / statistics.median(plain),
        "lookup_tokens": args.hf_lookup_tokens,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--text", required=True, help="held-out text the passages come from")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--passage-words", type=int, default=150)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--spec", default='{"method": "ngram", "num_speculative_tokens": 4, '
                    '"prompt_lookup_max": 4, "prompt_lookup_min": 2}',
                    help="the --speculative-config JSON")
    ap.add_argument("--hf", help="the checkpoint folder, for the Transformers rows")
    ap.add_argument("--hf-lookup-tokens", type=int, default=4)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    prompts = copy_prompts(args.text, args.prompts, args.passage_words)
    result = {"workload": {"kind": "copy", "prompts": args.prompts,
                           "passage_words": args.passage_words,
                           "max_tokens": args.max_tokens, "device": args.device,
                           "speculative_config": json.loads(args.spec)},
              "sol": sol_rows(args, prompts)}
    if args.hf:
        result["transformers"] = hf_rows(args, prompts)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")

    print(f"\nn-gram speculation, batch 1, {args.prompts} copy prompts, "
          f"{args.max_tokens} new tokens, greedy, {args.device}")
    print(f"{'engine':<44} {'plain tok/s':>12} {'spec tok/s':>11} {'speedup':>8}")
    for name, row in [("sol", result["sol"])] + (
            [(result["transformers"]["engine"] + " prompt lookup", result["transformers"])]
            if args.hf else []):
        print(f"{name:<44} {row['plain_tokens_per_s']:>12.1f} {row['spec_tokens_per_s']:>11.1f} "
              f"{row['speedup']:>7.2f}x")
    s = result["sol"]
    print(f"sol: {s['accepted_tokens']} of {s['proposed_tokens']} proposed tokens accepted "
          f"({100 * s['acceptance_rate']:.1f}%), {s['mean_accepted_length']:.2f} tokens per "
          f"speculating step; ids equal with and without speculation on "
          f"{s['ids_equal']} of {s['prompts']} prompts")
    return 0 if s["ids_equal"] == s["prompts"] else 1


if __name__ == "__main__":
    sys.exit(main())

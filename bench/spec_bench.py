#!/usr/bin/env python3
"""Speculative decoding benchmark: greedy decode with and without speculation
(n-gram prompt lookup or a draft model), Sol beside Transformers, same run.

Workloads (--workload):
  copy   prompts that quote a passage of held-out text and then start it
         again, so that the continuation copies from the context, as a
         summary, an edit or a retrieval answer does: prompt = passage +
         "\\n\\n" + its first quarter;
  text   prompts that are a passage of held-out text, continued freely (what
         a draft model is for; prompt lookup finds little here).
Passages are --passage-words words from --text, one per prompt, spread over
the file; --max-tokens new tokens, greedy, EOS ignored.

  sol            `solrun PLAN --prompt P --max-tokens N --ignore-eos --json`
                 without and with --speculative-config (default: ngram, 4
                 tokens, lookup 2..4; --draft PLAN: that draft model);
                 medians over prompts of the decode tokens/s solrun reports;
                 the speculative run's ids must equal the plain run's
                 (greedy), and its acceptance is reported.
  transformers   (with --hf MODEL_DIR) generate() in bf16 on the same prompts
                 (tokenized by the model's tokenizer), plain and with
                 prompt_lookup_num_tokens (n-gram) or assistant_model
                 (--hf-draft DIR: assisted generation with that checkpoint);
                 tokens/s = new tokens / (wall time - time of the first token).
  batches        (--batch-sizes 16 64) `solrun --bench` with that many
                 sequences at once (random prompts of --bench-input-len,
                 --bench-output-len tokens), without and with the same
                 --speculative-config: output tokens/s both ways, to check
                 that speculation never costs throughput under load (its
                 disable_by_batch_size).

The speedup is speculative tokens/s over plain tokens/s of the same engine.
Needs a trained model: on random weights nothing copies and drafts are noise.

  python3 bench/spec_bench.py --solrun build/bin/solrun --plan sol-tiny.plan \\
      --text models/sol-tiny/data/val.txt --device cpu --prompts 2

Greedy ids with and without speculation are equal on the CPU reference
executor. On the GPU a verifying step runs several tokens through other
kernels than a one-token decode step (bf16 sums in another order), so two
runs may part where two logits nearly tie, as they may between batch sizes
without speculation: where they part, the target scores the common prefix
teacher-forced, and the gap between the two ids' logits must stay within
--tie-gap.

Prints one JSON object and a table; exit code 0 if every row ran and the ids
agreed or parted only at near-ties.
"""

import argparse
import json
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def log(msg):
    print(f"[spec-bench] {msg}", file=sys.stderr, flush=True)


def fail(msg):
    print(f"[spec-bench] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def make_prompts(text_path, count, words_per_passage, workload):
    words = Path(text_path).read_text(encoding="utf-8").split()
    if len(words) < words_per_passage * count:
        fail(f"{text_path} has {len(words)} words; {count} passages of "
             f"{words_per_passage} need more (fewer --prompts or --passage-words)")
    stride = len(words) // count
    prompts = []
    for i in range(count):
        passage = words[i * stride:i * stride + words_per_passage]
        if workload == "copy":
            start = passage[:max(1, len(passage) // 4)]
            prompts.append(" ".join(passage) + "\n\n" + " ".join(start))
        else:
            prompts.append(" ".join(passage))
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


def first_difference(args, a, b):
    """Where two greedy runs of one prompt part: the first output index d, the
    ids each chose there, and the gap between those two ids' logits when the
    target scores the prompt and the common outputs teacher-forced (a prompt
    step, a third kernel path). bf16 kernels that add in another order round
    differently, so runs can part where two logits (nearly) tie; a gap of
    several tenths would point at a real error instead."""
    d = next(i for i, (x, y) in enumerate(zip(a["ids"], b["ids"])) if x != y)
    context = a["prompt_ids"] + a["ids"][:d]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "logits.f32"
        cmd = [args.solrun, args.plan, "--prompt-ids", ",".join(map(str, context)),
               "--max-tokens", "0", "--logits-out", str(out), "--device", args.device]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            fail(f"teacher-forced logits failed: {p.stderr.strip()[-400:]}")
        raw = out.read_bytes()
    vocab = len(raw) // 4 // len(context)
    last = struct.unpack(f"<{vocab}f", raw[-4 * vocab:])
    x, y = a["ids"][d], b["ids"][d]
    best = sorted(range(vocab), key=lambda i: -last[i])[:2]
    return {"index": d, "plain_id": x, "spec_id": y, "gap": abs(last[x] - last[y]),
            "top2": best, "top2_gap": last[best[0]] - last[best[1]]}


def sol_rows(args, prompts):
    plain, spec, agree = [], [], 0
    proposed = accepted = drafts = draft_steps = 0
    differences = []
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
        draft_steps += s.get("draft_model_steps", 0)
        where = ""
        if a["ids"] != b["ids"]:
            diff = first_difference(args, a, b)
            differences.append(diff)
            where = (f" from output {diff['index']} ({diff['plain_id']} against "
                     f"{diff['spec_id']}, teacher-forced logit gap {diff['gap']:.3f})")
        log(f"prompt {i}: {plain[-1]:.1f} -> {spec[-1]:.1f} tok/s, "
            f"{s.get('accepted_tokens', 0)}/{s.get('proposed_tokens', 0)} accepted, "
            f"ids {'equal' if a['ids'] == b['ids'] else 'different'}{where}")
    return {
        "plain_tokens_per_s": statistics.median(plain),
        "spec_tokens_per_s": statistics.median(spec),
        "speedup": statistics.median(spec) / statistics.median(plain),
        "ids_equal": agree,
        "prompts": len(prompts),
        "differences": differences,
        "max_difference_gap": max((d["gap"] for d in differences), default=0.0),
        "proposed_tokens": proposed,
        "accepted_tokens": accepted,
        "acceptance_rate": accepted / proposed if proposed else 0.0,
        "mean_accepted_length": 1.0 + accepted / drafts if drafts else 0.0,
        "draft_model_steps": draft_steps,
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

    if args.hf_draft:
        assistant = AutoModelForCausalLM.from_pretrained(
            args.hf_draft, dtype=torch.bfloat16).cuda().eval()
        spec_kw = {"assistant_model": assistant}
        method = f"assisted generation ({Path(args.hf_draft).name})"
    else:
        spec_kw = {"prompt_lookup_num_tokens": args.hf_lookup_tokens}
        method = "prompt lookup"
    plain, spec = [], []
    with torch.no_grad():
        for i, prompt in enumerate(prompts):
            ids = tok(prompt, return_tensors="pt").input_ids.cuda()
            if i == 0:
                timed(ids)  # warm-up
            a, _ = timed(ids)
            b, _ = timed(ids, **spec_kw)
            plain.append(a)
            spec.append(b)
    return {
        "engine": f"transformers {transformers.__version__} generate (bf16)",
        "method": method,
        "plain_tokens_per_s": statistics.median(plain),
        "spec_tokens_per_s": statistics.median(spec),
        "speedup": statistics.median(spec) / statistics.median(plain),
        "lookup_tokens": None if args.hf_draft else args.hf_lookup_tokens,
    }


def batch_rows(args):
    """solrun --bench at each of --batch-sizes, plain and speculative."""
    rows = []
    for b in args.batch_sizes:
        row = {"max_num_seqs": b}
        for name, spec in (("plain", None), ("spec", args.spec)):
            cmd = [args.solrun, args.plan, "--bench", "--device", args.device,
                   "--num-prompts", str(2 * b), "--max-num-seqs", str(b),
                   "--input-len", str(args.bench_input_len),
                   "--output-len", str(args.bench_output_len), "--json"]
            if spec:
                cmd += ["--speculative-config", spec]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                fail(f"solrun --bench --max-num-seqs {b} failed: {p.stderr.strip()[-400:]}")
            j = json.loads(p.stdout.strip().splitlines()[-1])
            row[f"{name}_output_tokens_per_s"] = j["output_tokens_per_s"]
            if spec:
                row["spec_proposed_tokens"] = j.get("spec_proposed_tokens", 0)
                row["spec_accepted_tokens"] = j.get("spec_accepted_tokens", 0)
        row["speedup"] = row["spec_output_tokens_per_s"] / row["plain_output_tokens_per_s"]
        log(f"{b} sequences: {row['plain_output_tokens_per_s']:.0f} -> "
            f"{row['spec_output_tokens_per_s']:.0f} tok/s ({row['speedup']:.2f}x), "
            f"{row['spec_accepted_tokens']}/{row['spec_proposed_tokens']} accepted")
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--solrun", required=True)
    ap.add_argument("--plan", required=True)
    ap.add_argument("--text", required=True, help="held-out text the passages come from")
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--passage-words", type=int, default=150)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--workload", choices=["copy", "text"], default="copy")
    ap.add_argument("--spec", default='{"method": "ngram", "num_speculative_tokens": 4, '
                    '"prompt_lookup_max": 4, "prompt_lookup_min": 2}',
                    help="the --speculative-config JSON")
    ap.add_argument("--draft", help="a draft plan: --spec becomes {\"model\": DRAFT, "
                    "\"num_speculative_tokens\": --draft-tokens}")
    ap.add_argument("--draft-tokens", type=int, default=4)
    ap.add_argument("--hf", help="the checkpoint folder, for the Transformers rows")
    ap.add_argument("--hf-lookup-tokens", type=int, default=4)
    ap.add_argument("--hf-draft", help="the draft's checkpoint folder: Transformers runs "
                    "assisted generation instead of prompt lookup")
    ap.add_argument("--batch-sizes", type=int, nargs="*", default=[],
                    help="also solrun --bench at these --max-num-seqs, plain and speculative")
    ap.add_argument("--bench-input-len", type=int, default=128)
    ap.add_argument("--bench-output-len", type=int, default=128)
    ap.add_argument("--tie-gap", type=float, default=0.25,
                    help="largest teacher-forced logit gap at which runs with and without "
                    "speculation may part (bf16 rounding); beyond it the run fails")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    if args.draft:
        args.spec = json.dumps({"model": args.draft,
                                "num_speculative_tokens": args.draft_tokens})
    method = "draft model" if args.draft else json.loads(args.spec).get("method", "draft model")

    prompts = make_prompts(args.text, args.prompts, args.passage_words, args.workload)
    result = {"workload": {"kind": args.workload, "prompts": args.prompts,
                           "passage_words": args.passage_words,
                           "max_tokens": args.max_tokens, "device": args.device,
                           "speculative_config": json.loads(args.spec)},
              "sol": sol_rows(args, prompts)}
    if args.hf:
        result["transformers"] = hf_rows(args, prompts)
    if args.batch_sizes:
        result["batches"] = batch_rows(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n")

    print(f"\n{method} speculation, batch 1, {args.prompts} {args.workload} prompts, "
          f"{args.max_tokens} new tokens, greedy, {args.device}")
    print(f"{'engine':<52} {'plain tok/s':>12} {'spec tok/s':>11} {'speedup':>8}")
    for name, row in [("sol", result["sol"])] + (
            [(result["transformers"]["engine"] + " " + result["transformers"]["method"],
              result["transformers"])] if args.hf else []):
        print(f"{name:<52} {row['plain_tokens_per_s']:>12.1f} {row['spec_tokens_per_s']:>11.1f} "
              f"{row['speedup']:>7.2f}x")
    s = result["sol"]
    print(f"sol: {s['accepted_tokens']} of {s['proposed_tokens']} proposed tokens accepted "
          f"({100 * s['acceptance_rate']:.1f}%), {s['mean_accepted_length']:.2f} tokens per "
          f"speculating step; ids equal with and without speculation on "
          f"{s['ids_equal']} of {s['prompts']} prompts")
    if s["differences"]:
        print(f"sol: the others part at near-ties: largest teacher-forced logit gap between "
              f"the two ids where they part {s['max_difference_gap']:.3f} (gate "
              f"{args.tie_gap}; first differing outputs "
              f"{', '.join(str(d['index']) for d in s['differences'])})")
    for row in result.get("batches", []):
        print(f"sol --bench, {row['max_num_seqs']} sequences: "
              f"{row['plain_output_tokens_per_s']:.0f} -> {row['spec_output_tokens_per_s']:.0f} "
              f"output tok/s ({row['speedup']:.2f}x)")
    return 0 if s["max_difference_gap"] <= args.tie_gap else 1


if __name__ == "__main__":
    sys.exit(main())

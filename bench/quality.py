#!/usr/bin/env python3
"""Quality of a Sol plan on trained weights: a plan against Hugging Face Transformers on the
same checkpoint, or one plan against another.

  --hf MODEL_DIR   reference = Transformers float32 (eager attention, TF32 off); rows:
                   "sol" (the plan) and "hf_bf16" (Transformers bfloat16, sdpa: the yardstick
                   of what bf16 inference costs anyway)
  --plan-b PLAN    reference = --plan, row "plan_b"

Both score the same token ids: the held-out text (--text) is tokenized here with
AutoTokenizer (--tokenizer, default the --hf folder), cut to the first --positions + 1 ids,
and given to solrun as --perplexity-ids; the windows are those of `solrun --perplexity`
(bench/perplexity_windows.py). Metrics of each row against the reference:

  perplexity, delta %        exp(mean NLL) of each, and (ppl / ppl_ref - 1) * 100
  top-1 agreement %          positions where both logits have the same argmax
  KL(ref || row), nats       mean over positions; log-softmax in float64
  relative logit error       ||row - ref||_2 / ||ref||_2 over all scored logits
  greedy agreement %         greedy completions of --max-new tokens (EOS ignored) per prompt:
                             mean of common-prefix length / max_new; and the share of
                             completions that are exactly equal

Gates (--gate: exit 1 if one fails). --hf: the plan's perplexity within 0.5% of fp32's;
the plan's top-1 agreement >= hf_bf16's - 0.5 points; the plan's relative logit error <=
hf_bf16's. --plan-b: plan B's perplexity within 0.5% of plan A's.

solrun is driven through:
  solrun PLAN --perplexity-ids IDS.json --window W --stride S --json --logits-out F --device D
      -> {"tokens": n, "nll": x, "perplexity": x, ...}; F = float32 [n, vocab]
  solrun PLAN --perplexity TEXT --limit-tokens N --window W --stride S --json   (tokenizer check)
  solrun PLAN --prompt-ids 1,2,3 --max-tokens 128 --ignore-eos --json --device D
      -> {"prompt_ids": [...], "ids": [...], ...}

  python3 bench/quality.py --solrun build/bin/solrun --plan /tmp/sol-tiny.plan \\
      --hf /tmp/sol-tiny --text models/sol-tiny/heldout.txt --prompts /tmp/sol-tiny/eval.json \\
      --json /tmp/quality.json --gate
  python3 bench/quality.py --self-test      # numpy metric code against the pure-Python one

Needs numpy; --hf also torch and transformers. The metric math has a pure-Python twin
that bench/test_quality.py checks without either.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from perplexity_windows import logit_rows, perplexity_windows  # noqa: E402

PPL_GATE_PCT = 0.5
TOP1_SLACK_POINTS = 0.5
SUM_KEYS = ("n", "nll_ref", "nll_cand", "kl", "agree", "sq_err", "sq_ref")


def log(msg):
    print(f"[quality] {msg}", file=sys.stderr, flush=True)


class QualityError(Exception):
    pass


# ---------------------------------------------------------------------------
# Metric math: pure Python (the definition, tested anywhere) and numpy (used on real sizes)
# ---------------------------------------------------------------------------

def empty_sums():
    return {k: 0.0 for k in SUM_KEYS}


def add_sums(a, b):
    return {k: a[k] + b[k] for k in SUM_KEYS}


def _log_softmax_py(row):
    m = max(row)
    s = math.fsum(math.exp(x - m) for x in row)
    lse = m + math.log(s)
    return [x - lse for x in row]


def _argmax(row):
    best = 0
    for i, x in enumerate(row):
        if x > row[best]:
            best = i
    return best


def chunk_sums_python(ref_rows, cand_rows, targets):
    """Sums over a chunk of positions; ref_rows/cand_rows: lists of logit rows, targets: ids."""
    out = empty_sums()
    for r, c, t in zip(ref_rows, cand_rows, targets):
        lr, lc = _log_softmax_py([float(x) for x in r]), _log_softmax_py([float(x) for x in c])
        out["n"] += 1
        out["nll_ref"] -= lr[t]
        out["nll_cand"] -= lc[t]
        out["kl"] += math.fsum(math.exp(a) * (a - b) for a, b in zip(lr, lc))
        out["agree"] += 1.0 if _argmax(r) == _argmax(c) else 0.0
        out["sq_err"] += math.fsum((float(b) - float(a)) ** 2 for a, b in zip(r, c))
        out["sq_ref"] += math.fsum(float(a) ** 2 for a in r)
    return out


def chunk_sums_numpy(ref, cand, targets):
    """The same sums with numpy: ref, cand [rows, vocab] (any float dtype), targets [rows]."""
    import numpy as np
    r = np.asarray(ref, dtype=np.float64)
    c = np.asarray(cand, dtype=np.float64)
    t = np.asarray(targets, dtype=np.int64)

    def log_softmax(x):
        m = x.max(axis=1, keepdims=True)
        return x - (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))

    lr, lc = log_softmax(r), log_softmax(c)
    idx = np.arange(r.shape[0])
    return {
        "n": float(r.shape[0]),
        "nll_ref": float(-lr[idx, t].sum()),
        "nll_cand": float(-lc[idx, t].sum()),
        "kl": float((np.exp(lr) * (lr - lc)).sum()),
        # argmax of the float32 rows as given (float64 conversion does not change ties)
        "agree": float((np.argmax(ref, axis=1) == np.argmax(cand, axis=1)).sum()),
        "sq_err": float(((c - r) ** 2).sum()),
        "sq_ref": float((r ** 2).sum()),
    }


def all_sums_numpy(ref, cand, targets, chunk=256):
    total = empty_sums()
    for i in range(0, ref.shape[0], chunk):
        total = add_sums(total, chunk_sums_numpy(ref[i:i + chunk], cand[i:i + chunk], targets[i:i + chunk]))
    return total


def summarize(sums):
    """Sums -> the reported metrics of one row against the reference."""
    n = sums["n"]
    if n <= 0:
        raise QualityError("no scored positions")
    nll_ref, nll = sums["nll_ref"] / n, sums["nll_cand"] / n
    ppl_ref, ppl = math.exp(nll_ref), math.exp(nll)
    return {
        "positions": int(n),
        "nll": nll,
        "perplexity": ppl,
        "nll_ref": nll_ref,
        "perplexity_ref": ppl_ref,
        "perplexity_delta_pct": (ppl / ppl_ref - 1.0) * 100.0,
        "top1_agreement_pct": sums["agree"] / n * 100.0,
        "kl_mean_nats": sums["kl"] / n,
        "rel_logit_error": (math.sqrt(sums["sq_err"]) / math.sqrt(sums["sq_ref"]) if sums["sq_ref"] > 0
                            else (math.inf if sums["sq_err"] > 0 else 0.0)),
    }


def common_prefix(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def greedy_agreement(ref_lists, cand_lists, max_new):
    """Mean common-prefix share (% of max_new) and % of exactly equal completions."""
    if len(ref_lists) != len(cand_lists) or not ref_lists:
        raise QualityError("greedy agreement needs the same, non-zero number of completions")
    shares, exact = [], 0
    for r, c in zip(ref_lists, cand_lists):
        shares.append(common_prefix(r, c) / max_new)
        exact += (list(r) == list(c))
    return {"greedy_prefix_pct": sum(shares) / len(shares) * 100.0,
            "greedy_exact_pct": exact / len(ref_lists) * 100.0,
            "greedy_prefix_per_prompt": [common_prefix(r, c) for r, c in zip(ref_lists, cand_lists)]}


def gates_hf(sol, hf_bf16):
    """[(name, passed, detail)] for plan vs Transformers."""
    g = []
    d = abs(sol["perplexity_delta_pct"])
    g.append(("perplexity within 0.5% of HF fp32", d <= PPL_GATE_PCT,
              f"|{sol['perplexity_delta_pct']:+.4f}%| <= {PPL_GATE_PCT}%"))
    floor = hf_bf16["top1_agreement_pct"] - TOP1_SLACK_POINTS
    g.append(("top-1 agreement >= HF bf16's - 0.5 points", sol["top1_agreement_pct"] >= floor,
              f"{sol['top1_agreement_pct']:.3f}% >= {floor:.3f}%"))
    g.append(("relative logit error <= HF bf16's", sol["rel_logit_error"] <= hf_bf16["rel_logit_error"],
              f"{sol['rel_logit_error']:.3e} <= {hf_bf16['rel_logit_error']:.3e}"))
    return g


def gates_plans(plan_b):
    d = abs(plan_b["perplexity_delta_pct"])
    return [("plan B perplexity within 0.5% of plan A", d <= PPL_GATE_PCT,
             f"|{plan_b['perplexity_delta_pct']:+.4f}%| <= {PPL_GATE_PCT}%")]


def format_table(rows, reference_name):
    """rows: {name: metrics}; a compact text table."""
    head = (f"{'row':<10} {'ppl':>10} {'delta %':>9} {'top-1 %':>8} {'KL nats':>10} {'rel err':>10} "
            f"{'greedy %':>9} {'exact %':>8}")
    lines = [f"reference: {reference_name}", head, "-" * len(head)]
    for name, m in rows.items():
        greedy = f"{m['greedy_prefix_pct']:>9.2f} {m['greedy_exact_pct']:>8.1f}" if "greedy_prefix_pct" in m \
            else f"{'-':>9} {'-':>8}"
        lines.append(f"{name:<10} {m['perplexity']:>10.4f} {m['perplexity_delta_pct']:>+9.4f} "
                     f"{m['top1_agreement_pct']:>8.3f} {m['kl_mean_nats']:>10.3e} {m['rel_logit_error']:>10.3e} "
                     f"{greedy}")
    if rows:
        first = next(iter(rows.values()))
        lines.append(f"{'reference':<10} {first['perplexity_ref']:>10.4f}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# solrun
# ---------------------------------------------------------------------------

def last_json_object(stdout):
    for line in reversed(stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    try:
        return json.loads(stdout)
    except json.JSONDecodeError:
        return None


def run_solrun(cmd, what):
    log(f"{what}: {' '.join(cmd)}")
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise QualityError(f"{what}: cannot run {cmd[0]}: {e}")
    if p.returncode != 0:
        raise QualityError(f"{what}: solrun exited with {p.returncode}\n--- stderr (tail) ---\n"
                           f"{p.stderr[-4000:]}\n--- stdout (tail) ---\n{p.stdout[-2000:]}")
    obj = last_json_object(p.stdout)
    if obj is None:
        raise QualityError(f"{what}: solrun printed no JSON object\n--- stdout (tail) ---\n{p.stdout[-2000:]}"
                           f"\n--- stderr (tail) ---\n{p.stderr[-2000:]}")
    log(f"{what}: {time.time() - t0:.1f} s")
    return obj


def solrun_logits(args, plan, ids, n_scored, tmp, label):
    """solrun's NLL summary and its logits of the scored positions, float32 [n, vocab]."""
    import numpy as np
    ids_path = Path(tmp) / "ids.json"
    ids_path.write_text(json.dumps(ids))
    logits_path = Path(tmp) / f"logits-{label}.f32"
    obj = run_solrun([args.solrun, str(plan), "--perplexity-ids", str(ids_path), "--window", str(args.window),
                      "--stride", str(args.stride), "--json", "--logits-out", str(logits_path),
                      "--device", args.device], f"{label} perplexity")
    n = obj.get("tokens")
    if n != n_scored:
        raise QualityError(f"{label}: solrun scored {n} positions, expected {n_scored} "
                           f"(windowing differs from bench/perplexity_windows.py?)")
    if not isinstance(obj.get("nll"), (int, float)):
        raise QualityError(f"{label}: solrun's JSON has no \"nll\": {str(obj)[:300]}")
    if not logits_path.is_file():
        raise QualityError(f"{label}: solrun wrote no {logits_path}")
    size = logits_path.stat().st_size
    if size % (4 * n):
        raise QualityError(f"{label}: {logits_path} has {size} bytes, not a multiple of 4 x {n} positions")
    vocab = size // (4 * n)
    logits = np.fromfile(logits_path, dtype=np.float32).reshape(n, vocab)
    logits_path.unlink()  # can be GBs with a 128k vocabulary
    return obj, logits


def solrun_text_check(args, plan, text_path, limit, label):
    return run_solrun([args.solrun, str(plan), "--perplexity", str(text_path), "--limit-tokens", str(limit),
                       "--window", str(args.window), "--stride", str(args.stride), "--json",
                       "--device", args.device], f"{label} perplexity of the text (Sol's tokenizer)")


def solrun_greedy(args, plan, prompt_ids, label):
    obj = run_solrun([args.solrun, str(plan), "--prompt-ids", ",".join(str(i) for i in prompt_ids),
                      "--max-tokens", str(args.max_new), "--ignore-eos", "--json", "--device", args.device],
                     f"{label} greedy")
    ids = obj.get("ids")
    if not isinstance(ids, list):
        raise QualityError(f"{label}: solrun's JSON has no \"ids\" list: {str(obj)[:300]}")
    if len(ids) == len(prompt_ids) + args.max_new and ids[:len(prompt_ids)] == list(prompt_ids):
        ids = ids[len(prompt_ids):]  # the prompt echoed in front
    if len(ids) != args.max_new:
        raise QualityError(f"{label}: solrun generated {len(ids)} ids, expected {args.max_new} "
                           f"(is --ignore-eos honoured?)")
    return ids


# ---------------------------------------------------------------------------
# Transformers
# ---------------------------------------------------------------------------

def disable_tf32(torch):
    """Full float32 matmuls for the reference (torch >= 2.9 API, else the old flags; never both)."""
    if hasattr(torch.backends, "fp32_precision"):
        try:
            torch.backends.fp32_precision = "ieee"
            torch.backends.cuda.matmul.fp32_precision = "ieee"
            torch.backends.cudnn.fp32_precision = "ieee"
            return
        except (AttributeError, RuntimeError, ValueError) as e:
            log(f"note: the fp32_precision settings failed ({e}); using allow_tf32")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def load_hf(path, dtype_name, device):
    import torch
    from transformers import AutoModelForCausalLM
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype_name]
    attn = "eager" if dtype_name == "float32" else "sdpa"
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype, attn_implementation=attn)
    model.to(device).eval()
    p = next(model.parameters())
    if p.dtype != dtype:
        raise QualityError(f"Transformers loaded {path} as {p.dtype}, expected {dtype}")
    return model


def hf_logits(model, ids, window, stride, device):
    """Float32 logits [n_scored, vocab] over the windows of solrun --perplexity."""
    import numpy as np
    import torch
    ids_t = torch.tensor(ids, dtype=torch.long, device=device)
    rows = []
    for begin, end, first in perplexity_windows(len(ids), window, stride):
        with torch.no_grad():
            logits = model(input_ids=ids_t[begin:end][None], use_cache=False).logits[0]
        r0, r1 = logit_rows(begin, end, first)
        rows.append(logits[r0:r1].float().cpu().numpy())
    return np.ascontiguousarray(np.concatenate(rows, axis=0), dtype=np.float32)


def hf_greedy(model, prompt_ids, max_new, device):
    """Cache-free greedy decoding (a full forward per step), EOS ignored."""
    import torch
    ids = torch.tensor(prompt_ids, dtype=torch.long, device=device)
    new = []
    for _ in range(max_new):
        with torch.no_grad():
            nxt = int(model(input_ids=ids[None], use_cache=False).logits[0, -1].float().argmax())
        new.append(nxt)
        ids = torch.cat([ids, ids.new_tensor([nxt])])
    return new


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def load_prompts(path):
    """A JSON list of strings, or train.py's eval.json (its goldens' prompts and ids)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, dict) and "goldens" in data:
        goldens = data["goldens"]
        if not goldens:
            raise QualityError(f"{path} has no goldens (trained with --skip-goldens?)")
        return [g["prompt"] for g in goldens], goldens
    if isinstance(data, list) and all(isinstance(p, str) for p in data):
        return data, None
    raise QualityError(f"{path}: expected a JSON list of prompt strings or an eval.json with goldens")


def self_test():
    import random
    import numpy as np
    rng = random.Random(0)
    for rows, vocab in [(1, 2), (7, 13), (33, 50)]:
        ref = np.array([[rng.gauss(0, 3) for _ in range(vocab)] for _ in range(rows)], dtype=np.float32)
        cand = (ref + np.array([[rng.gauss(0, 0.1) for _ in range(vocab)] for _ in range(rows)])).astype(np.float32)
        targets = [rng.randrange(vocab) for _ in range(rows)]
        a = chunk_sums_python(ref.tolist(), cand.tolist(), targets)
        b = all_sums_numpy(ref, cand, np.array(targets), chunk=5)
        for k in SUM_KEYS:
            if not math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12):
                raise QualityError(f"self-test: {k}: python {a[k]!r} != numpy {b[k]!r} ({rows}x{vocab})")
    log("self-test: numpy metric code agrees with the pure-Python definition")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--solrun", help="path of solrun")
    ap.add_argument("--plan", type=Path, help="the plan (plan A in plan-vs-plan mode)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--plan-b", type=Path, help="compare against this plan (reference: --plan)")
    mode.add_argument("--hf", type=Path, help="Hugging Face checkpoint the plan was compiled from")
    ap.add_argument("--tokenizer", type=Path, help="folder with tokenizer.json (default: --hf)")
    ap.add_argument("--text", type=Path, help="held-out text, e.g. models/sol-tiny/heldout.txt")
    ap.add_argument("--positions", type=int, default=4096,
                    help="score the first N positions (ids cut to N + 1; default %(default)s)")
    ap.add_argument("--window", type=int, default=1024)
    ap.add_argument("--stride", type=int, default=512)
    ap.add_argument("--prompts", type=Path, help="JSON list of prompts, or train.py's eval.json")
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--device", default="cuda", help="solrun's and Transformers' device (default cuda)")
    ap.add_argument("--no-text-check", action="store_true",
                    help="skip the run of solrun on the text itself (checks Sol's tokenizer)")
    ap.add_argument("--json", type=Path, help="write the result here")
    ap.add_argument("--gate", action="store_true", help="exit 1 if a gate fails")
    ap.add_argument("--self-test", action="store_true", help="check the numpy metrics and exit")
    args = ap.parse_args()
    if args.self_test:
        return args
    missing = [f for f, v in (("--solrun", args.solrun), ("--plan", args.plan), ("--text", args.text)) if not v]
    if missing:
        ap.error(f"missing {', '.join(missing)}")
    if not (args.plan_b or args.hf):
        ap.error("give --hf MODEL_DIR (plan vs Transformers) or --plan-b PLAN (plan vs plan)")
    args.tokenizer = args.tokenizer or args.hf
    if not args.tokenizer:
        ap.error("plan vs plan needs --tokenizer DIR (a folder with tokenizer.json) to make the ids")
    for flag, path in (("--plan", args.plan), ("--plan-b", args.plan_b), ("--text", args.text),
                       ("--prompts", args.prompts)):
        if path and not path.is_file():
            ap.error(f"{flag} {path}: no such file")
    for flag, path in (("--hf", args.hf), ("--tokenizer", args.tokenizer)):
        if path and not (path / ("config.json" if flag == "--hf" else "tokenizer.json")).is_file():
            ap.error(f"{flag} {path}: not a folder with {'config.json' if flag == '--hf' else 'tokenizer.json'}")
    if not (os.path.isfile(args.solrun) and os.access(args.solrun, os.X_OK)):
        ap.error(f"--solrun {args.solrun}: not an executable file")
    if args.positions < 1 or args.max_new < 1:
        ap.error("--positions and --max-new must be >= 1")
    if not 1 <= args.stride <= args.window:
        ap.error("need 1 <= --stride <= --window")
    return args


def run(args):
    import numpy as np
    from transformers import AutoTokenizer
    result = {"mode": "hf" if args.hf else "plans", "plan": str(args.plan),
              "plan_b": str(args.plan_b) if args.plan_b else None, "hf": str(args.hf) if args.hf else None,
              "text": str(args.text), "window": args.window, "stride": args.stride, "device": args.device}
    tok = AutoTokenizer.from_pretrained(str(args.tokenizer))
    text = args.text.read_text(encoding="utf-8")
    all_ids = tok(text)["input_ids"]
    ids = all_ids[:args.positions + 1]
    if len(ids) < args.positions + 1:
        log(f"note: the text has {len(all_ids)} ids; scoring all of them")
    targets = np.array([ids[t] for _, end, first in perplexity_windows(len(ids), args.window, args.stride)
                        for t in range(first, end)], dtype=np.int64)
    result.update(ids=len(ids), positions=int(targets.size))
    log(f"{args.text}: {len(all_ids):,} ids; scoring {targets.size:,} positions "
        f"(window {args.window}, stride {args.stride})")

    prompts, goldens = (load_prompts(args.prompts) if args.prompts else ([], None))
    prompt_ids = [tok(p)["input_ids"] for p in prompts]
    if goldens:
        for p, g, pids in zip(prompts, goldens, prompt_ids):
            if g.get("prompt_ids") and g["prompt_ids"] != pids:
                raise QualityError(f"prompt {p!r}: this tokenizer gives {pids}, eval.json has {g['prompt_ids']}")

    rows = {}
    greedy = {}
    b_obj = None
    with tempfile.TemporaryDirectory(prefix="sol-quality-") as tmp:
        a_obj, a_logits = solrun_logits(args, args.plan, ids, targets.size, tmp, "plan")
        result["solrun_plan"] = a_obj
        if not args.no_text_check:
            t_obj = solrun_text_check(args, args.plan, args.text, len(ids), "plan")
            same = (t_obj.get("tokens") == a_obj.get("tokens")
                    and math.isclose(t_obj.get("nll", float("nan")), a_obj["nll"], rel_tol=1e-9))
            result["tokenizer_check"] = {"same_as_ids": same, "text_nll": t_obj.get("nll"),
                                         "ids_nll": a_obj["nll"]}
            log(f"tokenizer check: solrun on the text {'matches' if same else 'DIFFERS FROM'} the ids "
                f"tokenized by Transformers (nll {t_obj.get('nll')} vs {a_obj['nll']})")
        if prompts:
            greedy["plan"] = [solrun_greedy(args, args.plan, p, "plan") for p in prompt_ids]

        if args.plan_b:
            b_obj, b_logits = solrun_logits(args, args.plan_b, ids, targets.size, tmp, "plan B")
            result["solrun_plan_b"] = b_obj
            if b_logits.shape != a_logits.shape:
                raise QualityError(f"plan logits {a_logits.shape} vs plan B {b_logits.shape}: different vocabularies?")
            rows["plan_b"] = summarize(all_sums_numpy(a_logits, b_logits, targets))
            if prompts:
                greedy["plan_b"] = [solrun_greedy(args, args.plan_b, p, "plan B") for p in prompt_ids]
                rows["plan_b"].update(greedy_agreement(greedy["plan"], greedy["plan_b"], args.max_new))
            reference = "plan A (solrun)"
            gates = gates_plans(rows["plan_b"])
        else:
            import torch
            import transformers
            disable_tf32(torch)
            result["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__}
            refs = {}
            for dtype_name in ("float32", "bfloat16"):
                t0 = time.time()
                model = load_hf(args.hf, dtype_name, args.device)
                if model.config.vocab_size != a_logits.shape[1]:
                    raise QualityError(f"the plan's logits have {a_logits.shape[1]} columns, the checkpoint's "
                                       f"vocab_size is {model.config.vocab_size}: not the same model?")
                refs[dtype_name] = hf_logits(model, ids, args.window, args.stride, args.device)
                if prompts:
                    greedy[dtype_name] = [hf_greedy(model, p, args.max_new, args.device) for p in prompt_ids]
                del model
                torch.cuda.empty_cache()
                log(f"Transformers {dtype_name}: logits and greedy in {time.time() - t0:.1f} s")
            ref = refs["float32"]
            rows["sol"] = summarize(all_sums_numpy(ref, a_logits, targets))
            rows["hf_bf16"] = summarize(all_sums_numpy(ref, refs["bfloat16"], targets))
            if prompts:
                rows["sol"].update(greedy_agreement(greedy["float32"], greedy["plan"], args.max_new))
                rows["hf_bf16"].update(greedy_agreement(greedy["float32"], greedy["bfloat16"], args.max_new))
                # eval.json's goldens are this checkpoint's only when it lies in the --hf folder.
                if goldens and Path(args.prompts).resolve().parent == Path(args.hf).resolve():
                    same = [g["ids"][:args.max_new] == r for g, r in zip(goldens, greedy["float32"])]
                    result["reference_matches_goldens"] = all(same)
                    if not all(same):
                        log(f"note: Transformers fp32 greedy differs from eval.json's goldens on "
                            f"{same.count(False)} prompt(s) (different machine or versions?)")
            reference = "Transformers float32 (eager, TF32 off)"
            gates = gates_hf(rows["sol"], rows["hf_bf16"])
        # solrun's reported NLL must be what its logits say.
        if "sol" in rows:
            consistency = [("plan", a_obj["nll"], rows["sol"]["nll"])]
        else:
            consistency = [("plan", a_obj["nll"], rows["plan_b"]["nll_ref"]),
                           ("plan B", b_obj["nll"], rows["plan_b"]["nll"])]
        for label, reported, from_logits in consistency:
            if not math.isclose(reported, from_logits, rel_tol=1e-5):
                log(f"WARNING: {label}: solrun reports nll {reported}, its --logits-out gives {from_logits}")

    result["reference"] = reference
    result["rows"] = rows
    result["greedy"] = {"prompts": prompts, "max_new": args.max_new, "ids": greedy}
    result["gates"] = [{"name": n, "passed": p, "detail": d} for n, p, d in gates]
    result["passed"] = all(p for _, p, _ in gates)
    return result


def main():
    args = parse_args()
    try:
        if args.self_test:
            self_test()
            return 0
        result = run(args)
    except QualityError as e:
        log(f"ERROR: {e}")
        return 2
    except ImportError as e:
        log(f"ERROR: missing Python package ({e}); quality.py needs numpy, and torch + transformers "
            f"for --hf and tokenizing")
        return 2
    print(format_table(result["rows"], result["reference"]), file=sys.stderr)
    for g in result["gates"]:
        log(f"gate {'PASS' if g['passed'] else 'FAIL'}: {g['name']} ({g['detail']})")
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
        log(f"wrote {args.json}")
    print(text)
    if args.gate and not result["passed"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

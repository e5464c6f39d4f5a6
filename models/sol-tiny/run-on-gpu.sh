#!/usr/bin/env bash
# What the GPU machine runs for sol-tiny, from the repository root (models/sol-tiny/data
# carried over: train.txt, val.txt). Every stage prints its progress; logs go to $OUT too.
#
#   OUT=/path/that/comes/back models/sol-tiny/run-on-gpu.sh smoke     # every stage, tiny budget (~2 min)
#   OUT=... models/sol-tiny/run-on-gpu.sh tiny      # train sol-tiny (< 8 min)
#   OUT=... models/sol-tiny/run-on-gpu.sh draft     # sol-draft: sol-tiny's speculative draft (~3 min)
#   OUT=... models/sol-tiny/run-on-gpu.sh 1b        # Llama-3.2-1B shape on the same data (~6 min)
#   OUT=... models/sol-tiny/run-on-gpu.sh quality   # solc + bench/quality.py on what was trained
#                                                   # (QUALITY_MODELS="sol-tiny llama-1b" picks)
#
# The checkpoints stay in $WORK (default /tmp/sol-tiny-work) for solc and quality.py; $OUT
# gets sol-tiny's files with model.safetensors in <= 15 MiB parts (join-parts.sh joins them),
# and the 1B run's eval.json and log only.
set -euo pipefail
export PYTHONUNBUFFERED=1
OUT="${OUT:?set OUT to the folder to bring back}"
WORK="${WORK:-/tmp/sol-tiny-work}"
SOLC="${SOLC:-build/bin/solc}"
SOLRUN="${SOLRUN:-build/bin/solrun}"
mkdir -p "$OUT" "$WORK"
DATA=(--data models/sol-tiny/data --heldout models/sol-tiny/heldout.txt)

case "${1:-tiny}" in
  smoke)
    # The whole pipeline (tokenizer, 4-shape sweep, training, save, evaluation, goldens) on a
    # 90-second budget and at most one epoch per run, to catch a broken stage before the real run.
    python3 models/sol-tiny/train.py "${DATA[@]}" --out "$WORK/smoke" --preset sol-tiny --sweep \
        --minutes 1.5 --epochs 1 --split-output "$OUT/smoke" 2>&1 | tee "$OUT/smoke.log"
    ;;
  tiny)
    python3 models/sol-tiny/test_train.py
    python3 bench/test_perplexity_windows.py
    python3 models/sol-tiny/train.py "${DATA[@]}" --out "$WORK/sol-tiny" --preset sol-tiny --sweep \
        --split-output "$OUT/sol-tiny" 2>&1 | tee "$OUT/sol-tiny.log"
    ;;
  draft)
    # A smaller model with sol-tiny's tokenizer and recipe: the draft of speculative decoding
    # (models/sol-draft).
    python3 models/sol-tiny/train.py "${DATA[@]}" --out "$WORK/sol-draft" --preset sol-draft \
        --tokenizer models/sol-tiny --skip-goldens --minutes "${MINUTES_DRAFT:-2}" \
        --split-output "$OUT/sol-draft" 2>&1 | tee "$OUT/sol-draft.log"
    ;;
  1b)
    # sol-tiny's tokenizer: from the tiny stage on this machine, else the committed one.
    TOK="${TOK:-$WORK/sol-tiny}"
    [[ -f "$TOK/tokenizer.json" ]] || TOK=models/sol-tiny
    [[ -f "$TOK/tokenizer.json" ]] || { echo "run-on-gpu: no sol-tiny tokenizer; run the tiny stage first" >&2; exit 1; }
    python3 models/sol-tiny/train.py "${DATA[@]}" --out "$WORK/llama-1b" --preset llama-3.2-1b \
        --tokenizer "$TOK" --skip-goldens --minutes "${MINUTES_1B:-5}" 2>&1 | tee "$OUT/llama-1b.log"
    mkdir -p "$OUT/llama-1b"
    cp "$WORK/llama-1b/eval.json" "$WORK/llama-1b/train_log.jsonl" "$WORK/llama-1b/config.json" "$OUT/llama-1b/"
    ;;
  quality)
    # Each trained model against Transformers on the same checkpoint: the bf16 plan (gated),
    # the fp8-KV plan (reported), and the fp8-KV plan against the bf16 one.
    python3 bench/quality.py --self-test
    POSITIONS="${POSITIONS:-16384}"
    for m in ${QUALITY_MODELS:-sol-tiny llama-1b}; do
      # sol-tiny: the one trained here, else the committed one.
      dir="$WORK/$m"
      [[ $m == sol-tiny && ! -f "$dir/config.json" ]] && dir=models/sol-tiny
      [[ -f "$dir/config.json" ]] || { echo "run-on-gpu: no $dir, skipping"; continue; }
      "$SOLC" "$dir" -q -o "$WORK/$m.plan" 2>&1 | tee "$OUT/solc-$m.log"
      "$SOLC" "$dir" -q --kv-cache-dtype fp8 -o "$WORK/$m-fp8.plan" 2>&1 | tee -a "$OUT/solc-$m.log"
      # The 1B run has no goldens; it shares sol-tiny's tokenizer, so sol-tiny's prompts fit.
      PROMPTS=()
      for e in "$WORK/sol-tiny/eval.json" models/sol-tiny/eval.json; do
        [[ -f "$e" ]] && { PROMPTS=(--prompts "$e"); break; }
      done
      COMMON=(--solrun "$SOLRUN" --text models/sol-tiny/heldout.txt --positions "$POSITIONS" "${PROMPTS[@]}")
      python3 bench/quality.py "${COMMON[@]}" --plan "$WORK/$m.plan" --hf "$dir" \
          --json "$OUT/quality-$m.json" --gate 2>&1 | tee "$OUT/quality-$m.log" || echo "run-on-gpu: quality $m: exit $?"
      python3 bench/quality.py "${COMMON[@]}" --plan "$WORK/$m-fp8.plan" --hf "$dir" \
          --json "$OUT/quality-$m-fp8.json" 2>&1 | tee "$OUT/quality-$m-fp8.log" || echo "run-on-gpu: quality $m fp8: exit $?"
      python3 bench/quality.py "${COMMON[@]}" --plan "$WORK/$m.plan" --plan-b "$WORK/$m-fp8.plan" \
          --tokenizer "$dir" --json "$OUT/quality-$m-fp8-vs-bf16.json" 2>&1 \
          | tee "$OUT/quality-$m-fp8-vs-bf16.log" || echo "run-on-gpu: quality $m fp8 vs bf16: exit $?"
    done
    ;;
  *)
    echo "usage: OUT=DIR $0 smoke|tiny|draft|1b|quality" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# Session 10, call 7: offline closed-loop TTFT/TPOT, async scheduling off,
# general (default), and decode-only (SOL_ASYNC_DECODE_ONLY=1, experiment).
set -u
cd "$(dirname "$0")/../.."
chmod +x .carry/bin/* scripts/*
r=/tmp/c7; mkdir -p $r
export PYTHONUNBUFFERED=1 SOL_CACHE_DIR=$PWD/.carry/kcache
tar xJf .carry/pack/tok-kcache.tar.xz -C .carry
plan=/tmp/sol-llama-3.2-1b/plan.plan
[[ -d /tmp/llama-3.2-1b ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out /tmp/llama-3.2-1b > /dev/null 2>&1
mkdir -p /tmp/sol-llama-3.2-1b; .carry/bin/solc /tmp/llama-3.2-1b -q -o $plan
for round in 1 2; do
for c in 16 64; do
  n=$((c * 4))
  for v in off general decode; do
    envs=(); flags=()
    [[ $v == off ]] && flags=(--disable-async-scheduling)
    [[ $v == decode ]] && envs=(SOL_ASYNC_DECODE_ONLY=1)
    env "${envs[@]}" .carry/bin/solrun $plan --bench --json --seed 0 --num-prompts $n --input-len 512 \
      --output-len 256 --max-concurrency $c --max-num-seqs 64 "${flags[@]}" > $r/b-$c-$v-$round.json 2>/dev/null
    python3 -c 'import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1]); print(sys.argv[2], "ttft mean %.2f median %.2f tpot %.3f out tok/s %.0f" % (d["mean_ttft_ms"], d["median_ttft_ms"], d["mean_tpot_ms"], d["output_tokens_per_s"]))' $r/b-$c-$v-$round.json "c$c $v r$round"
  done
done
done
tar czf $OUT/c7.tgz -C /tmp c7

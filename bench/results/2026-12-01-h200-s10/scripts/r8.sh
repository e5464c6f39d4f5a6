#!/usr/bin/env bash
# Session 10, call 8: step trace (SOL_TRACE_STEPS) of the closed-loop bench, c16.
set -u
cd "$(dirname "$0")/../.."
chmod +x .carry/bin/* scripts/*
r=/tmp/c8; mkdir -p $r
export PYTHONUNBUFFERED=1 SOL_CACHE_DIR=$PWD/.carry/kcache
tar xJf .carry/pack/tok-kcache.tar.xz -C .carry
plan=/tmp/sol-llama-3.2-1b/plan.plan
[[ -d /tmp/llama-3.2-1b ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out /tmp/llama-3.2-1b > /dev/null 2>&1
[[ -f $plan ]] || { mkdir -p /tmp/sol-llama-3.2-1b; .carry/bin/solc /tmp/llama-3.2-1b -q -o $plan; }
for v in off general decode; do
  envs=(SOL_TRACE_STEPS=1); flags=()
  [[ $v == off ]] && flags=(--disable-async-scheduling)
  [[ $v == decode ]] && envs+=(SOL_ASYNC_DECODE_ONLY=1)
  env "${envs[@]}" .carry/bin/solrun $plan --bench --json --seed 0 --num-prompts 64 --input-len 512 \
    --output-len 256 --max-concurrency 16 --max-num-seqs 64 "${flags[@]}" > $r/b-$v.json 2> $r/trace-$v.log
  echo "$v: $(grep -c 'TRACE launch' $r/trace-$v.log) launches"
done
tar czf $OUT/c8.tgz -C /tmp c8

#!/usr/bin/env bash
# Session 10, call 10: the executor part of sol-async-scheduling-check (tiny
# Llama), and a step trace of the closed-loop bench, c16, on and off.
set -u
cd "$(dirname "$0")/../.."
chmod +x .carry/bin/*
r=/tmp/c10; mkdir -p $r
export SOL_CACHE_DIR=$PWD/.carry/kcache
tar xJf .carry/pack/tok-kcache.tar.xz -C .carry
.carry/bin/solc test/models/llama -q -o /tmp/tiny.plan
timeout 60 .carry/bin/sol-async-scheduling-check /tmp/tiny.plan > $r/check-tiny.log 2>&1; echo "check rc $?"
grep -E "executor|PASSED|FAILED|FAIL" $r/check-tiny.log
plan=/tmp/sol-llama-3.2-1b/plan.plan
[[ -f $plan ]] || { [[ -d /tmp/llama-3.2-1b ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out /tmp/llama-3.2-1b > /dev/null 2>&1; mkdir -p /tmp/sol-llama-3.2-1b; .carry/bin/solc /tmp/llama-3.2-1b -q -o $plan; }
for v in off on; do
  flags=(); [[ $v == off ]] && flags=(--disable-async-scheduling)
  timeout 40 .carry/bin/solrun-trace $plan --bench --json --seed 0 --num-prompts 64 --input-len 512 \
    --output-len 256 --max-concurrency 16 --max-num-seqs 64 "${flags[@]}" > $r/b-$v.json 2> $r/trace-$v.log
done
tar czf $OUT/c10.tgz -C /tmp c10

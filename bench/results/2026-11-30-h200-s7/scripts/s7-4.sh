#!/usr/bin/env bash
# Session 7, call 4: where the cached 8-token step's time goes with
# chunk_attention (with and without its fused rope): step GPU time vs wall
# (--profile-steps) and per-kernel times (ncu, serialized).
set -u
out=$OUT/r; mkdir -p $out
bin=.carry/bin
export SOL_CACHE_DIR=$PWD/.carry/kcache
[[ -d /tmp/llama-3.2-1b ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out /tmp/llama-3.2-1b >/dev/null 2>&1
$bin/solc /tmp/llama-3.2-1b -q -o /tmp/p.plan
for e in NONE SOL_DISABLE_CHUNK_ROPE; do
  for rep in 1 2; do
    env $e=1 $bin/solrun /tmp/p.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 \
      --max-concurrency 1 --enable-prefix-caching --profile-steps >$out/p-$e-$rep.json 2>$out/p-$e-$rep.err
    python3 -c "import json; j=json.loads([l for l in open('$out/p-$e-$rep.json') if l.startswith('{')][-1]); print('$e', $rep, round(j['median_ttft_ms'],3), round(j['mean_tpot_ms'],3))"
  done
  grep -A12 -i "step" $out/p-$e-1.err | head -14
done
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
for e in NONE SOL_DISABLE_CHUNK_ROPE; do
  env $e=1 timeout 150 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
    $bin/solrun /tmp/p.plan --bench --num-prompts 2 --prefix-len 1024 --input-len 8 --output-len 1 --max-concurrency 1 --enable-prefix-caching \
    >$out/ncu-$e.csv 2>$out/ncu-$e.err
  python3 scripts/ncu-kernel-table.py $out/ncu-$e.csv --last 100 >$out/ncu-$e.log 2>&1
  echo "== ncu $e"; head -12 $out/ncu-$e.log
done
cd $OUT && tar czf r.tgz r && rm -rf r

#!/usr/bin/env bash
# Session 10, call 9 (final policy: steps queued ahead only behind decode
# steps): gpu-check step 17, offline closed-loop TTFT on/off, serving on/off.
set -u
cd "$(dirname "$0")/../.."
chmod +x .carry/bin/* scripts/*
r=/tmp/c9; mkdir -p $r
export PYTHONUNBUFFERED=1 SOL_CACHE_DIR=$PWD/.carry/kcache
tar xJf .carry/pack/tok-kcache.tar.xz -C .carry
OUT=$r/gc SOL_GPU_STEPS="17" timeout 240 scripts/gpu-check > $r/gpu-check.log 2>&1
echo "gpu-check rc $?"; grep -v "^\[\|^ \|^{\|^}" $r/gpu-check.log | grep -v "requests identical" | tail -12
grep -c "ok  " $r/gc/async-check.log; grep -E "FAIL|PASSED|executor" $r/gc/async-check.log
plan=/tmp/sol-llama-3.2-1b/plan.plan
for round in 1 2; do for c in 16 64; do for v in off on; do
  flags=(); [[ $v == off ]] && flags=(--disable-async-scheduling)
  .carry/bin/solrun $plan --bench --json --seed 0 --num-prompts $((c * 4)) --input-len 512 \
    --output-len 256 --max-concurrency $c --max-num-seqs 64 "${flags[@]}" > $r/b-$c-$v-$round.json 2>/dev/null
  python3 -c 'import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1]); print(sys.argv[2], "ttft mean %.2f median %.2f tpot %.3f out tok/s %.0f" % (d["mean_ttft_ms"], d["median_ttft_ms"], d["mean_tpot_ms"], d["output_tokens_per_s"]))' $r/b-$c-$v-$round.json "c$c $v r$round"
done; done; done
printf '#!/usr/bin/env bash\nexec %s "$@" --disable-async-scheduling\n' "$PWD/.carry/bin/solrun" > $r/solrun-noasync
chmod +x $r/solrun-noasync
splan=/tmp/sol-llama-3.2-1b-serve.plan
cp .carry/tok-llama/* /tmp/llama-3.2-1b/ && .carry/bin/solc /tmp/llama-3.2-1b -q -o $splan
for v in async noasync; do
  s=.carry/bin/solrun; [[ $v == noasync ]] && s=$r/solrun-noasync
  timeout 100 python3 bench/serve_bench.py --solrun "$s" --solbench .carry/bin/solbench --plan $splan \
    --vocab-size 128256 --concurrency 1,16,64 --json-out $r/serve-$v.json > $r/serve-$v.log 2>&1
  echo "--- $v"; tail -4 $r/serve-$v.log
done
tar czf $OUT/c9.tgz -C /tmp c9

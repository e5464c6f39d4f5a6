set -u
python3 scripts/make-shape-model.py --shape llama-3.2-1b --out /tmp/llama-3.2-1b > /dev/null 2>&1
.carry/bin/solc /tmp/llama-3.2-1b -q -o /tmp/p.plan || exit 1
for v in "1 1" "1 8" "8 1" "8 8" "64 1"; do
  set -- $v
  for pc in "" "--enable-prefix-caching"; do
    .carry/bin/solrun /tmp/p.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len $1 --output-len $2 --max-concurrency 1 $pc 2>/dev/null \
      | python3 -c "import json,sys; d=json.loads([l for l in sys.stdin if l.startswith('{')][-1]); print('input', $1, 'output', $2, '$pc' or 'uncached', 'ttft %.3f tpot %.3f elapsed/req %.3f ms steps %d' % (d['mean_ttft_ms'], d['mean_tpot_ms'], d['elapsed_s']*1000/16, d['steps']))"
  done
done

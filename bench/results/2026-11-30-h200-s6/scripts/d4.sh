#!/usr/bin/env bash
# Call 4: prefill_attention for graph-sized prompt-only steps (SOL_SMALL_PREFILL_ROWS).
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
m=/tmp/llama-3.2-1b
python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m >$out/shapes.log 2>&1
$bin/solc $m -q -o /tmp/n.plan
pre() { # name env...
  local name=$1; shift
  env "$@" $bin/solrun /tmp/n.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 \
    --max-concurrency 1 --enable-prefix-caching --profile-steps >$out/p-$name.json 2>$out/p-$name.err
}
for r in 1 2 3; do pre paged$r SOL_SMALL_PREFILL_ROWS=0; pre tc$r SOL_SMALL_PREFILL_ROWS=8; done
$bin/solrun /tmp/n.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 >$out/p-off.json 2>/dev/null
python3 - $out <<'PY'
import json,sys,statistics
o=sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
off=last(f"{o}/p-off.json")["median_ttft_ms"]
for n in ("paged","tc"):
  v=[last(f"{o}/p-{n}{r}.json")["median_ttft_ms"] for r in (1,2,3)]
  print(n, [round(x,3) for x in v], "uncached", round(off,3), "share", round(statistics.median(v)/off,3))
PY
grep -A4 "tokens" $out/p-tc1.err | head -6; grep -A4 "tokens" $out/p-paged1.err | head -6
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
SOL_SMALL_PREFILL_ROWS=8 timeout 100 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  $bin/solrun /tmp/n.plan --bench --num-prompts 2 --prefix-len 1024 --input-len 8 --output-len 1 --max-concurrency 1 --enable-prefix-caching \
  >$out/ncu-tc.csv 2>$out/ncu-tc.err
python3 scripts/ncu-kernel-table.py $out/ncu-tc.csv --last 99 >$out/ncu-tc.log 2>&1
tail -9 $out/ncu-tc.log
cd $out && tar czf /tmp/d4.tgz . && mv /tmp/d4.tgz $out/

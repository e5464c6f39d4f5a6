#!/usr/bin/env bash
# Diagnostic call 1: where the batch-1 step and the cached 8-token step spend time.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
m=/tmp/llama-3.2-1b
python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m >$out/shapes.log 2>&1
$bin/solc $m -q -o /tmp/p.plan || exit 1
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
for r in 1 2; do
$bin/solrun /tmp/p.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json --profile-steps >$out/decode-$r.json 2>$out/decode-$r.err
done
for c in on off; do
$bin/solrun /tmp/p.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 \
  $([[ $c == on ]] && echo --enable-prefix-caching) --profile-steps >$out/prefix-$c.json 2>$out/prefix-$c.err
done
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
timeout 200 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  $bin/solrun /tmp/p.plan --bench --num-prompts 2 --prefix-len 1024 --input-len 8 --output-len 1 --max-concurrency 1 --enable-prefix-caching \
  >$out/ncu-cached8.csv 2>$out/ncu-cached8.err
python3 scripts/ncu-kernel-table.py $out/ncu-cached8.csv --last 100 >$out/ncu-cached8.log 2>&1
timeout 200 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  $bin/solrun /tmp/p.plan --prompt-ids "$ids" --max-tokens 4 --ignore-eos >$out/ncu-decode.csv 2>$out/ncu-decode.err
python3 scripts/ncu-kernel-table.py $out/ncu-decode.csv --last 84 >$out/ncu-decode.log 2>&1
for f in $out/decode-1.err $out/prefix-on.err $out/prefix-off.err; do echo "== $f"; tail -8 $f; done
grep -h tpot $out/decode-*.json | head -2; tail -1 $out/prefix-on.json | head -c 600; echo; tail -1 $out/prefix-off.json | head -c 600; echo
tail -16 $out/ncu-cached8.log; tail -12 $out/ncu-decode.log
cd $out && tar czf /tmp/d1.tgz . && mv /tmp/d1.tgz $out/

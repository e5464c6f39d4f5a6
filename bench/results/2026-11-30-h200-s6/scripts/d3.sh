#!/usr/bin/env bash
# Call 3: cluster only for small grids, fused argmax, gather skip, skinny one-wave rule.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
m=/tmp/llama-3.2-1b
python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m >$out/shapes.log 2>&1
echo "== kernel checks"
timeout 200 $bin/sol-kernel-check --only gemv_argmax,attention,fused_rope,kv_fp8,gemv_fused,norm_linear --json $out/k.json >$out/k.log 2>&1; echo "rc $?"
grep -c " ok " $out/k.log; grep -E "FAIL|fail" $out/k.log | head -20; grep gemv_argmax $out/k.log | head
echo "== A/B"
timeout 200 bash scripts/gpu-ab; echo "rc $?"
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
$bin/solc $m -q -o /tmp/n.plan; .carry/bin-old/solc $m -q -o /tmp/o.plan
for r in 1 2; do
SOL_DISABLE_CLUSTER_MERGE=1 $bin/solrun /tmp/n.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/nc-$r.json 2>/dev/null
SOL_DISABLE_FUSED_ARGMAX=1 $bin/solrun /tmp/n.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/na-$r.json 2>/dev/null
$bin/solrun /tmp/n.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/c-$r.json 2>/dev/null
.carry/bin-old/solrun /tmp/o.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/o-$r.json 2>/dev/null
done
python3 - $out <<'PY'
import json,sys
o=sys.argv[1]
for n in ("nc","na","c","o"):
  rs=[json.load(open(f"{o}/{n}-{r}.json")) for r in (1,2)]
  print(n, [round(r["timing"]["decode_tokens_per_s"],1) for r in rs])
ids={n:json.load(open(f"{o}/{n}-1.json"))["ids"] for n in ("nc","na","c","o")}
print("no-cluster == old:", ids["nc"]==ids["o"], " no-fused-argmax == new:", ids["na"]==ids["c"])
PY
echo "== 8 sequences decode, old vs new"
for r in 1 2; do for v in n o; do B=$bin; [[ $v == o ]] && B=.carry/bin-old
$B/solrun /tmp/$v.plan --bench --json --num-prompts 8 --input-len 128 --output-len 256 --max-concurrency 8 >$out/b8-$v-$r.json 2>/dev/null
done; done
python3 - $out <<'PY'
import json,sys
o=sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
for v in "no": print(v, [round(last(f"{o}/b8-{v}-{r}.json")["mean_tpot_ms"],4) for r in (1,2)])
PY
echo "== cached 8-token step per kernel (new, old)"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
for v in n o; do B=$bin; [[ $v == o ]] && B=.carry/bin-old
timeout 100 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  $B/solrun /tmp/$v.plan --bench --num-prompts 2 --prefix-len 1024 --input-len 8 --output-len 1 --max-concurrency 1 --enable-prefix-caching \
  >$out/ncu-$v.csv 2>$out/ncu-$v.err
python3 scripts/ncu-kernel-table.py $out/ncu-$v.csv --last 100 >$out/ncu-$v.log 2>&1
tail -10 $out/ncu-$v.log
done
cd $out && tar czf /tmp/d3.tgz . && mv /tmp/d3.tgz $out/

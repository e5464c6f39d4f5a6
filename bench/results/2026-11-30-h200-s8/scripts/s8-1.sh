#!/usr/bin/env bash
# Session 8, call 1: L2 prefetch of the small linears' weights (SOL_L2_PREFETCH_MB) and the
# separate skinny norm (SOL_SEPARATE_SKINNY_NORM), A/B by environment in one build.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
m=/tmp/llama-3.2-1b
python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m >$out/shapes.log 2>&1
declare -A env=([pf0]="SOL_L2_PREFETCH_MB=0" [pf24]="SOL_L2_PREFETCH_MB=24" [pf40]="SOL_L2_PREFETCH_MB=40"
  [pf24sep]="SOL_L2_PREFETCH_MB=24 SOL_SEPARATE_SKINNY_NORM=1" [pf0sep]="SOL_L2_PREFETCH_MB=0 SOL_SEPARATE_SKINNY_NORM=1")
vs="pf0 pf24 pf40 pf24sep pf0sep"
for v in $vs; do env ${env[$v]} $bin/solc $m -q -o /tmp/$v.plan || echo "solc $v failed"; done
echo "plans done $(date +%T)"
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
for run in 1 2 3; do for v in pf0 pf24 pf40; do
  env ${env[$v]} timeout 40 $bin/solrun /tmp/$v.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/decode-$v-$run.json 2>>$out/err
done; done
echo "decode done $(date +%T)"
for run in 1 2; do for v in $vs; do
  env ${env[$v]} timeout 40 $bin/solrun /tmp/$v.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 \
    --max-concurrency 1 --enable-prefix-caching >$out/prefix-$v-on-$run.json 2>>$out/err
done; done
for v in pf0 pf24; do
  env ${env[$v]} timeout 40 $bin/solrun /tmp/$v.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 \
    --max-concurrency 1 >$out/prefix-$v-off-1.json 2>>$out/err
done
echo "prefix done $(date +%T)"
python3 - $out <<'PY'
import json, sys, glob, statistics
o = sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
base = None
for v in ("pf0", "pf24", "pf40"):
    rs = [json.load(open(f)) for f in sorted(glob.glob(f"{o}/decode-{v}-*.json"))]
    if not rs: print(v, "no decode runs"); continue
    ids = rs[0]["ids"]; base = base or ids
    print(f"decode {v}: {[round(r['timing']['decode_tokens_per_s'],1) for r in rs]} median "
          f"{statistics.median(r['timing']['decode_tokens_per_s'] for r in rs):.1f} tok/s; ids agree with pf0 {sum(a==b for a,b in zip(base,ids))}/{len(ids)}")
off = {v: last(f"{o}/prefix-{v}-off-1.json")["median_ttft_ms"] for v in ("pf0", "pf24") if glob.glob(f"{o}/prefix-{v}-off-1.json")}
print("uncached", off)
ref = statistics.mean(off.values()) if off else float("nan")
for v in ("pf0", "pf24", "pf40", "pf24sep", "pf0sep"):
    on = [last(f)["median_ttft_ms"] for f in sorted(glob.glob(f"{o}/prefix-{v}-on-*.json"))]
    print(f"prefix {v}: cached medians {[round(x,4) for x in on]} share {[round(x/ref,4) for x in on]}")
PY
echo "== kernel checks $(date +%T)"
timeout 240 $bin/sol-kernel-check --only skinny,norm_linear,gemv,gemv_sweep --json $out/k.json >$out/k.log 2>&1; echo "rc $?"
grep -c " ok " $out/k.log; grep -E "FAIL" $out/k.log | head -10
grep -E "gemv_sweep" $out/k.log | grep -E "\*|L2" | grep " us" | head -60
tail -3 $out/err
cd $out && tar czf /tmp/s8-1.tgz . && mv /tmp/s8-1.tgz $out/

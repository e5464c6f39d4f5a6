#!/usr/bin/env bash
# Session 8, call 2: which linears should prefetch their weights into L2, with the skinny norm
# separate (SOL_SEPARATE_SKINNY_NORM) or in the prologue. One build, A/B by environment.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out; w=/tmp/w; rm -rf $w; mkdir -p $w
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
m=/tmp/llama-3.2-1b
python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m >$w/shapes.log 2>&1
declare -A env=(
  [base]="SOL_L2_PREFETCH_OPS= SOL_SEPARATE_SKINNY_NORM=0"
  [gplain]="SOL_L2_PREFETCH_OPS=gemv-plain SOL_SEPARATE_SKINNY_NORM=0"
  [sep_sk]="SOL_L2_PREFETCH_OPS=skinny-norm,skinny-plain SOL_SEPARATE_SKINNY_NORM=1"
  [sep_skplain]="SOL_L2_PREFETCH_OPS=skinny-plain SOL_SEPARATE_SKINNY_NORM=1"
  [sep_sknorm]="SOL_L2_PREFETCH_OPS=skinny-norm SOL_SEPARATE_SKINNY_NORM=1"
  [skplain]="SOL_L2_PREFETCH_OPS=skinny-plain SOL_SEPARATE_SKINNY_NORM=0"
  [all]="SOL_L2_PREFETCH_OPS=skinny-norm,skinny-plain,gemv-plain SOL_SEPARATE_SKINNY_NORM=1")
for v in "${!env[@]}"; do env ${env[$v]} $bin/solc $m -q -o /tmp/$v.plan || echo "solc $v failed"; done
echo "plans done $(date +%T)"
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
for run in 1 2 3; do for v in base gplain all; do
  env ${env[$v]} timeout 40 $bin/solrun /tmp/$v.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$w/decode-$v-$run.json 2>>$w/err
done; done
echo "decode done $(date +%T)"
for run in 1 2; do for v in base sep_sk sep_skplain sep_sknorm skplain all; do
  env ${env[$v]} timeout 40 $bin/solrun /tmp/$v.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 \
    --max-concurrency 1 --enable-prefix-caching >$w/prefix-$v-on-$run.json 2>>$w/err
done; done
for v in base all; do
  env ${env[$v]} timeout 40 $bin/solrun /tmp/$v.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 \
    --max-concurrency 1 >$w/prefix-$v-off-1.json 2>>$w/err
done
echo "prefix done $(date +%T)"
for run in 1 2; do for v in base sep_sk all; do for n in 2 4 8; do
  env ${env[$v]} timeout 40 $bin/solrun /tmp/$v.plan --bench --json --num-prompts $n --max-num-seqs $n --input-len 128 --output-len 256 \
    >$w/batch$n-$v-$run.json 2>>$w/err
done; done; done
echo "batched done $(date +%T)"
python3 - $w <<'PY' | tee $w/summary.txt
import json, sys, glob, statistics
o = sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
base = None
for v in ("base", "gplain", "all"):
    rs = [json.load(open(f)) for f in sorted(glob.glob(f"{o}/decode-{v}-*.json"))]
    if not rs: print(v, "no decode runs"); continue
    ids = rs[0]["ids"]; base = base or ids
    print(f"decode {v}: {[round(r['timing']['decode_tokens_per_s'],1) for r in rs]} median "
          f"{statistics.median(r['timing']['decode_tokens_per_s'] for r in rs):.1f} tok/s; ids agree with base {sum(a==b for a,b in zip(base,ids))}/{len(ids)}")
off = {v: last(f"{o}/prefix-{v}-off-1.json")["median_ttft_ms"] for v in ("base", "all") if glob.glob(f"{o}/prefix-{v}-off-1.json")}
print("uncached", off)
ref = statistics.mean(off.values()) if off else float("nan")
for v in ("base", "sep_sk", "sep_skplain", "sep_sknorm", "skplain", "all"):
    on = [last(f)["median_ttft_ms"] for f in sorted(glob.glob(f"{o}/prefix-{v}-on-*.json"))]
    print(f"prefix {v}: cached medians {[round(x,4) for x in on]} share {[round(x/ref,4) for x in on]}")
for n in (2, 4, 8):
    for v in ("base", "sep_sk", "all"):
        rs = [last(f) for f in sorted(glob.glob(f"{o}/batch{n}-{v}-*.json"))]
        print(f"batch {n} {v}: TPOT {[round(r['mean_tpot_ms'],4) for r in rs]} output tok/s {[round(r['output_tokens_per_s']) for r in rs]}")
PY
tail -3 $w/err
cd $w && tar czf $out/s8-2.tgz .

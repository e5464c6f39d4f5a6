#!/usr/bin/env bash
# Session 9 call 5: o projection prefetching the start of gate/up (SOL_PREFETCH_NEXT_MB); attention V2 64-seq check.
set -u
D=/tmp/c5; mkdir -p $D
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
t0=$(date +%s)
m=/tmp/llama-3.2-1b
[[ -d $m ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m > $D/shape.log 2>&1
.carry/bin/solc $m -q -o /tmp/new.plan; .carry/bin-old/solc $m -q -o /tmp/old.plan
echo "t=$(( $(date +%s) - t0 ))"
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
for run in 1 2 3; do
  for mb in 0 8 16 24 32; do
    SOL_PREFETCH_NEXT_MB=$mb .carry/bin/solrun /tmp/new.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json > $D/dec-$mb-$run.json 2>>$D/err
  done
  .carry/bin-old/solrun /tmp/old.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json > $D/dec-old-$run.json 2>>$D/err
done
echo "t=$(( $(date +%s) - t0 ))"
for run in 1 2 3; do for v in new old; do b=.carry/bin; [[ $v == old ]] && b=.carry/bin-old
  $b/solrun /tmp/$v.plan --bench --num-prompts 64 --input-len 128 --output-len 256 --max-num-seqs 64 --json > $D/c64-$v-$run.json 2>>$D/err
done; done
for mb in 0 16; do
  SOL_PREFETCH_NEXT_MB=$mb .carry/bin/solrun /tmp/new.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 --enable-prefix-caching > $D/pre-$mb.json 2>>$D/err
done
echo "t=$(( $(date +%s) - t0 ))"
python3 - $D <<'PY'
import json, sys, glob, statistics as st
D = sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
base = None
for v in ("old", "0", "8", "16", "24", "32"):
    rs = [json.load(open(f)) for f in sorted(glob.glob(f"{D}/dec-{v}-*.json"))]
    t = [r["timing"]["decode_tokens_per_s"] for r in rs]; base = base or rs[0]["ids"]
    print(f"decode {v:>4}: {st.median(t):.1f} tok/s {[round(x,1) for x in t]} TPOT {st.median(r['timing']['tpot_ms'] for r in rs):.4f} ids-same {rs[0]['ids'] == base}")
for v in ("new", "old"):
    t = [json.load(open(f))["output_tokens_per_s"] for f in sorted(glob.glob(f"{D}/c64-{v}-*.json"))]
    print(f"64 seqs {v}: median {st.median(t):.0f} out tok/s {[round(x) for x in t]}")
for mb in ("0", "16"):
    p = last(f"{D}/pre-{mb}.json"); print(f"prefix mb={mb}: cached {p['median_ttft_ms']:.3f} ms TPOT {p['mean_tpot_ms']:.3f}")
PY
tar czf $OUT/c5.tgz -C /tmp c5

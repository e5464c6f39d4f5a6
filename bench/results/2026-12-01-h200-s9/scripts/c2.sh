#!/usr/bin/env bash
# Session 9 call 2: shared-memory carveout x attention preload.
set -u
D=/tmp/c2; mkdir -p $D
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
t0=$(date +%s)
m=/tmp/llama-3.2-1b
[[ -d $m ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m > $D/shape.log 2>&1
.carry/bin/solc $m -q -o /tmp/pn.plan; .carry/bin-old/solc $m -q -o /tmp/po.plan
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
cfgs="new:default new:100 old:default old:100 new:50"
echo "t=$(( $(date +%s) - t0 ))"
for run in 1 2 3; do for c in $cfgs; do
  p=${c%%:*}; cv=${c##*:}
  SOL_SMEM_CARVEOUT=$cv .carry/bin/solrun /tmp/p${p:0:1}.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json > $D/dec-$p-$cv-$run.json 2>>$D/err
done; .carry/bin-old/solrun /tmp/po.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json > $D/dec-base-x-$run.json 2>>$D/err; done
echo "t=$(( $(date +%s) - t0 ))"
for c in $cfgs; do
  p=${c%%:*}; cv=${c##*:}
  SOL_SMEM_CARVEOUT=$cv .carry/bin/solrun /tmp/p${p:0:1}.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 --enable-prefix-caching > $D/pre-$p-$cv.json 2>>$D/err
  SOL_SMEM_CARVEOUT=$cv .carry/bin/solrun /tmp/p${p:0:1}.plan --bench --num-prompts 64 --input-len 128 --output-len 256 --max-num-seqs 64 --json > $D/c64-$p-$cv.json 2>>$D/err
done
.carry/bin/solrun /tmp/pn.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 > $D/pre-uncached.json 2>>$D/err
echo "t=$(( $(date +%s) - t0 ))"
python3 - $D "$cfgs" <<'PY'
import json, sys, glob, statistics as st
D, cfgs = sys.argv[1], sys.argv[2].split() + ["base:x"]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
unc = last(f"{D}/pre-uncached.json")["median_ttft_ms"]
base = None
for c in cfgs:
    p, cv = c.split(":")
    rs = [json.load(open(f)) for f in sorted(glob.glob(f"{D}/dec-{p}-{cv}-*.json"))]
    tps = [r["timing"]["decode_tokens_per_s"] for r in rs]
    ids = rs[0]["ids"]; base = base or ids
    line = f"{c:14s} decode {st.median(tps):8.1f} tok/s {[round(x,1) for x in tps]} ids-same-as-first {ids == base}"
    try:
        pre = last(f"{D}/pre-{p}-{cv}.json"); c64 = json.load(open(f"{D}/c64-{p}-{cv}.json"))
        line += f" | cached TTFT {pre['median_ttft_ms']:.3f} ms share {pre['median_ttft_ms']/unc:.3f} TPOT {pre['mean_tpot_ms']:.3f} | 64 seqs {c64['output_tokens_per_s']:.0f} out tok/s"
    except Exception as e: pass
    print(line)
print(f"uncached TTFT {unc:.3f} ms")
PY
tar czf $OUT/c2.tgz -C /tmp c2

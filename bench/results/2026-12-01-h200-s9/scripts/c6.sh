#!/usr/bin/env bash
# Session 9 call 6: PreloadWalk for small grids (final) vs HEAD, then gpu-check 13 5 4 15.
set -u
D=/tmp/c6; mkdir -p $D
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
t0=$(date +%s)
echo "== kernel checks"; .carry/bin/sol-kernel-check --only fused_rope,attention,kv_fp8 --json $D/k.json > $D/k.log 2>&1; echo "rc $?"; grep -c " ok " $D/k.log; grep -E "FAIL|PASSED" $D/k.log | head
echo "t=$(( $(date +%s) - t0 ))"
m=/tmp/llama-3.2-1b
[[ -d $m ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m > $D/shape.log 2>&1
for v in new old; do b=.carry/bin; [[ $v == old ]] && b=.carry/bin-old
  $b/solc $m -q -o /tmp/$v.plan; $b/solc $m -q --kv-cache-dtype fp8 -o /tmp/$v-fp8.plan; done
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
for run in 1 2 3; do for v in new old; do b=.carry/bin; [[ $v == old ]] && b=.carry/bin-old
  $b/solrun /tmp/$v.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json > $D/dec-$v-$run.json 2>>$D/err
  $b/solrun /tmp/$v-fp8.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json > $D/fp8-$v-$run.json 2>>$D/err
  $b/solrun /tmp/$v.plan --bench --num-prompts 64 --input-len 128 --output-len 256 --max-num-seqs 64 --json > $D/c64-$v-$run.json 2>>$D/err
done; done
for v in new old; do b=.carry/bin; [[ $v == old ]] && b=.carry/bin-old
  $b/solrun /tmp/$v.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 --enable-prefix-caching > $D/pre-$v.json 2>>$D/err
done
.carry/bin/solrun /tmp/new.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 > $D/pre-uncached.json 2>>$D/err
echo "t=$(( $(date +%s) - t0 ))"
python3 - $D <<'PY'
import json, sys, glob, statistics as st
D = sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
for kind in ("dec", "fp8"):
    ids = {}
    for v in ("new", "old"):
        rs = [json.load(open(f)) for f in sorted(glob.glob(f"{D}/{kind}-{v}-*.json"))]
        t = [r["timing"]["decode_tokens_per_s"] for r in rs]; ids[v] = rs[0]["ids"]
        print(f"{kind} {v}: {st.median(t):.1f} tok/s {[round(x,1) for x in t]} TPOT {st.median(r['timing']['tpot_ms'] for r in rs):.4f}")
    print(f"{kind} ids identical new/old: {ids['new'] == ids['old']}")
for v in ("new", "old"):
    t = [json.load(open(f))["output_tokens_per_s"] for f in sorted(glob.glob(f"{D}/c64-{v}-*.json"))]
    print(f"64 seqs {v}: median {st.median(t):.0f} out tok/s {[round(x) for x in t]}")
unc = last(f"{D}/pre-uncached.json")["median_ttft_ms"]
for v in ("new", "old"):
    p = last(f"{D}/pre-{v}.json")
    print(f"prefix {v}: cached {p['median_ttft_ms']:.3f} ms share {p['median_ttft_ms']/unc:.3f} TPOT {p['mean_tpot_ms']:.3f}")
print(f"uncached {unc:.3f} ms")
PY
echo "== gpu-check 13 5 4 15"; OUT=$D/g SOL_GPU_STEPS="13 5 4 15" scripts/gpu-check > $D/gc.log 2>&1; echo "rc $?"; grep -vE "^\s*$" $D/gc.log | tail -60
echo "t=$(( $(date +%s) - t0 ))"
tar czf $OUT/c6.tgz -C /tmp c6

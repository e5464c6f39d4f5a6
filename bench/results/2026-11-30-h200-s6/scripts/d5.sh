#!/usr/bin/env bash
# Call 5: fused rope for prompt chunks of up to 8 tokens (branch chunk-fused-rope) against main's build.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
echo "== kernel checks"
timeout 150 $bin/sol-kernel-check --only fused_rope,attention --json $out/k.json >$out/k.log 2>&1; echo "rc $?"
grep -c " ok " $out/k.log; grep -E "FAIL" $out/k.log | head -10; grep -E "chunks|T=8 ctx=1032" $out/k.log | grep -v "^[a-z_]* *[0-9]" | head -24
echo "== A/B against main"
timeout 150 bash scripts/gpu-ab; echo "rc $?"
m=/tmp/llama-3.2-1b
$bin/solc $m -q -o /tmp/n.plan; .carry/bin-old/solc $m -q -o /tmp/o.plan
for v in n o; do B=$bin; [[ $v == o ]] && B=.carry/bin-old
timeout 40 $B/solrun /tmp/$v.plan --bench --json --num-prompts 64 --input-len 128 --output-len 256 --max-num-seqs 64 >$out/b64-$v.json 2>/dev/null
done
python3 - $out <<'PY'
import json,sys
o=sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
for v in "no":
  r=last(f"{o}/b64-{v}.json"); print(v, "64 seqs TPOT", round(r["mean_tpot_ms"],4), "out tok/s", round(r["output_tokens_per_s"]))
PY
cd $out && tar czf /tmp/d5.tgz . && mv /tmp/d5.tgz $out/

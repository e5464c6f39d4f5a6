#!/usr/bin/env bash
# Call 2: cluster merge, one-wave splits, skinny one-wave rule, gather skip.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
m=/tmp/llama-3.2-1b
python3 scripts/make-shape-model.py --shape llama-3.2-1b --out $m >$out/shapes.log 2>&1
echo "== kernel checks"
timeout 240 $bin/sol-kernel-check --only attention,fused_rope,kv_fp8 --json $out/k.json >$out/k.log 2>&1; echo "rc $?"
grep -c " ok " $out/k.log; grep -v " ok " $out/k.log | grep -iE "fail|mismatch|differ" | head -20
grep -E "T=8 ctx=1032|T=1 ctx=256|T=1 ctx=1024" $out/k.log | grep -v "rope_kv_write +" | head -40
echo "== A/B"
timeout 200 bash scripts/gpu-ab; echo "rc $?"
ids=$(python3 -c 'print(",".join(str(1000 + 7 * i) for i in range(128)))')
$bin/solc $m -q -o /tmp/n.plan; .carry/bin-old/solc $m -q -o /tmp/o.plan
echo "== cluster off vs on (new), and old: ids"
for r in 1 2; do
SOL_DISABLE_CLUSTER_MERGE=1 $bin/solrun /tmp/n.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/nc-$r.json 2>/dev/null
$bin/solrun /tmp/n.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/c-$r.json 2>/dev/null
.carry/bin-old/solrun /tmp/o.plan --prompt-ids "$ids" --max-tokens 256 --ignore-eos --json >$out/o-$r.json 2>/dev/null
done
python3 - $out <<'PY'
import json,sys
o=sys.argv[1]
for n in ("nc","c","o"):
  rs=[json.load(open(f"{o}/{n}-{r}.json")) for r in (1,2)]
  print(n, [round(r["timing"]["decode_tokens_per_s"],1) for r in rs])
a=json.load(open(f"{o}/nc-1.json"))["ids"]; b=json.load(open(f"{o}/o-1.json"))["ids"]; c=json.load(open(f"{o}/c-1.json"))["ids"]
print("no-cluster vs old identical:", a==b, "cluster vs old agree", sum(x==y for x,y in zip(c,b)))
PY
echo "== 8 sequences decode, old vs new"
for v in n o; do B=$bin; [[ $v == o ]] && B=.carry/bin-old
for r in 1 2; do
$B/solrun /tmp/$v.plan --bench --json --num-prompts 8 --input-len 128 --output-len 256 --max-concurrency 8 >$out/b8-$v-$r.json 2>/dev/null
done; done
python3 - $out <<'PY'
import json,sys
o=sys.argv[1]
def last(p): return json.loads([l for l in open(p) if l.startswith("{")][-1])
for v in "no": print(v, [round(last(f"{o}/b8-{v}-{r}.json")["mean_tpot_ms"],4) for r in (1,2)])
PY
echo "== cached prefix steps (new)"
$bin/solrun /tmp/n.plan --bench --json --num-prompts 16 --prefix-len 1024 --input-len 8 --output-len 8 --max-concurrency 1 --enable-prefix-caching --profile-steps >$out/pp.json 2>$out/pp.err; tail -6 $out/pp.err
cd $out && tar czf /tmp/d2.tgz . && mv /tmp/d2.tgz $out/

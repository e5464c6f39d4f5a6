#!/usr/bin/env bash
# Session 9 call 1: attention walk preloaded before griddepcontrol.wait.
set -u
D=/tmp/c1; mkdir -p $D
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
t0=$(date +%s)
echo "== kernel checks"; .carry/bin/sol-kernel-check --only fused_rope,attention,kv_fp8 --json $D/k.json > $D/k.log 2>&1; echo "rc $?"
grep -iE "fail|mismatch|error" $D/k.log | head -20; tail -30 $D/k.log
echo "t=$(( $(date +%s) - t0 ))"
echo "== gpu-ab"; OUT=$D/ab scripts/gpu-ab > $D/ab.log 2>&1; echo "rc $?"; tail -8 $D/ab.log
echo "t=$(( $(date +%s) - t0 ))"
echo "== step 13"; OUT=$D/g SOL_GPU_STEPS="13" scripts/gpu-check > $D/g13.log 2>&1; echo "rc $?"; tail -20 $D/g13.log
echo "t=$(( $(date +%s) - t0 ))"
echo "== 64 seqs old vs new"
for v in new old; do
  b=.carry/bin; [[ $v == old ]] && b=.carry/bin-old
  $b/solc /tmp/llama-3.2-1b -q -o /tmp/c64-$v.plan
done
for r in 1 2; do for v in new old; do
  b=.carry/bin; [[ $v == old ]] && b=.carry/bin-old
  $b/solrun /tmp/c64-$v.plan --bench --num-prompts 64 --input-len 128 --output-len 256 --max-num-seqs 64 --json > $D/c64-$v-$r.json 2>>$D/c64.err
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[2], {k: v for k, v in d.items() if "tok" in k and not isinstance(v, (dict, list))})' $D/c64-$v-$r.json $v-$r
done; done
echo "t=$(( $(date +%s) - t0 ))"
tar czf $OUT/c1.tgz -C /tmp c1

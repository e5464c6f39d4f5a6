#!/usr/bin/env bash
# Session 8, call 6: x loads of the few-row linears behind griddepcontrol.wait (loadActivation16):
# logits of 8-token steps again, SASS order before and after, kernel checks, step 5 and 16, gpu-ab.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out /tmp/g /tmp/ab /tmp/w
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
echo "== logits"; OUT=/tmp/w bash .carry/diag/s8-5.sh >/dev/null 2>&1; tar xzf /tmp/w/s8-5.tgz -C /tmp/w summary.txt; cat /tmp/w/summary.txt
echo "== sass"; export PATH=$PATH:/usr/local/cuda/bin
for v in old new; do
  nvcc -arch=sm_90 -cubin -I .carry/diag/sass/$v .carry/diag/sass/q.cu -o /tmp/w/q-$v.cubin 2>&1 | tail -2
  cuobjdump -sass /tmp/w/q-$v.cubin >/tmp/w/q-$v.sass 2>&1 || nvdisasm /tmp/w/q-$v.cubin >/tmp/w/q-$v.sass 2>&1
  echo "-- $v: first lines with LDG / ACQ / DEPBAR / wait-like opcodes"
  grep -nE "LDG|ACQ|DEPBAR|CCTL|UBLKPF|PREFETCH|griddep|BAR" /tmp/w/q-$v.sass | head -30
done
echo "== kernel checks"; timeout 150 .carry/bin/sol-kernel-check --only skinny,norm_linear,gemv,gemv_fused,gemv_argmax --json /tmp/g/k.json >/tmp/g/k.log 2>&1; echo "rc $?"; tail -3 /tmp/g/k.log; grep -c " ok " /tmp/g/k.log; grep FAIL /tmp/g/k.log | head
SOL_GPU_STEPS="5 16" OUT=/tmp/g timeout 240 bash scripts/gpu-check >/tmp/g/gc.log 2>&1; echo "gpu-check rc $?"
grep -E "identical|tpot|^llama|^qwen" /tmp/g/gc.log | head -20
OUT=/tmp/ab timeout 150 bash scripts/gpu-ab 2>&1 | tail -6
tar czf $out/s8-6.tgz -C /tmp g ab w/summary.txt w/q-old.sass w/q-new.sass

#!/usr/bin/env bash
# Call 6: the argmax epilogue as red.global over 8 key words (branch argmax-red) against main.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
timeout 90 .carry/bin/sol-kernel-check --only gemv_argmax --json $out/k.json >$out/k.log 2>&1; echo "rc $?"
grep gemv_argmax $out/k.log | head -8
timeout 150 bash scripts/gpu-ab; echo "rc $?"
cd $out && tar czf /tmp/d6.tgz . && mv /tmp/d6.tgz $out/

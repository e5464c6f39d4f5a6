#!/usr/bin/env bash
# Session 8, call 4: the benchmarks of record (gpu-check steps 4 15 5 9 7 3).
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
mkdir -p /tmp/g
SOL_GPU_STEPS="4 15 9 7 3" OUT=/tmp/g timeout 520 bash scripts/gpu-check >/tmp/g/gc.log 2>&1; echo "gpu-check rc $?"
tail -80 /tmp/g/gc.log
tar czf $out/s8-4.tgz -C /tmp g

#!/usr/bin/env bash
# Session 10, call 1: embedding kernel checks, async scheduling (step 17),
# ids with/without PDL and graphs (step 5), tiny models vs reference (step 2).
set -u
cd "$(dirname "$0")/../.."
chmod +x .carry/bin/* scripts/* 2>/dev/null; [[ -f .carry/pack/tok-kcache.tar.xz ]] && tar xJf .carry/pack/tok-kcache.tar.xz -C .carry
r=/tmp/c4; mkdir -p $r
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $r/gpu.txt
true
true
OUT=$r/gc SOL_GPU_STEPS="${STEPS:-17 5 2}" timeout ${LIMIT:-480} scripts/gpu-check > $r/gpu-check.log 2>&1
echo "gpu-check rc $?"
cat $r/gpu-check.log | grep -v "^\[" | tail -80
tar czf $OUT/c4.tgz -C /tmp c4

#!/usr/bin/env bash
# Session 8, call 3: every kernel check, tiny models, chunked prompts against Transformers
# (gpu-check steps 1 2 16), then gpu-ab against the seventh session's final build.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
mkdir -p /tmp/g /tmp/ab
SOL_GPU_STEPS="1 2 16" OUT=/tmp/g timeout 420 bash scripts/gpu-check >/tmp/g/gc.log 2>&1; echo "gpu-check rc $?"
tail -75 /tmp/g/gc.log
OUT=/tmp/ab timeout 150 bash scripts/gpu-ab 2>&1 | tail -8; echo "gpu-ab rc $?"
tar czf $out/s8-3.tgz -C /tmp g ab

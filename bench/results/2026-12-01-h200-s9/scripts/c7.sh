#!/usr/bin/env bash
# Session 9 call 7: gpu-check step 9 (Llama-3.1-8B shape) on the final code.
(cd .carry && tar xJf pack/old-and-kcache.tar.xz) && mkdir -p /tmp/c7 &&
  OUT=/tmp/c7/g SOL_GPU_STEPS="9" scripts/gpu-check >/tmp/c7/gc.log 2>&1
echo rc $?
grep -vE "^\s*$" /tmp/c7/gc.log | tail -40
tar czf $OUT/c7.tgz -C /tmp c7

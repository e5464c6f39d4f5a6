#!/usr/bin/env bash
# Session 10, call 6 (async scheduling with the scheduler run ahead): embedding
# checks, gpu-check step 17 and 4, serving A/B async on and off.
set -u
cd "$(dirname "$0")/../.."
chmod +x .carry/bin/* scripts/*
r=/tmp/c6; mkdir -p $r
export PYTHONUNBUFFERED=1 SOL_CACHE_DIR=$PWD/.carry/kcache
tar xJf .carry/pack/tok-kcache.tar.xz -C .carry
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $r/gpu.txt
.carry/bin/sol-kernel-check --only embedding --json $r/kernels.json > $r/kernels.log 2>&1
echo "kernel check rc $?"; grep -E "^  embedding" $r/kernels.log
OUT=$r/gc SOL_GPU_STEPS="17 4" timeout 330 scripts/gpu-check > $r/gpu-check.log 2>&1
echo "gpu-check rc $?"; grep -v "^\[\|^ \|^{\|^}" $r/gpu-check.log | tail -45
printf '#!/usr/bin/env bash\nexec %s "$@" --disable-async-scheduling\n' "$PWD/.carry/bin/solrun" > $r/solrun-noasync
chmod +x $r/solrun-noasync
plan=/tmp/sol-llama-3.2-1b-serve.plan
cp .carry/tok-llama/* /tmp/llama-3.2-1b/ && .carry/bin/solc /tmp/llama-3.2-1b -q -o $plan
for v in async noasync; do
  s=.carry/bin/solrun; [[ $v == noasync ]] && s=$r/solrun-noasync
  timeout 100 python3 bench/serve_bench.py --solrun "$s" --solbench .carry/bin/solbench --plan $plan \
    --vocab-size 128256 --concurrency 1,16,64 --json-out $r/serve-$v.json > $r/serve-$v.log 2>&1
  echo "--- $v"; tail -4 $r/serve-$v.log
done
tar czf $OUT/c6.tgz -C /tmp c6

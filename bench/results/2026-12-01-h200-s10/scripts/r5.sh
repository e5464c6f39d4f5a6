#!/usr/bin/env bash
# Session 10, call 5: serving A/B, async scheduling on and off (wrapper adds
# --disable-async-scheduling to every solrun call of serve_bench.py).
set -u
cd "$(dirname "$0")/../.."
chmod +x .carry/bin/*
r=/tmp/c5; mkdir -p $r
export PYTHONUNBUFFERED=1 SOL_CACHE_DIR=$PWD/.carry/kcache
[[ -f .carry/pack/tok-kcache.tar.xz ]] && tar xJf .carry/pack/tok-kcache.tar.xz -C .carry
printf '#!/usr/bin/env bash\nexec %s "$@" --disable-async-scheduling\n' "$PWD/.carry/bin/solrun" > $r/solrun-noasync
chmod +x $r/solrun-noasync
plan=/tmp/sol-llama-3.2-1b-serve.plan
[[ -f $plan ]] || { [[ -d /tmp/llama-3.2-1b ]] || python3 scripts/make-shape-model.py --shape llama-3.2-1b --out /tmp/llama-3.2-1b >/dev/null 2>&1; cp .carry/tok-llama/* /tmp/llama-3.2-1b/; .carry/bin/solc /tmp/llama-3.2-1b -q -o $plan; }
for round in 1 2; do
  for v in async noasync; do
    s=.carry/bin/solrun; [[ $v == noasync ]] && s=$r/solrun-noasync
    python3 bench/serve_bench.py --solrun "$s" --solbench .carry/bin/solbench --plan $plan \
      --vocab-size 128256 --concurrency 1,16,64 --json-out $r/serve-$v-$round.json > $r/serve-$v-$round.log 2>&1
    echo "--- $v round $round"; tail -5 $r/serve-$v-$round.log
  done
done
tar czf $OUT/c5.tgz -C /tmp c5

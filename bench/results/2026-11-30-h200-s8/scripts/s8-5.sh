#!/usr/bin/env bash
# Session 8, call 5: why 8-token prompt steps of the 1B shape give wrong logits. Logits of
# a 512-token prompt in 8-token steps under variants, against one 512-token step.
set -uo pipefail
out=${OUT:-/tmp/out}; mkdir -p $out; w=/tmp/w; rm -rf $w; mkdir -p $w
(cd .carry && tar xJf pack/old-and-kcache.tar.xz)
export SOL_CACHE_DIR=$PWD/.carry/kcache PYTHONUNBUFFERED=1
bin=.carry/bin
for m in llama-3.2-1b; do python3 scripts/make-shape-model.py --shape $m --out /tmp/$m >$w/shapes.log 2>&1; done
m=/tmp/llama-3.2-1b
$bin/solc $m -q -o /tmp/d.plan; SOL_L2_PREFETCH_MB=0 $bin/solc $m -q -o /tmp/n.plan
.carry/bin-old/solc $m -q -o /tmp/o.plan
ids=$(python3 -c "import random; r=random.Random(0); print(','.join(str(r.randrange(128256)) for _ in range(64)))")
run() { local name=$1 plan=$2 b=$3; shift 3
  env "$@" timeout 60 $b/solrun $plan --prompt-ids "$ids" --max-tokens 0 --logits-out $w/$name.f32 --device cuda $EXTRA >$w/$name.log 2>&1 || echo "$name failed: $(tail -2 $w/$name.log)"; }
EXTRA="" run ref /tmp/d.plan $bin
EXTRA="--max-num-batched-tokens=8" run d8 /tmp/d.plan $bin
EXTRA="--max-num-batched-tokens=4" run d4 /tmp/d.plan $bin
EXTRA="--max-num-batched-tokens=2" run d2 /tmp/d.plan $bin
EXTRA="--max-num-batched-tokens=8" run prologue8 /tmp/d.plan $bin SOL_SKINNY_NORM_PROLOGUE=1
EXTRA="--max-num-batched-tokens=8" run nopf8 /tmp/n.plan $bin SOL_L2_PREFETCH_MB=0
EXTRA="--max-num-batched-tokens=8" run nopfprol8 /tmp/n.plan $bin SOL_L2_PREFETCH_MB=0 SOL_SKINNY_NORM_PROLOGUE=1
EXTRA="--max-num-batched-tokens=8" run nopdl8 /tmp/d.plan $bin SOL_DISABLE_PDL=1
EXTRA="--max-num-batched-tokens=8 --no-cuda-graph" run nograph8 /tmp/d.plan $bin
EXTRA="--max-num-batched-tokens=8" run nochunk8 /tmp/d.plan $bin SOL_DISABLE_CHUNK_ATTENTION=1
EXTRA="--max-num-batched-tokens=8" run legacy8 /tmp/d.plan $bin SOL_DISABLE_SKINNY=1
EXTRA="--max-num-batched-tokens=8" run old8 /tmp/o.plan .carry/bin-old
python3 - $w <<'PY' | tee $w/summary.txt
import numpy as np, sys, glob, os
w = sys.argv[1]; V = 128256
ref = np.fromfile(f"{w}/ref.f32", dtype=np.float32).reshape(-1, V)
for f in sorted(glob.glob(f"{w}/*.f32")):
    n = os.path.basename(f)[:-4]
    x = np.fromfile(f, dtype=np.float32).reshape(-1, V)
    err = np.linalg.norm(x - ref, axis=1) / np.linalg.norm(ref, axis=1)
    print(f"{n:10s} rows {x.shape[0]} rel err mean {err.mean():.3e} first rows {np.round(err[:10],3).tolist()} argmax agree {(x.argmax(1)==ref.argmax(1)).mean():.3f}")
PY
cd $w && tar czf $out/s8-5.tgz summary.txt *.log

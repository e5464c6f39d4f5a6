#!/bin/bash
# Runs sol-kernel-check on a GPU machine: each check family in its own process
# (a kernel fault in one cannot take the others down), a summary of the SASS
# of every compiled kernel, then compute-sanitizer (memcheck on everything,
# racecheck on the shared-memory kernels) in quick mode. Full logs, JSON and
# cubins go to <output dir>/results.tar.gz; stdout gets a compact summary
# (gemv sweep lines only in the logs).
# Usage: test/gpu/run-on-gpu.sh [path/to/sol-kernel-check] [output dir]
set -u
BIN=${1:-.carry/sol-kernel-check}
OUT_DIR=${2:-${OUT:-/tmp/sol-kernel-check}}
WORK=$(mktemp -d /tmp/sol-kernel-check.XXXXXX)
mkdir -p "$WORK/cubins" "$OUT_DIR"
export SOL_CACHE_DIR=${SOL_CACHE_DIR:-/tmp/sol-kernel-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu \
  --format=csv,noheader | tee "$WORK/nvidia-smi.txt"

status=0
for family in $("$BIN" --list); do
  "$BIN" --only "$family" --json "$WORK/$family.json" \
    --dump-cubins "$WORK/cubins" > "$WORK/$family.log" 2>&1
  rc=$?
  grep -E '^  [a-z_]+ |aborted|sol-kernel-check:' "$WORK/$family.log" |
    grep -vE '^  (gemv|skinny)_sweep' | sed -E 's/ +/ /g; s/\(tol [^)]*\)//'
  echo "[$family] exit $rc"
  [ $rc -eq 0 ] || status=1
done

if command -v cuobjdump > /dev/null; then
  for cubin in "$WORK"/cubins/*.cubin; do
    cuobjdump -sass "$cubin" > "${cubin%.cubin}.sass" 2>&1
  done
  echo "== SASS: LDG.128 HMMA LDSM LDL/STL per source"
  for sass in "$WORK"/cubins/*.sass; do
    printf '%s %s %s %s %s\n' "$(basename "$sass" .sass)" \
      "$(grep -c 'LDG.E.*128' "$sass")" "$(grep -c 'HMMA' "$sass")" \
      "$(grep -c 'LDSM' "$sass")" "$(grep -cE 'LDL|STL' "$sass")"
  done | tr '\n' ';'
  echo
fi

if command -v compute-sanitizer > /dev/null; then
  timeout 120 compute-sanitizer --tool memcheck --report-api-errors no \
    "$BIN" --quick > "$WORK/memcheck.log" 2>&1
  echo "memcheck exit $?: $(grep -E 'ERROR SUMMARY|CHECKS' "$WORK/memcheck.log" | tr '\n' ' ')"
  timeout 90 compute-sanitizer --tool racecheck --report-api-errors no \
    "$BIN" --quick --only attention,rms_norm,argmax,gemm \
    > "$WORK/racecheck.log" 2>&1
  echo "racecheck exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|CHECKS' "$WORK/racecheck.log" | tr '\n' ' ')"
  # The GEMV's norm prologue stages the normalised rows in shared memory;
  # linear_skinny also reduces its warps' partial sums there.
  timeout 120 compute-sanitizer --tool racecheck --report-api-errors no \
    "$BIN" --quick --only gemv_fused > "$WORK/racecheck-gemv.log" 2>&1
  echo "racecheck gemv_fused exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|CHECKS' "$WORK/racecheck-gemv.log" | tr '\n' ' ')"
  timeout 180 compute-sanitizer --tool racecheck --report-api-errors no \
    "$BIN" --quick --only skinny > "$WORK/racecheck-skinny.log" 2>&1
  echo "racecheck skinny exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|CHECKS' "$WORK/racecheck-skinny.log" | tr '\n' ' ')"
fi
tar -czf "$OUT_DIR/results.tar.gz" -C "$WORK" .
exit $status

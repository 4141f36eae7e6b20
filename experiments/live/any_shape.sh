#!/usr/bin/env bash
# Issue 21, items 1 and 2, on the GPU machine (after experiments/capture/stage_device.sh here):
# the live replay on programs whose allocations are not multiples of 64 KB and at budgets below
# one kernel's working set, which it used to crash on or refuse.
#   1. host_stencil --odd (rows of 4097 floats: no array a multiple of 4 KB) captured, then
#      replayed under ondemand and pump at 100% and 50% (each of its kernels touches all three
#      arrays, so at 50% every kernel runs in parts);
#   2. the shipped stream and pagerank traces at 50%, where a kernel needs more chunks than the
#      budget (refused before: experiments/live/reports/h200/fidelity.md), under ondemand and pump.
#   experiments/live/any_shape.sh OUT_DIR
# Writes OUT_DIR/odd.fltrace and OUT_DIR/TRACE-POLICY-BUDGET.json (.err where one failed), the
# machine in OUT_DIR/machine.txt. Bring OUT_DIR back as one tarball (the device tool returns 8
# files); here each result is simulated beside the live one by experiments/live/fidelity.sh.
set -uo pipefail
out=$(realpath -m "${1:?usage: any_shape.sh OUT_DIR}")
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
{
  git rev-parse HEAD 2>/dev/null || true
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
} >"$out/machine.txt" 2>&1

replay() { # TRACE_PATH NAME POLICY BUDGET
  local name="$out/$2-$3-$4"
  if timeout 300 "$bin/faultline" replay --trace "$1" --policy "$3" --budget "$4" \
    --out "$name.json" 2>"$name.err"; then
    rm -f "$name.err"
    echo "$2 $3 $4: done"
  else
    echo "$2 $3 $4: failed: $(tail -n 1 "$name.err")"
  fi
}

"$bin/faultline" capture --range profiler --out "$out/odd.fltrace" \
  -- "$bin/host_stencil" --mib 1024 --steps 3 --odd >"$out/capture.log" 2>&1 ||
  echo "capture of host_stencil --odd failed: $(tail -n 1 "$out/capture.log")"
for p in ondemand pump; do
  for b in 1.0 0.5; do
    [ -f "$out/odd.fltrace" ] && replay "$out/odd.fltrace" host-stencil-odd "$p" "$b"
  done
  for t in stream pagerank; do replay "traces/real/$t.fltrace" "$t" "$p" 0.5; done
done

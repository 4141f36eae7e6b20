#!/usr/bin/env bash
# Checks the sanitize-mode capture on a GPU machine: the microbenchmarks against their declared
# access sets, the host-initialised stencil (plain and odd sizes), a small PyTorch program, with the
# raw streams of the small runs kept for the converter's tests (tests/data/capture).
#   experiments/capture/probe_sanitize.sh OUT_DIR      (after experiments/capture/stage_device.sh)
set -uo pipefail
out=${1:?usage: probe_sanitize.sh OUT_DIR}
mkdir -p "$out"
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
here=$(dirname "$0")
log=$out/probe.log
exec > >(tee -a "$log") 2>&1
nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.used,memory.total --format=csv
ls /usr/local/cuda/compute-sanitizer 2>/dev/null | head -5
timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "[$((SECONDS - t0)) s, rc $rc] $*"; return $rc; }
cap() { # NAME OPTIONS... -- COMMAND
  local name=$1; shift
  timed "$bin/faultline" capture --keep "$out/raw-$name" --out "$out/$name.fltrace" "$@" \
    && "$bin/faultline" trace stats "$out/$name.fltrace" > "$out/$name.stats.json"
}
cap stream -- "$bin/um_micro" stream --mib 256 --iterations 2 --expect "$out/stream.expect.json"
python3 "$here/check_micro.py" "$bin/faultline" "$out/stream.fltrace" "$out/stream.expect.json" | tail -3
cap strided -- "$bin/um_micro" strided --mib 512 --stride-kib 192 --iterations 2 \
  --expect "$out/strided.expect.json"
python3 "$here/check_micro.py" "$bin/faultline" "$out/strided.fltrace" "$out/strided.expect.json" | tail -3
timed "$bin/host_stencil" --mib 96 --steps 3
cap stencil --range profiler -- "$bin/host_stencil" --mib 96 --steps 3
cap stencil-odd --range profiler -- "$bin/host_stencil" --mib 96 --steps 3 --odd
cap mlp --torch --range profiler -- python3 "$here/workloads.py" mlp --warmup 1 --steps 3
timed python3 "$here/workloads.py" resnet50 --warmup 1 --steps 3 --batch 64
cap resnet50 --torch --range profiler -- python3 "$here/workloads.py" resnet50 --warmup 1 --steps 3 --batch 64
for f in "$out"/*.stats.json; do echo "== $f"; head -c 1500 "$f"; echo; done
tar czf "$out/raws.tgz" -C "$out" $(cd "$out" && ls -d raw-stream raw-strided raw-stencil raw-mlp 2>/dev/null)
tar czf "$out/traces.tgz" -C "$out" $(cd "$out" && ls *.fltrace *.stats.json *.expect.json 2>/dev/null)
rm -rf "$out"/raw-* "$out"/*.fltrace
ls -la "$out"

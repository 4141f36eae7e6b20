#!/usr/bin/env bash
# Builds the CUDA parts on a GPU machine and runs the injection library in each mode over the
# microbenchmarks and a tiny PyTorch program, keeping the raw streams: the recorded record streams
# that the converter's unit tests read come from here.
#   experiments/capture/probe_tracer.sh OUT_DIR
set -euo pipefail
out=${1:?usage: probe_tracer.sh OUT_DIR}
mkdir -p "$out"
cmake -S . -B build-gpu -G Ninja -DFAULTLINE_CUDA_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-gpu >/dev/null
lib=$PWD/build-gpu/libfaultline_inject.so
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader

timed() { # NAME COMMAND...: run, print the wall time
  local name=$1 began ended
  shift
  began=$(date +%s.%N)
  "$@" >"$out/$name.log" 2>&1 || { echo "$name failed:"; tail -5 "$out/$name.log"; return 1; }
  ended=$(date +%s.%N)
  awk -v n="$name" -v a="$began" -v b="$ended" 'BEGIN { printf "%s %.2f s\n", n, b - a }'
}

for pattern in stream strided; do
  for mode in observe timing access; do
    timed "$pattern-$mode" env CUDA_INJECTION64_PATH="$lib" FAULTLINE_MODE=$mode \
      FAULTLINE_RAW_OUT="$out/$pattern-$mode.raw" \
      build-gpu/um_micro $pattern --mib 64 --iterations 2 --expect "$out/$pattern.expect.json"
  done
done
for mode in timing access; do
  timed "mlp-$mode" env CUDA_INJECTION64_PATH="$lib" LD_PRELOAD="$lib" FAULTLINE_MANAGED=1 \
    FAULTLINE_MODE=$mode FAULTLINE_RANGE=profiler FAULTLINE_RAW_OUT="$out/mlp-$mode.raw" \
    FAULTLINE_TORCH_HISTORY="$out/mlp-$mode.history.json" PYTHONPATH="$PWD/tracer/torch" \
    python3 experiments/capture/workloads.py mlp --batch 256 --warmup 1 --steps 1
done
timed stream512-access env CUDA_INJECTION64_PATH="$lib" FAULTLINE_MODE=access \
  FAULTLINE_RAW_OUT="$out/stream512-access.raw" \
  build-gpu/um_micro stream --mib 512 --iterations 1 --expect "$out/stream512.expect.json"
timed strided128-access env CUDA_INJECTION64_PATH="$lib" FAULTLINE_MODE=access \
  FAULTLINE_RAW_OUT="$out/strided128-access.raw" build-gpu/um_micro strided --mib 256 \
  --stride-kib 128 --iterations 1 --expect "$out/strided128.expect.json"
for run in stream strided stream512 strided128; do
  python3 tracer/tools/raw_coverage.py "$out/$run-access.raw" "$out/$run.expect.json"
done
ls -la "$out"

#!/usr/bin/env bash
# On a GPU machine with one H200 (141 GB): GMLake's models and strategies at the paper's scale,
# Llama-2-7B- and 13B-shaped decoders (random initialisation from a transformers config) under
# PyTorch's caching allocator, each run recording its allocation history.
#   experiments/alloc/capture_large.sh OUT_DIR [MODEL:TECHNIQUE:BATCH ...]
# Writes, per run NAME = MODEL-TECHNIQUE-bBATCH:
#   OUT_DIR/traces/NAME.pickle   the memory snapshot (one warm-up and 3 measured steps)
#   OUT_DIR/runs/NAME.json       the result: step times, peaks, fragmentation
#   OUT_DIR/logs/NAME.log        the program's output
#   OUT_DIR/machine.txt          GPU, driver, CUDA, torch, transformers, peft, host
# Runs, in order of priority, one at a time (the peaks of two runs sharing a GPU would change
# each other's allocator history): the paper's LRO (lora-recompute-zero: LoRA, recompute and
# ZeRO-3-style offload of parameters and optimizer state to host memory, workloads.py), LR, R
# (full fine-tuning with recompute: 7B only, about 120 GB, run only where the GPU has 130 GiB)
# and L, then LRO of the 7B model at batches 4 and 16; or, where given, the runs named
# (data/h200-large-batches: the batch series). A run that runs out of memory is a result (its
# JSON says so); a failed run is logged and the rest go on; exit status 1 if any failed.
set -uo pipefail
out=${1:?usage: capture_large.sh OUT_DIR [MODEL:TECHNIQUE:BATCH ...]}
shift
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/traces" "$out/runs" "$out/logs"
export PYTHONUNBUFFERED=1
failed=()

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | head -n 1
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers",
transformers.__version__, "peft", peft.__version__)'
  echo "host: $(nproc) cores, $(awk '/MemTotal/ {print int($2 / 1048576)}' /proc/meminfo) GiB at start, $(uname -r)"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"
gib=$(python3 -c 'import torch; print(torch.cuda.get_device_properties(0).total_memory >> 30)')

run() { # MODEL TECHNIQUE BATCH
  local model=$1 technique=$2 batch=$3 name log began rc
  name="$model-$technique-b$batch"
  log="$out/logs/$name.log"
  began=$SECONDS
  python3 "$here/workloads.py" --model "$model" --technique "$technique" --batch "$batch" \
    --steps 3 --allocator default --snapshot "$out/traces/$name.pickle" \
    --out "$out/runs/$name.json" >"$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "$name: $((SECONDS - began)) s; $(grep '^result ' "$log")"
  else
    echo "$name: FAILED (exit $rc) after $((SECONDS - began)) s; the end of $log:"
    tail -n 15 "$log" | sed 's/^/  /'
    failed+=("$name")
  fi
}

if [ "$#" -gt 0 ]; then
  for spec in "$@"; do run ${spec//:/ }; done
else
  run llama2-7b lora-recompute-zero 8
  run llama2-13b lora-recompute-zero 8
  run llama2-7b lora-recompute 8
  run llama2-13b lora-recompute 8
  if [ "$gib" -ge 130 ]; then
    run llama2-7b recompute 8
  else
    echo "llama2-7b-recompute-b8: skipped, the GPU has $gib GiB (it needs about 115)"
  fi
  run llama2-7b lora 8
  run llama2-13b lora 4
  run llama2-7b lora-recompute-zero 16
  run llama2-7b lora-recompute-zero 4
fi

if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}"
  exit 1
fi
echo "all runs finished; results in $out/runs, snapshots in $out/traces"

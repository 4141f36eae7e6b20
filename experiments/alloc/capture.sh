#!/usr/bin/env bash
# Runs the allocator study's capture matrix on a GPU machine: real training runs under PyTorch's
# caching allocator, each recording its allocation history.
#   experiments/alloc/capture.sh OUT_DIR
# For each run NAME (MODEL-TECHNIQUE-bBATCH, '+' written '_') it writes
#   OUT_DIR/traces/NAME.pickle   the memory snapshot (NAME.rank0/.rank1.pickle for +ddp, +fsdp)
#   OUT_DIR/runs/NAME.json       the result: step times, peaks, fragmentation
#   OUT_DIR/logs/NAME.log        the program's output
# Matrix (3 measured steps each): gpt2-large x {none, recompute, offload, lora, lora-recompute,
# recompute-offload, lora-recompute-offload} batch 8; opt-1.3b x {none, recompute,
# lora-recompute, lora-recompute-offload} batch 8; opt-6.7b x {lora, lora-recompute} batch 8;
# bert-large x {none, recompute} batch 16; with two GPUs visible also gpt2-large x
# {recompute+ddp, recompute+fsdp} batch 8. The one-GPU runs go in parallel, one lane per GPU. A failed run is logged and the rest go on; the exit
# status is 1 if any failed. A run that runs out of memory is not a failure (its result says so).
set -u
out=${1:?usage: capture.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/traces" "$out/runs" "$out/logs"
rm -f "$out/failed.txt"
export PYTHONUNBUFFERED=1
failed=()

run() { # MODEL TECHNIQUE BATCH
  local model=$1 technique=$2 batch=$3 name log began ended rc seconds
  name="$model-${technique//+/_}-b$batch"
  log="$out/logs/$name.log"
  began=$(date +%s.%N)
  python3 "$here/workloads.py" --model "$model" --technique "$technique" --batch "$batch" \
    --steps 3 --allocator default --snapshot "$out/traces/$name.pickle" \
    --out "$out/runs/$name.json" >"$log" 2>&1
  rc=$?
  ended=$(date +%s.%N)
  seconds=$(awk -v a="$began" -v b="$ended" 'BEGIN { printf "%.1f", b - a }')
  if [ "$rc" -eq 0 ]; then
    echo "$name: ${seconds} s"
    grep '^result ' "$log" | sed 's/^/  /'
  else
    echo "$name: FAILED (exit $rc) after ${seconds} s; the end of $log:"
    tail -n 15 "$log" | sed 's/^/  /'
    echo "$name" >>"$out/failed.txt" # lanes run in subshells: failures go through a file
  fi
}

single=()
for t in none recompute offload lora lora-recompute recompute-offload lora-recompute-offload; do
  single+=("gpt2-large $t 8")
done
for t in none recompute lora-recompute lora-recompute-offload; do single+=("opt-1.3b $t 8"); done
for t in lora lora-recompute; do single+=("opt-6.7b $t 8"); done
for t in none recompute; do single+=("bert-large $t 16"); done

# The one-GPU runs share the visible GPUs: one lane per GPU, each taking every n-th run.
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
lanes=${gpus:-1}
[ "$lanes" -ge 1 ] || lanes=1
for ((lane = 0; lane < lanes; ++lane)); do
  (
    for ((i = lane; i < ${#single[@]}; i += lanes)); do
      CUDA_VISIBLE_DEVICES=$lane run ${single[$i]}
    done
  ) &
done
wait
if [ -s "$out/failed.txt" ]; then mapfile -t failed <"$out/failed.txt"; fi

if [ "${gpus:-0}" -ge 2 ]; then
  for t in recompute+ddp recompute+fsdp; do
    run gpt2-large "$t" 8
  done
  if [ -s "$out/failed.txt" ]; then mapfile -t failed <"$out/failed.txt"; fi
else
  echo "skipping gpt2-large recompute+ddp and recompute+fsdp: ${gpus:-0} GPU(s) visible, they need 2"
fi

if [ "${#failed[@]}" -gt 0 ]; then
  echo "failed: ${failed[*]}"
  exit 1
fi
echo "all runs finished; results in $out/runs, snapshots in $out/traces"

#!/usr/bin/env bash
# Snapshots of the workload whose largest batch live.sh measures (GPT-2 large with recompute,
# 2 measured steps), at the batches around its limit, so the simulator can predict that limit:
#   experiments/alloc/capture_batches.sh OUT_DIR
# Writes OUT_DIR/traces/gpt2-large-recompute-bB.pickle and OUT_DIR/runs/...json, B = 4..9,
# one lane per visible GPU.
set -u
out=${1:?usage: capture_batches.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/traces" "$out/runs" "$out/logs"
export PYTHONUNBUFFERED=1
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 1)
lanes=${gpus:-1}
[ "$lanes" -ge 1 ] || lanes=1
batches=(4 5 6 7 8 9)
for ((lane = 0; lane < lanes; ++lane)); do
  (
    for ((i = lane; i < ${#batches[@]}; i += lanes)); do
      name="gpt2-large-recompute-b${batches[$i]}"
      CUDA_VISIBLE_DEVICES=$lane python3 "$here/workloads.py" --model gpt2-large \
        --technique recompute --batch "${batches[$i]}" --steps 2 --allocator default \
        --snapshot "$out/traces/$name.pickle" --out "$out/runs/$name.json" >"$out/logs/$name.log" 2>&1
      echo "$name: exit $? $(grep '^result ' "$out/logs/$name.log" | head -1)"
    done
  ) &
done
wait

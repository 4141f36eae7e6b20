#!/usr/bin/env bash
# The live comparison of allocators on a GPU machine: PyTorch's caching allocator (default),
# its expandable segments, and faultline's models run live through libfaultline_alloc.so
# (GMLake stitching; the caching model as a check of the model against PyTorch itself).
#   experiments/alloc/live.sh OUT_DIR [LIMIT_BYTES]
# Needs build-gpu/libfaultline_alloc.so (cmake -S . -B build-gpu -DFAULTLINE_CUDA_ONLY=ON).
# Writes OUT_DIR/live/NAME-ALLOCATOR.json for each workload and allocator (3 measured steps
# under the limit, default 76 GiB: what an A100-80GB leaves PyTorch), and
# OUT_DIR/maxbatch/NAME-ALLOCATOR.json: the largest batch that trains under a 16 GiB limit.
# The one-GPU runs share the visible GPUs, one lane per GPU.
set -u
out=${1:?usage: live.sh OUT_DIR [LIMIT_BYTES]}
limit=${2:-81604378624}
here=$(cd "$(dirname "$0")" && pwd)
export FAULTLINE_ALLOC_LIB=${FAULTLINE_ALLOC_LIB:-$PWD/build-gpu/libfaultline_alloc.so}
export PYTHONUNBUFFERED=1
mkdir -p "$out/live" "$out/maxbatch" "$out/logs"

one() { # MODEL TECHNIQUE BATCH ALLOCATOR [MODEL_OF_THE_LIBRARY]
  local name="$1-$2-b$3-$4${5:+-$5}"
  FAULTLINE_ALLOC_MODEL=${5:-gmlake} python3 "$here/workloads.py" --model "$1" \
    --technique "$2" --batch "$3" --steps 3 --allocator "$4" --limit "$limit" \
    --out "$out/live/$name.json" >"$out/logs/$name.log" 2>&1
  echo "$name: exit $? $(grep '^result ' "$out/logs/$name.log" | head -1)"
}

maxbatch() { # MODEL TECHNIQUE ALLOCATOR LO HI
  local name="$1-$2-$3"
  python3 "$here/workloads.py" --model "$1" --technique "$2" --steps 2 --allocator "$3" \
    --limit 17179869184 --find-max-batch "$4" "$5" --out "$out/maxbatch/$name.json" \
    >"$out/logs/maxbatch-$name.log" 2>&1
  echo "$name: exit $? $(grep '^result ' "$out/logs/maxbatch-$name.log" | head -1)"
}

jobs=()
for w in "gpt2-large lora-recompute 8" "opt-1.3b recompute 8" "opt-1.3b lora-recompute-offload 8" \
  "opt-6.7b lora-recompute 8"; do
  for a in default expandable "faultline gmlake" "faultline caching"; do
    jobs+=("one $w $a")
  done
done
for a in default expandable faultline; do jobs+=("maxbatch gpt2-large recompute $a 1 64"); done

gpus=$(python3 -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 1)
lanes=${gpus:-1}
[ "$lanes" -ge 1 ] || lanes=1
for ((lane = 0; lane < lanes; ++lane)); do
  (
    for ((i = lane; i < ${#jobs[@]}; i += lanes)); do
      CUDA_VISIBLE_DEVICES=$lane ${jobs[$i]}
    done
  ) &
done
wait

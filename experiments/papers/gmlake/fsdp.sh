#!/usr/bin/env bash
# On a two-GPU machine (issue 27): GMLake under sharded data parallelism, live. FSDP2 over GPUs 0
# and 1 (workloads.py's +fsdp, the stand-in for the paper's DeepSpeed ZeRO-3) trains Llama-2-7B-
# and 13B-shaped decoders under three allocators: PyTorch's caching allocator (default, its
# history recorded for the simulator), its expandable segments, and faultline's GMLake
# (libfaultline_alloc.so through CUDAPluggableAllocator).
#   experiments/papers/gmlake/fsdp.sh OUT_DIR [ALLOC_LIB] [MODEL:TECHNIQUE:BATCH ...]
# Default runs, in order: 7B R (full fine-tuning, recompute), 7B LR (LoRA, recompute), 13B LR,
# all at batch 8 per GPU. Each run writes OUT_DIR/runs/NAME-ALLOCATOR.rank{0,1}.json (and, for
# default, OUT_DIR/traces/NAME.rank{0,1}.pickle); OUT_DIR/logs/ has the output and
# OUT_DIR/machine.txt the machine. No run starts after DEADLINE seconds (default 480), so that
# the GPU machine's call returns what is done. Then, here: OUT_DIR/runs/* and OUT_DIR/logs become
# the campaign folder experiments/alloc/data/NAME/ (results at its top, the logs as console.log),
# each OUT_DIR/traces/X.pickle becomes NAME/snapshots/X.pickle.zst (zstd -19; the GPU machine has
# no zstd), experiments/make_manifest.py writes the manifest, and
# experiments/papers/gmlake/fsdp_report.py NAME_FOLDER --write-reports the report.
set -uo pipefail
out=$(realpath -m "${1:?usage: fsdp.sh OUT_DIR [ALLOC_LIB] [MODEL:TECHNIQUE:BATCH ...]}")
export FAULTLINE_ALLOC_LIB=$(realpath -m "${2:-build/libfaultline_alloc.so}")
shift $(($# < 2 ? $# : 2))
here=$(cd "$(dirname "$0")" && pwd)
deadline=${DEADLINE:-480}
export PYTHONUNBUFFERED=1 FAULTLINE_ALLOC_MODEL=gmlake
# NVLink multicast stays off (the device notes: it can hang the shared machine).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out/runs" "$out/traces" "$out/logs"
[ -f "$FAULTLINE_ALLOC_LIB" ] || { echo "fsdp.sh: $FAULTLINE_ALLOC_LIB is missing" >&2; exit 1; }
{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git -C "$here" rev-parse HEAD 2>/dev/null || true
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  nvidia-smi topo -m
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers",
transformers.__version__, "peft", peft.__version__)'
} >"$out/machine.txt" 2>&1
failed=0

run() { # MODEL TECHNIQUE BATCH ALLOCATOR
  local name="$1-$2-b$3" log snapshot=()
  if ((SECONDS > deadline)); then
    echo "$name-$4: not started, past the deadline of $deadline s"
    return
  fi
  log="$out/logs/$name-$4.log"
  [ "$4" = default ] && snapshot=(--snapshot "$out/traces/$name.pickle")
  python3 "$here/../../alloc/workloads.py" --model "$1" --technique "$2" --batch "$3" --steps 3 \
    --allocator "$4" "${snapshot[@]}" --out "$out/runs/$name-$4.json" >"$log" 2>&1
  local rc=$?
  echo "$name-$4: exit $rc after $SECONDS s; $(grep '^result ' "$log" | tr '\n' ' ')"
  if [ "$rc" -ne 0 ]; then
    tail -n 8 "$log" | sed 's/^/  /'
    failed=1
  fi
}

specs=("$@")
[ "${#specs[@]}" -gt 0 ] || specs=(llama2-7b:recompute+fsdp:8 llama2-7b:lora-recompute+fsdp:8
  llama2-13b:lora-recompute+fsdp:8)
for spec in "${specs[@]}"; do
  for allocator in default faultline expandable; do run ${spec//:/ } "$allocator"; done
done
exit $failed

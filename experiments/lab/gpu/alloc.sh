# Sourced by experiments/campaign.sh; defines functions only. The allocator study's recipes on
# the GPU machine: real training runs (`experiments/workloads.py alloc`) under PyTorch's caching
# allocator recording their allocation histories, the allocators compared live, and GMLake under
# sharded data parallelism on two GPUs.
# shellcheck shell=bash

# The end of a snapshot campaign: the failed runs (NAME...) named and exit 1, else where the
# results are (`out`).
snapshots_done() {
  if [ "$#" -gt 0 ]; then
    echo "failed: $*"
    exit 1
  fi
  echo "all runs finished; results in $out/runs, snapshots in $out/traces"
}

# One training run under PyTorch's caching allocator, its allocation history recorded:
# OUT_DIR/traces/NAME.pickle, OUT_DIR/runs/NAME.json and its output in OUT_DIR/logs/NAME.log
# (`out` and `workloads` are the calling recipe's); returns the run's exit status.
snapshot_run() { # NAME MODEL TECHNIQUE BATCH STEPS
  python3 "$workloads" alloc --model "$2" --technique "$3" --batch "$4" \
    --steps "$5" --allocator default --snapshot "$out/traces/$1.pickle" \
    --out "$out/runs/$1.json" >"$out/logs/$1.log" 2>&1
}

# experiments/campaign.sh alloc-capture OUT_DIR
# Runs the allocator study's capture matrix on a GPU machine: real training runs under PyTorch's
# caching allocator, each recording its allocation history.
# For each run NAME (MODEL-TECHNIQUE-bBATCH, '+' written '_') it writes
#   OUT_DIR/traces/NAME.pickle   the memory snapshot (NAME.rank0/.rank1.pickle for +ddp, +fsdp)
#   OUT_DIR/runs/NAME.json       the result: step times, peaks, fragmentation
#   OUT_DIR/logs/NAME.log        the program's output
# Matrix (3 measured steps each): gpt2-large x {none, recompute, offload, lora, lora-recompute,
# recompute-offload, lora-recompute-offload} batch 8; opt-1.3b x {none, recompute,
# lora-recompute, lora-recompute-offload} batch 8; opt-6.7b x {lora, lora-recompute} batch 8;
# bert-large x {none, recompute} batch 16; with two GPUs visible also gpt2-large x
# {recompute+ddp, recompute+fsdp} batch 8. The one-GPU runs go in parallel, one lane per GPU. A
# failed run is logged and the rest go on; the exit status is 1 if any failed. A run that runs
# out of memory is not a failure (its result says so).
sub_alloc_capture() (
  set -u +e +o pipefail
  out=${1:?usage: campaign.sh alloc-capture OUT_DIR}
  workloads=$(cd "$experiments" && pwd)/workloads.py
  mkdir -p "$out/traces" "$out/runs" "$out/logs"
  rm -f "$out/failed.txt"
  export PYTHONUNBUFFERED=1
  failed=()

  run() { # MODEL TECHNIQUE BATCH
    local model=$1 technique=$2 batch=$3 name log began ended rc seconds
    name="$model-${technique//+/_}-b$batch"
    log="$out/logs/$name.log"
    began=$(date +%s.%N)
    snapshot_run "$name" "$model" "$technique" "$batch" 3
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
    single+=("run gpt2-large $t 8")
  done
  for t in none recompute lora-recompute lora-recompute-offload; do single+=("run opt-1.3b $t 8"); done
  for t in lora lora-recompute; do single+=("run opt-6.7b $t 8"); done
  for t in none recompute; do single+=("run bert-large $t 16"); done

  # The one-GPU runs share the visible GPUs: one lane per GPU, each taking every n-th run.
  gpu_lanes 0
  in_lanes "${single[@]}"
  if [ -s "$out/failed.txt" ]; then mapfile -t failed <"$out/failed.txt"; fi

  if [ "${gpus:-0}" -ge 2 ]; then
    for t in recompute+ddp recompute+fsdp; do
      run gpt2-large "$t" 8
    done
    if [ -s "$out/failed.txt" ]; then mapfile -t failed <"$out/failed.txt"; fi
  else
    echo "skipping gpt2-large recompute+ddp and recompute+fsdp: ${gpus:-0} GPU(s) visible, they need 2"
  fi

  snapshots_done "${failed[@]}"
)

# experiments/campaign.sh alloc-batches OUT_DIR
# Snapshots of the workload whose largest batch `alloc-live` measures (GPT-2 large with
# recompute, 2 measured steps), at the batches around its limit, so the simulator can predict
# that limit. Writes OUT_DIR/traces/gpt2-large-recompute-bB.pickle and OUT_DIR/runs/...json,
# B = 4..9, one lane per visible GPU.
sub_alloc_batches() (
  set -u +e +o pipefail
  out=${1:?usage: campaign.sh alloc-batches OUT_DIR}
  workloads=$(cd "$experiments" && pwd)/workloads.py
  mkdir -p "$out/traces" "$out/runs" "$out/logs"
  export PYTHONUNBUFFERED=1
  batch() { # BATCH
    local name="gpt2-large-recompute-b$1"
    snapshot_run "$name" gpt2-large recompute "$1" 2
    echo "$name: exit $? $(grep '^result ' "$out/logs/$name.log" | head -1)"
  }
  gpu_lanes 1
  in_lanes "batch 4" "batch 5" "batch 6" "batch 7" "batch 8" "batch 9"
)

# experiments/campaign.sh alloc-large OUT_DIR [MODEL:TECHNIQUE:BATCH ...]
# On a GPU machine with one H200 (141 GB): GMLake's models and strategies at the paper's scale,
# Llama-2-7B- and 13B-shaped decoders (random initialisation from a transformers config) under
# PyTorch's caching allocator, each run recording its allocation history.
# Writes, per run NAME = MODEL-TECHNIQUE-bBATCH:
#   OUT_DIR/traces/NAME.pickle   the memory snapshot (one warm-up and 3 measured steps)
#   OUT_DIR/runs/NAME.json       the result: step times, peaks, fragmentation
#   OUT_DIR/logs/NAME.log        the program's output
#   OUT_DIR/machine.txt          GPU, driver, CUDA, torch, transformers, peft, host
# Runs, in order of priority, one at a time (the peaks of two runs sharing a GPU would change
# each other's allocator history): the paper's LRO (lora-recompute-zero: LoRA, recompute and
# ZeRO-3-style offload of parameters and optimizer state to host memory, `workloads.py alloc`),
# LR, R (full fine-tuning with recompute: 7B only, about 120 GB, run only where the GPU has 130
# GiB) and L, then LRO of the 7B model at batches 4 and 16; or, where given, the runs named
# (data/h200-large-batches: the batch series). A run that runs out of memory is a result (its
# JSON says so); a failed run is logged and the rest go on; exit status 1 if any failed.
sub_alloc_large() (
  set -u +e -o pipefail
  out=${1:?usage: campaign.sh alloc-large OUT_DIR [MODEL:TECHNIQUE:BATCH ...]}
  shift
  workloads=$(cd "$experiments" && pwd)/workloads.py
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
    snapshot_run "$name" "$model" "$technique" "$batch" 3
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

  snapshots_done "${failed[@]}"
)

# experiments/campaign.sh alloc-live OUT_DIR [LIMIT_BYTES]
# The live comparison of allocators on a GPU machine: PyTorch's caching allocator (default),
# its expandable segments, and faultline's models run live through libfaultline_alloc.so
# (GMLake stitching; the caching model as a check of the model against PyTorch itself).
# Needs build-gpu/libfaultline_alloc.so (cmake -S . -B build-gpu -DFAULTLINE_CUDA_ONLY=ON), or
# the library in FAULTLINE_ALLOC_LIB. Writes OUT_DIR/live/NAME-ALLOCATOR.json for each workload
# and allocator (3 measured steps under the limit, default 76 GiB: what an A100-80GB leaves
# PyTorch), and OUT_DIR/maxbatch/NAME-ALLOCATOR.json: the largest batch that trains under a
# 16 GiB limit. The one-GPU runs share the visible GPUs, one lane per GPU.
sub_alloc_live() (
  set -u +e +o pipefail
  out=${1:?usage: campaign.sh alloc-live OUT_DIR [LIMIT_BYTES]}
  limit=${2:-81604378624}
  workloads=$(cd "$experiments" && pwd)/workloads.py
  export FAULTLINE_ALLOC_LIB=${FAULTLINE_ALLOC_LIB:-$PWD/build-gpu/libfaultline_alloc.so}
  export PYTHONUNBUFFERED=1
  mkdir -p "$out/live" "$out/maxbatch" "$out/logs"

  one() { # MODEL TECHNIQUE BATCH ALLOCATOR [MODEL_OF_THE_LIBRARY]
    local name="$1-$2-b$3-$4${5:+-$5}"
    FAULTLINE_ALLOC_MODEL=${5:-gmlake} python3 "$workloads" alloc --model "$1" \
      --technique "$2" --batch "$3" --steps 3 --allocator "$4" --limit "$limit" \
      --out "$out/live/$name.json" >"$out/logs/$name.log" 2>&1
    echo "$name: exit $? $(grep '^result ' "$out/logs/$name.log" | head -1)"
  }

  maxbatch() { # MODEL TECHNIQUE ALLOCATOR LO HI
    local name="$1-$2-$3"
    python3 "$workloads" alloc --model "$1" --technique "$2" --steps 2 --allocator "$3" \
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

  gpu_lanes 1
  in_lanes "${jobs[@]}"
)

# experiments/campaign.sh alloc-fsdp OUT_DIR [ALLOC_LIB] [MODEL:TECHNIQUE:BATCH ...]
# On a two-GPU machine (issue 27): GMLake under sharded data parallelism, live. FSDP2 over GPUs 0
# and 1 (`workloads.py alloc`'s +fsdp, the stand-in for the paper's DeepSpeed ZeRO-3) trains
# Llama-2-7B- and 13B-shaped decoders under three allocators: PyTorch's caching allocator
# (default, its history recorded for the simulator), its expandable segments, and faultline's
# GMLake (libfaultline_alloc.so, default build/libfaultline_alloc.so, through
# CUDAPluggableAllocator).
# Default runs, in order: 7B R (full fine-tuning, recompute), 7B LR (LoRA, recompute), 13B LR,
# all at batch 8 per GPU. Each run writes OUT_DIR/runs/NAME-ALLOCATOR.rank{0,1}.json (and, for
# default, OUT_DIR/traces/NAME.rank{0,1}.pickle); OUT_DIR/logs/ has the output and
# OUT_DIR/machine.txt the machine. No run starts after DEADLINE seconds (default 480), so that
# the GPU machine's call returns what is done. Then, here: OUT_DIR/runs/* and OUT_DIR/logs become
# the campaign folder experiments/alloc/data/NAME/ (results at its top, the logs as console.log),
# each OUT_DIR/traces/X.pickle becomes NAME/snapshots/X.pickle.zst (zstd -19; the GPU machine has
# no zstd), `campaign.sh manifest` writes the manifest, and
# `experiments/papers/run.py gmlake-fsdp NAME --write-reports` the report.
sub_alloc_fsdp() (
  set -u +e -o pipefail
  SECONDS=0
  out=$(realpath -m "${1:?usage: campaign.sh alloc-fsdp OUT_DIR [ALLOC_LIB] [MODEL:TECHNIQUE:BATCH ...]}")
  export FAULTLINE_ALLOC_LIB=$(realpath -m "${2:-build/libfaultline_alloc.so}")
  shift $(($# < 2 ? $# : 2))
  here=$(cd "$experiments" && pwd)
  deadline=${DEADLINE:-480}
  export PYTHONUNBUFFERED=1 FAULTLINE_ALLOC_MODEL=gmlake
  # NVLink multicast stays off (the device notes: it can hang the shared machine).
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  mkdir -p "$out/runs" "$out/traces" "$out/logs"
  [ -f "$FAULTLINE_ALLOC_LIB" ] || { echo "alloc-fsdp: $FAULTLINE_ALLOC_LIB is missing" >&2; exit 1; }
  {
    date -u +%Y-%m-%dT%H:%M:%SZ
    git -C "$here" rev-parse HEAD 2>/dev/null || true
    nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
    nvidia-smi topo -m
    python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers",
transformers.__version__, "peft", peft.__version__)'
  } >"$out/machine.txt" 2>&1
  status=0

  run() { # MODEL TECHNIQUE BATCH ALLOCATOR
    local name="$1-$2-b$3" log snapshot=()
    if ((SECONDS > deadline)); then
      echo "$name-$4: not started, past the deadline of $deadline s"
      return
    fi
    log="$out/logs/$name-$4.log"
    [ "$4" = default ] && snapshot=(--snapshot "$out/traces/$name.pickle")
    python3 "$here/workloads.py" alloc --model "$1" --technique "$2" --batch "$3" --steps 3 \
      --allocator "$4" "${snapshot[@]}" --out "$out/runs/$name-$4.json" >"$log" 2>&1
    local rc=$?
    echo "$name-$4: exit $rc after $SECONDS s; $(grep '^result ' "$log" | tr '\n' ' ')"
    if [ "$rc" -ne 0 ]; then
      tail -n 8 "$log" | sed 's/^/  /'
      status=1
    fi
  }

  specs=("$@")
  [ "${#specs[@]}" -gt 0 ] || specs=(llama2-7b:recompute+fsdp:8 llama2-7b:lora-recompute+fsdp:8
    llama2-13b:lora-recompute+fsdp:8)
  for spec in "${specs[@]}"; do
    for allocator in default faultline expandable; do run ${spec//:/ } "$allocator"; done
  done
  exit $status
)

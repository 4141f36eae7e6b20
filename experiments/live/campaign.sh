#!/usr/bin/env bash
# A live campaign on the GPU machine that brings its own calibration: instances of one GPU model
# differ by 20-30% in fault and copy costs (reports/h200-other-instance/), so every campaign first
# measures the instance it runs on, and its runs are simulated with that profile.
#   experiments/live/campaign.sh OUT_DIR [STAGE...]
# After experiments/capture/stage_device.sh here (.dev/ carried). STAGE, in order, default all:
#   calibrate  OUT_DIR/machine.txt (GPU, UUID, driver, CPU), the warm-up replay (below: a
#              calibration made on the machine as it starts measured eviction 30% dearer than
#              one made minutes later, live/data/h100-a069ff39/README.md), then the per-machine
#              calibration,
#              `faultline calibrate --from MODEL` (under a minute: what differs between
#              instances, the shipped profile's fault path kept), into
#              OUT_DIR/profile/{calibration,gpus,links}/PROFILE*.json, PROFILE = h200-UUID8 (the
#              GPU's name and the first 8 hex digits of its UUID: the instance), timed in
#              OUT_DIR/calibrate.log; with FULL=1 also the full calibration as PROFILE-full
#              (about 3 minutes)
#   capture    HOLDOUT programs (default: hash-join transpose2d llama) captured by
#              experiments/capture/capture_all.sh into OUT_DIR/holdout/
#   replay     one untimed warm-up replay into OUT_DIR/warm-up/ unless made already (the first
#              replay on a freshly started machine ran 30% slower: live/data/h100-vm-warmup/), then
#              experiments/live/replay_all.sh OUT_DIR (TRACES, POLICIES, BUDGETS, REPEATS,
#              STOP_AFTER, TRACE_DIR as there); the bytes each way count only in runs that drain
#              CUPTI (live/data/bytes-back/): make them apart, DRAIN=1 replay_all.sh
#              OUT_DIR-drained, a campaign of their own whose times are not compared
# Bring OUT_DIR back as one tarball (the device tool returns 8 files); here
# experiments/make_manifest.py --gpu-profile profile/gpus/PROFILE.json names the instance's
# profile, which fidelity.sh then simulates with.
set -uo pipefail
out=$(realpath -m "${1:?usage: campaign.sh OUT_DIR [calibrate] [capture] [replay]}")
shift
stages=" ${*:-calibrate capture replay} "
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
here=$(dirname "$0")
warm_up() {
  [ -d "$out/warm-up" ] && return
  TRACES=resnet50 POLICIES=oracle BUDGETS=0.75 TRACE_DIR=traces/real \
    "$here/replay_all.sh" "$out/warm-up" "$bin/faultline" >"$out/warm-up.log" 2>&1
}

if [[ $stages == *" calibrate "* ]]; then
  {
    git rev-parse HEAD 2>/dev/null || true
    nvidia-smi --query-gpu=name,uuid,pci.bus_id,memory.total,memory.used,driver_version,clocks.max.sm \
      --format=csv
    lscpu | grep -E '^(Model name|CPU\(s\)|Hypervisor vendor)'
    date -u
  } >"$out/machine.txt" 2>&1
  uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
  model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
  profile=$model-$uuid
  echo "$profile" >"$out/profile.txt"
  warm_up
  for kind in per-machine ${FULL:+full}; do
    began=$SECONDS
    name=$profile how=(--from "$model")
    [ "$kind" = full ] && name=$profile-full how=(--base "$model")
    "$bin/faultline" calibrate --name "$name" "${how[@]}" --out-dir "$out/profile" \
      >>"$out/calibrate.log" 2>&1 || echo "calibrate ($kind) failed: $(tail -1 "$out/calibrate.log")"
    echo "calibrate ($kind): $((SECONDS - began)) s" | tee -a "$out/calibrate.log"
  done
fi
if [[ $stages == *" capture "* ]]; then
  MODES="plain capture" "$here/../capture/capture_all.sh" "$out/holdout" \
    ${HOLDOUT:-hash-join transpose2d llama}
fi
if [[ $stages == *" replay "* ]]; then
  warm_up
  "$here/replay_all.sh" "$out" "$bin/faultline"
fi

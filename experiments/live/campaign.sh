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
#              instances, the shipped profile's fault path kept), as PROFILE-at1, and the
#              campaign's profile PROFILE fitted from it, into
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
#   recalibrate another per-machine calibration, PROFILE-atN, and PROFILE refitted from all of
#              them (`calibrate --refit AT1 --combine AT2 ...`: each time their median, the
#              eviction samples pooled). An instance's costs move within minutes (eviction
#              between two levels, the swap, the kernel overhead), so one calibration before
#              the runs prices the moment it met: on H200 9bc851db six calibrations over 14
#              minutes each priced its runs 4.1-8.9% off (median |error|; max 11.7-21.4%), all
#              six combined 5.2% (12.2%) (live/data/h200-9bc851db-drift/). Run it after the
#              replays, or between passes.
# Bring OUT_DIR back as one tarball (the device tool returns 8 files); here
# experiments/make_manifest.py --gpu-profile profile/gpus/PROFILE.json names the instance's
# profile, which fidelity.sh then simulates with.
set -uo pipefail
out=$(realpath -m "${1:?usage: campaign.sh OUT_DIR [calibrate] [capture] [replay] [recalibrate]}")
shift
stages=" ${*:-calibrate capture replay recalibrate} "
bin=$PWD/.dev
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$out"
here=$(dirname "$0")
warm_up() {
  [ -d "$out/warm-up" ] && return
  TRACES=resnet50 POLICIES=oracle BUDGETS=0.75 TRACE_DIR=traces/real \
    "$here/replay_all.sh" "$out/warm-up" "$bin/faultline" >"$out/warm-up.log" 2>&1
}

# One per-machine calibration now, PROFILE-atN, then PROFILE fitted from every one made so far.
moment() {
  local at=("$out/profile/calibration/$profile-at"*.json) began=$SECONDS
  [ -f "${at[0]}" ] || at=()
  local name=$profile-at$((${#at[@]} + 1))
  "$bin/faultline" calibrate --name "$name" --from "$model" --out-dir "$out/profile" \
    >>"$out/calibrate.log" 2>&1 || { echo "calibrate ($name) failed: $(tail -1 "$out/calibrate.log")"; return; }
  echo "calibrate (per-machine, $name): $((SECONDS - began)) s" | tee -a "$out/calibrate.log"
  at+=("$out/profile/calibration/$name.json")
  local refit=(--refit "${at[0]}")
  for f in "${at[@]:1}"; do refit+=(--combine "$f"); done
  "$bin/faultline" calibrate "${refit[@]}" --name "$profile" --out-dir "$out/profile" \
    >>"$out/calibrate.log" 2>&1 || echo "calibrate (refit of ${#at[@]}) failed: $(tail -1 "$out/calibrate.log")"
}
uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1 | sed 's/^GPU-//' | cut -c1-8)
model=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | awk '{print tolower($2)}')
profile=$model-$uuid

if [[ $stages == *" calibrate "* ]]; then
  {
    git rev-parse HEAD 2>/dev/null || true
    nvidia-smi --query-gpu=name,uuid,pci.bus_id,memory.total,memory.used,driver_version,clocks.max.sm \
      --format=csv
    lscpu | grep -E '^(Model name|CPU\(s\)|Hypervisor vendor)'
    date -u
  } >"$out/machine.txt" 2>&1
  echo "$profile" >"$out/profile.txt"
  warm_up
  moment
  if [ -n "${FULL:-}" ]; then
    began=$SECONDS
    "$bin/faultline" calibrate --name "$profile-full" --base "$model" --out-dir "$out/profile" \
      >>"$out/calibrate.log" 2>&1 || echo "calibrate (full) failed: $(tail -1 "$out/calibrate.log")"
    echo "calibrate (full): $((SECONDS - began)) s" | tee -a "$out/calibrate.log"
  fi
fi
if [[ $stages == *" capture "* ]]; then
  MODES="plain capture" "$here/../capture/capture_all.sh" "$out/holdout" \
    ${HOLDOUT:-hash-join transpose2d llama}
fi
if [[ $stages == *" replay "* ]]; then
  warm_up
  "$here/replay_all.sh" "$out" "$bin/faultline"
fi
if [[ $stages == *" recalibrate "* ]]; then
  [ -f "$out/profile.txt" ] || { echo "campaign: recalibrate: no calibrate stage in $out yet" >&2; exit 1; }
  [ "$(cat "$out/profile.txt")" = "$profile" ] ||
    { echo "campaign: recalibrate: $out was calibrated on $(cat "$out/profile.txt"), this is $profile" >&2; exit 1; }
  moment
fi

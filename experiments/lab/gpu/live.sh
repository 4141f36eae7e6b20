# Sourced by experiments/campaign.sh; defines functions only. The live study's recipes: the
# campaign that calibrates the instance it runs on, the replay grid, and the diagnoses made on the
# GPU machine (after `campaign.sh stage` here, .dev/ carried).
# shellcheck shell=bash

# experiments/campaign.sh live OUT_DIR [STAGE...]
# A live campaign on the GPU machine that brings its own calibration: instances of one GPU model
# differ by 20-30% in fault and copy costs (reports/h200-other-instance/), so every campaign first
# measures the instance it runs on, and its runs are simulated with that profile.
# After `campaign.sh stage` here (.dev/ carried). STAGE, in order, default all:
#   calibrate  OUT_DIR/machine.txt (GPU, UUID, driver, CPU), the warm-up replay (below: a
#              calibration made on the machine as it starts measured eviction 30% dearer than
#              one made minutes later, live/data/h100-a069ff39/README.md), then the per-machine
#              calibration, `faultline calibrate --from MODEL --moments 1` (half a minute:
#              what differs between instances, the fault path fitted from the shipped one's), as
#              PROFILE-at1, and the campaign's profile PROFILE fitted from it, into
#              OUT_DIR/profile/{calibration,gpus,links}/PROFILE*.json, PROFILE = h200-UUID8 (the
#              GPU's name and the first 8 hex digits of its UUID: the instance), timed in
#              OUT_DIR/calibrate.log; with FULL=1 also the full calibration as PROFILE-full
#              (about 3 minutes)
#   capture    HOLDOUT programs (default: hash-join transpose2d llama) captured by
#              `campaign.sh capture` into OUT_DIR/holdout/
#   replay     one untimed warm-up replay into OUT_DIR/warm-up/ unless made already (the first
#              replay on a freshly started machine ran 30% slower: live/data/h100-vm-warmup/), then
#              `campaign.sh replay OUT_DIR` (TRACES, POLICIES, BUDGETS, REPEATS, STOP_AFTER,
#              TRACE_DIR as there); the bytes each way count only in runs that drain CUPTI
#              (live/data/bytes-back/): make them apart, DRAIN=1 `campaign.sh replay
#              OUT_DIR-drained`, a campaign of their own whose times are not compared
#   recalibrate another per-machine calibration, PROFILE-atN, and PROFILE refitted from all of
#              them (`calibrate --refit AT1 --combine AT2 ...`: each time their median, the
#              eviction samples pooled). An instance's costs move within minutes (eviction
#              between two levels, the swap, the kernel overhead), so one calibration before
#              the runs prices the moment it met: on H200 9bc851db six calibrations over 14
#              minutes each priced its runs 4.1-8.9% off (median |error|; max 11.7-21.4%), all
#              six combined 5.2% (12.2%) (live/data/h200-9bc851db-drift/). Run it after the
#              replays, or between passes.
# Bring OUT_DIR back as one tarball (the device tool returns 8 files); here
# `campaign.sh manifest ... --gpu-profile profile/gpus/PROFILE.json` names the instance's
# profile, which `experiments/live/fidelity.py report` then simulates with.
sub_live() (
  set -u +e -o pipefail
  out=$(realpath -m "${1:?usage: campaign.sh live OUT_DIR [calibrate] [capture] [replay] [recalibrate]}")
  shift
  stages=" ${*:-calibrate capture replay recalibrate} "
  staged
  mkdir -p "$out"
  warm_up() {
    [ -d "$out/warm-up" ] && return
    TRACES=resnet50 POLICIES=oracle BUDGETS=0.75 TRACE_DIR=traces/real \
      sub_replay "$out/warm-up" "$bin/faultline" >"$out/warm-up.log" 2>&1
  }

  # One per-machine calibration now, PROFILE-atN, then PROFILE fitted from every one made so far
  # (the median over them: this recipe's moments are its own, one measurement each).
  moment() {
    local at=("$out/profile/calibration/$profile-at"*.json) began=$SECONDS
    [ -f "${at[0]}" ] || at=()
    local name=$profile-at$((${#at[@]} + 1))
    "$bin/faultline" calibrate --name "$name" --from "$model" --moments 1 --out-dir "$out/profile" \
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
    machine_txt >"$out/machine.txt"
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
    MODES="plain capture" sub_capture "$out/holdout" ${HOLDOUT:-hash-join transpose2d llama}
  fi
  if [[ $stages == *" replay "* ]]; then
    warm_up
    sub_replay "$out" "$bin/faultline"
  fi
  if [[ $stages == *" recalibrate "* ]]; then
    [ -f "$out/profile.txt" ] || { echo "campaign: recalibrate: no calibrate stage in $out yet" >&2; exit 1; }
    [ "$(cat "$out/profile.txt")" = "$profile" ] ||
      { echo "campaign: recalibrate: $out was calibrated on $(cat "$out/profile.txt"), this is $profile" >&2; exit 1; }
    moment
  fi
)

# experiments/campaign.sh replay OUT_DIR [FAULTLINE_BIN]
# Replays shipped traces on the GPU machine with `faultline replay` for each policy and budget,
# writing one result per run into OUT_DIR/TRACE-POLICY-BUDGET.json. Each point is a run config,
# OUT_DIR/configs/POLICY-BUDGET.json, that `faultline sim --config` takes as it is: one
# experiment file drives both backends. FAULTLINE_BIN defaults to build/faultline.
# TRACES, POLICIES and BUDGETS (space-separated) choose the grid (default: every trace in
# TRACE_DIR, default traces/real; the four policies of the fidelity report; 100%, 75% and 50%);
# libfaultline_live.so must sit beside the binary. A run that cannot hold its budget (a kernel
# needing more 2 MB chunks than the budget) fails with that message in
# OUT_DIR/TRACE-POLICY-BUDGET.err and the others go on.
# With STOP_AFTER=SECONDS no run starts once that much time has passed since this began (the GPU
# machine's commands have a time limit); runs whose result exists already are skipped, so a
# second call goes on where the first stopped. With REPEATS=N every run is made N times, one whole
# pass of the grid after another (repeat R > 1 writes TRACE-POLICY-BUDGET.rR.json); the report
# takes the median. PER_KERNEL=1 adds a row per kernel (`replay --per-kernel`), CALL_LOG=1 a CSV
# of every migration call beside each result (`replay --call-log`,
# TRACE-POLICY-BUDGET.calls.csv; read by `experiments/live/diagnose.py call-log`). DRAIN=1 drains
# CUPTI after every kernel (`replay --drain-counters`): every byte counted, the time not
# comparable, so such runs go into a campaign of their own (experiments/live/data/bytes-back/).
# COUNTERS=1 turns CUPTI's unified-memory counters on (`replay --counters`: the bytes each way
# and the fault records in the results); they slow the fault path, which the program and the
# calibration run without, so a timed campaign leaves them off.
# Brought back here as experiments/live/data/CAMPAIGN/, the folder gets its manifest (the .err
# files become its refusals) from `campaign.sh manifest`.
sub_replay() (
  set -u +e +o pipefail
  SECONDS=0
  out=${1:?usage: campaign.sh replay OUT_DIR [FAULTLINE_BIN]}
  bin=${2:-build/faultline}
  # A binary staged by `campaign.sh stage` finds the host libraries the machine lacks beside it.
  if [ -d "$(dirname "$bin")/lib" ]; then
    LD_LIBRARY_PATH=$(realpath "$(dirname "$bin")/lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export LD_LIBRARY_PATH
  fi
  mkdir -p "$out/configs"
  dir=${TRACE_DIR:-traces/real}
  all=$(ls "$dir"/*.fltrace | xargs -n1 basename | sed 's/\.fltrace$//')
  drain=$([ "${DRAIN:-0}" = 1 ] && echo --drain-counters --counters)
  [ "${COUNTERS:-0}" = 1 ] && [ -z "$drain" ] && drain=--counters
  for r in $(seq 1 "${REPEATS:-1}"); do
    suffix=$([ "$r" = 1 ] || echo ".r$r")
    for t in ${TRACES:-$all}; do
      for p in ${POLICIES:-ondemand deepum pump oracle}; do
        for b in ${BUDGETS:-1.0 0.75 0.5}; do
          name="$out/$t-$p-$b$suffix"
          [ -f "$name.json" ] && continue
          [ "$r" != 1 ] && [ -f "$out/$t-$p-$b.err" ] && continue # refused: once is enough
          if [ -n "${STOP_AFTER:-}" ] && [ "$SECONDS" -ge "$STOP_AFTER" ]; then
            echo "$t $p $b$suffix not started: STOP_AFTER reached"
            continue
          fi
          config="$out/configs/$p-$b.json"
          [ -f "$config" ] || printf '{"description": "%s at %s of the footprint, as faultline replay keeps it", "capacity": {"fraction_of_footprint": %s, "mode": "budget"}, "policy": {"name": "%s"}}\n' \
            "$p" "$b" "$b" "$p" >"$config"
          if timeout 300 "$bin" replay --trace "$dir/$t.fltrace" --config "$config" \
            ${PER_KERNEL:+--per-kernel} ${CALL_LOG:+--call-log "$name.calls.csv"} $drain --out "$name.json" \
            2>"$name.err"; then
            rm -f "$name.err"
            echo "$t $p $b$suffix done"
          else
            echo "$t $p $b$suffix failed: $(tail -1 "$name.err")"
          fi
        done
      done
    done
  done
)

# experiments/campaign.sh any-shape OUT_DIR
# Issue 21, items 1 and 2, on the GPU machine (after `campaign.sh stage` here): the live replay
# on programs whose allocations are not multiples of 64 KB and at budgets below one kernel's
# working set, which it used to crash on or refuse.
#   1. host_stencil --odd (rows of 4097 floats: no array a multiple of 4 KB) captured, then
#      replayed under ondemand and pump at 100% and 50% (each of its kernels touches all three
#      arrays, so at 50% every kernel runs in parts);
#   2. the shipped stream and pagerank traces at 50%, where a kernel needs more chunks than the
#      budget (refused before: experiments/live/reports/h200/fidelity.md), under ondemand and pump.
# Writes OUT_DIR/odd.fltrace and OUT_DIR/TRACE-POLICY-BUDGET.json (.err where one failed), the
# machine in OUT_DIR/machine.txt. Bring OUT_DIR back as one tarball (the device tool returns 8
# files); here each result is simulated beside the live one by
# `experiments/live/fidelity.py report`.
sub_any_shape() (
  set -u +e -o pipefail
  out=$(realpath -m "${1:?usage: campaign.sh any-shape OUT_DIR}")
  staged
  mkdir -p "$out"
  {
    git rev-parse HEAD 2>/dev/null || true
    nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  } >"$out/machine.txt" 2>&1

  replay() { # TRACE_PATH NAME POLICY BUDGET
    local name="$out/$2-$3-$4"
    if timeout 300 "$bin/faultline" replay --trace "$1" --policy "$3" --budget "$4" \
      --out "$name.json" 2>"$name.err"; then
      rm -f "$name.err"
      echo "$2 $3 $4: done"
    else
      echo "$2 $3 $4: failed: $(tail -n 1 "$name.err")"
    fi
  }

  "$bin/faultline" capture --range profiler --out "$out/odd.fltrace" \
    -- "$bin/host_stencil" --mib 1024 --steps 3 --odd >"$out/capture.log" 2>&1 ||
    echo "capture of host_stencil --odd failed: $(tail -n 1 "$out/capture.log")"
  for p in ondemand pump; do
    for b in 1.0 0.5; do
      [ -f "$out/odd.fltrace" ] && replay "$out/odd.fltrace" host-stencil-odd "$p" "$b"
    done
    for t in stream pagerank; do replay "traces/real/$t.fltrace" "$t" "$p" 0.5; done
  done
)

# experiments/campaign.sh diag-deepum OUT_DIR [TRACE] [BUDGET]
# Issue 21 diagnosis: where live DeepUM's time goes on multi-step traces (2x the simulator's on
# the DNN traces of h200-99f28b56). One trace (default resnet50) at one budget (default 0.75)
# with per-kernel rows, under ondemand, DeepUM, and DeepUM with each of its three mechanisms off.
sub_diag_deepum() (
  set -u +e +o pipefail
  out=${1:?usage: campaign.sh diag-deepum OUT_DIR [TRACE] [BUDGET]}
  trace=${2:-resnet50} budget=${3:-0.75}
  bin=$PWD/.dev
  mkdir -p "$out/configs"
  variant() { # NAME POLICY PARAMS_JSON
    printf '{"capacity": {"fraction_of_footprint": %s, "mode": "budget"}, "policy": {"name": "%s", "params": %s}}\n' \
      "$budget" "$2" "$3" >"$out/configs/$1.json"
    if timeout 300 "$bin/faultline" replay --trace "traces/real/$trace.fltrace" --config "$out/configs/$1.json" \
      --per-kernel --out "$out/$trace-$1-$budget.json" 2>"$out/$1.err"; then
      rm -f "$out/$1.err"; echo "$1 done"
    else echo "$1 failed: $(tail -1 "$out/$1.err")"; fi
  }
  variant ondemand ondemand '{}'
  variant deepum deepum '{}'
  variant deepum-no-discard deepum '{"discard_freed": false}'
  variant deepum-no-pre-evict deepum '{"pre_evict": false}'
  variant deepum-no-prefetch deepum '{"prefetch": false}'
)

# experiments/campaign.sh diag-prefetch OUT_DIR [BIN_DIR]
# Issue 21 item 3 diagnosis: why pump and the oracle run faster in the simulator than live.
# The migration-mix probe (the calls in the orders the policies issue them, against the
# calibration's calls of one kind in a row), then per-kernel replays (`campaign.sh replay`) into
# OUT_DIR/runs whose rows count each kernel's migration calls and their CPU time
# (`experiments/live/diagnose.py calls`). TRACES, POLICIES and BUDGETS as `replay` (defaults:
# resnet50 gpt2-small bert-large; pump oracle ondemand; 0.75 0.5); BIN_DIR holds faultline,
# migration_mix and libfaultline_live.so (default .dev, staged by `campaign.sh stage`).
sub_diag_prefetch() (
  set -u +e +o pipefail
  out=${1:?usage: campaign.sh diag-prefetch OUT_DIR [BIN_DIR]}
  bin=${2:-.dev}
  mkdir -p "$out"
  nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader >"$out/machine.txt"
  "$bin/migration_mix" "$bin/libfaultline_live.so" 256 5 >"$out/migration_mix.txt" 2>&1
  cat "$out/migration_mix.txt"
  TRACES=${TRACES:-"resnet50 gpt2-small bert-large"} POLICIES=${POLICIES:-"pump oracle ondemand"} \
    BUDGETS=${BUDGETS:-"0.75 0.5"} PER_KERNEL=1 sub_replay "$out/runs" "$bin/faultline"
)

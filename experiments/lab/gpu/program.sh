# Sourced by experiments/campaign.sh; defines functions only. The program study's recipe: the
# policies run inside the real programs (`faultline run`), beside the same programs captured and
# replayed, so that the simulator and the replay are judged against the program itself.
# shellcheck shell=bash

# experiments/campaign.sh program OUT_DIR [PROGRAM...]
# On the GPU machine, after `campaign.sh stage`. PROGRAM: resnet50 (a shipped DNN, batch 32), dlrm
# (a recommender with 1 GB of embedding tables, this study's hold-out, never tuned on), tiles (a
# CUDA program whose data the host initialises and feeds, tile by tile, each kernel one tile: the
# hold-out CUDA program), stencil (host_stencil: every kernel names all its data, so a budget
# below the footprint is refused), and the fault-path study's hold-out programs, never tuned on:
# diffusion (a denoising-diffusion U-Net), recsys (a two-tower recommender, 4 GB of embedding
# tables with sparse gradients) and longctx (a decoder over 8k-token sequences); the sixth
# hold-out set, written to judge the change set five led to: gan (a generator and a discriminator
# trained in turn), video (3D convolutions over clips) and ssm (a selective state-space model
# in plain PyTorch); the seventh, written to judge the change set six led to: pointcloud (a
# DGCNN over point clouds), speech (a Conformer with CTC) and field (a hashed radiance field);
# default the first four. Each runs STEPS measured steps (default 10) after
# one warm-up step. In order, each stage skipping what exists (so a second call goes on where the
# first stopped; STOP_AFTER=SECONDS starts nothing after that long):
#   OUT_DIR/machine.txt, and the instance's quick calibration (profile/, `calibrate --from`)
#   PROGRAM.plain[.rR].log      the program alone (REPEATS, default 2): its own step times
#   PROGRAM.fltrace             `faultline capture` of it (the whole program: --range all); with
#                               CAPTURES=DIR, DIR/PROGRAM.fltrace and its capture log are taken
#                               instead (an earlier campaign's, to spare the device time) where
#                               the capture has STEPS measured steps
#   PROGRAM-POLICY-BUDGET.kernels.json   `faultline run --per-kernel` (each operation's GPU time,
#                               CUPTI's records; with PER_KERNEL_COUNTERS=1 its faults too, which
#                               slow every fault) for PER_KERNEL_POLICIES (default none)
#                               x PER_KERNEL_BUDGETS (default 0.75), once, before the grid
#   PROGRAM-POLICY-BUDGET[.rR].json   `faultline run --trace PROGRAM.fltrace` for POLICIES
#                               (default ondemand schedule pump deepum oracle) x BUDGETS (default
#                               1.0 0.5 0.75) x REPEATS, each stopped after RUN_TIMEOUT seconds
#                               (default 300); failures leave the message in .err
#   replay/PROGRAM-POLICY-BUDGET[.rR].json   `faultline replay` of the capture, the same grid
#                               but REPLAY_REPEATS (default 1) and REPLAY_BUDGETS (default BUDGETS);
#                               none with REPLAYS=0
# `experiments/live/fidelity.py program CAMPAIGN` (and `kernels CAMPAIGN`) report the folder once
# it is under live/data/.
sub_program() (
  set -u +e -o pipefail
  SECONDS=0
  out=$(realpath -m "${1:?usage: campaign.sh program OUT_DIR [PROGRAM...]}")
  shift
  programs=${*:-resnet50 dlrm tiles stencil}
  staged
  mkdir -p "$out/replay"
  steps=${STEPS:-10}
  repeats=${REPEATS:-2}
  late() { [ -n "${STOP_AFTER:-}" ] && [ "$SECONDS" -ge "$STOP_AFTER" ]; }
  declare -A cmd torch
  cmd[resnet50]="python3 $experiments/workloads.py train resnet50 --batch 32 --warmup 1 --steps $steps"
  cmd[dlrm]="python3 $experiments/workloads.py train dlrm --warmup 1 --steps $steps"
  cmd[diffusion]="python3 $experiments/workloads.py train diffusion --warmup 1 --steps $steps"
  cmd[recsys]="python3 $experiments/workloads.py train recsys --warmup 1 --steps $steps"
  cmd[longctx]="python3 $experiments/workloads.py train longctx --warmup 1 --steps $steps"
  cmd[gan]="python3 $experiments/workloads.py train gan --warmup 1 --steps $steps"
  cmd[video]="python3 $experiments/workloads.py train video --warmup 1 --steps $steps"
  cmd[ssm]="python3 $experiments/workloads.py train ssm --warmup 1 --steps $steps"
  cmd[pointcloud]="python3 $experiments/workloads.py train pointcloud --warmup 1 --steps $steps"
  cmd[speech]="python3 $experiments/workloads.py train speech --warmup 1 --steps $steps"
  cmd[field]="python3 $experiments/workloads.py train field --warmup 1 --steps $steps"
  cmd[stencil]="$bin/host_stencil --mib 2048 --steps $((steps + 1)) --sweeps 6"
  cmd[tiles]="$bin/tiles --mib 2048 --tiles 16 --steps $((steps + 1))"
  torch[resnet50]=--torch; torch[dlrm]=--torch; torch[diffusion]=--torch; torch[recsys]=--torch
  torch[longctx]=--torch; torch[gan]=--torch; torch[video]=--torch; torch[ssm]=--torch
  torch[pointcloud]=--torch; torch[speech]=--torch; torch[field]=--torch
  torch[stencil]=; torch[tiles]=

  if [ ! -f "$out/machine.txt" ]; then
    machine_txt >"$out/machine.txt"
    uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
    model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
    echo "$model-$uuid" >"$out/profile.txt"
    began=$SECONDS
    "$bin/faultline" calibrate --name "$model-$uuid" --from "$model" --out-dir "$out/profile" \
      >"$out/calibrate.log" 2>&1 || echo "calibrate failed: $(tail -1 "$out/calibrate.log")"
    echo "calibrate: $((SECONDS - began)) s" | tee -a "$out/calibrate.log"
  fi

  for p in $programs; do
    read -r -a c <<<"${cmd[$p]}"
    for r in $(seq 1 "$repeats"); do
      log="$out/$p.plain$([ "$r" = 1 ] || echo ".r$r").log"
      [ -f "$log" ] || late || "${c[@]}" >"$log" 2>&1 || echo "$p plain failed: $(tail -1 "$log")"
    done
    if [ ! -f "$out/$p.fltrace" ] && [ -n "${CAPTURES:-}" ] && [ -f "$CAPTURES/$p.fltrace" ]; then
      # A run of more steps than its capture stops at its first launch past the trace.
      have=$("$bin/faultline" trace dump "$CAPTURES/$p.fltrace" 2>/dev/null | head -1 |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["metadata"].get("measured_steps", ""))')
      if [ "$have" = "$steps" ]; then
        cp "$CAPTURES/$p.fltrace" "$CAPTURES/$p.capture.log" "$out/"
      else
        echo "$p: $CAPTURES/$p.fltrace has ${have:-no} measured steps, this campaign $steps: captured anew"
      fi
    fi
    if [ ! -f "$out/$p.fltrace" ] && ! late; then
      "$bin/faultline" capture ${torch[$p]} --meta workload="$p" --meta measured_steps="$steps" \
        --out "$out/$p.fltrace" -- "${c[@]}" >"$out/$p.capture.log" 2>&1 ||
        echo "$p capture failed: $(tail -1 "$out/$p.capture.log")"
    fi
  done

  # One `faultline run` of program P under policy POL at budget B into NAME.json (NAME.log; the
  # message in NAME.err when it fails); further arguments go to faultline run.
  run_one() { # NAME POL B P [ARG...]
    local name=$1 pol=$2 b=$3 p=$4
    shift 4
    read -r -a c <<<"${cmd[$p]}"
    if timeout "${RUN_TIMEOUT:-300}" "$bin/faultline" run "$@" --policy "$pol" --budget "$b" \
      --trace "$out/$p.fltrace" ${torch[$p]} --out "$name.json" -- "${c[@]}" >"$name.log" 2>&1; then
      echo "$(basename "$name"): $(grep -o '"steps_seconds": [0-9.]*' "$name.log" || true)"
    else
      tail -3 "$name.log" >"$name.err"
      rm -f "$name.json"
      echo "$(basename "$name") failed: $(tail -1 "$name.err")"
    fi
  }

  # Each operation's GPU time (and faults), for the per-kernel comparison with the simulator.
  counters=()
  [ "${PER_KERNEL_COUNTERS:-0}" = 1 ] && counters=(--um-counters)
  for b in ${PER_KERNEL_BUDGETS:-0.75}; do
    for pol in ${PER_KERNEL_POLICIES:-}; do
      for p in $programs; do
        name="$out/$p-$pol-$b.kernels"
        [ -f "$name.json" ] || [ -f "$name.err" ] || [ ! -f "$out/$p.fltrace" ] && continue
        late || run_one "$name" "$pol" "$b" "$p" --per-kernel "${counters[@]}"
      done
    done
  done

  # The grid, budgets 100% and 50% first (the headline), every program before the next policy.
  for r in $(seq 1 "$repeats"); do
    suffix=$([ "$r" = 1 ] || echo ".r$r")
    for b in ${BUDGETS:-1.0 0.5 0.75}; do
      for pol in ${POLICIES:-ondemand schedule pump deepum oracle}; do
        for p in $programs; do
          name="$out/$p-$pol-$b$suffix"
          [ -f "$name.json" ] || [ -f "$out/$p-$pol-$b.err" ] || [ ! -f "$out/$p.fltrace" ] && continue
          late || run_one "$name" "$pol" "$b" "$p"
        done
      done
    done
  done

  for p in $programs; do
    [ -f "$out/$p.fltrace" ] && [ "${REPLAYS:-1}" != 0 ] || continue
    late && break
    REPEATS=${REPLAY_REPEATS:-1} TRACES=$p TRACE_DIR=$out POLICIES="${POLICIES:-ondemand schedule pump deepum oracle}" \
      BUDGETS="${REPLAY_BUDGETS:-${BUDGETS:-1.0 0.5 0.75}}" STOP_AFTER=$(( ${STOP_AFTER:-100000} - SECONDS )) \
      sub_replay "$out/replay" "$bin/faultline"
  done
  echo "program campaign: $SECONDS s"
)

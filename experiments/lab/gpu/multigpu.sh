# Sourced by experiments/campaign.sh; defines functions only. The two-GPU recipes: HUVM's harvest
# live, a neighbour replaying on the second GPU, and HUVM's run of it with the pair's own profile.
# shellcheck shell=bash

# experiments/campaign.sh harvest OUT_DIR [FAULTLINE_BIN]
# HUVM's setup live on a two-GPU machine (nvidia-h200-x2): the harvester replays a trace on GPU 0
# under a residency budget while a neighbour job (a second trace, wholly resident) replays in a
# loop on GPU 1, whose spare memory the harvester may use up to --peer-budget. Four variants:
#   host       ondemand: the driver's FIFO budget eviction to the host
#   preevict   harvest, victims to the host, no look-ahead prefetch
#   peer       harvest, victims to GPU 1, no look-ahead prefetch
#   harvest    harvest with everything (victims to GPU 1, multi-path prefetch)
# FAULTLINE_BIN defaults to build/faultline. HARVESTERS (traces), BUDGETS, PEER_BUDGET, NEIGHBOUR
# (a trace, or "none": GPU 1 idle) and REPEATS (default 1; the variants take turns, so a drift in
# the machine falls on all) choose the runs; PER_KERNEL=1 adds a row per kernel. The harvester
# runs with CUPTI's counters on (`replay --counters`): the report compares the bytes each way and
# between the GPUs. One result per
# run in OUT_DIR/TRACE-VARIANT-BUDGET.json, repeats after the first in .r2.json, .r3.json, ...
# (.err when it failed); the neighbour's last run in OUT_DIR/neighbour.json and how many times it
# ran in OUT_DIR/neighbour.runs. Brought back here as experiments/multigpu/data/CAMPAIGN/, the
# folder gets its manifest from `campaign.sh manifest`.
sub_harvest() (
  set -u +e +o pipefail
  out=${1:?usage: campaign.sh harvest OUT_DIR [FAULTLINE_BIN]}
  bin=${2:-build/faultline}
  peer=${PEER_BUDGET:-4G}
  neighbour=${NEIGHBOUR:-resnet50}
  mkdir -p "$out"
  touch "$out/.running"
  [ "$neighbour" = none ] && rm -f "$out/.running"
  (
    while [ -f "$out/.running" ]; do
      "$bin" replay --trace "traces/real/$neighbour.fltrace" --device 1 --budget 1.0 \
        --out "$out/neighbour.json" 2>>"$out/neighbour.err" || break
      echo run >>"$out/neighbour.runs"
    done
  ) &
  sleep 5 # the neighbour has its memory before the harvester starts
  extra=()
  [ "${PER_KERNEL:-0}" = 1 ] && extra=(--per-kernel)
  for t in ${HARVESTERS:-gpt2-small bert-large}; do
    for b in ${BUDGETS:-0.5}; do
      for r in $(seq 1 "${REPEATS:-1}"); do
        for v in host preevict peer harvest; do
          case $v in
          host) p=ondemand params='{}' ;;
          preevict) p=harvest params='{"evict_to_peer": false, "multi_path_prefetch": false}' ;;
          peer) p=harvest params='{"multi_path_prefetch": false}' ;;
          harvest) p=harvest params='{}' ;;
          esac
          name="$out/$t-$v-$b$([ "$r" -gt 1 ] && echo ".r$r")"
          if timeout 300 "$bin" replay --trace "traces/real/$t.fltrace" --device 0 --budget "$b" \
            --policy "$p" --params "$params" --peer-budget "$peer" --counters ${extra[@]+"${extra[@]}"} --out "$name.json" \
            2>"$name.err"; then
            rm -f "$name.err"
            echo "$t $v $b (repeat $r) done"
          else
            echo "$t $v $b (repeat $r) failed: $(tail -1 "$name.err")"
          fi
        done
      done
    done
  done
  rm -f "$out/.running"
  wait
)

# experiments/campaign.sh harvest-huvm OUT [FAULTLINE_BIN]
# On a two-GPU machine (issue 27): HUVM's variants live, and the pair's own profile to simulate
# them with. First `faultline calibrate --name GPUx2 --base GPU` (GPU = h100 or h200, from
# nvidia-smi; OUT/cal/configs; CUPTI's counters on, as in `harvest`; CALIBRATE=0 skips it, about
# 3 minutes), then `harvest`'s four variants (host, preevict, peer, harvest) of GPT-2 small and
# BERT-large at a 50% budget on
# GPU 0, GPU 1 offering 4 GiB, twice: with a ResNet-50 neighbour looping on GPU 1 (OUT/busy) and
# with GPU 1 idle (OUT/idle); what the machine is in OUT/machine.txt. About 8 minutes in all with
# REPEATS=1; `harvest`'s REPEATS and PER_KERNEL pass through. SETS="busy" or "idle" runs one of
# the two (the device tool allows 10 minutes a call). FAULTLINE_BIN defaults to build/faultline.
# The device tool brings back 8 files at most, 2 folders deep: tar OUT into one file there.
# Then, here, the profile goes into configs/ and each of the two folders becomes
# experiments/multigpu/data/CAMPAIGN/ (`campaign.sh manifest ... --gpu-profile GPUx2`):
# `experiments/live/fidelity.py two-gpu CAMPAIGN --write-reports` (each run beside its
# simulation), then `experiments/papers/run.py huvm-live CAMPAIGN... --write-reports`.
sub_harvest_huvm() (
  set -euo pipefail
  out=$(realpath -m "${1:?usage: campaign.sh harvest-huvm OUT [FAULTLINE_BIN]}")
  bin=$(realpath -m "${2:-build/faultline}")
  cd "$experiments/.."
  mkdir -p "$out"
  {
    git rev-parse HEAD 2>/dev/null || true
    nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
    nvidia-smi topo -m
  } >"$out/machine.txt" 2>&1 || true
  if [ "${CALIBRATE:-1}" != 0 ]; then
    case $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1) in
    *H100*) base=h100 ;;
    *) base=h200 ;;
    esac
    mkdir -p "$out/cal"
    # With CUPTI's counters on, as the harvester's replays run (they count the bytes).
    "$bin" calibrate --name "${base}x2" --base "$base" --cupti-counters --out-dir "$out/cal/configs" \
      >"$out/cal/log" 2>&1
  fi
  for set in ${SETS:-busy idle}; do
    case $set in
    busy) neighbour=resnet50 ;;
    idle) neighbour=none ;;
    *) echo "harvest-huvm: SETS names busy and idle, not '$set'" >&2 && exit 2 ;;
    esac
    NEIGHBOUR=$neighbour HARVESTERS="gpt2-small bert-large" BUDGETS=0.5 PEER_BUDGET=4G \
      sub_harvest "$out/$set" "$bin"
  done
)

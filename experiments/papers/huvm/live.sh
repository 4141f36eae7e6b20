#!/usr/bin/env bash
# On a two-GPU machine (issue 27): HUVM's variants live, and the pair's own profile to simulate
# them with. First `faultline calibrate --name GPUx2 --base GPU` (GPU = h100 or h200, from
# nvidia-smi; OUT/cal/configs; CALIBRATE=0 skips it, about 3 minutes), then live_harvest.sh's four
# variants (host, preevict, peer, harvest) of GPT-2 small and BERT-large at a 50% budget on
# GPU 0, GPU 1 offering 4 GiB, twice: with a ResNet-50 neighbour looping on GPU 1 (OUT/busy) and
# with GPU 1 idle (OUT/idle); what the machine is in OUT/machine.txt. About 8 minutes in all with
# REPEATS=1; live_harvest.sh's REPEATS and PER_KERNEL pass through. SETS="busy" or "idle" runs one
# of the two (the device tool allows 10 minutes a call).
#   experiments/papers/huvm/live.sh OUT [FAULTLINE_BIN]
# The device tool brings back 8 files at most, 2 folders deep: tar OUT into one file there.
# Then, here, the profile goes into configs/ and each of the two folders becomes
# experiments/multigpu/data/CAMPAIGN/ (experiments/make_manifest.py --gpu-profile GPUx2):
#   experiments/multigpu/fidelity.sh CAMPAIGN --write-reports   (each run beside its simulation)
#   .venv/bin/python experiments/papers/huvm/live_report.py CAMPAIGN... --write-reports
set -euo pipefail
out=$(realpath -m "${1:?usage: live.sh OUT [FAULTLINE_BIN]}")
bin=$(realpath -m "${2:-build/faultline}")
cd "$(dirname "$0")/../../.."
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
  "$bin" calibrate --name "${base}x2" --base "$base" --out-dir "$out/cal/configs" \
    >"$out/cal/log" 2>&1
fi
for set in ${SETS:-busy idle}; do
  case $set in
  busy) neighbour=resnet50 ;;
  idle) neighbour=none ;;
  *) echo "live.sh: SETS names busy and idle, not '$set'" >&2 && exit 2 ;;
  esac
  NEIGHBOUR=$neighbour HARVESTERS="gpt2-small bert-large" BUDGETS=0.5 PEER_BUDGET=4G \
    experiments/multigpu/live_harvest.sh "$out/$set" "$bin"
done

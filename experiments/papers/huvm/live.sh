#!/usr/bin/env bash
# On a two-GPU machine (nvidia-h200-x2; issue 27): the live runs that settle which HUVM variant
# wins there, i.e. what moving data between the GPUs costs under load. live_harvest.sh's four
# variants (host, preevict, peer, harvest) of GPT-2 small and BERT-large at a 50% budget on GPU 0,
# GPU 1 offering 4 GiB, twice: with a ResNet-50 neighbour looping on GPU 1 (OUT/busy) and with
# GPU 1 idle (OUT/idle); what the machine is in OUT/machine.txt.
#   experiments/papers/huvm/live.sh OUT [FAULTLINE_BIN]
# Then, here, for each of the two folders brought back as experiments/multigpu/data/CAMPAIGN/
# (experiments/make_manifest.py writes its manifest):
#   .venv/bin/python experiments/papers/huvm/peer_cost.py experiments/multigpu/data/CAMPAIGN \
#     out/papers/huvm/peer-cost-CAMPAIGN          (the cost under load, the variant it picks)
#   experiments/multigpu/fidelity.sh CAMPAIGN     (each run beside its simulation)
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
HARVESTERS="gpt2-small bert-large" BUDGETS=0.5 PEER_BUDGET=4G \
  experiments/multigpu/live_harvest.sh "$out/busy" "$bin"
NEIGHBOUR=none HARVESTERS="gpt2-small bert-large" BUDGETS=0.5 PEER_BUDGET=4G \
  experiments/multigpu/live_harvest.sh "$out/idle" "$bin"

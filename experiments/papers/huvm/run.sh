#!/usr/bin/env bash
# HUVM (Choi et al., ATC'22) in the simulator on HUVM's machine (p3.8xlarge): the consolidation
# scenarios, the spare-memory, prefetch-size and peer-migration-cost sweeps and the ablation
# (configs/sweeps/huvm-*.json), then report.py's tables, figures (ours beside the paper's) and
# claims, and peer_cost.py's reading of the committed two-GPU live campaigns
# (experiments/multigpu/data/h200x2-*), in out/papers/huvm/; with --write-reports in
# experiments/papers/huvm/reports/, the claims in experiments/papers/huvm/claims.json and the
# results section of its README.
#   experiments/papers/huvm/run.sh [--write-reports] [--jobs N]    (the sweeps on N threads)
set -euo pipefail
cd "$(dirname "$0")/../../.."
paper=huvm
source experiments/papers/preamble.sh
extra=()
[ "$write_reports" = 1 ] && extra=(--claims "$claims" --readme "$here/README.md")
for s in consolidation-one consolidation-two spare prefetch ablation peer-cost; do
  build/faultline sweep "configs/sweeps/huvm-$s.json" "$@"
done
"$python" "$here/report.py" out/sweeps "$out" "${extra[@]}"
for c in h200x2-harvest h200x2-harvest-idle-neighbour; do
  "$python" "$here/peer_cost.py" "experiments/multigpu/data/$c" "$out/peer-cost-$c"
done

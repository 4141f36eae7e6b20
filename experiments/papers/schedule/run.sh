#!/usr/bin/env bash
# The schedule policy (policies/schedule/, this project's own) against the seeds: every shipped
# real trace at 100/75/50/33% of its footprint, 10 training steps, under ondemand, deepum, pump,
# schedule, the oracle and the oracle with the freed-block discard (configs/sweeps/schedule.json),
# then report.py: the table, the targets, figures, summary.json and claims.json in
# out/papers/schedule/, or with --write-reports in experiments/papers/schedule/reports/ and the
# claims in experiments/papers/schedule/claims.json. The live rows come from the campaign folders
# under experiments/live/data/ that hold `iter10/` (10 steps replayed at 50%).
#   experiments/papers/schedule/run.sh [--write-reports] [--jobs N]    (the sweep on N threads)
set -euo pipefail
cd "$(dirname "$0")/../../.."
paper=schedule
source experiments/papers/preamble.sh
build/faultline sweep configs/sweeps/schedule.json "$@"
exec "$python" "$here/report.py" out/sweeps/schedule/results.json "$out" --claims "$claims"

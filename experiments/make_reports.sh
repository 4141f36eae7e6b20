#!/usr/bin/env bash
# Regenerates every committed report that needs no GPU, from the committed data and the build:
# the fidelity reports and the calibration study (live/, multigpu/), the papers' evaluations
# (papers/run.py), the allocator study, the capture checks and the policy comparison. The
# entries write into out/ by default; only this (or an entry's --write-reports, --write) writes
# into STUDY/reports/, as goldens are rewritten only on request. On 2 cores: live about three
# hours (85 campaigns' fidelity reports, then the calibration study, its pooled costs 30 minutes
# of it), papers and compare about an hour with their sweeps, the rest minutes.
# `git diff experiments configs` shows what moved.
#   experiments/make_reports.sh [STUDY...]     STUDY: live multigpu papers alloc capture compare
set -euo pipefail
cd "$(dirname "$0")/.."
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
for study in ${@:-live multigpu papers alloc capture compare}; do
  case $study in
  live)
    # Every campaign the results read, and the older reports the READMEs cite.
    for c in $("$python" experiments/live/results.py --list) h200 h200-other-instance h100 \
      h100-sanitize-traces h200-papers h200-e4b970cd-drained; do
      "$python" experiments/live/fidelity.py report "$c" --write-reports
    done
    # Campaigns that ran the policies inside the programs (campaign.sh program): the simulator
    # and the replay against the program itself.
    for d in experiments/live/data/*/; do
      compgen -G "$d*.plain.log" >/dev/null &&
        "$python" experiments/live/fidelity.py program "$(basename "$d")" --write-reports
    done
    # Campaigns made in passes with a calibration between them: how far the costs moved.
    for c in h200-9bc851db-drift h200-a74c9e80-drift; do
      "$python" experiments/live/calibration.py drift "experiments/live/data/$c" \
        "experiments/live/reports/$c/drift" >/dev/null
    done
    # Campaigns whose runs carry eviction call logs: each run at the eviction price it met.
    for c in h200-153bc426 h200-153bc426-holdout3 h200-153bc426-holdout2 h200-a74c9e80-drift; do
      "$python" experiments/live/diagnose.py priced "experiments/live/data/$c" \
        "experiments/live/reports/$c/run-priced" >/dev/null
    done
    # The calibrated cost that carries each miss lying in its calibration (read by results.py),
    # the costs' spread within one instance and across, and one cost pooled over the instances
    # (about 30 minutes).
    "$python" experiments/live/calibration.py cost-swap --write
    "$python" experiments/live/calibration.py noise --write >/dev/null
    # Which of the host's two states each calibration met (seconds).
    "$python" experiments/live/calibration.py states --write >/dev/null
    # What an eviction costs inside the programs against the calibration's prices (seconds).
    "$python" experiments/live/calibration.py evictions --write >/dev/null
    "$python" experiments/live/calibration.py pooled-cost --cost swap_extra_ns \
      --policies pump,oracle,deepum --write >/dev/null
    # strided on the H100s at the H200's measured price of an evicted run (no H100 measured it)
    "$python" experiments/live/calibration.py pooled-cost --cost eviction_run_ns --value 1721 \
      --gpu h100 --traces strided --write >/dev/null
    # One profile for any instance: the median over the calibrated ones (configs/gpus/GPU-median),
    # each campaign simulated with the other instances' median (read by results.py; 8 minutes).
    for gpu in h200 h100; do
      "$python" experiments/live/calibration.py median-profile --gpu "$gpu" --write --evaluate \
        >/dev/null
    done
    "$python" experiments/live/results.py --write ;;
  multigpu)
    # Every two-GPU campaign with a committed report, then HUVM's live headline from them.
    for c in $(ls experiments/multigpu/reports); do
      "$python" experiments/live/fidelity.py two-gpu "$c" --write-reports
    done
    "$python" experiments/papers/run.py huvm-live --write-reports >/dev/null ;;
  papers) "$python" experiments/papers/run.py --write-reports ;;
  alloc) "$python" experiments/alloc/study.py --write-reports ;;
  capture)
    "$python" experiments/capture/check.py overhead experiments/capture/data/h100-runs-[a-f] \
      experiments/capture/data/h200-runs-g experiments/capture/data/h100-runs-h \
      experiments/capture/data/h100-runs-i experiments/capture/data/h100-runs-j \
      >experiments/capture/reports/overhead.json
    # The shipped DNN traces simulated at their whole footprint against the programs' own steps.
    "$python" experiments/capture/check.py timeline --out experiments/capture/reports/timeline.md \
      --runs experiments/capture/data/h100-runs-j --runs experiments/capture/data/h100-runs-i --gaps \
      traces/real/{resnet50,gpt2-small,gpt2-medium,bert-large,t5-base,moe,graphsage,pagerank}.fltrace \
      experiments/capture/data/h100-runs-j/holdout/llama.fltrace \
      >/dev/null ;;
  compare) "$python" experiments/compare/compare.py --write-reports ;;
  *) echo "make_reports: unknown study $study" >&2; exit 2 ;;
  esac
done

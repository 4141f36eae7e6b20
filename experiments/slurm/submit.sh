#!/usr/bin/env bash
# Submits a sweep to Slurm: TASKS array tasks, each a shard, then the merge once all succeeded
# (experiments/slurm/sweep.sbatch). Prints the two job ids. Run from the repository root.
#   experiments/slurm/submit.sh SWEEP_FILE TASKS [sbatch options for both jobs...]
set -euo pipefail
sweep=${1:?usage: submit.sh SWEEP_FILE TASKS [SBATCH_OPTIONS...]}
tasks=${2:?usage: submit.sh SWEEP_FILE TASKS [SBATCH_OPTIONS...]}
shift 2
here=$(dirname "$0")
array=$(sbatch --parsable "$@" --array="0-$((tasks - 1))" "$here/sweep.sbatch" "$sweep")
merge=$(sbatch --parsable "$@" --dependency="afterok:${array%%;*}" --job-name=faultline-merge \
  "$here/sweep.sbatch" "$sweep" --merge)
echo "array ${array%%;*}, merge ${merge%%;*}"

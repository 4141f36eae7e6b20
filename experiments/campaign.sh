#!/usr/bin/env bash
# How do I measure a GPU? Everything that runs on the GPU machine, one command: each campaign's
# recipe by name, and the two steps here around a device call (stage the build before, write
# the manifest of what came back after).
#   experiments/campaign.sh SUBCOMMAND ARGS...      (campaign.sh --help; SUBCOMMAND --help)
# Run from the repository root: on the GPU machine the repository copy is the working tree with
# .dev/ carried (`campaign.sh stage` here first), python3 the machine's own. The recipes are
# shell functions, one file per study in experiments/lab/gpu/ (sourced here; each runs in a
# subshell with its own shell options), and call each other by name: `live` runs `replay` and
# `capture`, `harvest-huvm` runs `harvest`. The programs they run are experiments/workloads.py;
# what came back is read by experiments/live/fidelity.py, experiments/capture/check.py and the
# studies' reports.
set -u
experiments=$(dirname "${BASH_SOURCE[0]}")
entry=$0
# shellcheck source=lab/gpu/common.sh
. "$experiments/lab/gpu/common.sh"
# shellcheck source=lab/gpu/live.sh
. "$experiments/lab/gpu/live.sh"
# shellcheck source=lab/gpu/capture.sh
. "$experiments/lab/gpu/capture.sh"
# shellcheck source=lab/gpu/multigpu.sh
. "$experiments/lab/gpu/multigpu.sh"
# shellcheck source=lab/gpu/alloc.sh
. "$experiments/lab/gpu/alloc.sh"
# shellcheck source=lab/gpu/program.sh
. "$experiments/lab/gpu/program.sh"

# SUBCOMMAND, what it does in one line; a line "-- TITLE" starts a group. Each SUBCOMMAND is
# the function sub_SUBCOMMAND ('-' as '_'), its usage the comment block above it.
subcommands=(
  "-- here, around a device call"
  "stage|the build the GPU machine lacks, staged into .dev/"
  "manifest|a campaign brought back: its manifest.json (.err files as refusals)"
  "-- the fidelity study (live/)"
  "live|a campaign: calibrate the instance, capture, replay, calibrate again"
  "replay|faultline replay of traces x policies x budgets, a result per run"
  "any-shape|odd allocation sizes and kernels larger than the budget, live"
  "diag-deepum|DeepUM with each of its mechanisms off, per kernel"
  "diag-prefetch|the migration-mix probe, per-kernel replays counting their calls"
  "-- the program study (program/)"
  "program|faultline run: policies inside the programs, beside their capture and replay"
  "-- the capture study (capture/)"
  "capture|programs captured as traces, each timed plain and captured (MODES)"
  "capture-timing|what the timing pass adds to a program's steps, part by part"
  "capture-drains|how often the access pass must drain CUPTI, each setting checked"
  "capture-sanitize|the sanitize capture of small programs, checked, raw streams kept"
  "capture-tracer|builds the CUDA parts, records raw streams (the converter's tests)"
  "host-check|host accesses: observe mode, the live replay, live --iterations"
  "-- two GPUs (multigpu/, papers/huvm/)"
  "harvest|HUVM's harvest live on GPU 0, a neighbour replaying on GPU 1"
  "harvest-huvm|the pair calibrated, then harvest with the neighbour busy and idle"
  "-- the allocator study (alloc/, papers/gmlake/)"
  "alloc-capture|training runs under PyTorch's caching allocator, with snapshots"
  "alloc-batches|snapshots of GPT-2 large with recompute at batches 4 to 9"
  "alloc-large|GMLake's strategies at the paper's scale (Llama-2 7B, 13B), one H200"
  "alloc-live|PyTorch's allocators against faultline's, live; the largest batch"
  "alloc-fsdp|GMLake under FSDP2 on two GPUs, three allocators"
)

usage() {
  sed -n '2,/^set -u$/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  echo
  echo "subcommands (SUBCOMMAND --help for its arguments and variables):"
  local line
  for line in "${subcommands[@]}"; do
    case $line in
    "-- "*) printf '  %s\n' "${line#-- }" ;;
    *) printf '    %-17s %s\n' "${line%%|*}" "${line#*|}" ;;
    esac
  done
}

# The comment block right above FUNCTION's definition in lab/gpu/.
usage_of() { # FUNCTION
  awk -v f="$1" '/^#/ { sub(/^# ?/, ""); doc = doc $0 "\n"; next }
    index($0, f "() ") == 1 { printf "%s", doc; exit } { doc = "" }' "$experiments"/lab/gpu/*.sh
}

if [ $# = 0 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  usage
  if [ $# = 0 ]; then exit 2; else exit 0; fi
fi
name=$1
shift
if [[ $name == -* || $name == *_* ]] || ! declare -F "sub_${name//-/_}" >/dev/null; then
  echo "$entry: unknown subcommand '$name'; expected one of:" \
    "$(printf '%s\n' "${subcommands[@]}" | grep -v '^-- ' | cut -d'|' -f1 | paste -sd' ')" >&2
  exit 2
fi
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  usage_of "sub_${name//-/_}"
  exit 0
fi
"sub_${name//-/_}" "$@"

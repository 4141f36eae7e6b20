#!/usr/bin/env bash
# The fidelity report from a campaign of live replays (live/data/CAMPAIGN/): every run simulated
# with the calibrated profile of the GPU it ran on (the manifest's gpu_profile), in capacity mode
# "budget", then the table, the figure and the summary, in out/live/CAMPAIGN/, or with
# --write-reports in experiments/live/reports/CAMPAIGN/ (the committed report). A campaign of
# campaign.sh (its gpu_profile the path of its own instance's profile) is simulated a second time
# with the manifest's shipped_profile (configs/gpus/NAME), into CAMPAIGN/shipped-profile/.
#   experiments/live/fidelity.sh [CAMPAIGN] [--write-reports]
#     CAMPAIGN: h200 (default; all 7 traces), h100 (2 traces), h200-other-instance,
#               h100-sanitize-traces
set -euo pipefail
cd "$(dirname "$0")/../.."
campaign=h200 out_root=out/live
for a in "$@"; do
  case $a in
  --write-reports) out_root=experiments/live/reports ;;
  *) campaign=$a ;;
  esac
done
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
[ -x build/faultline ] || { echo "fidelity: build/faultline is missing: run ./setup.sh" >&2; exit 1; }
data=experiments/live/data/$campaign
"$python" experiments/live/fidelity.py "$data" "$out_root/$campaign" --faultline build/faultline
# A campaign that calibrated its own instance (campaign.sh) is also simulated with the shipped
# profile of its GPU model: the spread across instances that one profile leaves.
shipped=$("$python" -c 'import json,sys; m=json.load(open(sys.argv[1])); p=m.get("gpu_profile","")
print(m.get("shipped_profile","") if p.endswith(".json") else "")' "$data/manifest.json")
if [ -n "$shipped" ]; then
  "$python" experiments/live/fidelity.py "$data" "$out_root/$campaign/shipped-profile" \
    --gpu "$shipped" --faultline build/faultline
fi
# Per-machine against full calibration (configs/README.md, "Calibrating one machine"): a campaign
# calibrated in full is also simulated with the per-machine calibration derived from its
# measurements (`calibrate --refit FULL --from MODEL`), into CAMPAIGN/per-machine-profile/; one
# calibrated per machine that also made the full calibration (campaign.sh FULL=1), with that one,
# into CAMPAIGN/full-calibration/.
if [ -n "$shipped" ]; then
  profile=$(realpath "$data/$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["gpu_profile"])' "$data/manifest.json")")
  name=$(basename "$profile" .json)
  calibration=$(dirname "$(dirname "$profile")")/calibration/$name.json
  if grep -q '"fault_path_from"' "$calibration"; then
    full=$(dirname "$profile")/$name-full.json
    if [ -f "$full" ]; then
      "$python" experiments/live/fidelity.py "$data" "$out_root/$campaign/full-calibration" \
        --gpu "$full" --faultline build/faultline
    fi
  else
    derived=$out_root/$campaign/per-machine-profile
    build/faultline calibrate --refit "$calibration" --from "$shipped" --name "$name-per-machine" \
      --out-dir "$derived/calibrated" >/dev/null
    "$python" experiments/live/fidelity.py "$data" "$derived" \
      --gpu "$(realpath "$derived/calibrated/gpus/$name-per-machine.json")" --faultline build/faultline
  fi
fi

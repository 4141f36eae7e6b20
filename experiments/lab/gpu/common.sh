# Sourced by experiments/campaign.sh; defines functions only. What the recipes of the other files
# here share: the binaries staged in .dev/, the lanes that spread one-GPU runs over the visible
# GPUs, the Python that runs here, and the manifest a campaign gets once it is brought back.
# `experiments` is the folder experiments/ as campaign.sh was called (relative, as the commands
# that traces record name it).
# shellcheck shell=bash

# Sets `bin` to the binaries that `campaign.sh stage` put in .dev/ and puts their libraries (the
# machine has no zstd or nlopt) on LD_LIBRARY_PATH.
staged() {
  bin=$PWD/.dev
  export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

# Sets `gpus` to the GPUs PyTorch sees (FALLBACK where it cannot tell) and `lanes` to as many
# lanes, at least one.
gpu_lanes() { # FALLBACK
  gpus=$(python3 -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo "$1")
  lanes=${gpus:-1}
  [ "$lanes" -ge 1 ] || lanes=1
}

# Runs the jobs, each a command line split into words, in `lanes` lanes at once, lane L on GPU L
# (CUDA_VISIBLE_DEVICES) taking every lanes-th job, and waits for all of them.
in_lanes() { # JOB...
  local jobs=("$@") lane i
  for ((lane = 0; lane < lanes; ++lane)); do
    (
      for ((i = lane; i < ${#jobs[@]}; i += lanes)); do
        CUDA_VISIBLE_DEVICES=$lane ${jobs[$i]}
      done
    ) &
  done
  wait
}

# What a campaign records of the machine it ran on (its machine.txt): the revision, the GPU, the
# CPU, the date.
machine_txt() {
  {
    git rev-parse HEAD 2>/dev/null || true
    nvidia-smi --query-gpu=name,uuid,pci.bus_id,memory.total,memory.used,driver_version,clocks.max.sm \
      --format=csv
    lscpu | grep -E '^(Model name|CPU\(s\)|Hypervisor vendor)'
    date -u
  } 2>&1
}

# The Python that runs here: the venv's where there is one.
python_here() {
  if [ -x .venv/bin/python ]; then echo .venv/bin/python; else echo python3; fi
}

# experiments/campaign.sh manifest STUDY/data/CAMPAIGN --what TEXT --revision REV --command CMD
#     [--date YYYY-MM-DD] [--gpu-profile PROFILE] [--shipped-profile GPU] [--machine machine.txt]
#     [--kind KIND]
# Here, once a campaign is brought back into STUDY/data/CAMPAIGN/: its manifest.json. Every
# TRACE-POLICY-BUDGET.err beside the results becomes a refusal with its message (and the .err file
# goes), machine.txt becomes the machine; the revision, command and date are given here.
# --gpu-profile is the profile the campaign's runs are simulated with: a name in configs/gpus/,
# or, for a campaign that calibrated its own instance (`campaign.sh live`), the path of that
# profile inside the folder (profile/gpus/NAME.json); --shipped-profile then names the shipped
# profile of the GPU model, which the report also simulates with. A committed campaign is
# immutable: this refuses to overwrite a manifest. --kind (default measured) is the campaign's
# kind (experiments/lab/manifest.py).
sub_manifest() (
  set -u +e +o pipefail
  "$(python_here)" -c 'import sys
sys.path.insert(0, sys.argv.pop(1))
from lab.manifest import main
sys.exit(main(sys.argv[2:], sys.argv[1]))' "$experiments" "$entry manifest" "$@"
)

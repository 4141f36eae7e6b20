#!/usr/bin/env bash
# A sweep on a real Slurm (issue 22): starts munged, slurmctld and slurmd on localhost with a
# configuration written here (Debian's slurm-wlm and munge; ports 16817-16818), submits the sweep
# as a 4-task job array and its merge (experiments/slurm/submit.sh), waits for both and checks
# that the merged tables equal a one-machine run's, byte for byte. Where the daemons are missing
# or cannot start (no root, a sandbox), it says why and exits 77, which CTest counts as skipped.
#   tests/slurm_test.sh FAULTLINE SOURCE_DIR
set -uo pipefail
faultline=$(realpath "$1") src=$(realpath "$2")
skip() { echo "slurm test skipped: $*"; exit 77; }
for tool in munged slurmctld slurmd sbatch squeue; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (setup.sh installs slurm-wlm and munge)"
done
[ "$(id -u)" = 0 ] || skip "slurmd runs jobs as root here; run the test as root (as CI does)"
work=$(mktemp -d /tmp/faultline-slurm.XXXXXX)
stop() {
  for pid in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null
  done
  sleep 1
  rm -rf "$work"
}
trap stop EXIT
mkdir -p "$work/state" "$work/spool" "$work/munge"
chmod 700 "$work/munge"
head -c 1024 /dev/urandom >"$work/munge/munge.key" && chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.sock" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/seed" || skip "munged did not start"
host=$(hostname -s)
cat >"$work/slurm.conf" <<CONF
ClusterName=faultlinetest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=16817
SlurmdPort=16818
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -f "$SLURM_CONF" || skip "slurmctld did not start: $(tail -n 2 "$work/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" || skip "slurmd did not start: $(tail -n 2 "$work/slurmd.log" 2>/dev/null)"
for _ in $(seq 1 30); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t 2>/dev/null | grep -q idle || skip "the node did not come up: $(sinfo 2>&1 | tail -n 1)"

cat >"$work/sweep.json" <<JSON
{"name": "slurm-test", "base": "$src/configs/runs/default.json",
 "traces": ["$src/traces/real/stream.fltrace", "$src/traces/real/pagerank.fltrace"],
 "policies": ["ondemand", "pump"], "capacity_fractions": [1.0, 0.5], "out": "$work/cluster"}
JSON
sed "s|$work/cluster|$work/one|" "$work/sweep.json" >"$work/one.json"
FAULTLINE=$faultline "$src/experiments/slurm/submit.sh" "$work/sweep.json" 4 --chdir="$work" \
  --export=ALL --output="$work/job-%A_%a.log" || { echo "sbatch failed"; exit 1; }
for _ in $(seq 1 300); do
  [ -z "$(squeue -h 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h)" ] || { echo "jobs still queued after 300 s:"; squeue; exit 1; }
cat "$work"/job-*.log
"$faultline" sweep "$work/one.json" --jobs 2
status=0
for table in results.csv results.json; do
  if cmp -s "$work/cluster/$table" "$work/one/$table"; then
    echo "$table: the cluster's merge equals the one-machine run"
  else
    echo "$table: differs from the one-machine run"
    status=1
  fi
done
[ "$(ls "$work/cluster/points" | wc -l)" = 8 ] || { echo "expected 8 points"; status=1; }
exit $status

#!/usr/bin/env bash
# Device call B (session 2026-11-29 20:10): on one fresh H200, workloads.py's --dry-run after its
# split (CPU only), the per-machine calibration, then the third hold-out set's two runs the
# drained campaign on d0a1cf3e did not reach: lstm under PUMP at 75% and 50% with CUPTI drained
# after every kernel (DRAIN=1: bytes each way in full). Results in /root/d, tarred into $OUT
# after each stage; a second call runs this again and goes on where the last stopped.
set -u
export LD_LIBRARY_PATH=$PWD/.dev/lib
o=/root/d; mkdir -p $o
limit=${LIMIT:-585}
pack() { tar czf $OUT/d.tmp.tgz -C /root d && mv $OUT/d.tmp.tgz $OUT/d.tgz; }
left() { echo $((limit - 40 - SECONDS)); }
nvidia-smi --query-gpu=name,uuid,memory.used,memory.total --format=csv >> $o/machine-call.txt 2>&1
if [ ! -f $o/dry-run.log ]; then
  python3 -c "import torch, transformers, peft; print(torch.__version__, transformers.__version__, peft.__version__)" > $o/dry-run.log 2>&1
  for mt in "gpt2-medium lora-recompute-zero" "bert-large recompute-offload" "opt-1.3b lora" "llama2-7b recompute-zero"; do
    set -- $mt
    timeout 120 python3 experiments/alloc/workloads.py --model $1 --technique $2 --dry-run >> $o/dry-run.log 2>&1
    echo "exit $? ($1 $2)" >> $o/dry-run.log
  done
  pack
fi
if [ ! -f $o/calibrate.log ]; then
  FULL= experiments/live/campaign.sh $o calibrate > $o/calibrate-stage.log 2>&1
  echo "calibrated at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
fi
for budget in 0.75 0.5; do
  [ $(left) -gt 20 ] || break
  DRAIN=1 TRACE_DIR=experiments/live/data/h200-holdout3-traces TRACES=lstm POLICIES=pump \
    BUDGETS=$budget STOP_AFTER=$(left) \
    experiments/live/replay_all.sh $o/holdout3-drained .dev/faultline >> $o/holdout3-drained.log 2>&1
  echo "lstm pump $budget at $(date -u +%T) ($SECONDS s)" >> $o/host.txt; pack
done
cat $o/host.txt $o/dry-run.log | tail -20; grep -v "^wrote" $o/calibrate.log | tail -4; grep -E "done|failed|not started" $o/*.log | tail

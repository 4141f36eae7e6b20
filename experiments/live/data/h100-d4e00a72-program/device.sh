#!/usr/bin/env bash
# The fault path on a fresh instance: the quick calibration idle / one core busy / all but two
# busy (.fp/spin.sh), then hold-out programs inside `faultline run` (ondemand per kernel, the
# five policies at 75%), then ondemand again with all but two cores spinning.
# Usage: .fp/pk.sh SECONDS (after `experiments/campaign.sh stage`; results gzip-split into $OUT).
set -u
limit=$1
SECONDS=0
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
o=out/pk-$u; mkdir -p $o/prog
programs=${PROGRAMS:-pointcloud speech field}
[ "${SPIN:-1}" = 0 ] || .fp/spin.sh $o/spin
echo "spin done at $SECONDS s"
CAPTURES=$PWD/.fp/cap STOP_AFTER=$((limit - SECONDS - ${SPIN_RESERVE:-90})) REPEATS=1 STEPS=10 \
  RUN_TIMEOUT=90 BUDGETS="0.75" REPLAYS=0 PER_KERNEL_POLICIES=${PK-ondemand} \
  POLICIES="${POLICIES:-ondemand deepum schedule pump oracle}" \
  timeout $((limit - SECONDS - 60)) experiments/campaign.sh program $o/prog $programs 2>&1 | tail -40
# ondemand with the host's cores kept busy: does the program's fault path change?
cores=$(nproc); pids=()
for ((i = 0; i < cores - 2; ++i)); do (while :; do :; done) & pids+=($!); done
for p in $programs; do
  [ $SECONDS -lt $((limit - 40)) ] && [ -f $o/prog/$p.fltrace ] || break
  timeout 60 .dev/faultline run --policy ondemand --budget 0.75 --trace $o/prog/$p.fltrace --torch \
    --out $o/prog/$p-ondemand-0.75.spin.json -- python3 experiments/workloads.py train $p --warmup 1 \
    --steps 10 >$o/prog/$p-ondemand-0.75.spin.log 2>&1
  echo "$p spin: rc $? $(grep -o '"steps_seconds": [0-9.]*' $o/prog/$p-ondemand-0.75.spin.log)"
done
kill "${pids[@]}" 2>/dev/null
tar czf - --exclude='*.fltrace' -C out "pk-$u" | split -b 15M - "$OUT/pk.tgz."
ls -la "$OUT"; echo "total $SECONDS s"

# ---- .fp/spin.sh, which pk.sh runs first ----
#!/usr/bin/env bash
# The instance's quick calibration three ways: the CPU idle, one core kept busy, all cores but
# two kept busy (spinning shell loops). Does the host's idle state price the fault path?
# Usage: .fp/spin.sh OUT_DIR (after `experiments/campaign.sh stage`).
set -u
out=$1; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.dev/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
u=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -1 | sed 's/^GPU-//' | cut -c1-8)
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print tolower($2)}')
cores=$(nproc)
spin() { # N
  pids=()
  for ((i = 0; i < $1; ++i)); do (while :; do :; done) & pids+=($!); done
}
unspin() { [ ${#pids[@]} = 0 ] || kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; pids=(); }
pids=()
cat /sys/module/intel_idle/parameters/max_cstate /sys/devices/system/cpu/cpuidle/current_driver \
  /sys/devices/system/cpu/cpuidle/current_governor* 2>&1 | head -5 >"$out/idle.txt"
grep -m1 "model name" /proc/cpuinfo >>"$out/idle.txt"
for mode in ${SPIN_MODES:-idle spin1 spinall}; do
  case $mode in
  spin1) spin 1 ;;
  spinall) spin $((cores - 2)) ;;
  esac
  SECONDS=0
  .dev/faultline calibrate --name "$model-$u-$mode" --from "$model" --out-dir "$out/$mode" \
    >"$out/$mode.log" 2>&1
  echo "$mode: rc $? in $SECONDS s: $(grep 'fault benchmarks' "$out/$mode.log")"
  unspin
done

#!/usr/bin/env bash
# Replays shipped traces on the GPU machine with `faultline replay` for each policy and budget,
# writing one result per run into OUT_DIR/TRACE-POLICY-BUDGET.json. Each point is a run config,
# OUT_DIR/configs/POLICY-BUDGET.json, that `faultline sim --config` takes as it is: one
# experiment file drives both backends.
#   experiments/live/replay_all.sh OUT_DIR [FAULTLINE_BIN]
# TRACES, POLICIES and BUDGETS (space-separated) choose the grid (default: every trace in
# TRACE_DIR, default traces/real; the four policies of the fidelity report; 100%, 75% and 50%);
# libfaultline_live.so must sit
# beside the binary. A run that cannot hold its budget (a kernel needing more 2 MB chunks than
# the budget) fails with that message in OUT_DIR/TRACE-POLICY-BUDGET.err and the others go on.
# With STOP_AFTER=SECONDS no run starts once that much time has passed (the GPU machine's
# commands have a time limit); runs whose result exists already are skipped, so a second call
# goes on where the first stopped. With REPEATS=N every run is made N times, one whole pass of
# the grid after another (repeat R > 1 writes TRACE-POLICY-BUDGET.rR.json); the report takes the
# median. PER_KERNEL=1 adds a row per kernel (`replay --per-kernel`), CALL_LOG=1 a CSV of every
# migration call beside each result (`replay --call-log`, TRACE-POLICY-BUDGET.calls.csv; read
# by experiments/live/call_log.py). DRAIN=1 drains CUPTI
# after every kernel (`replay --drain-counters`): every byte counted, the time not comparable,
# so such runs go into a campaign of their own (experiments/live/data/bytes-back/). Brought
# back here as experiments/live/data/CAMPAIGN/, the folder gets its manifest (the .err files
# become its refusals) from experiments/make_manifest.py.
set -u
out=${1:?usage: replay_all.sh OUT_DIR [FAULTLINE_BIN]}
bin=${2:-build/faultline}
mkdir -p "$out/configs"
dir=${TRACE_DIR:-traces/real}
all=$(ls "$dir"/*.fltrace | xargs -n1 basename | sed 's/\.fltrace$//')
drain=$([ "${DRAIN:-0}" = 1 ] && echo --drain-counters)
for r in $(seq 1 "${REPEATS:-1}"); do
  suffix=$([ "$r" = 1 ] || echo ".r$r")
  for t in ${TRACES:-$all}; do
    for p in ${POLICIES:-ondemand deepum pump oracle}; do
      for b in ${BUDGETS:-1.0 0.75 0.5}; do
        name="$out/$t-$p-$b$suffix"
        [ -f "$name.json" ] && continue
        [ "$r" != 1 ] && [ -f "$out/$t-$p-$b.err" ] && continue # refused: once is enough
        if [ -n "${STOP_AFTER:-}" ] && [ "$SECONDS" -ge "$STOP_AFTER" ]; then
          echo "$t $p $b$suffix not started: STOP_AFTER reached"
          continue
        fi
        config="$out/configs/$p-$b.json"
        [ -f "$config" ] || printf '{"description": "%s at %s of the footprint, as faultline replay keeps it", "capacity": {"fraction_of_footprint": %s, "mode": "budget"}, "policy": {"name": "%s"}}\n' \
          "$p" "$b" "$b" "$p" >"$config"
        if timeout 300 "$bin" replay --trace "$dir/$t.fltrace" --config "$config" \
          ${PER_KERNEL:+--per-kernel} ${CALL_LOG:+--call-log "$name.calls.csv"} $drain --out "$name.json" \
          2>"$name.err"; then
          rm -f "$name.err"
          echo "$t $p $b$suffix done"
        else
          echo "$t $p $b$suffix failed: $(tail -1 "$name.err")"
        fi
      done
    done
  done
done

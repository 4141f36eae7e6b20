# Sourced by experiments/campaign.sh; defines functions only. The capture study's recipes: the
# staging of the build here, then on the GPU machine the captures of the shipped and hold-out
# programs with their cost, and the probes of the tracer (what its passes cost, how often it must
# drain CUPTI, the sanitize pass, the raw streams the converter's tests read, host accesses).
# shellcheck shell=bash

# experiments/campaign.sh stage
# Here, before a device call: stages what the GPU machine lacks into .dev/ (ignored by git; name
# it in the device tool's `carry`): the host binary, the injection library and its patch, the
# policy host module of `faultline run`, the CUDA programs, the PyTorch hook, the host libraries
# the binary links (the machine has no zstd or nlopt) and the Sanitizer API library from the
# venv's wheel. On the device the recipes take .dev/ as the binary folder and put .dev/lib on
# LD_LIBRARY_PATH.
sub_stage() (
  set -euo pipefail
  cd "$experiments/.."
  rm -rf .dev && mkdir -p .dev/lib
  cp build/faultline build/libfaultline_inject.so build/faultline_pages.fatbin build/um_micro \
     build/host_stencil build/hash_join build/transpose2d build/radix_sort build/cg build/bfs \
     build/tiles build/libfaultline_live.so build/libfaultline_alloc.so \
     build/libfaultline_program.so .dev/
  cp -r build/torch_hook .dev/
  for lib in libzstd.so.1 libnlopt_cxx.so.0; do
    cp -L "$(ldconfig -p | awk -v l=$lib '$1 == l {print $NF; exit}')" .dev/lib/
  done
  cp .venv/lib/python3*/site-packages/nvidia/cu13/lib/libsanitizer-public.so .dev/lib/
  du -sh .dev
)

# experiments/campaign.sh capture OUT_DIR WORKLOAD...
# Captures the shipped real traces on a GPU machine and measures the tracer's overhead.
# WORKLOAD: stream, strided (microbenchmarks with declared access sets), stencil (a solver whose
# data the host initialises), pagerank, resnet50, gpt2-small, gpt2-medium, bert-large, t5-base,
# moe, graphsage; and the hold-out programs of experiments/live/holdout/: hash-join, transpose2d,
# llama, and the second set radix-sort, cg, unet (the PyTorch ones are
# `experiments/workloads.py train`). Needs .dev/ from `campaign.sh stage`. For each workload it
# runs, as MODES says (default "plain capture"):
#   plain    the program alone
#   capture  faultline capture (timing pass + sanitize pass) -> OUT_DIR/NAME.fltrace
#   cupti    faultline capture --mode cupti (timing pass + the older evict-and-drain pass)
#   observe  faultline capture --mode observe -> OUT_DIR/NAME.observe.json
# and appends one line per run to OUT_DIR/NAME.runs.jsonl: mode, wall seconds, program output.
# `experiments/capture/check.py overhead` turns the runs into capture/reports/overhead.json
# (make_reports.sh).
sub_capture() (
  set -euo pipefail
  out=${1:?usage: campaign.sh capture OUT_DIR WORKLOAD...}
  shift
  mkdir -p "$out"
  staged
  steps=3

  # name -> command, capture options and trace metadata
  declare -A cmd opts meta
  cmd[stream]="$bin/um_micro stream --mib 2048 --iterations $steps --expect $out/stream.expect.json"
  cmd[strided]="$bin/um_micro strided --mib 4096 --stride-kib 192 --iterations $steps --expect $out/strided.expect.json"
  cmd[stencil]="$bin/host_stencil --mib 3072 --steps $steps --sweeps 6"
  cmd[hash-join]="$bin/hash_join --mib 3072 --steps $steps"
  cmd[transpose2d]="$bin/transpose2d --mib 2048 --steps $steps"
  cmd[radix-sort]="$bin/radix_sort --mib 2048 --steps $steps"
  cmd[cg]="$bin/cg --mib 2048 --steps $steps --iterations 3"
  cmd[bfs]="$bin/bfs --mib 2048 --steps $steps"
  opts[stream]=""; opts[strided]=""; opts[stencil]="--range profiler"
  opts[hash-join]="--range profiler"; opts[transpose2d]="--range profiler"
  opts[radix-sort]="--range profiler"; opts[cg]="--range profiler"; opts[bfs]="--range profiler"
  meta[stream]="--meta workload=stream"
  meta[strided]="--meta workload=strided --meta stride_bytes=196608"
  meta[stencil]="--meta workload=host-stencil --meta sweeps=6"
  meta[hash-join]="--meta workload=hash-join"; meta[transpose2d]="--meta workload=transpose2d"
  meta[radix-sort]="--meta workload=radix-sort"; meta[cg]="--meta workload=cg --meta iterations=3"
  meta[bfs]="--meta workload=bfs --meta degree=16"
  declare -A batch=([pagerank]=16 [resnet50]=64 [gpt2-small]=8 [gpt2-medium]=4 [bert-large]=8
                    [t5-base]=8 [moe]=16 [graphsage]=10 [llama]=4 [unet]=8 [vit]=32 [lstm]=64)
  for w in "${!batch[@]}"; do
    cmd[$w]="python3 $experiments/workloads.py train $w --warmup 1 --steps $steps --batch ${batch[$w]}"
    opts[$w]="--torch --range profiler"
    meta[$w]="--meta workload=$w --meta batch=${batch[$w]}"
  done
  meta[pagerank]+=" --meta vertices=16000000 --meta edges=256000000"
  meta[resnet50]+=" --meta image=224"
  for w in gpt2-small gpt2-medium; do meta[$w]+=" --meta sequence=1024"; done
  meta[bert-large]+=" --meta sequence=512"
  meta[t5-base]+=" --meta source=512 --meta target=128"
  meta[moe]+=" --meta sequence=512 --meta experts=8 --meta top_k=2"
  meta[llama]+=" --meta sequence=1024 --meta layers=16"
  meta[unet]+=" --meta image=256 --meta width=64 --meta depth=4"
  meta[vit]+=" --meta image=224 --meta patch=16 --meta width=768 --meta depth=12"
  meta[lstm]+=" --meta sequence=256 --meta hidden=2048 --meta layers=2"
  meta[graphsage]+=" --meta vertices=1000000 --meta edges=16000000"

  run() { # NAME MODE COMMAND...: runs it, appends {mode, seconds, output} to NAME.runs.jsonl
    local name=$1 mode=$2 began ended log
    shift 2
    log=$(mktemp)
    began=$(date +%s.%N)
    if ! "$@" >"$log" 2>&1; then
      echo "$name $mode failed:"; tail -20 "$log"; return 1
    fi
    ended=$(date +%s.%N)
    python3 - "$name" "$mode" "$began" "$ended" "$log" "$steps" >>"$out/$name.runs.jsonl" <<'PY'
import json, sys
name, mode, began, ended, log, steps = sys.argv[1:]
lines = open(log, errors="replace").read().splitlines()
program = [json.loads(l) for l in lines if l.startswith("{\"workload\"")]
print(json.dumps({"workload": name, "mode": mode, "seconds": round(float(ended) - float(began), 2),
                  "steps": int(steps), "program": program[0] if program else None,
                  "tail": lines[-3:]}))
PY
    echo "$name $mode $(tail -1 "$out/$name.runs.jsonl" | cut -c1-200)"
  }

  modes=${MODES:-plain capture}
  has() { [[ " $modes " == *" $1 "* ]]; }
  for w in "$@"; do
    read -r -a c <<<"${cmd[$w]}"
    read -r -a o <<<"${opts[$w]}"
    read -r -a m <<<"${meta[$w]} --meta measured_steps=$steps"
    # A workload that fails is reported and the others go on.
    if has plain; then run "$w" plain "${c[@]}" || continue; fi
    if has capture; then
      run "$w" capture "$bin/faultline" capture "${o[@]}" "${m[@]}" --out "$out/$w.fltrace" \
        -- "${c[@]}" || continue
      "$bin/faultline" trace stats "$out/$w.fltrace" >"$out/$w.stats.json"
    fi
    if has cupti; then
      run "$w" cupti "$bin/faultline" capture --mode cupti "${o[@]}" "${m[@]}" \
        --out "$out/$w.cupti.fltrace" -- "${c[@]}" || continue
    fi
    if has observe; then
      run "$w" observe "$bin/faultline" capture --mode observe "${o[@]}" "${m[@]}" \
        --out "$out/$w.observe.json" -- "${c[@]}" || continue
    fi
  done
)

# experiments/campaign.sh capture-timing OUT_DIR WORKLOAD...
# What the capture's timing pass adds to a program's own step time, part by part (on the GPU
# machine, after `campaign.sh stage`). For each PyTorch workload of `experiments/workloads.py
# train` it runs, one after the other: the program alone; the program with its cudaMalloc made
# managed (the library preloaded, no CUPTI); the timing pass with CUPTI's unified-memory counters
# ("timing": callbacks, activity, the counters, PyTorch's allocator history, step marks); and the
# timing pass without the counters ("timing-no-um": the pass as `faultline capture` runs it),
# without the allocator history, and without both. Each run appends
# {"workload", "variant", "step_seconds", "meta"} to OUT_DIR/timing-probe.jsonl: the program's own
# step times and what the injection library reported (its per-launch callback cost).
# VARIANTS picks and orders the variants (default: all of them, once; "history" is PyTorch's
# allocator history on managed memory, no CUPTI; "activity" and "callbacks" the timing pass
# without history or counters, with only CUPTI's activity records or only its API callbacks;
# "no-launches", "driver-launches", "no-flush-period", "no-sync-activity" the same pass without
# its launch callbacks, without the runtime's launch callbacks, without CUPTI's periodic flush,
# without CUPTI's synchronisation records; a comma-separated list of these leaves out all of
# them; "program" is the capture's program pass, CUPTI's activity records alone on the program's
# own memory, "program-no-driver-api" the same without the driver calls' records), REPEATS runs
# the list that many times (interleaved, so a machine's drift touches every variant alike), STEPS
# the measured steps.
sub_capture_timing() (
  set -euo pipefail
  out=${1:?usage: campaign.sh capture-timing OUT_DIR WORKLOAD...}
  shift
  mkdir -p "$out"
  staged
  steps=${STEPS:-3}
  variants=${VARIANTS:-plain managed timing timing-no-um timing-no-history timing-no-um-no-history}
  declare -A batch=([resnet50]=64 [gpt2-small]=8 [gpt2-medium]=4 [bert-large]=8 [t5-base]=8
                    [moe]=16 [graphsage]=10 [pagerank]=16 [llama]=4 [vit]=32)

  run() { # WORKLOAD VARIANT ENV...: runs the workload under the environment, appends one line
    local w=$1 variant=$2 raw=$out/$1-$2.raw log
    shift 2
    log=$(mktemp)
    env "$@" FAULTLINE_RAW_OUT="$raw" python3 "$experiments/workloads.py" train "$w" --warmup 1 \
      --steps "$steps" --batch "${batch[$w]}" >"$log" 2>&1 || { echo "$w $variant failed"; tail -5 "$log"; return 0; }
    python3 - "$w" "$variant" "$log" "$raw" >>"$out/timing-probe.jsonl" <<'PY'
import json, os, struct, sys
w, variant, log, raw = sys.argv[1:]
program = [json.loads(l) for l in open(log) if l.startswith("{\"workload\"")]
meta = {}
if os.path.exists(raw):
    data = open(raw, "rb").read()
    at = 16
    while at + 8 <= len(data):
        kind, _, size = struct.unpack_from("<HHI", data, at)
        if kind == 1:
            try: meta.update(json.loads(data[at + 8:at + 8 + size].decode()))
            except ValueError: pass
        at += 8 + size
    os.remove(raw)
print(json.dumps({"workload": w, "variant": variant,
                  "step_seconds": program[0]["step_seconds"] if program else None,
                  "meta": {k: v for k, v in meta.items() if k.startswith(("timing_", "host_touch"))}}))
PY
    echo "$w $variant $(tail -1 "$out/timing-probe.jsonl" | cut -c1-220)"
  }

  for w in "$@"; do
    timing=(CUDA_INJECTION64_PATH="$bin/libfaultline_inject.so" FAULTLINE_MODE=timing
            FAULTLINE_RANGE=profiler FAULTLINE_INJECT_LIB="$bin/libfaultline_inject.so"
            FAULTLINE_MANAGED=1 LD_PRELOAD="$bin/libfaultline_inject.so"
            PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}")
    history=(FAULTLINE_TORCH_HISTORY="$out/$w.history.json")
    for _ in $(seq "${REPEATS:-1}"); do
      for v in $variants; do
        case $v in
          plain) run "$w" plain A=1 ;;
          managed) run "$w" managed FAULTLINE_MANAGED=1 LD_PRELOAD="$bin/libfaultline_inject.so" ;;
          history) run "$w" history "${history[@]}" FAULTLINE_MANAGED=1 \
            LD_PRELOAD="$bin/libfaultline_inject.so" PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}" ;;
          timing) run "$w" timing "${timing[@]}" "${history[@]}" ;;
          timing-no-um) run "$w" timing-no-um "${timing[@]}" "${history[@]}" FAULTLINE_UM_COUNTERS=0 ;;
          timing-no-history) run "$w" timing-no-history "${timing[@]}" ;;
          timing-no-um-no-history) run "$w" timing-no-um-no-history "${timing[@]}" FAULTLINE_UM_COUNTERS=0 ;;
          program) run "$w" program CUDA_INJECTION64_PATH="$bin/libfaultline_inject.so" FAULTLINE_MODE=program \
            FAULTLINE_INJECT_LIB="$bin/libfaultline_inject.so" PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}" ;;
          program-no-driver-api) run "$w" "$v" CUDA_INJECTION64_PATH="$bin/libfaultline_inject.so" FAULTLINE_MODE=program \
            FAULTLINE_PROBE=no-driver-api FAULTLINE_INJECT_LIB="$bin/libfaultline_inject.so" PYTHONPATH="$bin/torch_hook${PYTHONPATH:+:$PYTHONPATH}" ;;
          activity|callbacks|no-launches|driver-launches|no-flush-period|no-sync-activity|*,*) run "$w" "$v" "${timing[@]}" FAULTLINE_UM_COUNTERS=0 FAULTLINE_PROBE="$v" ;;
          *) echo "unknown variant $v"; exit 2 ;;
        esac
      done
    done
    rm -f "$out/$w.history.json"
  done
)

# experiments/campaign.sh capture-drains OUT_DIR MiB:K...
# How often must the access pass drain CUPTI's unified-memory queue? Captures the same programs
# with each setting MiB:K (FAULTLINE_DRAIN_BYTES of that many MiB, FAULTLINE_DRAIN_EVERY=K) and
# checks every access set against a reference: the stream microbenchmark against the access sets
# um_micro states (`experiments/capture/check.py micro`), GPT-2 small against the shipped trace
# (captured draining three times per operation; `check.py access`). Then, for each flag in
# FLUSHES, it times the drains of a small program with that cuptiActivityFlushAll flag.
# Takes faultline and um_micro from build-gpu/. Prints one line per capture: setting, wall time,
# drains, and whether the access sets agree.
sub_capture_drains() (
  set -euo pipefail
  out=${1:?usage: campaign.sh capture-drains OUT_DIR MiB:K...}
  shift
  mkdir -p "$out"
  bin=$PWD/build-gpu

  capture() { # NAME MiB:K FLUSH COMMAND...: capture with that draining, print the summary line
    local name=$1 setting=$2 flush=$3 began ended
    local file=$out/$name-${setting/:/-}-$flush
    shift 3
    began=$(date +%s.%N)
    FAULTLINE_DRAIN_BYTES=$((${setting%:*} << 20)) FAULTLINE_DRAIN_EVERY=${setting#*:} \
      FAULTLINE_FLUSH=$flush "$bin/faultline" capture --out "$file.fltrace" "$@" >"$file.log" 2>&1 ||
      { echo "$name $setting failed:"; tail -5 "$file.log"; return 1; }
    ended=$(date +%s.%N)
    local draining
    draining=$("$bin/faultline" trace dump "$file.fltrace" | head -1 |
      python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["metadata"]["capture"]["access_pass_draining"]))') || true
    awk -v n="$name" -v k="$setting" -v f="$flush" -v a="$began" -v b="$ended" -v d="$draining" \
      'BEGIN { printf "%s %s flush=%s %.1f s %s\n", n, k, f, b - a, d }'
  }

  for s in "$@"; do
    capture stream "$s" normal -- "$bin/um_micro" stream --mib 2048 --iterations 2 \
      --expect "$out/stream.expect.json"
    python3 "$experiments/capture/check.py" micro "$bin/faultline" "$out/stream-${s/:/-}-normal.fltrace" \
      "$out/stream.expect.json" | grep -c DIFFERENT | sed 's/^/stream operations differing: /' || true
    capture gpt2-small "$s" normal --torch --range profiler -- \
      python3 "$experiments/workloads.py" train gpt2-small --warmup 1 --steps 1 --batch 8
    python3 "$experiments/capture/check.py" access "$bin/faultline" traces/real/gpt2-small.fltrace \
      "$out/gpt2-small-${s/:/-}-normal.fltrace" | tail -4 || true
  done
  for flush in ${FLUSHES:-}; do
    capture mlp 64:1 "$flush" --torch --range profiler -- \
      python3 "$experiments/workloads.py" train mlp --batch 256 --warmup 1 --steps 20
  done
)

# experiments/campaign.sh capture-sanitize OUT_DIR
# Checks the sanitize-mode capture on a GPU machine (after `campaign.sh stage` here): the
# microbenchmarks against their declared access sets, the host-initialised stencil (plain and odd
# sizes), a small PyTorch program, with the raw streams of the small runs kept for the
# converter's tests (tests/data/capture/sanitize), in OUT_DIR/raws.tgz and OUT_DIR/traces.tgz;
# its output also in OUT_DIR/probe.log.
sub_capture_sanitize() (
  set -u +e -o pipefail
  out=${1:?usage: campaign.sh capture-sanitize OUT_DIR}
  mkdir -p "$out"
  staged
  log=$out/probe.log
  exec > >(tee -a "$log") 2>&1
  nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.used,memory.total --format=csv
  ls /usr/local/cuda/compute-sanitizer 2>/dev/null | head -5
  timed() { local t0=$SECONDS; "$@"; local rc=$?; echo "[$((SECONDS - t0)) s, rc $rc] $*"; return $rc; }
  cap() { # NAME OPTIONS... -- COMMAND
    local name=$1; shift
    timed "$bin/faultline" capture --keep "$out/raw-$name" --out "$out/$name.fltrace" "$@" \
      && "$bin/faultline" trace stats "$out/$name.fltrace" > "$out/$name.stats.json"
  }
  cap stream -- "$bin/um_micro" stream --mib 256 --iterations 2 --expect "$out/stream.expect.json"
  python3 "$experiments/capture/check.py" micro "$bin/faultline" "$out/stream.fltrace" "$out/stream.expect.json" | tail -3
  cap strided -- "$bin/um_micro" strided --mib 512 --stride-kib 192 --iterations 2 \
    --expect "$out/strided.expect.json"
  python3 "$experiments/capture/check.py" micro "$bin/faultline" "$out/strided.fltrace" "$out/strided.expect.json" | tail -3
  timed "$bin/host_stencil" --mib 96 --steps 3
  cap stencil --range profiler -- "$bin/host_stencil" --mib 96 --steps 3
  cap stencil-odd --range profiler -- "$bin/host_stencil" --mib 96 --steps 3 --odd
  cap mlp --torch --range profiler -- python3 "$experiments/workloads.py" train mlp --warmup 1 --steps 3
  timed python3 "$experiments/workloads.py" train resnet50 --warmup 1 --steps 3 --batch 64
  cap resnet50 --torch --range profiler -- python3 "$experiments/workloads.py" train resnet50 --warmup 1 --steps 3 --batch 64
  for f in "$out"/*.stats.json; do echo "== $f"; head -c 1500 "$f"; echo; done
  tar czf "$out/raws.tgz" -C "$out" $(cd "$out" && ls -d raw-stream raw-strided raw-stencil raw-mlp 2>/dev/null)
  tar czf "$out/traces.tgz" -C "$out" $(cd "$out" && ls *.fltrace *.stats.json *.expect.json 2>/dev/null)
  rm -rf "$out"/raw-* "$out"/*.fltrace
  ls -la "$out"
)

# experiments/campaign.sh capture-tracer OUT_DIR
# Builds the CUDA parts on a GPU machine (build-gpu/) and runs the injection library in each
# mode over the microbenchmarks and a tiny PyTorch program, keeping the raw streams: the recorded
# record streams that the converter's unit tests read (tests/data/capture/) come from here.
sub_capture_tracer() (
  set -euo pipefail
  out=${1:?usage: campaign.sh capture-tracer OUT_DIR}
  mkdir -p "$out"
  cmake -S . -B build-gpu -G Ninja -DFAULTLINE_CUDA_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C build-gpu >/dev/null
  lib=$PWD/build-gpu/libfaultline_inject.so
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader

  timed() { # NAME COMMAND...: run, print the wall time
    local name=$1 began ended
    shift
    began=$(date +%s.%N)
    "$@" >"$out/$name.log" 2>&1 || { echo "$name failed:"; tail -5 "$out/$name.log"; return 1; }
    ended=$(date +%s.%N)
    awk -v n="$name" -v a="$began" -v b="$ended" 'BEGIN { printf "%s %.2f s\n", n, b - a }'
  }

  for pattern in stream strided; do
    for mode in observe timing access; do
      timed "$pattern-$mode" env CUDA_INJECTION64_PATH="$lib" FAULTLINE_MODE=$mode \
        FAULTLINE_RAW_OUT="$out/$pattern-$mode.raw" \
        build-gpu/um_micro $pattern --mib 64 --iterations 2 --expect "$out/$pattern.expect.json"
    done
  done
  for mode in timing access; do
    timed "mlp-$mode" env CUDA_INJECTION64_PATH="$lib" LD_PRELOAD="$lib" FAULTLINE_MANAGED=1 \
      FAULTLINE_MODE=$mode FAULTLINE_RANGE=profiler FAULTLINE_RAW_OUT="$out/mlp-$mode.raw" \
      FAULTLINE_TORCH_HISTORY="$out/mlp-$mode.history.json" PYTHONPATH="$PWD/tracer/torch" \
      python3 experiments/workloads.py train mlp --batch 256 --warmup 1 --steps 1
  done
  timed stream512-access env CUDA_INJECTION64_PATH="$lib" FAULTLINE_MODE=access \
    FAULTLINE_RAW_OUT="$out/stream512-access.raw" \
    build-gpu/um_micro stream --mib 512 --iterations 1 --expect "$out/stream512.expect.json"
  timed strided128-access env CUDA_INJECTION64_PATH="$lib" FAULTLINE_MODE=access \
    FAULTLINE_RAW_OUT="$out/strided128-access.raw" build-gpu/um_micro strided --mib 256 \
    --stride-kib 128 --iterations 1 --expect "$out/strided128.expect.json"
  for run in stream strided stream512 strided128; do
    python3 tracer/tools/raw_coverage.py "$out/$run-access.raw" "$out/$run.expect.json"
  done
  ls -la "$out"
)

# experiments/campaign.sh host-check OUT_DIR
# The host-initialised program on a GPU machine (after `campaign.sh stage` here), three ways, for
# the check that a trace carries what the CPU does to managed memory (tracer/README.md, "Host
# accesses"):
#   1. the original program under observe mode: CUPTI's migration counters while it runs;
#   2. the live replay of its trace (traces/real/host-stencil.fltrace) under ondemand at 100% of
#      its footprint (each kernel touches all of it, so a smaller budget is refused);
#   3. live replays for 6 iterations of traces that hold 3 steps, the live side of --iterations:
#      stream under ondemand at 100%, pagerank under ondemand and deepum at 60% (at 50% one of its
#      kernels needs more than the budget).
sub_host_check() (
  set -u +e -o pipefail
  out=${1:?usage: campaign.sh host-check OUT_DIR}
  mkdir -p "$out"
  staged
  "$bin/faultline" capture --mode observe --range profiler --out "$out/host-stencil.observe.json" \
    -- "$bin/host_stencil" --mib 3072 --steps 3 --sweeps 6
  "$bin/faultline" replay --trace traces/real/host-stencil.fltrace --policy ondemand --budget 1.0 \
    --out "$out/host-stencil-ondemand-1.0.json" || echo "host-stencil failed"
  "$bin/faultline" replay --trace traces/real/stream.fltrace --policy ondemand --budget 1.0 \
    --iterations 6 --out "$out/stream-ondemand-1.0-iter6.json" || echo "stream iterations failed"
  for p in ondemand deepum; do
    timeout 240 "$bin/faultline" replay --trace traces/real/pagerank.fltrace --policy $p \
      --budget 0.6 --iterations 6 --out "$out/pagerank-$p-0.6-iter6.json" || echo "pagerank $p failed"
  done
)

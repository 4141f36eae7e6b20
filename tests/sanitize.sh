#!/usr/bin/env bash
# The test suite again, built by clang with AddressSanitizer (leaks included) and
# UndefinedBehaviorSanitizer in build-sanitize/; any report fails its test. The same build holds
# the fuzz targets (tests/fuzz/), which then run for FAULTLINE_FUZZ_SECONDS each (default 10).
#   tests/sanitize.sh            configure if needed, build, ctest, fuzz
#   tests/sanitize.sh --build    configure if needed and build only (what tests/fuzz/run.sh uses)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build-sanitize

if ! command -v clang++ >/dev/null; then
  echo "sanitize: clang++ not found (setup.sh installs clang): skipping the sanitizer build" >&2
  exit 0
fi
# ccache keys on paths relative to the checkout, so another clone on this machine (CI's) hits.
# The sloppiness lets it cache files built with the precompiled headers (FAULTLINE_PCH).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=pch_defines,time_macros
if [ ! -f "$dir/build.ninja" ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # fuzzer-no-link: coverage for libFuzzer in every object, so one build serves the tests and
  # the fuzz targets; UBSan does not recover, so a report fails the run. -O1 throughout: at -O0
  # the build takes half the time but the unit tests whose work is in their own code (the fake
  # device, the harnesses) run 20 to 60 times longer.
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fsanitize=fuzzer-no-link"
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja "${launcher[@]}" \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer" \
    -DFAULTLINE_CUDA=OFF -DFAULTLINE_BENCHMARKS=OFF -DFAULTLINE_FUZZ=ON >/dev/null
fi
cmake --build "$dir" -j "$(nproc)" --target faultline faultline_tests fuzz
[ "${1:-}" = "--build" ] && exit 0

export ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}"
# Left out (tests/README.md says why): the real traces over 200 KB and the live reports, 16 to
# 20 times slower here; the unit tests whose time is the simulator run many times over (the
# calibration fits, a replay of a real trace, a repeating neighbour), 40 to 140 s each here;
# tests of Python alone or of the GCC build's Python module.
skip=(real_trace_simulates_'(bert-large|gpt2-medium|gpt2-small|graphsage|host-stencil|moe|resnet50|t5-base)'
      "calibrate: (the fit recovers|the replay.s rhythm|faults on discarded|chunks holding spread|an eviction and a prefetch in turn|the host.s first touch).*"
      "replay: an eviction never undoes a discard" "a repeating neighbour runs until.*"
      "budget mode: (a fault on a page DeepUM discarded|DeepUM takes the same actions).*"
      papers_live_reports program_report ruff layers include_cycles experiments_layout fidelity_ranking
      multigpu_live_vs_sim python_api lab lab_steps)
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" \
  -E "^($(IFS='|'; echo "${skip[*]}"))\$"
tests/fuzz/run.sh "${FAULTLINE_FUZZ_SECONDS:-5}"

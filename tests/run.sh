#!/usr/bin/env bash
# The whole test suite: sets up what is missing, builds, runs every test through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
./setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
# The same suite built by clang under AddressSanitizer and UndefinedBehaviorSanitizer, then each
# fuzz target for FAULTLINE_FUZZ_SECONDS (5). FAULTLINE_SANITIZE=0 skips both (a quick local run).
if [ "${FAULTLINE_SANITIZE:-1}" != 0 ]; then
  tests/sanitize.sh
else
  echo "run: FAULTLINE_SANITIZE=0: skipping the sanitizer build and the fuzz targets"
fi

#!/usr/bin/env bash
# Installs what faultline needs (Debian packages, a Python venv with matplotlib) and builds it.
# Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")"

packages=(build-essential cmake ninja-build pkg-config git libzstd-dev nlohmann-json3-dev
          catch2 libnlopt-cxx-dev libbenchmark-dev libboost-graph-dev libcli11-dev python3
          python3-venv python3-pip slurm-wlm munge
          clang llvm libclang-rt-dev ccache) # the sanitizer build and fuzzing (tests/sanitize.sh)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r experiments/requirements.txt
# Where the CUDA toolkit is, the tracer's sanitize mode builds against the Sanitizer API headers
# of the toolkit's version (the pip package carries headers and library).
nvcc_bin=$(command -v nvcc || true)
[ -z "$nvcc_bin" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc_bin=/usr/local/cuda/bin/nvcc
if [ -n "$nvcc_bin" ]; then
  cuda_version=$("$nvcc_bin" --version | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p')
  .venv/bin/python -m pip install -q --disable-pip-version-check \
    "nvidia-cuda-sanitizer-api==${cuda_version}.*"
fi

# ccache, where installed, makes rebuilds in other checkouts (worktrees, CI caches) cheap: it keys
# on paths relative to the checkout; the sloppiness lets it cache files built with the
# precompiled headers (FAULTLINE_PCH).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=pch_defines,time_macros
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j "$(nproc)"
echo "setup: built build/faultline"
# The Python package (python/, pyproject.toml) into .venv: the same CMake build, in build/python.
pip_cmake_args=""
command -v ccache >/dev/null && pip_cmake_args="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
CMAKE_ARGS="$pip_cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation .
echo "setup: installed the Python package faultline into .venv"

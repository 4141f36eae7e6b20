#!/usr/bin/env bash
# Stages what the GPU machine lacks into .dev/ (ignored by git; name it in the device tool's
# `carry`): the host binary, the injection library and its patch, the CUDA programs, the PyTorch
# hook, the host libraries the binary links (the machine has no zstd or nlopt) and the Sanitizer
# API library from the venv's wheel. On the device: `export LD_LIBRARY_PATH=$PWD/.dev/lib` and
# use .dev/ as the binary folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
rm -rf .dev && mkdir -p .dev/lib
cp build/faultline build/libfaultline_inject.so build/faultline_pages.fatbin build/um_micro \
   build/host_stencil build/hash_join build/transpose2d build/radix_sort build/cg build/bfs build/libfaultline_live.so build/libfaultline_alloc.so .dev/
cp -r build/torch_hook .dev/
for lib in libzstd.so.1 libnlopt_cxx.so.0; do
  cp -L "$(ldconfig -p | awk -v l=$lib '$1 == l {print $NF; exit}')" .dev/lib/
done
cp .venv/lib/python3*/site-packages/nvidia/cu13/lib/libsanitizer-public.so .dev/lib/
du -sh .dev

#!/usr/bin/env bash
# The CUDA programs of tracer/micro/ refuse a bad command line before touching the GPU: exit
# status 2 and a message that names the program, the option and what was expected.
#   tests/micro_options.sh BIN_DIR
set -u
bin=${1:?usage: micro_options.sh BIN_DIR}
failed=0
expect() { # PROGRAM MESSAGE ARGS...: exit status 2 and MESSAGE in stderr
  local program=$1 message=$2 out status
  shift 2
  out=$("$bin/$program" "$@" 2>&1 >/dev/null)
  status=$?
  if [ "$status" != 2 ] || [[ "$out" != *"$message"* ]]; then
    echo "FAIL: $program $*: status $status, said: $out (expected 2 and: $message)"
    failed=1
  fi
}
expect radix_sort "radix_sort: --mib expects a whole number from 8 to 16384, not '4'" --mib 4
expect radix_sort "radix_sort: unknown option --bogus (expected --mib, --steps)" --bogus 3
expect radix_sort "radix_sort: --steps needs a value" --steps
expect cg "cg: --iterations expects a whole number from 1 to 1000000, not '0'" --iterations 0
expect cg "cg: --mib expects a whole number from 8 to 32768, not '2x'" --mib 2x
expect hash_join "hash_join: --mib expects a whole number from 8 to 1048576, not '-5'" --mib -5
expect transpose2d "transpose2d: --steps expects a whole number from 1 to 1000000, not ''" --steps ""
expect host_stencil "host_stencil: --sweeps expects a whole number from 1 to 1000000, not '0'" --odd --sweeps 0
expect host_stencil "host_stencil: unknown option --even (expected --mib, --steps, --sweeps, --odd)" --even
expect bfs "bfs: --degree expects a whole number from 1 to 1024, not '0'" --degree 0
expect bfs "bfs: unknown option --depth (expected --mib, --steps, --degree)" --depth 3
[ $failed = 0 ] && echo "micro_options: all refusals as expected"
exit $failed

#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/) into build-fuzz/ with clang-14 and runs them.
#   scripts/fuzz.sh SECONDS [HARNESS...]  each harness (default: all) replays its seeds and
#                                         regression cases, then fuzzes for SECONDS, one after
#                                         another (one process: other work keeps a core);
#                                         prints a Markdown table of executions and crashes.
#                                         FUZZ_RUNS=N stops each after N executions (e.g. 1000000)
#   scripts/fuzz.sh --build-only          configure and build only (scripts/test.sh; ctest -L fuzz
#                                         then runs each for TRAINBENCH_FUZZ_SECONDS, default 30).
# Crashing inputs are left in build-fuzz/fuzz-work/HARNESS/artifacts/; replay one with
#   build-fuzz/fuzz/fuzz_HARNESS FILE
# Exits non-zero when any harness crashed.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
seconds=${1:?usage: scripts/fuzz.sh SECONDS [HARNESS...] | --build-only}
shift

# Compiled with clang, never sharing objects with the gcc builds (ccache keys on the compiler).
# Tests on: scripts/test.sh builds the unit tests of core/, kube/, operator/ and telemetry/ in this
# tree (target sanitizer_unit_tests; in its full tier only here), so that one ASan + UBSan build of
# the libraries serves the tests and the harnesses.
CC=clang-14 CXX=clang++-14 cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRAINBENCH_FUZZ=ON -DTRAINBENCH_BUILD_WORKER=OFF -DTRAINBENCH_BUILD_TESTS=ON -DTRAINBENCH_UNIT_TESTS=ON \
  -DTRAINBENCH_FUZZ_SECONDS="${TRAINBENCH_FUZZ_SECONDS:-30}" >/dev/null
cmake --build "$BUILD_DIR" -j"$(nproc 2>/dev/null || echo 2)" --target fuzz_all
[ "$seconds" = "--build-only" ] && exit 0

harnesses=("$@")
if [ ${#harnesses[@]} -eq 0 ]; then
  mapfile -t harnesses < <(sed -n 's/^ *"\([a-z_0-9]*\):.*/\1/p' fuzz/CMakeLists.txt)
fi
declare -A max_len
while IFS=: read -r name _ len; do max_len[$name]=$len; done < <(sed -n 's/^ *"\([^"]*\)"$/\1/p' fuzz/CMakeLists.txt)

results=() failed=0
for h in "${harnesses[@]}"; do
  [ -n "${max_len[$h]:-}" ] || { echo "unknown harness: $h" >&2; exit 2; }
  log=$BUILD_DIR/fuzz-work/$h.log
  mkdir -p "$BUILD_DIR/fuzz-work"
  if ! bash fuzz/run_harness.sh "$BUILD_DIR/fuzz/fuzz_$h" "$h" "$seconds" "${max_len[$h]}" \
       "$PWD/$BUILD_DIR/fuzz-work" | tee "$log"; then
    failed=1
  fi
  results+=("$(grep '^FUZZ_RESULT' "$log" | tail -n1)")
done

echo
echo "| harness | seconds | executions | exec/s | crashes |"
echo "| --- | ---: | ---: | ---: | ---: |"
for r in "${results[@]}"; do
  read -r _ name secs execs rate crashes rest <<<"$r"
  echo "| $name | $secs | $execs | $rate | $crashes${rest:+ $rest} |"
done
exit $failed

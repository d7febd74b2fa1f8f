#!/usr/bin/env bash
# Runs one libFuzzer harness the way ctest and scripts/fuzz.sh do:
#  1. replays every seed (fuzz/corpus/NAME/) and regression case (fuzz/regressions/NAME/) whole,
#     as files (so the 100 KB regression inputs are run in full whatever -max_len is);
#  2. fuzzes for SECONDS from those seeds, one process, -timeout=5 per input, -max_len=MAX_LEN.
# Any crash, leak, UBSan report, timeout or out-of-memory fails it (exit status != 0); the input
# is left in WORK/NAME/artifacts/. The last line is
#   FUZZ_RESULT <name> <seconds> <execs> <exec/s> <crashes>
# Usage: run_harness.sh BINARY NAME SECONDS MAX_LEN WORK
# FUZZ_RUNS=N (environment) ends the fuzzing after N executions if that comes before SECONDS.
set -uo pipefail
bin=$1 name=$2 seconds=$3 max_len=$4 work=$5
here=$(cd "$(dirname "$0")" && pwd)
seeds=$here/corpus/$name
regressions=$here/regressions/$name
dir=$work/$name
rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/artifacts"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
common=(-timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=2048 "-artifact_prefix=$dir/artifacts/")
runs=()
[ -n "${FUZZ_RUNS:-}" ] && runs=(-runs="$FUZZ_RUNS")

mapfile -t files < <(find "$seeds" "$regressions" -type f 2>/dev/null | sort)
echo "== $name: replaying ${#files[@]} seed and regression inputs"
if ((${#files[@]})) && ! "$bin" "${common[@]}" "${files[@]}" >"$dir/replay.log" 2>&1; then
  tail -n 60 "$dir/replay.log"
  echo "FUZZ_RESULT $name 0 0 0 1 (replay failed: $(grep -o 'Running: .*' "$dir/replay.log" | tail -n1))"
  exit 1
fi

echo "== $name: fuzzing for ${seconds}s (-max_len=$max_len)"
start=$(date +%s)
"$bin" "${common[@]}" -max_len="$max_len" -max_total_time="$seconds" -print_final_stats=1 \
  -print_pcs=0 -reload=0 "${runs[@]}" "$dir/corpus" "$seeds" >"$dir/fuzz.log" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -n1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/fuzz.log" | tail -n1)
crashes=$(find "$dir/artifacts" -type f | wc -l)
grep -E '^#[0-9]+ +(INITED|DONE)' "$dir/fuzz.log" | tail -n 2
if ((rc != 0)); then
  tail -n 80 "$dir/fuzz.log"
  ((crashes == 0)) && crashes=1
fi
echo "FUZZ_RESULT $name $elapsed ${execs:-?} ${rate:-?} $crashes"
exit $((rc != 0))

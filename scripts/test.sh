#!/usr/bin/env bash
# README command 2: install the dependencies, build, and run every test.
#  0. the real Kubernetes control plane (scripts/controlplane.sh: from the Go module proxy, cached)
#     and Python PyTorch for the examples whose workloads are Python programs (scripts/python-torch.sh);
#  1. the full build (core, cli, worker) and all ctest tests (label controlplane: on that control plane)
#     but the unit-test programs of core, crd, kube, operator and telemetry, which step 2 runs;
#  2. core/, kube/, operator/ and telemetry/ rebuilt with clang, AddressSanitizer + UBSan
#     (build-fuzz/), and those unit tests run there;
#  3. the libFuzzer harnesses in that same tree (fuzz/): each replays its seeds and regression
#     cases, then fuzzes for TRAINBENCH_FUZZ_SECONDS (15 here; fuzz.sh's default 30) seconds.
# Exits non-zero when any test fails.
#
# scripts/test.sh --quick: the inner loop (docs/development.md, "Test tiers"): the same build, then
# every test that needs neither the control plane nor a long real-worker run, and a few end-to-end
# runs of the real `trainbench` with the real worker. No control plane, no Python venv, no ASan, no
# fuzzing; CI runs the full command.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=full
case "${1:-}" in
  "") ;;
  --quick) tier=quick ;;
  *) echo "usage: scripts/test.sh [--quick]  (unknown argument: $1)" >&2; exit 2 ;;
esac
# ctest_in DIR ARGS...: ctest in DIR; when a test fails, the reasons end the log
# (scripts/failed-test-output.sh) and the script fails.
ctest_in() {
  local dir=$1
  shift
  (cd "$dir" && ctest "$@") || { bash scripts/failed-test-output.sh "$dir"; return 1; }
}
bash scripts/install-deps.sh
if [[ $tier == quick ]]; then
  echo "== build (RelWithDebInfo) =="
  bash scripts/build.sh -DTRAINBENCH_BUILD_TESTS=ON -DTRAINBENCH_UNIT_TESTS=ON
  # Left out: every label that needs the control plane or a tool built for it, and the test
  # programs whose cases each train the real worker for many seconds (the e2e suites of cli/ and
  # worker/; ExampleRun, ProgramRun: examples and Python programs).
  heavy_labels='^(controlplane|chaos|scale|images|kueue|metrics|helm|dashboard|probe|e2e)$'
  heavy_suites='(^|[./])(DdpCorrectness|WorkerRun|WorkerMetricsE2E|RealWorkerTest|CliParadigms|ModelsRun|PrecisionRun|HybridPsRun|HangRun|StragglerE2e|NodeLaunch|AllreduceE2e|ExampleRun|ProgramRun)\.'
  echo "== quick tier: unit tests and fake-worker end-to-end runs =="
  ctest_in build --output-on-failure --timeout 300 -j"${CTEST_JOBS:-2}" -LE "$heavy_labels" -E "$heavy_suites"
  echo "== quick tier: a few real-worker end-to-end runs =="
  # The seed-style sweep report, a killed rank cleaned up, all-reduce's bus bandwidth, a hang named.
  quick_e2e='^(RealWorkerTest\.(MlpSweepProducesSeedStyleReport|KilledRankFailsTheRunAndNothingIsLeftBehind)|AllreduceE2e\.TwoRanksReportBusbwAgainstTheCopyLimit|HangRun\.DdpStoppedRankIsNamedAndEverythingStops)$'
  ctest_in build --output-on-failure --timeout 300 -R "$quick_e2e"
  exit 0
fi
echo "== the Kubernetes control plane for the controlplane tests (built once per machine) =="
bash scripts/controlplane.sh
echo "== Python PyTorch for the program-workload examples (scripts/python-torch.sh: made once per machine) =="
# One after the other: side by side (the venv's download beside the Go build) a fresh machine
# took 556 s for both, against 385 s + 126 s in turn in the cold run before (2026-12-07).
bash scripts/python-torch.sh >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build (RelWithDebInfo) =="
# Tests on again after a quickstart build (OFF). The unit-test programs of core, crd, kube,
# operator and telemetry are left to the sanitizer tree below, which builds and runs them anyway
# (with the sanitizers): here too they took about 140 core-seconds of a cold build at -O1 and 55
# to run (docs/development.md, "Where the time goes").
bash scripts/build.sh -DTRAINBENCH_BUILD_TESTS=ON -DTRAINBENCH_UNIT_TESTS=OFF
echo "== tests =="
# Two tests at a time (CTEST_JOBS to change): every test on the shared control plane works in a
# namespace and on node agents of its own (each agent owns its pod IP block), and while one waits
# on a pod or a watch the other computes. Tests that need the CPU or the API server to themselves
# (the CLI's real-worker runs, the Prometheus timing comparison, the soak, the API-server restart)
# are RUN_SERIAL in their CMakeLists and run alone.
#
# Beside them, at the lowest CPU priority, the clang tree of the sanitizer tests and the fuzz
# harnesses (build-fuzz/, scripts/fuzz.sh: the libraries compiled once with ASan + UBSan and
# libFuzzer's coverage, linked into both). The tests leave a core idle for minutes at a time (they
# wait on pods, watches, restarts: 1,000 idle core-seconds in a cold run's ctest, 2026-12-07), and
# the tree needs about as many (209 s + 279 s on both cores, built after ctest); in the tests' way
# it takes what they leave. Its own session (setsid) with the autogroup's nice at 19 too: with
# the kernel's autogroups a process's nice counts only within its session. Its output follows the
# tests'; when ctest fails it is stopped.
# The harnesses fuzz 15 s each here (fuzz.sh's own default is 30): with their seeds and
# regression cases replayed first, as ever; 9 x 15 s less on the suite's clock.
export TRAINBENCH_FUZZ_SECONDS=${TRAINBENCH_FUZZ_SECONDS:-15}
sanitizer_log=$(mktemp)
setsid -w nice -n 19 bash -c "echo 19 >/proc/self/autogroup 2>/dev/null
  bash scripts/fuzz.sh --build-only && cmake --build build-fuzz -j$jobs --target sanitizer_unit_tests" \
  >"$sanitizer_log" 2>&1 &
sanitizer_pid=$!
# shellcheck disable=SC2064
trap "kill -- -$sanitizer_pid 2>/dev/null; rm -f '$sanitizer_log'" EXIT
ctest_in build --output-on-failure --timeout 600 -j"${CTEST_JOBS:-2}"

echo "== core/ and operator/ tests, then the fuzz harnesses, under AddressSanitizer + UBSan =="
sanitizer_rc=0
wait "$sanitizer_pid" || sanitizer_rc=$?
trap - EXIT
cat "$sanitizer_log"
rm -f "$sanitizer_log"
[ "$sanitizer_rc" = 0 ] || { echo "test.sh: the clang ASan + UBSan tree failed to build (exit $sanitizer_rc)" >&2; exit 1; }
# The control-plane and end-to-end tests run in the normal build above.
lsan_supp="$PWD/.ci/lsan.supp"  # library-internal leaks only, each explained there
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  LSAN_OPTIONS="suppressions=$lsan_supp:print_suppressions=0" \
  ctest_in build-fuzz --output-on-failure -L "^(core|crd|operator|kube|telemetry)$" -E "e2e|controlplane" -j"$jobs"

echo "== fuzz harnesses (libFuzzer + ASan + UBSan, $TRAINBENCH_FUZZ_SECONDS s each) =="
ctest_in build-fuzz --output-on-failure -L fuzz -j"$jobs"

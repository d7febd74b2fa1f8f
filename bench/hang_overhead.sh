#!/usr/bin/env bash
# What the hang watch costs a step: the same job with spec.runPolicy.hangTimeoutSeconds 0 (no
# progress records, no heartbeat, no watcher) and on, run alternately PAIRS times (off, on, off,
# on, ...) so that a noisy neighbour hits both alike. Prints each pair's p50 sec/iter and the
# median of the on/off ratios, as a Markdown table (docs/performance.md, "Hang watch").
#
#   [PAIRS=6] [MODEL_LINE=...] bash bench/hang_overhead.sh [BUILD_DIR (build)]
#
# Default job: DDP over 2 ranks, mlp 1024-4096-4096-1000, batch 32, 1 thread per rank.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=/usr/bin/python3
PAIRS=${PAIRS:-6}
WARMUP=${WARMUP:-5}
STEPS=${STEPS:-30}
REPEATS=${REPEATS:-3}
HANG=${HANG:-60}
MODEL_LINE=${MODEL_LINE:-"    mlp: {inputSize: 1024, hiddenSizes: [4096, 4096], numClasses: 1000}"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source "$(dirname "$0")/lib.sh"

job() {  # job HANG_TIMEOUT
  cat <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: bench-hang-watch}
spec:
  benchmark:
    model: mlp
    batchSizePerDevice: 32
    warmupSteps: $WARMUP
    measureSteps: $STEPS
    repeats: $REPEATS
    threadsPerProcess: 1
$MODEL_LINE
  sweep:
    - {nodes: 1, devicesPerNode: 2}
  runPolicy: {hangTimeoutSeconds: $1}
YAML
}
job 0 >"$out/off.yaml"
job "$HANG" >"$out/on.yaml"

p50() {  # p50 JOB_FILE: the run's p50 sec/iter (median over its repeats)
  TRAINBENCH_WORKER="$BUILD/worker/trainbench-worker" "$BUILD/cli/trainbench" run "$1" --json "$out/report.json" \
    >/dev/null 2>"$out/run.log" || { cat "$out/run.log" >&2; exit 1; }
  $PY -c "import json; print('%.5f' % json.load(open('$out/report.json'))['runs'][0]['secPerIter']['p50'])"
}

echo "| pair | off p50 s/iter | on p50 s/iter | on / off |"
echo "| --- | --- | --- | --- |"
ratios=()
for pair in $(seq 1 "$PAIRS"); do
  off=$(p50 "$out/off.yaml")
  on=$(p50 "$out/on.yaml")
  r=$($PY -c "print('%.4f' % ($on / $off))")
  ratios+=("$r")
  echo "| $pair | $off | $on | $r |"
done
echo
echo "on/off over the pairs: median (min-max) $(range 4 "${ratios[@]}")"
echo "(PAIRS=$PAIRS WARMUP=$WARMUP STEPS=$STEPS REPEATS=$REPEATS hangTimeoutSeconds on=$HANG; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"

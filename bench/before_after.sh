#!/usr/bin/env bash
# The C++ side of bench/ddp_vs_pytorch.sh (mlp 1024-4096-4096-1000, batch 32: no ddp, ddp x1,
# ddp x2) with two builds of trainbench, run alternately ROUNDS times (before, after, before, ...)
# so that a noisy neighbour hits both alike. For a refactoring: "no slowdown" means the after
# column's median sits inside the before column's range. Prints a Markdown table.
#
#   [ROUNDS=5] bash bench/before_after.sh BEFORE_BUILD_DIR [AFTER_BUILD_DIR (build)]
#
# A build dir is anything holding cli/trainbench and worker/trainbench-worker.
set -euo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:?usage: bench/before_after.sh BEFORE_BUILD_DIR [AFTER_BUILD_DIR]}
AFTER=${2:-build}
PY=/usr/bin/python3
WARMUP=${WARMUP:-5}
STEPS=${STEPS:-20}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-5}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source "$(dirname "$0")/lib.sh"

ddp_job_yaml mlp 32 "    mlp: {inputSize: 1024, hiddenSizes: [4096, 4096], numClasses: 1000}" >"$out/job.yaml"

# p50s BUILD: the three runs' p50 sec/iter, space separated
p50s() {
  TRAINBENCH_WORKER="$1/worker/trainbench-worker" "$1/cli/trainbench" run "$out/job.yaml" --json "$out/report.json" \
    >/dev/null 2>"$out/run.log" || { cat "$out/run.log" >&2; exit 1; }
  $PY -c "import json; print(' '.join('%.4f' % r['secPerIter']['p50'] for r in json.load(open('$out/report.json'))['runs']))"
}

declare -a b0=() b1=() b2=() a0=() a1=() a2=()
for round in $(seq 1 "$ROUNDS"); do
  read -r x y z < <(p50s "$BEFORE"); b0+=("$x"); b1+=("$y"); b2+=("$z")
  read -r x y z < <(p50s "$AFTER"); a0+=("$x"); a1+=("$y"); a2+=("$z")
  echo "round $round/$ROUNDS done" >&2
done
labels=("no ddp" "1M/1G" "1M/2G")
echo "| configuration | before p50 s/iter | after p50 s/iter | after / before |"
echo "| --- | --- | --- | --- |"
for i in 0 1 2; do
  eval "b=(\"\${b$i[@]}\"); a=(\"\${a$i[@]}\")"
  ratio=$($PY -c "print('%.3f' % ($(median 4 "${a[@]}") / $(median 4 "${b[@]}")))")
  echo "| mlp 1024-4096-4096-1000, batch 32, ${labels[$i]} | $(range 4 "${b[@]}") | $(range 4 "${a[@]}") | $ratio |"
done
echo
echo "(WARMUP=$WARMUP STEPS=$STEPS REPEATS=$REPEATS THREADS=$THREADS ROUNDS=$ROUNDS; median over rounds, range in brackets)"

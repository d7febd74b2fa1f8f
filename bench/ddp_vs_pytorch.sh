#!/usr/bin/env bash
# Side by side: trainbench's C++ worker (none, ddp x1, ddp x2) and PyTorch's own Python DDP on the
# same model, batch, thread and step settings. Prints a Markdown table for docs/performance.md.
#
#   TRAINBENCH_WITH_PYTHON=1 bash scripts/install-deps.sh   # python3-torch, python3-torchvision
#   [ROUNDS=3] [CASES="mlp resnet18"] bash bench/ddp_vs_pytorch.sh [build-dir]
#
# Each configuration runs WARMUP steps, then REPEATS x STEPS timed steps; its p50 sec/iter is the
# median over repeats of the all-rank p50, computed the same way on both sides. The two sides run
# alternately, ROUNDS times (C++, Python, C++, Python, ...), and the table shows the median over
# rounds with the range, so that a noisy neighbour on a shared machine hits both sides alike.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=/usr/bin/python3
WARMUP=${WARMUP:-5}
STEPS=${STEPS:-20}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
CASES=${CASES:-mlp resnet18}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# model -> batch | extra spec lines | python args
declare -A BATCH=([mlp]=32 [resnet18]=8)
declare -A SPEC=([mlp]="    mlp: {inputSize: 1024, hiddenSizes: [4096, 4096], numClasses: 1000}" [resnet18]="    imageSize: 224")
declare -A PYARGS=([mlp]="--mlp-input 1024 --mlp-hidden 4096 4096 --mlp-classes 1000" [resnet18]="--image-size 224")
declare -A SHAPE=([mlp]="mlp 1024-4096-4096-1000" [resnet18]="resnet18 224 px")

p50() { $PY -c 'import json,sys; print("%.4f" % json.loads(sys.stdin.read().strip().splitlines()[-1])["secPerIter"]["p50"])'; }
source "$(dirname "$0")/lib.sh"

# The worker keeps freed memory in the heap (worker/system_probe.hpp); give Python the same policy
# through glibc's tunables for the like-for-like column, and show glibc's default too.
SAME_MALLOC="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647"
MODES=("--no-ddp" "--world-size 1" "--world-size 2")

echo "| model | batch/rank | threads/rank | configuration | trainbench C++ p50 s/iter | PyTorch Python p50 s/iter, same allocator policy | C++ / Python | PyTorch Python p50 s/iter, glibc default |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for model in $CASES; do
  batch=${BATCH[$model]}
  ddp_job_yaml "$model" "$batch" "${SPEC[$model]}" >"$out/job.yaml"
  common=(--model "$model" --batch "$batch" --threads "$THREADS" --warmup "$WARMUP" --steps "$STEPS" --repeats "$REPEATS")
  # shellcheck disable=SC2206
  extra_py=(${PYARGS[$model]})
  declare -a cpp0=() cpp1=() cpp2=() py0=() py1=() py2=() pd0=() pd1=() pd2=()
  for round in $(seq 1 "$ROUNDS"); do
    "$BUILD/cli/trainbench" run "$out/job.yaml" --json "$out/report.json" >/dev/null 2>"$out/run.log" || { cat "$out/run.log"; exit 1; }
    for i in 0 1 2; do
      v=$($PY -c "import json; print('%.4f' % json.load(open('$out/report.json'))['runs'][$i]['secPerIter']['p50'])")
      eval "cpp$i+=($v)"
    done
    for i in 0 1 2; do
      # shellcheck disable=SC2086
      v=$(GLIBC_TUNABLES=$SAME_MALLOC $PY bench/pytorch_ddp.py "${common[@]}" "${extra_py[@]}" ${MODES[$i]} | p50)
      eval "py$i+=($v)"
      # shellcheck disable=SC2086
      v=$($PY bench/pytorch_ddp.py "${common[@]}" "${extra_py[@]}" ${MODES[$i]} | p50)
      eval "pd$i+=($v)"
    done
    echo "round $round/$ROUNDS of $model done" >&2
  done
  for i in 0 1 2; do
    label=$($PY -c "import json; r=json.load(open('$out/report.json'))['runs'][$i]; print(r['devices'] + ' -- ' + r['label'])")
    eval "c=(\"\${cpp$i[@]}\"); p=(\"\${py$i[@]}\"); d=(\"\${pd$i[@]}\")"
    ratio=$($PY -c "print('%.3f' % ($(median 4 "${c[@]}") / $(median 4 "${p[@]}")))")
    echo "| ${SHAPE[$model]} | $batch | $THREADS | $label | $(range 4 "${c[@]}") | $(range 4 "${p[@]}") | $ratio | $(range 4 "${d[@]}") |"
  done
done
echo
echo "(WARMUP=$WARMUP STEPS=$STEPS REPEATS=$REPEATS THREADS=$THREADS ROUNDS=$ROUNDS; median over rounds, range in brackets)"

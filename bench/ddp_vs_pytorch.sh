#!/usr/bin/env bash
# Side by side: trainbench's C++ worker with PyTorch's own DDP (c10d::Reducer, the default
# spec.benchmark.ddp.implementation), the same worker with trainbench's reducer, and Python's
# torch.nn.parallel.DistributedDataParallel, on the same model, batch, thread and step settings
# and the same libtorch binary (the torch 2.15.0 wheel: the worker's libtorch is unpacked from it,
# Python's venv installs it). Prints a Markdown table for docs/performance.md.
#
#   bash scripts/python-torch.sh          # once: the venv with Python PyTorch (2.8 GB of wheels)
#   [ROUNDS=3] [CASES="mlp resnet18"] bash bench/ddp_vs_pytorch.sh [build-dir]
#
# Each configuration runs WARMUP steps, then REPEATS x STEPS timed steps; its p50 sec/iter is the
# median over repeats of the all-rank p50, computed the same way on all sides. The sides run
# alternately, ROUNDS times, and the table shows the median over rounds with the range, so that a
# noisy neighbour on a shared machine hits every side alike. A model Python cannot build (resnet18
# needs torchvision, which PyPI may not have for this torch yet) gets "-" in the Python columns.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=$(bash scripts/python-torch.sh --path) || { echo "run scripts/python-torch.sh first" >&2; exit 1; }
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

# cpp_run IMPLEMENTATION MODEL: the three p50s of one `trainbench run` into $out/IMPLEMENTATION.p50
cpp_run() {
  ddp_job_yaml "$2" "${BATCH[$2]}" "${SPEC[$2]}
    ddp: {implementation: $1}" >"$out/job-$1.yaml"
  "$BUILD/cli/trainbench" run "$out/job-$1.yaml" --json "$out/report.json" >/dev/null 2>"$out/run.log" || { cat "$out/run.log"; exit 1; }
  $PY -c "import json; print(' '.join('%.4f' % r['secPerIter']['p50'] for r in json.load(open('$out/report.json'))['runs']))" >"$out/$1.p50"
}

echo "| model | batch/rank | threads/rank | configuration | C++ worker, PyTorch's DDP (c10d::Reducer) | C++ worker, trainbench's reducer | Python DDP, same allocator policy | C++ PyTorch DDP / Python | Python DDP, glibc default |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for model in $CASES; do
  batch=${BATCH[$model]}
  common=(--model "$model" --batch "$batch" --threads "$THREADS" --warmup "$WARMUP" --steps "$STEPS" --repeats "$REPEATS")
  # shellcheck disable=SC2206
  extra_py=(${PYARGS[$model]})
  python_side=1
  [ "$model" = mlp ] || "$PY" -c 'import torchvision' 2>/dev/null || python_side=0
  declare -a tp0=() tp1=() tp2=() tb0=() tb1=() tb2=() py0=() py1=() py2=() pd0=() pd1=() pd2=()
  for round in $(seq 1 "$ROUNDS"); do
    for impl in pytorch trainbench; do
      cpp_run "$impl" "$model"
      read -r a b c <"$out/$impl.p50"
      if [ $impl = pytorch ]; then tp0+=("$a"); tp1+=("$b"); tp2+=("$c"); else tb0+=("$a"); tb1+=("$b"); tb2+=("$c"); fi
    done
    for i in 0 1 2; do
      [ $python_side = 1 ] || break
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
    eval "t=(\"\${tp$i[@]}\"); b=(\"\${tb$i[@]}\"); p=(\"\${py$i[@]}\"); d=(\"\${pd$i[@]}\")"
    if [ $python_side = 1 ]; then
      ratio=$($PY -c "print('%.3f' % ($(median 4 "${t[@]}") / $(median 4 "${p[@]}")))")
      pycells="$(range 4 "${p[@]}") | $ratio | $(range 4 "${d[@]}")"
    else
      pycells="- | - | -"
    fi
    echo "| ${SHAPE[$model]} | $batch | $THREADS | $label | $(range 4 "${t[@]}") | $(range 4 "${b[@]}") | $pycells |"
  done
done
echo
echo "(WARMUP=$WARMUP STEPS=$STEPS REPEATS=$REPEATS THREADS=$THREADS ROUNDS=$ROUNDS; median over rounds, range in brackets)"

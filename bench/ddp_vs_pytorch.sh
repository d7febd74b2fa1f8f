#!/usr/bin/env bash
# Side by side: trainbench's C++ worker (none, ddp x1, ddp x2) and PyTorch's own Python DDP on the
# same model, batch, thread and step settings. Prints a Markdown table for docs/performance.md.
#
#   TRAINBENCH_WITH_PYTHON=1 bash scripts/install-deps.sh   # python3-torch, python3-torchvision
#   bash bench/ddp_vs_pytorch.sh [build-dir]
#
# Each configuration runs WARMUP steps, then REPEATS x STEPS timed steps; the p50 sec/iter shown is
# the median over repeats of the all-rank p50, computed the same way on both sides.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=/usr/bin/python3
WARMUP=${WARMUP:-5}
STEPS=${STEPS:-30}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# model  batch  extra-spec-lines  python-args
cases=(
  "mlp|32|    mlp: {inputSize: 1024, hiddenSizes: [4096, 4096], numClasses: 1000}|--mlp-input 1024 --mlp-hidden 4096 4096 --mlp-classes 1000"
  "resnet18|8|    imageSize: 224|--image-size 224"
)

p50() { $PY -c 'import json,sys; print("%.4f" % json.loads(sys.stdin.read().strip().splitlines()[-1])["secPerIter"]["p50"])'; }

# The worker keeps freed memory in the heap (worker/system_probe.hpp); give Python the same policy
# through glibc's tunables for the like-for-like column, and show glibc's default too.
SAME_MALLOC="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647"

echo "| model | batch/rank | threads/rank | configuration | trainbench C++ p50 s/iter | PyTorch Python p50 s/iter, same allocator policy | C++ / Python | PyTorch Python p50 s/iter, glibc default |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for c in "${cases[@]}"; do
  IFS='|' read -r model batch extra pyargs <<<"$c"
  cat >"$out/job.yaml" <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: bench-$model}
spec:
  benchmark:
    model: $model
    batchSizePerDevice: $batch
    warmupSteps: $WARMUP
    measureSteps: $STEPS
    repeats: $REPEATS
    threadsPerProcess: $THREADS
$extra
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 1}
    - {nodes: 1, devicesPerNode: 2}
YAML
  "$BUILD/cli/trainbench" run "$out/job.yaml" --json "$out/report.json" >/dev/null 2>"$out/run.log" || { cat "$out/run.log"; exit 1; }
  common=(--model "$model" --batch "$batch" --threads "$THREADS" --warmup "$WARMUP" --steps "$STEPS" --repeats "$REPEATS")
  # shellcheck disable=SC2206
  extra_py=($pyargs)
  py=()
  pydef=()
  for mode in "--no-ddp" "--world-size 1" "--world-size 2"; do
    # shellcheck disable=SC2086
    py+=("$(GLIBC_TUNABLES=$SAME_MALLOC $PY bench/pytorch_ddp.py "${common[@]}" "${extra_py[@]}" $mode | p50)")
    # shellcheck disable=SC2086
    pydef+=("$($PY bench/pytorch_ddp.py "${common[@]}" "${extra_py[@]}" $mode | p50)")
  done
  for i in 0 1 2; do
    label=$($PY -c "import json; r=json.load(open('$out/report.json'))['runs'][$i]; print(r['devices'] + ' -- ' + r['label'])")
    cpp=$($PY -c "import json; print('%.4f' % json.load(open('$out/report.json'))['runs'][$i]['secPerIter']['p50'])")
    ratio=$($PY -c "print('%.3f' % ($cpp / ${py[$i]}))")
    echo "| $model | $batch | $THREADS | $label | $cpp | ${py[$i]} | $ratio | ${pydef[$i]} |"
  done
done

#!/usr/bin/env bash
# Side by side: trainbench's `ddp` + adam and `zero` (ZeRO-1) against PyTorch's DDP + Adam and
# DDP + torch.distributed.optim.ZeroRedundancyOptimizer(Adam) (bench/pytorch_zero.py), same model,
# batch, threads, steps and statistics. Prints a Markdown table for docs/performance.md.
#
#   [ROUNDS=3] [WORLD=2] [HIDDEN="2048 2048 2048"] bash bench/zero_vs_pytorch.sh [build-dir]
#
# The sides run alternately ROUNDS times; each cell is the median over rounds (range in brackets).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=$(bash scripts/python-torch.sh --path) || { echo "run scripts/python-torch.sh first (Python PyTorch in a venv)" >&2; exit 1; }
WARMUP=${WARMUP:-3}
STEPS=${STEPS:-10}
REPEATS=${REPEATS:-3}
ROUNDS=${ROUNDS:-3}
WORLD=${WORLD:-2}
BATCH=${BATCH:-32}
HIDDEN=${HIDDEN:-2048 2048 2048}
LR=${LR:-0.0001}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
hidden_yaml=$(echo "$HIDDEN" | tr ' ' ',')
cat >"$out/job.yaml" <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: bench-zero}
spec:
  benchmark:
    model: mlp
    mlp: {inputSize: 1024, hiddenSizes: [$hidden_yaml], numClasses: 1000}
    batchSizePerDevice: $BATCH
    optimizer: adam
    learningRate: $LR
    warmupSteps: $WARMUP
    measureSteps: $STEPS
    repeats: $REPEATS
    threadsPerProcess: 1
  sweep:
    - {nodes: 1, devicesPerNode: $WORLD, paradigm: ddp}
    - {nodes: 1, devicesPerNode: $WORLD, paradigm: zero}
YAML
mib() { $PY -c 'import sys; print(" / ".join("%.0f" % (float(x) / 2**20) for x in sys.argv[1:]))' "$@"; }
source "$(dirname "$0")/lib.sh"
declare -a c_ddp=() c_zero=() p_ddp=() p_zero=()
for round in $(seq 1 "$ROUNDS"); do
  "$BUILD/cli/trainbench" run "$out/job.yaml" --json "$out/report.json" >/dev/null 2>"$out/run.log" || { cat "$out/run.log"; exit 1; }
  c_ddp+=("$($PY -c "import json; print(json.load(open('$out/report.json'))['runs'][0]['secPerIter']['p50'])")")
  c_zero+=("$($PY -c "import json; print(json.load(open('$out/report.json'))['runs'][1]['secPerIter']['p50'])")")
  for opt in adam zero; do
    # shellcheck disable=SC2086
    GLIBC_TUNABLES="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647" \
      $PY bench/pytorch_zero.py --optimizer $opt --world-size "$WORLD" --batch "$BATCH" --lr "$LR" \
      --warmup "$WARMUP" --steps "$STEPS" --repeats "$REPEATS" --mlp-hidden $HIDDEN | tail -1 >"$out/py-$opt.json"
  done
  p_ddp+=("$($PY -c "import json; print(json.load(open('$out/py-adam.json'))['secPerIter']['p50'])")")
  p_zero+=("$($PY -c "import json; print(json.load(open('$out/py-zero.json'))['secPerIter']['p50'])")")
  echo "round $round/$ROUNDS done" >&2
done
rss() { $PY -c "import json; r=json.load(open('$out/report.json'))['runs'][$1]['ranks']; print(' '.join(str(k['$2']) for k in r))"; }
echo "| mlp 1024-${HIDDEN// /-}-1000, batch $BATCH/rank, $WORLD ranks x 1 thread | p50 s/iter | peak RSS per rank (MiB, last round) | optimizer state per rank (MiB) |"
echo "| --- | --- | --- | --- |"
echo "| trainbench ddp + Adam | $(range 3 "${c_ddp[@]}") | $(mib $(rss 0 peakMemoryBytes)) | $(mib $(rss 0 optimizerStateBytes)) |"
echo "| trainbench zero (ZeRO-1, Adam) | $(range 3 "${c_zero[@]}") | $(mib $(rss 1 peakMemoryBytes)) | $(mib $(rss 1 optimizerStateBytes)) |"
pyfield() { $PY -c "import json; print(' '.join(str(x) for x in json.load(open('$out/py-$1.json'))['$2']))"; }
echo "| PyTorch DDP + Adam | $(range 3 "${p_ddp[@]}") | $(mib $(pyfield adam peakRss)) | $(mib $(pyfield adam optimizerStateBytes)) |"
echo "| PyTorch DDP + ZeroRedundancyOptimizer(Adam) | $(range 3 "${p_zero[@]}") | $(mib $(pyfield zero peakRss)) | $(mib $(pyfield zero optimizerStateBytes)) |"
echo
echo "(WARMUP=$WARMUP STEPS=$STEPS REPEATS=$REPEATS ROUNDS=$ROUNDS; median over rounds, range in brackets)"

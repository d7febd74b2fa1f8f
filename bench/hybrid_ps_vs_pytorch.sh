#!/usr/bin/env bash
# Side by side: trainbench's `hybrid-ps` (T trainers with the dense part under DDP, P parameter
# servers holding the embedding tables) against PyTorch's own DDP + RPC version of the same
# HybridModel (bench/pytorch_hybrid_ps.py: RemoteModule EmbeddingBags on the servers, distributed
# autograd, DistributedOptimizer), same shapes, batch, threads, steps and statistics. Prints a
# Markdown table for docs/performance.md.
#
#   [ROUNDS=3] [CONFIGS="1x1 2x2"] [BATCH=32] [TABLES=8 EMBEDDINGS=300 DIM=64 BAG=5 \
#    DENSE="256 128 64 32" CLASSES=8] bash bench/hybrid_ps_vs_pytorch.sh [build-dir]
#
# CONFIGS lists TxP: T trainers (sweep {nodes: 1, devicesPerNode: T}) and P parameter servers
# (hybridPs.parameterServers). Each configuration runs WARMUP steps, then REPEATS x STEPS timed
# steps; p50 sec/iter is the median over repeats of the p50 of all trainers' steps pooled, and
# examples/sec the "All" rate (T x batch / sec), on both sides. The sides run alternately ROUNDS
# times (C++, Python, C++, Python, ...); each cell is the median over rounds (range in brackets).
# PyTorch places each table whole on server k % P, trainbench shards every table's rows over all
# P servers: see bench/pytorch_hybrid_ps.py's docstring for what that changes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=$(bash scripts/python-torch.sh --path) || { echo "run scripts/python-torch.sh first (Python PyTorch in a venv)" >&2; exit 1; }
WARMUP=${WARMUP:-5}
STEPS=${STEPS:-20}
REPEATS=${REPEATS:-3}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
CONFIGS=${CONFIGS:-1x1 2x2}
BATCH=${BATCH:-32}
TABLES=${TABLES:-8}
EMBEDDINGS=${EMBEDDINGS:-300}
DIM=${DIM:-64}
BAG=${BAG:-5}
DENSE=${DENSE:-256 128 64 32}
CLASSES=${CLASSES:-8}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
dense_yaml=$(echo "$DENSE" | tr ' ' ',')
# The worker keeps freed memory in the heap (worker/system_probe.hpp); Python gets the same policy
# through glibc's tunables, as in bench/ddp_vs_pytorch.sh and bench/zero_vs_pytorch.sh.
SAME_MALLOC="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647"

source "$(dirname "$0")/lib.sh"
# field of a JSON file: field FILE EXPR (EXPR indexes the parsed object j)
field() { $PY -c "import json, sys; j = json.load(open(sys.argv[1])); print($2)" "$1"; }

job() {  # job T P -> the BenchmarkJob of one configuration
  cat <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: bench-hybrid-ps-$1x$2}
spec:
  benchmark:
    model: hybrid-embedding
    paradigm: hybrid-ps
    batchSizePerDevice: $BATCH
    warmupSteps: $WARMUP
    measureSteps: $STEPS
    repeats: $REPEATS
    threadsPerProcess: $THREADS
    hybridEmbedding: {numTables: $TABLES, numEmbeddings: $EMBEDDINGS, embeddingDim: $DIM, bagSize: $BAG, denseSizes: [$dense_yaml], numClasses: $CLASSES}
    hybridPs: {parameterServers: $2}
  sweep:
    - {nodes: 1, devicesPerNode: $1}
YAML
}

for cfg in $CONFIGS; do
  [[ $cfg =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] || { echo "CONFIGS: '$cfg' is not TxP (e.g. 2x2)" >&2; exit 2; }
  job "${cfg%x*}" "${cfg#*x}" >"$out/job-$cfg.yaml"
done

declare -A C_SEC=() C_EX=() P_SEC=() P_EX=()
for round in $(seq 1 "$ROUNDS"); do
  for cfg in $CONFIGS; do
    T=${cfg%x*} P=${cfg#*x}
    "$BUILD/cli/trainbench" run "$out/job-$cfg.yaml" --json "$out/report.json" >/dev/null 2>"$out/run.log" || { cat "$out/run.log"; exit 1; }
    [[ $(field "$out/report.json" "j['runs'][0].get('phase', 'Succeeded')") == Succeeded ]] || { echo "trainbench $cfg failed:" >&2; cat "$out/report.json" >&2; exit 1; }
    C_SEC[$cfg]+=" $(field "$out/report.json" "j['runs'][0]['secPerIter']['p50']")"
    C_EX[$cfg]+=" $(field "$out/report.json" "j['runs'][0]['examplesPerSec']['p50']")"
    # shellcheck disable=SC2086
    GLIBC_TUNABLES=$SAME_MALLOC $PY bench/pytorch_hybrid_ps.py --trainers "$T" --servers "$P" --batch "$BATCH" --threads "$THREADS" \
      --warmup "$WARMUP" --steps "$STEPS" --repeats "$REPEATS" --num-tables "$TABLES" --num-embeddings "$EMBEDDINGS" \
      --embedding-dim "$DIM" --bag-size "$BAG" --dense-sizes $DENSE --num-classes "$CLASSES" \
      2>"$out/py.log" | tail -1 >"$out/py.json" || { cat "$out/py.log"; exit 1; }
    P_SEC[$cfg]+=" $(field "$out/py.json" "j['all']['secPerIter']['p50']")"
    P_EX[$cfg]+=" $(field "$out/py.json" "j['all']['examplesPerSec']['p50']")"
  done
  echo "round $round/$ROUNDS done" >&2
done

echo "| hybrid-embedding ${TABLES}x${EMBEDDINGS}x${DIM} bag $BAG, dense ${DENSE// /-}-$CLASSES | batch/trainer | threads/process | trainbench C++ p50 s/iter | PyTorch RPC + DDP p50 s/iter | C++ / PyTorch | trainbench examples/s (All) | PyTorch examples/s (All) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for cfg in $CONFIGS; do
  T=${cfg%x*} P=${cfg#*x}
  # shellcheck disable=SC2086
  ratio=$($PY -c "print('%.3f' % ($(median 6 ${C_SEC[$cfg]}) / $(median 6 ${P_SEC[$cfg]})))")
  # shellcheck disable=SC2086
  echo "| $T trainers + $P parameter servers | $BATCH | $THREADS | $(range 4 ${C_SEC[$cfg]}) | $(range 4 ${P_SEC[$cfg]}) | $ratio | $(range 0 ${C_EX[$cfg]}) | $(range 0 ${P_EX[$cfg]}) |"
done
echo
echo "(WARMUP=$WARMUP STEPS=$STEPS REPEATS=$REPEATS THREADS=$THREADS ROUNDS=$ROUNDS; median over rounds, range in brackets;"
echo " PyTorch: each table whole on server k % P, plus 1 master process, glibc malloc as the worker's;"
echo " trainbench: every table's rows sharded over the P servers)"

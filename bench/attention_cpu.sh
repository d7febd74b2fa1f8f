#!/usr/bin/env bash
# Fused (flash) attention against eager on the CPU: bert-base and gpt2-small trained by the
# worker with spec.benchmark.transformer.attention fused (at::scaled_dot_product_attention, the
# CPU flash kernel of libtorch 2.x) and eager (matmul, softmax, matmul), one process, dropout as
# the models have it. The two run alternately, ROUNDS times; each cell is the median over rounds
# with the range. Losses are the report's first -> last measured step (the mean over ranks).
#
#   [ROUNDS=3] [MODELS="bert-base gpt2-small"] [BATCH=4] [SEQ=256] [PRECISION=fp32] \
#     bash bench/attention_cpu.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
PY=python3
ROUNDS=${ROUNDS:-3}
MODELS=${MODELS:-bert-base gpt2-small}
BATCH=${BATCH:-4}
SEQ=${SEQ:-256}
PRECISION=${PRECISION:-fp32}
WARMUP=${WARMUP:-2}
STEPS=${STEPS:-5}
REPEATS=${REPEATS:-2}
THREADS=${THREADS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
source "$(dirname "$0")/lib.sh"

job_yaml() {  # MODEL ATTENTION
  cat <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: attention-$2}
spec:
  benchmark:
    model: $1
    precision: $PRECISION
    batchSizePerDevice: $BATCH
    sequenceLength: $SEQ
    warmupSteps: $WARMUP
    measureSteps: $STEPS
    repeats: $REPEATS
    threadsPerProcess: $THREADS
    transformer: {attention: $2}
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
YAML
}

echo "| model | precision | batch x sequence | eager p50 s/iter | fused p50 s/iter | fused / eager | eager loss first -> last | fused loss first -> last |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for model in $MODELS; do
  declare -a e=() f=()
  for round in $(seq 1 "$ROUNDS"); do
    for att in eager fused; do
      job_yaml "$model" "$att" >"$out/job.yaml"
      "$BUILD/cli/trainbench" run "$out/job.yaml" --json "$out/$att.json" >/dev/null 2>"$out/run.log" || { cat "$out/run.log"; exit 1; }
      v=$($PY -c "import json; r=json.load(open('$out/$att.json')); assert r['environment']['attention'] == '$att', r['environment']; print('%.4f' % r['runs'][0]['secPerIter']['p50'])")
      if [ $att = eager ]; then e+=("$v"); else f+=("$v"); fi
    done
    echo "round $round/$ROUNDS of $model done" >&2
  done
  loss() { $PY -c "import json; r=json.load(open('$out/$1.json'))['runs'][0]; print('%.4f -> %.4f' % (r['lossStart'], r['lossEnd']))"; }
  ratio=$($PY -c "print('%.3f' % ($(median 4 "${f[@]}") / $(median 4 "${e[@]}")))")
  echo "| $model | $PRECISION | $BATCH x $SEQ | $(range 4 "${e[@]}") | $(range 4 "${f[@]}") | $ratio | $(loss eager) | $(loss fused) |"
done
echo
echo "(WARMUP=$WARMUP STEPS=$STEPS REPEATS=$REPEATS THREADS=$THREADS ROUNDS=$ROUNDS; median over rounds, range in brackets; losses of the last round)"

#!/usr/bin/env bash
# Issue 5's paradigms under the operator: one job whose sweep runs zero (2 ranks on 2 trainer
# pods), pipeline (2 stages, 2 micro-batches, in one pod), model-parallel and the allreduce
# benchmark, and a small gpt2 with amp-bf16 under ddp. Every run must succeed through the master
# pod's result ConfigMap, and the report in the job's status must carry each paradigm's own
# fields (optimizer state, pipeline stages and bubble, all-reduce busbw, loss at start and end).
source "$(dirname "$0")/lib.sh"

start_cluster
JOB=paradigms
cat >"$WORK/job.yaml" <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: $JOB}
spec:
  benchmark:
    model: mlp
    mlp: {inputSize: 64, hiddenSizes: [64, 64], numClasses: 10}
    batchSizePerDevice: 8
    warmupSteps: 1
    measureSteps: 3
    repeats: 1
    threadsPerProcess: 1
    pipeline: {microBatches: 2}
    allreduce: {minBytes: 1024, maxBytes: 4096}
  sweep:
    - {nodes: 2, devicesPerNode: 1, paradigm: zero}
    - {nodes: 1, devicesPerNode: 2, paradigm: pipeline}
    - {nodes: 1, devicesPerNode: 2, paradigm: model-parallel}
    - {nodes: 2, devicesPerNode: 1, paradigm: allreduce}
  masterPort: 29500
  template: {image: trainbench/worker:0.1.0}
  runPolicy: {backoffLimit: 0}
YAML
kc apply -f "$WORK/job.yaml" >/dev/null
wait_phase "$JOB" Succeeded || fail "job did not succeed: $(kc get bj $JOB -o jsonpath='{.status}')"
report=$(kc get bj "$JOB" -o jsonpath='{.status.report}')
jq -e '.runs | length == 4' <<<"$report" >/dev/null || fail "report runs: $(jq -c '.runs | length' <<<"$report")"
jq -e '[.runs[].phase] == ["Succeeded","Succeeded","Succeeded","Succeeded"]' <<<"$report" >/dev/null || fail "phases: $(jq -c '[.runs[].phase]' <<<"$report")"
jq -e '[.runs[].paradigm] == ["zero","pipeline","model-parallel","allreduce"]' <<<"$report" >/dev/null || fail "paradigms"
# zero: Adam state sharded over the two ranks (each holds about half of ddp's 8 bytes/parameter).
jq -e '.runs[0].optimizer == "adam" and ([.runs[0].ranks[].optimizerStateBytes] | all(. > 0))' <<<"$report" >/dev/null ||
  fail "zero run: $(jq -c '.runs[0] | {optimizer, ranks: [.ranks[] | {rank, optimizerStateBytes}]}' <<<"$report")"
# pipeline: two stages, micro-batches, bubble fractions per stage.
jq -e '.runs[1].pipeline.stages == 2 and .runs[1].pipeline.microBatches == 2 and ([.runs[1].ranks[].stage] | sort) == [0,1]' <<<"$report" >/dev/null ||
  fail "pipeline run: $(jq -c '.runs[1].pipeline' <<<"$report")"
jq -e '.runs[2].pipeline.microBatches == 1' <<<"$report" >/dev/null || fail "model-parallel run: $(jq -c '.runs[2].pipeline' <<<"$report")"
# Loss at start and end for every training run.
jq -e '[.runs[0:3][] | (.lossStart | type) == "number" and (.lossEnd | type) == "number"] | all' <<<"$report" >/dev/null ||
  fail "loss start/end: $(jq -c '[.runs[] | {lossStart, lossEnd}]' <<<"$report")"
# allreduce: one row per size with positive busbw.
jq -e '(.runs[3].allreduce.sizes | length) == 3 and ([.runs[3].allreduce.sizes[].busbwGBps] | all(. > 0))' <<<"$report" >/dev/null ||
  fail "allreduce run: $(jq -c '.runs[3].allreduce' <<<"$report")"
wait_for 60 no_pods_of "$JOB" || fail "pods left"
echo PASS

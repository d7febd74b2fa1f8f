#!/usr/bin/env bash
# Program workloads through the operator (docs/workloads.md, "On Kubernetes"): one job with the
# built-in worker and Python DDP (examples/programs/python_ddp.py, PyTorch from
# scripts/python-torch.sh) on the same sweep. Each program rank runs in a container of its own in
# its node's trainer pod, rendezvouses on the master pod's store and hands its rank record to it;
# the job's status report has both workloads' rows with speedups against their own one-device
# run. FSDP2 and DeepSpeed's ZeRO beside the built-in ZeRO, each rank holding part of Adam's
# state. Then a program that never creates its probe: the master names the silent ranks within
# the hang timeout, the job fails with reason Hang, and nothing of it is left running.
# Before lib.sh, which gives the test a HOME (and so a cache) of its own: DeepSpeed's compiled
# op is kept under the real one.
TORCH_EXTENSIONS=${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/torch_extensions
source "$(dirname "$0")/lib.sh"
PY=$PYTHON_TORCH
[ -n "$PY" ] || fail "needs Python PyTorch: bash scripts/python-torch.sh"
start_cluster

program_job() {  # NAME SCRIPT HANG: a job of the built-in mlp and a program on 1 and 2 ranks
  printf '%s\n' "apiVersion: trainbench.dev/v1alpha1" "kind: BenchmarkJob" "metadata: {name: $1}" "spec:" \
    "  benchmark:" "    model: mlp" "    mlp: {inputSize: 64, hiddenSizes: [64], numClasses: 10}" \
    "    batchSizePerDevice: 8" "    warmupSteps: 2" "    measureSteps: 10" "    repeats: 2" "    threadsPerProcess: 1" \
    "  sweep:" "    - {nodes: 1, devicesPerNode: 1, paradigm: none}" "    - {nodes: 1, devicesPerNode: 2}" \
    "  template: {image: trainbench/worker:0.1.0}" \
    "  runPolicy: {backoffLimit: 0, collectiveTimeoutSeconds: 120, hangTimeoutSeconds: $3, schedulingTimeoutSeconds: 120}" \
    "  workloads:" "    - name: built-in" "    - name: python-ddp" "      program:" \
    "        command: [\"$PY\", \"$2\"]" "        env: [{name: PYTHONPATH, value: \"$REPO/python\"}]"
}

JOB=frameworks
program_job "$JOB" "$REPO/examples/programs/python_ddp.py" 60 | kc apply -f - >/dev/null
wait_phase "$JOB" Succeeded ||
  fail "job not Succeeded: $(kc get bj "$JOB" -o jsonpath='{.status}') $(kc get pods -o wide)"
report=$(kc get bj "$JOB" -o jsonpath='{.status.report}')
echo "$report" | jq -c '.runs[] | {label: .label, workload, phase, speedupBaselineRun, sec: .secPerIter.p50, ranks: (.ranks | length)}'
[ "$(jq '.runs | length' <<<"$report")" = 4 ] || fail "report runs: $report"
jq -e '.runs[2].workload == "python-ddp" and .runs[2].program == true and .runs[3].label == "python-ddp 1M/2G"' \
  <<<"$report" >/dev/null || fail "program rows: $(jq -c '.runs[2:]' <<<"$report")"
jq -e '[.runs[] | .phase == "Succeeded"] | all' <<<"$report" >/dev/null || fail "a run failed: $report"
jq -e '.runs[3].ranks | length == 2' <<<"$report" >/dev/null || fail "python-ddp 1M/2G ranks: $report"
jq -e '.runs[3].speedupBaselineRun == 2 and .runs[1].speedupBaselineRun == 0' <<<"$report" >/dev/null ||
  fail "speedup baselines: $report"
jq -e '.runs[3].framework | test("^torch 2\\.")' <<<"$report" >/dev/null || fail "framework: $(jq -c '.runs[3]' <<<"$report")"
jq -e '.runs[3].lossEnd < .runs[3].lossStart' <<<"$report" >/dev/null || fail "python-ddp did not train"

# FSDP2 and DeepSpeed's ZeRO beside the built-in ZeRO on 2 ranks (examples/fsdp.yaml and
# examples/deepspeed-zero.yaml's programs): each rank holds part of Adam's state.
JOB=sharded
printf '%s\n' "apiVersion: trainbench.dev/v1alpha1" "kind: BenchmarkJob" "metadata: {name: $JOB}" "spec:" \
  "  benchmark: {model: mlp, mlp: {inputSize: 64, hiddenSizes: [64], numClasses: 10}, optimizer: adam," \
  "              batchSizePerDevice: 8, warmupSteps: 2, measureSteps: 5, repeats: 2, threadsPerProcess: 1}" \
  "  sweep: [{nodes: 1, devicesPerNode: 2, paradigm: zero}]" "  template: {image: trainbench/worker:0.1.0}" \
  "  runPolicy: {backoffLimit: 0, collectiveTimeoutSeconds: 300, hangTimeoutSeconds: 240}" \
  "  workloads:" "    - name: built-in-zero" \
  "    - {name: fsdp, program: {command: [\"$PY\", \"$REPO/examples/programs/fsdp.py\"], env: [{name: PYTHONPATH, value: \"$REPO/python\"}]}}" \
  "    - name: deepspeed-zero1" "      program:" \
  "        command: [\"$PY\", \"$REPO/examples/programs/deepspeed_zero.py\"]" \
  "        env: [{name: PYTHONPATH, value: \"$REPO/python\"}, {name: TORCH_EXTENSIONS_DIR, value: \"$TORCH_EXTENSIONS\"}]" |
  kc apply -f - >/dev/null || fail "sharded job not applied"
wait_phase "$JOB" Succeeded ||
  fail "sharded job not Succeeded: $(kc get bj "$JOB" -o jsonpath='{.status}')"
report=$(kc get bj "$JOB" -o jsonpath='{.status.report}')
echo "$report" | jq -c '.runs[] | {label: .label, phase, state: [.ranks[].optimizerStateBytes]}'
# Adam's state of the whole mlp: 2 moments x (64 x 64 + 64 + 64 x 10 + 10) floats
full=$((2 * (64 * 64 + 64 + 64 * 10 + 10) * 4))
jq -e --argjson full "$full" '[.runs[] | .phase == "Succeeded" and (.ranks | length == 2) and
  ([.ranks[].optimizerStateBytes] | all(. > 0 and . < $full))] | all' <<<"$report" >/dev/null ||
  fail "sharded: every rank should hold part of Adam's state ($full bytes whole): $report"

# A program that never creates its probe (stuck in its imports, say): named within the timeout.
HANG=6
JOB=silent
printf 'import time\ntime.sleep(3600)\n' >"$WORK/silent.py"
printf '%s\n' "apiVersion: trainbench.dev/v1alpha1" "kind: BenchmarkJob" "metadata: {name: $JOB}" "spec:" \
  "  benchmark: {batchSizePerDevice: 8, warmupSteps: 2, measureSteps: 10, repeats: 2}" \
  "  sweep: [{nodes: 1, devicesPerNode: 2}]" "  template: {image: trainbench/worker:0.1.0}" \
  "  runPolicy: {backoffLimit: 0, collectiveTimeoutSeconds: 120, hangTimeoutSeconds: $HANG}" \
  "  workloads: [{name: stuck, program: {command: [\"$PY\", \"$WORK/silent.py\"]}}]" | kc apply -f - >/dev/null ||
  fail "silent job not applied"
wait_for 120 phase_is "$JOB" Failed || fail "silent job not Failed: $(kc get bj "$JOB" -o jsonpath='{.status}')"
reason=$(kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')
msg=$(kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
echo "silent job: $reason: $msg"
[ "$reason" = Hang ] || fail "Failed reason: $reason ($msg)"
grep -q "hang: ranks 0, 1 published no progress" <<<"$msg" || fail "Failed message: $msg"
wait_for 60 no_pods_of "$JOB" || fail "pods left: $(kc get pods -o name)"
wait_for 30 no_containers_running || fail "processes left running: $(cluster_stats)"
echo "PASS program_e2e"

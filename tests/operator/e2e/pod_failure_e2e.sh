#!/usr/bin/env bash
# A worker pod killed mid-run (SIGKILL, as an OOM kill or a lost node would) fails its run; the
# run is restarted as a whole (every pod of the attempt goes, a new attempt starts); killed
# again after backoffLimit restarts, the job is Failed with the pod's exit code, and nothing of
# the job is left running.
source "$(dirname "$0")/lib.sh"

start_cluster
JOB=flaky
mlp_job "$JOB" 10000000 "{backoffLimit: 1, collectiveTimeoutSeconds: 30, schedulingTimeoutSeconds: 120}" \
  "{nodes: 2, devicesPerNode: 1}" | kc apply -f - >/dev/null

run_phase_is() { [ "$(kc get bj "$JOB" -o jsonpath='{.status.runs[0].phase}')" = "$1" ]; }
all_running() {
  for p in "$@"; do [ "$(pod_phase "$p")" = Running ] || return 1; done
}
a0=("$JOB-r0-a0-master" "$JOB-r0-a0-trainer-0" "$JOB-r0-a0-trainer-1")
a1=("$JOB-r0-a1-master" "$JOB-r0-a1-trainer-0" "$JOB-r0-a1-trainer-1")

wait_for 120 all_running "${a0[@]}" || fail "attempt 0 not running: $(kc get pods -o wide)"
wait_for 60 run_phase_is Running || fail "run not Running: $(kc get bj $JOB -o jsonpath='{.status.runs[0]}')"
sleep 2  # training steps under way

# Every worker serves /metrics on its pod IP, port 9400 + local rank (container port metrics-0).
ip=$(kc get pod "$JOB-r0-a0-trainer-0" -o jsonpath='{.status.podIP}')
port=$(kc get pod "$JOB-r0-a0-trainer-0" -o jsonpath='{.spec.containers[0].ports[?(@.name=="metrics-0")].containerPort}')
[ "$port" = 9400 ] || fail "metrics port: $port"
metrics=$(curl -sS --max-time 10 "http://$ip:$port/metrics") || fail "no /metrics on $ip:$port"
grep -q "^trainbench_steps_total{benchmark_job=\"$JOB\",model=\"mlp\",node=\"0\",paradigm=\"ddp\",rank=\"0\",role=\"trainer\",run=\"0\"} [1-9]" <<<"$metrics" ||
  fail "trainer 0's metrics: $(grep trainbench_steps_total <<<"$metrics")"

# 1. Kill one worker: the whole run restarts.
kill_pod "$JOB-r0-a0-trainer-1" 9
wait_for 60 all_running "${a1[@]}" || fail "attempt 1 did not start: $(kc get bj $JOB -o jsonpath='{.status.runs[0]}')"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.runs[0].restarts}')" = 1 ] || fail "restarts != 1"
msg=$(kc get bj "$JOB" -o jsonpath='{.status.runs[0].message}')
grep -q "$JOB-r0-a0-trainer-1" <<<"$msg" || fail "restart message does not name the pod: $msg"
grep -q "exited with code 137" <<<"$msg" || fail "restart message has no exit code: $msg"
for p in "${a0[@]}"; do
  wait_for 30 pod_gone "$p" || fail "pod $p of the failed attempt is still there"
done
kc get events --field-selector "involvedObject.name=$JOB" -o jsonpath='{.items[*].reason}' | grep -q RunRestarted ||
  fail "no RunRestarted event"

# 2. Kill again after backoffLimit (1) restarts: the job fails, naming the pod and exit code.
sleep 2
kill_pod "$JOB-r0-a1-trainer-0" 9
wait_for 60 phase_is "$JOB" Failed || fail "job not Failed: $(kc get bj $JOB -o jsonpath='{.status}')"
reason=$(kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')
[ "$reason" = BackoffLimitExceeded ] || fail "Failed reason: $reason"
msg=$(kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
grep -q "$JOB-r0-a1-trainer-0" <<<"$msg" && grep -q "exited with code 137" <<<"$msg" || fail "Failed message: $msg"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.runs[0].phase}')" = Failed ] || fail "run not Failed"
# The report has the failed run as a row, with the run's message as its error (trainbench run's JSON).
kc get bj "$JOB" -o json | jq -e '.status as $s | $s.report.runs | length == 1 and .[0].phase == "Failed" and .[0].error == $s.runs[0].message' >/dev/null ||
  fail "the failed run is not in status.report: $(kc get bj "$JOB" -o jsonpath='{.status.report}')"
kc get bj "$JOB" | grep -q Failed || fail "kubectl get bj does not show Failed"

# Nothing left: no pod of the job, no process of any pod (the master and the surviving worker
# of each attempt were stopped too).
wait_for 30 no_pods_of "$JOB" || fail "pods left: $(kc get pods -o name)"
wait_for 30 no_containers_running || fail "processes left running: $(cluster_stats)"
# Exactly the pods of two attempts were ever created.
[ "$(pods_created | sort | tr '\n' ' ')" = "$(printf '%s\n' "${a0[@]}" "${a1[@]}" | sort | tr '\n' ' ')" ] ||
  fail "pods created: $(pods_created | tr '\n' ' ')"

# 3. A run that fails in the worker (its store unreachable: MASTER_ADDR pointed where no master
# is, as a wrong template would): libtorch logs its glog notice and c10d's socket errors first,
# but the run's message, the Failed condition and the Events lead with the worker's own line.
BAD=unreachable
printf '%s\n' "apiVersion: trainbench.dev/v1alpha1" "kind: BenchmarkJob" "metadata: {name: $BAD}" "spec:" \
  "  benchmark: {model: mlp, mlp: {inputSize: 64, hiddenSizes: [64], numClasses: 10}, threadsPerProcess: 1}" \
  "  sweep: [{nodes: 1, devicesPerNode: 1}]" "  masterPort: 29500" \
  "  template: {image: trainbench/worker:0.1.0, env: [{name: MASTER_ADDR, value: 127.0.0.1}]}" \
  "  runPolicy: {backoffLimit: 0, collectiveTimeoutSeconds: 3}" | kc apply -f - >/dev/null
wait_for 90 phase_is "$BAD" Failed || fail "$BAD not Failed: $(kc get bj $BAD -o jsonpath='{.status}')"
msg=$(kc get bj "$BAD" -o jsonpath='{.status.runs[0].message}')
echo "run message: $msg"
[[ "$msg" == "trainbench-worker rank 0: "*"(127.0.0.1, 29500)"* ]] || fail "the run's message does not lead with the worker's line: $msg"
grep -q "(pod $BAD-r0-a0-trainer-0 failed: container trainer exited with code 1" <<<"$msg" || fail "the pod is not named: $msg"
! grep -q "InitGoogleLogging\|socket.cpp" <<<"$msg" || fail "library noise in the run's message: $msg"
cond=$(kc get bj "$BAD" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
[ "$cond" = "run 0 failed after 0 restarts: $msg" ] || fail "Failed condition: $cond"
event=$(kc get events --field-selector "involvedObject.name=$BAD,reason=RunFailed" -o jsonpath='{.items[0].message}')
[ "$event" = "run 0 failed: $msg" ] || fail "RunFailed event: $event"
grep -qs "InitGoogleLogging" "$WORK"/sim/pods/*"$BAD"-r0-a0-trainer-0*/trainer.log "$WORK"/nodes/*/pods/*"$BAD"-r0-a0-trainer-0*/trainer.log ||
  echo "note: this libtorch logged no glog notice (the message is checked all the same)"
wait_for 30 no_pods_of "$BAD" || fail "pods left: $(kc get pods -o name)"
echo "PASS pod_failure_e2e"

#!/usr/bin/env bash
# A rank that stops (SIGSTOP on its worker process, as a hung driver or a frozen host looks) in a
# 4-rank DDP run: the master pod sees no rank advance for hangTimeoutSeconds and fails naming the
# rank, its pod and node; the operator records a Hang Event and condition and restarts the run
# under backoffLimit; stopped again after the last restart, the job fails with reason Hang, and
# nothing of the job is left (the stopped worker included).
source "$(dirname "$0")/lib.sh"

HANG=8
start_cluster
JOB=hung
mlp_job "$JOB" 10000000 "{backoffLimit: 1, collectiveTimeoutSeconds: 120, hangTimeoutSeconds: $HANG, schedulingTimeoutSeconds: 120}" \
  "{nodes: 4, devicesPerNode: 1}" | kc apply -f - >/dev/null

all_running() {
  for p in "$@"; do [ "$(pod_phase "$p")" = Running ] || return 1; done
}
# The trainbench-worker process of a pod (pods run as local processes; node-launch
# starts the worker in a process group of its own, so a signal to the pod would not reach it).
worker_pid() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(cat "$p/comm" 2>/dev/null)" = trainbench-work ] || continue
    tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "POD_NAME=$1" &&
      tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "POD_NAMESPACE=$NS" && { basename "$p"; return 0; }
  done
  return 1
}
events_of() { kc get events --field-selector "involvedObject.name=$JOB,reason=$1" -o jsonpath='{.items[*].message}'; }
has_event() { [ -n "$(events_of "$1")" ]; }
# stop_rank ATTEMPT: SIGSTOP rank 3's worker; prints its pid.
stop_rank() {
  local pod="$JOB-r0-a$1-trainer-3" pid
  wait_for 60 worker_pid "$pod" || fail "no worker process of $pod"
  pid=$(worker_pid "$pod")
  kill -STOP "$pid"
  echo "$pid"
}

for attempt in 0 1; do
  pods=("$JOB-r0-a$attempt-master" "$JOB-r0-a$attempt-trainer-0" "$JOB-r0-a$attempt-trainer-1"
        "$JOB-r0-a$attempt-trainer-2" "$JOB-r0-a$attempt-trainer-3")
  wait_for 120 all_running "${pods[@]}" || fail "attempt $attempt not running: $(kc get pods -o wide)"
  sleep 4  # training steps under way
  pid=$(stop_rank $attempt)
  stopped=$SECONDS
  if [ $attempt = 0 ]; then
    wait_for $((HANG + 30)) has_event Hang || fail "no Hang event: $(kc get events -o jsonpath='{.items[*].reason}')"
    took=$((SECONDS - stopped))
    # Detection within hangTimeout + 10 s of the stop (plus the master pod's end reaching the operator).
    [ $took -le $((HANG + 15)) ] || fail "Hang event $took s after the stop (hangTimeoutSeconds $HANG)"
    msg=$(events_of Hang)
    echo "Hang event after $took s: $msg"
    grep -q "hang: rank 3 (pod $JOB-r0-a0-trainer-3 on node [^,]*, local 0) in .* of step [0-9]* for [0-9]* s (no heartbeat for" <<<"$msg" ||
      fail "Hang event does not name rank 3, its pod and node: $msg"
    # PyTorch's DDP (the default) waits for all its buckets at once: the step's all-reduce, no bucket.
    grep -q "ranks 0-2 wait in all-reduce #[0-9-]* since" <<<"$msg" || fail "Hang event: the others: $msg"
    wait_for 60 all_running "$JOB-r0-a1-master" || fail "attempt 1 did not start"
    [ "$(kc get bj "$JOB" -o jsonpath='{.status.runs[0].restarts}')" = 1 ] || fail "restarts != 1"
    reason=$(kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Running")].reason}')
    [ "$reason" = Hang ] || fail "Running condition reason after the restart: $reason"
    grep -q "hang: rank 3" <<<"$(events_of RunRestarted)" || fail "RunRestarted: $(events_of RunRestarted)"
  fi
  # The stopped worker goes with its attempt (SIGKILL reaches a stopped process).
  wait_for 60 eval "! kill -0 $pid 2>/dev/null" || fail "stopped worker $pid of attempt $attempt still there"
done

wait_for 60 phase_is "$JOB" Failed || fail "job not Failed: $(kc get bj $JOB -o jsonpath='{.status}')"
reason=$(kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')
[ "$reason" = Hang ] || fail "Failed reason: $reason"
msg=$(kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
echo "Failed condition: $msg"
grep -q "hang: rank 3 (pod $JOB-r0-a1-trainer-3" <<<"$msg" || fail "Failed message: $msg"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.runs[0].phase}')" = Failed ] || fail "run not Failed"

wait_for 30 no_pods_of "$JOB" || fail "pods left: $(kc get pods -o name)"
wait_for 30 no_containers_running || fail "processes left running: $(cluster_stats)"
echo "PASS hang_e2e"

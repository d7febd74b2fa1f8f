#!/usr/bin/env bash
# A lost node (kubeflow/trainer#2072: a failed node leaves a job hanging with pods stuck
# Terminating). Three nodes; while a 2-node run trains, the node of one of its
# trainers is taken away: its kubelet stops (the pods' processes freeze, nothing is reported),
# after --node-monitor-grace the node's Ready condition turns Unknown, and a delete of its pods
# would leave them Terminating for ever. The operator, with --node-lost-after 3, must fail the
# run naming the node, force-delete the pods there and
#   1. (backoffLimit 1) restart the run on the remaining nodes: the job Succeeds with a report;
#   2. (backoffLimit 0) fail the job with reason NodeLost, naming the node.
# Either way no pod and no process is left.
source "$(dirname "$0")/../operator/e2e/lib.sh"

OPERATOR_FLAGS="--node-lost-after 3"
# The chart's cluster scope: its ClusterRole lets the operator read nodes. The shared control
# plane's node-monitor-grace-period is the default 40 s (a shorter one would flap every node).
CHART_SCOPE=cluster
GRACE=60
start_cluster --node n1 --node n2 --node n3

# The runs wait at their first step (lib.sh's held_job): each still trains when its node is taken
# away, on any machine; the first job's second attempt is let go once the run was restarted.
node_of() { kc get pod "$1" -o jsonpath='{.spec.nodeName}'; }
node_ready() { kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}'; }
all_running() { [ "$(kc get pods -l "trainbench.dev/job=$1,trainbench.dev/attempt=0" -o jsonpath='{.items[*].status.phase}')" = "Running Running Running" ]; }
jpath() { kc get bj "$1" -o jsonpath="$2"; }

# take_node_of JOB: waits until the first attempt's 3 pods run, takes the node of trainer 1 away.
take_node_of() {
  wait_for 120 all_running "$1" || fail "$1: pods not running: $(kc get pods -o wide)"
  wait_held 120 "$1" 0 2 || fail "$1: its ranks do not train: $(kc get pods -o wide)"
  LOST=$(node_of "$1-r0-a0-trainer-1")
  [ -n "$LOST" ] || fail "trainer 1 of $1 has no node"
  ON_LOST=$(kc get pods -l "trainbench.dev/job=$1" -o jsonpath="{.items[?(@.spec.nodeName==\"$LOST\")].metadata.name}")
  lose_node "$LOST"
  echo "took node $LOST away (pods there: $ON_LOST)"
  node_unknown() { [ "$(node_ready "$LOST")" = Unknown ]; }
  wait_for "$GRACE" node_unknown || fail "node $LOST still reads Ready=$(node_ready "$LOST")"
  # As on a cluster, the API still says its pods run.
  [ "$(pod_phase "$1-r0-a0-trainer-1")" = Running ] || fail "the lost node's pod no longer reads Running"
}

# pods_gone POD...: none of the pods exists any more (deleted without a kubelet: forced).
pods_gone() { for p in "$@"; do pod_gone "$p" || return 1; done; }

# ---- 1: restart on the remaining nodes, then Succeeded ----
JOB=lost
held_job "$JOB" "{backoffLimit: 1, collectiveTimeoutSeconds: 300}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/job.yaml"
kc apply -f "$WORK/job.yaml" >/dev/null
take_node_of "$JOB"
t0=$SECONDS
restarted() { [ "$(jpath "$JOB" '{.status.runs[0].restarts}')" = 1 ]; }
wait_for 60 restarted || fail "run not restarted after the node was lost: $(jpath "$JOB" '{.status}')"
echo "run restarted $((SECONDS - t0)) s after the node turned Unknown"
release_run "$JOB" 0
msg=$(jpath "$JOB" '{.status.runs[0].message}')
[[ "$msg" == *"node $LOST lost: Ready=Unknown"*"NodeStatusUnknown"* ]] || fail "restart message: $msg"
ev=$(kc get events --field-selector "involvedObject.name=$JOB,reason=RunRestarted" -o jsonpath='{.items[*].message}')
[[ "$ev" == *"node $LOST lost"* ]] || fail "RunRestarted event: $ev"
# The new attempt runs on the remaining nodes (the lost one is tainted unreachable:NoSchedule).
a1_scheduled() { [ "$(kc get pods -l "trainbench.dev/job=$JOB,trainbench.dev/attempt=1" -o jsonpath='{.items[*].spec.nodeName}' | wc -w)" = 3 ]; }
wait_for 30 a1_scheduled || fail "attempt 1 not scheduled: $(kc get pods -o wide)"
a1_nodes=$(kc get pods -l "trainbench.dev/job=$JOB,trainbench.dev/attempt=1" -o jsonpath='{.items[*].spec.nodeName}')
[[ " $a1_nodes " != *" $LOST "* ]] || fail "attempt 1 scheduled to the lost node: $a1_nodes"
# shellcheck disable=SC2086
wait_for 30 pods_gone $ON_LOST || fail "pods on the lost node left: $(kc get pods -o wide)"
wait_phase "$JOB" Succeeded || fail "job did not succeed: $(jpath "$JOB" '{.status}')"
[ "$(jpath "$JOB" '{.status.report.runs[0].phase}')" = Succeeded ] || fail "report"
[ "$(jpath "$JOB" '{.status.report.runs[0].ranks[*].rank}')" = "0 1" ] || fail "rank rows"
for p in "$JOB-r0-a1-master" "$JOB-r0-a1-trainer-0" "$JOB-r0-a1-trainer-1"; do
  n=$(pods_created | grep -cx "$p")
  [ "$n" = 1 ] || fail "$p created $n times"
done
wait_for 30 no_pods_of "$JOB" || fail "pods left: $(kc get pods -o wide)"
power_off_node "$LOST"
FIRST_LOST=$LOST

# ---- 2: backoffLimit 0: Failed, reason NodeLost ----
JOB=lostfail
held_job "$JOB" "{backoffLimit: 0, collectiveTimeoutSeconds: 300}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/job2.yaml"
kc apply -f "$WORK/job2.yaml" >/dev/null
take_node_of "$JOB"
[ "$LOST" != "$FIRST_LOST" ] || fail "a pod ran on the node lost before"
wait_for 60 phase_is "$JOB" Failed || fail "job did not fail: $(jpath "$JOB" '{.status}')"
reason=$(jpath "$JOB" '{.status.conditions[?(@.type=="Failed")].reason}')
cmsg=$(jpath "$JOB" '{.status.conditions[?(@.type=="Failed")].message}')
[ "$reason" = NodeLost ] || fail "Failed reason: $reason"
[[ "$cmsg" == *"node $LOST lost"* ]] || fail "Failed message: $cmsg"
wait_for 30 no_pods_of "$JOB" || fail "pods left: $(kc get pods -o wide)"
power_off_node "$LOST"
wait_for 30 no_containers_running || fail "processes left: $(running_containers)"
echo "PASS lost_node_e2e"

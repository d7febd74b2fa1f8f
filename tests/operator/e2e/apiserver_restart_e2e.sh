#!/usr/bin/env bash
# An API-server restart while a job trains (tests/controlplane/controlplane.sh restart-apiserver,
# after an etcd compaction): every connection drops, requests fail while it is down, and the new
# server's watch cache starts at etcd's revision, so the operator's watches, resumed from the
# resourceVersions it holds, are answered 410 Expired and its informers list again. The operator
# (a lease long enough to outlive the restart, so the same leader carries on) must still finish
# the job with a complete report, count the 410-forced relists, create no pod twice and leave
# nothing behind. It restarts the shared API server: ctest runs it RUN_SERIAL.
source "$(dirname "$0")/lib.sh"
CONTROLPLANE_SH="$REPO/tests/controlplane/controlplane.sh"

OPERATOR_FLAGS="--leader-elect-lease-duration 60 --leader-elect-renew-deadline 45 --leader-elect-retry-period 2"
start_cluster
wait_for 20 grep -q "serving metrics on" "$WORK/operator.log" || fail "operator serves no metrics"
OP_METRICS=$(sed -n 's|.*serving metrics on \(.*\)/metrics|\1|p' "$WORK/operator.log" | head -1)
relists() { curl -sf "http://$OP_METRICS/metrics" | awk '/^trainbench_operator_watch_relists_total\{/ { s += $2 } END { print s + 0 }'; }

JOB=outage
# The run waits at its first step until the server is back (lib.sh's held_job): it trains through
# the restart however fast the machine, and ends soon after.
held_job "$JOB" "{backoffLimit: 0, collectiveTimeoutSeconds: 120}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/job.yaml"
kc apply -f "$WORK/job.yaml" >/dev/null
# The master and both trainers (the operator may create the master after the trainers: two pods
# Running is not yet the run).
all_running() { [ "$(kc get pods -l "trainbench.dev/job=$JOB" -o jsonpath='{.items[*].status.phase}')" = "Running Running Running" ]; }
wait_for 120 all_running || fail "the run's pods are not running: $(kc get pods -o wide)"
wait_held 120 "$JOB" 0 2 || fail "the run's ranks do not train: $(kc get pods -o wide)"
before=$(relists)
T0=$SECONDS
bash "$CONTROLPLANE_SH" compact "$CONTROLPLANE_DIR" >/dev/null || fail "etcd compaction"
bash "$CONTROLPLANE_SH" restart-apiserver "$CONTROLPLANE_DIR" >"$WORK/restart.log" 2>&1 ||
  fail "kube-apiserver did not come back: $(cat "$WORK/restart.log")"
echo "kube-apiserver down and back in $((SECONDS - T0)) s"
release_run "$JOB" 0

wait_phase "$JOB" Succeeded || fail "job did not succeed: $(kc get bj $JOB -o jsonpath='{.status}')"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[0].ranks[*].rank}')" = "0 1" ] || fail "rank rows"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.runs[0].restarts}')" = 0 ] || fail "the run was restarted"
after=$(relists)
echo "the operator's informers listed again on 410: $before before the restart, $after after"
[ "$after" -gt "$before" ] || fail "no watch was answered 410 after the restart (relists $before -> $after)"
! grep -q "lost the lease" "$WORK/operator.log" || fail "the leader lost its lease"
expected=$(printf '%s\n' "$JOB-r0-a0-master" "$JOB-r0-a0-trainer-0" "$JOB-r0-a0-trainer-1" | sort)
[ "$(pods_created | sort)" = "$expected" ] || fail "pods created: $(pods_created | tr '\n' ' ')"
wait_for 60 no_pods_of "$JOB" || fail "pods left: $(kc get pods -o name)"
wait_for 30 no_containers_running || fail "processes left running: $(cluster_stats)"
echo "PASS apiserver_restart_e2e"

#!/usr/bin/env bash
# The operator killed (SIGKILL: no clean shutdown) and restarted while a job runs: once right
# after the job was applied (while it creates the run's pods), once while the workers train.
# The job still finishes with a complete report, and no pod was ever created twice.
source "$(dirname "$0")/lib.sh"

start_cluster
JOB=survivor
# Run 0 goes straight through; run 1 waits at its first step until the second restart is done
# (lib.sh's held_job), so its workers train while the operator is killed, on any machine.
release_run "$JOB" 0
held_job "$JOB" "{backoffLimit: 0, collectiveTimeoutSeconds: 60}" \
  "{nodes: 1, devicesPerNode: 1}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/job.yaml"
restart_operator() {
  kill -KILL "$OPERATOR_PID"
  wait "$OPERATOR_PID" 2>/dev/null || true
  echo "--- operator killed ---" >>"$WORK/operator.log"
  start_operator
}

kc apply -f "$WORK/job.yaml" >/dev/null
sleep 0.3
restart_operator  # 1: while the first run's objects are being created

# 2: while run 1's workers train (its pods exist and run).
wait_for 180 kc get pod "$JOB-r1-a0-trainer-1" || fail "run 1's pods were not created: $(kc get bj $JOB -o jsonpath='{.status}')"
trainer_running() { [ "$(pod_phase "$JOB-r1-a0-trainer-1")" = Running ]; }
wait_for 60 trainer_running || fail "run 1 not running"
wait_held 120 "$JOB" 1 2 || fail "run 1's ranks do not train: $(kc get pods -o wide)"
restart_operator
release_run "$JOB" 1

wait_phase "$JOB" Succeeded || fail "job did not succeed: $(kc get bj $JOB -o jsonpath='{.status}')"

# A complete report: both runs, every rank of the 2-rank run, each with all measured steps.
[ "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[*].phase}')" = "Succeeded Succeeded" ] || fail "report runs"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[1].ranks[*].rank}')" = "0 1" ] || fail "rank rows"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.runs[*].restarts}')" = "0 0" ] || fail "a run was restarted"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.progress}')" = "2/2" ] || fail "progress"
[ -n "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[1].speedup}')" ] || fail "no speedup in the report"

# No duplicates: every pod of the plan was created exactly once (the API server's audit log).
expected=$(printf '%s\n' "$JOB-r0-a0-master" "$JOB-r0-a0-trainer-0" \
  "$JOB-r1-a0-master" "$JOB-r1-a0-trainer-0" "$JOB-r1-a0-trainer-1" | sort)
[ "$(pods_created | sort)" = "$expected" ] || fail "pods created: $(pods_created | tr '\n' ' ')"
# One RunSucceeded event per run.
n=$(kc get events --field-selector "involvedObject.name=$JOB,reason=RunSucceeded" -o name | wc -l)
[ "$n" = 2 ] || fail "$n RunSucceeded events"
wait_for 30 no_pods_of "$JOB" || fail "pods left"
echo "PASS operator_restart_e2e"

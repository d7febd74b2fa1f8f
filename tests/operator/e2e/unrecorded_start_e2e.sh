#!/usr/bin/env bash
# An attempt whose start no leader recorded still gets its RunStarted Event (issue 12: the chaos
# soak's "no Event for ('RunStarted', 1, 1)"). A leader creates the attempt's pods and dies before
# its RunStarted Event and status write land (here tests/faultproxy, between it and the real API
# server, resets every Event create of the operator until it is SIGKILLed); a pod of the attempt
# is then killed, so the next leader's first reconcile restarts the run at once. Every attempt
# that ran must have its RunStarted, the restarted one too.
source "$(dirname "$0")/lib.sh"

WITH_FAULTPROXY=1
FAULT_RULES='{"seed": 1, "rules": [{"fault": "reset-before", "verbs": ["create"], "resources": ["events"],
  "userAgent": "trainbench-operator", "fraction": 1}]}'
LEASE=(--leader-elect-lease-duration 3 --leader-elect-renew-deadline 2 --leader-elect-retry-period 1)
OPERATOR_FLAGS="${LEASE[*]}"
start_cluster --node n1 --node n2
# Attempt 0 waits at its first step (lib.sh's held_job), so it still trains when its pod is
# killed; the test lets the run go before the next leader starts, so the rerun ends soon after.
held_job u "{backoffLimit: 2, collectiveTimeoutSeconds: 60}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/u.yaml"
kc apply -f "$WORK/u.yaml" >/dev/null
trainer_running() { [ "$(pod_phase u-r0-a0-trainer-1)" = Running ]; }
wait_for 60 trainer_running || fail "attempt 0 did not run: $(kc get pods)"
kill -KILL "$OPERATOR_PID"
wait "$OPERATOR_PID" 2>/dev/null || true
forget_pid "$OPERATOR_PID"
[ -z "$(kc get bj u -o jsonpath='{.status.runs}')" ] || fail "the start was recorded: $(kc get bj u -o jsonpath='{.status}')"
n=$(proxy_admin GET /faultproxy/v1/faults | jq '.injected["reset-before"] // 0')
[ "$n" -ge 1 ] || fail "no Event create was reset"
proxy_admin DELETE /faultproxy/v1/faults >/dev/null || fail "the fault rules stayed"
kill_pod u-r0-a0-trainer-1
trainer_failed() { [ "$(pod_phase u-r0-a0-trainer-1)" = Failed ]; }
wait_for 30 trainer_failed || fail "the killed pod did not fail"
release_run u 0
start_operator
wait_phase u Succeeded || fail "job u did not succeed: $(kc get bj u -o jsonpath='{.status}')"
[ "$(kc get bj u -o jsonpath='{.status.runs[0].restarts}')" = 1 ] || fail "restarts: $(kc get bj u -o jsonpath='{.status.runs}')"
events=$(kc get events -o json | jq -r '.items[] | select(.source.component == "trainbench-operator") | .metadata.name')
for e in runstarted.r0.a0 runrestarted.r0.a0 runstarted.r0.a1 runsucceeded.r0 jobsucceeded; do
  grep -q "^u\.$e\." <<<"$events" || fail "no Event u.$e: $(tr '\n' ' ' <<<"$events")"
done
echo "PASS unrecorded_start_e2e"

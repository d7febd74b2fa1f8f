#!/usr/bin/env bash
# An attempt whose start no leader recorded still gets its RunStarted Event (issue 12: the chaos
# soak's "no Event for ('RunStarted', 1, 1)"). A leader creates the attempt's pods and dies before
# its RunStarted Event and status write land (here its Event creates are reset by kubesim until it
# is SIGKILLed); a pod of the attempt is then killed, so the next leader's first reconcile
# restarts the run at once. Every attempt that ran must have its RunStarted, the restarted one too.
source "$(dirname "$0")/lib.sh"

start_kubesim --node n1 --node n2
kc apply -f "$CRD" >/dev/null
wait_for 20 kc get bj || fail "the CRD did not appear in discovery"
faults() {
  curl -sS --fail --cacert "$WORK/sim/ca.crt" -H "Authorization: Bearer $(cat "$WORK/sim/admin-token")" \
    "$@" "$SIM_URL/kubesim/v1/faults" >/dev/null
}
faults -X PUT --data-binary '{"seed": 1, "rules": [{"fault": "reset-before", "verbs": ["create"],
  "resources": ["events"], "userAgent": "trainbench-operator", "fraction": 1}]}' || fail "fault rules refused"
LEASE=(--leader-elect-lease-duration 3 --leader-elect-renew-deadline 2 --leader-elect-retry-period 1)
start_operator "${LEASE[@]}"
mlp_job u 300 "{backoffLimit: 2, collectiveTimeoutSeconds: 60}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/u.yaml"
kc apply -f "$WORK/u.yaml" >/dev/null
trainer_running() { [ "$(pod_phase u-r0-a0-trainer-1)" = Running ]; }
wait_for 60 trainer_running || fail "attempt 0 did not run: $(kc get pods)"
kill -KILL "$OPERATOR_PID"
wait "$OPERATOR_PID" 2>/dev/null || true
PIDS=("${PIDS[0]}")
[ -z "$(kc get bj u -o jsonpath='{.status.runs}')" ] || fail "the start was recorded: $(kc get bj u -o jsonpath='{.status}')"
faults -X DELETE || fail "the fault rules stayed"
kill_pod u-r0-a0-trainer-1
trainer_failed() { [ "$(pod_phase u-r0-a0-trainer-1)" = Failed ]; }
wait_for 30 trainer_failed || fail "the killed pod did not fail"
start_operator "${LEASE[@]}"
wait_for 240 phase_is u Succeeded || fail "job u did not succeed: $(kc get bj u -o jsonpath='{.status}')"
[ "$(kc get bj u -o jsonpath='{.status.runs[0].restarts}')" = 1 ] || fail "restarts: $(kc get bj u -o jsonpath='{.status.runs}')"
events=$(kc get events -o json | jq -r '.items[] | select(.source.component == "trainbench-operator") | .metadata.name')
for e in runstarted.r0.a0 runrestarted.r0.a0 runstarted.r0.a1 runsucceeded.r0 jobsucceeded; do
  grep -q "^u\.$e\." <<<"$events" || fail "no Event u.$e: $(tr '\n' ' ' <<<"$events")"
done
echo "PASS unrecorded_start_e2e"

#!/usr/bin/env bash
# Two jobs at once, both with masterPort 29500: each pod has its own IP (the node agent's pod
# network emulation gives each pod what its network namespace would), so the runs do not collide;
# both finish with their own complete reports.
source "$(dirname "$0")/lib.sh"

echo "kubectl: $("$KUBECTL" version --client --short 2>/dev/null || "$KUBECTL" version --client 2>/dev/null | head -1)"
start_cluster
for j in alpha beta; do
  mlp_job "$j" 200 "{backoffLimit: 0, collectiveTimeoutSeconds: 60}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/$j.yaml"
done
kc apply -f "$WORK/alpha.yaml" -f "$WORK/beta.yaml" >/dev/null

both_running() {
  for j in alpha beta; do
    for p in master trainer-0 trainer-1; do [ "$(pod_phase "$j-r0-a0-$p")" = Running ] || return 1; done
  done
}
wait_for 120 both_running || fail "the two jobs' pods did not run at the same time: $(kc get pods -o wide)"
for j in alpha beta; do
  wait_phase "$j" Succeeded || fail "job $j did not succeed: $(kc get bj $j -o jsonpath='{.status}')"
  [ "$(kc get bj "$j" -o jsonpath='{.status.report.runs[0].ranks[*].rank}')" = "0 1" ] || fail "$j: rank rows"
  [ "$(kc get bj "$j" -o jsonpath='{.status.runs[0].restarts}')" = 0 ] || fail "$j: restarted"
done
kc get bj
kc delete bj alpha beta >/dev/null
wait_for 60 no_pods_of alpha || fail "alpha's pods remain"
wait_for 60 no_pods_of beta || fail "beta's pods remain"
echo "PASS two_jobs_e2e"

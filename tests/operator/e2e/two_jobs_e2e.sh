#!/usr/bin/env bash
# Two jobs at once, both with masterPort 29500: each pod has its own IP (kubesim's pod network
# emulation gives each pod what its network namespace would), so the runs do not collide; both
# finish with their own complete reports. Runs with Debian's kubectl 1.20 when KUBECTL names it.
source "$(dirname "$0")/lib.sh"

# Debian's kubectl 1.20 (kubernetes-client), fetched into the build tree as the kubesim tests do.
if [ -n "${KUBECTL120_TOOLS:-}" ]; then
  k120="$KUBECTL120_TOOLS/kubectl-1.20/usr/bin/kubectl"
  if [ ! -x "$k120" ]; then
    (mkdir -p "$KUBECTL120_TOOLS" && cd "$KUBECTL120_TOOLS" && rm -rf kubernetes-client_*.deb kubectl-1.20.tmp &&
      timeout 60 apt-get download kubernetes-client && dpkg -x kubernetes-client_*.deb kubectl-1.20.tmp &&
      mv kubectl-1.20.tmp kubectl-1.20) >/dev/null 2>&1 || true
  fi
  if [ -x "$k120" ]; then KUBECTL=$k120; else echo "kubectl 1.20 cannot be had here: using $KUBECTL"; fi
fi

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
  wait_for 240 phase_is "$j" Succeeded || fail "job $j did not succeed: $(kc get bj $j -o jsonpath='{.status}')"
  [ "$(kc get bj "$j" -o jsonpath='{.status.report.runs[0].ranks[*].rank}')" = "0 1" ] || fail "$j: rank rows"
  [ "$(kc get bj "$j" -o jsonpath='{.status.runs[0].restarts}')" = 0 ] || fail "$j: restarted"
done
kc get bj
kc delete bj alpha beta >/dev/null
wait_for 60 no_pods_of alpha || fail "alpha's pods remain"
wait_for 60 no_pods_of beta || fail "beta's pods remain"
echo "PASS two_jobs_e2e"

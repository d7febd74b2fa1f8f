#!/usr/bin/env bash
# controlplane.scale.kwok: the fake GPU nodes of tests/kwok/kwok.sh on a control plane of the
# test's own (a temporary directory; not the shared fixture, which the load would disturb).
# 125 nodes x 8 nvidia.com/gpu go Ready; then 1,001 pods asking for one GPU each: the real
# kube-scheduler binds 1,000 of them (every GPU of the cluster, 8 per node) and kwok reports
# those Running with a pod IP, while the 1,001st stays Pending as FailedScheduling on
# nvidia.com/gpu (the scheduler counts the fake GPUs as a cluster's); deleted, they all go away;
# and the nodes are still Ready after the node monitor's grace period (kwok's heartbeat and
# Leases). Prints the times from the audit log (all pods created -> bound -> Running).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
NODES=125 GPUS=8 PODS=1001
export CONTROLPLANE_BIN=${CONTROLPLANE_BIN:-$(bash scripts/controlplane.sh --path)}  # before HOME moves
export KWOK_BIN=${KWOK_BIN:-$(bash scripts/kwok.sh --path)} || { echo "kwok is not built: run scripts/kwok.sh" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kwok-test.XXXXXX")
CP=$WORK/cp
export HOME="$WORK/home" KUBECACHEDIR="$WORK/kubecache"
mkdir -p "$HOME"
cleanup() {
  local rc=$?
  [ $rc = 0 ] || { [ -f "$WORK/kwok/kwok.log" ] && tail -n 20 "$WORK/kwok/kwok.log" >&2; }
  bash tests/kwok/kwok.sh stop "$WORK/kwok" || true
  [ ! -d "$CP" ] || bash tests/controlplane/controlplane.sh stop "$CP" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT
say() { echo "kwok_test: $*" >&2; }
count() {  # count JSONPATH VALUE: pods in ns gpu whose JSONPATH is VALUE
  kubectl -n gpu get pods -o jsonpath="{range .items[*]}{$1}{\"\\n\"}{end}" | grep -c "^$2\$" || true
}

bash tests/controlplane/controlplane.sh start "$CP" >"$WORK/controlplane.log" 2>&1 || { cat "$WORK/controlplane.log" >&2; exit 1; }
export KUBECONFIG=$CP/kubeconfig PATH="$CP/bin:$PATH"
start=$SECONDS
bash tests/kwok/kwok.sh start "$WORK/kwok" "$CP" $NODES $GPUS
say "$NODES nodes Ready in $((SECONDS - start)) s"
total=$(kubectl get nodes -l trainbench.dev/node-pool=kwok -o json | jq '[.items[].status.allocatable["nvidia.com/gpu"] | tonumber] | add')
[ "$total" = $((NODES * GPUS)) ] || { say "allocatable nvidia.com/gpu $total, expected $((NODES * GPUS))"; exit 1; }

kubectl create namespace gpu >/dev/null
until kubectl -n gpu get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
for i in $(seq 1 $PODS); do
  cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: gpu-$i, namespace: gpu, labels: {app: gpu}}
spec:
  containers:
  - {name: c, image: busybox, resources: {requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}}
---
YAML
done >"$WORK/pods.yaml"
kubectl create -f "$WORK/pods.yaml" >/dev/null
end=$((SECONDS + 300))
until [ "$(count .status.phase Running)" -ge $((NODES * GPUS)) ]; do
  [ $SECONDS -lt $end ] || { say "$(count .status.phase Running) of $((NODES * GPUS)) pods Running in 300 s"; exit 1; }
  sleep 1
done
sleep 5  # the last pod stays Pending: give the scheduler time to try it again
running=$(count .status.phase Running)
pending=$(count .status.phase Pending)
with_ip=$(kubectl -n gpu get pods -o json | jq '[.items[] | select(.status.phase == "Running" and (.status.podIP // "") != "")] | length')
per_node=$(kubectl -n gpu get pods -o json | jq '[.items[] | select(.spec.nodeName != null) | .spec.nodeName] | group_by(.) | map(length) | max')
unschedulable=$(kubectl -n gpu get pods -o json |
  jq -r '.items[] | select(.status.phase == "Pending") | .status.conditions[]? | select(.type == "PodScheduled") | .message')
say "$running Running ($with_ip with a pod IP), $pending Pending: $unschedulable; at most $per_node pods a node"
[ "$running" = $((NODES * GPUS)) ] && [ "$with_ip" = "$running" ] && [ "$pending" = $((PODS - NODES * GPUS)) ] &&
  [ "$per_node" = $GPUS ] || { say "expected $((NODES * GPUS)) Running with IPs, 1 Pending, $GPUS a node"; exit 1; }
grep -q "Insufficient nvidia.com/gpu" <<<"$unschedulable" || { say "the Pending pod is not short of nvidia.com/gpu"; exit 1; }

python3 - "$CP/audit.log" <<'PY'
import json, sys
from datetime import datetime, timezone
ts = lambda e, k="stageTimestamp": datetime.strptime(e[k], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
ev = [e for e in map(json.loads, open(sys.argv[1])) if e.get("stage") == "ResponseComplete"
      and (e.get("objectRef") or {}).get("namespace") == "gpu" and (e.get("objectRef") or {}).get("resource") == "pods"]
sub = lambda e: e["objectRef"].get("subresource", "")
creates = [e for e in ev if e["verb"] == "create" and not sub(e) and e["responseStatus"]["code"] == 201]
binds = [e for e in ev if e["verb"] == "create" and sub(e) == "binding" and e["responseStatus"]["code"] == 201]
running = {}
for e in ev:
    if sub(e) == "status" and e.get("userAgent", "").startswith("kwok"):
        running.setdefault(e["objectRef"]["name"], e)
t0 = min(ts(e, "requestReceivedTimestamp") for e in creates)
last = lambda es: max(ts(e) for e in es) - t0
print(f"| pods | created | bound (kube-scheduler) | Running (kwok) |")
print(f"| --- | --- | --- | --- |")
print(f"| {len(creates)} / {len(binds)} / {len(running)} | {last(creates):.1f} s | {last(binds):.1f} s | {last(running.values()):.1f} s |")
PY

kubectl -n gpu delete pods --all --wait=false >/dev/null
end=$((SECONDS + 120))
until [ "$(kubectl -n gpu get pods --no-headers 2>/dev/null | wc -l)" = 0 ]; do
  [ $SECONDS -lt $end ] || { say "$(kubectl -n gpu get pods --no-headers | wc -l) pods not gone in 120 s"; exit 1; }
  sleep 1
done
say "all pods deleted"
# Still Ready past the node monitor's grace period (40 s) since the nodes were made: heartbeats.
sleep $((start + 50 > SECONDS ? start + 50 - SECONDS : 0))
ready=$(kubectl get nodes -l trainbench.dev/node-pool=kwok \
  -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$' || true)
[ "$ready" = $NODES ] || { say "$ready of $NODES nodes Ready after the grace period"; exit 1; }
say "ok: $NODES nodes still Ready"

#!/usr/bin/env bash
# The operator at scale (issue 3), on the real control plane of tests/controlplane (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler) with simulated nodes: node agents
# (tests/nodeagent) with `--pods simulated`, which report a bound pod Running and Ready at once
# and run nothing. It starts a control plane of its own in a temporary directory, installs the
# chart with the real helm (the CRD, the ServiceAccount and RBAC; replicaCount 0), runs
# trainbench-operator here under the chart's ServiceAccount with the chart's flags, and measures:
#   1. a 128-pod run (1 master + 127 trainers): from the job's creation to the last pod's
#      creation, to the last pod bound by the real scheduler, to the last pod reported Running
#      by its node, and to the run's Running in the job's status; the API requests the operator
#      made for it;
#   2. operator memory (VmRSS, VmHWM) with JOBS jobs of 2 pods each, and how long they took.
# Times and request counts come from the real API server's audit log ($CONTROLPLANE_DIR/audit.log:
# JSON lines, level Metadata; each request's ResponseComplete stage, its stageTimestamp, in
# microseconds, is when it was answered; the operator's requests are those whose userAgent is
# trainbench-operator). Stops everything at exit and removes its directory. Prints Markdown for
# docs/performance.md ("The operator at scale").
#
#   bash bench/operator_scale.sh [build-dir] [jobs]
# Environment: NODES (simulated nodes, default 8), MAX_PODS (each node's pod capacity, default
# 300), HELM (default .tools/helm/helm), CONTROLPLANE_BIN (default: scripts/controlplane.sh --path),
# OPERATOR_ARGS (flags after the chart's, which they override; e.g. --progress-interval=0).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BUILD=$(realpath "${1:-build}")
JOBS=${2:-1000}
NODES=${NODES:-8}
MAX_PODS=${MAX_PODS:-300}
PY=/usr/bin/python3
NODEAGENT=$BUILD/tests/nodeagent/trainbench-nodeagent
OPERATOR=$BUILD/operator/trainbench-operator
for b in "$NODEAGENT" "$OPERATOR"; do [ -x "$b" ] || { echo "missing $b" >&2; exit 1; }; done
[ $((NODES * MAX_PODS)) -ge $((2 * JOBS)) ] || { echo "NODES x MAX_PODS < 2 x JOBS pods" >&2; exit 1; }
# shellcheck source=../tests/scale/operator_at_scale.sh
source tests/scale/operator_at_scale.sh
scale_init operator-scale
SCALE_LOGS+=("$WORK/node-1.log")
trap scale_cleanup EXIT

# ---- the control plane, the chart, the nodes, the operator ----
scale_controlplane

for i in $(seq 1 "$NODES"); do
  mkdir -p "$WORK/nodes/$i"
  "$NODEAGENT" --controlplane "$CP" --node "sim-$i" --dir "$WORK/nodes/$i" --pods simulated \
    --max-pods "$MAX_PODS" --cpus 64 --memory $((512 << 30)) >"$WORK/node-$i.log" 2>&1 &
  PIDS+=($!)
done
nodes_ready() {
  [ "$(kubectl get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    grep -c '^True$')" -ge "$NODES" ]
}
wait_for 120 nodes_ready || { say "nodes not Ready"; exit 1; }

OPERATOR_ARGS=(${OPERATOR_ARGS:-})
scale_operator "$OPERATOR" "${OPERATOR_ARGS[@]}"
say "$NODES simulated nodes (max-pods $MAX_PODS), operator ready: ${CHART_FLAGS[*]} ${OPERATOR_ARGS[*]}"

kubectl create namespace bench >/dev/null
until kubectl -n bench get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
job() {  # job NAME NODES
  cat <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: $1, namespace: bench}
spec:
  benchmark: {model: mlp, measureSteps: 10}
  sweep:
    - {nodes: $2, devicesPerNode: 1}
  template: {image: trainbench/worker:0.1.0}
---
YAML
}
run_phase() { kubectl -n bench get bj "$1" -o jsonpath='{.status.runs[0].phase}' 2>/dev/null; }
now() { date +%s.%N; }

# ---- 1. one 128-pod run ----
job big 127 | kubectl create -f - >/dev/null
end=$((SECONDS + 300))
until [ "$(run_phase big)" = Running ]; do
  [ $SECONDS -lt $end ] || { say "the 128-pod run not Running in 300 s"; exit 1; }
  sleep 0.1
done
seen=$(now)
sleep 1
$PY - "$CP/audit.log" "$seen" <<'PY'
import json, sys, collections
from datetime import datetime, timezone
def ts(e, k="stageTimestamp"):
    return datetime.strptime(e[k], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
seen = float(sys.argv[2])
log = [e for e in map(json.loads, open(sys.argv[1])) if e.get("stage") == "ResponseComplete"]
ref = lambda e, k: (e.get("objectRef") or {}).get(k, "")
code = lambda e: (e.get("responseStatus") or {}).get("code")
def is_(e, verb, res, sub=""):
    return e["verb"] == verb and ref(e, "resource") == res and ref(e, "subresource") == sub and ref(e, "namespace") == "bench"
created = next(e for e in log if is_(e, "create", "benchmarkjobs") and ref(e, "name") == "big" and code(e) == 201)
t0 = ts(created)
pods = [e for e in log if is_(e, "create", "pods") and code(e) == 201 and ref(e, "name").startswith("big-")]
names = {ref(e, "name") for e in pods}
bound = [e for e in log if is_(e, "create", "pods", "binding") and code(e) == 201 and ref(e, "name") in names]
first_status = {}
for e in log:
    if is_(e, "patch", "pods", "status") and e["user"]["username"].startswith("system:node:") and ref(e, "name") in names:
        first_status.setdefault(ref(e, "name"), e)
op = lambda e: e.get("userAgent", "").startswith("trainbench-operator")
ops = [e for e in log if op(e) and t0 <= ts(e, "requestReceivedTimestamp") <= seen + 1 and e["verb"] != "watch"
       and ref(e, "resource") != "leases"]
running = [e for e in ops if ref(e, "resource") == "benchmarkjobs" and ref(e, "subresource") == "status" and ts(e) <= seen]
last = lambda es: max(ts(e) for e in es) - t0
print("| measure | value |")
print("| --- | --- |")
print(f"| pods created / bound / reported Running | {len(pods)} / {len(bound)} / {len(first_status)} |")
first = min(ts(e, "requestReceivedTimestamp") for e in pods) - t0
lat = sorted(ts(e) - ts(e, "requestReceivedTimestamp") for e in pods)
print(f"| job created -> first pod create sent | {first:.3f} s |")
print(f"| job created -> last pod created | {last(pods):.3f} s |")
print(f"| API server time per pod create (received -> answered): median, p90 | "
      f"{lat[len(lat) // 2] * 1000:.1f} ms, {lat[len(lat) * 9 // 10] * 1000:.1f} ms |")
print(f"| job created -> last pod bound (kube-scheduler) | {last(bound):.3f} s |")
print(f"| job created -> last pod reported Running by its node | {last(first_status.values()):.3f} s |")
print(f"| job created -> run Running written to status | {ts(running[-1]) - t0:.3f} s |")
print(f"| API requests by the operator for the job | {len(ops)} (pods + {len(ops) - len(pods)}) |")
by = collections.Counter(f'{e["verb"]} {ref(e, "resource")}{"/" + ref(e, "subresource") if ref(e, "subresource") else ""}'
                         for e in ops)
print("| of which | " + ", ".join(f"{k}: {v}" for k, v in sorted(by.items())) + " |")
refused = [e for e in log if op(e) and code(e) == 403]
if refused:
    print(f"| refused (403) | {len(refused)} |")
PY

# ---- 2. memory with many jobs ----
kubectl -n bench delete bj big --wait=true >/dev/null
no_pods() { [ -z "$(kubectl -n bench get pods -o name)" ]; }
wait_for 120 no_pods || { say "the 128 pods did not go"; exit 1; }
sleep 2
rss() { awk '/^VmRSS/{print $2}' /proc/$OP/status; }
hwm() { awk '/^VmHWM/{print $2}' /proc/$OP/status; }
echo
echo "| jobs | operator VmRSS | VmHWM | seconds to all Running | ... to all pods bound / reported Running |"
echo "| --- | --- | --- | --- | --- |"
echo "| 0 | $(($(rss) / 1024)) MiB | $(($(hwm) / 1024)) MiB | | |"
for i in $(seq 1 "$JOBS"); do job "j$i" 1; done >"$WORK/many.yaml"
start=$(now)
start_s=$SECONDS
kubectl create -f "$WORK/many.yaml" >/dev/null
running_jobs() {
  kubectl -n bench get bj -o jsonpath='{range .items[*]}{.status.runs[0].phase}{"\n"}{end}' | grep -c '^Running$' || true
}
next_report=$((SECONDS + 60))
until [ "$(running_jobs)" -ge "$JOBS" ]; do
  [ $((SECONDS - start_s)) -lt $((JOBS * 4 + 300)) ] || { say "not all $JOBS jobs Running"; exit 1; }
  if [ $SECONDS -ge $next_report ]; then
    say "$(running_jobs) of $JOBS jobs Running after $((SECONDS - start_s)) s; operator VmRSS $(($(rss) / 1024)) MiB"
    next_report=$((SECONDS + 60))
  fi
  sleep 3
done
took=$($PY -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.0f}')" "$start" "$(now)")
pods_at=$($PY - "$CP/audit.log" "$start" <<'PY'
import json, sys
from datetime import datetime, timezone
ts = lambda e: datetime.strptime(e["stageTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
t0 = float(sys.argv[2])
bound, reported = [], {}
for e in map(json.loads, open(sys.argv[1])):
    o = e.get("objectRef") or {}
    if e.get("stage") != "ResponseComplete" or o.get("namespace") != "bench" or not o.get("name", "").startswith("j"):
        continue
    if e["verb"] == "create" and o.get("subresource") == "binding" and e["responseStatus"]["code"] == 201:
        bound.append(ts(e))
    elif e["verb"] == "patch" and o.get("subresource") == "status" and e["user"]["username"].startswith("system:node:"):
        reported.setdefault(o["name"], ts(e))
print(f"{max(bound) - t0:.0f} s ({len(bound)}) / {max(reported.values()) - t0:.0f} s ({len(reported)})")
PY
)
echo "| $JOBS | $(($(rss) / 1024)) MiB | $(($(hwm) / 1024)) MiB | $took | $pods_at |"
# The operator's own account of its work (its /metrics): reconciles and their mean duration.
curl -sf "http://$OPERATOR_METRICS/metrics" | awk '
  /^trainbench_operator_reconcile_duration_seconds_count/ {n = $2}
  /^trainbench_operator_reconcile_duration_seconds_sum/ {s = $2}
  END {if (n) printf "\noperator: %d reconciles since its start, mean %.1f ms\n", n, 1000 * s / n}'

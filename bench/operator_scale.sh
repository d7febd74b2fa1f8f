#!/usr/bin/env bash
# The operator at scale, against kubesim with its fake kubelet (pods are Running at once and run
# nothing), as issue 3 asks:
#   1. a 128-pod run (1 master + 127 trainers): time from the job's creation to the last pod's
#      creation, and to the run being Running; the API requests the operator made for it;
#   2. operator memory (VmRSS, VmHWM) with 1000 jobs of 2 pods each.
# Times and request counts come from kubesim's audit log (one line per request, microsecond
# timestamps). Prints Markdown for docs/performance.md.
#
#   bash bench/operator_scale.sh [build-dir] [jobs]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
JOBS=${2:-1000}
PY=/usr/bin/python3
WORK=$(mktemp -d)
export HOME="$WORK/home" KUBECACHEDIR="$WORK/kubecache"
mkdir -p "$HOME"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$BUILD/tests/kubesim/kubesim" --listen 127.0.0.1:0 --dir "$WORK/sim" --kubelet fake \
  --watch-history 200000 >"$WORK/sim.out" 2>"$WORK/sim.log" &
PIDS+=($!)
for _ in $(seq 1 100); do grep -q "kubesim ready" "$WORK/sim.out" 2>/dev/null && break; sleep 0.1; done
export KUBECONFIG="$WORK/sim/kubeconfig"
kubectl apply -f crds/trainbench.dev_benchmarkjobs.yaml >/dev/null
until kubectl get bj >/dev/null 2>&1; do sleep 0.2; done

OPERATOR_ARGS=(${OPERATOR_ARGS:-})
"$BUILD/operator/trainbench-operator" --kubeconfig "$KUBECONFIG" --leader-elect=false "${OPERATOR_ARGS[@]}" \
  >"$WORK/operator.log" 2>&1 &
OP=$!
PIDS+=($OP)
sleep 2  # informers synced

job() {  # job NAME NODES
  cat <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: $1}
spec:
  benchmark: {model: mlp, measureSteps: 10}
  sweep:
    - {nodes: $2, devicesPerNode: 1}
  template: {image: trainbench/worker:0.1.0}
---
YAML
}

run_phase() { kubectl get bj "$1" -o jsonpath='{.status.runs[0].phase}' 2>/dev/null; }

# ---- 1. one 128-pod run ----
job big 127 | kubectl create -f - >/dev/null
until [ "$(run_phase big)" = Running ]; do sleep 0.1; done
sleep 1
$PY - "$WORK/sim/audit.log" <<'PY'
import json, sys, collections
from datetime import datetime
def ts(e): return datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
log = [json.loads(l) for l in open(sys.argv[1])]
created = next(e for e in log if e["verb"] == "create" and e["resource"] == "benchmarkjobs" and e["code"] == 201)
t0 = ts(created)
pods = [e for e in log if e["verb"] == "create" and e["resource"] == "pods" and e["code"] == 201]
ops = [e for e in log if e["userAgent"].startswith("trainbench-operator") and ts(e) >= t0 and e["verb"] != "watch"]
running = [e for e in ops if e["resource"] == "benchmarkjobs" and e["subresource"] == "status"]
print("| measure | value |")
print("| --- | --- |")
print(f"| pods created | {len(pods)} |")
print(f"| job created -> last pod created | {ts(pods[-1]) - t0:.3f} s |")
print(f"| job created -> run Running written to status | {ts(running[-1]) - t0:.3f} s |")
print(f"| API requests by the operator for the job | {len(ops)} (pods + {len(ops) - len(pods)}) |")
by = collections.Counter(f'{e["verb"]} {e["resource"]}{"/" + e["subresource"] if e["subresource"] else ""}' for e in ops)
print("| of which | " + ", ".join(f"{k}: {v}" for k, v in sorted(by.items())) + " |")
PY

# ---- 2. memory with many jobs ----
kubectl delete bj big --wait=true >/dev/null
rss() { awk '/^VmRSS/{print $2}' /proc/$OP/status; }
hwm() { awk '/^VmHWM/{print $2}' /proc/$OP/status; }
echo
echo "| jobs | operator VmRSS | VmHWM | seconds to all Running |"
echo "| --- | --- | --- | --- |"
echo "| 0 | $(( $(rss) / 1024 )) MiB | $(( $(hwm) / 1024 )) MiB | |"
for i in $(seq 1 "$JOBS"); do job "j$i" 1; done >"$WORK/many.yaml"
start=$SECONDS
kubectl create -f "$WORK/many.yaml" >/dev/null
running_jobs() { kubectl get bj -o jsonpath='{range .items[*]}{.status.runs[0].phase}{"\n"}{end}' | grep -c '^Running$' || true; }
until [ "$(running_jobs)" -ge "$JOBS" ]; do sleep 2; done
echo "| $JOBS | $(( $(rss) / 1024 )) MiB | $(( $(hwm) / 1024 )) MiB | $((SECONDS - start)) |"

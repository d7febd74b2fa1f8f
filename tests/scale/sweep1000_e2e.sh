#!/usr/bin/env bash
# controlplane.scale.sweep1000 (issue 22): the seed's sweep, 1 to 1000 GPUs at 8 per node, run by
# the real operator on the real control plane with 125 kwok nodes of 8 nvidia.com/gpu each, the
# real kube-scheduler binding every pod by its GPU request. Nothing trains on a kwok node, so
# tests/scale/fake_master.py plays each run's master: once all of a run's pods are Running it
# writes the run's result (a rank row for every rank, 1000 for the biggest run) into the run's
# result ConfigMap under the job's reporter ServiceAccount, as worker/master.cpp does.
#
# Like bench/operator_scale.sh (tests/scale/operator_at_scale.sh, shared with it) it starts a
# control plane of its own in a temporary directory (the load would disturb the shared fixture's
# tests), installs the chart with the real helm, and runs build/operator/trainbench-operator here
# under the chart's ServiceAccount with the chart's flags.
#
# Asserts behaviour, not wall-clock limits: the job Succeeded; every run's report present with
# its rank count (runs over kMaxRanksInStatus = 64 ranks: a rankSummary in status naming their
# ConfigMap, which holds every rank); status.report has every run; no pod left holding GPUs at
# the end; the operator's requests in every 10 s window below its --qps x 10. Measures from the
# audit log, per run: pods created / bound / Running / result written (seconds from the run's
# first pod create), the operator's requests and their peak in 10 s; the operator's CPU seconds
# and VmHWM, the job's status size. Prints a Markdown table; writes the figures to OUT_JSON.
#
# With SCALE_FAULTS (tests/faultproxy rules, {"seed", "rules"}) the operator and the result writer
# (fake_master.py's patch under the reporter's token) reach the API server through tests/faultproxy
# (FAULTPROXY, the binary), and the operator's requests the proxy answered itself (its log: no
# upstreamCode) count toward its rate beside the audit log's (tests/scale/slow_apiserver_e2e.sh).
#
#   sweep1000_e2e.sh BUILD_DIR [OUT_JSON]
# Environment: HELM, CONTROLPLANE_BIN, KWOK_BIN (defaults as their scripts), SWEEP_TIMEOUT (seconds
# the job may take, 1500), OPERATOR_ARGS (flags after the chart's), OPERATOR (the binary),
# SCALE_FAULTS and FAULTPROXY, SCALE_TEST_NAME (sweep1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
BUILD=$(realpath "${1:?usage: sweep1000_e2e.sh BUILD_DIR [OUT_JSON]}")
OUT_JSON=${2:-$BUILD/scale-sweep1000.json}
OPERATOR=${OPERATOR:-$BUILD/operator/trainbench-operator}
[ -x "$OPERATOR" ] || { echo "missing $OPERATOR" >&2; exit 1; }
NODES=125 GPUS_PER_NODE=8 NS=scale JOB=sweep1000
export KWOK_BIN=${KWOK_BIN:-$(bash scripts/kwok.sh --path)} ||
  { echo "kwok is not built: run scripts/kwok.sh" >&2; exit 1; }
# shellcheck source=operator_at_scale.sh
source tests/scale/operator_at_scale.sh
scale_init "${SCALE_TEST_NAME:-sweep1000}"
SCALE_LOGS+=("$WORK/fake_master.log")
scale_before_stop() {
  # A failure leaves the job's state for whoever reads the log (where it stalled).
  if [ "${SWEEP_DONE:-}" != 1 ] && [ -f "$WORK/job.json" ]; then
    say "job status at the end:"
    jq -c '.status | {phase, progress, runs: [.runs[]? | {index, phase, attempt, podsCreated, message}]}' \
      "$WORK/job.json" >&2 || true
  fi
}
trap scale_cleanup EXIT

scale_controlplane
scale_kwok $NODES $GPUS_PER_NODE
[ -z "${SCALE_FAULTS:-}" ] || { scale_faultproxy "$SCALE_FAULTS"; say "through faultproxy: $SCALE_FAULTS"; }
OPERATOR_ARGS=(${OPERATOR_ARGS:-})
scale_operator "$OPERATOR" "${OPERATOR_ARGS[@]}"
scale_qps
qps=$QPS
say "$NODES kwok nodes x $GPUS_PER_NODE nvidia.com/gpu; operator ready: ${CHART_FLAGS[*]} ${OPERATOR_ARGS[*]}"

scale_namespace $NS
# The seed's sweep (examples/evaluation-plan.yaml, its full size): 1, 8, 16, ... 512 GPUs, then
# 125 machines of 8 (1000). Each trainer pod asks for a whole node's 8 GPUs (spec.template is
# the same for every run; the 1-GPU run's one pod holds a node too).
SHAPES=("1 1" "1 8" "2 8" "4 8" "8 8" "16 8" "32 8" "64 8" "125 8")
# GPUs "auto": each trainer pod asks for its run's devicesPerNode GPUs (the 1-GPU run holds one).
scale_job_yaml $JOB $NS auto "" "${SHAPES[@]}" >"$WORK/job.yaml"
python3 - "$WORK/runs.json" "${SHAPES[@]}" <<'PY'
import json, sys
json.dump([{"index": i, "gpus": int(s.split()[0]) * int(s.split()[1]), "pods": int(s.split()[0]) + 1}
           for i, s in enumerate(sys.argv[2:])], open(sys.argv[1], "w"))
PY

python3 tests/scale/fake_master.py $NS "$WORK/results.jsonl" 2>"$WORK/fake_master.log" &
PIDS+=($!)
kubectl create -f "$WORK/job.yaml" >/dev/null
say "job $JOB created: ${#SHAPES[@]} runs, $(jq 'map(.pods) | add' "$WORK/runs.json") pods in all"

# ---- until the job ends ----
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$OP/stat"; }
deadline=$((SECONDS + ${SWEEP_TIMEOUT:-1500}))
next_report=0
phase=
while :; do
  kubectl -n $NS get bj $JOB -o json >"$WORK/job.json.tmp" && mv "$WORK/job.json.tmp" "$WORK/job.json"
  phase=$(jq -r '.status.phase // ""' "$WORK/job.json")
  case $phase in Succeeded | Failed | Invalid) break ;; esac
  kill -0 "$OP" 2>/dev/null || { say "the operator exited"; exit 1; }
  if [ $SECONDS -ge $next_report ]; then
    say "$(jq -r '"\(.status.phase // "-") runs \(.status.progress // "-"): " + ([.status.runs[]? | "\(.index):\(.phase)"] | join(" "))' \
      "$WORK/job.json"); pods $(kubectl -n $NS get pods --no-headers 2>/dev/null | awk '{print $3}' | sort | uniq -c | xargs); operator CPU $(cpu_seconds) s"
    next_report=$((SECONDS + 30))
  fi
  if [ $SECONDS -ge $deadline ]; then
    say "the job did not end within ${SWEEP_TIMEOUT:-1500} s: where it stands"
    kubectl -n $NS get pods --no-headers | awk '{print $3}' | sort | uniq -c >&2
    curl -sf "http://$OPERATOR_METRICS/metrics" | grep -E '^trainbench_operator_(reconcile|workqueue|queue|api)' >&2 || true
    python3 - "$CP/audit.log" <<'PY' >&2
import collections, json, sys
from datetime import datetime, timezone
ts = lambda e: datetime.strptime(e["requestReceivedTimestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
ops = [e for e in map(json.loads, open(sys.argv[1])) if e.get("stage") == "ResponseComplete"
       and e.get("userAgent", "").startswith("trainbench-operator") and e["verb"] != "watch"]
end = max(ts(e) for e in ops)
last = [e for e in ops if ts(e) >= end - 60]
o = lambda e: e.get("objectRef") or {}
print(f"operator requests in its last 60 s: {len(last)}")
for k, v in collections.Counter(f'{e["verb"]} {o(e).get("resource")}{"/" + o(e)["subresource"] if o(e).get("subresource") else ""} '
                                f'{e["responseStatus"].get("code")}' for e in last).most_common(15):
    print(f"  {v} {k}")
PY
    exit 1
  fi
  sleep 2
done
took=$SECONDS
cpu=$(cpu_seconds)
hwm=$(awk '/^VmHWM/{print $2}' "/proc/$OP/status")
status_bytes=$(jq -c .status "$WORK/job.json" | wc -c)
say "job $JOB $phase; operator CPU $cpu s, VmHWM $((hwm / 1024)) MiB, status $status_bytes bytes"
[ "$phase" = Succeeded ] || { say "expected Succeeded, got $phase: $(jq -c '.status.conditions' "$WORK/job.json")"; exit 1; }

# ---- no pod left holding GPUs: every pod deleted (kwok's pod-delete stage) or terminated ----
# (kwok's pod-delete stage removes the last run's pods at its own pace: on a loaded 2-core
# machine that took over 120 s once, reaching 0 just after; the time it took is printed.)
T_FREE=$SECONDS
wait_for 300 test "$(scale_gpus_in_use)" = 0 ||
  { say "$(scale_gpus_in_use) GPUs still held by pods on the nodes 300 s after the job ended"; exit 1; }
say "every GPU free $((SECONDS - T_FREE)) s after the job ended"

# ---- the report: every run, its ranks in status or (beyond 64) in its ConfigMap ----
for i in "${!SHAPES[@]}"; do
  set -- ${SHAPES[$i]}
  ranks=$(($1 * $2))
  kubectl -n $NS get configmap "$JOB-r$i-result" -o jsonpath='{.data.result}' >"$WORK/result-$i.json"
  python3 - "$WORK/job.json" "$WORK/result-$i.json" "$i" "$ranks" "$JOB-r$i-result" <<'PY'
import json, sys
job, cm, i, ranks, cm_name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
fail = lambda why: sys.exit(f"run {i} ({ranks} ranks): {why}")
run = job["status"]["runs"][i]
if run.get("phase") != "Succeeded": fail(f"phase {run.get('phase')}")
summ = run.get("summary") or fail("no summary in status.runs")
if summ.get("worldSize") != ranks: fail(f"summary worldSize {summ.get('worldSize')}")
report = [r for r in job["status"]["report"]["runs"] if r["index"] == i]
if len(report) != 1 or report[0].get("phase") != "Succeeded": fail("not Succeeded in status.report")
if len(cm["run"]["ranks"]) != ranks: fail(f"{len(cm['run']['ranks'])} rank rows in {cm_name}")
for copy, where in ((summ, "status.runs"), (report[0], "status.report")):
    if ranks <= 64:
        if len(copy.get("ranks", [])) != ranks: fail(f"{len(copy.get('ranks', []))} ranks in {where}")
    else:
        rs = copy.get("rankSummary") or fail(f"no rankSummary in {where}")
        if copy.get("ranks"): fail(f"{len(copy['ranks'])} ranks in {where} beside its rankSummary")
        detail = rs.get("detail") or {}
        if rs.get("count") != ranks or detail.get("configMap") != cm_name or detail.get("key") != "result":
            fail(f"{where} rankSummary count {rs.get('count')}, detail {detail}")
        if rs["slowest"][0]["rank"] != ranks - 1: fail(f"{where} rankSummary names rank {rs['slowest'][0]['rank']} slowest")
PY
done
[ "$(jq '.status.report.runs | length' "$WORK/job.json")" = "${#SHAPES[@]}" ] || { say "status.report lacks runs"; exit 1; }
SWEEP_DONE=1

# ---- the figures ----
jq -n --argjson cpu "$cpu" --argjson hwm "$hwm" --argjson bytes "$status_bytes" --argjson qps "$qps" \
  --argjson took "$took" --argjson nodes $NODES --argjson gpus $GPUS_PER_NODE \
  '{operatorCpuSeconds: $cpu, operatorVmHWMKiB: $hwm, statusBytes: $bytes, qps: $qps, testSeconds: $took,
    kwokNodes: $nodes, gpusPerNode: $gpus}' >"$WORK/extra.json"
if [ -n "${SCALE_FAULTS:-}" ]; then
  scale_faultproxy_stats | jq '{faultproxy: {seed, considered, injected}}' >"$WORK/proxy.json"
  for f in $(jq -r '[.rules[].fault] | unique | .[]' <<<"$SCALE_FAULTS"); do  # the faults did happen
    jq -e --arg f "$f" '.faultproxy.injected[$f] // 0 > 0' "$WORK/proxy.json" >/dev/null ||
      { say "faultproxy injected no $f: $(cat "$WORK/proxy.json")"; exit 1; }
  done
  say "faultproxy: $(jq -c .faultproxy "$WORK/proxy.json")"
  jq -s add "$WORK/extra.json" "$WORK/proxy.json" >"$WORK/extra.json.tmp" && mv "$WORK/extra.json.tmp" "$WORK/extra.json"
fi
python3 tests/scale/audit_figures.py "$CP/audit.log" $NS $JOB "$WORK/runs.json" "$WORK/extra.json" "$OUT_JSON" \
  ${PROXY_LOG:+"$PROXY_LOG"}
say "figures in $OUT_JSON"
peak=$(jq .operatorPeakRequestsPer10s "$OUT_JSON")
[ "$peak" -lt $((qps * 10)) ] || { say "the operator made $peak requests in 10 s: not below --qps $qps x 10"; exit 1; }
jq -e --argjson n "${#SHAPES[@]}" '[.runs[] | select(.podsCreated == .pods and .podsBound == .pods and .podsRunning == .pods)] | length == $n' \
  "$OUT_JSON" >/dev/null || { say "not every run's pods were created, bound and Running once"; exit 1; }
say "ok"

#!/usr/bin/env bash
# controlplane.scale.gang (issue 22 item 3): gang placement at scale, a run bigger than the
# cluster. 120 kwok nodes of 8 nvidia.com/gpu (960 GPUs) and one BenchmarkJob with one run of 125
# nodes x 8 devices (1000 GPUs: a master pod and 125 trainer pods, each trainer asking for 8
# nvidia.com/gpu through spec.template.resources), runPolicy backoffLimit 0 and
# schedulingTimeoutSeconds 30. The real kube-scheduler binds the master and 120 trainers; 5
# trainers stay Pending (PodScheduled False, reason Unschedulable, "Insufficient
# nvidia.com/gpu"). A gang that cannot start must not hold the 960 GPUs it got forever.
#
# Why: the operator creates a run's pods without a gang scheduler (docs/operator.md: all pods of
# a run must be Running within schedulingTimeoutSeconds or the run fails naming the pending
# pods); at 1000 GPUs the failure must still come on time, say why in terms a user can act on,
# and give back what the partial gang held.
#
# Asserts behaviour, not wall-clock limits:
#   - the cluster side first: exactly 125 - 120 = 5 pods of the run Pending, each with PodScheduled
#     False, reason Unschedulable and "Insufficient nvidia.com/gpu" in its message;
#   - the run Failed, not before its schedulingTimeoutSeconds: status.runs[0].completionTime -
#     attemptStartTime >= 30 s, and the operator's first delete of the gang's pods (the audit log,
#     microseconds) no earlier than attemptStartTime + 30 s (status times are whole seconds, so
#     that is all status can show; the audit log's time from the first pod create to that delete
#     is printed beside), no restart (backoffLimit 0), the job Failed (its Failed condition
#     True) with a message naming how many pods stayed Pending ("5 pods", "5 of 126 pods" or
#     "5 trainer pods") and the scheduler's reason (Unschedulable, Insufficient nvidia.com/gpu);
#   - afterwards no pod of the job left: every pod deleted or ended, and no GPU allocated on any
#     node (the GPU requests of the pods bound to the nodes, all namespaces).
# Prints the job's status and the figures (time to the failure by status and by the audit log's
# deletecollection, pods left), and writes them to OUT_JSON.
#
#   gang_e2e.sh BUILD_DIR [OUT_JSON]     (default BUILD_DIR/scale-gang.json)
# Environment: HELM, CONTROLPLANE_BIN, KWOK_BIN, OPERATOR (as sweep1000_e2e.sh), GANG_TIMEOUT
# (seconds the job may take past its schedulingTimeoutSeconds, 300).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
BUILD=$(realpath "${1:?usage: gang_e2e.sh BUILD_DIR [OUT_JSON]}")
OUT_JSON=${2:-$BUILD/scale-gang.json}
OPERATOR=${OPERATOR:-$BUILD/operator/trainbench-operator}
[ -x "$OPERATOR" ] || { echo "missing $OPERATOR" >&2; exit 1; }
NODES=120 GPUS_PER_NODE=8 RUN_NODES=125 NS=scale JOB=gang SCHED_TIMEOUT=30
PENDING_WANT=$((RUN_NODES - NODES))  # one trainer a node: the trainers beyond the nodes
export KWOK_BIN=${KWOK_BIN:-$(bash scripts/kwok.sh --path)} ||
  { echo "kwok is not built: run scripts/kwok.sh" >&2; exit 1; }
# shellcheck source=operator_at_scale.sh
source tests/scale/operator_at_scale.sh
scale_init gang
scale_before_stop() {
  [ "${GANG_DONE:-}" != 1 ] || return 0
  if [ -f "$WORK/job.json" ]; then
    say "job status at the end:"
    jq -c '.status | {phase, conditions, runs}' "$WORK/job.json" >&2 || true
  fi
  say "pods of the job left (phase, node):"
  kubectl -n $NS get pods -l trainbench.dev/job=$JOB --no-headers -o custom-columns=N:.metadata.name,P:.status.phase,NODE:.spec.nodeName \
    2>/dev/null | head -n 20 >&2 || true
}
trap scale_cleanup EXIT

scale_controlplane
scale_kwok $NODES $GPUS_PER_NODE
scale_operator "$OPERATOR"
say "$NODES kwok nodes x $GPUS_PER_NODE nvidia.com/gpu; operator ready: ${CHART_FLAGS[*]}"
scale_namespace $NS
scale_job_yaml $JOB $NS $GPUS_PER_NODE "{backoffLimit: 0, schedulingTimeoutSeconds: $SCHED_TIMEOUT}" \
  "$RUN_NODES $GPUS_PER_NODE" >"$WORK/job.yaml"
kubectl create -f "$WORK/job.yaml" >/dev/null
say "job $JOB created: one run of $RUN_NODES nodes x $GPUS_PER_NODE on $((NODES * GPUS_PER_NODE)) GPUs"

# ---- until the job ends; the pods as the scheduler left them, the last look before the end ----
deadline=$((SECONDS + SCHED_TIMEOUT + ${GANG_TIMEOUT:-300}))
while :; do
  kubectl -n $NS get bj $JOB -o json >"$WORK/job.json.tmp" && mv "$WORK/job.json.tmp" "$WORK/job.json"
  phase=$(jq -r '.status.phase // ""' "$WORK/job.json")
  case $phase in Succeeded | Failed | Invalid) break ;; esac
  kill -0 "$OP" 2>/dev/null || { say "the operator exited"; exit 1; }
  kubectl -n $NS get pods -l trainbench.dev/job=$JOB -o json >"$WORK/pods.json.tmp" &&
    [ "$(jq '.items | length' "$WORK/pods.json.tmp")" = $((RUN_NODES + 1)) ] &&
    mv "$WORK/pods.json.tmp" "$WORK/pods.json"  # the whole gang created: the snapshot to judge
  [ $SECONDS -lt $deadline ] || { say "the job did not end within $((SCHED_TIMEOUT + ${GANG_TIMEOUT:-300})) s"; exit 1; }
  sleep 1
done
say "job $JOB $phase"
say "status: $(jq -c '.status | {phase, conditions, runs: [.runs[] | {index, phase, attempt, restarts, podsCreated, attemptStartTime, completionTime, message}]}' "$WORK/job.json")"

# ---- the cluster side: which pods stayed Pending, and the scheduler's word for why ----
[ -f "$WORK/pods.json" ] || { say "never saw the whole gang of $((RUN_NODES + 1)) pods before the job ended"; exit 1; }
jq -c '[.items[] | select(.status.phase == "Pending") | {name: .metadata.name, role: .metadata.labels["trainbench.dev/role"],
  scheduled: (.status.conditions // [] | map(select(.type == "PodScheduled"))[0])}]' "$WORK/pods.json" >"$WORK/pending.json"
pending=$(jq length "$WORK/pending.json")
sched_msg=$(jq -r '.[0].scheduled.message // ""' "$WORK/pending.json")
say "before the end: $pending pods Pending, e.g. $(jq -c '.[0]' "$WORK/pending.json")"
[ "$pending" = $PENDING_WANT ] || { say "expected $PENDING_WANT pods Pending, saw $pending"; exit 1; }
jq -e 'all(.[]; .role == "trainer" and .scheduled.status == "False" and .scheduled.reason == "Unschedulable"
  and (.scheduled.message | contains("Insufficient nvidia.com/gpu")))' "$WORK/pending.json" >/dev/null ||
  { say "the Pending pods are not all trainers Unschedulable on Insufficient nvidia.com/gpu: $(cat "$WORK/pending.json")"; exit 1; }

# ---- the operator's verdict ----
ok=1
check() { if ! eval "$1"; then say "WRONG: $2"; ok=0; fi; }
secs() { python3 -c 'import sys, datetime as d; print(int(d.datetime.fromisoformat(sys.argv[1].replace("Z", "+00:00")).timestamp()))' "$1"; }
run=$(jq -c '.status.runs[0]' "$WORK/job.json")
msg=$(jq -r '.status.conditions // [] | map(select(.type == "Failed" and .status == "True"))[0].message // ""' "$WORK/job.json")
run_msg=$(jq -r '.message // ""' <<<"$run")
started=$(jq -r '.attemptStartTime // ""' <<<"$run")
ended=$(jq -r '.completionTime // ""' <<<"$run")
to_failure=
[ -z "$started" ] || [ -z "$ended" ] || to_failure=$(($(secs "$ended") - $(secs "$started")))
check '[ "$phase" = Failed ]' "job phase $phase, not Failed"
check '[ "$(jq -r .phase <<<"$run")" = Failed ]' "run 0 phase $(jq -r .phase <<<"$run"), not Failed"
check '[ "$(jq -r ".restarts // 0" <<<"$run")" = 0 ]' "run 0 restarted (backoffLimit 0): $run"
check '[ -n "$to_failure" ] && [ "$to_failure" -ge $SCHED_TIMEOUT ]' \
  "run 0 failed ${to_failure:-?} s after its attempt started ($started -> $ended), schedulingTimeoutSeconds $SCHED_TIMEOUT"
check '[ -n "$msg" ]' "no Failed condition True in $(jq -c .status.conditions "$WORK/job.json")"
check 'grep -Eq "(^|[^0-9./])$PENDING_WANT (of $((RUN_NODES + 1)) )?(trainer )?pods" <<<"$msg"' \
  "the job's message does not say how many pods stayed Pending ($PENDING_WANT): $msg"
check 'grep -q Unschedulable <<<"$msg" && grep -q "Insufficient nvidia.com/gpu" <<<"$msg"' \
  "the job's message lacks the scheduler's reason (Unschedulable, Insufficient nvidia.com/gpu): $msg"

# ---- nothing of the gang left holding GPUs ----
left() {
  kubectl -n $NS get pods -l trainbench.dev/job=$JOB -o json |
    jq '[.items[] | select(.status.phase != "Succeeded" and .status.phase != "Failed")] | length'
}
wait_for 120 test "$(left)" = 0 || true
pods_left=$(left)
gpus_left=$(scale_gpus_in_use)
say "afterwards: $pods_left pods of the job not ended, $gpus_left GPUs allocated on the nodes"
if [ "$pods_left" != 0 ] || [ "$gpus_left" != 0 ]; then
  say "WRONG: the failed gang's pods are left (name, phase, node; first 10):"
  kubectl -n $NS get pods -l trainbench.dev/job=$JOB --no-headers \
    -o custom-columns=N:.metadata.name,P:.status.phase,NODE:.spec.nodeName,DEL:.metadata.deletionTimestamp | head >&2
  ok=0
fi

# ---- the figures: from the audit log, the first pod create to the operator's deletecollection ----
python3 - "$CP/audit.log" $NS $JOB "$WORK/pending.json" "$OUT_JSON" "${to_failure:-null}" "$pods_left" "$gpus_left" \
  "$SCHED_TIMEOUT" "$msg" "$started" <<'PY'
import json, sys
from datetime import datetime, timezone
audit, ns, job, pending, out, to_failure, pods_left, gpus_left, timeout, msg, started = sys.argv[1:12]
ts = lambda e, k: datetime.strptime(e[k], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()
creates, deletes = [], []
for e in map(json.loads, open(audit)):
    o = e.get("objectRef") or {}
    if e.get("stage") != "ResponseComplete" or o.get("namespace") != ns or o.get("resource") != "pods" or o.get("subresource"):
        continue
    if e["verb"] == "create" and e["responseStatus"].get("code") == 201 and o.get("name", "").startswith(f"{job}-"):
        creates.append(ts(e, "requestReceivedTimestamp"))
    elif e["verb"] in ("deletecollection", "delete") and e.get("userAgent", "").startswith("trainbench-operator"):
        deletes.append(ts(e, "requestReceivedTimestamp"))
t0 = min(creates)
first_delete = min((d for d in deletes if d >= t0), default=None)
fig = {"kwokNodes": 120, "gpusPerNode": 8, "runGpus": 1000, "pods": len(creates), "schedulingTimeoutSeconds": int(timeout),
       "podsPending": len(json.load(open(pending))), "secondsToFailureByStatus": None if to_failure == "null" else int(to_failure),
       "secondsFirstCreateToDelete": None if first_delete is None else round(first_delete - t0, 3),
       "secondsAttemptStartToDelete": None if first_delete is None or not started else
           round(first_delete - datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp(), 3),
       "lastCreateSeconds": round(max(creates) - t0, 3), "podsLeft": int(pods_left), "gpusLeft": int(gpus_left),
       "message": msg}
json.dump(fig, open(out, "w"), indent=1)
print("| GPUs asked / on the nodes | pods | Pending (Unschedulable) | schedulingTimeoutSeconds | attempt start -> run Failed (status) "
      "| attempt start (status) -> operator's delete | first pod create -> operator's delete | last pod create | pods left | GPUs left |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
print(f'| 1000 / 960 | {fig["pods"]} | {fig["podsPending"]} | {timeout} | {fig["secondsToFailureByStatus"]} s | '
      f'{fig["secondsAttemptStartToDelete"]} s | {fig["secondsFirstCreateToDelete"]} s | {fig["lastCreateSeconds"]} s | '
      f'{fig["podsLeft"]} | {fig["gpusLeft"]} |')
PY
say "figures in $OUT_JSON"
check 'jq -e --argjson t $SCHED_TIMEOUT ".secondsAttemptStartToDelete != null and .secondsAttemptStartToDelete >= \$t" "$OUT_JSON" >/dev/null' \
  "the operator deleted the gang's pods $(jq .secondsAttemptStartToDelete "$OUT_JSON") s after the attempt's start in status, before schedulingTimeoutSeconds"
[ $ok = 1 ] || { say "the operator got the gang's failure wrong (above)"; exit 1; }
GANG_DONE=1
say "ok"

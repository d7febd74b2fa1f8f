#!/usr/bin/env bash
# BenchmarkJobs queued by the real Kueue (docs/install.md, "Queueing with Kueue"): the chart with
# kueue.enabled (the operator runs with --kueue and the chart's RBAC for Workloads), the real Kueue
# of tests/kueue/kueue.sh (its webhooks, scheduler and preemption), node agents with 2
# nvidia.com/gpu each running the real workers, and a ClusterQueue with a quota of 2 GPUs:
#   1. job `low-a` (WorkloadPriorityClass low, 2 trainers x 1 GPU: the whole quota) is admitted:
#      its Workload (owned by the job, pod sets master + 2 trainers) gets Admitted, spec.suspend
#      goes false, it runs;
#   2. job `low-b` (same priority) waits: its Workload is pending, spec.suspend true, phase
#      Suspended saying so, and not one pod of it is created while the quota is taken;
#   3. job `high` (priority high) preempts low-a: Kueue evicts its Workload, the operator suspends
#      low-a (its run interrupted, pods deleted, no restart counted) and gives the quota back once
#      no pod of it is left; high is admitted, runs, Succeeded, its Workload Finished;
#   4. low-a is admitted again and its run starts again from its beginning (attempt 1); low-b runs
#      after it; both Succeeded with complete reports.
# Throughout (sampled every 0.5 s): never pods of two jobs at once (the quota fits one), and the
# whole time no job had a pod without its Workload admitted. Nothing is left at the end.
# Needs what tests/operator/e2e/lib.sh needs, and REPO (for tests/kueue/kueue.sh, which needs
# scripts/kueue.sh's build).
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=${REPO:-$(cd "$HERE/../.." && pwd)}
CHART_SETS="--set kueue.enabled=true"
export TRAINBENCH_CACHE=${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}  # Kueue's build (lib.sh moves HOME)
# shellcheck source=../operator/e2e/lib.sh
source "$REPO/tests/operator/e2e/lib.sh"

KUEUE_DIR="$WORK/kueue"
stop_kueue() { bash "$HERE/kueue.sh" stop "$KUEUE_DIR" >/dev/null 2>&1 || true; }
ID=$$
# Cluster-scoped objects of this test, deleted at the end (the namespace takes the rest).
delete_cluster_objects() {
  kc delete clusterqueue "tb-$ID" --wait=false >/dev/null 2>&1 || true
  kc delete resourceflavor "tb-$ID" --wait=false >/dev/null 2>&1 || true
  kc delete workloadpriorityclass "tb-$ID-low" "tb-$ID-high" >/dev/null 2>&1 || true
}
EXTRA_CLEANUP="delete_cluster_objects; stop_kueue"

start_namespace
bash "$HERE/kueue.sh" start "$KUEUE_DIR" "$CONTROLPLANE_DIR" >"$WORK/kueue-start.log" 2>&1 ||
  fail "Kueue did not start: $(tail -20 "$WORK/kueue-start.log")"
grep -q -- "--kueue" <<<"$OPERATOR_SCOPE_FLAGS" || fail "the chart with kueue.enabled gives no --kueue: $OPERATOR_SCOPE_FLAGS"
NODE_AGENT_ARGS=(--gpus 2)
start_nodes --node n1 --node n2
start_operator

echo "== Kueue's queue: 2 nvidia.com/gpu for this namespace"
kc apply -f - >/dev/null <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tb-$ID}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: tb-$ID}
spec:
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: $NS}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
        - name: tb-$ID
          resources:
            - {name: cpu, nominalQuota: "64"}
            - {name: memory, nominalQuota: 64Gi}
            - {name: nvidia.com/gpu, nominalQuota: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team, namespace: $NS}
spec: {clusterQueue: tb-$ID}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: tb-$ID-low}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: tb-$ID-high}
value: 1000
EOF

# gpu_job NAME PRIORITY: one run of 2 trainers x 1 GPU each, queued in LocalQueue team: lib.sh's
# held_job, which waits at its first step until the test lets it go (release_run).
gpu_job() {
  held_job "$1" "{backoffLimit: 0, collectiveTimeoutSeconds: 60, schedulingTimeoutSeconds: 120}" \
    "{nodes: 2, devicesPerNode: 1}" |
    sed -e "s|^metadata: {name: $1}|metadata: {name: $1, labels: {kueue.x-k8s.io/queue-name: team, kueue.x-k8s.io/priority-class: tb-$ID-$2}}|" \
      -e 's|  template: {image: trainbench/worker:0.1.0}|  template: {image: trainbench/worker:0.1.0, resources: {limits: {nvidia.com/gpu: 1}}}|'
}
status() { kc get bj "$1" -o jsonpath="{.status.$2}"; }
workload_of() { kc get workloads -l "trainbench.dev/job=$1" -o jsonpath='{.items[0].metadata.name}'; }
wl_condition() { kc get workload "$(workload_of "$1")" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}"; }
admitted() { [ "$(wl_condition "$1" Admitted)" = True ]; }
suspend_is() { [ "$(kc get bj "$1" -o jsonpath='{.spec.suspend}')" = "$2" ]; }
active_jobs() {  # the jobs with a pod that is not finished, one per line
  kc get pods -o json | jq -r '.items[] | select(.status.phase != "Succeeded" and .status.phase != "Failed")
    | .metadata.labels["trainbench.dev/job"]' | sort -u
}

# The watcher: every 0.5 s, the jobs with active pods, between two reads of the jobs whose
# Workload holds quota (QuotaReserved). A job with pods is without quota only when neither read
# has it (two kubectl calls are not one instant: quota given back just after the pods' read, or
# reserved just before it, is not a violation; seen in CI).
reserved_jobs() {
  kc get workloads -o json | jq -r '.items[] | select(any(.status.conditions[]?;
    (.type == "QuotaReserved" and .status == "True"))) | .metadata.labels["trainbench.dev/job"]'
}
watch_quota() {
  while :; do
    local jobs before after j
    before=$(reserved_jobs 2>/dev/null) && jobs=$(active_jobs 2>/dev/null) && after=$(reserved_jobs 2>/dev/null) ||
      { sleep 0.5; continue; }
    [ "$(grep -c . <<<"$jobs")" -le 1 ] || echo "TWO $(date +%T.%N) $(tr '\n' ' ' <<<"$jobs")"
    for j in $jobs; do
      grep -qx "$j" <<<"$before" || grep -qx "$j" <<<"$after" || echo "UNADMITTED $(date +%T.%N) $j"
    done
    sleep 0.5
  done
}
watch_quota >"$WORK/quota-watch.log" 2>&1 &
WATCH_PID=$!
PIDS+=("$WATCH_PID")

echo "== 1. low-a is admitted and runs"
# low-a waits at its first step until it has been preempted: it trains when high arrives, on any
# machine; its rerun, and the other two jobs, go straight through.
release_run low-b 0
release_run high 0
gpu_job low-a low | kc apply -f - >/dev/null
wait_for 60 admitted low-a || fail "low-a's Workload not admitted: $(kc get workloads -o yaml | tail -40; kc get bj low-a -o yaml | grep -v "^    [a-z]" | tail -60)"
wl=$(kc get workload "$(workload_of low-a)" -o json)
[ "$(jq -r '.metadata.ownerReferences[0].kind + "/" + .metadata.ownerReferences[0].name' <<<"$wl")" = BenchmarkJob/low-a ] ||
  fail "low-a's Workload is not owned by the job: $(jq -c .metadata.ownerReferences <<<"$wl")"
[ "$(jq -r '[.spec.podSets[] | "\(.name)=\(.count)"] | join(" ")' <<<"$wl")" = "master=1 trainer=2" ] ||
  fail "low-a's pod sets: $(jq -c '[.spec.podSets[] | {name, count}]' <<<"$wl")"
[ "$(jq -r '.spec.priority' <<<"$wl")" = 100 ] || fail "low-a's priority: $(jq -c .spec <<<"$wl" | cut -c1-300)"
wait_for 30 suspend_is low-a false || fail "low-a's spec.suspend not false after admission"
wait_for 120 phase_is low-a Running || fail "low-a not running: $(status low-a phase)"
run_running() { [ "$(status "$1" 'runs[0].phase')" = Running ]; }
wait_for 120 run_running low-a || fail "low-a's run not running: $(status low-a runs)"
wait_held 120 low-a 0 2 || fail "low-a's ranks do not train: $(kc get pods -o wide)"

echo "== 2. low-b waits for the quota"
gpu_job low-b low | kc apply -f - >/dev/null
wait_for 30 suspend_is low-b true || fail "low-b not suspended while its Workload waits"
wait_for 30 phase_is low-b Suspended || fail "low-b's phase: $(status low-b phase)"
kc get bj low-b -o jsonpath='{.status.conditions[?(@.type=="Suspended")].message}' | grep -q "waits for Kueue's admission in LocalQueue team" ||
  fail "low-b's Suspended message: $(status low-b conditions)"
sleep 3
no_pods_of low-b || fail "low-b has pods while it waits"
[ "$(wl_condition low-b QuotaReserved)" != True ] || fail "low-b's Workload reserved quota beside low-a's"

echo "== 3. high preempts low-a"
gpu_job high high | kc apply -f - >/dev/null
evicted() { [ "$(wl_condition low-a Evicted)" = True ] || [ "$(status low-a 'runs[0].interruptions')" = 1 ]; }
wait_for 60 evicted || fail "low-a was not evicted: $(kc get workload "$(workload_of low-a)" -o jsonpath='{.status.conditions}')"
wait_for 30 suspend_is low-a true || fail "the operator did not suspend the evicted low-a"
wait_for 60 no_pods_of low-a || fail "low-a's pods remain after its eviction: $(kc get pods -o name)"
release_run low-a 0
wait_phase high Succeeded || fail "high did not succeed: $(status high phase) $(status high conditions)"
[ "$(wl_condition high Finished)" = True ] || wait_for 30 eval '[ "$(wl_condition high Finished)" = True ]' ||
  fail "high's Workload is not Finished: $(kc get workload "$(workload_of high)" -o jsonpath='{.status.conditions}')"
[ "$(status low-a 'runs[0].restarts')" = 0 ] || fail "an eviction counted as a restart: $(status low-a 'runs[0]')"

echo "== 4. low-a runs again, then low-b"
wait_phase low-a Succeeded || fail "low-a did not succeed: $(status low-a phase) $(status low-a conditions)"
[ "$(status low-a 'runs[0].attempt')/$(status low-a 'runs[0].interruptions')" = 1/1 ] ||
  fail "low-a's run after its eviction: $(status low-a 'runs[0]')"
wait_phase low-b Succeeded || fail "low-b did not succeed: $(status low-b phase) $(status low-b conditions)"
for j in low-a low-b high; do
  [ "$(status "$j" 'report.runs[0].worldSize')" = 2 ] || fail "$j's report: $(status "$j" report | cut -c1-300)"
  wait_for 30 eval "[ \"\$(wl_condition $j Finished)\" = True ]" || fail "$j's Workload is not Finished"
done
kill "$WATCH_PID" 2>/dev/null || true
wait "$WATCH_PID" 2>/dev/null || true
! grep -q "^TWO" "$WORK/quota-watch.log" || fail "pods of two jobs at once: $(grep '^TWO' "$WORK/quota-watch.log" | head -3)"
! grep -q "^UNADMITTED" "$WORK/quota-watch.log" ||
  fail "a job had pods without its quota: $(grep '^UNADMITTED' "$WORK/quota-watch.log" | head -3)"
kc get bj
kc get workloads
kc get events --sort-by=.metadata.creationTimestamp -o custom-columns=OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message |
  grep -E "low-a|low-b|high" | cut -c1-160
echo "PASS kueue: admitted, queued, preempted and resumed through the real Kueue; never two jobs' pods at once"

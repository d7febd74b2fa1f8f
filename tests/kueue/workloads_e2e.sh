#!/usr/bin/env bash
# controlplane.kueue.workloads: the protocol our operator follows as an EXTERNAL job controller of
# the real Kueue (v0.17, tests/kueue/kueue.sh) for its BenchmarkJobs, played by hand with the raw
# API (curl, the exact requests the operator makes) on the real control plane:
#   - a ResourceFlavor (no node labels), a ClusterQueue with a quota of 4 nvidia.com/gpu (and
#     cpu, memory) that admits only this test's namespace, a LocalQueue in it, two
#     WorkloadPriorityClasses;
#   - Workload A (3 GPUs), controller-owned by a BenchmarkJob, is admitted: QuotaReserved and
#     Admitted True, status.admission names the ClusterQueue and the flavor; Kueue's mutating
#     webhook was called for its create (the audit log's annotation) and its validating webhook
#     refuses an invalid Workload with Kueue's own message;
#   - Workload B (2 GPUs) stays pending (QuotaReserved False, reason Pending) until A is marked
#     Finished (a merge patch of the status subresource), then is admitted;
#   - B finished with a server-side apply of the status (field manager trainbench-operator);
#   - Workload low (priority class 100, 3 GPUs) admitted; Workload high (1000, 2 GPUs) preempts it:
#     low gets Evicted=True reason Preempted, Preempted=True, and keeps its quota (QuotaReserved
#     True) until the job controller, having stopped its pods, clears status.admission, sets
#     QuotaReserved False reason Pending, Admitted False, Requeued True (jobframework reconciler
#     step 6); then high is admitted, and once high is Finished low is admitted again.
# Needs: KUBECONFIG, CONTROLPLANE_DIR (the fixture `controlplane`), REPO.
set -euo pipefail
export PATH="$CONTROLPLANE_DIR/bin:$PATH"  # the kubectl of the server's release
here="$(cd "$(dirname "$0")" && pwd)"
REPO=${REPO:-$(cd "$here/../.." && pwd)}
id=$(head -c 3 /dev/urandom | od -An -tx1 | tr -d ' \n')
ns=kueue-e2e-$id
work=$(mktemp -d)
kdir=$work/kueue
URL=$(cat "$CONTROLPLANE_DIR/url")
rf=kueue-e2e-$id-flavor cq=kueue-e2e-$id-cq lq=queue
wpc_low=kueue-e2e-$id-low wpc_high=kueue-e2e-$id-high

log() { echo "[$(date +%T)] $*"; }
fail() {
  echo "FAIL: $*" >&2
  for w in $(kubectl -n "$ns" get workloads -o name 2>/dev/null); do
    echo "---- $w status ----" >&2; kubectl -n "$ns" get "$w" -o jsonpath='{.status}' >&2 || true; echo >&2
  done
  [ -f "$kdir/kueue.log" ] && { echo "---- kueue.log (tail) ----" >&2; tail -n 40 "$kdir/kueue.log" >&2; }
  exit 1
}

cleanup() {
  local rc=$?
  set +e
  # KUEUE_E2E_KEEP=DIR: the Workloads as they ended (with managedFields) and Kueue's log, kept there.
  if [ -n "${KUEUE_E2E_KEEP:-}" ]; then
    mkdir -p "$KUEUE_E2E_KEEP"
    kubectl -n "$ns" get workloads -o json --show-managed-fields >"$KUEUE_E2E_KEEP/workloads.json"
    cp "$kdir/kueue.log" "$kdir/config.yaml" "$kdir/webhooks.yaml" "$KUEUE_E2E_KEEP/"
  fi
  # While Kueue runs (its finalizers on the ClusterQueue and the ResourceFlavor go with it).
  kubectl -n "$ns" delete workloads --all --wait=false >/dev/null 2>&1
  kubectl delete clusterqueue "$cq" --ignore-not-found --timeout 30s >/dev/null 2>&1
  kubectl delete resourceflavor "$rf" --ignore-not-found --timeout 30s >/dev/null 2>&1
  kubectl delete workloadpriorityclass "$wpc_low" "$wpc_high" --ignore-not-found >/dev/null 2>&1
  # Anything Kueue did not let go of in time: its finalizers off, so nothing stays behind.
  for o in "clusterqueue/$cq" "resourceflavor/$rf"; do
    kubectl get "$o" >/dev/null 2>&1 && kubectl patch "$o" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  done
  bash "$here/kueue.sh" stop "$kdir"
  kubectl delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

# api METHOD PATH [CONTENT_TYPE BODY]: one request to the API server, as the operator makes it;
# prints the body; fails on an HTTP error (with the body on stderr).
api() {
  local method=$1 path=$2 ct=${3:-} body=${4:-} out code
  local args=(-sS --cacert "$CONTROLPLANE_DIR/pki/ca.crt" --cert "$CONTROLPLANE_DIR/pki/admin.crt"
    --key "$CONTROLPLANE_DIR/pki/admin.key" -X "$method" -o "$work/resp" -w '%{http_code}')
  [ -n "$ct" ] && args+=(-H "Content-Type: $ct" --data-binary "$body")
  code=$(curl "${args[@]}" "$URL$path")
  if [ "${code:0:1}" != 2 ]; then echo "$method $path: HTTP $code $(cat "$work/resp")" >&2; return 1; fi
  cat "$work/resp"
}
WL=/apis/kueue.x-k8s.io/v1beta2/namespaces/$ns/workloads

# jq-like reads with python: wl_json NAME, then py EXPR over it as `w`.
wl_json() { api GET "$WL/$1"; }
py() { python3 -c "import json,sys; w=json.load(sys.stdin); $1"; }
cond() {  # cond NAME TYPE: "STATUS REASON" of the condition (or "None None")
  wl_json "$1" | py "c=[c for c in w.get('status',{}).get('conditions',[]) if c['type']=='$2']; print(c[0]['status'], c[0]['reason']) if c else print('None None')"
}
# wait_cond NAME TYPE STATUS [REASON] [SECONDS]
wait_cond() {
  local name=$1 type=$2 want=$3 reason=${4:-} secs=${5:-60} got end
  end=$((SECONDS + secs))
  while :; do
    got=$(cond "$name" "$type")
    if [ "${got% *}" = "$want" ] && { [ -z "$reason" ] || [ "${got#* }" = "$reason" ]; }; then return 0; fi
    [ $SECONDS -lt $end ] || fail "$name: condition $type is '$got', wanted '$want${reason:+ $reason}' within $secs s"
    sleep 0.5
  done
}
# stays NAME TYPE STATUS SECONDS: the condition keeps STATUS (or is absent when STATUS is None) for SECONDS.
stays() {
  local end=$((SECONDS + $4)) got
  while [ $SECONDS -lt $end ]; do
    got=$(cond "$1" "$2")
    [ "${got% *}" = "$3" ] || fail "$1: condition $2 became '$got' (expected it to stay $3)"
    sleep 0.5
  done
}

# workload NAME GPUS_PER_POD COUNT [PRIORITY_CLASS]: the Workload our operator creates for a
# BenchmarkJob (the JSON it POSTs). One podSet per sweep entry's role; here one, `workers`.
workload_json() {
  local prio='' uid
  # The owner's uid, also as the label kueue.x-k8s.io/job-uid, as Kueue's own job controllers set it
  # (Kueue names the job by it in events and eviction messages: "JobUID: UNKNOWN" without it).
  uid=$(kubectl -n "$ns" get benchmarkjob "$1" -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
  # A priorityClassRef needs spec.priority beside it (the CRD's CEL rule "priority should not be
  # nil when priorityClassRef is set"): the job controller copies the class's value itself.
  [ -n "${4:-}" ] && prio=",\"priorityClassRef\": {\"group\": \"kueue.x-k8s.io\", \"kind\": \"WorkloadPriorityClass\", \"name\": \"$4\"},
    \"priority\": $(kubectl get workloadpriorityclass "$4" -o jsonpath='{.value}')"
  cat <<EOF
{
  "apiVersion": "kueue.x-k8s.io/v1beta2",
  "kind": "Workload",
  "metadata": {
    "name": "benchmarkjob-$1",
    "namespace": "$ns",
    "labels": {"trainbench.dev/benchmarkjob": "$1", "kueue.x-k8s.io/job-uid": "$uid"},
    "ownerReferences": [{"apiVersion": "trainbench.dev/v1alpha1", "kind": "BenchmarkJob", "name": "$1", "uid": "$uid",
                         "controller": true, "blockOwnerDeletion": true}]
  },
  "spec": {
    "queueName": "$lq"$prio,
    "podSets": [{
      "name": "workers",
      "count": $3,
      "template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "worker", "image": "trainbench/worker:0.1.0",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "$2"},
                                      "limits": {"nvidia.com/gpu": "$2"}}}]
      }}
    }]
  }
}
EOF
}
benchmarkjob() {
  kubectl apply -f - >/dev/null <<EOF
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: $1, namespace: $ns}
spec:
  suspend: true
  benchmark: {model: mlp, mlp: {inputSize: 8, hiddenSizes: [8], numClasses: 2}, batchSizePerDevice: 4,
              warmupSteps: 1, measureSteps: 1, repeats: 1, threadsPerProcess: 1}
  sweep: [{nodes: 1, devicesPerNode: 1, paradigm: none}]
  device: cpu
  backend: gloo
EOF
}
create_workload() {  # NAME GPUS COUNT [PRIORITY_CLASS]
  benchmarkjob "$1"
  api POST "$WL" application/json "$(workload_json "$@")" >"$work/created-$1.json" || fail "creating Workload benchmarkjob-$1"
}

# The status writes of the external job controller.
# finish_merge NAME: Finished=True with a JSON merge patch of the status subresource: the whole
# conditions list (a merge patch replaces lists), with resourceVersion for optimistic concurrency.
finish_merge() {
  local body
  body=$(wl_json "benchmarkjob-$1" | py "
import datetime
now=datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
conds=[c for c in w['status'].get('conditions',[]) if c['type']!='Finished']
conds.append({'type':'Finished','status':'True','reason':'Succeeded','message':'BenchmarkJob $1 succeeded','lastTransitionTime':now,'observedGeneration':w['metadata']['generation']})
print(json.dumps({'metadata':{'resourceVersion':w['metadata']['resourceVersion']},'status':{'conditions':conds}}))")
  api PATCH "$WL/benchmarkjob-$1/status" application/merge-patch+json "$body" >/dev/null || fail "finishing $1 (merge patch)"
}
# finish_apply NAME: the same with server-side apply (our own field manager, force: Kueue's
# kueue-admission manager owns other conditions; the Finished entry is ours alone).
finish_apply() {
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  api PATCH "$WL/benchmarkjob-$1/status?fieldManager=trainbench-operator&force=true" application/apply-patch+yaml "{
    \"apiVersion\": \"kueue.x-k8s.io/v1beta2\", \"kind\": \"Workload\",
    \"metadata\": {\"name\": \"benchmarkjob-$1\", \"namespace\": \"$ns\"},
    \"status\": {\"conditions\": [{\"type\": \"Finished\", \"status\": \"True\", \"reason\": \"Succeeded\",
      \"message\": \"BenchmarkJob $1 succeeded\", \"lastTransitionTime\": \"$now\"}]}}" >/dev/null ||
    fail "finishing $1 (server-side apply)"
}
# release_after_eviction NAME: jobframework reconciler step 6 after the pods are gone: admission
# cleared, QuotaReserved False (Pending, the eviction's message), Admitted False (NoReservation),
# Requeued True with the eviction's reason (True for Preempted and NodeFailures, else False).
release_after_eviction() {
  local body
  body=$(wl_json "benchmarkjob-$1" | py "
import datetime
now=datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
gen=w['metadata']['generation']
conds={c['type']:c for c in w['status']['conditions']}
ev=conds['Evicted']
requeued=ev['reason'] in ('Preempted','NodeFailures')
def put(t,s,r,m):
    old=conds.get(t)
    lt=old['lastTransitionTime'] if old and old['status']==s else now
    conds[t]={'type':t,'status':s,'reason':r,'message':m,'lastTransitionTime':lt,'observedGeneration':gen}
put('Requeued','True' if requeued else 'False',ev['reason'],ev['message'])
put('QuotaReserved','False','Pending',ev['message'])
put('Admitted','False','NoReservation','The workload has no reservation')
print(json.dumps({'metadata':{'resourceVersion':w['metadata']['resourceVersion']},
                  'status':{'admission':None,'conditions':list(conds.values())}}))")
  api PATCH "$WL/benchmarkjob-$1/status" application/merge-patch+json "$body" >/dev/null ||
    fail "releasing $1's quota after its eviction"
}

log "namespace $ns; starting Kueue"
kubectl create namespace "$ns" >/dev/null
bash "$here/kueue.sh" start "$kdir" "$CONTROLPLANE_DIR" || fail "Kueue did not start"
# shellcheck disable=SC1091
. "$kdir/env"

# The BenchmarkJob CRD: the controlplane.chart fixture installed it; standalone runs apply it.
kubectl get crd benchmarkjobs.trainbench.dev >/dev/null 2>&1 ||
  kubectl apply --server-side -f "$REPO/crds/trainbench.dev_benchmarkjobs.yaml" >/dev/null

kubectl apply -f - >/dev/null <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: $rf}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $cq}
spec:
  namespaceSelector:
    matchLabels: {kubernetes.io/metadata.name: $ns}
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: $rf
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: memory, nominalQuota: 64Gi}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: $lq, namespace: $ns}
spec: {clusterQueue: $cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: $wpc_low}
value: 100
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: $wpc_high}
value: 1000
EOF
# The ClusterQueue got Kueue's finalizer from its mutating webhook (mclusterqueue.kb.io).
kubectl get clusterqueue "$cq" -o jsonpath='{.metadata.finalizers}' | grep -q kueue.x-k8s.io/resource-in-use ||
  fail "the ClusterQueue has no kueue.x-k8s.io/resource-in-use finalizer: Kueue's mutating webhook not called"
for i in $(seq 120); do
  [ "$(kubectl get clusterqueue "$cq" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ] &&
    [ "$(kubectl -n "$ns" get localqueue "$lq" -o jsonpath='{.status.conditions[?(@.type=="Active")].status}')" = True ] && break
  [ "$i" -lt 120 ] || fail "ClusterQueue/LocalQueue not Active"
  sleep 0.5
done
log "ClusterQueue $cq and LocalQueue $lq active"

# Kueue's validating webhook refuses an invalid Workload with its own message.
bad=$(workload_json never 1 1 2>/dev/null | sed 's/"nvidia.com\/gpu": "1"},/"nvidia.com\/gpu": "1", "pods": "1"},/' |
  sed 's/"uid": ""/"uid": "00000000-0000-0000-0000-000000000000"/')
if out=$(api POST "$WL" application/json "$bad" 2>&1); then fail "an invalid Workload (requests pods) was accepted"; fi
grep -q 'admission webhook \\"vworkload.kb.io\\" denied the request' <<<"$out" &&
  grep -q 'the key is reserved for internal kueue use' <<<"$out" ||
  fail "the invalid Workload was refused, but not by Kueue's webhook: $out"
log "Kueue's validating webhook refuses a Workload requesting pods: $(sed -n 's/^ *"message": "\(.*\)",$/\1/p' <<<"$out")"

# A: 3 pods x 1 GPU of the 4: admitted.
create_workload a 1 3
wait_cond benchmarkjob-a QuotaReserved True QuotaReserved
wait_cond benchmarkjob-a Admitted True Admitted
wl_json benchmarkjob-a | py "
a=w['status']['admission']
assert a['clusterQueue']=='$cq', a
p=a['podSetAssignments'][0]
assert p['name']=='workers' and p['count']==3 and p['flavors']['nvidia.com/gpu']=='$rf', p
assert p['resourceUsage']['nvidia.com/gpu']=='3', p
" || fail "A's status.admission is not what was asked"
log "A admitted: $(wl_json benchmarkjob-a | py "print(json.dumps(w['status']['admission']))")"
# Kueue's mutating webhook was called for the create (the audit log, level Metadata, annotates it).
grep '"verb":"create"' "$CONTROLPLANE_DIR/audit.log" | grep "\"namespace\":\"$ns\",\"name\":\"benchmarkjob-a\"" |
  grep -q "\"configuration\\\\\":\\\\\"kueue-$KUEUE_ID-mutating\\\\\",\\\\\"webhook\\\\\":\\\\\"mworkload.kb.io\\\\\"" ||
  fail "the audit log does not show Kueue's mutating webhook mworkload.kb.io called for A's create"
log "audit log: kueue-$KUEUE_ID-mutating/mworkload.kb.io called for A's create"

# B: 2 more GPUs than the 1 left: pending.
create_workload b 1 2
wait_cond benchmarkjob-b QuotaReserved False Pending
stays benchmarkjob-b Admitted None 3
log "B pending: $(wl_json benchmarkjob-b | py "print([c['message'] for c in w['status']['conditions'] if c['type']=='QuotaReserved'][0])")"

# A finished (merge patch): its quota is released and B admitted.
# A merge patch carrying a resourceVersion Kueue has moved past is refused with 409 Conflict: the
# controller reads the Workload again and retries.
stale_rv=$(py "print(w['metadata']['resourceVersion'])" <"$work/created-a.json")  # as created, before Kueue admitted it
if out=$(api PATCH "$WL/benchmarkjob-a/status" application/merge-patch+json \
  "{\"metadata\": {\"resourceVersion\": \"$stale_rv\"}, \"status\": {\"conditions\": []}}" 2>&1); then
  fail "a status merge patch with a stale resourceVersion was accepted"
fi
grep -q 'HTTP 409' <<<"$out" || fail "a stale status merge patch: $out"
finish_merge a
wait_cond benchmarkjob-a Finished True Succeeded
wait_cond benchmarkjob-b Admitted True Admitted 60
log "A finished (merge patch of status), B admitted"

# B finished (server-side apply): Kueue's conditions stay, and its quota goes.
finish_apply b
wait_cond benchmarkjob-b Finished True Succeeded
[ "$(cond benchmarkjob-b Admitted)" = "True Admitted" ] || fail "B's Admitted condition lost by the apply"
for i in $(seq 60); do
  [ "$(kubectl get clusterqueue "$cq" -o jsonpath='{.status.admittedWorkloads}')" = 0 ] && break
  [ "$i" -lt 60 ] || fail "the ClusterQueue still counts admitted workloads after A and B finished"
  sleep 0.5
done
log "B finished (server-side apply of status), the ClusterQueue is empty"

# Preemption: low (3 GPUs, priority 100) admitted, then high (2 GPUs, priority 1000).
create_workload low 1 3 "$wpc_low"
wait_cond benchmarkjob-low Admitted True Admitted
[ "$(wl_json benchmarkjob-low | py "print(w['spec']['priority'])")" = 100 ] || fail "low's spec.priority is not 100"
create_workload high 1 2 "$wpc_high"
wait_cond benchmarkjob-low Evicted True Preempted
wait_cond benchmarkjob-low Preempted True InClusterQueue
low_uid=$(kubectl -n "$ns" get benchmarkjob low -o jsonpath='{.metadata.uid}')
high_uid=$(kubectl -n "$ns" get benchmarkjob high -o jsonpath='{.metadata.uid}')
wl_json benchmarkjob-low | py "
m=[c['message'] for c in w['status']['conditions'] if c['type']=='Evicted'][0]
assert 'JobUID: $high_uid' in m, m" || fail "low's Evicted message does not name high's job uid (label kueue.x-k8s.io/job-uid)"
log "low evicted: $(wl_json benchmarkjob-low | py "print([c['message'] for c in w['status']['conditions'] if c['type']=='Evicted'][0])")"
# Kueue leaves the quota with low until its job controller has stopped the pods and says so.
[ "$(cond benchmarkjob-low QuotaReserved)" = "True QuotaReserved" ] || fail "low lost its quota before its controller released it"
stays benchmarkjob-high QuotaReserved False 3
log "high waits while low holds its quota (QuotaReserved True, Evicted True)"
release_after_eviction low
wait_cond benchmarkjob-high Admitted True Admitted
wait_cond benchmarkjob-low QuotaReserved False Pending
[ "$(wl_json benchmarkjob-low | py "print(w['status'].get('admission'))")" = None ] || fail "low still has status.admission"
log "low released (admission cleared, QuotaReserved False Pending, Admitted False, Requeued True): high admitted"
stays benchmarkjob-low Admitted False 3
finish_merge high
wait_cond benchmarkjob-low Admitted True Admitted 60
wait_cond benchmarkjob-low Evicted False QuotaReserved
wait_cond benchmarkjob-low Requeued True
log "high finished: low admitted again ($(wl_json benchmarkjob-low | py "print(sorted((c['type'],c['status'],c['reason']) for c in w['status']['conditions']))"))"
finish_merge low
wait_cond benchmarkjob-low Finished True Succeeded
log "PASS"

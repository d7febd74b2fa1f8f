#!/usr/bin/env bash
# The shared control plane (controlplane.sh) is the real thing, wired as a cluster's: each
# component is there and doing its job, and authentication and RBAC are the real ones.
# Needs KUBECONFIG and CONTROLPLANE_DIR (the ctest fixture's).
set -euo pipefail
export PATH="$CONTROLPLANE_DIR/bin:$PATH"  # the kubectl of the server's release
fail() { echo "FAIL: $*" >&2; exit 1; }
kc() { kubectl --request-timeout=20s "$@"; }
wait_for() {  # wait_for SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.5; done
}
ns=fixture-test
kc delete namespace $ns --ignore-not-found --wait=true >/dev/null
kc create namespace $ns >/dev/null
trap 'kc delete namespace $ns --wait=false >/dev/null 2>&1 || true' EXIT

# kube-apiserver of the pinned release.
want=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$(dirname "$0")/build/go.mod")
got=$(kc get --raw /version | jq -r .gitVersion)
[ "$got" = "$want" ] || fail "/version says $got, go.mod pins $want"
echo "kube-apiserver $got"

# kube-controller-manager: the ServiceAccount controller made `default` in the new namespace,
# the root-CA publisher its kube-root-ca.crt, and the garbage collector deletes an orphan.
wait_for 60 kc -n $ns get serviceaccount default || fail "no default ServiceAccount in $ns"
wait_for 60 kc -n $ns get configmap kube-root-ca.crt || fail "no kube-root-ca.crt in $ns"
owner_uid=$(kc -n $ns create configmap owner -o jsonpath='{.metadata.uid}')
kc -n $ns apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: "$owner_uid"}]
YAML
kc -n $ns delete configmap owner >/dev/null
wait_for 60 bash -c "! kubectl -n $ns get configmap dependent" || fail "the garbage collector did not delete the dependent"
echo "kube-controller-manager: ServiceAccounts, root CA, garbage collection"

# kube-scheduler: with no node, a pod is reported unschedulable by the default scheduler.
kc -n $ns run waiting --image=example.invalid/none:1 --restart=Never >/dev/null
unschedulable() {
  [ "$(kc -n $ns get pod waiting -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}')" = Unschedulable ]
}
wait_for 60 unschedulable || fail "the scheduler did not report the pod unschedulable: $(kc -n $ns get pod waiting -o yaml)"
echo "kube-scheduler: $(kc -n $ns get pod waiting -o jsonpath='{.status.conditions[0].message}')"

# Authentication and RBAC: a ServiceAccount's token (TokenRequest, signed with the control
# plane's key) authenticates as that account, and the real authorizer refuses what no role grants.
kc -n $ns create serviceaccount probe >/dev/null
token=$(kc -n $ns create token probe --duration 10m)
server=$(kc config view --raw -o jsonpath='{.clusters[0].cluster.server}')
ca="$CONTROLPLANE_DIR/pki/ca.crt"
who=$(curl -sS --cacert "$ca" -H "Authorization: Bearer $token" -X POST -H 'Content-Type: application/json' \
  -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
  "$server/apis/authentication.k8s.io/v1/selfsubjectreviews" | jq -r .status.userInfo.username)
[ "$who" = "system:serviceaccount:$ns:probe" ] || fail "the token authenticates as '$who'"
code=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer $token" "$server/api/v1/namespaces/$ns/secrets")
[ "$code" = 403 ] || fail "a ServiceAccount without roles listed secrets: HTTP $code"
kc -n $ns create role read-cm --verb=get,list --resource=configmaps >/dev/null
kc -n $ns create rolebinding probe-read-cm --role=read-cm --serviceaccount=$ns:probe >/dev/null
readable() { [ "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer $token" "$server/api/v1/namespaces/$ns/configmaps")" = 200 ]; }
wait_for 30 readable || fail "the RoleBinding did not grant list configmaps"
curl -sS --fail -o /dev/null --cacert "$ca" "$server/api/v1/namespaces/$ns/configmaps" 2>/dev/null &&
  fail "an anonymous request listed configmaps"
echo "authentication and RBAC: $who, 403 without a role, 200 with one"

echo "PASS"

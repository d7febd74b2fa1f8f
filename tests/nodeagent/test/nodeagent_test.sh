#!/usr/bin/env bash
# trainbench-nodeagent against the real control plane (the ctest fixture `controlplane`):
#   nodeagent_test.sh CASE   with CASE one of register, pods, logs, delete, lost, shutdown, simulated, images
# Each case has a namespace and node names of its own (nodeagent-CASE-*), so cases run side by
# side. Its nodes are tainted trainbench.dev/nodeagent-test=CASE:NoSchedule and its pods
# tolerate that and select the node by name: no other test's pod lands here, none of ours there.
# Needs KUBECONFIG, CONTROLPLANE_DIR (the fixture's) and NODEAGENT (the binary).
set -euo pipefail
case_name=${1:?usage: nodeagent_test.sh CASE}
[ -d "$CONTROLPLANE_DIR/bin" ] && export PATH="$CONTROLPLANE_DIR/bin:$PATH"  # the server's kubectl
ns=nodeagent-$case_name
work=$(mktemp -d "${TMPDIR:-/tmp}/nodeagent-$case_name.XXXXXX")
agents=()

fail() { echo "FAIL ($case_name): $*" >&2; exit 1; }
kc() { kubectl --request-timeout=20s "$@"; }
wait_for() {  # wait_for SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.25; done
}

cleanup() {
  local rc=$? pid
  for pid in "${agents[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${agents[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ $rc != 0 ] && [ $rc != 77 ]; then
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "---- $(basename "$f") (tail)"; tail -n 20 "$f"; }; done >&2
  fi
  kc delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  kc delete nodes -l "trainbench.dev/nodeagent-test=$case_name" --wait=false >/dev/null 2>&1 || true
  # A lost node's pods stay Terminating (nobody confirms them): force them out with the namespace.
  kc -n "$ns" delete pods --all --force --grace-period=0 >/dev/null 2>&1 || true
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

# start_agent NAME [ARGS...]: an agent for node $ns-NAME; its pid is in $agent_pid.
start_agent() {
  local name=$1; shift
  mkdir -p "$work/$name"
  "$NODEAGENT" --controlplane "$CONTROLPLANE_DIR" --node "$ns-$name" --dir "$work/$name" \
    --label "trainbench.dev/nodeagent-test=$case_name" --taint "trainbench.dev/nodeagent-test=$case_name:NoSchedule" \
    "$@" >"$work/$name.log" 2>&1 &
  agent_pid=$!
  agents+=("$agent_pid")
  wait_for 30 grep -q "^nodeagent ready" "$work/$name.log" || fail "agent $name did not start"
}
condition() {  # condition KIND NAME TYPE: its status
  kc -n "$ns" get "$1" "$2" -o jsonpath="{.status.conditions[?(@.type==\"$3\")].status}"
}
node_ready() { [ "$(condition node "$ns-$1" Ready)" = True ]; }
# Processes whose command line holds PATTERN (pods' scripts carry a marker of the case).
no_procs() { ! pgrep -f -- "$1" >/dev/null; }
phase_is() { [ "$(kc -n "$ns" get pod "$1" -o jsonpath='{.status.phase}')" = "$2" ]; }

# pod NAME NODE RESTART_POLICY SCRIPT [CONTAINER_YAML [SPEC_YAML]]: a pod on the case's node NODE
# running `sh -c SCRIPT`; CONTAINER_YAML goes into its container (4 spaces in), SPEC_YAML into
# its spec (2 spaces in).
pod() {
  kc -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: $1}}
spec:
${6:-}
  nodeSelector: {kubernetes.io/hostname: $ns-$2}
  tolerations: [{key: trainbench.dev/nodeagent-test, operator: Exists}]
  restartPolicy: $3
  terminationGracePeriodSeconds: 30
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", $(jq -Rn --arg s "$4" '$s')]
${5:-}
YAML
}

kc delete namespace "$ns" --ignore-not-found --wait=true >/dev/null
kc create namespace "$ns" >/dev/null
wait_for 60 kc -n "$ns" get serviceaccount default || fail "no default ServiceAccount in $ns"
source "$(dirname "$0")/cases/$case_name.sh"
echo "PASS ($case_name)"

# Shared setup for the end-to-end tests on the real Kubernetes control plane of tests/controlplane
# (kube-apiserver, etcd, kube-controller-manager, kube-scheduler), shared by the tests of a ctest
# run: each test gets a namespace of its own, where the real helm installs the chart (scope
# namespace); the operator runs under the chart's ServiceAccount (a TokenRequest token) and RBAC;
# pods run on nodes of the test's own node agents (tests/nodeagent), which only this namespace's
# pods may use (PodNodeSelector); with WITH_FAULTPROXY=1 the operator and the pods reach the API
# server through tests/faultproxy.
# Needs: OPERATOR, BIN_DIRS (dirs with trainbench and trainbench-worker), CRD, CONTROLPLANE_DIR,
# NODEAGENT, HELM, REPO; with WITH_FAULTPROXY=1, FAULTPROXY.
# Optional: KUBECTL (the kubectl binary to use; default: kubectl on PATH, after the control
# plane's own, of the server's release).
set -euo pipefail
KUBECTL=${KUBECTL:-kubectl}
E2E_BACKEND=controlplane  # the only one since kubesim was retired; scripts still name it
NS=default  # the test's namespace (its own, set by start_cluster)

# Python PyTorch (scripts/python-torch.sh: held_job's, program_e2e's), found under the real HOME before the test's own.
PYTHON_TORCH=$(bash "${REPO:-$(dirname "${BASH_SOURCE[0]}")/../../..}/scripts/python-torch.sh" --path 2>/dev/null) || PYTHON_TORCH=""
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tb-e2e.XXXXXX")
export HOME="$WORK/home" KUBECACHEDIR="$WORK/kubecache"
mkdir -p "$HOME"
PIDS=()

cleanup() {
  local rc=$?
  if [ $rc = 0 ]; then
    # The chart's RBAC is enough: the real authorizer refused the operator nothing that it was
    # not granted at another time. (Right after an API-server restart the authorizer's caches
    # are still filling, and it refuses for a moment what the Role grants: a verb the chart
    # lacks is refused every time.)
    local denied
    # A watch still open has only its ResponseStarted entry (200) so far.
    denied=$(jq -sc --arg u "system:serviceaccount:$NS:${OPERATOR_SA:-}" '[.[] | select((.stage == "ResponseComplete"
      or .stage == "ResponseStarted") and .user.username == $u) | {verb, resource: .objectRef.resource, subresource: .objectRef.subresource,
      code: .responseStatus.code}] | (map(select(.code < 300) | del(.code)) | unique) as $granted |
      map(select(.code == 403) | del(.code)) | unique | map(select(. as $d | $granted | index([$d]) | not)) | .[]' \
      "$CONTROLPLANE_DIR/audit.log")
    [ -z "$denied" ] || { echo "FAIL: the API server refused the operator (403): $denied" >&2; rc=1; }
  fi
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # A script's own clean-up (EXTRA_CLEANUP: shell words run first, e.g. its cluster-scoped objects).
  [ -z "${EXTRA_CLEANUP:-}" ] || eval "$EXTRA_CLEANUP" || true
  cleanup_namespace
  # Bounded: a process that has not stopped 30 s after SIGTERM is killed, and the log says so,
  # instead of holding the test until ctest's timeout.
  local waited=0 pid
  for pid in "${PIDS[@]}"; do
    while kill -0 "$pid" 2>/dev/null && [ $waited -lt 300 ]; do sleep 0.1; waited=$((waited + 1)); done
    if kill -0 "$pid" 2>/dev/null; then
      echo "cleanup: $(ps -o args= -p "$pid" 2>/dev/null | cut -c1-80) (pid $pid) still running 30 s after SIGTERM: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
  done
  if [ $rc -ne 0 ]; then
    echo "---- operator log (tail) ----"; tail -n 40 "$WORK/operator.log" 2>/dev/null || true
    local r
    for r in "$WORK"/replica-*.log; do  # the chaos soak's replicas
      [ -f "$r" ] && { echo "---- $(basename "$r") (tail) ----"; tail -n 12 "$r"; }
    done
    echo "(work dir kept: $WORK)"
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

kc() { "$KUBECTL" --request-timeout=20s "$@"; }

# The containers of the test's pods on this machine, one "PGID POD" line each. Each
# container is a process group of its own, and the operator's pods name themselves in their
# environment (POD_NAME, POD_NAMESPACE from the downward API), so this finds them whatever the
# node agent believes.
pod_process_groups() {
  local p env
  for p in /proc/[0-9]*; do
    env=$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null) || continue  # gone, or a kernel thread
    grep -qx "POD_NAMESPACE=$NS" <<<"$env" || continue
    echo "$(ps -o pgid= -p "${p#/proc/}" 2>/dev/null | tr -d ' ') $(sed -n 's/^POD_NAME=//p' <<<"$env")"
  done | awk '$1 != "" && !seen[$1]++'
}
# kill_pod NAME [SIGNAL]: the pod's containers get the signal, as a node would kill them (the
# kernel's OOM killer, a crashed runtime).
kill_pod() {
  local pgid pod n=0
  while read -r pgid pod; do
    [ "$pod" = "$1" ] || continue
    kill -"${2:-9}" -- "-$pgid" 2>/dev/null && n=$((n + 1))
  done < <(pod_process_groups)
  # Not fail: a caller may race the pod's end (the soak); under set -e a plain call still ends the test.
  [ $n -gt 0 ] || { echo "kill_pod $1: no container of it runs" >&2; return 1; }
}
# Containers still running for the test's pods.
running_containers() { pod_process_groups | wc -l; }
# audit_log: the real kube-apiserver's audit log (level Metadata, its ResponseComplete stage) of
# the test's namespace, one flat JSON line per request: ts, user, impersonator, verb, resource,
# subresource, namespace, name, code, userAgent.
audit_log() {
  jq -c --arg ns "$NS" 'select(.stage == "ResponseComplete" and (.objectRef.namespace // "") == $ns) |
    {ts: .requestReceivedTimestamp, user: .user.username, impersonator: (if .impersonatedUser then .user.username
     else null end), verb, resource: .objectRef.resource, subresource: (.objectRef.subresource // ""),
     namespace: .objectRef.namespace, name: (.objectRef.name // ""), code: .responseStatus.code, userAgent}' \
    "$CONTROLPLANE_DIR/audit.log"
}
# Pod names the API server created (201), one line each.
pods_created() {
  audit_log | jq -r 'select(.verb == "create" and .resource == "pods" and .subresource == "" and .code == 201) | .name'
}
no_containers_running() { [ "$(running_containers)" = 0 ]; }
# For failure messages: what still runs (the pods' process groups).
cluster_stats() { pod_process_groups; }
pod_gone() { ! kc get pod "$1" >/dev/null 2>&1; }
no_pods_of() { [ -z "$(kc get pods -l "trainbench.dev/job=$1" -o name)" ]; }
pod_phase() { kc get pod "$1" -o jsonpath='{.status.phase}'; }

# start_cluster [--node NAME[:k=v,...]]...: the test's namespace with the chart, its nodes
# (default: one node), the fault proxy (WITH_FAULTPROXY=1) and the operator.
start_cluster() {
  start_namespace
  [ -z "${WITH_FAULTPROXY:-}" ] || start_faultproxy
  start_nodes "$@"
  start_operator
}

NODE_PIDS=()
declare -A NODE_PID  # node name on the cluster -> its agent's pid
RELEASE=tb-$$  # unique: a scope-cluster release names its ClusterRole after itself
# CHART_SCOPE: the chart's scope (namespace: a Role; cluster: a ClusterRole, which lost-node
# handling needs to read nodes). Either way the test's operator watches only the test's namespace
# (--namespace after the chart's flags), so tests on the shared control plane never meet.
CHART_SCOPE=${CHART_SCOPE:-namespace}
# CHART_SETS: more `--set k=v` words for the chart (e.g. --set kueue.enabled=true).
CHART_SETS=${CHART_SETS:-}
# start_namespace: the test's namespace on the shared control plane, the chart installed there by
# the real helm (scope namespace: a Role, not a ClusterRole; no operator pod), and what the
# operator runs with: a kubeconfig with the chart's ServiceAccount token and the chart's flags. kubectl's context namespace
# is the test's, so the scripts' `kc` commands work there.
start_namespace() {
  NS="e2e-$(basename "$0" .sh | tr '_' '-' | cut -c1-30)-$$"
  export PATH="$CONTROLPLANE_DIR/bin:$PATH"  # the kubectl of the server's release
  cp "$CONTROLPLANE_DIR/kubeconfig" "$WORK/kubeconfig"
  export KUBECONFIG="$WORK/kubeconfig"
  "$KUBECTL" config set-context --current --namespace "$NS" >/dev/null
  kc create namespace "$NS" >/dev/null
  NS_CREATED=1
  # PodNodeSelector: every pod of this namespace goes to this test's nodes, none of another's.
  kc annotate namespace "$NS" "scheduler.alpha.kubernetes.io/node-selector=trainbench.dev/e2e-namespace=$NS" >/dev/null
  HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data" \
    "$HELM" install "$RELEASE" "$REPO/helm/trainbench" --namespace "$NS" --set "scope=$CHART_SCOPE" --set replicaCount=0 ${CHART_SETS:-} \
    >"$WORK/helm-install.log" 2>&1 || fail "helm install: $(cat "$WORK/helm-install.log")"
  local sa token server
  sa=$(kc get serviceaccount -l "app.kubernetes.io/instance=$RELEASE" -o jsonpath='{.items[0].metadata.name}')
  [ -n "$sa" ] || fail "the chart made no ServiceAccount"
  OPERATOR_SA=$sa
  token=$(kc create token "$sa" --duration 2h)
  server=$("$KUBECTL" config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  printf '%s\n' "apiVersion: v1" "kind: Config" \
    "clusters: [{name: c, cluster: {server: \"$server\", certificate-authority: \"$CONTROLPLANE_DIR/pki/ca.crt\"}}]" \
    "users: [{name: $sa, user: {token: \"$token\"}}]" \
    "contexts: [{name: c, context: {cluster: c, user: $sa, namespace: \"$NS\"}}]" \
    "current-context: c" >"$WORK/operator.kubeconfig"
  OPERATOR_KUBECONFIG="$WORK/operator.kubeconfig"
  # The operator's flags are the chart's Deployment's (its namespace, lease, --node-lost-after 0
  # for scope namespace, ...), but for the listen addresses: the test's operator listens on
  # loopback ports of the kernel's choice. A script's OPERATOR_FLAGS come after them and win.
  OPERATOR_SCOPE_FLAGS=$(kc get deployment -l "app.kubernetes.io/instance=$RELEASE" \
    -o jsonpath='{range .items[0].spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' |
    grep -v -e '^--metrics-bind-address' -e '^--health-probe-bind-address' | tr '\n' ' ')
  grep -q -- "--lease-namespace=$NS" <<<"$OPERATOR_SCOPE_FLAGS" || fail "the chart's operator args: $OPERATOR_SCOPE_FLAGS"
  OPERATOR_SCOPE_FLAGS+=" --namespace=$NS"
}

# start_faultproxy: tests/faultproxy between the API server and the test's operator and pods
# (WITH_FAULTPROXY=1 before start_cluster): the operator's kubeconfig names the proxy, and the
# node agents send their pods there (--pod-api-server: where kube-proxy would send the
# kubernetes Service), so the master pod's result writer meets the same faults. kubectl, helm,
# the node agents and the control plane's own components talk to the API server directly. The
# rules: $FAULT_RULES ({"seed": N, "rules": [...]}, tests/faultproxy/README.md) from the start.
NODE_AGENT_ARGS=()
start_faultproxy() {
  local server rules='{"rules": []}'
  [ -z "${FAULT_RULES:-}" ] || rules=$FAULT_RULES
  server=$("$KUBECTL" config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  "$FAULTPROXY" --listen 127.0.0.1:0 --upstream "$server" --upstream-ca "$CONTROLPLANE_DIR/pki/ca.crt" \
    --cert-dir "$WORK/proxy" --ca-cert "$CONTROLPLANE_DIR/pki/ca.crt" --ca-key "$CONTROLPLANE_DIR/pki/ca.key" \
    --faults "$rules" --log "$WORK/faults.log" >"$WORK/proxy.out" 2>"$WORK/proxy.err" &
  PIDS+=($!)
  wait_for 20 grep -q "^faultproxy ready https://" "$WORK/proxy.out" || fail "faultproxy did not start: $(cat "$WORK/proxy.err")"
  PROXY_URL=$(sed -n 's/^faultproxy ready //p' "$WORK/proxy.out")
  sed -i "s|server: \"$server\"|server: \"$PROXY_URL\"|" "$WORK/operator.kubeconfig"
  grep -q "$PROXY_URL" "$WORK/operator.kubeconfig" || fail "the operator's kubeconfig does not name the proxy"
  NODE_AGENT_ARGS+=(--pod-api-server "${PROXY_URL#https://}")
}
# faultproxy's admin API: proxy_admin METHOD PATH [curl args]
proxy_admin() {
  curl -sS --fail --cacert "$CONTROLPLANE_DIR/pki/ca.crt" -H "Authorization: Bearer $(cat "$WORK/proxy/admin-token")" \
    -X "$1" "$PROXY_URL$2" "${@:3}"
}
# forget_pid PID: a process the script stopped itself is no longer cleanup's.
forget_pid() {
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

# start_nodes [--node NAME[:k=v,...]]...: one node agent per node (default: one node, node-1),
# each registering its Node with the labels given and this test's label; waits until all are Ready.
start_nodes() {
  local specs=()
  while [ $# -gt 0 ]; do
    case $1 in
      --node) specs+=("$2"); shift 2 ;;
      *) fail "start_nodes: unknown argument $1" ;;
    esac
  done
  [ ${#specs[@]} -gt 0 ] || specs=(node-1)
  local spec name
  for spec in "${specs[@]}"; do
    name=${spec%%:*}
    if [ "$spec" = "$name" ]; then start_node "$name" ""; else start_node "$name" "${spec#*:}"; fi
  done
  for spec in "${specs[@]}"; do
    name=${spec%%:*}
    wait_for 60 node_is_ready "$(node_name "$name")" || fail "node $name not Ready: $(tail -5 "$WORK/nodeagent-$name.log")"
  done
}
# A node's name on the shared cluster: the test's name for it, made unique by the namespace.
node_name() { echo "$NS-$1" | cut -c1-63; }
node_is_ready() { [ "$(kc get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
# start_node NAME LABELS: a node agent for NAME (labels k=v,... besides the test's own).
start_node() {
  local name=$1 kv args=()
  args+=(--node "$(node_name "$name")" --label "trainbench.dev/e2e-namespace=$NS" --label "trainbench.dev/e2e-node=$name")
  local kvs=()
  [ -z "$2" ] || IFS=, read -ra kvs <<<"$2"
  for kv in "${kvs[@]}"; do args+=(--label "$kv"); done
  mkdir -p "$WORK/nodes/$name"
  PATH="$BIN_DIRS:$PATH" "$NODEAGENT" --controlplane "$CONTROLPLANE_DIR" --dir "$WORK/nodes/$name" "${args[@]}" \
    ${NODE_AGENT_ARGS[@]+"${NODE_AGENT_ARGS[@]}"} \
    >"$WORK/nodeagent-$name.log" 2>&1 &
  NODE_PIDS+=($!)
  NODE_PID[$(node_name "$name")]=$!
}
# power_off_node NAME: the lost machine is switched off: its agent stops and kills its pods'
# (frozen) processes. The API objects stay as they were.
power_off_node() {
  kill -TERM "${NODE_PID[$1]}" 2>/dev/null || true
  wait "${NODE_PID[$1]}" 2>/dev/null || true
}
# lose_node NAME (the node's name on the cluster): the node is taken away as a dead or cut-off
# machine: its agent posts nothing any more and its pods' processes freeze; the real node
# lifecycle controller marks it Unknown after its grace period (40 s) and taints it.
lose_node() {
  [ -n "${NODE_PID[$1]:-}" ] || fail "lose_node: no agent for node $1"
  kill -USR1 "${NODE_PID[$1]}"
}
# The namespace (with the chart's release and the test's pods) and the test's nodes go.
cleanup_namespace() {
  [ -n "${NS_CREATED:-}" ] || return 0
  "$KUBECTL" delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
  local pid
  for pid in "${NODE_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${NODE_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  "$KUBECTL" delete nodes -l "trainbench.dev/e2e-namespace=$NS" --wait=false >/dev/null 2>&1 || true
}

# mlp_job NAME MEASURE_STEPS RUN_POLICY SWEEP_ENTRY...: a small MLP BenchmarkJob (YAML on stdout).
mlp_job() {
  local name=$1 steps=$2 policy=$3 entry
  shift 3
  printf '%s\n' "apiVersion: trainbench.dev/v1alpha1" "kind: BenchmarkJob" "metadata: {name: $name}" "spec:" \
    "  benchmark:" "    model: mlp" "    mlp: {inputSize: 64, hiddenSizes: [64], numClasses: 10}" \
    "    batchSizePerDevice: 8" "    warmupSteps: 2" "    measureSteps: $steps" "    repeats: 2" \
    "    threadsPerProcess: 1" "  sweep:"
  for entry in "$@"; do echo "    - $entry"; done
  printf '%s\n' "  masterPort: 29500" "  template: {image: trainbench/worker:0.1.0}" "  runPolicy: $policy"
}

# held_job NAME RUN_POLICY SWEEP_ENTRY...: a BenchmarkJob (YAML on stdout) whose one workload,
# "held", is tests/operator/e2e/held_program.py on the probe library (Python PyTorch of
# scripts/python-torch.sh, for the master's store): each run trains until its first step, says so
# (wait_held) and waits there until the test lets it go (release_run), then runs its 2 x 20 steps
# in a fraction of a second. The run is training when the test acts and finishes soon after it,
# on a fast machine or a slow one.
HOLD_DIR="$WORK/hold"
held_job() {
  local name=$1 policy=$2 entry py=$PYTHON_TORCH
  shift 2
  [ -n "$py" ] || fail "held_job needs Python PyTorch: bash scripts/python-torch.sh"
  mkdir -p "$HOLD_DIR"
  printf '%s\n' "apiVersion: trainbench.dev/v1alpha1" "kind: BenchmarkJob" "metadata: {name: $name}" "spec:" \
    "  benchmark: {batchSizePerDevice: 8, warmupSteps: 2, measureSteps: 20, repeats: 2}" "  sweep:"
  for entry in "$@"; do echo "    - $entry"; done
  printf '%s\n' "  masterPort: 29500" "  template: {image: trainbench/worker:0.1.0}" "  runPolicy: $policy" \
    "  workloads:" "    - name: held" "      program:" \
    "        command: [\"$py\", \"$REPO/tests/operator/e2e/held_program.py\"]" \
    "        env: [{name: PYTHONPATH, value: \"$REPO/python\"}, {name: HOLD_DIR, value: \"$HOLD_DIR\"}]"
}
# held JOB INDEX RANKS: RANKS ranks of run INDEX of JOB wait at their first step.
held() { [ "$(find "$HOLD_DIR" -maxdepth 1 -name "$1-r$2.rank*.held" | wc -l)" -ge "$3" ]; }
# wait_held SECONDS JOB INDEX RANKS: until held (a run's start includes its pods' scheduling and
# Python's import of torch).
wait_held() { wait_for "$1" held "$2" "$3" "$4"; }
# release_run JOB INDEX: run INDEX of JOB (and every later attempt of it) goes on.
release_run() { mkdir -p "$HOLD_DIR" && touch "$HOLD_DIR/$1-r$2"; }

# start_operator [FLAGS]: also the words of $OPERATOR_FLAGS (a script's own settings).
start_operator() {
  # shellcheck disable=SC2086
  "$OPERATOR" --kubeconfig "${OPERATOR_KUBECONFIG:-$KUBECONFIG}" ${OPERATOR_SCOPE_FLAGS:-} \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    ${OPERATOR_FLAGS:-} "$@" >>"$WORK/operator.log" 2>&1 &
  OPERATOR_PID=$!
  PIDS+=($OPERATOR_PID)
}

# wait_for SECONDS CMD...: polls CMD until it succeeds.
wait_for() {
  local secs=$1; shift
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.5
  done
}

phase_is() { [ "$(kc get bj "$1" -o jsonpath='{.status.phase}')" = "$2" ]; }

# wait_phase JOB PHASE [STALL_SECONDS]: until JOB's phase is PHASE. It follows the job, not the
# clock: it fails only when nothing of the job's progress (its phase, its runs' phases and
# attempts, the current run's stage, repeat and step, the progress's update time) changed for
# STALL_SECONDS (default 180), so a slow or busy machine makes the wait longer, never a failure.
wait_phase() {
  local job=$1 want=$2 stall=${3:-180} last="" now end
  local fields='{.status.phase}|{.status.runs[*].phase}|{.status.runs[*].attempt}|{.status.progressDetail.currentRun.stage}|{.status.progressDetail.currentRun.repeat}|{.status.progressDetail.currentRun.step}|{.status.progressDetail.lastUpdateTime}'
  end=$((SECONDS + stall))
  while :; do
    now=$(kc get bj "$job" -o jsonpath="$fields" 2>/dev/null) || now=$last
    [ "${now%%|*}" != "$want" ] || return 0
    if [ "$now" != "$last" ]; then
      last=$now
      end=$((SECONDS + stall))
    fi
    [ $SECONDS -lt $end ] || { echo "wait_phase $job $want: no progress for $stall s: $now" >&2; return 1; }
    sleep 0.5
  done
}

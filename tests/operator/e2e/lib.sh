# Shared setup for the operator's end-to-end tests: a kubesim API server (with its kubelet
# simulator running pods as local processes), the CRD applied with the real kubectl, and the
# real trainbench-operator running against it with a kubeconfig, as on a cluster.
# Needs: KUBESIM, OPERATOR, BIN_DIRS (dirs with trainbench and trainbench-worker), CRD.
# Optional: KUBECTL (the kubectl binary to use; default: kubectl on PATH).
set -euo pipefail
KUBECTL=${KUBECTL:-kubectl}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tb-e2e.XXXXXX")
export HOME="$WORK/home" KUBECACHEDIR="$WORK/kubecache"
mkdir -p "$HOME"
PIDS=()

cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  # Bounded: a process that has not stopped 30 s after SIGTERM is killed, and the log says so,
  # instead of holding the test until ctest's timeout (seen once: kubesim's shutdown in CI's run).
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
    echo "---- kubesim log (tail) ----"; tail -n 20 "$WORK/kubesim.log" 2>/dev/null || true
    echo "(work dir kept: $WORK)"
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# kubesim: pods run with the build's trainbench binaries on PATH.
start_kubesim() {
  mkdir -p "$WORK/sim"
  PATH="$BIN_DIRS:$PATH" "$KUBESIM" --listen 127.0.0.1:0 --dir "$WORK/sim" "$@" >"$WORK/kubesim.out" 2>"$WORK/kubesim.log" &
  PIDS+=($!)
  for _ in $(seq 1 100); do
    grep -q "kubesim ready" "$WORK/kubesim.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q "kubesim ready" "$WORK/kubesim.out" || fail "kubesim did not start: $(cat "$WORK/kubesim.log")"
  export KUBECONFIG="$WORK/sim/kubeconfig"
  SIM_URL=$(sed -n 's/^kubesim ready //p' "$WORK/kubesim.out")
}

kc() { "$KUBECTL" --request-timeout=20s "$@"; }

# kubesim's admin API (tests/kubesim/README.md): sim_admin METHOD PATH
sim_admin() {
  curl -sS --fail --cacert "$WORK/sim/ca.crt" -H "Authorization: Bearer $(cat "$WORK/sim/admin-token")" \
    -X "$1" "$SIM_URL$2"
}
# kill_pod NAME [SIGNAL]: the pod's containers get the signal, as a node would kill them.
kill_pod() { sim_admin POST "/kubesim/v1/namespaces/default/pods/$1/kill?signal=${2:-9}" >/dev/null; }
# Processes kubesim's kubelet still runs for pods.
running_containers() { sim_admin GET /kubesim/v1/stats | jq -r '.kubelet.runningContainers'; }
# Pod names the API server created (201), one line each, from kubesim's audit log.
pods_created() { jq -r 'select(.verb == "create" and .resource == "pods" and .code == 201) | .name' "$WORK/sim/audit.log"; }
no_containers_running() { [ "$(running_containers)" = 0 ]; }
pod_gone() { ! kc get pod "$1" >/dev/null 2>&1; }
no_pods_of() { [ -z "$(kc get pods -l "trainbench.dev/job=$1" -o name)" ]; }
pod_phase() { kc get pod "$1" -o jsonpath='{.status.phase}'; }

# start_cluster [KUBESIM ARGS]: kubesim, the CRD applied with kubectl, and the operator.
start_cluster() {
  start_kubesim "$@"
  kc apply -f "$CRD" >/dev/null
  wait_for 20 kc get bj || fail "the CRD did not appear in discovery"
  start_operator
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

# start_operator [FLAGS]: also the words of $OPERATOR_FLAGS (a script's own settings).
start_operator() {
  # shellcheck disable=SC2086
  "$OPERATOR" --kubeconfig "$KUBECONFIG" --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
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

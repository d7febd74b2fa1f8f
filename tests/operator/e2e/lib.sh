# Shared setup for the operator's end-to-end tests: a kubesim API server (with its kubelet
# simulator running pods as local processes), the CRD applied with the real kubectl, and the
# real trainbench-operator running against it with a kubeconfig, as on a cluster.
# Needs: KUBESIM, OPERATOR, BIN_DIRS (dirs with trainbench and trainbench-worker), CRD.
set -euo pipefail

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tb-e2e.XXXXXX")
export HOME="$WORK/home" KUBECACHEDIR="$WORK/kubecache"
mkdir -p "$HOME"
PIDS=()

cleanup() {
  local rc=$?
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
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
}

kc() { kubectl --request-timeout=20s "$@"; }

start_operator() {
  "$OPERATOR" --kubeconfig "$KUBECONFIG" "$@" >>"$WORK/operator.log" 2>&1 &
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

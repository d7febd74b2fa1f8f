# shellcheck shell=bash
# Sourced by the scripts that run the operator at scale on a control plane of their own
# (bench/operator_scale.sh, tests/scale/sweep1000_e2e.sh): the real control plane of
# tests/controlplane started in a temporary directory (never the shared fixture: the load would
# disturb the tests beside it), the chart installed with the real helm (the CRD, the
# ServiceAccount and RBAC; replicaCount 0), and trainbench-operator run here as a process under
# the chart's ServiceAccount (a TokenRequest token) with the chart's flags but for the listen
# addresses (loopback, ports of the kernel's choice), as tests/operator/e2e do.
#
#   scale_init NAME                 WORK (a new temporary directory), CP=WORK/cp, HOME and
#                                   KUBECACHEDIR inside WORK, CONTROLPLANE_BIN resolved first
#   scale_controlplane              starts the control plane in CP and installs the chart; exports
#                                   KUBECONFIG, CONTROLPLANE_DIR, PATH (the server's kubectl first)
#   scale_operator BINARY [ARGS...] starts the operator (ARGS after the chart's flags, which they
#                                   override), waits until it is ready (leading, informers synced);
#                                   sets OP (its pid), CHART_FLAGS, OPERATOR_PROBE, OPERATOR_METRICS
#   scale_cleanup                   the EXIT trap: scale_before_stop (when the caller defines it),
#                                   every pid in PIDS stopped, on failure the tails of SCALE_LOGS,
#                                   the control plane stopped, WORK removed; exits with the status
#   wait_for SECONDS CMD...         polls CMD every 0.5 s until it succeeds; 1 after SECONDS
#   say TEXT                        progress on stderr, prefixed with SCALE_NAME
# Needs REPO (the repository root) and HELM (default REPO/.tools/helm/helm).

say() { echo "${SCALE_NAME:-scale}: $*" >&2; }

wait_for() {
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.5; done
}

scale_init() {
  SCALE_NAME=$1
  HELM=${HELM:-$REPO/.tools/helm/helm}
  [ -x "$HELM" ] || { say "no helm at $HELM: run scripts/fetch-helm.sh"; exit 1; }
  export CONTROLPLANE_BIN=${CONTROLPLANE_BIN:-$(bash "$REPO/scripts/controlplane.sh" --path)}  # before HOME moves
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/$SCALE_NAME.XXXXXX")
  CP=$WORK/cp
  export HOME="$WORK/home" KUBECACHEDIR="$WORK/kubecache"
  mkdir -p "$HOME"
  PIDS=()
  SCALE_LOGS=("$WORK/operator.log" "$WORK/chart.log")
}

scale_cleanup() {
  local rc=$? p f
  if declare -F scale_before_stop >/dev/null; then scale_before_stop || true; fi
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ $rc != 0 ]; then
    for f in "${SCALE_LOGS[@]}"; do
      [ -f "$f" ] && { echo "---- $(basename "$f") (tail)"; tail -n 15 "$f"; }
    done >&2
  fi
  [ ! -d "$CP" ] || bash "$REPO/tests/controlplane/controlplane.sh" stop "$CP" >/dev/null 2>&1 || true
  rm -rf "$WORK"
  exit $rc
}

scale_controlplane() {
  bash "$REPO/tests/controlplane/controlplane.sh" start "$CP" >"$WORK/controlplane.log" 2>&1 ||
    { cat "$WORK/controlplane.log" >&2; exit 1; }
  export KUBECONFIG=$CP/kubeconfig CONTROLPLANE_DIR=$CP PATH="$CP/bin:$PATH"
  HELM=$HELM REPO=$REPO bash "$REPO/tests/controlplane/chart_install.sh" >"$WORK/chart.log" 2>&1
  say "control plane $(cat "$CP/url") ($(kubectl version -o json | jq -r .serverVersion.gitVersion)), chart installed"
}

scale_operator() {
  local binary=$1 ns=trainbench-system sa token
  shift
  sa=$(kubectl -n $ns get serviceaccount -l app.kubernetes.io/instance=trainbench -o jsonpath='{.items[0].metadata.name}')
  token=$(kubectl -n $ns create token "$sa" --duration 4h)
  printf '%s\n' "apiVersion: v1" "kind: Config" \
    "clusters: [{name: c, cluster: {server: \"$(cat "$CP/url")\", certificate-authority: \"$CP/pki/ca.crt\"}}]" \
    "users: [{name: $sa, user: {token: \"$token\"}}]" \
    "contexts: [{name: c, context: {cluster: c, user: $sa, namespace: $ns}}]" "current-context: c" \
    >"$WORK/operator.kubeconfig"
  mapfile -t CHART_FLAGS < <(kubectl -n $ns get deployment -l app.kubernetes.io/instance=trainbench \
    -o jsonpath='{range .items[0].spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}' |
    grep -v -e '^--metrics-bind-address' -e '^--health-probe-bind-address')
  "$binary" --kubeconfig "$WORK/operator.kubeconfig" "${CHART_FLAGS[@]}" --metrics-bind-address 127.0.0.1:0 \
    --health-probe-bind-address 127.0.0.1:0 "$@" >"$WORK/operator.log" 2>&1 &
  OP=$!
  PIDS+=($OP)
  wait_for 30 grep -q "serving /healthz and /readyz on" "$WORK/operator.log" || { say "operator did not start"; exit 1; }
  OPERATOR_PROBE=$(sed -n 's|.*serving /healthz and /readyz on ||p' "$WORK/operator.log" | head -1)
  OPERATOR_METRICS=$(sed -n 's|.*serving metrics on \(.*\)/metrics|\1|p' "$WORK/operator.log" | head -1)
  _scale_ready() { [ "$(curl -sf "http://$OPERATOR_PROBE/readyz")" = ok ]; }  # leading, informers synced
  wait_for 60 _scale_ready || { say "operator not ready"; exit 1; }
}

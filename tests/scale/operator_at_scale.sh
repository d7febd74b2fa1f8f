# shellcheck shell=bash
# Sourced by the scripts that run the operator at scale on a control plane of their own
# (bench/operator_scale.sh, tests/scale/sweep1000_e2e.sh, tests/scale/gang_e2e.sh): the real control plane of
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
#   scale_faultproxy RULES          tests/faultproxy (binary FAULTPROXY) in front of the API server
#                                   with RULES ({"seed", "rules"}) from the start, logging to
#                                   PROXY_LOG; before scale_operator, whose kubeconfig then names it
#                                   (SCALE_API_URL: the URL the operator and the result writers use)
#   scale_kwok NODES GPUS_PER_NODE  NODES kwok nodes of GPUS_PER_NODE nvidia.com/gpu (tests/kwok/kwok.sh,
#                                   KWOK_BIN), stopped by scale_cleanup
#   scale_namespace NS              creates NS and waits for its default ServiceAccount
#   scale_job_yaml JOB NS GPUS RUN_POLICY "NODES DEVICES"...
#                                   a BenchmarkJob (bert-base, one repeat, device cuda) whose every
#                                   trainer pod asks for GPUS nvidia.com/gpu (spec.template.resources),
#                                   or with GPUS "auto" for its run's devicesPerNode (the operator's
#                                   default for a cuda job), one run per shape;
#                                   RUN_POLICY: spec.runPolicy in YAML flow style ("": none)
#   scale_gpus_in_use               nvidia.com/gpu requested by pods bound to a node and not ended
#                                   (Succeeded/Failed), all namespaces: what the nodes have allocated
#   scale_qps                       sets QPS: the operator's --qps (CHART_FLAGS, then OPERATOR_ARGS)
#   scale_cleanup                   the EXIT trap: scale_before_stop (when the caller defines it),
#                                   kwok stopped, every pid in PIDS stopped, on failure the tails of
#                                   SCALE_LOGS, the control plane stopped, WORK removed; exits with
#                                   the status
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
  [ -z "${SCALE_KWOK:-}" ] || bash "$REPO/tests/kwok/kwok.sh" stop "$WORK/kwok" || true
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
    "clusters: [{name: c, cluster: {server: \"${SCALE_API_URL:-$(cat "$CP/url")}\", certificate-authority: \"$CP/pki/ca.crt\"}}]" \
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

scale_faultproxy() {
  [ -x "${FAULTPROXY:-}" ] || { say "no faultproxy at '${FAULTPROXY:-}' (FAULTPROXY)"; exit 1; }
  PROXY_LOG=$WORK/faults.log
  "$FAULTPROXY" --listen 127.0.0.1:0 --upstream "$(cat "$CP/url")" --upstream-ca "$CP/pki/ca.crt" \
    --cert-dir "$WORK/proxy" --ca-cert "$CP/pki/ca.crt" --ca-key "$CP/pki/ca.key" \
    --faults "$1" --log "$PROXY_LOG" >"$WORK/proxy.out" 2>"$WORK/proxy.err" &
  PIDS+=($!)
  SCALE_LOGS+=("$WORK/proxy.err")
  wait_for 20 grep -q "^faultproxy ready https://" "$WORK/proxy.out" || { say "faultproxy did not start"; exit 1; }
  export SCALE_API_URL
  SCALE_API_URL=$(sed -n 's/^faultproxy ready //p' "$WORK/proxy.out")
}

# The proxy's counts since start (GET /faultproxy/v1/faults): {seed, rules, considered, injected}.
scale_faultproxy_stats() {
  curl -sS --fail --cacert "$CP/pki/ca.crt" -H "Authorization: Bearer $(cat "$WORK/proxy/admin-token")" \
    "$SCALE_API_URL/faultproxy/v1/faults"
}

scale_kwok() {
  SCALE_KWOK=1
  SCALE_LOGS+=("$WORK/kwok/kwok.log")
  bash "$REPO/tests/kwok/kwok.sh" start "$WORK/kwok" "$CP" "$1" "$2" >&2
}

scale_namespace() {
  kubectl create namespace "$1" >/dev/null
  wait_for 60 kubectl -n "$1" get serviceaccount default
}

scale_job_yaml() {
  local job=$1 ns=$2 gpus=$3 policy=$4 s
  shift 4
  cat <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: $job, namespace: $ns}
spec:
  device: cuda
  backend: nccl
  benchmark: {model: bert-base, sequenceLength: 128, batchSizePerDevice: 32, precision: amp-fp16,
              warmupSteps: 20, measureSteps: 100, repeats: 1}
  template:
    image: trainbench/worker:0.1.0-cuda
YAML
  if [ "$gpus" = auto ]; then
    echo '    resources: {requests: {cpu: "8", memory: 64Gi}}'
  else
    echo "    resources: {requests: {nvidia.com/gpu: $gpus, cpu: \"8\", memory: 64Gi}, limits: {nvidia.com/gpu: $gpus}}"
  fi
  [ -z "$policy" ] || echo "  runPolicy: $policy"
  echo "  sweep:"
  for s in "$@"; do set -- $s; echo "    - {nodes: $1, devicesPerNode: $2}"; done
}

scale_gpus_in_use() {
  kubectl get pods -A -o json | jq '[.items[] | select(.spec.nodeName != null and .status.phase != "Succeeded"
    and .status.phase != "Failed") | .spec.containers[] | (.resources.requests // {})["nvidia.com/gpu"] // "0"
    | tonumber] | add // 0'
}

scale_qps() {
  local f
  QPS=50
  for f in "${CHART_FLAGS[@]}" ${OPERATOR_ARGS[@]+"${OPERATOR_ARGS[@]}"}; do case $f in --qps=*) QPS=${f#--qps=} ;; esac; done
}

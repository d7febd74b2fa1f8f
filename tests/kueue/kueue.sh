#!/usr/bin/env bash
# The real Kueue (sigs.k8s.io/kueue, built by scripts/kueue.sh) started as a process against a real
# control plane (tests/controlplane/controlplane.sh), wired the way a cluster's Kueue is, minus the
# Service in front of it: this control plane has no kube-proxy, so the API server calls Kueue's
# webhooks at https://127.0.0.1:PORT directly.
#
#   kueue.sh start DIR CONTROLPLANE_DIR   start one (first stopping one a killed run left in DIR);
#                                         prints `kueue ready ...` once the manager's /readyz
#                                         answers and the API server calls its webhooks; exits 1
#                                         (and leaves nothing running) otherwise
#   kueue.sh stop DIR                     delete its webhook configurations, then stop the manager
#                                         (SIGTERM, SIGKILL after 10 s) and remove DIR
#   kueue.sh env DIR                      shell assignments: KUEUE_DIR, KUEUE_LOG, the ports, ...
#
# What start does:
#   - installs Kueue's CRDs (the module's config/components/crd/bases, copied by scripts/kueue.sh)
#     with kubectl apply --server-side (they are too big for client-side apply's annotation). Not
#     wired: the CRDs' v1beta1<->v1beta2 conversion webhook (a kustomize patch upstream); only
#     v1beta2, the storage version, is used, which needs no conversion. The CRDs stay installed
#     after stop (cluster-scoped; another Kueue of a later test applies them again).
#   - makes a CA and a serving certificate for IP 127.0.0.1 with openssl (DIR/certs), and runs
#     Kueue with internalCertManagement.enable=false and webhook.certDir=DIR/certs.
#   - Kueue v0.17 then reads its metrics serving certificate from the fixed path
#     /etc/kueue/metrics/certs/tls.{crt,key} (cmd/kueue/main.go, no option for it): the manager runs
#     in a mount namespace of its own (unshare -m; as a non-root user unshare -rm) in which an
#     overlay on /etc, upper layer DIR/etc-overlay, adds those two files. Nothing is written to the
#     machine's /etc.
#   - turns the VisibilityOnDemand feature (beta, on by default) off: its aggregated API server
#     reads a serving certificate from the fixed path /visibility/tls.crt and exits the manager
#     without it; the pending-workloads API it serves needs an APIService, which the tests do
#     not use.
#   - writes DIR/config.yaml (config.kueue.x-k8s.io/v1beta2, what v0.17 reads): leader election
#     off; metrics, health probes and webhook server on free 127.0.0.1 ports;
#     integrations.frameworks [batch/job] (an empty list defaults to it anyway) and
#     externalFrameworks [BenchmarkJob.v1alpha1.trainbench.dev]; manageJobsWithoutQueueName false,
#     so Kueue leaves the Jobs of other tests (no kueue.x-k8s.io/queue-name label) alone.
#   - Kueue runs with the control plane's admin kubeconfig: Kueue is not our code, our operator's
#     RBAC is what the tests check (Kueue's own RBAC is in the cache's manifests/rbac for reference).
#   - once /readyz answers, registers Kueue's webhook configurations (module's
#     config/components/webhook/manifests.yaml) rewritten to clientConfig.url
#     https://127.0.0.1:PORT/<path> with the CA as caBundle, named kueue-<id>-{mutating,validating}.
#     Only the webhooks whose rules are all in kueue.x-k8s.io are kept: the control plane is shared
#     by tests running at the same time, and Kueue's webhooks for pods, jobs, deployments, ... would
#     reach into theirs. stop deletes them before it stops the manager (a webhook with
#     failurePolicy Fail and nobody behind it would refuse every Workload, ClusterQueue, ...).
#   - waits until the API server calls them: a server-side dry-run create of a Workload whose
#     container requests `pods` is refused with Kueue's validating webhook's own message.
#
# DIR afterwards holds: config.yaml, certs/ (ca.crt, tls.crt, tls.key), kueue.log (the manager's
# log), webhooks.yaml (what was registered), env (ports, names, pid; `kueue.sh env` prints it).
# One Kueue per control plane at a time: two managers would both schedule every ClusterQueue's
# Workloads (the ctest tests that start one hold RESOURCE_LOCK kueue).
# Environment: KUEUE_BIN (default: scripts/kueue.sh --path), KUEUE_START_TIMEOUT (seconds, 120).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

die() { echo "kueue: $*" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

make_certs() {
  local c=$DIR/certs
  mkdir -p "$c"
  (
    cd "$c"
    openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=trainbench-kueue-webhook-ca" -keyout ca.key -out ca.crt \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout tls.key -out tls.csr 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" >tls.ext
    openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 -extfile tls.ext -out tls.crt 2>/dev/null
    rm -f tls.csr tls.ext ca.srl
    chmod 600 ./*.key
  )
  # The metrics certificate, at the path Kueue reads it from inside its mount namespace.
  mkdir -p "$DIR/etc-overlay/upper/kueue/metrics/certs" "$DIR/etc-overlay/work"
  cp "$c/tls.crt" "$c/tls.key" "$DIR/etc-overlay/upper/kueue/metrics/certs/"
}

write_config() {
  cat >"$DIR/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: 127.0.0.1:$HEALTH_PORT
metrics:
  bindAddress: 127.0.0.1:$METRICS_PORT
webhook:
  host: 127.0.0.1
  port: $WEBHOOK_PORT
  certDir: $DIR/certs
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
integrations:
  frameworks:
  - batch/job
  externalFrameworks:
  - BenchmarkJob.v1alpha1.trainbench.dev
EOF
}

# The webhook configurations of the module, kept to kueue.x-k8s.io and pointed at 127.0.0.1.
write_webhooks() {
  python3 - "$MANIFESTS/webhook.yaml" "$DIR/webhooks.yaml" "$WEBHOOK_PORT" "$DIR/certs/ca.crt" "$ID" <<'EOF'
import base64, sys, yaml
src, dst, port, ca, ident = sys.argv[1:]
bundle = base64.b64encode(open(ca, 'rb').read()).decode()
out = []
for doc in yaml.safe_load_all(open(src)):
    if not doc:
        continue
    kept = []
    for wh in doc.get('webhooks', []):
        groups = {g for rule in wh.get('rules', []) for g in rule.get('apiGroups', [])}
        if groups != {'kueue.x-k8s.io'}:
            continue
        path = wh['clientConfig']['service']['path']
        wh['clientConfig'] = {'url': f'https://127.0.0.1:{port}{path}', 'caBundle': bundle}
        kept.append(wh)
    if not kept:
        continue
    kind = 'mutating' if doc['kind'] == 'MutatingWebhookConfiguration' else 'validating'
    doc['metadata'] = {'name': f'kueue-{ident}-{kind}', 'labels': {'trainbench.dev/kueue-fixture': f'kueue-{ident}'}}
    doc['webhooks'] = kept
    out.append(doc)
if len(out) != 2:
    sys.exit(f'expected a mutating and a validating configuration, got {len(out)}')
yaml.safe_dump_all(out, open(dst, 'w'), sort_keys=False)
for doc in out:
    print(doc['kind'], doc['metadata']['name'], ' '.join(w['name'] for w in doc['webhooks']), file=sys.stderr)
EOF
}

# An invalid Workload (a container requesting `pods`), dry run: refused by Kueue's webhook once the
# API server calls it.
webhook_refuses() {
  local out
  out=$(kubectl create --dry-run=server -n default -f - 2>&1 <<EOF
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: kueue-fixture-webhook-probe}
spec:
  queueName: none
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: c, image: none, resources: {requests: {pods: "1"}}}]
EOF
  ) && return 1
  grep -q "the key is reserved for internal kueue use" <<<"$out"
}

wait_until() {
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then
      echo "kueue: $what not within $secs s; the log's tail:" >&2
      tail -n 30 "$DIR/kueue.log" >&2
      return 1
    fi
    if ! kill -0 "$PID" 2>/dev/null; then
      echo "kueue: the manager exited during start-up:" >&2
      tail -n 30 "$DIR/kueue.log" >&2
      return 1
    fi
    sleep 0.25
  done
}

start_manager() {
  HEALTH_PORT=$(free_port); METRICS_PORT=$(free_port); WEBHOOK_PORT=$(free_port)
  write_config
  local ns=(unshare -m --propagation private)
  [ "$(id -u)" = 0 ] || ns=(unshare -r -m --propagation private)
  # setsid: a session of its own, so that it outlives this script. exec: the pid is the manager's.
  KUBECONFIG=$CP/kubeconfig setsid "${ns[@]}" sh -c \
    'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/etc-overlay/upper,workdir=$1/etc-overlay/work" /etc || exit 97
     shift; exec "$@"' sh "$DIR" \
    "$BIN/kueue" --config "$DIR/config.yaml" --feature-gates VisibilityOnDemand=false --zap-log-level 2 \
    </dev/null >>"$DIR/kueue.log" 2>&1 &
  PID=$!
  cat >"$DIR/env" <<EOF
KUEUE_DIR=$DIR
KUEUE_LOG=$DIR/kueue.log
KUEUE_PID=$PID
KUEUE_ID=$ID
KUEUE_CONTROLPLANE_DIR=$CP
KUEUE_HEALTH_PORT=$HEALTH_PORT
KUEUE_METRICS_PORT=$METRICS_PORT
KUEUE_WEBHOOK_PORT=$WEBHOOK_PORT
KUEUE_WEBHOOKS="mutatingwebhookconfiguration/kueue-$ID-mutating validatingwebhookconfiguration/kueue-$ID-validating"
EOF
  wait_until "$TIMEOUT" "Kueue's /readyz (127.0.0.1:$HEALTH_PORT)" curl -sS --fail "http://127.0.0.1:$HEALTH_PORT/readyz"
}

start() {
  DIR=$1 CP=$2
  [ -s "$CP/kubeconfig" ] || die "no control plane in $CP"
  CP=$(cd "$CP" && pwd)
  if [ -e "$DIR" ]; then stop "$DIR"; fi
  BIN=${KUEUE_BIN:-$(bash "$repo/scripts/kueue.sh" --path)} || die "Kueue is not built: run scripts/kueue.sh"
  MANIFESTS=$BIN/../manifests
  TIMEOUT=${KUEUE_START_TIMEOUT:-120}
  export PATH="$CP/bin:$PATH" KUBECONFIG=$CP/kubeconfig  # the kubectl of the server's release
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  ID=$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')
  make_certs
  kubectl apply --server-side --force-conflicts --field-manager trainbench-kueue-fixture -f "$MANIFESTS/crd/" >/dev/null ||
    { rm -rf "$DIR"; die "installing Kueue's CRDs failed"; }
  kubectl wait --for condition=Established --timeout 60s -f "$MANIFESTS/crd/" >/dev/null ||
    { rm -rf "$DIR"; die "Kueue's CRDs not established"; }
  local try ok=
  for try in 1 2 3; do
    if start_manager; then ok=1; break; fi
    stop_manager
    # A port taken between free_port and the bind is worth another try; anything else is not.
    grep -qs "address already in use" "$DIR/kueue.log" || break
    mv "$DIR/kueue.log" "$DIR/kueue.log.$try"
    echo "kueue: start attempt $try failed on a port taken meanwhile: again" >&2
  done
  if [ -z "$ok" ]; then cp "$DIR/kueue.log" "${DIR%/}.failed.log" 2>/dev/null || true; rm -rf "$DIR"; die "start failed (log: ${DIR%/}.failed.log)"; fi
  if ! write_webhooks 2>"$DIR/webhooks.txt"; then cat "$DIR/webhooks.txt" >&2; stop "$DIR"; die "rewriting the webhooks failed"; fi
  if ! kubectl create -f "$DIR/webhooks.yaml" >/dev/null; then stop "$DIR"; die "registering the webhooks failed"; fi
  if ! wait_until 60 "the API server calling Kueue's validating webhook" webhook_refuses; then
    cp "$DIR/kueue.log" "${DIR%/}.failed.log" 2>/dev/null || true
    stop "$DIR"
    die "start failed (log: ${DIR%/}.failed.log)"
  fi
  echo "kueue ready: pid $PID, webhooks https://127.0.0.1:$WEBHOOK_PORT ($(tr '\n' ' ' <"$DIR/webhooks.txt")), readyz http://127.0.0.1:$HEALTH_PORT/readyz, metrics https://127.0.0.1:$METRICS_PORT/metrics, log $DIR/kueue.log, env $DIR/env"
}

# SIGTERM, wait up to 10 s, then SIGKILL (and wait for it to be gone).
stop_manager() {
  [ -n "${PID:-}" ] || return 0
  local waited=0
  kill -TERM "$PID" 2>/dev/null || return 0
  while kill -0 "$PID" 2>/dev/null && [ $waited -lt 200 ]; do sleep 0.05; waited=$((waited + 1)); done
  if kill -KILL "$PID" 2>/dev/null; then
    echo "kueue: the manager did not stop within 10 s of SIGTERM: SIGKILL" >&2
    while kill -0 "$PID" 2>/dev/null && [ $waited -lt 400 ]; do sleep 0.05; waited=$((waited + 1)); done
  fi
  return 0
}

stop() {
  DIR=$(cd "$1" 2>/dev/null && pwd) || return 0
  local KUEUE_PID='' KUEUE_WEBHOOKS='' KUEUE_CONTROLPLANE_DIR=''
  # shellcheck disable=SC1091
  [ -f "$DIR/env" ] && . "$DIR/env"
  # The webhooks first: with the manager gone they would refuse every kueue.x-k8s.io write.
  if [ -n "$KUEUE_WEBHOOKS" ] && [ -s "$KUEUE_CONTROLPLANE_DIR/kubeconfig" ]; then
    # shellcheck disable=SC2086
    PATH="$KUEUE_CONTROLPLANE_DIR/bin:$PATH" kubectl --kubeconfig "$KUEUE_CONTROLPLANE_DIR/kubeconfig" \
      --request-timeout 20s delete --ignore-not-found $KUEUE_WEBHOOKS >/dev/null ||
      echo "kueue: deleting the webhook configurations $KUEUE_WEBHOOKS failed" >&2
  fi
  PID=$KUEUE_PID
  stop_manager
  rm -rf "$DIR"
}

main() {
  local cmd=${1:-} dir=${2:-}
  [ -n "$cmd" ] && [ -n "$dir" ] || die "usage: kueue.sh start DIR CONTROLPLANE_DIR | stop DIR | env DIR"
  case $cmd in
    start) [ -n "${3:-}" ] || die "usage: kueue.sh start DIR CONTROLPLANE_DIR"; start "$dir" "$3" ;;
    stop) stop "$dir" ;;
    env) cat "$dir/env" ;;
    *) die "unknown command $cmd (start, stop, env)" ;;
  esac
}
main "$@"

#!/usr/bin/env bash
# A real Kubernetes control plane for tests, started the way controller-runtime's envtest starts
# one: etcd, kube-apiserver, kube-controller-manager and kube-scheduler as local processes on
# loopback ports, with a PKI generated for the occasion. The binaries come from
# scripts/controlplane.sh (built once per machine from the Go module proxy).
#
#   controlplane.sh start DIR   start one (first stopping one a killed run left in DIR); prints `controlplane ready https://127.0.0.1:PORT` when
#                               the API server is ready, the controllers run and the `default`
#                               ServiceAccount exists; exits 1 (and leaves nothing) otherwise
#   controlplane.sh stop DIR    stop it (each process SIGTERM, then SIGKILL after 5 s: kube-apiserver
#                               took 62 s to exit on SIGTERM alone, measured) and remove DIR
#   controlplane.sh env DIR     shell assignments for a test: KUBECONFIG, CONTROLPLANE_URL, ...
#   controlplane.sh compact DIR compact etcd at its current revision (etcd's JSON gateway: read
#                               header.revision with /v3/kv/range, then /v3/kv/compaction with
#                               physical=true); prints that revision. Revisions before it are gone
#                               from etcd, the revision itself stays readable
#   controlplane.sh restart-apiserver DIR
#                               "an API-server restart": stop kube-apiserver only (as stop does),
#                               start it again with the same flags and port, wait for /readyz; etcd,
#                               the controllers and the scheduler stay up. The new server's watch
#                               cache starts at etcd's revision then (moved on while it was down,
#                               see restart_apiserver), so a watch resumed from any earlier
#                               resourceVersion is answered 410 Expired. Measured on v1.37.2:
#                                 compact alone: a watch from a compacted resourceVersion (one
#                                   before the revision compact printed) still
#                                   gets its events (200: the watch cache holds them), and so
#                                   does a list at it with resourceVersionMatch=Exact (200);
#                                 restart alone: that watch gets an ERROR event, Status code 410,
#                                   reason Expired, "too old resource version: RV (NEW)", in a
#                                   200 stream; the Exact list at an uncompacted one still 200;
#                                 compact + restart: the watch as after a restart; the Exact list
#                                   HTTP 410 "The resourceVersion for the provided list is too old."
#                               Restarting a shared control plane disturbs every test using it:
#                               only on one of a test's own, or from a RUN_SERIAL test.
#   controlplane.sh node-kubeconfig DIR NAME
#                               a node's own credentials, as a kubelet's after TLS bootstrap: client
#                               cert CN=system:node:NAME, O=system:nodes (so the Node authorizer and
#                               NodeRestriction apply) in DIR/nodes/NAME/kubeconfig; prints its path
#
# DIR afterwards holds:
#   pki/ca.crt, ca.key              the cluster CA (signs every certificate below)
#   pki/apiserver.{crt,key}         serving cert: 127.0.0.1, ::1, localhost, 10.0.0.1,
#                                   kubernetes, kubernetes.default(.svc(.cluster.local))
#   pki/admin.{crt,key}             client cert CN=trainbench-admin, O=system:masters
#   pki/sa.{key,pub}                ServiceAccount token signing key (RS256), as kubeadm's
#   pki/apiserver-kubelet-client.*  the API server's client cert towards node agents (O=system:masters)
#   kubeconfig                      admin kubeconfig (certificate-authority-data, client cert)
#   controller-manager.kubeconfig, scheduler.kubeconfig   CN=system:kube-controller-manager,
#                                   CN=system:kube-scheduler: the bootstrap RBAC's own identities
#   cluster-dns.kubeconfig          CN=trainbench:cluster-dns, bound to ClusterRole
#                                   trainbench:cluster-dns (get/list/watch pods, services, endpoints,
#                                   endpointslices, namespaces: what a cluster DNS server reads, as
#                                   kubeadm's system:coredns); the node agents' DNS emulation uses it
#   audit.log                       the API server's audit log (JSON lines, level Metadata), one
#                                   file for the control plane's life: never rotated (below)
#   bin/                            the binaries (kubectl of the same release among them)
#   etcd/ logs/ pids                etcd's data, each process's log, the process group
# Environment: CONTROLPLANE_BIN (default: scripts/controlplane.sh --path),
#   CONTROLPLANE_NODE_MONITOR_GRACE (kube-controller-manager --node-monitor-grace-period, 40s),
#   CONTROLPLANE_START_TIMEOUT (seconds, 180).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

die() { echo "controlplane: $*" >&2; exit 1; }

# kube-apiserver rotates its audit log at --audit-log-maxsize, 100 MB by default: a whole test
# suite writes more than that, and a test reading audit.log after a rotation had lost its first
# entries (operator_restart saw a pod "never created"). 1 TB: never; stop checks it did not.
AUDIT_LOG_MAX_MB=1048576

# A free TCP port on 127.0.0.1 (bound and released: another process may take it before us, which
# start() meets as a failed start and retries).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

make_pki() {
  local p=$1/pki
  mkdir -p "$p"
  (
    cd "$p"
    openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=trainbench-test-ca" -keyout ca.key -out ca.crt \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    sign() {  # sign NAME SUBJECT EXTENSIONS
      openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
      printf '%s\n' "$3" >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 7 -extfile "$1.ext" \
        -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
    sign apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:::1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
    sign admin "/O=system:masters/CN=trainbench-admin" "$client"
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
    sign controller-manager "/CN=system:kube-controller-manager" "$client"
    sign scheduler "/CN=system:kube-scheduler" "$client"
    sign cluster-dns "/CN=trainbench:cluster-dns" "$client"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    chmod 600 ./*.key
  )
}

# kubeconfig FILE URL CERT_NAME [CERT_BASE]: a kubeconfig with the CA and a client certificate
# (CERT_BASE.{crt,key}, default pki/CERT_NAME), embedded.
kubeconfig() {
  local p=$DIR/pki cert=${4:-$DIR/pki/$3}
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: controlplane
  cluster:
    server: $2
    certificate-authority-data: $(base64 -w0 "$p/ca.crt")
users:
- name: $3
  user:
    client-certificate-data: $(base64 -w0 "$cert.crt")
    client-key-data: $(base64 -w0 "$cert.key")
contexts:
- name: controlplane
  context: {cluster: controlplane, user: $3, namespace: default}
current-context: controlplane
EOF
  chmod 600 "$1"
}

write_audit_policy() {
  cat >"$DIR/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version"]
- level: None
  users: ["system:kube-controller-manager", "system:kube-scheduler"]
  verbs: ["get"]
  resources: [{group: "coordination.k8s.io", resources: ["leases"]}]
- level: Metadata
EOF
}

# spawn NAME ARGS...: starts one component, appending to logs/NAME.log (a restarted API server
# keeps its earlier log above); its pid in SPAWNED.
spawn() {
  local name=$1; shift
  # setsid: a session of its own, so that it outlives the script and a terminal's signals.
  setsid "$@" </dev/null >>"$DIR/logs/$name.log" 2>&1 &
  SPAWNED=$!
}

# launch NAME ARGS...: spawn, and record it in DIR/pids (what stop stops, in reverse order).
launch() {
  spawn "$@"
  echo "$SPAWNED $1" >>"$DIR/pids"
}

# wait_until SECONDS WHAT CMD...: polls CMD; fails naming WHAT (with the component logs' tails).
wait_until() {
  local secs=$1 what=$2; shift 2
  local end=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $end ]; then
      echo "controlplane: $what not within $secs s" >&2
      for f in "$DIR"/logs/*.log; do echo "---- $(basename "$f") (tail) ----" >&2; tail -n 15 "$f" >&2; done
      return 1
    fi
    check_alive || return 1
    sleep 0.25
  done
}

# Every component still running (one that exited is reported with its log's tail).
check_alive() {
  local pid name
  while read -r pid name; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "controlplane: $name exited during start-up:" >&2
      tail -n 20 "$DIR/logs/$name.log" >&2
      return 1
    fi
  done <"$DIR/pids"
}

curl_api() { curl -sS --fail --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" "$URL$1"; }

# The cluster DNS server's RBAC (kubeadm installs system:coredns alike): the node agents resolve
# service names with it, as their node identity may read neither pods of other nodes nor
# EndpointSlices (and EndpointSlices never hold the pods' loopback addresses).
cluster_dns_rbac() {
  local post=(curl -sS --fail -o /dev/null --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt"
    --key "$DIR/pki/admin.key" -X POST -H 'Content-Type: application/json')
  "${post[@]}" "$URL/apis/rbac.authorization.k8s.io/v1/clusterroles" -d '{"metadata":{"name":"trainbench:cluster-dns"},
    "rules":[{"apiGroups":[""],"resources":["pods","services","endpoints","namespaces"],"verbs":["get","list","watch"]},
             {"apiGroups":["discovery.k8s.io"],"resources":["endpointslices"],"verbs":["get","list","watch"]}]}' &&
  "${post[@]}" "$URL/apis/rbac.authorization.k8s.io/v1/clusterrolebindings" -d '{"metadata":{"name":"trainbench:cluster-dns"},
    "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"trainbench:cluster-dns"},
    "subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"trainbench:cluster-dns"}]}'
}

# apiserver_command: kube-apiserver's command line, in the array APISERVER: the one place its flags
# live, so that restart-apiserver starts it exactly as start did. Reads etcd's URL and the port
# from DIR/etcd-url and DIR/url.
apiserver_command() {
  local p=$DIR/pki url port
  url=$(cat "$DIR/url")
  port=${url##*:}
  APISERVER=("$BIN/kube-apiserver" --etcd-servers "$(cat "$DIR/etcd-url")"
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" --endpoint-reconciler-type none
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt"
    --service-cluster-ip-range 10.0.0.0/24 --allow-privileged=true
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction,PodNodeSelector
    --service-account-issuer https://kubernetes.default.svc.cluster.local
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key"
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key"
    --kubelet-certificate-authority "$p/ca.crt" --kubelet-preferred-address-types InternalIP,ExternalIP,Hostname
    --audit-policy-file "$DIR/audit-policy.yaml" --audit-log-path "$DIR/audit.log" --audit-log-format json
    --audit-log-mode blocking --audit-log-maxsize "$AUDIT_LOG_MAX_MB" --profiling=false --cert-dir "$DIR/apiserver-certs")
}

start_components() {
  local etcd_client etcd_peer
  etcd_client=$(free_port); etcd_peer=$(free_port); PORT=$(free_port)
  URL="https://127.0.0.1:$PORT"
  echo "$URL" >"$DIR/url"
  echo "http://127.0.0.1:$etcd_client" >"$DIR/etcd-url"
  kubeconfig "$DIR/controller-manager.kubeconfig" "$URL" controller-manager
  kubeconfig "$DIR/scheduler.kubeconfig" "$URL" scheduler
  launch etcd "$BIN/etcd" --name controlplane --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "controlplane=http://127.0.0.1:$etcd_peer" --unsafe-no-fsync --log-level warn
  wait_until 60 "etcd ready" curl -sS --fail "http://127.0.0.1:$etcd_client/health" || return 1
  apiserver_command
  launch kube-apiserver "${APISERVER[@]}"
  wait_until "$TIMEOUT" "kube-apiserver ready ($URL/readyz)" curl_api /readyz || return 1
  local p=$DIR/pki
  launch kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --root-ca-file "$p/ca.crt" --service-account-private-key-file "$p/sa.key" --use-service-account-credentials \
    --cluster-signing-cert-file "$p/ca.crt" --cluster-signing-key-file "$p/ca.key" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --profiling=false \
    --node-monitor-grace-period "${CONTROLPLANE_NODE_MONITOR_GRACE:-40s}"
  launch kube-scheduler "$BIN/kube-scheduler" --kubeconfig "$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig "$DIR/scheduler.kubeconfig" --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port 0 --profiling=false
  # The controllers work once the ServiceAccount controller has made `default` in `default`.
  wait_until "$TIMEOUT" "the default ServiceAccount (kube-controller-manager running)" \
    curl_api /api/v1/namespaces/default/serviceaccounts/default || return 1
  cluster_dns_rbac || { echo "controlplane: creating the cluster DNS RBAC failed" >&2; return 1; }
}

start() {
  DIR=$1
  # One a killed test run left behind (its processes, its files) goes first.
  if [ -e "$DIR" ]; then DIR=$(cd "$DIR" && pwd); stop_processes; rm -rf "$DIR"; DIR=$1; fi
  BIN=${CONTROLPLANE_BIN:-$(bash "$repo/scripts/controlplane.sh" --path)} ||
    die "the control plane is not built: run scripts/controlplane.sh"
  TIMEOUT=${CONTROLPLANE_START_TIMEOUT:-180}
  mkdir -p "$DIR/logs"
  DIR=$(cd "$DIR" && pwd)
  ln -s "$BIN" "$DIR/bin"  # tests put DIR/bin first in PATH: the kubectl of the server's release
  make_pki "$DIR"
  write_audit_policy
  local try
  for try in 1 2 3; do
    : >"$DIR/pids"
    if start_components; then
      kubeconfig "$DIR/kubeconfig" "$URL" admin
      kubeconfig "$DIR/cluster-dns.kubeconfig" "$URL" cluster-dns
      echo "controlplane ready $URL"
      return 0
    fi
    stop_processes
    # A port taken between free_port and the bind is worth another try; anything else is not.
    grep -qs "address already in use" "$DIR"/logs/*.log || break
    rm -rf "$DIR/etcd" "$DIR/audit.log" "$DIR/apiserver-certs" "$DIR"/logs/*
    echo "controlplane: start attempt $try failed on a port taken meanwhile: again" >&2
  done
  rm -rf "$DIR"
  return 1
}

# In the reverse of the start order (etcd last, so the API server can finish its requests), each
# component is SIGTERMed and waited for; one still there 5 s later is SIGKILLed.
stop_processes() {
  [ -f "$DIR/pids" ] || return 0
  local pid name
  while read -r pid name; do stop_one "$pid" "$name"; done < <(tac "$DIR/pids")
  return 0
}

# stop_one PID NAME: SIGTERM, wait up to 5 s, then SIGKILL (and wait up to 5 s more for it to be
# gone, so that its port is free for a restart).
stop_one() {
  local pid=$1 name=$2 waited=0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null && [ $waited -lt 100 ]; do sleep 0.05; waited=$((waited + 1)); done
  if kill -KILL "$pid" 2>/dev/null; then
    echo "controlplane: $name did not stop within 5 s of SIGTERM: SIGKILL" >&2
    while kill -0 "$pid" 2>/dev/null && [ $waited -lt 200 ]; do sleep 0.05; waited=$((waited + 1)); done
  fi
  return 0
}

# restart_apiserver: "an API-server restart" fault. Stops kube-apiserver only (as stop does) and
# starts it again with the same flags (apiserver_command), binaries and port; etcd, the
# controllers and the scheduler stay up (they reconnect). Its pid takes the old one's line in
# DIR/pids, so that stop keeps the order. Returns once /readyz answers again.
# While it is down, one write to etcd outside the API server's /registry/ prefix moves etcd's
# revision past every resourceVersion the old server handed out (bookmarks included), so the new
# watch cache, which starts at etcd's revision then, is newer than all of them: a watch resumed
# from any earlier resourceVersion is answered 410 Expired, whatever else was written meanwhile.
restart_apiserver() {
  local old
  old=$(awk '$2 == "kube-apiserver" { print $1 }' "$DIR/pids")
  [ -n "$old" ] || die "restart-apiserver: no kube-apiserver in $DIR/pids"
  BIN=$(readlink "$DIR/bin")
  TIMEOUT=${CONTROLPLANE_START_TIMEOUT:-180}
  URL=$(cat "$DIR/url")
  stop_one "$old" kube-apiserver
  curl -sS --fail -o /dev/null -X POST "$(cat "$DIR/etcd-url")/v3/kv/put" \
    -d "{\"key\": \"$(printf trainbench/restart-apiserver | base64)\", \"value\": \"$(date +%s | base64)\"}" ||
    die "restart-apiserver: writing to etcd failed"
  echo "---- controlplane.sh restart-apiserver, $(date -u +%FT%TZ) ----" >>"$DIR/logs/kube-apiserver.log"
  apiserver_command
  spawn kube-apiserver "${APISERVER[@]}"
  awk -v old="$old" -v new="$SPAWNED" '$1 == old && $2 == "kube-apiserver" { $1 = new } { print }' \
    "$DIR/pids" >"$DIR/pids.tmp" && mv "$DIR/pids.tmp" "$DIR/pids"
  wait_until "$TIMEOUT" "kube-apiserver ready after its restart ($URL/readyz)" curl_api /readyz || return 1
  echo "kube-apiserver restarted $URL"
}

# compact: compacts etcd at its current revision through etcd's HTTP/JSON gateway (what the API
# server's own compactor does every 5 minutes, at once) and prints that revision. physical=true:
# answers once the old revisions are gone from the backend. A revision compacted already (by the
# API server's compactor, in between) counts as done.
compact() {
  local etcd rev answer
  etcd=$(cat "$DIR/etcd-url")
  rev=$(curl -sS --fail -X POST "$etcd/v3/kv/range" -d '{"key": "AA==", "count_only": true}' |
    python3 -c 'import json, sys; print(int(json.load(sys.stdin)["header"]["revision"]))') ||
    die "compact: reading etcd's revision at $etcd failed"
  answer=$(curl -sS -X POST "$etcd/v3/kv/compaction" -d "{\"revision\": $rev, \"physical\": true}") ||
    die "compact: etcd at $etcd did not answer"
  case $answer in
    *'"header"'*|*"required revision has been compacted"*) echo "$rev" ;;
    *) die "compact: etcd refused to compact at $rev: $answer" ;;
  esac
}

# node_kubeconfig NAME: DIR/nodes/NAME/{node.crt,node.key,kubeconfig} (made once; printed).
node_kubeconfig() {
  local name=$1 d=$DIR/nodes/$1 re='^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$'
  [[ $name =~ $re ]] || die "node-kubeconfig: bad node name '$name'"
  if [ ! -s "$d/kubeconfig" ]; then
    mkdir -p "$d"
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:nodes/CN=system:node:$name" -keyout "$d/node.key" \
      -out "$d/node.csr" 2>/dev/null
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=clientAuth" >"$d/node.ext"
    openssl x509 -req -in "$d/node.csr" -CA "$DIR/pki/ca.crt" -CAkey "$DIR/pki/ca.key" -CAcreateserial \
      -CAserial "$d/ca.srl" -days 7 -extfile "$d/node.ext" -out "$d/node.crt" 2>/dev/null
    rm -f "$d/node.csr" "$d/node.ext" "$d/ca.srl"
    chmod 600 "$d/node.key"
    kubeconfig "$d/kubeconfig.tmp" "$(cat "$DIR/url")" "system:node:$name" "$d/node"
    mv "$d/kubeconfig.tmp" "$d/kubeconfig"
  fi
  echo "$d/kubeconfig"
}

main() {
  local cmd=${1:-} dir=${2:-}
  [ -n "$cmd" ] && [ -n "$dir" ] ||
    die "usage: controlplane.sh start|stop|env|compact|restart-apiserver DIR, node-kubeconfig DIR NAME"
  case $cmd in
    start)
      start "$dir"
      ;;
    stop)
      DIR=$(cd "$dir" 2>/dev/null && pwd) || return 0
      stop_processes
      local rotated
      rotated=$(cd "$DIR" && ls audit-*.log 2>/dev/null) || true
      rm -rf "$DIR"
      [ -z "$rotated" ] || die "the API server rotated its audit log ($rotated): tests read audit.log alone"
      ;;
    env)
      DIR=$(cd "$dir" && pwd)
      echo "KUBECONFIG=$DIR/kubeconfig CONTROLPLANE_URL=$(cat "$DIR/url") CONTROLPLANE_DIR=$DIR"
      ;;
    compact)
      DIR=$(cd "$dir" && pwd)
      compact
      ;;
    restart-apiserver)
      DIR=$(cd "$dir" && pwd)
      restart_apiserver
      ;;
    node-kubeconfig)
      DIR=$(cd "$dir" && pwd)
      [ -n "${3:-}" ] || die "usage: controlplane.sh node-kubeconfig DIR NAME"
      node_kubeconfig "$3"
      ;;
    *) die "unknown command $cmd (start, stop, env, compact, restart-apiserver, node-kubeconfig)" ;;
  esac
}
main "$@"

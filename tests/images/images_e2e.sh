#!/usr/bin/env bash
# The Helm chart installed into the real control plane (tests/controlplane, shared with the other
# tests of the ctest run) with `helm install --wait`, its image values pointing at the images built
# by scripts/images.sh, and the test's own node agents (tests/nodeagent, `--images buildah`)
# running every pod from its image: the operator runs from trainbench/operator (a pod of the
# chart's Deployment, made by the real Deployment and ReplicaSet controllers, bound by the real
# scheduler), and runs examples/operator-mlp.yaml and examples/hybrid-ps.yaml to Succeeded with
# every benchmark pod running from trainbench/worker.
# Asserts: each container ran the image it names (containerStatuses' imageID is the built
# image's), as uid/gid 65532 inside the image's root filesystem; the operator's leader identity is
# its pod's hostname (the pod name); the report in status as with the process node agent; a
# missing worker image fails its job through the scheduling timeout, naming
# ErrImagePull/ImagePullBackOff; and nothing is left: no pod, no process with one of the nodes'
# pod IPs, no socket on one, no mount, no buildah working container of the node agents.
# The chart has scope namespace here (a Role in the test's namespace, the operator watching only
# it), so that the test never touches the other tests' jobs on the shared control plane;
# tests/helm runs scope cluster.
#
# Needs: root, CONTROLPLANE_DIR (a control plane of tests/controlplane/controlplane.sh with the
# chart's CRD installed), NODEAGENT, HELM, REPO, the images (scripts/images.sh).
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=${REPO:-$(cd "$HERE/../.." && pwd)}
BIN_DIRS=/nonexistent  # nothing from the build reaches the pods: they run what the images hold
E2E_BACKEND=controlplane
# shellcheck source=../operator/e2e/lib.sh
source "$REPO/tests/operator/e2e/lib.sh"
VERSION=$(bash "$REPO/scripts/version.sh")
B=(buildah --storage-driver vfs)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (buildah, chroot)"; [ "${TRAINBENCH_REQUIRE_IMAGES:-0}" != 1 ] || exit 1; exit 77; }
[ -n "${CONTROLPLANE_DIR:-}" ] && [ -f "$CONTROLPLANE_DIR/kubeconfig" ] ||
  fail "CONTROLPLANE_DIR='${CONTROLPLANE_DIR:-}' is no running control plane (tests/controlplane/controlplane.sh start DIR)"
export PATH="$CONTROLPLANE_DIR/bin:$PATH"  # the kubectl of the server's release
HELM=${HELM:-$REPO/.tools/helm/helm}
[ -x "$HELM" ] || fail "helm not found at $HELM: run scripts/fetch-helm.sh"
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"
OPERATOR_IMAGE=trainbench/operator:$VERSION
WORKER_IMAGE=trainbench/worker:$VERSION
NS=images-e2e-$$  # the test's namespace; its nodes are NS-n1, NS-n2
REL=img-$$

image_id() { "${B[@]}" inspect --type image --format '{{.FromImageID}}' "localhost/$1" 2>/dev/null; }
OPERATOR_ID=$(image_id "$OPERATOR_IMAGE") || true
WORKER_ID=$(image_id "$WORKER_IMAGE") || true
[ -n "$OPERATOR_ID" ] && [ -n "$WORKER_ID" ] || fail "images $OPERATOR_IMAGE / $WORKER_IMAGE not built: run scripts/images.sh"
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

# pod_pids POD_IP: the processes of the pod with that IP (the node agent gives each TRAINBENCH_POD_IP,
# which its network shim binds to).
pod_pids() {
  grep -lzx "TRAINBENCH_POD_IP=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}
# ids_of PID: "uid gid" of the process (real ids).
ids_of() { awk '/^Uid:/ {u = $2} /^Gid:/ {g = $2} END {print u, g}' "/proc/$1/status"; }
# container_image_id POD: the imageID of the pod's first container, as the node agent reports it.
container_image_id() { kc get pod "$1" -o jsonpath='{.status.containerStatuses[0].imageID}'; }

echo "== the chart rendered with the built images"
CHART_ARGS=(--set scope=namespace --set image.repository=trainbench/operator --set "image.tag=$VERSION")
"$HELM" template "$REL" "$REPO/helm/trainbench" -n "$NS" "${CHART_ARGS[@]}" >"$WORK/chart.yaml" 2>"$WORK/helm.err" ||
  fail "helm template: $(cat "$WORK/helm.err")"
KUBECONFIG=/dev/null "$KUBECTL" annotate --local -f "$WORK/chart.yaml" -o json 'tb.invalid/none-' | jq -s . >"$WORK/chart.json" ||
  fail "the rendered chart does not parse"
expect "the chart's operator image" "$(jq -r '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].image' "$WORK/chart.json")" "$OPERATOR_IMAGE"

echo "== helm install into the real control plane, node agents running pods from images"
cp "$CONTROLPLANE_DIR/kubeconfig" "$WORK/kubeconfig"
export KUBECONFIG="$WORK/kubeconfig"
"$KUBECTL" config set-context --current --namespace "$NS" >/dev/null
kc create namespace "$NS" >/dev/null
NS_CREATED=1  # lib.sh's cleanup deletes it, stops the node agents and deletes their nodes
# PodNodeSelector: every pod of this namespace goes to this test's nodes, none of another's.
kc annotate namespace "$NS" "scheduler.alpha.kubernetes.io/node-selector=trainbench.dev/e2e-namespace=$NS" >/dev/null
# start_image_node NAME: as lib.sh's start_node, with --images buildah.
start_image_node() {
  mkdir -p "$WORK/nodes/$1"
  "$NODEAGENT" --controlplane "$CONTROLPLANE_DIR" --dir "$WORK/nodes/$1" --node "$(node_name "$1")" \
    --label "trainbench.dev/e2e-namespace=$NS" --label "trainbench.dev/e2e-node=$1" --images buildah \
    >"$WORK/nodeagent-$1.log" 2>&1 &
  NODE_PIDS+=($!)
  NODE_PID[$(node_name "$1")]=$!
}
start_image_node n1
start_image_node n2
for n in n1 n2; do
  wait_for 60 node_is_ready "$(node_name "$n")" || fail "node $n not Ready: $(tail -5 "$WORK/nodeagent-$n.log")"
  expect "node $n's container runtime" "$(kc get node "$(node_name "$n")" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')" \
    "trainbench-nodeagent://buildah"
done
"$HELM" install "$REL" "$REPO/helm/trainbench" -n "$NS" --wait --timeout 600s "${CHART_ARGS[@]}" >"$WORK/helm-install.log" 2>&1 ||
  fail "helm install: $(tail -5 "$WORK/helm-install.log"; kc get pods -o wide 2>&1)"
DEPLOYMENT=$(jq -r '.[] | select(.kind == "Deployment") | .metadata.name' "$WORK/chart.json")
selector=$(kc get deploy "$DEPLOYMENT" -o json | jq -r '.spec.selector.matchLabels | to_entries | map("\(.key)=\(.value)") | join(",")')
OP_POD=$(kc get pods -l "$selector" -o jsonpath='{.items[0].metadata.name}')
[ -n "$OP_POD" ] || fail "no operator pod made by the chart's Deployment"
leading() { grep -q "trainbench-operator: leading" <<<"$(kc logs "$OP_POD" 2>/dev/null)"; }
wait_for 60 leading || fail "the operator (from its image) is not leading: $(kc logs "$OP_POD" 2>&1 | tail -5)"
expect "operator container's imageID" "$(container_image_id "$OP_POD")" "sha256:$OPERATOR_ID"
op_ip=$(kc get pod "$OP_POD" -o jsonpath='{.status.podIP}')
op_pid=$(pod_pids "$op_ip" | head -1)
[ -n "$op_pid" ] || fail "no process found for the operator pod ($op_ip)"
expect "the operator process" "$(tr '\0' ' ' <"/proc/$op_pid/cmdline")" "trainbench-operator $(jq -r '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args | join(" ")' "$WORK/chart.json") "
expect "the operator's uid gid" "$(ids_of "$op_pid")" "65532 65532"
[ ! -e "/proc/$op_pid/root/bin/sh" ] || fail "the operator's root filesystem has a shell: not its image's"
[ -x "/proc/$op_pid/root/usr/local/bin/trainbench-operator" ] || fail "the operator's root filesystem is not its image's"
# Its leader identity is hostname_random: in its image the hostname is the pod's name, as on a node.
LEASE=$(jq -r '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args[]' "$WORK/chart.json" | sed -n 's/^--lease-name=//p')
holder=$(kc get lease "$LEASE" -o jsonpath='{.spec.holderIdentity}')
[[ $holder == "${OP_POD}_"* ]] || fail "the Lease's holder is '$holder', not the operator pod's hostname ($OP_POD)"
echo "PASS the operator runs from $OPERATOR_IMAGE as 65532:65532, leading as $holder"

# run_example FILE NAME: the example to Succeeded. Every pod it made ran from the worker image (the
# imageID of every container status a watch saw), and the processes of its running pods, looked
# at while they run, are uid/gid 65532 inside the worker image's root filesystem.
run_example() {
  local file=$1 name=$2 seen="" pod ip pid ids cmd watch_pid images
  # (kubectl without kc's --request-timeout, which would end the watch after 20 s.)
  "$KUBECTL" get pods -l "trainbench.dev/job=$name" -w -o json >"$WORK/$name.watch" 2>"$WORK/$name.watch.err" &
  watch_pid=$!
  kc apply -f "$file" >/dev/null || fail "kubectl apply -f $file"
  while ! phase_is "$name" Succeeded; do
    phase_is "$name" Failed && fail "job $name failed: $(kc get bj "$name" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')"
    while read -r pod ip; do
      [ -n "$ip" ] || continue
      for pid in $(pod_pids "$ip"); do
        # (A process that is exiting meanwhile is passed over: its /proc entry is gone, or it is
        # exiting. The kernel drops an exiting process's memory, so its command line, before its
        # root (exit_mm before exit_fs), so a root that no longer resolves is a failure only when
        # the command line, read after it, is still there.)
        ids=$(ids_of "$pid" 2>/dev/null) && [ -n "$ids" ] || continue
        [ "$ids" = "65532 65532" ] || fail "pod $pod: process $pid runs as $ids"
        if [ ! -x "/proc/$pid/root/usr/local/bin/trainbench-worker" ]; then
          cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") && [ -n "$cmd" ] || continue
          fail "pod $pod: process $pid ($cmd) is not in the worker image"
        fi
        case " $seen " in *" $pod "*) ;; *) seen+=" $pod" ;; esac
      done
    done < <(kc get pods -l "trainbench.dev/job=$name" --field-selector=status.phase=Running \
      -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}' 2>/dev/null)
    [ $SECONDS -lt $((T_JOB + 600)) ] || fail "job $name did not finish in 600 s: $(kc get bj "$name" -o jsonpath='{.status}')"
    sleep 0.3
  done
  kill "$watch_pid" 2>/dev/null || fail "the watch of $name's pods ended early: $(cat "$WORK/$name.watch.err")"
  wait "$watch_pid" 2>/dev/null || true
  [ -n "$seen" ] || fail "job $name: no process of a running pod was seen"
  # (Killed, the watch may have been writing an object: its last one may be cut short, and only
  # that is passed over.)
  images=$( { jq -r '.status.containerStatuses[]? | select(.imageID != "") | .imageID' "$WORK/$name.watch" 2>"$WORK/$name.jq.err" ||
    grep -Eq 'Unfinished .* at EOF at line' "$WORK/$name.jq.err"; } | sort -u) ||
    fail "the watch of $name's pods is not JSON: $(cat "$WORK/$name.jq.err")"
  expect "the imageIDs of $name's containers" "$images" "sha256:$WORKER_ID"
  expect "$name's runs" "$(kc get bj "$name" -o jsonpath='{.status.report.runs[*].phase}' | tr ' ' '\n' | sort -u)" Succeeded
  echo "PASS $name Succeeded; every container from $WORKER_IMAGE; processes as 65532:65532 in it:$seen"
}
T_JOB=$SECONDS
run_example "$REPO/examples/operator-mlp.yaml" operator-mlp
kc get bj operator-mlp -o jsonpath='{.status.report}' | jq -e '.runs | length == 2 and all(.examplesPerSec > 0)' >/dev/null ||
  fail "operator-mlp's report: $(kc get bj operator-mlp -o jsonpath='{.status.report}')"
T_JOB=$SECONDS
run_example "$REPO/examples/hybrid-ps.yaml" hybrid-ps

echo "== a worker image that does not exist"
sed -e "s|name: operator-mlp|name: no-image|" -e "s|image: trainbench/worker:.*|image: trainbench/worker:no-such-tag|" \
  -e "s|schedulingTimeoutSeconds: 120|schedulingTimeoutSeconds: 45|" "$REPO/examples/operator-mlp.yaml" >"$WORK/no-image.yaml"
kc apply -f "$WORK/no-image.yaml" >/dev/null
pull_backoff() { kc get pods -l trainbench.dev/job=no-image -o jsonpath='{.items[*].status.containerStatuses[*].state.waiting.reason}' | grep -Eq 'ErrImagePull|ImagePullBackOff'; }
wait_for 60 pull_backoff || fail "no ErrImagePull/ImagePullBackOff: $(kc get pods -l trainbench.dev/job=no-image -o json | jq -c '[.items[].status.containerStatuses]')"
wait_for 150 phase_is no-image Failed || fail "job no-image did not fail: $(kc get bj no-image -o jsonpath='{.status}')"
msg=$(kc get bj no-image -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
grep -Eq 'ErrImagePull|ImagePullBackOff' <<<"$msg" || fail "the failed job's message does not name the image pull: $msg"
grep -q 'trainbench/worker:no-such-tag' <<<"$msg" || fail "the failed job's message does not name the image: $msg"
echo "PASS a missing image: $msg"

echo "== nothing left"
for j in operator-mlp hybrid-ps no-image; do kc delete bj "$j" --wait=false >/dev/null; done
wait_for 60 no_pods_of operator-mlp && wait_for 60 no_pods_of hybrid-ps && wait_for 60 no_pods_of no-image ||
  fail "benchmark pods remain: $(kc get pods -o name)"
SA_USER="system:serviceaccount:$NS:$(jq -r '.[] | select(.kind == "ServiceAccount") | .metadata.name' "$WORK/chart.json")"
T_UNINSTALL=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
"$HELM" uninstall "$REL" -n "$NS" --wait --timeout 120s >/dev/null || fail "helm uninstall"
no_operator_pods() { [ -z "$(kc get pods -l "$selector" -o name)" ]; }
wait_for 60 no_operator_pods || fail "operator pods remain after helm uninstall: $(kc get pods -o name)"
expect "pods left" "$(kc get pods -o name)" ""
# The real authorizer refused the operator nothing while it was installed; at helm uninstall its
# RoleBinding goes with its Deployment, so the release of its Lease may be refused (403), and
# nothing else (tests/helm/helm_chart_test.sh, docs/install.md "Uninstall").
refused=$(jq -r --arg u "$SA_USER" 'select(.stage == "ResponseComplete" and .user.username == $u and
    (.responseStatus.code == 401 or .responseStatus.code == 403)) |
  "\(.requestReceivedTimestamp) \(.responseStatus.code) \(.verb) \(.objectRef.resource // .requestURI)"' "$CONTROLPLANE_DIR/audit.log")
while read -r ts code verb what; do
  [ -n "$ts" ] || continue
  [[ ! $ts < $T_UNINSTALL ]] || fail "the operator was refused while installed: $ts $code $verb $what"
  [ "$code $what" = "403 leases" ] || fail "the operator was refused other than its Lease at helm uninstall: $code $verb $what"
done <<<"$refused"
# Every pod deleted, the node agents stopped their containers: no process with one of their pod
# IPs. (Each agent owns an address block 127.K; its node's InternalIP is 127.K.0.10.)
blocks=()
for n in n1 n2; do
  ip=$(kc get node "$(node_name "$n")" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
  [[ $ip == 127.*.0.10 ]] || fail "node $n's InternalIP: $ip"
  blocks+=("${ip%.0.10}")
done
# block_processes BLOCK: the processes whose pod IP is in 127.K.
block_processes() { grep -lz "^TRAINBENCH_POD_IP=${1//./\\.}\." /proc/[0-9]*/environ 2>/dev/null || true; }
no_block_processes() { [ -z "$(block_processes "$1")" ]; }
for block in "${blocks[@]}"; do
  wait_for 30 no_block_processes "$block" || fail "processes of deleted pods still run ($block.*): $(block_processes "$block")"
done
# Then the node agents stopped (SIGTERM), as lib.sh's cleanup would: no process with one of their
# pod IPs, no socket listening on one, no mount under their directories, no buildah working
# container of theirs.
for n in n1 n2; do
  pid=${NODE_PID[$(node_name "$n")]}
  kill -TERM "$pid"
  wait "$pid" || fail "node agent $n exited $? after SIGTERM: $(tail -5 "$WORK/nodeagent-$n.log")"
  expect "buildah containers of node agent $n left" \
    "$("${B[@]}" containers --format '{{.ContainerName}}' | grep -c "^trainbench-nodeagent-rootfs-$pid-" || true)" 0
done
# This test's pods only: the blocks are free once our agents stopped, and a node agent of a test
# beside this one may already run pods in one (seen in CI). Ours say POD_NAMESPACE=$NS (the
# workers) or HOSTNAME=$REL-... (the operator).
our_block_processes() {
  local f
  for f in $(block_processes "$1"); do
    grep -qzx -e "POD_NAMESPACE=$NS" -e "HOSTNAME=$REL-.*" "$f" 2>/dev/null && echo "$f"
  done
  true
}
for block in "${blocks[@]}"; do
  left=$(our_block_processes "$block")
  [ -z "$left" ] || fail "processes of this test's pods left with a pod IP of $block.*: $left"
  # Pod addresses only: the node's own address ($block.0.10, the kubelet port 10250) belongs to
  # whichever agent holds the block now, and the address block is free once ours stopped: a node
  # agent of a test beside this one may already have taken it (seen in CI).
  listening=$(ss -Hltn | awk -v b="$block." -v node="$block.0.10:" 'index($4, b) == 1 && index($4, node) != 1')
  [ -z "$listening" ] || fail "sockets left listening on a pod IP of $block.*: $listening"
done
! grep -q "$WORK" /proc/self/mountinfo || fail "mounts left: $(grep "$WORK" /proc/self/mountinfo)"
echo "PASS images_e2e"

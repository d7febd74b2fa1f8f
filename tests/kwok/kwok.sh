#!/usr/bin/env bash
# Fake GPU nodes for the scale tests: the real kwok controller (scripts/kwok.sh builds it) run as
# a process against a control plane of tests/controlplane, and NODES Node objects it manages. The
# real kube-scheduler of that control plane binds pods to them by their resources as it would on a
# cluster; kwok then plays the stages scripts/kwok.sh copied out of its module: a node goes
# Ready (node-initialize) and stays so (node-heartbeat, and its Lease renewed), a bound pod goes
# Running and Ready with a pod IP from --cidr (pod-ready), a pod being deleted is deleted at once
# (pod-delete). Nothing runs in the pods: the scale tests measure the control plane and the
# operator with a thousand GPUs, which no machine here has (no container runtime either).
#
#   kwok.sh start DIR CONTROLPLANE_DIR NODES GPUS_PER_NODE
#       starts kwok (first stopping one a killed run left in DIR), creates the nodes
#       kwok-node-1 .. kwok-node-NODES (annotation kwok.x-k8s.io/node=fake, labels
#       type=kwok, trainbench.dev/node-pool=kwok, kubernetes.io/hostname; capacity and allocatable
#       nvidia.com/gpu=GPUS_PER_NODE, cpu 64, memory 512Gi, pods 110) and waits until all are
#       Ready; prints `kwok ready: NODES nodes x GPUS_PER_NODE nvidia.com/gpu`
#   kwok.sh stop DIR
#       stops kwok (SIGTERM, SIGKILL after 5 s), deletes the nodes it made when the control plane
#       still answers, removes DIR
# DIR holds kwok.log, pid, stages.yaml (the stages given to kwok) and nodes.yaml.
# Environment: KWOK_BIN (default: scripts/kwok.sh --path), KWOK_NODE_PREFIX (kwok-node),
#   KWOK_READY_TIMEOUT (seconds, 180).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
die() { echo "kwok: $*" >&2; exit 1; }

stop() {
  local dir=$1 pid waited=0
  [ -d "$dir" ] || return 0
  if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    if kill -TERM "$pid" 2>/dev/null; then
      while kill -0 "$pid" 2>/dev/null && [ $waited -lt 100 ]; do sleep 0.05; waited=$((waited + 1)); done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  if [ -f "$dir/kubeconfig-path" ] && [ -f "$(cat "$dir/kubeconfig-path")" ]; then
    "$(cat "$dir/kubectl-path")" --kubeconfig "$(cat "$dir/kubeconfig-path")" --request-timeout 10s \
      delete nodes -l trainbench.dev/node-pool=kwok --wait=false >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

nodes_yaml() {  # nodes_yaml NODES GPUS PREFIX
  local i
  for i in $(seq 1 "$1"); do
    cat <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $3-$i
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels:
    type: kwok
    trainbench.dev/node-pool: kwok
    kubernetes.io/hostname: $3-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node.kubernetes.io/instance-type: kwok-8xgpu
spec: {}
status:
  capacity: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "$2"}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "$2"}
  nodeInfo: {architecture: amd64, operatingSystem: linux, kubeletVersion: fake}
---
YAML
  done
}

start() {
  local dir=$1 cp=$2 nodes=$3 gpus=$4 bin stages prefix=${KWOK_NODE_PREFIX:-kwok-node} f
  [[ $nodes =~ ^[0-9]+$ && $gpus =~ ^[0-9]+$ ]] || die "NODES and GPUS_PER_NODE must be numbers"
  cp=$(cd "$cp" && pwd) || die "no control plane in $2"
  [ -f "$cp/kubeconfig" ] || die "no control plane in $cp (no kubeconfig)"
  stop "$dir"
  bin=${KWOK_BIN:-$(bash "$repo/scripts/kwok.sh" --path)} || die "kwok is not built: run scripts/kwok.sh"
  stages="$bin/../stages"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  local kubectl=$cp/bin/kubectl
  echo "$cp/kubeconfig" >"$dir/kubeconfig-path"
  echo "$kubectl" >"$dir/kubectl-path"
  # One config file holding every stage (documents separated by ---).
  for f in "$stages"/*.yaml; do cat "$f"; echo "---"; done >"$dir/stages.yaml"
  grep -q 'name: pod-ready' "$dir/stages.yaml" || die "no pod-ready stage in $stages"
  # setsid: a session of its own, so that it outlives the script and a terminal's signals.
  # --cidr: a /16, so that every pod of a thousand-GPU sweep gets an IP (the default /24 has 254).
  HOME="$dir" setsid "$bin/kwok" --kubeconfig "$cp/kubeconfig" --config "$dir/stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr 10.64.0.1/16 --node-ip 10.63.0.1 --node-lease-duration-seconds 40 \
    </dev/null >"$dir/kwok.log" 2>&1 &
  echo $! >"$dir/pid"
  nodes_yaml "$nodes" "$gpus" "$prefix" >"$dir/nodes.yaml"
  "$kubectl" --kubeconfig "$cp/kubeconfig" create -f "$dir/nodes.yaml" >/dev/null ||
    { tail -n 20 "$dir/kwok.log" >&2; die "creating the nodes failed"; }
  local end=$((SECONDS + ${KWOK_READY_TIMEOUT:-180})) ready=0
  while :; do
    kill -0 "$(cat "$dir/pid")" 2>/dev/null || { tail -n 20 "$dir/kwok.log" >&2; die "kwok exited"; }
    ready=$("$kubectl" --kubeconfig "$cp/kubeconfig" get nodes -l trainbench.dev/node-pool=kwok \
      -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$' || true)
    [ "$ready" -lt "$nodes" ] || break
    [ $SECONDS -lt $end ] || { tail -n 20 "$dir/kwok.log" >&2; die "$ready of $nodes nodes Ready within ${KWOK_READY_TIMEOUT:-180} s"; }
    sleep 0.5
  done
  echo "kwok ready: $nodes nodes x $gpus nvidia.com/gpu"
}

case ${1:-} in
  start)
    [ $# -eq 5 ] || die "usage: kwok.sh start DIR CONTROLPLANE_DIR NODES GPUS_PER_NODE"
    start "$2" "$3" "$4" "$5"
    ;;
  stop)
    [ $# -eq 2 ] || die "usage: kwok.sh stop DIR"
    stop "$2"
    ;;
  *) die "usage: kwok.sh start DIR CONTROLPLANE_DIR NODES GPUS_PER_NODE | stop DIR" ;;
esac

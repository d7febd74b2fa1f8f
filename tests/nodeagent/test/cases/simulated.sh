# --pods simulated: a bound pod is reported Running and Ready at once (pod IP of the node's block,
# conditions, containerStatuses started, init containers Completed) and nothing runs; a pod that
# asks for GPUs lands as usual (--gpus); a deleted pod's last status is terminal (143, SIGTERM)
# and it goes; the agent keeps no thread per pod; SIGTERM: exit 0.
start_agent n1 --pods simulated --gpus 8 --max-pods 200
pid=$agent_pid
wait_for 30 node_ready n1 || fail "node n1 not Ready"
node=$(kc get node "$ns-n1" -o json)
jq -e '.status.nodeInfo.containerRuntimeVersion == "trainbench-nodeagent://simulated" and
  .status.capacity["nvidia.com/gpu"] == "8" and .status.capacity.pods == "200"' >/dev/null <<<"$node" ||
  fail "node: $(jq -c '{nodeInfo: .status.nodeInfo, capacity: .status.capacity}' <<<"$node")"
node_ip=$(jq -r '.status.addresses | map(select(.type == "InternalIP"))[0].address' <<<"$node")
echo "node: Ready, runtime simulated, nvidia.com/gpu 8, pods 200"
threads() { awk '/^Threads:/{print $2}' "/proc/$pid/status"; }
threads_before=$(threads)

# A pod whose command would leave a mark if it ran, with an init container and all 8 GPUs.
mark="$work/ran-$ns"
pod gpus n1 Never "touch $mark; sleep 600" "$(printf '%s\n' "    resources: {limits: {nvidia.com/gpu: 8}}")" \
  "$(printf '%s\n' "  initContainers:" "  - {name: setup, image: busybox, command: [sh, -c, 'touch $mark-init']}")"
start=$(date +%s.%N)
wait_for 30 phase_is gpus Running || fail "gpus not Running: $(kc -n "$ns" get pod gpus -o jsonpath='{.status}')"
echo "gpus: Running $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s after its creation (polled)"
st=$(kc -n "$ns" get pod gpus -o json)
check() { jq -e "$1" >/dev/null <<<"$st" || fail "pod gpus: $1 does not hold: $(jq -c .status <<<"$st")"; }
check '.spec.nodeName == "'"$ns-n1"'"'
check '.status.podIP | startswith("'"${node_ip%.0.10}"'.1.")'
check '.status.hostIP == "'"$node_ip"'" and .status.podIPs[0].ip == .status.podIP and (.status.startTime | length) > 0'
check '[.status.conditions[] | select(.status == "True") | .type] | sort ==
  ["ContainersReady", "Initialized", "PodReadyToStartContainers", "PodScheduled", "Ready"]'
check '.status.containerStatuses[0] | .name == "main" and .ready and .started and
  (.state.running.startedAt | length) > 0 and .containerID == "nodeagent://'"$(jq -r .metadata.uid <<<"$st")"'-main"'
check '.status.initContainerStatuses[0].state.terminated | .exitCode == 0 and .reason == "Completed"'
[ ! -e "$mark" ] && [ ! -e "$mark-init" ] || fail "a container ran"
echo "gpus: Ready, IP $(jq -r .status.podIP <<<"$st") of the node's block, started, init Completed; nothing ran"

# Many pods at once: all Running, no thread per pod.
many=40
for i in $(seq 1 $many); do
  printf '%s\n' "apiVersion: v1" "kind: Pod" "metadata: {name: p$i, labels: {app: many}}" "spec:" \
    "  nodeSelector: {kubernetes.io/hostname: $ns-n1}" \
    "  tolerations: [{key: trainbench.dev/nodeagent-test, operator: Exists}]" \
    "  containers: [{name: main, image: busybox, command: [sh, -c, 'touch $mark']}]" "---"
done | kc -n "$ns" apply -f - >/dev/null
all_running() {
  [ "$(kc -n "$ns" get pods -l app=many -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
    grep -c '^Running$')" = $many ]
}
start=$SECONDS
wait_for 60 all_running || fail "not all $many pods Running: $(kc -n "$ns" get pods -l app=many --no-headers | head)"
ips=$(kc -n "$ns" get pods -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}' | sort | uniq -d)
[ -z "$ips" ] || fail "pod IPs handed out twice: $ips"
threads_after=$(threads)
[ "$threads_after" -le $((threads_before + 4)) ] ||
  fail "threads grew from $threads_before to $threads_after with $((many + 1)) pods"
[ ! -e "$mark" ] || fail "a container ran"
echo "$many pods: Running within $((SECONDS - start)) s, distinct IPs; agent threads $threads_before -> $threads_after"

# Deletion: the last status the node writes is terminal (exit 143, as SIGTERM ends a program),
# then the node deletes the pod.
kc -n "$ns" get pod gpus --watch --output-watch-events -o json >"$work/gpus-watch.json" 2>/dev/null &
watcher=$!
agents+=("$watcher")  # cleanup stops it should the case fail
wait_for 10 test -s "$work/gpus-watch.json" || fail "no watch of gpus"
start=$SECONDS
kc -n "$ns" delete pod gpus --timeout=30s >/dev/null || fail "gpus was not deleted"
took=$((SECONDS - start))
sleep 1
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
jq -se 'map(select(.object.status.phase == "Failed" and
  .object.status.containerStatuses[0].state.terminated.exitCode == 143)) | length > 0' "$work/gpus-watch.json" \
  >/dev/null || fail "no terminal status before the deletion: $(jq -c '[.type, .object.status.phase]' "$work/gpus-watch.json")"
jq -se 'map(.type) | last == "DELETED"' "$work/gpus-watch.json" >/dev/null || fail "gpus not deleted"
[ "$took" -le 10 ] || fail "gpus took $took s to go"
kc -n "$ns" delete pods -l app=many --timeout=60s >/dev/null || fail "the $many pods were not deleted"
echo "delete: last status Failed (143), pod gone in $took s; $many more deleted"

start=$SECONDS
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ $rc = 0 ] || fail "the agent exited $rc"
[ $((SECONDS - start)) -le 10 ] || fail "the agent took $((SECONDS - start)) s to stop"
echo "SIGTERM: exit 0 in $((SECONDS - start)) s"

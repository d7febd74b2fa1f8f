# A node registers, turns Ready and keeps its Lease renewed, as the node itself.
start_agent n1 --gpus 2 --label trainbench.dev/pool=a
wait_for 30 node_ready n1 || fail "node n1 not Ready: $(kc get node "$ns-n1" -o yaml)"
node=$(kc get node "$ns-n1" -o json)
check() { jq -e "$1" >/dev/null <<<"$node" || fail "node: $1 does not hold: $(jq -c "${2:-.status}" <<<"$node")"; }
check '.metadata.labels["trainbench.dev/pool"] == "a" and .metadata.labels["kubernetes.io/hostname"] == "'"$ns-n1"'"' .metadata
check '.status.capacity["nvidia.com/gpu"] == "2" and .status.allocatable["nvidia.com/gpu"] == "2"'
check '.status.capacity.pods == "110" and (.status.capacity.cpu | tonumber) >= 1'
check '[.status.conditions[] | select(.type == "Ready") | .reason] == ["KubeletReady"]'
check '[.status.conditions[] | select(.type != "Ready") | .status] == ["False", "False", "False"]'
check '.status.addresses | map(select(.type == "InternalIP"))[0].address | test("^127\\.[0-9]+\\.0\\.10$")'
check '.status.addresses | map(select(.type == "Hostname"))[0].address == "'"$ns-n1"'"'
check '.status.daemonEndpoints.kubeletEndpoint.Port == 10250'
check '.spec.taints | map(.key) | index("trainbench.dev/nodeagent-test") != null' .spec
echo "node: Ready (KubeletReady), labels, nvidia.com/gpu 2, InternalIP, kubelet port, taint"

lease() { kc -n kube-node-lease get lease "$ns-n1" -o json; }
wait_for 20 lease || fail "no Lease in kube-node-lease"
l=$(lease)
jq -e '.spec.holderIdentity == "'"$ns-n1"'" and .spec.leaseDurationSeconds == 40 and
  .metadata.ownerReferences[0].kind == "Node"' >/dev/null <<<"$l" || fail "lease: $(jq -c . <<<"$l")"
first=$(jq -r .spec.renewTime <<<"$l")
renewed() { [ "$(lease | jq -r .spec.renewTime)" != "$first" ]; }
wait_for 20 renewed || fail "the Lease was not renewed within 20 s (renewTime $first)"
echo "lease: held by the node, 40 s, renewed"

# Every request of the agent came as the node itself and none was refused.
user="system:node:$ns-n1"
calls=$(jq -c --arg u "$user" 'select(.user.username == $u and .stage == "ResponseComplete")' \
  "$CONTROLPLANE_DIR/audit.log" | wc -l)
[ "$calls" -gt 3 ] || fail "no requests as $user in the audit log"
denied=$(jq -c --arg u "$user" 'select(.user.username == $u and .stage == "ResponseComplete" and
  .responseStatus.code == 403) | {verb, objectRef}' "$CONTROLPLANE_DIR/audit.log" | sort -u)
[ -z "$denied" ] || fail "the API server refused the node: $denied"
echo "identity: $calls requests as $user, none refused"

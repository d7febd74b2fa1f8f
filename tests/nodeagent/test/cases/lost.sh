# A lost node (SIGUSR1: no Lease renewals, statuses or answers; its pods' processes frozen) is
# marked by the real node lifecycle controller: Ready Unknown after --node-monitor-grace-period
# (40 s unless the fixture sets CONTROLPLANE_NODE_MONITOR_GRACE), taints
# node.kubernetes.io/unreachable NoSchedule and NoExecute, its pods' Ready False. A second node
# stays, so that the zone is not in full disruption (where the controller adds no NoExecute).
# The pod's process starts a child in a session of its own (as a launcher's ranks leave its
# process group): the freeze, like a cgroup's, takes it too, and the agent's stop kills it.
start_agent witness
start_agent n1
lost_pid=$agent_pid
wait_for 30 node_ready n1 || fail "node n1 not Ready"
wait_for 30 node_ready witness || fail "node witness not Ready"
marker="marker-$ns"
pod runner n1 Always "setsid sh -c ': $marker-child; while true; do sleep 0.05; done' & : $marker; while true; do echo tick; sleep 1; done"
wait_for 60 phase_is runner Running || fail "runner not Running"
kill -USR1 "$lost_pid"
lost_at=$SECONDS
unknown() { [ "$(condition node "$ns-n1" Ready)" = Unknown ]; }
wait_for 120 unknown || fail "node n1 still $(condition node "$ns-n1" Ready) 120 s after it was lost"
echo "node n1: Ready Unknown $((SECONDS - lost_at)) s after it was lost"
reason=$(kc get node "$ns-n1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].reason}')
[ "$reason" = NodeStatusUnknown ] || fail "Ready reason $reason"
taints() { kc get node "$ns-n1" -o json | jq -r '[.spec.taints[] | select(.key == "node.kubernetes.io/unreachable") | .effect] | sort | join(",")'; }
both() { [ "$(taints)" = "NoExecute,NoSchedule" ]; }
wait_for 60 both || fail "unreachable taints: '$(taints)'"
echo "taints: node.kubernetes.io/unreachable $(taints)"
not_ready() { [ "$(condition pod runner Ready)" = False ]; }
wait_for 30 not_ready || fail "runner Ready $(condition pod runner Ready)"
[ "$(kc -n "$ns" get pod runner -o jsonpath='{.status.phase}')" = Running ] || fail "runner's phase changed"
state=$(ps -o stat= -p "$(pgrep -f ": $marker;" | head -1)")
[[ $state == T* ]] || fail "the pod's process is not frozen: state $state"
# The child leads its own session (pid = session id); the parent's command line names it too.
child_state=$(ps -eo pid=,sid=,stat=,args= | awk -v m="$marker-child" 'index($0, m) && $1 == $2 {print $3}')
[[ $child_state == T* ]] || fail "the pod's child in a session of its own is not frozen: state $child_state"
echo "pod runner: phase Running, Ready False, process and its setsid child frozen ($state, $child_state)"
[ "$(condition node "$ns-witness" Ready)" = True ] || fail "the witness node is not Ready"
kill -TERM "$lost_pid"
wait "$lost_pid" || fail "the lost agent exited $?"
wait_for 5 no_procs "$marker" || fail "processes left: $(pgrep -af "$marker")"
echo "lost agent stopped: exit 0, no process left"

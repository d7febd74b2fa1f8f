# SIGTERM: the agent kills its pods' processes and exits 0, leaving no process and no mount.
start_agent n1
pid=$agent_pid
wait_for 30 node_ready n1 || fail "node n1 not Ready"
marker="marker-$ns"
pod forever n1 Always ": $marker-a; trap '' TERM; while true; do sleep 0.2; done"
pod children n1 Never ": $marker-b; sleep 4711 & sleep 4711 & wait"
for p in forever children; do wait_for 60 phase_is $p Running || fail "$p not Running"; done
[ "$(pgrep -f "$marker" | wc -l)" -ge 2 ] || fail "pod processes not found"
start=$SECONDS
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ $rc = 0 ] || fail "the agent exited $rc"
[ $((SECONDS - start)) -le 10 ] || fail "the agent took $((SECONDS - start)) s to stop"
wait_for 5 no_procs "sleep 4711|$marker" || fail "processes left: $(pgrep -af "sleep 4711|$marker")"
! grep -qF "$work" /proc/mounts || fail "mounts left: $(grep -F "$work" /proc/mounts)"
echo "SIGTERM: exit 0 in $((SECONDS - start)) s, no process, no mount left"

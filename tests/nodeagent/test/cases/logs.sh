# kubectl logs and kubectl logs -f through the real API server (which dials the agent's log
# endpoint at the node's InternalIP with its kubelet client certificate); -f ends when the
# container ends.
start_agent n1
wait_for 30 node_ready n1 || fail "node n1 not Ready"
pod counter n1 Never 'for i in 1 2 3 4 5 6; do echo "line $i"; sleep 0.5; done'
wait_for 60 phase_is counter Running || fail "counter: $(kc -n "$ns" get pod counter -o jsonpath='{.status}')"
start=$SECONDS
followed=$(timeout 60 kubectl -n "$ns" logs -f counter) || fail "kubectl logs -f failed or did not end: '$followed'"
[ "$followed" = "$(printf 'line %s\n' 1 2 3 4 5 6 | head -c -1)" ] || fail "logs -f: '$followed'"
echo "logs -f: 6 lines, ended after $((SECONDS - start)) s with the container"
wait_for 30 phase_is counter Succeeded || fail "counter did not succeed"
[ "$(kc -n "$ns" logs counter | wc -l)" = 6 ] || fail "logs: $(kc -n "$ns" logs counter)"
[ "$(kc -n "$ns" logs counter --tail=2)" = "$(printf 'line 5\nline 6')" ] || fail "logs --tail=2: $(kc -n "$ns" logs counter --tail=2)"
[ "$(kc -n "$ns" logs counter --limit-bytes=6)" = "line 1" ] || fail "logs --limit-bytes=6"
echo "logs: whole, --tail=2, --limit-bytes=6"
# A followed log of a finished container is its whole log, at once.
[ "$(timeout 20 kubectl -n "$ns" logs -f counter | wc -l)" = 6 ] || fail "logs -f of a finished container"
echo "logs -f of a finished container: whole log, ended"

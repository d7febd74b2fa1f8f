# A deleted running pod is stopped (SIGTERM; SIGKILL after min(grace, --max-grace)) and removed
# (the agent's DELETE with gracePeriodSeconds=0 and the uid precondition), its processes gone.
start_agent n1 --max-grace 3
wait_for 30 node_ready n1 || fail "node n1 not Ready"
marker="marker-$ns"
pod polite n1 Always ": $marker-polite; trap 'echo got TERM; exit 0' TERM; while true; do sleep 0.2; done"
pod stubborn n1 Always ": $marker-stubborn; trap '' TERM; while true; do sleep 0.2; done"
for p in polite stubborn; do wait_for 60 phase_is $p Running || fail "$p not Running"; done
pgrep -f "$marker-polite" >/dev/null || fail "no process of polite"
start=$SECONDS
kc -n "$ns" delete pod polite --timeout=30s >/dev/null || fail "polite was not deleted"
echo "polite: deleted in $((SECONDS - start)) s"
start=$SECONDS
kc -n "$ns" delete pod stubborn --timeout=30s >/dev/null || fail "stubborn was not deleted"
took=$((SECONDS - start))
[ $took -ge 2 ] && [ $took -le 15 ] || fail "stubborn (ignores SIGTERM, grace 30 s, --max-grace 3) went in $took s"
echo "stubborn: SIGKILLed after --max-grace, deleted in $took s"
wait_for 5 no_procs "$marker" || fail "processes left: $(pgrep -af "$marker")"
killing=$(kc -n "$ns" get events --field-selector involvedObject.name=polite,reason=Killing -o jsonpath='{.items[0].message}')
[ "$killing" = "Stopping container main" ] || fail "no Killing event: '$killing'"
echo "processes gone; event Killing: $killing"

# Pods the real scheduler binds here run: one to Succeeded with its downward-API and ConfigMap
# env, one to Failed with its exit code and termination message; the ServiceAccount token the
# agent got by TokenRequest authenticates as the pod's ServiceAccount.
start_agent n1
wait_for 30 node_ready n1 || fail "node n1 not Ready"
kc -n "$ns" create configmap settings --from-literal=greeting=hello >/dev/null
pod ok n1 Never 'echo "pod=$POD_NAME ns=$POD_NS node=$NODE_NAME ip=$POD_IP host=$HOST_IP app=$APP greeting=$GREETING"
echo "token=$(cat "$TRAINBENCH_SERVICEACCOUNT_DIR/token")"' "$(cat <<'YAML'
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: GREETING, valueFrom: {configMapKeyRef: {name: settings, key: greeting}}}
YAML
)"
pod bad n1 Never 'echo failing; echo "it broke" > "$TRAINBENCH_TERMINATION_LOG"; exit 3'
wait_for 60 phase_is ok Succeeded || fail "ok: $(kc -n "$ns" get pod ok -o jsonpath='{.status}')"
wait_for 60 phase_is bad Failed || fail "bad: $(kc -n "$ns" get pod bad -o jsonpath='{.status}')"

ok=$(kc -n "$ns" get pod ok -o json)
ip=$(jq -r .status.podIP <<<"$ok")
host=$(jq -r .status.hostIP <<<"$ok")
[[ $ip =~ ^127\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "ok: podIP '$ip'"
jq -e '.status.containerStatuses[0].state.terminated | .exitCode == 0 and .reason == "Completed"' >/dev/null <<<"$ok" ||
  fail "ok: $(jq -c .status.containerStatuses <<<"$ok")"
jq -e '[.status.conditions[] | select(.type == "Ready" or .type == "Initialized") | .status] | sort == ["False", "True"]' \
  >/dev/null <<<"$ok" || fail "ok: conditions $(jq -c .status.conditions <<<"$ok")"
log=$(kc -n "$ns" logs ok)
want="pod=ok ns=$ns node=$ns-n1 ip=$ip host=$host app=ok greeting=hello"
grep -qxF "$want" <<<"$log" || fail "ok's env: got '$(head -1 <<<"$log")', want '$want'"
echo "ok: Succeeded, exit 0, env $want"

bad=$(kc -n "$ns" get pod bad -o json)
jq -e '.status.containerStatuses[0].state.terminated | .exitCode == 3 and .reason == "Error" and .message == "it broke\n"' \
  >/dev/null <<<"$bad" || fail "bad: $(jq -c .status.containerStatuses <<<"$bad")"
[ "$(kc -n "$ns" logs bad)" = failing ] || fail "bad's log: '$(kc -n "$ns" logs bad)'"
echo "bad: Failed, exit 3, termination message 'it broke', log 'failing'"
# The node's and its pods' addresses come from the agent's own block 127.K.0.0/16, K >= 1
# (runtime/netblock.hpp): the node is 127.K.0.10.
block=${host%.0.10}
[ "$host" = "$block.0.10" ] && [ "$block" != 127.0 ] && [[ $ip == "$block".* ]] ||
  fail "podIP $ip, hostIP $host: not one block 127.K.0.0/16, K >= 1"
echo "addresses: node $host, pod $ip"

# Secrets in env, $(VAR) expansion, the ServiceAccount files, the API server's address.
kc -n "$ns" create secret generic creds --from-literal=pw=hunter2 >/dev/null
pod envx n1 Never 'sa=$TRAINBENCH_SERVICEACCOUNT_DIR; echo "pw=$PW x=$(X2) ns=$(cat "$sa/namespace")"
test -s "$sa/ca.crt" && test -s "$sa/token" && echo sa-ok
[ -n "$KUBERNETES_SERVICE_HOST" ] && [ -n "$KUBERNETES_SERVICE_PORT" ] && echo api-ok' "$(cat <<'YAML'
    env:
    - {name: X, value: expanded}
    - {name: X2, value: "$(X)-twice"}
    - name: PW
      valueFrom: {secretKeyRef: {name: creds, key: pw}}
YAML
)"
wait_for 60 phase_is envx Succeeded || fail "envx: $(kc -n "$ns" get pod envx -o jsonpath='{.status}')"
got=$(kc -n "$ns" logs envx | tr '\n' '|')
[ "$got" = "pw=hunter2 x=expanded-twice ns=$ns|sa-ok|api-ok|" ] || fail "envx: '$got'"
echo "envx: $got"

# A container killed from outside (SIGKILL) fails with 137.
pod victim n1 Never ": marker-$ns-victim; while true; do sleep 0.2; done"
wait_for 60 eval 'phase_is victim Running && pgrep -f "marker-$ns-victim" >/dev/null' || fail "victim not Running"
pkill -KILL -f "marker-$ns-victim"
wait_for 60 phase_is victim Failed || fail "victim: $(kc -n "$ns" get pod victim -o jsonpath='{.status}')"
code=$(kc -n "$ns" get pod victim -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[ "$code" = 137 ] || fail "victim: exit code '$code'"
echo "victim: SIGKILLed, Failed, exit 137"

token=$(sed -n 's/^token=//p' <<<"$log")
server=$(cat "$CONTROLPLANE_DIR/url")
who=$(curl -sS --cacert "$CONTROLPLANE_DIR/pki/ca.crt" -H "Authorization: Bearer $token" -X POST \
  -H 'Content-Type: application/json' -d '{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}' \
  "$server/apis/authentication.k8s.io/v1/selfsubjectreviews" | jq -r .status.userInfo.username)
[ "$who" = "system:serviceaccount:$ns:default" ] || fail "the pod's token authenticates as '$who'"
echo "token: $who (TokenRequest bound to the pod)"

reasons() { kc -n "$ns" get events --field-selector "involvedObject.name=$1" -o json |
  jq -r --arg n "$ns-n1" '[.items[] | select(.source.host == $n) | .reason] | sort | unique | join(" ")'; }
has_events() { local r=" $(reasons ok) "; [[ $r == *" Created "* && $r == *" Started "* ]]; }
wait_for 20 has_events || fail "ok's kubelet events: '$(reasons ok)'"
echo "events: $(reasons ok)"

# The DNS emulation: <svc>.<ns>.svc and <hostname>.<subdomain>.<ns>.svc in env values become the
# pod IP the Service's Endpoints give (there is no cluster DNS here).
kc -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Service
metadata: {name: master}
spec: {selector: {app: server}, ports: [{port: 29500}]}
---
apiVersion: v1
kind: Service
metadata: {name: sub}
spec: {clusterIP: None, selector: {app: server}, ports: [{port: 29500}]}
YAML
pod server n1 Always ": marker-$ns-server; while true; do sleep 0.2; done" "" "  hostname: h1
  subdomain: sub"
pod client n1 Never 'echo "master=$MASTER host=$HOST"' "$(cat <<YAML
    env:
    - {name: MASTER, value: "tcp://master.$ns.svc:29500"}
    - {name: HOST, value: "h1.sub.$ns.svc.cluster.local"}
YAML
)"
wait_for 60 phase_is client Succeeded || fail "client: $(kc -n "$ns" get pod client -o jsonpath='{.status}')"
server_ip=$(kc -n "$ns" get pod server -o jsonpath='{.status.podIP}')
got=$(kc -n "$ns" logs client)
[ "$got" = "master=tcp://$server_ip:29500 host=$server_ip" ] || fail "client's env: '$got' (server at $server_ip)"
echo "DNS emulation: $got"

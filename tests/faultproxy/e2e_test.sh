#!/usr/bin/env bash
# faultproxy against the real API server (README.md): a ServiceAccount's token through the proxy,
# with curl and the control plane's kubectl, over HTTP/2 and HTTP/1.1. Shows
#   - with no rules, everything passes through byte-identical (a GET, a PATCH, watches JSON);
#   - each fault as the client sees it: 500/503/429 with the real Status and headers (and what
#     kubectl makes of them), reset-before writes nothing (absent from the server and its audit
#     log), reset-after writes the object though the client errored, slow delays (and a create
#     whose client gave up is applied when the delay is over), watch-cut cuts a curl watch (JSON
#     and protobuf) mid-event and ends a `kubectl get -w` early;
#   - matching by userAgent, verb (list/get/watch/deletecollection as the server derives them),
#     resource and subresource, limit, the seeded sequence (std::mt19937_64's, as the retired kubesim drew it), nothing but resource
#     requests faulted;
#   - the admin endpoint (token, 400 naming the field), the log against the counts, SIGTERM.
# Usage: e2e_test.sh FAULTPROXY_BINARY. Needs KUBECONFIG and CONTROLPLANE_DIR (the ctest fixture's).
set -euo pipefail
BIN=${1:?usage: e2e_test.sh FAULTPROXY_BINARY}
[ -x "$BIN" ] || { echo "FAIL: no faultproxy binary at $BIN (cmake --build build --target faultproxy)" >&2; exit 1; }
export PATH="$CONTROLPLANE_DIR/bin:$PATH" # the kubectl of the server's release
fail() {
  echo "FAIL: $*" >&2
  echo "--- faultproxy stderr:" >&2; tail -20 "$WORK/proxy.err" >&2 || true
  exit 1
}
kc() { kubectl --request-timeout=20s "$@"; } # admin, straight to the API server
wait_for() { # wait_for SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.2; done
}
ns=faultproxy-e2e
WORK=$(mktemp -d /tmp/faultproxy-e2e.XXXXXX)
PROXY_PID=
cleanup() {
  [ -z "$PROXY_PID" ] || kill "$PROXY_PID" 2>/dev/null || true
  kc delete namespace $ns --wait=false >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
CA=$CONTROLPLANE_DIR/pki/ca.crt
START=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ) # the audit log's requests of this run are the later ones
API=$(kc config view --raw -o jsonpath='{.clusters[0].cluster.server}')

kc delete namespace $ns --ignore-not-found --wait=true >/dev/null
kc create namespace $ns >/dev/null
kc -n $ns create serviceaccount probe >/dev/null
kc -n $ns create role probe --verb='*' --resource=configmaps,serviceaccounts,serviceaccounts/token >/dev/null
kc -n $ns create rolebinding probe --role=probe --serviceaccount=$ns:probe >/dev/null
TOKEN=$(kc -n $ns create token probe --duration 30m)
CM=/api/v1/namespaces/$ns/configmaps

"$BIN" --listen 127.0.0.1:0 --upstream "$API" --upstream-ca "$CA" --cert-dir "$WORK/proxy" --ca-cert "$CA" \
  --ca-key "$CONTROLPLANE_DIR/pki/ca.key" --log "$WORK/faults.log" >"$WORK/proxy.out" 2>"$WORK/proxy.err" &
PROXY_PID=$!
wait_for 20 grep -q "^faultproxy ready https://" "$WORK/proxy.out" || fail "faultproxy is not ready"
PROXY=$(sed -n 's/^faultproxy ready //p' "$WORK/proxy.out")
ADMIN=$(cat "$WORK/proxy/admin-token")
grep -q "$ADMIN" "$WORK/proxy.out" "$WORK/proxy.err" && fail "the admin token was printed"
echo "faultproxy at $PROXY in front of $API"

# curl as the ServiceAccount: sa URL [curl args] (answer on stdout); faults JSON: set the rules.
sa() { local url=$1; shift; curl -sS --cacert "$CA" -H "Authorization: Bearer $TOKEN" "$@" "$url"; }
code() { local url=$1; shift; curl -sS -o /dev/null -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $TOKEN" "$@" "$url" || true; }
admin() { curl -sS --cacert "$CA" -H "Authorization: Bearer $ADMIN" "$@"; }
faults() { admin --fail-with-body -X PUT --data-binary "$1" "$PROXY/faultproxy/v1/faults" >/dev/null || fail "rules refused: $1"; }
create() { sa "$1$CM" -X POST -H 'Content-Type: application/json' -d "{\"metadata\":{\"name\":\"$2\"}}" "${@:3}"; }
exists() { [ "$(code "$API$CM/$1")" = 200 ]; }
# curl's view of a reset connection: 56 (receiving) or 55 (sending, e.g. an HTTP/2 window update).
was_reset() { { [ "$1" = 56 ] || [ "$1" = 55 ]; } && grep -q "Connection reset by peer" "$WORK/err"; }
wait_for 30 exists kube-root-ca.crt || fail "the ServiceAccount cannot read configmaps"
cat >"$WORK/sa.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: proxy, cluster: {server: "$PROXY", certificate-authority: "$CA"}}]
users: [{name: probe, user: {token: "$TOKEN"}}]
contexts: [{name: proxy, context: {cluster: proxy, user: probe, namespace: $ns}}]
current-context: proxy
EOF
kp() { kubectl --kubeconfig "$WORK/sa.kubeconfig" --request-timeout=20s "$@"; } # kubectl through the proxy

# --- 1. No rules: byte-identical pass-through ---------------------------------------------------
create "$API" base >/dev/null
sa "$API$CM/base" >"$WORK/get.direct"
sa "$PROXY$CM/base" >"$WORK/get.h2"
sa "$PROXY$CM/base" --http1.1 >"$WORK/get.h1"
cmp -s "$WORK/get.direct" "$WORK/get.h2" && cmp -s "$WORK/get.direct" "$WORK/get.h1" || fail "a GET differs through the proxy"
[ "$(sa "$PROXY$CM/base" -o /dev/null -w '%{http_version}')" = 2 ] || fail "no HTTP/2 between curl and the proxy"
# A large answer the API server compresses (the client's Accept-Encoding passes, the gzip bytes too).
python3 -c "import json; print(json.dumps({'metadata': {'name': 'big'}, 'data': {'k': 'x' * 300000}}))" |
  sa "$API$CM" -X POST -H 'Content-Type: application/json' --data-binary @- -o /dev/null
sa "$API$CM/big" -H 'Accept-Encoding: gzip' -D "$WORK/big.h" >"$WORK/big.direct"
sa "$PROXY$CM/big" -H 'Accept-Encoding: gzip' >"$WORK/big.h2"
sa "$PROXY$CM/big" -H 'Accept-Encoding: gzip' --http1.1 >"$WORK/big.h1"
grep -qi '^content-encoding: gzip' "$WORK/big.h" || fail "the API server did not compress a 300 kB answer"
cmp -s "$WORK/big.direct" "$WORK/big.h2" && cmp -s "$WORK/big.direct" "$WORK/big.h1" || fail "a gzip answer differs through the proxy"
# The same merge patch through the proxy (a change), then straight (a no-op: the same object back).
patch() { sa "$1$CM/base" -X PATCH -H 'Content-Type: application/merge-patch+json' -d '{"data":{"k":"v"}}'; }
patch "$PROXY" >"$WORK/patch.proxy"
patch "$API" >"$WORK/patch.direct"
cmp -s "$WORK/patch.proxy" "$WORK/patch.direct" || fail "a PATCH differs through the proxy"
[ "$(kp get configmap base -o yaml)" = "$(kubectl --kubeconfig "$WORK/sa.kubeconfig" --server "$API" get configmap base -o yaml)" ] ||
  fail "kubectl get differs through the proxy"
# Three watches from the same resourceVersion (straight, proxy HTTP/2, proxy HTTP/1.1), two changes.
RV0=$(sa "$API$CM" | jq -r .metadata.resourceVersion)
W="$CM?watch=true&resourceVersion=$RV0&timeoutSeconds=3"
sa "$API$W" >"$WORK/watch.direct" & p1=$!
sa "$PROXY$W" >"$WORK/watch.h2" & p2=$!
sa "$PROXY$W" --http1.1 >"$WORK/watch.h1" & p3=$!
sleep 1
for i in 1 2; do sa "$API$CM/base" -X PATCH -H 'Content-Type: application/merge-patch+json' -d "{\"data\":{\"i\":\"$i\"}}" >/dev/null; done
wait $p1 $p2 $p3 || fail "a watch failed"
[ "$(wc -l <"$WORK/watch.direct")" = 2 ] || fail "the straight watch saw $(wc -l <"$WORK/watch.direct") events"
cmp -s "$WORK/watch.direct" "$WORK/watch.h2" && cmp -s "$WORK/watch.direct" "$WORK/watch.h1" ||
  fail "a watch differs through the proxy"
[ -s "$WORK/faults.log" ] && fail "faults logged with no rules"
echo "pass-through: GET (plain and gzip), PATCH, kubectl get, watches (HTTP/2 and HTTP/1.1) byte-identical"

# --- 2. 500, 503, 429: the real Status bodies and headers ---------------------------------------
GET_CM='"verbs":["get"],"resources":["configmaps"]'
status_check() { # RULE CODE REASON MESSAGE RETRY-AFTER(or -) [DETAILS-JQ]
  faults "{\"rules\":[{$1,$GET_CM}]}"
  local c; c=$(sa "$PROXY$CM/base" -D "$WORK/h" -o "$WORK/b" -w '%{http_code}')
  [ "$c" = "$2" ] || fail "$1: HTTP $c"
  jq -e --arg r "$3" --arg m "$4" --argjson c "$2" \
    '.kind == "Status" and .apiVersion == "v1" and .status == "Failure" and .reason == $r and .message == $m and .code == $c' \
    "$WORK/b" >/dev/null || fail "$1: $(cat "$WORK/b")"
  [ -z "${6:-}" ] || jq -e "$6" "$WORK/b" >/dev/null || fail "$1: details $(jq -c .details "$WORK/b")"
  local ra; ra=$(tr -d '\r' <"$WORK/h" | sed -n 's/^retry-after: //Ip')
  [ "${ra:--}" = "$5" ] || fail "$1: Retry-After '$ra', want $5"
  grep -qi '^content-type: application/json' "$WORK/h" || fail "$1: $(cat "$WORK/h")"
}
status_check '"fault":"500"' 500 InternalError "Internal error occurred: faultproxy: injected fault" - \
  '.details.causes == [{"message":"faultproxy: injected fault"}]'
status_check '"fault":"503"' 503 ServiceUnavailable "the server is currently unable to handle the request" - '.details == null'
status_check '"fault":"503","retryAfterSeconds":2' 503 ServiceUnavailable "the server is currently unable to handle the request" 2
status_check '"fault":"429"' 429 TooManyRequests "Too many requests, please try again later." 1 '.details.retryAfterSeconds == 1'
status_check '"fault":"429","retryAfterSeconds":3' 429 TooManyRequests "Too many requests, please try again later." 3 \
  '.details.retryAfterSeconds == 3'
# What kubectl makes of them: 500 is final; a 429 (Retry-After) is retried after the delay.
faults "{\"rules\":[{\"fault\":\"500\",\"limit\":1,$GET_CM}]}"
out=$(kp get configmap base -o name 2>&1) && fail "kubectl got past a 500: $out"
grep -q "Error from server (InternalError): Internal error occurred: faultproxy: injected fault" <<<"$out" || fail "kubectl: $out"
faults "{\"rules\":[{\"fault\":\"429\",\"limit\":1,$GET_CM}]}"
t0=$(date +%s.%N)
[ "$(kp get configmap base -o name)" = configmap/base ] || fail "kubectl did not retry a 429"
awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{exit !(b - a >= 1)}' || fail "kubectl retried a 429 before its Retry-After"
echo "500/503/429: the Status bodies, Retry-After as configured; kubectl fails on 500, waits out a 429"

# --- 3. Resets ---------------------------------------------------------------------------------
audited() { # audited NAME: "CODE" of each create of this configmap the real API server audited
  jq -r --arg ns $ns --arg n "$1" --arg t "$START" 'select(.stage == "ResponseComplete" and .verb == "create" and
    .requestReceivedTimestamp >= $t and .objectRef.namespace == $ns and .objectRef.resource == "configmaps" and
    .objectRef.name == $n) | .responseStatus.code' "$CONTROLPLANE_DIR/audit.log"
}
faults '{"rules":[{"fault":"reset-before","verbs":["create"],"resources":["configmaps"]}]}'
rc=0; create "$PROXY" rb >/dev/null 2>"$WORK/err" || rc=$?
was_reset $rc || fail "reset-before: curl rc $rc: $(cat "$WORK/err")"
rc=0; create "$PROXY" rb1 --http1.1 >/dev/null 2>"$WORK/err" || rc=$?
was_reset $rc || fail "reset-before over HTTP/1.1: curl rc $rc: $(cat "$WORK/err")"
out=$(kp create configmap rb2 2>&1) && fail "kubectl create got past reset-before"
# Go's HTTP/2 client says "connection reset by peer", or "unexpected EOF" when its writer met the
# reset first.
grep -Eq "connection reset by peer|unexpected EOF" <<<"$out" || fail "kubectl: $out"
sleep 1
for n in rb rb1 rb2; do
  [ "$(code "$API$CM/$n")" = 404 ] || fail "reset-before: $n was written"
  [ -z "$(audited $n)" ] || fail "reset-before: the API server audited a create of $n"
done
echo "reset-before: curl 'Connection reset by peer' (HTTP/2 and 1.1), kubectl too; nothing reached the server"

faults '{"rules":[{"fault":"reset-after","verbs":["create"],"resources":["configmaps"]}]}'
rc=0; create "$PROXY" ra >/dev/null 2>"$WORK/err" || rc=$?
was_reset $rc || fail "reset-after: curl rc $rc: $(cat "$WORK/err")"
out=$(kp create configmap ra2 2>&1) && fail "kubectl create got past reset-after"
faults '{"rules":[]}'
out=$(kp create configmap ra2 2>&1) && fail "kubectl created ra2 twice"
grep -q 'configmaps "ra2" already exists' <<<"$out" || fail "kubectl's retry: $out"
exists ra && exists ra2 || fail "reset-after: the creates were not applied"
ra_audited() { [ "$(audited ra)" = 201 ]; }
wait_for 10 ra_audited ||
  fail "reset-after: no 201 for ra in the audit log"
grep -q '"name":"ra",.*"fault":"reset-after","code":0,"upstreamCode":201' "$WORK/faults.log" || fail "log: $(cat "$WORK/faults.log")"
echo "reset-after: the client saw a reset, the server created the objects (201 in its audit log); kubectl's retry: AlreadyExists"

# --- 4. slow -----------------------------------------------------------------------------------
faults "{\"rules\":[{\"fault\":\"slow\",\"delaySeconds\":2,$GET_CM}]}"
t=$(sa "$PROXY$CM/base" -o "$WORK/b" -w '%{http_code} %{time_total}')
[ "${t% *}" = 200 ] && awk -v t="${t#* }" 'BEGIN{exit !(t >= 2)}' || fail "slow GET: $t"
cmp -s "$WORK/b" <(sa "$API$CM/base") || fail "slow GET: a different answer"
faults '{"rules":[{"fault":"slow","delaySeconds":3,"verbs":["create"]}]}'
rc=0; create "$PROXY" late --max-time 1 >/dev/null 2>&1 || rc=$?
[ $rc = 28 ] || fail "slow create: curl rc $rc, want a timeout (28)"
exists late && fail "slow create: applied before the delay was over"
wait_for 10 exists late || fail "slow create: not applied after the delay"
echo "slow: a GET answered after ${t#* } s; a create whose client timed out after 1 s applied at 3 s"

# --- 5. watch-cut ------------------------------------------------------------------------------
RV1=$(sa "$API$CM" | jq -r .metadata.resourceVersion)
for n in w1 w2 w3; do create "$API" $n >/dev/null; done
W="$CM?watch=true&resourceVersion=$RV1"
sa "$API$W&timeoutSeconds=2" >"$WORK/w.direct"
[ "$(wc -l <"$WORK/w.direct")" = 3 ] || fail "the straight watch saw $(wc -l <"$WORK/w.direct") events"
faults '{"rules":[{"fault":"watch-cut","cutAfterEvents":1,"resources":["configmaps"]}]}'
for proto in --http2 --http1.1; do
  rc=0; sa "$PROXY$W" $proto >"$WORK/w.cut" 2>"$WORK/err" || rc=$?
  was_reset $rc || fail "watch-cut $proto: curl rc $rc: $(cat "$WORK/err")"
  python3 - "$WORK/w.direct" "$WORK/w.cut" <<'EOF' || fail "watch-cut $proto: not one event and half of the next"
import sys
lines = open(sys.argv[1], "rb").read().splitlines(keepends=True)
cut = open(sys.argv[2], "rb").read()
sys.exit(cut != lines[0] + lines[1][:len(lines[1]) // 2])
EOF
done
# Protobuf watches (length-prefixed frames): cut in the middle of the second frame too.
PB='Accept: application/vnd.kubernetes.protobuf;stream=watch'
sa "$API$W&timeoutSeconds=2" -H "$PB" >"$WORK/pb.direct"
rc=0; sa "$PROXY$W" -H "$PB" >"$WORK/pb.cut" 2>"$WORK/err" || rc=$?
python3 - "$WORK/pb.direct" "$WORK/pb.cut" <<'EOF' || fail "protobuf watch-cut (curl rc $rc)"
import sys
d, cut = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
f1 = 4 + int.from_bytes(d[:4], "big")
f2 = 4 + int.from_bytes(d[f1:f1 + 4], "big")
sys.exit(len(d) < f1 + f2 or cut != d[:f1 + f2 // 2])
EOF
was_reset $rc || fail "protobuf watch-cut: curl rc $rc"
# kubectl get -w: the cut ends it early (no error printed, exit 0) with the third change missing.
faults '{"rules":[{"fault":"watch-cut","cutAfterEvents":2,"resources":["configmaps"]}]}'
lines_before=$(wc -l <"$WORK/faults.log")
timeout 30 kubectl --kubeconfig "$WORK/sa.kubeconfig" get configmaps -l batch=kw -w --output-watch-events \
  >"$WORK/kw.out" 2>"$WORK/kw.err" & kw=$!
wait_for 20 bash -c "[ \$(wc -l <'$WORK/faults.log') -gt $lines_before ]" || fail "kubectl's watch did not start"
for n in kw1 kw2 kw3; do
  sa "$API$CM" -X POST -H 'Content-Type: application/json' -d "{\"metadata\":{\"name\":\"$n\",\"labels\":{\"batch\":\"kw\"}}}" >/dev/null
done
rc=0; wait $kw || rc=$?
[ $rc = 0 ] || fail "kubectl get -w: rc $rc (124: not cut): $(cat "$WORK/kw.out" "$WORK/kw.err")"
[ "$(awk 'NR > 1 {print $1, $2}' "$WORK/kw.out" | tr '\n' ' ')" = "ADDED kw1 ADDED kw2 " ] ||
  fail "kubectl get -w saw: $(cat "$WORK/kw.out")"
echo "watch-cut: curl gets one event and half of the next, then a reset (JSON over HTTP/2 and 1.1, protobuf); kubectl get -w ends after 2 of 3"

# --- 6. Matching -------------------------------------------------------------------------------
faults '{"rules":[{"fault":"500","userAgent":"faultproxy-e2e-victim"}]}'
[ "$(code "$PROXY$CM/base" -A "someone-else/1.0")" = 200 ] || fail "userAgent: another client was hit"
[ "$(code "$PROXY$CM/base" -A "tool faultproxy-e2e-victim/1.0")" = 500 ] || fail "userAgent: the client was not hit"
faults '{"rules":[{"fault":"500","verbs":["list"],"resources":["configmaps"]}]}'
[ "$(code "$PROXY$CM")" = 500 ] || fail "verbs list: the list passed"
[ "$(code "$PROXY$CM/base")" = 200 ] || fail "verbs list: a get was hit"
[ "$(code "$PROXY$CM?watch=true&timeoutSeconds=1")" = 200 ] || fail "verbs list: a watch was hit"
[ "$(code "$PROXY$CM?watch=false")" = 500 ] || fail "verbs list: watch=false is a list"
faults '{"rules":[{"fault":"500","verbs":["watch"]}]}'
[ "$(code "$PROXY$CM?watch=1&timeoutSeconds=1")" = 500 ] || fail "verbs watch: watch=1 passed"
[ "$(code "$PROXY/api/v1/watch/namespaces/$ns/configmaps?timeoutSeconds=1")" = 500 ] ||
  fail "verbs watch: a /watch/ path passed"
[ "$(code "$PROXY$CM")" = 200 ] || fail "verbs watch: a list was hit"
faults '{"rules":[{"fault":"500","verbs":["deletecollection"]}]}'
[ "$(code "$PROXY$CM?labelSelector=none%3Dnone" -X DELETE)" = 500 ] || fail "deletecollection passed"
[ "$(code "$PROXY$CM/w3" -X DELETE)" = 200 ] || fail "a delete by name was hit as deletecollection"
faults '{"rules":[{"fault":"500","resources":["serviceaccounts/token"]}]}'
TR='{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":600}}'
token_request() { code "$PROXY/api/v1/namespaces/$ns/serviceaccounts/probe/token" -X POST -H 'Content-Type: application/json' -d "$TR"; }
[ "$(token_request)" = 500 ] || fail "resources serviceaccounts/token: the token request passed"
[ "$(code "$PROXY/api/v1/namespaces/$ns/serviceaccounts/probe")" = 200 ] || fail "serviceaccounts/token hit the serviceaccount"
faults '{"rules":[{"fault":"500","resources":["serviceaccounts"]}]}'
[ "$(token_request)" = 500 ] || fail "resources serviceaccounts: its subresource token passed"
[ "$(code "$PROXY$CM/base")" = 200 ] || fail "resources serviceaccounts: a configmap was hit"
# Never faulted: discovery, health, version, OpenAPI (a rule for everything).
faults '{"rules":[{"fault":"503"}]}'
for p in /api /api/v1 /apis /apis/apps/v1 /version /healthz /livez /readyz /openapi/v2 /openapi/v3; do
  [ "$(code "$PROXY$p")" = 200 ] || fail "$p was faulted"
done
[ "$(code "$PROXY$CM/base")" = 503 ] || fail "the rule for everything did not hit a get"
# limit, and the rules' counts.
faults '{"rules":[{"fault":"503","limit":2,"verbs":["get"]}]}'
got=$(for i in 1 2 3; do code "$PROXY$CM/base"; echo -n " "; done)
[ "$got" = "503 503 200 " ] || fail "limit 2: $got"
admin "$PROXY/faultproxy/v1/faults" | jq -e '.rules[0].injected == 2 and .rules[0].limit == 2' >/dev/null ||
  fail "limit: $(admin "$PROXY/faultproxy/v1/faults")"
# The seeded sequence: kubesim's for the same seed (std::mt19937_64 seeded 11, fraction 0.5).
seq_of() { for i in $(seq 20); do [ "$(code "$PROXY$CM/base")" = 500 ] && echo -n F || echo -n .; done; }
faults '{"seed":11,"rules":[{"fault":"500","fraction":0.5,"verbs":["get"]}]}'
a=$(seq_of)
faults '{"seed":11,"rules":[{"fault":"500","fraction":0.5,"verbs":["get"]}]}'
b=$(seq_of)
[ "$a" = "F.F.FF....FF.FFFFF.." ] && [ "$b" = "$a" ] || fail "seed 11: $a then $b, want kubesim's F.F.FF....FF.FFFFF.."
echo "matching: userAgent, verbs (list/get/watch/deletecollection as the server derives them), resources and subresources, limit, seed 11 = kubesim's $a"

# --- 7. Admin endpoint and the log ---------------------------------------------------------------
[ "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$CA" "$PROXY/faultproxy/v1/faults")" = 401 ] || fail "admin without a token"
[ "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$CA" -H "Authorization: Bearer $TOKEN" "$PROXY/faultproxy/v1/faults")" = 401 ] ||
  fail "admin with the ServiceAccount's token"
out=$(admin -X PUT --data-binary '{"rules":[{"fault":"500","fraction":1.5}]}' -w ' %{http_code}' "$PROXY/faultproxy/v1/faults")
[ "${out##* }" = 400 ] && jq -e '.message == "rules[0].fraction must be in [0, 1]" and .reason == "BadRequest"' <<<"${out% *}" >/dev/null ||
  fail "a bad rule: $out"
admin "$PROXY/faultproxy/v1/faults" | jq -e '.seed == 11 and (.rules | length) == 1' >/dev/null || fail "a bad rule changed the rules"
admin -X DELETE "$PROXY/faultproxy/v1/faults" | jq -e '.rules == []' >/dev/null || fail "DELETE"
[ "$(code "$PROXY$CM/base")" = 200 ] || fail "a request failed with the rules cleared"
# Every injected fault is in the log, one line each, and the counts agree.
state=$(admin "$PROXY/faultproxy/v1/faults")
total=$(jq '[.injected[]] | add' <<<"$state")
[ "$(wc -l <"$WORK/faults.log")" = "$total" ] || fail "log: $(wc -l <"$WORK/faults.log") lines, $total injected"
for f in $(jq -r '.injected | keys[]' <<<"$state"); do
  [ "$(jq -r --arg f "$f" 'select(.fault == $f) | .fault' "$WORK/faults.log" | wc -l)" = "$(jq --arg f "$f" '.injected[$f]' <<<"$state")" ] ||
    fail "log: the $f count"
done
jq -e -s 'all(has("ts") and has("verb") and has("resource") and has("subresource") and has("namespace") and has("name") and
  has("userAgent") and has("fault"))' "$WORK/faults.log" >/dev/null || fail "log: a line lacks a field"
echo "admin: 401 without the token, 400 naming the field, DELETE; log: $total lines = the injected counts $(jq -c .injected <<<"$state")"

kill -TERM "$PROXY_PID"
rc=0; wait "$PROXY_PID" || rc=$?
PROXY_PID=
[ $rc = 0 ] || fail "faultproxy exited $rc on SIGTERM"
grep -q "$ADMIN" "$WORK/proxy.err" "$WORK/faults.log" && fail "the admin token was logged"
echo "SIGTERM: exit 0"
echo "PASS"

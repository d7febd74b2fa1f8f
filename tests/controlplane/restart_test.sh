#!/usr/bin/env bash
# controlplane.sh compact and restart-apiserver, on a control plane of this test's own (restarting
# the shared one would disturb the tests running beside it). What a client resuming a watch or
# reading an old resourceVersion gets from the real kube-apiserver after each:
#   compact alone       the watch cache still serves the compacted resourceVersion: watch 200 with
#                       its events, list resourceVersionMatch=Exact 200
#   restart alone       watch: ERROR event, Status 410 Expired "too old resource version" (the new
#                       watch cache starts after it); the Exact list still 200 (read from etcd)
#   compact + restart   watch as above; the Exact list HTTP 410 Expired
# and that the restart keeps the port, the other components (which work on) and that stop leaves
# no process and no directory behind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cp="$here/controlplane.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/cp-restart-test.XXXXXX")
trap 'bash "$cp" stop "$dir" >/dev/null 2>&1 || true' EXIT
bash "$cp" start "$dir"
url=$(cat "$dir/url")
api() { curl -sS --max-time 30 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" --key "$dir/pki/admin.key" "$@"; }
wait_for() {  # wait_for SECONDS CMD...
  local end=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.5; done
}
ns=restart-test
cms=$url/api/v1/namespaces/$ns/configmaps
create_cm() {  # prints the new ConfigMap's resourceVersion
  api --fail -X POST -H 'Content-Type: application/json' "$cms" -d "{\"metadata\": {\"name\": \"$1\"}}" |
    jq -er .metadata.resourceVersion
}
# The first line of a watch from resourceVersion $1 (the server ends it after 2 s).
watch_first() { api "$cms?watch=true&timeoutSeconds=2&resourceVersion=$1" | head -n 1 || true; }
# The HTTP status of a list at exactly resourceVersion $1.
exact_list_code() { api -o /dev/null -w '%{http_code}' "$cms?resourceVersion=$1&resourceVersionMatch=Exact"; }
expect_expired_watch() {  # expect_expired_watch RV WHEN
  local line
  line=$(watch_first "$1")
  [ "$(jq -r '.type + " " + (.object.code | tostring) + " " + .object.reason' <<<"$line")" = "ERROR 410 Expired" ] &&
    [[ $(jq -r .object.message <<<"$line") == "too old resource version: $1 "* ]] ||
    fail "$2: a watch from $1 did not get 410 Expired: $line"
}
api --fail -o /dev/null -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces" \
  -d "{\"metadata\": {\"name\": \"$ns\"}}"
# The root-CA publisher's ConfigMap first, so that nothing but ours is created after rv_a.
wait_for 60 api --fail "$cms/kube-root-ca.crt" || fail "no kube-root-ca.crt in $ns"

# compact alone
rv_a=$(create_cm a)
rv_b=$(create_cm b)
rev=$(bash "$cp" compact "$dir")
[[ $rev =~ ^[0-9]+$ ]] && [ "$rev" -ge "$rv_b" ] || fail "compact printed '$rev', not a revision >= $rv_b"
etcd_answer=$(curl -sS -X POST "$(cat "$dir/etcd-url")/v3/kv/range" -d "{\"key\": \"AA==\", \"revision\": $rv_a}")
[[ $etcd_answer == *"required revision has been compacted"* ]] || fail "etcd still reads revision $rv_a: $etcd_answer"
first=$(watch_first "$rv_a")
[ "$(jq -r '.type + " " + .object.metadata.name' <<<"$first")" = "ADDED b" ] ||
  fail "compact alone: a watch from $rv_a did not replay b's creation from the watch cache: $first"
[ "$(exact_list_code "$rv_a")" = 200 ] || fail "compact alone: the Exact list at $rv_a was not 200"
echo "compact at $rev: a watch from $rv_a still replays its events, the Exact list 200 (watch cache)"

# compact + restart
pids_before=$(cat "$dir/pids")
old_apiserver=$(awk '$2 == "kube-apiserver" { print $1 }' "$dir/pids")
bash "$cp" restart-apiserver "$dir"
[ "$(cat "$dir/url")" = "$url" ] || fail "the URL changed: $(cat "$dir/url")"
api --fail -o /dev/null "$url/readyz" || fail "not ready at $url after the restart"
! kill -0 "$old_apiserver" 2>/dev/null || fail "the old kube-apiserver ($old_apiserver) still runs"
[ "$(grep -v kube-apiserver <<<"$pids_before")" = "$(grep -v kube-apiserver "$dir/pids")" ] ||
  fail "the other components changed: $pids_before -> $(cat "$dir/pids")"
[ "$(awk '{ print $2 }' "$dir/pids" | tr '\n' ' ')" = "etcd kube-apiserver kube-controller-manager kube-scheduler " ] ||
  fail "DIR/pids is out of order: $(cat "$dir/pids")"
while read -r pid name; do kill -0 "$pid" || fail "$name ($pid) is not running"; done <"$dir/pids"
expect_expired_watch "$rv_a" "compact + restart"
[ "$(exact_list_code "$rv_a")" = 410 ] || fail "compact + restart: the Exact list at $rv_a was not 410"
echo "compact + restart: watch from $rv_a: 410 Expired; Exact list: 410"

# restart alone (what was written since the compaction is still in etcd)
rv_c=$(create_cm c)
bash "$cp" restart-apiserver "$dir"
expect_expired_watch "$rv_c" "restart alone"
[ "$(exact_list_code "$rv_c")" = 200 ] || fail "restart alone: the Exact list at $rv_c (not compacted) was not 200"
rv_now=$(api --fail "$cms" | jq -er .metadata.resourceVersion)
[ "$(jq -r .type <<<"$(watch_first "$rv_now")")" != ERROR ] || fail "a watch from the current $rv_now failed"
echo "restart alone: watch from $rv_c: 410 Expired; Exact list: 200; a watch from the new $rv_now: fine"

# The controllers and the scheduler work on through the new server: the ServiceAccount controller
# fills a new namespace, and the scheduler reports a pod without nodes unschedulable.
api --fail -o /dev/null -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces" \
  -d '{"metadata": {"name": "after-restart"}}'
wait_for 60 api --fail "$url/api/v1/namespaces/after-restart/serviceaccounts/default" ||
  fail "kube-controller-manager made no default ServiceAccount after the restart"
api --fail -o /dev/null -X POST -H 'Content-Type: application/json' "$url/api/v1/namespaces/$ns/pods" \
  -d '{"metadata": {"name": "waiting"}, "spec": {"containers": [{"name": "c", "image": "example.invalid/none:1"}]}}'
unschedulable() {
  api --fail "$url/api/v1/namespaces/$ns/pods/waiting" |
    jq -e '.status.conditions[]? | select(.type == "PodScheduled" and .reason == "Unschedulable")'
}
wait_for 60 unschedulable || fail "kube-scheduler did not report the pod unschedulable after the restart"
echo "after the restarts: kube-controller-manager and kube-scheduler work on"

# stop leaves nothing behind.
pids=$(awk '{ print $1 }' "$dir/pids")
trap - EXIT
bash "$cp" stop "$dir"
for pid in $pids; do ! kill -0 "$pid" 2>/dev/null || fail "process $pid still runs after stop"; done
[ ! -e "$dir" ] || fail "$dir is still there after stop"
! pgrep -f -- "$dir/" >/dev/null || fail "processes naming $dir still run: $(pgrep -af -- "$dir/")"
echo "stop: no process, no directory left"
echo PASS

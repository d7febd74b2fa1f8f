#!/usr/bin/env bash
# API faults on the real control plane: tests/faultproxy, between the real kube-apiserver and
# both the operator and the pods (the master pod's result writer: both say User-Agent
# trainbench-operator), fails a seeded fraction of their requests with one fault class, while the
# real operator (the chart's ServiceAccount and RBAC) runs a two-run mlp job with real workers on
# a node agent. Whatever the class, the operator converges:
#   - the job ends Succeeded with both runs in its report (no lost status write);
#   - no pod is created twice (the API server's audit log: each pod name 201 once);
#   - no hot loop: the operator's request rate (the audit log, plus the proxy's log of the
#     requests it answered itself) stays under its client-side limit, the figures are printed;
#   - its API request counters show the injected codes, the transition Events are there, and
#     nothing of the job is left running.
# Usage: faults_e2e.sh CASE, CASE one of 5xx 429 reset-before reset-after slow watch-cut
# (or none: no fault, the baseline of the request-rate figures).
source "$(dirname "$0")/lib.sh"

CASE=${1:?usage: faults_e2e.sh 5xx|429|reset-before|reset-after|slow|watch-cut}
UA=trainbench-operator
# Every resource the operator and the result writer use but its Lease, Events included: a
# transient failure of an Event create fails the reconcile before its status write, and the next
# one records the same (per-transition) Event again, so each transition still has exactly one
# Event.
RES='"resources":["pods","configmaps","services","serviceaccounts","roles","rolebindings","benchmarkjobs","events"]'
WRITES='"verbs":["create","update","patch","delete","deletecollection"]'
# The Lease gets the case's fault a bounded number of times, on renewals (updates; the first
# acquisition of a new Lease is a get and a create): LEASE_RULE N FAULT-FIELDS. A leader that cannot
# renew for renewDeadline (10 s: about five tries, one every retryPeriod of 2 s) gives up its lease
# by design, as client-go's does; under a seeded fraction of a third of its requests failing, a run
# long enough (a loaded CI machine) loses it by chance, so the fraction spares it and this rule
# makes sure renewals fail, a few tries in a row, and must not lose it.
LEASE_RULE() { echo '{'"$2"',"verbs":["update"],"resources":["leases"],"limit":'"$1"',"userAgent":"'$UA'"}'; }
OP_ARGS=()
case $CASE in
  # The first renewal fails twice (its fast-path update, then the update after reading the
  # lease), the second once.
  5xx) RULES='['$(LEASE_RULE 3 '"fault":"500"')',
              {"fault":"500","fraction":0.2,"userAgent":"'$UA'",'$RES'},{"fault":"503","fraction":0.15,"userAgent":"'$UA'",'$RES'}]'
    WANT_CODES="500 503" ;;
  429) RULES='['$(LEASE_RULE 3 '"fault":"429","retryAfterSeconds":1')',
              {"fault":"429","fraction":0.3,"retryAfterSeconds":1,"userAgent":"'$UA'",'$RES'}]'
    WANT_CODES="429" ;;
  reset-before) RULES='['$(LEASE_RULE 3 '"fault":"reset-before"')',
              {"fault":"reset-before","fraction":0.25,"userAgent":"'$UA'",'$RES'}]'
    WANT_CODES="0" ;;
  # The first two lease renewals are written but unanswered: the leader must keep its lease.
  reset-after) RULES='['$(LEASE_RULE 2 '"fault":"reset-after"')',
              {"fault":"reset-after","fraction":0.3,'$WRITES',"userAgent":"'$UA'",'$RES'}]'
    WANT_CODES="0" ;;
  # Answers 3 s late to an operator that waits 1 s for each (--kube-api-timeout).
  slow) RULES='['$(LEASE_RULE 2 '"fault":"slow","delaySeconds":3')',
              {"fault":"slow","fraction":0.1,"delaySeconds":3,"userAgent":"'$UA'",'$RES'}]'
    OP_ARGS=(--kube-api-timeout 1); WANT_CODES="0" ;;
  watch-cut) RULES='[{"fault":"watch-cut","fraction":0.7,"cutAfterEvents":1,"userAgent":"'$UA'",'$RES'}]'
    WANT_CODES="" ;;
  none) RULES='[]'; WANT_CODES="" ;;  # the baseline for the figures (not a ctest case)
  *) fail "unknown case $CASE" ;;
esac
FAULT_NAMES=$(jq -r '[.[].fault] | unique | join(" ")' <<<"$RULES")

# The rules hold from the start (tests/faultproxy/README.md); the operator and the pods go
# through the proxy, kubectl and helm straight to the API server.
WITH_FAULTPROXY=1
FAULT_RULES="{\"seed\": 11, \"rules\": $RULES}"
OPERATOR_FLAGS="${OP_ARGS[*]}"
start_cluster
wait_for 20 grep -q "serving metrics on" "$WORK/operator.log" || fail "operator serves no metrics"
OP_METRICS=$(sed -n 's|.*serving metrics on \(.*\)/metrics|\1|p' "$WORK/operator.log" | head -1)

JOB=faulty
mlp_job "$JOB" 20 "{backoffLimit: 2, collectiveTimeoutSeconds: 60, schedulingTimeoutSeconds: 120}" \
  "{nodes: 1, devicesPerNode: 1, paradigm: none}" "{nodes: 2, devicesPerNode: 1}" | kc apply -f - >/dev/null
T0=$SECONDS
wait_phase "$JOB" Succeeded || fail "job did not succeed under $CASE: $(kc get bj $JOB -o jsonpath='{.status}')"
echo "$CASE: job Succeeded after $((SECONDS - T0)) s"

# No lost status write: both runs in the report, each with its rank rows.
[ "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[*].phase}')" = "Succeeded Succeeded" ] ||
  fail "report runs: $(kc get bj $JOB -o jsonpath='{.status.report}')"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[0].ranks[*].rank}')" = "0" ] || fail "run 0's rank rows"
[ "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[1].ranks[*].rank}')" = "0 1" ] || fail "run 1's rank rows"
kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Succeeded")].status}' | grep -qx True ||
  fail "Succeeded condition"

# The faults really happened.
stats=$(proxy_admin GET /faultproxy/v1/faults)
for f in $FAULT_NAMES; do
  n=$(jq -r --arg f "$f" '.injected[$f] // 0' <<<"$stats")
  echo "$CASE: faultproxy injected $n x $f"
  [ "$n" -ge 1 ] || fail "no $f fault was injected: $(jq -c '{considered, injected}' <<<"$stats")"
done

# No duplicate pod: every pod name was created (201) once. A reset after the write shows here
# as a 201 the operator never saw, and its retry as a 409.
dups=$(pods_created | sort | uniq -d)
[ -z "$dups" ] || fail "pods created twice: $dups"
echo "$CASE: $(pods_created | wc -l) pods created, each once"

# No hot loop: the operator's requests per second: those the API server saw (its audit log) and
# those the proxy answered itself (its log: no upstreamCode).
audit_log >"$WORK/audit.json"
jq -c 'select(.upstreamCode == null)' "$WORK/faults.log" >"$WORK/unforwarded.json"
rates=$(python3 - "$WORK/audit.json" "$WORK/unforwarded.json" "$UA" <<'PY'
import json, sys, datetime, collections
per_sec = collections.Counter()
for path in sys.argv[1:3]:
  for line in open(path):
    e = json.loads(line)
    if sys.argv[3] not in (e.get("userAgent") or ""):
        continue
    t = datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()
    per_sec[int(t)] += 1
if not per_sec:
    print("0 0 0 0 0"); sys.exit()
lo, hi = min(per_sec), max(per_sec)
span = hi - lo + 1
total = sum(per_sec.values())
peak1 = max(per_sec.values())
peak10 = max(sum(per_sec[s] for s in range(a, a + 10)) for a in range(lo, hi + 1))
print(total, span, f"{total / span:.1f}", peak1, peak10)
PY
)
read -r total span mean peak1 peak10 <<<"$rates"
echo "$CASE: operator requests: $total in $span s, mean $mean/s, peak $peak1 in 1 s, $peak10 in 10 s"
# The client-side limit (50 QPS, burst 200, operator defaults) caps any 10 s at 700; a hot loop
# against a failing server would reach it. Far below: backoff, not the limiter, sets the pace.
[ "$peak10" -le 700 ] || fail "request rate: $peak10 requests in 10 s exceeds the client-side limit"
[ "$peak10" -le 300 ] || fail "request rate: $peak10 requests in 10 s: a hot loop"

# Its API request counters by code show what the server answered (0: no answer).
metrics=$(curl -sf "http://$OP_METRICS/metrics") || fail "operator /metrics"
for code in $WANT_CODES; do
  n=$(grep '^trainbench_operator_api_requests_total{' <<<"$metrics" | grep "code=\"$code\"" |
      awk '{ s += $2 } END { print s + 0 }')
  echo "$CASE: operator counted $n requests with code $code"
  [ "$n" -ge 1 ] || fail "no request counted with code $code: $(grep api_requests_total <<<"$metrics")"
done
if [ "$CASE" = watch-cut ]; then
  n=$(grep '^trainbench_operator_watch_restarts_total{' <<<"$metrics" | awk '{ s += $2 } END { print s + 0 }')
  echo "$CASE: operator re-opened watches $n times"
  [ "$n" -ge 1 ] || fail "no watch restart counted"
fi

# Events: exactly one per transition (named per transition, never aggregated): one RunStarted per
# run attempt, one RunSucceeded per run, one JobSucceeded.
reasons=$(kc get events --field-selector "involvedObject.name=$JOB" -o jsonpath='{range .items[*]}{.reason} {.count}{"\n"}{end}')
echo "$CASE: events: $(awk '{ n[$1] += ($2 == "" ? 1 : $2) } END { for (r in n) printf "%s=%d ", r, n[r] }' <<<"$reasons")"
n_of() { awk -v r="$1" '$1 == r { n += ($2 == "" ? 1 : $2) } END { print n + 0 }' <<<"$reasons"; }
restarts=$(kc get bj "$JOB" -o json | jq '[.status.runs[].restarts // 0] | add')
[ "$(n_of RunStarted)" = $((2 + restarts)) ] || fail "RunStarted $(n_of RunStarted) times for 2 runs and $restarts restarts: $reasons"
[ "$(n_of RunSucceeded)" = 2 ] || fail "RunSucceeded $(n_of RunSucceeded) times for 2 runs: $reasons"
[ "$(n_of JobSucceeded)" = 1 ] || fail "JobSucceeded $(n_of JobSucceeded) times: $reasons"

# The operator kept its lease throughout: its renewals failed (LEASE_RULE), a few in a row, and a
# renewal that failed (or whose answer was lost) is not a lost lease.
if [ "$CASE" != watch-cut ] && [ "$CASE" != none ]; then
  n=$(jq '[.rules[] | select(.resources == ["leases"]) | .injected] | add' <<<"$stats")
  echo "$CASE: lease renewals failed $n times"
  [ "$n" -ge 2 ] || fail "the lease's renewals were not failed: $(jq -c .rules <<<"$stats")"
fi
! grep -q "lost the lease" "$WORK/operator.log" || fail "the operator lost its lease: $(grep -i lease "$WORK/operator.log")"

wait_for 60 no_pods_of "$JOB" || fail "pods left: $(kc get pods -l trainbench.dev/job=$JOB -o name)"
wait_for 30 no_containers_running || fail "processes left running: $(cluster_stats)"
echo "PASS faults_e2e $CASE"

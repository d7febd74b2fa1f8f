#!/usr/bin/env bash
# The chaos soak (docs/reliability.md), on the real control plane (tests/controlplane; the soak
# is RUN_SERIAL, so it may restart the shared API server): two node agents, the real operator as
# TWO replicas with leader election (the chart's ServiceAccount and RBAC), the real kubectl and
# real workers, tests/faultproxy between the operator replicas (and the pods) and the API server.
# For DURATION seconds a stream of small MLP jobs is submitted while, drawn from a seeded random
# sequence, it
#   - SIGKILLs an operator replica and restarts it a moment later,
#   - SIGKILLs a running pod of a running job (at most POD_KILLS_PER_JOB per job, below its
#     backoffLimit),
#   - drops every watch stream (faultproxy's POST /faultproxy/v1/watches/close),
#   - compacts etcd at its current revision (controlplane.sh compact: real etcd compaction),
#   - restarts kube-apiserver (controlplane.sh restart-apiserver: every connection drops, the
#     watch cache is rebuilt from etcd, and watches resumed from before get 410 Gone).
# Then, with the chaos over, every job must end Succeeded with a complete report, and the
# checks in check_soak.py run: no pod created twice (the real audit log), each transition Event
# recorded exactly once, no pod and no pod process left, no job stuck.
# Usage: chaos_soak.sh [DURATION_SECONDS] [SEED]; the figures go to stdout and to
# $CHAOS_FIGURES (a JSON file) when set. Needs what lib.sh's controlplane backend needs, and
# FAULTPROXY.
source "$(dirname "$0")/../operator/e2e/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
CONTROLPLANE_SH="$REPO/tests/controlplane/controlplane.sh"
DURATION=${1:-120}
SEED=${2:-1}
RANDOM=$SEED
MAX_ACTIVE=${MAX_ACTIVE:-2}
POD_KILLS_PER_JOB=2
BACKOFF_LIMIT=3
# Per tick (a 0.5 s sleep plus a few kubectl calls, about 1.5 s here), one chance in N.
OP_KILL_1_IN=${OP_KILL_1_IN:-3}
POD_KILL_1_IN=${POD_KILL_1_IN:-6}
WATCH_DROP_1_IN=${WATCH_DROP_1_IN:-8}
COMPACT_1_IN=${COMPACT_1_IN:-12}
RESTART_1_IN=${RESTART_1_IN:-40}

start_namespace
start_faultproxy
start_nodes --node n1 --node n2

REP=(0 0)            # replica pids (0: down)
RESTART_AT=(0 0)     # when a killed replica comes back (SECONDS)
STARTS=0             # replica starts so far: each has a log of its own
RELISTS=0            # 410-forced relists counted by replicas before they were killed
LEASE="--leader-elect-lease-duration 3 --leader-elect-renew-deadline 2 --leader-elect-retry-period 1"
start_replica() {
  STARTS=$((STARTS + 1))
  # shellcheck disable=SC2086
  "$OPERATOR" --kubeconfig "$OPERATOR_KUBECONFIG" $OPERATOR_SCOPE_FLAGS --metrics-bind-address 127.0.0.1:0 \
    --health-probe-bind-address 127.0.0.1:0 $LEASE >"$WORK/replica-$STARTS.log" 2>&1 &
  REP[$1]=$!
  REPLICA_LOG[$1]="$WORK/replica-$STARTS.log"
  PIDS+=($!)
}
declare -A REPLICA_LOG
# relists_of I: the replica's trainbench_operator_watch_relists_total (410 Gone), summed.
relists_of() {
  local addr
  addr=$(sed -n 's|.*serving metrics on \(.*\)/metrics|\1|p' "${REPLICA_LOG[$1]}" | head -1)
  [ -n "$addr" ] || { echo 0; return; }
  { curl -sf --max-time 5 "http://$addr/metrics" || true; } |
    awk '/^trainbench_operator_watch_relists_total\{/ { s += $2 } END { print s + 0 }'
}
start_replica 0
start_replica 1

OP_KILLS=0 POD_KILLS=0 WATCH_DROPS=0 COMPACTIONS=0 SUBMITTED=0
declare -A KILLED_IN   # job -> pod kills so far

submit_job() {
  local name steps
  name=$(printf 'soak-%03d' "$SUBMITTED")
  steps=$((50 + RANDOM % 350))
  if ((RANDOM % 2)); then
    mlp_job "$name" "$steps" "{backoffLimit: $BACKOFF_LIMIT, collectiveTimeoutSeconds: 60}" \
      "{nodes: 1, devicesPerNode: 1, paradigm: none}" "{nodes: 2, devicesPerNode: 1}" >"$WORK/$name.yaml"
  else
    mlp_job "$name" "$steps" "{backoffLimit: $BACKOFF_LIMIT, collectiveTimeoutSeconds: 60}" \
      "{nodes: 2, devicesPerNode: 1}" >"$WORK/$name.yaml"
  fi
  kc apply -f "$WORK/$name.yaml" >/dev/null || fail "apply $name"
  KILLED_IN[$name]=0
  SUBMITTED=$((SUBMITTED + 1))
}

kill_replica() {
  local i=$((RANDOM % 2))
  [ "${REP[$i]}" != 0 ] || return 0
  RELISTS=$((RELISTS + $(relists_of "$i")))
  kill -KILL "${REP[$i]}" 2>/dev/null || true
  wait "${REP[$i]}" 2>/dev/null || true
  forget_pid "${REP[$i]}"
  echo "--- chaos: replica $i SIGKILLed at $SECONDS s ---" >>"${REPLICA_LOG[$i]}"
  REP[$i]=0
  RESTART_AT[$i]=$((SECONDS + RANDOM % 3))
  OP_KILLS=$((OP_KILLS + 1))
}

# A killed replica comes back when due; one that exited by itself (a leader that could not renew
# its lease while the API server was down steps down and exits) comes back at once, as a
# Deployment restarts its container.
restart_due_replicas() {
  for i in 0 1; do
    if [ "${REP[$i]}" != 0 ] && ! kill -0 "${REP[$i]}" 2>/dev/null; then
      wait "${REP[$i]}" 2>/dev/null || true
      forget_pid "${REP[$i]}"
      REP[$i]=0
      RESTART_AT[$i]=$SECONDS
    fi
    if [ "${REP[$i]}" = 0 ] && { [ "$1" = all ] || [ "$SECONDS" -ge "${RESTART_AT[$i]}" ]; }; then start_replica "$i"; fi
  done
}

# A running pod of a running job that may still lose one.
kill_random_pod() {
  local running=() job pods
  for job in $(kc get bj -o jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.name}{" "}{end}'); do
    [ "${KILLED_IN[$job]:-0}" -lt "$POD_KILLS_PER_JOB" ] && running+=("$job")
  done
  [ ${#running[@]} -gt 0 ] || return 0
  job=${running[$((RANDOM % ${#running[@]}))]}
  read -r -a pods <<<"$(kc get pods -l "trainbench.dev/job=$job" --field-selector status.phase=Running -o jsonpath='{.items[*].metadata.name}')"
  [ ${#pods[@]} -gt 0 ] || return 0
  kill_pod "${pods[$((RANDOM % ${#pods[@]}))]}" || return 0
  KILLED_IN[$job]=$((KILLED_IN[$job] + 1))
  POD_KILLS=$((POD_KILLS + 1))
}

active_jobs() {
  kc get bj -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -cvE '^(Succeeded|Failed|Invalid)$' || true
}

drop_watches() { proxy_admin POST /faultproxy/v1/watches/close >/dev/null && WATCH_DROPS=$((WATCH_DROPS + 1)); }
compact() { bash "$CONTROLPLANE_SH" compact "$CONTROLPLANE_DIR" >/dev/null && COMPACTIONS=$((COMPACTIONS + 1)); }
# An etcd compaction, then an API-server restart: watches resumed from before get 410 whether the
# new server answers them from its fresh watch cache or from etcd (compacted) while the cache fills.
restart_apiserver() {
  compact
  bash "$CONTROLPLANE_SH" restart-apiserver "$CONTROLPLANE_DIR" >>"$WORK/restarts.log" 2>&1 ||
    fail "kube-apiserver did not come back: $(tail -5 "$WORK/restarts.log")"
  RESTARTS=$((RESTARTS + 1))
}
RESTARTS=0

echo "chaos soak: seed $SEED, $DURATION s, work dir $WORK"
START=$SECONDS
END=$((SECONDS + DURATION))
while [ $SECONDS -lt $END ]; do
  restart_due_replicas due
  [ "$(active_jobs)" -ge "$MAX_ACTIVE" ] || submit_job
  ((RANDOM % OP_KILL_1_IN)) || kill_replica
  ((RANDOM % POD_KILL_1_IN)) || kill_random_pod
  ((RANDOM % WATCH_DROP_1_IN)) || drop_watches
  ((RANDOM % COMPACT_1_IN)) || compact
  ((RANDOM % RESTART_1_IN)) || restart_apiserver
  # Past half time, every kind of chaos has happened at least once, whatever the draws.
  if [ $((SECONDS - START)) -ge $((DURATION / 2)) ]; then
    [ "$WATCH_DROPS" != 0 ] || drop_watches
    [ "$COMPACTIONS" != 0 ] || compact
    [ "$RESTARTS" != 0 ] || restart_apiserver
    [ "$POD_KILLS" != 0 ] || kill_random_pod
    [ "$OP_KILLS" != 0 ] || kill_replica
  fi
  sleep 0.5
done
CHAOS_SECONDS=$((SECONDS - START))
restart_due_replicas all
echo "chaos over after $CHAOS_SECONDS s: $SUBMITTED jobs, $OP_KILLS operator kills, $POD_KILLS pod kills," \
  "$WATCH_DROPS watch drops, $COMPACTIONS compactions, $RESTARTS API-server restarts; waiting for the jobs to finish"

# No job stuck: with the chaos over, every job ends within a bound.
all_done() { [ "$(active_jobs)" = 0 ]; }
wait_for 300 all_done || echo "jobs still active after 300 s: $(kc get bj)"
# cleanPodPolicy All: the pods go once each run ends; none may be left.
managed_pods() { kc get pods -l app.kubernetes.io/managed-by=trainbench-operator -o name; }
no_managed_pods() { [ -z "$(managed_pods)" ]; }
# What became of each pod left: its object, and every request the API server's audit log has
# about it (which delete it missed, and whose).
explain_leftover_pods() {
  local pod
  echo "pods left: $(kc get pods -o wide)"
  for pod in $(managed_pods); do
    pod=${pod#pod/}
    echo "---- $pod ----"
    kc get pod "$pod" -o jsonpath='{.metadata.creationTimestamp} uid {.metadata.uid} labels {.metadata.labels} deletionTimestamp {.metadata.deletionTimestamp} phase {.status.phase}{"\n"}' || true
    audit_log | jq -c --arg p "$pod" 'select(.resource == "pods" and (.name == $p or .verb == "deletecollection") and
      .verb != "get" and .verb != "list" and .verb != "watch") | {ts, user, verb, name, subresource, code}' | tail -n 40 || true
  done
  jq -r '.items[] | "\(.metadata.name) \(.status.phase) runs: \([.status.runs[]? | "\(.phase)/a\(.attempt // 0)"] | join(" "))"' \
    <<<"$(kc get bj -o json)" || true
}
wait_for 60 no_managed_pods || explain_leftover_pods
wait_for 30 no_containers_running || true
# Processes whose working directory is one of the node agents' pod directories: none may outlive
# its pod.
leftover_processes() {
  local n=0 p
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/cwd" 2>/dev/null)" == "$WORK/nodes/"*"/pods/"* ]] && n=$((n + 1))
  done
  echo $n
}
for i in 0 1; do [ "${REP[$i]}" = 0 ] || RELISTS=$((RELISTS + $(relists_of "$i"))); done
cat "$WORK"/replica-*.log >>"$WORK/operator.log"

kc get bj -o json >"$WORK/jobs.json"
kc get events -o json >"$WORK/events.json"
audit_log >"$WORK/audit.json"
figures=$(python3 "$HERE/check_soak.py" --jobs "$WORK/jobs.json" --events "$WORK/events.json" \
  --audit "$WORK/audit.json" --seed "$SEED" --chaos-seconds "$CHAOS_SECONDS" --operator-kills "$OP_KILLS" \
  --pod-kills "$POD_KILLS" --watch-drops "$WATCH_DROPS" --compactions "$COMPACTIONS" \
  --apiserver-restarts "$RESTARTS" --relists-on-gone "$RELISTS" \
  --leftover-pods "$(managed_pods | wc -l)" --leftover-containers "$(running_containers)" \
  --leftover-processes "$(leftover_processes)" --leader-takeovers "$(cat "$WORK"/replica-*.log | grep -c 'leading$')") &&
  rc=0 || rc=$?
echo "$figures"
[ -z "${CHAOS_FIGURES:-}" ] || echo "$figures" | tail -n 1 >"$CHAOS_FIGURES"
[ $rc = 0 ] || fail "the soak's checks failed (above)"
echo "PASS chaos_soak"

#!/usr/bin/env bash
# The chaos soak (docs/reliability.md): kubesim with two nodes, the real operator as TWO
# replicas with leader election, the real kubectl and real workers. For DURATION seconds a
# stream of small MLP jobs is submitted while, drawn from a seeded random sequence, it
#   - SIGKILLs an operator replica and restarts it a moment later,
#   - SIGKILLs a running pod of a running job (at most POD_KILLS_PER_JOB per job, below its
#     backoffLimit),
#   - drops every watch stream (kubesim's POST /kubesim/v1/watches/close),
#   - compacts the watch history (POST /kubesim/v1/compact: resumed watches get 410 Gone).
# Then, with the chaos over, every job must end Succeeded with a complete report, and the
# checks in check_soak.py run: no pod created twice (audit log), each transition Event recorded
# exactly once, no pod and no pod process left, no job stuck.
# Usage: chaos_soak.sh [DURATION_SECONDS] [SEED]; the figures go to stdout and to
# $CHAOS_FIGURES (a JSON file) when set.
source "$(dirname "$0")/../operator/e2e/lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
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

start_kubesim --node n1 --node n2
KUBESIM_PID=${PIDS[0]}
kc apply -f "$CRD" >/dev/null
wait_for 20 kc get bj || fail "the CRD did not appear in discovery"

REP=(0 0)            # replica pids (0: down)
RESTART_AT=(0 0)     # when a killed replica comes back (SECONDS)
start_replica() {
  "$OPERATOR" --kubeconfig "$KUBECONFIG" --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    --leader-elect-lease-duration 3 --leader-elect-renew-deadline 2 --leader-elect-retry-period 1 \
    >>"$WORK/operator.log" 2>&1 &
  REP[$1]=$!
  PIDS=("$KUBESIM_PID")
  for p in "${REP[@]}"; do [ "$p" = 0 ] || PIDS+=("$p"); done
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
  kill -KILL "${REP[$i]}" 2>/dev/null || true
  wait "${REP[$i]}" 2>/dev/null || true
  echo "--- chaos: replica $i SIGKILLed at $SECONDS s ---" >>"$WORK/operator.log"
  REP[$i]=0
  RESTART_AT[$i]=$((SECONDS + RANDOM % 3))
  OP_KILLS=$((OP_KILLS + 1))
}

restart_due_replicas() {
  for i in 0 1; do
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

echo "chaos soak: seed $SEED, $DURATION s, work dir $WORK"
START=$SECONDS
END=$((SECONDS + DURATION))
while [ $SECONDS -lt $END ]; do
  restart_due_replicas due
  [ "$(active_jobs)" -ge "$MAX_ACTIVE" ] || submit_job
  ((RANDOM % OP_KILL_1_IN)) || kill_replica
  ((RANDOM % POD_KILL_1_IN)) || kill_random_pod
  if ! ((RANDOM % WATCH_DROP_1_IN)); then sim_admin POST /kubesim/v1/watches/close >/dev/null && WATCH_DROPS=$((WATCH_DROPS + 1)); fi
  if ! ((RANDOM % COMPACT_1_IN)); then sim_admin POST /kubesim/v1/compact >/dev/null && COMPACTIONS=$((COMPACTIONS + 1)); fi
  # Past half time, every kind of chaos has happened at least once, whatever the draws.
  if [ $((SECONDS - START)) -ge $((DURATION / 2)) ]; then
    [ "$WATCH_DROPS" != 0 ] || { sim_admin POST /kubesim/v1/watches/close >/dev/null && WATCH_DROPS=1; }
    [ "$COMPACTIONS" != 0 ] || { sim_admin POST /kubesim/v1/compact >/dev/null && COMPACTIONS=1; }
    [ "$POD_KILLS" != 0 ] || kill_random_pod
    [ "$OP_KILLS" != 0 ] || kill_replica
  fi
  sleep 0.5
done
CHAOS_SECONDS=$((SECONDS - START))
restart_due_replicas all
echo "chaos over after $CHAOS_SECONDS s: $SUBMITTED jobs, $OP_KILLS operator kills, $POD_KILLS pod kills," \
  "$WATCH_DROPS watch drops, $COMPACTIONS compactions; waiting for the jobs to finish"

# No job stuck: with the chaos over, every job ends within a bound.
all_done() { [ "$(active_jobs)" = 0 ]; }
wait_for 300 all_done || echo "jobs still active after 300 s: $(kc get bj)"
# cleanPodPolicy All: the pods go once each run ends; none may be left.
managed_pods() { kc get pods -l app.kubernetes.io/managed-by=trainbench-operator -o name; }
no_managed_pods() { [ -z "$(managed_pods)" ]; }
wait_for 60 no_managed_pods || true
wait_for 30 no_containers_running || true
# Processes whose working directory is one of kubesim's pod directories: none may outlive its pod.
leftover_processes() {
  local n=0 p
  for p in /proc/[0-9]*; do
    [[ "$(readlink "$p/cwd" 2>/dev/null)" == "$WORK/sim/pods/"* ]] && n=$((n + 1))
  done
  echo $n
}

kc get bj -o json >"$WORK/jobs.json"
kc get events -o json >"$WORK/events.json"
figures=$(python3 "$HERE/check_soak.py" --jobs "$WORK/jobs.json" --events "$WORK/events.json" \
  --audit "$WORK/sim/audit.log" --seed "$SEED" --chaos-seconds "$CHAOS_SECONDS" --operator-kills "$OP_KILLS" \
  --pod-kills "$POD_KILLS" --watch-drops "$WATCH_DROPS" --compactions "$COMPACTIONS" \
  --leftover-pods "$(managed_pods | wc -l)" --leftover-containers "$(running_containers)" \
  --leftover-processes "$(leftover_processes)" --leader-takeovers "$(grep -c 'leading$' "$WORK/operator.log")") &&
  rc=0 || rc=$?
echo "$figures"
[ -z "${CHAOS_FIGURES:-}" ] || echo "$figures" | tail -n 1 >"$CHAOS_FIGURES"
[ $rc = 0 ] || fail "the soak's checks failed (above)"
echo "PASS chaos_soak"

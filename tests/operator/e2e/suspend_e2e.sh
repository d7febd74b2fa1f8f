#!/usr/bin/env bash
# spec.suspend as a queue (Kueue) drives it (docs/operator.md, "Suspend and queueing"): a job
# created suspended gets no pods; resumed, it runs; suspended mid-run, its pods go and the run is
# interrupted (not failed, no restart counted); resumed again, that run starts over from its
# beginning (the finished run is kept) and the job succeeds with a complete report. No pod
# exists while the job is suspended, and nothing is left at the end.
source "$(dirname "$0")/lib.sh"

start_cluster
JOB=queued
# Run 0 goes straight through; run 1 waits at its first step until step 4 lets it go (lib.sh's
# held_job), so it trains when it is suspended and its rerun is short, however fast the machine.
release_run "$JOB" 0
{
  held_job "$JOB" "{backoffLimit: 0, collectiveTimeoutSeconds: 60, schedulingTimeoutSeconds: 60}" \
    "{nodes: 1, devicesPerNode: 1}" "{nodes: 2, devicesPerNode: 1}"
  echo "  suspend: true"
} | kc apply -f - >/dev/null

status() { kc get bj "$JOB" -o jsonpath="{.status.$1}"; }
condition() { kc get bj "$JOB" -o jsonpath="{.status.conditions[?(@.type==\"$1\")].$2}"; }
suspended_is() { [ "$(condition Suspended status)/$(condition Suspended reason)" = "$1" ]; }
run_phase_is() { [ "$(status "runs[$1].phase")" = "$2" ]; }
set_suspend() { kc patch bj "$JOB" --type merge -p "{\"spec\":{\"suspend\":$1}}" >/dev/null; }
has_event() { [ -n "$(kc get events --field-selector "involvedObject.name=$JOB,reason=$1" -o name)" ]; }
# While suspended, no pod of the job appears (polled for a few seconds).
no_pods_for_a_while() {
  for _ in $(seq 1 8); do
    no_pods_of "$JOB" || fail "a pod exists while the job is suspended: $(kc get pods -l trainbench.dev/job=$JOB -o name)"
    sleep 0.5
  done
}

# 1. Created suspended: condition Suspended, phase Suspended in kubectl get bj, no pods, no Service.
wait_for 30 suspended_is True/Suspended || fail "no Suspended condition: $(status conditions)"
kc get bj "$JOB" | grep -q "Suspended" || fail "kubectl get bj: $(kc get bj "$JOB")"
no_pods_for_a_while
[ -z "$(kc get services -l trainbench.dev/job=$JOB -o name)" ] || fail "a suspended job got a Service"
has_event Suspended || fail "no Suspended event"
[ -z "$(status startTime)" ] || fail "a job that never ran has a startTime"
kc get bj "$JOB"

# 2. Resumed: run 0 runs and succeeds, run 1 starts.
set_suspend false
wait_for 30 suspended_is False/Resumed || fail "not resumed: $(status conditions)"
has_event Resumed || fail "no Resumed event"
wait_for 120 run_phase_is 1 Running || fail "run 1 not running: $(status runs)"
wait_held 120 "$JOB" 1 2 || fail "run 1's ranks do not train: $(status runs) $(ls "$HOLD_DIR")"
run_phase_is 0 Succeeded || fail "run 0: $(status 'runs[0]')"

# 3. Suspended mid-run: run 1's pods go, the run is interrupted (not failed, no restart counted).
set_suspend true
wait_for 30 phase_is "$JOB" Suspended || fail "not suspended: $(status phase)"
wait_for 60 no_pods_of "$JOB" || fail "pods left after suspend: $(kc get pods -o name)"
wait_for 30 no_containers_running || fail "processes left running: $(cluster_stats)"
run_phase_is 0 Succeeded || fail "the finished run 0 was not kept: $(status 'runs[0]')"
[ "$(status 'runs[1].restarts')/$(status 'runs[1].interruptions')/$(status 'runs[1].phase')" = 0/1/Pending ] ||
  fail "run 1 after the suspend: $(status 'runs[1]')"
grep -q "interrupted by spec.suspend" <<<"$(status 'runs[1].message')" || fail "run 1 message: $(status 'runs[1].message')"
has_event RunInterrupted || fail "no RunInterrupted event"
! has_event RunRestarted || fail "a suspend counted as a restart"
no_pods_for_a_while
kc get bj "$JOB"
kc get bj "$JOB" -o jsonpath='{range .status.runs[*]}{.index} {.phase} attempt={.attempt} restarts={.restarts} interruptions={.interruptions} {.message}{"\n"}{end}'

# 4. Resumed: run 1 starts again from its beginning (a new attempt) and the job succeeds.
release_run "$JOB" 1
set_suspend false
wait_phase "$JOB" Succeeded || fail "job did not succeed: $(status phase) $(status conditions)"
[ "$(status 'report.runs[*].phase')" = "Succeeded Succeeded" ] || fail "report runs: $(status 'report.runs[*].phase')"
[ "$(status 'runs[1].attempt')/$(status 'runs[1].restarts')" = 1/0 ] || fail "run 1: $(status 'runs[1]')"
[ "$(status 'report.runs[1].worldSize')" = 2 ] || fail "run 1's report: $(status 'report.runs[1]')"
[ "$(status 'report.runs[1].ranks[*].rank')" = "0 1" ] || fail "run 1's rank rows: $(status 'report.runs[1].ranks')"
[ "$(condition Succeeded status)" = True ] || fail "Succeeded condition"
suspended_is False/Resumed || fail "Suspended condition at the end: $(condition Suspended reason)"
# Exactly these pods were ever created: run 0 once, run 1's interrupted attempt and its rerun.
expected="$JOB-r0-a0-master $JOB-r0-a0-trainer-0 $JOB-r1-a0-master $JOB-r1-a0-trainer-0 $JOB-r1-a0-trainer-1"
expected+=" $JOB-r1-a1-master $JOB-r1-a1-trainer-0 $JOB-r1-a1-trainer-1"
[ "$(pods_created | sort | tr '\n' ' ')" = "$(tr ' ' '\n' <<<"$expected" | sort | tr '\n' ' ')" ] ||
  fail "pods created: $(pods_created | tr '\n' ' ')"

kc get bj "$JOB"
kc get events --field-selector "involvedObject.name=$JOB" --sort-by=.metadata.creationTimestamp \
  -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message

# Nothing left.
wait_for 30 no_pods_of "$JOB" || fail "pods left: $(kc get pods -o name)"
wait_for 30 no_containers_running || fail "processes left running: $(cluster_stats)"
echo "PASS suspend_e2e"

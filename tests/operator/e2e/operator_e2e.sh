#!/usr/bin/env bash
# End to end, as a user would on a cluster: kubectl applies the CRD and a BenchmarkJob; the
# operator creates the master and trainer pods with the right torchrun environment; the
# workers really train (mlp, 2 nodes x 2 processes, gloo); `kubectl get bj` shows Succeeded with
# the printer columns and `-o json` holds the report; deleting the job deletes its pods; an
# invalid job gets Invalid naming the field; a two-run sweep shows its progress while it runs,
# written at the bounded rate (--progress-interval 2 here).
source "$(dirname "$0")/lib.sh"

OPERATOR_FLAGS="--progress-interval 2"
start_cluster

kc apply -f "$EXAMPLE" >/dev/null
JOB=operator-mlp

# The pods of run 1 (2 nodes x 2 devices): every pod's rank environment.
wait_for 120 kc get pod "$JOB-r1-a0-trainer-1" || fail "run 1's pods were not created: $(kc get bj $JOB -o jsonpath='{.status}')"
for n in 0 1; do
  env=$(kc get pod "$JOB-r1-a0-trainer-$n" -o jsonpath='{range .spec.containers[0].env[*]}{.name}={.value}{"\n"}{end}')
  grep -qx "NODE_RANK=$n" <<<"$env" || fail "trainer $n: NODE_RANK: $env"
  grep -qx "WORLD_SIZE=4" <<<"$env" || fail "trainer $n: WORLD_SIZE"
  grep -qx "NPROC_PER_NODE=2" <<<"$env" || fail "trainer $n: NPROC_PER_NODE"
  grep -qx "MASTER_ADDR=$JOB-r1.$NS.svc" <<<"$env" || fail "trainer $n: MASTER_ADDR"
  grep -qx "MASTER_PORT=29500" <<<"$env" || fail "trainer $n: MASTER_PORT"
done
owner=$(kc get pod "$JOB-r1-a0-master" -o jsonpath='{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}')
[ "$owner" = "BenchmarkJob/$JOB" ] || fail "master's owner: $owner"

wait_phase "$JOB" Succeeded || fail "job did not succeed: $(kc get bj $JOB -o jsonpath='{.status}')"

# kubectl get bj: printer columns.
table=$(kc get bj "$JOB")
echo "$table"
grep -q "Succeeded" <<<"$table" || fail "get bj: no Succeeded column"
grep -q "2/2" <<<"$table" || fail "get bj: no runs column"
# Best ex/s a whole number, Lowest eff. the sweep's lowest scaling efficiency (two decimals).
read -r percent best speedup lowest <<<"$(awk 'NR == 2 { print $4, $5, $6, $7 }' <<<"$table")"
[ "$percent" = "100%" ] || fail "get bj: Progress of a succeeded job: $percent"
grep -q "LOWEST EFF." <<<"$table" || fail "get bj: no Lowest eff. column"
[[ "$best" =~ ^[0-9]+$ ]] || fail "get bj: Best ex/s is not whole: $best"
# ... rounded, not truncated (the operator rounds; the API server would truncate a fraction).
[ "$best" = "$(kc get bj "$JOB" -o jsonpath='{.status.bestExamplesPerSec}')" ] || fail "get bj: Best ex/s $best"
[ "$best" = "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[*].examplesPerSec.p50}' |
  tr ' ' '\n' | awk 'NR == 1 || $1 > m { m = $1 } END { printf "%.0f", m }')" ] || fail "get bj: Best ex/s $best is not the report's best"
[[ "$speedup" =~ ^[0-9]+(\.[0-9]{1,2})?$ ]] || fail "get bj: Speedup not two decimals: $speedup"
[ "$speedup" = "$(kc get bj "$JOB" -o jsonpath='{.status.bestSpeedup}')" ] || fail "get bj: Speedup $speedup"
[ "$lowest" = "$(kc get bj "$JOB" -o jsonpath='{.status.lowestEfficiency}')" ] || fail "get bj: Lowest eff. $lowest"
[[ "$lowest" =~ ^[0-9]+(\.[0-9]{1,2})?$ ]] || fail "get bj: Lowest eff. not two decimals: $lowest"
wide=$(kc get bj "$JOB" -o wide) # not piped into grep -q: kubectl's second write would meet a closed pipe
grep -q "NOISY" <<<"$wide" || fail "get bj -o wide: no Noisy column: $wide"
# The verdicts in the report, and a BelowTarget Event when a run is below the 0.8 target.
for run in 0 1; do
  verdict=$(kc get bj "$JOB" -o jsonpath="{.status.report.runs[$run].noise.verdict}")
  [[ "$verdict" =~ ^(quiet|noisy)$ ]] || fail "run $run noise verdict: $verdict"
done
reasons=$(kc get events --field-selector involvedObject.name=$JOB -o jsonpath='{.items[*].reason}')
if awk -v e="$lowest" 'BEGIN { exit !(e < 0.8) }'; then
  [ "$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[1].belowTarget}')" = true ] || fail "run 1 not belowTarget"
  grep -qw BelowTarget <<<"$reasons" || fail "no BelowTarget event: $reasons"
fi
noisy=$(kc get bj "$JOB" -o jsonpath='{.status.noisyRuns}')
[ "$noisy" = 0 ] || grep -qw Noisy <<<"$reasons" || fail "$noisy noisy runs but no Noisy event: $reasons"

# The report in status: every run succeeded with ordered percentiles, 4 rank rows in run 1.
report_runs=$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[*].phase}')
[ "$report_runs" = "Succeeded Succeeded" ] || fail "report runs: $report_runs"
read -r p50 p75 p90 p95 <<<"$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[1].secPerIter.p50} {.status.report.runs[1].secPerIter.p75} {.status.report.runs[1].secPerIter.p90} {.status.report.runs[1].secPerIter.p95}')"
awk -v a="$p50" -v b="$p75" -v c="$p90" -v d="$p95" 'BEGIN { exit !(a > 0 && a <= b && b <= c && c <= d) }' || fail "percentiles: $p50 $p75 $p90 $p95"
ranks=$(kc get bj "$JOB" -o jsonpath='{.status.report.runs[1].ranks[*].rank}')
[ "$ranks" = "0 1 2 3" ] || fail "rank rows: $ranks"
gen=$(kc get bj "$JOB" -o jsonpath='{.metadata.generation}')
[ "$(kc get bj "$JOB" -o jsonpath='{.status.observedGeneration}')" = "$gen" ] || fail "observedGeneration"
kc get bj "$JOB" -o jsonpath='{.status.conditions[?(@.type=="Succeeded")].status}' | grep -qx True || fail "Succeeded condition"
kc get events --field-selector involvedObject.name=$JOB -o jsonpath='{.items[*].reason}' | grep -q RunSucceeded || fail "events"

# cleanPodPolicy All: no pod of the finished job is left.
wait_for 30 no_pods_of "$JOB" || fail "pods left: $(kc get pods -l trainbench.dev/job=$JOB -o name)"

# An invalid job: Invalid condition with the field path, and no pods.
sed -e "s/name: operator-mlp/name: bad-job/" -e "s/devicesPerNode: 2}/devicesPerNode: 0}/" "$EXAMPLE" >"$WORK/bad.yaml"
kc apply --validate=false -f "$WORK/bad.yaml" >/dev/null 2>"$WORK/apply-bad.err" || true
if kc get bj bad-job >/dev/null 2>&1; then
  wait_for 30 phase_is bad-job Invalid || fail "bad job not Invalid: $(kc get bj bad-job -o jsonpath='{.status}')"
  msg=$(kc get bj bad-job -o jsonpath='{.status.conditions[?(@.type=="Invalid")].message}')
  grep -q "spec.sweep\[1\].devicesPerNode" <<<"$msg" || fail "Invalid message: $msg"
  [ -z "$(kc get pods -l trainbench.dev/job=bad-job -o name)" ] || fail "an invalid job got pods"
else
  # The API server's schema rejected it first (minimum: 1): that names the field too.
  grep -q "devicesPerNode" "$WORK/apply-bad.err" || fail "rejection does not name the field: $(cat "$WORK/apply-bad.err")"
fi

# Progress (docs/operator.md, "Progress"): every version of the job's status, from a watch
# started before the job exists. The percent never decreases; while a run measures, status shows
# its step of steps, repeat of repeats, rate and an estimate; the job ends at 100% without a
# current run. Versions that change nothing but the progress are at least the interval (2 s)
# apart, and the status writes the API server's audit log counts are no more than the other changes
# plus one per interval.
"$KUBECTL" get bj -w -o json >"$WORK/watch.json" 2>"$WORK/watch.err" &
WATCH_PID=$!
PIDS+=($WATCH_PID)
# Long enough for several 2 s progress polls inside each run's measuring on any machine: the
# polyglot machines run a step in 0.7 ms, and at 1500 steps a repeat was over within one poll
# (CI-like run, 2026-11-28: one Measure version, between polls, so no rate yet).
STEPS=10000
mlp_job progress "$STEPS" "{backoffLimit: 0, collectiveTimeoutSeconds: 60}" "{nodes: 1, devicesPerNode: 1, paradigm: none}" \
  "{nodes: 2, devicesPerNode: 1}" >"$WORK/progress.yaml"
wait_for 20 grep -q operator-mlp "$WORK/watch.json" || fail "the watch did not start: $(cat "$WORK/watch.err")"
kc apply -f "$WORK/progress.yaml" >/dev/null
wait_phase progress Succeeded || fail "progress job did not succeed: $(kc get bj progress -o jsonpath='{.status}')"
kc get bj progress
sleep 1 # the watch brings the last version
kill "$WATCH_PID" 2>/dev/null || true
V="$WORK/progress.versions"
jq -c 'select(.metadata.name == "progress") | .status // {}' "$WORK/watch.json" >"$V"
jq -c '.progressDetail // {} | [.percent, .currentRun.index, .currentRun.stage, .currentRun.repeat, .currentRun.step,
  .estimatedRemainingSeconds, .lastUpdateTime]' "$V"
percents=$(jq -r '.progressDetail.percent // empty' "$V" | tr '\n' ' ')
jq -s -e '[.[] | .progressDetail.percent // empty] | . as $p | all(range(1; length); $p[.] >= $p[. - 1])' "$V" \
  >/dev/null || fail "progress decreased: $percents"
mid=$(jq -c --argjson steps "$STEPS" 'select(.phase == "Running") | .progressDetail |
  select(.percent > 0 and .percent < 100 and .estimatedRemainingSeconds != null and .currentRun.stage == "Measure" and
         .currentRun.steps == $steps and .currentRun.step <= $steps and .currentRun.repeats == 2 and
         .currentRun.repeat >= 1 and .currentRun.secondsPerStep > 0)' "$V" | sed -n 1p)
[ -n "$mid" ] || fail "no version showed a measuring run with its step, rate and an estimate: $percents"
echo "while running: $mid"
jq -s -e 'last | .phase == "Succeeded" and .percentComplete == "100%" and .progressDetail.percent == 100 and
  .progressDetail.estimatedRemainingSeconds == 0 and (.progressDetail | has("currentRun") | not)' "$V" >/dev/null ||
  fail "the job did not end at 100% without a current run: $(tail -1 "$V")"
# Versions where only the progress changed, and their spacing.
rest='del(.progressDetail, .percentComplete)'
gaps=$(jq -s -r "[range(1; length) as \$i | select((.[\$i] | $rest) == (.[\$i - 1] | $rest) and .[\$i] != .[\$i - 1]) |
  (.[\$i].progressDetail.lastUpdateTime | fromdate) - (.[\$i - 1].progressDetail.lastUpdateTime | fromdate)] | map(tostring) | join(\" \")" "$V")
others=$(jq -s "[range(1; length) as \$i | select((.[\$i] | $rest) != (.[\$i - 1] | $rest))] | length" "$V")
[ -n "$gaps" ] || fail "no version changed only the progress (the check below would prove nothing)"
for g in $gaps; do [ "$g" -ge 2 ] || fail "progress-only writes $g s apart (interval 2 s): $gaps"; done
read -r writes span <<<"$(jq -s -r '[.[] | select(.verb == "patch" and .resource == "benchmarkjobs" and
  .subresource == "status" and .name == "progress" and .code == 200) | .ts | sub("\\.[0-9]+Z$"; "Z") | fromdate] |
  "\(length) \(if length > 0 then last - first else 0 end)"' <(audit_log))"
echo "status writes: $writes in $span s; $others versions changed more than progress; progress-only gaps (s): $gaps"
[ "$writes" -le $((others + span / 2 + 1)) ] || fail "$writes status writes in $span s: more than $others + $span / 2 + 1"

# Deleting a running job deletes its pods (ownerReferences).
sed -e "s/name: operator-mlp/name: long-job/" -e "s/measureSteps: 10/measureSteps: 100000/" "$EXAMPLE" >"$WORK/long.yaml"
kc apply -f "$WORK/long.yaml" >/dev/null
wait_for 60 kc get pod long-job-r0-a0-master || fail "long job's pods not created"
kc delete bj long-job --wait=false >/dev/null
wait_for 60 no_pods_of long-job || fail "pods of a deleted job remain"
echo "PASS operator_e2e"

#!/usr/bin/env bash
# Metrics end to end with a real Prometheus (upstream's 3.16, built by tests/metrics/prometheus.sh)
# on the real control plane (tests/controlplane; lib.sh's namespace, chart, operator and node agent).
# Prometheus finds the workers as a user's Prometheus would: kubernetes_sd_configs (role pod) on
# the real API server, restricted to the test's namespace, with the token of a ServiceAccount of
# its own whose Role may only list and watch pods there, and the worker job taken verbatim from
# docs/install.md ("Metrics with a plain Prometheus"). The operator runs as a local process
# (lib.sh), not as a pod, so it is a static target. Prometheus scrapes the workers of a 2-run job
# (1 and 2 ranks, DDP, gloo) and the operator.
# Checks: Prometheus watched the namespace's pods as its ServiceAccount (audit log, nothing
# refused, the Role allows nothing more) and kept exactly the trainer pods' metrics-<i> ports at
# the pods' own IPs (the master's ports discovered and dropped); every documented metric is in
# Prometheus and every served one documented; the workers' values agree with the job's report
# (steps and examples exactly; the step-time histogram with the report's per-repeat p50 and p95
# exactly, at each bucket bound; the mean step time at least 0.9 x the report's p50 and at most
# 1.1 x its p95, or within one sd of the p50 by the report's step CV on a busy machine;
# examples/s consistent with the mean); the operator's counters agree with the API server's audit
# log; `promtool check metrics` is clean on both expositions; /healthz and /readyz; and every
# panel query of the Grafana dashboard returns data (GPU panels excepted: no GPU here).
# Needs: the lib.sh variables, OBSERVABILITY_DOC, DASHBOARD_DIR (optional); PROMETHEUS, PROMTOOL
# (default: tests/metrics/prometheus.sh's), INSTALL_DOC (default: REPO/docs/install.md).
# Upstream's Prometheus (tests/metrics/prometheus.sh builds it; the ctest fixture
# metrics.prometheus.build runs that): Debian's has no Kubernetes service discovery. Found before
# lib.sh points HOME at the work directory.
prom_bin=$(bash "$(dirname "$0")/prometheus.sh" --path) || prom_bin=""
PROMETHEUS=${PROMETHEUS:-${prom_bin:+$prom_bin/prometheus}}
PROMTOOL=${PROMTOOL:-${prom_bin:+$prom_bin/promtool}}
source "$(dirname "$0")/../operator/e2e/lib.sh"

[ -n "$PROMETHEUS" ] && [ -n "$PROMTOOL" ] || fail "Prometheus is not built: run tests/metrics/prometheus.sh"
"$PROMETHEUS" --version 2>&1 | head -1
INSTALL_DOC=${INSTALL_DOC:-$REPO/docs/install.md}

# Each worker waits before its warm-up until Prometheus has scraped it once (up to 60 s): the runs
# train for seconds, less than Prometheus takes to find a new pod (its discovery and scrape
# manager pass targets on at most every 5 s), and the dashboard's rate() panels need a sample
# from before the steps and one after, whatever the machine's speed.
# Workers serve their last values 10 s after their run, through the cleanup's SIGTERM; the
# operator gives trainer pods a grace of 30 s for it. The node agent honours a pod's grace up to
# --max-grace (default 3 s): 30 here, as a kubelet would honour it all.
cat >"$WORK/nodeagent" <<SH
#!/bin/sh
exec "$NODEAGENT" --max-grace 30 "\$@"
SH
chmod +x "$WORK/nodeagent"
NODEAGENT=$WORK/nodeagent
start_cluster

# The operator's metrics and probe ports (it logs what it bound; port 0 picked them).
wait_for 20 grep -q "serving metrics on" "$WORK/operator.log" || fail "operator serves no metrics"
OP_METRICS=$(sed -n 's|.*serving metrics on \(.*\)/metrics|\1|p' "$WORK/operator.log" | head -1)
OP_HEALTH=$(sed -n 's|.*serving /healthz and /readyz on \(.*\)|\1|p' "$WORK/operator.log" | head -1)
wait_for 30 curl -sf "http://$OP_HEALTH/readyz" || fail "operator /readyz: $(curl -s "http://$OP_HEALTH/readyz")"
[ "$(curl -s "http://$OP_HEALTH/healthz")" = "ok" ] || fail "operator /healthz"

# Prometheus's identity on the cluster: a ServiceAccount whose Role may list and watch pods in
# this namespace, nothing else (what kubernetes_sd role pod needs), and a token for it.
PROM_SA=prometheus
kc create serviceaccount "$PROM_SA" >/dev/null
kc create role prometheus-sd --verb=list,watch --resource=pods >/dev/null
kc create rolebinding prometheus-sd --role=prometheus-sd --serviceaccount="$NS:$PROM_SA" >/dev/null
kc create token "$PROM_SA" --duration 1h >"$WORK/prometheus.token"
PROM_USER="system:serviceaccount:$NS:$PROM_SA"
[ "$(kc auth can-i watch pods --as "$PROM_USER")" = yes ] || fail "the Role does not let Prometheus watch pods"
for denied in "list pods -n default" "list pods --all-namespaces" "get secrets" "list nodes"; do
  # shellcheck disable=SC2086
  [ "$(kc auth can-i $denied --as "$PROM_USER" 2>/dev/null)" = no ] || fail "Prometheus may $denied: more than least privilege"
done
API_SERVER=$("$KUBECTL" config view --raw -o jsonpath='{.clusters[0].cluster.server}')

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PROM_PORT=$(free_port)
PROM="http://127.0.0.1:$PROM_PORT"
# The worker job is docs/install.md's, with where the API server is and how to reach it filled in
# (a Prometheus outside the cluster; in a pod, kubernetes_sd finds the in-cluster ones itself).
# Scrape interval 1 s instead of its 5 s: the runs are short and the rate() panels want samples.
python3 - "$INSTALL_DOC" "$OP_METRICS" "$API_SERVER" "$WORK/prometheus.token" "$CONTROLPLANE_DIR/pki/ca.crt" "$NS" \
  >"$WORK/prometheus.yml" <<'PY' || fail "no Prometheus config from $INSTALL_DOC"
import re, sys, yaml
doc, op_metrics, api_server, token, ca, ns = sys.argv[1:]
section = open(doc).read().split("## Metrics with a plain Prometheus", 1)[1]
documented = yaml.safe_load(re.search(r"```yaml\n(.*?)```", section, re.S).group(1))
workers = next(j for j in documented["scrape_configs"] if j["job_name"] == "trainbench-workers")
assert workers["kubernetes_sd_configs"] == [{"role": "pod"}], workers["kubernetes_sd_configs"]
workers["scrape_interval"] = "1s"
workers["kubernetes_sd_configs"][0].update({
    "api_server": api_server,
    "authorization": {"credentials_file": token},
    "tls_config": {"ca_file": ca},
    "namespaces": {"names": [ns]},
})
config = {
    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
    "scrape_configs": [{"job_name": "trainbench-operator", "static_configs": [{"targets": [op_metrics]}]}, workers],
}
yaml.safe_dump(config, sys.stdout, sort_keys=False)
PY
"$PROMTOOL" check config "$WORK/prometheus.yml" >/dev/null || fail "promtool check config: $("$PROMTOOL" check config "$WORK/prometheus.yml" 2>&1)"
"$PROMETHEUS" --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
PIDS+=($!)
wait_for 30 curl -sf "$PROM/-/ready" || fail "prometheus did not start: $(tail -5 "$WORK/prometheus.log")"

# query PROMQL: the result vector (JSON) of an instant query.
query() { curl -sf --data-urlencode "query=$1" "$PROM/api/v1/query" | jq -c '.data.result'; }
# scalar PROMQL: the single value of an instant query ("" when none).
scalar() { curl -sf --data-urlencode "query=$1" "$PROM/api/v1/query" | jq -r '.data.result[0].value[1] // ""'; }
# scalar_is PROMQL VALUE: for wait_for, which re-runs it (a "$(scalar ...)" argument would be
# evaluated once, before the wait).
scalar_is() { [ "$(scalar "$1")" = "$2" ]; }
# approx A B TOL: |A-B| <= TOL*|B|.
approx() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; if (b < 0) b = -b; exit !(d <= t * b) }'; }
# targets STATE: Prometheus's active or dropped targets of the workers' job (JSON array).
targets() {
  curl -sf "$PROM/api/v1/targets?state=$1" |
    jq -c --arg s "$1" '.data[$s + "Targets"] | map(select((.scrapePool // .discoveredLabels.job) == "trainbench-workers"))'
}
# worker_target PORT_NAME POD: the active target of that pod's port (empty when none).
worker_target() {
  targets active | jq -c --arg p "$1" --arg pod "$2" \
    '.[] | select(.discoveredLabels.__meta_kubernetes_pod_container_port_name == $p and .labels.pod == $pod)'
}
has_worker_target() { [ -n "$(worker_target "$1" "$2")" ]; }

JOB=prom-e2e
WARMUP=3 MEASURE=40 REPEATS=2 BATCH=64
cat >"$WORK/job.yaml" <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: $JOB}
spec:
  benchmark:
    model: mlp
    mlp: {inputSize: 1024, hiddenSizes: [2048, 2048], numClasses: 10}
    batchSizePerDevice: $BATCH
    warmupSteps: $WARMUP
    measureSteps: $MEASURE
    repeats: $REPEATS
    threadsPerProcess: 1
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: ddp}
    - {nodes: 1, devicesPerNode: 2, paradigm: ddp}
  masterPort: 29500
  template:
    image: trainbench/worker:0.1.0
    env: [{name: TRAINBENCH_METRICS_LINGER_SECONDS, value: "10"}, {name: TRAINBENCH_METRICS_AWAIT_SCRAPE_SECONDS, value: "60"}]
  runPolicy: {backoffLimit: 0, cleanPodPolicy: All}
YAML
START=$(date +%s)
kc apply -f "$WORK/job.yaml" >/dev/null

# While run 0 trains: Prometheus discovered its trainer pod through the API server and scrapes its
# metrics-0 port at the pod's IP, labelled with namespace and pod as the relabeling says; the
# master pod was discovered too, and its ports (store, progress) dropped.
TRAINER0=$JOB-r0-a0-trainer-0
wait_for 120 has_worker_target metrics-0 "$TRAINER0" ||
  fail "Prometheus discovered no worker target of $TRAINER0: active $(targets active), dropped $(targets dropped | jq -c 'map(.discoveredLabels.__address__)')"
target=$(worker_target metrics-0 "$TRAINER0")
pod_ip=$(kc get pod "$TRAINER0" -o jsonpath='{.status.podIP}')
[ -n "$pod_ip" ] || fail "$TRAINER0 has no pod IP"
[ "$(jq -r '.labels.instance' <<<"$target")" = "$pod_ip:9400" ] || fail "worker target $target is not the pod's $pod_ip:9400"
[ "$(jq -r '.labels.namespace' <<<"$target")" = "$NS" ] || fail "worker target's namespace label: $target"
# dropped_master_ports: the container ports of a master pod of the job that Prometheus discovered
# and dropped (its store and progress ports), as one line "POD progress,store" per pod.
dropped_master_ports() {
  targets dropped | jq -r --arg j "$JOB" '[.[] | .discoveredLabels | select(.__meta_kubernetes_pod_name // "" |
    test("^" + $j + "-r[0-9]+-a[0-9]+-master$"))] | group_by(.__meta_kubernetes_pod_name)[] |
    "\(.[0].__meta_kubernetes_pod_name) \(map(.__meta_kubernetes_pod_container_port_name) | sort | join(","))"'
}
master_ports_dropped() { grep -q ' progress,store$' <<<"$(dropped_master_ports)"; }
active_ports=$(targets active | jq -r '[.[].discoveredLabels.__meta_kubernetes_pod_container_port_name] | unique | join(",")')
[[ "$active_ports" =~ ^(metrics-[0-9]+,?)+$ ]] || fail "active worker targets on ports other than metrics-<i>: $active_ports"
wait_for 60 master_ports_dropped || fail "no master pod's ports were discovered and dropped: '$(dropped_master_ports)'"
# promtool accepts the worker's exposition as is. (Fetched once Prometheus has scraped the target:
# the worker's wait before its warm-up ends at its first scrape, which is Prometheus's to make.)
scrape_url=$(jq -r '.scrapeUrl' <<<"$target")
scraped_up() { [ "$(worker_target metrics-0 "$TRAINER0" | jq -r '.health')" = up ]; }
wait_for 60 scraped_up || fail "Prometheus did not scrape $scrape_url: $(worker_target metrics-0 "$TRAINER0")"
wait_for 60 curl -sf -o "$WORK/worker.prom" "$scrape_url" || fail "scraping the worker at $scrape_url"
"$PROMTOOL" check metrics <"$WORK/worker.prom" >"$WORK/promtool-worker.txt" 2>&1 ||
  fail "promtool check metrics (worker): $(cat "$WORK/promtool-worker.txt")"
curl -sf "http://$OP_METRICS/metrics" >"$WORK/operator.prom" || fail "scraping the operator"
"$PROMTOOL" check metrics <"$WORK/operator.prom" >"$WORK/promtool-operator.txt" 2>&1 ||
  fail "promtool check metrics (operator): $(cat "$WORK/promtool-operator.txt")"

wait_phase "$JOB" Succeeded || fail "job did not succeed: $(kc get bj $JOB -o jsonpath='{.status}')"
# The last values of run 1's workers reach Prometheus while they linger.
sel="benchmark_job=\"$JOB\""
wait_for 60 scalar_is "count(last_over_time(trainbench_steps_total{$sel,run=\"1\"}[10m]) == $((WARMUP + REPEATS * MEASURE)))" 2 ||
  fail "Prometheus never saw run 1 finish: $(query "last_over_time(trainbench_steps_total{$sel}[10m])")"

# Each of the 3 ranks waited before its warm-up until it was scraped: Prometheus holds a sample of
# every rank from before its first step.
wait_for 10 scalar_is "count(min_over_time(trainbench_steps_total{$sel}[10m]) == 0)" 3 ||
  fail "not every rank was scraped before its first step: $(query "min_over_time(trainbench_steps_total{$sel}[10m])")"

# Every documented worker and operator metric is in Prometheus (GPU ones need a GPU).
names=$(curl -sf "$PROM/api/v1/label/__name__/values" | jq -r '.data[]')
documented=$(grep -o '`trainbench_[a-z_]*`' "$OBSERVABILITY_DOC" | tr -d '`' | sort -u)
[ -n "$documented" ] || fail "no metric names found in $OBSERVABILITY_DOC"
for m in $documented; do
  case $m in *gpu*) continue ;; esac
  grep -qx "$m\(_bucket\)\?" <<<"$names" || fail "documented metric $m is not in Prometheus"
done
for m in $(grep -o '^trainbench_[a-z_]*' "$WORK/worker.prom" "$WORK/operator.prom" | cut -d: -f2 | sed 's/_\(bucket\|sum\|count\)$//' | sort -u); do
  grep -q "\`$m\`" "$OBSERVABILITY_DOC" || fail "metric $m is served but not documented in docs/observability.md"
done

# Workers vs the report, per run.
for run in 0 1; do
  world=$((run + 1))
  lo="$sel,run=\"$run\""
  n=$(scalar "count(last_over_time(trainbench_world_size{$lo}[10m]) == $world)")
  [ "$n" = "$world" ] || fail "run $run: $n ranks with trainbench_world_size $world"
  for expr in "trainbench_steps_total $((WARMUP + REPEATS * MEASURE))" "trainbench_steps_planned $((WARMUP + REPEATS * MEASURE))" \
              "trainbench_step_duration_seconds_count $((REPEATS * MEASURE))" "trainbench_examples_total $((REPEATS * MEASURE * BATCH))"; do
    read -r metric want <<<"$expr"
    got=$(scalar "count(last_over_time(${metric}{$lo}[10m]) == $want)")
    [ "$got" = "$world" ] || fail "run $run: $metric: $(query "last_over_time(${metric}{$lo}[10m])"), want $want on each of $world ranks"
  done
  report=$(kc get bj "$JOB" -o jsonpath="{.status.report.runs[$run]}")
  read -r p50 p95 report_eps cv <<<"$(jq -r '"\(.secPerIter.p50) \(.secPerIter.p95) \(.examplesPerSec.p50) \(.noise.stepCvPercent // "")"' <<<"$report")"
  # The step-time histogram in Prometheus holds the steps the report summarises, exactly: the
  # report's p-th percentile of a repeat (linear interpolation over its n steps, all ranks
  # pooled) has floor(p (n-1) / 100) + 1 steps at or below it, so a bucket bound below every
  # repeat's percentile counts at most the sum of those, and one at or above every repeat's at
  # least that. Whatever else ran on the machine, the counts must agree.
  buckets=$(query "sum by (le) (last_over_time(trainbench_step_duration_seconds_bucket{$lo}[10m]))" |
    jq -c 'map({le: .metric.le, n: (.value[1] | tonumber)})')
  verdicts=$(jq -rn --argjson b "$buckets" --argjson r "$report" --argjson steps "$((world * MEASURE))" '
    [50, 95] as $qs | $qs[] as $q |
    ($r.repeats | map(if $q == 50 then .p50 else .p95 end)) as $ps |
    ([$r.repeats[] | ($q * ($steps - 1) / 100 | floor) + 1] | add) as $at |
    $b[] | select(.le != "+Inf") | (.le | tonumber) as $le |
    if $le < ($ps | min) and .n > $at then "p\($q): \(.n) steps <= \($le) s, below every repeat'"'"'s p\($q) \($ps): at most \($at)"
    elif $le >= ($ps | max) and .n < $at then "p\($q): \(.n) steps <= \($le) s, above every repeat'"'"'s p\($q) \($ps): at least \($at)"
    else empty end')
  [ -z "$verdicts" ] || fail "run $run: Prometheus's step histogram disagrees with the report: $verdicts (buckets $buckets)"
  # Mean step time from Prometheus (all ranks' step-time sums over their steps) against the
  # report's percentiles of the same steps: the mean of right-skewed step times lies above their
  # median, and below their 95th percentile unless a few steps are far out (a core taken by other
  # work for a while); 10% slack on either side. Far-out steps show in the report's step CV (sd /
  # mean of a repeat's steps, ranks pooled; the median over repeats), and a mean lies within one
  # sd of the median: mean <= p50 / (1 - CV), with the worse of two repeats' CVs at most twice
  # their median. The upper bound is the larger of the two, so a busy machine does not fail it
  # (with a CV of 50% or more it is none: then the histogram's buckets below bound the mean).
  prom_mean=$(scalar "sum(last_over_time(trainbench_step_duration_seconds_sum{$lo}[10m])) / sum(last_over_time(trainbench_step_duration_seconds_count{$lo}[10m]))")
  [ -n "$prom_mean" ] && [ -n "$p95" ] && [ -n "$cv" ] || fail "run $run: step time missing (prometheus '$prom_mean', report '$p50' '$p95' CV '$cv')"
  p50_max=$(jq -r '.repeats | map(.p50) | max' <<<"$report")
  upper=$(awk -v p95="$p95" -v p50="$p50_max" -v cv="$cv" 'BEGIN {
    u = 1.1 * p95; c = 2 * cv / 100; if (c >= 1) u = 1e9; else if (1.1 * p50 / (1 - c) > u) u = 1.1 * p50 / (1 - c); print u }')
  awk -v m="$prom_mean" -v a="$p50" -v u="$upper" 'BEGIN { exit !(m >= 0.9 * a && m <= u) }' ||
    fail "run $run: mean step $prom_mean s from Prometheus is outside [0.9 x report p50 $p50, $upper] (p95 $p95, step CV $cv%)"
  # And the step-time sum is the sum of those steps: each step lies between its bucket's bounds.
  step_sum=$(scalar "sum(last_over_time(trainbench_step_duration_seconds_sum{$lo}[10m]))")
  read -r sum_lo sum_hi <<<"$(jq -r --argjson b "$buckets" -n '$b | map({le: (if .le == "+Inf" then 1e300 else (.le | tonumber) end), n})
    | sort_by(.le) | [foreach .[] as $x ({prev: 0, n: 0, lo: 0, hi: 0};
        {prev: $x.le, n: $x.n, lo: (.lo + ($x.n - .n) * .prev), hi: (.hi + ($x.n - .n) * $x.le)})] | last | "\(.lo) \(.hi)"')"
  awk -v s="$step_sum" -v a="$sum_lo" -v b="$sum_hi" 'BEGIN { exit !(s >= a && s <= b) }' ||
    fail "run $run: step-time sum $step_sum s is outside what the histogram's buckets allow [$sum_lo, $sum_hi]"
  # Examples/s from Prometheus' counters: all ranks' examples over the slowest rank's step time
  # is the global batch at that rank's mean step.
  slowest_mean=$(scalar "max(last_over_time(trainbench_step_duration_seconds_sum{$lo}[10m]) / last_over_time(trainbench_step_duration_seconds_count{$lo}[10m]))")
  prom_eps=$(scalar "sum(last_over_time(trainbench_examples_total{$lo}[10m])) / max(last_over_time(trainbench_step_duration_seconds_sum{$lo}[10m]))")
  approx "$prom_eps" "$(awk -v m="$slowest_mean" -v n="$((BATCH * world))" 'BEGIN { print n / m }')" 0.001 ||
    fail "run $run: examples/s $prom_eps does not match $((BATCH * world)) examples per mean step $slowest_mean of the slowest rank"
  echo "run $run: Prometheus mean step $prom_mean s (bound $upper), $prom_eps examples/s; report p50 $p50 s, p95 $p95 s, step CV $cv%, $report_eps examples/s; histogram $buckets"
  # The compute / communication split adds up to the measured step time.
  split=$(scalar "sum(last_over_time(trainbench_compute_seconds_total{$lo}[10m]) + last_over_time(trainbench_communication_seconds_total{$lo}[10m]))")
  steps=$(scalar "sum(last_over_time(trainbench_step_duration_seconds_sum{$lo}[10m]))")
  approx "$split" "$steps" 0.001 || fail "run $run: compute + communication $split != step time $steps"
done
# All-reduce bytes: none at world size 1, gradients every step at 2.
[ "$(scalar "max(last_over_time(trainbench_allreduce_bytes_total{$sel,run=\"0\"}[10m]))")" = 0 ] || fail "run 0 all-reduced bytes"
awk -v b="$(scalar "min(last_over_time(trainbench_allreduce_bytes_total{$sel,run=\"1\"}[10m]))")" 'BEGIN { exit !(b > 0) }' || fail "run 1 all-reduced nothing"

# The operator vs the API server's audit log and the job.
[ "$(scalar 'trainbench_operator_runs_started_total')" = 2 ] || fail "runs started: $(query trainbench_operator_runs_started_total)"
[ "$(scalar 'trainbench_operator_runs_succeeded_total')" = 2 ] || fail "runs succeeded"
[ "$(scalar 'trainbench_operator_runs_failed_total')" = 0 ] || fail "runs failed"
wait_for 10 scalar_is 'trainbench_operator_benchmarkjobs{phase="Succeeded"}' 1 || fail "jobs by phase: $(query trainbench_operator_benchmarkjobs)"
[ "$(scalar 'trainbench_operator_leader')" = 1 ] || fail "leader"
[ "$(scalar 'trainbench_operator_informers_synced')" = 1 ] || fail "informers synced"
audit_pods=$(pods_created | wc -l)
wait_for 10 scalar_is 'sum(trainbench_operator_api_requests_total{verb="create",resource="pods",code="201"})' "$audit_pods" ||
  fail "pods created: operator says $(scalar 'sum(trainbench_operator_api_requests_total{verb="create",resource="pods",code="201"})'), audit log $audit_pods"
status_patches() {
  audit_log | jq -r --arg u "system:serviceaccount:$NS:$OPERATOR_SA" 'select(.user == $u and .verb == "patch" and
    .resource == "benchmarkjobs" and .subresource == "status" and .code == 200) | .name' | wc -l
}
op_patches() { scalar 'sum(trainbench_operator_api_requests_total{verb="patch",resource="benchmarkjobs/status",code="200"})'; }
patches_agree() { [ "$(op_patches)" = "$(status_patches)" ]; }
wait_for 10 patches_agree || fail "status patches: operator $(op_patches), audit log $(status_patches)"
awk -v n="$(scalar 'sum(trainbench_operator_reconcile_total{result="success"})')" 'BEGIN { exit !(n >= 3) }' || fail "reconciles"
awk -v n="$(scalar 'histogram_quantile(0.95, sum by (le) (rate(trainbench_operator_reconcile_duration_seconds_bucket[5m])))')" 'BEGIN { exit !(n > 0) }' ||
  fail "reconcile p95"
[ -n "$(scalar 'trainbench_operator_workqueue_depth')" ] || fail "queue depth"
[ -n "$(scalar 'sum(trainbench_operator_watch_restarts_total)')" ] || fail "watch restarts"

# Prometheus's discovery went through the real API server as its ServiceAccount: it watched the
# namespace's pods (client-go 1.37's informers list them through the watch itself,
# sendInitialEvents=true, so there may be no separate list; a watch still running has only its
# ResponseStarted entry), and was refused nothing.
sd_requests=$(jq -r --arg u "$PROM_USER" --arg ns "$NS" 'select(.user.username == $u and .objectRef.resource == "pods") |
  "\(.verb) \(.objectRef.namespace) \(.responseStatus.code)"' "$CONTROLPLANE_DIR/audit.log" | sort | uniq -c)
grep -q " watch $NS 200\$" <<<"$sd_requests" || fail "Prometheus did not watch the namespace's pods as $PROM_USER: $sd_requests"
grep -v -q -e " watch $NS 200\$" -e " list $NS 200\$" <<<"$sd_requests" &&
  fail "Prometheus asked for pods other than by list and watch of the namespace: $sd_requests"
refused=$(jq -c --arg u "$PROM_USER" 'select(.user.username == $u and .responseStatus.code == 403) | {verb, objectRef}' \
  "$CONTROLPLANE_DIR/audit.log" | sort -u)
[ -z "$refused" ] || fail "the API server refused Prometheus (403): $refused"

# Every panel of the Grafana dashboard returns data over the job's time range.
if [ -n "${DASHBOARD_DIR:-}" ]; then
  END=$(date +%s)
  node "$DASHBOARD_DIR/panel_queries.js" --var "benchmark_job=$JOB" --var 'run=.*' --var 'rank=.*' \
    --range "$((END - START + 60))s" >"$WORK/panel_queries.jsonl" || fail "panel_queries.js failed"
  total=0
  while IFS= read -r line; do
    expr=$(jq -r '.expr' <<<"$line")
    title=$(jq -r '.title' <<<"$line")
    gpu=$(jq -r '.gpu // false' <<<"$line")
    n=$(curl -sf --data-urlencode "query=$expr" --data-urlencode "start=$((START - 30))" --data-urlencode "end=$END" \
          --data-urlencode "step=2" "$PROM/api/v1/query_range" | jq '.data.result | length')
    [ -n "$n" ] || fail "panel \"$title\": query failed: $expr"
    if [ "$gpu" = true ]; then continue; fi
    [ "$n" -gt 0 ] || fail "panel \"$title\" returns no data: $expr"
    total=$((total + 1))
  done <"$WORK/panel_queries.jsonl"
  [ "$total" -ge 10 ] || fail "only $total dashboard queries checked"
  echo "dashboard: $total panel queries returned data"
fi
echo "PASS"

#!/usr/bin/env bash
# Metrics end to end with a real Prometheus (Debian's 2.42): kubesim runs the pods and writes
# the running pods' ports as file-based service discovery with the same __meta_kubernetes_pod_*
# labels as Prometheus's kubernetes_sd (role: pod), so the scrape config below is the one
# docs/install.md gives for a cluster, with file_sd_configs in place of kubernetes_sd_configs.
# Prometheus scrapes the workers of a 2-run job (1 and 2 ranks, DDP, gloo) and the operator.
# Checks: every documented metric is in Prometheus; the workers' values agree with the job's
# report (steps and examples exactly; Prometheus's mean step time between the report's p50 and
# p95 with 10% slack, and examples/s consistent with it); the operator's counters agree with the API server's audit log;
# `promtool check metrics` is clean on both expositions; /healthz and /readyz; and every
# panel query of the Grafana dashboard returns data (GPU panels excepted: no GPU here).
# Needs: the lib.sh variables, PROMETHEUS, PROMTOOL, OBSERVABILITY_DOC, DASHBOARD_DIR (optional).
source "$(dirname "$0")/../operator/e2e/lib.sh"

PROMETHEUS=${PROMETHEUS:-prometheus}
PROMTOOL=${PROMTOOL:-promtool}
command -v "$PROMETHEUS" >/dev/null || fail "prometheus not found (Debian package prometheus; scripts/install-deps.sh installs it)"
command -v "$PROMTOOL" >/dev/null || fail "promtool not found (Debian package prometheus)"

SD="$WORK/targets.json"
# Workers serve their last values 10 s after their run; kubesim lets pods take that long to stop.
start_cluster --prometheus-sd "$SD" --max-grace 30

# The operator's metrics and probe ports (it logs what it bound; port 0 picked them).
wait_for 20 grep -q "serving metrics on" "$WORK/operator.log" || fail "operator serves no metrics"
OP_METRICS=$(sed -n 's|.*serving metrics on \(.*\)/metrics|\1|p' "$WORK/operator.log" | head -1)
OP_HEALTH=$(sed -n 's|.*serving /healthz and /readyz on \(.*\)|\1|p' "$WORK/operator.log" | head -1)
wait_for 30 curl -sf "http://$OP_HEALTH/readyz" || fail "operator /readyz: $(curl -s "http://$OP_HEALTH/readyz")"
[ "$(curl -s "http://$OP_HEALTH/healthz")" = "ok" ] || fail "operator /healthz"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PROM_PORT=$(free_port)
PROM="http://127.0.0.1:$PROM_PORT"
cat >"$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: trainbench-operator
    static_configs:
      - targets: ["$OP_METRICS"]
  - job_name: trainbench-workers
    file_sd_configs:
      - files: ["$SD"]
        refresh_interval: 1s
    relabel_configs:
      # Keep the workers' named metrics ports of pods the operator manages (docs/install.md).
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_managed_by, __meta_kubernetes_pod_container_port_name]
        regex: trainbench-operator;metrics-[0-9]+
        action: keep
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
YAML
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
    env: [{name: TRAINBENCH_METRICS_LINGER_SECONDS, value: "10"}]
  runPolicy: {backoffLimit: 0, cleanPodPolicy: All}
YAML
START=$(date +%s)
kc apply -f "$WORK/job.yaml" >/dev/null

# While run 0 trains: its worker is a target, and promtool accepts its exposition as is.
wait_for 120 grep -q '"metrics-0"' "$SD" || fail "no worker target appeared in $SD"
target=$(jq -r '[.[] | select(.labels.__meta_kubernetes_pod_container_port_name == "metrics-0")][0].targets[0]' "$SD")
wait_for 60 curl -sf -o "$WORK/worker.prom" "http://$target/metrics" || fail "scraping the worker at $target"
"$PROMTOOL" check metrics <"$WORK/worker.prom" >"$WORK/promtool-worker.txt" 2>&1 ||
  fail "promtool check metrics (worker): $(cat "$WORK/promtool-worker.txt")"
curl -sf "http://$OP_METRICS/metrics" >"$WORK/operator.prom" || fail "scraping the operator"
"$PROMTOOL" check metrics <"$WORK/operator.prom" >"$WORK/promtool-operator.txt" 2>&1 ||
  fail "promtool check metrics (operator): $(cat "$WORK/promtool-operator.txt")"

wait_for 300 phase_is "$JOB" Succeeded || fail "job did not succeed: $(kc get bj $JOB -o jsonpath='{.status}')"
# The last values of run 1's workers reach Prometheus while they linger.
sel="benchmark_job=\"$JOB\""
wait_for 60 scalar_is "count(last_over_time(trainbench_steps_total{$sel,run=\"1\"}[10m]) == $((WARMUP + REPEATS * MEASURE)))" 2 ||
  fail "Prometheus never saw run 1 finish: $(query "last_over_time(trainbench_steps_total{$sel}[10m])")"

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
  # Mean step time from Prometheus (the slowest rank's step-time sum over its steps) against the
  # report's percentiles of the same steps: a mean lies above the median of right-skewed step
  # times and below their 95th percentile unless over 5% of the steps are extreme outliers;
  # 10% slack on either side.
  prom_mean=$(scalar "max(last_over_time(trainbench_step_duration_seconds_sum{$lo}[10m]) / last_over_time(trainbench_step_duration_seconds_count{$lo}[10m]))")
  read -r p50 p95 report_eps <<<"$(kc get bj "$JOB" -o jsonpath="{.status.report.runs[$run].secPerIter.p50} {.status.report.runs[$run].secPerIter.p95} {.status.report.runs[$run].examplesPerSec.p50}")"
  [ -n "$prom_mean" ] && [ -n "$p95" ] || fail "run $run: step time missing (prometheus '$prom_mean', report '$p50' '$p95')"
  awk -v m="$prom_mean" -v a="$p50" -v b="$p95" 'BEGIN { exit !(m >= 0.9 * a && m <= 1.1 * b) }' ||
    fail "run $run: mean step $prom_mean s from Prometheus is outside the report's [p50 $p50, p95 $p95] (10% slack)"
  # Examples/s from Prometheus' counters vs the report's global batch at that mean step.
  prom_eps=$(scalar "sum(last_over_time(trainbench_examples_total{$lo}[10m])) / max(last_over_time(trainbench_step_duration_seconds_sum{$lo}[10m]))")
  approx "$prom_eps" "$(awk -v m="$prom_mean" -v n="$((BATCH * world))" 'BEGIN { print n / m }')" 0.001 ||
    fail "run $run: examples/s $prom_eps does not match $((BATCH * world)) examples per mean step $prom_mean"
  echo "run $run: Prometheus mean step $prom_mean s, $prom_eps examples/s; report p50 $p50 s, p95 $p95 s, $report_eps examples/s"
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
audit_patches=$(jq -r 'select(.verb == "patch" and .resource == "benchmarkjobs" and .subresource == "status" and .code == 200) | .name' "$WORK/sim/audit.log" | wc -l)
[ "$(scalar 'sum(trainbench_operator_api_requests_total{verb="patch",resource="benchmarkjobs/status",code="200"})')" = "$audit_patches" ] ||
  fail "status patches: operator vs audit log $audit_patches"
awk -v n="$(scalar 'sum(trainbench_operator_reconcile_total{result="success"})')" 'BEGIN { exit !(n >= 3) }' || fail "reconciles"
awk -v n="$(scalar 'histogram_quantile(0.95, sum by (le) (rate(trainbench_operator_reconcile_duration_seconds_bucket[5m])))')" 'BEGIN { exit !(n > 0) }' ||
  fail "reconcile p95"
[ -n "$(scalar 'trainbench_operator_workqueue_depth')" ] || fail "queue depth"
[ -n "$(scalar 'sum(trainbench_operator_watch_restarts_total)')" ] || fail "watch restarts"

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

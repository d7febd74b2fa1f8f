#!/usr/bin/env bash
# kubectl-trainbench through the real kubectl (plugin discovery on PATH) against the real
# operator: report, diff, plot and logs of finished jobs equal what the trainbench CLI prints for
# the same report JSON and what `kubectl logs` prints; errors exit with the documented codes.
# Needs PLUGIN (the kubectl-trainbench binary) besides lib.sh's variables.
source "$(dirname "$0")/lib.sh"
export PATH="$(dirname "$PLUGIN"):$PATH"
TB="$(dirname "$PLUGIN")/trainbench"
[ -x "$TB" ] || TB=trainbench

kubectl plugin list 2>/dev/null | grep -q "/kubectl-trainbench$" || fail "kubectl does not find the plugin: $(kubectl plugin list 2>&1)"

# expect RC OUT_FILE CMD...: runs CMD (stdout+stderr to OUT_FILE), fails unless it exits RC.
expect() {
  local want=$1 out=$2 rc=0
  shift 2
  "$@" >"$out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || fail "$* exited $rc, not $want: $(cat "$out")"
}

start_cluster
for j in base test; do
  mlp_job "$j" 1000 "{backoffLimit: 0, collectiveTimeoutSeconds: 60}" "{nodes: 1, devicesPerNode: 1}" \
    "{nodes: 2, devicesPerNode: 1}" >"$WORK/$j.yaml"
  # Workers stop serving /metrics at once: pods end with their run (the default lingers 20 s).
  sed -i 's/template: {image: \(.*\)}$/template: {image: \1, env: [{name: TRAINBENCH_METRICS_LINGER_SECONDS, value: "0"}]}/' "$WORK/$j.yaml"
done
kc apply -f "$WORK/base.yaml" >/dev/null
# Right after the create: no report yet (exit 5), saying why.
expect 5 "$WORK/early.txt" kubectl trainbench report base
grep -q "BenchmarkJob base in namespace $NS has no report yet: " "$WORK/early.txt" || fail "early: $(cat "$WORK/early.txt")"
kc apply -f "$WORK/test.yaml" >/dev/null  # beside base (each pod has its own IP: same masterPort)

# logs while run 1 runs (the default run): rank 1 is trainer pod 1, named on stderr; its log
# (node-launch's lines) on stdout; -f streams until the container ends with the run.
pod=base-r1-a0-trainer-1
rank1_log() { kubectl trainbench logs base --rank 1 >"$WORK/logs.txt" 2>"$WORK/logs.err" && grep -q "node 1 of 2, ranks 1..1" "$WORK/logs.txt"; }
wait_for 240 rank1_log || fail "logs --rank 1: $(cat "$WORK/logs.err" "$WORK/logs.txt")"
grep -q "pod $pod, container trainer (rank 1 of run 1 \"2 CPUs -- 2M/1G\", attempt 0)" "$WORK/logs.err" ||
  fail "logs named: $(cat "$WORK/logs.err")"
kubectl trainbench logs base --rank 1 -f >"$WORK/follow.txt" 2>&1 &
follow_pid=$!
PIDS+=($follow_pid)

for j in base test; do
  wait_phase "$j" Succeeded || fail "job $j did not succeed: $(kc get bj "$j" -o jsonpath='{.status}')"
  kc get bj "$j" -o json | jq '.status.report' >"$WORK/$j.json"
done
follow_ended() { ! kill -0 "$follow_pid" 2>/dev/null; }
wait_for 60 follow_ended ||
  fail "logs -f still runs 60 s after the run ended: $(ps -o pid,ppid,stat,etime,args -p "$follow_pid" --ppid "$follow_pid")"
wait "$follow_pid" || fail "logs -f: exit $?: $(cat "$WORK/follow.txt")"
grep -q "node 1 of 2, ranks 1..1" "$WORK/follow.txt" || fail "logs -f: $(cat "$WORK/follow.txt")"

# report: what `trainbench report` prints for the status's report JSON; --json writes that JSON.
kubectl trainbench report base --json "$WORK/saved.json" >"$WORK/report.txt" || fail "report base failed"
"$TB" report "$WORK/base.json" >"$WORK/expected.txt"
diff -u "$WORK/expected.txt" "$WORK/report.txt" || fail "kubectl trainbench report differs from trainbench report"
grep -q "^2 CPUs -- 2M/1G:" "$WORK/report.txt" || fail "report has no 2M/1G row: $(cat "$WORK/report.txt")"
jq -e --slurpfile a "$WORK/base.json" '. == $a[0]' "$WORK/saved.json" >/dev/null || fail "--json differs from status.report"
# Without KUBECONFIG: ~/.kube/config, its contexts (--context) and a context's namespace.
mkdir -p "$HOME/.kube" && cp "$KUBECONFIG" "$HOME/.kube/config"
ctx=$(kc config current-context)
cluster=$(kc config view -o jsonpath="{.contexts[?(@.name==\"$ctx\")].context.cluster}")
user=$(kc config view -o jsonpath="{.contexts[?(@.name==\"$ctx\")].context.user}")
kc config set-context team --cluster="$cluster" --user="$user" --namespace=elsewhere --kubeconfig="$HOME/.kube/config" >/dev/null
env -u KUBECONFIG kubectl trainbench report base --context "$ctx" | cmp - "$WORK/report.txt" || fail "~/.kube/config"
expect 1 "$WORK/e2" env -u KUBECONFIG kubectl trainbench report base --context team
grep -q 'BenchmarkJob "base" not found in namespace "elsewhere"' "$WORK/e2" || fail "context namespace: $(cat "$WORK/e2")"

# diff: trainbench diff's output and exit code (a generous threshold: two runs of one machine).
rc_cli=0 rc_plugin=0
"$TB" diff "$WORK/base.json" "$WORK/test.json" --fail-on-regression 50 >"$WORK/diff-cli.txt" || rc_cli=$?
kubectl trainbench diff base test --fail-on-regression 50 >"$WORK/diff.txt" || rc_plugin=$?
diff -u "$WORK/diff-cli.txt" "$WORK/diff.txt" || fail "kubectl trainbench diff differs from trainbench diff"
[ "$rc_cli" = "$rc_plugin" ] || fail "diff exit codes: trainbench $rc_cli, plugin $rc_plugin"
rc_cli=0 rc_plugin=0
"$TB" diff "$WORK/base.json" "$WORK/test.json" --fail-on-regression 50 --output json >"$WORK/diff-cli.json" || rc_cli=$?
kubectl trainbench diff base test --fail-on-regression 50 -o json >"$WORK/diff.json" || rc_plugin=$?
jq -e '.rows | length > 0' "$WORK/diff.json" >/dev/null || fail "kubectl trainbench diff -o json: $(head -c 300 "$WORK/diff.json")"
cmp "$WORK/diff-cli.json" "$WORK/diff.json" || fail "kubectl trainbench diff -o json differs from trainbench diff --output json"
[ "$rc_cli" = "$rc_plugin" ] || fail "diff -o json exit codes: trainbench $rc_cli, plugin $rc_plugin"

# plot: the SVG `trainbench report --plot` writes for the same report.
kubectl trainbench plot base -o "$WORK/scaling.svg" || fail "plot failed"
"$TB" report "$WORK/base.json" --plot "$WORK/expected.svg" >/dev/null
cmp "$WORK/expected.svg" "$WORK/scaling.svg" || fail "the plugin's SVG differs from trainbench report --plot's"
grep -q "<svg" "$WORK/scaling.svg" || fail "no <svg> in $(head -c 200 "$WORK/scaling.svg")"

# Errors: each names its cause and exits as documented.
expect 1 "$WORK/e1" kubectl trainbench report nope
grep -q "BenchmarkJob \"nope\" not found in namespace \"$NS\"" "$WORK/e1" || fail "missing job: $(cat "$WORK/e1")"
expect 1 "$WORK/e2" kubectl trainbench report base -n other
grep -q 'BenchmarkJob "base" not found in namespace "other"' "$WORK/e2" || fail "-n: $(cat "$WORK/e2")"
expect 1 "$WORK/e3" kubectl trainbench report base --kubeconfig "$WORK/none"
grep -q "kubeconfig: $WORK/none: cannot read" "$WORK/e3" || fail "bad kubeconfig: $(cat "$WORK/e3")"
sed 's#server: https://127.0.0.1:[0-9]*#server: https://127.0.0.1:1#' "$KUBECONFIG" >"$WORK/down.kubeconfig"
expect 1 "$WORK/e4" kubectl trainbench report base --kubeconfig "$WORK/down.kubeconfig"
grep -q "cannot reach the API server of kubeconfig $WORK/down.kubeconfig (context [a-z]*): connect: GET https://127.0.0.1:1/" "$WORK/e4" || fail "server down: $(cat "$WORK/e4")"
expect 2 "$WORK/e5" kubectl trainbench logs base --run 1 --rank 2
grep -q "has ranks 0..1, not 2" "$WORK/e5" || fail "bad rank: $(cat "$WORK/e5")"
expect 1 "$WORK/e6" kubectl trainbench logs base --run 1 --rank 1
grep -q "pod $pod not found: the operator deletes a run's pods when it ends" "$WORK/e6" || fail "gone: $(cat "$WORK/e6")"
cat "$WORK/report.txt" "$WORK/logs.err" "$WORK/logs.txt" "$WORK/early.txt" "$WORK/e1" "$WORK/e4" "$WORK/e6"
echo "PASS plugin_e2e"

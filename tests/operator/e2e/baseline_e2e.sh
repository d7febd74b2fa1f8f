#!/usr/bin/env bash
# spec.baseline through the real operator: a job that names an earlier job as its baseline gets
# Regressed=False (same machine, same job: no row slower by more than the threshold), and a job
# whose baseline is a ConfigMap holding a report a thousand times quicker than the first job's gets
# Regressed=True naming the row, with a Warning Event; both as the operator reads them.
source "$(dirname "$0")/lib.sh"

ended() { case "$(kc get bj "$1" -o jsonpath='{.status.phase}')" in Succeeded | Failed) ;; *) return 1 ;; esac; }
start_cluster
entry="{nodes: 1, devicesPerNode: 2}"
mlp_job base 30 "{backoffLimit: 0, collectiveTimeoutSeconds: 60}" "$entry" >"$WORK/base.yaml"
kc apply -f "$WORK/base.yaml" >/dev/null
wait_for 240 ended base && phase_is base Succeeded || fail "job base did not succeed: $(kc get bj base -o jsonpath='{.status}')"

# The ConfigMap baseline: base's report with every repeat's p50 sec/iter divided by 1000 (a
# shift far beyond the noise of two repeats).
kc get bj base -o json | jq '.status.report | .runs[].repeats[].p50 /= 1000' >"$WORK/quick.json"
kc create configmap quick-reports --from-file=report.json="$WORK/quick.json" >/dev/null

# Two candidates, one after the other (as base ran alone): against the job (a threshold no noise
# between two runs of a tiny MLP on a loaded machine crosses) and against the ConfigMap (default
# threshold, 5%).
for j in same quicker; do
  mlp_job "$j" 30 "{backoffLimit: 0, collectiveTimeoutSeconds: 60}" "$entry" >"$WORK/$j.yaml"
done
echo "  baseline: {benchmarkJob: base, regressionThresholdPercent: 50}" >>"$WORK/same.yaml"
echo "  baseline: {configMap: {name: quick-reports, key: report.json}}" >>"$WORK/quicker.yaml"
regressed() { kc get bj "$1" -o jsonpath='{.status.conditions[?(@.type=="Regressed")].'"$2"'}'; }
has_regressed() { [ -n "$(regressed "$1" status)" ]; }
for j in same quicker; do
  kc apply -f "$WORK/$j.yaml" >/dev/null
  wait_for 240 ended "$j" && phase_is "$j" Succeeded || fail "job $j did not succeed: $(kc get bj "$j" -o jsonpath='{.status}')"
  wait_for 30 has_regressed "$j" || fail "job $j has no Regressed condition: $(kc get bj "$j" -o jsonpath='{.status.conditions}')"
  echo "$j: Regressed=$(regressed "$j" status) $(regressed "$j" reason): $(regressed "$j" message)"
done

[ "$(regressed same status)" = False ] || fail "same: Regressed is not False"
[ "$(regressed same reason)" = NoRegression ] || fail "same: reason"
case "$(regressed same message)" in
  "against BenchmarkJob base: no row significantly slower by more than 50% (p50 ex/sec; 1 row compared)"*) ;;
  *) fail "same: message: $(regressed same message)" ;;
esac

[ "$(regressed quicker status)" = True ] || fail "quicker: Regressed is not True"
[ "$(regressed quicker reason)" = Regressed ] || fail "quicker: reason"
case "$(regressed quicker message)" in
  "against ConfigMap quick-reports (key report.json): 1 of 1 compared rows significantly slower by more than 5% (p50 ex/sec): 2 CPUs -- 1M/2G: ex/sec -"*" slower (p="*) ;;
  *) fail "quicker: message: $(regressed quicker message)" ;;
esac
events=$(kc get events --field-selector involvedObject.name=quicker -o jsonpath='{range .items[*]}{.type} {.reason}{"\n"}{end}')
grep -qx "Warning Regressed" <<<"$events" || fail "quicker: no Warning Regressed Event: $events"
events=$(kc get events --field-selector involvedObject.name=same -o jsonpath='{range .items[*]}{.type} {.reason}{"\n"}{end}')
grep -qx "Normal NoRegression" <<<"$events" || fail "same: no Normal NoRegression Event: $events"
kc get bj
echo "PASS baseline_e2e"

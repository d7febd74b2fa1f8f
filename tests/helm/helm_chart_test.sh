#!/usr/bin/env bash
# The Helm chart (helm/trainbench), checked with the real helm 3.17 and then run on the real
# control plane (tests/controlplane: kube-apiserver, etcd, kube-controller-manager,
# kube-scheduler), shared with the other tests of the ctest run:
#
#  1. metadata: appVersion = the project version, the chart's CRD byte-identical to crds/, the
#     Dockerfiles' image names/tags/uid consistent with the chart and the operator;
#  2. `helm lint --strict` and `helm template` with the default values and every
#     tests/helm/values-*.yaml, asserting the rendered objects (security contexts, probes on the
#     ports the flags open, args, RBAC kind per scope, the rules = docs/operator.md's table,
#     Service/ServiceMonitor/PodMonitor wiring, dashboard ConfigMap); values.schema.json rejecting
#     bad values;
#  3. scope cluster: `helm install --wait` of the chart into the test's own namespace (the CRD,
#     which the fixture's chart step installed from crds/, is found there and left alone; what
#     helm installed = what `helm template` rendered), the operator pods made by the real
#     Deployment and ReplicaSet controllers, bound by the real scheduler to the test's node
#     agents (tests/nodeagent, process mode: the container's command `trainbench-operator` from
#     PATH, with the pod's bound ServiceAccount token as in-cluster config, exactly the args the
#     chart renders), `helm upgrade --set replicaCount=2` (leader election, failover, the deleted
#     leader replaced by a new standby), /healthz, /readyz and /metrics on the named ports of the
#     pod IPs, BenchmarkJobs to Succeeded and to Failed in a second namespace of the test (the
#     operator watches only that one: `--namespace` in operator.extraArgs, so that it leaves the
#     other tests' jobs alone; its ClusterRole and ClusterRoleBinding are the chart's), a worker
#     scraped on the port the PodMonitor selects; the real RBAC escalation check (the operator
#     may create a Role granting what it holds, not configmaps delete); from the real audit log
#     (level Metadata): the operator's ServiceAccount was refused nothing while installed, every
#     rule of the chart's RBAC was used (or is in UNUSED_OK below, with the reason) and every
#     request it made is covered by a rule; `helm uninstall` leaves no operator pod, no workload,
#     no ClusterRole or ClusterRoleBinding, and the CRD as it was (other tests use it);
#  4. then the same in scope namespace (a Role only, no cluster-wide object), installed with
#     values-namespaced.yaml into a third namespace: a job outside it is left alone, one inside
#     runs; the operator made no request outside its namespace; scaled to zero, then uninstalled
#     (docs/install.md's clean hand-over: the Lease released, nothing refused).
#
# What the real server does that kubesim did not: `helm uninstall` deletes the Deployment and the
# operator's RBAC in one go (helm's uninstall order, no wait between them), so the operator, told
# to stop while its RoleBinding is already gone, is refused (403) when it releases its Lease:
# the Lease (the operator made it, not helm) stays with the last holder until it expires. The
# test allows that, and nothing else refused (docs/install.md, "Uninstall").
#
# Needs: OPERATOR, BIN_DIRS (dirs with trainbench and trainbench-worker), CRD, NODEAGENT,
# CONTROLPLANE_DIR (a control plane of tests/controlplane/controlplane.sh with the chart's CRD
# installed: tests/controlplane/chart_install.sh), HELM (default: $REPO/.tools/helm/helm, else
# helm on PATH; scripts/fetch-helm.sh fetches it). Optional: REPO (default: this file's repository).
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=${REPO:-$(cd "$HERE/../.." && pwd)}
E2E_BACKEND=controlplane
# shellcheck source=../operator/e2e/lib.sh
source "$REPO/tests/operator/e2e/lib.sh"
[ -n "${CONTROLPLANE_DIR:-}" ] && [ -f "$CONTROLPLANE_DIR/kubeconfig" ] ||
  fail "CONTROLPLANE_DIR='${CONTROLPLANE_DIR:-}' is no running control plane (tests/controlplane/controlplane.sh start DIR)"
export PATH="$CONTROLPLANE_DIR/bin:$PATH"  # the kubectl of the server's release
T0=$SECONDS

CHART=$REPO/helm/trainbench
# Rules of the chart that a successful and a failed run need not exercise, each with its reason.
# Anything else in the rendered (Cluster)Role that the operator never used fails the test.
UNUSED_OK=(
  # The API is read only when the informer cache has not shown the operator's own status write
  # for 10 s (docs/operator.md, "Read your own writes"): a fallback that a healthy run never takes.
  "trainbench.dev|benchmarkjobs|get"
  # Held only so that the operator may create the per-job reporter Role that grants them to the
  # master pods: RBAC forbids granting what one does not hold (escalation check; proven below).
  "|configmaps|get"
  "|configmaps|update"
  "|configmaps|patch"
)

# The test's namespaces on the shared control plane: NS holds the scope-cluster release (its
# operator pods and Lease), JOBS_NS the jobs that operator runs, NSCOPE_NS the scope-namespace
# release and its jobs. Release names are the test's own too: a scope-cluster release names its
# ClusterRole and ClusterRoleBinding after itself. The nodes (NS-n1, NS-n2) take every pod of
# the three namespaces (PodNodeSelector), and no other test's.
NS=helm-chart-$$
JOBS_NS=$NS-jobs
NSCOPE_NS=$NS-ns
REL=hc-$$
NSREL=hcns-$$

# On failure, the operator pods' logs go where lib.sh's cleanup prints them from.
dump_operator_logs() {
  for f in "$WORK"/nodes/*/pods/*/operator.log; do
    [ -f "$f" ] && { echo "== $f"; tail -n 30 "$f"; }
  done >"$WORK/operator.log" 2>/dev/null || true
}
# What lib.sh's cleanup does not know of: the releases' cluster-scoped objects, the other two
# namespaces. (It deletes NS, stops the node agents and deletes their nodes.)
cleanup_cluster_objects() {
  [ -n "${NS_CREATED:-}" ] || return 0
  "$KUBECTL" delete clusterrole,clusterrolebinding -l "app.kubernetes.io/instance in ($REL,$NSREL)" \
    --ignore-not-found --wait=false >/dev/null 2>&1
  "$KUBECTL" delete namespace "$JOBS_NS" "$NSCOPE_NS" --ignore-not-found --wait=false >/dev/null 2>&1
}
trap 'rc=$?; set +e; [ $rc -eq 0 ] || dump_operator_logs; cleanup_cluster_objects; (exit $rc); cleanup' EXIT
# ---------------------------------------------------------------------------------------------
# helm
HELM_GIVEN=${HELM:-}
HELM=$HELM_GIVEN
if [ -z "$HELM" ] || [ ! -x "$HELM" ]; then
  if [ -x "$REPO/.tools/helm/helm" ]; then HELM=$REPO/.tools/helm/helm; else HELM=$(command -v helm || true); fi
fi
[ -n "$HELM" ] && [ -x "$HELM" ] ||
  fail "helm not found (tried HELM='$HELM_GIVEN', $REPO/.tools/helm/helm, PATH): run scripts/fetch-helm.sh (it prints the path) or set HELM"
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"
helm_version=$("$HELM" version --template '{{.Version}}')
case "$helm_version" in v3.*) ;; *) fail "$HELM is helm $helm_version; the chart needs helm 3" ;; esac
echo "helm $helm_version ($HELM)"

# Objects as a JSON array, converted by kubectl without a server (helm has no JSON output).
to_json() {
  KUBECONFIG=/dev/null "$KUBECTL" annotate --local -f "$1" -o json 'tb.invalid/none-' |
    jq -s 'map(if .metadata.annotations == {} then del(.metadata.annotations) else . end)'
}
# render OUT RELEASE NAMESPACE [helm args]: OUT.yaml (with the CRD) and OUT.json; lint first.
render() {
  local out=$1 release=$2 ns=$3
  shift 3
  "$HELM" lint --strict "$CHART" -n "$ns" "$@" >"$out.lint" 2>&1 || fail "helm lint --strict $*: $(cat "$out.lint")"
  "$HELM" template "$release" "$CHART" -n "$ns" --include-crds "$@" >"$out.yaml" 2>"$out.err" ||
    fail "helm template $*: $(cat "$out.err")"
  to_json "$out.yaml" >"$out.json" || fail "rendered YAML of $* does not parse"
}
# q FILE.json JQ-EXPR: one jq query over the rendered objects (raw output).
q() { jq -r "$2" "$1"; }
# expect LABEL ACTUAL EXPECTED
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"; }
count_kind() { q "$1" "[.[] | select(.kind == \"$2\")] | length"; }
# The Deployment's container args, one a line.
args_of() { q "$1" '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args[]'; }
# arg FILE FLAG: the value of the last --FLAG=VALUE (as the operator reads them), or "".
arg() { args_of "$1" | sed -n "s/^--$2=//p" | tail -n 1; }
# Rules of Roles/ClusterRoles as "group|resource|verb" lines.
rule_triples() {
  q "$1" ".[] | select(.kind == \"ClusterRole\" or .kind == \"Role\") $2 | .rules[] |
         .apiGroups[] as \$g | .resources[] as \$r | .verbs[] as \$v | \"\(\$g)|\(\$r)|\(\$v)\"" | sort -u
}

# ---------------------------------------------------------------------------------------------
echo "== 1. chart metadata, CRD, Dockerfiles"
project_version=$(bash "$REPO/scripts/version.sh")
[ -n "$project_version" ] || fail "no project VERSION in CMakeLists.txt"
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$CHART/Chart.yaml")
expect "Chart.yaml appVersion (= CMakeLists.txt project VERSION)" "$app_version" "$project_version"
grep -q '^apiVersion: v2$' "$CHART/Chart.yaml" || fail "Chart.yaml: apiVersion must be v2"
IFS=: read -ra bin_dirs <<<"$BIN_DIRS"
for d in "${bin_dirs[@]}"; do
  if [ -x "$d/trainbench" ]; then expect "trainbench version" "$("$d/trainbench" version)" "trainbench $project_version"; fi
done
cmp "$CRD" "$CHART/crds/trainbench.dev_benchmarkjobs.yaml" ||
  fail "helm/trainbench/crds/trainbench.dev_benchmarkjobs.yaml differs from crds/: cp crds/trainbench.dev_benchmarkjobs.yaml helm/trainbench/crds/"
[ ! -L "$CHART/crds/trainbench.dev_benchmarkjobs.yaml" ] || fail "the chart's CRD must be a copy, not a symlink (helm package)"
[ "$(ls "$CHART/crds")" = "trainbench.dev_benchmarkjobs.yaml" ] || fail "unexpected files in the chart's crds/: $(ls "$CHART/crds")"
dashboard=$CHART/dashboards/trainbench.json
[ -f "$dashboard" ] || fail "$dashboard is missing (the chart ships it as the Grafana dashboard ConfigMap)"
jq -e 'type == "object"' "$dashboard" >/dev/null || fail "$dashboard is not a JSON object"

# Dockerfiles: the `docker build -t` lines name the images the chart and the operator use, and
# both images end as USER 65532:65532.
v=$project_version
for f in operator.Dockerfile worker.Dockerfile; do
  [ -f "$REPO/docker/$f" ] || fail "docker/$f is missing"
  user=$(grep '^USER ' "$REPO/docker/$f" | tail -n 1 | awk '{print $2}')
  expect "docker/$f final USER" "$user" "65532:65532"
done
grep -q -- "docker build -f docker/operator.Dockerfile -t trainbench/operator:$v \.\$" "$REPO/docker/operator.Dockerfile" ||
  fail "docker/operator.Dockerfile: its build command does not tag trainbench/operator:$v"
grep -q -- "docker build -f docker/worker.Dockerfile -t trainbench/worker:$v \.\$" "$REPO/docker/worker.Dockerfile" ||
  fail "docker/worker.Dockerfile: its build command does not tag trainbench/worker:$v"
grep -q -- "docker build -f docker/worker.Dockerfile --build-arg TORCH_FLAVOUR=cuda -t trainbench/worker:$v-cuda \.\$" \
  "$REPO/docker/worker.Dockerfile" || fail "docker/worker.Dockerfile: no cuda build command tagging trainbench/worker:$v-cuda"
# The worker images by spec.device when spec.template.image is unset: the operator's built-in
# defaults (named in the CRD's description, core/api/crd.cpp) are the chart's --worker-image and
# --worker-cuda-image, and the images the Dockerfile's commands build.
worker_default="trainbench/worker:$v"
grep -q "\"Worker image. Unset: the operator's for spec.device (its --worker-image, default $worker_default; --worker-cuda-image, default $worker_default-cuda).\"" \
  "$REPO/crds/trainbench.dev_benchmarkjobs.yaml" || fail "the CRD's spec.template.image no longer names the defaults $worker_default and $worker_default-cuda"
grep -q "image: $worker_default\$" "$REPO/examples/operator-mlp.yaml" || fail "examples/operator-mlp.yaml does not use $worker_default"
grep -q '{"runAsUser", 65532}, {"runAsGroup", 65532}' "$REPO/operator/controller/manifests.cpp" ||
  fail "the operator's benchmark pods no longer run as 65532:65532 (the worker images' USER)"
grep -q 'ENTRYPOINT \["/usr/local/bin/trainbench-operator"\]' "$REPO/docker/operator.Dockerfile" || fail "operator image entrypoint"
grep -q 'trainbench-worker' "$REPO/docker/worker.Dockerfile" && grep -q '/usr/local/bin' "$REPO/docker/worker.Dockerfile" ||
  fail "docker/worker.Dockerfile: trainbench and trainbench-worker on PATH"  # the commands the operator gives the pods
grep -q '"trainbench-worker", "--master"' "$REPO/operator/controller/manifests.cpp" || fail "master command changed: check the worker images"
grep -q '"trainbench", "node-launch"' "$REPO/operator/controller/manifests.cpp" || fail "trainer command changed: check the worker images"

# ---------------------------------------------------------------------------------------------
echo "== 2. helm lint --strict, helm template, rendered objects"
mkdir -p "$WORK/r"
# The rules in docs/operator.md's RBAC table, as group|resource|verb.
doc_triples=$(awk '/^## RBAC/ {on = 1; next} /^## / {on = 0} on && /^\| / && !/^\| (API group|---)/' "$REPO/docs/operator.md" |
  awk -F'|' '{
      g = $2; gsub(/^ +| +$/, "", g); sub(/ *\(core\)/, "", g); if (g == "\"\"") g = "";
      nr = split($3, rs, ","); nv = split($4, vs, ",");
      for (i = 1; i <= nr; i++) for (j = 1; j <= nv; j++) {
        r = rs[i]; v = vs[j]; gsub(/[ `]/, "", r); gsub(/[ `]/, "", v); print g "|" r "|" v } }' | sort -u)
[ "$(wc -l <<<"$doc_triples")" -ge 20 ] || fail "could not read docs/operator.md's RBAC table: $doc_triples"

# check_common FILE RELEASE NAMESPACE: what every value set must satisfy.
check_common() {
  local f=$1 release=$2 ns=$3 d='.[] | select(.kind == "Deployment")'
  expect "$f: Deployments" "$(count_kind "$f" Deployment)" 1
  expect "$f: CRDs" "$(count_kind "$f" CustomResourceDefinition)" 1
  # The CRD helm installs is crds/'s.
  KUBECONFIG=/dev/null "$KUBECTL" annotate --local -f "$CRD" -o json 'tb.invalid/none-' | jq -S 'del(.metadata.annotations)' >"$WORK/r/crd.want"
  q "$f" '.[] | select(.kind == "CustomResourceDefinition") | del(.metadata.annotations)' | jq -S . >"$WORK/r/crd.got"
  cmp -s "$WORK/r/crd.want" "$WORK/r/crd.got" || fail "$f: the rendered CRD is not crds/'s"
  # Labels on everything the templates make.
  local bad
  bad=$(q "$f" ".[] | select(.kind != \"CustomResourceDefinition\") | select(
      .metadata.labels[\"helm.sh/chart\"] != \"trainbench-$app_version\" or
      .metadata.labels[\"app.kubernetes.io/instance\"] != \"$release\" or
      .metadata.labels[\"app.kubernetes.io/managed-by\"] != \"Helm\" or
      .metadata.labels[\"app.kubernetes.io/version\"] != \"$app_version\" or
      (.metadata.labels[\"app.kubernetes.io/name\"] | type) != \"string\") | \"\(.kind)/\(.metadata.name)\"")
  [ -z "$bad" ] || fail "$f: objects without the standard labels: $bad"
  # Security contexts.
  local pod="$d | .spec.template.spec" c="$d | .spec.template.spec.containers[0]"
  expect "$f: pod runAsNonRoot" "$(q "$f" "$pod | .securityContext.runAsNonRoot")" true
  expect "$f: pod runAsUser" "$(q "$f" "$pod | .securityContext.runAsUser")" 65532
  expect "$f: pod runAsGroup" "$(q "$f" "$pod | .securityContext.runAsGroup")" 65532
  expect "$f: pod seccompProfile" "$(q "$f" "$pod | .securityContext.seccompProfile.type")" RuntimeDefault
  expect "$f: readOnlyRootFilesystem" "$(q "$f" "$c | .securityContext.readOnlyRootFilesystem")" true
  expect "$f: allowPrivilegeEscalation" "$(q "$f" "$c | .securityContext.allowPrivilegeEscalation")" false
  expect "$f: capabilities.drop" "$(q "$f" "$c | .securityContext.capabilities.drop | tostring")" '["ALL"]'
  expect "$f: container runAsNonRoot" "$(q "$f" "$c | .securityContext.runAsNonRoot")" true
  expect "$f: container seccompProfile" "$(q "$f" "$c | .securityContext.seccompProfile.type")" RuntimeDefault
  expect "$f: automountServiceAccountToken" "$(q "$f" "$pod | .automountServiceAccountToken")" true
  expect "$f: command" "$(q "$f" "$c | .command | tostring")" '["trainbench-operator"]'
  # The selector picks the operator pods only (benchmark pods share app.kubernetes.io/name).
  expect "$f: selector labels missing from the pod template" \
    "$(q "$f" "$d | (.spec.selector.matchLabels | to_entries) - (.spec.template.metadata.labels | to_entries) | length")" 0
  expect "$f: selector component" "$(q "$f" "$d | .spec.selector.matchLabels[\"app.kubernetes.io/component\"]")" operator
  # Probes on the port the health flag opens.
  local health_addr health_port
  health_addr=$(arg "$f" health-probe-bind-address)
  health_port=$(q "$f" "$c | .ports[] | select(.name == \"health\") | .containerPort")
  expect "$f: --health-probe-bind-address" "$health_addr" "0.0.0.0:$health_port"
  expect "$f: liveness probe" "$(q "$f" "$c | .livenessProbe.httpGet | \"\(.path) \(.port)\"")" "/healthz health"
  expect "$f: readiness probe" "$(q "$f" "$c | .readinessProbe.httpGet | \"\(.path) \(.port)\"")" "/readyz health"
  # Metrics: the flag, the named container port and the Service agree.
  local metrics_addr
  metrics_addr=$(arg "$f" metrics-bind-address)
  if [ "$metrics_addr" = 0 ]; then
    expect "$f: metrics off: Services" "$(count_kind "$f" Service)" 0
    expect "$f: metrics off: metrics port" "$(q "$f" "[$c | .ports[] | select(.name == \"metrics\")] | length")" 0
  else
    expect "$f: --metrics-bind-address" "$metrics_addr" "0.0.0.0:$(q "$f" "$c | .ports[] | select(.name == \"metrics\") | .containerPort")"
    expect "$f: Services" "$(count_kind "$f" Service)" 1
    expect "$f: Service port" "$(q "$f" '.[] | select(.kind == "Service") | .spec.ports[0] | "\(.name) \(.targetPort)"')" "metrics metrics"
    expect "$f: metrics Service selector labels the operator pods lack" \
      "$(q "$f" "([.[] | select(.kind == \"Service\") | .spec.selector | to_entries[]] - [$d | .spec.template.metadata.labels | to_entries[]]) | length")" 0
  fi
  # Leader election: the Lease Role in the release namespace, limited to the lease's name.
  if [ "$(arg "$f" leader-elect)" = true ]; then
    expect "$f: --lease-namespace" "$(arg "$f" lease-namespace)" "$ns"
    local lease
    lease=$(arg "$f" lease-name)
    [ -n "$lease" ] || fail "$f: no --lease-name"
    if [ "$(count_kind "$f" RoleBinding)" != 0 ]; then
      expect "$f: lease Role" "$(q "$f" ".[] | select(.kind == \"Role\" and .metadata.namespace == \"$ns\") | .rules[] |
        select(.resources == [\"leases\"]) | \"\(.verbs | join(\",\")):\(.resourceNames // [] | join(\",\"))\"" | sort | paste -sd' ')" \
        "create: get,update:$lease"
    fi
  else
    expect "$f: leader election off: lease flags" "$(args_of "$f" | grep -c -- '--lease-' || true)" 0
  fi
  # The ServiceAccount the pods run as is the one bound.
  local sa
  sa=$(q "$f" "$pod | .serviceAccountName")
  if [ "$(count_kind "$f" ServiceAccount)" = 1 ]; then
    expect "$f: ServiceAccount" "$(q "$f" '.[] | select(.kind == "ServiceAccount") | "\(.metadata.namespace)/\(.metadata.name)"')" "$ns/$sa"
  fi
  local bound
  bound=$(q "$f" ".[] | select(.kind == \"RoleBinding\" or .kind == \"ClusterRoleBinding\") | .subjects[] | \"\(.kind) \(.namespace)/\(.name)\"" | sort -u)
  [ -z "$bound" ] || expect "$f: binding subjects" "$bound" "ServiceAccount $ns/$sa"
  # The operator's rules are docs/operator.md's table, exactly (the lease Role included).
  if [ "$(count_kind "$f" RoleBinding)$(count_kind "$f" ClusterRoleBinding)" != 00 ]; then
    # Nodes are cluster-scoped: a namespace-scoped install grants none (--node-lost-after=0).
    local want=$doc_triples
    [ -z "$(arg "$f" namespace)" ] || want=$(grep -v '^|nodes|' <<<"$doc_triples")
    [ -n "$(arg "$f" namespace)" ] || [ "$(arg "$f" node-lost-after)" != 0 ] || want=$(grep -v '^|nodes|' <<<"$doc_triples")
    diff <(echo "$want") <(rule_triples "$f" "") >"$WORK/r/rules.diff" ||
      fail "$f: the chart's RBAC rules differ from docs/operator.md's table (< docs, > chart): $(cat "$WORK/r/rules.diff")"
  fi
  # The Role/ClusterRole per scope.
  local watch
  watch=$(arg "$f" namespace)
  if [ -z "$watch" ]; then
    if [ "$(count_kind "$f" RoleBinding)$(count_kind "$f" ClusterRoleBinding)" != 00 ]; then
      expect "$f: ClusterRoles (scope cluster)" "$(count_kind "$f" ClusterRole)" 1
      expect "$f: ClusterRoleBindings (scope cluster)" "$(count_kind "$f" ClusterRoleBinding)" 1
    fi
  else
    expect "$f: ClusterRoles (scope namespace)" "$(count_kind "$f" ClusterRole)" 0
    expect "$f: ClusterRoleBindings (scope namespace)" "$(count_kind "$f" ClusterRoleBinding)" 0
    expect "$f: operator Role's namespace (= --namespace)" \
      "$(q "$f" '.[] | select(.kind == "Role") | select(any(.rules[]; any(.resources[]; . == "pods"))) | .metadata.namespace')" "$watch"
    expect "$f: operator RoleBinding's namespace" \
      "$(q "$f" '.[] | select(.kind == "RoleBinding") | select(.roleRef.name | endswith("-leader-election") | not) | .metadata.namespace')" "$watch"
  fi
}

# Default values.
render "$WORK/r/default" tb tb-system
F=$WORK/r/default.json
check_common "$F" tb tb-system
expect "default image" "$(q "$F" '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].image')" "trainbench/operator:$app_version"
expect "default replicas" "$(q "$F" '.[] | select(.kind == "Deployment") | .spec.replicas')" 1
expect "default --worker-image, --worker-cuda-image" "$(arg "$F" worker-image) $(arg "$F" worker-cuda-image)" \
  "$worker_default $worker_default-cuda"
expect "default --leader-elect" "$(arg "$F" leader-elect)" true
expect "default scope: no --namespace" "$(arg "$F" namespace)" ""
expect "default: no monitors" "$(count_kind "$F" ServiceMonitor)$(count_kind "$F" PodMonitor)" 00
expect "dashboard label" "$(q "$F" '.[] | select(.kind == "ConfigMap") | .metadata.labels.grafana_dashboard')" 1
[ "$(q "$F" '.[] | select(.kind == "ConfigMap") | .data["trainbench.json"]')" = "$(cat "$dashboard")" ] ||
  fail "the dashboard ConfigMap does not hold dashboards/trainbench.json"

# Namespace scope, watching the release namespace and another one.
render "$WORK/r/ns" tbns bench -f "$HERE/values-namespaced.yaml"
check_common "$WORK/r/ns.json" tbns bench
expect "namespaced --namespace" "$(arg "$WORK/r/ns.json" namespace)" bench
render "$WORK/r/ns-other" tbns bench -f "$HERE/values-namespaced.yaml" --set watchNamespace=team-a --set metrics.podMonitor.enabled=true
check_common "$WORK/r/ns-other.json" tbns bench
expect "watchNamespace team-a" "$(arg "$WORK/r/ns-other.json" namespace)" team-a
expect "PodMonitor namespaces (scope namespace)" "$(q "$WORK/r/ns-other.json" '.[] | select(.kind == "PodMonitor") | .spec.namespaceSelector.matchNames | join(",")')" team-a

# Monitoring on.
render "$WORK/r/mon" tb tb-system -f "$HERE/values-monitoring.yaml"
F=$WORK/r/mon.json
check_common "$F" tb tb-system
expect "ServiceMonitor endpoint" "$(q "$F" '.[] | select(.kind == "ServiceMonitor") | .spec.endpoints[0] | "\(.port) \(.path) \(.interval) \(.scrapeTimeout)"')" "metrics /metrics 15s 10s"
expect "ServiceMonitor selector labels the metrics Service lacks" \
  "$(q "$F" '([.[] | select(.kind == "ServiceMonitor") | .spec.selector.matchLabels | to_entries[]] - [.[] | select(.kind == "Service") | .metadata.labels | to_entries[]]) | length')" 0
expect "ServiceMonitor namespace" "$(q "$F" '.[] | select(.kind == "ServiceMonitor") | .spec.namespaceSelector.matchNames | join(",")')" tb-system
expect "monitor labels" "$(q "$F" '[.[] | select(.kind == "ServiceMonitor" or .kind == "PodMonitor") | .metadata.labels.release] | join(",")')" "kube-prometheus-stack,kube-prometheus-stack"
PODMONITOR_SELECTOR=$(q "$F" '.[] | select(.kind == "PodMonitor") | .spec.selector.matchLabels | to_entries | map("\(.key)=\(.value)") | join(",")')
PODMONITOR_PORT_REGEX=$(q "$F" '.[] | select(.kind == "PodMonitor") | .spec.podMetricsEndpoints[0].relabelings[] | select(.action == "keep" and .sourceLabels == ["__meta_kubernetes_pod_container_port_name"]) | .regex')
[ -n "$PODMONITOR_SELECTOR" ] && [ -n "$PODMONITOR_PORT_REGEX" ] || fail "PodMonitor: no selector or port-name keep rule"
expect "PodMonitor namespaces (scope cluster)" "$(q "$F" '.[] | select(.kind == "PodMonitor") | .spec.namespaceSelector.any')" true
expect "dashboard ConfigMap namespace/annotation" "$(q "$F" '.[] | select(.kind == "ConfigMap") | "\(.metadata.namespace) \(.metadata.annotations.grafana_folder)"')" "monitoring Trainbench"

# Everything optional off.
render "$WORK/r/min" tb tb-system -f "$HERE/values-minimal.yaml"
F=$WORK/r/min.json
check_common "$F" tb tb-system
expect "minimal: objects" "$(q "$F" '[.[].kind] | sort | join(",")')" "CustomResourceDefinition,Deployment"
expect "minimal: serviceAccountName" "$(q "$F" '.[] | select(.kind == "Deployment") | .spec.template.spec.serviceAccountName')" platform-operators
expect "minimal: --metrics-bind-address" "$(arg "$F" metrics-bind-address)" 0
expect "minimal: --leader-elect" "$(arg "$F" leader-elect)" false

# Custom image, two replicas, scheduling.
render "$WORK/r/custom" rel tb-system -f "$HERE/values-custom-image.yaml"
F=$WORK/r/custom.json
check_common "$F" rel tb-system
D='.[] | select(.kind == "Deployment")'
expect "custom image" "$(q "$F" "$D | .spec.template.spec.containers[0] | \"\(.image) \(.imagePullPolicy)\"")" \
  "registry.example.com/ml/trainbench-operator:0.1.0-rc1 Always"
expect "custom pull secret" "$(q "$F" "$D | .spec.template.spec.imagePullSecrets[0].name")" regcred
expect "custom worker images" "$(arg "$F" worker-image) $(arg "$F" worker-cuda-image)" \
  "registry.example.com/ml/trainbench-worker:0.1.0-rc1 registry.example.com/ml/trainbench-worker:0.1.0-rc1-cuda"
expect "custom replicas/name" "$(q "$F" "$D | \"\(.spec.replicas) \(.metadata.name)\"")" "2 tb"
expect "custom lease" "$(arg "$F" lease-name)" tb-lease
expect "custom last arg" "$(args_of "$F" | tail -n 1)" "--burst=500"
expect "custom workers/qps" "$(arg "$F" workers) $(arg "$F" qps)" "4 100"
expect "custom scheduling" "$(q "$F" "$D | .spec.template.spec | \"\(.nodeSelector[\"kubernetes.io/os\"]) \(.tolerations[0].key) \(.affinity.nodeAffinity | has(\"requiredDuringSchedulingIgnoredDuringExecution\")) \(.priorityClassName)\"")" \
  "linux dedicated true system-cluster-critical"
expect "custom resources" "$(q "$F" "$D | .spec.template.spec.containers[0].resources.limits.memory")" 512Mi
expect "custom pod label/annotation" "$(q "$F" "$D | .spec.template.metadata | \"\(.labels.team) \(.annotations[\"example.com/team\"])\"")" "ml-platform ml-platform"
expect "custom env" "$(q "$F" "$D | .spec.template.spec.containers[0].env[0].name")" MALLOC_ARENA_MAX

# values.schema.json and the templates' own checks reject bad values (lint and template).
# reject WHAT PATTERN HELM-ARGS: helm template (and install) refuses, saying PATTERN; helm lint too
# for schema errors (lint reports the templates' own `fail`/`required` as INFO only, by design:
# those are checked with template, see reject_template).
reject() {
  reject_template "$@"
  shift 2
  if "$HELM" lint --strict "$CHART" "$@" >"$WORK/r/bad.out" 2>&1; then fail "helm lint accepted $*"; fi
}
reject_template() {
  local why=$1 pattern=$2
  shift 2
  if "$HELM" template x "$CHART" "$@" >"$WORK/r/bad.out" 2>&1; then fail "helm template accepted $why ($*)"; fi
  grep -q -- "$pattern" "$WORK/r/bad.out" || fail "helm template's error for $why does not say '$pattern': $(cat "$WORK/r/bad.out")"
}
reject 'replicaCount: "two"' "replicaCount" --set-string replicaCount=two
reject "an unknown value" "Additional property replicas is not allowed" --set replicas=2
reject "an unknown nested value" "Additional property repo is not allowed" --set image.repo=x
reject "scope everywhere" "scope" --set scope=everywhere
reject "pullPolicy Sometimes" "pullPolicy" --set image.pullPolicy=Sometimes
reject "a port out of range" "metrics.port" --set metrics.port=70000
reject "qps 0" "operator.qps" --set operator.qps=0
reject "a bad namespace name" "watchNamespace" --set scope=namespace --set watchNamespace=Team_A
reject_template "two replicas without leader election" "needs leaderElection.enabled" --set replicaCount=2 --set leaderElection.enabled=false
reject_template "no ServiceAccount name" "serviceAccount.name is required" --set serviceAccount.create=false

# NOTES.txt rendered (helm template skips it): through tpl in a copy of the chart.
cp -r "$CHART" "$WORK/notes-chart"
mkdir -p "$WORK/notes-chart/files" && cp "$CHART/templates/NOTES.txt" "$WORK/notes-chart/files/NOTES.txt"
printf '%s\n' 'apiVersion: v1' 'kind: ConfigMap' 'metadata: {name: notes}' \
  'data: {notes: {{ tpl (.Files.Get "files/NOTES.txt") . | toJson }}}' >"$WORK/notes-chart/templates/notes-check.yaml"
notes() { "$HELM" template tb "$WORK/notes-chart" -n tb-system --show-only templates/notes-check.yaml "$@" | sed -n 's/^data: {notes: \(.*\)}$/\1/p' | jq -r .; }
notes >"$WORK/r/notes.txt" || fail "NOTES.txt does not render"
grep -q "ClusterRole + ClusterRoleBinding tb-trainbench" "$WORK/r/notes.txt" || fail "NOTES: $(cat "$WORK/r/notes.txt")"
grep -q "kubectl apply -f examples/operator-mlp.yaml" "$WORK/r/notes.txt" || fail "NOTES: no first job"
grep -q "port-forward service/tb-trainbench-metrics 8080" "$WORK/r/notes.txt" || fail "NOTES: no metrics"
grep -q "Role + RoleBinding tb-trainbench in namespace tb-system" <<<"$(notes -f "$HERE/values-namespaced.yaml")" || fail "NOTES (namespaced)"
# docs/install.md's values table covers every value (a documented key covers what is under it).
{ printf '%s\n' 'apiVersion: x.invalid/v1' 'kind: Values' 'metadata: {name: values}' 'values:'; sed 's/^/  /' "$CHART/values.yaml"; } >"$WORK/r/values.yaml"
documented=$(awk '/^## Values/ {on = 1; next} /^## / {on = 0} on' "$REPO/docs/install.md" | sed -n 's/^| `\([A-Za-z0-9_.]*\)` | .*/\1/p')
to_json "$WORK/r/values.yaml" >"$WORK/r/values.json" || fail "values.yaml does not parse"
undocumented=$(jq -r '.[0].values | paths(type != "object" and type != "array" or length == 0) |
    map(if type == "number" then "#" else . end) | join(".") | sub("\\.#.*"; "")' "$WORK/r/values.json" | sort -u |
  while read -r key; do
    k=$key
    until grep -qxF "$k" <<<"$documented"; do
      [ "${k%.*}" != "$k" ] || { echo "$key"; break; }
      k=${k%.*}
    done
  done)
[ -z "$undocumented" ] || fail "values missing from docs/install.md's table: $undocumented"
stale=$(jq -r --arg keys "$documented" '.[0].values as $v | $keys | split("\n")[] | select(. as $k | $v | getpath($k | split(".")) == null)' "$WORK/r/values.json")
[ -z "$stale" ] || fail "docs/install.md documents values the chart does not have: $stale"

# helm package: the archive holds the CRD and the dashboard as files (no symlinks followed).
"$HELM" package "$CHART" -d "$WORK/pkg" >/dev/null || fail "helm package failed"
tgz="$WORK/pkg/trainbench-$(sed -n 's/^version: *//p' "$CHART/Chart.yaml").tgz"
members=$(tar -tzf "$tgz")
for member in trainbench/crds/trainbench.dev_benchmarkjobs.yaml trainbench/dashboards/trainbench.json trainbench/values.schema.json; do
  grep -qx "$member" <<<"$members" || fail "helm package: $member missing from $tgz"
done
tar -xzOf "$tgz" trainbench/crds/trainbench.dev_benchmarkjobs.yaml | cmp -s - "$CRD" || fail "the packaged CRD differs from crds/"
"$HELM" lint --strict "$tgz" >/dev/null || fail "helm lint of the packaged chart"
echo "static checks passed ($((SECONDS - T0)) s)"

# ---------------------------------------------------------------------------------------------
echo "== 3. the chart on the real control plane, scope cluster"
BIN_DIRS="$BIN_DIRS:$(cd "$(dirname "$OPERATOR")" && pwd)"  # the operator pods run trainbench-operator from PATH
cp "$CONTROLPLANE_DIR/kubeconfig" "$WORK/kubeconfig"
export KUBECONFIG="$WORK/kubeconfig"
# kubectl's namespace is JOBS_NS, where lib.sh's helpers (phase_is, no_pods_of, ...) look.
"$KUBECTL" config set-context --current --namespace "$JOBS_NS" >/dev/null
for n in "$NS" "$JOBS_NS" "$NSCOPE_NS"; do
  kc create namespace "$n" >/dev/null
  NS_CREATED=1
  kc annotate namespace "$n" "scheduler.alpha.kubernetes.io/node-selector=trainbench.dev/e2e-namespace=$NS" >/dev/null
done
start_nodes --node n1 --node n2

# The CRD is the fixture's (controlplane.chart installed it from the chart's crds/): helm finds it
# at install and, crds/ being outside the release's manifest, never deletes it.
crd_state() {
  kc get crd benchmarkjobs.trainbench.dev -o jsonpath='{.metadata.uid} {.metadata.generation} {.status.conditions[?(@.type=="Established")].status}'
}
CRD_BEFORE=$(crd_state) || fail "no CRD benchmarkjobs.trainbench.dev: the fixture's chart step (tests/controlplane/chart_install.sh) did not run"
[[ $CRD_BEFORE == *" True" ]] || fail "the CRD is not Established: $CRD_BEFORE"

# helm_install RELEASE NAMESPACE FILE.json [helm args]: `helm install --wait` of the chart (helm
# creates the CRD from crds/ first, or finds it there); what it installed must be what
# `helm template` rendered into FILE.json with the same arguments.
helm_install() {
  local release=$1 ns=$2 f=$3
  shift 3
  "$HELM" install "$release" "$CHART" -n "$ns" --wait --timeout 120s "$@" >"$WORK/helm-$release.out" 2>&1 ||
    fail "helm install $release: $(cat "$WORK/helm-$release.out"; kc get pods -n "$ns" -o wide 2>&1)"
  "$HELM" get manifest "$release" -n "$ns" >"$WORK/r/$release.installed.yaml" || fail "helm get manifest $release"
  to_json "$WORK/r/$release.installed.yaml" | jq -S 'sort_by(.kind, .metadata.name)' >"$WORK/r/$release.installed.json"
  jq -S 'map(select(.kind != "CustomResourceDefinition")) | sort_by(.kind, .metadata.name)' "$f" >"$WORK/r/$release.rendered.json"
  cmp -s "$WORK/r/$release.installed.json" "$WORK/r/$release.rendered.json" ||
    fail "helm install $release installed other objects than helm template rendered: $(diff "$WORK/r/$release.rendered.json" "$WORK/r/$release.installed.json" | head -n 20)"
}
# helm_uninstall RELEASE NAMESPACE SELECTOR: `helm uninstall --wait`; the garbage collector then
# removes the Deployment's ReplicaSet and pods. Nothing the release made is left, in the namespace
# or cluster-wide, and the CRD is as it was. Sets T_UNINSTALL (the audit log's time format).
helm_uninstall() {
  T_UNINSTALL=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
  "$HELM" uninstall "$1" -n "$2" --wait --timeout 60s >"$WORK/helm-uninstall-$1.out" 2>&1 ||
    fail "helm uninstall $1: $(cat "$WORK/helm-uninstall-$1.out")"
  wait_for 30 no_operator_pods "$2" "$3" || fail "helm uninstall $1 left operator pods: $(operator_pods "$2" "$3")"
  no_workloads() { [ -z "$(kc get deployments,replicasets -n "$1" -o name)" ]; }
  wait_for 30 no_workloads "$2" || fail "workloads left by helm uninstall $1: $(kc get deployments,replicasets -n "$2" -o name)"
  expect "objects of release $1 left in $2" \
    "$(kc get serviceaccounts,roles,rolebindings,services,configmaps -n "$2" -l "app.kubernetes.io/instance=$1" -o name)" ""
  expect "cluster-scoped objects of release $1 left" \
    "$(kc get clusterroles,clusterrolebindings -l "app.kubernetes.io/instance=$1" -o name)" ""
  expect "the CRD after helm uninstall $1 (uid, generation, Established)" "$(crd_state)" "$CRD_BEFORE"
}
# uninstall_refusals USER LEASE_NAMESPACE LEASE [clean]: helm uninstall deletes the Deployment and
# the RBAC objects one after the other without waiting, so the operator, stopping, may be refused
# (403) the release of its Lease: that and nothing else. Refused, the Lease keeps its holder (it
# expires); released, the holder is empty. Either way the Lease stays: the operator made it, not
# helm. With `clean` (scaled to zero before the uninstall) nothing at all may have been refused.
uninstall_refusals() {
  local refused holder
  refused=$(audit_of "$1" | jq -r 'select(.code == 401 or .code == 403) | "\(.ts) \(.code) \(.verb) \(.apiGroup)|\(.resource)"')
  [ "${4:-}" != clean ] || [ -z "$refused" ] || fail "$1 was refused, though stopped before helm uninstall: $refused"
  while read -r ts code verb what; do
    [ -n "$ts" ] || continue
    [[ ! $ts < $T_UNINSTALL ]] || fail "$1 was refused before helm uninstall: $ts $code $verb $what"
    [ "$code $what" = "403 coordination.k8s.io|leases" ] ||
      fail "$1 was refused other than its Lease at helm uninstall: $code $verb $what"
  done <<<"$refused"
  holder=$(kc get lease -n "$2" "$3" -o jsonpath='{.spec.holderIdentity}') || fail "the Lease $2/$3 is gone after helm uninstall"
  if [ -n "$refused" ]; then
    [ -n "$holder" ] || fail "the Lease's release was refused, yet its holder is empty"
    echo "helm uninstall: the operator's Lease release was refused (its RoleBinding went first; $(wc -l <<<"$refused") requests, 403); the Lease keeps holder $holder until it expires"
  else
    expect "the Lease's holder after the operator released it" "$holder" ""
    echo "helm uninstall: the operator released its Lease before its RoleBinding went"
  fi
}
# deployment_selector FILE.json: the Deployment's selector as a label selector string.
deployment_selector() { q "$1" '.[] | select(.kind == "Deployment") | .spec.selector.matchLabels | to_entries | map("\(.key)=\(.value)") | join(",")'; }
# operator_pods NAMESPACE SELECTOR: the operator pods (made by the Deployment, so found by its
# selector, not by name) that are not being deleted, one name a line.
operator_pods() {
  kc get pods -n "$1" -l "$2" -o json | jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name' | sort
}
no_operator_pods() { [ -z "$(kc get pods -n "$1" -l "$2" -o name)" ]; }
operator_pod_count_is() { [ "$(operator_pods "$1" "$2" | grep -c .)" = "$3" ]; }
pod_log() { kc logs -n "$1" "$2" 2>/dev/null; }
# (grep reads a here-string, not a pipe: under pipefail a grep -q that stops early fails its writer.)
leading() { grep -q "trainbench-operator: leading" <<<"$(pod_log "$1" "$2")"; }
pod_ip() { kc get pod -n "$1" "$2" -o jsonpath='{.status.podIP}'; }
http_ok() { curl -sf --max-time 5 -o /dev/null "$1"; }
scrape_has() { local body; body=$(curl -sf --max-time 5 "$1") && grep -q "$2" <<<"$body"; }
# phase_in KIND NAMESPACE NAME PHASE
phase_in() { [ "$(kc get "$1" -n "$2" "$3" -o jsonpath='{.status.phase}')" = "$4" ]; }
# audit_of USER: the user's own requests in the real audit log, one JSON line each (its
# ResponseComplete event, or ResponseStarted for a watch still open): ts, verb, apiGroup,
# resource, subresource, namespace, name, code, uri. Requests made as USER by impersonation are
# the impersonating admin's there (USER is their impersonatedUser), so they are not included.
audit_of() {
  jq -c --arg u "$1" 'select(.user.username == $u and .impersonatedUser == null and
      (.stage == "ResponseComplete" or .stage == "ResponseStarted")) |
    {id: .auditID, stage, ts: .requestReceivedTimestamp, verb, apiGroup: (.objectRef.apiGroup // ""),
     resource: (.objectRef.resource // ""), subresource: (.objectRef.subresource // ""),
     namespace: (.objectRef.namespace // ""), name: (.objectRef.name // ""), code: .responseStatus.code,
     uri: .requestURI}' "$CONTROLPLANE_DIR/audit.log" |
    jq -sc 'group_by(.id)[] | (map(select(.stage == "ResponseComplete")) + .)[0] | del(.id, .stage)'
}
# pod_creators NAMESPACE: who created pods there (201), from the audit log (a pod made with
# generateName has no name in its create's event at level Metadata), one user a line.
pod_creators() {
  jq -r --arg ns "$1" 'select(.stage == "ResponseComplete" and .verb == "create" and .objectRef.resource == "pods" and
      (.objectRef.subresource // "") == "" and .objectRef.namespace == $ns and .responseStatus.code == 201) | .user.username' \
    "$CONTROLPLANE_DIR/audit.log" | sort | uniq -c | awk '{print $2 " " $1}'
}

# The operator watches JOBS_NS only (above): extraArgs come last, after the chart's own flags.
printf '%s\n' "operator:" "  extraArgs: [\"--namespace=$JOBS_NS\"]" >"$WORK/r/cluster-values.yaml"
render "$WORK/r/cluster" "$REL" "$NS" -f "$WORK/r/cluster-values.yaml"
F=$WORK/r/cluster.json
expect "scope cluster: ClusterRoles, ClusterRoleBindings" "$(count_kind "$F" ClusterRole) $(count_kind "$F" ClusterRoleBinding)" "1 1"
expect "scope cluster: the rules (as the default values')" "$(rule_triples "$F" "")" "$(rule_triples "$WORK/r/default.json" "")"
expect "the operator's last flag" "$(args_of "$F" | tail -n 1)" "--namespace=$JOBS_NS"
helm_install "$REL" "$NS" "$F" -f "$WORK/r/cluster-values.yaml"
wait_for 20 kc get bj || fail "the CRD is not served"
expect "the CRD after helm install (uid, generation, Established)" "$(crd_state)" "$CRD_BEFORE"
DEPLOYMENT=$(q "$F" '.[] | select(.kind == "Deployment") | .metadata.name')
SELECTOR=$(deployment_selector "$F")
SA=$(q "$F" '.[] | select(.kind == "ServiceAccount") | .metadata.name')
SA_USER="system:serviceaccount:$NS:$SA"
LEASE=$(arg "$F" lease-name)
METRICS_SERVICE=$(q "$F" '.[] | select(.kind == "Service") | .metadata.name')
HEALTH_PORT=$(q "$F" '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].ports[] | select(.name == "health") | .containerPort')
METRICS_PORT=$(q "$F" '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].ports[] | select(.name == "metrics") | .containerPort')

# helm install --wait returned: the Deployment's one pod is ready, and it leads.
expect "operator pods after helm install --wait" "$(operator_pods "$NS" "$SELECTOR" | grep -c .)" 1
POD_A=$(operator_pods "$NS" "$SELECTOR")
expect "ready replicas after helm install --wait" "$(kc get deployment -n "$NS" "$DEPLOYMENT" -o jsonpath='{.status.readyReplicas}')" 1
[[ $POD_A == "$DEPLOYMENT"-*-* ]] || fail "operator pod $POD_A is not named after its ReplicaSet ($DEPLOYMENT-<hash>-<suffix>)"
# Made by the real controllers: the ReplicaSet controller created it (under its own
# ServiceAccount), the scheduler bound it to one of the test's nodes, the ServiceAccount admission
# gave it its token volume.
expect "operator pod's owner" "$(kc get pod -n "$NS" "$POD_A" -o jsonpath='{.metadata.ownerReferences[0].kind}')" ReplicaSet
expect "who created pods in $NS (user, count)" "$(pod_creators "$NS")" "system:serviceaccount:kube-system:replicaset-controller 1"
expect "who bound $POD_A" "$(jq -r --arg ns "$NS" --arg n "$POD_A" 'select(.stage == "ResponseComplete" and
    .objectRef.resource == "pods" and .objectRef.subresource == "binding" and .objectRef.namespace == $ns and
    .objectRef.name == $n and .responseStatus.code == 201) | .user.username' "$CONTROLPLANE_DIR/audit.log")" system:kube-scheduler
[[ $(kc get pod -n "$NS" "$POD_A" -o jsonpath='{.spec.nodeName}') == "$NS"-n[12] ]] ||
  fail "operator pod $POD_A is not on the test's nodes: $(kc get pod -n "$NS" "$POD_A" -o wide)"
kc get pod -n "$NS" "$POD_A" -o json | jq -e '.spec.volumes[] | select(.name | startswith("kube-api-access-")) | .projected' >/dev/null ||
  fail "operator pod $POD_A has no ServiceAccount token volume"
wait_for 30 leading "$NS" "$POD_A" || fail "operator pod $POD_A is not leading: $(pod_log "$NS" "$POD_A")"
grep -q "watching namespace $JOBS_NS" <<<"$(pod_log "$NS" "$POD_A")" || fail "operator pod $POD_A: $(pod_log "$NS" "$POD_A")"
# A second replica (replicaCount 2, or the overlap of a rolling update) waits for the lease.
"$HELM" upgrade "$REL" "$CHART" -n "$NS" --reuse-values --set replicaCount=2 --wait --timeout 120s >"$WORK/helm-upgrade.out" 2>&1 ||
  fail "helm upgrade --set replicaCount=2: $(cat "$WORK/helm-upgrade.out")"
kc rollout status -n "$NS" "deployment/$DEPLOYMENT" --timeout=60s >/dev/null || fail "kubectl rollout status after the upgrade"
expect "operator pods after helm upgrade --set replicaCount=2" "$(operator_pods "$NS" "$SELECTOR" | grep -c .)" 2
POD_B=$(operator_pods "$NS" "$SELECTOR" | grep -vxF "$POD_A")
waiting_for_lease() { grep -q "waiting for the lease" <<<"$(pod_log "$1" "$2")"; }
wait_for 20 waiting_for_lease "$NS" "$POD_B" || fail "pod $POD_B: $(pod_log "$NS" "$POD_B")"
IP_A=$(pod_ip "$NS" "$POD_A")
IP_B=$(pod_ip "$NS" "$POD_B")
# What a kubelet's probes would ask (port "health"; the node agent runs no probes) and
# Prometheus' scrape (Service targetPort "metrics").
wait_for 20 http_ok "http://$IP_A:$HEALTH_PORT/readyz" || fail "leader's /readyz on port health ($IP_A:$HEALTH_PORT)"
http_ok "http://$IP_A:$HEALTH_PORT/healthz" || fail "leader's /healthz"
wait_for 20 http_ok "http://$IP_B:$HEALTH_PORT/readyz" || fail "standby's /readyz (a standby must be ready, or a rolling update stalls)"
http_ok "http://$IP_B:$HEALTH_PORT/healthz" || fail "standby's /healthz"
svc_selector=$(kc get service -n "$NS" "$METRICS_SERVICE" -o json | jq -r '.spec.selector | to_entries | map("\(.key)=\(.value)") | join(",")')
expect "pods the metrics Service selects" "$(kc get pods -n "$NS" -l "$svc_selector" -o name | sort | paste -sd' ')" \
  "$(printf 'pod/%s\n' "$POD_A" "$POD_B" | sort | paste -sd' ')"
curl -sf --max-time 5 "http://$IP_A:$METRICS_PORT/metrics" >"$WORK/metrics.txt" || fail "leader's /metrics on port metrics"
grep -q '^trainbench_operator_' "$WORK/metrics.txt" || fail "no trainbench_operator_ series: $(head -c 500 "$WORK/metrics.txt")"
! leading "$NS" "$POD_B" || fail "both replicas lead"

# A job in another namespace than the operator's (scope cluster), to Succeeded: 2 runs. Its
# spec.baseline names a ConfigMap that holds no report: the operator reads it (get configmaps,
# under the chart's rules) and says so in condition Regressed.
mlp_job tiny 4 "{backoffLimit: 0, cleanPodPolicy: All}" "{nodes: 1, devicesPerNode: 1, paradigm: none}" \
  "{nodes: 2, devicesPerNode: 1}" >"$WORK/tiny.yaml"
echo "  baseline: {configMap: {name: tiny-base}}" >>"$WORK/tiny.yaml"
kc create configmap tiny-base --from-literal=report='not a report' >/dev/null
kc apply -f "$WORK/tiny.yaml" >/dev/null
wait_phase tiny Succeeded || fail "job tiny: $(kc get bj tiny -o jsonpath='{.status}')"
wait_for 30 no_pods_of tiny || fail "tiny's pods remain (cleanPodPolicy All)"
expect "tiny's runs" "$(kc get bj tiny -o jsonpath='{.status.report.runs[*].phase}')" "Succeeded Succeeded"
has_regressed() { [ -n "$(kc get bj tiny -o jsonpath='{.status.conditions[?(@.type=="Regressed")].reason}')" ]; }
wait_for 30 has_regressed || fail "tiny: no Regressed condition: $(kc get bj tiny -o jsonpath='{.status.conditions}')"
expect "tiny's Regressed" "$(kc get bj tiny -o jsonpath='{.status.conditions[?(@.type=="Regressed")].message}')" \
  "ConfigMap tiny-base (key report): not a JSON report"

# A long job: its trainer pod is what the PodMonitor selects (a real scrape of its workers); it
# runs past activeDeadlineSeconds, so the job fails and, with cleanPodPolicy Running, the operator
# deletes its running pods one by one (the `delete` verb; runs and gangs go by deletecollection).
# (The deadline leaves the pods time to start and train on a loaded machine; it is not timed.)
mlp_job long 100000 "{activeDeadlineSeconds: 30, backoffLimit: 0, cleanPodPolicy: Running}" \
  "{nodes: 1, devicesPerNode: 2}" >"$WORK/long.yaml"
kc apply -f "$WORK/long.yaml" >/dev/null
TRAINER=long-r0-a0-trainer-0
wait_for 60 phase_in pod "$JOBS_NS" "$TRAINER" Running || fail "long's trainer is not running"
# The PodMonitor's targets among the test's pods (its namespaceSelector is `any` in scope
# cluster; other tests' pods share the control plane): every declared port of the pods it
# selects, kept by port name.
targets=$(kc get pods -n "$JOBS_NS" -l "$PODMONITOR_SELECTOR" -o json |
  jq -r '.items[] | .metadata.name as $n | .status.podIP as $ip | .spec.containers[].ports[]? | "\($n) \(.name) \($ip):\(.containerPort)"' |
  awk -v re="^($PODMONITOR_PORT_REGEX)\$" '$2 ~ re')
expect "the PodMonitor's targets" "$(awk '{print $1 "/" $2}' <<<"$targets" | sort | paste -sd' ')" \
  "$TRAINER/metrics-0 $TRAINER/metrics-1"
for t in $(awk '{print $3}' <<<"$targets"); do
  wait_for 30 scrape_has "http://$t/metrics" '^trainbench_steps_total' || fail "worker metrics at $t (a PodMonitor target)"
done
wait_for 90 phase_is long Failed || fail "long did not fail: $(kc get bj long -o jsonpath='{.status}')"
expect "long's failure" "$(kc get bj long -o jsonpath='{.status.conditions[?(@.type=="Failed")].reason}')" DeadlineExceeded
wait_for 30 no_pods_of long || fail "long's pods remain: $(kc get pods -l trainbench.dev/job=long -o name)"

# Failover: the leader goes (SIGTERM releases the lease). Its ReplicaSet replaces it at once, so
# the standby and the replacement both ask for the released lease: one of them takes over (on a
# cluster too, whichever asks first), the other waits.
kc delete pod -n "$NS" "$POD_A" --wait=true --timeout=60s >/dev/null
wait_for 30 operator_pod_count_is "$NS" "$SELECTOR" 2 || fail "the deleted leader was not replaced: $(operator_pods "$NS" "$SELECTOR")"
POD_C=$(operator_pods "$NS" "$SELECTOR" | grep -vxF "$POD_B")
[ "$POD_C" != "$POD_A" ] || fail "the replacement has the deleted pod's name"
one_leads() {
  local n=0 p
  for p in "$@"; do if leading "$NS" "$p"; then n=$((n + 1)); fi; done
  [ $n = 1 ]
}
wait_for 30 one_leads "$POD_B" "$POD_C" ||
  fail "no operator took over from the deleted leader: $POD_B: $(pod_log "$NS" "$POD_B"); $POD_C: $(pod_log "$NS" "$POD_C")"
STANDBY=$POD_C
if leading "$NS" "$POD_C"; then STANDBY=$POD_B; fi
wait_for 30 waiting_for_lease "$NS" "$STANDBY" || fail "pod $STANDBY: $(pod_log "$NS" "$STANDBY")"

# The reporter Role's configmaps verbs are needed: the real RBAC escalation check refuses a Role
# that grants more than the operator holds (delete), and accepts the reporter's own rules.
role_as_operator() {
  kc create -n "$JOBS_NS" -f - --as="$SA_USER" -o name <<EOF2
{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "$1"},
 "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["x-r0-result"], "verbs": $2}]}
EOF2
}
role_as_operator escalation-ok '["get", "update", "patch"]' >/dev/null 2>"$WORK/esc.err" ||
  fail "the operator's ServiceAccount cannot create a reporter-like Role: $(cat "$WORK/esc.err")"
if role_as_operator escalation-refused '["get", "update", "patch", "delete"]' >/dev/null 2>"$WORK/esc.err"; then
  fail "the API server let the operator grant configmaps delete, which it does not hold"
fi
grep -q 'is forbidden: .* is attempting to grant RBAC permissions not currently held' "$WORK/esc.err" &&
  grep -q 'Verbs:\["delete"\]' "$WORK/esc.err" || fail "escalation refusal: $(cat "$WORK/esc.err")"
kc delete role -n "$JOBS_NS" escalation-ok >/dev/null

# check_audit USER RULES-FILE.json STRICT: no 401/403; prints what was used; every request covered
# by a rule; with STRICT=1 also every rule used or in UNUSED_OK.
check_audit() {
  local user=$1 f=$2 strict=$3 requests used rules denied
  requests=$(audit_of "$user")
  [ -n "$requests" ] || fail "no requests by $user in the audit log"
  denied=$(jq -r 'select(.code == 401 or .code == 403) | "\(.code) \(.verb) \(.uri)"' <<<"$requests")
  [ -z "$denied" ] || fail "$user was denied: $denied"
  used=$(jq -r 'select(.resource != "") |
                "\(.apiGroup)|\(.resource)\(if .subresource != "" then "/" + .subresource else "" end)|\(.verb)"' <<<"$requests" | sort -u)
  echo "$user used (group|resource|verb: requests, HTTP codes):"
  jq -r 'select(.resource != "") |
         "\(.apiGroup)|\(.resource)\(if .subresource != "" then "/" + .subresource else "" end)|\(.verb) \(.code)"' <<<"$requests" |
    sort | uniq -c | awk '{n[$2] += $1; c[$2] = c[$2] (c[$2] == "" ? "" : ",") $3} END {for (k in n) printf "  %-52s %4d  %s\n", k, n[k], c[k]}' | sort
  jq -r 'select(.resource == "") | "  (non-resource) \(.verb) \(.uri) \(.code)"' <<<"$requests" | sort -u
  rules=$(rule_triples "$f" "")
  local unused="" r
  [ "$strict" = 1 ] || rules=""
  while read -r r; do
    [ -n "$r" ] || continue
    grep -qxF "$r" <<<"$used" && continue
    grep -qxF "$r" <<<"$(printf '%s\n' "${UNUSED_OK[@]}")" && { echo "  unused, allowed: $r"; continue; }
    unused="$unused $r"
  done <<<"$rules"
  rules=$(rule_triples "$f" "")
  [ -z "$unused" ] || fail "rules of the chart that $user never used (least privilege; add to UNUSED_OK with a reason if needed):$unused"
  while read -r r; do
    grep -qxF "$r" <<<"$rules" || fail "$user used $r, which no rule of the chart grants"
  done <<<"$used"
}
check_audit "$SA_USER" "$F" 1
# Watching JOBS_NS, it wrote nothing elsewhere: namespaced requests in JOBS_NS, or its Lease in NS.
elsewhere=$(audit_of "$SA_USER" | jq -r --arg j "$JOBS_NS" --arg ns "$NS" 'select(.resource != "" and .namespace != $j and
  (.namespace != $ns or .resource != "leases") and (.namespace != "" or .resource != "nodes")) | "\(.verb) \(.uri)"' | sort -u)
[ -z "$elsewhere" ] || fail "the operator made requests outside $JOBS_NS (and its Lease, the nodes): $elsewhere"
echo "scope cluster passed ($((SECONDS - T0)) s)"

# ---------------------------------------------------------------------------------------------
echo "== 4. the chart on the real control plane, scope namespace"
helm_uninstall "$REL" "$NS" "$SELECTOR"
uninstall_refusals "$SA_USER" "$NS" "$LEASE"
render "$WORK/r/nscope" "$NSREL" "$NSCOPE_NS" -f "$HERE/values-namespaced.yaml"
F=$WORK/r/nscope.json
check_common "$F" "$NSREL" "$NSCOPE_NS"
helm_install "$NSREL" "$NSCOPE_NS" "$F" -f "$HERE/values-namespaced.yaml"
expect "cluster-scoped objects of the namespace-scoped release" \
  "$(kc get clusterroles,clusterrolebindings -l "app.kubernetes.io/instance=$NSREL" -o name)" ""
NS_SELECTOR=$(deployment_selector "$F")
NS_POD=$(operator_pods "$NSCOPE_NS" "$NS_SELECTOR")
NS_USER="system:serviceaccount:$NSCOPE_NS:$(q "$F" '.[] | select(.kind == "ServiceAccount") | .metadata.name')"
[ -n "$NS_POD" ] || fail "no operator pod in $NSCOPE_NS after helm install --wait"
wait_for 30 leading "$NSCOPE_NS" "$NS_POD" || fail "namespaced operator is not leading: $(pod_log "$NSCOPE_NS" "$NS_POD")"
# A job outside the watched namespace (in JOBS_NS, whose operator is gone) is not the operator's;
# one inside runs.
mlp_job outside 4 "{backoffLimit: 0}" "{nodes: 1, devicesPerNode: 1, paradigm: none}" >"$WORK/outside.yaml"
kc apply -n "$JOBS_NS" -f "$WORK/outside.yaml" >/dev/null
mlp_job inside 4 "{backoffLimit: 0}" "{nodes: 1, devicesPerNode: 1, paradigm: none}" >"$WORK/inside.yaml"
kc apply -n "$NSCOPE_NS" -f "$WORK/inside.yaml" >/dev/null
wait_for 120 phase_in bj "$NSCOPE_NS" inside Succeeded ||
  fail "job inside: $(kc get bj -n "$NSCOPE_NS" inside -o jsonpath='{.status}')"
# The operator asks for the run's pods to go (cleanPodPolicy All) before it writes Succeeded; they
# are gone once their node agent has stopped them, within its grace (an apiserver delete is
# asynchronous), so this waits on the cluster, not on the phase.
inside_pods() { kc get pods -n "$NSCOPE_NS" -l trainbench.dev/job=inside -o json; }
no_inside_pods() { [ "$(inside_pods | jq '.items | length')" = 0 ]; }
wait_for 30 no_inside_pods || fail "inside's pods remain (cleanPodPolicy All): $(inside_pods | jq -c '.items[] |
  {name: .metadata.name, phase: .status.phase, created: .metadata.creationTimestamp, deletion: .metadata.deletionTimestamp}');
  pod requests in $NSCOPE_NS: $(jq -c --arg ns "$NSCOPE_NS" 'select(.stage == "ResponseComplete" and .objectRef.resource == "pods" and
    .objectRef.namespace == $ns and .verb != "get" and .verb != "list" and .verb != "watch") |
    [.requestReceivedTimestamp, .user.username, .verb, .objectRef.name, .objectRef.subresource, .responseStatus.code]' "$CONTROLPLANE_DIR/audit.log")"
expect "the job outside the watched namespace" \
  "$(kc get bj -n "$JOBS_NS" outside -o jsonpath='{.status.phase}')$(kc get pods -n "$JOBS_NS" -l trainbench.dev/job=outside -o name)" ""
check_audit "$NS_USER" "$F" 0  # the rules are the cluster scope's, checked above
outside_ns=$(audit_of "$NS_USER" | jq -r --arg ns "$NSCOPE_NS" 'select(.resource != "" and .namespace != $ns) | "\(.verb) \(.uri)"')
[ -z "$outside_ns" ] || fail "the namespaced operator made requests outside its namespace: $outside_ns"
# docs/install.md's clean hand-over: scaled to zero first, the operator releases its Lease while
# its RBAC is still there, and the uninstall that follows stops nothing.
"$HELM" upgrade "$NSREL" "$CHART" -n "$NSCOPE_NS" --reuse-values --set replicaCount=0 --wait --timeout 60s \
  >"$WORK/helm-scale0.out" 2>&1 || fail "helm upgrade --set replicaCount=0: $(cat "$WORK/helm-scale0.out")"
wait_for 30 no_operator_pods "$NSCOPE_NS" "$NS_SELECTOR" || fail "operator pods left at replicaCount 0: $(operator_pods "$NSCOPE_NS" "$NS_SELECTOR")"
helm_uninstall "$NSREL" "$NSCOPE_NS" "$NS_SELECTOR"
uninstall_refusals "$NS_USER" "$NSCOPE_NS" "$(arg "$F" lease-name)" clean

# Nothing of the test runs any more: no pod in its namespaces, no process with one of its nodes'
# pod IPs (each node agent owns an address block 127.K; its node's InternalIP is 127.K.0.10).
expect "pods left" "$(for n in "$NS" "$JOBS_NS" "$NSCOPE_NS"; do kc get pods -n "$n" -o name; done)" ""
for node in "$NS-n1" "$NS-n2"; do
  ip=$(kc get node "$node" -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')
  [[ $ip == 127.*.0.10 ]] || fail "node $node's InternalIP: $ip"
  block=${ip%.0.10}
  left=$(grep -lz "^TRAINBENCH_POD_IP=${block//./\\.}\." /proc/[0-9]*/environ 2>/dev/null || true)
  [ -z "$left" ] || fail "processes of $node's pods left: $left"
done

echo "PASS helm_chart_test ($((SECONDS - T0)) s)"

#!/usr/bin/env bash
# The Helm chart installed into kubesim (`helm install --wait`) with its image values pointing at
# the images built by scripts/images.sh, and kubesim's kubelet running every pod from its image
# (`--images buildah`, tests/kubesim/README.md): the operator runs from trainbench/operator (a pod
# of the chart's Deployment), and runs examples/operator-mlp.yaml and
# examples/hybrid-ps.yaml to Succeeded with every benchmark pod running from trainbench/worker.
# Asserts: each container ran the image it names (containerStatuses' imageID is the built
# image's), as uid/gid 65532 inside the image's root filesystem; the report in status as with
# the process kubelet; a missing worker image fails its job through the scheduling timeout, naming
# ErrImagePull/ImagePullBackOff; and nothing is left: no pod, process, mount or buildah container.
#
# Needs: root, KUBESIM, CRD, HELM, REPO (as tests/helm), the images (scripts/images.sh).
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=${REPO:-$(cd "$HERE/../.." && pwd)}
BIN_DIRS=/nonexistent  # nothing from the build reaches the pods: they run what the images hold
# shellcheck source=../operator/e2e/lib.sh
source "$REPO/tests/operator/e2e/lib.sh"
VERSION=$(bash "$REPO/scripts/version.sh")
B=(buildah --storage-driver vfs)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (buildah, chroot)"; [ "${TRAINBENCH_REQUIRE_IMAGES:-0}" != 1 ] || exit 1; exit 77; }
HELM=${HELM:-$REPO/.tools/helm/helm}
[ -x "$HELM" ] || fail "helm not found at $HELM: run scripts/fetch-helm.sh"
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"
OPERATOR_IMAGE=trainbench/operator:$VERSION
WORKER_IMAGE=trainbench/worker:$VERSION

image_id() { "${B[@]}" inspect --type image --format '{{.FromImageID}}' "localhost/$1" 2>/dev/null; }
OPERATOR_ID=$(image_id "$OPERATOR_IMAGE") || true
WORKER_ID=$(image_id "$WORKER_IMAGE") || true
[ -n "$OPERATOR_ID" ] && [ -n "$WORKER_ID" ] || fail "images $OPERATOR_IMAGE / $WORKER_IMAGE not built: run scripts/images.sh"
expect() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

# pod_pids POD_IP: the processes of the pod with that IP (the kubelet gives each TRAINBENCH_POD_IP).
pod_pids() {
  grep -lzx "TRAINBENCH_POD_IP=$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true
}
# ids_of PID: "uid gid" of the process (real ids).
ids_of() { awk '/^Uid:/ {u = $2} /^Gid:/ {g = $2} END {print u, g}' "/proc/$1/status"; }
# container_image_id NS POD: the imageID of the pod's first container, as the kubelet reports it.
container_image_id() { kc get pod -n "$1" "$2" -o jsonpath='{.status.containerStatuses[0].imageID}'; }

echo "== the chart rendered with the built images"
"$HELM" template tb "$REPO/helm/trainbench" -n tb-system --include-crds \
  --set image.repository=trainbench/operator --set "image.tag=$VERSION" >"$WORK/chart.yaml" 2>"$WORK/helm.err" ||
  fail "helm template: $(cat "$WORK/helm.err")"
KUBECONFIG=/dev/null "$KUBECTL" annotate --local -f "$WORK/chart.yaml" -o json 'tb.invalid/none-' | jq -s . >"$WORK/chart.json" ||
  fail "the rendered chart does not parse"
expect "the chart's operator image" "$(jq -r '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].image' "$WORK/chart.json")" "$OPERATOR_IMAGE"

echo "== helm install into kubesim, its kubelet running pods from images"
start_kubesim --images buildah --node n1 --node n2
"$HELM" install tb "$REPO/helm/trainbench" -n tb-system --create-namespace --wait --timeout 600s \
  --set image.repository=trainbench/operator --set "image.tag=$VERSION" >"$WORK/helm-install.log" 2>&1 ||
  fail "helm install: $(tail -5 "$WORK/helm-install.log"; kc get pods -n tb-system -o wide 2>&1)"
selector=$(kc get deploy -n tb-system tb-trainbench -o json | jq -r '.spec.selector.matchLabels | to_entries | map("\(.key)=\(.value)") | join(",")')
OP_POD=$(kc get pods -n tb-system -l "$selector" -o jsonpath='{.items[0].metadata.name}')
[ -n "$OP_POD" ] || fail "no operator pod made by the chart's Deployment"
leading() { grep -q "trainbench-operator: leading" <<<"$(kc logs -n tb-system "$OP_POD" 2>/dev/null)"; }
wait_for 60 leading || fail "the operator (from its image) is not leading: $(kc logs -n tb-system "$OP_POD" 2>&1 | tail -5)"
expect "operator container's imageID" "$(container_image_id tb-system "$OP_POD")" "sha256:$OPERATOR_ID"
op_ip=$(kc get pod -n tb-system "$OP_POD" -o jsonpath='{.status.podIP}')
op_pid=$(pod_pids "$op_ip" | head -1)
[ -n "$op_pid" ] || fail "no process found for the operator pod ($op_ip)"
expect "the operator process" "$(tr '\0' ' ' <"/proc/$op_pid/cmdline")" "trainbench-operator $(jq -r '.[] | select(.kind == "Deployment") | .spec.template.spec.containers[0].args | join(" ")' "$WORK/chart.json") "
expect "the operator's uid gid" "$(ids_of "$op_pid")" "65532 65532"
[ ! -e "/proc/$op_pid/root/bin/sh" ] || fail "the operator's root filesystem has a shell: not its image's"
[ -x "/proc/$op_pid/root/usr/local/bin/trainbench-operator" ] || fail "the operator's root filesystem is not its image's"
echo "PASS the operator runs from $OPERATOR_IMAGE as 65532:65532"

# run_example FILE NAME: the example to Succeeded. Every pod it made ran from the worker image (the
# imageID of every container status a watch saw), and the processes of its running pods, looked
# at while they run, are uid/gid 65532 inside the worker image's root filesystem.
run_example() {
  local file=$1 name=$2 seen="" pod ip pid ids cmd watch_pid images
  kc get pods -l "trainbench.dev/job=$name" -w -o json >"$WORK/$name.watch" 2>/dev/null &
  watch_pid=$!
  kc apply -f "$file" >/dev/null || fail "kubectl apply -f $file"
  while ! phase_is "$name" Succeeded; do
    phase_is "$name" Failed && fail "job $name failed: $(kc get bj "$name" -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')"
    while read -r pod ip; do
      [ -n "$ip" ] || continue
      for pid in $(pod_pids "$ip"); do
        # (A process that is exiting meanwhile is passed over: its /proc entry is gone, or it is
        # exiting. The kernel drops an exiting process's memory, so its command line, before its
        # root (exit_mm before exit_fs), so a root that no longer resolves is a failure only when
        # the command line, read after it, is still there.)
        ids=$(ids_of "$pid" 2>/dev/null) && [ -n "$ids" ] || continue
        [ "$ids" = "65532 65532" ] || fail "pod $pod: process $pid runs as $ids"
        if [ ! -x "/proc/$pid/root/usr/local/bin/trainbench-worker" ]; then
          cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) && [ -n "$cmd" ] || continue
          fail "pod $pod: process $pid ($cmd) is not in the worker image"
        fi
        case " $seen " in *" $pod "*) ;; *) seen+=" $pod" ;; esac
      done
    done < <(kc get pods -l "trainbench.dev/job=$name" --field-selector=status.phase=Running \
      -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}' 2>/dev/null)
    [ $SECONDS -lt $((T_JOB + 600)) ] || fail "job $name did not finish in 600 s: $(kc get bj "$name" -o jsonpath='{.status}')"
    sleep 0.3
  done
  kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null || true
  [ -n "$seen" ] || fail "job $name: no process of a running pod was seen"
  images=$(jq -r '.status.containerStatuses[]? | select(.imageID != "") | .imageID' "$WORK/$name.watch" | sort -u)
  expect "the imageIDs of $name's containers" "$images" "sha256:$WORKER_ID"
  expect "$name's runs" "$(kc get bj "$name" -o jsonpath='{.status.report.runs[*].phase}' | tr ' ' '\n' | sort -u)" Succeeded
  echo "PASS $name Succeeded; every container from $WORKER_IMAGE; processes as 65532:65532 in it:$seen"
}
T_JOB=$SECONDS
run_example "$REPO/examples/operator-mlp.yaml" operator-mlp
kc get bj operator-mlp -o jsonpath='{.status.report}' | jq -e '.runs | length == 2 and all(.examplesPerSec > 0)' >/dev/null ||
  fail "operator-mlp's report: $(kc get bj operator-mlp -o jsonpath='{.status.report}')"
T_JOB=$SECONDS
run_example "$REPO/examples/hybrid-ps.yaml" hybrid-ps

echo "== a worker image that does not exist"
sed -e "s|name: operator-mlp|name: no-image|" -e "s|image: trainbench/worker:.*|image: trainbench/worker:no-such-tag|" \
  -e "s|schedulingTimeoutSeconds: 120|schedulingTimeoutSeconds: 45|" "$REPO/examples/operator-mlp.yaml" >"$WORK/no-image.yaml"
kc apply -f "$WORK/no-image.yaml" >/dev/null
pull_backoff() { kc get pods -l trainbench.dev/job=no-image -o jsonpath='{.items[*].status.containerStatuses[*].state.waiting.reason}' | grep -Eq 'ErrImagePull|ImagePullBackOff'; }
wait_for 30 pull_backoff || fail "no ErrImagePull/ImagePullBackOff: $(kc get pods -l trainbench.dev/job=no-image -o json | jq -c '[.items[].status.containerStatuses]')"
wait_for 150 phase_is no-image Failed || fail "job no-image did not fail: $(kc get bj no-image -o jsonpath='{.status}')"
msg=$(kc get bj no-image -o jsonpath='{.status.conditions[?(@.type=="Failed")].message}')
grep -Eq 'ErrImagePull|ImagePullBackOff' <<<"$msg" || fail "the failed job's message does not name the image pull: $msg"
grep -q 'trainbench/worker:no-such-tag' <<<"$msg" || fail "the failed job's message does not name the image: $msg"
echo "PASS a missing image: $msg"

echo "== nothing left"
for j in operator-mlp hybrid-ps no-image; do kc delete bj "$j" --wait=false >/dev/null; done
wait_for 60 no_pods_of operator-mlp && wait_for 60 no_pods_of hybrid-ps && wait_for 60 no_pods_of no-image ||
  fail "benchmark pods remain: $(kc get pods -o name)"
"$HELM" uninstall tb -n tb-system --wait --timeout 120s >/dev/null || fail "helm uninstall"
no_operator_pods() { [ -z "$(kc get pods -n tb-system -l "$selector" -o name)" ]; }
wait_for 60 no_operator_pods || fail "operator pods remain after helm uninstall: $(kc get pods -n tb-system -o name)"
wait_for 60 no_containers_running || fail "containers still running: $(sim_admin GET /kubesim/v1/stats | jq -c .kubelet)"
# kubesim stopped as lib.sh's cleanup would, then: no process with one of its pod IPs, no mount
# under its directory, no buildah working container of its own.
sim_pid=${PIDS[0]}
kill -TERM "$sim_pid"
wait_for 30 bash -c "! kill -0 $sim_pid 2>/dev/null" || fail "kubesim did not exit after SIGTERM"
prefix=$(sed -n 's/.*pod and node IPs from \(127\.[0-9]*\)\..*/\1/p' "$WORK/kubesim.log")
[ -n "$prefix" ] || fail "kubesim's IP block not in its log"
left=$(grep -lz "^TRAINBENCH_POD_IP=$prefix\." /proc/[0-9]*/environ 2>/dev/null || true)
[ -z "$left" ] || fail "processes left: $left"
! grep -q "$WORK" /proc/self/mountinfo || fail "mounts left: $(grep "$WORK" /proc/self/mountinfo)"
expect "buildah containers of this kubesim left" \
  "$("${B[@]}" containers --format '{{.ContainerName}}' | grep -c "^kubesim-rootfs-$sim_pid-" || true)" 0
echo "PASS images_e2e"

# --images buildah (root only), beyond cases/images.sh: what the container gets from its image
# and its pod (env, user, working directory, ENTRYPOINT/CMD, imageID), the securityContext
# (runAsUser/Group, supplemental and fs groups, no_new_privs, readOnlyRootFilesystem, an emptyDir
# shared read-only, runAsNonRoot refusing root), the pod network shim (two pods listening on
# 0.0.0.0 at the same port, each on its own pod IP), a missing image (ErrImagePull, then
# ImagePullBackOff; ErrImageNeverPull), a SIGKILLed and a deleted container, nothing left after
# SIGTERM, and the agent refusing --images buildah without root.
# Ported from kubesim's KubesimImages.* (tests/kubesim/test/image_mode_test.cpp).
image=nodeagent-test/shell:1
[ "$(id -u)" = 0 ] || { echo "SKIP: image mode needs root"; exit 77; }
command -v buildah >/dev/null || { echo "SKIP: no buildah"; exit 77; }
buildah --storage-driver vfs inspect --type image "localhost/$image" >/dev/null 2>&1 ||
  { echo "SKIP: no test image localhost/$image (ctest -R nodeagent.test_image makes it)"; exit 77; }

# Refused without root, before it registers anything.
if command -v setpriv >/dev/null; then
  rc=0
  out=$(setpriv --reuid 65534 --regid 65534 --clear-groups "$NODEAGENT" --controlplane "$CONTROLPLANE_DIR" \
    --node "$ns-noroot" --dir "$work/noroot" --images buildah 2>&1) || rc=$?
  [ $rc = 1 ] && [[ $out == *"--images buildah"* && $out == *"must run as root"* ]] ||
    fail "without root: exit $rc, '$out'"
  echo "without root: refused ($out)"
fi

start_agent n1 --images buildah --max-grace 3
pid=$agent_pid
wait_for 30 node_ready n1 || fail "node n1 not Ready"

# ipod NAME SPEC_YAML CONTAINERS_YAML: a pod on n1 (SPEC_YAML 2 spaces in, CONTAINERS_YAML the
# list items of `containers:`).
ipod() {
  kc -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 2
  nodeSelector: {kubernetes.io/hostname: $ns-n1}
  tolerations: [{key: trainbench.dev/nodeagent-test, operator: Exists}]
$2
  containers:
$3
YAML
}
q() { jq -Rn --arg s "$1" '$s'; }  # a YAML (JSON) string
ends() { local ph; ph=$(kc -n "$ns" get pod "$1" -o jsonpath='{.status.phase}'); [ "$ph" = Succeeded ] || [ "$ph" = Failed ]; }
waiting_reason() { [ "$(kc -n "$ns" get pod "$1" -o jsonpath='{.status.containerStatuses[0].state.waiting.reason}')" = "$2" ]; }
logs_of() { kc -n "$ns" logs "$1" -c "$2"; }

# 1. Environment, user, working directory, ServiceAccount files, termination message; ENTRYPOINT
# with args, ENTRYPOINT with CMD.
script='id -u; id -g; pwd; echo FOO=$FOO X=$X HOME=$HOME HOSTNAME=$HOSTNAME; echo PATH=$PATH;
env | grep -E "^(LD_LIBRARY_PATH|TMPDIR|TRAINBENCH_|LANG=)" | grep -v "^TRAINBENCH_POD_IP=" || echo no-leak;
cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo;
test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token-readable;
hostname; grep -c "$(hostname)" /etc/hosts; echo bye > /dev/termination-log'
ipod basic "" "  - name: main
    image: $image
    command: [sh, -c, $(q "$script")]
    env: [{name: X, value: from-pod}, {name: FOO, value: pod-wins}]
  - name: args
    image: $image
    args: ['echo args \$FOO']
  - name: image
    image: $image"
wait_for 300 ends basic || fail "basic did not end: $(kc -n "$ns" get pod basic -o jsonpath='{.status}')"
phase_is basic Succeeded || fail "basic: $(kc -n "$ns" get pod basic -o jsonpath='{.status}')"
want="65532|65532|/srv|FOO=pod-wins X=from-pod HOME=/ HOSTNAME=basic|PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|no-leak|$ns|token-readable|basic|1|"
got=$(logs_of basic main | tr '\n' '|')
[ "$got" = "$want" ] || fail "basic/main: '$got', want '$want'"
[ "$(logs_of basic args)" = "args bar" ] || fail "basic/args (ENTRYPOINT + args): '$(logs_of basic args)'"
[ "$(logs_of basic image)" = "image-cmd bar" ] || fail "basic/image (ENTRYPOINT + CMD): '$(logs_of basic image)'"
id=$(buildah --storage-driver vfs inspect --type image --format '{{.FromImageID}}' "localhost/$image")
st=$(kc -n "$ns" get pod basic -o json)
jq -e --arg img "localhost/$image" --arg id "sha256:$id" '.status.containerStatuses[] | select(.name == "main") |
  .state.terminated.message == "bye\n" and .image == $img and .imageID == $id' >/dev/null <<<"$st" ||
  fail "basic: $(jq -c .status.containerStatuses <<<"$st")"
echo "basic: image user, WORKDIR, env (pod wins over image), no leak, SA files, hosts, ENTRYPOINT+args/CMD, imageID, termination message"

# 2. runAsUser/Group, supplemental and fs groups, workingDir made, no_new_privs.
ipod ids "  securityContext: {runAsUser: 1234, runAsGroup: 99, supplementalGroups: [77], fsGroup: 88}" "  - name: main
    image: $image
    command: [sh, -c, 'id -u; id -g; id -G; pwd; grep NoNewPrivs /proc/self/status']
    workingDir: /made/here
    securityContext: {runAsGroup: 4321, allowPrivilegeEscalation: false}"
wait_for 300 ends ids || fail "ids did not end"
phase_is ids Succeeded || fail "ids: $(kc -n "$ns" get pod ids -o jsonpath='{.status}')"
got=$(logs_of ids main | tr '\n\t' '| ')
[ "$got" = "1234|4321|4321 77 88|/made/here|NoNewPrivs: 1|" ] || fail "ids: '$got'"
echo "ids: runAsUser 1234, runAsGroup 4321 (container wins), groups 77 88, workingDir made, NoNewPrivs"

# 3. readOnlyRootFilesystem; an emptyDir written by one container, read-only in the other.
ipod vols "  volumes: [{name: scratch, emptyDir: {}}]" "  - name: writer
    image: $image
    command: [sh, -c, 'touch /x 2>&1 || true; echo shared > /scratch/f; test -w /tmp || echo tmp-read-only']
    securityContext: {runAsUser: 0, readOnlyRootFilesystem: true}
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  - name: reader
    image: $image
    command: [sh, -c, 'until test -s /data/f; do sleep 0.1; done; cat /data/f; touch /data/g 2>&1 || true; touch /ok && echo root-writable; ls -ld /data | cut -c1-10']
    securityContext: {runAsUser: 0}
    volumeMounts: [{name: scratch, mountPath: /data, readOnly: true}]"
wait_for 300 ends vols || fail "vols did not end"
phase_is vols Succeeded || fail "vols: $(kc -n "$ns" get pod vols -o jsonpath='{.status}')"
got=$(logs_of vols writer | tr '\n' '|')
[ "$got" = "touch: cannot touch '/x': Read-only file system|tmp-read-only|" ] || fail "vols/writer: '$got'"
got=$(logs_of vols reader | tr '\n' '|')
[ "$got" = "shared|touch: cannot touch '/data/g': Read-only file system|root-writable|drwxrwxrwx|" ] ||
  fail "vols/reader: '$got'"
echo "vols: read-only root filesystem, emptyDir shared (read-only where mounted so)"

# 4. runAsNonRoot: the image's USER 65532 runs; runAsUser 0 is refused as the kubelet refuses it.
ipod nonroot "  securityContext: {runAsNonRoot: true}" "  - name: main
    image: $image
    command: [sh, -c, 'id -u']"
ipod root "  securityContext: {runAsNonRoot: true}" "  - name: main
    image: $image
    command: [sh, -c, 'id -u']
    securityContext: {runAsUser: 0}"
wait_for 300 ends nonroot || fail "nonroot did not end"
phase_is nonroot Succeeded || fail "nonroot: $(kc -n "$ns" get pod nonroot -o jsonpath='{.status}')"
wait_for 120 waiting_reason root CreateContainerConfigError ||
  fail "root: $(kc -n "$ns" get pod root -o jsonpath='{.status}')"
st=$(kc -n "$ns" get pod root -o json)
uid=$(jq -r .metadata.uid <<<"$st")
want="container's runAsUser breaks non-root policy (pod: \"root_$ns($uid)\", container: main)"
jq -e --arg m "$want" '.status.phase == "Pending" and .status.containerStatuses[0].state.waiting.message == $m' \
  >/dev/null <<<"$st" || fail "root: $(jq -c .status <<<"$st"), want message '$want'"
echo "runAsNonRoot: image user runs, runAsUser 0 refused (CreateContainerConfigError)"

# 5. The pod network shim: two pods bind 0.0.0.0:7777, each gets its own pod IP.
listen='exec perl -MIO::Socket::INET -e '"'"'$s = IO::Socket::INET->new(LocalAddr => "0.0.0.0", LocalPort => 7777, Listen => 1) or die "listen: $!"; print $s->sockhost, "\n"; STDOUT->flush; sleep 60'"'"
for p in net-a net-b; do
  ipod $p "" "  - name: main
    image: $image
    command: [sh, -c, $(q "$listen")]"
done
has_log() { [ -n "$(logs_of "$1" main 2>/dev/null)" ]; }
for p in net-a net-b; do
  wait_for 300 has_log $p || fail "$p: no output: $(kc -n "$ns" get pod $p -o jsonpath='{.status}')"
  phase_is $p Running || fail "$p: $(kc -n "$ns" get pod $p -o jsonpath='{.status}')"
  ip=$(kc -n "$ns" get pod $p -o jsonpath='{.status.podIP}')
  [ "$(logs_of $p main)" = "$ip" ] || fail "$p listens on '$(logs_of $p main)', its pod IP is $ip"
done
echo "pod network: net-a and net-b both on port 7777, each on its pod IP"
kc -n "$ns" delete pod net-a net-b --wait=false >/dev/null

# 6. A missing image: ErrImagePull, then ImagePullBackOff (Pending, with Events); with
# imagePullPolicy Never, ErrImageNeverPull.
missing=nodeagent-test/no-such-image:1
ipod missing "" "  - name: main
    image: $missing"
ipod never "" "  - name: main
    image: $missing
    imagePullPolicy: Never"
wait_for 120 waiting_reason missing ErrImagePull || fail "missing: $(kc -n "$ns" get pod missing -o jsonpath='{.status}')"
msg=$(kc -n "$ns" get pod missing -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')
[[ $msg == "Failed to pull image \"$missing\": "* ]] || fail "missing, ErrImagePull message: '$msg'"
wait_for 60 waiting_reason missing ImagePullBackOff || fail "missing: no ImagePullBackOff"
msg=$(kc -n "$ns" get pod missing -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')
[[ $msg == "Back-off pulling image \"$missing\""* ]] || fail "missing, ImagePullBackOff message: '$msg'"
phase_is missing Pending || fail "missing is not Pending"
reasons=$(kc -n "$ns" get events --field-selector involvedObject.name=missing -o jsonpath='{.items[*].reason}')
[[ " $reasons " == *" Failed "* && " $reasons " == *" BackOff "* ]] || fail "missing's events: '$reasons'"
wait_for 120 waiting_reason never ErrImageNeverPull || fail "never: $(kc -n "$ns" get pod never -o jsonpath='{.status}')"
msg=$(kc -n "$ns" get pod never -o jsonpath='{.status.containerStatuses[0].state.waiting.message}')
[ "$msg" = "Container image \"$missing\" is not present with pull policy of Never" ] || fail "never: '$msg'"
echo "missing image: ErrImagePull -> ImagePullBackOff (events: $reasons); Never: ErrImageNeverPull"
kc -n "$ns" delete pod missing never --wait=false >/dev/null

# 7. A SIGKILLed container fails with 137; a deleted one's process is gone; the host sees none of
# a container's mounts; SIGTERM to the agent leaves no process, working container or mount.
marker="marker-$ns"
for p in killed deleted left; do
  ipod $p "" "  - name: main
    image: $image
    command: [sh, -c, ': $marker-$p; while true; do sleep 0.2; done']"
done
running() { phase_is "$1" Running && pgrep -f "$marker-$1;" >/dev/null; }
for p in killed deleted left; do wait_for 300 running $p || fail "$p not Running"; done
left_pid=$(pgrep -f "$marker-left;")
grep -q " overlay " "/proc/$left_pid/mountinfo" || fail "left: no overlay root in its mount namespace"
! grep -qF "$work" /proc/self/mountinfo || fail "the host sees the containers' mounts: $(grep -F "$work" /proc/self/mountinfo)"
pkill -KILL -f "$marker-killed;"
wait_for 60 ends killed || fail "killed did not end"
code=$(kc -n "$ns" get pod killed -o jsonpath='{.status.containerStatuses[0].state.terminated.exitCode}')
[ "$code" = 137 ] || fail "killed: exit code '$code'"
phase_is killed Failed || fail "killed is not Failed"
deleted_pid=$(pgrep -f "$marker-deleted;")
kc -n "$ns" delete pod deleted --timeout=60s >/dev/null || fail "deleted was not deleted"
wait_for 10 no_procs "$marker-deleted;" || fail "deleted's process $deleted_pid is left"
echo "SIGKILLed container: Failed, 137; deleted pod: its process gone; mounts private"
kill -TERM "$pid"
wait "$pid" || fail "the agent exited $?"
wait_for 10 no_procs "$marker" || fail "processes left: $(pgrep -af "$marker")"
left=$(buildah --storage-driver vfs containers --format '{{.ContainerName}}' | grep "^trainbench-nodeagent-rootfs-$pid-" || true)
[ -z "$left" ] || fail "working containers left: $left"
! grep -qF "$work" /proc/mounts || fail "mounts left: $(grep -F "$work" /proc/mounts)"
echo "SIGTERM: no process, no working container, no mount left"

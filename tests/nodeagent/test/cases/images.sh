# --images buildah (root only): a pod runs in its image's root filesystem: the image's user, the pod's hostname and /etc/hosts, the ServiceAccount volume
# the API server's admission added mounted where the pod says, the termination log at
# /dev/termination-log; SIGTERM leaves no working container and no mount.
# The image is the test image the ctest fixture nodeagent.test_image makes (make_test_image.sh);
# cases/image-security.sh tests the rest of image mode.
image=nodeagent-test/shell:1
[ "$(id -u)" = 0 ] || { echo "SKIP: image mode needs root"; exit 77; }
command -v buildah >/dev/null || { echo "SKIP: no buildah"; exit 77; }
buildah --storage-driver vfs inspect --type image "localhost/$image" >/dev/null 2>&1 ||
  { echo "SKIP: no test image localhost/$image (ctest -R nodeagent.test_image makes it)"; exit 77; }
start_agent n1 --images buildah
pid=$agent_pid
wait_for 30 node_ready n1 || fail "node n1 not Ready"
kc -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata: {name: img}
spec:
  restartPolicy: Never
  nodeSelector: {kubernetes.io/hostname: $ns-n1}
  tolerations: [{key: trainbench.dev/nodeagent-test, operator: Exists}]
  containers:
  - name: main
    image: $image
    command: ["sh", "-c", "id -u; hostname; ls /var/run/secrets/kubernetes.io/serviceaccount | tr '\\\\n' ' '; echo; echo done > /dev/termination-log"]
YAML
wait_for 180 phase_is img Succeeded || fail "img: $(kc -n "$ns" get pod img -o jsonpath='{.status}')"
got=$(kc -n "$ns" logs img | tr '\n' '|')
[ "$got" = "65532|img|ca.crt namespace token |" ] || fail "img's output: '$got'"
st=$(kc -n "$ns" get pod img -o json)
jq -e '.status.containerStatuses[0] | (.image == "localhost/'"$image"'") and (.imageID | startswith("sha256:")) and
  .state.terminated.message == "done\n"' >/dev/null <<<"$st" || fail "img: $(jq -c .status.containerStatuses <<<"$st")"
echo "img: ran as 65532 in its image, hostname img, ServiceAccount volume, termination message"
kill -TERM "$pid"
wait "$pid" || fail "the agent exited $?"
left=$(buildah --storage-driver vfs containers --format '{{.ContainerName}}' | grep "^trainbench-nodeagent-rootfs-$pid-" || true)
[ -z "$left" ] || fail "working containers left: $left"
! grep -qF "$work" /proc/mounts || fail "mounts left: $(grep -F "$work" /proc/mounts)"
echo "SIGTERM: no working container, no mount left"

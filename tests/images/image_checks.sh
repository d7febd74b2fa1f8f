#!/usr/bin/env bash
# The built images exercised, not just built (scripts/images.sh makes them; docs/install.md
# "Images"):
#  - the operator image: runs /usr/local/bin/trainbench-operator through `buildah run` as its
#    USER, 65532:65532, with no shell anywhere in the image;
#  - the worker image: runs `trainbench-worker` and `trainbench node-launch` as 65532:65532;
#  - every ELF executable and shared library in both images resolves every library it needs,
#    asked of the image's own dynamic loader inside the image (what ldd does; distroless has no
#    ldd);
#  - no file in either image is writable by the runtime user, except the paths the pods mount
#    (the worker pods' and the chart's operator pod's emptyDir at /tmp).
# Needs root, buildah, the images (scripts/images.sh). Exits 1 naming what is wrong.
set -euo pipefail
REPO=${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
VERSION=$(bash "$REPO/scripts/version.sh")
B=(buildah --storage-driver vfs)
OPERATOR=localhost/trainbench/operator:$VERSION
WORKER=localhost/trainbench/worker:$VERSION
# The paths every pod of each image mounts (an emptyDir): operator/controller/manifests.cpp for
# the worker pods, helm/trainbench/templates/deployment.yaml for the operator.
POD_MOUNTS=(/tmp)

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }

[ "$(id -u)" -eq 0 ] || fail "needs root (buildah vfs storage)"
containers=()
cleanup() { for c in "${containers[@]}"; do "${B[@]}" rm "$c" >/dev/null 2>&1 || true; done; }
trap cleanup EXIT

# open IMAGE: a working container of IMAGE, named in $OPENED (removed at exit).
open() {
  "${B[@]}" inspect --type image "$1" >/dev/null 2>&1 || fail "image $1 not found: run scripts/images.sh"
  OPENED=$("${B[@]}" from --pull=never --quiet "$1")
  containers+=("$OPENED")
}

# config IMAGE JQ-PATH: a field of the image's OCI config (compact JSON for lists).
config() { "${B[@]}" inspect --type image "$1" | jq -c -r ".OCIv1.config$2"; }

# run_as_user CONTAINER CMD...: CMD inside the image as its USER; stdout+stderr.
run_as_user() { local c=$1; shift; "${B[@]}" run --isolation chroot "$c" -- "$@" 2>&1; }

check_user_and_entrypoint() {
  expect_eq "operator USER" "$(config "$OPERATOR" .User)" "65532:65532"
  expect_eq "operator ENTRYPOINT" "$(config "$OPERATOR" .Entrypoint)" '["/usr/local/bin/trainbench-operator"]'
  expect_eq "worker USER" "$(config "$WORKER" .User)" "65532:65532"
  expect_eq "worker CMD" "$(config "$WORKER" .Cmd)" '["trainbench","version"]'
}

expect_eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; pass "$1 = $3"; }

# no_shell ROOT: no shell or package manager anywhere in the root filesystem.
no_shell() {
  local found
  found=$(find "$1" -xdev ! -type d \( -name sh -o -name bash -o -name dash -o -name busybox -o -name apt-get \
    -o -name dpkg -o -name perl -o -name python3 \) 2>/dev/null | sed "s|^$1||" || true)
  [ -z "$found" ] || fail "the operator image has a shell or interpreter: $found"
  pass "the operator image has no shell, interpreter or package manager"
}

# libraries_resolve NAME ROOT: every ELF file in ROOT, listed by the image's own loader.
libraries_resolve() {
  local name=$1 root=$2 loader=/lib64/ld-linux-x86-64.so.2 n=0 missing=""
  [ -e "$root$loader" ] || fail "$name: no dynamic loader at $loader"
  while IFS= read -r f; do
    head -c 4 "$f" 2>/dev/null | grep -q $'^\x7fELF' || continue
    n=$((n + 1))
    out=$(chroot "$root" "$loader" --list "${f#"$root"}" 2>&1) || {
      # A static executable or a library the loader will not list is reported, not failed.
      grep -q "not a dynamic executable\|statically linked" <<<"$out" && continue
    }
    grep -q "not found" <<<"$out" && missing+=$'\n'"${f#"$root"}: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ')"
  done < <(find "$root" -xdev -type f \( -perm -u+x -o -name '*.so*' \) \
    \( -path "$root/usr/*" -o -path "$root/lib*" -o -path "$root/bin/*" -o -path "$root/sbin/*" \))
  [ -z "$missing" ] || fail "$name: libraries not found:$missing"
  [ "$n" -gt 0 ] || fail "$name: no ELF files found"
  pass "$name: all $n ELF files resolve every library (the image's loader, inside the image)"
}

# nothing_writable NAME ROOT: no file or directory the runtime user (65532:65532) may write, other
# than the pod mounts (and what is under them), symlinks aside; /dev is the runtime's (a
# container gets its own), not the image's.
nothing_writable() {
  local name=$1 root=$2 prune writable
  prune=(-path "$root/dev" -prune -o)
  for m in "${POD_MOUNTS[@]}"; do prune+=(-path "$root$m" -prune -o); done
  writable=$(find "$root" -xdev "${prune[@]}" ! -type l \( \( -uid 65532 -perm -u+w \) \
    -o \( -gid 65532 -perm -g+w \) -o -perm -o+w \) -print 2>/dev/null | sed "s|^$root||" | head -20)
  [ -z "$writable" ] || fail "$name: writable by uid 65532 outside the pod's mounts (${POD_MOUNTS[*]}): $writable"
  pass "$name: nothing writable by uid 65532 outside the pod's mounts (${POD_MOUNTS[*]})"
}

check_user_and_entrypoint

open "$OPERATOR"
op=$OPENED
op_root=$("${B[@]}" mount "$op")
no_shell "$op_root"
out=$(run_as_user "$op" /usr/local/bin/trainbench-operator --help) || fail "trainbench-operator --help in the image: $out"
grep -q -- "--kubeconfig" <<<"$out" || fail "trainbench-operator --help printed no usage: $out"
pass "the operator image runs trainbench-operator (buildah run, no shell)"
libraries_resolve "operator image" "$op_root"
nothing_writable "operator image" "$op_root"

open "$WORKER"
wk=$OPENED
wk_root=$("${B[@]}" mount "$wk")
out=$(run_as_user "$wk" id -u) && [ "$out" = 65532 ] || fail "worker image: id -u gave '$out', want 65532"
out=$(run_as_user "$wk" id -g) && [ "$out" = 65532 ] || fail "worker image: id -g gave '$out', want 65532"
pass "the worker image runs as 65532:65532"
out=$(run_as_user "$wk" trainbench-worker --help) || fail "trainbench-worker --help in the image: $out"
grep -qi "usage" <<<"$out" || fail "trainbench-worker --help printed no usage: $out"
out=$(run_as_user "$wk" trainbench node-launch --help) || fail "trainbench node-launch --help in the image: $out"
grep -qi "usage" <<<"$out" || fail "trainbench node-launch --help printed no usage: $out"
out=$(run_as_user "$wk" trainbench version) || fail "trainbench version in the image: $out"
grep -q "$VERSION" <<<"$out" || fail "trainbench version in the image printed '$out', not $VERSION"
pass "the worker image runs trainbench-worker, trainbench node-launch and trainbench version ($VERSION)"
# The image's libtorch is the pinned wheel's (scripts/torch.sh), byte for byte, and only what the
# CPU worker loads of it.
torch_dir=$(bash "$(dirname "$0")/../../scripts/torch.sh" --path) || fail "no unpacked torch wheel (scripts/torch.sh)"
for lib in torch/lib/libtorch_cpu.so torch/lib/libc10.so; do
  cmp -s "$torch_dir/$lib" "$wk_root/usr/local/lib/trainbench/$(basename "$lib")" ||
    fail "worker image: /usr/local/lib/trainbench/$(basename "$lib") is not the pinned wheel's $lib"
done
for lib in libtorch_cuda.so libc10_cuda.so libtorch_python.so; do
  [ ! -e "$wk_root/usr/local/lib/trainbench/$lib" ] || fail "worker image: carries $lib, which the CPU worker does not load"
done
[ -z "$(find "$wk_root/usr/lib" -name 'libtorch*' -print -quit)" ] || fail "worker image: a second libtorch under /usr/lib"
pass "worker image: libtorch_cpu and libc10 are the pinned wheel's ($(du -sh "$wk_root/usr/local/lib/trainbench" | cut -f1) of libraries)"
libraries_resolve "worker image" "$wk_root"
nothing_writable "worker image" "$wk_root"
echo "PASS image_checks"

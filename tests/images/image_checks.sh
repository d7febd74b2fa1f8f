#!/usr/bin/env bash
# The built images exercised, not just built (scripts/images.sh makes them; docs/install.md
# "Images"):
#  - the operator image: runs /usr/local/bin/trainbench-operator through `buildah run` as its
#    USER, 65532:65532, with no shell anywhere in the image;
#  - the worker images (cpu and cuda libtorch): run `trainbench-worker` and `trainbench
#    node-launch` as 65532:65532; `trainbench-worker --version` names the pinned PyTorch, CUDA,
#    cuDNN and NCCL; the libtorch libraries are the pinned wheels' files; the quickstart runs on
#    the CPU inside each, and a device cuda job fails naming why (no GPU here);
#  - every ELF executable and shared library in the images resolves every library it needs,
#    asked of the image's own dynamic loader inside the image (what ldd does; distroless has no
#    ldd);
#  - no file in any image is writable by the runtime user, except the paths the pods mount
#    (the worker pods' and the chart's operator pod's emptyDir at /tmp).
# Needs root, buildah, the images (scripts/images.sh). Exits 1 naming what is wrong.
set -euo pipefail
REPO=${REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
VERSION=$(bash "$REPO/scripts/version.sh")
B=(buildah --storage-driver vfs)
OPERATOR=localhost/trainbench/operator:$VERSION
WORKER=localhost/trainbench/worker:$VERSION
WORKER_CUDA=localhost/trainbench/worker:$VERSION-cuda
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

# expected_versions FLAVOUR: the lines `trainbench-worker --version` must print, from the pins.
expected_versions() {
  local req=$REPO/scripts/torch/cpu-requirements.txt cuda_req=$REPO/scripts/torch/cuda-requirements.txt pin
  pin() { sed -n "s/^$1==\([^ ]*\) .*/\1/p" "$2"; }
  echo "PyTorch (libtorch): $(pin torch "$req")"
  if [ "$1" = cpu ]; then
    printf '%s\n' "CUDA: none" "cuDNN: none" "NCCL: none"
  else
    echo "CUDA: $(pin nvidia-cuda-runtime "$req" | cut -d. -f1-2)"
    echo "cuDNN: $(pin nvidia-cudnn-cu13 "$cuda_req" | cut -d. -f1-3)"
    echo "NCCL: $(pin nvidia-nccl-cu13 "$cuda_req")"
  fi
}

# check_libtorch FLAVOUR ROOT: the image's libtorch is the pinned wheels' (scripts/torch.sh --libs),
# byte for byte, and (cpu) nothing the CPU worker does not load.
check_libtorch() {
  local flavour=$1 root=$2 lib n=0
  bash "$REPO/scripts/torch.sh" "$flavour" >/dev/null || fail "scripts/torch.sh $flavour failed"
  while IFS= read -r lib; do
    n=$((n + 1))
    cmp -s "$lib" "$root/usr/local/lib/trainbench/$(basename "$lib")" ||
      fail "worker image ($flavour): /usr/local/lib/trainbench/$(basename "$lib") is not the pinned wheel's ${lib#"$(dirname "$(dirname "$lib")")/"}"
  done < <(bash "$REPO/scripts/torch.sh" --libs "$flavour")
  [ "$(find "$root/usr/local/lib/trainbench" -type f | wc -l)" -eq "$n" ] ||
    fail "worker image ($flavour): /usr/local/lib/trainbench has other files than the $n of scripts/torch.sh --libs $flavour"
  if [ "$flavour" = cpu ]; then
    for lib in libtorch_cuda.so libc10_cuda.so libtorch_python.so; do
      [ ! -e "$root/usr/local/lib/trainbench/$lib" ] || fail "worker image: carries $lib, which the CPU worker does not load"
    done
  fi
  [ -z "$(find "$root/usr/lib" -name 'libtorch*' -print -quit)" ] || fail "worker image ($flavour): a second libtorch under /usr/lib"
  pass "worker image ($flavour): its $n libtorch libraries are the pinned wheels' ($(du -sh "$root/usr/local/lib/trainbench" | cut -f1))"
}

# The worker images' libraries are the files Python's torch loads: every pin of {cpu,cuda}-requirements.txt
# (but CRT, headers that pip does not install for torch) is python-requirements.txt's, hash and all.
check_pins_shared() {
  local line missing=""
  while IFS= read -r line; do
    grep -qxF "$line" "$REPO/scripts/torch/python-requirements.txt" || missing+=$'\n'"$line"
  done < <(grep -h '^\(torch\|nvidia-\)' "$REPO"/scripts/torch/{cpu,cuda}-requirements.txt | grep -v '^nvidia-cuda-crt==')
  [ -z "$missing" ] || fail "cuda-requirements.txt pins what python-requirements.txt does not:$missing"
  pass "the worker images' torch and nvidia-* pins are Python torch's (python-requirements.txt)"
}

# check_worker IMAGE FLAVOUR: the worker image of a libtorch flavour (docker/worker.Dockerfile).
check_worker() {
  local image=$1 flavour=$2 wk root out want
  expect_eq "worker ($flavour) USER" "$(config "$image" .User)" "65532:65532"
  expect_eq "worker ($flavour) CMD" "$(config "$image" .Cmd)" '["trainbench","version"]'
  open "$image"
  wk=$OPENED
  root=$("${B[@]}" mount "$wk")
  out=$(run_as_user "$wk" id -u) && [ "$out" = 65532 ] || fail "worker image ($flavour): id -u gave '$out', want 65532"
  out=$(run_as_user "$wk" id -g) && [ "$out" = 65532 ] || fail "worker image ($flavour): id -g gave '$out', want 65532"
  out=$(run_as_user "$wk" trainbench-worker --help) || fail "trainbench-worker --help in the image: $out"
  grep -qi "usage" <<<"$out" || fail "trainbench-worker --help printed no usage: $out"
  out=$(run_as_user "$wk" trainbench node-launch --help) || fail "trainbench node-launch --help in the image: $out"
  grep -qi "usage" <<<"$out" || fail "trainbench node-launch --help printed no usage: $out"
  out=$(run_as_user "$wk" trainbench version) || fail "trainbench version in the image: $out"
  grep -q "$VERSION" <<<"$out" || fail "trainbench version in the image printed '$out', not $VERSION"
  pass "the worker image ($flavour) runs as 65532:65532 trainbench-worker, trainbench node-launch and trainbench version ($VERSION)"
  out=$(run_as_user "$wk" trainbench-worker --version) || fail "trainbench-worker --version in the $flavour image: $out"
  while IFS= read -r want; do
    grep -qxF "$want" <<<"$out" || fail "worker image ($flavour): --version lacks '$want':"$'\n'"$out"
  done < <(expected_versions "$flavour")
  pass "worker image ($flavour): --version names $(expected_versions "$flavour" | tr '\n' ';')"
  check_libtorch "$flavour" "$root"
  check_quickstart_row "$wk" "$flavour"
  libraries_resolve "worker image ($flavour)" "$root"
  nothing_writable "worker image ($flavour)" "$root"
}

# check_quickstart_row CONTAINER FLAVOUR: the README's quickstart (--quick) runs inside the image
# on the CPU, and a device cuda job fails naming why (here: no GPU; in the cpu image: no CUDA).
check_quickstart_row() {
  local wk=$1 flavour=$2 out want
  "${B[@]}" copy --chown 65532:65532 "$wk" "$REPO/examples/quickstart.yaml" /tmp/quickstart.yaml >/dev/null
  out=$(run_as_user "$wk" trainbench run /tmp/quickstart.yaml --quick) || fail "worker image ($flavour): the quickstart failed:"$'\n'"$out"
  grep -q "libtorch version: $(expected_versions cpu | head -1 | cut -d' ' -f3)" <<<"$out" &&
    grep -q '^ 2 CPUs -- 1M/2G:  p50:' <<<"$out" || fail "worker image ($flavour): no quickstart report:"$'\n'"$out"
  [ "$flavour" = cpu ] || grep -q "CUDA version: $(expected_versions cuda | sed -n 's/^CUDA: //p')" <<<"$out" ||
    fail "worker image ($flavour): the report's header does not name the CUDA build:"$'\n'"$out"
  sed 's/^spec:$/spec:\n  device: cuda/' "$REPO/examples/quickstart.yaml" >"$TMP/cuda.yaml"
  "${B[@]}" copy --chown 65532:65532 "$wk" "$TMP/cuda.yaml" /tmp/cuda.yaml >/dev/null
  out=$(run_as_user "$wk" trainbench run /tmp/cuda.yaml --quick) && fail "worker image ($flavour): a device cuda job ran without a GPU"
  want="no CUDA device is available"
  [ "$flavour" = cuda ] || want="this worker was built without CUDA"
  grep -q "device cuda, but $want" <<<"$out" || fail "worker image ($flavour): a device cuda job did not fail naming '$want':"$'\n'"$out"
  pass "worker image ($flavour): the quickstart runs on the CPU in it; a device cuda job fails: $want"
}

TMP=$(mktemp -d)
trap 'cleanup; rm -rf "$TMP"' EXIT
check_worker "$WORKER" cpu
check_worker "$WORKER_CUDA" cuda
check_pins_shared
echo "PASS image_checks"

#!/usr/bin/env bash
# Builds trainbench's container images for real, with no Docker engine: Debian's mmdebstrap
# makes the base images from the same archive apt uses, and buildah (vfs storage, chroot
# isolation) runs docker/operator.Dockerfile and docker/worker.Dockerfile (twice: the cpu and the
# cuda libtorch) unchanged, their bases given as build arguments (docs/install.md, "Images").
#
# Usage: scripts/images.sh [--bases-only | IMAGE...]
#   (IMAGE: operator, worker, worker-cuda; default all three)
#
# Makes, in buildah's storage (`buildah --storage-driver vfs images`):
#   localhost/trainbench-base/debian:bookworm        stands in for debian:bookworm (build stages)
#   localhost/trainbench-base/debian:bookworm-slim   stands in for debian:bookworm-slim
#   localhost/trainbench-base/distroless-cc:nonroot  stands in for gcr.io/distroless/cc-debian12:nonroot
#   localhost/trainbench/operator:VERSION, localhost/trainbench/worker:VERSION and
#   localhost/trainbench/worker:VERSION-cuda (VERSION: the project's, as the chart and the
#   operator name them)
#
# Caches (a second run on the same machine takes minutes, not the cold build's tens of minutes):
#   - each base's mmdebstrap tarball under $TRAINBENCH_IMAGE_CACHE (default
#     ~/.cache/trainbench/images), keyed by the sha256 of its mmdebstrap arguments, package list
#     and hook, and rebuilt when older than TRAINBENCH_BASE_MAX_AGE_DAYS (7) so that Debian's
#     security updates come in; the base image carries the key as a label and is remade only when
#     the key changes;
#   - no buildah layer cache (`--layers`): with the vfs driver each layer is a full copy of the
#     root filesystem, and committing the build stages' layers cost more than it saved (a worker
#     build with --layers was stopped after 50 minutes); without it only the final image is
#     committed;
#   - the Dockerfiles' `RUN --mount=type=cache` mounts (apt's downloads and lists, ccache), which
#     buildah keeps between builds as BuildKit does; here the ccache and apt-archive mounts are
#     this machine's own caches (share_cache below), so the image builds reuse what
#     scripts/build.sh compiled, scripts/install-deps.sh downloaded and scripts/torch.sh unpacked.
# Prints each step's time; TRAINBENCH_IMAGE_TIMES=FILE also appends "step seconds" lines there.
# Needs root (buildah's vfs storage and chroot isolation as used here); scripts/install-deps.sh
# installs buildah and mmdebstrap.
set -euo pipefail
cd "$(dirname "$0")/.."

BASES_ONLY=0
IMAGES=(operator worker worker-cuda)
case "${1:-}" in
  "") ;;
  --bases-only) BASES_ONLY=1 ;;
  operator | worker | worker-cuda) IMAGES=("$@") ;;
  *) echo "usage: scripts/images.sh [--bases-only | operator | worker | worker-cuda ...]" >&2; exit 2 ;;
esac
[ "$(id -u)" -eq 0 ] || { echo "images.sh: needs root (buildah vfs storage + chroot isolation)" >&2; exit 1; }
for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "images.sh: $tool not found: run scripts/install-deps.sh" >&2; exit 1; }
done

VERSION=$(bash scripts/version.sh)
CACHE=${TRAINBENCH_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trainbench/images}
MAX_AGE_DAYS=${TRAINBENCH_BASE_MAX_AGE_DAYS:-7}
BASE=localhost/trainbench-base
BUILDAH=(buildah --storage-driver vfs)
mkdir -p "$CACHE"

# timed NAME CMD...: runs CMD, then prints (and records) how long it took.
timed() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  echo "images.sh: $name: $((SECONDS - t0)) s" >&2
  [ -z "${TRAINBENCH_IMAGE_TIMES:-}" ] || echo "$name $((SECONDS - t0))" >>"$TRAINBENCH_IMAGE_TIMES"
}

# label_of IMAGE: the image's trainbench.base-key label, or "" when the image is absent.
label_of() {
  "${BUILDAH[@]}" inspect --type image --format '{{index .OCIv1.Config.Labels "trainbench.base-key"}}' "$1" 2>/dev/null || true
}

# base NAME TAG... -- MMDEBSTRAP-ARGS: the tarball (cached by the arguments' and hook's hash) made
# into an image tagged TAG...; the image's config (user, workdir, env) is given by BASE_CONFIG.
base() {
  local name=$1 tags=() args key tar hooks=""
  shift
  while [ "$1" != "--" ]; do tags+=("$1"); shift; done
  shift
  args=("$@")
  for a in "${args[@]}"; do
    case $a in --extract-hook=*) hooks+=$(cat "${a#--extract-hook=}") ;; esac
  done
  key=$(printf '%s\n' "${args[@]}" "$hooks" "${BASE_CONFIG[@]}" | sha256sum | cut -c1-16)
  tar=$CACHE/$name-$key.tar
  if [ -f "$tar" ] && [ -z "$(find "$tar" -mtime +"$MAX_AGE_DAYS")" ]; then
    echo "images.sh: $name: cached tarball $tar"
  else
    rm -f "$CACHE/$name"-*.tar
    timed "base $name (mmdebstrap)" mmdebstrap --quiet --format=tar "${args[@]}" bookworm "$tar.part"
    mv "$tar.part" "$tar"
  fi
  if [ "$(label_of "${tags[0]}")" = "$key" ] && [ ! "$tar" -nt "$CACHE/$name.stamp" ]; then
    echo "images.sh: $name: ${tags[0]} is current"
    return
  fi
  local c
  c=$("${BUILDAH[@]}" from scratch)
  "${BUILDAH[@]}" add "$c" "$tar" / >/dev/null
  "${BUILDAH[@]}" config --label "trainbench.base-key=$key" "${BASE_CONFIG[@]}" "$c"
  "${BUILDAH[@]}" commit --quiet --rm "$c" "${tags[0]}" >/dev/null
  for t in "${tags[@]:1}"; do "${BUILDAH[@]}" tag "${tags[0]}" "$t"; done
  touch "$CACHE/$name.stamp"
  echo "images.sh: $name: made ${tags[*]}"
}

build_bases() {
  # Debian's own images are minbase root filesystems with apt's sources for bookworm, its
  # updates and security (mmdebstrap adds those for a stable suite), as here.
  BASE_CONFIG=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash)
  base debian-minbase "$BASE/debian:bookworm" "$BASE/debian:bookworm-slim" -- --variant=minbase
  # distroless/cc: glibc, libgcc, libstdc++, libgomp, OpenSSL's library, CA certificates, tzdata,
  # the nonroot user; no shell (docker/bases/distroless-cc.hook.sh).
  BASE_CONFIG=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --user 65532 --workingdir /home/nonroot)
  base distroless-cc "$BASE/distroless-cc:nonroot" -- --variant=extract \
    --include=base-files,netbase,tzdata,ca-certificates,libc6,libgcc-s1,libstdc++6,libgomp1,libssl3 \
    --extract-hook="docker/bases/distroless-cc.hook.sh"
}

# share_cache ID HOST_DIR: the Dockerfiles' `RUN --mount=type=cache,id=ID` is, for buildah 1.28,
# the directory $TMPDIR (or /var/tmp)/buildah-cache/ID; it is made a link to this machine's own
# cache HOST_DIR, so that what scripts/build.sh compiled (the same compiler, flags and paths
# relative to the source tree) and what apt downloaded serve the image builds too. Off with
# TRAINBENCH_IMAGE_SHARE_CACHES=0 (then the mounts are buildah's own, still kept between builds).
share_cache() {
  local id=$1 host_dir=$2 dir
  dir=${TMPDIR:-/var/tmp}/buildah-cache/$id
  [ "${TRAINBENCH_IMAGE_SHARE_CACHES:-1}" = 1 ] && [ -d "$host_dir" ] || return 0
  [ "$(readlink "$dir" 2>/dev/null)" = "$host_dir" ] && return 0
  mkdir -p "$(dirname "$dir")"
  rm -rf "$dir"
  ln -s "$host_dir" "$dir"
  echo "images.sh: cache mount $id is $host_dir"
}

# need_space NAME: stops with the free and the needed space when the build of image NAME would
# fill the disk, rather than the commit's "no space left on device" minutes later. The need is
# the measured peak of a build, rounded up (docs/install.md, "Images"): under vfs the image's
# size two to three times over (the stage's root filesystem, the commit's blob, the stored layer)
# and the build stage's.
need_space() {
  local name=$1 need_gb free_gb dir
  case $name in operator) need_gb=1 ;; worker) need_gb=5 ;; *) need_gb=10 ;; esac
  for dir in "$("${BUILDAH[@]}" info --format '{{.store.GraphRoot}}')" "${TMPDIR:-/var/tmp}"; do
    free_gb=$(($(df -P -k "$dir" | awk 'NR == 2 {print $4}') / 1048576))
    [ "$free_gb" -ge "$need_gb" ] || {
      echo "images.sh: image $name needs about $need_gb GB free in $dir, has $free_gb GB" >&2
      exit 1
    }
  done
}

# image NAME DOCKERFILE RUNTIME_BASE [BUILD-ARG...]: docker/DOCKERFILE.Dockerfile built as
# trainbench/NAME with the project's version as its tag (NAME worker-cuda: trainbench/worker:VERSION-cuda).
image() {
  local name=$1 file=$2 runtime=$3 tag args=()
  shift 3
  for a in "$@"; do args+=(--build-arg "$a"); done
  tag=trainbench/$name:$VERSION
  [ "$name" != worker-cuda ] || tag=trainbench/worker:$VERSION-cuda
  # With no layer cache the previous build of the tag serves nothing, and under vfs it is a full
  # copy (the cuda worker's 4.3 GB): it goes first, so that a rebuild needs room for one image.
  "${BUILDAH[@]}" rmi "$tag" >/dev/null 2>&1 || true
  need_space "$name"
  timed "image $name" "${BUILDAH[@]}" bud --isolation chroot --pull=never --quiet \
    -f "docker/$file.Dockerfile" --ignorefile "docker/$file.Dockerfile.dockerignore" \
    --build-arg "BUILD_IMAGE=$BASE/debian:bookworm" --build-arg "RUNTIME_IMAGE=$runtime" "${args[@]}" \
    -t "$tag" . >/dev/null
  "${BUILDAH[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$tag"
}

timed "bases" build_bases
[ "$BASES_ONLY" = 1 ] && exit 0
command -v ccache >/dev/null && share_cache trainbench-ccache "$(ccache -k cache_dir)"
share_cache trainbench-apt-archives /var/cache/apt/archives
share_cache trainbench-torch "${TRAINBENCH_CACHE:-$HOME/.cache/trainbench}/torch"
for name in "${IMAGES[@]}"; do
  case $name in
    operator) image operator operator "$BASE/distroless-cc:nonroot" ;;
    worker) image worker worker "$BASE/debian:bookworm-slim" ;;
    worker-cuda)
      # The CUDA wheels fetched here, into the cache the build's torch mount shares (as
      # scripts/build.sh fetched the cpu ones), so that the build stage finds them unpacked.
      [ "${TRAINBENCH_IMAGE_SHARE_CACHES:-1}" != 1 ] || timed "torch cuda wheels" bash scripts/torch.sh cuda >/dev/null
      image worker-cuda worker "$BASE/debian:bookworm-slim" TORCH_FLAVOUR=cuda
      ;;
    *) echo "images.sh: no image $name (operator, worker, worker-cuda)" >&2; exit 2 ;;
  esac
done
# Intermediate images the layer cache no longer needs (older builds' layers) are pruned.
"${BUILDAH[@]}" rmi --prune >/dev/null 2>&1 || true

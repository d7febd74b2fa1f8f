#!/bin/sh
# Builds the image the node agent's image-mode cases run (cases/images.sh, image-security.sh;
# the ctest fixture nodeagent.test_image), unless buildah's vfs storage already has it:
# localhost/nodeagent-test/shell:1, a Debian 12 minbase root filesystem
# (sh, coreutils, perl-base) with USER 65532:65532, WORKDIR /srv, ENV FOO=bar,
# ENTRYPOINT ["/bin/sh","-c"], CMD ["echo image-cmd $FOO"].
#
# The root filesystem comes from, in this order: the base image scripts/images.sh builds
# (localhost/trainbench-base/debian:bookworm), the tarball named by NODEAGENT_TEST_MINBASE, or
# `mmdebstrap --variant=minbase bookworm` into CACHE_DIR/minbase.tar (kept for next time).
# Without root or buildah it does nothing (the cases then skip, saying why).
#
#   make_test_image.sh CACHE_DIR
set -eu
image=localhost/nodeagent-test/shell:1
base=localhost/trainbench-base/debian:bookworm
cache_dir=${1:?usage: make_test_image.sh CACHE_DIR}
bah() { buildah --storage-driver vfs "$@"; }

if [ "$(id -u)" != 0 ]; then echo "make_test_image: not root, nothing built"; exit 0; fi
if ! command -v buildah >/dev/null; then echo "make_test_image: no buildah, nothing built"; exit 0; fi
if bah inspect --type image "$image" >/dev/null 2>&1; then echo "make_test_image: $image exists"; exit 0; fi

if bah inspect --type image "$base" >/dev/null 2>&1; then
  c=$(bah from --pull-never "$base")
else
  tarball=${NODEAGENT_TEST_MINBASE:-$cache_dir/minbase.tar}
  if [ ! -s "$tarball" ]; then
    mkdir -p "$cache_dir"
    mmdebstrap --variant=minbase bookworm "$tarball.tmp.tar"
    mv "$tarball.tmp.tar" "$tarball"
  fi
  c=$(bah from scratch)
  bah add "$c" "$tarball" /
fi
trap 'bah rm "$c" >/dev/null 2>&1 || true' EXIT
bah config --user 65532:65532 --workingdir /srv --env FOO=bar --entrypoint '["/bin/sh","-c"]' \
  --cmd '["echo image-cmd $FOO"]' "$c"
bah commit "$c" "$image"
echo "make_test_image: built $image"

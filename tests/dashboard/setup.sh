#!/usr/bin/env bash
# Installs the dashboard tests' npm packages, exactly as package-lock.json pins them, into
# tests/dashboard/node_modules (git-ignored). Idempotent and fast when already installed: a stamp
# (the lockfile's hash) skips `npm ci` while node_modules matches package.json + package-lock.json.
# Needs Node.js >= 18 and npm (Debian 12: apt-get install nodejs npm) and the npm registry.
set -euo pipefail
cd "$(dirname "$0")"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "tests/dashboard/setup.sh: $tool not found: install Node.js >= 18 and npm (Debian 12: apt-get install nodejs npm)" >&2
    exit 1
  fi
done
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)'; then
  echo "tests/dashboard/setup.sh: Node.js $(node --version) is too old: the packages need >= 18" >&2
  exit 1
fi

stamp=node_modules/.trainbench-setup-stamp
want=$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "tests/dashboard: node_modules up to date"
  exit 0
fi
echo "tests/dashboard: npm ci (exact versions from package-lock.json)"
# --ignore-scripts: none of the packages needs an install script.
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
echo "$want" > "$stamp"

#!/usr/bin/env bash
# `pip install ./python` with no index (no network): the in-tree build backend makes the wheel,
# the installed package imports from where pip put it, and the wheel lists every file it holds
# with its hash (PEP 427's RECORD), so pip can uninstall it.
# Usage: pip_install_test.sh PYTHON PACKAGE_DIR
set -euo pipefail
py=$1 pkg=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$pkg" "$work/src"  # pip may write build files beside the sources
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip wheel --quiet --no-deps -w "$work/wheel" "$work/src"
whl=$(ls "$work"/wheel/trainbench_probe-*-py3-none-any.whl)
"$py" - "$whl" <<'PY'
import base64, hashlib, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
names = set(z.namelist())
record = [n for n in names if n.endswith(".dist-info/RECORD")]
assert len(record) == 1, names
listed = {}
for line in z.read(record[0]).decode().splitlines():
    path, digest, size = line.rsplit(",", 2)
    listed[path] = digest
assert set(listed) == names, (set(listed) ^ names)
for path, digest in listed.items():
    if path == record[0]:
        continue
    want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(z.read(path)).digest()).rstrip(b"=").decode()
    assert digest == want, (path, digest, want)
assert "trainbench_probe/__init__.py" in names
print("wheel ok:", sorted(names))
PY
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 "$py" -m pip install --quiet --target "$work/site" "$work/src"
cd "$work"
PYTHONPATH="$work/site" "$py" -c "
import trainbench_probe as p
assert p.__file__.startswith('$work/site/'), p.__file__
assert p.__version__ == '0.1.0'
print('installed:', p.__file__)
"

"""A PEP 517 build backend for trainbench-probe with no dependencies of its own.

The package is one pure-Python module directory, so a wheel is a zip of it with the
dist-info files PEP 427 asks for (METADATA, WHEEL, RECORD); an sdist is a tar of this directory.
Keeping the backend in the tree means `pip install ./python` needs no network and no
setuptools/wheel versions (docs/workloads.md, "Setup").
"""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "trainbench_probe"
DIST = "trainbench_probe"
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
TAG = "py3-none-any"


def _metadata():
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: trainbench-probe\nVersion: %s\n"
            "Summary: Measure your own training loop with trainbench\nLicense: Apache-2.0\n"
            "Requires-Python: >=3.8\nDescription-Content-Type: text/markdown\n\n%s" % (VERSION, readme))


def _wheel_file():
    return "Wheel-Version: 1.0\nGenerator: trainbench _build_backend\nRoot-Is-Purelib: true\nTag: %s\n" % TAG


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (path, digest, len(data))


def _package_files():
    root = os.path.join(HERE, NAME)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            yield full, os.path.relpath(full, HERE).replace(os.sep, "/")


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info = "%s-%s.dist-info" % (DIST, VERSION)
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(metadata_directory, dist_info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel_name = "%s-%s-%s.whl" % (DIST, VERSION, TAG)
    dist_info = "%s-%s.dist-info" % (DIST, VERSION)
    record = ""
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as zf:
        for full, arc in _package_files():
            with open(full, "rb") as f:
                data = f.read()
            zf.writestr(arc, data)
            record += _record_line(arc, data)
        for name, text in (("METADATA", _metadata()), ("WHEEL", _wheel_file())):
            data = text.encode("utf-8")
            zf.writestr("%s/%s" % (dist_info, name), data)
            record += _record_line("%s/%s" % (dist_info, name), data)
        record += "%s/RECORD,,\n" % dist_info
        zf.writestr("%s/RECORD" % dist_info, record)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (DIST, VERSION)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tf:
        for rel in ("pyproject.toml", "README.md", "_build_backend.py"):
            tf.add(os.path.join(HERE, rel), arcname="%s/%s" % (base, rel))
        for full, arc in _package_files():
            tf.add(full, arcname="%s/%s" % (base, arc))
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        data = _metadata().encode("utf-8")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return name

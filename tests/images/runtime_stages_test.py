#!/usr/bin/env python3
"""The CUDA worker image cannot be built here (its base, NVIDIA's PyTorch container, is not
reachable), so this test keeps docker/worker-cuda.Dockerfile's runtime stage consistent with the
CPU worker's, which is built and run (tests/images/image_checks.sh): the same binaries in the
same place, the same user, environment, working directory, entrypoint and command, and the same
missing-library check. Exits 1 naming each difference.

Usage: runtime_stages_test.py [REPO]
"""
import json
import re
import shlex
import sys
from pathlib import Path


def instructions(path):
    """The Dockerfile's instructions as (KEYWORD, text), continuations joined, comments dropped."""
    out, current = [], ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        current += " " + stripped[:-1] if stripped.endswith("\\") else " " + stripped
        if not stripped.endswith("\\"):
            keyword, _, rest = current.strip().partition(" ")
            out.append((keyword.upper(), rest.strip()))
            current = ""
    return out


def runtime_stage(path):
    """The instructions of the last stage (the image a user runs)."""
    stages = [[]]
    for keyword, text in instructions(path):
        if keyword == "FROM":
            stages.append([])
        stages[-1].append((keyword, text))
    return stages[-1]


def installed_binaries(path):
    """Where the trainbench binaries end up: the targets of `install` commands and the paths
    `COPY --from=build` brings from a /rootfs staging tree."""
    found = set()
    for keyword, text in instructions(path):
        if keyword != "RUN":
            continue
        for command in re.split(r"&&|;", text):
            words = shlex.split(command.replace("$(", "( "), posix=True) if "install" in command else []
            if not words or words[0] != "install":
                continue
            paths = [w for w in words[1:] if not w.startswith("-") and w not in ("0755",)]
            *sources, target = paths
            for src in sources:
                name = src.rsplit("/", 1)[-1]
                if target.endswith("/"):
                    found.add(target + name)
                else:
                    found.add(target.removeprefix("/rootfs"))
    return {p.removeprefix("/rootfs") for p in found}


def settings(stage):
    """USER, ENV, WORKDIR, ENTRYPOINT, CMD of a stage (the last of each), as a dict."""
    wanted = {"USER", "ENV", "WORKDIR", "ENTRYPOINT", "CMD"}
    out = {}
    for keyword, text in stage:
        if keyword in wanted:
            out[keyword] = json.loads(text) if text.startswith("[") else text
    return out


def ldd_checked(path):
    """The binaries the build checks for missing libraries (`ldd ... | grep 'not found'`)."""
    checked = set()
    for keyword, text in instructions(path):
        for match in re.finditer(r"ldd ([^|]+)\|\s*grep 'not found'", text):
            checked.update(match.group(1).split())
    return checked


def main():
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2])
    cpu, cuda = repo / "docker/worker.Dockerfile", repo / "docker/worker-cuda.Dockerfile"
    problems = []

    def compare(what, a, b):
        if a != b:
            problems.append(f"{what}: worker.Dockerfile {a!r}, worker-cuda.Dockerfile {b!r}")

    cpu_bins, cuda_bins = installed_binaries(cpu), installed_binaries(cuda)
    if not cpu_bins:
        problems.append("worker.Dockerfile: no installed binaries found (has the install step changed?)")
    compare("binaries installed", sorted(cpu_bins), sorted(cuda_bins))
    cpu_settings, cuda_settings = settings(runtime_stage(cpu)), settings(runtime_stage(cuda))
    for key in ("USER", "ENV", "WORKDIR", "ENTRYPOINT", "CMD"):
        compare(key, cpu_settings.get(key), cuda_settings.get(key))
    if cpu_settings.get("USER") != "65532:65532":
        problems.append(f"worker.Dockerfile USER is {cpu_settings.get('USER')!r}, not 65532:65532 (the pods' runAsUser)")
    compare("binaries checked by ldd", sorted(ldd_checked(cpu)), sorted(ldd_checked(cuda)))

    for p in problems:
        print(f"FAIL {p}")
    if problems:
        return 1
    print(f"PASS runtime stages agree: binaries {sorted(cpu_bins)}, {cpu_settings}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

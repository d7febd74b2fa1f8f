#!/usr/bin/env bash
# ctest worker.ReferenceParamCounts: reference_param_counts.py run by the Python PyTorch of
# scripts/python-torch.sh when that venv is made (the full test command makes it before the build),
# else by the system's python3, with which the script skips (exit 77) when it has no torch (the
# quick tier, a machine without the venv).
# Usage: reference_param_counts.sh TRAINBENCH_WORKER
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=$(bash "$repo/scripts/python-torch.sh" --path 2>/dev/null) || py=python3
exec "$py" "$repo/tests/worker/reference_param_counts.py" "$@"

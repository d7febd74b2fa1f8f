#!/usr/bin/env bash
# controlplane.scale.slow_apiserver (issue 22 item 4): the 1000-GPU sweep of
# controlplane.scale.sweep1000 (sweep1000_e2e.sh, run unchanged) with a slow and sometimes
# refusing API server in front of the operator and of the result writer: tests/faultproxy between
# them and the real kube-apiserver adds 50 ms to every request and answers 1% of them with 429
# (Retry-After: 1 s, as the proxy does; README.md there), seed 22. Only the proxy's clients see
# it; kube-scheduler, kwok and the test's kubectl talk to the server directly.
#
# Why: on a cluster the API server is shared and often loaded; a 1000-GPU gang means 126 pod
# creates in a row for one run, each now 50 ms late, and an operator that retries a 429 too
# eagerly (or not at all) shows here as a run that never starts, a lost status write (a report
# short of a run) or a burst above its client limit. The sweep's assertions hold as they are:
# Succeeded, every run's report with its ranks, no GPU held at the end, and the operator's
# requests in any 10 s (the audit log's plus the proxy's log of the 429s it answered itself)
# below its --qps x 10. The per-run table is printed beside the healthy run's.
#
#   slow_apiserver_e2e.sh BUILD_DIR [OUT_JSON]   (default BUILD_DIR/scale-slow-apiserver.json)
# Environment: FAULTPROXY (default BUILD_DIR/tests/faultproxy/bin/faultproxy) and what
# sweep1000_e2e.sh reads.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(realpath "${1:?usage: slow_apiserver_e2e.sh BUILD_DIR [OUT_JSON]}")
export FAULTPROXY=${FAULTPROXY:-$BUILD/tests/faultproxy/bin/faultproxy}
[ -x "$FAULTPROXY" ] || { echo "missing $FAULTPROXY: cmake --build $BUILD --target faultproxy" >&2; exit 1; }
# The first rule whose seeded draw falls under its fraction wins: 1% get the 429 at once, the
# other 99% wait 50 ms and go through.
export SCALE_FAULTS='{"seed": 22, "rules": [{"fault": "429", "fraction": 0.01, "retryAfterSeconds": 1},
  {"fault": "slow", "fraction": 1, "delaySeconds": 0.05}]}'
export SCALE_TEST_NAME=slow-apiserver
exec bash "$here/sweep1000_e2e.sh" "$BUILD" "${2:-$BUILD/scale-slow-apiserver.json}"

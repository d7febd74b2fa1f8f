#!/usr/bin/env bash
# check_soak.py must fail when a promise broke: one good job passes; a repeated transition
# Event, an Event with count 2, a missing Event, a pod created twice, a job not Succeeded and a
# leftover pod each make it exit 1.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

job='{"metadata": {"name": "j", "uid": "u1", "creationTimestamp": "2026-11-24T01:00:00Z"},
      "status": {"phase": "Succeeded", "runsTotal": 1, "completionTime": "2026-11-24T01:00:20Z",
                 "runs": [{"restarts": 1}],
                 "report": {"runs": [{"phase": "Succeeded", "ranks": [{"rank": 0}]}]}}}'
ev() { # REASON MESSAGE [COUNT]
  printf '{"reason": "%s", "message": "%s", "count": %s, "source": {"component": "trainbench-operator"},
           "involvedObject": {"uid": "u1"}}' "$1" "$2" "${3:-1}"
}
good_events=("$(ev RunStarted 'run 0 (1 x 1) attempt 0: created 2 pods')"
  "$(ev RunRestarted 'run 0 restarted (1/3): pod x failed')"
  "$(ev RunStarted 'run 0 (1 x 1) attempt 1: created 2 pods')"
  "$(ev RunSucceeded 'run 0 (1 x 1) succeeded')" "$(ev JobSucceeded 'all 1 runs succeeded')")
audit_line() { echo "{\"verb\": \"create\", \"resource\": \"pods\", \"code\": 201, \"namespace\": \"default\", \"name\": \"$1\"}"; }

# check JOBS-JSON EVENTS-JSON AUDIT-LINES [EXTRA ARGS]: check_soak.py's exit code.
check() {
  echo "{\"items\": [$1]}" >"$W/jobs.json"
  echo "{\"items\": [$2]}" >"$W/events.json"
  printf '%s\n' "$3" >"$W/audit.log"
  shift 3
  python3 "$HERE/check_soak.py" --jobs "$W/jobs.json" --events "$W/events.json" --audit "$W/audit.log" "$@" >"$W/out" 2>&1
}
join() { local IFS=,; echo "$*"; }
# The scheduler's binding of a pod is a create of pods/binding, not a second pod.
binding='{"verb": "create", "resource": "pods", "subresource": "binding", "code": 201, "namespace": "default", "name": "j-r0-a0-master"}'
audit=$(printf '%s\n' "$(audit_line j-r0-a0-master)" "$binding" "$(audit_line j-r0-a1-master)")

check "$job" "$(join "${good_events[@]}")" "$audit" || fail "a good soak failed: $(cat "$W/out")"
grep -q '"eventRepeats": 0' "$W/out" || fail "figures: $(cat "$W/out")"

! check "$job" "$(join "${good_events[@]}" "$(ev RunSucceeded 'run 0 (1 x 1) succeeded')")" "$audit" || fail "repeat not found"
grep -q '"eventRepeats": 1' "$W/out" || fail "repeat not counted: $(cat "$W/out")"
! check "$job" "$(join "${good_events[@]:0:4}" "$(ev JobSucceeded 'all 1 runs succeeded' 2)")" "$audit" || fail "count 2 not found"
! check "$job" "$(join "${good_events[@]:1}")" "$audit" || fail "missing RunStarted not found"
grep -q '"eventsMissing": 1' "$W/out" || fail "missing not counted: $(cat "$W/out")"
! check "$job" "$(join "${good_events[@]}")" "$(printf '%s\n' "$audit" "$(audit_line j-r0-a1-master)")" || fail "duplicate pod not found"
grep -q '"duplicatePods": 1' "$W/out" || fail "duplicate not counted: $(cat "$W/out")"
! check "${job/\"phase\": \"Succeeded\", \"runsTotal\"/\"phase\": \"Running\", \"runsTotal\"}" "$(join "${good_events[@]}")" "$audit" ||
  fail "a job still Running passed"
! check "$job" "$(join "${good_events[@]}")" "$audit" --leftover-pods 1 || fail "a leftover pod passed"
echo "PASS check_soak_test"

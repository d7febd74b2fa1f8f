#!/usr/bin/env bash
# Prints, for each test that failed in a ctest run, the lines of its output that say why (FAIL,
# PROBLEM, error) and its last lines, from BUILD_DIR/Testing/Temporary/LastTest.log. scripts/test.sh
# calls it after a failed ctest run so that the reasons end the log (CI shows a log's tail; with
# two tests at a time, a failed test's output is otherwise somewhere in the middle).
# Usage: scripts/failed-test-output.sh BUILD_DIR [TAIL_LINES]
set -euo pipefail
log="$1/Testing/Temporary/LastTest.log"
[ -f "$log" ] || { echo "no ctest log at $log"; exit 0; }
awk -v tail_n="${2:-25}" '
  function keep(line) {
    out[n++ % tail_n] = line
    if (line ~ /FAIL|PROBLEM|[Ee]rror:|[Aa]ssert/ && length(why) < 4000) why = why "  " line "\n"
  }
  / Testing: / && /^[0-9]+\/[0-9]+ / { name = $3; n = 0; why = ""; inout = 0; next }
  /^Output:$/ { inout = 1; getline; next }
  inout && /<end of output>$/ {  # (a test killed at its timeout leaves no newline before it)
    inout = 0
    sub(/<end of output>$/, "")
    if ($0 != "") keep($0)
    next
  }
  inout { keep($0); next }
  /^Test Failed/ {
    printf "==== %s failed: why ====\n%s==== %s: its last lines ====\n", name, why, name
    for (i = (n > tail_n ? n - tail_n : 0); i < n; i++) print "  " out[i % tail_n]
  }
' "$log"

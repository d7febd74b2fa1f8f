# shellcheck shell=bash
# Shared by the bench/*_vs_pytorch.sh scripts (sourced; they set PY). Each cell of their tables is
# the median over rounds with the range in brackets.

# range DIGITS V...: "median (min-max)" with DIGITS decimals
range() {
  $PY -c 'import sys, statistics as s
d = int(sys.argv[1]); v = [float(x) for x in sys.argv[2:]]; f = "%%.%df" % d
print((f + " (" + f + "-" + f + ")") % (s.median(v), min(v), max(v)))' "$@"
}

# median DIGITS V...: the median with DIGITS decimals
median() { $PY -c 'import sys, statistics as s; print("%%.%df" % int(sys.argv[1]) % s.median(float(x) for x in sys.argv[2:]))' "$@"; }

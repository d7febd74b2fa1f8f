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

# ddp_job_yaml MODEL BATCH SPEC_LINES: the job of ddp_vs_pytorch.sh and before_after.sh (no ddp,
# ddp x1, ddp x2 on one node), from WARMUP, STEPS, REPEATS and THREADS.
ddp_job_yaml() {
  cat <<YAML
apiVersion: trainbench.dev/v1alpha1
kind: BenchmarkJob
metadata: {name: bench-$1}
spec:
  benchmark:
    model: $1
    batchSizePerDevice: $2
    warmupSteps: $WARMUP
    measureSteps: $STEPS
    repeats: $REPEATS
    threadsPerProcess: $THREADS
$3
  sweep:
    - {nodes: 1, devicesPerNode: 1, paradigm: none}
    - {nodes: 1, devicesPerNode: 1}
    - {nodes: 1, devicesPerNode: 2}
YAML
}

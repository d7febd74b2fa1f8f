#!/usr/bin/env bash
# amp-fp16 diagnosis on a GPU machine (after bench/gpu/checks.sh built the worker): every step's
# loss and loss scale for bert-base under amp-fp16, amp-bf16, and amp-bf16 with the fp16 loss
# scaler forced on (the RunConfig's test option lossScale, added by a wrapper around the worker),
# so the dtype and the scaler are told apart.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-out}; bundle=$(pwd)/.gpu
torchlib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
export LD_LIBRARY_PATH=$bundle/lib:$torchlib TRAINBENCH_WORKER=/tmp/build-gpu/trainbench-worker TRAINBENCH_LOG_STEPS=1
steps=${STEPS:-30}
cat >/tmp/worker-scaled.sh <<EOF
#!/bin/sh
TRAINBENCH_RUN_CONFIG="\${TRAINBENCH_RUN_CONFIG%?}"',"testOptions":{"lossScale":65536}}'
export TRAINBENCH_RUN_CONFIG
exec $TRAINBENCH_WORKER "\$@"
EOF
chmod +x /tmp/worker-scaled.sh
for model in ${MODELS:-bert-base gpt2-small}; do
  for case in ${CASES:-amp-fp16 amp-bf16 amp-bf16-scaled}; do
    precision=${case%-scaled}
    sed "s/MODEL/$model/; s/PRECISION/$precision/; s/name: lm-gpu/name: diag/; s/measureSteps: 50/measureSteps: $steps/; s/repeats: 3/repeats: 1/" \
      bench/gpu/jobs/lm-gpu.yaml >/tmp/diag.yaml
    extra=(); [ "$case" = amp-bf16-scaled ] && extra=(env TRAINBENCH_WORKER=/tmp/worker-scaled.sh)
    rm -rf /tmp/diag-logs
    "${extra[@]}" $bundle/bin/trainbench run /tmp/diag.yaml --keep-logs /tmp/diag-logs >/dev/null 2>&1
    echo "== $model $case rc=$?"
    # the first steps, every 10th, and every change of the loss scale
    grep -h "step\|skipped" /tmp/diag-logs/*/rank-0.log |
      awk '{s=$NF} NR<=5 || NR%10==0 || s!=last || /skipped/ {print} {last=s}' | tee "$OUT/diag-$model-$case.txt"
  done
done

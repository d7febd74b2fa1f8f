#!/usr/bin/env bash
# Runs on a GPU machine (the `device` tool's, in the repository root, with .gpu from
# bench/gpu/bundle.sh carried): the cuda worker image's trainbench-worker over this machine's pip
# torch 2.15.0 libraries (the image's files, checked by sha256), or, with another torch, one built
# against it; then the GPU checks of docs/performance.md, writing logs and JSON reports to $OUT.
# Usage: bash bench/gpu/checks.sh [STAGE...]
#   stages: lm nvml nccl resnet compress fp16diag (default: lm nvml nccl resnet compress)
set -uo pipefail
# Everything is written to a scratch folder and packed into $OUT/gpu-checks.tar.gz at the end
# (with summary.txt beside it): the device tool brings back at most 8 files.
RESULTS=${OUT:-/tmp/gpu-results}
OUT=/tmp/gpu-out
mkdir -p "$OUT" "$RESULTS"
root=$(pwd)
bundle=$root/.gpu
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
{
  nvidia-smi -L; nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader
  . /etc/os-release; echo "os: $PRETTY_NAME"; g++ --version | head -1; cmake --version | head -1
  python3 -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  python3 -c 'import transformers; print("transformers", transformers.__version__)'
} 2>&1 | tee -a "$OUT/summary.txt"
start=$(date +%s)
# image_libraries DIR: links in DIR to this machine's pip torch files that are, by sha256, the
# libraries of the cuda worker image (bundle.sh's torch-libs.sha256); fails naming the first
# missing or different one.
image_libraries() {
  local dir=$1 site sum name f n=0
  site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') || return 1
  rm -rf "$dir" && mkdir -p "$dir"
  while read -r sum name; do
    f=$(find "$site/torch/lib" "$site/nvidia" -name "$name" -type f 2>/dev/null | head -n 1)
    [ -n "$f" ] || { echo "the image's $name is not in this machine's torch ($site)"; return 1; }
    [ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$sum" ] || { echo "$f differs from the image's $name"; return 1; }
    ln -s "$f" "$dir/$name"; n=$((n + 1))
  done <"$bundle/torch-libs.sha256"
  echo "all $n libraries of the cuda image are this machine's pip torch files, byte for byte"
}
# The cuda worker image's trainbench-worker (carried by bundle.sh) when this machine's torch has
# the image's libraries; otherwise one built here against this machine's own CUDA libtorch.
if [ -x "$bundle/bin/trainbench-worker-cuda" ] && why=$(image_libraries /tmp/torch-libs); then
  log "worker: the cuda image's (TORCH_FLAVOUR=cuda); $why"
  export LD_LIBRARY_PATH=$bundle/lib:/tmp/torch-libs:${LD_LIBRARY_PATH:-}
  export TRAINBENCH_WORKER=$bundle/bin/trainbench-worker-cuda
else
  log "worker: built here against this machine's libtorch (${why:-no cuda worker in the bundle})"
  prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  cmake -S bench/gpu -B /tmp/build-gpu -G Ninja -DTRAINBENCH_BUNDLE="$bundle" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >"$OUT/configure.log" 2>&1 || { log "configure failed"; tail -40 "$OUT/configure.log"; cp "$OUT/configure.log" "$RESULTS/"; exit 1; }
  ninja -C /tmp/build-gpu -k 0 >"$OUT/build.log" 2>&1 || { log "build failed"; grep -E "error|Error" "$OUT/build.log" | head -60; cp "$OUT/build.log" "$RESULTS/"; exit 1; }
  log "built trainbench-worker in $(( $(date +%s) - start )) s"
  torchlib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
  export LD_LIBRARY_PATH=$bundle/lib:$torchlib:${LD_LIBRARY_PATH:-}
  export TRAINBENCH_WORKER=/tmp/build-gpu/trainbench-worker
fi
"$TRAINBENCH_WORKER" --version 2>&1 | tee -a "$OUT/summary.txt"
stages=${*:-lm nvml nccl resnet compress}
want() { [[ " $stages " == *" $1 "* ]]; }

tb=$bundle/bin/trainbench
jobs=/tmp/gpu-jobs; mkdir -p $jobs

# 1. bert-base / gpt2-small, C++ worker vs PyTorch eager (HF transformers), tokens/s.
want lm && for model in bert-base gpt2-small; do
  for precision in amp-bf16 fp32 amp-fp16; do
    # The worker with eager attention (today's figures) and with the fused kernel (libtorch 2.x:
    # at::scaled_dot_product_attention), the counterparts of HF's eager and sdpa below.
    for wattn in eager fused; do
      name=$model-$precision-$wattn
      sed "s/MODEL/$model/; s/PRECISION/$precision/; s/ATTENTION/$wattn/; s/name: lm-gpu/name: $name/" \
        bench/gpu/jobs/lm-gpu.yaml >$jobs/$name.yaml
      log "worker $name"
      timeout 240 $tb run $jobs/$name.yaml --json "$OUT/$name.json" >"$OUT/$name.txt" 2>"$OUT/$name.err"; echo "rc=$?" >>"$OUT/$name.txt"
      cat "$OUT/$name.txt" | tee -a "$OUT/summary.txt" | tail -3
    done
    attns=eager; [ $precision = amp-bf16 ] && attns="eager sdpa"
    for attn in $attns; do
      log "pytorch $name attn=$attn"
      timeout 240 python3 bench/pytorch_lm.py --model $model --precision $precision --attn $attn \
        --batch 32 --seq 128 --warmup 10 --steps 50 --repeats 3 2>&1 | tail -3 | tee -a "$OUT/pytorch-lm.jsonl" "$OUT/summary.txt"
    done
  done
done

# 2. NVML gauges on /metrics while a run trains (one rank, port 9400).
if want nvml; then
log "nvml scrape"
sed "s/MODEL/bert-base/; s/PRECISION/amp-bf16/; s/ATTENTION/auto/; s/measureSteps: 50/measureSteps: 400/; s/name: lm-gpu/name: nvml/" \
  bench/gpu/jobs/lm-gpu.yaml >$jobs/nvml.yaml
TRAINBENCH_METRICS_PORT=9400 timeout 240 $tb run $jobs/nvml.yaml >"$OUT/nvml-run.txt" 2>&1 &
run=$!
python3 - <<'PY' | tee -a "$OUT/summary.txt"
import time, urllib.request
best = {}
for _ in range(120):
    time.sleep(0.5)
    try:
        text = urllib.request.urlopen("http://127.0.0.1:9400/metrics", timeout=2).read().decode()
    except Exception:
        continue
    for line in text.splitlines():
        if line.startswith("trainbench_gpu") or line.startswith("trainbench_device"):
            name, _, value = line.rpartition(" ")
            best[name] = max(best.get(name, float("-inf")), float(value))
for k, v in sorted(best.items()):
    print(k, v)
print("gpu series seen:", len(best))
PY
wait $run; echo "nvml run rc=$?" | tee -a "$OUT/summary.txt"
fi

# 3. NCCL: DDP and the all-reduce benchmark at one rank.
if want nccl; then
  log "nccl"
  timeout 300 $tb run bench/gpu/jobs/nccl-gpu.yaml --json "$OUT/nccl.json" >"$OUT/nccl.txt" 2>"$OUT/nccl.err"; echo "rc=$?" >>"$OUT/nccl.txt"
  tee -a "$OUT/summary.txt" <"$OUT/nccl.txt"; tail -5 "$OUT/nccl.err"
fi
# 4. resnet50, no DDP and DDP (NCCL, one rank): C++ worker vs PyTorch's Python DDP.
if want resnet; then
  for precision in fp32 amp-bf16; do
    sed "s/PRECISION/$precision/; s/name: resnet50-gpu/name: resnet50-$precision/" bench/gpu/jobs/resnet50-gpu.yaml >$jobs/resnet50-$precision.yaml
    log "worker resnet50 $precision"
    timeout 240 $tb run $jobs/resnet50-$precision.yaml --json "$OUT/resnet50-$precision.json" >"$OUT/resnet50-$precision.txt" 2>&1
    grep -E "^ *1 GPUs -- .*p50" "$OUT/resnet50-$precision.txt" | head -2 | tee -a "$OUT/summary.txt"
    for ddp in --no-ddp ""; do
      log "pytorch resnet50 $precision ${ddp:-ddp}"
      timeout 240 python3 bench/pytorch_ddp.py --model resnet50 --device cuda --precision $precision $ddp \
        --batch 64 --warmup 10 --steps 50 --repeats 3 2>&1 | tail -2 | tee -a "$OUT/pytorch-resnet.jsonl" "$OUT/summary.txt"
    done
  done
fi

# 5. DDP gradient compression through NCCL: parameters after 20 steps, fp16 / bf16 vs none.
if want compress; then
  log "gradient compression"
  for case in none:0.01 fp16:0.01 bf16:0.01 initial:1e-30; do
    comp=${case%%:*}; lr=${case#*:}; [ "$comp" = initial ] && comp=none
    sed "s/COMPRESSION/$comp/; s/LR/$lr/" bench/gpu/jobs/compression-gpu.yaml >$jobs/c-${case%%:*}.yaml
    TRAINBENCH_DUMP_PARAMS=$OUT/params-${case%%:*} timeout 120 $tb run $jobs/c-${case%%:*}.yaml >"$OUT/c-${case%%:*}.txt" 2>&1
    echo "${case%%:*} rc=$?" | tee -a "$OUT/summary.txt"
  done
  python3 - <<'PY' | tee -a "$OUT/summary.txt"
import os
import numpy as np
out = os.environ["OUT"]
load = lambda c: np.fromfile(f"{out}/params-{c}.rank0.bin", dtype="<f4").astype(np.float64)
ref, init = load("none"), load("initial")
moved = np.abs(ref - init).max()
print(f"parameters {ref.size}, max |none - initial| = {moved:.3e}")
for c in ("fp16", "bf16"):
    d = np.abs(load(c) - ref)
    print(f"{c}: max |{c} - none| = {d.max():.3e} ({d.max() / moved:.2e} of the largest move), mean {d.mean():.3e}")
PY
fi

want fp16diag && bash bench/gpu/fp16_diag.sh
log "done in $(( $(date +%s) - start )) s"
tar -C "$OUT" -czf "$RESULTS/gpu-checks.tar.gz" . && cp "$OUT/summary.txt" "$RESULTS/"

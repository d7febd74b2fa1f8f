#!/usr/bin/env python3
"""DeepSpeed ZeRO (stage 1 or 2) as a trainbench program workload.

The built-in worker's mlp (sizes from TRAINBENCH_RUN_CONFIG's "mlp"), synthetic data made once per
rank, cross-entropy and Adam (betas 0.9 / 0.999, eps 1e-8, the built-in zero paradigm's optimizer
and learningRate; DeepSpeed's "torch_adam" with "adam_w_mode" false: torch.optim.Adam, so no
DeepSpeed op is built for it and no weight decay is added), trained by a DeepSpeed engine with
ZeRO stage --stage: 1 shards Adam's state over the ranks (as the built-in `zero` does), 2 also
its gradients (reduce-scattered). Against the built-in `zero` in one report
(examples/deepspeed-zero.yaml). gloo on the CPU (DeepSpeed's CPU accelerator when no GPU is
found); nccl with one GPU per rank when the config's device is cuda. Needs deepspeed: the venv of
scripts/python-torch.sh has 0.19.8 (scripts/torch/deepspeed-requirements.txt).

On the CPU, deepspeed.init_distributed compiles a small shared-memory comm op with g++ the first
time (about a minute; torch's JIT extensions, cached in $TORCH_EXTENSIONS_DIR). When that variable
is unset, this program sets it to ~/.cache/trainbench/torch_extensions before importing deepspeed,
so the build lives beside trainbench's other caches (torch's own default is
~/.cache/torch_extensions). The Probe is created before, so the run shows the ranks "starting"
while it compiles; the job's hang timeout must cover the compile (examples/deepspeed-zero.yaml).

The engine's gradient reduction (all-reduce at stage 1, reduce-scatter at 2) runs inside
engine.backward and the all-gather of the updated parameters inside engine.step; they cannot be
told apart from compute here, so the report's exposed communication for this workload is 0:
compare its step times instead.

Usage (in a BenchmarkJob workload): command: [python3, examples/programs/deepspeed_zero.py]
                                    args: [--stage, "2"]
"""
import argparse
import os
import sys

import torch.nn as nn

from _common import finish_rank, make_model, setup_rank, sync, synthetic_batch
from trainbench_probe import Probe


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stage", type=int, choices=[1, 2], default=1,
                   help="ZeRO stage: 1 shards the optimizer state, 2 also the gradients")
    args = p.parse_args()

    probe = Probe()  # first: the run shows this rank starting while deepspeed compiles its op
    if not os.environ.get("TORCH_EXTENSIONS_DIR"):
        os.environ["TORCH_EXTENSIONS_DIR"] = os.path.expanduser("~/.cache/trainbench/torch_extensions")
    # torch builds the op with the first ninja on PATH. This interpreter's own (pip's ninja, beside
    # it in the venv) goes first, so every caller builds with the same one: ninja 1.12 changed its
    # command hash, and a run under Debian's 1.11 compiled the op again (minutes, in a pod whose
    # HOME has no ccache) where scripts/python-torch.sh had built it with the venv's.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    import deepspeed  # after TORCH_EXTENSIONS_DIR: its op builders read it

    config, device, backend = setup_rank(probe)
    deepspeed.init_distributed(dist_backend=backend)  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    model, inputs, classes = make_model("mlp", config)
    parameter_count = sum(t.numel() for t in model.parameters())  # the full model's
    ds_config = {
        "train_micro_batch_size_per_gpu": probe.batch_size,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": args.stage},
        # torch_adam: torch.optim.Adam (DeepSpeed's FusedAdam / CPUAdam would be compiled first);
        # adam_w_mode false: DeepSpeed's "Adam" is AdamW (weight decay 0.01) unless told otherwise.
        "optimizer": {"type": "Adam", "params": {"lr": float(config["learningRate"]), "betas": [0.9, 0.999],
                                                 "eps": 1e-8, "weight_decay": 0.0, "torch_adam": True,
                                                 "adam_w_mode": False}},
        "steps_per_print": 1 << 30,  # no DeepSpeed progress lines in the rank's log
    }
    engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
    loss_fn = nn.CrossEntropyLoss()
    x, y = synthetic_batch(probe, inputs, classes, device)

    for _ in probe.steps():
        with probe.step():
            out = engine(x)
            loss = loss_fn(out, y)
            probe.phase("backward")  # reduces the gradients too (stage 1: all-reduce, 2: reduce-scatter)
            engine.backward(loss)
            probe.phase("optimizer")  # Adam on this rank's partition, then all-gathers the parameters
            engine.step()  # zeroes the gradients
            sync(device)
            probe.loss(loss)
    inner = getattr(opt, "optimizer", opt)  # ZeRO's optimizer wraps torch.optim.Adam over this rank's partition
    state = sum(v.numel() * v.element_size() for s in inner.state.values() for k, v in s.items()
                if hasattr(v, "numel") and k != "step")
    finish_rank(probe, parameter_count=parameter_count, optimizer_state_bytes=state)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch's own DistributedDataParallel (Python) as a trainbench program workload.

The same shapes and protocol as trainbench's built-in worker (its mlp, resnet18 or resnet50;
synthetic data made once per rank; SGD with momentum 0.9; cross-entropy), so one report and one
`trainbench diff` compare the C++ worker with Python DDP (examples/python-ddp.yaml). Everything
the run decides comes from the rank's environment: the batch, steps, seed, learning rate and
threads from TRAINBENCH_RUN_CONFIG, the rendezvous from MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE
(torchrun's variables), the mlp's sizes from the config's "mlp" (spec.benchmark.mlp's defaults
in a job of programs only).

Usage (in a BenchmarkJob workload): command: [python3, examples/programs/python_ddp.py]
                                    args: [--model, mlp]
"""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn

from _common import finish_rank, make_model, setup_rank, sync, synthetic_batch
from trainbench_probe import Probe


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mlp", choices=["mlp", "resnet18", "resnet50"])
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    args = p.parse_args()

    probe = Probe()
    config, device, backend = setup_rank(probe)
    dist.init_process_group(backend)  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    model, inputs, classes = make_model(args.model, config)
    model = model.to(device)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb,
                                              device_ids=[probe.local_rank] if device.type == "cuda" else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=float(config["learningRate"]), momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x, y = synthetic_batch(probe, inputs, classes, device)

    for _ in probe.steps():
        with probe.step():
            out = ddp(x)
            loss = loss_fn(out, y)
            probe.phase("backward")  # DDP's bucket all-reduces overlap it; its end waits for the last
            opt.zero_grad(set_to_none=True)
            loss.backward()
            probe.phase("optimizer")
            opt.step()
            sync(device)
            probe.loss(loss)
    momentum = sum(s["momentum_buffer"].numel() * s["momentum_buffer"].element_size()
                   for s in opt.state.values() if s.get("momentum_buffer") is not None)
    finish_rank(probe, parameter_count=sum(t.numel() for t in model.parameters()), optimizer_state_bytes=momentum)


if __name__ == "__main__":
    main()

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
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

from trainbench_probe import Probe


def make_model(name, config):
    if name == "mlp":
        mlp = config["mlp"]
        sizes = [mlp["inputSize"]] + list(mlp["hiddenSizes"]) + [mlp["numClasses"]]
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        return nn.Sequential(*layers), sizes[0], sizes[-1]
    import torchvision.models as tvm
    return getattr(tvm, name)(), None, 1000


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="mlp", choices=["mlp", "resnet18", "resnet50"])
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    args = p.parse_args()

    probe = Probe()
    config = probe.config
    torch.set_num_threads(int(config["threadsPerProcess"]))
    torch.manual_seed(int(config["seed"]))
    cuda = config["device"] == "cuda"
    device = torch.device("cuda", probe.local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    model, inputs, classes = make_model(args.model, config)
    model = model.to(device)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb,
                                              device_ids=[probe.local_rank] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=float(config["learningRate"]), momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(int(config["seed"]) * 1000003 + probe.rank)
    batch = probe.batch_size
    shape = (batch, inputs) if inputs else (batch, 3, int(config["imageSize"]), int(config["imageSize"]))
    x = torch.randn(*shape, generator=g).to(device)
    y = torch.randint(0, classes, (batch,), generator=g).to(device)

    for _ in probe.steps():
        with probe.step():
            out = ddp(x)
            loss = loss_fn(out, y)
            probe.phase("backward")  # DDP's bucket all-reduces overlap it; its end waits for the last
            opt.zero_grad(set_to_none=True)
            loss.backward()
            probe.phase("optimizer")
            opt.step()
            if cuda:
                torch.cuda.synchronize()
            probe.loss(loss)
    params = sum(t.numel() for t in model.parameters())
    momentum = sum(s["momentum_buffer"].numel() * s["momentum_buffer"].element_size()
                   for s in opt.state.values() if s.get("momentum_buffer") is not None)
    probe.finish(parameter_count=params, optimizer_state_bytes=momentum)
    dist.barrier()
    # No destroy_process_group(): gloo's teardown can deadlock at exit (bench/pytorch_ddp.py).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch FSDP2 (fully_shard) as a trainbench program workload.

The built-in worker's mlp (sizes from TRAINBENCH_RUN_CONFIG's "mlp"), synthetic data made once per
rank, cross-entropy and Adam (betas 0.9 / 0.999, eps 1e-8, the built-in zero paradigm's optimizer
and learningRate), with every Linear layer and the root sharded by FSDP2's per-module API
(`torch.distributed.fsdp.fully_shard`, torch >= 2.6): parameters, gradients and Adam's state are
all sharded over the ranks (ZeRO stage 3), against the built-in `zero` (stage 1) in one report
(examples/fsdp.yaml). gloo on the CPU; nccl with one GPU per rank when the config's device is cuda.

gloo has FSDP2's collectives in torch 2.15 (dist.all_gather_single and dist.reduce_scatter_single,
once all_gather_into_tensor / reduce_scatter_tensor): on 2 CPU ranks with the same data on both,
the losses equal an unsharded Adam's, step for step. FSDP's all-gathers (forward, and again in
backward) and reduce-scatters (backward) run inside the forward and backward phases and cannot be
told apart from compute here, so the report's exposed communication for this workload is 0:
compare its step times instead.

Usage (in a BenchmarkJob workload): command: [python3, examples/programs/fsdp.py]
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

from trainbench_probe import Probe


def make_mlp(config):
    mlp = config["mlp"]
    sizes = [mlp["inputSize"]] + list(mlp["hiddenSizes"]) + [mlp["numClasses"]]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers), sizes[0], sizes[-1]


def local_bytes(t):
    """Bytes of this rank's part of a tensor: a DTensor's local shard, else the tensor."""
    if hasattr(t, "to_local"):
        t = t.to_local()
    return t.numel() * t.element_size()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reshard-after-forward", choices=["true", "false"], default="true",
                   help="free the gathered parameters after forward (true, ZeRO-3) or keep them "
                        "until backward (false, ZeRO-2-like)")
    args = p.parse_args()

    probe = Probe()
    config = probe.config
    torch.set_num_threads(int(config["threadsPerProcess"]))
    torch.manual_seed(int(config["seed"]))  # the same initial model on every rank
    cuda = config["device"] == "cuda"
    device = torch.device("cuda", probe.local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; the run's backend (gloo on the CPU, nccl on GPUs)
    dist.init_process_group(config.get("backend") or ("nccl" if cuda else "gloo"))
    model, inputs, classes = make_mlp(config)
    model = model.to(device)
    parameter_count = sum(t.numel() for t in model.parameters())  # the full model's, before sharding
    reshard = args.reshard_after_forward == "true"
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, reshard_after_forward=reshard)
    fully_shard(model, reshard_after_forward=reshard)  # the root: owns no parameters of its own here
    opt = torch.optim.Adam(model.parameters(), lr=float(config["learningRate"]),
                           betas=(0.9, 0.999), eps=1e-8)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(int(config["seed"]) * 1000003 + probe.rank)
    batch = probe.batch_size
    x = torch.randn(batch, inputs, generator=g).to(device)
    y = torch.randint(0, classes, (batch,), generator=g).to(device)

    for _ in probe.steps():
        with probe.step():
            out = model(x)  # each layer's parameters all-gathered just before its forward
            loss = loss_fn(out, y)
            probe.phase("backward")  # all-gathers again (reshard) and reduce-scatters the gradients
            opt.zero_grad(set_to_none=True)
            loss.backward()
            probe.phase("optimizer")  # Adam on this rank's shards only
            opt.step()
            if cuda:
                torch.cuda.synchronize()
            probe.loss(loss)
    state = sum(local_bytes(v) for s in opt.state.values() for k, v in s.items()
                if torch.is_tensor(v) and k != "step")
    probe.finish(parameter_count=parameter_count, optimizer_state_bytes=state)
    dist.barrier()
    # No destroy_process_group(): gloo's teardown can deadlock at exit (bench/pytorch_ddp.py).
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()

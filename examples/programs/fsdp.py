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

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard

from _common import finish_rank, make_model, setup_rank, sync, synthetic_batch
from trainbench_probe import Probe


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
    config, device, backend = setup_rank(probe)
    dist.init_process_group(backend)  # env://: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    model, inputs, classes = make_model("mlp", config)
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
    x, y = synthetic_batch(probe, inputs, classes, device)

    for _ in probe.steps():
        with probe.step():
            out = model(x)  # each layer's parameters all-gathered just before its forward
            loss = loss_fn(out, y)
            probe.phase("backward")  # all-gathers again (reshard) and reduce-scatters the gradients
            opt.zero_grad(set_to_none=True)
            loss.backward()
            probe.phase("optimizer")  # Adam on this rank's shards only
            opt.step()
            sync(device)
            probe.loss(loss)
    state = sum(local_bytes(v) for s in opt.state.values() for k, v in s.items()
                if torch.is_tensor(v) and k != "step")
    finish_rank(probe, parameter_count=parameter_count, optimizer_state_bytes=state)


if __name__ == "__main__":
    main()

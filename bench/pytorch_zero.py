#!/usr/bin/python3
"""PyTorch's own ZeRO-1 (torch.distributed.optim.ZeroRedundancyOptimizer over Adam, under DDP) and
DDP with plain Adam, on the same shapes and protocol as trainbench's `zero` / `ddp` + adam runs
(bench/pytorch_ddp.py's model, data and statistics), for docs/performance.md.

Prints one JSON line: secPerIter percentiles (all ranks' steps pooled, median over repeats), and
per rank the peak RSS and the bytes of optimizer state it holds.

Usage: "$(bash scripts/python-torch.sh)" bench/pytorch_zero.py --optimizer zero --world-size 2 --threads 1 \
           --batch 32 --mlp-hidden 2048 2048 2048 --lr 0.0001
"""
import argparse
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_ddp  # noqa: E402  (pins the thread variables before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402


def state_bytes(opt):
    inner = opt.optim if isinstance(opt, ZeroRedundancyOptimizer) else opt
    total = 0
    for st in inner.state.values():
        for v in st.values():
            if torch.is_tensor(v) and v.dim() > 0:
                total += v.numel() * v.element_size()
    return total


def worker(rank, args, port):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.manual_seed(args.seed)
    model = pytorch_ddp.make_model(args)
    dist.init_process_group("gloo", rank=rank, world_size=args.world_size)
    model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    if args.optimizer == "zero":
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=args.lr)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    x, y = pytorch_ddp.make_batch(args, rank)

    def step():
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return time.perf_counter() - t0

    for _ in range(args.warmup):
        step()
    times = [[step() for _ in range(args.steps)] for _ in range(args.repeats)]
    mine = {"times": times, "peakRss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "optimizerStateBytes": state_bytes(opt)}
    gathered = [None] * args.world_size
    dist.all_gather_object(gathered, mine)
    dist.barrier()
    if rank == 0:
        per_repeat = []
        for r in range(args.repeats):
            pooled = np.concatenate([np.array(g["times"][r]) for g in gathered])
            per_repeat.append(np.percentile(pooled, [50, 75, 90, 95]))
        med = np.median(np.array(per_repeat), axis=0)
        out = {"impl": "pytorch-python-" + ("zero-redundancy-adam" if args.optimizer == "zero" else "ddp-adam"),
               "worldSize": args.world_size, "batch": args.batch, "threads": args.threads,
               "secPerIter": dict(zip(["p50", "p75", "p90", "p95"], [float(v) for v in med])),
               "peakRss": [g["peakRss"] for g in gathered],
               "optimizerStateBytes": [g["optimizerStateBytes"] for g in gathered]}
        print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)  # see bench/pytorch_ddp.py: no teardown of the gloo group in torch 1.13


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp")
    p.add_argument("--optimizer", choices=["zero", "adam"], default="zero")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--mlp-input", type=int, default=1024)
    p.add_argument("--mlp-hidden", type=int, nargs="*", default=[2048, 2048, 2048])
    p.add_argument("--mlp-classes", type=int, default=1000)
    args = p.parse_args()
    mp.spawn(worker, args=(args, pytorch_ddp.free_port()), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()

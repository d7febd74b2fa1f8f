#!/usr/bin/python3
"""PyTorch's own DDP (Python, torch.nn.parallel.DistributedDataParallel) on the same shapes as
trainbench's worker, for the side-by-side numbers in docs/performance.md.

Same protocol as trainbench: synthetic data made once per rank, SGD (momentum 0.9), cross-entropy,
warm-up steps excluded, each step timed to completion, percentiles over all ranks' steps
(numpy's linear method), median over repeats. Ranks are spawned with torch.multiprocessing on
127.0.0.1 with gloo (torchrun on Python 3.11 is broken here, see shared notes).

Usage: "$(bash scripts/python-torch.sh)" bench/pytorch_ddp.py --model mlp --world-size 2 --threads 1 --batch 32
       python3 bench/pytorch_ddp.py --model resnet50 --device cuda --precision amp-bf16 (NCCL, one
       GPU per rank; each step ends with a CUDA synchronize, as the worker's)
"""
import argparse
import json
import os
import socket
import sys


def _pin_threads():
    # Same thread settings as trainbench's ranks (and torchrun): OpenBLAS and OpenMP read these
    # at load time, so they must be set before torch is imported.
    n = "1"
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            n = sys.argv[i + 1]
    os.environ["OMP_NUM_THREADS"] = n
    os.environ["OPENBLAS_NUM_THREADS"] = n


_pin_threads()

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

from amp_step import amp_setup, timed_step


def make_model(args):
    if args.model == "mlp":
        sizes = [args.mlp_input] + args.mlp_hidden + [args.mlp_classes]
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)
    import torchvision.models as tvm
    return getattr(tvm, args.model)()


def make_batch(args, rank):
    g = torch.Generator().manual_seed(args.seed * 1000003 + rank)
    x, y = _make_batch_cpu(args, g)
    return x.to(args.device), y.to(args.device)


def _make_batch_cpu(args, g):
    if args.model == "mlp":
        x = torch.randn(args.batch, args.mlp_input, generator=g)
        classes = args.mlp_classes
    else:
        x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=g)
        classes = 1000
    y = torch.randint(0, classes, (args.batch,), generator=g)
    return x, y


def worker(rank, args, port):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.manual_seed(args.seed)
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(rank)
        args.device = "cuda:%d" % rank
    model = make_model(args).to(args.device)
    if args.ddp:
        dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=args.world_size)
        model = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb,
                                                    device_ids=[rank] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x, y = make_batch(args, rank)

    device_type = "cuda" if cuda else "cpu"
    amp, scaler = amp_setup(args.precision, device_type)
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step():
        return timed_step(opt, lambda: loss_fn(model(x), y), device_type, amp, scaler, sync)[0]

    for _ in range(args.warmup):
        step()
    times = [[step() for _ in range(args.steps)] for _ in range(args.repeats)]
    if args.ddp:
        gathered = [None] * args.world_size
        dist.all_gather_object(gathered, times)
        # No destroy_process_group(): in torch 1.13, ~ProcessGroupGloo sometimes deadlocks joining
        # its worker thread while another thread waits for the GIL (seen twice here, a rank
        # spinning forever after the run). A barrier, then each rank exits without teardown.
        dist.barrier()
    else:
        gathered = [times]
    if rank == 0:
        per_repeat = []
        for r in range(args.repeats):
            pooled = np.concatenate([np.array(g[r]) for g in gathered])
            per_repeat.append(np.percentile(pooled, [50, 75, 90, 95]))
        med = np.median(np.array(per_repeat), axis=0)
        out = {"impl": "pytorch-python-ddp" if args.ddp else "pytorch-python-noddp", "model": args.model,
               "device": device_type, "precision": args.precision, "torch": torch.__version__,
               "worldSize": args.world_size, "batch": args.batch, "threads": args.threads,
               "secPerIter": dict(zip(["p50", "p75", "p90", "p95"], [float(v) for v in med]))}
        print(json.dumps(out))
    if args.ddp:
        sys.stdout.flush()
        os._exit(0)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="mlp")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-ddp", dest="ddp", action="store_false")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--mlp-input", type=int, default=1024)
    p.add_argument("--mlp-hidden", type=int, nargs="*", default=[4096, 4096])
    p.add_argument("--mlp-classes", type=int, default=1000)
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--precision", default="fp32", choices=["fp32", "amp-bf16", "amp-fp16"])
    args = p.parse_args()
    if not args.ddp and args.world_size != 1:
        p.error("--no-ddp runs one process")
    mp.spawn(worker, args=(args, free_port()), nprocs=args.world_size, join=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""PyTorch's own gloo all-reduce, timed like trainbench's allreduce paradigm (docs/allreduce.md):
per size, warm-up, then `repeats` timings of `iters` back-to-back all-reduces, mean over ranks,
p50 over repeats; busbw = algbw x 2(n-1)/n. A side-by-side reference for the worker's numbers.

    "$(bash scripts/python-torch.sh)" bench/pytorch_allreduce.py --ranks 2 --min 1024 --max 67108864
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def worker(rank, args, port, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    size = args.min
    flag = torch.zeros(1)
    rows = []
    while size <= args.max:
        t = torch.zeros(size // 4)
        for _ in range(args.warmup):
            dist.all_reduce(t)
        per_repeat = []
        for _ in range(args.repeats):
            dist.all_reduce(flag)
            t0 = time.perf_counter()
            for _ in range(args.iters):
                dist.all_reduce(t)
            sec = torch.tensor([(time.perf_counter() - t0) / args.iters], dtype=torch.float64)
            dist.all_reduce(sec)
            per_repeat.append(sec.item() / args.ranks)
        rows.append((size, statistics.median(per_repeat)))
        size *= 2
    pingpong = []
    if args.pingpong and args.ranks >= 2:
        # facts.md's reference: 25 MB sent 0 -> 1 and back, under the same conditions.
        t = torch.zeros(25_000_000 // 4)
        for _ in range(12):
            dist.barrier()
            t0 = time.perf_counter()
            if rank == 0:
                dist.send(t, 1)
                dist.recv(t, 1)
            elif rank == 1:
                dist.recv(t, 0)
                dist.send(t, 0)
            pingpong.append(time.perf_counter() - t0)
    if rank == 0:
        out.put((rows, sorted(pingpong)))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--min", type=int, default=1024)
    p.add_argument("--max", type=int, default=64 << 20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--port", type=int, default=29731)
    p.add_argument("--pingpong", action="store_true", help="also time a 25 MB send/recv round trip")
    args = p.parse_args()
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, args, args.port, out)) for r in range(args.ranks)]
    for pr in procs:
        pr.start()
    rows, pingpong = out.get()
    for pr in procs:
        pr.join()
    factor = 2 * (args.ranks - 1) / args.ranks
    print(f"{'size':>10}{'time (us)':>13}{'algbw GB/s':>12}{'busbw GB/s':>12}")
    for size, sec in rows:
        algbw = size / sec / 1e9
        print(f"{size:>10}{sec * 1e6:>13.1f}{algbw:>12.4f}{algbw * factor:>12.4f}")
    if pingpong:
        print(f"25 MB ping-pong: min {pingpong[0] * 1e3:.1f} ms, p50 {pingpong[len(pingpong) // 2] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()

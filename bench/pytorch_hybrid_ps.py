#!/usr/bin/python3
"""PyTorch's own "DDP and RPC" benchmark shape (seed 000) on the shapes of trainbench's `hybrid-ps`
paradigm: the reference for its side-by-side numbers (bench/hybrid_ps_vs_pytorch.sh).

Processes (torch.multiprocessing on 127.0.0.1, as in the seed): ranks 0..T-1 are the trainers
("trainer<i>"), T..T+P-1 the parameter servers ("ps<s>"), T+P the master ("master"). All of them
join one RPC group (TensorPipe); the trainers also form a gloo process group of their own (a
separate TCP rendezvous with trainer ranks only) in which DDP all-reduces the dense part. The
master places the tables on the servers, starts every trainer's loop with rpc_async, collects
their step times and prints the result; the servers only answer RPCs.

Model: trainbench's HybridEmbeddingModel (worker/models_lm.cpp) with the same arguments and
defaults: numTables K EmbeddingBags (mode sum) of numEmbeddings N x embeddingDim D, each example
K bags of bagSize L ids; the bags' sums concatenated [B, K*D], then Linear layers
K*D -> denseSizes[0] -> ... -> denseSizes[-1] -> numClasses, with one ReLU after the second Linear
(the seed's Sequential(fc1, fc2, relu, fc3, fc4, fc5)).

Placement -- how this differs from trainbench: like PyTorch's benchmark (one whole EmbeddingBag
per parameter server, looked up through its RRef), each table is one RemoteModule(EmbeddingBag)
held whole by server k % P (round-robin; with P > K the servers past K hold nothing and stay
idle). trainbench instead shards the rows of every table over all P servers in contiguous
ranges (server s owns rows [s*N/P, (s+1)*N/P) of each table). So per trainer step:
  - here K lookup RPCs (ids [B, L] out, bag sums [B, D] back), issued together with
    forward_async and waited for (the seed calls rpc_sync one table after the other:
    --sequential-lookups), and in the backward K gradient messages [B, D] sent by distributed
    autograd, one per table;
  - trainbench sends P requests ((bag, row) pairs of the ids each server owns) and gets P partial
    sums [B*K, D] back, then sends the whole features' gradient [B*K, D] to every server.
  Load: here a server's work is proportional to the tables it holds (uneven when P does not
  divide K); in trainbench every server sees every table, about 1/P of the ids.
Updates also differ: trainbench's servers wait for all T trainers' gradients of a step and apply
plain SGD once with their average (learning rate / T), synchronously; here each trainer's
DistributedOptimizer steps the remote tables with its own gradient as soon as it has it (the
tables take T unsynchronised SGD updates per step, as in the seed). The EmbeddingBag gradients
are dense [N, D] tensors (sparse=False, the default), so each update rewrites a whole table.

Training step of each trainer (timed with perf_counter from the lookups to the end of the
optimizer step and of the distributed autograd context): remote lookups, dense part under DDP,
cross-entropy, dist_autograd.backward, DistributedOptimizer(SGD, lr) over the remote table
parameters and the local dense ones (plain SGD by default, as the seed; --dense-momentum 0.9
gives the dense part its own DistributedOptimizer with momentum, as trainbench's dense part).
Synthetic data is made once per trainer (ids in [0, N), labels in [0, numClasses)), warm-up steps
are excluded, and the statistics are bench/pytorch_ddp.py's: numpy linear percentiles per
repeat, the median over repeats; per trainer (examples/sec = batch / sec) and "All" (every
trainer's steps pooled; examples/sec = T * batch / sec, as trainbench's runs[i].examplesPerSec).

Prints the seed-style table (sec/iter with 4 decimals, the seed's 3 are too coarse for small
shapes), then one JSON line (the last line of stdout).

Usage: "$(bash scripts/python-torch.sh)" bench/pytorch_hybrid_ps.py --trainers 2 --servers 2 --batch 32 \
           --warmup 5 --steps 20 --repeats 3 [--num-tables 8 --num-embeddings 300 \
           --embedding-dim 64 --bag-size 5 --dense-sizes 256 128 64 32 --num-classes 8] [--threads 1]
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_ddp  # noqa: E402  (pins OMP/OPENBLAS threads from --threads before torch loads)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed.autograd as dist_autograd  # noqa: E402
import torch.distributed.rpc as rpc  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.nn import RemoteModule  # noqa: E402
from torch.distributed.optim import DistributedOptimizer  # noqa: E402
from torch.distributed.rpc import RRef, TensorPipeRpcBackendOptions  # noqa: E402

PERCENTILES = [50, 75, 90, 95]


def trainer_name(t):
    return "trainer%d" % t


def server_name(s):
    return "ps%d" % s


def make_dense(args):
    """The dense part of trainbench's HybridEmbeddingModel: Linear K*D -> denseSizes... -> classes,
    a ReLU after the second Linear only."""
    layers = []
    width = args.num_tables * args.embedding_dim
    for i, size in enumerate(args.dense_sizes):
        layers.append(nn.Linear(width, size))
        if i == 1:
            layers.append(nn.ReLU())
        width = size
    layers.append(nn.Linear(width, args.num_classes))
    return nn.Sequential(*layers)


def make_batch(args, trainer):
    g = torch.Generator().manual_seed(args.seed * 1000003 + trainer)
    ids = torch.randint(0, args.num_embeddings, (args.batch, args.num_tables, args.bag_size), generator=g)
    labels = torch.randint(0, args.num_classes, (args.batch,), generator=g)
    return ids, labels


def run_trainer(tables, args):
    """Runs on trainer t (called by the master through RPC): the whole training loop. Returns
    (t, step seconds [repeat][step], first measured loss, last loss)."""
    t = rpc.get_worker_info().id
    torch.manual_seed(args.seed)  # the same dense initialisation on every trainer (DDP broadcasts rank 0's anyway)
    dense = nn.parallel.DistributedDataParallel(make_dense(args), bucket_cap_mb=args.bucket_cap_mb)

    table_params = []
    for table in tables:
        table_params.extend(table.remote_parameters())
    dense_params = [RRef(p) for p in dense.parameters()]
    if args.dense_momentum:
        optimizers = [DistributedOptimizer(torch.optim.SGD, table_params, lr=args.lr),
                      DistributedOptimizer(torch.optim.SGD, dense_params, lr=args.lr, momentum=args.dense_momentum)]
    else:
        optimizers = [DistributedOptimizer(torch.optim.SGD, table_params + dense_params, lr=args.lr)]

    ids, labels = make_batch(args, t)
    bags = [ids[:, k, :].contiguous() for k in range(args.num_tables)]  # table k's bags: [B, L]

    def step():
        t0 = time.perf_counter()
        with dist_autograd.context() as ctx:
            if args.sequential_lookups:
                sums = [table.forward(x) for table, x in zip(tables, bags)]
            else:
                futures = [table.forward_async(x) for table, x in zip(tables, bags)]
                sums = [f.wait() for f in futures]
            loss = F.cross_entropy(dense(torch.cat(sums, 1)), labels)
            dist_autograd.backward(ctx, [loss])
            for opt in optimizers:
                opt.step(ctx)
        return time.perf_counter() - t0, loss.item()

    for _ in range(args.warmup):
        step()
    times = []
    first_loss = last_loss = None
    for _ in range(args.repeats):
        per_repeat = []
        for _ in range(args.steps):
            sec, last_loss = step()
            if first_loss is None:
                first_loss = last_loss
            per_repeat.append(sec)
        times.append(per_repeat)
    return t, times, first_loss, last_loss


def percentiles(times_per_repeat):
    """[repeat][step] -> median over repeats of the linear percentiles of each repeat."""
    per_repeat = [np.percentile(np.array(r), PERCENTILES) for r in times_per_repeat]
    return [float(v) for v in np.median(np.array(per_repeat), axis=0)]


def entry(sec, examples):
    return {"secPerIter": {"p%d" % p: v for p, v in zip(PERCENTILES, sec)},
            "examplesPerSec": {"p%d" % p: examples / v for p, v in zip(PERCENTILES, sec)}}


def seed_row(prefix, e):
    cells = "".join("  p%02d:  %1.4fs  %6d/s" % (p, e["secPerIter"]["p%d" % p], e["examplesPerSec"]["p%d" % p])
                    for p in PERCENTILES)
    return "%8s:%s" % (prefix, cells)


def run_master(args):
    T, P = args.trainers, args.servers
    tables = [RemoteModule("%s/cpu" % server_name(k % P), nn.EmbeddingBag,
                           args=(args.num_embeddings, args.embedding_dim), kwargs={"mode": "sum"})
              for k in range(args.num_tables)]
    # timeout 0: no limit on a whole training loop (the lookups keep --rpc-timeout).
    futures = [rpc.rpc_async(trainer_name(t), run_trainer, args=(tables, args), timeout=0) for t in range(T)]
    results = sorted(f.wait() for f in futures)

    trainers = []
    for t, times, first, last in results:
        e = entry(percentiles(times), args.batch)
        e.update({"trainer": t, "lossStart": first, "lossEnd": last})
        trainers.append(e)
    pooled = [np.concatenate([np.array(r[1][i]) for r in results]) for i in range(args.repeats)]
    all_ = entry(percentiles(pooled), T * args.batch)

    print("------------------ PyTorch Distributed Benchmark (DDP and RPC) ---------------------")
    print("%10s%s" % ("", "".join("%14s%10s" % ("sec/iter", "ex/sec") for _ in PERCENTILES)))
    for e in trainers:
        print(seed_row("Trainer%d" % e["trainer"], e))
    print(seed_row("All", all_))
    out = {"impl": "pytorch-python-rpc-ddp", "torch": torch.__version__, "device": "cpu",
           "trainers": T, "servers": P, "batch": args.batch, "threads": args.threads,
           "warmup": args.warmup, "steps": args.steps, "repeats": args.repeats,
           "hybridEmbedding": {"numTables": args.num_tables, "numEmbeddings": args.num_embeddings,
                               "embeddingDim": args.embedding_dim, "bagSize": args.bag_size,
                               "denseSizes": args.dense_sizes, "numClasses": args.num_classes},
           "placement": "one RemoteModule(EmbeddingBag) per table, table k on server k %% %d" % P,
           "tablesPerServer": [len(range(s, args.num_tables, P)) for s in range(P)],
           "lookups": "sequential" if args.sequential_lookups else "concurrent",
           "lr": args.lr, "denseMomentum": args.dense_momentum,
           "parameterCount": args.num_tables * args.num_embeddings * args.embedding_dim
           + sum(q.numel() for q in make_dense(args).parameters()),
           "secPerIter": all_["secPerIter"], "examplesPerSec": all_["examplesPerSec"],
           "all": all_, "perTrainer": trainers}
    print(json.dumps(out))
    sys.stdout.flush()


def worker(rank, args, rpc_port, pg_port):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed + rank)
    T, P = args.trainers, args.servers
    options = TensorPipeRpcBackendOptions(init_method="tcp://127.0.0.1:%d" % rpc_port,
                                          num_worker_threads=args.rpc_threads, rpc_timeout=args.rpc_timeout)
    world = T + P + 1
    if rank < T:
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % pg_port, rank=rank, world_size=T)
        rpc.init_rpc(trainer_name(rank), rank=rank, world_size=world, rpc_backend_options=options)
    elif rank < T + P:
        torch.manual_seed(args.seed * 7919 + rank)  # the tables' initialisation
        rpc.init_rpc(server_name(rank - T), rank=rank, world_size=world, rpc_backend_options=options)
    else:
        rpc.init_rpc("master", rank=rank, world_size=world, rpc_backend_options=options)
        try:
            run_master(args)
        except BaseException:
            rpc.shutdown(graceful=False)
            raise
    rpc.shutdown()  # graceful: waits for every worker's outstanding work, a barrier over all
    if rank < T:
        # As bench/pytorch_ddp.py: no destroy_process_group() (torch 1.13's ~ProcessGroupGloo can
        # deadlock at exit); the RPC shutdown above already synchronised everyone.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--servers", type=int, default=2)
    p.add_argument("--batch", type=int, default=32, help="examples per trainer and step")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--steps", type=int, default=20, help="timed steps per repeat")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--num-tables", type=int, default=8)
    p.add_argument("--num-embeddings", type=int, default=300)
    p.add_argument("--embedding-dim", type=int, default=64)
    p.add_argument("--bag-size", type=int, default=5)
    p.add_argument("--dense-sizes", type=int, nargs="*", default=[256, 128, 64, 32])
    p.add_argument("--num-classes", type=int, default=8)
    p.add_argument("--threads", type=int, default=1, help="OMP/OPENBLAS and intra-op threads per process")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--dense-momentum", type=float, default=0.0,
                   help="0: one DistributedOptimizer(SGD) over everything (the seed); >0: the dense part's own")
    p.add_argument("--sequential-lookups", action="store_true", help="rpc_sync one table after the other, as the seed")
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--rpc-threads", type=int, default=16, help="TensorPipe worker threads per process (its default)")
    p.add_argument("--rpc-timeout", type=float, default=60.0, help="seconds, for each lookup and optimizer RPC")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    for name in ("trainers", "servers", "batch", "steps", "repeats", "num_tables", "num_embeddings",
                 "embedding_dim", "bag_size", "threads", "rpc_threads"):
        if getattr(args, name) < 1:
            p.error("--%s must be >= 1" % name.replace("_", "-"))
    if args.warmup < 0:
        p.error("--warmup must be >= 0")
    if any(s < 1 for s in args.dense_sizes):
        p.error("--dense-sizes must be >= 1")
    if args.num_classes < 2:
        p.error("--num-classes must be >= 2")
    if args.servers > args.num_tables:
        print("note: %d servers for %d tables: servers ps%d.. hold no table and stay idle"
              % (args.servers, args.num_tables, args.num_tables), file=sys.stderr)
    # Loopback only, for TensorPipe and gloo alike (the host name may resolve elsewhere).
    os.environ.setdefault("TP_SOCKET_IFNAME", "lo")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    rpc_port = pytorch_ddp.free_port()
    pg_port = pytorch_ddp.free_port()
    while pg_port == rpc_port:
        pg_port = pytorch_ddp.free_port()
    mp.spawn(worker, args=(args, rpc_port, pg_port), nprocs=args.trainers + args.servers + 1, join=True)


if __name__ == "__main__":
    main()

"""What the example programs share (python_ddp.py, fsdp.py, deepspeed_zero.py): the built-in
worker's models and synthetic data recipe, the rank's setup from its run config, and the end.
Each example imports it from its own directory (Python puts a script's directory on sys.path)."""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


def make_model(name, config):
    """The built-in worker's mlp (sizes from the run config's "mlp") or torchvision's resnet;
    returns (model, input features or None for images, classes)."""
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


def setup_rank(probe):
    """Threads and seed from the run config (the same initial model on every rank), this rank's
    device (one GPU per rank on cuda); returns (config, device, backend)."""
    config = probe.config
    torch.set_num_threads(int(config["threadsPerProcess"]))
    torch.manual_seed(int(config["seed"]))
    cuda = config["device"] == "cuda"
    device = torch.device("cuda", probe.local_rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    return config, device, config.get("backend") or ("nccl" if cuda else "gloo")


def synthetic_batch(probe, inputs, classes, device):
    """One batch made once per rank, as the built-in worker makes its data: random inputs
    (features, or 3 x imageSize x imageSize images) and labels, seeded by the seed and the rank."""
    config = probe.config
    g = torch.Generator().manual_seed(int(config["seed"]) * 1000003 + probe.rank)
    size = int(config["imageSize"])
    shape = (probe.batch_size, inputs) if inputs else (probe.batch_size, 3, size, size)
    x = torch.randn(*shape, generator=g).to(device)
    y = torch.randint(0, classes, (probe.batch_size,), generator=g).to(device)
    return x, y


def sync(device):
    """The end of a step on a GPU: its kernels done, as the built-in worker times them."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def finish_rank(probe, **record):
    """Hands over this rank's record, waits for the others, and exits without tearing the process
    group down (gloo's teardown can deadlock at exit: bench/pytorch_ddp.py)."""
    probe.finish(**record)
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)

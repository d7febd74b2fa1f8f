#!/usr/bin/python3
"""Cross-check of the worker's parameter counts against references built in torch.nn.

Usage: reference_param_counts.py TRAINBENCH_WORKER
Builds BERT-base (with pooler and pre-training heads), GPT-2 small, the mLSTM and the seed's
HybridModel from torch.nn building blocks (transformers is not installed) and compares their
parameter counts with `trainbench-worker --describe-model NAME`. Exit 77 (ctest: skipped) when
this Python has no torch.
"""
import json
import subprocess
import sys

try:
    import torch
    from torch import nn
except ImportError:
    print("no torch in this Python: skipped")
    sys.exit(77)

META = {"device": "meta"}


def count(*modules):
    seen = set()
    total = 0
    for m in modules:
        for p in (m.parameters() if isinstance(m, nn.Module) else [m]):
            if id(p) not in seen:  # tied weights once
                seen.add(id(p))
                total += p.numel()
    return total


def encoder_layers(n, hidden, heads, inter, eps, norm_first):
    return nn.ModuleList(
        nn.TransformerEncoderLayer(hidden, heads, inter, activation="gelu", layer_norm_eps=eps,
                                   batch_first=True, norm_first=norm_first, **META)
        for _ in range(n))


def bert():
    h, v = 768, 30522
    encoder = nn.ModuleList([
        nn.Embedding(v, h, **META), nn.Embedding(512, h, **META), nn.Embedding(2, h, **META),
        nn.LayerNorm(h, eps=1e-12, **META), encoder_layers(12, h, 12, 3072, 1e-12, False),
        nn.Linear(h, h, **META)])  # pooler
    heads = nn.ModuleList([nn.Linear(h, h, **META), nn.LayerNorm(h, eps=1e-12, **META),
                           nn.Linear(h, 2, **META)])  # MLM transform, its LayerNorm, NSP
    decoder_bias = nn.Parameter(torch.zeros(v, **META))
    return count(encoder), count(heads) + decoder_bias.numel()


def gpt2():
    h = 768
    wte = nn.Embedding(50257, h, **META)
    model = nn.ModuleList([wte, nn.Embedding(1024, h, **META), encoder_layers(12, h, 12, 3072, 1e-5, True),
                           nn.LayerNorm(h, eps=1e-5, **META)])
    lm_head = nn.Linear(h, 50257, bias=False, **META)
    lm_head.weight = wte.weight  # tied
    return count(model, lm_head)


def mlstm(e=64, hid=4096):
    return count(nn.ModuleList([
        nn.Embedding(256, e, **META),
        nn.Linear(e, hid, bias=False, **META),        # W_mx
        nn.Linear(hid, hid, bias=False, **META),      # W_mh
        nn.Linear(e, 4 * hid, **META),                # W_x + b
        nn.Linear(hid, 4 * hid, bias=False, **META),  # W_m
        nn.Linear(hid, 256, **META)]))                # decoder


def hybrid():
    # torch/distributed/benchmarks/benchmark_ddp_rpc.py: NUM_PS = 8 EmbeddingBag(300, 64, mode="sum")
    # and Sequential(fc1 512-256, fc2 256-128, relu, fc3 128-64, fc4 64-32, fc5 32-8).
    tables = nn.ModuleList(nn.EmbeddingBag(300, 64, mode="sum", **META) for _ in range(8))
    dense = nn.Sequential(nn.Linear(512, 256, **META), nn.Linear(256, 128, **META), nn.ReLU(),
                          nn.Linear(128, 64, **META), nn.Linear(64, 32, **META), nn.Linear(32, 8, **META))
    return count(tables, dense)


def describe(worker, model):
    out = subprocess.run([worker, "--describe-model", model], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    worker = sys.argv[1]
    bert_encoder, bert_heads = bert()
    expected = {
        "bert-base": (bert_encoder + bert_heads, bert_heads),
        "gpt2-small": (gpt2(), 0),
        "mlstm": (mlstm(), 0),
        "hybrid-embedding": (hybrid(), 0),
    }
    assert bert_encoder == 109482240, bert_encoder
    assert expected["gpt2-small"][0] == 124439808, expected["gpt2-small"]
    failed = False
    for model, (params, heads) in expected.items():
        got = describe(worker, model)
        ok = got["parameters"] == params and got["headParameters"] == heads
        failed |= not ok
        print(f"{model}: torch.nn reference {params} (heads {heads}), worker {got['parameters']} "
              f"(heads {got['headParameters']}): {'ok' if ok else 'MISMATCH'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch eager reference for trainbench's language models on one device: Hugging Face
transformers' BertForPreTraining (bert-base) and GPT2LMHeadModel (gpt2-small), built from their
default configs (no download), on the same synthetic batches and the same step as the worker.

Same protocol as trainbench: SGD (momentum 0.9, lr 0.01), bert: masked LM on 15% of the tokens +
next sentence; gpt2: next-token loss; autocast to --precision (amp-fp16 with a GradScaler); each
step timed to completion (CUDA synchronised); warm-up steps excluded; percentiles per repeat
(numpy's linear method), median over repeats. Examples are sequences; tokens = sequences x length.

Usage: python3 bench/pytorch_lm.py --model bert-base --batch 32 --seq 128 --precision amp-bf16
       [--attn eager|sdpa] [--device cuda]
"""
import argparse
import json

import numpy as np
import torch

from amp_step import amp_setup, timed_step


def build(args):
    import transformers as tf
    if args.model == "bert-base":
        cfg, cls = tf.BertConfig(), tf.BertForPreTraining
    elif args.model == "gpt2-small":
        cfg, cls = tf.GPT2Config(), tf.GPT2LMHeadModel
    else:
        raise SystemExit("--model must be bert-base or gpt2-small")
    if args.attn == "default":
        return cls(cfg), cfg.vocab_size
    try:
        model = cls._from_config(cfg, attn_implementation=args.attn)
    except (TypeError, AttributeError):
        cfg._attn_implementation = args.attn
        model = cls(cfg)
    return model, cfg.vocab_size


def batch(args, vocab, device):
    g = torch.Generator().manual_seed(args.seed)
    if args.model == "bert-base":
        tokens = torch.randint(0, vocab, (args.batch, args.seq), generator=g)
        masked = torch.rand(args.batch, args.seq, generator=g) < 0.15
        inputs = torch.where(masked, torch.full_like(tokens, 103), tokens)
        labels = torch.where(masked, tokens, torch.full_like(tokens, -100))
        nsp = torch.randint(0, 2, (args.batch,), generator=g)
        return {"input_ids": inputs.to(device), "labels": labels.to(device), "next_sentence_label": nsp.to(device)}
    tokens = torch.randint(0, vocab, (args.batch, args.seq + 1), generator=g)
    # GPT2LMHeadModel shifts labels itself: inputs tokens[:, :-1], loss against tokens[:, 1:].
    ids = tokens[:, :-1].contiguous().to(device)
    labels = ids.clone()
    return {"input_ids": ids, "labels": labels}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="bert-base")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--precision", default="amp-bf16", choices=["fp32", "amp-bf16", "amp-fp16"])
    p.add_argument("--attn", default="eager", choices=["eager", "sdpa", "default"])
    p.add_argument("--device", default="cuda")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    model, vocab = build(args)
    model.to(device).train()
    params = sum(t.numel() for t in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    amp_dtype, scaler = amp_setup(args.precision, device.type)
    inputs = batch(args, vocab, device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    losses = []

    def step():
        seconds, loss = timed_step(opt, lambda: model(**inputs).loss, device.type, amp_dtype, scaler, sync)
        losses.append(loss)
        return seconds

    for _ in range(args.warmup):
        step()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    per_repeat = [np.percentile([step() for _ in range(args.steps)], [50, 75, 90, 95]) for _ in range(args.repeats)]
    med = np.median(np.array(per_repeat), axis=0)
    out = {"impl": "pytorch-eager-hf-" + args.attn, "torch": torch.__version__, "model": args.model,
           "parameters": params, "batch": args.batch, "seq": args.seq, "precision": args.precision,
           "secPerIter": dict(zip(["p50", "p75", "p90", "p95"], [float(v) for v in med])),
           "sequencesPerSec": args.batch / float(med[0]), "tokensPerSec": args.batch * args.seq / float(med[0]),
           "lossStart": float(losses[args.warmup]), "lossEnd": float(losses[-1])}
    if device.type == "cuda":
        out["peakMemoryBytes"] = torch.cuda.max_memory_allocated(device)
        out["device"] = torch.cuda.get_device_name(device)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

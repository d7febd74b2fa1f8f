"""One timed training step under a trainbench precision, shared by the PyTorch reference scripts
(bench/pytorch_ddp.py, bench/pytorch_lm.py): autocast to bf16 / fp16 (with a GradScaler for
fp16), backward, optimizer step, then a device synchronize, timed to completion."""
import contextlib
import time

import torch


def amp_setup(precision, device_type):
    """(autocast dtype or None, GradScaler or None) for fp32 | amp-bf16 | amp-fp16."""
    dtype = {"amp-bf16": torch.bfloat16, "amp-fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler(device_type) if precision == "amp-fp16" else None
    return dtype, scaler


def timed_step(opt, compute_loss, device_type, amp_dtype, scaler, sync):
    """Runs one step; returns (seconds, loss). `compute_loss()` runs the forward pass."""
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type, dtype=amp_dtype) if amp_dtype else contextlib.nullcontext():
        loss = compute_loss()
    if scaler:
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        opt.step()
    sync()
    return time.perf_counter() - t0, loss.detach()

"""The non-convolution ops of a channels_last CNN on axon against torch CPU in the same process: batch norm
(training and inference forward, backward), ReLU, add, max pooling and its backward, global average pooling, over a
ResNet stage's [8, 64, 56, 56] activation in channels_last.

    .venv/bin/python benchmarks/channels_last_ops.py [--threads 2]

Prints microseconds per call (best of 5 x 20 calls) and axon / CPU; also checks that nothing fell back to the host
and that the outputs stay channels_last."""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

import torch_axon


def best_us(fn, device: str, calls: int = 20, rounds: int = 5) -> float:
    sync = torch.axon.synchronize if device == "axon" else (lambda: None)
    for _ in range(3):
        fn()
    sync()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / calls)
    return best * 1e6


def ops(device: str):
    cl = torch.channels_last
    x = torch.randn(8, 64, 56, 56, device=device).contiguous(memory_format=cl)
    w, b = torch.randn(64, device=device), torch.randn(64, device=device)
    rm, rv = torch.zeros(64, device=device), torch.ones(64, device=device)
    xg = x.clone().requires_grad_()
    y = F.batch_norm(xg, rm, rv, w, b, True)
    gy = torch.randn_like(y)
    yp, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    gp = torch.randn_like(yp)
    return {
        "batch_norm train": lambda: F.batch_norm(x, rm, rv, w, b, True),
        "batch_norm eval": lambda: F.batch_norm(x, rm, rv, w, b, False),
        "batch_norm backward": lambda: torch.autograd.grad(y, xg, gy, retain_graph=True),
        "relu": lambda: F.relu(x),
        "add": lambda: x + x,
        "max_pool2d 3x3 s2": lambda: F.max_pool2d(x, 3, 2, 1),
        "max_pool2d backward": lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            gp, x, [3, 3], [2, 2], [1, 1], [1, 1], False, idx),
        "adaptive_avg_pool2d": lambda: F.adaptive_avg_pool2d(x, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cpu = {k: best_us(f, "cpu") for k, f in ops("cpu").items()}
    axon_ops = ops("axon")
    torch_axon.reset_fallback_stats()
    ax = {k: best_us(f, "axon") for k, f in axon_ops.items()}
    print(f"threads {args.threads}; float32 [8, 64, 56, 56] channels_last; us per call (best of 5 x 20); host "
          f"fallbacks: {torch_axon.fallback_stats() or 'none'}")
    print("| op | cpu | axon | axon/cpu |")
    print("|---|---|---|---|")
    for k in cpu:
        print(f"| {k} | {cpu[k]:.1f} | {ax[k]:.1f} | {ax[k] / cpu[k]:.2f} |")


if __name__ == "__main__":
    main()

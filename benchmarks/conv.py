"""Dense float32 convolutions on axon against torch CPU in the same process: forward (with bias) and backward (input
and weight gradients) of ResNet- and CIFAR-sized layers.

    .venv/bin/python benchmarks/conv.py --threads 2 [--im2col] [--inductor] [--channels-last]

libaxon runs these on oneDNN's direct convolution kernels (libaxon/kernels/conv_onednn.c) when it is built with
oneDNN; --im2col adds a column measured in a child process with AXON_CONV=im2col, libaxon's column-buffer path.
--inductor adds torch.compile(backend="inductor") of the same call on CPU (it calls ATen's convolution, so it
mostly measures the same kernel as CPU eager). --channels-last gives the image and the weight PyTorch's channels_last
layout (as `model.to(memory_format=torch.channels_last)` does) on both devices. Prints milliseconds per call (the median of --rounds timings of
--reps calls each) and the ratios to CPU eager."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import torch_axon  # noqa: F401  (registers the axon device)

# (name, batch, in channels, height = width, out channels, kernel, stride, padding)
CASES = [
    ("resnet 3x3 64ch 56px", 8, 64, 56, 64, 3, 1, 1),
    ("resnet 3x3 128ch 28px", 8, 128, 28, 128, 3, 1, 1),
    ("resnet 3x3 256ch 14px", 8, 256, 14, 256, 3, 1, 1),
    ("resnet 3x3 s2 128ch 56px", 8, 64, 56, 128, 3, 2, 1),
    ("resnet stem 7x7 s2", 8, 3, 224, 64, 7, 2, 3),
    ("resnet 1x1 64->256 56px", 8, 64, 56, 256, 1, 1, 0),
    ("one image 3x3 64ch 56px", 1, 64, 56, 64, 3, 1, 1),
    ("one image 3x3 256ch 14px", 1, 256, 14, 256, 3, 1, 1),
    ("one image 3x3 512ch 7px", 1, 512, 7, 512, 3, 1, 1),
    ("cifar 3x3 16ch 32px", 32, 16, 32, 16, 3, 1, 1),
    ("cifar 3x3 32ch 32px", 32, 32, 32, 32, 3, 1, 1),
    ("cifar 3x3 64->128 16px", 32, 64, 16, 128, 3, 1, 1),
]


def timed(fn, sync, reps: int, rounds: int) -> float:
    for _ in range(2):
        fn()
    sync()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        times.append((time.perf_counter() - t) / reps)
    return sorted(times)[len(times) // 2] * 1e3


def measure(device: str, case, reps: int, rounds: int, compiled: bool = False,
            channels_last: bool = False) -> tuple[float, float]:
    _, n, c, hw, o, k, s, p = case
    sync = torch.axon.synchronize if device == "axon" else (lambda: None)
    g = torch.Generator().manual_seed(0)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    x = torch.randn(n, c, hw, hw, generator=g).to(device, memory_format=fmt).requires_grad_()
    w = torch.randn(o, c, k, k, generator=g).to(device, memory_format=fmt).requires_grad_()
    b = torch.randn(o, generator=g).to(device)

    def conv(x, w, b):
        return F.conv2d(x, w, b, s, p)

    fn = torch.compile(conv, backend="inductor") if compiled else conv
    with torch.no_grad():
        fwd = timed(lambda: fn(x, w, b), sync, reps, rounds)
    y = fn(x, w, b)
    gy = torch.ones_like(y)
    bwd = timed(lambda: torch.autograd.grad(y, (x, w), gy, retain_graph=True), sync, reps, rounds)
    return fwd, bwd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--im2col", action="store_true", help="add libaxon's column path (a child process)")
    ap.add_argument("--inductor", action="store_true", help="add torch.compile with Inductor on CPU")
    ap.add_argument("--channels-last", action="store_true", help="images and weights in channels_last")
    ap.add_argument("--axon-only-json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.axon_only_json:
        print(json.dumps([measure("axon", c, args.reps, args.rounds, channels_last=args.channels_last)
                          for c in CASES]))
        return
    col = None
    if args.im2col:
        env = dict(os.environ, AXON_CONV="im2col")
        out = subprocess.run([sys.executable, __file__, "--threads", str(args.threads), "--reps", str(args.reps),
                              "--rounds", str(args.rounds), "--axon-only-json"]
                             + (["--channels-last"] if args.channels_last else []), env=env, check=True,
                             capture_output=True, text=True).stdout
        col = json.loads(out.strip().splitlines()[-1])
    layout = "channels_last" if args.channels_last else "contiguous"
    print(f"threads {args.threads}; float32, {layout}; ms per call (median of {args.rounds} x {args.reps}); "
          f"load average {os.getloadavg()[0]:.1f}")
    head = "| layer | pass | cpu | axon | axon/cpu |"
    if col:
        head += " axon im2col | im2col/cpu |"
    if args.inductor:
        head += " inductor | ind/cpu |"
    print(head)
    print("|---" * (head.count("|") - 1) + "|")
    for i, case in enumerate(CASES):
        cl = args.channels_last
        cpu = measure("cpu", case, args.reps, args.rounds, channels_last=cl)
        ax = measure("axon", case, args.reps, args.rounds, channels_last=cl)
        ind = measure("cpu", case, args.reps, args.rounds, compiled=True, channels_last=cl) if args.inductor else None
        for j, name in enumerate(("forward", "backward")):
            row = f"| {case[0]} | {name} | {cpu[j]:.2f} | {ax[j]:.2f} | {ax[j] / cpu[j]:.2f} |"
            if col:
                row += f" {col[i][j]:.2f} | {col[i][j] / cpu[j]:.2f} |"
            if ind:
                row += f" {ind[j]:.2f} | {ind[j] / cpu[j]:.2f} |"
            print(row, flush=True)


if __name__ == "__main__":
    main()

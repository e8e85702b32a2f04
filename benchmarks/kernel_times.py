"""Kernel times against torch CPU for cases where a kernel, not the per-op overhead, decides: float16 arithmetic,
numbers and alpha in half ops, conversions, gathers and transposes of 1- and 2-byte elements, normalizations and
sums over a dimension, backward kernels and the copies training adds.

    python benchmarks/kernel_times.py [--threads N] [cases...]

axon: libaxon's own kernel time (its trace: the kernels of one call summed, the smallest of 20 calls, best of 3
rounds; no host overhead); cpu: torch CPU's wall time per call (best of 7 rounds of 10 calls). Both on the same
thread count (AXON_THREADS is set from --threads). Compare two libaxon builds by swapping the installed library
between runs (docs/benchmarks.md).
"""

import argparse
import os
import time


def cases():
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g)
    row, img = torch.randn(1024, generator=g), torch.randn(8, 32, 64, 64, generator=g)
    idx = torch.randint(0, 1024, (1024, 64), generator=g)
    h, b = torch.float16, torch.bfloat16
    return {
        "float16 x * 2.0": (lambda x: x * 2.0, (x.to(h),)),
        "float16 x + y": (lambda x, y: x + y, (x.to(h), y.to(h))),
        "float16 x * s[:, None]": (lambda x, r: x * r[:, None], (x.to(h), row.to(h))),
        "float16 x - 0.3": (lambda x: x - 0.3, (x.to(h),)),
        "float16 mse_loss": (lambda x, y: F.mse_loss(x, y), (x.to(h), y.to(h))),
        "float16 x.double()": (lambda x: x.double(), (x.to(h),)),
        "float16 gather dim 1": (lambda x, i: x.gather(1, i), (x.to(h), idx)),
        "float16 .t().contiguous()": (lambda x: x.t().contiguous(), (x.to(h),)),
        "bfloat16 .t().contiguous()": (lambda x: x.t().contiguous(), (x.to(b),)),
        "uint8 .t().contiguous()": (lambda x: x.t().contiguous(), ((x * 50).to(torch.uint8),)),
        "uint8 to channels_last": (lambda x: x.contiguous(memory_format=torch.channels_last),
                                   ((img * 50).to(torch.uint8),)),
        "float32 add alpha=0.7": (lambda x, y: torch.add(x, y, alpha=0.7), (x, y)),
        **norm_cases(g),
        **training_cases(g),
    }


def training_cases(g):
    """Backward kernels and the copies and sums autograd adds, the paths benchmarks/train_ops.py found far behind."""
    import torch

    A = torch.ops.aten
    b = torch.bfloat16
    x, y = torch.randn(2048, 1024, generator=g), torch.randn(2048, 1024, generator=g)
    img, cw = torch.randn(16, 64, 32, 32, generator=g).to(b), torch.randn(64, generator=g).to(b)
    gn = A.native_group_norm(img, cw, cw, 16, 64, 1024, 8, 1e-5)
    bn = A.native_batch_norm(img, cw, cw, None, None, True, 0.1, 1e-5)
    rows, idx = torch.randn(4096, 256, generator=g).to(b), torch.randint(0, 4096, (2048,), generator=g)
    cols = torch.randint(0, 1024, (1024, 256), generator=g)
    one = torch.ones((), dtype=torch.float32)
    return {
        "float32 sum over an expanded dim": (lambda x: x.expand(4, 2048, 1024).sum(0), (x,)),
        "float32 smooth_l1_loss backward": (lambda g, x, y: A.smooth_l1_loss_backward(g, x, y, 1, 1.0), (one, x, y)),
        "float32 tril": (lambda x: x.tril(), (x,)),
        "float32 roll(3, 1)": (lambda x: x.roll(3, 1), (x,)),
        "float32 flip(1)": (lambda x: x.flip(1), (x,)),
        "bfloat16 group_norm backward": (
            lambda go, x, m, r, w: A.native_group_norm_backward(go, x, m, r, w, 16, 64, 1024, 8, [True] * 3),
            (img.flip(0), img, gn[1], gn[2], cw),
        ),
        "bfloat16 batch_norm backward": (
            lambda go, x, w, m, r: A.native_batch_norm_backward(go, x, w, None, None, m, r, True, 1e-5, [True] * 3),
            (img.flip(0), img, cw, bn[1], bn[2]),
        ),
        "bfloat16 x.index_put_(i, v, accumulate)": (
            lambda x, i, v: x.index_put((i,), v, accumulate=True), (rows, idx, rows[:2048].flip(0))
        ),
        "bfloat16 scatter_add along dim 1": (
            lambda x, i, s: x.scatter_add(1, i, s), (x[:1024].to(b), cols, y[:1024, :256].to(b))
        ),
    }


def norm_cases(g):
    """Normalizations and sums over a dimension: rows of a transformer's width, the images of a small CNN."""
    import torch
    import torch.nn.functional as F

    x, w, bias = torch.randn(2048, 768, generator=g), torch.randn(768, generator=g), torch.randn(768, generator=g)
    mean, rstd = (t.float() for t in torch.ops.aten.native_layer_norm(x, [768], w, bias, 1e-5)[1:])
    img, cw = torch.randn(16, 64, 32, 32, generator=g), torch.randn(64, generator=g)
    h, b = torch.float16, torch.bfloat16
    ln_bwd = torch.ops.aten.native_layer_norm_backward
    return {
        "float32 layer_norm": (lambda x, w, b: F.layer_norm(x, (768,), w, b), (x, w, bias)),
        "float32 layer_norm backward": (lambda go, x, m, r, w, b: ln_bwd(go, x, [768], m, r, w, b, [True] * 3),
                                        (x.flip(0), x, mean, rstd, w, bias)),
        "bfloat16 layer_norm": (lambda x, w, b: F.layer_norm(x, (768,), w, b), (x.to(b), w.to(b), bias.to(b))),
        "float32 rms_norm": (lambda x, w: F.rms_norm(x, (768,), w), (x, w)),
        "float16 sum(1)": (lambda x: x.sum(1), (x.to(h),)),
        "bfloat16 sum(0)": (lambda x: x.sum(0), (x.to(b),)),
        "bfloat16 mean(1)": (lambda x: x.mean(1), (x.to(b),)),
        "bfloat16 group_norm": (lambda x, w: F.group_norm(x, 8, w, w), (img.to(b), cw.to(b))),
        "bfloat16 batch_norm train": (lambda x, w: F.batch_norm(x, None, None, w, w, training=True),
                                      (img.to(b), cw.to(b))),
        "float32 batch_norm train": (lambda x, w: F.batch_norm(x, None, None, w, w, training=True), (img, cw)),
    }


def best_wall_us(fn, reps=10, rounds=7):
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t) / reps * 1e6)
    return best


def kernel_us(fn, calls=20, rounds=3):
    import torch
    from torch_axon import _C

    for _ in range(3):
        fn()
    torch.axon.synchronize()
    best = float("inf")
    for _ in range(rounds):
        _C._trace_clear()
        _C._trace_enable(True)
        for _ in range(calls):
            fn()
        torch.axon.synchronize()
        _C._trace_enable(False)
        # each call launches the same kernels in the same order: a call's time is the sum over its records
        times = [(rec[4] - rec[3]) / 1e3 for rec in _C._trace_records()]
        per = len(times) // calls
        best = min(best, min(sum(times[c * per:(c + 1) * per]) for c in range(calls)))
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help="cases to run (default all)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    os.environ["AXON_THREADS"] = str(args.threads)
    import torch

    import torch_axon  # noqa: F401

    torch.set_num_threads(args.threads)
    table = cases()
    print(f"{args.threads} thread(s); microseconds")
    print("| case | cpu | axon kernel | axon / cpu |\n|---|---|---|---|")
    for name in args.cases or table:
        fn, inputs = table[name]
        dev = [t.to("axon") for t in inputs]
        c, a = best_wall_us(lambda: fn(*inputs)), kernel_us(lambda: fn(*dev))
        print(f"| {name} | {c:.0f} | {a:.0f} | {a / c:.2f} |", flush=True)


if __name__ == "__main__":
    main()

"""float16 and bfloat16 eager ops on axon against PyTorch CPU, in one run: elementwise math, casts, reductions,
normalizations, pooling and upsampling, indexing, losses and products on inputs of about 1M elements ([1024, 1024]
matrices, [8, 32, 64, 64] images), the kernels a half-precision model runs.

    python benchmarks/half_ops.py [--dtype float16|bfloat16] [--threads N] [--reps N] [case ...]

Each figure is the best of 5 timings of `reps` back-to-back calls (axon: synchronized after them); ratio = axon /
CPU, flagged with << above 1.3. Inputs are made in float32 and rounded to the dtype; a case whose CPU side raises is
reported and skipped (torch CPU has no half kernel for a few ops)."""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F

from timing import best_us

aten = torch.ops.aten
_gen = torch.Generator().manual_seed(0)
X = torch.randn(1024, 1024, generator=_gen)
Y = torch.randn(1024, 1024, generator=_gen)
ROW = torch.randn(1024, generator=_gen)
IMG = torch.randn(8, 32, 64, 64, generator=_gen)
W3 = torch.randn(32, 32, 3, 3, generator=_gen)
C32 = torch.randn(32, generator=_gen)
IDX = torch.randint(0, 1024, (1024, 64), generator=_gen)
ROWS = torch.randint(0, 1024, (512,), generator=_gen)
LOGITS = torch.randn(2048, 1000, generator=_gen)
TARGET = torch.randint(0, 1000, (2048,), generator=_gen)

# name -> (function of the inputs, the inputs; floating ones are rounded to the dtype)
CASES = {
    "add": (lambda x, y: x + y, (X, Y)),
    "mul number": (lambda x: x * 2.0, (X,)),
    "mul row values": (lambda x, r: x * r[:, None], (X, ROW)),
    "neg": (lambda x: -x, (X,)),
    "abs": (lambda x: x.abs(), (X,)),
    "exp": (lambda x: x.exp(), (X,)),
    "tanh": (lambda x: x.tanh(), (X,)),
    "gelu": (lambda x: F.gelu(x), (X,)),
    "silu": (lambda x: F.silu(x), (X,)),
    "clamp numbers": (lambda x: x.clamp(-1, 1), (X,)),
    "where": (lambda x, y: torch.where(x > 0, x, y), (X, Y)),
    "addcmul": (lambda x, y: torch.addcmul(x, x, y, value=0.5), (X, Y)),
    "to float32": (lambda x: x.float(), (X,)),
    "sum dim1": (lambda x: x.sum(1), (X,)),
    "sum dim0": (lambda x: x.sum(0), (X,)),
    "amax dim1": (lambda x: x.amax(1), (X,)),
    "softmax": (lambda x: x.softmax(-1), (X,)),
    "log_softmax": (lambda x: x.log_softmax(-1), (X,)),
    "layer_norm": (lambda x, w: F.layer_norm(x, (1024,), w, w), (X, ROW)),
    "rms_norm": (lambda x, w: F.rms_norm(x, (1024,), w), (X, ROW)),
    "group_norm 8": (lambda i, w: F.group_norm(i, 8, w, w), (IMG, C32)),
    "batch_norm eval": (lambda i, w: F.batch_norm(i, w, w.abs() + 1, w, w, False), (IMG, C32)),
    "batch_norm train": (lambda i, w: F.batch_norm(i, None, None, w, w, True), (IMG, C32)),
    "max_pool2d 2": (lambda i: F.max_pool2d(i, 2), (IMG,)),
    "avg_pool2d 2": (lambda i: F.avg_pool2d(i, 2), (IMG,)),
    "upsample nearest x2": (lambda i: F.interpolate(i, scale_factor=2), (IMG,)),
    "upsample bilinear x2": (lambda i: F.interpolate(i, scale_factor=2, mode="bilinear"), (IMG,)),
    "conv2d 3x3": (lambda i, w: F.conv2d(i, w, padding=1), (IMG, W3)),
    "index_select": (lambda x, r: x.index_select(0, r), (X, ROWS)),
    "gather dim1": (lambda x, i: x.gather(1, i), (X, IDX)),
    "cat": (lambda x, y: torch.cat([x, y], 1), (X, Y)),
    "transpose copy": (lambda x: x.t().contiguous(), (X,)),
    "cross_entropy": (lambda l, t: F.cross_entropy(l, t), (LOGITS, TARGET)),
    "mse_loss": (lambda x, y: F.mse_loss(x, y), (X, Y)),
    "linear 256x1024x1024": (lambda x, y: F.linear(x[:256], y), (X, Y)),
    "sdpa causal": (lambda x: F.scaled_dot_product_attention(*[x.view(2, 8, 256, 256)[..., :64]] * 3, is_causal=True),
                    (X,)),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cases", nargs="*", help=f"cases to run (default all): {', '.join(CASES)}")
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=10)
    args = p.parse_args()
    os.environ.setdefault("AXON_THREADS", str(args.threads))   # both backends get the same thread count
    import torch_axon  # noqa: F401  (after AXON_THREADS is set)

    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    print(f"{args.dtype}, {args.threads} threads, best of 5 x {args.reps} calls; microseconds per call")
    print("| case | cpu | axon | axon / cpu |")
    print("|---|---|---|---|")
    for name in args.cases or CASES:
        fn, inputs = CASES[name]
        cpu = [t.to(dtype) if t.is_floating_point() else t for t in inputs]
        dev = [t.to("axon") for t in cpu]
        try:
            c = best_us(lambda: fn(*cpu), "cpu", args.reps)
        except (RuntimeError, NotImplementedError) as e:
            print(f"| {name} | CPU raises: {str(e).splitlines()[0][:60]} | | |", flush=True)
            continue
        a = best_us(lambda: fn(*dev), "axon", args.reps)
        flag = " <<" if a / c > 1.3 else ""
        print(f"| {name} | {c:.1f} | {a:.1f} | {a / c:.2f}{flag} |", flush=True)


if __name__ == "__main__":
    main()

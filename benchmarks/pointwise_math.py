"""Elementwise math on axon against PyTorch CPU, in one run: every libm-backed unary and binary float op, the
activations built on them and their backwards, on 2^20 elements.

    python benchmarks/pointwise_math.py [--dtype float32|float64] [--threads N] [--n N] [op ...]

Each figure is the best of 3 timings of 10 back-to-back calls (axon: synchronized after the 10); ratio = axon / CPU,
flagged with << above 1.5. Inputs are in [0.05, 0.95] (every op is defined there: NaN results would take the vector
math functions' slow path), the second operand of binary ops and the gradient of backwards standard normal."""

from __future__ import annotations

import argparse
import os

import torch
import torch.nn.functional as F

from timing import best_us

UNARY = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
         "cosh", "tanh", "asinh", "atanh", "erf", "erfc", "sigmoid", "sqrt", "rsqrt", "reciprocal"]
OPS = {name: (lambda name: lambda x, g: getattr(torch, name)(x))(name) for name in UNARY}
OPS.update({
    "acosh(1+x)": lambda x, g: torch.acosh(x + 1),
    "mish": lambda x, g: F.mish(x), "softplus": lambda x, g: F.softplus(x), "elu": lambda x, g: F.elu(x),
    "selu": lambda x, g: F.selu(x), "logsigmoid": lambda x, g: F.logsigmoid(x), "silu": lambda x, g: F.silu(x),
    "gelu": lambda x, g: F.gelu(x), "gelu tanh": lambda x, g: F.gelu(x, approximate="tanh"),
    "pow(x, 2.5)": lambda x, g: torch.pow(x, 2.5), "pow(x, g)": lambda x, g: torch.pow(x, g),
    "atan2": lambda x, g: torch.atan2(x, g), "hypot": lambda x, g: torch.hypot(x, g),
    "xlogy": lambda x, g: torch.xlogy(g, x),
    "mish_backward": lambda x, g: torch.ops.aten.mish_backward(g, x),
    "softplus_backward": lambda x, g: torch.ops.aten.softplus_backward(g, x, 1.0, 20.0),
    "gelu_backward": lambda x, g: torch.ops.aten.gelu_backward(g, x),
    "silu_backward": lambda x, g: torch.ops.aten.silu_backward(g, x),
})


def inputs(device: str, n: int, dtype: torch.dtype):
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(n, generator=gen, dtype=dtype) * 0.9 + 0.05).to(device)
    return x, torch.randn(n, generator=gen, dtype=dtype).to(device)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ops", nargs="*", help="ops to run (default all): " + ", ".join(OPS))
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--n", type=int, default=1 << 20)
    args = p.parse_args()
    os.environ.setdefault("AXON_THREADS", str(args.threads))   # both backends get the same thread count
    import torch_axon  # noqa: F401  (registers the axon device; reads AXON_THREADS)

    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    print(f"{args.dtype}, {args.n} elements, {args.threads} threads; microseconds per call")
    print("| op | cpu | axon | axon / cpu |\n|---|---|---|---|")
    for name in args.ops or OPS:
        (xc, gc), (xa, ga) = inputs("cpu", args.n, dtype), inputs("axon", args.n, dtype)
        cpu = best_us(lambda: OPS[name](xc, gc), "cpu", 10, rounds=3)
        axon = best_us(lambda: OPS[name](xa, ga), "axon", 10, rounds=3)
        flag = " <<" if axon / cpu > 1.5 else ""
        print(f"| {name} | {cpu:.1f} | {axon:.1f} | {axon / cpu:.2f}{flag} |", flush=True)


if __name__ == "__main__":
    main()

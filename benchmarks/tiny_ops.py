"""Per-call cost of ops on tiny tensors ([5, 5] and the like), axon against PyTorch CPU in one run: the overhead the
kernels issue bounds at 1.5x CPU's. Each case is the op as a user calls it (functional forms, Python numbers), so the
figure includes dispatch, checks, allocation and the launch.

    python benchmarks/tiny_ops.py [--threads 2] [--reps 3000] [name ...]

Per case: the best of 5 timings of `reps` calls (timing.best_us), CPU and axon interleaved case by case; ratio =
axon / CPU, flagged with << at 1.5 or more. Names select cases by substring."""

from __future__ import annotations

import argparse
import os
import warnings

import torch
import torch.nn.functional as F

from timing import best_us


def _r(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g).to(dtype)


# name: (make inputs on CPU, op over the inputs moved to the device)
CASES = {
    "add": (lambda: (_r(5, 5), _r(5, 5, seed=1)), lambda a, b: a + b),
    "div_broadcast": (lambda: (_r(5, 5), _r(5, 1, seed=1)), lambda a, b: a / b),
    "mul_row": (lambda: (_r(5, 5), _r(5, seed=1)), lambda a, b: a * b),
    "lerp_number": (lambda: (_r(5, 5), _r(5, 5, seed=1)), lambda a, b: torch.lerp(a, b, 0.5)),
    "lerp_tensor": (lambda: (_r(5, 5), _r(5, 5, seed=1), _r(5, 5, seed=2)), torch.lerp),
    "addcmul": (lambda: (_r(5, 5), _r(5, 5, seed=1), _r(5, 5, seed=2)), torch.addcmul),
    "cat": (lambda: (_r(5, 5), _r(5, 5, seed=1)), lambda a, b: torch.cat([a, b], 1)),
    "hstack": (lambda: (_r(5, 5), _r(5, 5, seed=1)), lambda a, b: torch.hstack([a, b])),
    "chalf": (lambda: (_r(5, 5),), lambda a: a.chalf()),
    "hash_tensor": (lambda: (_r(5, 5),), torch.hash_tensor),
    "addr": (lambda: (_r(5, 5), _r(5), _r(5, seed=1)), lambda m, u, v: torch.addr(m, u, v, beta=0.6, alpha=0.2)),
    "_safe_softmax": (lambda: (_r(5, 5),), lambda a: torch.ops.aten._safe_softmax(a, 1)),
    "bucketize": (lambda: (_r(5), torch.linspace(-1, 1, 4)), torch.bucketize),
    "leaky_relu": (lambda: (_r(5, 5),), lambda a: F.leaky_relu(a, 0.2)),
    "gelu": (lambda: (_r(5, 5),), F.gelu),
    "mm": (lambda: (_r(5, 5), _r(5, 5, seed=1)), torch.mm),
    "bmm": (lambda: (_r(2, 5, 5), _r(2, 5, 5, seed=1)), torch.bmm),
    "bmm_dots": (lambda: (_r(8, 1, 4), _r(8, 4, 1, seed=1)), torch.bmm),
    "add_into_column": (lambda: (_r(8, 5), _r(8, 1, seed=1)), lambda a, b: a[:, 1:2].add_(b)),
    "eq_": (lambda: (_r(5, 5), _r(5, 5, seed=1)), lambda a, b: a.eq_(b)),
    "sign_": (lambda: (_r(5, 5),), lambda a: a.sign_()),
    "bilinear": (lambda: (_r(8, 3), _r(8, 4, seed=1), _r(5, 3, 4, seed=2), _r(5, seed=3)), F.bilinear),
    "pixel_shuffle": (lambda: (_r(2, 8, 3, 3),), lambda a: F.pixel_shuffle(a, 2)),
    "pixel_unshuffle": (lambda: (_r(2, 2, 6, 6),), lambda a: F.pixel_unshuffle(a, 2)),
    "channel_shuffle": (lambda: (_r(2, 6, 3, 3),), lambda a: F.channel_shuffle(a, 3)),
    "segment_reduce": (lambda: (_r(6, 4), torch.tensor([1, 2, 0, 3])),
                       lambda x, n: torch.segment_reduce(x, "sum", lengths=n, unsafe=True)),
    "item": (lambda: (_r(1),), lambda a: a.item()),
    "trace": (lambda: (_r(5, 5),), torch.trace),
    "mv": (lambda: (_r(5, 5), _r(5)), torch.mv),
    "equal": (lambda: (_r(5, 5), _r(5, 5)), torch.equal),
    "polar": (lambda: (_r(5, 5), _r(5, 5, seed=1)), torch.polar),
    "cosine_similarity": (lambda: (_r(5, 5), _r(5, 5, seed=1)), F.cosine_similarity),
    "clamp_min_0dim": (lambda: (_r(5), torch.tensor(0.1)), lambda a, m: a.clamp_min(m)),
    "kron": (lambda: (_r(3, 3), _r(2, 2, seed=1)), torch.kron),
    "max_pool1d": (lambda: (_r(2, 3, 8),), lambda a: F.max_pool1d(a, 2)),
    "index_add_0dim": (lambda: (_r(), torch.tensor([0]), _r(seed=1)),
                       lambda s, i, v: s.index_add(0, i, v)),
    "view_copy": (lambda: (_r(5, 5),), lambda a: torch.view_copy(a, [25])),
    "as_strided_scatter": (lambda: (_r(5, 5), _r(5, seed=1)),
                           lambda a, b: torch.as_strided_scatter(a, b, (5,), (6,))),
    "grid_sampler_2d": (lambda: (_r(1, 2, 5, 5), _r(1, 4, 4, 2, seed=1)),
                        lambda a, g: F.grid_sample(a, g, align_corners=False)),
    "div_trunc": (lambda: (_r(5, 5), _r(5, 5, seed=1)), lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    "div_floor_number": (lambda: (_r(5, 5),), lambda a: torch.div(a, 3, rounding_mode="floor")),
    "rpow": (lambda: (_r(5, 5),), lambda a: 2 ** a),
    "layer_norm": (lambda: (_r(5, 5), _r(5, seed=1), _r(5, seed=2)), lambda a, w, b: F.layer_norm(a, (5,), w, b)),
    "one_minus": (lambda: (_r(5, 5),), lambda a: 1 - a),
    "rsub_0dim": (lambda: (_r(5), _r()), torch.rsub),
    "softshrink": (lambda: (_r(5, 5),), lambda a: F.softshrink(a, 0.5)),
    "round_decimals": (lambda: (_r(5, 5),), lambda a: torch.round(a, decimals=-3)),
    "glu": (lambda: (_r(5, 6),), F.glu),
    "pad_replicate": (lambda: (_r(1, 2, 5),), lambda a: F.pad(a, (2, 2), mode="replicate")),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=3000)
    args = p.parse_args()
    os.environ.setdefault("AXON_THREADS", str(args.threads))  # both backends get the same thread count
    import torch_axon  # noqa: F401

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")  # complex32's "experimental" warning
    print(f"| op | cpu us | axon us | axon / cpu |\n|---|---|---|---|")
    for name, (make, op) in CASES.items():
        if args.names and not any(n in name for n in args.names):
            continue
        inputs = make()
        us = {}
        for device in ("cpu", "axon"):
            xs = [t.to(device) for t in inputs]
            us[device] = best_us(lambda: op(*xs), device, args.reps)
        ratio = us["axon"] / us["cpu"]
        flag = " <<" if ratio >= 1.5 else ""
        print(f"| {name} | {us['cpu']:.2f} | {us['axon']:.2f} | {ratio:.2f}{flag} |")


if __name__ == "__main__":
    main()

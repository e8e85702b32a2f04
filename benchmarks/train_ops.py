"""Forward and backward of the ops training uses, axon against torch CPU in the same run.

    python benchmarks/train_ops.py [--threads N] [--dtype float32|bfloat16|float16] [--over R] [ops...]

Each op runs forward and `torch.autograd.grad` on both devices at a training-sized shape (a few MB), wall time per
step (best of 5 rounds of 3 steps, twice each, alternating devices; axon synchronizes), and prints axon / cpu; rows
above --over (default 1.3) are marked. Where kernel_times.py measures a kernel alone, this catches whole paths a
training step takes: the backward kernels, the copies and reductions autograd adds (sum_to_size of an expand, the
flips of cumsum's backward). Sweeps of it found the gaps fixed in session 56 (docs/benchmarks.md).
"""

import argparse
import os
import time


def cases(torch, F):
    g = torch.Generator().manual_seed(0)

    def R(*s):
        return torch.randn(*s, generator=g)

    def I(hi, *s):
        return torch.randint(0, hi, s, generator=g)

    def U(*s):
        return torch.rand(*s, generator=g)

    table = {
        "softmax": (lambda x: F.softmax(x, -1), [R(64, 128, 128)]),
        "log_softmax": (lambda x: F.log_softmax(x, -1), [R(2048, 1024)]),
        "gelu": (lambda x: F.gelu(x), [R(2048, 1024)]),
        "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), [R(2048, 1024)]),
        "silu": (lambda x: F.silu(x), [R(2048, 1024)]),
        "tanh": (lambda x: torch.tanh(x), [R(2048, 1024)]),
        "sigmoid": (lambda x: torch.sigmoid(x), [R(2048, 1024)]),
        "relu": (lambda x: torch.relu(x), [R(2048, 1024)]),
        "cross_entropy": (lambda x, t: F.cross_entropy(x, t), [R(2048, 1000), I(1000, 2048)]),
        "mse": (lambda x, y: F.mse_loss(x, y), [R(2048, 1024), R(2048, 1024)]),
        "bce_logits": (lambda x, y: F.binary_cross_entropy_with_logits(x, y), [R(2048, 1024), U(2048, 1024)]),
        "embedding": (lambda w, i: F.embedding(i, w), [R(30000, 256), I(30000, 4096)]),
        "group_norm": (lambda x, w, b: F.group_norm(x, 8, w, b), [R(16, 64, 32, 32), R(64), R(64)]),
        "batch_norm": (
            lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [R(16, 64, 32, 32), R(64), R(64)]
        ),
        "rms_norm": (lambda x, w: F.rms_norm(x, (768, ), w), [R(2048, 768), R(768)]),
        "layer_norm": (lambda x, w, b: F.layer_norm(x, (768, ), w, b), [R(2048, 768), R(768), R(768)]),
        "conv2d": (lambda x, w: F.conv2d(x, w, padding=1), [R(16, 32, 32, 32), R(64, 32, 3, 3)]),
        "max_pool2d": (lambda x: F.max_pool2d(x, 2), [R(16, 64, 64, 64)]),
        "avg_pool2d": (lambda x: F.avg_pool2d(x, 2), [R(16, 64, 64, 64)]),
        "adaptive_avg": (lambda x: F.adaptive_avg_pool2d(x, 1), [R(16, 512, 16, 16)]),
        "upsample_nearest": (lambda x: F.interpolate(x, scale_factor=2), [R(16, 64, 32, 32)]),
        "upsample_bilinear": (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), [R(16, 64, 32, 32)]),
        "sdpa_causal": (
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            [R(4, 8, 256, 64) for _ in range(3)],
        ),
        "linear": (lambda x, w, b: F.linear(x, w, b), [R(2048, 768), R(768, 768), R(768)]),
        "index_select": (lambda x, i: x.index_select(0, i), [R(4096, 512), I(4096, 4096)]),
        "gather": (lambda x, i: x.gather(1, i), [R(1024, 1024), I(1024, 1024, 256)]),
        "cumsum": (lambda x: x.cumsum(1), [R(1024, 1024)]),
        "sum_dim": (lambda x: x.sum(1), [R(2048, 1024)]),
        "mean_all": (lambda x: x.mean(), [R(2048, 1024)]),
        "var": (lambda x: x.var(1), [R(2048, 1024)]),
        "norm": (lambda x: x.norm(dim=1), [R(2048, 1024)]),
        "amax": (lambda x: x.amax(1), [R(2048, 1024)]),
        "max_dim": (lambda x: x.max(1).values, [R(2048, 1024)]),
        "pow": (lambda x: x.pow(2), [R(2048, 1024)]),
        "mul_bcast": (lambda x, y: x*y, [R(2048, 1024), R(1024)]),
        "add_bcast": (lambda x, y: x+y, [R(2048, 1024), R(2048, 1)]),
        "div": (lambda x, y: x/y, [R(2048, 1024), R(2048, 1024).abs()+1]),
        "where": (lambda x, y, c: torch.where(c, x, y), [R(2048, 1024), R(2048, 1024), U(2048, 1024) > 0.5]),
        "exp": (lambda x: x.exp(), [R(2048, 1024)]),
        "log": (lambda x: x.abs().add(1).log(), [R(2048, 1024)]),
        "sqrt": (lambda x: x.abs().sqrt(), [R(2048, 1024)]),
        "transpose_mm": (lambda a, b: a.t() @ b, [R(1024, 512), R(1024, 512)]),
        "bmm": (lambda a, b: a @ b, [R(32, 128, 64), R(32, 64, 128)]),
        "dropout": (lambda x: F.dropout(x, 0.1), [R(2048, 1024)]),
        "masked_fill": (lambda x, m: x.masked_fill(m, 0.0), [R(2048, 1024), U(2048, 1024) > 0.5]),
        "cat": (lambda x, y: torch.cat([x, y], 1), [R(2048, 512), R(2048, 512)]),
        "permute_contig": (lambda x: x.permute(0, 2, 1, 3).contiguous(), [R(8, 256, 12, 64)]),
        "expand_sum": (lambda x: x.expand(4, 2048, 1024).sum(0), [R(2048, 1024)]),
        "clamp": (lambda x: x.clamp(-0.5, 0.5), [R(2048, 1024)]),
        "lerp": (lambda x, y: torch.lerp(x, y, 0.3), [R(2048, 1024), R(2048, 1024)]),
        "addcmul": (lambda x, y, z: torch.addcmul(x, y, z, value=0.5), [R(2048, 1024), R(2048, 1024), R(2048, 1024)]),
        "softplus": (lambda x: F.softplus(x), [R(2048, 1024)]),
        "leaky_relu": (lambda x: F.leaky_relu(x, 0.1), [R(2048, 1024)]),
        "elu": (lambda x: F.elu(x), [R(2048, 1024)]),
        "hardswish": (lambda x: F.hardswish(x), [R(2048, 1024)]),
        "mish": (lambda x: F.mish(x), [R(2048, 1024)]),
        "nll": (lambda x, t: F.nll_loss(x.log_softmax(1), t), [R(2048, 1000), I(1000, 2048)]),
        "smooth_l1": (lambda x, y: F.smooth_l1_loss(x, y), [R(2048, 1024), R(2048, 1024)]),
        "l1": (lambda x, y: F.l1_loss(x, y), [R(2048, 1024), R(2048, 1024)]),
        "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), [R(16, 128, 256), R(128, 128, 3)]),
        "depthwise": (lambda x, w: F.conv2d(x, w, padding=1, groups=64), [R(16, 64, 32, 32), R(64, 1, 3, 3)]),
        "lstm_cell": (
            lambda x, h, c, wi, wh: torch.lstm_cell(x, (h, c), wi, wh)[0],
            [R(256, 256), R(256, 256), R(256, 256), R(1024, 256), R(1024, 256)],
        ),
        "topk": (lambda x: x.topk(10, 1).values, [R(2048, 1024)]),
        "sort": (lambda x: x.sort(1).values, [R(512, 1024)]),
        "std_mean": (lambda x: torch.std_mean(x, 1)[0], [R(2048, 1024)]),
        "logsumexp": (lambda x: x.logsumexp(1), [R(2048, 1024)]),
        "index_put": (
            lambda x, i, v: x.index_put((i,), v, accumulate=True), [R(4096, 256), I(4096, 2048), R(2048, 256)]
        ),
        "scatter_add": (lambda x, i, v: x.scatter_add(0, i, v), [R(1024, 256), I(1024, 2048, 256), R(2048, 256)]),
        "prod": (lambda x: x.prod(1), [R(2048, 64)]),
        "atan2": (lambda x, y: torch.atan2(x, y), [R(2048, 1024), R(2048, 1024)]),
        "erf": (lambda x: torch.erf(x), [R(2048, 1024)]),
        "sin": (lambda x: torch.sin(x), [R(2048, 1024)]),
        "rsqrt": (lambda x: (x.abs()+0.1).rsqrt(), [R(2048, 1024)]),
        "reciprocal": (lambda x: (x.abs()+0.1).reciprocal(), [R(2048, 1024)]),
        "tril": (lambda x: x.tril(), [R(2048, 1024)]),
        "roll": (lambda x: x.roll(3, 1), [R(2048, 1024)]),
        "flip": (lambda x: x.flip(1), [R(2048, 1024)]),
        "repeat": (lambda x: x.repeat(2, 2), [R(1024, 512)]),
        "pad": (lambda x: F.pad(x, (1, 1, 1, 1)), [R(16, 64, 64, 64)]),
        "unfold": (lambda x: F.unfold(x, 3, padding=1), [R(8, 32, 32, 32)]),
        "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [R(16, 64, 32, 32)]),
        "grid_sample": (
            lambda x, gr: F.grid_sample(x, gr, align_corners=False), [R(8, 32, 64, 64), U(8, 64, 64, 2) * 2 - 1]
        ),
    }
    return table


def run(torch, fn, ins, dev, dt):
    xs = [t.to(dev) for t in ins]
    xs = [t.to(dt).requires_grad_() if t.is_floating_point() else t for t in xs]
    out = fn(*xs)
    go = torch.ones_like(out) if out.dim() == 0 else torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    go = go.to(dt).to(dev)
    leaves = [t for t in xs if t.requires_grad]

    def step():
        torch.autograd.grad(fn(*xs), leaves, go)
        if dev == "axon":
            torch.axon.synchronize()

    for _ in range(2):
        step()
    best = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(3):
            step()
        best = min(best, (time.perf_counter() - t) / 3 * 1e3)
    return best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("ops", nargs="*", help="ops to run (default all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--over", type=float, default=1.3, help="mark rows whose axon / cpu exceeds this")
    args = p.parse_args()
    os.environ["AXON_THREADS"] = str(args.threads)
    import torch
    import torch.nn.functional as F

    import torch_axon  # noqa: F401

    torch.set_num_threads(args.threads)
    dt = getattr(torch, args.dtype)
    table = cases(torch, F)
    print(f"{args.threads} thread(s), {args.dtype}; ms per forward and backward step")
    print("| op | cpu | axon | axon / cpu |\n|---|---|---|---|")
    for name in args.ops or table:
        fn, ins = table[name]
        try:
            c, a = run(torch, fn, ins, "cpu", dt), run(torch, fn, ins, "axon", dt)
            c, a = min(c, run(torch, fn, ins, "cpu", dt)), min(a, run(torch, fn, ins, "axon", dt))
        except Exception as e:  # an op the dtype does not support on CPU is reported, not fatal
            print(f"| {name} | {type(e).__name__}: {str(e)[:80]} | | |", flush=True)
            continue
        mark = " (over)" if a / c > args.over else ""
        print(f"| {name} | {c:.3f} | {a:.3f} | {a / c:.2f}{mark} |", flush=True)


if __name__ == "__main__":
    main()

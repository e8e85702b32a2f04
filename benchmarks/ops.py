"""Eager op benchmark: axon against PyTorch's CPU backend, measured in the same run.

For each op and size it times the op on CPU tensors and on axon tensors (including the wait for the device, so the
figures compare finished work), reports microseconds per call, the ratio axon/CPU (below 1 means axon is faster),
and whether axon ran it natively or through the host fallback.

    python benchmarks/ops.py [--quick] [--tiny] [--threads N] [--filter NAME]

Tiny sizes measure per-op overhead (dispatch, launch, the round trip to the worker); large sizes measure throughput.
Both backends get the same number of threads (torch.set_num_threads and AXON_THREADS)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--filter", default="", help="only ops whose name contains this")
    p.add_argument("--tiny", action="store_true", help="only the 64-element cases (per-op host overhead)")
    return p.parse_args()


ARGS = parse()
os.environ.setdefault("AXON_THREADS", str(ARGS.threads))
import torch  # noqa: E402

import torch_axon  # noqa: E402

torch.set_num_threads(ARGS.threads)
warnings.simplefilter("ignore")


def timed(fn, sync, reps: int) -> float:
    """Median microseconds per call over `reps` batches, each batch long enough to be measurable."""
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    inner = max(1, min(2000, int(0.02 / one)))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / inner * 1e6)
    return statistics.median(samples)


def cases():
    """(name, size label, builder) where builder(device) returns a no-argument callable running the op once."""
    small, large = 64, (1 << 22) if not ARGS.quick else (1 << 20)

    def vec(n, dtype=torch.float32):
        return lambda d: torch.randn(n, dtype=dtype, device=d)

    def unary(fn, n, dtype=torch.float32):
        def build(d):
            x = vec(n, dtype)(d)
            return lambda: fn(x)
        return build

    def binary(fn, n, dtype=torch.float32):
        def build(d):
            x, y = vec(n, dtype)(d), vec(n, dtype)(d)
            return lambda: fn(x, y)
        return build

    out = []
    for n, label in ((small, "64"), (large, f"{large}")):
        out += [
            ("add", label, binary(torch.add, n)),
            ("mul", label, binary(torch.mul, n)),
            ("gelu", label, unary(torch.nn.functional.gelu, n)),
            ("add bf16", label, binary(torch.add, n, torch.bfloat16)),
            ("sum", label, unary(torch.sum, n)),
            ("cast f32->bf16", label, unary(lambda t: t.to(torch.bfloat16), n)),
        ]
    rows = 256 if ARGS.quick else 1024
    for name, fn in (("softmax", lambda t: torch.softmax(t, -1)),
                     ("layer_norm", lambda t: torch.nn.functional.layer_norm(t, (t.shape[-1],)))):
        out.append((name, f"{rows}x1024", lambda d, fn=fn: (lambda x: (lambda: fn(x)))(torch.randn(rows, 1024, device=d))))
    out.append(("cat", f"4x{rows}x256",
                lambda d: (lambda xs: (lambda: torch.cat(xs, 1)))([torch.randn(rows, 256, device=d) for _ in range(4)])))
    out.append(("index_select", f"{rows}x1024[512]",
                lambda d: (lambda x, i: (lambda: x.index_select(0, i)))(torch.randn(rows, 1024, device=d),
                                                                       torch.randint(0, rows, (512,), device=d))))
    out.append(("embedding", "30522x384[4096]",
                lambda d: (lambda w, i: (lambda: torch.nn.functional.embedding(i, w)))(
                    torch.randn(30522, 384, device=d), torch.randint(0, 30522, (4096,), device=d))))
    out.append(("sdpa", "8x128x64",
                lambda d: (lambda q: (lambda: torch.nn.functional.scaled_dot_product_attention(q, q, q)))(
                    torch.randn(1, 8, 128, 64, device=d))))
    sizes = (64, 256, 1024) if ARGS.quick else (64, 256, 1024, 2048, 4096)
    for dtype, tag in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        for n in sizes:
            out.append((f"mm {tag}", f"{n}", lambda d, n=n, dtype=dtype: (lambda a: (lambda: a @ a))(
                torch.randn(n, n, device=d).to(dtype))))
        out.append((f"bmm {tag}", "32x128x64x128", lambda d, dtype=dtype: (lambda a, b: (lambda: a @ b))(
            torch.randn(32, 128, 64, device=d).to(dtype), torch.randn(32, 64, 128, device=d).to(dtype))))
    # Linear layers as transformers run them (weight stored (n, k)): decode steps of 4 tokens (a few-row product) and
    # a batch of 4 x 128 tokens.
    for m, k, n in ((4, 256, 688), (4, 688, 256), (4, 256, 8192), (512, 256, 256), (512, 256, 768),
                    (512, 1024, 256)):
        out.append(("linear fp32", f"{m}x{k}x{n}", lambda d, m=m, k=k, n=n: (lambda x, w, b: (
            lambda: torch.nn.functional.linear(x, w, b)))(torch.randn(m, k, device=d), torch.randn(n, k, device=d),
                                                          torch.randn(n, device=d))))
    return [c for c in out if ARGS.filter in c[0] and (not ARGS.tiny or c[1] == "64")]


def main() -> int:
    reps = 5 if ARGS.quick else 9
    print(f"torch {torch.__version__}, torch-axon {torch_axon.__version__}, {ARGS.threads} thread(s) each; "
          f"times in microseconds per call (median of {reps}); ratio = axon / cpu (lower is better)")
    print(f"{'op':<16}{'size':>18}{'cpu us':>12}{'axon us':>12}{'ratio':>8}  path")
    ratios = []
    for name, label, build in cases():
        cpu_fn = build("cpu")
        axon_fn = build("axon")
        torch_axon.reset_fallback_stats()
        axon_fn()
        torch.axon.synchronize()
        path = "native" if not torch_axon.fallback_stats() else "fallback: " + ",".join(
            sorted(k.replace("aten::", "") for k in torch_axon.fallback_stats()))
        t_cpu = timed(cpu_fn, lambda: None, reps)
        t_axon = timed(axon_fn, torch.axon.synchronize, reps)
        ratios.append(t_axon / t_cpu)
        print(f"{name:<16}{label:>18}{t_cpu:>12.1f}{t_axon:>12.1f}{t_axon / t_cpu:>8.2f}  {path}")
    geo = statistics.geometric_mean(ratios) if ratios else float("nan")
    print(f"geometric mean of axon/cpu over {len(ratios)} cases: {geo:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

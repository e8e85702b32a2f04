"""Eager op benchmark: axon against PyTorch's CPU backend, measured in the same run.

For each op and size it times the op on CPU tensors and on axon tensors (including the wait for the device, so the
figures compare finished work), reports microseconds per call, the ratio axon/CPU (below 1 means axon is faster),
and whether axon ran it natively or through the host fallback.

    python benchmarks/ops.py [--quick] [--tiny] [--threads N] [--filter NAME]

Tiny sizes measure per-op overhead (dispatch, launch, the round trip to the worker); large sizes measure throughput.
Both backends get the same number of threads (torch.set_num_threads and AXON_THREADS).

Against this host's ceilings: the large memory-bound cases also show the bandwidth they reach (bytes of their inputs
and outputs per second) as a share of the STREAM kernel that moves as many arrays (two: copy, three: add, a
reduction's one: add), and the GEMMs their GFLOP/s as a share of the fp32 or bf16 peak, for the thread count in use.
The ceilings come from benchmarks/peak_bench.c (bench_peak, found in the build directory; --peak-bench names it) or
from --peaks "fp32=...,bf16=...,copy=...,add=..."; --no-peaks leaves these columns out."""

from __future__ import annotations

import argparse
import glob
import itertools
import os
import statistics
import subprocess
import sys
import time
import warnings


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--filter", default="", help="only ops whose name contains this (or one of a,b,c)")
    p.add_argument("--tiny", action="store_true", help="only the 64-element cases (per-op host overhead)")
    p.add_argument("--large", type=int, default=0,
                   help="elements of the large elementwise cases (default 2^22; 2^26 puts them far above the LLC)")
    p.add_argument("--peaks", default="", help="fp32=GFLOP/s,bf16=GFLOP/s,copy=GB/s,add=GB/s instead of bench_peak")
    p.add_argument("--peak-bench", default="", help="path of bench_peak (default: build*/libaxon/bench_peak)")
    p.add_argument("--stream-mib", type=int, default=1024, help="bench_peak's STREAM array size")
    p.add_argument("--no-peaks", action="store_true", help="no GB/s, GFLOP/s and share-of-peak columns")
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
    if one > 2.0:
        # A call of seconds (torch CPU's bf16 GEMM on a host without bf16 units runs at about 1 GFLOP/s): three
        # timings, not a quarter of an hour of them.
        reps = min(reps, 3)
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - t0) / inner * 1e6)
    return statistics.median(samples)


def peaks() -> dict[str, float]:
    """This host's ceilings for ARGS.threads threads: {"fp32", "bf16"} in GFLOP/s, {"copy", "add", ...} in GB/s."""
    if ARGS.no_peaks:
        return {}
    if ARGS.peaks:
        return gemm_ceilings({k.strip(): float(v) for k, v in (kv.split("=") for kv in ARGS.peaks.split(","))})
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # build/ first: build-asan's copy runs under the sanitizers
    found = [ARGS.peak_bench] if ARGS.peak_bench else sorted(
        glob.glob(os.path.join(root, "build*", "libaxon", "bench_peak")), key=lambda f: "build-asan" in f)
    if not found or not os.access(found[0], os.X_OK):
        print("(no bench_peak: build it with `make build-c` or pass --peaks; share-of-peak columns left out)")
        return {}
    out = subprocess.run([found[0], str(ARGS.stream_mib)], check=True, capture_output=True, text=True).stdout
    print(f"{found[0]} {ARGS.stream_mib}:\n" + "\n".join("  " + line for line in out.splitlines()))
    table = {k: float(v) for k, v in (kv.split("=") for kv in out.splitlines()[-1].split()[1:])}
    have = sorted({int(k.rsplit("_", 1)[1]) for k in table})
    t = max(n for n in have if n <= ARGS.threads) if min(have) <= ARGS.threads else have[0]
    return gemm_ceilings({k.rsplit("_", 1)[0]: v for k, v in table.items() if k.endswith(f"_{t}")})


def gemm_ceilings(ceil: dict[str, float]) -> dict[str, float]:
    if ceil.get("fp32", 0) > ceil.get("bf16", 0):
        # No bf16 instructions (an AVX2 host), or bf16 dot products slower than float32 FMAs (a host without AMX):
        # bf16 products widen to float32 there (libaxon/kernels/gemm.c), so the FMA peak is their ceiling.
        print("(bf16 dot products, if any, below the fp32 FMA rate: bf16 GEMM measured against the fp32 FMA peak)")
        ceil["bf16"] = ceil["fp32"]
    return ceil


# What a case does per call, for the share-of-peak columns: ("flop", count, peak key) or ("byte", count, STREAM key).
WORK: dict[tuple[str, str], tuple[str, float, str]] = {}


def cases():
    """(name, size label, builder) where builder(device) returns a no-argument callable running the op once."""
    small, large = 64, ARGS.large or ((1 << 22) if not ARGS.quick else (1 << 20))

    def vec(n, dtype=torch.float32):
        return lambda d: torch.randn(n, dtype=dtype, device=d)

    def unary(fn, n, dtype=torch.float32):
        def build(d):
            x = vec(n, dtype)(d)
            return lambda: fn(x)
        return build

    def positive(fn, n, dtype=torch.float32):
        def build(d):
            x = torch.rand(n, dtype=dtype, device=d) + 0.5
            return lambda: fn(x)
        return build

    def binary(fn, n, dtype=torch.float32):
        def build(d):
            x, y = vec(n, dtype)(d), vec(n, dtype)(d)
            return lambda: fn(x, y)
        return build

    out = []
    # Bytes each large case reads and writes (one pass over every input and output) and the STREAM kernel that moves
    # as many arrays.
    WORK.update({
        ("add", f"{large}"): ("byte", 12.0 * large, "add"),
        ("mul", f"{large}"): ("byte", 12.0 * large, "add"),
        ("gelu", f"{large}"): ("byte", 8.0 * large, "copy"),
        ("add bf16", f"{large}"): ("byte", 6.0 * large, "add"),
        ("sum", f"{large}"): ("byte", 4.0 * large, "add"),
        ("cast f32->bf16", f"{large}"): ("byte", 6.0 * large, "copy"),
    })
    for n, label in ((small, "64"), (large, f"{large}")):
        out += [
            ("add", label, binary(torch.add, n)),
            ("mul", label, binary(torch.mul, n)),
            ("gelu", label, unary(torch.nn.functional.gelu, n)),
            # the activation backwards autograd calls in training (gradient, input)
            ("gelu_backward", label, binary(torch.ops.aten.gelu_backward.default, n)),
            ("silu_backward", label, binary(torch.ops.aten.silu_backward.default, n)),
            # libm's transcendental functions, whose scalar loops once ran at 4-15x CPU's time (positive inputs:
            # NaN results take the vector functions' slow path)
            ("log", label, positive(torch.log, n)),
            ("log f64", label, positive(torch.log, n, torch.float64)),
            ("pow", label, positive(lambda t: torch.pow(t, 2.5), n)),
            # a Python number operand (the argument parser wraps it in a CPU tensor)
            ("mul number", label, unary(lambda t: t * 2.5, n)),
            ("clamp numbers", label, unary(lambda t: t.clamp(-1.0, 1.0), n)),
            ("mish", label, unary(torch.nn.functional.mish, n)),
            ("mish_backward", label, binary(torch.ops.aten.mish_backward.default, n)),
            ("add bf16", label, binary(torch.add, n, torch.bfloat16)),
            ("sum", label, unary(torch.sum, n)),
            ("cast f32->bf16", label, unary(lambda t: t.to(torch.bfloat16), n)),
        ]
    # The same traffic into preallocated outputs: the kernel's bandwidth alone, without a fresh output's page faults
    # (which dominate CPU's figures once tensors outgrow malloc's reuse; axon's caching allocator reuses them).
    WORK.update({("add out=", f"{large}"): ("byte", 12.0 * large, "add"),
                 ("copy_ f32->bf16", f"{large}"): ("byte", 6.0 * large, "copy")})
    out.append(("add out=", f"{large}", lambda d: (lambda x, y, z: (lambda: torch.add(x, y, out=z)))(
        vec(large)(d), vec(large)(d), vec(large)(d))))
    out.append(("copy_ f32->bf16", f"{large}", lambda d: (lambda x, z: (lambda: z.copy_(x)))(
        vec(large)(d), vec(large, torch.bfloat16)(d))))
    rows = 256 if ARGS.quick else 1024
    for name, fn in (("softmax", lambda t: torch.softmax(t, -1)),
                     ("layer_norm", lambda t: torch.nn.functional.layer_norm(t, (t.shape[-1],)))):
        out.append((name, f"{rows}x1024", lambda d, fn=fn: (lambda x: (lambda: fn(x)))(torch.randn(rows, 1024, device=d))))
    WORK[("cat", f"4x{rows}x256")] = ("byte", 2.0 * 4 * rows * 256 * 4, "copy")
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
    # bf16 attention as a transformer's prefill runs it (causal, 16 heads of 512 tokens) and a decoding step (one
    # query row per head over 1024 cached keys, grouped-query heads).
    out.append(("sdpa bf16 causal", "16x512x64",
                lambda d: (lambda q, k, v: (lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, is_causal=True)))(*(torch.randn(1, 16, 512, 64, device=d).bfloat16() for _ in range(3)))))
    out.append(("sdpa bf16 decode", "16/8x1x1024x64",
                lambda d: (lambda q, k, v: (lambda: torch.nn.functional.scaled_dot_product_attention(
                    q, k, v, enable_gqa=True)))(torch.randn(1, 16, 1, 64, device=d).bfloat16(),
                                                *(torch.randn(1, 8, 1024, 64, device=d).bfloat16() for _ in range(2)))))
    # Complex reductions and scans (computed in complex128, as CPU accumulates them) and 16-bit fractional pooling.
    def rows_c64(d):
        g = torch.Generator().manual_seed(0)
        return torch.polar(1 + 0.05 * torch.rand(64, 4096, generator=g), 6 * torch.rand(64, 4096, generator=g)).to(d)
    for name, fn in (("prod c64", lambda t: torch.prod(t, 1)), ("logsumexp c64", lambda t: torch.logsumexp(t, 1)),
                     ("logcumsumexp c64", lambda t: torch.logcumsumexp(t, 1))):
        out.append((name, "64x4096", lambda d, fn=fn: (lambda x: (lambda: fn(x)))(rows_c64(d))))
    out.append(("fractional_max_pool2d bf16", "8x32x64x64 k3",
                lambda d: (lambda x, u: (lambda: torch.nn.functional.fractional_max_pool2d(
                    x, 3, output_size=(32, 32), _random_samples=u)))(
                        torch.randn(8, 32, 64, 64, device=d).bfloat16(), torch.rand(8, 32, 2, device=d).bfloat16())))
    def c32(d, seed):
        g = torch.Generator().manual_seed(seed)
        return torch.randn(1 << 20, generator=g, dtype=torch.complex64).to(torch.complex32).to(d)
    out.append(("mul c32", "1M", lambda d: (lambda x, y: (lambda: x * y))(c32(d, 0), c32(d, 1))))
    out.append(("abs c32", "1M", lambda d: (lambda x: (lambda: x.abs()))(c32(d, 0))))
    out.append(("conv2d int64", "8x16x32x32 k3",
                lambda d: (lambda x, w: (lambda: torch.nn.functional.conv2d(x, w, padding=1)))(
                    torch.randint(-100, 100, (8, 16, 32, 32), device=d),
                    torch.randint(-9, 9, (32, 16, 3, 3), device=d))))
    sizes = (64, 256, 1024) if ARGS.quick else (64, 256, 1024, 2048, 4096)
    # float16 has no dot-product unit of its own here (products widen to float32): measured against the FMA peak.
    for dtype, tag, peak in ((torch.float32, "fp32", "fp32"), (torch.bfloat16, "bf16", "bf16"),
                             (torch.float16, "f16", "fp32")):
        for n in sizes:
            WORK[(f"mm {tag}", f"{n}")] = ("flop", 2.0 * n ** 3, peak)
            out.append((f"mm {tag}", f"{n}", lambda d, n=n, dtype=dtype: (lambda a: (lambda: a @ a))(
                torch.randn(n, n, device=d).to(dtype))))
        WORK[(f"bmm {tag}", "32x128x64x128")] = ("flop", 2.0 * 32 * 128 * 64 * 128, peak)
        out.append((f"bmm {tag}", "32x128x64x128", lambda d, dtype=dtype: (lambda a, b: (lambda: a @ b))(
            torch.randn(32, 128, 64, device=d).to(dtype), torch.randn(32, 64, 128, device=d).to(dtype))))
    # Linear layers as transformers run them (weight stored (n, k)): decode steps of 4 tokens (a few-row product), a
    # batch of 4 x 128 tokens, and benchmarks/compile.py's MLP (batch 64, 512 -> 2048 -> 512).
    for m, k, n in ((4, 256, 688), (4, 688, 256), (4, 256, 8192), (512, 256, 256), (512, 256, 768),
                    (512, 1024, 256), (64, 512, 2048), (64, 2048, 512)):
        WORK[("linear fp32", f"{m}x{k}x{n}")] = ("flop", 2.0 * m * k * n, "fp32")
        out.append(("linear fp32", f"{m}x{k}x{n}", lambda d, m=m, k=k, n=n: (lambda x, w, b: (
            lambda: torch.nn.functional.linear(x, w, b)))(torch.randn(m, k, device=d), torch.randn(n, k, device=d),
                                                          torch.randn(n, device=d))))
    # 16-bit Linears: a decode step, a transformer batch, the MLP's first layer, a large projection.
    for (dtype, tag, peak), (m, k, n) in itertools.product(
            ((torch.bfloat16, "bf16", "bf16"), (torch.float16, "f16", "fp32")),
            ((4, 768, 768), (512, 1024, 256), (64, 512, 2048), (1024, 1024, 4096))):
        WORK[(f"linear {tag}", f"{m}x{k}x{n}")] = ("flop", 2.0 * m * k * n, peak)
        out.append((f"linear {tag}", f"{m}x{k}x{n}", lambda d, m=m, k=k, n=n, dtype=dtype: (lambda x, w, b: (
            lambda: torch.nn.functional.linear(x, w, b)))(
                torch.randn(m, k, device=d).to(dtype), torch.randn(n, k, device=d).to(dtype),
                torch.randn(n, device=d).to(dtype))))
    return [c for c in out if any(f in c[0] for f in ARGS.filter.split(",")) and (not ARGS.tiny or c[1] == "64")]


def main() -> int:
    reps = 5 if ARGS.quick else 9
    ceil = peaks()
    if ceil:
        print("peaks used: " + ", ".join(f"{k} {v:g}" for k, v in sorted(ceil.items())) +
              " (GFLOP/s for fp32/bf16, GB/s for STREAM kernels)")
    print(f"torch {torch.__version__}, torch-axon {torch_axon.__version__}, {ARGS.threads} thread(s) each; "
          f"times in microseconds per call (median of {reps}); ratio = axon / cpu (lower is better)")
    rate_head = f"{'cpu rate':>10}{'axon rate':>10}{'unit':>8}{'axon/peak':>16}" if ceil else ""
    print(f"{'op':<16}{'size':>18}{'cpu us':>12}{'axon us':>12}{'ratio':>8}{rate_head}  path")
    ratios = []
    cpu_rate: dict[str, float] = {}  # flop per microsecond of torch CPU, per GEMM case name
    for name, label, build in cases():
        cpu_fn = build("cpu")
        axon_fn = build("axon")
        torch_axon.reset_fallback_stats()
        axon_fn()
        torch.axon.synchronize()
        path = "native" if not torch_axon.fallback_stats() else "fallback: " + ",".join(
            sorted(k.replace("aten::", "") for k in torch_axon.fallback_stats()))
        kind, amount, key = WORK.get((name, label), ("", 0.0, ""))
        if kind == "flop" and name in cpu_rate and amount / cpu_rate[name] > 20e6:
            # torch CPU's bf16 GEMM on a host without bf16 units runs at about 1 GFLOP/s: a 4096 product would take
            # minutes per call. Skipped when the previous size's rate says it would take over 20 s.
            t_axon = timed(axon_fn, torch.axon.synchronize, reps)
            print(f"{name:<16}{label:>18}{'skipped':>12}{t_axon:>12.1f}  (torch CPU would take about "
                  f"{amount / cpu_rate[name] / 1e6:.0f} s per call)  {path}")
            continue
        t_cpu = timed(cpu_fn, lambda: None, reps)
        if kind == "flop":
            cpu_rate[name] = amount / t_cpu
        t_axon = timed(axon_fn, torch.axon.synchronize, reps)
        ratios.append(t_axon / t_cpu)
        rates = ""
        if ceil:
            if kind and ceil.get(key):
                # GB/s and GFLOP/s are both 1e3 per (unit per microsecond).
                r_cpu, r_axon = amount / t_cpu * 1e-3, amount / t_axon * 1e-3
                unit = "GB/s" if kind == "byte" else "GFLOP/s"
                share = f"{100 * r_axon / ceil[key]:.0f}% {key}"
                rates = f"{r_cpu:>10.1f}{r_axon:>10.1f}{unit:>8}{share:>16}"
            else:
                rates = f"{'':>10}{'':>10}{'':>8}{'':>16}"
        print(f"{name:<16}{label:>18}{t_cpu:>12.1f}{t_axon:>12.1f}{t_axon / t_cpu:>8.2f}{rates}  {path}")
    geo = statistics.geometric_mean(ratios) if ratios else float("nan")
    print(f"geometric mean of axon/cpu over {len(ratios)} cases: {geo:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

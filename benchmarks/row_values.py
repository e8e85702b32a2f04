"""x * s[:, None] on short rows, axon against PyTorch CPU in one run: [2^20 / R, R] times [2^20 / R, 1] for row
lengths R of 8 to 256, with x * 2.0 on the same tensor as the floor (no second operand to read); then kron of
[64, 64] and [16, 16], whose product has the same layout with b's rows repeated (a [1024, 1024] result).

    python benchmarks/row_values.py [--threads 2] [--calls 15] [--rounds 5] [--dtype float32]

axon: the kernel's own time from the device trace (torch_axon._C._trace_records()), the best of `rounds` rounds of
`calls` calls, so the figure is the kernel without Python's call; cpu: the whole call (timing.best_us). The pointwise
executor runs the op's row loop on rows from 8 elements in float32 and float64 and from 32 in the half types, and
spreads a row's value over a buffer below that (kernels/pointwise_exec.c, pw_row_loop_min)."""

from __future__ import annotations

import argparse
import os

import torch

from timing import best_us

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument("--threads", type=int, default=2)
ARGS.add_argument("--calls", type=int, default=15)
ARGS.add_argument("--rounds", type=int, default=5)
ARGS.add_argument("--dtype", default="float32", choices=["float32", "float64", "bfloat16", "float16"])
ARGS = ARGS.parse_args()
os.environ.setdefault("AXON_THREADS", str(ARGS.threads))
torch.set_num_threads(ARGS.threads)

import torch_axon  # noqa: E402  (after AXON_THREADS is set)


def kernel_us(fn) -> float:
    """Best kernel time of fn's single launch over the rounds, in microseconds."""
    trace = torch_axon._C
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(ARGS.rounds):
        torch.axon.synchronize()
        trace._trace_clear()
        trace._trace_enable(True)
        for _ in range(ARGS.calls):
            fn()
        torch.axon.synchronize()
        trace._trace_enable(False)
        best = min(best, min((r[4] - r[3]) / 1e3 for r in trace._trace_records()))
    return best


DTYPE = getattr(torch, ARGS.dtype)
print(f"torch {torch.__version__}, {ARGS.dtype}, {ARGS.threads} thread(s) each; axon: kernel time from the trace; "
      "cpu: whole call")
print(f"{'R':>5} {'axon x*s us':>12} {'axon x*2 us':>12} {'x*s / x*2':>10} {'cpu x*s us':>11}")
g = torch.Generator().manual_seed(0)
for R in (8, 16, 32, 64, 128, 256):
    N = (1 << 20) // R
    x, s = torch.randn(N, R, generator=g).to(DTYPE), torch.randn(N, 1, generator=g).to(DTYPE)
    xa, sa = x.to("axon"), s.to("axon")
    if not torch.equal((xa * sa).cpu(), x * s):
        raise SystemExit(f"R={R}: axon's x * s differs from CPU's")
    rows = kernel_us(lambda: xa * sa)
    floor = kernel_us(lambda: xa * 2.0)
    cpu = best_us(lambda: x * s, "cpu", ARGS.calls)
    print(f"{R:>5} {rows:>12.0f} {floor:>12.0f} {rows / floor:>10.2f} {cpu:>11.0f}", flush=True)

a, b = torch.randn(64, 64, generator=g).to(DTYPE), torch.randn(16, 16, generator=g).to(DTYPE)
aa, ba = a.to("axon"), b.to("axon")
if not torch.equal(torch.kron(aa, ba).cpu(), torch.kron(a, b)):
    raise SystemExit("axon's kron differs from CPU's")
big = torch.kron(aa, ba)
rows, floor = kernel_us(lambda: torch.kron(aa, ba)), kernel_us(lambda: big * 2.0)
cpu = best_us(lambda: torch.kron(a, b), "cpu", ARGS.calls)
print(f"{'kron':>5} {rows:>12.0f} {floor:>12.0f} {rows / floor:>10.2f} {cpu:>11.0f}", flush=True)

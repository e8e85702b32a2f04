"""x * s[:, None] on short rows, axon against PyTorch CPU in one run: [2^20 / R, R] float32 times [2^20 / R, 1] for
row lengths R of 8 to 256, with x * 2.0 on the same tensor as the floor (no second operand to read).

    python benchmarks/row_values.py [--threads 2] [--calls 15] [--rounds 5]

axon: the kernel's own time from the device trace (torch_axon._C._trace_records()), the best of `rounds` rounds of
`calls` calls, so the figure is the kernel without Python's call; cpu: the whole call (timing.best_us). The pointwise
executor spreads a row's value for rows under 32 elements and runs the op's row loop from 32 (kernels/pointwise_exec.c,
PW_ROW_LOOP_MIN)."""

from __future__ import annotations

import argparse
import os

import torch

from timing import best_us

ARGS = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ARGS.add_argument("--threads", type=int, default=2)
ARGS.add_argument("--calls", type=int, default=15)
ARGS.add_argument("--rounds", type=int, default=5)
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


print(f"torch {torch.__version__}, {ARGS.threads} thread(s) each; axon: kernel time from the trace; cpu: whole call")
print(f"{'R':>5} {'axon x*s us':>12} {'axon x*2 us':>12} {'x*s / x*2':>10} {'cpu x*s us':>11}")
g = torch.Generator().manual_seed(0)
for R in (8, 16, 32, 64, 128, 256):
    N = (1 << 20) // R
    x, s = torch.randn(N, R, generator=g), torch.randn(N, 1, generator=g)
    xa, sa = x.to("axon"), s.to("axon")
    if not torch.equal((xa * sa).cpu(), x * s):
        raise SystemExit(f"R={R}: axon's x * s differs from CPU's")
    rows = kernel_us(lambda: xa * sa)
    floor = kernel_us(lambda: xa * 2.0)
    cpu = best_us(lambda: x * s, "cpu", ARGS.calls)
    print(f"{R:>5} {rows:>12.0f} {floor:>12.0f} {rows / floor:>10.2f} {cpu:>11.0f}", flush=True)

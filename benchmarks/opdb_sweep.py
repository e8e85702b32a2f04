"""Every op of PyTorch's op database on its own sample inputs, axon against PyTorch CPU in one run: the per-op cost on
small tensors (op_db's samples are a few to a few thousand elements), and how many calls went through the host
fallback. For finding the ops that fell behind; ops_survey.py and ops.py time fixed cases at 1M elements.

    python benchmarks/opdb_sweep.py [--dtype float32] [--threads 2] [--samples 4] [--reps 20] [--over 1.5] [name ...]

Per op: the first `samples` samples, each timed as the best of 3 x `reps` calls per backend (axon synchronized),
summed over the samples; ratio = axon / CPU. Ops whose samples fail on either side are left out. Prints the ops at
or above --over (all with --over 0), worst first, then the count and the median ratio."""

from __future__ import annotations

import argparse
import os
import statistics
import warnings

import torch
from torch.utils._pytree import tree_map

from timing import best_us


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("names", nargs="*", help="op names to run (substring match; default all)")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--samples", type=int, default=4)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--over", type=float, default=1.5)
    args = p.parse_args()
    os.environ.setdefault("AXON_THREADS", str(args.threads))   # both backends get the same thread count
    import torch_axon
    from torch.testing._internal.common_methods_invocations import op_db

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    dtype = getattr(torch, args.dtype)
    to_axon = lambda t: t.to("axon") if isinstance(t, torch.Tensor) else t  # noqa: E731
    rows = []
    for op in op_db:
        if args.names and not any(n in op.name for n in args.names):
            continue
        if dtype not in op.supported_dtypes("cpu"):
            continue
        try:
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:args.samples]
        except Exception:   # noqa: BLE001  (a sample generator that needs what this machine lacks)
            continue
        cpu_us = axon_us = 0.0
        fallbacks = timed = 0
        for s in samples:
            cpu_args, kwargs = (s.input, *s.args), s.kwargs
            axon_args, axon_kwargs = tree_map(to_axon, cpu_args), tree_map(to_axon, kwargs)
            try:
                torch_axon.reset_fallback_stats()
                op(*axon_args, **axon_kwargs)
                torch.axon.synchronize()
                fallbacks += sum(torch_axon.fallback_stats().values())
                c = best_us(lambda: op(*cpu_args, **kwargs), "cpu", args.reps, 3)
                a = best_us(lambda: op(*axon_args, **axon_kwargs), "axon", args.reps, 3)
            except Exception:   # noqa: BLE001  (errors are test_ops.py's business, not this sweep's)
                continue
            cpu_us, axon_us, timed = cpu_us + c, axon_us + a, timed + 1
        if timed:
            name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
            rows.append((axon_us / cpu_us, name, cpu_us / timed, axon_us / timed, fallbacks))
    rows.sort(reverse=True)
    print(f"{args.dtype}, {args.threads} threads, {args.samples} samples per op; microseconds per call (mean over "
          "the samples)")
    print("| op | cpu | axon | axon / cpu | host fallbacks |\n|---|---|---|---|---|")
    for ratio, name, c, a, fb in rows:
        if ratio >= args.over:
            print(f"| {name} | {c:.1f} | {a:.1f} | {ratio:.2f} | {fb} |")
    if rows:
        print(f"\n{len(rows)} ops timed, {sum(r[0] >= args.over for r in rows)} at or above {args.over}x; median "
              f"ratio {statistics.median(r[0] for r in rows):.2f}")


if __name__ == "__main__":
    main()

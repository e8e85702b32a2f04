"""Op coverage of the axon device against PyTorch's op database.

For every OpInfo in torch's op_db and every dtype PyTorch CPU supports for it, runs the samples on axon and on CPU
(tests/opinfo_harness.py) and prints the table ops x dtypes: N native (no host fallback), F host fallback (correct),
X failing, with totals. tests/test_ops.py asserts the same results against its list of known failures.

    .venv/bin/python benchmarks/coverage.py                 # the whole op database (minutes)
    .venv/bin/python benchmarks/coverage.py --ops add,mm     # a few ops
    .venv/bin/python benchmarks/coverage.py --json out.json  # also write every result
"""

import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
os.environ.setdefault("AXON_DEVICE_MEMORY", "4G")

import torch  # noqa: E402  (autoloads torch_axon)
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

import opinfo_harness as harness  # noqa: E402

MARK = {"native": "N", "fallback": "F", "failing": "X", "skipped": "-"}
SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "complex64": "c64",
         "complex128": "c128", "complex32": "c32", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
         "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "b"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ops", help="comma-separated op names (OpInfo name or name.variant); default all")
    p.add_argument("--json", help="write the results to this file")
    p.add_argument("--failures", action="store_true", help="list every failing pair with its error")
    args = p.parse_args()

    wanted = set(args.ops.split(",")) if args.ops else None
    ops = [op for op in op_db if wanted is None or op.name in wanted or harness.op_id(op) in wanted]
    results = []
    t0 = time.perf_counter()
    for op in ops:
        for dtype in harness.supported_dtypes(op):
            results.append(harness.check_pair(op, dtype))
    elapsed = time.perf_counter() - t0

    dtypes = sorted({r.dtype for r in results}, key=lambda d: list(SHORT).index(d) if d in SHORT else 99)
    by_op = collections.defaultdict(dict)
    for r in results:
        by_op[r.op][r.dtype] = r
    width = max([len(o) for o in by_op] + [10])
    print(f"{'op':<{width}} " + " ".join(f"{SHORT.get(d, d):>4}" for d in dtypes))
    for o in sorted(by_op):
        print(f"{o:<{width}} " + " ".join(f"{MARK[by_op[o][d].status] if d in by_op[o] else '':>4}" for d in dtypes))

    counts = collections.Counter(r.status for r in results)
    total = len(results)
    checked = total - counts["skipped"]
    passing = counts["native"] + counts["fallback"]
    print()
    print(f"(op, dtype) pairs: {total} over {len(by_op)} OpInfos, {elapsed:.0f} s")
    for status in ("native", "fallback", "failing", "skipped"):
        print(f"  {status:<9} {counts[status]:5d}  {100.0 * counts[status] / max(total, 1):5.1f}%")
    print(f"  passing   {passing:5d}  {100.0 * passing / max(checked, 1):5.1f}% of the {checked} pairs with samples")
    fallen = collections.Counter(f for r in results if r.status == "fallback" for f in r.fallback_ops)
    if fallen:
        print("\nmost common host fallbacks (pairs that use them):")
        for name, n in fallen.most_common(25):
            print(f"  {n:5d}  {name}")
    if args.failures:
        print("\nfailing pairs:")
        for r in results:
            if r.status == "failing":
                print(f"  {r.op} {r.dtype}: {r.error}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([r.__dict__ for r in results], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

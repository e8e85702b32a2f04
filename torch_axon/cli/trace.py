"""`axon trace MODEL -o trace.json`: a Chrome trace (chrome://tracing, Perfetto) of the device's kernels for one
step: one untraced step first (first-call allocations and lazy initialization stay out), then libaxon's runtime
trace over exactly one step."""

from __future__ import annotations

import os
import sys

from torch_axon.cli import presets
from torch_axon.cli.common import CliError, one_line, parse_dtype, positive_int, table


def run(model_name: str, output: str, dtype_name: str = "float32", batch: int | None = None,
        train: bool = False) -> dict:
    import torch

    import torch_axon
    from torch_axon.cli import steps

    dtype = parse_dtype(dtype_name)
    spec = presets.load(model_name, batch)
    try:
        model = spec.model.to(dtype).to("axon")
        args, kwargs = spec.inputs_to("axon", dtype)
        step = steps.Step(model, model, args, kwargs, train, "axon")
        step()
        torch_axon._C._trace_clear()
        torch_axon._C._trace_enable(True)
        try:
            step()
        finally:
            torch_axon._C._trace_enable(False)
    except torch.OutOfMemoryError as e:
        raise CliError(f"{model_name} does not fit in axon device memory: {one_line(e)}", code=1) from None
    records = torch_axon._C._trace_records()  # (name, device, stream, start_ns, end_ns, bytes)
    try:
        torch_axon._C._trace_export_chrome(output)
    except Exception as e:
        raise CliError(f"cannot write the trace to {output}: {one_line(e)}", code=1) from None
    finally:
        torch_axon._C._trace_clear()
    kernels: dict[str, list] = {}
    for name, _dev, _stream, start, end, _nbytes in records:
        k = kernels.setdefault(name, [0, 0])
        k[0] += 1
        k[1] += max(0, end - start)
    span = (max(r[4] for r in records) - min(r[3] for r in records)) if records else 0
    return {"schema": "axon-trace/1", "model": model_name, "dtype": str(dtype).removeprefix("torch."),
            "batch": spec.batch, "train": train, "output": output, "records": len(records), "span_ns": span,
            "kernels": sorted(({"name": n, "count": c, "total_ns": t} for n, (c, t) in kernels.items()),
                              key=lambda k: -k["total_ns"])}


def command(args) -> int:
    batch = positive_int("batch", args.batch) if args.batch is not None else None
    parse_dtype(args.dtype)
    out_dir = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(out_dir):
        raise CliError(f"cannot write {args.output}: no such directory")
    r = run(args.model, args.output, args.dtype, batch, args.train)
    print(f"axon trace {r['model']}: {r['dtype']}, batch {r['batch']}, one {'train' if r['train'] else 'inference'} "
          f"step: {r['records']} device commands over {r['span_ns'] / 1e6:.2f} ms -> {r['output']}")
    if r["records"] == 0:
        print("warning: no device command was traced (did the model run on axon?)", file=sys.stderr)
        return 1
    rows = [[k["name"], k["count"], f"{k['total_ns'] / 1e3:.1f}"] for k in r["kernels"][:15]]
    print(table(["kernel", "count", "total us"], rows))
    if len(r["kernels"]) > 15:
        print(f"... {len(r['kernels']) - 15} more kernels in the trace")
    print("open it in chrome://tracing or https://ui.perfetto.dev")
    return 0

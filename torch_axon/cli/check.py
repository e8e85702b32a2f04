"""`axon check MODEL`: can this model run on axon, and does it compute what PyTorch CPU computes?

1. the model runs on the CPU (the reference), in the chosen dtype, with the same weights as the axon copy;
2. the model runs on axon in eager mode under an op recorder: every aten op with its dtypes and shapes, and whether
   it ran natively, through the host fallback, or raised (unsupported);
3. compiled (torch.compile(backend="axon")) when that backend is registered: its outputs, and the ops left out of
   the compiled graph (torch_axon.compile.explain when present, else Dynamo's graph breaks);
4. every output (and with --train every parameter's gradient) against the CPU reference, pass or fail by the
   dtype's tolerance (common.TOLERANCES).
Exit status 0 when everything passed, 1 when anything failed (a compiled backend that is not installed is reported,
not failed).
"""

from __future__ import annotations

import copy
import json
import re
import sys
import time

from torch_axon.cli import presets
from torch_axon.cli.common import (GRAD_FACTOR, TOLERANCES, CliError, compiled_backend_status, flatten, one_line,
                                   parse_dtype, positive_int, table)


def compare(name: str, got, ref, dtype_name: str, grad: bool = False) -> dict:
    """One output against its CPU reference: max abs and relative error, and pass by the dtype's tolerance."""
    import torch

    row = {"name": name, "shape": list(ref.shape), "dtype": str(ref.dtype).removeprefix("torch."),
           "max_abs_err": None, "max_rel_err": None, "pass": False, "note": None}
    if got is None:
        row["note"] = "missing on axon"
        return row
    got = got.detach().cpu()
    ref = ref.detach()
    if got.shape != ref.shape or got.dtype != ref.dtype:
        row["note"] = f"axon gave {tuple(got.shape)} {got.dtype}, CPU {tuple(ref.shape)} {ref.dtype}"
        return row
    if not ref.is_floating_point() and not ref.is_complex():
        row["pass"] = bool(torch.equal(got, ref))
        row["max_abs_err"] = 0.0 if row["pass"] else float((got.double() - ref.double()).abs().max())
        return row
    rtol, atol = TOLERANCES.get(row["dtype"], TOLERANCES["float32"])
    g, r = got.double(), ref.double()
    scale = float(r.abs().max()) if r.numel() else 0.0
    if grad:  # gradients cancel: bound them relative to the tensor's largest gradient
        rtol, atol = rtol * GRAD_FACTOR, atol * GRAD_FACTOR * scale
    diff = (g - r).abs()
    finite_mismatch = bool(((g.isnan() != r.isnan()) | (g.isinf() & (g != r))).any()) if r.numel() else False
    diff = torch.where(g.isnan() & r.isnan(), torch.zeros_like(diff), diff)
    row["max_abs_err"] = float(diff.max()) if diff.numel() else 0.0
    row["max_rel_err"] = row["max_abs_err"] / scale if scale > 0 else row["max_abs_err"]
    row["rtol"], row["atol"] = rtol, atol
    ok = bool(torch.allclose(g, r, rtol=rtol, atol=atol, equal_nan=True)) if r.numel() else True
    row["pass"] = ok and not finite_mismatch
    return row


def _run_on(fn, spec, device, dtype, train, model):
    """Outputs (flattened) and gradients of one step of fn on device."""
    from torch_axon.cli import steps

    args, kwargs = spec.inputs_to(device, dtype)
    model.zero_grad(set_to_none=True)
    out = steps.forward(fn, args, kwargs, train)
    steps.sync(device)
    return flatten(out), (steps.grads(model) if train else [])


def _compare_all(outs, grads, ref_outs, ref_grads, dtype_name) -> list[dict]:
    got = dict(outs)
    rows = [compare(n, got.get(n), r, dtype_name) for n, r in ref_outs]
    got_g = dict(grads)
    rows += [compare(n, got_g.get(n), r, dtype_name, grad=True) for n, r in ref_grads]
    return rows


class _Positional:
    """model(**kwargs) as a function of positional tensors, for explain(model, *inputs)."""

    def __init__(self, model, n_args: int, names: list[str]):
        self.model, self.n_args, self.names = model, n_args, names

    def __call__(self, *values):
        return self.model(*values[:self.n_args], **dict(zip(self.names, values[self.n_args:])))


def _left_out(model_ax, spec, dtype, train: bool) -> list[dict]:
    """Ops left out of the compiled graph, and why: torch_axon.compile.explain when present, else Dynamo's graph
    breaks."""
    import contextlib
    import io

    import torch

    args, kwargs = spec.inputs_to("axon", dtype)
    grad = contextlib.nullcontext() if train else torch.no_grad()
    torch._dynamo.reset()
    try:
        from torch_axon.compile import explain
    except ImportError:
        explain = None
    if explain is not None:
        fn = _Positional(model_ax, len(args), list(kwargs))
        with grad, contextlib.redirect_stdout(io.StringIO()):  # explain prints its report; ours is the table
            ex = explain(fn, *args, *kwargs.values())
        rows = []
        for item in ex.left_out:
            node, op, reason = (list(item) + ["", "", ""])[:3]
            rows.append({"node": str(node), "op": str(op), "reason": str(reason),
                         "benign": str(reason).startswith("view")})
        return rows
    with grad:
        ex = torch._dynamo.explain(model_ax)(*args, **kwargs)
    return [{"node": "", "op": "graph break", "reason": " ".join(str(getattr(b, "reason", b)).split())[:300],
             "benign": False} for b in ex.break_reasons]


def run(model_name: str, dtype_name: str = "float32", batch: int | None = None, strict: bool = False,
        train: bool = False, progress=None) -> dict:
    import torch

    import torch_axon
    from torch_axon.cli.optrace import FALLBACK, UNSUPPORTED, OpRecorder, by_op

    say = progress or (lambda msg: None)
    dtype = parse_dtype(dtype_name)
    dtype_name = str(dtype).removeprefix("torch.")
    say(f"building {model_name}")
    spec = presets.load(model_name, batch)
    model = spec.model.to(dtype)
    report = {"schema": "axon-check/1", "model": model_name, "dtype": dtype_name, "batch": spec.batch,
              "train": train, "strict": strict, "tolerance": dict(zip(("rtol", "atol"), TOLERANCES[dtype_name])),
              "ops": [], "op_signatures": [], "eager": {}, "compiled": {}, "failures": []}

    say("running on the CPU (reference)")
    t0 = time.perf_counter()
    try:
        ref_outs, ref_grads = _run_on(model, spec, "cpu", dtype, train, model)
    except CliError:
        raise
    except Exception as e:
        raise CliError(f"{model_name} failed on the CPU reference run: {one_line(e)}", code=1) from None
    ref_outs = [(n, t.detach().clone()) for n, t in ref_outs]
    ref_grads = [(n, t.detach().clone()) for n, t in ref_grads]
    report["cpu_seconds"] = time.perf_counter() - t0

    say("moving the model to axon")
    try:
        model_ax = copy.deepcopy(model).to("axon")
    except torch.OutOfMemoryError as e:
        raise CliError(f"{model_name} does not fit in axon device memory: {one_line(e)}", code=1) from None

    say("running eager on axon (tracing ops)")
    recorder = OpRecorder()
    torch_axon.reset_fallback_stats()
    eager = report["eager"]
    t0 = time.perf_counter()
    try:
        with recorder:
            outs, grads = _run_on(model_ax, spec, "axon", dtype, train, model_ax)
        eager["status"] = "ran"
    except torch.OutOfMemoryError as e:
        raise CliError(f"{model_name} does not fit in axon device memory: {one_line(e)}", code=1) from None
    except Exception as e:
        outs, grads = [], []
        eager["status"] = "failed"
        eager["error"] = one_line(e)
        report["failures"].append(f"eager run failed: {one_line(e)}")
    eager["seconds"] = time.perf_counter() - t0
    eager["fallback_stats"] = torch_axon.fallback_stats()
    report["op_signatures"] = [r.as_json() for r in recorder.records.values()]
    report["ops"] = by_op(recorder.records.values())
    counts: dict[str, int] = {}
    for r in report["ops"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    report["op_counts"] = counts
    for r in report["ops"]:
        if r["status"] == UNSUPPORTED:
            report["failures"].append(f"unsupported op {r['op']}: {r['error']}")
        elif r["status"] == FALLBACK and strict:
            report["failures"].append(f"--strict: {r['op']} ({'; '.join(r['dtypes'])}) needs the host fallback")
    if eager["status"] == "ran":
        eager["outputs"] = _compare_all(outs, grads, ref_outs, ref_grads, dtype_name)
        for row in eager["outputs"]:
            if not row["pass"]:
                report["failures"].append(f"eager {row['name']}: {_err(row)}")
    del outs, grads

    compiled = report["compiled"]
    available, reason = compiled_backend_status()
    if not available:
        compiled.update(status="not available", reason=reason)
    else:
        say("compiling for axon and running")
        t0 = time.perf_counter()
        try:
            torch._dynamo.reset()
            fn = torch.compile(model_ax, backend="axon")
            outs, grads = _run_on(fn, spec, "axon", dtype, train, model_ax)
            compiled["status"] = "ran"
            compiled["seconds_first_call"] = time.perf_counter() - t0
            compiled["outputs"] = _compare_all(outs, grads, ref_outs, ref_grads, dtype_name)
            for row in compiled["outputs"]:
                if not row["pass"]:
                    report["failures"].append(f"compiled {row['name']}: {_err(row)}")
        except torch.OutOfMemoryError as e:
            raise CliError(f"{model_name} does not fit in axon device memory (compiled): {one_line(e)}",
                           code=1) from None
        except Exception as e:
            compiled.update(status="failed", error=one_line(e))
            report["failures"].append(f"compiled run failed: {one_line(e)}")
        try:
            say("explaining the compiled graph")
            compiled["left_out"] = _left_out(model_ax, spec, dtype, train)
        except Exception as e:
            compiled["left_out_error"] = one_line(e)
    report["passed"] = not report["failures"]
    return report


def _err(row: dict) -> str:
    if row.get("note"):
        return row["note"]
    return (f"max abs err {row['max_abs_err']:.3g}, max rel err {row['max_rel_err']:.3g} "
            f"(rtol {row.get('rtol', 0):g}, atol {row.get('atol', 0):g})") if row["max_abs_err"] is not None \
        else "mismatch"


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2e}"


def print_report(r: dict, out=None) -> None:
    out = out or sys.stdout  # looked up per call: tests and callers may swap sys.stdout
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"axon check {r['model']}: dtype {r['dtype']}, batch {r['batch']}, {'train' if r['train'] else 'inference'}"
      f"{', strict' if r['strict'] else ''}; tolerance rtol {r['tolerance']['rtol']:g} atol {r['tolerance']['atol']:g}")
    p("")
    c = r.get("op_counts", {})
    p(f"ops: {sum(c.values())} distinct (op, status): " + ", ".join(f"{n} {k}" for k, n in c.items()))
    rows = [[o["op"], o["status"] + (" (refused: --strict)" if r["strict"] and o["status"] == "host fallback" else ""),
             o["calls"], "; ".join(o["dtypes"])[:48], (o["error"] or "")[:60]] for o in r["ops"]]
    p(table(["op", "status", "calls", "dtypes", "error"], rows))
    for title, section in (("eager", r["eager"]), ("compiled", r["compiled"])):
        p("")
        status = section.get("status", "-")
        extra = section.get("reason") or section.get("error") or ""
        p(f"{title}: {status}{': ' + extra if extra else ''}")
        if section.get("outputs"):
            rows = [[o["name"], "x".join(map(str, o["shape"])) or "scalar", o["dtype"], _fmt(o["max_abs_err"]),
                     _fmt(o["max_rel_err"]), "pass" if o["pass"] else "FAIL"] for o in section["outputs"]]
            if len(rows) > 24:  # every failure, then passing rows up to 24 (--json has them all)
                fails = [x for x in rows if x[-1] == "FAIL"]
                shown = fails + [x for x in rows if x[-1] == "pass"][:max(0, 24 - len(fails))]
                hidden = len(rows) - len(shown)
                shown += [["...", f"{hidden} more passed", "", "", "", ""]] if hidden else []
            else:
                shown = rows
            p(table(["output", "shape", "dtype", "max abs err", "max rel err", "result"], shown))
            failed = sum(not o["pass"] for o in section["outputs"])
            p(f"{len(rows) - failed}/{len(rows)} outputs within tolerance")
        if section.get("left_out") is not None:
            lo = [x for x in section["left_out"] if not x["benign"]]
            benign = len(section["left_out"]) - len(lo)
            p(f"left out of the compiled graph: {len(lo) or 'nothing'}"
              + (f" (and {benign} view/getitem node(s) at partition edges, free eagerly)" if benign else ""))
            by_reason: dict[str, dict[str, int]] = {}  # reason -> op -> nodes, whatever partition it was in
            for item in lo:
                reason = re.sub(r"^in eager \w+: ", "its partition ran eagerly: ", item["reason"])
                ops = by_reason.setdefault(reason, {})
                ops[item["op"]] = ops.get(item["op"], 0) + 1
            for reason, ops in sorted(by_reason.items(), key=lambda kv: -sum(kv[1].values()))[:12]:
                listed = ", ".join(f"{op.removeprefix('aten.')} x{n}" for op, n in
                                   sorted(ops.items(), key=lambda kv: -kv[1]))
                p(f"  {sum(ops.values())} node(s), {reason}")
                p(f"      {listed if len(listed) <= 110 else listed[:107] + '...'}")
            if len(by_reason) > 12:
                p(f"  ... {len(by_reason) - 12} more reasons (see --json)")
    p("")
    if r["passed"]:
        p("PASS")
    else:
        p(f"FAIL: {len(r['failures'])} problem(s)")
        for f in r["failures"][:20]:
            p(f"  {f}")


def command(args) -> int:
    batch = positive_int("batch", args.batch) if args.batch is not None else None
    parse_dtype(args.dtype)
    tty = sys.stderr.isatty()
    progress = (lambda msg: print(f"... {msg}", file=sys.stderr, flush=True)) if tty else None
    report = run(args.model, args.dtype, batch, args.strict, args.train, progress)
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
    return 0 if report["passed"] else 1

"""One backend of `axon bench`, in a process of its own (`python -m torch_axon.cli.worker JSON`): a fresh process
makes the first compiled call really cold (empty in-memory caches; the on-disk cache directory is the parent's
choice), and its peak RSS and device memory belong to that backend alone.

Protocol on stdout: lines `@@progress DONE TOTAL PHASE` while it runs, then one `@@result JSON`. A failure is a
result with "error" (one line), never a traceback on stdout.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings


def _emit(kind: str, payload: str) -> None:
    sys.stdout.write(f"@@{kind} {payload}\n")
    sys.stdout.flush()


def _percentile(sorted_ms: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted samples."""
    if len(sorted_ms) == 1:
        return sorted_ms[0]
    pos = (len(sorted_ms) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_ms) - 1)
    return sorted_ms[lo] + (sorted_ms[hi] - sorted_ms[lo]) * (pos - lo)


def run(job: dict) -> dict:
    import torch

    import torch_axon  # noqa: F401  (registers the device)
    from torch_axon.cli import presets, steps
    from torch_axon.cli.common import CliError, compiled_backend_status, parse_dtype

    torch.set_num_threads(job["threads"])
    device, backend = job["device"], job["backend"]  # backend: None (eager), "axon" or "inductor"
    dtype = parse_dtype(job["dtype"])
    result: dict = {}
    t0 = time.perf_counter()
    try:
        spec = presets.load(job["model"], job["batch"])
    except CliError as e:
        return {"error": str(e)}
    model = spec.model.to(dtype).to(device)
    args, kwargs = spec.inputs_to(device, dtype)
    steps.sync(device)
    result["load_ms"] = (time.perf_counter() - t0) * 1e3
    result["batch"], result["tokens"] = spec.batch, spec.tokens
    if device == "axon":
        torch.axon.reset_peak_memory_stats()
    if backend == "axon":
        compiled_backend_status()  # imports torch_axon.compile, which registers the backend
    torch._dynamo.reset()
    fn = model if backend is None else torch.compile(model, backend=backend)
    step = steps.Step(model, fn, args, kwargs, job["train"], device)

    total = 1 + (0 if job["mode"] == "start" else job["warmup"] + job["steps"])
    _emit("progress", f"0 {total} first call")
    t0 = time.perf_counter()
    step()
    result["first_call_ms"] = (time.perf_counter() - t0) * 1e3
    _emit("progress", f"1 {total} {'done' if total == 1 else 'warm-up'}")
    if job["mode"] == "start":
        return result
    for i in range(job["warmup"]):
        step()
        _emit("progress", f"{2 + i} {total} warm-up")
    if backend == "axon":
        # Steady state: tier 1 compiles the fused groups' C in the background, a C compiler taking a core meanwhile;
        # the timed steps start once it is in, as they would for a user some seconds later.
        import torch_axon.compile as tc

        tc.tier1_groups(wait=True)
    samples, errors, first_error = [], 0, None
    for i in range(job["steps"]):
        t0 = time.perf_counter()
        try:
            step()
        except torch.OutOfMemoryError:
            raise
        except Exception as e:  # counted, and the run goes on: a flaky step is a figure to report
            errors += 1
            first_error = first_error or " ".join(str(e).split())[:200]
            continue
        samples.append((time.perf_counter() - t0) * 1e3)
        _emit("progress", f"{2 + job['warmup'] + i} {total} timed")
    result["errors"], result["first_error"] = errors, first_error
    result["samples_ms"] = samples
    if samples:
        s = sorted(samples)
        mean = sum(s) / len(s)
        result["latency_ms"] = {"p50": _percentile(s, 0.5), "p90": _percentile(s, 0.9), "p99": _percentile(s, 0.99),
                                "mean": mean, "min": s[0], "max": s[-1]}
    if device == "axon":
        result["peak_device_memory"] = torch.axon.max_memory_allocated()
    # ru_maxrss is KiB on Linux: the process's peak resident set, model and runtime included.
    result["host_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return result


def main() -> int:
    warnings.simplefilter("ignore")
    job = json.loads(sys.argv[1])
    try:
        from torch_axon.cli.common import one_line

        result = run(job)
    except Exception as e:
        import torch

        kind = "out of device memory: " if isinstance(e, torch.OutOfMemoryError) else ""
        result = {"error": kind + one_line(e)}
    _emit("result", json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # skip interpreter teardown: the figures are out, and compiled state can be slow to free


if __name__ == "__main__":
    sys.exit(main())

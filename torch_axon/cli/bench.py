"""`axon bench MODEL`: axon eager, axon compiled, CPU eager and CPU Inductor at the same batch, dtype and thread
count, in one run.

Each backend runs in a fresh worker process (worker.py) with an empty compile cache directory: its first call is
the cold start (compile included). Compiled backends then run a second process on the same cache directory: its
first call is the warm-cache start. Compile time = first call - steady p50 (cold and warm). Steady state: p50, p90,
p99 and mean over --steps timed steps after --warmup untimed ones; throughput = batch (or tokens) / mean latency;
cost per 1,000 tasks (a task = one sample of the batch) = price per hour / 3600 * 1000 / samples per second.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from torch_axon.cli import presets
from torch_axon.cli.common import (CliError, compiled_backend_status, parse_dtype, positive_int, price,
                                   size, table)
from torch_axon.cli.progress import Bar

# name -> (device, torch.compile backend or None for eager)
BACKENDS = {"axon-eager": ("axon", None), "axon-compiled": ("axon", "axon"), "cpu-eager": ("cpu", None),
            "cpu-inductor": ("cpu", "inductor")}


def parse_backends(text: str) -> list[str]:
    if text.strip() == "all":
        return list(BACKENDS)
    names = [b.strip() for b in text.split(",") if b.strip()]
    bad = [b for b in names if b not in BACKENDS]
    if bad or not names:
        raise CliError(f"unknown backend {', '.join(bad) or repr(text)}: choose from {', '.join(BACKENDS)} or all")
    return list(dict.fromkeys(names))


def _worker(job: dict, env: dict, bar: Bar, label: str, timeout: float) -> dict:
    cmd = [sys.executable, "-m", "torch_axon.cli.worker", json.dumps(job)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bar.update(label, 0, 1, "starting")  # importing torch and building the model come first
    result = None
    deadline = time.monotonic() + timeout
    try:
        for line in proc.stdout:
            if line.startswith("@@progress "):
                done, total, phase = line.split(" ", 3)[1:]
                bar.update(label, int(done), int(total), phase.strip())
            elif line.startswith("@@result "):
                result = json.loads(line[len("@@result "):])
            if time.monotonic() > deadline:
                proc.kill()
                return {"error": f"timed out after {timeout:.0f} s"}
        err = proc.stderr.read()
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        return {"error": f"timed out after {timeout:.0f} s"}
    if result is None:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        return {"error": f"worker exited with status {proc.returncode}: {lines[-1] if lines else 'no output'}"}
    return result


def run(model: str, dtype: str = "float32", batch: int | None = None, train: bool = False, steps: int = 20,
        warmup: int = 3, backends: list[str] | None = None, price_per_hour: float | None = None, warm: bool = True,
        threads: int | None = None, timeout: float = 1800.0, bar: Bar | None = None) -> dict:
    bar = bar or Bar(enabled=False)
    backends = backends or list(BACKENDS)
    threads = threads or os.cpu_count() or 1
    compiled_ok, compiled_reason = compiled_backend_status()
    env_base = dict(os.environ, AXON_THREADS=str(threads), TORCHINDUCTOR_FX_GRAPH_CACHE="1",
                    TORCHINDUCTOR_AUTOGRAD_CACHE="1")
    # One place to find out what this run measured.
    from importlib import metadata

    from torch_axon.cli.info import PINNED, _git_commit

    pins = {}
    for name in PINNED:
        try:
            pins[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    pins["torch_axon_commit"] = _git_commit()
    report = {"schema": "axon-bench/1", "model": model, "dtype": dtype, "batch": batch, "train": train,
              "steps": steps, "warmup": warmup, "threads": threads, "price_per_hour": price_per_hour,
              "tokens_per_call": None, "versions": pins, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "load_average": os.getloadavg()[0], "backends": []}
    for name in backends:
        device, backend = BACKENDS[name]
        row: dict = {"name": name, "device": device, "compiler": backend}
        report["backends"].append(row)
        if backend == "axon" and not compiled_ok:
            row.update(status="not available", reason=compiled_reason)
            continue
        job = {"model": model, "dtype": dtype, "batch": batch, "train": train, "steps": steps, "warmup": warmup,
               "threads": threads, "device": device, "backend": backend, "mode": "steady"}
        with tempfile.TemporaryDirectory(prefix="axon-bench-cache-") as cache:
            env = dict(env_base, TORCHINDUCTOR_CACHE_DIR=cache, AXON_CACHE_DIR=cache)
            res = _worker(job, env, bar, f"{name} (cold)" if backend else name, timeout)
            if "error" not in res and backend and warm:
                again = _worker(dict(job, mode="start"), env, bar, f"{name} (warm cache)", timeout)
                if "error" in again:
                    res["warm_error"] = again["error"]
                else:
                    res["warm_first_call_ms"] = again["first_call_ms"]
        bar.done()
        if "error" in res:
            row.update(status="error", error=res["error"])
            continue
        row.update(status="ok", **res)
        _derive(row, price_per_hour)
        report["batch"] = report["batch"] or res.get("batch")
        report["tokens_per_call"] = report["tokens_per_call"] or res.get("tokens")
    return report


def _derive(row: dict, price_per_hour: float | None) -> None:
    """Compile times, throughput and cost from a worker's raw figures."""
    lat = row.get("latency_ms")
    if not lat:
        row["status"] = "error"
        row["error"] = f"every timed step failed: {row.get('first_error')}"
        return
    p50 = lat["p50"]
    if row["compiler"]:
        row["cold_compile_ms"] = max(0.0, row["first_call_ms"] - p50)
        if "warm_first_call_ms" in row:
            row["warm_compile_ms"] = max(0.0, row["warm_first_call_ms"] - p50)
    per_s = 1e3 / lat["mean"]
    row["throughput"] = {"calls_per_s": per_s,
                         "samples_per_s": per_s * row["batch"] if row.get("batch") else None,
                         "tokens_per_s": per_s * row["tokens"] if row.get("tokens") else None}
    sps = row["throughput"]["samples_per_s"] or per_s
    row["cost_per_1000_tasks"] = price_per_hour / 3600.0 * 1000.0 / sps if price_per_hour is not None else None


def _ms(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def _rate(x) -> str:
    return "-" if x is None else f"{x:.1f}" if x < 1000 else f"{x:,.0f}"


def print_report(r: dict, out=None) -> None:
    out = out or sys.stdout  # looked up per call: tests and callers may swap sys.stdout
    p = lambda *a: print(*a, file=out)  # noqa: E731
    unit = "tokens/s" if r["tokens_per_call"] else "samples/s"
    p(f"axon bench {r['model']}: {r['dtype']}, batch {r['batch']}, {'train step' if r['train'] else 'inference'}, "
      f"{r['steps']} timed steps after {r['warmup']} warm-up, {r['threads']} threads; times in ms")
    rows = []
    for b in r["backends"]:
        if b["status"] != "ok":
            rows.append([b["name"], b["status"] + ": " + (b.get("reason") or b.get("error") or "")])
            continue
        lat, tp = b["latency_ms"], b["throughput"]
        rows.append([
            b["name"], _ms(b.get("cold_compile_ms")), _ms(b.get("warm_compile_ms")), _ms(lat["p50"]), _ms(lat["p90"]),
            _ms(lat["p99"]), _rate(tp["tokens_per_s"] if r["tokens_per_call"] else tp["samples_per_s"]),
            size(b.get("peak_device_memory")), size(b.get("host_rss")), b.get("errors", 0),
            "-" if b.get("cost_per_1000_tasks") is None else f"${b['cost_per_1000_tasks']:.6f}"])
    header = ["backend", "cold compile", "warm compile", "p50", "p90", "p99", unit, "peak dev mem", "host RSS",
              "errors", "$/1000 tasks"]
    # Rows that failed span the table: print them after the aligned ones.
    p(table(header, [x for x in rows if len(x) > 2]))
    for x in rows:
        if len(x) == 2:
            p(f"{x[0]}: {x[1]}")
    ok = {b["name"]: b for b in r["backends"] if b["status"] == "ok"}
    base = ok.get("cpu-eager")
    for name in ("axon-eager", "axon-compiled"):
        if name in ok and base:
            p(f"{name} p50 / cpu-eager p50: {ok[name]['latency_ms']['p50'] / base['latency_ms']['p50']:.2f}")
    if "axon-compiled" in ok and "cpu-inductor" in ok:
        a, i = ok["axon-compiled"], ok["cpu-inductor"]
        p(f"axon-compiled p50 / cpu-inductor p50: {a['latency_ms']['p50'] / i['latency_ms']['p50']:.2f}")
    if r["price_per_hour"] is not None:
        p(f"cost: ${r['price_per_hour']:g}/hour; a task is one sample of the batch")


def command(args) -> int:
    dtype = str(parse_dtype(args.dtype)).removeprefix("torch.")  # bf16 -> bfloat16 in the table and JSON
    batch = positive_int("batch", args.batch) if args.batch is not None else None
    steps = positive_int("steps", args.steps)
    if not str(args.warmup).isdigit():
        raise CliError(f"invalid warmup {args.warmup!r}: expected a non-negative integer")
    warmup = int(args.warmup)
    pph = price(args.price_per_hour)
    backends = parse_backends(args.backends)
    for path in (args.json, args.report):
        if path and path != "-" and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise CliError(f"cannot write {path}: no such directory")
    # Resolve MODEL here, so that an unknown preset or a broken factory is one error, not one per backend.
    if args.model not in presets.PRESETS:
        presets.load(args.model, batch)
    threads = positive_int("threads", args.threads) if args.threads is not None else None
    report = run(args.model, dtype, batch, args.train, steps, warmup, backends, pph, not args.no_warm,
                 threads=threads, bar=Bar(enabled=sys.stderr.isatty()))
    if args.json == "-":
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2)
    if args.report:
        from torch_axon.cli import report as html

        with open(args.report, "w") as f:
            f.write(html.render(report))
        if args.json != "-":
            print(f"report: {args.report}")
    failed = [b for b in report["backends"] if b["status"] == "error"]
    if failed:
        print("axon bench: error: " + "; ".join(f"{b['name']}: {b['error'].splitlines()[0]}" for b in failed),
              file=sys.stderr)
        return 1
    return 0

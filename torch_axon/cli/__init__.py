"""`axon`: the evaluation checklist as one command (info, presets, check, bench, trace). See docs/cli.md."""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from torch_axon.cli.common import CliError, one_line

BACKENDS = ["axon-eager", "axon-compiled", "cpu-eager", "cpu-inductor"]


def _model_args(p: argparse.ArgumentParser, batch_help: str = "samples per call (default: the preset's)") -> None:
    p.add_argument("model", metavar="MODEL", help="a preset (see `axon presets`) or package.module:factory")
    p.add_argument("--dtype", default="float32", help="float32 (default), bfloat16, float16 or float64")
    p.add_argument("--batch", default=None, help=batch_help)
    p.add_argument("--train", action="store_true", help="forward + backward (check: compare gradients too)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="axon", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    s = sub.add_parser("info", help="devices, memory, threads, CPU, compiler, cache and the versions to pin")
    s.add_argument("--json", action="store_true", help="print the pin manifest as JSON")

    s = sub.add_parser("presets", help="list the built-in models")
    s.add_argument("--json", action="store_true")

    s = sub.add_parser("check", help="ops (native, fallback, unsupported, out of the graph) and numerics vs CPU")
    _model_args(s)
    s.add_argument("--strict", action="store_true", help="refuse the host fallback: such ops fail the check")
    s.add_argument("--json", metavar="FILE", help="write the report as JSON ('-' for stdout)")

    s = sub.add_parser("bench", help="axon eager/compiled vs CPU eager/Inductor: compile, latency, memory, cost")
    _model_args(s)
    s.add_argument("--steps", default="20", help="timed steps per backend (default 20)")
    s.add_argument("--warmup", default="3", help="untimed steps after the first call (default 3)")
    s.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated subset of " + ",".join(BACKENDS))
    s.add_argument("--price-per-hour", default=None, metavar="USD", help="machine price, for cost per 1000 tasks")
    s.add_argument("--no-warm", action="store_true", help="skip the warm-cache compile measurement")
    s.add_argument("--threads", default=None, help="threads for every backend (default: all CPUs)")
    s.add_argument("--json", metavar="FILE", help="write the results as JSON ('-' for stdout)")
    s.add_argument("--report", metavar="FILE.html", help="write a self-contained HTML report with plots")

    s = sub.add_parser("trace", help="a Chrome trace of the device's kernels for one step")
    _model_args(s)
    s.add_argument("-o", "--output", default="trace.json", help="the trace file (default trace.json)")
    return p


def _run(args) -> int:
    if args.command == "info":
        from torch_axon.cli import info

        return info.command(args)
    if args.command == "presets":
        from torch_axon.cli import presets

        return presets.command(args)
    if args.command == "check":
        from torch_axon.cli import check

        return check.command(args)
    if args.command == "bench":
        from torch_axon.cli import bench

        return bench.command(args)
    if args.command == "trace":
        from torch_axon.cli import trace

        return trace.command(args)
    raise AssertionError(args.command)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Op-level warnings (e.g. each host fallback) are what `check` reports in its table; in the terminal they are noise.
    with warnings.catch_warnings():
        if not os.environ.get("AXON_CLI_WARNINGS"):
            warnings.simplefilter("ignore")
        return _main(args)


def _main(args) -> int:
    try:
        return _run(args)
    except CliError as e:
        print(f"axon {args.command}: error: {e}", file=sys.stderr)
        return e.code
    except BrokenPipeError:  # `axon info --json | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"axon {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # the promise is one line, never a traceback; AXON_CLI_DEBUG=1 shows it
        if os.environ.get("AXON_CLI_DEBUG"):
            raise
        import torch

        if isinstance(e, torch.OutOfMemoryError):
            print(f"axon {args.command}: error: the model does not fit in device memory: {one_line(e)}",
                  file=sys.stderr)
        else:
            print(f"axon {args.command}: error: {one_line(e)} (AXON_CLI_DEBUG=1 shows the traceback)",
                  file=sys.stderr)
        return 1

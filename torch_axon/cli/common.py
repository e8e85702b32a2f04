"""What every `axon` subcommand shares: the user-facing error, dtype names and tolerances, output flattening, the
compiled backend's availability, sizes and tables."""

from __future__ import annotations

import math
import sys


class CliError(Exception):
    """A problem the user can fix (bad argument, unknown preset, a factory that raised, a model too big for the
    device): `axon` prints its message as one line on stderr and exits with `code`, never with a traceback."""

    def __init__(self, message: str, code: int = 2):
        super().__init__(message)
        self.code = code


def one_line(e: BaseException) -> str:
    """An exception as one line: its type when the message says nothing, else the message's first non-empty line."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0]}" if lines else type(e).__name__


DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16", "bf16": "bfloat16",
          "float16": "float16", "fp16": "float16", "half": "float16", "float64": "float64", "fp64": "float64"}

# (rtol, atol) of an axon result against PyTorch CPU in the same dtype: outputs pass when every element satisfies
# |axon - cpu| <= atol + rtol * |cpu| (torch.allclose). Whole models sum in another order than CPU's kernels, so the
# float32 bound is a few ulps of accumulated rounding, and half types about one rounding of the output dtype.
TOLERANCES = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9), "bfloat16": (2e-2, 2e-2), "float16": (1e-2, 1e-2)}
# Gradients cancel (sums of products of both signs): twice the output tolerance, and an atol relative to the
# largest gradient of the tensor (see check.compare).
GRAD_FACTOR = 2.0


def parse_dtype(name: str):
    import torch

    key = DTYPES.get(name.lower())
    if key is None:
        raise CliError(f"unknown dtype {name!r}: use one of float32, bfloat16, float16, float64")
    return getattr(torch, key)


def positive_int(what: str, value) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise CliError(f"invalid {what} {value!r}: expected a positive integer") from None
    if n < 1:
        raise CliError(f"invalid {what} {value!r}: expected a positive integer")
    return n


def price(value) -> float | None:
    if value is None:
        return None
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise CliError(f"invalid price per hour {value!r}: expected a non-negative number of USD") from None
    if not math.isfinite(p) or p < 0:
        raise CliError(f"invalid price per hour {value!r}: expected a non-negative number of USD")
    return p


def flatten(obj, prefix: str = "out") -> list[tuple[str, object]]:
    """The tensors of a model's output (a tensor, tuple/list, dict or Hugging Face ModelOutput) as (name, tensor)."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [(prefix, obj)]
    if isinstance(obj, dict):  # ModelOutput is an OrderedDict
        return [p for k, v in obj.items() for p in flatten(v, f"{prefix}.{k}")]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in flatten(v, f"{prefix}[{i}]")]
    return []  # None, ints, caches without tensors: nothing to compare


def compiled_backend_status() -> tuple[bool, str]:
    """(available, reason): whether torch.compile(backend="axon") is registered in this process."""
    import torch

    try:
        import torch_axon.compile  # noqa: F401  (registers the backend once it exists)
    except ImportError as e:
        if "torch_axon.compile" not in str(e):
            return False, f"torch_axon.compile failed to import: {one_line(e)}"
    except Exception as e:  # a half-landed compiler must not take the whole CLI down
        return False, f"torch_axon.compile failed to import: {one_line(e)}"
    if "axon" in torch._dynamo.list_backends():
        return True, "registered"
    return False, 'torch.compile backend "axon" is not registered (the compiler is not installed): eager only'


def size(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def table(header: list[str], rows: list[list]) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(c) for c in col) for col in zip(header, *cells)] if cells else [len(h) for h in header]
    line = lambda cs: "  ".join(c.ljust(w) for c, w in zip(cs, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in cells])


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)

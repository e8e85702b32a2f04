"""Every aten op a model runs, with its dtypes and shapes, and how axon ran it: native kernel, host fallback,
unsupported (it raised), or on CPU tensors (never reached axon).

A TorchDispatchMode sees each op below autograd (so composite ops arrive already decomposed, as the device sees
them). Whether an op took the host fallback is read from torch_axon's fallback counters around the call: the
fallback runs the whole op on the host, so nothing inside it is counted twice.
"""

from __future__ import annotations

import dataclasses

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

import torch_axon

NATIVE, FALLBACK, UNSUPPORTED, CPU = "native", "host fallback", "unsupported", "cpu"


@dataclasses.dataclass
class OpRecord:
    op: str
    dtypes: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    status: str
    calls: int = 0
    error: str | None = None

    def as_json(self) -> dict:
        return {"op": self.op, "dtypes": list(self.dtypes), "shapes": [list(s) for s in self.shapes],
                "status": self.status, "calls": self.calls, "error": self.error}


def _dtype(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def _on_axon(args, kwargs) -> bool:
    for x in tree_leaves((args, kwargs)):
        if isinstance(x, torch.Tensor) and x.device.type == "axon":
            return True
        if isinstance(x, torch.device) and x.type == "axon":
            return True
    dev = kwargs.get("device")
    return isinstance(dev, str) and dev.startswith("axon")


class OpRecorder(TorchDispatchMode):
    """Use as a context manager around a model call; `records` maps (op, dtypes, shapes) to its OpRecord."""

    def __init__(self):
        super().__init__()
        self.records: dict[tuple, OpRecord] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [x for x in tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        # str(func) is "aten.addmm.default": namespace, op and overload
        key = (str(func), tuple(_dtype(t.dtype) for t in tensors), tuple(tuple(t.shape) for t in tensors))
        on_axon = _on_axon(args, kwargs)
        before = torch_axon._C._fallback_counts() if on_axon else None
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            rec = self.records.setdefault(key, OpRecord(key[0], key[1], key[2], UNSUPPORTED))
            rec.status, rec.error = UNSUPPORTED, " ".join(str(e).split())[:300]
            rec.calls += 1
            raise
        if not on_axon:
            on_axon = any(isinstance(x, torch.Tensor) and x.device.type == "axon" for x in tree_leaves(out))
            status = NATIVE if on_axon else CPU  # a factory op (no tensor inputs) that made an axon tensor
        else:
            status = FALLBACK if torch_axon._C._fallback_counts() != before else NATIVE
        rec = self.records.setdefault(key, OpRecord(key[0], key[1], key[2], status))
        if status == FALLBACK:  # the worst status seen for this signature wins
            rec.status = FALLBACK
        rec.calls += 1
        return out


def by_op(records) -> list[dict]:
    """One row per (op, status): calls, the dtype signatures seen and one example of shapes."""
    rows: dict[tuple, dict] = {}
    for r in records:
        row = rows.setdefault((r.op, r.status), {"op": r.op, "status": r.status, "calls": 0, "dtypes": [],
                                                 "example_shapes": [list(s) for s in r.shapes], "error": r.error})
        row["calls"] += r.calls
        sig = ",".join(r.dtypes) or "-"
        if sig not in row["dtypes"]:
            row["dtypes"].append(sig)
        row["error"] = row["error"] or r.error
    order = {UNSUPPORTED: 0, FALLBACK: 1, NATIVE: 2, CPU: 3}
    return sorted(rows.values(), key=lambda r: (order[r["status"]], r["op"]))

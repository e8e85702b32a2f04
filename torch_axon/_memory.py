"""Memory functions of torch.axon, with torch.cuda's names and meanings, over libaxon's caching allocator (reached
through torch.accelerator, which asks the registered c10::DeviceAllocator).

As in torch.cuda, the statistics never start the runtime: before it starts they report nothing (zeros), so logging
memory use before a fork leaves the fork safe. mem_get_info and set_per_process_memory_fraction do start it."""

from __future__ import annotations

import collections
from typing import Any

import torch

from torch_axon import _C
from torch_axon._device import _get_device_index, _lazy_init


def _index(device) -> int:
    return _get_device_index(device)


def _started_index(device) -> int:
    _lazy_init()
    return _get_device_index(device)


def memory_stats(device=None) -> dict[str, Any]:
    """A flat, sorted dict of the allocator's statistics ("allocated_bytes.all.current", "num_ooms", ...)."""
    return collections.OrderedDict(sorted(torch.accelerator.memory_stats(_index(device)).items()))


def memory_stats_as_nested_dict(device=None) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for key, value in memory_stats(device).items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return nested


def memory_allocated(device=None) -> int:
    """Bytes occupied by tensors on the device."""
    return torch.accelerator.memory_allocated(_index(device))


def max_memory_allocated(device=None) -> int:
    return torch.accelerator.max_memory_allocated(_index(device))


def memory_reserved(device=None) -> int:
    """Bytes held by the caching allocator (tensors plus cache)."""
    return torch.accelerator.memory_reserved(_index(device))


def max_memory_reserved(device=None) -> int:
    return torch.accelerator.max_memory_reserved(_index(device))


def reset_peak_memory_stats(device=None) -> None:
    torch.accelerator.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device=None) -> None:
    torch.accelerator.reset_accumulated_memory_stats(_index(device))


def reset_max_memory_allocated(device=None) -> None:
    reset_peak_memory_stats(device)


def empty_cache() -> None:
    """Release every cached, unused block of every device."""
    if _C._is_initialized():
        torch.accelerator.empty_cache()


def mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of the device: total is its capacity, free what is not reserved."""
    return torch.accelerator.get_memory_info(_started_index(device))


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Limit the device's capacity to `fraction` of its configured size (AXON_DEVICE_MEMORY)."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    index = _started_index(device)
    if index not in _configured_capacity:  # the fraction is always of the capacity the device started with
        _configured_capacity[index] = _C._device_properties(index)["total_memory"]
    _C._set_memory_capacity(index, max(1, int(_configured_capacity[index] * fraction)))


_configured_capacity: dict[int, int] = {}


def host_memory_stats() -> dict[str, Any]:
    """A flat, sorted dict of the pinned host allocator's statistics, named as torch.cuda.host_memory_stats names them
    ("allocations.current", "allocated_bytes.peak", "active_requests.current", "active_bytes.current",
    "num_host_alloc", "num_host_free")."""
    flat = []
    for key, value in _C._host_memory_stats().items():
        if isinstance(value, dict):
            flat.extend((f"{key}.{k}", v) for k, v in value.items())
        else:
            flat.append((key, value))
    return collections.OrderedDict(sorted(flat))


def _format_size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A readable table of the allocator's statistics, like torch.cuda.memory_summary."""
    stats = memory_stats(device)
    index = _index(device)
    rows = [
        ("Allocated memory", "allocated_bytes", True),
        ("Active memory", "active_bytes", True),
        ("Requested memory", "requested_bytes", True),
        ("Reserved memory", "reserved_bytes", True),
        ("Non-releasable memory", "inactive_split_bytes", True),
        ("Allocations", "allocation", False),
        ("Active allocs", "active", False),
        ("Segments", "segment", False),
    ]
    pools = ("all",) if abbreviated else ("all", "small_pool", "large_pool")
    lines = [
        "=" * 75,
        f" axon memory summary, device axon:{index}  (OOMs: {stats.get('num_ooms', 0)}, "
        f"allocation retries: {stats.get('num_alloc_retries', 0)})",
        "-" * 75,
        f" {'Metric':<24}{'Cur Usage':>12}{'Peak Usage':>12}{'Tot Alloc':>13}{'Tot Freed':>13}",
        "-" * 75,
    ]
    for title, key, is_bytes in rows:
        for pool in pools:
            fmt = _format_size if is_bytes else str
            vals = [stats.get(f"{key}.{pool}.{k}", 0) for k in ("current", "peak", "allocated", "freed")]
            label = title if pool == "all" else f"  from {pool.replace('_', ' ')}"
            lines.append(f" {label:<24}" + "".join(f"{fmt(v):>12} " for v in vals))
    lines.append("=" * 75)
    return "\n".join(lines) + "\n"

"""Counters of the axon torch.compile backend, for tests and for seeing how much of a model runs compiled."""

from __future__ import annotations

import threading

_lock = threading.Lock()
_KEYS = ("graphs", "partitions", "programs", "eager_partitions", "eager_graphs", "program_calls")
_counts = dict.fromkeys(_KEYS, 0)


def bump(key: str, n: int = 1) -> None:
    with _lock:
        _counts[key] += n


def stats() -> dict[str, int]:
    """graphs: FX graphs compiled (forward, backward, inference each count); partitions: supported partitions found;
    programs: partitions compiled into libaxon programs; eager_partitions: partitions that run eagerly because
    lowering or the C compiler refused them; eager_graphs: graphs that run wholly eagerly after an unexpected error;
    program_calls: runs of compiled programs."""
    with _lock:
        return dict(_counts)


def reset_stats() -> None:
    with _lock:
        for k in _counts:
            _counts[k] = 0

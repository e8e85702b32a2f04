"""Timing shared by the Python benchmarks that compare axon with torch CPU op by op."""

from __future__ import annotations

import time

import torch


def best_us(fn, device: str, reps: int, rounds: int = 5) -> float:
    """Microseconds per call of fn(): the best of `rounds` timings of `reps` back-to-back calls, the axon device
    synchronized before and after each timing (fn is called once first, outside them)."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        if device != "cpu":
            torch.axon.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        if device != "cpu":
            torch.axon.synchronize()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6

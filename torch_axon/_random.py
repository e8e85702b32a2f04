"""RNG functions of torch.axon: per-device Philox generators with CUDA's 16-byte state (seed, offset).
Seeding never starts the runtime, so torch.manual_seed before a fork is safe."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from torch_axon import _C
from torch_axon._device import _get_device_index, device_count


def _generator(device=None) -> torch.Generator:
    return _C._default_generator(_get_device_index(device))


def get_rng_state(device="axon") -> torch.Tensor:
    """The device generator's state: a CPU uint8 tensor of 16 bytes (seed, offset)."""
    return _generator(device).get_state()


def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state(new_state: torch.Tensor, device="axon") -> None:
    _generator(device).set_state(new_state.clone(memory_format=torch.contiguous_format))


def set_rng_state_all(new_states: Iterable[torch.Tensor]) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


def manual_seed(seed: int) -> None:
    """Seed the current device's generator."""
    _generator().manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed every device's generator."""
    for i in range(device_count()):
        _generator(i).manual_seed(int(seed))


def seed() -> None:
    """Seed the current device's generator with a non-deterministic random number."""
    _generator().seed()


def seed_all() -> None:
    """Seed every device with one non-deterministic random number, the same for all."""
    s = _generator(0).seed()
    for i in range(1, device_count()):
        _generator(i).manual_seed(s)


def initial_seed() -> int:
    """The current device generator's seed."""
    return _generator().initial_seed()

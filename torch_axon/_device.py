"""Device management for torch.axon: availability, the current device, properties and synchronization.

Counting devices and choosing one never starts the runtime (no threads), so they are safe before a fork, as CUDA's
are; the runtime starts on the first real use (a tensor, a stream, synchronize) or on torch.axon.init().
"""

from __future__ import annotations

import torch

from torch_axon import _C

_DEVICE_TYPE = "axon"


def _lazy_init() -> None:
    """Start the runtime if needed; refuse in a child forked after it started, as CUDA does."""
    if _C._in_bad_fork():
        raise RuntimeError(
            "Cannot re-initialize axon in forked subprocess. To use axon with multiprocessing, you must use the "
            "'spawn' start method"
        )
    _C._init()


def init() -> None:
    """Initialize the axon runtime (idempotent)."""
    _lazy_init()


def is_initialized() -> bool:
    """Whether the runtime has started in this process."""
    return _C._is_initialized()


def _is_in_bad_fork() -> bool:
    return _C._in_bad_fork()


def is_available() -> bool:
    """Whether axon can be used: at least one device is configured."""
    return device_count() > 0


def device_count() -> int:
    """Number of axon devices (AXON_DEVICE_COUNT, or LOCAL_WORLD_SIZE under torchrun); 0 if misconfigured."""
    return _C._device_count()


def _get_device_index(device, optional: bool = True) -> int:
    """Index of an axon device given as int, "axon", "axon:1" or torch.device; None means the current device."""
    if device is None:
        if optional:
            return current_device()
        raise ValueError("Expected an axon device, got None")
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != _DEVICE_TYPE:
            raise ValueError(f"Expected an axon device, but got: {device}")
        return current_device() if device.index is None else device.index
    raise TypeError(f"Expected an int, str or torch.device for an axon device, got {type(device).__name__}")


def current_device() -> int:
    """Index of the calling thread's current axon device."""
    return _C._get_device()


def set_device(device) -> None:
    """Set the calling thread's current axon device. A negative index is ignored, as in torch.cuda."""
    index = _get_device_index(device)
    if index >= 0:
        _C._set_device(index)


class device:
    """Context manager that makes `device` current and restores the previous one on exit."""

    def __init__(self, device):
        self.idx = _get_device_index(device, optional=True) if device is not None else -1
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = current_device()
        if self.idx >= 0 and self.idx != self.prev_idx:
            _C._set_device(self.idx)

    def __exit__(self, *exc) -> bool:
        if self.idx >= 0 and self.idx != self.prev_idx:
            _C._set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager that makes the device of tensor `obj` current (a no-op for CPU tensors)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == _DEVICE_TYPE else None)


def synchronize(device=None) -> None:
    """Wait for all work queued on every stream of the device; raises the first error a kernel reported."""
    _lazy_init()
    _C._synchronize(_get_device_index(device))


class _AxonDeviceProperties:
    """What torch.axon.get_device_properties returns; the fields torch.cuda's properties have, where they apply."""

    def __init__(self, info: dict):
        self.name = info["name"]
        self.total_memory = info["total_memory"]
        self.multi_processor_count = info["threads"]
        self.major, self.minor = info["capability"]
        self.cpu_model = info["cpu_model"]
        self.cpu_features = tuple(info["cpu_features"])
        self.port = info["port"]
        self.strict = info["strict"]
        self.is_integrated = True  # device memory is host memory

    def __repr__(self) -> str:
        return (
            f"_AxonDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB, multi_processor_count={self.multi_processor_count}, "
            f"cpu_model='{self.cpu_model}')"
        )


def get_device_properties(device=None) -> _AxonDeviceProperties:
    _lazy_init()
    index = _get_device_index(device)
    count = device_count()
    if not 0 <= index < count:  # AssertionError, as torch.cuda raises
        raise AssertionError(f"Invalid device id {index} for axon: there are {count} devices")
    return _AxonDeviceProperties(_C._device_properties(index))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple[int, int]:
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """bf16 tensors are supported on every axon device (natively where the CPU has AVX512-BF16)."""
    return True


def get_amp_supported_dtype() -> list[torch.dtype]:
    """The dtypes torch.autocast("axon", dtype=...) accepts."""
    return [torch.float16, torch.bfloat16]

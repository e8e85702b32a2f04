"""torch_axon: the axon device for PyTorch, running on libaxon.

Importing torch_axon (which `import torch` does by itself once the package is installed, through the torch.backends
entry point; TORCH_DEVICE_BACKEND_AUTOLOAD=0 turns that off) registers the PrivateUse1 backend as "axon": tensors and
modules move with .to("axon"), torch.accelerator picks axon, and torch.axon offers torch.cuda's API.
"""

__version__ = "0.1.0"


def _autoload() -> None:
    """The torch.backends entry point. Defined before `import torch`: when a user imports torch_axon first, torch's
    own import autoloads this half-initialized module and calls this; the registration below then runs anyway."""


import atexit  # noqa: E402
import os  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402

from torch_axon import _C  # noqa: E402  (its static initializers register the allocator, guard, hooks, kernels, fallback)
from torch_axon import device_module as _device_module  # noqa: E402

_BACKEND = "axon"


def _register() -> None:
    # Each of these may run only once per process.
    if torch._C._get_privateuse1_backend_name() != _BACKEND:
        torch.utils.rename_privateuse1_backend(_BACKEND)
    if not hasattr(torch, _BACKEND):
        torch._register_device_module(_BACKEND, _device_module)
    if not hasattr(torch.Tensor, "is_axon"):
        torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)


_register()


def _run_backward_on_the_calling_thread() -> None:
    # PyTorch's autograd engine runs the nodes of every device but the CPU on a worker thread of that device's own, so
    # each backward call hands its graph to that thread and waits to be woken: two thread wake-ups, and the GIL passed
    # back and forth as the worker drops the graph's Python references. On a 2-core VM that was 120 us a call
    # (fwd + grad of x * 2 on [8, 8]: 174 us against torch CPU's 56). axon's kernels are already asynchronous on its
    # own streams, so the caller's thread loses nothing by walking the graph itself, as it does for CPU tensors.
    # The setting is per thread (PyTorch keeps it thread-local): this covers the thread that imported torch.
    # AXON_AUTOGRAD_DEVICE_THREADS=1 keeps PyTorch's default.
    if os.environ.get("AXON_AUTOGRAD_DEVICE_THREADS", "0") != "1":
        torch._C._set_multithreading_enabled(False)


_run_backward_on_the_calling_thread()


def _let_autograd_device_threads_settle() -> None:
    # PyTorch's autograd thread for an axon device drops the last references of a finished backward (Python objects
    # among them) just after it has woken the caller. If the interpreter starts finalizing inside that window, the
    # thread cannot take the GIL, is made to exit mid-unwind, and the process dies in std::terminate (status 134).
    # Releasing the GIL briefly before finalization closes the window; it costs nothing if axon was never used.
    if _C._is_initialized():
        time.sleep(0.02)


atexit.register(_let_autograd_device_threads_settle)


def runtime_info() -> dict:
    """What the default runtime sees, starting it from the AXON_* environment if needed.

    Returns {"version", "header_version", "device_count", "devices": [per-device dict]}; each device has name,
    cpu_model, port, threads, strict, total_memory, page_size, capability, cpu_features (names) and mem_get_info
    (free, total bytes). Raises RuntimeError with libaxon's message when the runtime cannot be created, e.g. for a
    malformed AXON_DEVICE_COUNT.
    """
    return _C.runtime_info()


def fallback_stats() -> dict[str, int]:
    """How often each op without a native axon kernel ran through the host fallback, by op name."""
    return dict(_C._fallback_counts())


def reset_fallback_stats() -> None:
    _C._reset_fallback_counts()


def set_strict(strict: bool) -> None:
    """Refuse (True) or allow (False) the host fallback; AXON_STRICT=1 sets it at start-up."""
    _C._set_strict_fallback(bool(strict))


def is_strict() -> bool:
    return _C._get_strict_fallback()


__all__ = ["__version__", "runtime_info", "fallback_stats", "reset_fallback_stats", "set_strict", "is_strict"]

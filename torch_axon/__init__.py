"""torch_axon: the axon device for PyTorch, running on libaxon.

For now only the runtime is exposed: runtime_info() tells what libaxon's process-wide runtime sees. Registering the
device with PyTorch comes later.
"""

__version__ = "0.1.0"

import torch  # noqa: F401  (loads libtorch and libtorch_python, which _C links against)

from torch_axon import _C


def runtime_info() -> dict:
    """What the default runtime sees, creating it from the AXON_* environment on the first call.

    Returns {"version", "header_version", "device_count", "devices": [per-device dict]}; each device has name,
    cpu_model, port, threads, strict, total_memory, page_size, capability, cpu_features (names) and mem_get_info
    (free, total bytes). Raises RuntimeError with libaxon's message when the runtime cannot be created, e.g. for a
    malformed AXON_DEVICE_COUNT.
    """
    return _C.runtime_info()


__all__ = ["__version__", "runtime_info"]

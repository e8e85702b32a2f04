"""Shared set-up for the torch-axon tests.

The default axon runtime is configured from the environment once per process, when it first starts, and `import
torch` already imports torch_axon (the torch.backends entry point), so the configuration is set here, before any test
module imports torch: two devices for the multi-device tests, and a capacity small enough that out-of-memory tests
stay cheap. A caller's own AXON_* settings win (setdefault).
"""

import os
import subprocess
import sys

os.environ.setdefault("AXON_DEVICE_COUNT", "2")
os.environ.setdefault("AXON_DEVICE_MEMORY", "2G")

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_axon  # noqa: E402, F401  (registers the device even with TORCH_DEVICE_BACKEND_AUTOLOAD=0)

# Seconds a test subprocess may take before the test fails: a hang is a failure, never a stuck suite.
SUBPROCESS_TIMEOUT = 120


@pytest.fixture(autouse=True)
def _restore_axon_state():
    """Give every test the current device and default streams it found, whatever the test set or raised."""
    device = torch.axon.current_device()
    yield
    if torch.axon.is_initialized():
        for i in range(torch.axon.device_count()):
            torch.accelerator.set_stream(torch.axon.default_stream(i))
    torch.axon.set_device(device)


def run_python(code: str, env: dict | None = None, timeout: float = SUBPROCESS_TIMEOUT) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter with this process's environment plus `env` (a value None removes a
    variable); returns the finished process (stdout and stderr as text)."""
    full_env = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    return subprocess.run([sys.executable, "-c", code], env=full_env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def python():
    """run_python, for tests that need a fresh interpreter (start-up, autoload, fork)."""
    return run_python

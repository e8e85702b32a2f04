"""torch_axon.runtime_info(): what libaxon's default runtime reports, configured through the AXON_* environment.

The default runtime is created once per process from the environment, so each configuration runs in a fresh
interpreter.
"""

import json
import os
import subprocess
import sys

import pytest
import torch

import torch_axon

# Variables that configure the runtime; cleared so that the caller's environment does not leak into the tests.
_RUNTIME_VARS = ("AXON_DEVICE_COUNT", "AXON_DEVICE_MEMORY", "AXON_THREADS", "AXON_STRICT", "AXON_TRACE",
                 "LOCAL_WORLD_SIZE")

_REPORT = "import json, torch_axon; print(json.dumps(torch_axon.runtime_info()))"


def _run(args, **env):
    full_env = {k: v for k, v in os.environ.items() if k not in _RUNTIME_VARS}
    full_env.update(env)
    return subprocess.run([sys.executable, *args], env=full_env, capture_output=True, text=True, timeout=300)


def _info(**env):
    proc = _run(["-c", _REPORT], **env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_runtime_info_reports_version_and_devices():
    info = torch_axon.runtime_info()
    assert info["version"] == info["header_version"]
    assert info["device_count"] >= 1
    assert len(info["devices"]) == info["device_count"]
    for i, d in enumerate(info["devices"]):
        assert d["index"] == i
        assert d["name"]
        assert d["port"] == "cpu"
        assert d["threads"] >= 1
        assert d["total_memory"] > 0
        free, total = d["mem_get_info"]
        assert total == d["total_memory"]
        assert 0 <= free <= total
        assert all(isinstance(f, str) and f for f in d["cpu_features"])


def test_device_count_comes_from_AXON_DEVICE_COUNT():
    info = _info(AXON_DEVICE_COUNT="3")
    assert info["device_count"] == 3
    assert [d["index"] for d in info["devices"]] == [0, 1, 2]
    assert len({d["name"] for d in info["devices"]}) == 3


def test_device_memory_comes_from_AXON_DEVICE_MEMORY():
    info = _info(AXON_DEVICE_COUNT="2", AXON_DEVICE_MEMORY="1G")
    for d in info["devices"]:
        assert d["total_memory"] == 1 << 30
        assert d["mem_get_info"][1] == 1 << 30


def test_malformed_device_count_raises_naming_the_variable():
    script = """
import torch_axon
for attempt in range(2):  # a failed creation is remembered and reported again
    try:
        torch_axon.runtime_info()
    except RuntimeError as e:
        print(type(e).__name__, str(e).splitlines()[0])
    else:
        print("no error")
"""
    proc = _run(["-c", script], AXON_DEVICE_COUNT="abc")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("RuntimeError ")
        assert "AXON_DEVICE_COUNT" in line
        assert "AXON_ERROR_CONFIG" in line


def test_demo_prints_the_device_table():
    proc = _run(["-m", "torch_axon"], AXON_DEVICE_COUNT="2", AXON_DEVICE_MEMORY="512M")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"torch-axon {torch_axon.__version__}" in out
    assert "torch 2.13.0" in out
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("device"))
    for word in ("name", "port", "threads", "memory", "free"):
        assert word in header
    rows = [line for line in lines if line.startswith("axon:")]
    assert [r.split()[0] for r in rows] == ["axon:0", "axon:1"]
    assert all("512.0 MiB" in r for r in rows)
    assert "cpu features:" in out


def test_demo_reports_a_runtime_that_cannot_start():
    proc = _run(["-m", "torch_axon"], AXON_DEVICE_COUNT="abc")
    assert proc.returncode == 1
    assert "AXON_DEVICE_COUNT" in proc.stderr


@pytest.mark.parametrize("value", ["0", "65"])
def test_device_count_out_of_range_is_an_error(value):
    proc = _run(["-c", _REPORT], AXON_DEVICE_COUNT=value)
    assert proc.returncode != 0
    assert "AXON_DEVICE_COUNT" in proc.stderr


def test_out_of_memory_status_raises_torch_OutOfMemoryError():
    with pytest.raises(torch.OutOfMemoryError, match="AXON_ERROR_OUT_OF_MEMORY"):
        torch_axon._C._raise_status(2)


def test_other_statuses_raise_RuntimeError_with_the_status_name():
    with pytest.raises(RuntimeError, match="AXON_ERROR_INVALID_ARG") as e:
        torch_axon._C._raise_status(1)
    assert not isinstance(e.value, torch.OutOfMemoryError)

"""torch.profiler on axon: device time per kernel from libaxon's tracing, in key_averages() and in the Chrome trace.

torch.profiler.profile(activities=[CPU, PrivateUse1]) runs Kineto with the IActivityProfiler that torch_axon registers
(AxonProfiler.cpp): each command libaxon executed during the session becomes a kernel on the "axon:N" track, one row
per stream. torch.autograd.profiler.profile(use_device="axon", use_kineto=False) is the legacy mode, which times each
op with a pair of axon events.
"""

import json
import time
import warnings

import pytest
import torch
from torch.autograd import DeviceType
from torch.autograd.profiler import record_function
from torch.profiler import ProfilerActivity, profile

import torch_axon
from axon_testing import libaxon_commands

pytestmark = pytest.mark.skipif(not torch.autograd.kineto_available(), reason="torch was built without Kineto")

ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]
N = 1 << 20  # floats: 4 MiB per tensor, enough for the kernels to take measurable time

two_devices = pytest.mark.skipif(torch.axon.device_count() < 2, reason="needs 2 axon devices (AXON_DEVICE_COUNT=2)")


@pytest.fixture(autouse=True)
def _tracing_off():
    """Each test starts and ends with libaxon tracing off and no records kept."""
    torch.axon.synchronize()
    torch_axon._C._trace_enable(False)
    torch_axon._C._trace_clear()
    yield
    torch.axon.synchronize()
    torch_axon._C._trace_enable(False)
    torch_axon._C._trace_clear()


def workload(a: torch.Tensor) -> torch.Tensor:
    """A fill, a device-to-device copy, a zero and an op without an axon kernel (the host fallback)."""
    a.fill_(1.5)
    b = a.clone()
    b.zero_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback warns once per op
        c = b * 2
    torch.axon.synchronize()
    return c


def axon_kernels(prof) -> list:
    return [e for e in prof.events() if e.device_type == DeviceType.PrivateUse1]


def export(prof, tmp_path) -> dict:
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        return json.load(f)


def kernel_events(trace: dict) -> list[dict]:
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]


def metadata(trace: dict, name: str) -> dict:
    """{(pid, tid): args["name"]} of the trace's `name` metadata events (process_name, thread_name)."""
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"]
            if e.get("ph") == "M" and e.get("name") == name}


def test_torch_profiler_picks_the_kineto_privateuse1_mode():
    assert ProfilerActivity.PrivateUse1 in torch.profiler.supported_activities()
    with profile(activities=ACTIVITIES) as prof:
        pass
    assert prof.profiler.profiler_kind == torch.autograd.ProfilerState.KINETO_PRIVATEUSE1


def test_key_averages_show_each_axon_kernel_with_device_time():
    a = torch.empty(N, device="axon")
    expected = libaxon_commands(lambda: workload(a))
    assert "memcpy" in expected  # the clone: a device-to-device copy

    with profile(activities=ACTIVITIES) as prof:
        workload(a)

    kernels = axon_kernels(prof)
    assert sorted(k.name for k in kernels) == sorted(expected)
    assert all(k.device_index == 0 and k.device_time_total > 0 for k in kernels)
    averages = {e.key: e for e in prof.key_averages()}
    for name in set(expected):
        assert averages[name].self_device_time_total > 0, name
        assert averages[name].count == expected.count(name)
    assert "aten::mul" in averages  # the fallback op is profiled on the CPU side
    assert "Self AXON" in prof.key_averages().table(sort_by="self_device_time_total")


def test_chrome_trace_puts_the_kernels_on_the_axon_track(tmp_path):
    a = torch.empty(N, device="axon")
    expected = libaxon_commands(lambda: workload(a))
    with profile(activities=ACTIVITIES) as prof:
        workload(a)

    trace = export(prof, tmp_path)
    kernels = kernel_events(trace)
    assert sorted(k["name"] for k in kernels) == sorted(expected)
    for k in kernels:
        assert (k["pid"], k["tid"]) == (0, 0)  # device 0, default stream
        assert k["dur"] > 0
        assert k["args"]["device"] == 0 and k["args"]["stream"] == 0
    assert any(k["name"] == "memcpy" and k["args"]["bytes"] == N * 4 for k in kernels)
    assert metadata(trace, "process_name")[(0, 0)] == "axon:0"
    assert metadata(trace, "thread_name")[(0, 0)] == "stream 0"


def test_kernels_lie_inside_the_window_and_the_region_that_waited_for_them(tmp_path):
    # The kernels' CLOCK_MONOTONIC stamps are converted to the Unix-epoch clock of the CPU events: a kernel launched
    # and waited for inside a region must start after its launching op starts and end before the region ends.
    a = torch.empty(N, device="axon")
    torch.axon.synchronize()
    before_ns = time.time_ns()
    with profile(activities=ACTIVITIES) as prof:
        with record_function("region"):
            a.fill_(2.0)
            torch.axon.synchronize()
    after_ns = time.time_ns()

    trace = export(prof, tmp_path)
    spans = {e["name"]: e for e in trace["traceEvents"] if e.get("ph") == "X"}
    region, launch, kernel = spans["region"], spans["aten::fill_"], kernel_events(trace)[0]
    assert launch["ts"] <= kernel["ts"]
    assert kernel["ts"] + kernel["dur"] <= region["ts"] + region["dur"]
    # "ts" is in microseconds since baseTimeNanoseconds.
    start_ns = trace["baseTimeNanoseconds"] + kernel["ts"] * 1000
    assert before_ns <= start_ns and start_ns + kernel["dur"] * 1000 <= after_ns


def test_a_stream_gets_its_own_row(tmp_path):
    a = torch.empty(N, device="axon")
    s = torch.axon.Stream()
    assert s.stream_id != 0
    with profile(activities=ACTIVITIES) as prof:
        with torch.axon.stream(s):
            a.fill_(3.0)
        torch.axon.synchronize()

    trace = export(prof, tmp_path)
    [kernel] = kernel_events(trace)
    assert (kernel["pid"], kernel["tid"]) == (0, s.stream_id)
    assert metadata(trace, "thread_name")[(0, s.stream_id)] == f"stream {s.stream_id}"


@two_devices
def test_each_device_has_its_own_track(tmp_path):
    a = torch.empty(N, device="axon:0")
    b = torch.empty(N, device="axon:1")
    with profile(activities=ACTIVITIES) as prof:
        a.fill_(1.0)
        b.fill_(1.0)
        torch.axon.synchronize(0)
        torch.axon.synchronize(1)

    assert sorted(k.device_index for k in axon_kernels(prof)) == [0, 1]
    trace = export(prof, tmp_path)
    assert sorted(k["pid"] for k in kernel_events(trace)) == [0, 1]
    names = metadata(trace, "process_name")
    assert names[(0, 0)] == "axon:0" and names[(1, 0)] == "axon:1"


def test_profiling_twice_sees_each_session_alone_and_leaves_tracing_off():
    a = torch.empty(N, device="axon")
    for fills in (1, 3):
        with profile(activities=ACTIVITIES) as prof:
            for _ in range(fills):
                a.fill_(1.0)
            torch.axon.synchronize()
        assert len(axon_kernels(prof)) == fills

        # Tracing is off again, and the session's records are not left behind in libaxon.
        a.fill_(0.0)
        torch.axon.synchronize()
        assert torch_axon._C._trace_records() == []


def test_tracing_that_was_on_stays_on_with_its_records():
    a = torch.empty(N, device="axon")
    torch_axon._C._trace_enable(True)
    a.fill_(1.0)
    torch.axon.synchronize()
    assert len(torch_axon._C._trace_records()) == 1

    with profile(activities=ACTIVITIES) as prof:
        a.fill_(2.0)
        torch.axon.synchronize()
    assert len(axon_kernels(prof)) == 1  # only what ran during the session

    a.fill_(3.0)
    torch.axon.synchronize()
    assert len(torch_axon._C._trace_records()) == 3


def test_cpu_only_profiling_shows_no_axon_kernels():
    a = torch.empty(N, device="axon")
    with profile(activities=ACTIVITIES):  # registers the axon profiler with Kineto, if no test did yet
        pass
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        a.fill_(1.0)
        torch.axon.synchronize()
    assert axon_kernels(prof) == []
    assert "aten::fill_" in {e.name for e in prof.events()}
    assert torch_axon._C._trace_records() == []


def test_legacy_mode_times_each_op_with_axon_events():
    a = torch.empty(N, device="axon")
    with torch.autograd.profiler.profile(use_device="axon", use_kineto=False) as prof:
        a.fill_(1.0)
        a.clone()
        torch.axon.synchronize()
    assert prof.profiler_kind == torch.autograd.ProfilerState.KINETO_PRIVATEUSE1_FALLBACK
    averages = {e.key: e for e in prof.key_averages()}
    assert averages["aten::fill_"].device_time_total > 0
    assert averages["aten::clone"].device_time_total > 0
    assert torch_axon._C._trace_records() == []

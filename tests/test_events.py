"""Events on axon with torch.cuda's semantics: record, query, synchronize, wait (ordering between streams) and
elapsed_time for timing events; torch.axon.Event is a torch.Event on axon."""

import time

import pytest
import torch

MiB = 1 << 20


def _queue_copies(a: torch.Tensor, b: torch.Tensor, n: int = 8) -> None:
    """Queue 2n device-to-device copies between a and b on the current stream."""
    for _ in range(n):
        b.copy_(a)
        a.copy_(b)


def _buffers(numel=4 * MiB, value=1.0, device="axon"):
    a = torch.full((numel,), value, device=device)
    b = torch.empty_like(a)
    torch.axon.synchronize()
    return a, b


def test_axon_event_is_a_torch_event_on_axon():
    e = torch.axon.Event()
    assert isinstance(e, torch.Event)
    assert e.device.type == "axon"
    t = torch.Event(device="axon", enable_timing=True)
    t.record()
    t.synchronize()
    assert t.query()
    assert t.device == torch.device("axon", 0)


def test_an_event_never_recorded_is_complete():
    e = torch.axon.Event()
    assert e.query()
    e.synchronize()  # returns at once
    e.wait(torch.axon.current_stream())  # a no-op
    assert torch.axon.current_stream().query()


def test_query_is_false_while_the_recorded_work_runs_and_true_after_synchronize():
    a, b = _buffers()
    e = torch.axon.Event()
    _queue_copies(a, b)
    e.record()
    assert not e.query()
    e.synchronize()
    assert e.query()
    assert torch.axon.current_stream().query()


def test_an_event_captures_only_the_work_queued_before_it():
    s = torch.axon.Stream()
    a, b = _buffers()
    with torch.axon.stream(s):
        e = torch.axon.Event()
        e.record()  # nothing queued yet on s
        _queue_copies(a, b)
    e.synchronize()
    assert e.query()
    assert not s.query()
    s.synchronize()


def test_re_recording_an_event_moves_it():
    a, b = _buffers()
    e = torch.axon.Event()
    e.record()
    e.synchronize()
    _queue_copies(a, b)
    e.record()
    assert not e.query()
    torch.axon.synchronize()
    assert e.query()


def test_record_on_a_given_stream():
    s = torch.axon.Stream()
    a, b = _buffers()
    with torch.axon.stream(s):
        _queue_copies(a, b)
    e = torch.axon.Event()
    e.record(s)
    assert not e.query()
    s.synchronize()
    assert e.query()


def test_wait_orders_work_across_streams():
    producer, consumer = torch.axon.Stream(), torch.axon.Stream()
    a, b = _buffers(value=0.0)
    out = torch.empty_like(a)
    with torch.axon.stream(producer):
        _queue_copies(a, b)
        b.fill_(6.0)
    e = torch.axon.Event()
    e.record(producer)
    e.wait(consumer)  # the host does not block
    assert not e.query()
    with torch.axon.stream(consumer):
        out.copy_(b)
    consumer.synchronize()
    assert e.query()
    torch.testing.assert_close(out.cpu(), torch.full((4 * MiB,), 6.0), rtol=0, atol=0)


def test_wait_orders_work_across_devices():
    a, b = _buffers(value=0.0, device="axon:1")
    s1 = torch.axon.Stream(device=1)
    with torch.axon.stream(s1):
        _queue_copies(a, b)
        e = torch.axon.Event()
        e.record()
    assert e.device == torch.device("axon", 1)
    s0 = torch.axon.current_stream(0)
    e.wait(s0)
    marker = torch.axon.Event()
    marker.record(s0)  # complete only once axon:0's stream has passed the wait
    marker.synchronize()
    assert e.query()


def test_elapsed_time_measures_the_work_between_two_events():
    a, b = _buffers()
    start, end = torch.axon.Event(enable_timing=True), torch.axon.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    _queue_copies(a, b)  # 16 copies of 16 MiB: 512 MiB of memory traffic
    end.record()
    end.synchronize()
    wall_ms = (time.perf_counter() - t0) * 1e3
    ms = start.elapsed_time(end)
    assert isinstance(ms, float)
    # No machine moves 512 MiB in under 2 ms (256 GB/s), and the device cannot take longer than the host waited.
    assert 2.0 < ms <= wall_ms + 0.5
    assert end.elapsed_time(start) == pytest.approx(-ms, abs=1e-3)


def test_elapsed_time_grows_with_the_work():
    a, b = _buffers()
    events = [torch.axon.Event(enable_timing=True) for _ in range(3)]
    events[0].record()
    _queue_copies(a, b, n=1)
    events[1].record()
    _queue_copies(a, b, n=8)
    events[2].record()
    events[2].synchronize()
    short, long = events[0].elapsed_time(events[1]), events[1].elapsed_time(events[2])
    assert 0 < short < long


def test_elapsed_time_of_events_without_timing_raises_a_clear_error():
    start, end = torch.axon.Event(), torch.axon.Event()
    start.record()
    end.record()
    end.synchronize()
    with pytest.raises(ValueError, match="enable_timing=True"):
        start.elapsed_time(end)


def test_elapsed_time_of_unrecorded_events_raises_a_clear_error():
    start, end = torch.axon.Event(enable_timing=True), torch.axon.Event(enable_timing=True)
    with pytest.raises(ValueError, match="must be recorded"):
        start.elapsed_time(end)


def test_elapsed_time_before_the_end_completes_raises():
    a, b = _buffers()
    start, end = torch.axon.Event(enable_timing=True), torch.axon.Event(enable_timing=True)
    start.record()
    _queue_copies(a, b)
    end.record()
    with pytest.raises(RuntimeError, match="must be completed"):
        start.elapsed_time(end)
    end.synchronize()
    assert start.elapsed_time(end) > 0


def test_interprocess_events_are_refused():
    with pytest.raises(ValueError, match="processes"):
        torch.axon.Event(interprocess=True)

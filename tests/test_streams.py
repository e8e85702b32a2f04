"""Streams on axon with torch.cuda's semantics: creation and priorities, the current and default streams, the stream()
context manager, ordering between streams (wait_stream), query/synchronize, record_stream's protection of memory used
on a side stream, and streams of the second device.

Work that must still be queued when a test looks is a chain of 16 MiB device-to-device copies (tens of milliseconds
on this machine), which libaxon runs asynchronously in stream order."""

import pytest
import torch

import torch_axon

MiB = 1 << 20


def _queue_copies(a: torch.Tensor, b: torch.Tensor, n: int = 8) -> None:
    """Queue 2n device-to-device copies between a and b on the current stream; a's values end up in both."""
    for _ in range(n):
        b.copy_(a)
        a.copy_(b)


def _buffers(device="axon", numel=4 * MiB, value=1.0):
    a = torch.full((numel,), value, device=device)
    return a, torch.empty_like(a)


def test_stream_priority_is_kept_and_clamped():
    assert torch.axon.Stream(priority=-1).priority == -1
    assert torch.axon.Stream().priority == 0
    lowest, highest = torch.axon.Stream.priority_range()
    assert lowest == 0 and highest < 0
    assert torch.axon.Stream(priority=highest - 5).priority == highest  # clamped, as CUDA does
    assert torch.axon.Stream(priority=lowest + 5).priority == lowest


def test_torch_stream_can_be_created_on_axon():
    s = torch.Stream(device="axon")
    assert s.device == torch.device("axon", 0)
    assert s.stream_id != 0
    assert s.query()
    s1 = torch.Stream(device="axon:1", priority=-1)
    assert s1.device == torch.device("axon", 1)
    assert torch.axon.Stream(stream_id=s1.stream_id, device_index=1, device_type=s1.device_type).priority == -1


def test_torch_stream_without_index_uses_the_current_device():
    torch.axon.set_device(1)
    assert torch.Stream(device="axon").device == torch.device("axon", 1)
    assert torch.axon.Stream().device == torch.device("axon", 1)


def test_each_new_stream_is_distinct():
    streams = [torch.axon.Stream() for _ in range(3)]
    assert len({s.stream_id for s in streams}) == 3
    assert streams[0] != streams[1]
    assert streams[0] == torch.axon.Stream(stream_id=streams[0].stream_id, device_index=0,
                                           device_type=streams[0].device_type)


def test_stream_native_handle_identifies_the_stream():
    s = torch.axon.Stream()
    assert s.native_handle == s.native_handle != 0
    assert torch.axon.Stream().native_handle != s.native_handle


def test_default_stream_is_the_initial_current_stream():
    d = torch.axon.default_stream()
    assert d.stream_id == 0
    assert d.device == torch.device("axon", 0)
    assert torch.axon.current_stream() == d
    assert torch.axon.default_stream(1).device == torch.device("axon", 1)
    assert isinstance(torch.axon.current_stream(), torch.axon.Stream)


def test_set_stream_changes_the_current_stream():
    s = torch.axon.Stream()
    torch.axon.set_stream(s)
    assert torch.axon.current_stream() == s
    assert torch.accelerator.current_stream() == s
    torch.axon.set_stream(None)  # a no-op, as in torch.cuda
    assert torch.axon.current_stream() == s
    torch.axon.set_stream(torch.axon.default_stream())
    assert torch.axon.current_stream() == torch.axon.default_stream()


def test_current_stream_is_per_thread():
    import threading

    s = torch.axon.Stream()
    torch.axon.set_stream(s)
    seen = []
    t = threading.Thread(target=lambda: seen.append(torch.axon.current_stream().stream_id))
    t.start()
    t.join(timeout=30)
    assert seen == [0]
    assert torch.axon.current_stream() == s


def test_stream_context_makes_work_run_on_the_stream_and_restores_the_previous():
    s = torch.axon.Stream()
    a, b = _buffers(numel=MiB)
    torch.axon.synchronize()
    torch_axon._C._trace_clear()
    torch_axon._C._trace_enable(True)
    try:
        with torch.axon.stream(s) as entered:
            assert entered == s
            assert torch.axon.current_stream() == s
            b.copy_(a)
        assert torch.axon.current_stream() == torch.axon.default_stream()
        s.synchronize()
        a.copy_(b)
        torch.axon.synchronize()
    finally:
        torch_axon._C._trace_enable(False)
    copies = [r for r in torch_axon._C._trace_records() if r[0] == "memcpy" and r[5] == 4 * MiB]
    assert sorted((r[1], r[2]) for r in copies) == [(0, 0), (0, s.stream_id)]  # (device, stream) of each copy


def test_stream_context_restores_the_stream_after_an_exception():
    s = torch.axon.Stream()
    with pytest.raises(KeyError):
        with torch.axon.stream(s):
            raise KeyError("boom")
    assert torch.axon.current_stream() == torch.axon.default_stream()


def test_stream_context_nests():
    s1, s2 = torch.axon.Stream(), torch.axon.Stream()
    with torch.axon.stream(s1):
        with torch.axon.stream(s2):
            assert torch.axon.current_stream() == s2
        assert torch.axon.current_stream() == s1
    assert torch.axon.current_stream() == torch.axon.default_stream()


def test_stream_context_of_none_is_a_no_op():
    with torch.axon.stream(None):
        assert torch.axon.current_stream() == torch.axon.default_stream()


def test_torch_stream_as_a_context_manager():
    s = torch.axon.Stream()
    with s:
        assert torch.axon.current_stream() == s
    assert torch.axon.current_stream() == torch.axon.default_stream()


def test_query_and_synchronize_follow_the_queued_work():
    s = torch.axon.Stream()
    a, b = _buffers()
    torch.axon.synchronize()
    assert s.query()
    with torch.axon.stream(s):
        _queue_copies(a, b)
    assert not s.query()
    assert torch.axon.default_stream().query()  # other streams are not held up
    s.synchronize()
    assert s.query()


def test_wait_stream_orders_work_between_streams():
    producer, consumer = torch.axon.Stream(), torch.axon.Stream()
    a, b = _buffers(value=0.0)
    out = torch.empty_like(a)
    torch.axon.synchronize()
    with torch.axon.stream(producer):
        _queue_copies(a, b)
        b.fill_(3.0)  # the value the consumer must see, written last
    consumer.wait_stream(producer)
    assert not producer.query()
    with torch.axon.stream(consumer):
        out.copy_(b)
    consumer.synchronize()  # the consumer's copy ran after the producer's fill
    assert producer.query()
    torch.testing.assert_close(out.cpu(), torch.full((4 * MiB,), 3.0), rtol=0, atol=0)


def test_record_event_and_wait_event_on_streams():
    producer, consumer = torch.axon.Stream(), torch.axon.Stream()
    a, b = _buffers(value=2.0)
    out = torch.empty_like(a)
    torch.axon.synchronize()
    with torch.axon.stream(producer):
        _queue_copies(a, b)
        e = producer.record_event()
    assert isinstance(e, torch.Event)
    consumer.wait_event(e)
    with torch.axon.stream(consumer):
        out.copy_(b)
    consumer.synchronize()
    assert e.query()
    torch.testing.assert_close(out.cpu(), torch.full((4 * MiB,), 2.0), rtol=0, atol=0)


def test_record_stream_keeps_a_freed_block_from_reuse_while_the_side_stream_works():
    side = torch.axon.Stream()
    numel = 2 * MiB
    x = torch.full((numel,), 5.0, device="axon")
    a, b = _buffers()
    out = torch.empty(numel, device="axon")
    torch.axon.synchronize()
    with torch.axon.stream(side):
        _queue_copies(a, b)
        out.copy_(x)  # x is read on the side stream, behind the queued copies
    x.record_stream(side)
    ptr = x.data_ptr()
    del x  # freed on its own (default) stream while the side stream still needs it
    assert not side.query()
    y = torch.empty(numel, device="axon")
    assert y.data_ptr() != ptr
    y.fill_(-1.0)
    side.synchronize()
    torch.testing.assert_close(out.cpu(), torch.full((numel,), 5.0), rtol=0, atol=0)
    z = torch.empty(numel, device="axon")
    assert z.data_ptr() == ptr  # the side stream finished: the block is reusable
    del y, z


def test_without_record_stream_a_freed_block_is_reused_at_once_on_its_stream():
    # The control for the test above: stream order alone lets the block go straight back to its own stream.
    numel = 2 * MiB
    x = torch.empty(numel, device="axon")
    ptr = x.data_ptr()
    del x
    assert torch.empty(numel, device="axon").data_ptr() == ptr


def test_streams_of_the_second_device_run_its_work():
    s = torch.axon.Stream(device=1)
    assert s.device == torch.device("axon", 1)
    a, b = _buffers(device="axon:1", value=4.0)
    torch.axon.synchronize(1)
    with torch.axon.stream(s):
        assert torch.axon.current_device() == 1  # as torch.cuda.stream: the stream's device becomes current
        _queue_copies(a, b)
        c = torch.empty_like(a)  # allocated on axon:1, the current device
        c.copy_(b)
    assert c.device == torch.device("axon", 1)
    assert torch.axon.current_device() == 0
    assert torch.axon.current_stream(1) == torch.axon.default_stream(1)
    s.synchronize()
    torch.testing.assert_close(c.cpu(), torch.full((4 * MiB,), 4.0), rtol=0, atol=0)


def test_a_stream_of_axon1_can_be_used_while_axon0_is_current():
    s1 = torch.axon.Stream(device="axon:1")
    a, b = _buffers(device="axon:1")
    torch.axon.synchronize(1)
    assert torch.axon.current_device() == 0
    torch.accelerator.set_stream(s1)  # sets axon:1's current stream (and makes axon:1 current, as in torch.cuda)
    _queue_copies(a, b)
    torch.axon.set_device(0)
    assert torch.axon.current_stream(1) == s1
    assert not s1.query()
    e = s1.record_event()
    assert e.device == torch.device("axon", 1)
    torch.axon.current_stream().wait_stream(s1)  # axon:0's stream waits for axon:1's work
    s1.synchronize()
    assert s1.query() and e.query()
    assert torch.axon.current_device() == 0


def test_accelerator_current_stream_is_per_device():
    s0, s1 = torch.axon.Stream(device=0), torch.axon.Stream(device=1)
    torch.axon.set_stream(s1)
    torch.axon.set_stream(s0)
    assert torch.accelerator.current_stream(0) == s0
    assert torch.accelerator.current_stream(1) == s1
    assert torch.accelerator.current_stream() == s0
    assert torch.axon.current_stream(1) == s1
    assert torch.axon.current_stream("axon:1") == s1


def test_stream_of_a_missing_device_names_the_index():
    with pytest.raises(RuntimeError, match="index 4 for axon: there are 2 devices"):
        torch.axon.Stream(device=4)
    with pytest.raises(RuntimeError, match="index 4 for axon"):
        torch.axon.current_stream(4)

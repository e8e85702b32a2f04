"""Streams and events for torch.axon, built on torch.Stream and torch.Event (which reach libaxon through the device
guard), with torch.cuda's API on top: priorities, wait_stream, record_event, the stream() context manager."""

from __future__ import annotations

import torch

from torch_axon import _C
from torch_axon._device import _get_device_index, _lazy_init


class Stream(torch.Stream):
    """An asynchronous command queue of an axon device. A lower priority number is a higher priority."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        _lazy_init()
        if "stream_id" in kwargs:  # wrapping an existing stream (device_index and device_type given too)
            return super().__new__(cls, **kwargs)
        index = _get_device_index(device)
        return super().__new__(cls, device=torch.device("axon", index), priority=priority)

    @property
    def priority(self) -> int:
        """The stream's priority (lower is higher), as given at creation."""
        return _C._stream_priority(self.device_index, self.stream_id)

    @staticmethod
    def priority_range() -> tuple[int, int]:
        """(lowest, highest) priority, as torch.cuda.Stream.priority_range."""
        return tuple(_C._stream_priority_range)

    def wait_stream(self, stream: torch.Stream) -> None:
        """Make this stream wait for all work queued on `stream` so far (the host does not block)."""
        self.wait_event(stream.record_event())

    def __eq__(self, other) -> bool:
        return isinstance(other, torch.Stream) and super().__eq__(other)

    def __hash__(self) -> int:
        return super().__hash__()

    def __repr__(self) -> str:
        return f"<torch.axon.Stream device=axon:{self.device_index} stream_id={self.stream_id}>"


def _wrap(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


class Event:
    """A marker in a stream: record, query, synchronize, wait, and elapsed_time when created with enable_timing.

    Constructing one returns a torch.Event on axon: torch's Stream and Event methods accept only that exact type,
    so torch.axon.Event is a constructor, not a subclass (isinstance(e, torch.Event) holds).
    """

    def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> torch.Event:
        if interprocess:
            raise ValueError("axon events cannot be shared between processes")
        _lazy_init()
        return torch.Event(device="axon", enable_timing=enable_timing, blocking=blocking)


def current_stream(device=None) -> Stream:
    """The calling thread's current stream on the device."""
    _lazy_init()
    return _wrap(torch.accelerator.current_stream(_get_device_index(device)))


def default_stream(device=None) -> Stream:
    """The device's default stream (stream_id 0)."""
    _lazy_init()
    index = _get_device_index(device)
    current = torch.accelerator.current_stream(index)
    return Stream(stream_id=0, device_index=index, device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    """Make `stream` the current stream of its device for the calling thread."""
    if stream is None:
        return
    _lazy_init()
    torch.accelerator.set_stream(stream)


class StreamContext:
    """Context manager that makes `stream` current (and its device, as torch.cuda.stream does) and restores, on exit,
    the previous current stream of both the stream's device and the device that was current before."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.src_prev: torch.Stream | None = None  # the current stream of the device current at entry
        self.dst_prev: torch.Stream | None = None  # the previous current stream of the stream's device

    def __enter__(self):
        if self.stream is None:
            return None
        _lazy_init()
        self.src_prev = torch.accelerator.current_stream(torch.accelerator.current_device_index())
        self.dst_prev = torch.accelerator.current_stream(self.stream.device_index)
        torch.accelerator.set_stream(self.stream)  # also makes the stream's device current
        return self.stream

    def __exit__(self, *exc) -> bool:
        if self.stream is not None:
            if self.dst_prev.device_index != self.src_prev.device_index:
                torch.accelerator.set_stream(self.dst_prev)
            torch.accelerator.set_stream(self.src_prev)  # last: it restores the device current at entry
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    """`with torch.axon.stream(s):` runs the block's axon work on s."""
    return StreamContext(stream)

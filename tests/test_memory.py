"""torch.axon's memory functions over libaxon's caching allocator, with torch.cuda's names and meanings: allocated and
reserved bytes, peaks, the statistics dict, empty_cache, out-of-memory errors and recovery, mem_get_info, the summary;
and pinned host memory: pin_memory/is_pinned, host statistics, DataLoader(pin_memory=True), non_blocking copies."""

import gc
import threading

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

MiB = 1 << 20
GiB = 1 << 30
CAPACITY = 2 * GiB  # AXON_DEVICE_MEMORY from conftest.py


def _round512(n: int) -> int:
    return (n + 511) // 512 * 512


@pytest.fixture
def quiet():
    """Start from no queued work, no cached blocks and no garbage, so byte counts are exact: a device tensor kept by
    a reference cycle from an earlier test (an exception's traceback holds its frames) would otherwise be freed by
    whichever allocation triggers the collector, in the middle of a count."""
    gc.collect()
    torch.axon.synchronize()
    torch.axon.synchronize(1)
    torch.axon.empty_cache()
    yield


@pytest.mark.parametrize("numel,dtype", [(1, torch.uint8), (129, torch.float32), (1000, torch.float32),
                                         (512, torch.float64), (3 * 1024 * 1024 + 7, torch.int8)])
def test_memory_allocated_grows_by_the_rounded_size_and_returns_after_del(quiet, numel, dtype):
    before = torch.axon.memory_allocated()
    x = torch.empty(numel, dtype=dtype, device="axon")
    assert torch.axon.memory_allocated() - before == _round512(numel * x.element_size())
    del x
    assert torch.axon.memory_allocated() == before


def test_an_empty_tensor_allocates_nothing(quiet):
    before = torch.axon.memory_allocated()
    x = torch.empty(0, device="axon")
    assert torch.axon.memory_allocated() == before
    del x


def test_memory_allocated_is_per_device(quiet):
    before0, before1 = torch.axon.memory_allocated(0), torch.axon.memory_allocated(1)
    x = torch.empty(1024, device="axon:1")
    assert torch.axon.memory_allocated(1) == before1 + 4096
    assert torch.axon.memory_allocated("axon:1") == torch.axon.memory_allocated(torch.device("axon", 1))
    assert torch.axon.memory_allocated(0) == before0
    del x
    assert torch.axon.memory_allocated(1) == before1


def test_requested_bytes_count_the_unrounded_size(quiet):
    key = "requested_bytes.all.current"
    before = torch.axon.memory_stats()[key]
    x = torch.empty(1000, dtype=torch.float32, device="axon")
    assert torch.axon.memory_stats()[key] - before == 4000
    del x


def test_memory_reserved_covers_allocations_and_keeps_freed_blocks_cached(quiet):
    x = torch.empty(12 * MiB, dtype=torch.uint8, device="axon")
    assert torch.axon.memory_reserved() >= torch.axon.memory_allocated()
    reserved = torch.axon.memory_reserved()
    assert reserved >= 12 * MiB
    del x
    assert torch.axon.memory_reserved() == reserved  # cached, not released
    assert torch.axon.max_memory_reserved() >= reserved


def test_empty_cache_lowers_reserved_memory(quiet):
    x = torch.empty(12 * MiB, dtype=torch.uint8, device="axon")
    del x
    reserved = torch.axon.memory_reserved()
    torch.axon.empty_cache()
    assert torch.axon.memory_reserved() <= reserved - 12 * MiB
    assert torch.axon.memory_stats()["num_device_free"] >= 1


def test_empty_cache_keeps_live_tensors(quiet):
    src = torch.arange(1 << 16, dtype=torch.float32)
    x = src.to("axon")
    torch.axon.empty_cache()
    assert torch.axon.memory_reserved() >= torch.axon.memory_allocated() >= 1 << 18
    torch.testing.assert_close(x.cpu(), src, rtol=0, atol=0)


def test_max_memory_allocated_and_reset_peak_memory_stats(quiet):
    torch.axon.reset_peak_memory_stats()
    base = torch.axon.memory_allocated()
    assert torch.axon.max_memory_allocated() == base
    x = torch.empty(4 * MiB, dtype=torch.uint8, device="axon")
    del x
    assert torch.axon.max_memory_allocated() == base + 4 * MiB
    assert torch.axon.memory_allocated() == base
    torch.axon.reset_peak_memory_stats()
    assert torch.axon.max_memory_allocated() == base
    torch.axon.reset_max_memory_allocated()
    assert torch.axon.max_memory_allocated() == base


def test_reset_accumulated_memory_stats(quiet):
    x = torch.empty(100, device="axon")
    del x
    assert torch.axon.memory_stats()["allocation.all.allocated"] >= 1
    torch.axon.reset_accumulated_memory_stats()
    stats = torch.axon.memory_stats()
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 0
    y = torch.empty(100, device="axon")
    del y
    stats = torch.axon.memory_stats()
    assert stats["allocation.all.allocated"] == stats["allocation.all.freed"] == 1


def test_memory_stats_use_cuda_key_names():
    stats = torch.axon.memory_stats()
    expected = {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
                "max_split_size"}
    for stat in ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
                 "active_bytes", "inactive_split_bytes", "requested_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            for kind in ("current", "peak", "allocated", "freed"):
                expected.add(f"{stat}.{pool}.{kind}")
    assert expected <= set(stats)
    assert list(stats) == sorted(stats)
    assert all(isinstance(v, int) for v in stats.values())


def test_small_and_large_tensors_come_from_their_pools(quiet):
    stats = torch.axon.memory_stats
    small0, large0 = stats()["allocated_bytes.small_pool.current"], stats()["allocated_bytes.large_pool.current"]
    s = torch.empty(1024, device="axon")
    big = torch.empty(2 * MiB, dtype=torch.uint8, device="axon")
    assert stats()["allocated_bytes.small_pool.current"] == small0 + 4096
    assert stats()["allocated_bytes.large_pool.current"] == large0 + 2 * MiB
    assert stats()["allocated_bytes.all.current"] == \
        stats()["allocated_bytes.small_pool.current"] + stats()["allocated_bytes.large_pool.current"]
    del s, big


def test_memory_stats_as_nested_dict_matches_the_flat_dict():
    x = torch.empty(10, device="axon")
    flat = torch.axon.memory_stats()
    nested = torch.axon.memory_stats_as_nested_dict()
    assert nested["allocated_bytes"]["all"]["current"] == flat["allocated_bytes.all.current"]
    assert nested["num_ooms"] == flat["num_ooms"]
    assert nested["segment"]["large_pool"]["peak"] == flat["segment.large_pool.peak"]
    del x


def test_mem_get_info_is_free_and_total(quiet):
    free, total = torch.axon.mem_get_info()
    assert total == CAPACITY
    assert free == total - torch.axon.memory_reserved()
    x = torch.empty(12 * MiB, dtype=torch.uint8, device="axon:1")
    free1, total1 = torch.axon.mem_get_info(1)
    assert total1 == CAPACITY
    assert free1 == total1 - torch.axon.memory_reserved(1) <= total1 - 12 * MiB
    del x


def test_memory_summary_names_the_device_and_shows_the_usage(quiet):
    x = torch.empty(3 * MiB, dtype=torch.uint8, device="axon:1")
    text = torch.axon.memory_summary(1)
    assert "axon:1" in text
    assert "Allocated memory" in text and "Reserved memory" in text
    assert "3.00 MiB" in text
    assert "axon:0" in torch.axon.memory_summary()
    del x


@pytest.fixture
def small_device():
    """Device 0 limited to 64 MiB (1/32 of 2 GiB) for the test; the full capacity is restored after it."""
    torch.axon.synchronize()
    torch.axon.empty_cache()
    torch.axon.set_per_process_memory_fraction(1 / 32)
    try:
        yield 64 * MiB
    finally:
        torch.axon.set_per_process_memory_fraction(1.0)


def test_set_per_process_memory_fraction_sets_the_capacity(small_device):
    assert torch.axon.mem_get_info()[1] == small_device
    assert torch.axon.mem_get_info(1)[1] == CAPACITY  # the other device is untouched


def test_set_per_process_memory_fraction_rejects_fractions_outside_0_to_1():
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="Invalid fraction value"):
            torch.axon.set_per_process_memory_fraction(bad)
    assert torch.axon.mem_get_info()[1] == CAPACITY


def test_out_of_memory_raises_torch_OutOfMemoryError_and_the_allocator_recovers(small_device):
    ooms = torch.axon.memory_stats()["num_ooms"]
    a = torch.empty(40 * MiB, dtype=torch.uint8, device="axon")
    with pytest.raises(torch.OutOfMemoryError) as info:
        torch.empty(40 * MiB, dtype=torch.uint8, device="axon")
    assert isinstance(info.value, RuntimeError)
    message = str(info.value)
    assert "axon:0" in message
    assert "out of memory" in message
    assert "40.00 MiB" in message  # requested, and what is allocated
    assert "64.00 MiB" in message  # the capacity
    assert torch.axon.memory_stats()["num_ooms"] == ooms + 1
    assert torch.axon.memory_allocated() >= 40 * MiB
    del a
    b = torch.empty(40 * MiB, dtype=torch.uint8, device="axon")  # the freed block serves it
    b.fill_(7)
    assert b[-1].item() == 7
    del b


def test_a_request_that_fits_only_after_releasing_the_cache_succeeds(small_device):
    a = torch.empty(40 * MiB, dtype=torch.uint8, device="axon")
    del a  # 40 MiB cached
    retries = torch.axon.memory_stats()["num_alloc_retries"]
    b = torch.empty(50 * MiB, dtype=torch.uint8, device="axon")
    assert torch.axon.memory_stats()["num_alloc_retries"] == retries + 1
    assert torch.axon.memory_reserved() <= small_device
    del b


def test_out_of_memory_on_the_second_device_names_it():
    torch.axon.set_per_process_memory_fraction(1 / 64, device=1)
    try:
        with pytest.raises(torch.OutOfMemoryError, match="axon:1"):
            torch.empty(64 * MiB, dtype=torch.uint8, device="axon:1")
    finally:
        torch.axon.set_per_process_memory_fraction(1.0, device=1)
    assert torch.axon.mem_get_info(1)[1] == CAPACITY


def test_pin_memory_and_is_pinned():
    x = torch.arange(1000, dtype=torch.float32)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned()
    assert p.data_ptr() != x.data_ptr()
    torch.testing.assert_close(p, x, rtol=0, atol=0)
    assert p.pin_memory().data_ptr() == p.data_ptr()  # already pinned: no copy
    assert p[10:].is_pinned()  # a view into pinned memory
    e = torch.empty(10, pin_memory=True)
    assert e.is_pinned()


def test_host_memory_stats_count_pinned_buffers():
    torch.accelerator.empty_host_cache()
    before = torch.axon.host_memory_stats()
    p = torch.empty(1000, dtype=torch.uint8, pin_memory=True)
    during = torch.axon.host_memory_stats()
    assert during["active_requests.current"] == before["active_requests.current"] + 1
    assert during["active_bytes.current"] - before["active_bytes.current"] >= 1000
    assert during["allocations.current"] == before["allocations.current"] + 1
    assert during["num_host_alloc"] == before["num_host_alloc"] + 1
    del p
    after = torch.axon.host_memory_stats()
    assert after["active_requests.current"] == before["active_requests.current"]
    assert after["allocations.current"] == during["allocations.current"]  # cached for reuse
    torch.accelerator.empty_host_cache()
    emptied = torch.axon.host_memory_stats()
    assert emptied["allocations.current"] == 0
    assert emptied["num_host_free"] >= before["num_host_free"] + 1
    assert list(emptied) == sorted(emptied)


def test_a_freed_pinned_buffer_is_reused():
    torch.accelerator.empty_host_cache()
    p = torch.empty(5000, dtype=torch.uint8, pin_memory=True)
    ptr = p.data_ptr()
    del p
    alloc = torch.axon.host_memory_stats()["num_host_alloc"]
    q = torch.empty(5000, dtype=torch.uint8, pin_memory=True)
    assert q.data_ptr() == ptr
    assert torch.axon.host_memory_stats()["num_host_alloc"] == alloc


@pytest.mark.parametrize("workers", [0, 1])  # 1: a worker forked after the runtime started, feeding the pin thread
def test_dataloader_with_pin_memory_yields_pinned_batches_that_copy_to_axon(workers):
    g = torch.Generator().manual_seed(0)
    features = torch.randn(40, 6, generator=g)
    labels = torch.arange(40)
    loader = DataLoader(TensorDataset(features, labels), batch_size=8, pin_memory=True, num_workers=workers,
                        multiprocessing_context="fork" if workers else None, timeout=60 if workers else 0)
    got_x, got_y = [], []
    for x, y in loader:
        assert x.is_pinned() and y.is_pinned()
        got_x.append(x.to("axon", non_blocking=True))
        got_y.append(y.to("axon", non_blocking=True))
    torch.axon.synchronize()
    assert all(t.device == torch.device("axon", 0) for t in got_x + got_y)
    torch.testing.assert_close(torch.cat([t.cpu() for t in got_x]), features, rtol=0, atol=0)
    torch.testing.assert_close(torch.cat([t.cpu() for t in got_y]), labels, rtol=0, atol=0)


def _busy_stream(n_copies: int = 8, numel: int = 4 * MiB) -> list[torch.Tensor]:
    """Queue device-to-device copies (16 MiB each) on the current stream; returns the buffers to keep alive."""
    a = torch.empty(numel, device="axon")
    b = torch.empty_like(a)
    a.fill_(1.0)
    for _ in range(n_copies):
        b.copy_(a)
        a.copy_(b)
    return [a, b]


def test_non_blocking_copy_from_pinned_memory_returns_before_the_stream_finishes():
    src = torch.randn(1 << 20, generator=torch.Generator().manual_seed(1))
    pinned = src.pin_memory()
    dst = torch.empty(1 << 20, device="axon")
    torch.axon.synchronize()
    keep = _busy_stream()
    dst.copy_(pinned, non_blocking=True)
    assert not torch.axon.current_stream().query()  # returned while the queued copies still run
    torch.axon.synchronize()
    torch.testing.assert_close(dst.cpu(), src, rtol=0, atol=0)
    del keep


def test_non_blocking_copy_to_pinned_memory_gives_the_data_after_synchronize():
    src = torch.randn(1 << 16, generator=torch.Generator().manual_seed(2))
    x = src.to("axon")
    out = torch.empty(1 << 16, pin_memory=True)
    keep = _busy_stream()
    out.copy_(x, non_blocking=True)
    torch.axon.synchronize()
    torch.testing.assert_close(out, src, rtol=0, atol=0)
    del keep


def test_to_cpu_with_non_blocking_gives_a_pinned_tensor_with_the_data_after_synchronize():
    src = torch.randn(1 << 16, generator=torch.Generator().manual_seed(5))
    x = src.to("axon")
    keep = _busy_stream()
    y = x.to("cpu", non_blocking=True)
    assert y.is_pinned()  # as from CUDA: the destination is pinned so that the copy can be asynchronous
    torch.axon.synchronize()
    torch.testing.assert_close(y, src, rtol=0, atol=0)
    del keep


def test_a_pinned_buffer_freed_during_a_queued_copy_is_not_handed_out_before_it(quiet):
    src = torch.randn(1 << 18, generator=torch.Generator().manual_seed(3))
    pinned = src.pin_memory()
    ptr = pinned.data_ptr()
    dst = torch.empty(1 << 18, device="axon")
    keep = _busy_stream()
    dst.copy_(pinned, non_blocking=True)
    del pinned  # the copy is still queued behind the busy work
    reuse = torch.empty(1 << 18, pin_memory=True)
    reuse.fill_(-1.0)  # must not land in the buffer the copy reads
    still_busy = not torch.axon.current_stream().query()
    torch.axon.synchronize()
    torch.testing.assert_close(dst.cpu(), src, rtol=0, atol=0)
    if still_busy:
        assert reuse.data_ptr() != ptr
    del keep


def test_non_blocking_copy_from_pageable_memory_may_reuse_the_source_at_once():
    src = torch.randn(1 << 18, generator=torch.Generator().manual_seed(4))
    host = src.clone()
    dst = torch.empty(1 << 18, device="axon")
    keep = _busy_stream()
    dst.copy_(host, non_blocking=True)
    host.fill_(-1.0)  # pageable: the copy has taken the bytes before returning, as on CUDA
    torch.axon.synchronize()
    torch.testing.assert_close(dst.cpu(), src, rtol=0, atol=0)
    del keep


def test_allocations_from_many_threads_are_all_counted(quiet):
    before = torch.axon.memory_allocated()
    tensors, errors = [], []

    def work():
        try:
            for _ in range(20):
                tensors.append(torch.empty(1024, device="axon"))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert len(tensors) == 80
    assert torch.axon.memory_allocated() == before + 80 * 4096
    assert len({t.data_ptr() for t in tensors}) == 80
    tensors.clear()
    assert torch.axon.memory_allocated() == before


def test_memory_statistics_do_not_start_the_runtime(python):
    proc = python("import torch\n"
                  "print(torch.axon.memory_allocated(), torch.axon.max_memory_reserved(), len(torch.axon.memory_stats()),"
                  " torch.axon.host_memory_stats()['allocations.current'], torch.axon.is_initialized())")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "0", "0", "0", "False"]




GUARDED_STEP = """
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(33, 70), torch.nn.GELU(), torch.nn.LayerNorm(70), torch.nn.Linear(70, 5))
x, y = torch.randn(17, 33), torch.randint(0, 5, (17,))
grads = []
for device in ("cpu", "axon"):
    m = model.to(device)
    m.zero_grad()
    torch.nn.functional.cross_entropy(m(x.to(device)), y.to(device)).backward()
    grads.append([p.grad.detach().cpu().clone() for p in m.parameters()])
torch.axon.synchronize()
stats = torch.axon.memory_stats()
for a, b in zip(*grads):
    torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)
# every allocation mapped its own segment: nothing was served from the cache
print(stats["num_device_alloc"], stats["allocation.all.allocated"])
"""


def test_the_guard_allocator_runs_a_training_step_with_a_mapping_per_allocation(python):
    # AXON_ALLOC_GUARD=1 (docs/device.md): libaxon's C tests check the faults; here a whole forward and backward
    # runs on it and matches CPU.
    proc = python(GUARDED_STEP, env={"AXON_ALLOC_GUARD": "1"})
    assert proc.returncode == 0, proc.stderr
    segments, allocations = map(int, proc.stdout.split())
    assert allocations > 10 and segments == allocations, proc.stdout


def test_resizing_an_axon_storage_keeps_its_bytes(quiet):
    src = torch.arange(10, dtype=torch.float32)
    x = src.to("axon:1")
    storage = x.untyped_storage()
    before = torch.axon.memory_allocated(1)
    storage.resize_(4096)
    assert storage.nbytes() == 4096
    assert storage.device == torch.device("axon", 1)
    assert torch.axon.memory_allocated(1) == before - 512 + 4096
    grown = torch.empty(0, device="axon:1").set_(storage)
    torch.testing.assert_close(grown[:10].cpu(), src, rtol=0, atol=0)
    assert torch.axon.current_device() == 0
    storage.resize_(8)
    torch.testing.assert_close(torch.empty(0, device="axon:1").set_(storage).cpu(), src[:2], rtol=0, atol=0)


def test_a_failed_storage_resize_raises_OutOfMemoryError_and_keeps_the_current_device(quiet):
    x = torch.arange(6, dtype=torch.float32).to("axon:1")
    torch.axon.set_per_process_memory_fraction(1 / 64, device=1)  # 32 MiB
    try:
        with pytest.raises(torch.OutOfMemoryError, match="axon:1"):
            x.untyped_storage().resize_(100 * MiB)
    finally:
        torch.axon.set_per_process_memory_fraction(1.0, device=1)
    assert torch.axon.current_device() == 0
    torch.testing.assert_close(x.cpu(), torch.arange(6, dtype=torch.float32), rtol=0, atol=0)

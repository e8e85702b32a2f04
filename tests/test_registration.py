"""How the axon device is registered with PyTorch: torch.accelerator picks it, every torch.accelerator call of torch
2.13 works on it, torch.axon is its device module, the generated Tensor/Module/UntypedStorage methods exist, and
`import torch` alone loads it through the torch.backends entry point."""

import pytest
import torch

import torch_axon


def test_current_accelerator_is_axon():
    assert torch.accelerator.current_accelerator() == torch.device("axon")
    assert torch._C._get_privateuse1_backend_name() == "axon"


def test_accelerator_device_count_and_availability():
    assert torch.accelerator.is_available()
    assert torch.accelerator.device_count() == torch.axon.device_count() == 2


def test_accelerator_set_device_index_changes_the_current_device():
    torch.accelerator.set_device_index(1)
    assert torch.accelerator.current_device_index() == 1
    assert torch.axon.current_device() == 1
    assert torch.empty(1, device="axon").device == torch.device("axon", 1)
    torch.accelerator.set_device_index(0)
    assert torch.accelerator.current_device_index() == 0


def test_accelerator_set_device_index_rejects_a_missing_device():
    with pytest.raises(RuntimeError, match="index 5.*2 devices"):
        torch.accelerator.set_device_index(5)
    assert torch.accelerator.current_device_index() == 0


def test_accelerator_device_index_context_restores_the_device():
    with torch.accelerator.device_index(1):
        assert torch.accelerator.current_device_index() == 1
        assert torch.zeros(2, device="axon").device.index == 1
    assert torch.accelerator.current_device_index() == 0


def test_accelerator_current_stream_and_set_stream():
    default = torch.accelerator.current_stream()
    assert default.device == torch.device("axon", 0)
    assert default.stream_id == 0
    s = torch.Stream(device="axon")
    assert s.device == torch.device("axon", 0)
    torch.accelerator.set_stream(s)
    assert torch.accelerator.current_stream() == s
    assert torch.axon.current_stream() == s
    torch.accelerator.set_stream(default)
    assert torch.accelerator.current_stream() == default


def test_accelerator_current_stream_of_another_device_leaves_the_current_device():
    s1 = torch.accelerator.current_stream(1)
    assert s1.device == torch.device("axon", 1)
    assert torch.accelerator.current_device_index() == 0


def test_accelerator_synchronize_waits_for_queued_copies():
    src = torch.arange(1 << 20, dtype=torch.float32)
    a = src.to("axon")
    b = torch.empty_like(a)
    b.copy_(a)  # device-to-device: asynchronous
    torch.accelerator.synchronize()
    assert torch.accelerator.current_stream().query()
    torch.testing.assert_close(b.cpu(), src, rtol=0, atol=0)


def test_accelerator_memory_statistics_see_axon_allocations():
    torch.accelerator.synchronize()
    before = torch.accelerator.memory_allocated()
    x = torch.empty(1024, device="axon")  # 4096 bytes: already a multiple of 512
    assert torch.accelerator.memory_allocated() == before + 4096
    assert torch.accelerator.memory_allocated("axon:0") == torch.axon.memory_allocated(0)
    assert torch.accelerator.max_memory_allocated() >= before + 4096
    assert torch.accelerator.memory_reserved() >= torch.accelerator.memory_allocated()
    assert torch.accelerator.max_memory_reserved() >= torch.accelerator.memory_reserved()
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == before + 4096
    del x
    assert torch.accelerator.memory_allocated() == before


def test_accelerator_reset_peak_memory_stats_lowers_the_peak():
    x = torch.empty(1 << 20, device="axon")
    del x
    assert torch.accelerator.max_memory_allocated() >= 4 << 20
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == torch.accelerator.memory_allocated()


def test_accelerator_reset_accumulated_memory_stats_zeroes_the_totals():
    x = torch.empty(256, device="axon")
    del x
    assert torch.accelerator.memory_stats()["allocation.all.allocated"] > 0
    torch.accelerator.reset_accumulated_memory_stats()
    stats = torch.accelerator.memory_stats()
    assert stats["allocation.all.allocated"] == 0
    assert stats["allocated_bytes.all.freed"] == 0


def test_accelerator_empty_cache_releases_reserved_memory():
    x = torch.empty(4 << 20, device="axon")  # 16 MiB: a large-pool segment of its own
    del x
    cached = torch.accelerator.memory_reserved()
    assert cached >= torch.accelerator.memory_allocated() + (16 << 20)
    torch.accelerator.empty_cache()
    assert torch.accelerator.memory_reserved() <= cached - (16 << 20)
    free, total = torch.accelerator.get_memory_info()
    assert total == 2 << 30
    assert free == total - torch.accelerator.memory_reserved()


def test_accelerator_get_memory_info_matches_mem_get_info():
    assert torch.accelerator.get_memory_info(1) == torch.axon.mem_get_info(1)


def test_accelerator_get_device_capability_lists_the_supported_dtypes():
    cap = torch.accelerator.get_device_capability()
    dtypes = cap["supported_dtypes"]
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool,
                  torch.complex64):
        assert dtype in dtypes
    assert torch.accelerator.get_device_capability("axon:1") == cap


def test_accelerator_empty_host_cache_returns_cached_pinned_buffers():
    p = torch.ones(4096).pin_memory()
    del p
    cached = torch.axon.host_memory_stats()["allocations.current"]
    assert cached >= 1
    torch.accelerator.empty_host_cache()
    assert torch.axon.host_memory_stats()["allocations.current"] == 0


def test_accelerator_graph_capture_is_refused_clearly():
    with pytest.raises(RuntimeError, match="axon"):
        torch.accelerator.Graph().capture_begin()


def test_torch_axon_is_the_registered_device_module():
    assert torch.axon is torch_axon.device_module
    assert torch.get_device_module("axon") is torch.axon
    for name in ("_lazy_init", "is_available", "is_initialized", "init", "device_count", "current_device",
                 "set_device", "device", "synchronize", "Stream", "Event", "stream", "current_stream",
                 "get_amp_supported_dtype", "_is_in_bad_fork", "manual_seed", "manual_seed_all", "seed", "seed_all",
                 "initial_seed", "get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all",
                 "memory_allocated", "max_memory_allocated", "memory_reserved", "memory_stats", "empty_cache",
                 "mem_get_info", "reset_peak_memory_stats", "get_device_properties", "is_bf16_supported"):
        assert callable(getattr(torch.axon, name)), name


def test_tensor_is_axon_and_axon_method():
    cpu = torch.arange(6.0).reshape(2, 3)
    assert not cpu.is_axon
    x = cpu.axon()
    assert x.is_axon
    assert x.device == torch.device("axon", 0)
    torch.testing.assert_close(x.cpu(), cpu, rtol=0, atol=0)
    assert x.axon() is x  # already there: no copy, as Tensor.cuda()
    y = cpu.axon(1)
    assert y.device == torch.device("axon", 1)
    torch.testing.assert_close(y.cpu(), cpu, rtol=0, atol=0)


def test_module_axon_moves_parameters_and_buffers():
    m = torch.nn.BatchNorm1d(3)
    ref = {k: t.clone() for k, t in m.state_dict().items()}
    assert m.axon() is m
    for k, t in m.state_dict().items():
        assert t.device == torch.device("axon", 0), k
        torch.testing.assert_close(t.cpu(), ref[k], rtol=0, atol=0)


def test_module_axon_with_an_index_moves_to_that_device():
    m = torch.nn.Linear(3, 2)
    ref = {k: t.clone() for k, t in m.state_dict().items()}
    m.axon(1)
    for k, t in m.state_dict().items():
        assert t.device == torch.device("axon", 1), k
        torch.testing.assert_close(t.cpu(), ref[k], rtol=0, atol=0)


def test_module_axon_moves_between_devices():
    m = torch.nn.Linear(3, 2)
    ref = {k: t.clone() for k, t in m.state_dict().items()}
    m.axon(0).axon(1)
    for k, t in m.state_dict().items():
        assert t.device == torch.device("axon", 1), k
        torch.testing.assert_close(t.cpu(), ref[k], rtol=0, atol=0)


def test_untyped_storage_axon_methods():
    cpu = torch.arange(8, dtype=torch.int32)
    s = cpu.untyped_storage().axon()
    assert s.is_axon
    assert not cpu.untyped_storage().is_axon
    assert s.device == torch.device("axon", 0)
    assert s.nbytes() == 32
    back = torch.empty(0, dtype=torch.int32).set_(s.cpu())
    torch.testing.assert_close(back, cpu, rtol=0, atol=0)
    assert cpu.untyped_storage().axon(1).device == torch.device("axon", 1)


def test_import_torch_alone_loads_axon(python):
    proc = python("import sys, torch\n"
                  "x = torch.zeros(1, device='axon')\n"
                  "print(x.device, 'torch_axon' in sys.modules, torch.accelerator.current_accelerator())")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["axon:0", "True", "axon"]


def test_autoload_disabled_leaves_axon_unknown(python):
    proc = python("import sys, torch\n"
                  "assert 'torch_axon' not in sys.modules\n"
                  "torch.zeros(1, device='axon')", env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"})
    assert proc.returncode != 0
    assert "RuntimeError" in proc.stderr
    assert "device type at start of device string: axon" in proc.stderr


def test_importing_torch_axon_before_torch_works(python):
    proc = python("import torch_axon, torch\nprint(torch.zeros(1, device='axon').device)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["axon:0"]


_BACKWARD_THREAD = (
    "import threading, torch\n"
    "x = torch.ones(4, device='axon', requires_grad=True)\n"
    "seen = []\n"
    "x.register_hook(lambda g: seen.append(threading.get_ident()))\n"
    "(x * 2).sum().backward()\n"
    "print(torch.autograd.is_multithreading_enabled(), seen == [threading.get_ident()], x.grad.cpu().tolist())"
)


def test_backward_runs_on_the_calling_thread(python):
    # PyTorch's device worker thread costs two thread hand-offs per backward call; torch_axon turns it off for the
    # thread that imported it (docs/device.md, AXON_AUTOGRAD_DEVICE_THREADS)
    proc = python(_BACKWARD_THREAD)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "[2.0,", "2.0,", "2.0,", "2.0]"]


def test_autograd_device_threads_can_be_kept(python):
    proc = python(_BACKWARD_THREAD, env={"AXON_AUTOGRAD_DEVICE_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "False", "[2.0,", "2.0,", "2.0,", "2.0]"]

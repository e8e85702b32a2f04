"""torch.axon's device management, with torch.cuda's semantics: counting and choosing devices, the device context
managers, invalid indices, properties, synchronize, and lazy initialization (counting, choosing and seeding never
start the runtime, so they are safe before a fork)."""

import json

import pytest
import torch

import torch_axon


def test_device_count_comes_from_the_configuration():
    assert torch.axon.device_count() == 2
    assert torch.axon.is_available()


def test_set_device_changes_the_current_device_and_where_tensors_go():
    assert torch.axon.current_device() == 0
    torch.axon.set_device(1)
    assert torch.axon.current_device() == 1
    assert torch.empty(2, device="axon").device == torch.device("axon", 1)
    torch.axon.set_device("axon:0")
    assert torch.axon.current_device() == 0
    torch.axon.set_device(torch.device("axon", 1))
    assert torch.axon.current_device() == 1


def test_set_device_ignores_a_negative_index():
    torch.axon.set_device(-1)
    assert torch.axon.current_device() == 0


def test_current_device_is_per_thread():
    import threading

    torch.axon.set_device(1)
    seen = []
    t = threading.Thread(target=lambda: seen.append(torch.axon.current_device()))
    t.start()
    t.join(timeout=30)
    assert seen == [0]
    assert torch.axon.current_device() == 1


def test_device_context_makes_a_device_current_and_restores_the_previous():
    with torch.axon.device(1):
        assert torch.axon.current_device() == 1
        assert torch.zeros(1, device="axon").device.index == 1
        with torch.axon.device("axon:0"):
            assert torch.axon.current_device() == 0
        assert torch.axon.current_device() == 1
    assert torch.axon.current_device() == 0


def test_device_context_restores_the_device_after_an_exception():
    with pytest.raises(KeyError):
        with torch.axon.device(1):
            raise KeyError("boom")
    assert torch.axon.current_device() == 0


def test_device_context_with_none_or_negative_is_a_no_op():
    torch.axon.set_device(1)
    with torch.axon.device(None):
        assert torch.axon.current_device() == 1
    with torch.axon.device(-1):
        assert torch.axon.current_device() == 1
    assert torch.axon.current_device() == 1


def test_device_context_rejects_other_device_types():
    with pytest.raises(ValueError, match="axon"):
        torch.axon.device("cpu")


def test_device_of_makes_a_tensors_device_current():
    x = torch.zeros(2, device="axon:1")
    with torch.axon.device_of(x):
        assert torch.axon.current_device() == 1
    assert torch.axon.current_device() == 0


def test_device_of_a_cpu_tensor_is_a_no_op():
    torch.axon.set_device(1)
    with torch.axon.device_of(torch.zeros(2)):
        assert torch.axon.current_device() == 1


def test_set_device_to_a_missing_index_names_the_index_and_the_count():
    with pytest.raises(RuntimeError, match=r"index 5 for axon: there are 2 devices"):
        torch.axon.set_device(5)
    assert torch.axon.current_device() == 0


def test_device_context_with_a_missing_index_raises_and_changes_nothing():
    with pytest.raises(RuntimeError, match=r"index 2 for axon: there are 2 devices"):
        with torch.axon.device(2):
            pass
    assert torch.axon.current_device() == 0


def test_tensor_on_a_missing_device_names_the_index_and_the_count():
    with pytest.raises(RuntimeError, match=r"index 5 for axon: there are 2 devices"):
        torch.zeros(3, device="axon:5")
    with pytest.raises(RuntimeError, match=r"index 5 for axon: there are 2 devices"):
        torch.ones(3).to("axon:5")


def test_get_device_properties_fields():
    info = torch_axon.runtime_info()["devices"]
    for i in range(2):
        p = torch.axon.get_device_properties(i)
        assert p.name == info[i]["name"] == f"axon:{i} (cpu)"
        assert p.total_memory == 2 << 30
        assert p.multi_processor_count == info[i]["threads"] >= 1
        assert (p.major, p.minor) == tuple(info[i]["capability"])
        assert p.is_integrated
        assert p.port == "cpu"
        assert isinstance(p.cpu_features, tuple)
        assert f"name='axon:{i} (cpu)'" in repr(p)
    assert torch.axon.get_device_properties("axon:1").name == "axon:1 (cpu)"
    assert torch.axon.get_device_properties(torch.device("axon", 1)).name == "axon:1 (cpu)"
    assert torch.axon.get_device_properties().name == "axon:0 (cpu)"  # the current device


def test_get_device_properties_of_a_missing_device_raises_as_torch_cuda_does():
    with pytest.raises(AssertionError, match="Invalid device id 7"):
        torch.axon.get_device_properties(7)


def test_get_device_name_and_capability():
    assert torch.axon.get_device_name() == "axon:0 (cpu)"
    assert torch.axon.get_device_name(1) == "axon:1 (cpu)"
    cap = torch.axon.get_device_capability(1)
    assert isinstance(cap, tuple) and len(cap) == 2
    p = torch.axon.get_device_properties(1)
    assert cap == (p.major, p.minor)


def test_bf16_is_supported_and_computes_like_the_cpu():
    assert torch.axon.is_bf16_supported()
    assert torch.axon.is_bf16_supported(including_emulation=False)
    x = torch.tensor([1.0, 1.00390625, -3.5, 65504.0])
    y = x.to(torch.bfloat16)
    torch.testing.assert_close(x.to("axon").to(torch.bfloat16).cpu(), y, rtol=0, atol=0)


def test_amp_supported_dtypes_are_the_half_types():
    assert torch.axon.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_synchronize_waits_for_the_work_of_every_stream():
    src = torch.arange(1 << 20, dtype=torch.float32)
    a = src.to("axon")
    s = torch.axon.Stream()
    mid, out = torch.empty_like(a), torch.empty_like(a)
    torch.axon.current_stream().synchronize()
    with torch.axon.stream(s):
        for _ in range(4):  # device-to-device copies: queued, not waited for
            mid.copy_(a)
            out.copy_(mid)
    torch.axon.synchronize()
    assert s.query()
    assert torch.axon.current_stream().query()
    torch.testing.assert_close(out.cpu(), src, rtol=0, atol=0)


def test_synchronize_accepts_a_device():
    a = torch.ones(1 << 16, device="axon:1")
    b = torch.empty_like(a)
    b.copy_(a)
    torch.axon.synchronize(1)
    torch.axon.synchronize("axon:1")
    assert torch.axon.current_stream(1).query()
    with pytest.raises(RuntimeError, match="index 3 for axon"):
        torch.axon.synchronize(3)


def test_init_and_lazy_init_start_the_runtime():
    torch.axon.init()
    torch.axon._lazy_init()
    assert torch.axon.is_initialized()
    assert not torch.axon._is_in_bad_fork()


_LAZY = """
import json, torch
report = {"after import": torch.axon.is_initialized()}
torch.axon.device_count(); torch.axon.is_available(); torch.accelerator.device_count()
report["after device_count"] = torch.axon.is_initialized()
torch.axon.set_device(1); torch.axon.current_device()
with torch.axon.device(0):
    pass
report["after set_device"] = torch.axon.is_initialized()
torch.manual_seed(1); torch.axon.manual_seed(2); torch.axon.manual_seed_all(3)
report["after manual_seed"] = torch.axon.is_initialized()
torch.axon.memory_allocated(); torch.axon.memory_stats(); torch.axon.empty_cache()
report["after memory stats"] = torch.axon.is_initialized()
torch.zeros(1, device="axon")
report["after a tensor"] = torch.axon.is_initialized()
print(json.dumps(report))
"""


def test_counting_choosing_and_seeding_do_not_start_the_runtime(python):
    proc = python(_LAZY)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report == {
        "after import": False,
        "after device_count": False,
        "after set_device": False,
        "after manual_seed": False,
        "after memory stats": False,
        "after a tensor": True,
    }

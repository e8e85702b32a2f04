"""The host fallback: ops without a native axon kernel run PyTorch's CPU kernel on the device's memory.

Checked here: results match CPU, uses are counted per op and warned about once, strict mode refuses them, out= and
in-place results are the caller's tensors, view results alias the axon input, stream order is kept, and training
(autograd through the fallback, optimizers) matches CPU.

float32 results of the same CPU kernels are compared with atol = rtol = 1e-5 (TOLERANCES); integer results exactly.
"""

import pytest
import torch
import torch.nn as nn

import torch_axon
from axon_testing import assert_close, assert_exact, run_python, sample, two_devices


def host_only(t):
    """An op axon runs through the host fallback (logaddexp of complex tensors; the conversion itself is native)."""
    c = t.to(torch.complex64)
    return torch.logaddexp(c, c)


@pytest.fixture
def counted():
    """Fallback statistics start empty for the test."""
    torch_axon.reset_fallback_stats()
    yield
    torch_axon.reset_fallback_stats()


@pytest.fixture
def strict():
    """Strict mode for the test, restored afterwards whatever happens."""
    before = torch_axon.is_strict()
    torch_axon.set_strict(True)
    yield
    torch_axon.set_strict(before)


# --- results -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [
    lambda t: torch.linalg.matrix_exp(t.to(torch.bfloat16)),
    lambda t: torch.nn.functional.interpolate((t.abs() * 25500).to(torch.uint8)[None, None], size=(9, 4),
                                              mode="bicubic"),
    lambda t: torch.nn.functional.interpolate((t.abs() * 25500).to(torch.uint8)[None, None], size=(3, 3),
                                              mode="bilinear", antialias=True),
    lambda t: torch.logaddexp(t.to(torch.complex64), t.t().to(torch.complex64)),
    lambda t: t @ t.t(),
], ids=["matrix_exp_bfloat16", "bicubic_uint8", "bilinear_antialias_uint8",
        "logaddexp_complex", "matmul"])
def test_an_op_without_a_native_kernel_matches_cpu(op):
    x = sample(torch.float32, (6, 6)).nan_to_num(0, 1e3, -1e3) / 100
    got, want = op(x.to("axon")), op(x)
    assert got.device == torch.device("axon", 0)
    if want.dtype.is_floating_point:
        assert_close(got, want)
    else:
        assert_exact(got, want)


def test_an_op_with_several_results_returns_them_all_on_axon():
    x = sample(torch.float64, (4, 7), seed=2).nan_to_num(0, 1e3, -1e3)
    values, indices = torch.sort(x.to("axon"), dim=1, stable=True)
    want_values, want_indices = torch.sort(x, dim=1, stable=True)
    assert values.device.type == indices.device.type == "axon"
    assert_exact(values, want_values)
    assert_exact(indices, want_indices)


def test_an_op_returning_a_list_returns_axon_tensors():
    a, b = torch.arange(3.0), torch.arange(4.0)
    out = torch._foreach_mul([a.to("axon"), b.to("axon")], 2.0)
    assert [t.device.type for t in out] == ["axon", "axon"]
    assert_exact(out[0], a * 2)
    assert_exact(out[1], b * 2)


def test_an_op_returning_a_python_value_returns_it():
    a = torch.arange(5.0, device="axon")
    assert torch.equal(a, a.clone()) is True
    assert torch.allclose(a, a + 1e-9)


@two_devices
def test_a_fallback_result_stays_on_the_inputs_device():
    x = torch.arange(6.0).reshape(2, 3).to(torch.complex64)
    r = torch.logaddexp(x.to("axon:1")[:, :2], x.to("axon:1")[:, 1:])
    assert r.device == torch.device("axon", 1)
    assert_exact(torch.view_as_real(r), torch.view_as_real(torch.logaddexp(x[:, :2], x[:, 1:])))


# --- counting, warning and strict mode ---------------------------------------------------------------------------


def test_fallback_stats_count_each_op_by_name(counted):
    c = torch.randn(5, device="axon").to(torch.complex64)
    torch.logaddexp(c, c)
    torch.logaddexp(c, c)
    torch.linalg.matrix_exp(torch.eye(2, device="axon", dtype=torch.bfloat16))
    stats = torch_axon.fallback_stats()
    assert stats["aten::logaddexp"] == 2
    assert stats["aten::linalg_matrix_exp"] == 1
    assert set(stats) == {"aten::logaddexp", "aten::linalg_matrix_exp"}
    torch_axon.reset_fallback_stats()
    assert torch_axon.fallback_stats() == {}


def test_native_ops_are_not_counted(counted):
    x = torch.zeros(4, 4, device="axon")
    x.fill_(1.0)
    x.t().contiguous().cpu()
    torch.rand(3, device="axon")
    x.view(16)[::2].copy_(torch.ones(8))
    assert torch_axon.fallback_stats() == {}


def test_fallback_stats_returns_a_copy(counted):
    c = torch.ones(2, 2, device="axon").to(torch.complex64)
    torch.logaddexp(c, c)
    stats = torch_axon.fallback_stats()
    stats.clear()
    assert torch_axon.fallback_stats() == {"aten::logaddexp": 1}


_WARN_ONCE = """
import warnings, torch, torch_axon
c = torch.ones(3, device="axon").to(torch.complex64)
b = torch.eye(2, device="axon", dtype=torch.bfloat16)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(3):
        torch.linalg.matrix_exp(b)
    torch_axon.reset_fallback_stats()
    torch.linalg.matrix_exp(b)
    torch.logaddexp(c, c)
ours = [w for w in caught if "host fallback" in str(w.message)]
print([str(w.message).split(" has ")[0] for w in ours])
print({w.category.__name__ for w in ours})
print(str(ours[0].message))
print(torch_axon.fallback_stats())
"""


def test_the_fallback_warns_once_per_op_per_process():
    # Once per op even after reset_fallback_stats(), which resets only the counts.
    out = run_python(_WARN_ONCE).stdout.splitlines()
    assert out[0] == "['axon: aten::linalg_matrix_exp', 'axon: aten::logaddexp']"
    assert out[1] == "{'UserWarning'}"
    assert "no native axon kernel" in out[2] and "torch_axon.fallback_stats()" in out[2]
    assert out[3] == "{'aten::linalg_matrix_exp': 1, 'aten::logaddexp': 1}"


def test_strict_mode_refuses_the_fallback_naming_the_op(strict):
    assert torch_axon.is_strict()
    x = torch.ones(3, device="axon")
    c = x.to(torch.complex64)
    with pytest.raises(RuntimeError, match=r"aten::logaddexp has no native axon kernel.*AXON_STRICT"):
        torch.logaddexp(c, c)
    # native ops, views and copies still work
    assert_exact(x.view(3, 1).t().contiguous(), torch.ones(1, 3))
    x.fill_(2.0)
    assert_exact(x.cpu(), torch.full((3,), 2.0))


def test_leaving_strict_mode_allows_the_fallback_again():
    before = torch_axon.is_strict()
    torch_axon.set_strict(True)
    try:
        with pytest.raises(RuntimeError):
            torch.linalg.matrix_exp(torch.zeros(2, 2, device="axon", dtype=torch.bfloat16))
    finally:
        torch_axon.set_strict(False)
    assert not torch_axon.is_strict()
    r = torch.linalg.matrix_exp(torch.zeros(2, 2, device="axon", dtype=torch.bfloat16))
    assert torch.equal(r.cpu(), torch.eye(2, dtype=torch.bfloat16))
    torch_axon.set_strict(before)


def test_AXON_STRICT_1_refuses_the_fallback_from_start_up():
    code = """
import torch, torch_axon
print(torch_axon.is_strict())
x = torch.ones(3, device="axon")
print(x.cpu().tolist())
try:
    torch.logaddexp(x.to(torch.complex64), x.to(torch.complex64))
except RuntimeError as e:
    print(str(e).splitlines()[0])
"""
    out = run_python(code, AXON_STRICT="1").stdout.splitlines()
    assert out[0] == "True"
    assert out[1] == "[1.0, 1.0, 1.0]"
    assert "aten::logaddexp has no native axon kernel" in out[2]
    assert "AXON_STRICT=1" in out[2]


# --- out=, in-place and aliasing results -------------------------------------------------------------------------


def test_out_variant_resizes_an_empty_output_and_returns_it():
    x = torch.arange(12.0).reshape(3, 4).to(torch.complex64)
    out = torch.empty(0, dtype=torch.complex64, device="axon")
    r = torch.logaddexp(x.to("axon"), x.to("axon"), out=out)   # the host fallback
    assert r is out
    assert out.shape == (3, 4) and out.device.type == "axon"
    assert_exact(out, torch.logaddexp(x, x))


def test_out_variant_resizes_a_too_small_output_keeping_its_dtype():
    x = torch.arange(6, dtype=torch.int32)
    out = torch.empty(2, dtype=torch.int64, device="axon")
    torch.cumsum(x.to("axon"), 0, out=out)
    assert (out.shape, out.dtype) == ((6,), torch.int64)
    assert_exact(out, torch.cumsum(x, 0, dtype=torch.int64))


def test_out_variant_with_the_right_size_writes_in_place():
    x = torch.arange(6.0).to(torch.complex64)
    out = torch.full((6,), -1.0, dtype=torch.complex64, device="axon")
    ptr = out.data_ptr()
    torch.logaddexp(x.to("axon"), x.to("axon"), out=out)   # the host fallback
    assert out.data_ptr() == ptr
    assert_exact(out, torch.logaddexp(x, x))


def test_out_variant_into_a_strided_view_writes_through():
    base = torch.zeros(4, 6, dtype=torch.complex64, device="axon")
    ones = torch.ones(4, 3, dtype=torch.complex64)
    torch.logaddexp(ones.to("axon"), ones.to("axon"), out=base[:, ::2])   # the host fallback
    expected = torch.zeros(4, 6, dtype=torch.complex64)
    expected[:, ::2] = torch.logaddexp(ones, ones)
    assert_exact(base, expected)


def test_out_variant_with_several_outputs_resizes_both():
    x = sample(torch.float32, (3, 5), seed=4).nan_to_num(0, 10, -10)
    values, indices = torch.empty(0, device="axon"), torch.empty(0, dtype=torch.int64, device="axon")
    torch.sort(x.to("axon"), 1, out=(values, indices))
    want_values, want_indices = torch.sort(x, 1)
    assert_exact(values, want_values)
    assert_exact(indices, want_indices)


def test_out_variant_with_a_wrong_dtype_fails_as_on_cpu():
    with pytest.raises(RuntimeError) as cpu_error:
        torch.sort(torch.ones(3), out=(torch.empty(0), torch.empty(0)))
    with pytest.raises(RuntimeError) as axon_error:
        torch.sort(torch.ones(3, device="axon"), out=(torch.empty(0, device="axon"), torch.empty(0, device="axon")))
    assert str(cpu_error.value).splitlines()[0] in str(axon_error.value)


@pytest.mark.parametrize("op", [
    lambda t: t.add_(1.5),
    lambda t: t.mul_(torch.tensor(2.0)),
    lambda t: t.cumsum_(0),
    lambda t: t.clamp_(min=0),
    lambda t: t.exp_(),
    lambda t: t.t_().abs_(),
], ids=["add_", "mul_scalar_tensor", "cumsum_", "clamp_", "exp_", "t_abs_"])
def test_in_place_ops_return_the_same_tensor(op):
    x = torch.linspace(-2, 2, 12).reshape(3, 4)
    a = x.to("axon")
    ptr = a.data_ptr()
    r = op(a)
    assert r is a
    assert a.data_ptr() == ptr
    assert_close(a, op(x.clone()))


def test_in_place_op_on_a_view_updates_the_base():
    base = torch.zeros(3, 4, device="axon")
    base[1:, ::2].add_(5.0)
    expected = torch.zeros(3, 4)
    expected[1:, ::2] += 5.0
    assert_exact(base, expected)


@pytest.fixture(scope="module")
def view_ops():
    """Custom ops with only a CPU kernel that return (a view of) their input: on axon, they reach the fallback."""
    lib = torch.library.Library("axon_fallback_test", "DEF")
    lib.define("first_row(Tensor(a) x) -> Tensor(a)")
    lib.impl("first_row", lambda t: t[0], "CPU")
    lib.define("itself(Tensor(a) x) -> Tensor(a)")
    lib.impl("itself", lambda t: t, "CPU")
    yield torch.ops.axon_fallback_test
    lib._destroy()


def test_a_view_returned_by_the_fallback_aliases_the_axon_input(view_ops):
    a = torch.arange(12.0).reshape(3, 4).to("axon")
    row = view_ops.first_row(a[1:])
    assert row.device == a.device
    assert row.untyped_storage().data_ptr() == a.untyped_storage().data_ptr()
    assert (row.shape, row.stride(), row.storage_offset()) == ((4,), (1,), 4)
    row.fill_(-1.0)
    expected = torch.arange(12.0).reshape(3, 4)
    expected[1] = -1.0
    assert_exact(a, expected)


def test_an_input_returned_by_the_fallback_is_the_same_axon_tensor(view_ops):
    a = torch.arange(4.0, device="axon")
    r = view_ops.itself(a)
    assert r.device == a.device
    assert r.data_ptr() == a.data_ptr()


# --- stream order ------------------------------------------------------------------------------------------------


def test_a_fallback_op_sees_the_result_of_an_earlier_asynchronous_kernel(counted):
    x = torch.empty(1 << 22, device="axon")
    for value in (1.0, 2.0, 3.0):
        x.fill_(value)  # queued on the stream; may still be running
        # the host read what the queued fill wrote
        assert host_only(x)[-1].item() == host_only(torch.tensor(value)).item()
    assert torch_axon.fallback_stats() == {"aten::logaddexp": 3}


def test_a_fallback_op_on_a_side_stream_sees_that_streams_earlier_kernels():
    s = torch.axon.Stream()
    x = torch.zeros(1 << 21, device="axon")
    torch.axon.synchronize()
    with torch.axon.stream(s):
        x.fill_(4.0)
        r = host_only(x)
    s.synchronize()
    assert r[-1].item() == host_only(torch.tensor(4.0)).item()


def test_a_kernel_after_a_fallback_op_sees_its_result():
    x = torch.arange(1 << 16, dtype=torch.float64) / (1 << 14)
    y = host_only(x.to("axon"))  # fallback, on the host
    z = torch.empty_like(y).copy_(y.t())  # native kernel on the stream
    assert_exact(z, host_only(x))


# --- training ----------------------------------------------------------------------------------------------------


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _data():
    g = torch.Generator().manual_seed(1)
    return torch.randn(32, 8, generator=g), torch.randn(32, 4, generator=g)


def test_mlp_forward_and_backward_on_axon_match_cpu():
    x, y = _data()
    cpu_model, axon_model = _mlp(), _mlp().to("axon")
    assert all(p.device.type == "axon" for p in axon_model.parameters())
    cpu_loss = nn.functional.mse_loss(cpu_model(x), y)
    axon_x = x.to("axon").requires_grad_()
    axon_loss = nn.functional.mse_loss(axon_model(axon_x), y.to("axon"))
    assert axon_loss.device.type == "axon"
    assert_close(axon_loss, cpu_loss.detach())
    cpu_x = x.clone().requires_grad_()
    nn.functional.mse_loss(cpu_model(cpu_x), y).backward()
    axon_loss.backward()
    for (name, cp), ap in zip(cpu_model.named_parameters(), axon_model.parameters()):
        assert ap.grad is not None and ap.grad.device.type == "axon", name
        assert_close(ap.grad, cp.grad)
    assert_close(axon_x.grad, cpu_x.grad)


def test_gradients_accumulate_across_backward_calls():
    x, y = _data()
    model = _mlp().to("axon")
    for _ in range(2):
        nn.functional.mse_loss(model(x.to("axon")), y.to("axon")).backward()
    reference = _mlp()
    for _ in range(2):
        nn.functional.mse_loss(reference(x), y).backward()
    for a, c in zip(model.parameters(), reference.parameters()):
        assert_close(a.grad, c.grad)


@pytest.mark.parametrize("make_optimizer", [
    lambda p, foreach: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-3, foreach=foreach),
    lambda p, foreach: torch.optim.Adam(p, lr=1e-2, foreach=foreach),
    lambda p, foreach: torch.optim.AdamW(p, lr=1e-2, amsgrad=True, foreach=foreach),
], ids=["sgd_momentum", "adam", "adamw_amsgrad"])
@pytest.mark.parametrize("foreach", [False, True], ids=["for_loop", "foreach"])
def test_optimizer_steps_on_axon_match_cpu(make_optimizer, foreach):
    x, y = _data()
    models = {"cpu": _mlp(), "axon": _mlp().to("axon")}
    for device, model in models.items():
        opt = make_optimizer(model.parameters(), foreach)
        for _ in range(3):
            opt.zero_grad()
            nn.functional.mse_loss(model(x.to(device)), y.to(device)).backward()
            opt.step()
    for a, c in zip(models["axon"].parameters(), models["cpu"].parameters()):
        assert a.device.type == "axon"
        assert_close(a.detach(), c.detach())


@pytest.mark.parametrize("conv", [nn.Conv1d(3, 4, 3, padding=1), nn.Conv2d(3, 4, 3, stride=2),
                                  nn.ConvTranspose2d(3, 2, 3), nn.Conv3d(3, 2, 2)],
                         ids=["conv1d", "conv2d", "conv_transpose2d", "conv3d"])
def test_convolution_forward_and_backward_on_axon_match_cpu(conv):
    # PyTorch's device-independent convolution would call convolution_overrideable, which only throws.
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 3, *([5] * (conv.weight.dim() - 2)), generator=g)
    axon_conv = type(conv)(conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride,
                           padding=conv.padding).to("axon")
    axon_conv.load_state_dict(conv.state_dict())
    cpu_x, axon_x = x.clone().requires_grad_(), x.to("axon").requires_grad_()
    cpu_out, axon_out = conv(cpu_x), axon_conv(axon_x)
    assert axon_out.device.type == "axon"
    assert_close(axon_out, cpu_out.detach())
    cpu_out.square().sum().backward()
    axon_out.square().sum().backward()
    assert_close(axon_x.grad, cpu_x.grad)
    assert_close(axon_conv.weight.grad, conv.weight.grad)
    assert_close(axon_conv.bias.grad, conv.bias.grad)


def test_an_empty_result_is_not_mistaken_for_a_view_of_an_empty_argument():
    # Empty tensors share a null data pointer: nonzero's int64 result must not come back as the float input.
    x = torch.zeros(0, 2, device="axon")
    assert torch.nonzero(x).dtype == torch.int64
    assert torch.argwhere(x).shape == (0, 2)


def test_an_out_argument_keeps_the_conjugate_bit_the_kernel_set():
    # linalg_lu_solve(left=False) returns its out= argument as a conjugated view.
    g = torch.Generator().manual_seed(0)
    a = torch.randn(3, 3, dtype=torch.complex128, generator=g)
    b = torch.randn(4, 3, dtype=torch.complex128, generator=g)
    lu, piv = torch.linalg.lu_factor(a)
    want = torch.linalg.lu_solve(lu, piv, b, left=False)
    got = torch.linalg.lu_solve(lu.to("axon"), piv.to("axon"), b.to("axon"), left=False)
    torch.testing.assert_close(got.cpu(), want, rtol=1e-12, atol=1e-12)


def test_an_out_argument_moved_to_a_padded_layout_is_copied_whole():
    # lstsq's CPU kernel returns a column-major solution with a leading dimension larger than its rows (a broadcast
    # batch, which libaxon's lstsq leaves to the host).
    g = torch.Generator().manual_seed(1)
    a = torch.randn(2, 3, 3, dtype=torch.float64, generator=g)
    b = torch.randn(1, 3, 4, dtype=torch.float64, generator=g)
    want = torch.linalg.lstsq(a, b).solution
    got = torch.linalg.lstsq(a.to("axon"), b.to("axon")).solution
    torch.testing.assert_close(got.cpu(), want, rtol=1e-10, atol=1e-10)

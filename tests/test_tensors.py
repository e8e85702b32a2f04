"""Tensors on axon: factories, copies between CPU and axon and between axon devices, dtype conversion, reading
values back (item, tolist, printing), resizing and set_, device checks, and tensors without elements.

Every result is compared with PyTorch on CPU, exactly: these are copies, fills and exactly representable casts.
"""

import pytest
import torch

import torch_axon  # noqa: F401
from axon_testing import (ALL_DTYPES, KERNEL_DTYPES, assert_exact, assert_same_values, bits, dtype_id,
                          libaxon_commands, native, sample, two_devices)

all_dtypes = pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_id)
kernel_dtypes = pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)


# --- factories ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool, torch.complex64],
                         ids=dtype_id)
def test_empty_has_the_requested_shape_dtype_and_device(dtype):
    t = torch.empty(2, 3, 4, dtype=dtype, device="axon")
    assert t.shape == (2, 3, 4)
    assert t.dtype == dtype
    assert t.device == torch.device("axon", 0)
    assert t.is_axon
    assert t.is_contiguous()
    assert t.stride() == (12, 4, 1)


def test_empty_without_a_dtype_uses_the_default_dtype():
    assert torch.empty(3, device="axon").dtype == torch.get_default_dtype()


def test_empty_in_channels_last_format_has_channels_last_strides():
    t = torch.empty(2, 3, 4, 5, device="axon", memory_format=torch.channels_last)
    assert t.stride() == torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()
    assert t.is_contiguous(memory_format=torch.channels_last)


@two_devices
def test_factories_allocate_on_the_requested_device_without_changing_the_current_one():
    t = torch.zeros(3, device="axon:1")
    assert t.device == torch.device("axon", 1)
    assert torch.axon.current_device() == 0
    assert_exact(t, torch.zeros(3))
    with torch.axon.device(1):
        assert torch.empty(2, device="axon").device == torch.device("axon", 1)


@all_dtypes
def test_zeros_and_ones_match_cpu(dtype):
    assert_exact(torch.zeros(4, 3, dtype=dtype, device="axon"), torch.zeros(4, 3, dtype=dtype))
    assert_exact(torch.ones(4, 3, dtype=dtype, device="axon"), torch.ones(4, 3, dtype=dtype))


@pytest.mark.parametrize(
    "dtype, value",
    [(torch.float32, 2.5), (torch.float64, -1e300), (torch.float16, 65504.0), (torch.bfloat16, -3.0),
     (torch.float32, float("nan")), (torch.float32, float("-inf")), (torch.int8, -128), (torch.uint8, 255),
     (torch.int16, -32768), (torch.int32, 2**31 - 1), (torch.int64, -(2**63)), (torch.int64, 2**62 + 1),
     (torch.bool, True), (torch.complex64, 1.5 - 2j), (torch.complex128, 1e200 + 3j), (torch.float8_e4m3fn, 448.0),
     (torch.float8_e5m2, -0.0), (torch.uint16, 65535), (torch.uint32, 2**32 - 1), (torch.uint64, 2**63 + 5),
     (torch.complex32, 0.5 + 1j)],
    ids=lambda v: dtype_id(v) if isinstance(v, torch.dtype) else str(v),
)
def test_full_matches_cpu(dtype, value):
    assert_exact(torch.full((3, 4), value, dtype=dtype, device="axon"), torch.full((3, 4), value, dtype=dtype))


@pytest.mark.parametrize("dtype, value", [(torch.int8, 300), (torch.uint8, 256), (torch.int16, 2**15),
                                          (torch.uint16, 70000), (torch.float16, 1e6), (torch.bfloat16, 1e39),
                                          (torch.float8_e4m3fn, 1000.0)],
                         ids=lambda v: dtype_id(v) if isinstance(v, torch.dtype) else str(v))
def test_full_with_a_value_that_overflows_the_dtype_fails_as_on_cpu(dtype, value):
    with pytest.raises(RuntimeError) as cpu_error:
        torch.full((3,), value, dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow") as axon_error:
        torch.full((3,), value, dtype=dtype, device="axon")
    assert str(axon_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]


def test_fill_value_rounds_float64_to_bfloat16_and_float16_as_cpu_does():
    # Above the half-way point between two bf16 (fp16) values by less than float32 can hold: PyTorch converts the
    # value to float32 first, where it becomes a tie that rounds to even.
    for dtype, value in ((torch.bfloat16, 1.0 + 2**-8 + 2**-30), (torch.float16, 1.0 + 2**-11 + 2**-40)):
        assert_exact(torch.full((5,), value, dtype=dtype, device="axon"), torch.full((5,), value, dtype=dtype))


@pytest.mark.parametrize(
    "args, dtype",
    [((10,), None), ((2, 20, 3), None), ((-5, 5), torch.int8), ((0.0, 1.0, 0.1), None), ((1, 2.5, 0.25), None),
     ((0, 10, 3), torch.float64), ((10, 0, -2), torch.int32), ((-1.0, 1.0, 0.3), torch.float16),
     ((0, 3, 0.5), torch.bfloat16), ((5,), torch.uint8)],
    ids=str,
)
def test_arange_matches_cpu(args, dtype):
    torch_axon.reset_fallback_stats()
    assert_exact(torch.arange(*args, dtype=dtype, device="axon"), torch.arange(*args, dtype=dtype))
    assert "aten::arange.start_out" not in torch_axon.fallback_stats()  # libaxon's arange kernel, not the host


@pytest.mark.parametrize("n, m, dtype", [(3, None, torch.float32), (3, 5, torch.int32), (4, 2, torch.bool),
                                         (1, None, torch.float16)], ids=str)
def test_eye_matches_cpu(n, m, dtype):
    args = (n,) if m is None else (n, m)
    assert_exact(torch.eye(*args, dtype=dtype, device="axon"), torch.eye(*args, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=dtype_id)
def test_rand_and_randn_have_the_requested_shape_and_dtype(dtype):
    for factory in (torch.rand, torch.randn):
        t = factory(2, 3, 5, dtype=dtype, device="axon")
        assert (t.shape, t.dtype, t.device) == ((2, 3, 5), dtype, torch.device("axon", 0))
    assert torch.rand(3, device="axon").dtype == torch.float32


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8, torch.float32, torch.float64],
                         ids=dtype_id)
def test_randint_has_the_requested_shape_dtype_and_range(dtype):
    t = torch.randint(3, 10, (4, 50), dtype=dtype, device="axon")
    assert (t.shape, t.dtype, t.device.type) == ((4, 50), dtype, "axon")
    c = t.cpu()
    assert c.min() >= 3 and c.max() < 10
    assert torch.randint(5, (7,), device="axon").dtype == torch.int64


def test_empty_strided_has_the_requested_strides():
    t = torch.empty_strided((2, 3), (1, 2), device="axon", dtype=torch.float64)
    assert (t.shape, t.stride(), t.dtype, t.device.type) == ((2, 3), (1, 2), torch.float64, "axon")
    assert t.untyped_storage().nbytes() == 6 * 8
    t.copy_(torch.arange(6.0, dtype=torch.float64).reshape(2, 3))
    assert_exact(t, torch.arange(6.0, dtype=torch.float64).reshape(2, 3))


def test_like_factories_keep_shape_dtype_and_device():
    base = torch.empty(3, 4, dtype=torch.float16, device="axon")
    for factory in (torch.empty_like, torch.zeros_like, torch.ones_like, torch.rand_like, torch.randn_like):
        t = factory(base)
        assert (t.shape, t.dtype, t.device) == (base.shape, base.dtype, base.device)
    assert_exact(torch.zeros_like(base), torch.zeros(3, 4, dtype=torch.float16))
    assert_exact(torch.ones_like(base), torch.ones(3, 4, dtype=torch.float16))
    assert_exact(torch.full_like(base, 7), torch.full((3, 4), 7, dtype=torch.float16))
    t = torch.randint_like(base, 4)
    assert t.dtype == torch.float16 and t.device == base.device
    assert_exact(torch.zeros_like(torch.ones(3), device="axon"), torch.zeros(3))


def test_like_factories_preserve_the_strides_of_a_dense_transposed_input():
    base = torch.empty(3, 4, device="axon").t()
    assert torch.empty_like(base).stride() == torch.empty(3, 4).t().stride() == (1, 4)


# --- copies ------------------------------------------------------------------------------------------------------


@all_dtypes
def test_copy_to_axon_and_back_is_exact(dtype):
    x = sample(dtype)
    a = x.to("axon")
    assert a.device == torch.device("axon", 0) and a.dtype == dtype
    assert_exact(a, x)


@all_dtypes
def test_copy_of_non_contiguous_tensors_is_exact_in_both_directions(dtype):
    x = sample(dtype, (6, 8))
    src = x.t()[1::2, ::3]  # transposed and sliced with steps
    assert_exact(src.to("axon"), src.contiguous())
    a = x.to("axon")
    assert_exact(a.t()[1::2, ::3].cpu(), src.contiguous())
    # a strided destination on axon, and one on the CPU
    dst = torch.zeros(8, 6, dtype=dtype, device="axon").t()
    dst.copy_(x)
    assert_exact(dst, x)
    host = torch.zeros(8, 6, dtype=dtype).t()
    host.copy_(a)
    assert_exact(host, x)


@all_dtypes
def test_copy_with_a_narrow_fastest_dimension_is_exact(dtype):
    # dst's fastest dimension has 2-7 elements and src steps far along it: an image into channels-last, a [n, k]
    # transpose, pixel_shuffle's pairs (the copy runs along src's fastest dimension instead)
    x = sample(dtype, (2, 3, 40, 33))
    a = x.to("axon")
    assert_exact(a.permute(0, 2, 3, 1).contiguous(), x.permute(0, 2, 3, 1).contiguous())
    assert_exact(a.permute(0, 2, 3, 1)[:, 1::3, ::2].contiguous(), x.permute(0, 2, 3, 1)[:, 1::3, ::2].contiguous())
    for k in (2, 3, 7):
        t = sample(dtype, (k, 301), seed=k)
        assert_exact(t.to("axon").t().contiguous(), t.t().contiguous())
        dst = torch.zeros(301, k + 1, dtype=dtype, device="axon")[:, :k]  # a strided destination
        dst.copy_(t.to("axon").t())
        assert_exact(dst, t.t())
    if dtype.is_floating_point and not dtype.is_complex:  # with a conversion
        assert_exact(a.permute(0, 2, 3, 1).to(torch.float64), x.permute(0, 2, 3, 1).to(torch.float64))


@all_dtypes
def test_copy_within_axon_is_exact(dtype):
    a = sample(dtype, (4, 6)).to("axon")
    assert_exact(a.clone(), a.cpu())
    dst = torch.empty(6, 4, dtype=dtype, device="axon").t()
    dst.copy_(a)
    assert_exact(dst, a.cpu())
    assert_exact(a[:, ::2].contiguous(), a.cpu()[:, ::2])


@all_dtypes
def test_broadcasting_copy_into_a_bigger_destination_is_exact(dtype):
    row = sample(dtype, (1, 5))
    for src in (row, row.to("axon")):
        dst = torch.zeros(4, 5, dtype=dtype, device="axon")
        dst.copy_(src)
        assert_exact(dst, row.expand(4, 5))
    col = sample(dtype, (3, 1), seed=1).to("axon")
    dst = torch.zeros(3, 4, dtype=dtype, device="axon")
    dst.copy_(col.expand(3, 4))
    assert_exact(dst, col.cpu().expand(3, 4))
    host = torch.zeros(3, 4, dtype=dtype)
    host.copy_(col)
    assert_exact(host, col.cpu().expand(3, 4))


@pytest.mark.parametrize("to", [torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.uint8, torch.bool],
                         ids=str)
def test_short_rows_convert_fill_and_move_like_cpu(to):
    # Rows of a few elements go through libaxon's row loop: moved as bytes, filled from a broadcast element, or
    # converted row by row (strided sources, other dtypes), over two and three outer dimensions.
    x = torch.randn(37, 5, 24, generator=torch.Generator().manual_seed(2)) * 50
    views = [lambda t: t[:, :, :3], lambda t: t[:, :, ::2], lambda t: t[:, :1, :16].expand(37, 5, 16),
             lambda t: t[:, :, :1].expand(37, 5, 7), lambda t: t[:, 1:4, 2:9].transpose(0, 1)]
    for view in views:
        for dtype in (x.dtype, to):
            want = view(x).to(dtype)
            got = view(x.to("axon")).to(dtype)
            assert_exact(got, want)
            assert_exact(view(x.to("axon")).contiguous(), view(x).contiguous())


def _exact_values(dtype):
    """Values every dtype in the conversion tests represents exactly: small integers (and 0/1 for bool)."""
    if dtype == torch.bool:
        return torch.tensor([[True, False, True], [False, False, True]])
    values = torch.tensor([[0.0, 1.0, -2.0], [3.0, 7.0, -8.0]])
    if not dtype.is_complex and not dtype.is_floating_point and not dtype.is_signed:
        values = values.abs()
    return values.to(dtype)


@pytest.mark.parametrize("src_dtype", ALL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dst_dtype", ALL_DTYPES, ids=dtype_id)
def test_converting_copies_of_representable_values_match_cpu_in_every_direction(src_dtype, dst_dtype):
    x = _exact_values(src_dtype)
    expected = x.to(dst_dtype)
    assert_exact(x.to("axon", dst_dtype), expected)  # host to device, converting
    a = x.to("axon")
    assert_exact(a.to(dst_dtype), expected)  # on the device
    assert_exact(a.to("cpu", dst_dtype), expected)  # device to host, converting
    assert_exact(a.t().to(dst_dtype), expected.t())  # strided source
    dst = torch.empty(3, 2, dtype=dst_dtype, device="axon").t()
    dst.copy_(a)  # strided destination
    assert_exact(dst, expected)


@pytest.mark.parametrize("src_dtype", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dst_dtype", KERNEL_DTYPES, ids=dtype_id)
def test_converting_copies_of_arbitrary_values_match_cpu(src_dtype, dst_dtype):
    # Rounding to narrower floats, truncation toward zero, bool of NaN, complex to real. Values outside the range
    # of an integer destination are left out, and NaN payloads are not compared: PyTorch's results for those depend
    # on its vectorization.
    x = sample(src_dtype, (4, 9))
    if not dst_dtype.is_floating_point and not dst_dtype.is_complex and dst_dtype != torch.bool:
        if src_dtype.is_floating_point or src_dtype.is_complex:
            info = torch.iinfo(dst_dtype)
            real = x.real if src_dtype.is_complex else x
            keep = real.isfinite() & (real.double() > info.min) & (real.double() < info.max)
            x = torch.where(keep, x, torch.zeros((), dtype=src_dtype))
    assert_same_values(x.to("axon").to(dst_dtype), x.to(dst_dtype))
    assert_same_values(x.to("axon", dst_dtype), x.to(dst_dtype))
    assert_same_values(x.to("axon").to("cpu", dst_dtype), x.to(dst_dtype))


@pytest.mark.parametrize("other", KERNEL_DTYPES, ids=dtype_id)
def test_complex32_conversions_run_on_the_device_in_one_copy(other):
    # Rounding (70000 overflows float16), inf, NaN and -0.0 in both parts; strided and broadcast sources. complex32
    # is a storage dtype of libaxon's copy kernel: every conversion, complex32 -> bool (true if either part is
    # nonzero) included, is one command.
    x = sample(other, (4, 9))
    if other.is_floating_point or other.is_complex:
        x[0, :3] = torch.tensor([70000.0, 1e-8, -0.0]).to(other)
    for src in (x, x.t().contiguous().t(), x[:, ::2], x[:1].expand(4, 9)):
        want = src.to(torch.complex32)
        a = src.to("axon")
        assert_same_values(a.to(torch.complex32), want)
        assert libaxon_commands(lambda: a.to(torch.complex32)) == ["tensor_copy"]
        half = want.to("axon")
        assert_same_values(half.to(other), want.to(other))
        assert libaxon_commands(lambda: half.to(other)) == ["tensor_copy"]
    out = torch.empty(9, 4, dtype=torch.complex32, device="axon").t()  # a strided destination
    out.copy_(x.to("axon"))
    assert_same_values(out, x.to(torch.complex32))


def test_float64_to_bfloat16_and_float16_rounds_through_float32_as_pytorch_does():
    x = torch.tensor([1.0 + 2**-8 + 2**-30, 1.0 + 2**-11 + 2**-40, -(1.0 + 2**-8 + 2**-30)], dtype=torch.float64)
    for dtype in (torch.bfloat16, torch.float16):
        assert_exact(x.to("axon").to(dtype), x.to(dtype))


@two_devices
@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.complex128, torch.float8_e4m3fn], ids=dtype_id)
def test_copy_between_axon_devices_is_exact(dtype):
    x = sample(dtype, (5, 6))
    a0 = x.to("axon:0")
    a1 = a0.to("axon:1")
    assert a1.device == torch.device("axon", 1)
    assert_exact(a1, x)
    assert_exact(a0.t().to("axon:1"), x.t())  # strided source
    dst = torch.zeros(6, 5, dtype=dtype, device="axon:1").t()
    dst.copy_(a0)
    assert_exact(dst, x)
    assert_exact(a1.to("axon:0", torch.float64), x.to(torch.float64))  # converting


@two_devices
def test_copy_between_devices_waits_for_the_sources_pending_work():
    # A large fill queued on axon:0, then an immediate copy to axon:1 must see the filled values.
    src = torch.empty(1 << 20, device="axon:0")
    src.fill_(3.0)
    dst = src.to("axon:1")
    assert_exact(dst[-4:], torch.full((4,), 3.0))
    src.fill_(4.0)
    dst.copy_(src)
    assert dst[-1].item() == 4.0


def test_non_blocking_copy_from_pinned_memory_arrives_after_synchronize():
    x = sample(torch.float32, (64, 64)).pin_memory()
    a = x.to("axon", non_blocking=True)
    torch.axon.synchronize()
    assert_exact(a, x)
    back = torch.empty(64, 64).pin_memory()
    back.copy_(a, non_blocking=True)
    torch.axon.synchronize()
    assert_exact(back, x)


def test_non_blocking_copy_from_pageable_memory_is_complete_on_return():
    x = sample(torch.float64, (32, 32))
    dst = torch.empty(32, 32, dtype=torch.float64, device="axon")
    dst.copy_(x, non_blocking=True)
    x.zero_()  # the host buffer may be reused at once
    assert_exact(dst, sample(torch.float64, (32, 32)))
    host = torch.empty(32, 32, dtype=torch.float64)
    host.copy_(dst, non_blocking=True)
    assert_exact(host, sample(torch.float64, (32, 32)))


def test_copy_from_a_conjugated_or_negated_view_resolves_the_bits():
    z = sample(torch.complex64, (3, 4))
    assert_exact(z.conj().to("axon"), z.conj().resolve_conj())
    a = z.to("axon")
    assert a.conj().is_conj()
    assert_exact(a.conj().cpu(), z.conj().resolve_conj())
    assert_exact(torch.empty_like(a).copy_(a.conj()), z.conj().resolve_conj())
    assert_exact(a.conj().to(torch.complex128), z.conj().resolve_conj().to(torch.complex128))
    assert_exact(a.conj().resolve_conj(), z.conj().resolve_conj())
    n = torch._neg_view(a)
    assert n.is_neg()
    assert_exact(n.cpu(), -z)
    assert_exact(n.clone(), -z)
    assert_exact(torch._neg_view(z).to("axon"), -z)


def test_copy_into_a_conjugated_view_stores_the_conjugate():
    w = sample(torch.complex128, (2, 5), seed=3)
    a = torch.zeros(2, 5, dtype=torch.complex128, device="axon")
    a.conj().copy_(w.to("axon"))
    assert_exact(a, w.conj().resolve_conj())
    b = torch.zeros(2, 5, dtype=torch.complex128, device="axon")
    b.conj().copy_(w)  # from the host
    assert_exact(b, w.conj().resolve_conj())
    host = torch.zeros(2, 5, dtype=torch.complex128)
    host.conj().copy_(w.to("axon"))  # to the host
    assert_exact(host, w.conj().resolve_conj())


@pytest.mark.parametrize("make", [
    lambda t: t,  # contiguous
    lambda t: t.transpose(0, 8),  # some dimensions merge
    lambda t: t.permute(*range(9, -1, -1)),  # none merge: more than a descriptor holds
    lambda t: t[:, :, ::2],
], ids=["contiguous", "transposed", "reversed", "sliced"])
def test_tensors_of_more_than_8_dimensions_copy_and_fill_exactly(make):
    x = sample(torch.float32, (2,) * 9 + (3,), seed=5)
    view = make(x)
    a = x.to("axon")
    assert_exact(make(a).contiguous(), view.contiguous())  # axon to axon
    assert_exact(make(a).cpu(), view.contiguous())  # axon to host
    assert_exact(view.to("axon"), view.contiguous())  # host to axon
    assert_exact(make(a).to(torch.float64), view.to(torch.float64))  # converting
    b = torch.zeros_like(a)
    make(b).copy_(make(a))  # into a strided axon destination
    expected = torch.zeros_like(x)
    make(expected).copy_(view)
    assert_exact(b, expected)
    make(b).fill_(2.5)
    filled = torch.zeros_like(x)
    make(filled).fill_(2.5)
    assert_exact(b, filled)


def _errors_alike(make, op):
    """op(make(device)) fails on axon with the first line of CPU's error."""
    with pytest.raises(RuntimeError) as cpu_error:
        op(make("cpu"))
    with pytest.raises(RuntimeError) as axon_error:
        op(make("axon"))
    assert str(axon_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]


def test_copy_between_partially_overlapping_views_fails_as_on_cpu():
    _errors_alike(lambda d: torch.arange(6.0, device=d), lambda a: a[1:].copy_(a[:-1]))


def test_copy_into_an_expanded_tensor_fails_as_on_cpu():
    _errors_alike(lambda d: torch.zeros(1, device=d).expand(3), lambda a: a.copy_(torch.ones(3)))


def test_copy_of_a_tensor_onto_itself_changes_nothing():
    a = torch.arange(6.0, device="axon").reshape(2, 3)
    a.copy_(a)
    a.t().copy_(a.t())
    assert_exact(a, torch.arange(6.0).reshape(2, 3))


def test_fill_of_an_expanded_tensor_sets_the_shared_element():
    base = torch.zeros(2, 1, device="axon")
    base.expand(2, 5).fill_(3.0)  # allowed on CPU and CUDA: each location is written with the same value
    assert_exact(base, torch.full((2, 1), 3.0))
    torch.zeros(1, device="axon").expand(4).zero_()


# --- reading values back -----------------------------------------------------------------------------------------


@all_dtypes
def test_item_returns_the_python_value_cpu_returns(dtype):
    x = sample(dtype, (6,))
    for i in range(6):
        got, want = x.to("axon")[i].item(), x[i].item()
        assert type(got) is type(want)
        assert got == want or (got != got and want != want), (i, got, want)


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_item_of_a_one_element_tensor_of_any_rank(shape):
    assert torch.full(shape, 2.5, device="axon").item() == 2.5


def test_item_waits_for_the_work_queued_before_it_and_resolves_math_bits():
    x = torch.arange(1 << 16, dtype=torch.float64, device="axon")
    for _ in range(8):
        x = x * 1.5 + 1.0
    assert x[-1].item() == (torch.arange(1 << 16, dtype=torch.float64) * 1.5 ** 8 + sum(1.5 ** k for k in range(8)))[-1]
    z = torch.tensor([1 + 2j, 3 - 4j], device="axon")
    assert z.conj()[1].item() == 3 + 4j
    assert torch.tensor([2.0, -3.0], device="axon")[1:]._neg_view().item() == 3.0


def test_item_of_a_tensor_with_more_than_one_element_fails():
    with pytest.raises(RuntimeError, match="cannot be converted to Scalar"):
        torch.ones(2, device="axon").item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.complex64, torch.bfloat16],
                         ids=dtype_id)
def test_tolist_matches_cpu(dtype):
    x = sample(dtype, (3, 4))
    got, want = x.to("axon").tolist(), x.tolist()
    assert repr(got) == repr(want)
    assert torch.tensor(5, device="axon").tolist() == 5


def test_repr_shows_the_device_and_the_values():
    a = torch.tensor([[1.5, -2.0], [3.25, 4.0]], device="axon")
    text = repr(a)
    assert "device='axon:0'" in text
    assert text.replace(", device='axon:0'", "") == repr(a.cpu())
    i = torch.arange(3, dtype=torch.int8, device="axon")
    assert repr(i) == "tensor([0, 1, 2], device='axon:0', dtype=torch.int8)"


@two_devices
def test_repr_names_the_second_device():
    assert repr(torch.ones(2, device="axon:1")) == "tensor([1., 1.], device='axon:1')"


# --- resizing and set_ -------------------------------------------------------------------------------------------


def test_resize_to_a_bigger_size_keeps_the_old_values():
    a = torch.arange(6.0, device="axon")
    ptr = a.data_ptr()
    a.resize_(4, 5)
    assert a.shape == (4, 5) and a.is_contiguous()
    assert a.untyped_storage().nbytes() >= 20 * 4
    assert_exact(a.reshape(-1)[:6], torch.arange(6.0))
    a.reshape(-1)[6:] = 1.0
    assert_exact(a.reshape(-1)[:8], torch.tensor([0.0, 1, 2, 3, 4, 5, 1, 1]))
    assert ptr != a.data_ptr()  # grew into a new block


def test_resize_to_a_smaller_size_keeps_the_storage_and_the_leading_values():
    a = torch.arange(10, device="axon")
    ptr, nbytes = a.data_ptr(), a.untyped_storage().nbytes()
    a.resize_(2, 2)
    assert a.shape == (2, 2)
    assert (a.data_ptr(), a.untyped_storage().nbytes()) == (ptr, nbytes)
    assert_exact(a, torch.arange(4).reshape(2, 2))


def test_resize_with_a_memory_format_restrides():
    a = torch.empty(2, device="axon")
    a.resize_(2, 3, 4, 5, memory_format=torch.channels_last)
    assert a.stride() == torch.empty(2, 3, 4, 5, memory_format=torch.channels_last).stride()


def test_resize_to_a_negative_size_fails():
    with pytest.raises(RuntimeError):
        torch.empty(2, device="axon").resize_(-1)


def test_resize_as_matches_the_other_tensors_shape():
    a = torch.arange(3.0, device="axon")
    a.resize_as_(torch.empty(2, 4))
    assert a.shape == (2, 4)
    assert_exact(a.reshape(-1)[:3], torch.arange(3.0))


def test_set_to_a_storage_views_all_of_it():
    src = torch.arange(12.0, device="axon")
    t = torch.empty(0, device="axon")
    t.set_(src.untyped_storage())
    assert t.shape == (12,) and t.data_ptr() == src.data_ptr()
    assert_exact(t, torch.arange(12.0))


def test_set_with_storage_offset_size_and_stride_aliases_the_source():
    src = torch.arange(12.0, device="axon")
    t = torch.empty(0, device="axon")
    t.set_(src.untyped_storage(), 2, (2, 3), (4, 1))
    assert (t.shape, t.stride(), t.storage_offset()) == ((2, 3), (4, 1), 2)
    assert_exact(t, torch.arange(12.0).as_strided((2, 3), (4, 1), 2))
    t.fill_(-1.0)
    expected = torch.arange(12.0)
    expected.as_strided((2, 3), (4, 1), 2).fill_(-1.0)
    assert_exact(src, expected)


def test_set_to_a_tensor_shares_its_storage_and_view():
    src = torch.arange(20, device="axon").reshape(4, 5)[1:, ::2]
    t = torch.empty(0, dtype=torch.int64, device="axon")
    t.set_(src)
    assert (t.shape, t.stride(), t.storage_offset()) == (src.shape, src.stride(), src.storage_offset())
    assert t.untyped_storage().data_ptr() == src.untyped_storage().data_ptr()
    assert_exact(t, torch.arange(20).reshape(4, 5)[1:, ::2])


def test_set_without_arguments_makes_an_empty_tensor_on_axon():
    t = torch.ones(3, device="axon")
    t.set_()
    assert t.shape == (0,) and t.device.type == "axon"
    assert t.untyped_storage().nbytes() == 0
    t.resize_(4).fill_(2.0)
    assert_exact(t, torch.full((4,), 2.0))


def test_set_to_a_cpu_storage_fails():
    t = torch.empty(0, device="axon")
    with pytest.raises(RuntimeError):
        t.set_(torch.arange(3.0).untyped_storage())


def test_storage_resize_keeps_the_leading_bytes():
    a = torch.arange(4, dtype=torch.int32, device="axon")
    s = a.untyped_storage()
    s.resize_(64)
    assert s.nbytes() == 64 and s.device.type == "axon"
    assert_exact(torch.empty(0, dtype=torch.int32, device="axon").set_(s, 0, (4,), (1,)),
                 torch.arange(4, dtype=torch.int32))
    s.resize_(8)
    assert s.nbytes() == 8
    assert_exact(torch.empty(0, dtype=torch.int32, device="axon").set_(s, 0, (2,), (1,)),
                 torch.arange(2, dtype=torch.int32))


def test_storage_copy_to_and_from_the_host_is_exact():
    x = sample(torch.float32, (10,))
    s = torch.empty(10, device="axon").untyped_storage()
    s.copy_(x.untyped_storage())
    assert torch.equal(torch.tensor(s.cpu().tolist(), dtype=torch.uint8), bits(x))
    assert s.cpu().device.type == "cpu"


# --- device checks -----------------------------------------------------------------------------------------------


def test_an_op_on_axon_and_a_non_scalar_cpu_tensor_fails_naming_both_devices():
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*axon:0.*cpu"):
        torch.ones(3, device="axon") + torch.ones(3)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3) * torch.ones(3, device="axon")


@two_devices
def test_an_op_on_two_axon_devices_fails_naming_both():
    with pytest.raises(RuntimeError, match=r"Expected all tensors to be on the same device.*axon:0.*axon:1"):
        torch.ones(3, device="axon:0") + torch.ones(3, device="axon:1")


def test_a_zero_dim_cpu_tensor_may_join_an_op_on_axon():
    a = torch.arange(3.0, device="axon")
    for r in (a + torch.tensor(2.0), torch.tensor(2.0) * a):
        assert r.device == a.device
    assert_exact(a + torch.tensor(2.0), torch.arange(3.0) + 2)
    assert_exact(torch.tensor(2.0) * a, torch.arange(3.0) * 2)


@pytest.mark.parametrize("make", [lambda: torch.empty(2, device="axon:9"), lambda: torch.ones(2).to("axon:9"),
                                  lambda: torch.zeros(2, device="axon:-2")], ids=["empty", "to", "negative"])
def test_an_invalid_device_index_fails(make):
    with pytest.raises(RuntimeError, match="[Ii]nvalid device|device index"):
        make()


# --- tensors without elements ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float8_e4m3fn], ids=dtype_id)
def test_tensors_without_elements_work_like_on_cpu(dtype):
    a = torch.empty(0, 3, dtype=dtype, device="axon")
    assert a.numel() == 0 and a.shape == (0, 3)
    assert_exact(a.cpu(), torch.empty(0, 3, dtype=dtype))
    assert_exact(torch.empty(0, 3, dtype=dtype).to("axon"), torch.empty(0, 3, dtype=dtype))
    assert_exact(torch.zeros(2, 0, dtype=dtype, device="axon"), torch.zeros(2, 0, dtype=dtype))
    assert_exact(a.t().clone(), torch.empty(3, 0, dtype=dtype))
    assert_exact(a.to(torch.float64), torch.empty(0, 3, dtype=torch.float64))
    assert a.tolist() == []
    assert "size=(0, 3)" in repr(a)


def test_module_to_axon_keeps_parameters_shared_between_modules():
    # Module.to swaps each parameter's data in place when the TensorImpls are compatible; otherwise it makes new
    # Parameters and unties weights shared between modules (a language model's head and its embedding).
    embed = torch.nn.Embedding(10, 4)
    head = torch.nn.Linear(4, 10, bias=False)
    head.weight = embed.weight
    model = torch.nn.ModuleDict({"embed": embed, "head": head})
    param = embed.weight
    model.to("axon")
    assert model["head"].weight is model["embed"].weight
    assert model["embed"].weight is param and param.device.type == "axon"
    assert len(list(model.parameters())) == 1
    model.to("cpu")
    assert model["head"].weight is model["embed"].weight and param.device.type == "cpu"


def test_efficient_zero_tensors_are_made_on_axon_and_read_as_zeros():
    z = native(lambda: torch.ops.aten._efficientzerotensor([2, 3], dtype=torch.float64, device="axon"))
    assert z.device == torch.device("axon", torch.axon.current_device()) and z._is_zerotensor()
    assert torch.equal(z.cpu(), torch.zeros(2, 3, dtype=torch.float64))
    assert torch.equal(native(lambda: (z + 1.5).cpu()), torch.full((2, 3), 1.5, dtype=torch.float64))


@pytest.mark.parametrize("op", [torch.sgn, torch.sign, torch.floor, torch.ceil, torch.round, torch.trunc])
def test_zero_gradients_stay_on_the_device(op):
    """These ops' derivative is zero: autograd makes it with _efficientzerotensor, which must not leave the device."""
    x = torch.tensor([1.5, -2.0, 0.3, 0.0], requires_grad=True)
    xa = x.detach().to("axon").requires_grad_()
    (op(x) * x).sum().backward()
    native(lambda: (op(xa) * xa).sum().backward())
    assert torch.equal(xa.grad.cpu(), x.grad)

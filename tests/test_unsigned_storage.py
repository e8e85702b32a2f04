"""uint16, uint32 and uint64: libaxon's storage dtypes (libaxon/include/axon/tensor.h). PyTorch computes little in
them; libaxon converts them to and from every dtype in its copy kernel, reads them as operands of pointwise ops that
compute in another dtype, and unique sorts them as signed keys with the top bit flipped. Results are compared with
PyTorch CPU, exactly for casts and unique, with float32 tolerances for the math."""

import pytest
import torch

from axon_testing import KERNEL_DTYPES, dtype_id, libaxon_commands, native, sample

UNSIGNED = [torch.uint16, torch.uint32, torch.uint64]


def assert_bits_equal(got: torch.Tensor, want: torch.Tensor):
    got = got.cpu()
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.is_floating_point() or want.is_complex():
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    else:
        assert torch.equal(got, want), (got, want)


@pytest.mark.parametrize("other", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("unsigned", UNSIGNED, ids=dtype_id)
def test_casts_from_an_unsigned_dtype_run_on_libaxon_and_match_cpu(unsigned, other):
    x = sample(unsigned, (6, 7))  # every bit pattern, values past the signed maximum included
    a = x.to("axon")
    assert libaxon_commands(lambda: a.to(other)) == ["tensor_copy"]
    assert_bits_equal(a.to(other), x.to(other))
    assert_bits_equal(a.t().to(other), x.t().to(other))  # strided source


@pytest.mark.filterwarnings("ignore:Casting complex values to real discards")
@pytest.mark.parametrize("other", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("unsigned", UNSIGNED, ids=dtype_id)
def test_casts_to_an_unsigned_dtype_run_on_libaxon_and_match_cpu(unsigned, other):
    x = sample(other, (6, 7))
    if other.is_floating_point or other.is_complex:
        # Out-of-range and NaN values are left out of the strided case: PyTorch's own result for them differs
        # between its vectorized (contiguous) and scalar loops.
        real = x.real if other.is_complex else x
        keep = real.isfinite() & (real.double() > -2.0**31) & (real.double() < 2.0**31)
        x = torch.where(keep, x, torch.full((), 3, dtype=other))
    a = x.to("axon")
    assert libaxon_commands(lambda: a.to(unsigned)) == ["tensor_copy"]
    assert_bits_equal(a.to(unsigned), x.to(unsigned))
    assert_bits_equal(a.t().to(unsigned), x.t().to(unsigned))
    dst = torch.zeros(7, 6, dtype=unsigned, device="axon").t()
    dst.copy_(a)  # strided destination
    assert_bits_equal(dst, x.to(unsigned))


@pytest.mark.parametrize("unsigned", UNSIGNED, ids=dtype_id)
@pytest.mark.parametrize("src", [torch.float32, torch.float64], ids=dtype_id)
def test_out_of_range_floats_convert_as_pytorchs_vectorized_casts(src, unsigned):
    values = [-1.5, -70000.0, 3.7, 65535.9, 65536.5, 1e10, -1e10, 2.0**31, 2.0**32, 2.0**63, 1.8e19, 2.0**64, 1e30,
              float("nan"), float("inf"), -float("inf")]
    x = torch.tensor(values * 4, dtype=src)  # long enough for PyTorch's vectorized loop
    assert_bits_equal(x.to("axon").to(unsigned), x.to(unsigned))


def test_large_uint64_values_convert_to_floats_with_one_rounding():
    x = torch.tensor([2**64 - 1, 2**63 + 2**40 + 1, 2**63, 2**53 + 1, 12345], dtype=torch.uint64)
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.int64,
                  torch.int8, torch.uint8):
        assert_bits_equal(x.to("axon").to(dtype), x.to(dtype))


SPECIAL = [torch.sqrt, torch.special.bessel_j0, torch.special.i1e, torch.special.ndtr, torch.special.erfcx,
           torch.special.entr]


@pytest.mark.parametrize("fn", SPECIAL, ids=lambda f: f.__name__)
@pytest.mark.parametrize("unsigned", UNSIGNED, ids=dtype_id)
def test_float_ops_read_unsigned_operands_natively(unsigned, fn):
    x = torch.tensor([0, 1, 2, 3, 7, 30, 255, 1000, 65535], dtype=torch.int64).to(unsigned)
    got = native(lambda: fn(x.to("axon")))
    want = fn(x)
    assert got.dtype == want.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), want, rtol=2e-5, atol=1e-6, equal_nan=True)
    got = native(lambda: fn(x.to("axon")[::2]))  # strided operand
    torch.testing.assert_close(got.cpu(), want[::2], rtol=2e-5, atol=1e-6, equal_nan=True)


def test_a_float_op_reads_uint64_past_the_signed_maximum_as_unsigned():
    x = torch.tensor([2**64 - 1, 2**63], dtype=torch.uint64)
    got = native(lambda: torch.sqrt(x.to("axon")))
    torch.testing.assert_close(got.cpu(), torch.sqrt(x), rtol=0, atol=0)
    assert got.cpu()[0].item() == pytest.approx(2.0**32, rel=1e-6)


@pytest.mark.parametrize("unsigned", UNSIGNED, ids=dtype_id)
def test_unique_sorts_unsigned_values_past_the_signed_maximum(unsigned):
    x = sample(unsigned, (40,), seed=3)
    x = torch.cat([x, x[:10], torch.tensor([0, 1, 1], dtype=torch.int64).to(unsigned)])
    a = x.to("axon")
    got = native(lambda: torch.unique(a, return_inverse=True, return_counts=True))
    want = torch.unique(x, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert_bits_equal(g, w)
    values, inverse = native(lambda: torch.unique(a, sorted=True, return_inverse=True))
    assert_bits_equal(values, want[0])
    assert_bits_equal(inverse, want[1])
    got = native(lambda: torch.unique_consecutive(a, return_inverse=True, return_counts=True))
    want = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert_bits_equal(g, w)

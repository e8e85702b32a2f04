"""Native torch.unique (_unique2, _unique) and unique_consecutive (libaxon's run kernels after the native sort) against
PyTorch CPU for real dtypes and bool: values, inverse and counts equal CPU's, every NaN is its own value and -0.0
equals 0.0 as on CPU. No host fallback for the flat forms; the dim= forms fall back and still match."""

import pytest
import torch

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64, torch.bool]
SHAPES = [(0,), (1,), (37,), (5, 9), (3, 4, 50), (), (70000,), (3, 9000)]  # the last two: radix passes


def sample(shape, dtype, seed=0):
    """Few distinct values so runs are long; floats also get NaN, +-inf and -0.0."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    x = torch.randint(0 if dtype == torch.uint8 else -5, 6, shape, generator=g).to(torch.float64)
    if dtype.is_floating_point:
        r = torch.rand(shape, generator=g)
        x = torch.where(r < 0.05, float("nan"), x)
        x = torch.where((r >= 0.05) & (r < 0.1), float("-inf"), x)
        x = torch.where((r >= 0.1) & (r < 0.2), -0.0, x)
    return x.to(dtype)


def assert_same(got, want, x=None):
    """Equal outputs (NaN equal to NaN). With x given, got[1] is unique's inverse: every NaN is a value of its own,
    and which NaN of x gets which NaN slot is open (CPU's sort does not keep NaNs in order), so at NaN positions only
    the set of slots must match."""
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.device.type == "axon" and g.dtype == w.dtype and g.shape == w.shape
        g = g.cpu()
        if i == 1 and x is not None and x.is_floating_point() and g.numel():
            nan = x.isnan()
            assert torch.equal(g[~nan], w[~nan]) and torch.equal(g[nan].sort().values, w[nan].sort().values)
            continue
        assert torch.equal(g, w) or (g.dtype.is_floating_point and
                                     torch.allclose(g, w, rtol=0, atol=0, equal_nan=True))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unique_matches_cpu_with_inverse_and_counts(dtype, shape):
    x = sample(shape, dtype)
    torch_axon.reset_fallback_stats()
    got = torch.unique(x.to("axon"), return_inverse=True, return_counts=True)
    assert torch_axon.fallback_stats() == {}
    assert_same(got, torch.unique(x, return_inverse=True, return_counts=True), x)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)])
def test_unique_without_some_outputs_matches_cpu(dtype, flags):
    x = sample((6, 7), dtype, seed=3)
    torch_axon.reset_fallback_stats()
    got = torch.ops.aten._unique2(x.to("axon"), True, *flags)
    assert torch_axon.fallback_stats() == {}
    assert_same(got, torch.ops.aten._unique2(x, True, *flags), x)
    assert_same(torch.ops.aten._unique(x.to("axon"), True, flags[0]), torch.ops.aten._unique(x, True, flags[0]), x)


def test_unique_unsorted_request_still_sorts_as_cpu():
    x = torch.tensor([3, 1, 2, 1, 3])
    assert_same((torch.unique(x.to("axon"), sorted=False),), (torch.unique(x, sorted=False),))


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unique_consecutive_matches_cpu(dtype, shape):
    x = sample(shape, dtype, seed=1)
    if x.numel() > 1:  # make runs: repeat each element a few times
        x = x.reshape(-1).repeat_interleave(2)[: x.numel()].reshape(shape)
    torch_axon.reset_fallback_stats()
    got = torch.unique_consecutive(x.to("axon"), return_inverse=True, return_counts=True)
    assert torch_axon.fallback_stats() == {}
    assert_same(got, torch.unique_consecutive(x, return_inverse=True, return_counts=True))


def test_nan_is_never_merged_and_signed_zeros_are():
    x = torch.tensor([float("nan"), 0.0, float("nan"), -0.0, float("nan")])
    got = torch.unique(x.to("axon"), return_counts=True)
    assert got[0].numel() == 4 and got[1].cpu().tolist() == [2, 1, 1, 1]
    got = torch.unique_consecutive(x.to("axon"), return_counts=True)
    assert got[1].cpu().tolist() == [1, 1, 1, 1, 1]


def test_dim_forms_fall_back_and_match_cpu():
    x = torch.tensor([[1, 2], [1, 2], [0, 5]])
    assert_same(torch.unique(x.to("axon"), dim=0, return_inverse=True, return_counts=True),
                torch.unique(x, dim=0, return_inverse=True, return_counts=True))
    assert_same(torch.unique_consecutive(x.to("axon"), dim=0), torch.unique_consecutive(x, dim=0))


def test_complex_falls_back_to_cpus_error():
    x = torch.tensor([1 + 1j, 1 + 1j, 2j])
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        torch.unique_consecutive(x, return_counts=True)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        torch.unique_consecutive(x.to("axon"), return_counts=True)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        torch.unique(x.to("axon"))

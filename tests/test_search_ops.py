"""Native searchsorted, bucketize and bincount (libaxon's search kernels) against PyTorch CPU: left and right sides,
a sorter, batched sequences, int32 and int64 outputs, NaN values and sequences with NaN at the end, mixed dtypes
promoted as on CPU, weighted counts (float32 sums in float32 as on CPU, others in float64), and PyTorch's errors.
No host fallback for the ops bound."""

import pytest
import torch

import torch_axon

REAL = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
        torch.int32, torch.int64]


def sorted_seq(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(0, 20, shape, generator=g).to(dtype)
    return x.sort(dim=-1).values


def vals(shape, dtype, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-2, 23, shape, generator=g).to(torch.float64)
    if dtype.is_floating_point:
        x = x + torch.where(torch.rand(shape, generator=g) < 0.5, 0.5, 0.0)
        x = torch.where(torch.rand(shape, generator=g) < 0.05, float("nan"), x)
    if dtype == torch.uint8:
        x = x.clamp(min=0)
    return x.to(dtype)


def no_fallback(fn):
    torch_axon.reset_fallback_stats()
    out = fn()
    assert torch_axon.fallback_stats() == {}
    return out


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("seq_shape,val_shape", [((30,), (50,)), ((30,), (4, 7)), ((3, 30), (3, 11)),
                                                 ((2, 3, 9), (2, 3, 5)), ((0,), (4,)), ((30,), (0,))])
def test_searchsorted_matches_cpu(dtype, right, seq_shape, val_shape):
    seq, v = sorted_seq(seq_shape, dtype), vals(val_shape, dtype)
    got = no_fallback(lambda: torch.searchsorted(seq.to("axon"), v.to("axon"), right=right))
    want = torch.searchsorted(seq, v, right=right)
    assert got.dtype == torch.int64 and torch.equal(got.cpu(), want)
    got = no_fallback(lambda: torch.searchsorted(seq.to("axon"), v.to("axon"), side="right" if right else "left",
                                                 out_int32=True))
    assert got.dtype == torch.int32 and torch.equal(got.cpu(), want.int())


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_searchsorted_with_a_sorter_matches_cpu(dtype):
    g = torch.Generator().manual_seed(5)
    seq = torch.randint(0, 50, (3, 40), generator=g).to(dtype)
    sorter = seq.argsort(dim=-1, stable=True)
    v = vals((3, 9), dtype)
    got = no_fallback(lambda: torch.searchsorted(seq.to("axon"), v.to("axon"), sorter=sorter.to("axon")))
    assert torch.equal(got.cpu(), torch.searchsorted(seq, v, sorter=sorter))


def test_searchsorted_nan_in_sequence_and_values_as_cpu():
    seq = torch.tensor([1.0, 2.0, float("nan"), float("nan")])
    v = torch.tensor([float("nan"), 1.5, 2.0, -float("inf"), float("inf")])
    for right in (False, True):
        assert torch.equal(torch.searchsorted(seq.to("axon"), v.to("axon"), right=right).cpu(),
                           torch.searchsorted(seq, v, right=right))


def test_searchsorted_mixed_dtypes_and_scalars_as_cpu():
    seq, v = torch.tensor([1, 3, 5, 7]), torch.tensor([2.5, 3.0, 8.0])
    got = no_fallback(lambda: torch.searchsorted(seq.to("axon"), v.to("axon")))
    assert torch.equal(got.cpu(), torch.searchsorted(seq, v))
    for scalar in (4, 5, 2.5, -1):
        got = no_fallback(lambda: torch.searchsorted(seq.to("axon"), scalar, right=True))
        want = torch.searchsorted(seq, scalar, right=True)
        assert got.shape == () and got.dtype == want.dtype and got.item() == want.item()
        got = no_fallback(lambda: torch.bucketize(scalar, seq.to("axon"), out_int32=True))
        want = torch.bucketize(scalar, seq, out_int32=True)
        assert got.shape == () and got.dtype == want.dtype and got.item() == want.item()


def test_searchsorted_out_and_strided_inputs():
    seq = torch.arange(0, 40, 2).reshape(2, 10)
    v = torch.arange(0, 30).reshape(2, 15)[:, ::2]
    out = torch.empty(2, 8, dtype=torch.int64, device="axon")
    no_fallback(lambda: torch.searchsorted(seq.to("axon"), v.to("axon"), out=out))
    assert torch.equal(out.cpu(), torch.searchsorted(seq, v))


@pytest.mark.parametrize("dtype", REAL, ids=str)
@pytest.mark.parametrize("right", [False, True])
def test_bucketize_matches_cpu(dtype, right):
    b, v = sorted_seq((12,), dtype).unique(), vals((5, 6), dtype)
    got = no_fallback(lambda: torch.bucketize(v.to("axon"), b.to("axon"), right=right))
    assert torch.equal(got.cpu(), torch.bucketize(v, b, right=right))
    out = torch.empty(0, dtype=torch.int32, device="axon")
    no_fallback(lambda: torch.bucketize(v.to("axon"), b.to("axon"), right=right, out_int32=True, out=out))
    assert torch.equal(out.cpu(), torch.bucketize(v, b, right=right, out_int32=True))


def test_search_errors_as_cpu():
    seq, v = torch.tensor([1.0, 2.0, 3.0], device="axon"), torch.tensor([1.5], device="axon")
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        torch.searchsorted(seq, v, sorter=torch.tensor([0, 1, 5], device="axon"))
    with pytest.raises(RuntimeError, match="side"):
        torch.searchsorted(seq, v, right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        torch.bucketize(v, seq.reshape(1, 3))
    with pytest.raises(RuntimeError):
        torch.searchsorted(torch.zeros(2, 3, device="axon"), torch.zeros(3, 2, device="axon"))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
@pytest.mark.parametrize("minlength", [0, 3, 40])
def test_bincount_matches_cpu(dtype, minlength):
    x = torch.randint(0, 20, (500,), generator=torch.Generator().manual_seed(2)).to(dtype)
    got = no_fallback(lambda: torch.bincount(x.to("axon"), minlength=minlength))
    assert got.dtype == torch.int64 and torch.equal(got.cpu(), torch.bincount(x, minlength=minlength))


@pytest.mark.parametrize("wdtype", [torch.float32, torch.float64, torch.float16, torch.int32])
def test_weighted_bincount_matches_cpu(wdtype):
    g = torch.Generator().manual_seed(4)
    x = torch.randint(0, 13, (2000,), generator=g)
    w = (torch.randn(2000, generator=g) * 10).to(wdtype)
    got = no_fallback(lambda: torch.bincount(x.to("axon"), weights=w.to("axon"), minlength=5))
    want = torch.bincount(x, weights=w, minlength=5)
    # Same order of additions in the same dtype as CPU's loop: equal bits.
    assert got.dtype == want.dtype and torch.equal(got.cpu(), want)


def test_bincount_of_empty_input_is_minlength_zeros():
    got = no_fallback(lambda: torch.bincount(torch.empty(0, dtype=torch.int64, device="axon"), minlength=4))
    assert got.cpu().tolist() == [0, 0, 0, 0]


def test_bincount_errors_as_cpu():
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.bincount(torch.tensor([1, -1], device="axon"))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        torch.bincount(torch.tensor([1], device="axon"), minlength=-1)
    with pytest.raises(RuntimeError, match="weights should be 1-d and have the same length as input"):
        torch.bincount(torch.tensor([1, 2], device="axon"), weights=torch.ones(3, device="axon"))
    with pytest.raises(RuntimeError, match="not implemented for 'Float'"):
        torch.bincount(torch.tensor([1.0], device="axon"))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("invert", [False, True])
def test_isin_matches_cpu(dtype, invert):
    e = vals((5, 37), dtype, seed=3)
    t = vals((11,), dtype, seed=4)  # NaN included for the floats: it matches nothing
    torch_axon.reset_fallback_stats()
    got = torch.isin(e.to("axon"), t.to("axon"), invert=invert)
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(got.cpu(), torch.isin(e, t, invert=invert))
    got = torch.isin(e.to("axon"), t.to("axon"), assume_unique=True, invert=invert)
    assert torch.equal(got.cpu(), torch.isin(e, t, assume_unique=True, invert=invert))


def test_isin_promotes_mixed_dtypes_and_matches_signed_zeros():
    e = torch.tensor([[1, 2, 3], [4, 5, 0]], dtype=torch.int64)
    t = torch.tensor([2.0, 4.5, -0.0, float("nan")], dtype=torch.float32)
    torch_axon.reset_fallback_stats()
    got = torch.isin(e.to("axon"), t.to("axon"))
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(got.cpu(), torch.isin(e, t))
    big = torch.tensor([2**60, 2**60 + 1], dtype=torch.int64)  # int64 keys keep every bit
    assert torch.equal(torch.isin(big.to("axon"), big[:1].to("axon")).cpu(), torch.tensor([True, False]))


def test_isin_out_empty_and_strided():
    e = vals((6, 8), torch.float32, seed=5).t()  # not contiguous
    t = vals((4,), torch.float32, seed=6)
    out = torch.empty(8, 6, dtype=torch.bool, device="axon").t()
    torch.isin(e.to("axon"), t.to("axon"), out=out)
    assert torch.equal(out.cpu(), torch.isin(e, t))
    assert torch.isin(torch.empty(0, device="axon"), t.to("axon")).shape == (0,)
    assert not torch.isin(e.to("axon"), torch.empty(0, device="axon")).any()


def test_isin_as_generation_uses_it():
    """transformers' generate() checks for stop tokens with isin on the device."""
    tokens = torch.tensor([[5, 9, 2], [7, 1, 3]], device="axon")
    eos = torch.tensor([2, 3], device="axon")
    torch_axon.reset_fallback_stats()
    done = torch.isin(tokens[:, -1], eos)
    assert torch_axon.fallback_stats() == {}
    assert done.cpu().tolist() == [True, True]

"""Native sort, argsort, msort, topk, kthvalue, median, nanmedian and mode (libaxon's sort kernels) against PyTorch
CPU for every real dtype, with repeated values, NaN, infinities and -0.0: a stable sort gives exactly CPU's values and
indices; where ties leave the indices open (topk, kthvalue, unstable sort, mode of long rows), values match exactly
and the indices point at them.
No host fallback for the ops bound; bad k gives PyTorch's errors."""

import pytest
import torch

import torch_axon

REAL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
               torch.int32, torch.int64, torch.bool]
SHAPES_DIMS = [((17,), 0), ((4, 33), -1), ((4, 33), 0), ((3, 5, 6), 1), ((2, 700), 1), ((1, 1), 0), ((), 0),
               ((2, 9000), 1), ((5000, 2), 0)]  # the last two: rows long enough for radix passes


def sample(shape, dtype, seed=0):
    """Values from a small set, so ties are common; floats also get NaN, +-inf and -0.0."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    x = torch.randint(-6, 7, shape, generator=g).to(torch.float64)
    if dtype == torch.uint8:
        x = x + 6
    if dtype.is_floating_point:
        r = torch.rand(shape, generator=g)
        x = torch.where(r < 0.06, float("nan"), x)
        x = torch.where((r >= 0.06) & (r < 0.1), float("inf"), x)
        x = torch.where((r >= 0.1) & (r < 0.14), float("-inf"), x)
        x = torch.where((r >= 0.14) & (r < 0.2), -0.0, x)
        x = torch.where((r >= 0.2) & (r < 0.3), x + 0.5, x)
    return x.to(dtype)


def same(result, expected):
    """Equal values (NaN == NaN), dtypes and shapes."""
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape,
                                                                               expected.shape)
    torch.testing.assert_close(result, expected, rtol=0, atol=0, equal_nan=True)


def points_at(x, dim, values, indices):
    """indices pick values out of x along dim."""
    x, values, indices = x.cpu(), values.cpu(), indices.cpu()
    if x.dim() == 0:
        assert indices.item() == 0
        return
    same(torch.gather(x, dim, indices), values)


def no_fallback(fn):
    torch_axon.reset_fallback_stats()
    out = fn()
    assert torch_axon.fallback_stats() == {}
    return out


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=str)
@pytest.mark.parametrize("descending", [False, True], ids=["ascending", "descending"])
def test_stable_sort_matches_cpu_exactly(dtype, shape, dim, descending):
    x = sample(shape, dtype)
    ref = torch.sort(x, dim=dim, descending=descending, stable=True)
    out = no_fallback(lambda: torch.sort(x.to("axon"), dim=dim, descending=descending, stable=True))
    same(out.values, ref.values)
    same(out.indices, ref.indices)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
def test_default_sort_argsort_and_msort_match_cpu(dtype):
    x = sample((6, 40), dtype)
    out = no_fallback(lambda: torch.sort(x.to("axon"), dim=1, descending=True))
    same(out.values, torch.sort(x, dim=1, descending=True).values)
    points_at(x, 1, out.values, out.indices)
    idx = no_fallback(lambda: torch.argsort(x.to("axon"), dim=0))
    same(torch.gather(x, 0, idx.cpu()), torch.sort(x, dim=0).values)
    same(no_fallback(lambda: torch.msort(x.to("axon"))), torch.msort(x))


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=str)
@pytest.mark.parametrize("largest", [True, False], ids=["largest", "smallest"])
@pytest.mark.parametrize("sorted_", [True, False], ids=["sorted", "unsorted"])
def test_topk_matches_cpu(dtype, shape, dim, largest, sorted_):
    x = sample(shape, dtype)
    if dtype == torch.bool:  # CPU has no bool topk: the fallback gives its error
        with pytest.raises(RuntimeError, match="topk does not support bool"):
            torch.topk(x.to("axon"), 1 if x.numel() else 0)
        return
    length = x.shape[dim] if x.dim() else 1
    for k in sorted({0, 1, min(3, length), length}):
        ref = torch.topk(x, k, dim=dim, largest=largest, sorted=sorted_)
        out = no_fallback(lambda: torch.topk(x.to("axon"), k, dim=dim, largest=largest, sorted=sorted_))
        if sorted_:
            same(out.values, ref.values)
        else:  # any order is allowed: compare as sets
            same(torch.sort(out.values.cpu(), dim=dim).values, torch.sort(ref.values, dim=dim).values)
        points_at(x, dim, out.values, out.indices)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["dropdim", "keepdim"])
def test_kthvalue_and_median_match_cpu(dtype, shape, dim, keepdim):
    x = sample(shape, dtype)
    if dtype == torch.bool:  # CPU has no bool kthvalue or median (but for 0-d): the fallback gives its answer
        for f in (lambda t: torch.kthvalue(t, 1, dim).values, lambda t: torch.median(t)):
            try:
                ref = f(x)
            except NotImplementedError:
                with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
                    f(x.to("axon"))
            else:
                same(f(x.to("axon")), ref)
        return
    length = x.shape[dim] if x.dim() else 1
    for k in sorted({1, (length + 1) // 2, length}):
        ref = torch.kthvalue(x, k, dim, keepdim)
        out = no_fallback(lambda: torch.kthvalue(x.to("axon"), k, dim, keepdim))
        same(out.values, ref.values)
        points_at(x, dim, out.values if keepdim or x.dim() == 0 else out.values.unsqueeze(dim),
                  out.indices if keepdim or x.dim() == 0 else out.indices.unsqueeze(dim))
    ref = torch.median(x, dim, keepdim)
    out = no_fallback(lambda: torch.median(x.to("axon"), dim, keepdim))
    same(out.values, ref.values)
    if dtype.is_floating_point:  # a row with NaN gives its first NaN, as on CPU
        nan_rows = torch.isnan(ref.values)
        same(out.indices.cpu()[nan_rows], ref.indices[nan_rows])
    same(no_fallback(lambda: torch.median(x.to("axon"))), torch.median(x))


@pytest.mark.parametrize("dtype", [d for d in REAL_DTYPES if d != torch.bool], ids=str)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["dropdim", "keepdim"])
def test_nanmedian_skips_nans_and_matches_cpu(dtype, shape, dim, keepdim):
    x = sample(shape, dtype)
    if dtype.is_floating_point and x.dim() == 2 and x.shape[0] > 1:
        x[0] = float("nan")  # a row (or column) of NaNs only: NaN
    ref = torch.nanmedian(x, dim, keepdim)
    out = no_fallback(lambda: torch.nanmedian(x.to("axon"), dim, keepdim))
    same(out.values, ref.values)
    points_at(x, dim, out.values if keepdim or x.dim() == 0 else out.values.unsqueeze(dim),
              out.indices if keepdim or x.dim() == 0 else out.indices.unsqueeze(dim))
    same(no_fallback(lambda: torch.nanmedian(x.to("axon"))), torch.nanmedian(x))


def test_median_of_an_empty_tensor_is_nan_as_on_cpu():
    assert torch.isnan(torch.median(torch.empty(0, device="axon")).cpu())


def test_sort_of_strided_input_into_strided_outputs_matches_cpu():
    x = sample((30, 8), torch.float32)
    values = torch.empty(30, 16, device="axon")[:, ::2].t()
    indices = torch.empty(8, 30, dtype=torch.long, device="axon")
    ref = torch.sort(x.t(), dim=1, stable=True)
    no_fallback(lambda: torch.sort(x.to("axon").t(), dim=1, stable=True, out=(values, indices)))
    same(values, ref.values)
    same(indices, ref.indices)


def test_sort_and_topk_backward_match_cpu():
    x = sample((5, 12), torch.float64).nan_to_num(0.0, 3.0, -3.0) + torch.arange(60).view(5, 12) * 1e-3
    results = []
    for device in ("cpu", "axon"):
        leaf = x.detach().to(device).requires_grad_(True)
        torch_axon.reset_fallback_stats()
        (torch.sort(leaf, 1).values[:, :4].sum() * 2 + torch.topk(leaf, 3, 0).values.sum()).backward()
        results.append((leaf.grad.cpu(), torch_axon.fallback_stats()))
    assert results[1][1] == {}, results[1][1]
    same(results[1][0], results[0][0])


def test_a_long_row_sorts_like_cpu():
    x = torch.randn(200_000, generator=torch.Generator().manual_seed(2))
    out = no_fallback(lambda: torch.sort(x.to("axon"), stable=True))
    ref = torch.sort(x, stable=True)
    same(out.values, ref.values)
    same(out.indices, ref.indices)


def test_bad_k_raises_pytorchs_errors():
    x = torch.randn(3, 4, device="axon")
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        torch.topk(x, 5)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 1"):
        torch.kthvalue(x, 0)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 0 to have non-zero size"):
        torch.median(torch.empty(0, 3, device="axon"), 0)


def test_complex_input_goes_to_the_host_fallback_which_raises_like_cpu():
    x = torch.randn(3, 4, dtype=torch.complex64)
    with pytest.raises(RuntimeError, match="topk does not support complex"):
        torch.topk(x.to("axon"), 2)


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=str)
@pytest.mark.parametrize("keepdim", [False, True], ids=["squeezed", "keepdim"])
def test_mode_matches_cpu(dtype, keepdim):
    # NaNs are left out: CPU's answer for a row with NaNs depends on where its std::sort leaves them. Rows of up to
    # 16 elements, which CPU's std::sort orders by insertion (stably), give exactly CPU's indices; on longer rows CPU
    # may point at another occurrence of the same value.
    for shape, dim in [((16,), 0), ((4, 9), -1), ((4, 9), 0), ((3, 5, 6), 1), ((1, 1), 0), ((), 0)]:
        x = torch.nan_to_num(sample(shape, dtype), nan=2.0) if dtype.is_floating_point else sample(shape, dtype)
        ref = torch.mode(x, dim, keepdim)
        out = no_fallback(lambda: torch.mode(x.to("axon"), dim, keepdim))
        same(out.values, ref.values)
        same(out.indices, ref.indices)
    for shape, dim in [((2, 700), 1), ((300, 3), 0)]:
        x = torch.nan_to_num(sample(shape, dtype, seed=1), nan=2.0) if dtype.is_floating_point else sample(shape, dtype)
        ref = torch.mode(x, dim, True)
        out = no_fallback(lambda: torch.mode(x.to("axon"), dim, True))
        same(out.values, ref.values)
        points_at(x, dim, out.values, out.indices)


def test_mode_of_an_empty_row_raises_cpus_index_error():
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        torch.mode(torch.zeros(2, 0, device="axon"), 1)
    out = torch.mode(torch.zeros(2, 0, device="axon"), 0)  # no rows: empty results
    assert out.values.shape == (0,) and out.indices.shape == (0,)

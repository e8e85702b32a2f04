"""Native reductions, arg-reductions and scans (libaxon's reduce kernels): results against PyTorch CPU with
per-dtype tolerances, and no host fallback."""

import pytest
import torch

import torch_axon

TOL = {torch.float32: (2e-5, 1e-5), torch.float64: (1e-12, 1e-12), torch.bfloat16: (2e-2, 2e-2),
       torch.complex64: (2e-5, 1e-5), torch.complex128: (1e-12, 1e-12),
       torch.float16: (4e-3, 2e-3)}


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)
    return torch.randint(-4 if dtype != torch.uint8 else 0, 5, shape, generator=g).to(dtype)


def same(result, expected):
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.dtype in TOL:
        rtol, atol = TOL[expected.dtype]
        torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert torch.equal(result, expected)


def native(fn, x):
    torch_axon.reset_fallback_stats()
    r = fn(x.to("axon"))
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    return r


REDUCTIONS = {
    "sum_all": lambda t: t.sum(), "sum_dim": lambda t: t.sum(1), "sum_dims_keep": lambda t: t.sum((0, 2), keepdim=True),
    "amax": lambda t: t.amax(2), "amin_all": lambda t: t.amin(), "max_all": lambda t: t.max(), "min_all": lambda t: t.min(),
    "prod": lambda t: t.prod(0), "cumsum": lambda t: t.cumsum(1), "cumprod": lambda t: t.cumprod(2),
    "argmax": lambda t: t.argmax(1), "argmin_all": lambda t: t.argmin(), "any": lambda t: t.any(1),
    "all_all": lambda t: t.all(), "count_nonzero": lambda t: torch.count_nonzero(t, 0),
}
FLOAT_ONLY = {
    "mean": lambda t: t.mean(1), "mean_all": lambda t: t.mean(), "var": lambda t: t.var(2),
    "std_pop": lambda t: t.std((0, 1), correction=0), "logsumexp": lambda t: t.logsumexp(1),
    "norm2": lambda t: torch.linalg.vector_norm(t, dim=2), "norm1": lambda t: torch.linalg.vector_norm(t, 1),
    "norm_inf": lambda t: torch.linalg.vector_norm(t, float("inf"), dim=0),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32,
                                   torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_match_cpu(name, dtype):
    if name == "cumprod" and dtype in (torch.bfloat16, torch.float16):
        pytest.skip("reason: a running product of 9 bf16/f16 values is compared with a float32-accumulating CPU "
                    "kernel; covered for float32/64")
    x = sample((5, 6, 9), dtype)
    same(native(REDUCTIONS[name], x), REDUCTIONS[name](x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", sorted(FLOAT_ONLY))
def test_floating_reductions_match_cpu(name, dtype):
    x = sample((5, 6, 9), dtype, seed=1)
    same(native(FLOAT_ONLY[name], x), FLOAT_ONLY[name](x))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_norms_are_their_magnitudes_norms(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn((5, 6, 9), generator=g, dtype=torch.complex128).to(dtype)
    cases = [lambda t: torch.linalg.vector_norm(t, dim=2), lambda t: torch.linalg.vector_norm(t, 1),
             lambda t: torch.linalg.vector_norm(t, float("inf"), dim=(0, 1), keepdim=True),
             lambda t: torch.linalg.vector_norm(t, 3, dtype=torch.complex128), lambda t: torch.norm(t, dim=1),
             lambda t: torch.nn.functional.normalize(t, dim=0)]
    for fn in cases:
        want = fn(x)
        got = native(fn, x)
        assert got.dtype == want.dtype
        rtol, atol = (1e-5, 1e-5) if want.dtype in (torch.float32, torch.complex64) else (1e-12, 1e-12)
        torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=atol)
    with pytest.raises(RuntimeError, match="dtype"):
        torch.linalg.vector_norm(x.to("axon"), dtype=torch.float64)


def test_max_and_min_along_a_dim_return_values_and_first_indices():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0], [2.0, float("nan"), 5.0, float("nan")]])
    for fn in (lambda t: t.max(1), lambda t: t.min(1, keepdim=True)):
        (v, i), (ev, ei) = native(fn, x), fn(x)
        same(v, ev)
        same(i, ei)


def test_reductions_of_non_contiguous_inputs_match_cpu():
    x = sample((8, 10), torch.float32)
    for fn in (lambda t: t.t().sum(0), lambda t: t[::2, 1::3].mean(1), lambda t: t.t().argmax(1)):
        same(native(fn, x), fn(x))


def test_a_large_float32_sum_stays_accurate():
    x = torch.rand(1 << 20, dtype=torch.float64)
    r = native(lambda t: t.float().sum(), x).cpu().double()
    assert abs(r.item() - x.sum().item()) / x.sum().item() < 1e-5


def test_integer_and_bool_sums_promote_to_int64_like_cpu():
    for dtype in (torch.int8, torch.int32, torch.bool):
        x = sample((4, 7), dtype)
        same(native(lambda t: t.sum(1), x), x.sum(1))


def test_out_variants_resize_and_keep_their_dtype():
    x = sample((3, 4), torch.float32)
    out = torch.empty(0, dtype=torch.float64, device="axon")
    torch.sum(x.to("axon"), 1, out=out)
    same(out, torch.sum(x, 1, out=torch.empty(0, dtype=torch.float64)))  # computed in float64, as on CPU


def test_empty_reductions_follow_pytorch():
    e = torch.empty(0, 3)
    same(native(lambda t: t.sum(0), e), e.sum(0))
    same(native(lambda t: t.prod(0), e), e.prod(0))
    with pytest.raises(IndexError, match="amax"):  # the same error as on CPU
        torch.empty(0, 3, device="axon").amax(0)
    with pytest.raises(RuntimeError):
        torch.empty(0, device="axon").max()


def test_softmax_style_composites_run_on_native_reductions():
    x = sample((4, 10), torch.float32)
    fn = lambda t: (t - t.amax(1, keepdim=True)).exp() / (t - t.amax(1, keepdim=True)).exp().sum(1, keepdim=True)  # noqa: E731
    same(native(fn, x), fn(x))


# Pairs of reductions bound as two native ones.
PAIRS = {
    "var_mean dim": lambda t: torch.var_mean(t, 1),
    "var_mean all, correction 0": lambda t: torch.var_mean(t, correction=0),
    "std_mean dims keepdim": lambda t: torch.std_mean(t, (0, 2), keepdim=True),
    "aminmax": lambda t: torch.aminmax(t),
    "aminmax dim": lambda t: torch.aminmax(t, dim=-1),
    "aminmax dim keepdim": lambda t: torch.aminmax(t, dim=0, keepdim=True),
    "aminmax all keepdim": lambda t: torch.aminmax(t, keepdim=True),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.uint8, torch.bool],
                         ids=str)
@pytest.mark.parametrize("name", sorted(PAIRS))
def test_paired_reductions_match_cpu_natively(name, dtype):
    if name.startswith(("var", "std")) and not dtype.is_floating_point:
        pytest.skip("var and std take floating dtypes only (the refusal is tested below)")
    x = sample((3, 5, 4), dtype)
    got, want = native(PAIRS[name], x), PAIRS[name](x)
    for g, w in zip(got, want):
        same(g, w)


def test_paired_reductions_refuse_what_cpu_refuses():
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        torch.aminmax(torch.empty(0, 3, device="axon"))
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.aminmax(torch.empty(0, 3, device="axon"), dim=0)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.var_mean(torch.ones(3, dtype=torch.int64, device="axon"))


MORE = {
    "prod all": lambda t: torch.prod(t),
    "prod all float64": lambda t: torch.prod(t, dtype=torch.float64),
    "nansum all": lambda t: torch.nansum(t),
    "nansum dim keepdim": lambda t: torch.nansum(t, 1, keepdim=True),
    "nanmean dims": lambda t: torch.nanmean(t, (0, 2)) if t.is_floating_point() else torch.nansum(t, (0, 2)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.uint8], ids=str)
@pytest.mark.parametrize("name", sorted(MORE))
def test_prod_nansum_and_nanmean_match_cpu_natively(name, dtype):
    x = sample((3, 5, 4), dtype)
    if dtype.is_floating_point:
        x = (x / 2).exp() if name.startswith("prod") else x
        x[0, 1, 2] = x[2, 4, 0] = float("nan")  # prod propagates them; nansum and nanmean skip them
    same(native(MORE[name], x), MORE[name](x))


@pytest.mark.parametrize("op", [torch.max, torch.min])
@pytest.mark.parametrize("dim", [0, -1])
def test_max_and_min_along_a_dim_of_a_scalar_are_native(op, dim):
    x = torch.tensor(-3.5)
    values, indices = native(lambda t: op(t, dim), x)
    want_values, want_indices = op(x, dim)
    same(values, want_values)
    same(indices, want_indices)
    same(native(lambda t: torch.prod(t), torch.empty(0)), torch.prod(torch.empty(0)))


NORMS = {
    "norm p=None dim": lambda t: torch.norm(t, dim=1),
    "norm p=1 dims keepdim": lambda t: torch.norm(t, p=1, dim=(0, 2), keepdim=True),
    "norm p=inf": lambda t: torch.norm(t, p=float("inf"), dim=0),
    "norm dtype float64": lambda t: torch.norm(t, p=3, dim=2, dtype=torch.float64),
    "cosine_similarity": lambda t: torch.nn.functional.cosine_similarity(t, t.flip(0), dim=1),
    "pairwise_distance": lambda t: torch.nn.functional.pairwise_distance(t[0], t[1]),
    "dist": lambda t: torch.dist(t[0], t[1], p=2.5),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", sorted(NORMS))
def test_the_legacy_norm_and_what_reaches_it_match_cpu_natively(name, dtype):
    x = sample((3, 5, 4), dtype)
    same(native(NORMS[name], x), NORMS[name](x))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_sum_and_mean_run_natively(dtype):
    g = torch.Generator().manual_seed(5)
    z = torch.complex(torch.randn(6, 9, 4, generator=g), torch.randn(6, 9, 4, generator=g)).to(dtype)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.complex64 else dict(rtol=1e-12, atol=1e-12)
    cases = [lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.sum((0, 2), keepdim=True), lambda t: t.mean(0),
             lambda t: t.transpose(0, 2).mean((1, 2)), lambda t: t[:, ::2].sum(-1),
             lambda t: t.sum(1, dtype=torch.complex128)]
    for fn in cases:
        torch_axon.reset_fallback_stats()
        got = fn(z.to("axon"))
        assert torch_axon.fallback_stats() == {}
        want = fn(z)
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got.cpu(), want, **tol)


def test_complex_sums_of_eight_dimensions_match_cpu():
    # With AXON_MAX_DIMS (8) dimensions there is no room for the pairs' extra one: two real reductions instead.
    g = torch.Generator().manual_seed(8)
    shape = (2, 3, 2, 2, 3, 2, 2, 5)
    z = torch.complex(torch.randn(shape, generator=g), torch.randn(shape, generator=g))
    for fn in (lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.mean((0, 7))):
        torch.testing.assert_close(native(fn, z).cpu(), fn(z), rtol=1e-5, atol=1e-5)


NARROW_LANES = {
    "sum": lambda t: t.sum(1), "mean": lambda t: t.mean(1), "amax": lambda t: t.amax(1), "amin": lambda t: t.amin(1),
    "norm2": lambda t: torch.linalg.vector_norm(t, dim=1), "sum01": lambda t: t.sum((0, 1)),
    "prod": lambda t: t.prod(1),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("lanes", [2, 3, 5, 16, 17])
@pytest.mark.parametrize("rows", [7, 64, 1000])
@pytest.mark.parametrize("name", sorted(NARROW_LANES))
def test_reductions_over_rows_of_a_few_lanes_match_cpu(name, rows, lanes, dtype):
    # [B, rows, lanes] over rows: up to 16 lanes, libaxon folds a group of rows (64 // lanes down to 4, dividing
    # rows: none for 7 rows or 17 lanes) as one row and merges the groups' lanes at the end (reduce.c, rd_plan).
    x = sample((3, rows, lanes), dtype, seed=rows + lanes)
    if name == "prod":
        x = 1 + x / 64  # factors near 1: no overflow over 1000 rows
    x[1, rows // 2, lanes - 1] = float("nan")  # one lane of one output: NaN, the others not
    fn = NARROW_LANES[name]
    # torch CPU multiplies bfloat16 in bfloat16, a rounding per row (5% off after 64); libaxon in float32.
    want = fn(x.double()).to(dtype) if name == "prod" and dtype == torch.bfloat16 else fn(x)
    same(native(fn, x), want)


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.uint8], ids=str)
def test_integer_reductions_over_rows_of_a_few_lanes_match_cpu(dtype):
    x = sample((3, 1000, 2), dtype, seed=9)
    for fn in (lambda t: t.sum(1), lambda t: t.amax(1), lambda t: t.any(1), lambda t: t.count_nonzero(1)):
        same(native(fn, x), fn(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex64], ids=str)
def test_long_reductions_of_a_few_lanes_split_into_chunks_match_cpu(dtype):
    # One output pair over 2^18 rows: few items, so the grouped rows are cut into chunks merged afterwards.
    x = sample((1, 1 << 18, 2), torch.float32, seed=3)
    x = torch.view_as_complex(x.squeeze(0)) if dtype == torch.complex64 else x
    for fn in (lambda t: t.sum(-2 if t.dim() == 3 else 0), lambda t: t.mean(), lambda t: t.sum()):
        want = fn(x.double() if dtype == torch.float32 else x.to(torch.complex128))
        got = native(fn, x).cpu()
        torch.testing.assert_close(got.to(want.dtype), want, rtol=1e-5, atol=1e-3)


ALL_REAL = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8, torch.uint8, torch.int16,
            torch.int32, torch.int64, torch.bool]


@pytest.mark.parametrize("dtype", ALL_REAL)
@pytest.mark.parametrize("op", [torch.cummax, torch.cummin], ids=["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_and_cummin_take_the_latest_of_ties_and_nans(dtype, op, dim):
    x = sample((6, 9, 5), dtype).to(torch.float64).round().to(dtype)  # few distinct values: many ties
    if dtype.is_floating_point:
        x[1, 2, 3] = x[2, 4, 0] = x[4, 4, 0] = float("nan")
    got = native(lambda t: op(t, dim), x)
    want = op(x, dim)
    assert torch.equal(got.indices.cpu(), want.indices)
    same(got.values, want.values)
    xt = x.transpose(0, 2)  # a strided view
    got = native(lambda t: op(t.transpose(0, 2), dim), x)
    assert torch.equal(got.indices.cpu(), op(xt, dim).indices)


def test_cummax_gradient_and_out_forms():
    x = sample((4, 7), torch.float64)
    xa = x.to("axon").requires_grad_()
    xc = x.clone().requires_grad_()
    torch.cummax(xa, 1).values.sum().backward()
    torch.cummax(xc, 1).values.sum().backward()
    same(xa.grad, xc.grad)
    values = torch.empty(0, dtype=torch.float64, device="axon")
    indices = torch.empty(0, dtype=torch.int64, device="axon")
    torch.cummin(x.to("axon"), 0, out=(values, indices))
    want = torch.cummin(x, 0)
    same(values, want.values)
    assert torch.equal(indices.cpu(), want.indices)
    assert torch.cummax(torch.tensor(3.0, device="axon"), 0).indices.item() == 0  # 0-dim


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_matches_cpu_with_infinities_and_nan(dtype, dim):
    x = (sample((7, 33), dtype).to(torch.float64) * 10).to(dtype)
    x[2, 5] = float("-inf")
    x[3, :4] = float("-inf")
    x[5, 7] = float("inf")
    x[6, 9] = float("nan")
    same(native(lambda t: torch.logcumsumexp(t, dim), x), torch.logcumsumexp(x, dim))
    xa = x.double().to("axon").requires_grad_()
    torch.logcumsumexp(xa, dim).sum().backward()  # its gradient runs on the device too
    assert xa.grad.device.type == "axon"


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_prod_logsumexp_and_logcumsumexp_match_cpu(dtype):
    # libaxon computes them in complex128 as c10::complex does: products by the textbook formula, logsumexp shifted by
    # the largest real part, logcumsumexp by PyTorch's log-add-exp (imaginary parts outside (-pi, pi] kept).
    g = torch.Generator().manual_seed(3)
    unit = torch.polar(1 + 0.05 * torch.rand(4, 6, 9, generator=g, dtype=torch.float64),
                       6 * torch.rand(4, 6, 9, generator=g, dtype=torch.float64)).to(dtype)
    wide = torch.complex(6 * torch.rand(4, 6, 9, generator=g, dtype=torch.float64) - 3,
                         10 * torch.rand(4, 6, 9, generator=g, dtype=torch.float64) - 5).to(dtype)
    special = wide.clone()
    special[0, 1, 2] = complex(float("nan"), 1.0)
    special[1, 2] = complex(float("-inf"), 0.5)   # a row of -inf real parts
    special[2, 3, 4] = complex(float("inf"), 0.25)
    special[3, 0, 7] = complex(1.0, float("nan"))
    cases = [
        (unit, lambda t: torch.prod(t, 2)), (unit, lambda t: torch.prod(t.transpose(0, 2), 1, keepdim=True)),
        (unit, lambda t: torch.prod(t)), (unit, lambda t: torch.prod(t.real.contiguous(), 1, dtype=dtype)),
        (wide, lambda t: torch.logsumexp(t, 2)), (wide, lambda t: torch.logsumexp(t, (0, 2), keepdim=True)),
        (special, lambda t: torch.logsumexp(t, 2)), (special, lambda t: torch.logsumexp(t, 0)),
        (wide, lambda t: torch.logcumsumexp(t, 2)), (wide, lambda t: torch.logcumsumexp(t.transpose(0, 2), 1)),
        (special, lambda t: torch.logcumsumexp(t, 2)), (special, lambda t: torch.logcumsumexp(t, 1)),
    ]
    for x, fn in cases:
        same(native(fn, x), fn(x))
    out = torch.empty(4, 6, dtype=dtype, device="axon")
    native(lambda t: torch.logcumsumexp(t, 0, out=out), wide[:, :, 0])
    same(out, torch.logcumsumexp(wide[:, :, 0], 0))
    for fn in (lambda t: torch.prod(t, 1), lambda t: torch.logsumexp(t, 1), lambda t: torch.logcumsumexp(t, 2)):
        xa, xc = unit.to("axon").requires_grad_(), unit.clone().requires_grad_()
        torch_axon.reset_fallback_stats()
        fn(xa).abs().sum().backward()
        assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
        fn(xc).abs().sum().backward()
        same(xa.grad, xc.grad)
    empty = torch.empty(3, 0, dtype=dtype)
    same(native(lambda t: torch.prod(t, 1), empty), torch.prod(empty, 1))
    same(native(lambda t: torch.logsumexp(t, 1), empty), torch.logsumexp(empty, 1))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_complex_scans_match_cpu_forward_and_backward(op, dtype):
    # libaxon scans complex lines in complex128, as PyTorch CPU accumulates both complex dtypes.
    g = torch.Generator().manual_seed(5)
    x = torch.polar(1 + 0.05 * torch.rand(4, 6, 33, generator=g, dtype=torch.float64),
                    6 * torch.rand(4, 6, 33, generator=g, dtype=torch.float64)).to(dtype)
    for dim in (0, 2):
        fn = lambda t: getattr(t, op)(dim)  # noqa: E731
        same(native(fn, x), fn(x))
        same(native(lambda t: fn(t.transpose(0, 2)), x), fn(x.transpose(0, 2)))  # strided lines
    # A real self into a complex result (dtype=), and out= of the other complex dtype.
    real = x.real.contiguous()
    same(native(lambda t: getattr(torch, op)(t, 1, dtype=dtype), real), getattr(torch, op)(real, 1, dtype=dtype))
    other = torch.complex128 if dtype == torch.complex64 else torch.complex64
    out = torch.empty(4, 6, 33, dtype=other, device="axon")
    native(lambda t: getattr(torch, op)(t, 2, dtype=other, out=out), x)
    same(out, getattr(torch, op)(x, 2, dtype=other))
    xa = x.to("axon").requires_grad_()
    xc = x.clone().requires_grad_()
    torch_axon.reset_fallback_stats()
    getattr(xa, op)(1).abs().sum().backward()
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    getattr(xc, op)(1).abs().sum().backward()
    same(xa.grad, xc.grad)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_var_std_and_their_means_match_cpu(dtype):
    # PyTorch's rule: the variance of the real parts plus that of the imaginary parts; std is its square root.
    g = torch.Generator().manual_seed(7)
    x = torch.randn((5, 6, 9), generator=g, dtype=torch.complex128).to(dtype)
    cases = {
        "var": lambda t: t.var(1), "std_pop": lambda t: t.std((0, 2), correction=0, keepdim=True),
        "var_all": lambda t: t.var(), "std_c2": lambda t: torch.std(t, 2, correction=2),
        "var_mean": lambda t: torch.var_mean(t, 1), "std_mean": lambda t: torch.std_mean(t, (0, 1), keepdim=True),
    }
    for name, fn in cases.items():
        got, want = native(fn, x), fn(x)
        for g_, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
            same(g_, w)
    out = torch.empty(0, device="axon", dtype=x.real.dtype)
    native(lambda t: torch.var(t, 2, out=out), x)
    same(out, torch.var(x, 2))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_any_all_count_nonzero_and_trace_match_cpu(dtype):
    # x != 0 when either part is nonzero: rows of zeros, of real parts only, of imaginary parts only.
    g = torch.Generator().manual_seed(8)
    x = torch.randn((4, 5, 6), generator=g, dtype=torch.complex128).to(dtype)
    x[0] = 0
    x[1, :, :3] = 0
    x[2] = x[2].real.to(dtype)
    x[3, 1] = 1j * x[3, 1].imag
    for fn in [lambda t: t.any(1), lambda t: t.all(2), lambda t: t.any(), lambda t: (t * 0).all(),
               lambda t: torch.count_nonzero(t, (1, 2)), lambda t: torch.count_nonzero(t)]:
        same(native(fn, x), fn(x))
    same(native(lambda t: torch.trace(t[3]), x), torch.trace(x[3]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.complex64,
                                   torch.complex128], ids=str)
def test_renorm_matches_cpu(dtype):
    g = torch.Generator().manual_seed(9)
    x = (torch.randn((4, 5, 3), generator=g, dtype=torch.float64) * 2).to(dtype)
    tol = {torch.bfloat16: (2e-2, 2e-2), torch.float16: (4e-3, 2e-3)}.get(dtype, TOL.get(dtype))
    for p, dim, maxnorm in [(2, 1, 1.0), (1, 0, 0.5), (3.5, -1, 2.0), (2, 2, 1e9), (float("inf"), 0, 1.0)]:
        got = native(lambda t: torch.renorm(t, p, dim, maxnorm), x).cpu()
        torch.testing.assert_close(got, torch.renorm(x, p, dim, maxnorm), rtol=tol[0], atol=tol[1])
    with pytest.raises(RuntimeError, match="renorm: input needs at least 2 dimensions"):
        torch.renorm(torch.ones(3, device="axon"), 2, 0, 1.0)
    with pytest.raises(RuntimeError, match="renorm: non-positive-norm not supported"):
        torch.renorm(torch.ones(3, 3, device="axon"), 0, 0, 1.0)


HASH_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int8, torch.int16, torch.int32,
               torch.int64, torch.uint8, torch.bool]


@pytest.mark.parametrize("dtype", HASH_DTYPES, ids=str)
@pytest.mark.parametrize("dim,keepdim", [((), False), (1, False), ((0, 2), True), (-1, True)])
def test_hash_tensor_xors_the_bits_like_cpu(dtype, dim, keepdim):
    # full-width values: random int64 bits, and floats whose float64 bits fill the word
    x = sample((3, 5, 70), dtype, seed=3)
    if dtype == torch.int64:
        x = torch.randint(-2**63, 2**63 - 1, (3, 5, 70), dtype=torch.int64, generator=torch.Generator().manual_seed(3))
    r = native(lambda t: torch.hash_tensor(t, dim, keepdim=keepdim), x)
    assert torch.equal(r.cpu(), torch.hash_tensor(x, dim, keepdim=keepdim))


def test_hash_tensor_of_views_into_out_and_its_errors():
    x = torch.randn(40, 30, dtype=torch.float64)
    x[0, :5] = torch.tensor([-0.0, float("inf"), -float("inf"), float("nan"), 1e-45])
    for view in (lambda t: t.t(), lambda t: t[::3, 1::2], lambda t: t.flip(0)):
        for v in (x, x.float(), x.half()):  # float64 read as its bits; narrower floats widened as they are loaded
            assert torch.equal(native(lambda t: torch.hash_tensor(view(t), 0), v).cpu(), torch.hash_tensor(view(v), 0))
    out = torch.empty(7, dtype=torch.uint64, device="axon")
    torch_axon.reset_fallback_stats()
    torch.hash_tensor(x.to("axon"), 1, out=out)
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(out.cpu(), torch.hash_tensor(x, 1))
    # CPU's messages: another mode, an unsigned self CPU cannot hash, an empty self without a dim
    with pytest.raises(RuntimeError, match="Unknown hash_tensor mode: 1"):
        torch.hash_tensor(x.to("axon"), mode=1)
    with pytest.raises(RuntimeError, match="not implemented for 'UInt32'"):
        torch.hash_tensor(torch.ones(3, dtype=torch.uint32, device="axon"))
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        torch.hash_tensor(torch.ones(0, device="axon"))
    assert torch.hash_tensor(torch.ones(0, 3, device="axon"), 1).shape == (0,)


# torch.segment_reduce: libaxon's segment kernels, forward and backward (lengths or offsets, any axis, initial values,
# empty segments, NaN in max and min, ties and zeros in the gradients).
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_forward_is_native_and_matches_cpu(reduce, dtype):
    x = sample((3, 7, 2), dtype, seed=4)
    x[1, 0, 0] = float("nan")
    lengths = torch.tensor([[2, 0, 4, 1], [3, 1, 0, 3], [7, 0, 0, 0]])
    offsets = torch.cat([torch.zeros(3, 1, dtype=torch.long), lengths.cumsum(1)], 1)
    for kwargs in ({"lengths": lengths}, {"lengths": lengths.int()}, {"offsets": offsets}, {"offsets": offsets.int()}):
        for initial in (None, 0.5):
            def fn(t, kwargs=kwargs, initial=initial):
                counts = {k: v.to(t.device) for k, v in kwargs.items()}
                return torch.segment_reduce(t, reduce, axis=1, initial=initial, **counts)
            same(native(fn, x), fn(x))
    flat, flat_lengths = sample((6,), dtype), torch.tensor([1, 2, 0, 3])  # axis 0 of a vector, unsafe
    same(native(lambda t: torch.segment_reduce(t, reduce, lengths=flat_lengths.to("axon"), unsafe=True), flat),
         torch.segment_reduce(flat, reduce, lengths=flat_lengths, unsafe=True))


def test_segment_reduce_refuses_what_cpu_refuses_and_has_a_gradient():
    x = torch.randn(6, dtype=torch.float64)
    cases = [({"lengths": torch.tensor([1, 2, 2])}, "sum to data.size"), ({"lengths": torch.tensor([4, -1, 3])},
             "negative value"), ({}, "Either lengths or offsets must be defined")]
    for kwargs, message in cases:
        for device in ("cpu", "axon"):
            with pytest.raises(RuntimeError, match=message):
                torch.segment_reduce(x.to(device), "sum", **{k: v.to(device) for k, v in kwargs.items()})
    with pytest.raises(RuntimeError, match="unsupported reduction given! median"):
        torch.segment_reduce(x.to("axon"), "median", lengths=torch.tensor([6], device="axon"))
    for reduce in ("sum", "mean", "max", "min", "prod"):
        data = torch.tensor([[2.0, 2.0, -1.0, 3.0, 0.0, 3.0, 0.0, 5.0]] * 2, dtype=torch.float64)
        data[1, 2] = float("nan")
        grads = []
        for device in ("cpu", "axon"):
            leaf = data.detach().to(device).requires_grad_()
            out = torch.segment_reduce(leaf, reduce, lengths=torch.tensor([[3, 0, 4, 1]] * 2, device=device), axis=1,
                                       initial=0.5 if reduce == "prod" else None)
            torch_axon.reset_fallback_stats()
            out.backward(torch.tensor([[0.5, 2.0, -1.5, 3.0]] * 2, dtype=torch.float64, device=device))
            assert device == "cpu" or torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
            grads.append(leaf.grad.cpu())
        torch.testing.assert_close(grads[1], grads[0], equal_nan=True)

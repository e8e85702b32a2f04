"""Native max, average, adaptive average and adaptive max pooling and max_unpool (libaxon's pooling kernels), 1d/2d/3d,
forward and through autograd: results against PyTorch CPU with per-dtype tolerances, argmax indices equal to CPU's, no host
fallback for the ops bound, and PyTorch's own errors for bad arguments."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon
from spatial_testing import DTYPES, EXACT, close, compare_both, sample

# (rtol, atol). Max pooling picks an element: exact. Averages are summed in float64 and rounded once (CPU sums in
# float32 for float32 and the half types), so they differ by about one rounding of the output dtype.
TOL = {torch.float32: (1e-6, 1e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1e-2, 1e-2),
       torch.float16: (2e-3, 1e-3)}
# Gradients: libaxon accumulates half types in float32, CPU adds into bfloat16/float16 one window at a time (up to
# kernel-volume roundings of the output dtype apart).
GRAD_TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (4e-2, 4e-2),
            torch.float16: (5e-3, 5e-3)}


def check(fn, x, tol=TOL, grad_tol=GRAD_TOL):
    compare_both(fn, x, tol, grad_tol)


MAX_CASES = [  # (shape, kernel, stride, padding, dilation, ceil_mode)
    ((2, 3, 20), 3, 2, 1, 1, False),
    ((2, 3, 21), 4, 3, 2, 2, True),
    ((3, 17), 2, None, 0, 1, False),                       # unbatched 1d
    ((2, 3, 9, 11), 3, 2, 1, 1, False),
    ((2, 3, 10, 10), (3, 2), (2, 1), (1, 0), (2, 1), True),
    ((4, 8, 8), 2, None, 0, 1, False),                     # unbatched 2d
    ((1, 2, 33, 31), 5, 3, 2, 1, True),
    ((2, 2, 5, 6, 7), 2, 2, 0, 1, False),
    ((1, 3, 6, 7, 8), (3, 2, 3), (2, 1, 2), (1, 1, 1), (1, 2, 1), True),
]


def spatial_dims(shape):
    """1d/2d/3d for the cases above: unbatched shapes are marked by a leading size that is not the batch of 1-2."""
    return {(3, 17): 1, (4, 8, 8): 2}.get(tuple(shape), len(shape) - 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", MAX_CASES, ids=lambda c: "x".join(map(str, c[0])))
@pytest.mark.parametrize("return_indices", [False, True], ids=["values", "indices"])
def test_max_pool_forward_indices_and_backward_match_cpu(case, return_indices, dtype):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[spatial_dims(shape)]
    fn = lambda x: pool(x, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=return_indices)  # noqa
    # Max pooling's gradient is exact in float32/float64 (each input gets the gradients of the windows it won).
    check(fn, sample(shape, dtype), tol=EXACT)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_max_pool_propagates_nan_like_cpu(dtype):
    x = sample((1, 2, 6, 6), dtype)
    x[0, 0, 1, 1] = float("nan")
    x[0, 1, 4, 3] = float("nan")
    check(lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True), x, tol=EXACT)


AVG_CASES = [  # (shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)
    ((2, 3, 20), 3, 2, 1, False, True, None),
    ((2, 3, 21), 4, 3, 2, True, False, None),
    ((2, 3, 9, 11), 3, 2, 1, False, True, None),
    ((2, 3, 10, 10), (3, 2), (2, 1), (1, 0), True, False, None),
    ((2, 3, 10, 9), 3, 1, 1, True, True, 5),
    ((4, 8, 8), 2, None, 0, False, True, None),
    ((2, 2, 5, 6, 7), 2, 2, 0, False, True, None),
    ((1, 3, 6, 7, 8), (3, 2, 3), (2, 1, 2), (1, 1, 1), True, False, None),
    ((1, 2, 6, 6, 6), 3, 2, 1, True, True, 4),
    ((1, 2, 6, 7), 2, 2, 1, False, True, -2),              # a negative divisor is allowed
    # windows that tile the input (stride = kernel, no padding): the backward writes each row once
    ((2, 3, 9, 11), 3, 3, 0, False, True, None),           # 3 wide, two columns no window covers
    ((2, 3, 8, 8), 2, 2, 0, False, False, 3),              # every delta divided by the override
    ((2, 3, 20), 4, 4, 0, False, True, None),
    ((1, 2, 600, 6), 2, 2, 0, False, True, None),         # 300 output rows: their spans computed per row
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", AVG_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[4]}-{c[5]}-{c[6]}")
def test_avg_pool_forward_and_backward_match_cpu(case, dtype):
    shape, kernel, stride, padding, ceil_mode, include_pad, divisor = case
    n = spatial_dims(shape)
    if n == 1:
        if divisor is not None:
            pytest.skip("avg_pool1d has no divisor_override")
        fn = lambda x: F.avg_pool1d(x, kernel, stride, padding, ceil_mode, include_pad)  # noqa: E731
    else:
        pool = F.avg_pool2d if n == 2 else F.avg_pool3d
        fn = lambda x: pool(x, kernel, stride, padding, ceil_mode, include_pad, divisor)  # noqa: E731
    check(fn, sample(shape, dtype))


ADAPTIVE_CASES = [((2, 3, 10), 4), ((3, 7), 3), ((2, 3, 7, 9), (3, 4)), ((2, 3, 5, 5), (7, 2)), ((3, 8, 8), 1),
                  ((2, 2, 5, 4, 6), (2, 3, 4)), ((1, 2, 4, 4, 4), (4, 4, 4)),
                  ((2, 8, 8, 8), (None, 7)), ((2, 3, 520, 6), (300, 4)), ((8, 16, 33, 33), (7, 5)),
                  ((2, 3, 9, 10, 11), (4, 3, 5))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", ADAPTIVE_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[1]}")
@pytest.mark.parametrize("kind", ["avg", "max"])
def test_adaptive_pool_forward_and_backward_match_cpu(case, kind, dtype):
    shape, size = case
    n = {(3, 7): 1, (3, 8, 8): 2}.get(shape, len(shape) - 2)
    if kind == "avg":
        pool = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[n]
        check(lambda x: pool(x, size), sample(shape, dtype))
    else:
        pool = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d, 3: F.adaptive_max_pool3d}[n]
        check(lambda x: pool(x, size, return_indices=True), sample(shape, dtype), tol=EXACT)


CL_MAX_CASES = [c for c in MAX_CASES if len(c[0]) in (4, 5)] + [((2, 70, 9, 8), 3, 2, 1, 1, False)]  # 64 + 6 ch


@pytest.mark.parametrize("case", CL_MAX_CASES, ids=[str(c[0]) for c in CL_MAX_CASES])
def test_channels_last_float32_max_pool_matches_cpu_and_keeps_the_layout(case):
    """float32 channels_last images go to libaxon as they are (its channel-vector loops): values, indices and the
    input gradient exactly CPU's (a NaN included), the output, indices and gradient channels-last as on CPU."""
    shape, k, s, p, d, ceil = case
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    pool = F.max_pool2d if len(shape) == 4 else F.max_pool3d
    x = sample(shape, torch.float32)
    x.view(-1)[5] = float("nan")
    x = x.contiguous(memory_format=fmt)
    results = []
    for device in ("cpu", "axon"):
        leaf = x.to(device, copy=True).requires_grad_()
        torch_axon.reset_fallback_stats()
        out, idx = pool(leaf, k, s, p, d, ceil_mode=ceil, return_indices=True)
        out.backward(sample(out.shape, torch.float32, seed=3).to(device))
        assert device == "cpu" or torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
        results.append([t.detach() for t in (out, idx, leaf.grad)])
    for got, ref in zip(results[1], results[0]):
        assert got.is_contiguous(memory_format=fmt) == ref.is_contiguous(memory_format=fmt)
        torch.testing.assert_close(got.cpu(), ref, rtol=0, atol=0, equal_nan=True)


def test_strided_and_channels_last_inputs_match_cpu():
    x = sample((2, 3, 12, 10), torch.float32)
    check(lambda x: F.max_pool2d(x.transpose(2, 3), 3, 2, 1), x, tol=EXACT)
    check(lambda x: F.avg_pool2d(x.contiguous(memory_format=torch.channels_last), 2), x)
    check(lambda x: F.adaptive_avg_pool2d(x[:, :, ::2], 3), x)


def test_strided_out_tensors_are_written_through():
    x = sample((2, 3, 8, 8), torch.float32)
    out = torch.empty(2, 3, 4, 8, device="axon")[..., ::2]
    idx = torch.empty(2, 3, 4, 8, dtype=torch.int64, device="axon")[..., ::2]
    torch_axon.reset_fallback_stats()
    torch.ops.aten.max_pool2d_with_indices.out(x.to("axon"), [2, 2], [2, 2], [0, 0], [1, 1], False, out=out,
                                               indices=idx)
    assert torch_axon.fallback_stats() == {}
    ref, ref_idx = F.max_pool2d(x, 2, return_indices=True)
    close(out, ref, EXACT)
    close(idx, ref_idx, EXACT)


def test_pooling_module_train_step_is_native():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.MaxPool2d(2), torch.nn.AvgPool2d(3, 1, 1), torch.nn.AdaptiveAvgPool2d(3),
                                torch.nn.Flatten(), torch.nn.Linear(27, 4))
    x = torch.randn(5, 3, 16, 16)
    ref = model(x).square().sum()
    ref.backward()
    ref_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.to("axon")
    torch_axon.reset_fallback_stats()
    out = model(x.to("axon")).square().sum()
    out.backward()
    assert not any("pool" in k for k in torch_axon.fallback_stats()), torch_axon.fallback_stats()
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    for p, rg in zip(model.parameters(), ref_grads):
        torch.testing.assert_close(p.grad.cpu(), rg, rtol=1e-4, atol=1e-5)


def raises_like_cpu(fn, x, match):
    """fn raises on CPU and on axon, both messages matching `match` (PyTorch's own error), and axon runs no kernel
    on the host for it."""
    with pytest.raises(RuntimeError, match=match):
        fn(x)
    torch_axon.reset_fallback_stats()
    with pytest.raises(RuntimeError, match=match):
        fn(x.to("axon"))
    assert torch_axon.fallback_stats() == {}


def test_bad_arguments_raise_pytorchs_errors():
    x = sample((1, 2, 4, 4), torch.float32)
    raises_like_cpu(lambda x: F.max_pool2d(x, 5), x, "Output size is too small")
    raises_like_cpu(lambda x: F.avg_pool2d(x, 5), x, "Output size is too small")
    raises_like_cpu(lambda x: F.max_pool2d(x, 3, padding=2), x, "pad should be at most half of effective kernel size")
    raises_like_cpu(lambda x: F.avg_pool2d(x, 2, divisor_override=0), x, "divisor must be not zero")
    raises_like_cpu(lambda x: F.max_pool2d(x, 2, stride=0), x, "stride should not be zero")
    raises_like_cpu(lambda x: F.max_pool3d(x, 2), x[0, 0], "4D or 5D")
    raises_like_cpu(lambda x: F.adaptive_avg_pool2d(x, (2, 2)), sample((2, 0, 4), torch.float32), "non-zero size")
    raises_like_cpu(lambda x: F.adaptive_max_pool2d(x, (2, 2)), sample((2, 0, 4), torch.float32), "non-zero size")


def test_direct_out_call_with_wrong_shapes_is_checked():
    x = sample((1, 2, 8, 8), torch.float32).to("axon")
    g = torch.zeros(1, 2, 3, 3, device="axon")  # the 2x2 pool's output is 4x4
    idx = torch.zeros(1, 2, 3, 3, dtype=torch.int64, device="axon")
    # The functional forms run PyTorch's meta checks before the kernel; the .grad_input forms run the glue's.
    with pytest.raises(RuntimeError, match="size"):
        torch.ops.aten.max_pool2d_with_indices_backward(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)
    with pytest.raises(RuntimeError, match="size"):
        torch.ops.aten.avg_pool2d_backward(g, x, [2, 2], [2, 2], [0, 0], False, True, None)
    out = torch.empty(0, device="axon")
    with pytest.raises(RuntimeError, match="max_pool2d_with_indices_backward: expected grad_output of shape"):
        torch.ops.aten.max_pool2d_with_indices_backward.grad_input(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx,
                                                                   grad_input=out)
    with pytest.raises(RuntimeError, match="avg_pool2d_backward: expected grad_output of shape"):
        torch.ops.aten.avg_pool2d_backward.grad_input(g, x, [2, 2], [2, 2], [0, 0], False, True, None,
                                                      grad_input=out)


def test_corrupt_indices_raise_instead_of_writing_out_of_bounds():
    x = sample((1, 2, 4, 4), torch.float32).to("axon")
    g = torch.ones(1, 2, 2, 2, device="axon")
    idx = torch.full((1, 2, 2, 2), 16, dtype=torch.int64, device="axon")
    with pytest.raises(RuntimeError, match="out of range for an input plane of 16 elements"):
        gi = torch.ops.aten.max_pool2d_with_indices_backward(g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, idx)
        gi.cpu()  # the kernel's error surfaces at the next synchronization


INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("case", MAX_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_integer_max_pool_values_and_indices_match_cpu(case, dtype):
    shape, kernel, stride, padding, dilation, ceil_mode = case
    pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[spatial_dims(shape)]
    info = torch.iinfo(dtype)
    g = torch.Generator().manual_seed(7)
    # few distinct values, so windows tie (the first maximum wins), and the dtype's extremes
    x = torch.randint(-3 if info.min < 0 else 0, 4, shape, generator=g).to(dtype)
    x.view(-1)[::5] = info.min
    x.view(-1)[::11] = info.max
    if dtype == torch.int64:  # beyond 2^53, where a trip through double would merge neighbours
        x = x * (2**60) + torch.randint(0, 4, shape, generator=g)
    want, want_idx = pool(x, kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)
    torch_axon.reset_fallback_stats()
    got, got_idx = pool(x.to("axon"), kernel, stride, padding, dilation, ceil_mode=ceil_mode, return_indices=True)
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(got.cpu(), want) and torch.equal(got_idx.cpu(), want_idx)


def test_integer_max_pool_of_only_the_lowest_value_keeps_the_first_index():
    x = torch.full((1, 1, 4, 4), torch.iinfo(torch.int64).min)
    want, want_idx = F.max_pool2d(x, 2, return_indices=True)
    got, got_idx = F.max_pool2d(x.to("axon"), 2, return_indices=True)
    assert torch.equal(got.cpu(), want) and torch.equal(got_idx.cpu(), want_idx)


@pytest.mark.parametrize("case", AVG_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[4]}-{c[5]}-{c[6]}")
def test_int64_avg_pool_truncates_like_cpu(case):
    shape, kernel, stride, padding, ceil_mode, include_pad, divisor = case
    n = spatial_dims(shape)
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
    kwargs = {} if n == 1 else {"divisor_override": divisor}  # avg_pool1d has none
    # negative sums whose quotients are not whole (truncation toward zero, not floor), and values past 2^53
    x = torch.randint(-50, 50, shape, generator=torch.Generator().manual_seed(4)) * (2**54 + 1)
    want = pool(x, kernel, stride, padding, ceil_mode, include_pad, **kwargs)
    torch_axon.reset_fallback_stats()
    got = pool(x.to("axon"), kernel, stride, padding, ceil_mode, include_pad, **kwargs)
    assert torch_axon.fallback_stats() == {}
    close(got, want, EXACT)


def test_other_integer_avg_pools_raise_cpus_error():
    with pytest.raises(RuntimeError, match="not implemented for 'Int'"):
        F.avg_pool2d(torch.ones(1, 1, 4, 4, dtype=torch.int32, device="axon"), 2)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_batch_gives_empty_results(dtype):
    x = torch.empty(0, 3, 8, 8, dtype=dtype, device="axon")
    torch_axon.reset_fallback_stats()
    assert F.max_pool2d(x, 2).shape == (0, 3, 4, 4)
    assert F.avg_pool2d(x, 2).shape == (0, 3, 4, 4)
    assert F.adaptive_avg_pool2d(x, 3).shape == (0, 3, 3, 3)
    assert torch_axon.fallback_stats() == {}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_inverts_max_pool_and_its_gradient_matches_cpu(dtype, nd):
    g = torch.Generator().manual_seed(11)
    shape = {1: (2, 3, 10), 2: (2, 3, 8, 6), 3: (1, 2, 4, 6, 4)}[nd]
    pool = getattr(F, f"max_pool{nd}d")
    unpool = getattr(F, f"max_unpool{nd}d")
    x = torch.randn(shape, generator=g).to(dtype)
    y, idx = pool(x, 2, stride=2, return_indices=True)
    want = unpool(y, idx, 2, stride=2, output_size=x.shape[2:])
    ya = y.to("axon").requires_grad_()
    yc = y.clone().requires_grad_()
    torch_axon.reset_fallback_stats()
    got = unpool(ya, idx.to("axon"), 2, stride=2, output_size=x.shape[2:])
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(got.detach().cpu(), want)
    w = torch.randn(want.shape, generator=g).to(dtype)
    (got * w.to("axon")).sum().backward()
    (unpool(yc, idx, 2, stride=2, output_size=x.shape[2:]) * w).sum().backward()
    torch.testing.assert_close(ya.grad.cpu(), yc.grad)


def test_max_unpool_repeated_indices_keep_the_last_and_bad_ones_fail():
    y = torch.tensor([[[1.0, 2.0, 3.0]]])
    idx = torch.tensor([[[0, 0, 4]]])
    got = F.max_unpool1d(y.to("axon"), idx.to("axon"), 2, output_size=(5,))
    assert torch.equal(got.cpu(), F.max_unpool1d(y, idx, 2, output_size=(5,)))
    with pytest.raises(RuntimeError, match="Found an invalid max index: 9"):
        F.max_unpool1d(y.to("axon"), torch.tensor([[[0, 9, 1]]], device="axon"), 2, output_size=(5,)).cpu()


# Fractional max pooling (libaxon's kernel; the backward is max pooling's scatter). The window starts come from the
# given random samples with CPU's arithmetic (for float16 and bfloat16 each step rounded to the dtype, as c10::Half and
# c10::BFloat16 compute): values and indices are CPU's exactly. Gradients: exact in float32 and float64; in 16-bit
# types CPU rounds after each add where windows overlap, axon once.
FRACTIONAL_CASES = [  # (shape, kernel, output_size)
    ((2, 3, 17, 13), (3, 2), (7, 9)), ((3, 10, 10), 2, (5, 5)), ((2, 5, 6, 7), 3, (4, 5)),
    ((1, 2, 9, 11, 8), (2, 3, 2), (4, 5, 6)), ((2, 9, 7, 6), 2, (3, 3, 3)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", FRACTIONAL_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_fractional_max_pool_matches_cpu_exactly_and_natively(case, dtype):
    shape, kernel, output_size = case
    nsp = len(output_size)
    x = sample(shape, dtype)
    x.view(-1)[3] = float("nan")
    batched = x.dim() == nsp + 2
    u = torch.rand(shape[0] if batched else 1, shape[1] if batched else shape[0], nsp,
                   generator=torch.Generator().manual_seed(1), dtype=dtype)
    fn = F.fractional_max_pool2d if nsp == 2 else F.fractional_max_pool3d
    xr, xa = x.clone().requires_grad_(), x.to("axon").requires_grad_()
    want, want_i = fn(xr, kernel, output_size=output_size, return_indices=True, _random_samples=u)
    torch_axon.reset_fallback_stats()
    got, got_i = fn(xa, kernel, output_size=output_size, return_indices=True, _random_samples=u.to("axon"))
    g = sample(want.shape, dtype)
    want.backward(g)
    got.backward(g.to("axon"))
    assert torch_axon.fallback_stats() == {}
    close(got, want, EXACT)
    assert torch.equal(got_i.cpu(), want_i)
    close(xa.grad, xr.grad, EXACT if dtype in (torch.float32, torch.float64) else GRAD_TOL)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_fractional_max_pool_16bit_starts_round_like_cpu(dtype):
    # Window starts where rounding each step to the dtype moves them: 31 outputs over 100 inputs (alpha = 93 / 30, not
    # exact in 16 bits) with W samples 0.999 and 0.123. Starts computed in float32 differ from CPU's (the test fails).
    x = sample((4, 3, 2, 100), dtype)
    u = torch.tensor([0.999, 0.5, 0.123, 0.25], dtype=dtype).repeat(6).view(4, 3, 2)   # (W, H) per plane
    want, want_i = F.fractional_max_pool2d(x, (1, 7), output_size=(2, 31), return_indices=True, _random_samples=u)
    torch_axon.reset_fallback_stats()
    got, got_i = F.fractional_max_pool2d(x.to("axon"), (1, 7), output_size=(2, 31), return_indices=True,
                                         _random_samples=u.to("axon"))
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(got_i.cpu(), want_i)
    close(got, want, EXACT)


def test_fractional_max_pool_bad_arguments_are_refused_like_cpu():
    x = sample((1, 2, 8, 8), torch.float32)
    u = torch.rand(1, 2, 2)
    with pytest.raises(RuntimeError, match="too large relative to input"):
        F.fractional_max_pool2d(x, 7, output_size=(4, 4), _random_samples=u)
    with pytest.raises(RuntimeError, match="too large relative to input"):
        F.fractional_max_pool2d(x.to("axon"), 7, output_size=(4, 4), _random_samples=u.to("axon"))

"""Native softmax, log_softmax, layer_norm and rms_norm (libaxon's norm kernels), forward and through autograd:
results against PyTorch CPU with per-dtype tolerances, and no host fallback for the ops bound."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon
from axon_testing import libaxon_commands

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
# (rtol, atol). libaxon computes in float64 (float32 for float32, float16 and bfloat16 softmax rows along the last dim)
# and rounds once; CPU computes half types in float32 and float32 in
# float32, so results differ by about one rounding of the output dtype (more for gradients, which cancel).
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10), torch.bfloat16: (2e-2, 2e-2),
       torch.float16: (4e-3, 2e-3)}
GRAD_TOL = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-10), torch.bfloat16: (5e-2, 5e-2),
            torch.float16: (1e-2, 1e-2)}


def sample(shape, dtype, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def close(result, expected, tol):
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape)
    rtol, atol = tol[expected.dtype]
    torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)


def run_both(fn, inputs, grad_seed=7):
    """fn(*inputs) on CPU and on axon, then backward with the same random gradient; returns both (out, grads)."""
    results = []
    for device in ("cpu", "axon"):
        leaves = [t.detach().to(device).requires_grad_(t.is_floating_point()) for t in inputs]
        torch_axon.reset_fallback_stats()
        out = fn(*leaves)
        g = sample(out.shape, out.dtype, seed=grad_seed).to(device)
        out.backward(g)
        stats = torch_axon.fallback_stats()
        results.append((out.detach(), [t.grad for t in leaves], stats))
    return results


def check(fn, inputs, dtype, allowed=(), grad_tol=GRAD_TOL):
    (ref, ref_grads, _), (out, grads, stats) = run_both(fn, inputs)
    assert {k: v for k, v in stats.items() if k not in allowed} == {}, stats
    close(out, ref, TOL)
    for g, rg in zip(grads, ref_grads):
        if rg is not None:
            close(g, rg, grad_tol)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((4, 33), -1), ((3, 70, 5), 1), ((2, 3, 130), 0), ((2, 5000), 1), ((7, 1), -1),
                                       ((3, 4096), -1), ((2, 40, 64), -1)])
def test_softmax_forward_and_backward_match_cpu(shape, dim, log, dtype):
    f = F.log_softmax if log else F.softmax
    check(lambda x: f(x, dim), [sample(shape, dtype, scale=3.0)], dtype)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_of_strided_view_and_minus_inf_rows_matches_cpu(log):
    x = sample((6, 9), torch.float32)
    x[0, ::2] = float("-inf")
    x[1] = float("-inf")  # PyTorch gives NaN for an all -inf row
    f = F.log_softmax if log else F.softmax
    torch_axon.reset_fallback_stats()
    out = f(x.to("axon").t(), 0)
    assert torch_axon.fallback_stats() == {}
    close(out, f(x.t(), 0), TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", [((5, 9), -1), ((5, 9, 4), 1), ((9,), 0)])
def test_safe_softmax_zeroes_fully_masked_rows_and_matches_cpu(shape, dim, dtype):
    # one -inf row (zeros, and zero gradients), one partly masked, one with a NaN among -infs (NaN, as on CPU)
    x = sample(shape, dtype, scale=3.0)
    rows = x.movedim(dim, -1)
    rows[..., ::2] = float("-inf")
    if x.dim() > 1:
        rows[0] = float("-inf")
        rows[1, 3] = float("nan")
        rows[1, ::2] = float("-inf")
    check(lambda t: torch.ops.aten._safe_softmax(t, dim), [x], dtype)
    wide = torch.ops.aten._safe_softmax(x.to("axon"), dim, torch.float64)  # the dtype argument converts first
    close(wide, torch.ops.aten._safe_softmax(x, dim, torch.float64), TOL)
    assert libaxon_commands(lambda: torch.ops.aten._safe_softmax(x.to("axon"), dim)).count("safe_softmax") == 1


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cross_entropy_log_softmax_part_is_native(dtype):
    target = torch.tensor([1, 0, 4, 2])
    nll = {"aten::nll_loss_forward.output", "aten::nll_loss_backward.grad_input"}  # not this file's ops
    check(lambda x: F.cross_entropy(x, target.to(x.device)), [sample((4, 5), dtype)], dtype, allowed=nll)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("affine", [False, True], ids=["plain", "affine"])
@pytest.mark.parametrize("shape,normalized", [((4, 6, 32), (32,)), ((3, 8, 9), (8, 9)), ((2, 4500), (4500,)),
                                              ((5, 1), (1,))])
def test_layer_norm_forward_and_backward_match_cpu(shape, normalized, affine, dtype):
    x = sample(shape, dtype, scale=2.0) + 0.5
    x[0] = 1.25  # a zero-variance row
    inputs = [x]
    if affine:
        inputs += [sample(normalized, dtype, seed=1) + 1.0, sample(normalized, dtype, seed=2)]
    # Rows of one element: the exact grad_input is 0 (libaxon gives 0); CPU's float32 x - mean leaves about
    # rstd * 2^-24 * |x| = 316 * 6e-8 * 2, so the comparison allows that.
    tol = {d: (r, max(a, 1e-4)) for d, (r, a) in GRAD_TOL.items()} if normalized == (1,) else GRAD_TOL
    check(lambda x, *wb: F.layer_norm(x, normalized, *wb, eps=1e-5), inputs, dtype, grad_tol=tol)


def test_float32_layer_norm_of_rows_with_a_large_mean_stays_accurate():
    # the float32 output subtracts the mean split into two floats: as exact as float64's x - mean, though each row's
    # mean is 1e4 standard deviations from 0 (computed in float, x - mean would lose 13 bits)
    x = sample((6, 1000), torch.float32) + 1e4
    w, b = sample((1000,), torch.float32, 1) + 1.0, sample((1000,), torch.float32, 2)
    got = F.layer_norm(x.to("axon"), (1000,), w.to("axon"), b.to("axon")).cpu()
    want = F.layer_norm(x.double(), (1000,), w.double(), b.double()).float()
    torch.testing.assert_close(got, want, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("n", [64, 4096, 4100])
def test_half_layer_norm_with_float32_weight_matches_cpu(n, dtype):
    # half rows up to 4096 go through float buffers (the weight and bias converted once per range), longer ones
    # through the float64 chunks: a float32 weight and bias, as mixed-precision models keep them
    x = sample((9, n), dtype, scale=2.0) + 0.5
    w, b = sample((n,), torch.float32, 1) + 1.0, sample((n,), torch.float32, 2)
    torch_axon.reset_fallback_stats()
    got = F.layer_norm(x.to("axon"), (n,), w.to("axon"), b.to("axon"))
    assert torch_axon.fallback_stats() == {}
    close(got, F.layer_norm(x, (n,), w, b), TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nn_layer_norm_module_is_native_and_returns_stats_like_cuda(dtype):
    x = sample((3, 16), dtype)
    out, mean, rstd = torch.native_layer_norm(x.to("axon"), [16], None, None, 1e-5)
    stat = torch.float64 if dtype == torch.float64 else torch.float32
    assert mean.dtype == stat and rstd.dtype == stat and mean.shape == (3, 1)
    ref_mean = x.double().mean(1, keepdim=True)
    ref_rstd = (x.double().var(1, keepdim=True, unbiased=False) + 1e-5).rsqrt()
    torch.testing.assert_close(mean.cpu().double(), ref_mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(rstd.cpu().double(), ref_rstd, rtol=1e-6, atol=1e-6)
    m = torch.nn.LayerNorm(16, dtype=dtype)
    check(lambda x, w, b: F.layer_norm(x, (16,), w, b, m.eps), [x, m.weight.detach() + 0.5, m.bias.detach()], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("affine", [False, True], ids=["plain", "affine"])
def test_fused_rms_norm_forward_and_backward_match_cpu(affine, dtype):
    x = sample((4, 5, 48), dtype)
    inputs = [x] + ([sample((48,), dtype, seed=1) + 1.0] if affine else [])

    def fn(x, w=None):
        if x.device.type == "cpu":
            return F.rms_norm(x, (48,), w, None)
        return torch.ops.aten._fused_rms_norm(x, [48], w, None)[0]

    check(fn, inputs, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_nn_rms_norm_module_matches_cpu_without_fallback(dtype):
    m = torch.nn.RMSNorm(32, dtype=dtype)
    check(lambda x, w: F.rms_norm(x, (32,), w, m.eps), [sample((6, 32), dtype), m.weight.detach() + 0.25], dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("op", [torch.ops.aten._softmax, torch.ops.aten._log_softmax], ids=["softmax", "log_softmax"])
def test_half_to_float_softmax_is_native(op, dtype):
    x = sample((3, 40), dtype, scale=3.0)
    torch_axon.reset_fallback_stats()
    out = op(x.to("axon"), 1, True)
    assert torch_axon.fallback_stats() == {}
    close(out, op(x.float(), 1, False), TOL)


def test_nn_modules_train_step_is_native():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.LayerNorm(16), torch.nn.RMSNorm(16))
    x = torch.randn(8, 16)
    ref = torch.nn.functional.log_softmax(model(x), -1).sum()
    ref.backward()
    ref_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.to("axon")
    torch_axon.reset_fallback_stats()
    out = torch.nn.functional.log_softmax(model(x.to("axon")), -1).sum()
    out.backward()
    assert torch_axon.fallback_stats() == {}
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    for p, rg in zip(model.parameters(), ref_grads):
        torch.testing.assert_close(p.grad.cpu(), rg, rtol=1e-4, atol=1e-5)

"""Native activations bound in AxonActivationOps.cpp (libaxon pointwise ops): log_sigmoid, logit (with and without
eps), softshrink, hardshrink, threshold, glu, prelu, rrelu (eval, and training on the device's generator) and
celu/selu (through elu), forward and backward against PyTorch CPU with per-dtype tolerances, no host fallback,
special values, and PyTorch's errors."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
# (rtol, atol). Both sides compute half types in float32 and round once; transcendental functions may differ by a few
# ulp of float32 (libaxon's exp is its own polynomial), which the half tolerances absorb.
TOL = {torch.float32: (2e-6, 1e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1e-2, 1e-2),
       torch.float16: (2e-3, 1e-3)}
GRAD_TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10), torch.bfloat16: (2e-2, 2e-2),
            torch.float16: (4e-3, 2e-3)}


def sample(shape, dtype, seed=0, lo=-4.0, hi=4.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def close(result, expected, tol):
    result = result.detach().cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape)
    rtol, atol = tol[expected.dtype]
    torch.testing.assert_close(result, expected.detach(), rtol=rtol, atol=atol, equal_nan=True)


def check(fn, inputs, grad=True):
    """fn on CPU and on axon (forward, and backward with a random gradient): same results, no fallback."""
    results = []
    for device in ("cpu", "axon"):
        leaves = [t.detach().to(device).requires_grad_(grad) for t in inputs]
        torch_axon.reset_fallback_stats()
        out = fn(*leaves)
        if grad:
            out.backward(sample(out.shape, out.dtype, seed=5).to(device))
        results.append((out, [t.grad for t in leaves], torch_axon.fallback_stats()))
    (ref, ref_grads, _), (out, grads, stats) = results
    assert stats == {}, stats
    close(out, ref, TOL)
    for g, rg in zip(grads, ref_grads):
        if rg is not None:
            close(g, rg, GRAD_TOL)


CASES = {
    "logsigmoid": (F.logsigmoid, (-30, 30)),
    "logit": (torch.logit, (0.01, 0.99)),
    "logit_eps": (lambda x: torch.logit(x, 0.1), (-0.5, 1.5)),
    "softshrink": (F.softshrink, (-2, 2)),
    "softshrink_1.5": (lambda x: F.softshrink(x, 1.5), (-3, 3)),
    "hardshrink": (F.hardshrink, (-2, 2)),
    "threshold": (lambda x: F.threshold(x, 0.5, -2.0), (-2, 2)),
    "glu": (F.glu, (-4, 4)),
    "glu_dim0": (lambda x: F.glu(x, 0), (-4, 4)),
    "rrelu_eval": (lambda x: F.rrelu(x, 0.1, 0.3, training=False), (-4, 4)),
    "celu": (lambda x: F.celu(x, 1.5), (-4, 4)),
    "selu": (F.selu, (-4, 4)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(CASES))
def test_activation_forward_and_backward_match_cpu(name, dtype):
    fn, (lo, hi) = CASES[name]
    check(fn, [sample((6, 10), dtype, lo=lo, hi=hi)])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,wshape", [((4, 6, 5), (6,)), ((3, 5), (1,)), ((2, 3, 4, 4), (3,))], ids=str)
def test_prelu_forward_and_backward_match_cpu(shape, wshape, dtype):
    x = sample(shape, dtype)
    w = sample(wshape, dtype, seed=2, lo=-0.5, hi=0.5)
    check(F.prelu, [x, w])


def test_glu_of_strided_input_and_in_place_threshold_match_cpu():
    x = sample((8, 6), torch.float32).t()
    check(lambda t: F.glu(t, 1), [x])
    y = sample((5, 7), torch.float32)
    yd = y.to("axon")
    torch_axon.reset_fallback_stats()
    F.threshold(yd, 0.25, 9.0, inplace=True)
    assert torch_axon.fallback_stats() == {}
    close(yd, F.threshold(y, 0.25, 9.0), TOL)


def test_special_values_match_cpu():
    x = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.0, 1.0, -0.0, 100.0, -100.0])
    for fn in (F.logsigmoid, torch.logit, lambda t: torch.logit(t, 0.2), F.softshrink, F.hardshrink,
               lambda t: F.threshold(t, 0.0, 5.0)):
        torch_axon.reset_fallback_stats()
        got = fn(x.to("axon"))
        assert torch_axon.fallback_stats() == {}
        close(got, fn(x), TOL)


def test_logit_backward_outside_unit_interval_matches_cpu():
    x = torch.tensor([-0.5, 0.0, 0.05, 0.5, 0.95, 1.0, 1.5], dtype=torch.float64)
    for eps in (None, 0.1):
        check(lambda t: torch.logit(t, eps), [x])


def test_integer_threshold_falls_back_and_matches_cpu():
    x = torch.arange(-3, 4)
    got = F.threshold(x.to("axon"), 0, 7)
    assert torch.equal(got.cpu(), F.threshold(x, 0, 7))


def test_bad_input_raises_pytorch_errors():
    x = torch.randn(3, 5, device="axon")
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 5"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 65504\] for input dtype Half"):
        F.softshrink(x.half(), 1e5)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        F.prelu(x, torch.ones(4, device="axon"))


# Activations with parameters whose functional and in-place forms are bound directly (one kernel each, no iterator on
# contiguous tensors): functional, in place and out=, contiguous and strided, with autograd, and PyTorch's errors.
PARAM_OPS = {  # name: (functional, in-place, out=)
    "gelu": (lambda x: F.gelu(x), lambda x: torch.ops.aten.gelu_(x),
             lambda x, out: torch.ops.aten.gelu.out(x, out=out)),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: torch.ops.aten.gelu_(x, approximate="tanh"),
                  lambda x, out: torch.ops.aten.gelu.out(x, approximate="tanh", out=out)),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), lambda x: F.leaky_relu_(x, 0.2),
                   lambda x, out: torch.ops.aten.leaky_relu.out(x, 0.2, out=out)),
    "elu": (lambda x: F.elu(x, 1.5), lambda x: F.elu_(x, 1.5), lambda x, out: torch.ops.aten.elu.out(x, 1.5, out=out)),
    "softplus": (lambda x: F.softplus(x, 2.0, 3.0), None,
                 lambda x, out: torch.ops.aten.softplus.out(x, 2.0, 3.0, out=out)),
    "polygamma_2": (lambda x: torch.polygamma(2, x.abs() + 0.5), None,
                    lambda x, out: torch.polygamma(2, x.abs() + 0.5, out=out)),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", list(PARAM_OPS))
def test_parameterized_activations_in_every_form_match_cpu(name, dtype):
    functional, inplace, into = PARAM_OPS[name]
    if name.startswith("polygamma") and dtype in (torch.bfloat16, torch.float16):
        pytest.skip("polygamma's CPU kernel takes float32 and float64 only")
    check(functional, [sample((4, 7), dtype)])
    for x in (sample((4, 7), dtype, seed=1), sample((7, 4), dtype, seed=1).t()):  # contiguous and strided
        a = x.to("axon")
        torch_axon.reset_fallback_stats()
        close(functional(a), functional(x), TOL)
        out = torch.empty(4, 7, dtype=dtype, device="axon")
        close(into(a, out), functional(x), TOL)
        if inplace is not None:
            b = a.clone()
            assert inplace(b).data_ptr() == b.data_ptr()
            close(b, functional(x), TOL)
        assert torch_axon.fallback_stats() == {}


def test_parameterized_activations_refuse_what_cpu_refuses():
    i = torch.arange(6, device="axon")
    for fn in (F.gelu, lambda t: F.leaky_relu(t, 0.2), F.elu, F.softplus):
        with pytest.raises(RuntimeError) as cpu_err:
            fn(i.cpu())
        with pytest.raises(RuntimeError) as axon_err:
            fn(i)
        assert str(cpu_err.value).split("\n")[0] in str(axon_err.value)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(torch.ones(3, device="axon"), approximate="fast")
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, torch.ones(3, device="axon"))


@pytest.mark.parametrize("op,kwargs", [(torch.ops.aten.silu_backward.default, {}),
                                       (torch.ops.aten.gelu_backward.default, {}),
                                       (torch.ops.aten.gelu_backward.default, {"approximate": "tanh"})])
def test_silu_and_gelu_backward_are_one_kernel_that_matches_cpu(op, kwargs):
    # the functional forms autograd calls run libaxon's fused backward (one command), not ATen's composite formula (4-8
    # pointwise commands, 4-11x torch CPU's time); 1000 + 37 elements: the vector body and the padded last block
    x, g = sample((1037,), torch.float32, seed=1), sample((1037,), torch.float32, seed=2)
    expected = op(g, x, **kwargs)
    xd, gd = x.to("axon"), g.to("axon")
    torch.axon.synchronize()
    torch_axon._C._trace_clear()
    torch_axon._C._trace_enable(True)
    try:
        got = op(gd, xd, **kwargs)
        torch.axon.synchronize()
        names = [r[0] for r in torch_axon._C._trace_records()]
    finally:
        torch_axon._C._trace_enable(False)
        torch_axon._C._trace_clear()
    assert len(names) == 1, names
    close(got, expected, GRAD_TOL)   # libmvec's erf and tanh: within a few float32 ulp of CPU's
    # the same bits whatever the split over threads (the padded block computes the last elements in both)
    sliced = op(gd[5:], xd[5:], **kwargs)
    assert torch.equal(sliced.cpu(), got.cpu()[5:])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_rrelu_training_draws_slopes_in_range_on_the_device(dtype):
    # the slopes are random (the device's Philox, not CPU's generator): checked by definition, not against CPU
    x = sample((64, 33), dtype, seed=5)
    x[0, :3] = torch.tensor([0.0, -0.0, float("nan")], dtype=dtype)
    lower, upper = 0.1, 0.4
    torch.manual_seed(11)
    xa = x.to("axon").requires_grad_()
    torch_axon.reset_fallback_stats()
    out = F.rrelu(xa, lower, upper, training=True)
    out.backward(torch.ones_like(out))
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    out, grad = out.detach().cpu(), xa.grad.cpu()
    pos, neg = ~(x <= 0), x <= 0
    assert torch.equal(out[pos].isnan(), x[pos].isnan())
    assert torch.equal(out[pos & ~x.isnan()], x[pos & ~x.isnan()]) and torch.all(grad[pos] == 1)
    # where x <= 0 the gradient is the slope drawn, and out = x * slope
    assert torch.all((grad[neg] >= lower) & (grad[neg] <= upper))
    assert torch.equal(out[neg], (x[neg] * grad[neg]).to(dtype))
    assert grad[neg].unique().numel() > 100  # a slope per element, not one for all
    # the same seed draws the same slopes; in place gives the same result
    torch.manual_seed(11)
    again = F.rrelu(x.to("axon"), lower, upper, training=True)
    torch.manual_seed(11)
    inplace = x.to("axon")
    F.rrelu(inplace, lower, upper, training=True, inplace=True)
    for t in (again, inplace):
        torch.testing.assert_close(t.cpu(), out, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_shrink_functional_forms_run_natively_on_any_layout(dtype):
    # softshrink and hardshrink's functional forms are bound directly (one kernel, no meta function first)
    x = (torch.randn(6, 8, generator=torch.Generator().manual_seed(3)) * 2).to(dtype)
    for fn in (lambda t: F.softshrink(t, 0.5), lambda t: F.hardshrink(t, 0.7), lambda t: F.softshrink(t.t(), 0.0),
               lambda t: F.hardshrink(t[:, ::2], -0.5)):
        torch_axon.reset_fallback_stats()
        got = fn(x.to("axon"))
        assert torch_axon.fallback_stats() == {}
        want = fn(x)
        assert got.shape == want.shape and got.stride() == want.stride() and got.dtype == want.dtype
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)

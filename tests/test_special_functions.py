"""lgamma, digamma, polygamma and the Hurwitz zeta on libaxon's kernels (libaxon/kernels/special_math.h): values and
gradients against PyTorch CPU with per-dtype tolerances, and no host fallback."""

import pytest
import torch

import torch_axon

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
# (rtol, atol): libaxon computes in float64 and rounds once; PyTorch's float32 kernels compute in float32. PyTorch's
# trigamma (polygamma 1) is a shorter series, 1e-9 off in float64 (5e-10 at 7.3 against mpmath, where libaxon's
# zeta-based one is within 1e-16): its cases get TRIGAMMA_RTOL in float64.
TRIGAMMA_RTOL = 1e-8
TOL = {torch.float32: (2e-5, 2e-5), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1.6e-2, 1e-2),
       torch.float16: (2e-3, 2e-3)}


def args(dtype, seed=0, lo=0.1, hi=8.0, negatives=True):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(6, 17, generator=g, dtype=torch.float64) * (hi - lo) + lo
    if negatives:  # non-integer negatives: the reflection formulas
        x[0] = -x[0] - 0.25
    return x.to(dtype)


def native(fn, *cpu_args):
    axon_args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch_axon.reset_fallback_stats()
    out = fn(*axon_args)
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    return out.cpu()


def check(got, want, rtol=None):
    assert got.dtype == want.dtype and got.shape == want.shape
    rtol, atol = (rtol or TOL[want.dtype][0]), TOL[want.dtype][1]
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)


CASES = {
    "lgamma": torch.lgamma, "digamma": torch.digamma,
    "polygamma0": lambda x: torch.polygamma(0, x), "polygamma1": lambda x: torch.polygamma(1, x),
    "polygamma2": lambda x: torch.polygamma(2, x), "polygamma3": lambda x: torch.special.polygamma(3, x),
    "polygamma4": lambda x: torch.polygamma(4, x), "mvlgamma": lambda x: torch.mvlgamma(x.abs() + 1.5, 3),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_unary_special_functions_match_cpu(name, dtype):
    # negative arguments where PyTorch's CPU formula holds its accuracy there (its float trigamma does not)
    x = args(dtype, negatives=name in ("lgamma", "digamma", "polygamma0"))
    fn = CASES[name]
    check(native(fn, x), fn(x), rtol=TRIGAMMA_RTOL if name == "polygamma1" and dtype == torch.float64 else None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_zeta_matches_cpu(dtype):
    x = args(dtype, lo=1.1, hi=6.0, negatives=False)
    q = args(dtype, seed=1, lo=0.2, hi=20.0, negatives=False)
    check(native(torch.special.zeta, x, q), torch.special.zeta(x, q))
    check(native(lambda a: torch.special.zeta(a, 2.5), x), torch.special.zeta(x, 2.5))


def test_special_values_match_cpu():
    x = torch.tensor([0.0, -0.0, -2.0, float("inf"), float("-inf"), float("nan"), 1.0, 1e10], dtype=torch.float64)
    for fn in (torch.lgamma, torch.digamma, lambda t: torch.polygamma(3, t)):
        got, want = native(fn, x), fn(x)
        # polygamma(n >= 2, +inf) is 0 here; PyTorch's zeta gives NaN there (its trigamma gives 0)
        if want[3].isnan() and fn not in (torch.lgamma, torch.digamma):
            assert got[3] == 0
            got, want = got[[0, 1, 2, 4, 5, 6, 7]], want[[0, 1, 2, 4, 5, 6, 7]]
        torch.testing.assert_close(got, want, rtol=1e-12, atol=0, equal_nan=True)
    # trigamma: 0 at +inf as PyTorch's; a pole (inf) at 0 and the negative integers, where PyTorch's reflection
    # formula gives 1.6e32 at -2 from sin(-2 pi) != 0 in floating point
    got = native(lambda t: torch.polygamma(1, t), x)
    assert got[3] == 0 and got[0] == float("inf") and got[2] == float("inf")
    assert abs(got[6].item() - torch.pi ** 2 / 6) < 1e-15
    s = torch.tensor([1.0, 0.5, 2.0, 2.0, 2.5], dtype=torch.float64)
    q = torch.tensor([3.0, 3.0, -3.0, -0.5, -0.5], dtype=torch.float64)
    torch.testing.assert_close(native(torch.special.zeta, s, q), torch.special.zeta(s, q), equal_nan=True)


def test_integer_inputs_promote_like_cpu():
    x = torch.arange(1, 9)
    check(native(torch.lgamma, x), torch.lgamma(x))
    check(native(torch.digamma, x), torch.digamma(x))


def test_gradients_match_cpu_without_fallback():
    x = args(torch.float64)
    grads = []
    for dev in ("cpu", "axon"):
        t = x.detach().clone().to(dev).requires_grad_()
        (torch.lgamma(t).sum() + torch.digamma(t).sum() + torch.polygamma(2, t.abs() + 0.5).sum()).backward()
        grads.append(t.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=TRIGAMMA_RTOL, atol=1e-11)  # digamma's uses trigamma


def test_zeta_of_half_floats_is_refused_like_cpu():
    for dtype in (torch.bfloat16, torch.float16):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            torch.special.zeta(torch.ones(3, dtype=dtype, device="axon"), torch.ones(3, dtype=dtype, device="axon"))


def test_negative_order_is_refused_like_cpu():
    with pytest.raises(RuntimeError, match="does not support negative n"):
        torch.polygamma(-1, torch.ones(3, device="axon"))

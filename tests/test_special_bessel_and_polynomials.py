"""torch.special's Bessel, normal-distribution and polynomial functions, and sinc, entr, xlog1py, logaddexp and
heaviside, on libaxon's kernels (libaxon/kernels/special_bessel.h, special_erf.h, special_poly.h): values against
PyTorch CPU with per-dtype tolerances (and against mpmath where CPU's own approximation is the less accurate one),
gradients, PyTorch's refusals, and no host fallback."""

import mpmath
import pytest
import torch

import torch_axon

# (rtol, atol): libaxon computes in float64 and rounds once; CPU's float32 kernels compute in float32.
TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-11, 1e-13), torch.bfloat16: (1.6e-2, 1e-2),
       torch.float16: (2e-3, 2e-3)}
# CPU's Cephes J0, J1, Y0, Y1 are good to about 1e-7 absolute near the functions' zeros (see test_ops.py's
# BESSEL_NEAR_ZEROS): compared with that atol, and against mpmath for accuracy.
BESSEL_ATOL = 1e-6
AIRY_ATOL = 1e-7


def native(fn, *cpu_args):
    axon_args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch_axon.reset_fallback_stats()
    out = fn(*axon_args)
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    return out.cpu()


def check(got, want, atol=None):
    assert got.dtype == want.dtype and got.shape == want.shape
    rtol, tol_atol = TOL[want.dtype]
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol or tol_atol, equal_nan=True)


def uniform(lo, hi, dtype, n=97, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


UNARY = {  # name: (function, lo, hi, also the half types, atol)
    "bessel_j0": (torch.special.bessel_j0, -30, 30, False, BESSEL_ATOL),
    "bessel_j1": (torch.special.bessel_j1, -30, 30, False, BESSEL_ATOL),
    "bessel_y0": (torch.special.bessel_y0, 0.01, 30, False, BESSEL_ATOL),
    "bessel_y1": (torch.special.bessel_y1, 0.01, 30, False, BESSEL_ATOL),
    "modified_bessel_i0": (torch.special.modified_bessel_i0, -60, 60, False, None),
    "modified_bessel_i1": (torch.special.modified_bessel_i1, -60, 60, False, None),
    "modified_bessel_k0": (torch.special.modified_bessel_k0, 0.01, 60, False, None),
    "modified_bessel_k1": (torch.special.modified_bessel_k1, 0.01, 60, False, None),
    "scaled_modified_bessel_k0": (torch.special.scaled_modified_bessel_k0, 0.01, 60, False, None),
    "scaled_modified_bessel_k1": (torch.special.scaled_modified_bessel_k1, 0.01, 60, False, None),
    "i0": (torch.i0, -40, 40, True, None),
    "i0e": (torch.special.i0e, -40, 40, True, None),
    "i1": (torch.special.i1, -40, 40, True, None),
    "i1e": (torch.special.i1e, -40, 40, True, None),
    "spherical_bessel_j0": (torch.special.spherical_bessel_j0, -20, 20, False, None),
    "erfcx": (torch.special.erfcx, -5, 40, False, None),
    "log_ndtr": (torch.special.log_ndtr, -40, 8, False, None),
    "ndtri": (torch.special.ndtri, 0, 1, False, None),
    "entr": (torch.special.entr, -1, 5, True, None),
    "sinc": (torch.sinc, -6, 6, True, None),
    # CPU's Cephes Ai is good to 2e-8 relative above 1 and 3e-6 absolute on [-3.2, -2.09], a range left to the
    # mpmath test below
    "airy_ai": (torch.special.airy_ai, -2.0, 30, False, AIRY_ATOL),
}


# the half types only where PyTorch CPU has them (test_half_types_are_refused_like_cpu checks the others)
UNARY_PAIRS = [(name, dtype) for name in sorted(UNARY)
               for dtype in ([torch.float32, torch.float64] + ([torch.bfloat16, torch.float16] if UNARY[name][3] else []))]


@pytest.mark.parametrize("name,dtype", UNARY_PAIRS, ids=str)
def test_unary_functions_match_cpu(name, dtype):
    fn, lo, hi, _halves, atol = UNARY[name]
    x = uniform(lo, hi, dtype)
    check(native(fn, x), fn(x), atol=atol if dtype in (torch.float32, torch.float64) else None)


def test_bessel_functions_are_accurate_where_cpu_is_not():
    # op_db's points near the zeros of J0, J1, Y1 (test_ops.py's BESSEL_NEAR_ZEROS), against mpmath
    mpmath.mp.dps = 40
    x = torch.tensor([5.576059452216908, 7.380839390984031, 2.404825557695773, 0.5, 17.0], dtype=torch.float64)
    for fn, ref in ((torch.special.bessel_j0, lambda v: mpmath.besselj(0, v)),
                    (torch.special.bessel_j1, lambda v: mpmath.besselj(1, v)),
                    (torch.special.bessel_y0, lambda v: mpmath.bessely(0, v)),
                    (torch.special.bessel_y1, lambda v: mpmath.bessely(1, v)),
                    (torch.special.modified_bessel_k1, lambda v: mpmath.besselk(1, v)),
                    (torch.special.modified_bessel_i0, lambda v: mpmath.besseli(0, v))):
        got = native(fn, x)
        for g, v in zip(got.tolist(), x.tolist()):
            want = float(ref(v))
            # at a zero itself (2.4048 for J0) only an absolute error is meaningful: half an ulp of J's scale of 1
            # (libaxon's Chebyshev series are 2.7e-17 off there; glibc's j0, which it replaced, 1e-18)
            assert abs(g - want) <= 4e-15 * abs(want) + 1.1e-16, (fn.__name__, v, g, want)


def test_special_values_match_cpu():
    x = torch.tensor([0.0, -0.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-300, 800.0], dtype=torch.float64)
    for name, (fn, *_rest) in UNARY.items():
        if name == "ndtri":
            continue
        # atol: CPU's Bessel J and Y are 1e-13 off at 800 (its asymptotic forms)
        torch.testing.assert_close(native(fn, x), fn(x), rtol=1e-12, atol=1e-14, equal_nan=True, msg=name)
    p = torch.tensor([0.0, 1.0, -0.5, 1.5, 0.5, float("nan"), 1e-300], dtype=torch.float64)
    torch.testing.assert_close(native(torch.special.ndtri, p), torch.special.ndtri(p), rtol=1e-12, atol=0,
                               equal_nan=True)


POLYNOMIALS = {  # name: (function, x range)
    "chebyshev_t": (torch.special.chebyshev_polynomial_t, (-1.2, 1.2)),
    "chebyshev_u": (torch.special.chebyshev_polynomial_u, (-1.2, 1.2)),
    "chebyshev_v": (torch.special.chebyshev_polynomial_v, (-1.2, 1.2)),
    "chebyshev_w": (torch.special.chebyshev_polynomial_w, (-1.2, 1.2)),
    "shifted_chebyshev_t": (torch.special.shifted_chebyshev_polynomial_t, (-0.1, 1.1)),
    "shifted_chebyshev_u": (torch.special.shifted_chebyshev_polynomial_u, (-0.1, 1.1)),
    "shifted_chebyshev_v": (torch.special.shifted_chebyshev_polynomial_v, (-0.1, 1.1)),
    "shifted_chebyshev_w": (torch.special.shifted_chebyshev_polynomial_w, (-0.1, 1.1)),
    "hermite_h": (torch.special.hermite_polynomial_h, (-3, 3)),
    "hermite_he": (torch.special.hermite_polynomial_he, (-3, 3)),
    "laguerre_l": (torch.special.laguerre_polynomial_l, (0, 8)),
    "legendre_p": (torch.special.legendre_polynomial_p, (-1, 1)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
def test_polynomials_match_cpu(name, dtype):
    fn, (lo, hi) = POLYNOMIALS[name]
    x = uniform(lo, hi, dtype, n=120).reshape(8, 15)
    x[0, :3] = torch.tensor([-1.0, 1.0, 0.0])   # the closed forms at the interval's ends
    n = torch.arange(-1, 14, dtype=dtype)       # every branch: negative, the recurrence, the trigonometric forms
    # float32 against CPU's float64 rounded: CPU's float32 recurrence loses up to 1e-4 to cancellation at degree 12
    # (hermite), where libaxon's float64 one rounds once
    def want(*a):
        wide = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in a]
        return fn(*wide).to(dtype)
    check(native(fn, x, n), want(x, n))
    check(native(fn, x, 5), want(x, 5))         # a number as the degree
    check(native(fn, x, n.to(torch.int64)), want(x, n.to(torch.int64)))


def test_binary_functions_match_cpu():
    for dtype in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        a, b = uniform(-20, 20, dtype), uniform(-20, 20, dtype, seed=1)
        b[:4] = torch.tensor([-1.0, float("nan"), 0.0, -0.5])
        a[:4] = torch.tensor([0.0, 0.0, 2.0, 0.0])
        for fn in (torch.logaddexp, torch.logaddexp2):
            check(native(fn, a, b), fn(a, b))
        check(native(torch.special.xlog1py, a, b.abs() - 0.5), torch.special.xlog1py(a, b.abs() - 0.5))
    inf = torch.tensor([float("inf"), float("-inf"), float("inf"), 1.0])
    other = torch.tensor([float("inf"), float("-inf"), float("-inf"), float("nan")])
    torch.testing.assert_close(native(torch.logaddexp, inf, other), torch.logaddexp(inf, other), equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.uint8,
                                   torch.int32, torch.int64, torch.bool], ids=str)
def test_heaviside_matches_cpu(dtype):
    x = torch.tensor([-3, 0, 2, 0, 1, -1]).to(dtype)
    v = torch.tensor([5, 7, 0, 1, 3, 2]).to(dtype)
    got, want = native(torch.heaviside, x, v), torch.heaviside(x, v)
    assert got.dtype == want.dtype and torch.equal(got, want)
    # the in-place form into self, with a broadcast values, and CPU's refusals
    s = x.to("axon")
    s.heaviside_(v[:1].to("axon"))
    assert torch.equal(s.cpu(), x.clone().heaviside_(v[:1]))


def test_heaviside_refuses_what_cpu_refuses():
    x = torch.tensor([-1.0, 0.0, 2.0], device="axon")
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes"):
        torch.heaviside(x, torch.tensor([1.0], dtype=torch.float64, device="axon"))
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for complex tensors"):
        torch.heaviside(x.to(torch.complex64), x.to(torch.complex64))
    with pytest.raises(RuntimeError, match="heaviside is not yet implemented for tensors with different dtypes"):
        x.heaviside_(x.double())
    with pytest.raises(RuntimeError, match=r"output with shape \[1\] doesn't match the broadcast shape \[3\]"):
        torch.ones(1, device="axon").heaviside_(x)


def test_gradients_match_cpu_without_fallback():
    x = uniform(0.2, 6, torch.float64)
    y = uniform(-0.5, 3, torch.float64, seed=2)
    grads = []
    for dev in ("cpu", "axon"):
        t = x.detach().clone().to(dev).requires_grad_()
        u = y.detach().clone().to(dev).requires_grad_()
        total = (torch.i0(t).sum() + torch.special.i0e(t).sum() + torch.special.i1(t).sum() + torch.sinc(t).sum() +
                 torch.special.erfcx(t).sum() + torch.special.log_ndtr(t).sum() + torch.special.entr(t).sum() +
                 torch.special.xlog1py(t, u).sum() + torch.logaddexp(t, u).sum())
        if dev == "axon":
            torch_axon.reset_fallback_stats()
        total.backward()
        if dev == "axon":
            assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
        grads.append((t.grad.cpu(), u.grad.cpu()))
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-11, atol=1e-13)


def test_half_types_are_refused_like_cpu():
    for fn in (torch.special.bessel_j0, torch.special.modified_bessel_k0, torch.special.erfcx):
        with pytest.raises(NotImplementedError, match="not implemented for"):
            fn(torch.ones(3, dtype=torch.float16, device="axon"))
    with pytest.raises(NotImplementedError, match="not implemented for"):
        h = torch.ones(3, dtype=torch.bfloat16, device="axon")
        torch.special.chebyshev_polynomial_t(h, h)


def test_heaviside_refuses_mixed_dtypes_like_cpu():
    with pytest.raises(RuntimeError, match="different dtypes"):
        torch.heaviside(torch.ones(3, device="axon"), torch.ones(3, dtype=torch.float64, device="axon"))


def test_airy_ai_is_accurate_where_cpu_is_not():
    # libaxon/kernels/special_airy.h: within 2e-11 absolute on the negative axis (CPU's Cephes code is 3e-6 off on
    # [-3.2, -2.09]) and 1e-12 relative above 1, in each of its three regions and across their borders (-6.9 and 1)
    mpmath.mp.dps = 30
    x = torch.cat([torch.linspace(-30, 1, 311, dtype=torch.float64), torch.linspace(1, 100, 100, dtype=torch.float64),
                   torch.tensor([-6.9, -6.9 - 1e-9, -2.5, -2.1, 1 + 1e-12])])
    got = native(torch.special.airy_ai, x)
    for g, v in zip(got.tolist(), x.tolist()):
        want = float(mpmath.airyai(v))
        assert abs(g - want) <= (1e-12 * abs(want) if v > 1 else 2e-11), (v, g, want)
    xf = torch.linspace(-30, 30, 601)   # float32: computed in float64 and rounded once
    want_f = torch.tensor([float(mpmath.airyai(v)) for v in xf.tolist()], dtype=torch.float64).float()
    torch.testing.assert_close(native(torch.special.airy_ai, xf), want_f, rtol=2.4e-7, atol=1e-30)

"""Complex pointwise ops on libaxon's complex loops (libaxon/kernels/pointwise_complex.c): results against PyTorch
CPU with per-dtype tolerances, and no host fallback."""

import pytest
import torch

import torch_axon

COMPLEX = [torch.complex64, torch.complex128]
# (rtol, atol) against CPU: the transcendental functions are glibc's here and SLEEF's or glibc's in ATen.
TOL = {torch.complex64: (2e-5, 2e-6), torch.float32: (2e-5, 2e-6),
       torch.complex128: (1e-12, 1e-13), torch.float64: (1e-12, 1e-13)}


def csample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    re = torch.randn(shape, generator=g, dtype=torch.float64) * 2
    im = torch.randn(shape, generator=g, dtype=torch.float64) * 2
    return torch.complex(re, im).to(dtype)


def native(fn, *cpu_args):
    """fn on axon copies of the args, asserting no host fallback; returns the result on the CPU."""
    args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch_axon.reset_fallback_stats()
    out = fn(*args)
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    assert out.device.type == "axon"
    return out.cpu()


def check(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype in TOL:
        rtol, atol = TOL[want.dtype]
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert torch.equal(got, want)


UNARY = {
    "neg": torch.neg, "abs": torch.abs, "sgn": torch.sgn, "reciprocal": torch.reciprocal, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "exp": torch.exp, "log": torch.log, "log2": torch.log2, "log10": torch.log10,
    "sin": torch.sin, "cos": torch.cos, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "asinh": torch.asinh, "acosh": torch.acosh,
    "atanh": torch.atanh, "sigmoid": torch.sigmoid, "conj_physical": torch.conj_physical, "isnan": torch.isnan,
    "logical_not": torch.logical_not, "square": lambda z: z ** 2, "pow_half": lambda z: z ** 0.5,
    "pow_minus_one": lambda z: z ** -1, "cube": lambda z: z ** 3, "pow_minus_two": lambda z: z ** -2,
    "pow_real": lambda z: z ** 3.5, "pow_complex": lambda z: z ** (1.7 + 0.3j), "pow_of_a_number": lambda z: 2.5 ** z,
    "pow_in_place": lambda z: z.clone().pow_(-1.5),
    "angle": torch.angle, "exp2": torch.exp2, "expm1": torch.expm1, "log1p": torch.log1p, "sinc": torch.sinc,
    "silu": torch.nn.functional.silu,
}


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_match_cpu(name, dtype):
    z = csample((7, 33), dtype)
    z[0, 0] = 0  # sgn(0) = 0, log(0) = -inf, reciprocal(0)
    z[1, 1] = complex(3, 0)
    fn = UNARY[name]
    check(native(fn, z), fn(z))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_unary_ops_on_strided_views_match_cpu(dtype):
    z = csample((16, 40), dtype)
    for view in (lambda t: t.t(), lambda t: t[:, ::3]):
        check(native(lambda t: torch.exp(view(t)), z), torch.exp(view(z)))
        check(native(lambda t: torch.abs(view(t)), z), torch.abs(view(z)))


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "eq": torch.eq, "ne": torch.ne,
    "pow": torch.pow, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2 - 1j), "sub_alpha": lambda a, b: torch.sub(a, b, alpha=0.5),
}


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_with_broadcasting_match_cpu(name, dtype):
    a, b = csample((5, 1, 9), dtype), csample((3, 9), dtype, seed=1)
    b[0, :3] = a[0, 0, :3]  # some equal elements for eq and ne
    b[1, 0] = 0
    fn = BINARY[name]
    check(native(fn, a, b), fn(a, b))
    check(native(fn, a, a), fn(a, a))  # same shape: the direct path


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_numbers_and_real_operands_promote_like_cpu(dtype):
    z = csample((4, 6), dtype)
    real = torch.randn(4, 6, dtype=torch.float32)
    cases = [
        lambda t, r: t * 2j, lambda t, r: t + (1 - 2j), lambda t, r: (3 + 1j) / t, lambda t, r: t - 2.5,
        lambda t, r: t * r, lambda t, r: r + t, lambda t, r: r * 1j, lambda t, r: t == (1 + 1j),
        lambda t, r: torch.where(r > 0, t, 1j), lambda t, r: torch.where(r > 0, 1 + 0j, 2j),
    ]
    for fn in cases:
        check(native(fn, z, real), fn(z, real))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_ternary_ops_match_cpu(dtype):
    x, y, w = csample((6, 10), dtype), csample((6, 10), dtype, 1), csample((6, 10), dtype, 2)
    cond = torch.randn(6, 10) > 0
    check(native(torch.where, cond, x, y), torch.where(cond, x, y))
    check(native(lambda a, b, c: torch.addcmul(a, b, c, value=1 + 2j), x, y, w), torch.addcmul(x, y, w, value=1 + 2j))
    check(native(lambda a, b, c: torch.addcdiv(a, b, c, value=-0.5), x, y, w), torch.addcdiv(x, y, w, value=-0.5))
    check(native(torch.lerp, x, y, w * 0.3), torch.lerp(x, y, w * 0.3))
    check(native(lambda a, b: torch.lerp(a, b, 0.25), x, y), torch.lerp(x, y, 0.25))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_abs_has_a_real_result_and_out_forms_match_cpu(dtype):
    z = csample((5, 8), dtype)
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    got = native(torch.abs, z)
    assert got.dtype == real
    check(got, z.abs())
    out_real = torch.empty(0, dtype=real, device="axon")
    torch.abs(z.to("axon"), out=out_real)
    check(out_real.cpu(), z.abs())
    out_complex = torch.empty(5, 8, dtype=dtype, device="axon")
    torch.abs(z.to("axon"), out=out_complex)
    check(out_complex.cpu(), torch.abs(z, out=torch.empty(5, 8, dtype=dtype)))
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.abs(z.to("axon"), out=torch.empty(5, 8, dtype=torch.int32, device="axon"))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_in_place_and_out_forms_write_the_given_tensor(dtype):
    z, w = csample((3, 7), dtype), csample((3, 7), dtype, 1)
    a = z.to("axon")
    a.mul_(w.to("axon")).add_(1j).div_(2 + 1j)
    check(a.cpu(), z.mul(w).add(1j).div(2 + 1j))
    out = torch.empty(3, 7, dtype=dtype, device="axon")
    torch.sub(z.to("axon"), w.to("axon"), alpha=3j, out=out)
    check(out.cpu(), torch.sub(z, w, alpha=3j))


def test_what_cpu_refuses_for_complex_is_refused_alike():
    z = csample((4,), torch.complex64).to("axon")
    with pytest.raises(RuntimeError, match="torch.sign is not intended to support complex numbers"):
        torch.sign(z)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.exp(z, out=torch.empty(4, device="axon"))
    with pytest.raises(RuntimeError, match="result type Float can't be cast|can't be cast"):
        torch.add(torch.ones(4, device="axon"), 1j, out=torch.empty(4, device="axon"))


def test_ops_without_a_complex_loop_still_run_on_the_host():
    z = csample((4,), torch.complex128)
    torch_axon.reset_fallback_stats()
    got = torch.logaddexp(z.to("axon"), 2 * z.to("axon")).cpu()  # PyTorch's complex logaddexp: no libaxon loop
    assert torch_axon.fallback_stats() != {}
    check(got, torch.logaddexp(z, 2 * z))


def test_conj_physical_of_real_tensors_is_a_native_copy():
    for dtype in (torch.float32, torch.int64, torch.bool):
        x = torch.arange(6).to(dtype)
        out = torch.empty(6, dtype=dtype, device="axon")
        torch_axon.reset_fallback_stats()
        torch.conj_physical(x.to("axon"), out=out)
        assert torch_axon.fallback_stats() == {}
        assert torch.equal(out.cpu(), x)


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_gradients_through_complex_ops_match_cpu(dtype):
    z, w = csample((4, 5), dtype), csample((4, 5), dtype, 1)

    def f(a, b):
        return ((a * b).exp() / (b + 2)).abs()

    grads = []
    for dev in ("cpu", "axon"):
        a = z.detach().clone().to(dev).requires_grad_()
        b = w.detach().clone().to(dev).requires_grad_()
        f(a, b).backward(torch.ones(4, 5, dtype=a.real.dtype, device=dev))
        grads.append((a.grad.cpu(), b.grad.cpu()))
    for got, want in zip(grads[1], grads[0]):
        rtol, atol = TOL[dtype]
        torch.testing.assert_close(got, want, rtol=rtol * 10, atol=atol * 10)


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_expm1_and_log1p_keep_their_accuracy_near_zero(dtype):
    z = torch.tensor([1e-6 + 1e-7j, -3e-5 + 2e-6j, 1e-20 - 1e-20j, 0.3 - 0.2j], dtype=dtype)
    check(native(torch.expm1, z), torch.expm1(z))
    check(native(torch.log1p, z), torch.log1p(z))
    rel = (native(torch.expm1, z)[:2] - torch.expm1(z.to(torch.complex128))[:2].to(dtype)).abs() / z[:2].abs()
    assert rel.max() < 1e-5  # exp(z) - 1 would lose everything in complex64 here


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
def test_angle_has_a_real_result_and_out_forms_match_cpu(dtype):
    z = csample((5, 8), dtype)
    z[0, :4] = torch.tensor([0, -1, 1j, -1j], dtype=dtype)
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    got = native(torch.angle, z)
    assert got.dtype == real
    check(got, torch.angle(z))
    out = torch.empty(0, dtype=real, device="axon")
    native(lambda t: torch.angle(t, out=out), z)
    check(out.cpu(), torch.angle(z))


@pytest.mark.parametrize("dtype", COMPLEX, ids=str)
@pytest.mark.parametrize("fn", [torch.tanh, torch.sigmoid], ids=lambda f: f.__name__)
def test_tanh_and_sigmoid_backward_match_cpu(dtype, fn):
    z = csample((6, 7), dtype)
    za = z.to("axon").requires_grad_()
    zc = z.clone().requires_grad_()
    torch_axon.reset_fallback_stats()
    fn(za).abs().sum().backward()
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    fn(zc).abs().sum().backward()
    check(za.grad.cpu(), zc.grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64], ids=str)
def test_complex_and_polar_build_their_parts_natively(dtype):
    g = torch.Generator().manual_seed(4)
    re, im = torch.randn(3, 1, 5, generator=g).to(dtype), torch.randn(4, 5, generator=g).to(dtype)
    got = native(torch.complex, re, im)  # broadcast
    want = torch.complex(re, im)
    assert got.dtype == want.dtype and torch.equal(torch.view_as_real(got), torch.view_as_real(want))
    out = torch.empty(0, dtype=want.dtype, device="axon")
    native(lambda a, b: torch.complex(a, b, out=out), re, im)
    assert torch.equal(torch.view_as_real(out.cpu()), torch.view_as_real(want))
    if dtype == torch.float16:
        with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
            torch.polar(re.to("axon"), im.to("axon"))
        return
    check(native(torch.polar, re.abs(), im), torch.polar(re.abs(), im))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_polar_and_complex_of_strided_parts_into_a_strided_out_match_cpu(dtype):
    g = torch.Generator().manual_seed(5)
    r, t = torch.rand(9, 40, generator=g).to(dtype), (torch.rand(40, 9, generator=g) * 60 - 30).to(dtype)
    want_p, want_c = torch.polar(r[::2], t.t()[::2]), torch.complex(r[::2], t.t()[::2])  # angles across blocks
    check(native(lambda a, b: torch.polar(a[::2], b.t()[::2]), r, t), want_p)
    out = torch.zeros(40, 5, dtype=want_p.dtype, device="axon").t()
    native(lambda a, b: torch.complex(a[::2], b.t()[::2], out=out), r, t)
    assert torch.equal(out.cpu(), want_c)
    big_r, big_t = torch.rand(70001, generator=g).to(dtype), (torch.rand(70001, generator=g) * 200 - 100).to(dtype)
    check(native(torch.polar, big_r, big_t), torch.polar(big_r, big_t))  # several chunks
    with pytest.raises(RuntimeError, match="Expected object of scalar type"):
        torch.polar(r.to("axon"), t.to(torch.float64 if dtype == torch.float32 else torch.float32).to("axon"))

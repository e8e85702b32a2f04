"""complex32 on axon: libaxon stores it (float16 parts) and computes the ops PyTorch CPU defines for it in complex64,
rounding once as c10::complex<Half>'s operators do, so results are CPU's bit for bit; no host fallback. The ops CPU
refuses for complex32 stay refused."""

import pytest
import torch

import torch_axon
from axon_testing import libaxon_commands

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")


def sample(shape, seed=0, scale=4.0):
    g = torch.Generator().manual_seed(seed)
    z = torch.complex(torch.randn(shape, generator=g), torch.randn(shape, generator=g)) * scale
    return z.to(torch.complex32)


def with_specials(z):
    """z with inf, NaN, -0.0, a float16 overflow and a subnormal in its first elements' parts."""
    flat = z.view(-1)
    specials = torch.tensor([complex(float("inf"), 1), complex(float("nan"), -2), complex(-0.0, 0.0),
                             complex(60000.0, -60000.0), complex(1e-6, 3.0), complex(0, float("-inf"))])
    flat[: specials.numel()] = specials.to(torch.complex32)
    return z


def exact(result, expected):
    """The same values, bit for bit (NaNs compared as NaNs)."""
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.is_complex():
        result, expected = torch.view_as_real(result), torch.view_as_real(expected)
    assert torch.equal(result.isnan(), expected.isnan())
    keep = ~expected.isnan()
    assert torch.equal(result[keep], expected[keep]), (result, expected)
    assert torch.equal(result[keep].signbit(), expected[keep].signbit())


def native(fn, *args):
    """fn on axon copies of args (no host fallback), as a CPU tensor."""
    torch_axon.reset_fallback_stats()
    r = fn(*[a.to("axon") if isinstance(a, torch.Tensor) else a for a in args])
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    return r


BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=-3.125),   # CPU rounds alpha * b before the sum
    "sub_complex_alpha": lambda a, b: torch.sub(a, b, alpha=0.3 - 1.7j),
    "eq": torch.eq,
    "ne": torch.ne,
}


@pytest.mark.parametrize("name", BINARY)
def test_binary_ops_match_cpu_bit_for_bit(name):
    a, b = with_specials(sample((7, 13))), sample((7, 13), seed=1)
    b[0, :3] = a[0, :3]  # equal elements for eq/ne, NaN included
    fn = BINARY[name]
    exact(native(fn, a, b), fn(a, b))
    exact(native(fn, a[:, :1], b.t().contiguous().t()), fn(a[:, :1], b))  # broadcast and strided
    # mixed with complex64 promotes to complex64 and with float16 to complex32
    exact(native(fn, a, b.to(torch.complex64)), fn(a, b.to(torch.complex64)))
    exact(native(fn, a, b.real.contiguous()), fn(a, b.real.contiguous()))


@pytest.mark.parametrize("number", [2, 0.1, 1.0 + 2.1j, -3.3e-5j])
def test_number_operands_round_to_complex32_first(number):
    # 0.1 and 2.1j are not float16 values: CPU rounds the number to complex32 before it multiplies or adds.
    a = with_specials(sample((33,)))
    for fn in (torch.mul, torch.add, torch.eq, lambda x, y: x - y):
        exact(native(fn, a, number), fn(a, number))


def test_in_place_and_out_forms():
    a, b = sample((5, 6)), sample((5, 6), seed=2)
    x = a.to("axon")
    x.mul_(b.to("axon")).add_(b.to("axon"), alpha=2).sub_(1.5)
    exact(x, a.clone().mul_(b).add_(b, alpha=2).sub_(1.5))
    out = torch.empty(5, 6, dtype=torch.complex32, device="axon")
    torch.mul(a.to("axon"), b.to("axon"), out=out)
    exact(out, a * b)


UNARY = {
    "neg": torch.neg,
    "conj_physical": torch.conj_physical,
    "abs": torch.abs,            # a float16 result
    "sgn": torch.sgn,
    "isnan": torch.isnan,
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_ops_match_cpu_bit_for_bit(name):
    a = sample((9, 10))
    if name != "sgn":
        a = with_specials(a)
    fn = UNARY[name]
    exact(native(fn, a), fn(a))
    exact(native(fn, a.t()), fn(a.t()))


def test_sgn_of_special_values():
    # axon's sgn divides each part by |z|, as CPU's complex64 vector loop does; CPU's complex32 loop divides by
    # |z| + 0i as a complex number, which makes both parts NaN where |z| is infinite (the same NaN-ness as a whole
    # complex number, so equal under equal_nan) and a -0 part +0.
    a = with_specials(sample((9, 10)))
    torch.testing.assert_close(native(torch.sgn, a).cpu(), torch.sgn(a), rtol=0, atol=0, equal_nan=True)


def test_arithmetic_is_one_libaxon_command():
    a, b = sample((64,)).to("axon"), sample((64,), seed=3).to("axon")
    assert libaxon_commands(lambda: a * b) == ["mul"]
    assert libaxon_commands(lambda: a.abs()) == ["abs"]


def test_tests_of_nonzero():
    a = sample((6, 8))
    a[0, 0] = complex(0, 0)
    a[1, 1] = complex(-0.0, 0.0)
    a[2, :] = 0
    a[3, 2] = complex(0, 1e-7)  # a subnormal imaginary part alone is nonzero
    for fn in (torch.nonzero, lambda t: torch.nonzero_static(t, size=50, fill_value=-2), torch.count_nonzero,
               lambda t: torch.count_nonzero(t, dim=1), torch.any, torch.all, lambda t: torch.any(t, dim=0),
               lambda t: torch.all(t, dim=1)):
        exact(native(fn, a), fn(a))


def test_index_add_and_accumulating_index_put():
    self, src = sample((6, 5)), sample((4, 5), seed=4)
    index = torch.tensor([1, 3, 1, 0])
    for alpha in (1, 0.7 + 0.2j):
        exact(native(lambda s, i, v: s.index_add(0, i, v, alpha=alpha), self, index, src),
              self.index_add(0, index, src, alpha=alpha))
    cols = sample((2, 6), seed=6).t()  # [6, 2], strided
    exact(native(lambda s, i, v: s.index_add(-1, i, v), self, torch.tensor([4, 4]), cols),
          self.index_add(-1, torch.tensor([4, 4]), cols))
    exact(native(lambda s, i, v: s.index_put((i,), v, accumulate=True), self, index, src),
          self.index_put((index,), src, accumulate=True))
    scalar, one = sample(()), sample((), seed=7)  # 0-dim self and source
    for alpha in (1, -1, 2):
        exact(native(lambda s, i, v: s.index_add(0, i, v, alpha=alpha), scalar, torch.tensor([0]), one),
              scalar.index_add(0, torch.tensor([0]), one, alpha=alpha))
    mask = torch.tensor([True, False, True, False, False, True])
    exact(native(lambda s, m, v: s.index_put((m,), v, accumulate=True), self, mask, src[:1]),
          self.index_put((mask,), src[:1], accumulate=True))


@pytest.mark.parametrize("ord", [2, 1, float("inf"), 0.5])
def test_vector_norm_computes_in_float32_and_rounds_once(ord):
    a = sample((5, 40))
    for dim in (None, 1):
        r, e = native(lambda t: torch.linalg.vector_norm(t, ord, dim), a), torch.linalg.vector_norm(a, ord, dim)
        assert r.dtype == torch.float16
        torch.testing.assert_close(r.cpu(), e, rtol=1e-3, atol=0)


def test_variance_and_std_of_the_parts():
    a = sample((4, 30))
    for fn in (torch.var, torch.std, lambda t: torch.std(t, dim=1, correction=0)):
        r = native(fn, a)
        torch.testing.assert_close(r.cpu(), fn(a), rtol=2e-3, atol=1e-3)


def test_sum_over_no_elements_is_zero_as_on_cpu():
    # CPU has no complex32 sum kernel but reduces nothing to zeros without one (index_put's backward does this)
    empty = torch.empty(0, 5, dtype=torch.complex32)
    exact(native(lambda t: t.sum(0), empty), empty.sum(0))
    exact(native(lambda t: t.sum(), empty), empty.sum())


def test_autograd_through_abs_and_mul():
    a, b = sample((8,)), sample((8,), seed=5)
    x, y = a.clone().requires_grad_(), b.clone().requires_grad_()
    ax, ay = a.to("axon").requires_grad_(), b.to("axon").requires_grad_()
    out = (ax * ay).abs()
    out.backward(torch.ones(8, dtype=torch.float16, device="axon"))
    (x * y).abs().backward(torch.ones(8, dtype=torch.float16))
    exact(ax.grad, x.grad)
    exact(ay.grad, y.grad)


@pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64], ids=str)
def test_nonzero_of_unsigned_storage_dtypes_is_refused_as_on_cpu(dtype):
    t = torch.tensor([1, 0, 3]).to(dtype)
    with pytest.raises(RuntimeError, match="not implemented") as cpu:
        torch.nonzero(t)
    with pytest.raises(RuntimeError, match="not implemented") as axon:
        torch.nonzero(t.to("axon"))
    assert str(axon.value).splitlines()[0] == str(cpu.value).splitlines()[0]


@pytest.mark.parametrize("fn", [torch.exp, torch.reciprocal, lambda t: t / t, lambda t: t.sum(),
                                lambda t: t.sum(0, keepdim=True)], ids=["exp", "reciprocal", "div", "sum", "sum_dim"])
def test_ops_cpu_refuses_stay_refused(fn):
    a = sample((4,))
    with pytest.raises(RuntimeError, match="ComplexHalf") as cpu:
        fn(a)
    with pytest.raises(RuntimeError, match="ComplexHalf"):
        fn(a.to("axon"))
    assert "not implemented" in str(cpu.value)

"""Native pointwise ops (libaxon's pointwise kernels behind TensorIterator): results against PyTorch CPU, with
per-dtype tolerances, and no host fallback for the ops that have a kernel."""

import warnings

import pytest
import torch

import torch_axon

# Per-dtype tolerances (rtol, atol) against CPU: float32 kernels use different libm/vector paths than ATen's.
TOL = {
    torch.float32: (1e-5, 1e-6),
    torch.float64: (1e-12, 1e-12),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (2e-3, 1e-3),
}
FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
INTS = [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


def sample(shape, dtype, positive=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=torch.float64) * 2
        return (x.abs() + 0.1 if positive else x).to(dtype)
    lo = 1 if positive else (-20 if dtype != torch.uint8 else 0)
    return torch.randint(lo, 20, shape, generator=g).to(dtype)


def check_close(result, expected):
    assert result.device.type == "axon"
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.dtype in TOL:
        rtol, atol = TOL[expected.dtype]
        torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert torch.equal(result, expected)


def run_native(fn, *cpu_args):
    """fn on axon copies of the args, asserting no host fallback was used; returns the axon result."""
    args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch_axon.reset_fallback_stats()
    out = fn(*args)
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    return out


UNARY_FLOAT = {
    "exp": torch.exp, "log": (torch.log, True), "sqrt": (torch.sqrt, True), "rsqrt": (torch.rsqrt, True),
    "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "erf": torch.erf,
    "expm1": torch.expm1, "log1p": (torch.log1p, True), "atan": torch.atan, "reciprocal": (torch.reciprocal, True),
    "gelu": torch.nn.functional.gelu, "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu, "mish": torch.nn.functional.mish, "softplus": torch.nn.functional.softplus,
    "hardswish": torch.nn.functional.hardswish, "hardsigmoid": torch.nn.functional.hardsigmoid,
    "leaky_relu": lambda x: torch.nn.functional.leaky_relu(x, 0.2), "elu": torch.nn.functional.elu,
    "relu": torch.relu, "hardtanh": torch.nn.functional.hardtanh, "floor": torch.floor, "ceil": torch.ceil,
    "round": torch.round, "trunc": torch.trunc, "frac": torch.frac, "neg": torch.neg, "abs": torch.abs,
    "sign": torch.sign,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
def test_unary_float_ops_match_cpu(name, dtype):
    fn, positive = UNARY_FLOAT[name] if isinstance(UNARY_FLOAT[name], tuple) else (UNARY_FLOAT[name], False)
    x = sample((7, 13), dtype, positive)
    check_close(run_native(fn, x), fn(x))


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("name", ["neg", "abs", "sign", "relu", "bitwise_not"])
def test_unary_integer_ops_match_cpu(name, dtype):
    if dtype == torch.uint8 and name in ("neg",):
        pytest.skip("reason: negating uint8 is rejected by PyTorch CPU too")
    fn = getattr(torch, name)
    x = sample((5, 9), dtype)
    check_close(run_native(fn, x), fn(x))


def test_integer_input_to_float_op_promotes_like_cpu():
    x = sample((4, 6), torch.int32, positive=True)
    check_close(run_native(torch.sqrt, x), torch.sqrt(x))
    check_close(run_native(torch.sin, x), torch.sin(x))


BINARY = {
    "add": lambda a, b: a + b, "add_alpha": lambda a, b: torch.add(a, b, alpha=3), "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "maximum": torch.maximum, "minimum": torch.minimum,
    "eq": lambda a, b: a == b, "lt": lambda a, b: a < b, "ge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ops_with_broadcasting_match_cpu(name, dtype):
    fn = BINARY[name]
    a, b = sample((6, 1, 5), dtype, seed=1), sample((4, 5), dtype, positive=True, seed=2)
    check_close(run_native(fn, a, b), fn(a, b))


@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide", "atan2", "pow", "hypot", "copysign", "fmax",
                                  "fmin", "xlogy"])
def test_more_binary_float_ops_match_cpu(name):
    fn = getattr(torch, name)
    a, b = sample((8, 3), torch.float32, seed=3), sample((8, 3), torch.float32, positive=True, seed=4)
    if name == "pow":
        a = a.abs()
    check_close(run_native(fn, a, b), fn(a, b))


@pytest.mark.parametrize("name", ["remainder", "fmod", "floor_divide", "bitwise_and", "bitwise_or", "bitwise_xor",
                                  "bitwise_left_shift", "bitwise_right_shift", "pow"])
def test_integer_binary_ops_match_cpu(name):
    fn = getattr(torch, name)
    a, b = sample((8, 3), torch.int64, seed=5), sample((8, 3), torch.int64, positive=True, seed=6) % 7 + 1
    check_close(run_native(fn, a, b), fn(a, b))


def test_mixed_dtypes_promote_like_cpu():
    a, b = sample((3, 4), torch.int64), sample((3, 4), torch.float32)
    for fn in (torch.add, torch.mul, torch.maximum, lambda x, y: x < y):
        check_close(run_native(fn, a, b), fn(a, b))
    h = sample((3, 4), torch.bfloat16)
    check_close(run_native(torch.mul, h, b), torch.mul(h, b))


def test_python_numbers_are_operands():
    x = sample((5, 5), torch.float32)
    for fn in (lambda t: t + 2, lambda t: 1 - t, lambda t: t * 0.5, lambda t: t > 0.25, lambda t: t ** 2,
               lambda t: 2 ** t, lambda t: t.clamp(-0.5, 0.5), lambda t: t.clamp(min=0), lambda t: t.clamp(max=0.1),
               lambda t: torch.where(t > 0, t, 0.0), lambda t: torch.where(t > 0, 1.0, -1.0)):
        check_close(run_native(fn, x), fn(x))
    i = sample((5, 5), torch.int32)
    check_close(run_native(lambda t: t * 3 + 1, i), i * 3 + 1)


def test_ternary_ops_match_cpu():
    a, b, c = (sample((4, 7), torch.float32, seed=s) for s in (7, 8, 9))
    cond = a > 0
    for fn in (lambda x, y, z: torch.addcmul(x, y, z, value=0.5), lambda x, y, z: torch.addcdiv(x, y, z.abs() + 1),
               lambda x, y, z: torch.lerp(x, y, 0.25), lambda x, y, z: torch.lerp(x, y, z.sigmoid()),
               lambda x, y, z: torch.clamp(x, y, y + z.abs())):
        check_close(run_native(fn, a, b, c), fn(a, b, c))
    check_close(run_native(torch.where, cond, b, c), torch.where(cond, b, c))


def test_inplace_and_out_variants_write_the_given_tensor():
    x = sample((6, 6), torch.float32)
    ax = x.to("axon")
    ptr = ax.data_ptr()
    ax.mul_(2).add_(1).relu_()
    assert ax.data_ptr() == ptr
    check_close(ax, (x * 2 + 1).relu())
    out = torch.empty(6, 6, dtype=torch.float64, device="axon")
    torch.add(ax, ax, out=out)  # computed in float32, stored as float64
    check_close(out, ((x * 2 + 1).relu() * 2).double())
    wrong = torch.empty(6, 6, dtype=torch.int64, device="axon")
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.add(ax, ax, out=wrong)


def test_non_contiguous_operands_match_cpu():
    x = sample((8, 6), torch.float32)
    y = sample((6, 8), torch.float32, seed=11)
    fn = lambda a, b: (a.t() * b)[::2].exp()  # noqa: E731
    check_close(run_native(fn, x, y), fn(x, y))


def test_integer_division_by_zero_raises_at_synchronization():
    x = torch.ones(4, dtype=torch.int64, device="axon")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (x // 0).cpu()
    torch.axon.synchronize()  # reported once; the stream works again
    check_close(x + 1, torch.full((4,), 2, dtype=torch.int64))


def test_complex_dtypes_still_work_through_the_fallback():
    z = torch.randn(4, dtype=torch.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = (z.to("axon") * 2).cpu()
    assert torch.equal(r, z * 2)


def test_mixing_axon_and_cpu_tensors_is_refused_like_cuda():
    a = torch.ones(3, device="axon")
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + torch.ones(3)
    check_close(a + torch.tensor(2.0), torch.full((3,), 3.0))  # a 0-dim CPU tensor is a number


def test_gradients_through_native_pointwise_ops_match_cpu():
    x = sample((5, 4), torch.float32)
    xa = x.to("axon").requires_grad_()
    xc = x.clone().requires_grad_()
    f = lambda t: (torch.nn.functional.gelu(t) * t.sigmoid() + t.exp() * 0.1).sum()  # noqa: E731
    f(xa).backward()
    f(xc).backward()
    check_close(xa.grad, xc.grad)

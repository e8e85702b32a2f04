"""Native pointwise ops (libaxon's pointwise kernels behind TensorIterator): results against PyTorch CPU, with
per-dtype tolerances, and no host fallback for the ops that have a kernel."""

import functools

import pytest
import torch

import torch_axon

# Per-dtype tolerances (rtol, atol) against CPU: float32 kernels use different libm/vector paths than ATen's.
TOL = {
    torch.float32: (1e-5, 1e-6),
    torch.float64: (1e-12, 1e-12),
    torch.bfloat16: (1.6e-2, 1e-2),
    torch.float16: (2e-3, 1e-3),
    torch.complex64: (1e-5, 1e-6),
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
    "sign": torch.sign, "sgn": torch.sgn,
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
def test_unary_float_ops_match_cpu(name, dtype):
    fn, positive = UNARY_FLOAT[name] if isinstance(UNARY_FLOAT[name], tuple) else (UNARY_FLOAT[name], False)
    x = sample((7, 13), dtype, positive)
    check_close(run_native(fn, x), fn(x))


@pytest.mark.parametrize("dtype", INTS, ids=str)
@pytest.mark.parametrize("name", ["neg", "abs", "sign", "sgn", "relu", "bitwise_not"])
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


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("exponent", [2, 3, 0.5, -0.5, -1, -2, 2.5, 1, 0])
def test_pow_by_scalar_matches_cpu(exponent, dtype):
    # 2, 3, 0.5, -0.5, -1 and -2 take the unary forms CPU's kernel uses (x*x*x, rsqrt, ...); those made of
    # multiplies and divides are bitwise equal for float32 and float64 (CPU's sqrt can differ from a correctly rounded
    # one by an ulp). The other exponents go through pow. A strided input covers the iterator.
    x = sample((33, 17), dtype, seed=7).t()
    x[0, :3] = torch.tensor([0.0, float("inf"), float("nan")], dtype=dtype)
    result = run_native(lambda t: t ** exponent, x).cpu()
    expected = x ** exponent
    if dtype in (torch.float32, torch.float64) and exponent in (2, 3, -1, -2):
        assert torch.equal(result.nan_to_num(7.0), expected.nan_to_num(7.0))
    if exponent == 1:  # a copy (as CPU's kernel makes), in x's layout, negative bases included
        xa = x.to("axon")
        y = xa ** 1
        assert torch.equal(y.cpu().nan_to_num(7.0), x.nan_to_num(7.0)) and y.stride() == xa.stride()
        assert y.untyped_storage().data_ptr() != xa.untyped_storage().data_ptr()
    check_close(run_native(lambda t: t ** exponent, x), expected)
    out = torch.empty(17, 33, dtype=dtype, device="axon")
    torch.pow(x.to("axon"), exponent, out=out)
    check_close(out, expected)


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


NUMBER_OPS = {
    "add": lambda t, n: t + n, "sub": lambda t, n: t - n, "rsub": lambda t, n: n - t, "mul": lambda t, n: t * n,
    "div": lambda t, n: t / n, "pow": lambda t, n: t ** n, "clamp": lambda t, n: t.clamp(-n, n),
    "clamp_min": lambda t, n: t.clamp(min=n), "add_alpha": lambda t, n: torch.add(t, n, alpha=2),
}
NUMBERS = [3, 2.5, -2, True, torch.tensor(1.5, dtype=torch.float64), torch.tensor(2, dtype=torch.int16)]


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool], ids=str)
@pytest.mark.parametrize("name", sorted(NUMBER_OPS))
def test_number_operands_in_every_dtype_and_layout_match_cpu(name, dtype):
    # Python numbers and 0-dim CPU tensors that keep the tensor's dtype go to the kernel as values (no iterator); the
    # others promote through it. Either way: CPU's dtype, values and result strides, for contiguous and transposed
    # inputs, and CPU's error where CPU refuses.
    fn = NUMBER_OPS[name]
    for x in (sample((7, 9), dtype, seed=3), sample((9, 7), dtype, seed=4).t()):
        for n in NUMBERS:
            if name.startswith("clamp") and isinstance(n, torch.Tensor):
                continue  # clamp's tensor bounds must be on the device, as on CUDA (its meta function's check)
            try:
                expected = fn(x, n)
            except RuntimeError as e:
                if "not implemented for" in str(e):
                    continue  # a dtype CPU has no kernel for (axon's may have one)
                with pytest.raises(RuntimeError, match=str(e).splitlines()[0][:40].replace("(", ".").replace(")", ".")):
                    fn(x.to("axon"), n)
                continue
            if name == "pow" and expected.dtype == torch.bool:
                continue  # bool ** bool stays the host's (libaxon's pow has no bool loop)
            result = run_native(lambda t: fn(t, n), x)
            check_close(result, expected)
            assert result.stride() == expected.stride(), (n, result.stride(), expected.stride())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_number_operands_in_place_and_out_forms_match_cpu(dtype):
    x = sample((6, 11), dtype, seed=9)
    for n in (3, 2.5 if dtype.is_floating_point else 2, torch.tensor(2, dtype=torch.int8)):
        for op in ("add_", "sub_", "mul_", "pow_", "clamp_min_")[: 4 if isinstance(n, torch.Tensor) else 5]:
            a, e = x.to("axon"), x.clone()
            getattr(e, op)(n)
            torch_axon.reset_fallback_stats()
            assert getattr(a, op)(n) is a
            assert torch_axon.fallback_stats() == {}
            check_close(a, e)
        for fn in (torch.mul, torch.add, torch.pow):
            out = torch.full((6, 11), 7, dtype=dtype, device="axon")
            fn(x.to("axon"), n, out=out)
            check_close(out, fn(x, n))


def test_in_place_binary_forms_refuse_what_cpu_refuses_and_broadcast_like_it():
    # add_, sub_, mul_ and div_ take the direct path for same-shape operands and numbers; everything else goes through
    # PyTorch's in-place route, whose checks must still hold.
    x, wide, row = sample((4, 5), torch.float32), sample((3, 4, 5), torch.float32), sample((5,), torch.float32)
    i = sample((4, 5), torch.int64)
    for op in ("add_", "sub_", "mul_", "div_"):
        with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
            getattr(x.to("axon"), op)(wide.to("axon"))
        a, e = x.to("axon"), x.clone()
        getattr(a, op)(row.to("axon"))
        getattr(e, op)(row)
        check_close(a, e)
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            getattr(i.to("axon"), op)(2.5)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        i.to("axon").div_(2)
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        x.to("axon").sub_(True)
    a, e = x.to("axon"), x.clone()
    a.add_(x.to("axon"), alpha=-3)
    e.add_(x, alpha=-3)
    check_close(a, e)


# In-place forms bound to the .out kernels with out = self (unary, binary and ternary): CPU's results, its cast and
# broadcast-shape refusals, and no host fallback.
IN_PLACE = {
    "sqrt_": lambda x, y: x.abs_().sqrt_(), "exp_": lambda x, y: x.exp_(), "neg_": lambda x, y: x.neg_(),
    "sigmoid_": lambda x, y: x.sigmoid_(), "erfinv_": lambda x, y: x.clamp_(-0.9, 0.9).erfinv_(),
    "floor_": lambda x, y: x.floor_(), "atan2_": lambda x, y: x.atan2_(y), "hypot_": lambda x, y: x.hypot_(y),
    "copysign_": lambda x, y: x.copysign_(y), "fmod_": lambda x, y: x.fmod_(y.abs() + 1),
    "xlogy_": lambda x, y: x.xlogy_(y.abs()), "lerp_": lambda x, y: x.lerp_(y, 0.3),
    "lerp_tensor_": lambda x, y: x.lerp_(y, y.sigmoid()), "addcmul_": lambda x, y: x.addcmul_(y, y, value=-0.5),
    "addcdiv_": lambda x, y: x.addcdiv_(y, y.abs() + 1, value=2), "clamp_": lambda x, y: x.clamp_(-0.5, 0.5),
    "clamp_tensor_": lambda x, y: x.clamp_(min=y), "clamp_row_": lambda x, y: x.clamp_(max=y[0]),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms_match_cpu_natively(name, dtype):
    x, y = sample((4, 5), dtype, seed=1), sample((4, 5), dtype, seed=2)
    expected = IN_PLACE[name](x.clone(), y)
    a = x.to("axon")
    result = run_native(IN_PLACE[name], a, y)
    assert result is a or result.data_ptr() == a.data_ptr()
    check_close(a, expected)


def test_in_place_forms_refuse_what_cpu_refuses():
    x, wide = sample((5,), torch.float32).to("axon"), sample((4, 5), torch.float32).to("axon")
    for fn in (lambda: x.atan2_(wide), lambda: x.lerp_(wide, 0.5), lambda: x.addcmul_(wide, x),
               lambda: x.clamp_(min=wide), lambda: x.lerp_(x, wide)):
        with pytest.raises(RuntimeError, match=r"output with shape \[5\] doesn't match the broadcast shape \[4, 5\]"):
            fn()
    i = torch.arange(6, device="axon")
    for fn in (lambda: i.sqrt_(), lambda: i.atan2_(i), lambda: i.clamp_(0.5, 2)):
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
            fn()
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        x.lerp_(x.double(), 0.5)


def test_ternary_ops_match_cpu():
    a, b, c = (sample((4, 7), torch.float32, seed=s) for s in (7, 8, 9))
    cond = a > 0
    for fn in (lambda x, y, z: torch.addcmul(x, y, z, value=0.5), lambda x, y, z: torch.addcdiv(x, y, z.abs() + 1),
               lambda x, y, z: torch.lerp(x, y, 0.25), lambda x, y, z: torch.lerp(x, y, z.sigmoid()),
               lambda x, y, z: torch.clamp(x, y, y + z.abs())):
        check_close(run_native(fn, a, b, c), fn(a, b, c))
    check_close(run_native(torch.where, cond, b, c), torch.where(cond, b, c))


# Same-shape contiguous operands skip the iterator (one run per operand): every dtype the ops take, numbers as the
# iterator would pass them, given outs (fresh, and out = self), and the iterator's refusals where it does not apply.
def ternary_cases(dtype):
    """name -> fn(x, y, z, **out) for the ternary ops dtype takes."""
    cases = {"addcmul": lambda x, y, z, **o: torch.addcmul(x, y, z, value=3, **o)}
    if dtype.is_floating_point or dtype.is_complex:
        w = 0.25 + 0.5j if dtype.is_complex else 0.75
        cases.update({
            "addcdiv": lambda x, y, z, **o: torch.addcdiv(x, y, z, value=-2, **o),
            "lerp_number": lambda x, y, z, **o: torch.lerp(x, y, w, **o),
            "lerp_one": lambda x, y, z, **o: torch.lerp(x, y, 1.0, **o),  # exactly `end`
            "lerp_tensor": lambda x, y, z, **o: torch.lerp(x, y, z, **o),
        })
    return cases


@pytest.mark.parametrize("dtype", FLOATS + [torch.complex64, torch.int64], ids=str)
def test_ternary_direct_path_matches_cpu(dtype):
    real = torch.float32 if dtype.is_complex else dtype
    a, b, c = (sample((3, 5), real, positive=k == 2, seed=k) for k in range(3))
    if dtype.is_complex:
        a, b, c = (torch.complex(t, t.flip(0)) for t in (a, b, c))
    for name, fn in ternary_cases(dtype).items():
        check_close(run_native(fn, a, b, c), fn(a, b, c))
        fresh = run_native(lambda x, y, z: fn(x, y, z, out=torch.empty_like(x)), a, b, c)
        check_close(fresh, fn(a, b, c))
        x = a.to("axon")
        run_native(lambda y, z: fn(x, y, z, out=x), b, c)
        check_close(x, fn(a, b, c))
        empty = torch.empty(0, 4, dtype=dtype, device="axon")
        assert fn(empty, empty, empty).shape == (0, 4), name


def test_ternary_direct_path_keeps_the_iterators_refusals():
    x = sample((4, 4), torch.float32).to("axon")
    flat = x.view(-1)
    with pytest.raises(RuntimeError, match="unsupported operation"):  # out partly overlapping an input
        torch.addcmul(flat[:8], flat[8:], flat[8:], out=flat[1:9])
    for t in (x, x.cpu()):  # a complex weight for a real self, as on CPU
        with pytest.raises(RuntimeError, match="value cannot be converted to type float without overflow"):
            torch.lerp(t, t, 0.5j)


# A device operand of self's dtype that broadcasts into a contiguous self (or has its shape with other strides) takes
# the direct path, read by its strides: every broadcast shape, in place and out=, comparisons, integer and bool ops.
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool], ids=str)
def test_binary_direct_path_with_broadcast_and_strided_operands_matches_cpu(dtype):
    x = sample((4, 5, 6), dtype, seed=1)
    others = [sample(s, dtype, seed=2) for s in ((6,), (5, 1), (4, 1, 6), (1, 1, 1), ())]
    others.append(sample((6, 5, 4), dtype, seed=3).permute(2, 1, 0))  # self's shape, other strides
    ops = [torch.add, torch.mul, torch.lt, torch.maximum]
    if dtype == torch.bool:
        ops = [torch.mul, torch.eq, torch.maximum]
    if dtype.is_floating_point:
        ops += [torch.div, lambda a, b: torch.sub(a, b, alpha=2)]
    for other in others:
        for op in ops:
            check_close(run_native(op, x, other), op(x, other))
            if op in (torch.add, torch.mul, torch.lt):  # out= forms
                out = torch.empty(x.shape, dtype=op(x, other).dtype, device="axon")
                run_native(lambda a, b: op(a, b, out=out), x, other)
                check_close(out, op(x, other))
        if dtype != torch.bool:
            a = x.to("axon")
            run_native(lambda t: a.mul_(t), other)
            check_close(a, x * other)


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


SAME_DENSE = {
    "add": torch.add, "add_alpha": lambda a, b: torch.add(a, b, alpha=3), "sub": torch.sub,
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=2), "mul": torch.mul, "div": torch.div,
}


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool], ids=str)
@pytest.mark.parametrize("name", sorted(SAME_DENSE))
@pytest.mark.parametrize("shape", [(64,), (), (0,), (3, 1, 5), (1031,)], ids=str)
def test_same_shape_contiguous_binary_ops_match_cpu(name, dtype, shape):
    # Same dtype, same shape, contiguous: the glue skips the TensorIterator and launches one run. The result must be
    # what the iterator would give: CPU's values, dtype (integer true division promotes, so it takes the iterator),
    # shape and strides.
    if dtype == torch.bool and name.startswith(("sub", "div")):
        pytest.skip("reason: PyTorch CPU refuses bool subtraction; bool division promotes (covered by int dtypes)")
    fn = SAME_DENSE[name]
    a, b = sample(shape, dtype, seed=21), sample(shape, dtype, positive=True, seed=22)
    result = run_native(fn, a, b)
    expected = fn(a, b)
    check_close(result, expected)
    assert result.stride() == expected.stride() and result.is_contiguous()


def test_same_shape_binary_ops_on_views_and_layouts_match_cpu():
    # Views with a storage offset (contiguous) take the direct path; transposed or broadcast operands, mixed dtypes
    # and the same tensor twice take the iterator or read one buffer twice.
    x = sample((40,), torch.float32, seed=23)
    y = sample((8, 5), torch.float32, seed=24)
    cases = [
        (lambda t, u: t[3:] + t[:-3], (x, y)),
        (lambda t, u: t[10:30].view(4, 5) * u[4:], (x, y)),
        (lambda t, u: u.t().contiguous() - u.t(), (x, y)),
        (lambda t, u: u * u, (x, y)),
        (lambda t, u: u.expand(2, 8, 5) + u, (x, y)),
        (lambda t, u: u + u.double(), (x, y)),
        (lambda t, u: u.to(torch.int32) / u.to(torch.int32).clamp(min=1), (x, y)),
    ]
    for fn, args in cases:
        check_close(run_native(fn, *args), fn(*args))
    out = run_native(lambda t, u: u[:, 1:] + u[:, 1:], x, y)
    assert out.is_contiguous() and out.shape == (8, 4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=str)
def test_same_shape_out_and_in_place_forms_match_cpu(dtype):
    # out= and in-place forms with a contiguous out of the inputs' dtype and shape take the direct path too: into a
    # separate out, into an input (either one), and in place.
    a, b = sample((5, 7), dtype, seed=25), sample((5, 7), dtype, positive=True, seed=26)
    ops = [(torch.add, {"alpha": 2}), (torch.sub, {}), (torch.mul, {}), (torch.maximum, {}), (torch.remainder, {})]
    if dtype.is_floating_point:
        ops += [(torch.div, {}), (torch.atan2, {})]
    for fn, kw in ops:
        expected = fn(a, b, **kw)
        out = torch.empty(5, 7, dtype=dtype, device="axon")
        ptr = out.data_ptr()
        run_native(lambda x, y: fn(x, y, out=out, **kw), a, b)
        assert out.data_ptr() == ptr
        check_close(out, expected)
        x, y = a.to("axon"), b.to("axon")
        fn(x, y, out=y, **kw)
        check_close(y, expected)
        x, y = a.to("axon"), b.to("axon")
        fn(x, y, out=x, **kw)
        check_close(x, expected)
    for name in ("add_", "sub_", "mul_") + (("div_",) if dtype.is_floating_point else ()):
        x = a.to("axon")
        ptr = x.data_ptr()
        run_native(lambda t, u: getattr(x, name)(u), a, b)
        assert x.data_ptr() == ptr
        check_close(x, getattr(a.clone(), name)(b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64], ids=str)
def test_unary_functional_out_and_in_place_forms_match_cpu(dtype):
    # Contiguous inputs take the direct path in every form: functional (bound directly for exp, log, ...), out= into
    # a separate tensor or into the input, and in place; a transposed input keeps its layout through the iterator.
    x = sample((6, 9), dtype, positive=True, seed=29)
    for name in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "neg", "relu", "abs", "erf"):
        fn = getattr(torch, name)
        expected = fn(x)
        check_close(run_native(fn, x), expected)
        t = x.t()
        result = run_native(fn, t)
        check_close(result, fn(t))
        assert result.stride() == fn(t).stride()
        if name != "relu":
            out = torch.empty(6, 9, dtype=dtype, device="axon")
            run_native(lambda a: fn(a, out=out), x)
            check_close(out, expected)
        y = x.to("axon")
        ptr = y.data_ptr()
        getattr(y, name + "_")()
        assert y.data_ptr() == ptr
        check_close(y, expected)
    base = torch.arange(1.0, 11.0, device="axon")
    with pytest.raises(RuntimeError, match="unsupported operation"):
        torch.exp(base[:8], out=base[2:])


def test_direct_path_writes_a_copy_on_write_out_without_touching_its_source():
    x = torch.arange(6.0, device="axon")
    y = torch._lazy_clone(x)
    y.add_(x)
    z = torch._lazy_clone(x)
    torch.exp(x, out=z)
    check_close(x, torch.arange(6.0))
    check_close(y, torch.arange(6.0) * 2)
    check_close(z, torch.arange(6.0).exp())


def test_out_forms_that_need_the_iterator_behave_like_cpu():
    # A partially overlapping out is refused with PyTorch's message; an out of another shape is resized; an in-place
    # op whose result does not fit self's dtype is refused.
    for dev in ("cpu", "axon"):
        base = torch.arange(10.0, device=dev)
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch.add(base[:8], base[:8], out=base[2:])
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch.mul(base[:8], base[1:9], out=base[2:])
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            torch.arange(4, device=dev).add_(torch.ones(4, device=dev))
    a, b = sample((3, 4), torch.float32, seed=27), sample((3, 4), torch.float32, seed=28)
    out = torch.empty(0, device="axon")
    torch.mul(a.to("axon"), b.to("axon"), out=out)
    check_close(out, a * b)
    t = a.to("axon").t()  # a transposed out: the iterator writes through its strides
    torch.add(b.t().contiguous().to("axon"), b.t().contiguous().to("axon"), out=t)
    check_close(t, b.t() + b.t())


def test_same_shape_binary_op_errors_match_the_iterator_path():
    i = torch.arange(6, device="axon")
    with pytest.raises(RuntimeError, match="alpha"):
        torch.add(i, i, alpha=1.5)
    b = i > 2
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors is not supported"):
        torch.sub(b, b)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.add(i, i.cpu())
    torch.axon.synchronize()


def test_non_contiguous_operands_match_cpu():
    x = sample((8, 6), torch.float32)
    y = sample((6, 8), torch.float32, seed=11)
    fn = lambda a, b: (a.t() * b)[::2].exp()  # noqa: E731
    check_close(run_native(fn, x, y), fn(x, y))


# Short rows (an innermost run of at most 256 elements after merging) go through libaxon's row paths: groups of rows
# through buffers, or a loop call per row when an operand holds one value per row. Each layout below takes one of
# them: (a's shape, b's shape, a view of a applied first).
SHORT_ROW_LAYOUTS = [
    ((700, 3), (3,), None),                        # a bias of 3 over rows: the same row everywhere
    ((300, 16), (300, 1), None),                   # one value per row (x * scale[:, None]), spread over a group
    ((64, 5), (64, 1), None),                      # ... in rows of 5
    ((40, 200), (40, 1), None),                    # ... in rows of 200: the op's row loop, or a loop call each
    ((30, 32), (30, 1), None),                     # ... rows of 32 and 64: the row loop's own bodies
    ((300, 8), (300, 1), None),                    # ... rows of 8 and 16: vector bodies for float32 and float64
    ((60, 2), (60, 16), "even"),                   # ... the values two elements apart
    ((37, 32), (37, 1), "even"),                   # ... rows of 16 at stride 2, converted into a buffer
    ((4, 1, 6, 1), (1, 5, 1, 16), None),           # kron's layout: the same row of b under each value of a
    ((20, 1), (20, 64), None),                     # ... a, not b, with one value per row
    ((40, 1, 9), (1, 30, 9), None),                # both broadcast: rows gathered from b, groups across dim 1
    ((9, 70), (70, 9), "t"),                       # a transposed: rows of 9 with stride 70
    ((50, 24), (50, 12), "even"),                  # a strided along its rows
    ((3, 4, 6, 5), (4, 1, 5), "flip"),             # negative strides, three broadcast dims
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32,
                                   torch.int8, torch.bool, torch.complex64], ids=str)
@pytest.mark.parametrize("layout", SHORT_ROW_LAYOUTS, ids=lambda v: f"{v[0]}x{v[1]}{v[2] or ''}")
def test_short_broadcast_rows_match_cpu(layout, dtype):
    a_shape, b_shape, view = layout
    a, b = sample(a_shape, dtype, seed=3), sample(b_shape, dtype, seed=4)

    def viewed(x):
        if view == "t":
            return x.t()
        if view == "even":
            return x[:, ::2]
        if view == "flip":
            return x.flip(-1, 0)
        return x

    ops = [torch.mul, torch.add] if dtype != torch.bool else [torch.logical_xor, torch.eq]
    if dtype.is_floating_point:  # the rest of the ops with a row loop, alpha included
        ops += [functools.partial(torch.sub, alpha=0.5), torch.div]
    for op in ops:
        check_close(run_native(lambda x, y: op(viewed(x), y), a, b), op(viewed(a), b))
        # mixed dtypes (a conversion per row) and an out= that is not contiguous (a store per row)
        if dtype.is_floating_point and dtype != torch.float64:
            bd = b.double()
            check_close(run_native(lambda x, y: op(viewed(x), y), a, bd), op(viewed(a), bd))
        want = op(viewed(a), b)
        out = torch.empty(want.shape[::-1], dtype=want.dtype, device="axon").permute(
            *reversed(range(want.dim())))
        torch_axon.reset_fallback_stats()
        op(viewed(a.to("axon")), b.to("axon"), out=out)
        assert torch_axon.fallback_stats() == {}
        check_close(out, want)
    if dtype.is_floating_point:
        # a unary op on a broadcast view, and where() with a broadcast condition
        col = sample((50, 1), dtype, seed=6)
        check_close(run_native(lambda x: torch.exp(x.expand(50, 12)), col), torch.exp(col.expand(50, 12)))
        cond = sample(b_shape, torch.bool, seed=5)
        check_close(run_native(lambda c, x, y: torch.where(c, viewed(x), y), cond, a, b),
                    torch.where(cond, viewed(a), b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("row", [8, 16, 32, 40])
def test_short_rows_in_place_with_one_value_per_row(row, dtype):
    # out is the rows' own operand: the row loop reads each row before writing it
    x, s = sample((70, row), dtype, seed=7), sample((70, 1), dtype, seed=8)
    for name in ["mul_", "div_", "add_", "sub_"]:
        got = x.to("axon")
        getattr(got, name)(s.to("axon"))
        check_close(got, getattr(x.clone(), name)(s))


def _halves_with_specials(n, seed, dtype=torch.float16):
    """n float16 or bfloat16 values: any bits (normals over the whole range, subnormals, infinities, NaNs of every
    payload), zeros of both signs."""
    g = torch.Generator().manual_seed(seed)
    bits = torch.randint(0, 1 << 16, (n,), generator=g, dtype=torch.int32).to(torch.int16)
    x = bits.view(dtype).clone()
    x[:8] = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 6e-8, -6e-8, 65504.0])
    return x


@pytest.mark.parametrize("n", [300, 4099, 4105])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_ops_round_once_as_cpu(dtype, n):
    # float16 and bfloat16 add, sub, mul and div, relu, leaky_relu and hardswish and their backward forms run in one
    # AVX2 pass (sixteen lanes, eight, then a tail: 4099 and 4105 end in each); from 1024 elements other float16 ops
    # run the float32 loop between conversion passes; below, the 16-bit loops: either way each result is the float
    # result rounded once, CPU's bits exactly
    a, b = _halves_with_specials(n, 11, dtype), _halves_with_specials(n, 12, dtype)
    c = torch.rand(n, generator=torch.Generator().manual_seed(13)) > 0.5
    cases = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y, "div": lambda x, y: x / y,
        "number over": lambda x, y: 2.5 / x, "number minus": lambda x, y: 0.3 - x, "plus number": lambda x, y: x + 7,
        "mul number": lambda x, y: x * 0.3, "maximum": torch.maximum, "minimum": torch.minimum,
        "lt": lambda x, y: x < y, "eq": lambda x, y: x == y, "neg": lambda x, y: -x, "abs": lambda x, y: x.abs(),
        "clamp": lambda x, y: x.clamp(-2.5, 3.0), "transposed": lambda x, y: x.view(-1, 1).expand(-1, 3).t() * 2,
        "relu": lambda x, y: torch.relu(x), "leaky_relu": lambda x, y: torch.nn.functional.leaky_relu(x, 0.1),
        "hardswish": lambda x, y: torch.nn.functional.hardswish(x),
        "threshold_backward": lambda x, y: torch.ops.aten.threshold_backward(y, x, 0.5),
        "relu's backward": lambda x, y: torch.ops.aten.threshold_backward(y, x, 0),
        "leaky_relu_backward": lambda x, y: torch.ops.aten.leaky_relu_backward(y, x, 0.1, False),
        # CPU's scalar tail passes the gradient through where the input is NaN, its vector loop does not (axon's)
        "hardswish_backward": lambda x, y: torch.ops.aten.hardswish_backward(y, x.nan_to_num(0.0, float("inf"),
                                                                                             float("-inf"))),
    }
    for name, fn in cases.items():
        want, got = fn(a, b), run_native(fn, a, b).cpu()
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{name}: {m}")
        if want.dtype == dtype and ("relu" in name or "hardswish" in name or "threshold" in name):
            # the activations' signed zeros too (assert_close takes -0 for 0): the same bits, NaNs apart
            same = (got.view(torch.int16) == want.view(torch.int16)) | (got.isnan() & want.isnan())
            assert bool(same.all()), f"{name}: bits differ at {(~same).nonzero().flatten()[:5].tolist()}"
    want = torch.where(c, a, b)
    torch.testing.assert_close(run_native(torch.where, c, a, b).cpu(), want, rtol=0, atol=0, equal_nan=True)
    got = a.to("axon")
    got.mul_(b.to("axon"))  # in place: out is an operand
    torch.testing.assert_close(got.cpu(), a * b, rtol=0, atol=0, equal_nan=True)
    _check_half_alpha(a, b)


def _check_half_alpha(a, b):
    # add and sub with alpha: alpha in the tensors' dtype, x + alpha * y in float, rounded once, as PyTorch's
    # vectorized CPU loop computes it (the product of two halves is exact in float). Its scalar tail rounds the
    # product to half first, so CPU's own last elements can differ by an ulp: the reference is the formula.
    for alpha in (0.7, 3, -1.1):
        a16 = torch.tensor(alpha).to(a.dtype).float()
        for name, fn, sign in (("add", torch.add, 1), ("sub", torch.sub, -1)):
            want = (a.float() + (sign * a16) * b.float()).to(a.dtype)
            got = run_native(lambda x, y: fn(x, y, alpha=alpha), a, b).cpu()
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True,
                                       msg=lambda m: f"{name} alpha {alpha}: {m}")


@pytest.mark.parametrize("n", [300, 4099])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_ops_with_a_number_take_it_as_cpu(dtype, n):
    # PyTorch's CPU kernels read a number in the tensors' dtype (x + 0.3 adds 0.30029296875 in float16), except mul
    # and the divisions, which read it in float: either way CPU's bits exactly
    x = (torch.randn(n, generator=torch.Generator().manual_seed(31)) * 4).to(dtype)
    cases = {
        "add": lambda t: t + 0.3, "sub": lambda t: t - 0.3, "rsub": lambda t: 0.3 - t, "add int": lambda t: t + 3,
        "add alpha": lambda t: torch.add(t, 0.3, alpha=2), "mul": lambda t: t * 0.3, "div": lambda t: t / 0.3,
        "div floor": lambda t: torch.div(t, 0.3, rounding_mode="floor"),
        "div trunc": lambda t: torch.div(t, 0.3, rounding_mode="trunc"), "remainder": lambda t: t % 0.3,
        "fmod": lambda t: torch.fmod(t, 0.3), "rpow": lambda t: 1.3 ** t,  # (x ** 1.3: powf can be an ulp off)
        "lt": lambda t: t < 1.1, "eq": lambda t: t == 1.1, "clamp": lambda t: t.clamp(min=0.3),
    }
    for name, fn in cases.items():
        torch.testing.assert_close(run_native(fn, x).cpu(), fn(x), rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("R", [37, 45, 64, 1000])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_half_rows_with_one_value_per_row_as_cpu(dtype, R):
    # x * s[:, None] and the like: the row loop (one AVX2 pass for the four arithmetic ops: sixteen lanes, eight,
    # then a tail), with the row's value as either operand, CPU's bits exactly
    x, r = _halves_with_specials(24 * R, 21, dtype).view(24, R), _halves_with_specials(24, 22, dtype)[:, None]
    cases = {
        "mul": lambda x, r: x * r, "value over": lambda x, r: r / x, "over value": lambda x, r: x / r,
        "value minus": lambda x, r: r - x, "maximum": torch.maximum,
    }
    for name, fn in cases.items():
        torch.testing.assert_close(run_native(fn, x, r).cpu(), fn(x, r), rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m: f"{name}: {m}")
    _check_half_alpha(x, r)


def test_short_rows_integer_division_by_zero_raises():
    x = torch.ones(100, 7, dtype=torch.int64, device="axon")
    d = torch.ones(100, 1, dtype=torch.int64, device="axon")
    d[57] = 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (x // d).cpu()
    torch.axon.synchronize()
    check_close(x // (d + 1), torch.zeros(100, 7, dtype=torch.int64) + (torch.ones(100, 7, dtype=torch.int64) //
                                                                         (d.cpu() + 1)))


def test_integer_division_by_zero_raises_at_synchronization():
    x = torch.ones(4, dtype=torch.int64, device="axon")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        (x // 0).cpu()
    torch.axon.synchronize()  # reported once; the stream works again
    check_close(x + 1, torch.full((4,), 2, dtype=torch.int64))


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool], ids=str)
@pytest.mark.parametrize("name", ["isposinf", "isneginf", "signbit", "isnan", "isinf", "isfinite", "logical_not"])
def test_predicates_match_cpu_without_fallback(name, dtype):
    x = sample((4, 50), dtype)
    if dtype.is_floating_point:  # the special values each predicate is about
        x[0, :6] = torch.tensor([float("inf"), -float("inf"), float("nan"), -0.0, 0.0, -float("nan")]).to(dtype)
    torch_axon.reset_fallback_stats()
    got = getattr(torch, name)(x.to("axon"))
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(got.cpu(), getattr(torch, name)(x))


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


# ---- activation backward kernels ----

ACTIVATIONS = {
    "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu,
    "mish": torch.nn.functional.mish,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "relu": torch.relu,
    "relu6": torch.nn.functional.relu6,
    "hardtanh": lambda x: torch.nn.functional.hardtanh(x, -1.5, 2.0),
    "leaky_relu": lambda x: torch.nn.functional.leaky_relu(x, 0.2),
    "elu": torch.nn.functional.elu,
    "selu": torch.nn.functional.selu,
    "celu": lambda x: torch.nn.functional.celu(x, 0.7),
    "softplus": lambda x: torch.nn.functional.softplus(x, beta=2.0, threshold=3.0),
    "hardswish": torch.nn.functional.hardswish,
    "hardsigmoid": torch.nn.functional.hardsigmoid,
    # In-place forwards: autograd differentiates from the output (elu/leaky_relu backward with is_result).
    "relu_": lambda x: torch.nn.functional.relu(x * 1, inplace=True),
    "elu_": lambda x: torch.nn.functional.elu(x * 1, inplace=True),
    "leaky_relu_": lambda x: torch.nn.functional.leaky_relu(x * 1, 0.1, inplace=True),
    "hardtanh_": lambda x: torch.nn.functional.hardtanh(x * 1, inplace=True),
    "sigmoid_": lambda x: (x * 1).sigmoid_(),
    "tanh_": lambda x: (x * 1).tanh_(),
}
# Backward compounds a forward rounding in bfloat16: a wider tolerance than the forward ops.
GRAD_TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (3e-2, 2e-2)}


@pytest.mark.parametrize("dtype", list(GRAD_TOL), ids=str)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradients_match_cpu_without_fallback(name, dtype):
    fn = ACTIVATIONS[name]
    x = sample((6, 9), dtype)
    x[0, :4] = torch.tensor([0.0, -3.0, 3.0, 1.0], dtype=dtype)  # the kinks and hardtanh/hardswish edges
    g = sample((6, 9), dtype, seed=3)
    xc = x.clone().requires_grad_()
    fn(xc).backward(g)
    xa = x.to("axon").requires_grad_()
    ga = g.to("axon")
    torch_axon.reset_fallback_stats()
    fn(xa).backward(ga)
    torch.axon.synchronize()
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    rtol, atol = GRAD_TOL[dtype]
    torch.testing.assert_close(xa.grad.cpu(), xc.grad, rtol=rtol, atol=atol)


BACKWARD_CALLS = {
    "gelu_backward": lambda g, x: torch.ops.aten.gelu_backward(g, x),
    "gelu_backward_tanh": lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh"),
    "silu_backward": torch.ops.aten.silu_backward,
    "mish_backward": torch.ops.aten.mish_backward,
    "sigmoid_backward": torch.ops.aten.sigmoid_backward,
    "tanh_backward": torch.ops.aten.tanh_backward,
    "threshold_backward": lambda g, x: torch.ops.aten.threshold_backward(g, x, 0.5),
    "hardtanh_backward": lambda g, x: torch.ops.aten.hardtanh_backward(g, x, -1.0, 2.0),
    "leaky_relu_backward": lambda g, x: torch.ops.aten.leaky_relu_backward(g, x, 0.3, False),
    "elu_backward": lambda g, x: torch.ops.aten.elu_backward(g, 1.3, 1.1, 0.8, False, x),
    "elu_backward_result": lambda g, x: torch.ops.aten.elu_backward(g, 1.3, 1.1, 0.8, True, x),
    "softplus_backward": lambda g, x: torch.ops.aten.softplus_backward(g, x, 1.5, 4.0),
    "hardswish_backward": torch.ops.aten.hardswish_backward,
    "hardsigmoid_backward": torch.ops.aten.hardsigmoid_backward,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(BACKWARD_CALLS))
def test_backward_ops_called_directly_match_cpu(name, dtype):
    fn = BACKWARD_CALLS[name]
    x = sample((5, 7), dtype)
    x[0, :5] = torch.tensor([0.0, -3.0, 3.0, 0.5, float("nan")], dtype=dtype)
    g = sample((5, 7), dtype, seed=5)
    check_close(run_native(fn, g, x), fn(g, x))


def test_backward_out_overloads_write_into_grad_input():
    g, x = sample((4, 5), torch.float32, seed=1), sample((4, 5), torch.float32, seed=2)
    out = torch.empty((4, 5), device="axon")
    r = run_native(lambda a, b: torch.ops.aten.sigmoid_backward.grad_input(a, b, grad_input=out), g, x)
    assert r.data_ptr() == out.data_ptr()
    check_close(out, torch.ops.aten.sigmoid_backward(g, x))
    r = run_native(lambda a, b: torch.ops.aten.hardswish_backward.out(a, b, out=out), g, x)
    check_close(out, torch.ops.aten.hardswish_backward(g, x))


def test_in_place_leaky_relu_backward_with_a_negative_slope_is_refused_like_cpu():
    g, x = torch.ones(3, device="axon"), torch.ones(3, device="axon")
    with pytest.raises(RuntimeError, match="negative slope"):
        torch.ops.aten.leaky_relu_backward(g, x, -0.1, True)


# Ops whose loops call glibc's vector math (libmvec): its vector and scalar versions may differ in the last bit, so
# these loops run the last elements through a padded vector block. An element's value must then not depend on where
# the call's elements start: each op on x and on x[k:] gives the same bits for the shared elements.
_F = torch.nn.functional
_VECTOR_MATH_UNARY = {
    "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1, "log": torch.log, "log2": torch.log2,
    "log10": torch.log10, "log1p": torch.log1p, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh, "cosh": torch.cosh,
    "tanh": torch.tanh, "asinh": torch.asinh, "atanh": torch.atanh, "erf": torch.erf, "erfc": torch.erfc,
    "sigmoid": torch.sigmoid, "silu": _F.silu, "elu": _F.elu, "logit": lambda x: torch.logit(x, 1e-3),
    "mish": _F.mish, "softplus": _F.softplus, "logsigmoid": _F.logsigmoid, "gelu": _F.gelu,
}
_VECTOR_MATH_BINARY = {
    "pow": torch.pow, "atan2": torch.atan2, "hypot": torch.hypot, "xlogy": torch.xlogy,
    "glu": lambda x, y: _F.glu(torch.stack([y, x], -1), -1),
    "silu_backward": torch.ops.aten.silu_backward, "mish_backward": torch.ops.aten.mish_backward,
    "gelu_backward": torch.ops.aten.gelu_backward,
    "elu_backward": lambda g, x: torch.ops.aten.elu_backward(g, 1.0, 1.0, 1.0, False, x),
    "softplus_backward": lambda g, x: torch.ops.aten.softplus_backward(g, x, 1.0, 20.0),
    "log_sigmoid_backward": lambda g, x: torch.ops.aten.log_sigmoid_backward(g, x, torch.empty(0, device=x.device)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name", sorted(_VECTOR_MATH_UNARY) + sorted(_VECTOR_MATH_BINARY))
def test_vector_math_values_do_not_depend_on_where_a_call_starts(name, dtype):
    g = torch.Generator().manual_seed(7)
    x = (torch.rand(333, generator=g, dtype=torch.float64) * 0.9 + 0.05).to(dtype).to("axon")   # every op's domain
    y = torch.randn(333, generator=g, dtype=torch.float64).to(dtype).to("axon")
    if name in _VECTOR_MATH_UNARY:
        fn = _VECTOR_MATH_UNARY[name]
        whole = fn(x).cpu()
        parts = [(k, fn(x[k:]).cpu()) for k in range(1, 18)]
    else:
        fn = _VECTOR_MATH_BINARY[name]
        whole = fn(y, x).cpu()
        parts = [(k, fn(y[k:], x[k:]).cpu()) for k in range(1, 18)]
    for k, part in parts:   # the same bits (NaN where the op is not defined, as pow of a negative base)
        torch.testing.assert_close(part, whole[k:], rtol=0, atol=0, equal_nan=True, msg=f"{name} from element {k}")


# clamp_min / clamp_max with tensor bounds and rsub: forms of the binary kernels.
TENSOR_BOUND_CASES = {
    "clamp_min tensor": lambda x, y: torch.clamp_min(x, y),
    "clamp_max tensor broadcast": lambda x, y: torch.clamp_max(x, y[0]),
    "clamp_min_ in place": lambda x, y: x.clone().clamp_min_(y),
    "clamp_min_ 0-dim bound": lambda x, y: x.clone().clamp_min_(y[1, 2]),  # cosine_similarity's clamp by eps
    "clamp_max_ column bound": lambda x, y: x.clone().clamp_max_(y[:, :1]),
    "clamp_max_ strided bound": lambda x, y: x.clone().clamp_max_(y.t().contiguous().t()),
    "clamp_min_ number": lambda x, y: x.clone().clamp_min_(1),
    "clamp_max_ number": lambda x, y: x[:, ::2].clamp_max_(-1),  # a strided self: the generic route
    "clamp_min 0-dim bound": lambda x, y: torch.clamp_min(x, y[0, 0]),
    "clamp both tensor bounds": lambda x, y: torch.clamp(x, y, y + 2),   # clamp.Tensor's direct paths
    "clamp_ both tensor bounds": lambda x, y: x.clone().clamp_(y, y + 2),
    "clamp max tensor out": lambda x, y: torch.clamp(x, max=y, out=torch.empty_like(x)),
    "clamp min row": lambda x, y: torch.clamp(x, min=y[0]),
    "clamp broadcast bounds": lambda x, y: torch.clamp(x, y[0], y[:, :1] + 2),   # the iterator
    "clamp_max row bound": lambda x, y: torch.clamp_max(x, y[0]),
    # a bound of a wider dtype: promoted, then cast to self (the generic route)
    "clamp_min_ wider bound": lambda x, y: x.clone().clamp_min_(y.double() if x.is_floating_point() else y.long()),
    "rsub": lambda x, y: torch.rsub(x, y),
    "rsub alpha": lambda x, y: torch.rsub(x, y, alpha=3),
    "rsub 0-dim other": lambda x, y: torch.rsub(x, y[2, 3], alpha=2),   # the direct path, operands swapped
    "rsub row other": lambda x, y: torch.rsub(x, y[0]),
    "rsub broadcast self": lambda x, y: torch.rsub(y[0], x),   # the result has other's shape: sub's iterator
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("name", sorted(TENSOR_BOUND_CASES))
def test_tensor_bounds_and_rsub_match_cpu_natively(name, dtype):
    g = torch.Generator().manual_seed(5)
    x = (torch.randn(4, 6, generator=g) * 4).to(dtype)
    y = (torch.randn(4, 6, generator=g) * 4).to(dtype)
    if dtype.is_floating_point:
        x[1, 2] = y[2, 3] = float("nan")  # both sides propagate NaN, as on CPU
    fn = TENSOR_BOUND_CASES[name]
    torch_axon.reset_fallback_stats()
    got = fn(x.to("axon"), y.to("axon")).cpu()
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    want = fn(x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want, equal_nan=True, rtol=1e-2 if dtype == torch.bfloat16 else 1e-6, atol=1e-5)


# div with a rounding mode: functional, in-place and out forms, on the direct path (same shape, a broadcast row, a
# Python number) and through the iterator (a strided input, mixed dtypes).
ROUNDING_DIV_CASES = {
    "same shape": lambda x, y, m: torch.div(x, y, rounding_mode=m),
    "broadcast row": lambda x, y, m: torch.div(x, y[0], rounding_mode=m),
    "number": lambda x, y, m: torch.div(x, 3, rounding_mode=m),
    "strided": lambda x, y, m: torch.div(x.t(), y, rounding_mode=m),
    "mixed dtypes": lambda x, y, m: torch.div(x, y.double(), rounding_mode=m),
    "in place": lambda x, y, m: x.clone().div_(y, rounding_mode=m),
    "in place broadcast": lambda x, y, m: x.clone().div_(y[:, :1], rounding_mode=m),
    "out": lambda x, y, m: torch.div(x, y, rounding_mode=m, out=torch.empty_like(x)),
}


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("name", sorted(ROUNDING_DIV_CASES))
def test_rounding_division_forms_match_cpu(name, dtype, mode):
    g = torch.Generator().manual_seed(7)
    x = (torch.randn(5, 5, generator=g) * 20).to(dtype)
    y = (torch.randn(5, 5, generator=g) * 4).to(dtype)
    if not dtype.is_floating_point:
        y[y == 0] = 3   # integer division by zero raises (below)
    fn = ROUNDING_DIV_CASES[name]
    torch_axon.reset_fallback_stats()
    got = fn(x.to("axon"), y.to("axon"), mode).cpu()
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    want = fn(x, y, mode)
    assert got.dtype == want.dtype and got.shape == want.shape
    if dtype == torch.bfloat16:
        # CPU's vector loop rounds the quotient to bfloat16 before truncating it (-41.25 / -0.574 = 71.8 gives 72,
        # its scalar loop 71): compare with the quotient rounded once, as axon and CPU's scalar loop compute it
        want = fn(x.float(), y.float(), mode).to(got.dtype)
    torch.testing.assert_close(got, want, rtol=0, atol=0)   # rounded quotients: the same values


def test_rounding_division_refuses_like_cpu():
    a = torch.tensor([7, -7], device="axon")
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or 'floor' but found 'up'"):
        torch.div(a, 2, rounding_mode="up")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(a, torch.zeros(2, dtype=torch.long, device="axon"), rounding_mode="floor")
        torch.axon.synchronize()
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        a.clone().div_(torch.ones(2, device="axon"), rounding_mode="trunc")


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_"])
def test_inplace_arithmetic_into_a_view_with_a_broadcast_other(op):
    # a column of a matrix, the other broadcast along it (bilinear's _trilinear accumulates so): natively, through the
    # .out route into self, with CPU's refusals of a shape self cannot hold and of a cast to an integer self
    def run(device):
        s = torch.arange(40.0, device=device).view(8, 5)
        col = s[:, 1:2]
        getattr(col, op)(torch.linspace(1, 2, 8, device=device).view(8, 1))
        getattr(s[2:, 3:], op)(torch.tensor(3.0, device=device))
        return s.cpu()
    torch_axon.reset_fallback_stats()
    assert torch.equal(run("axon"), run("cpu"))
    assert torch_axon.fallback_stats() == {}
    with pytest.raises(RuntimeError, match=r"output with shape \[3, 1\] doesn't match the broadcast shape \[3, 4\]"):
        getattr(torch.ones(3, 1, device="axon"), op)(torch.ones(3, 4, device="axon"))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        getattr(torch.ones(3, 2, dtype=torch.long, device="axon")[:, :1], op)(torch.full((3, 1), 0.5, device="axon"))


@pytest.mark.parametrize("op", ["eq_", "ne_", "lt_", "le_", "gt_", "ge_"])
def test_inplace_comparisons_store_in_selfs_dtype_like_cpu(op):
    # 1 or 0 in self's dtype: float and integer selves, a tensor or a number other (NaN among the values), a broadcast
    # other and a view self; sign_ and threshold_ take the same route into self
    def run(device):
        x = torch.tensor([[1.0, float("nan"), -2.0, 3.0], [0.5, 2.0, 2.0, -0.0]], device=device)
        y = torch.tensor([[1.0, 1.0, -3.0, 3.0], [0.5, float("nan"), 2.5, 0.0]], device=device)
        results = []
        for self_dtype in (torch.float32, torch.int64, torch.bool, torch.bfloat16):
            for other in (y, y[:1], 2.0, 1):
                s = (x * 1).to(self_dtype)
                getattr(s, op)(other.to(self_dtype) if isinstance(other, torch.Tensor) and self_dtype == torch.bool
                               else other)
                results.append(s.cpu())
        v = (x * 1)[:, ::2]
        getattr(v, op)(y[:, 1::2])
        results += [v.cpu(), (x * 1).sign_().cpu(), torch.nn.functional.threshold_(x * 1, 0.7, -5.0).cpu()]
        return results
    torch_axon.reset_fallback_stats()
    for got, want in zip(run("axon"), run("cpu")):
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    assert torch_axon.fallback_stats() == {}
    with pytest.raises(RuntimeError, match=r"output with shape \[2, 1\] doesn't match the broadcast shape \[2, 3\]"):
        getattr(torch.ones(2, 1, device="axon"), op)(torch.ones(2, 3, device="axon"))

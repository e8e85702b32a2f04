"""The _foreach_* ops on libaxon's multi-tensor kernels: results against PyTorch CPU per dtype, in-place and functional
forms, one command per list (libaxon's trace), no host fallback, PyTorch's slow path for lists the fast route does
not take (mixed dtypes, integer lists, strided views), and PyTorch's errors for bad lists."""

import math

import pytest
import torch

import torch_axon
from axon_testing import libaxon_commands

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
# (rtol, atol). Both sides compute float32/float16/bfloat16 in float and float64 in double with the same formulas;
# differences come from fused multiply-adds in PyTorch's vectorized loops and vectorized exp/pow/sqrt, so about one
# rounding of the result dtype. For half types PyTorch's CPU sub/add with alpha also rounds alpha * other to the half
# type before adding (libaxon does not): the atol is half an ulp of |alpha * other| <= 8.
TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1.6e-2, 1.6e-2),
       torch.float16: (2e-3, 2e-3)}
SHAPES = [(3, 4), (5,), (), (0,), (2, 3, 4), (17, 33)]


def make(dtype, seed=0, lo=-2.0, hi=2.0, shapes=SHAPES):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(s, generator=g, dtype=torch.float64) * (hi - lo) + lo).to(dtype) for s in shapes]


def to(tensors, device):
    return [t.to(device) for t in tensors]


def assert_lists_close(got, want, dtype):
    rtol, atol = TOL[dtype]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.device.type == "axon" and g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g.cpu(), w, rtol=rtol, atol=atol, equal_nan=True)


# Each case: (id, number of input lists, fn(lists) -> result lists, in-place fn(lists) mutating lists[0] or None).
# Inputs: list 0 in [-2, 2), list 1 in [0.5, 2.5) (a safe divisor), list 2 in [0.5, 2.5), list 3 in [0, 1).
def number(device):
    return torch.tensor(0.75, device=device)


BINARY = [
    ("add.Scalar", lambda l: torch._foreach_add(l[0], 1.5), lambda l: torch._foreach_add_(l[0], 1.5)),
    ("add.List", lambda l: torch._foreach_add(l[0], l[1], alpha=-0.5),
     lambda l: torch._foreach_add_(l[0], l[1], alpha=-0.5)),
    ("add.ScalarList", lambda l: torch._foreach_add(l[0], [0.5 * i for i in range(len(l[0]))]),
     lambda l: torch._foreach_add_(l[0], [0.5 * i for i in range(len(l[0]))])),
    ("add.Tensor", lambda l: torch._foreach_add(l[0], number(l[0][0].device), alpha=2),
     lambda l: torch._foreach_add_(l[0], number(l[0][0].device), alpha=2)),
    ("sub.Scalar", lambda l: torch._foreach_sub(l[0], 0.25), lambda l: torch._foreach_sub_(l[0], 0.25)),
    ("sub.List", lambda l: torch._foreach_sub(l[0], l[1], alpha=3), lambda l: torch._foreach_sub_(l[0], l[1], alpha=3)),
    ("sub.ScalarList", lambda l: torch._foreach_sub(l[0], [1.0] * len(l[0])),
     lambda l: torch._foreach_sub_(l[0], [1.0] * len(l[0]))),
    ("mul.Scalar", lambda l: torch._foreach_mul(l[0], 3), lambda l: torch._foreach_mul_(l[0], 3)),
    ("mul.List", lambda l: torch._foreach_mul(l[0], l[1]), lambda l: torch._foreach_mul_(l[0], l[1])),
    ("mul.ScalarList", lambda l: torch._foreach_mul(l[0], [i - 2.5 for i in range(len(l[0]))]),
     lambda l: torch._foreach_mul_(l[0], [i - 2.5 for i in range(len(l[0]))])),
    ("mul.Tensor", lambda l: torch._foreach_mul(l[0], number(l[0][0].device)),
     lambda l: torch._foreach_mul_(l[0], number(l[0][0].device))),
    ("mul.Tensor_cpu_number", lambda l: torch._foreach_mul(l[0], torch.tensor(0.5)),
     lambda l: torch._foreach_mul_(l[0], torch.tensor(0.5))),
    ("div.Scalar", lambda l: torch._foreach_div(l[0], 3.0), lambda l: torch._foreach_div_(l[0], 3.0)),
    ("div.List", lambda l: torch._foreach_div(l[0], l[1]), lambda l: torch._foreach_div_(l[0], l[1])),
    ("div.ScalarList", lambda l: torch._foreach_div(l[0], [i + 1.0 for i in range(len(l[0]))]),
     lambda l: torch._foreach_div_(l[0], [i + 1.0 for i in range(len(l[0]))])),
    ("div.Tensor", lambda l: torch._foreach_div(l[0], number(l[0][0].device)),
     lambda l: torch._foreach_div_(l[0], number(l[0][0].device))),
    ("maximum.Scalar", lambda l: torch._foreach_maximum(l[0], 0.1), lambda l: torch._foreach_maximum_(l[0], 0.1)),
    ("maximum.List", lambda l: torch._foreach_maximum(l[0], l[1]), lambda l: torch._foreach_maximum_(l[0], l[1])),
    ("minimum.List", lambda l: torch._foreach_minimum(l[0], l[1]), lambda l: torch._foreach_minimum_(l[0], l[1])),
    ("clamp_min.Scalar", lambda l: torch._foreach_clamp_min(l[0], -0.5),
     lambda l: torch._foreach_clamp_min_(l[0], -0.5)),
    ("clamp_max.ScalarList", lambda l: torch._foreach_clamp_max(l[0], [0.5] * len(l[0])),
     lambda l: torch._foreach_clamp_max_(l[0], [0.5] * len(l[0]))),
    ("pow.Scalar", lambda l: torch._foreach_pow(l[1], 2.5), lambda l: torch._foreach_pow_(l[1], 2.5)),
    ("pow.List", lambda l: torch._foreach_pow(l[1], l[0]), lambda l: torch._foreach_pow_(l[1], l[0])),
    ("pow.ScalarList", lambda l: torch._foreach_pow(l[1], [1.5] * len(l[0])),
     lambda l: torch._foreach_pow_(l[1], [1.5] * len(l[0]))),
]

# (name, which input list): sqrt and reciprocal take the positive list.
UNARY = [(name, 1 if name in ("sqrt", "reciprocal") else 0) for name in ["neg", "abs", "exp", "sign", "reciprocal",
                                                                         "sqrt"]]


def unary_case(name, k):
    f, f_ = getattr(torch, f"_foreach_{name}"), getattr(torch, f"_foreach_{name}_")
    return (name, lambda l: f(l[k]), lambda l: f_(l[k]))


TERNARY = [
    ("addcmul.Scalar", lambda l: torch._foreach_addcmul(l[0], l[1], l[2], value=-0.3),
     lambda l: torch._foreach_addcmul_(l[0], l[1], l[2], value=-0.3)),
    ("addcmul.ScalarList", lambda l: torch._foreach_addcmul(l[0], l[1], l[2], [0.1 * i for i in range(len(l[0]))]),
     lambda l: torch._foreach_addcmul_(l[0], l[1], l[2], [0.1 * i for i in range(len(l[0]))])),
    ("addcdiv.Scalar", lambda l: torch._foreach_addcdiv(l[0], l[1], l[2], value=2),
     lambda l: torch._foreach_addcdiv_(l[0], l[1], l[2], value=2)),
    ("addcdiv.Tensor", lambda l: torch._foreach_addcdiv(l[0], l[1], l[2], torch.arange(len(l[0])) * 0.5),
     lambda l: torch._foreach_addcdiv_(l[0], l[1], l[2], torch.arange(len(l[0])) * 0.5)),
    ("lerp.Scalar_small", lambda l: torch._foreach_lerp(l[0], l[1], 0.1),
     lambda l: torch._foreach_lerp_(l[0], l[1], 0.1)),
    ("lerp.Scalar_large", lambda l: torch._foreach_lerp(l[0], l[1], 0.9),
     lambda l: torch._foreach_lerp_(l[0], l[1], 0.9)),
    ("lerp.List", lambda l: torch._foreach_lerp(l[0], l[1], l[3]), lambda l: torch._foreach_lerp_(l[0], l[1], l[3])),
    ("lerp.ScalarList", lambda l: torch._foreach_lerp(l[0], l[1], [0.2, 0.7, 0.5, 0.0, 1.0, 0.3]),
     lambda l: torch._foreach_lerp_(l[0], l[1], [0.2, 0.7, 0.5, 0.0, 1.0, 0.3])),
]

CASES = BINARY + [unary_case(n, k) for n, k in UNARY] + TERNARY


def inputs(dtype):
    return [make(dtype, 0), make(dtype, 1, 0.5, 2.5), make(dtype, 2, 0.5, 2.5), make(dtype, 3, 0.0, 1.0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name,fn,fn_", CASES, ids=[c[0] for c in CASES])
def test_functional_and_in_place_forms_match_cpu(name, fn, fn_, dtype):
    cpu = inputs(dtype)
    want = fn(cpu)
    axon = [to(l, "axon") for l in cpu]
    torch_axon.reset_fallback_stats()
    got = fn(axon)
    assert_lists_close(got, want, dtype)
    # In place: the mutated list is whichever one the CPU call changed.
    cpu2 = [[t.clone() for t in l] for l in cpu]
    fn_(cpu2)
    fn_(axon)
    for a, c in zip(axon, cpu2):
        assert_lists_close(a, c, dtype)
    assert torch_axon.fallback_stats() == {}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_zero_and_copy_with_dtype_conversion(dtype):
    cpu = make(dtype)
    axon = to(cpu, "axon")
    torch_axon.reset_fallback_stats()
    torch._foreach_zero_(axon)
    assert all(bool((t.cpu() == 0).all()) for t in axon)
    src = make(torch.float32, 5)
    torch._foreach_copy_(axon, to(src, "axon"))
    assert_lists_close(axon, [s.to(dtype) for s in src], dtype)
    assert torch_axon.fallback_stats() == {}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_copy_within_one_dtype_is_exact_across_grains(dtype):
    # one dtype on both sides takes the copy's memmove path: pieces that start inside a tensor and tensors that span
    # several of the pool's grains (2^15 elements) must land exactly, in one command
    shapes = [(70001,), (5,), (0,), (40000, 3), (1,)]
    src, dst = to(make(dtype, 7, shapes=shapes), "axon"), to(make(dtype, 8, shapes=shapes), "axon")
    torch_axon.reset_fallback_stats()
    assert libaxon_commands(lambda: torch._foreach_copy_(dst, src)) == ["foreach_copy"]
    for d, s in zip(dst, src):
        assert torch.equal(d.cpu(), s.cpu())
    assert torch_axon.fallback_stats() == {}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("ord", [1, 2, math.inf], ids=["l1", "l2", "inf"])
def test_norm_matches_cpu_with_and_without_dtype(ord, dtype):
    cpu = make(dtype, 4, shapes=[s for s in SHAPES if s != (0,)] if ord == math.inf else SHAPES)
    axon = to(cpu, "axon")
    torch_axon.reset_fallback_stats()
    assert_lists_close(torch._foreach_norm(axon, ord), torch._foreach_norm(cpu, ord), dtype)
    got = torch._foreach_norm(axon, ord, dtype=torch.float64)
    assert_lists_close(got, torch._foreach_norm(cpu, ord, dtype=torch.float64), torch.float64 if dtype in
                       (torch.float32, torch.float64) else dtype)
    assert torch_axon.fallback_stats() == {}


def test_norm_of_other_orders_takes_the_slow_path():
    cpu = make(torch.float32, 4)
    assert_lists_close(torch._foreach_norm(to(cpu, "axon"), 3), torch._foreach_norm(cpu, 3), torch.float32)


def test_inf_norm_of_an_empty_tensor_raises_pytorchs_error():
    with pytest.raises(RuntimeError, match="infinity norm on an empty tensor"):
        torch._foreach_norm([torch.ones(2, device="axon"), torch.ones(0, device="axon")], math.inf)


def test_a_list_is_one_command_not_one_per_tensor():
    a, b = [to(make(torch.float32, s), "axon") for s in (0, 1)]
    names = libaxon_commands(lambda: torch._foreach_add_(a, b, alpha=2))
    assert names == ["foreach_add"], names
    big = [torch.randn(8, 8, device="axon") for _ in range(300)]  # more than one argument block holds
    names = libaxon_commands(lambda: torch._foreach_mul_(big, 0.5))
    assert names and set(names) == {"foreach_mul"} and len(names) <= 5, names
    names = libaxon_commands(lambda: torch._foreach_norm(big))
    assert set(names) == {"foreach_norm"} and len(names) <= 5, names


def test_mixed_dtypes_integer_lists_and_strided_views_take_the_slow_path():
    torch_axon.reset_fallback_stats()
    mixed = [torch.randn(3, 3), torch.randn(4).double()]
    got = torch._foreach_mul(to(mixed, "axon"), 2.0)
    assert_lists_close(got, torch._foreach_mul(mixed, 2.0), torch.float64)
    ints = [torch.arange(6), torch.arange(3)]
    got = torch._foreach_add(to(ints, "axon"), 2)
    assert [g.cpu().tolist() for g in got] == [t.add(2).tolist() for t in ints]
    base = torch.randn(6, 8)
    views = [base[:, ::2], base[1:3]]
    axon_base = base.to("axon")
    axon_views = [axon_base[:, ::2], axon_base[1:3]]
    torch._foreach_mul_(axon_views, 3.0)
    torch._foreach_mul_(views, 3.0)
    assert_lists_close(axon_views, views, torch.float32)
    assert torch_axon.fallback_stats() == {}


def test_a_device_number_operand_is_read_when_the_command_runs():
    # clip_grad_norm_'s pattern: the coefficient is computed on the device and used without a host sync.
    grads = [torch.randn(10, device="axon") for _ in range(4)]
    coef = torch.zeros((), device="axon")
    coef.fill_(0.5)
    want = [g.cpu() * 0.5 for g in grads]
    torch._foreach_mul_(grads, coef)
    assert_lists_close(grads, want, torch.float32)


def test_lists_of_different_lengths_raise_pytorchs_error():
    a = [torch.randn(3, device="axon") for _ in range(3)]
    b = [torch.randn(3, device="axon") for _ in range(2)]
    with pytest.raises(RuntimeError, match="Tensor lists must have the same number of tensors, got 3 and 2"):
        torch._foreach_add(a, b)
    with pytest.raises(RuntimeError, match="Tensor list must have same number of elements as scalar list"):
        torch._foreach_mul_(a, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="Tensor list must have at least one tensor"):
        torch._foreach_neg([])


def test_shape_mismatch_raises_pytorchs_error():
    a = [torch.randn(3, device="axon")]
    b = [torch.randn(4, device="axon")]
    with pytest.raises(RuntimeError, match="size of tensor a \\(3\\) must match the size of tensor b \\(4\\)"):
        torch._foreach_add(a, b)


def test_clip_grad_norm_matches_cpu_without_fallback():
    torch.manual_seed(0)
    cpu = [torch.nn.Parameter(torch.randn(s)) for s in [(8, 8), (8,), (3, 5, 7)]]
    for p in cpu:
        p.grad = torch.randn_like(p) * 3
    axon = [torch.nn.Parameter(p.detach().to("axon")) for p in cpu]
    for p, c in zip(axon, cpu):
        p.grad = c.grad.to("axon")
    for norm_type in (2.0, 1.0, math.inf):
        torch_axon.reset_fallback_stats()
        n_axon = torch.nn.utils.clip_grad_norm_(axon, 1.0, norm_type=norm_type, foreach=True)
        n_cpu = torch.nn.utils.clip_grad_norm_(cpu, 1.0, norm_type=norm_type, foreach=True)
        torch.testing.assert_close(n_axon.cpu(), n_cpu, rtol=1e-5, atol=1e-6)
        assert_lists_close([p.grad for p in axon], [p.grad for p in cpu], torch.float32)
        assert torch_axon.fallback_stats() == {}


def test_dense_non_contiguous_layouts_take_the_fast_route():
    # channels_last tensors are dense in another order: described as their flat memory when every list shares it.
    cpu = [torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last) for _ in range(3)]
    other = [torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last) for _ in range(3)]
    axon, axon_other = to(cpu, "axon"), to(other, "axon")
    assert not axon[0].is_contiguous() and axon[0].is_contiguous(memory_format=torch.channels_last)
    names = libaxon_commands(lambda: torch._foreach_addcmul_(axon, axon_other, axon_other, value=0.5))
    assert names == ["foreach_addcmul"], names
    torch._foreach_addcmul_(cpu, other, other, value=0.5)
    assert_lists_close(axon, cpu, torch.float32)
    assert all(t.is_contiguous(memory_format=torch.channels_last) for t in torch._foreach_neg(axon))

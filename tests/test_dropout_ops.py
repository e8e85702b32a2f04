"""Native dropout (libaxon's dropout.h kernels): F.dropout / nn.Dropout in training mode forward and backward with
no host fallback, the mask drawn from the axon Philox generator (same seed, same mask; a fresh mask per call; the
kept fraction near 1 - p), output and gradient equal to PyTorch CPU's x * mask * scale given that mask, the p = 0
and p = 1 edge cases, eval mode, and PyTorch's errors for bad p."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def dropout_with_grad(x, p, seed=1234):
    """F.dropout in training mode on axon after seeding, and its input's gradient for upstream gradient g."""
    torch.axon.manual_seed(seed)
    leaf = x.detach().to("axon").requires_grad_()
    out = F.dropout(leaf, p, training=True)
    g = sample(x.shape, x.dtype, seed=9)
    out.backward(g.to("axon"))
    return out.detach().cpu(), leaf.grad.cpu(), g


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_dropout_forward_and_backward_are_native_and_match_cpu_formula(p, dtype):
    x = sample((37, 53), dtype)
    torch_axon.reset_fallback_stats()
    out, grad, g = dropout_with_grad(x, p)
    assert torch_axon.fallback_stats() == {}
    mask = out != 0
    assert mask.sum() > 0
    # CPU's formula with the same mask: input * mask * scale, and grad * mask * scale for the backward. Exact: the
    # same roundings happen in the same order.
    scale = 1.0 / (1.0 - p)
    torch.testing.assert_close(out, x * mask * scale, rtol=0, atol=0)
    torch.testing.assert_close(grad, g * mask * scale, rtol=0, atol=0)


def test_aten_native_dropout_returns_bool_mask_and_backward_uses_it():
    x = sample((1000,), torch.float32).to("axon")
    torch_axon.reset_fallback_stats()
    out, mask = torch.ops.aten.native_dropout(x, 0.3, True)
    assert mask.dtype == torch.bool and mask.shape == x.shape
    torch.testing.assert_close(out.cpu(), x.cpu() * mask.cpu() * (1 / 0.7), rtol=0, atol=0)
    g = sample((1000,), torch.float32, seed=3).to("axon")
    gi = torch.ops.aten.native_dropout_backward(g, mask, 1 / 0.7)
    torch.testing.assert_close(gi.cpu(), g.cpu() * mask.cpu() * (1 / 0.7), rtol=0, atol=0)
    assert torch_axon.fallback_stats() == {}


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool],
                         ids=str)
def test_dropout_backward_of_integer_and_bool_gradients_matches_cpu(dtype):
    # CPU promotes these to float32 (grad * mask * scale); exact, with values past float32's 2^24 for the wide types
    g = torch.Generator().manual_seed(5)
    hi = {torch.bool: 2, torch.int8: 127, torch.uint8: 255, torch.int16: 32767}.get(dtype, 2**31 - 1)
    grad = torch.randint(0 if dtype in (torch.bool, torch.uint8) else -hi, hi, (3, 67), generator=g).to(dtype)
    if dtype == torch.int64:
        grad[0, :5] = torch.tensor([2**40 + 1, -(2**53) - 7, 2**62, 0, -1])
    mask = torch.rand(3, 67, generator=g) > 0.4
    expected = torch.ops.aten.native_dropout_backward(grad, mask, 1 / 0.6)
    torch_axon.reset_fallback_stats()
    got = torch.ops.aten.native_dropout_backward(grad.to("axon"), mask.to("axon"), 1 / 0.6)
    assert torch_axon.fallback_stats() == {}
    assert got.dtype == expected.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)


def test_same_seed_gives_same_mask_and_next_call_a_new_one():
    x = torch.ones(4099, device="axon")
    torch.axon.manual_seed(7)
    a = F.dropout(x, 0.5).cpu()
    b = F.dropout(x, 0.5).cpu()
    torch.axon.manual_seed(7)
    c = F.dropout(x, 0.5).cpu()
    assert torch.equal(a, c)
    assert not torch.equal(a, b)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.75])
def test_kept_fraction_is_about_one_minus_p(p):
    n = 200_000
    torch.axon.manual_seed(11)
    _, mask = torch.ops.aten.native_dropout(torch.ones(n, device="axon"), p, True)
    kept = mask.sum().item() / n
    assert abs(kept - (1 - p)) < 6 * math.sqrt(p * (1 - p) / n)


def test_mask_is_the_bernoulli_draw_of_the_same_generator_state():
    # dropout and bernoulli_(1 - p) on a bool tensor read the same Philox lanes: one numbering for both.
    torch.axon.manual_seed(3)
    _, mask = torch.ops.aten.native_dropout(torch.ones(1001, device="axon"), 0.4, True)
    torch.axon.manual_seed(3)
    b = torch.empty(1001, dtype=torch.bool, device="axon").bernoulli_(0.6)
    assert torch.equal(mask.cpu(), b.cpu())


def test_p_zero_keeps_everything_and_p_one_drops_everything():
    x = sample((33, 7), torch.float32)
    x[0, 0] = float("nan")
    xd = x.to("axon")
    torch_axon.reset_fallback_stats()
    out0, m0 = torch.ops.aten.native_dropout(xd, 0.0, True)
    out1, m1 = torch.ops.aten.native_dropout(xd, 1.0, True)
    assert torch_axon.fallback_stats() == {}
    ref0, _ = torch.ops.aten.native_dropout(x, 0.0, True)
    ref1, _ = torch.ops.aten.native_dropout(x, 1.0, True)
    assert m0.all().item() and not m1.any().item()
    torch.testing.assert_close(out0.cpu(), ref0, rtol=0, atol=0, equal_nan=True)
    torch.testing.assert_close(out1.cpu(), ref1, rtol=0, atol=0, equal_nan=True)  # NaN * 0 stays NaN, as CPU


def test_eval_mode_is_identity_and_module_matches():
    x = sample((5, 6), torch.float32).to("axon")
    m = nn.Dropout(0.5).eval()
    torch_axon.reset_fallback_stats()
    assert torch.equal(m(x).cpu(), x.cpu())
    out, mask = torch.ops.aten.native_dropout(x, 0.5, False)
    assert torch.equal(out.cpu(), x.cpu()) and mask.all().item() and mask.dtype == torch.bool
    assert torch_axon.fallback_stats() == {}


def test_empty_input():
    out, mask = torch.ops.aten.native_dropout(torch.empty(0, 3, device="axon"), 0.5, True)
    assert out.shape == (0, 3) and mask.shape == (0, 3)


def test_strided_input_is_dropped_elementwise():
    x = sample((20, 30), torch.float32).to("axon").t()
    torch.axon.manual_seed(5)
    out, mask = torch.ops.aten.native_dropout(x, 0.25, True)
    torch.testing.assert_close(out.cpu(), x.cpu() * mask.cpu() * (1 / 0.75), rtol=0, atol=0)


def test_bad_p_raises():
    x = torch.ones(4, device="axon")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        torch.ops.aten.native_dropout(x, -0.1, True)


def test_integer_input_raises_as_cpu():
    with pytest.raises(RuntimeError) as cpu_err:
        torch.ops.aten.native_dropout(torch.ones(4, dtype=torch.int32), 0.5, True)
    with pytest.raises(RuntimeError) as dev_err:
        torch.ops.aten.native_dropout(torch.ones(4, dtype=torch.int32, device="axon"), 0.5, True)
    assert str(cpu_err.value).splitlines()[0] in str(dev_err.value)

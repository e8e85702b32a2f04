"""Native torch.cdist and F.pdist (libaxon/kernels/distance.c): forward and backward against PyTorch CPU for every
kind of p (0, fractional, 1, 2, inf, general), broadcast batch dimensions, the matrix-product form PyTorch takes for
p = 2 on larger inputs (which runs on axon's own ops), empty operands, and CPU's errors. No host fallback."""

import math

import pytest
import torch
import torch.nn.functional as F

import torch_axon

PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf]
# (rtol, atol): libaxon sums in float64 and rounds once; CPU sums in the dtype.
TOL = {torch.float32: (2e-5, 2e-5), torch.float64: (1e-11, 1e-11)}


def sample(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def run(fn, inputs, grad_seed=9):
    """fn on CPU and on axon, forward and backward with the same upstream gradient; asserts no fallback on axon."""
    results = []
    for device in ("cpu", "axon"):
        leaves = [x.detach().to(device).requires_grad_(True) for x in inputs]
        torch_axon.reset_fallback_stats()
        out = fn(*leaves)
        if out.numel():
            out.backward(sample(out.shape, out.dtype, grad_seed).to(device))
        results.append((out.detach().cpu(), [x.grad.cpu() if x.grad is not None else None for x in leaves]))
        if device == "axon":
            assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    return results


def assert_same(results, dtype):
    (want, want_grads), (got, got_grads) = results
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True)
    for g, w in zip(got_grads, want_grads):
        assert (g is None) == (w is None)
        if w is not None:
            torch.testing.assert_close(g, w, rtol=rtol * 10, atol=atol * 10, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("p", PS, ids=str)
@pytest.mark.parametrize("shapes", [((4, 7), (5, 7)), ((2, 1, 3, 9), (4, 6, 9)), ((3, 33), (30, 33))],
                         ids=["matrices", "broadcast-batch", "more-than-25-rows"])
def test_cdist_matches_cpu(dtype, p, shapes):
    x1, x2 = sample(shapes[0], dtype, 1), sample(shapes[1], dtype, 2)
    assert_same(run(lambda a, b: torch.cdist(a, b, p=p), [x1, x2]), dtype)


@pytest.mark.parametrize("mode", ["use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist",
                                  "use_mm_for_euclid_dist_if_necessary"])
def test_cdist_compute_modes_match_cpu(mode):
    x1, x2 = sample((2, 30, 8), torch.float64, 3), sample((2, 4, 8), torch.float64, 4)
    assert_same(run(lambda a, b: torch.cdist(a, b, compute_mode=mode), [x1, x2]), torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("p", PS, ids=str)
def test_pdist_matches_cpu(dtype, p):
    x = sample((9, 13), dtype, 5)
    x[6] = x[2]  # a zero distance: no gradient through it
    assert_same(run(lambda a: F.pdist(a, p=p), [x]), dtype)


def test_empty_and_degenerate_operands_match_cpu():
    for s1, s2 in [((0, 4), (3, 4)), ((3, 0), (2, 0)), ((2, 0, 5), (2, 3, 5))]:
        assert_same(run(lambda a, b: torch.cdist(a, b), [sample(s1, torch.float64, 1), sample(s2, torch.float64, 2)]),
                    torch.float64)
    for shape in [(1, 4), (0, 4), (5, 0)]:
        assert_same(run(lambda a: F.pdist(a), [sample(shape, torch.float64, 3)]), torch.float64)


def test_errors_are_cpus():
    a, b = torch.randn(3, 4, device="axon"), torch.randn(5, 4, device="axon")
    with pytest.raises(RuntimeError, match="cdist only supports non-negative p values"):
        torch.cdist(a, b, p=-1.0)
    with pytest.raises(RuntimeError, match="X1 and X2 must have the same number of columns"):
        torch.cdist(a, torch.randn(5, 3, device="axon"))
    with pytest.raises(RuntimeError, match="pdist only supports non-negative p values"):
        F.pdist(a, p=-2.0)
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors"):
        F.pdist(torch.randn(2, 3, 4, device="axon"))

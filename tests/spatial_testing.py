"""Helpers shared by the spatial op tests (test_pooling_ops.py, test_upsample_ops.py): their dtypes, smooth random
inputs, a per-dtype comparison with CPU, and forward + backward on CPU and on axon with the fallback counted."""

import torch

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
EXACT = {d: (0.0, 0.0) for d in DTYPES}


def sample(shape, dtype, seed=0):
    """Standard normal values drawn in float64 (so every dtype gets the same numbers), then rounded to dtype."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def close(result, expected, tol):
    """result (any device) against the CPU tensor expected, with tol[dtype] = (rtol, atol) for floats; integer
    results (pooling indices) must be equal."""
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape)
    rtol, atol = tol[expected.dtype] if expected.is_floating_point() else (0, 0)
    torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)


def run_both(fn, x, grad_seed=7):
    """fn(x) on CPU and on axon (a tensor or a tuple whose first item is differentiated), then backward with the
    same random gradient; returns [(outputs, grad, fallback stats)] for cpu and axon."""
    results = []
    for device in ("cpu", "axon"):
        leaf = x.detach().to(device).requires_grad_(True)
        torch_axon.reset_fallback_stats()
        out = fn(leaf)
        outs = out if isinstance(out, tuple) else (out,)
        outs[0].backward(sample(outs[0].shape, outs[0].dtype, seed=grad_seed).to(device))
        results.append(([o.detach() for o in outs], leaf.grad, torch_axon.fallback_stats()))
    return results


def compare_both(fn, x, tol, grad_tol):
    """fn's outputs and x's gradient on axon against CPU (tol and grad_tol by dtype), with no host fallback. Where
    CPU lacks a half-type kernel (avg_pool3d), the reference is CPU in float32, rounded to x's dtype."""
    try:
        (ref, ref_grad, _), (out, grad, stats) = run_both(fn, x)
    except NotImplementedError:
        (ref, ref_grad, _), (out, grad, stats) = run_both(lambda t: fn(t if t.device.type == "axon" else t.float()),
                                                          x)
        ref = [r.to(x.dtype) if r.is_floating_point() else r for r in ref]
        ref_grad = ref_grad.to(x.dtype)
    assert stats == {}, stats
    for o, r in zip(out, ref):
        close(o, r, tol)  # indices (int64) must be equal
    close(grad, ref_grad, grad_tol)

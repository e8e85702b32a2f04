"""Native im2col and col2im (libaxon's im2col kernel) through F.unfold and F.fold: patches of every dtype libaxon
has, equal to CPU's; fold's overlapping sums and both gradients against CPU per dtype; unbatched inputs; no host
fallback; PyTorch's own errors."""

import pytest
import torch
import torch.nn.functional as F

from axon_testing import native, same

GEOMETRIES = [  # (image shape, kernel_size, dilation, padding, stride)
    ((2, 3, 6, 7), (2, 3), 1, 0, 1),
    ((1, 2, 9, 9), 3, 1, 1, 2),
    ((2, 1, 10, 8), (2, 2), (2, 3), (1, 2), (1, 2)),
    ((3, 4, 4), (4, 4), 1, 0, 1),     # unbatched, one block
    ((1, 2, 3, 3), 1, 1, 2, (3, 2)),  # blocks that read only padding
]
# The dtypes PyTorch CPU unfolds (it has no integer im2col).
ALL_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.bool, torch.complex64,
              torch.complex128]
# fold sums up to kh * kw overlapping elements: CPU in the dtype, axon in float32 for the half types.
TOL = {torch.float32: (1e-6, 1e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1e-2, 2e-2),
       torch.float16: (2e-3, 2e-3)}


def image(shape, dtype, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=gen)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=gen).to(dtype)


def geometry_id(g):
    return "x".join(map(str, g[0])) + f"-k{g[1]}-d{g[2]}-p{g[3]}-s{g[4]}"


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=geometry_id)
def test_unfold_copies_cpus_patches_in_every_dtype(geometry, dtype):
    shape, k, d, p, s = geometry
    x = image(shape, dtype)
    got = native(lambda: F.unfold(x.to("axon"), k, dilation=d, padding=p, stride=s))
    same(got, F.unfold(x, k, dilation=d, padding=p, stride=s))


@pytest.mark.parametrize("dtype", list(TOL), ids=str)
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=geometry_id)
def test_fold_and_both_gradients_match_cpu(geometry, dtype):
    shape, k, d, p, s = geometry
    x = image(shape, dtype, seed=1)
    cols = F.unfold(x.float(), k, dilation=d, padding=p, stride=s)
    cols = (cols + torch.randn(cols.shape, generator=torch.Generator().manual_seed(2))).to(dtype)
    rtol, atol = TOL[dtype]
    for fn, arg in ((lambda c: F.fold(c, shape[-2:], k, dilation=d, padding=p, stride=s), cols),
                    (lambda a: F.unfold(a, k, dilation=d, padding=p, stride=s), x)):
        results = []
        for device in ("cpu", "axon"):
            leaf = arg.detach().to(device).requires_grad_(True)
            out = fn(leaf)
            out.backward(torch.ones_like(out) * 0.5)
            results.append((out.detach().cpu(), leaf.grad.cpu()))
        native(lambda: fn(arg.to("axon").requires_grad_(True)).sum().backward())
        (oc, gc), (oa, ga) = results
        torch.testing.assert_close(oa, oc, rtol=rtol, atol=atol)
        torch.testing.assert_close(ga, gc, rtol=rtol, atol=atol)


def test_bad_geometry_errors_name_the_problem():
    x = torch.randn(1, 2, 4, 4, device="axon")
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero"):
        F.unfold(x, (0, 2))
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        F.unfold(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="(?i)too small|calculated shape"):
        F.unfold(x, 7)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.unfold(torch.ones(1, 2, 4, 4, dtype=torch.int64, device="axon"), 2)
    with pytest.raises(RuntimeError, match="Expected size of input's dimension 1 to be divisible"):
        F.fold(torch.randn(1, 7, 9, device="axon"), (4, 4), 2)

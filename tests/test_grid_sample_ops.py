"""Native grid sampling (libaxon's grid_sample kernel) through F.grid_sample: bilinear, nearest and bicubic in 2d,
bilinear (trilinear) and nearest in 3d, zeros / border / reflection padding, align_corners both ways, forward and
the gradients of input and grid against PyTorch CPU with per-dtype tolerances; no host fallback; F.affine_grid's
spatial-transformer pattern; NaN coordinates; PyTorch's own errors."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon

# Outputs are sums of 4-16 products in float32 (float64 for float64), as CPU's; the grid's gradient sums over
# channels products of input values, grad_output and weight derivatives up to about 3 (bicubic) times the
# unnormalization factor (size / 2), so its absolute tolerance is larger. The half types compute in float32 and
# round once; PyTorch CPU's own half-type kernel rounds every intermediate, coordinates included, to the half type
# (bfloat16 picks other neighbours than float32: nearest values 3.2 apart, bilinear 0.06, on CASES_2D[0]), so
# their reference is CPU's float32 kernel on the same half-type inputs, rounded to the half type.
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-12, 1e-12), torch.bfloat16: (2e-2, 3e-2),
       torch.float16: (3e-3, 3e-3)}
GRAD_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-10, 1e-10), torch.bfloat16: (5e-2, 2e-1),
            torch.float16: (1e-2, 3e-2)}
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


def run(fn, x, grid, device, grad_seed=3):
    x = x.detach().to(device).requires_grad_(True)
    grid = grid.detach().to(device).requires_grad_(True)
    torch_axon.reset_fallback_stats()
    out = fn(x, grid)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(grad_seed)).to(out.dtype).to(device)
    out.backward(g)
    if device == "axon":
        torch.axon.synchronize()
    return out.detach().cpu(), x.grad.cpu(), grid.grad.cpu(), torch_axon.fallback_stats()


def compare(fn, x, grid):
    dtype = x.dtype
    if dtype in (torch.bfloat16, torch.float16):
        out_c, gx_c, gg_c = (t.to(dtype) for t in run(fn, x.float(), grid.float(), "cpu")[:3])
    else:
        out_c, gx_c, gg_c, _ = run(fn, x, grid, "cpu")
    out_a, gx_a, gg_a, stats = run(fn, x, grid, "axon")
    assert stats == {}, stats
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(out_a, out_c, rtol=rtol, atol=atol, equal_nan=True)
    rtol, atol = GRAD_TOL[dtype]
    torch.testing.assert_close(gx_a, gx_c, rtol=rtol, atol=atol)
    scale = max(x.shape[2:])   # the grid's gradient carries the unnormalization factor
    torch.testing.assert_close(gg_a, gg_c, rtol=rtol, atol=atol * scale)


def inputs(shape, out_spatial, dtype, seed=0, spread=1.2):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=gen).to(dtype)
    ns = len(shape) - 2
    grid = ((torch.rand((shape[0], *out_spatial, ns), generator=gen) * 2 - 1) * spread).to(dtype)
    return x, grid


CASES_2D = [((2, 3, 7, 9), (5, 6)), ((1, 4, 16, 12), (20, 17)), ((3, 1, 1, 5), (4, 4)), ((2, 2, 6, 5), (1, 70))]
CASES_3D = [((2, 3, 4, 5, 6), (3, 4, 5)), ((1, 2, 1, 3, 7), (2, 6, 3))]


def case_id(c):
    return "x".join(map(str, c[0])) + "-" + "x".join(map(str, c[1]))


# The half types add only their rounding to the float32 path: one shape each keeps the run short.
CASES_2D_BY_DTYPE = [(c, d) for c in CASES_2D for d in (torch.float32, torch.float64)] + \
    [(CASES_2D[0], d) for d in (torch.bfloat16, torch.float16)]


@pytest.mark.parametrize("align_corners", [False, True], ids=["edges", "align_corners"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("case,dtype", CASES_2D_BY_DTYPE, ids=lambda v: case_id(v) if isinstance(v, tuple) else str(v))
def test_grid_sample_2d_matches_cpu_forward_and_backward(case, dtype, mode, padding, align_corners):
    x, grid = inputs(*case, dtype)
    compare(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align_corners), x, grid)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("align_corners", [False, True], ids=["edges", "align_corners"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("case", CASES_3D, ids=case_id)
def test_grid_sample_3d_matches_cpu_forward_and_backward(case, mode, padding, align_corners, dtype):
    x, grid = inputs(*case, dtype)
    compare(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=align_corners), x, grid)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_3d_grids_mostly_outside_the_input_match_cpu(dtype):
    # Blocks with few taps inside go through libaxon's list of those taps; some blocks here have none, some a few,
    # some (the small spread) all.
    for spread, seed in ((4.0, 1), (12.0, 2), (1.5, 3)):
        x, grid = inputs((2, 3, 5, 6, 7), (4, 9, 10), dtype, seed=seed, spread=spread)
        for padding in ("zeros", "border"):
            compare(lambda a, g: F.grid_sample(a, g, padding_mode=padding, align_corners=False), x, grid)


def test_far_out_of_range_grids_reflect_and_clip_like_cpu():
    # Coordinates several spans outside the input: reflection folds them back more than once.
    x, grid = inputs((2, 3, 6, 7), (5, 5), torch.float64, seed=4, spread=7.0)
    for padding in ("zeros", "border", "reflection"):
        for mode in ("bilinear", "nearest", "bicubic"):
            compare(lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding, align_corners=False), x, grid)


def test_spatial_transformer_with_affine_grid_trains_like_cpu():
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, 16, 16, generator=gen)
    theta = torch.tensor([[1.0, 0.1, 0.05], [-0.1, 0.9, 0.0]]).repeat(4, 1, 1)
    theta = theta + torch.randn(4, 2, 3, generator=gen) * 0.1
    results = []
    for device in ("cpu", "axon"):
        t = theta.detach().to(device).requires_grad_(True)
        a = x.detach().to(device).requires_grad_(True)
        torch_axon.reset_fallback_stats()
        grid = F.affine_grid(t, [4, 3, 12, 12], align_corners=False)
        out = F.grid_sample(a, grid, align_corners=False)
        out.square().sum().backward()
        results.append((out.detach().cpu(), t.grad.cpu(), a.grad.cpu(), torch_axon.fallback_stats()))
    (oc, tc, ac, _), (oa, ta, aa, stats) = results
    assert stats == {}, stats
    torch.testing.assert_close(oa, oc, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ta, tc, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(aa, ac, rtol=1e-5, atol=1e-5)


def test_nan_coordinates_give_cpus_values():
    x = torch.arange(12.0).reshape(1, 1, 3, 4)
    grid = torch.tensor([[[[float("nan"), 0.0], [0.5, float("inf")], [1e30, -1e30], [0.25, -0.5]]]])
    for padding in ("zeros", "border", "reflection"):
        for mode in ("bilinear", "nearest", "bicubic"):
            want = F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=False)
            got = F.grid_sample(x.to("axon"), grid.to("axon"), mode=mode, padding_mode=padding, align_corners=False)
            torch.testing.assert_close(got.cpu(), want, equal_nan=True, msg=f"{mode} {padding}")


def test_nan_coordinates_give_cpus_values_in_3d():
    """PyTorch's 3-d CPU kernel is scalar code with other rules than its 2-d vector kernel: a NaN or infinite
    coordinate adds nothing under zeros padding (not NaN), and border and reflection clip a NaN to the far side."""
    x = torch.arange(60.0).reshape(1, 1, 3, 4, 5)
    nan, inf = float("nan"), float("inf")
    grid = torch.tensor([[nan, 0.1, 0.2], [0.1, nan, 0.2], [0.1, 0.2, nan], [inf, 0.0, 0.5], [-inf, 0.3, 0.1],
                         [0.5, 0.2, inf], [0.25, -0.5, 0.75], [1e6, -0.2, 0.1], [-3.5, 2.25, 7.0]]).view(1, 1, 1, 9, 3)
    for dtype in (torch.float32, torch.float64):
        for padding in ("zeros", "border", "reflection"):
            for mode in ("bilinear", "nearest"):
                for align in (False, True):
                    want = F.grid_sample(x.to(dtype), grid.to(dtype), mode=mode, padding_mode=padding,
                                         align_corners=align)
                    got = F.grid_sample(x.to(dtype).to("axon"), grid.to(dtype).to("axon"), mode=mode,
                                        padding_mode=padding, align_corners=align)
                    torch.testing.assert_close(got.cpu(), want, equal_nan=True, msg=f"{mode} {padding} {align}")
    # Left out: reflection of coordinates beyond about 2^24 in float32: CPU reflects with fmod and takes the parity
    # from an int conversion that overflows; libaxon's vector reflection gives another (equally arbitrary) point.


def test_empty_batch_and_grid_give_empty_results():
    x = torch.randn(0, 3, 4, 4, device="axon", requires_grad=True)
    grid = torch.zeros(0, 2, 2, 2, device="axon", requires_grad=True)
    out = F.grid_sample(x, grid, align_corners=False)
    assert out.shape == (0, 3, 2, 2)
    out.sum().backward()
    assert x.grad.shape == x.shape and grid.grad.shape == grid.shape
    y = torch.randn(2, 3, 4, 4, device="axon", requires_grad=True)
    empty_grid = torch.zeros(2, 0, 5, 2, device="axon", requires_grad=True)
    out = F.grid_sample(y, empty_grid, align_corners=True)
    assert out.shape == (2, 3, 0, 5)
    out.sum().backward()
    assert torch.equal(y.grad.cpu(), torch.zeros(2, 3, 4, 4))


def test_non_contiguous_inputs_match_cpu():
    x, grid = inputs((2, 5, 8, 9), (6, 7), torch.float32, seed=2)
    compare(lambda a, g: F.grid_sample(a.transpose(2, 3), g.transpose(1, 2), align_corners=True), x, grid)


def test_bad_input_errors_name_the_problem():
    x = torch.randn(2, 3, 4, 4, device="axon")
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(torch.randn(1, 1, 2, 2, 2, device="axon"), torch.zeros(1, 2, 2, 2, 3, device="axon"),
                      mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match="expected grid to have size 2 in last dimension"):
        F.grid_sample(x, torch.zeros(2, 3, 3, 3, device="axon"), align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(x, torch.zeros(3, 3, 3, 2, device="axon"), align_corners=False)
    with pytest.raises(RuntimeError, match="non-empty spatial dimensions"):
        F.grid_sample(torch.randn(2, 3, 0, 4, device="axon"), torch.zeros(2, 3, 3, 2, device="axon"),
                      align_corners=False)
    with pytest.raises(RuntimeError, match="same device"):
        F.grid_sample(x, torch.zeros(2, 3, 3, 2), align_corners=False)

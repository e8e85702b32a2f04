"""Native upsampling (libaxon's upsample kernels) through F.interpolate: nearest and nearest-exact (1d/2d/3d), linear,
bilinear, bicubic and trilinear with align_corners both ways, by size and by scale factor, and antialiased bilinear
and bicubic, forward and backward against PyTorch CPU with per-dtype tolerances; no host fallback for the ops bound;
PyTorch's own errors."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon
from spatial_testing import DTYPES, EXACT, close, compare_both, sample

# Nearest modes copy elements: exact (their gradients are sums, see GRAD_TOL). Interpolating modes sum in float64
# with PyTorch's float32 weights and round once; CPU sums in float32: about one rounding of the output dtype, plus,
# for float32, an absolute term for bicubic's 16-term sums with negative weights, where CPU's float32 sum is off by
# up to about 1.5e-6 for inputs of size 3 (measured against float64) and the float32 weights by about as much.
TOL = {torch.float32: (1e-5, 5e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1e-2, 2e-2),
       torch.float16: (2e-3, 2e-3)}
GRAD_TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-12, 1e-12), torch.bfloat16: (2e-2, 3e-2),
            torch.float16: (3e-3, 3e-3)}


def check(fn, x, tol=TOL, grad_tol=GRAD_TOL):
    compare_both(fn, x, tol, grad_tol)


NEAREST_CASES = [  # (shape, size, scale_factor)
    ((2, 3, 7), 15, None), ((2, 3, 16), None, 0.7), ((2, 3, 5), None, 2.0), ((2, 3, 37), 101, None),
    ((2, 3, 5, 6), (11, 13), None), ((1, 2, 9, 7), None, (1.7, 0.6)), ((1, 2, 4, 4), None, 3.0),
    ((1, 2, 33, 20), (17, 41), None),
    ((1, 2, 3, 4, 5), (6, 5, 9), None), ((1, 2, 4, 3, 5), None, (1.5, 2.0, 0.8)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", NEAREST_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[1]}-{c[2]}")
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_nearest_modes_pick_cpus_elements_and_backward_matches(case, mode, dtype):
    shape, size, scale = case
    check(lambda x: F.interpolate(x, size=size, scale_factor=scale, mode=mode), sample(shape, dtype),
          tol=EXACT)


INTERP_CASES = [  # (mode, shape, size, scale_factor, recompute_scale_factor)
    ("linear", (2, 3, 7), 15, None, None), ("linear", (2, 3, 16), None, 0.7, None),
    ("linear", (2, 3, 9), None, 2.5, True), ("linear", (2, 3, 9), 9, None, None),
    ("bilinear", (2, 3, 5, 6), (11, 13), None, None), ("bilinear", (1, 2, 9, 7), None, (1.7, 0.6), None),
    ("bilinear", (1, 2, 8, 8), None, 2.0, None), ("bilinear", (1, 3, 20, 17), (7, 5), None, None),
    ("bilinear", (1, 2, 9, 7), None, 1.3, True),
    ("bicubic", (2, 3, 5, 6), (11, 13), None, None), ("bicubic", (1, 2, 9, 7), None, (1.7, 0.6), None),
    ("bicubic", (1, 2, 16, 12), (7, 5), None, None),
    ("trilinear", (1, 2, 3, 4, 5), (6, 5, 9), None, None), ("trilinear", (1, 2, 4, 3, 5), None, (1.5, 2.0, 0.8), None),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", INTERP_CASES, ids=lambda c: c[0] + "-" + "x".join(map(str, c[1])) + f"-{c[2]}-{c[3]}")
@pytest.mark.parametrize("align_corners", [False, True], ids=["half_pixel", "align_corners"])
def test_interpolating_modes_match_cpu_forward_and_backward(case, align_corners, dtype):
    mode, shape, size, scale, recompute = case
    fn = lambda x: F.interpolate(x, size=size, scale_factor=scale, mode=mode, align_corners=align_corners,  # noqa
                                 recompute_scale_factor=recompute)
    check(fn, sample(shape, dtype))


def test_strided_input_and_out_match_cpu():
    x = sample((2, 3, 6, 8), torch.float32)
    check(lambda x: F.interpolate(x.transpose(2, 3), scale_factor=2, mode="bilinear"), x)
    check(lambda x: F.interpolate(x.contiguous(memory_format=torch.channels_last), size=(9, 5)), x, tol=EXACT)
    out = torch.empty(2, 3, 12, 32, device="axon")[..., ::2]
    torch_axon.reset_fallback_stats()
    torch.ops.aten.upsample_bilinear2d.out(x.to("axon"), [12, 16], False, None, None, out=out)
    assert torch_axon.fallback_stats() == {}
    close(out, F.interpolate(x, size=(12, 16), mode="bilinear"), TOL)


def test_upsample_module_train_step_is_native():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Upsample(scale_factor=2, mode="bilinear"), torch.nn.Upsample(size=(20, 21)),
                                torch.nn.Flatten(), torch.nn.Linear(3 * 20 * 21, 2))
    x = torch.randn(4, 3, 5, 6)
    ref = model(x).square().sum()
    ref.backward()
    ref_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    model.to("axon")
    torch_axon.reset_fallback_stats()
    out = model(x.to("axon")).square().sum()
    out.backward()
    assert not any("upsample" in k for k in torch_axon.fallback_stats()), torch_axon.fallback_stats()
    torch.testing.assert_close(out.cpu(), ref, rtol=1e-5, atol=1e-5)
    for p, rg in zip(model.parameters(), ref_grads):
        torch.testing.assert_close(p.grad.cpu(), rg, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", NEAREST_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[1]}-{c[2]}")
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
def test_uint8_images_take_the_nearest_modes_natively(case, mode):
    shape, size, scale = case
    x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(1))
    ref = F.interpolate(x, size=size, scale_factor=scale, mode=mode)
    torch_axon.reset_fallback_stats()
    out = F.interpolate(x.to("axon"), size=size, scale_factor=scale, mode=mode)
    assert torch_axon.fallback_stats() == {}
    close(out, ref, EXACT)


def test_uint8_bilinear_uses_the_host_fallback_like_cpu():
    # CPU's uint8 bilinear rounds fixed-point weights of its own; libaxon's interpolating modes are float-only
    x = torch.randint(0, 255, (1, 3, 5, 7), dtype=torch.uint8)
    ref = F.interpolate(x, scale_factor=2, mode="bilinear")
    torch_axon.reset_fallback_stats()
    out = F.interpolate(x.to("axon"), scale_factor=2, mode="bilinear")
    assert torch_axon.fallback_stats() == {"aten::upsample_bilinear2d.out": 1}
    close(out, ref, EXACT)


# Antialiased bilinear and bicubic (F.interpolate(..., antialias=True), torchvision's Resize) on libaxon's
# separable kernels: float32 and float64. PyTorch's weights and taps, summed in the dtype in PyTorch's order; CPU's
# build rounds some products and sums differently (fused multiply-adds), a few ulps of the output.
AA_TOL = {torch.float32: (1e-5, 2e-6), torch.float64: (1e-12, 1e-13)}
AA_CASES = [  # (shape, size, scale_factor)
    ((2, 3, 32, 32), (8, 8), None), ((1, 3, 17, 23), (5, 9), None), ((1, 2, 10, 10), (31, 7), None),
    ((2, 1, 64, 48), (64, 13), None), ((1, 2, 33, 20), (7, 20), None), ((1, 1, 5, 5), (1, 1), None),
    ((1, 2, 24, 16), None, (0.25, 0.5)), ((1, 2, 9, 9), None, 0.37),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", AA_CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-{c[1]}-{c[2]}")
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align_corners", [False, True], ids=["half_pixel", "align_corners"])
def test_antialiased_resizing_matches_cpu_forward_and_backward(case, mode, align_corners, dtype):
    shape, size, scale = case
    fn = lambda x: F.interpolate(x, size=size, scale_factor=scale, mode=mode, align_corners=align_corners,  # noqa
                                 antialias=True)
    check(fn, sample(shape, dtype), tol=AA_TOL, grad_tol=AA_TOL)


def test_antialiased_resizing_of_a_channels_last_image_and_into_a_strided_out():
    x = sample((2, 3, 40, 30), torch.float32)
    check(lambda x: F.interpolate(x.contiguous(memory_format=torch.channels_last), size=(9, 11), mode="bicubic",
                                  antialias=True), x, tol=AA_TOL, grad_tol=AA_TOL)
    out = torch.empty(2, 3, 10, 22, device="axon")[..., ::2]
    torch_axon.reset_fallback_stats()
    torch.ops.aten._upsample_bilinear2d_aa.out(x.to("axon"), [10, 11], False, None, None, out=out)
    assert torch_axon.fallback_stats() == {}
    close(out, F.interpolate(x, size=(10, 11), mode="bilinear", antialias=True), AA_TOL)


def test_antialiased_uint8_images_and_huge_downscales_use_the_host_fallback_like_cpu():
    # CPU's uint8 path rounds fixed-point weights of its own; a window of more than 2048 taps is not libaxon's
    x = torch.randint(0, 255, (1, 3, 20, 17), dtype=torch.uint8, generator=torch.Generator().manual_seed(2))
    torch_axon.reset_fallback_stats()
    close(F.interpolate(x.to("axon"), size=(7, 5), mode="bilinear", antialias=True),
          F.interpolate(x, size=(7, 5), mode="bilinear", antialias=True), EXACT)
    assert torch_axon.fallback_stats() == {"aten::_upsample_bilinear2d_aa.out": 1}
    wide = sample((1, 1, 2, 5000), torch.float32)
    torch_axon.reset_fallback_stats()
    close(F.interpolate(wide.to("axon"), size=(2, 2), mode="bicubic", antialias=True),
          F.interpolate(wide, size=(2, 2), mode="bicubic", antialias=True), AA_TOL)
    assert torch_axon.fallback_stats() == {"aten::_upsample_bicubic2d_aa.out": 1}


def raises_like_cpu(fn, x, match):
    with pytest.raises(RuntimeError, match=match):
        fn(x)
    torch_axon.reset_fallback_stats()
    with pytest.raises(RuntimeError, match=match):
        fn(x.to("axon"))
    assert torch_axon.fallback_stats() == {}


def test_bad_arguments_raise_pytorchs_errors():
    x = sample((1, 2, 4, 4), torch.float32)
    raises_like_cpu(lambda x: torch.ops.aten.upsample_bilinear2d(x, [0, 4], False), x,
                    "Input and output sizes should be greater than 0")
    raises_like_cpu(lambda x: torch.ops.aten.upsample_nearest2d(x, [3]), x, "output_size")
    raises_like_cpu(lambda x: torch.ops.aten.upsample_nearest1d(x, [8]), x, "input_size|3D")
    raises_like_cpu(lambda x: torch.ops.aten.upsample_nearest2d(x, [4, 4]), sample((1, 2, 0, 4), torch.float32),
                    "greater than 0")


def test_backward_with_a_wrong_grad_output_shape_is_checked():
    g = torch.zeros(1, 2, 7, 8, device="axon")  # the output is 8x8
    out = torch.empty(0, device="axon")
    with pytest.raises(RuntimeError, match="grad_output"):
        torch.ops.aten.upsample_bilinear2d_backward(g, [8, 8], [1, 2, 4, 4], False)
    with pytest.raises(RuntimeError, match="upsample_bilinear2d_backward: Expected grad_output to have the same shape"):
        torch.ops.aten.upsample_bilinear2d_backward.grad_input(g, [8, 8], [1, 2, 4, 4], False, grad_input=out)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_empty_batch_gives_an_empty_result(dtype):
    x = torch.empty(0, 3, 4, 4, dtype=dtype, device="axon")
    torch_axon.reset_fallback_stats()
    assert F.interpolate(x, scale_factor=2, mode="bilinear").shape == (0, 3, 8, 8)
    assert torch_axon.fallback_stats() == {}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("width,size", [(4000, (3, 100)), (700, (9, 1400))], ids=["wide-down", "wide-up"])
def test_half_bilinear_rows_wide_and_narrow_spans_match_cpu(width, size, dtype):
    # 16-bit bilinear rows widen the source columns a chunk of 256 outputs reads (at most 1024 of them); a
    # downsampling chunk that reads more keeps the per-element loop. Both, forward and backward.
    check(lambda x: F.interpolate(x, size=size, mode="bilinear"), sample((1, 2, 5, width), dtype))

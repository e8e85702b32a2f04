"""Native upsampling (libaxon's upsample kernel) through F.interpolate: nearest and nearest-exact (1d/2d/3d), linear,
bilinear, bicubic and trilinear with align_corners both ways, by size and by scale factor, forward and backward
against PyTorch CPU with per-dtype tolerances; no host fallback for the ops bound; PyTorch's own errors."""

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

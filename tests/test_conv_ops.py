"""Native convolutions (libaxon's conv kernels through convolution_overrideable and its backward): conv1d/2d/3d and
conv_transpose1d/2d/3d with stride, padding (and 'same'), dilation, groups, output_padding, with and without bias,
channels_last inputs; forward and the three gradients against PyTorch CPU in float32, float64, bfloat16 and float16;
no host fallback; bad input gives PyTorch's errors.

Reference: the CPU op in the same dtype for float32/float64. For bfloat16/float16 the CPU op runs in float32 on the
same (rounded) inputs and gradient, then its results are rounded to the dtype: libaxon computes half types in float32
and rounds once, so the two differ by about one rounding of the dtype (TOL), more where a result cancels to near
zero relative to its terms (the absolute part)."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
HALF = (torch.bfloat16, torch.float16)
# (rtol, atol); values are O(1) and results (weight gradients above all) are sums of up to ~1000 such products, whose
# rounding errors grow with the sum of |terms|, hence the absolute parts.
TOL = {torch.float32: (1e-5, 1e-4), torch.float64: (1e-12, 1e-11), torch.bfloat16: (1.6e-2, 3e-2),
       torch.float16: (2e-3, 4e-3)}
CONV_OPS = {"aten::convolution", "aten::convolution_backward"}


def sample(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


def close(result, expected):
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape,
                                                                                expected.shape)
    rtol, atol = TOL[expected.dtype]
    torch.testing.assert_close(result, expected, rtol=rtol, atol=atol)


def check(fn, inputs, dtype, memory_format=None):
    """fn(*inputs) and its backward for a random gradient, on CPU and on axon; asserts equal results and no
    fallback. inputs are CPU tensors of dtype."""
    ref_dtype = torch.float32 if dtype in HALF else dtype
    cpu = [t.detach().to(ref_dtype).requires_grad_() for t in inputs]
    ref = fn(*cpu)
    grad = sample(ref.shape, dtype, seed=7)
    ref.backward(grad.to(ref_dtype))

    leaves = []
    for i, t in enumerate(inputs):
        a = t.detach().to("axon")
        if memory_format is not None and i == 0:
            a = a.contiguous(memory_format=memory_format)
        leaves.append(a.requires_grad_())
    torch_axon.reset_fallback_stats()
    out = fn(*leaves)
    out.backward(grad.to("axon"))
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    close(out.detach(), ref.detach().to(dtype))
    for a, c in zip(leaves, cpu):
        close(a.grad, c.grad.to(dtype))


# (id, functional, input shape, weight shape, bias, kwargs)
CASES = [
    ("conv1d_groups_stride", F.conv1d, (2, 4, 11), (6, 2, 3), True, dict(stride=2, padding=1, groups=2)),
    ("conv1d_dilation", F.conv1d, (2, 3, 10), (5, 3, 3), False, dict(padding=2, dilation=2)),
    ("conv2d_padding", F.conv2d, (2, 3, 9, 8), (4, 3, 3, 3), True, dict(padding=1)),
    ("conv2d_asymmetric", F.conv2d, (2, 3, 11, 10), (4, 3, 3, 2), False,
     dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    ("conv2d_depthwise", F.conv2d, (2, 4, 7, 7), (8, 1, 3, 3), True, dict(padding=1, groups=4)),
    ("conv2d_1x1", F.conv2d, (3, 8, 5, 5), (4, 8, 1, 1), True, {}),
    ("conv2d_larger", F.conv2d, (2, 16, 24, 24), (32, 16, 3, 3), True, dict(padding=1)),
    ("conv3d_stride", F.conv3d, (1, 2, 5, 6, 4), (3, 2, 3, 2, 3), True, dict(stride=(1, 2, 1), padding=1)),
    ("conv3d_groups_dilation", F.conv3d, (2, 4, 6, 5, 5), (4, 2, 2, 2, 2), False, dict(groups=2, dilation=2)),
    ("conv_transpose1d", F.conv_transpose1d, (2, 4, 7), (4, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1)),
    ("conv_transpose2d_groups", F.conv_transpose2d, (2, 4, 5, 4), (4, 3, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1, groups=2)),
    ("conv_transpose2d_dilation", F.conv_transpose2d, (2, 3, 4, 5), (3, 2, 3, 3), False,
     dict(dilation=2, output_padding=1)),
    ("conv_transpose3d", F.conv_transpose3d, (1, 2, 3, 4, 3), (2, 3, 2, 3, 2), True, dict(stride=2)),
    # One input channel per output channel: libaxon's direct depthwise loops (conv_depthwise.c), with rows longer
    # than its eight-vector blocks, strides and dilations that split the padded plane into phases, padding past the
    # kernel's reach, a 7x7 kernel on small planes, 1-D and 3-D, a single input channel, and transposed.
    ("depthwise2d_long_rows", F.conv2d, (2, 3, 9, 150), (3, 1, 3, 3), True, dict(padding=1, groups=3)),
    ("depthwise2d_stride_dilation", F.conv2d, (2, 4, 13, 17), (8, 1, 3, 4), True,
     dict(stride=(2, 3), padding=(1, 2), dilation=(1, 2), groups=4)),
    ("depthwise2d_wide_padding", F.conv2d, (1, 2, 4, 5), (2, 1, 2, 3), False, dict(padding=(3, 4), groups=2)),
    ("depthwise2d_7x7", F.conv2d, (2, 6, 14, 14), (6, 1, 7, 7), True, dict(padding=3, groups=6)),
    ("depthwise1d", F.conv1d, (3, 5, 40), (5, 1, 5), True, dict(padding=2, dilation=2, stride=2, groups=5)),
    ("depthwise3d", F.conv3d, (1, 3, 5, 6, 7), (6, 1, 3, 3, 3), True, dict(padding=1, stride=(2, 1, 1), groups=3)),
    ("one_input_channel", F.conv2d, (2, 1, 12, 20), (5, 1, 3, 3), True, dict(padding=1)),
    ("depthwise_transpose2d", F.conv_transpose2d, (2, 4, 6, 9), (4, 1, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1, groups=4)),
    # float32 runs these on oneDNN's direct kernels (libaxon/kernels/conv_onednn.c), the images split over the pool
    # unevenly (3 and 5 images on 2 threads: two primitives, weight gradients summed over participants); a stride
    # that leaves the last padding column unread (oneDNN's right padding is then smaller than the left). Input
    # gradients take oneDNN from 16 input channels per group, fewer (the first case's 3) stay on the columns. One
    # image on 2 threads splits channels instead: the forward's and the weight gradient's 40 output channels (32 and
    # 8), the input gradient's 48 input channels (32 and 16), a transposed forward's 40 (its bias added per slice).
    ("onednn_conv2d_stride2_five_images", F.conv2d, (5, 16, 10, 10), (16, 16, 3, 3), True, dict(stride=2, padding=1)),
    ("onednn_conv2d_few_channels", F.conv2d, (3, 3, 17, 17), (16, 3, 7, 7), True, dict(stride=2, padding=3)),
    ("onednn_conv2d_groups_dilation", F.conv2d, (3, 32, 12, 12), (12, 16, 3, 3), True,
     dict(padding=2, dilation=2, groups=2)),
    ("onednn_conv1d", F.conv1d, (3, 16, 33), (24, 16, 5), True, dict(padding=2)),
    ("onednn_conv3d", F.conv3d, (3, 16, 5, 6, 7), (8, 16, 3, 3, 3), True, dict(padding=1)),
    ("onednn_one_image_channel_slices", F.conv2d, (1, 16, 9, 9), (40, 16, 3, 3), True, dict(padding=1)),
    ("onednn_one_image_input_slices", F.conv2d, (1, 48, 7, 7), (16, 48, 3, 3), True, dict(padding=1)),
    ("onednn_one_image_transpose", F.conv_transpose2d, (1, 16, 5, 5), (16, 40, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1)),
    ("onednn_conv_transpose2d", F.conv_transpose2d, (3, 8, 6, 6), (8, 16, 3, 3), True,
     dict(stride=2, padding=1, output_padding=1)),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_convolution_forward_and_backward_match_cpu(case, dtype):
    _, f, xs, ws, bias, kw = case
    inputs = [sample(xs, dtype), sample(ws, dtype, seed=1)]
    if bias:
        out_channels = ws[1] * kw.get("groups", 1) if f in (F.conv_transpose1d, F.conv_transpose2d,
                                                             F.conv_transpose3d) else ws[0]
        inputs.append(sample((out_channels,), dtype, seed=2))
    check(lambda x, w, *b: f(x, w, *b, **kw), inputs, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("f,xs,ws,kw", [
    (F.conv1d, (2, 3, 10), (4, 3, 4), dict(padding="same")),
    (F.conv2d, (2, 3, 8, 9), (4, 3, 4, 3), dict(padding="same", dilation=2)),
    (F.conv2d, (2, 3, 8, 9), (4, 3, 3, 3), dict(padding="valid")),
], ids=["conv1d_same_even_kernel", "conv2d_same_dilated", "conv2d_valid"])
def test_string_padding_matches_cpu(f, xs, ws, kw, dtype):
    check(lambda x, w: f(x, w, **kw), [sample(xs, dtype), sample(ws, dtype, seed=1)], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_channels_last_input_matches_cpu(dtype):
    inputs = [sample((2, 5, 7, 6), dtype), sample((4, 5, 3, 3), dtype, seed=1), sample((4,), dtype, seed=2)]
    check(lambda x, w, b: F.conv2d(x, w, b, padding=1, stride=2), inputs, dtype,
          memory_format=torch.channels_last)


CL_CASES = [c for c in CASES if len(c[2]) in (4, 5)]


def layouts(*tensors, fmt):
    """(contiguous, contiguous in fmt) of each tensor: the layout PyTorch reports, as a test can compare it."""
    return [(t.is_contiguous(), t.is_contiguous(memory_format=fmt)) for t in tensors]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CL_CASES, ids=[c[0] for c in CL_CASES])
def test_channels_last_images_and_weights_match_cpu(case, dtype):
    """As `model.to(memory_format=torch.channels_last)` leaves a convolution: image and weight channels-last. libaxon
    runs oneDNN on that layout (float32, bfloat16 forwards) or on channels-first copies; values and the layouts of
    the output and the gradients must be CPU's."""
    _, f, xs, ws, bias, kw = case
    fmt = torch.channels_last if len(xs) == 4 else torch.channels_last_3d
    transposed = f in (F.conv_transpose2d, F.conv_transpose3d)
    inputs = [sample(xs, dtype), sample(ws, dtype, seed=1)]
    if bias:
        inputs.append(sample((ws[1] * kw.get("groups", 1) if transposed else ws[0],), dtype, seed=2))
    ref_dtype = torch.float32 if dtype in HALF else dtype
    results = []
    for device, dt in (("cpu", ref_dtype), ("axon", dtype)):
        leaves = [t.detach().to(device, dt).contiguous(memory_format=fmt if i < 2 else torch.contiguous_format)
                  .requires_grad_() for i, t in enumerate(inputs)]
        torch_axon.reset_fallback_stats()
        out = f(*leaves, **kw)
        out.backward(sample(out.shape, dtype, seed=7).to(device, dt))
        assert device == "cpu" or torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
        results.append((out, leaves, layouts(out, leaves[0].grad, leaves[1].grad, fmt=fmt)))
    (ref, ref_leaves, ref_layouts), (out, leaves, got_layouts) = results
    if len(xs) == 5:
        # CPU's 3-D output layout follows the kernel it picks (slow_conv3d's is contiguous, oneDNN's channels-last);
        # axon's follows the operands, as CPU's 2-D convolutions do. The gradients follow their tensors either way.
        got_layouts, ref_layouts = got_layouts[1:], ref_layouts[1:]
    assert got_layouts == ref_layouts
    close(out.detach(), ref.detach().to(dtype))
    for a, c in zip(leaves, ref_leaves):
        close(a.grad, c.grad.to(dtype))


def test_channels_last_3d_input_matches_cpu():
    inputs = [sample((2, 3, 4, 5, 6), torch.float32), sample((2, 3, 2, 2, 2), torch.float32, seed=1)]
    check(lambda x, w: F.conv3d(x, w, padding=1), inputs, torch.float32, memory_format=torch.channels_last_3d)


def test_nn_modules_train_like_cpu():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(8, 4, 3, stride=2, groups=4),
                                torch.nn.ConvTranspose2d(4, 2, 2, stride=2))
    x = sample((2, 3, 10, 10), torch.float32)
    params = [p.detach() for p in model.parameters()]
    check(lambda x, *ps: torch.func.functional_call(model, dict(zip(dict(model.named_parameters()), ps)), (x,)),
          [x] + params, torch.float32)


def test_only_input_gradient_is_computed_when_weight_is_frozen():
    x, w = sample((2, 3, 6, 6), torch.float32), sample((4, 3, 3, 3), torch.float32, seed=1)
    xa = x.to("axon").requires_grad_()
    torch_axon.reset_fallback_stats()
    F.conv2d(xa, w.to("axon")).sum().backward()
    assert torch_axon.fallback_stats() == {}
    xc = x.clone().requires_grad_()
    F.conv2d(xc, w).sum().backward()
    close(xa.grad, xc.grad)


def test_complex_convolution_runs_as_native_real_convolutions():
    x = torch.complex(sample((2, 3, 6, 6), torch.float32), sample((2, 3, 6, 6), torch.float32, seed=3))
    w = torch.complex(sample((4, 3, 3, 3), torch.float32, seed=1), sample((4, 3, 3, 3), torch.float32, seed=4))
    torch_axon.reset_fallback_stats()
    out = F.conv2d(x.to("axon"), w.to("axon"), padding=1)
    assert not CONV_OPS & set(torch_axon.fallback_stats())
    torch.testing.assert_close(out.cpu(), F.conv2d(x, w, padding=1), rtol=1e-5, atol=1e-5)


def test_empty_batch_matches_cpu():
    x, w = torch.empty(0, 3, 6, 6), sample((4, 3, 3, 3), torch.float32, seed=1)
    out = F.conv2d(x.to("axon"), w.to("axon"))
    assert out.shape == F.conv2d(x, w).shape == (0, 4, 4, 4)


def cpu_error(fn, *tensors):
    with pytest.raises(RuntimeError) as info:
        fn(*tensors)
    return str(info.value).split("\n")[0]


@pytest.mark.parametrize("xs,ws,kw", [
    ((2, 5, 8, 8), (4, 3, 3, 3), {}),                    # wrong channel count
    ((2, 4, 8, 8), (3, 2, 3, 3), dict(groups=2)),       # groups do not divide the output channels
    ((2, 3, 8, 8), (4, 3, 3, 3), dict(padding=-1)),     # negative padding
    ((2, 3, 4, 4), (4, 3, 6, 6), {}),                   # kernel larger than the input
    ((2, 3, 8, 8), (4, 3, 3), {}),                      # weight of the wrong rank
], ids=["channels", "groups", "negative_padding", "kernel_too_large", "weight_rank"])
def test_bad_input_gives_pytorchs_error(xs, ws, kw):
    x, w = sample(xs, torch.float32), sample(ws, torch.float32, seed=1)
    expected = cpu_error(lambda a, b: F.conv2d(a, b, **kw), x, w)
    got = cpu_error(lambda a, b: F.conv2d(a, b, **kw), x.to("axon"), w.to("axon"))
    assert got == expected


def test_mixed_dtypes_are_refused_like_cpu():
    x, w = sample((2, 3, 6, 6), torch.float32), sample((4, 3, 3, 3), torch.float64, seed=1)
    cpu_error(F.conv2d, x, w)
    assert "should be the same" in cpu_error(F.conv2d, x.to("axon"), w.to("axon"))


INT64_CASES = [
    ("conv1d", F.conv1d, (2, 4, 11), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
    ("conv2d", F.conv2d, (2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    ("conv3d", F.conv3d, (1, 2, 5, 4, 4), (3, 2, 2, 3, 2), dict(padding=1)),
    ("conv_transpose1d", F.conv_transpose1d, (2, 4, 6), (4, 3, 3), dict(stride=2, output_padding=1, groups=2)),
    ("conv_transpose2d", F.conv_transpose2d, (1, 3, 5, 4), (3, 2, 3, 3), dict(stride=2, padding=1, dilation=(2, 1))),
    ("conv_transpose3d", F.conv_transpose3d, (1, 2, 3, 3, 2), (2, 2, 2, 2, 2), dict(stride=(1, 2, 1))),
]


@pytest.mark.parametrize("case", INT64_CASES, ids=[c[0] for c in INT64_CASES])
def test_int64_convolutions_run_natively_and_wrap_like_cpu(case):
    # PyTorch's CPU convolution takes int64 (im2col and an integer product, which wraps on overflow); so does
    # libaxon's, exactly, in any summation order. Values near 2^52 make the products and sums wrap.
    _, fn, xs, ws, kw = case
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-2**20, 2**20, xs, generator=g) * torch.randint(1, 2**31, xs, generator=g)
    w = torch.randint(-2**40, 2**40, ws, generator=g)
    out_channels = ws[1] * kw.get("groups", 1) if "transpose" in case[0] else ws[0]
    b = torch.randint(-9, 9, (out_channels,), generator=g)
    torch_axon.reset_fallback_stats()
    for bias in (None, b):
        got = fn(x.to("axon"), w.to("axon"), None if bias is None else bias.to("axon"), **kw)
        assert torch.equal(got.cpu(), fn(x, w, bias, **kw))
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()


@pytest.mark.parametrize("transposed", [False, True], ids=["conv2d", "conv_transpose2d"])
def test_double_backward_is_native_and_matches_cpu(transposed):
    # A gradient penalty differentiates convolution_backward: PyTorch builds it from convolutions again.
    f = (lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1)) if transposed else \
        (lambda x, w: F.conv2d(x, w, padding=1, stride=2))
    x0, w0 = sample((2, 3, 6, 6), torch.float64), sample((3, 4, 3, 3), torch.float64, seed=1)
    if not transposed:
        w0 = w0.transpose(0, 1).contiguous()

    def penalty(device):
        x, w = x0.to(device).requires_grad_(), w0.to(device).requires_grad_()
        gx, gw = torch.autograd.grad(f(x, w).square().sum(), (x, w), create_graph=True)
        (gx.square().sum() + gw.square().sum()).backward()
        return x.grad.cpu(), w.grad.cpu()

    torch_axon.reset_fallback_stats()
    got = penalty("axon")
    assert not CONV_OPS & set(torch_axon.fallback_stats()), torch_axon.fallback_stats()
    for g, e in zip(got, penalty("cpu")):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)


def test_convolution_and_matmul_leave_the_callers_torch_thread_count():
    # libaxon sets OpenMP's per-thread count to 1 around its oneDNN primitives; a small kernel runs inline on the
    # caller's thread, where torch.get_num_threads() reads the same setting, so the count must be put back (it was
    # left at 1, and PyTorch's own CPU ops then ran on one thread).
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(1, 2, 5, 5, device="axon").to(dtype)
            F.conv2d(x, torch.randn(3, 2, 3, 3, device="axon").to(dtype))
            x[0, 0] @ x[0, 1]
            torch.axon.synchronize()
            assert torch.get_num_threads() == 2, dtype
    finally:
        torch.set_num_threads(before)

"""Memory formats of convolutions and norms: with channels_last (and channels_last_3d) inputs or weights, outputs
and gradients come back in the layouts PyTorch CPU gives them (a convolution's output is channels_last when its input
or its weight is, each gradient in its own tensor's format; batch norm and group norm follow their input), with
CPU's values, and no host fallback."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon

CL, CL3 = torch.channels_last, torch.channels_last_3d


def layout(t):
    for name, fmt in (("contiguous", torch.contiguous_format), ("channels_last", CL), ("channels_last_3d", CL3)):
        if t.dim() in (4, 5) and fmt is not torch.contiguous_format and t.is_contiguous(memory_format=fmt) \
                and not t.is_contiguous():
            return name
    return "contiguous" if t.is_contiguous() else "strided"


def run(fn, tensors, formats, device):
    leaves = []
    for t, fmt in zip(tensors, formats):
        t = t.detach().to(device)
        if fmt is not None:
            t = t.contiguous(memory_format=fmt)
        leaves.append(t.requires_grad_(True))
    torch_axon.reset_fallback_stats()
    out = fn(*leaves)
    out.backward(torch.ones_like(out).mul_(0.5))
    return out, [x.grad for x in leaves], torch_axon.fallback_stats()


def compare(fn, tensors, formats, rtol=1e-5, atol=1e-5):
    out_c, grads_c, _ = run(fn, tensors, formats, "cpu")
    out_a, grads_a, stats = run(fn, tensors, formats, "axon")
    assert stats == {}, stats
    assert layout(out_a) == layout(out_c), (layout(out_a), layout(out_c))
    torch.testing.assert_close(out_a.cpu(), out_c, rtol=rtol, atol=atol)
    for ga, gc in zip(grads_a, grads_c):
        assert layout(ga) == layout(gc), (layout(ga), layout(gc))
        torch.testing.assert_close(ga.cpu(), gc, rtol=rtol, atol=atol * 10)


gen = torch.Generator().manual_seed(0)
X4 = torch.randn(2, 6, 9, 8, generator=gen)
W4 = torch.randn(4, 6, 3, 3, generator=gen)
X5 = torch.randn(2, 4, 5, 6, 7, generator=gen)
W5 = torch.randn(3, 4, 3, 3, 3, generator=gen)


@pytest.mark.parametrize("x_fmt,w_fmt", [(CL, None), (None, CL), (CL, CL)], ids=["x", "w", "both"])
def test_conv2d_keeps_cpus_channels_last_layouts(x_fmt, w_fmt):
    compare(lambda x, w: F.conv2d(x, w, padding=1, stride=(1, 2)), [X4, W4], [x_fmt, w_fmt])


def test_depthwise_and_transposed_convs_keep_channels_last():
    compare(lambda x, w: F.conv2d(x, w, padding=1, groups=6), [X4, torch.randn(6, 1, 3, 3, generator=gen)],
            [CL, None])
    compare(lambda x, w: F.conv_transpose2d(x, w, stride=2), [X4, torch.randn(6, 3, 2, 2, generator=gen)],
            [CL, None])


def test_conv3d_keeps_channels_last_3d():
    compare(lambda x, w: F.conv3d(x, w, padding=1), [X5, W5], [CL3, None], atol=1e-4)


def test_batch_norm_and_group_norm_follow_their_input():
    weight, bias = torch.rand(6, generator=gen) + 0.5, torch.randn(6, generator=gen)
    compare(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), [X4, weight, bias], [CL, None, None])
    compare(lambda x, w, b: F.group_norm(x, 3, w, b), [X4, weight, bias], [CL, None, None])
    mean, var = torch.randn(6, generator=gen), torch.rand(6, generator=gen) + 0.5
    compare(lambda x: F.batch_norm(x, mean.to(x.device), var.to(x.device)), [X4], [CL])


def test_contiguous_inputs_stay_contiguous():
    compare(lambda x, w: F.conv2d(x, w, padding=1), [X4, W4], [None, None])
    compare(lambda x: F.batch_norm(x, None, None, training=True), [X4], [None])

"""Native batch norm and group norm (libaxon's batchnorm.h / groupnorm.h kernels): nn.BatchNorm1d/2d/3d in training
and eval mode (running statistics, cumulative average with momentum=None, affine=False, track_running_stats=False),
F.batch_norm, the aten batch norm overloads, nn.GroupNorm; forward, gradients and running statistics against PyTorch
CPU with per-dtype tolerances, no host fallback, and PyTorch's errors for bad input."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
# (rtol, atol). libaxon computes in float64 and rounds once; CPU accumulates in float32 (float64 for float64), so
# results differ by about one rounding of the output dtype; gradients cancel, hence looser bounds.
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10), torch.bfloat16: (2e-2, 2e-2),
       torch.float16: (4e-3, 2e-3)}
GRAD_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-9), torch.bfloat16: (6e-2, 6e-2),
            torch.float16: (1e-2, 1e-2)}


def sample(shape, dtype, seed=0, scale=1.0, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale + shift).to(dtype)


def close(result, expected, tol):
    result = result.detach().cpu()
    expected = expected.detach()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, expected.dtype,
                                                                               result.shape, expected.shape)
    rtol, atol = tol[expected.dtype]
    torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)


def run_module(make, x, steps=2, train=True):
    """A module made by make() on CPU and a copy on axon: `steps` forward/backward passes on x; returns, per device,
    (outputs, input grads, module state, parameter grads) and the axon run's fallback stats."""
    cpu = make()
    dev = make()
    dev.load_state_dict(cpu.state_dict())
    dev = dev.to("axon")
    cpu.train(train)
    dev.train(train)
    results = []
    stats = None
    for m, device in ((cpu, "cpu"), (dev, "axon")):
        torch_axon.reset_fallback_stats()
        outs, grads = [], []
        for step in range(steps):
            leaf = x.detach().to(device).requires_grad_()
            out = m(leaf)
            out.backward(sample(out.shape, out.dtype, seed=10 + step).to(device))
            outs.append(out.detach())
            grads.append(leaf.grad)
        if device == "axon":
            stats = torch_axon.fallback_stats()
        state = {k: v.detach() for k, v in m.state_dict().items()}
        pgrads = {k: p.grad for k, p in m.named_parameters()}
        results.append((outs, grads, state, pgrads))
    return results, stats


def check_module(make, x, dtype, train=True, steps=2):
    (ref, got), stats = run_module(make, x, steps, train)
    assert stats == {}, stats
    for o, ro in zip(got[0], ref[0]):
        close(o, ro, TOL)
    for g, rg in zip(got[1], ref[1]):
        close(g, rg, GRAD_TOL)
    for k, v in ref[2].items():
        if v.is_floating_point():
            close(got[2][k], v, TOL)
        else:
            assert torch.equal(got[2][k].cpu(), v), k  # num_batches_tracked
    for k, v in ref[3].items():
        close(got[3][k], v, GRAD_TOL)


BN_CASES = [(nn.BatchNorm1d, (8, 3)), (nn.BatchNorm1d, (4, 3, 7)), (nn.BatchNorm2d, (4, 3, 5, 6)),
            (nn.BatchNorm3d, (2, 4, 3, 3, 2)),
            (nn.BatchNorm2d, (2, 3, 50, 45)),  # runs of 2250: a whole float chunk (2048) and a rest
            (nn.BatchNorm2d, (2, 2, 200, 180))]  # 72000 per channel: 16-bit training reads runs, not a widened channel


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("cls,shape", BN_CASES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_batch_norm_module_matches_cpu(cls, shape, train, dtype):
    x = sample(shape, dtype, scale=2.0, shift=0.5)
    check_module(lambda: cls(shape[1], dtype=dtype), x, dtype, train=train)


CL_CASES = [(nn.BatchNorm2d, (6, 24, 7, 5), torch.channels_last),  # 210 positions: 7 blocks of 32
            (nn.BatchNorm2d, (2, 600, 2, 3), torch.channels_last),  # rows longer than one 512-channel chunk
            (nn.BatchNorm3d, (2, 4, 3, 3, 2), torch.channels_last_3d)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("cls,shape,fmt", CL_CASES, ids=["2d", "2d_600ch", "3d"])
def test_channels_last_batch_norm_matches_cpu_and_keeps_the_layout(cls, shape, fmt, train, dtype):
    """libaxon runs channels-last inputs as they are (norm_batch.c's row blocks): values as CPU's, and the output
    and the input gradient stay channels-last, as on CPU."""
    x = sample(shape, dtype, scale=2.0, shift=0.5).contiguous(memory_format=fmt)
    check_module(lambda: cls(shape[1], dtype=dtype), x, dtype, train=train)
    m = cls(shape[1], dtype=dtype).to("axon").train(train)
    leaf = x.to("axon").requires_grad_()
    out = m(leaf)
    out.backward(torch.ones_like(out))
    assert out.is_contiguous(memory_format=fmt) and leaf.grad.is_contiguous(memory_format=fmt)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kwargs", [dict(momentum=None), dict(affine=False), dict(track_running_stats=False),
                                    dict(affine=False, track_running_stats=False), dict(momentum=0.7, eps=1e-3)],
                         ids=["cumulative", "no_affine", "no_running", "bare", "momentum_eps"])
def test_batch_norm_module_options_match_cpu(kwargs, dtype):
    x = sample((5, 4, 3, 3), dtype, scale=3.0, shift=-1.0)
    check_module(lambda: nn.BatchNorm2d(4, dtype=dtype, **kwargs), x, dtype, train=True, steps=3)
    check_module(lambda: nn.BatchNorm2d(4, dtype=dtype, **kwargs), x, dtype, train=False, steps=1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_half_input_with_float32_module_keeps_float32_statistics_as_cpu(dtype):
    x = sample((6, 3, 4, 4), dtype)
    check_module(lambda: nn.BatchNorm2d(3), x, dtype, train=True)
    check_module(lambda: nn.BatchNorm2d(3), x, dtype, train=False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_native_batch_norm_statistics_dtypes_and_values_match_cpu(dtype):
    x = sample((4, 3, 5), dtype, scale=2.0)
    for params in (None, torch.float32, dtype):
        if dtype == torch.float64 and params == torch.float32:
            continue  # CPU refuses this mix: test_mixed_parameter_dtypes_raise_as_cpu
        rm = None if params is None else torch.zeros(3, dtype=params)
        rv = None if params is None else torch.ones(3, dtype=params)
        ref = torch.ops.aten.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
        rmd = None if rm is None else torch.zeros(3, dtype=params, device="axon")
        rvd = None if rv is None else torch.ones(3, dtype=params, device="axon")
        torch_axon.reset_fallback_stats()
        got = torch.ops.aten.native_batch_norm(x.to("axon"), None, None, rmd, rvd, True, 0.1, 1e-5)
        assert torch_axon.fallback_stats() == {}
        for g, r in zip(got, ref):
            close(g, r, TOL)
        if rm is not None:
            close(rmd, rm, TOL)
            close(rvd, rv, TOL)


def test_aten_batch_norm_overloads_are_native_and_match_cpu():
    x = sample((4, 3, 2, 5), torch.float32, scale=2.0)
    w, b = sample(3, torch.float32, seed=1), sample(3, torch.float32, seed=2)
    A = torch.ops.aten
    calls = [
        lambda x, w, b, rm, rv: A._native_batch_norm_legit(x, w, b, rm, rv, True, 0.1, 1e-5),
        lambda x, w, b, rm, rv: A._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5),
        lambda x, w, b, rm, rv: A._native_batch_norm_legit_no_training(x, w, b, rm, rv, 0.1, 1e-5),
        lambda x, w, b, rm, rv: A._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)[:3],
        lambda x, w, b, rm, rv: A._batch_norm_no_update(x, w, b, rm, rv, 0.1, 1e-5)[:3],
    ]
    for call in calls:
        rm, rv = sample(3, torch.float32, seed=3), sample(3, torch.float32, seed=4).abs() + 0.5
        rmd, rvd = rm.to("axon"), rv.to("axon")
        ref = call(x, w, b, rm, rv)
        torch_axon.reset_fallback_stats()
        got = call(x.to("axon"), w.to("axon"), b.to("axon"), rmd, rvd)
        assert torch_axon.fallback_stats() == {}
        for g, r in zip(got, ref):
            close(g, r, TOL)
        close(rmd, rm, TOL)
        close(rvd, rv, TOL)


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_aten_batch_norm_backward_overloads_are_native_and_match_cpu(train):
    x, g = sample((4, 3, 5), torch.float64, scale=2.0), sample((4, 3, 5), torch.float64, seed=5)
    w = sample(3, torch.float64, seed=1)
    rm, rv = sample(3, torch.float64, seed=3), sample(3, torch.float64, seed=4).abs() + 0.5
    _, sm, si = torch.ops.aten.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)
    args = lambda dev: [t.to(dev) for t in (g, x, w, rm, rv, sm, si)]
    mask = [True, True, True]
    ref = torch.ops.aten.native_batch_norm_backward(*args("cpu"), train, 1e-5, mask)
    reserve = torch.empty(0, dtype=torch.uint8)
    for op in ("native", "new"):
        torch_axon.reset_fallback_stats()
        if op == "native":
            got = torch.ops.aten.native_batch_norm_backward(*args("axon"), train, 1e-5, mask)
        else:
            got = torch.ops.aten.batch_norm_backward(*args("axon"), train, 1e-5, mask, reserve.to("axon"))
        assert torch_axon.fallback_stats() == {}
        for gg, r in zip(got, ref):
            close(gg, r, GRAD_TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
def test_functional_batch_norm_of_strided_input_matches_cpu(training, dtype):
    x = sample((3, 5, 4, 6), dtype).transpose(2, 3)  # not contiguous
    rm, rv = torch.zeros(4), torch.ones(4)
    w, b = sample(4, torch.float32, seed=1), sample(4, torch.float32, seed=2)
    if dtype == torch.float64:
        rm, rv, w, b = rm.double(), rv.double(), w.double(), b.double()
    x = x.transpose(1, 3).contiguous().transpose(1, 3)[:, :4]  # channels-last-like, sliced
    ref = F.batch_norm(x, rm.clone(), rv.clone(), w, b, training=training)
    torch_axon.reset_fallback_stats()
    got = F.batch_norm(x.to("axon"), rm.to("axon"), rv.to("axon"), w.to("axon"), b.to("axon"), training=training)
    assert torch_axon.fallback_stats() == {}
    close(got, ref, TOL)


def test_batch_norm_with_wrong_weight_size_raises_pytorch_error():
    x = torch.randn(4, 3, 5, device="axon")
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 4"):
        F.batch_norm(x, None, None, torch.ones(4, device="axon"), training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 2"):
        F.batch_norm(x, torch.zeros(2, device="axon"), torch.ones(2, device="axon"), training=False)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(torch.randn(1, 3, device="axon"), None, None, training=True)


def test_mixed_parameter_dtypes_raise_as_cpu():
    x = torch.randn(4, 3, 5, dtype=torch.float64, device="axon")
    with pytest.raises(RuntimeError, match="all inputs must share same datatype"):
        torch.ops.aten.native_batch_norm(x, torch.ones(3, device="axon"), None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="all inputs must share same datatype"):
        F.group_norm(x, 3, torch.ones(3, device="axon"))


def test_single_value_per_channel_running_var_is_nan_as_cpu():
    x = sample((1, 3, 1), torch.float32)
    rm, rv = torch.zeros(3), torch.ones(3)
    torch.ops.aten.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)
    rmd, rvd = torch.zeros(3, device="axon"), torch.ones(3, device="axon")
    torch.ops.aten.native_batch_norm(x.to("axon"), None, None, rmd, rvd, True, 0.1, 1e-5)
    close(rmd, rm, TOL)
    close(rvd, rv, TOL)


# ---- group norm ----

GN_CASES = [((4, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 8), 4), ((2, 6, 2, 2, 2), 1), ((2, 4, 70), 4),
            ((2, 8, 16, 16), 4), ((1, 4, 80, 80), 1)]  # the last rows past 16384: halves on the float64 path


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("shape,groups", GN_CASES, ids=str)
def test_group_norm_module_matches_cpu(shape, groups, affine, dtype):
    x = sample(shape, dtype, scale=2.0, shift=1.0)
    check_module(lambda: nn.GroupNorm(groups, shape[1], affine=affine, dtype=dtype), x, dtype, steps=1)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_group_norm_half_input_with_float32_weight_matches_cpu(dtype):
    x = sample((3, 4, 5), dtype)
    w, b = sample(4, torch.float32, seed=1), sample(4, torch.float32, seed=2)
    ref = torch.ops.aten.native_group_norm(x, w, b, 3, 4, 5, 2, 1e-5)
    torch_axon.reset_fallback_stats()
    got = torch.ops.aten.native_group_norm(x.to("axon"), w.to("axon"), b.to("axon"), 3, 4, 5, 2, 1e-5)
    assert torch_axon.fallback_stats() == {}
    for g, r in zip(got, ref):
        close(g, r, TOL)


def test_group_norm_bad_input_raises_pytorch_errors():
    x = torch.randn(2, 6, 3, device="axon")
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(x, 4)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the number of channels"):
        torch.ops.aten.native_group_norm(x, torch.ones(5, device="axon"), None, 2, 6, 3, 3, 1e-5)

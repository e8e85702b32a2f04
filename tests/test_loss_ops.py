"""Native nll_loss / nll_loss2d (libaxon's loss kernels), so F.cross_entropy and F.nll_loss with class indices run
without the host fallback: forward and backward against PyTorch CPU per dtype, every reduction, weights,
ignore_index, label smoothing, [N, C], [C] and N-d inputs; a target out of range raises an error naming nll_loss and
the value."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
# (rtol, atol). libaxon computes in float64 and rounds once; CPU accumulates half types in float32, so reduced losses
# differ by about one rounding of the output dtype.
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-10, 1e-10), torch.bfloat16: (2e-2, 2e-2),
       torch.float16: (4e-3, 2e-3)}
GRAD_TOL = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-9, 1e-10), torch.bfloat16: (5e-2, 5e-2),
            torch.float16: (1e-2, 1e-2)}
NLL_OPS = ("nll_loss", "nll_loss2d")


def sample(shape, dtype, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def targets(shape, classes, seed=1, ignore=None):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, classes, shape, generator=g)
    if ignore is not None and t.numel() > 1:
        t.view(-1)[1] = ignore
    return t


def close(result, expected, tol):
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape,
                                                                               expected.dtype, expected.shape)
    rtol, atol = tol[expected.dtype]
    torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)


def check(fn, x, dtype, *others, allowed=()):
    """fn(x, *others) on CPU and axon, forward and backward with the same upstream gradient; no fallback on axon
    (except the ops in `allowed`, which are not this file's)."""
    results = []
    for device in ("cpu", "axon"):
        leaf = x.detach().to(device).requires_grad_(True)
        torch_axon.reset_fallback_stats()
        out = fn(leaf, *[o.to(device) if isinstance(o, torch.Tensor) else o for o in others])
        out.backward(sample(out.shape, out.dtype, seed=7).to(device))
        results.append((out.detach(), leaf.grad, torch_axon.fallback_stats()))
    (ref, ref_grad, _), (out, grad, stats) = results
    assert not any(op in k for k in stats for op in NLL_OPS), stats
    assert {k: v for k, v in stats.items() if k not in allowed} == {}, stats
    close(out, ref, TOL)
    close(grad, ref_grad, GRAD_TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy_with_class_indices_matches_cpu(dtype, reduction, weighted, ignore_index):
    x, t = sample((6, 5), dtype, scale=2.0), targets((6,), 5, ignore=ignore_index if ignore_index >= 0 else None)
    w = torch.rand(5, generator=torch.Generator().manual_seed(3), dtype=torch.float64).to(dtype) if weighted else None
    check(lambda a, tt, ww: F.cross_entropy(a, tt, weight=ww, reduction=reduction, ignore_index=ignore_index), x,
          dtype, t, w)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 4, 3, 5), (3, 4, 7), (2, 3, 2, 2, 2)], ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_on_n_d_inputs_matches_cpu(dtype, shape, reduction):
    x = sample(shape, dtype)
    t = targets((shape[0],) + shape[2:], shape[1], ignore=-100)
    check(lambda a, tt: F.cross_entropy(a, tt, reduction=reduction), x, dtype, t)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cross_entropy_with_label_smoothing_and_weight_matches_cpu(dtype):
    x, t = sample((8, 6), dtype), targets((8,), 6, ignore=-100)
    w = torch.linspace(0.5, 1.5, 6, dtype=torch.float64).to(dtype)
    check(lambda a, tt, ww: F.cross_entropy(a, tt, weight=ww, label_smoothing=0.2), x, dtype, t, w)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_nll_loss_without_batch_dimension_matches_cpu(dtype, reduction):
    x = sample((5,), dtype)
    check(lambda a, tt: F.nll_loss(a, tt, reduction=reduction), x, dtype, torch.tensor(3))


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("shape", [(4, 5), (5,)], ids=str)
def test_nll_loss_forward_total_weight_matches_cpu(reduction, shape):
    x = sample(shape, torch.float32)
    t = targets(shape[:1], shape[-1], ignore=-100) if len(shape) == 2 else torch.tensor(2)
    w = torch.rand(shape[-1], generator=torch.Generator().manual_seed(4))
    ref = torch.ops.aten.nll_loss_forward(x, t, w, reduction, -100)
    torch_axon.reset_fallback_stats()
    out = torch.ops.aten.nll_loss_forward(x.to("axon"), t.to("axon"), w.to("axon"), reduction, -100)
    assert torch_axon.fallback_stats() == {}
    close(out[0], ref[0], TOL)
    close(out[1], ref[1], TOL)


def test_nll_loss_mean_with_every_target_ignored_is_nan_as_on_cpu():
    x, t = sample((3, 4), torch.float32), torch.full((3,), -100)
    out = F.nll_loss(x.to("axon"), t.to("axon"))
    assert torch.isnan(out.cpu()) and torch.isnan(F.nll_loss(x, t))


def test_nll_loss_of_a_strided_input_matches_cpu():
    x, t = sample((5, 8), torch.float32), targets((8,), 5)
    check(lambda a, tt: F.nll_loss(a.t(), tt), x, torch.float32, t)


@pytest.mark.parametrize("bad", [5, -1, 17])
def test_out_of_range_target_raises_naming_nll_loss_and_the_value(bad):
    x, t = sample((4, 5), torch.float32).to("axon"), torch.tensor([0, bad, 1, 2]).to("axon")
    with pytest.raises(RuntimeError, match=rf"nll_loss.*target {bad} is out of bounds"):
        F.cross_entropy(x, t)
        torch.axon.synchronize()
    torch.axon.synchronize()  # the error was consumed: the device is usable again
    assert F.cross_entropy(x, t.clamp(0, 4)).isfinite().cpu()


def test_out_of_range_target_in_n_d_input_raises():
    x, t = sample((2, 3, 4), torch.float32).to("axon"), torch.zeros((2, 4), dtype=torch.long)
    t[1, 2] = 3
    with pytest.raises(RuntimeError, match=r"target 3 is out of bounds"):
        F.cross_entropy(x, t.to("axon"), reduction="none")
        torch.axon.synchronize()


def test_shape_mismatch_raises_pytorchs_message():
    x, t = sample((4, 5), torch.float32).to("axon"), torch.tensor([0, 1, 2]).to("axon")
    with pytest.raises(RuntimeError, match="size mismatch"):  # F.nll_loss checks this itself: call the op
        torch.ops.aten.nll_loss_forward(x, t, None, 1, -100)
    with pytest.raises(RuntimeError, match="weight tensor should be defined"):
        F.nll_loss(x, torch.tensor([0, 1, 2, 3]).to("axon"), weight=torch.ones(3).to("axon"))


def test_int32_target_goes_to_the_host_fallback_which_raises_like_cpu():
    x, t = sample((4, 5), torch.float32), torch.tensor([0, 1, 2, 3], dtype=torch.int32)
    with pytest.raises(RuntimeError) as cpu:
        F.nll_loss(x, t)
    with pytest.raises(RuntimeError) as axon:
        F.nll_loss(x.to("axon"), t.to("axon"))
    assert str(cpu.value).splitlines()[0] in str(axon.value)


# ---- element-wise losses ----

def probabilities(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g, dtype=torch.float64).clamp(0.02, 0.98).to(dtype)


ELEMENTWISE = {
    "mse": lambda a, t, r: F.mse_loss(a, t, reduction=r),
    "smooth_l1": lambda a, t, r: F.smooth_l1_loss(a, t, reduction=r, beta=0.7),
    "smooth_l1_beta0": lambda a, t, r: F.smooth_l1_loss(a, t, reduction=r, beta=0.0),
    "huber": lambda a, t, r: F.huber_loss(a, t, reduction=r, delta=1.3),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("loss", list(ELEMENTWISE))
@pytest.mark.parametrize("shape", [(7, 5), (3, 1000), ()], ids=str)
def test_elementwise_losses_match_cpu(dtype, reduction, loss, shape):
    x, t = sample(shape, dtype, seed=0, scale=2.0), sample(shape, dtype, seed=1, scale=2.0)
    fn = ELEMENTWISE[loss]
    # smooth_l1 with beta 0 is PyTorch's l1_loss, whose abs backward needs sgn: not native yet (not a loss op).
    allowed = {"aten::sgn.out"} if loss == "smooth_l1_beta0" else ()
    check(lambda a, tt: fn(a, tt, reduction), x, dtype, t, allowed=allowed)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
def test_binary_cross_entropy_matches_cpu(dtype, reduction, weighted):
    x, t = probabilities((6, 9), dtype, 0), probabilities((6, 9), dtype, 1)
    x[0, 0], x[0, 1] = 0.0, 1.0  # the log clamp at -100
    w = probabilities((6, 9), dtype, 2) if weighted else None
    check(lambda a, tt, ww: F.binary_cross_entropy(a, tt, weight=ww, reduction=reduction), x, dtype, t, w)


def test_binary_cross_entropy_with_broadcast_weight_matches_cpu():
    x, t, w = probabilities((4, 3), torch.float32, 0), probabilities((4, 3), torch.float32, 1), torch.rand(3)
    check(lambda a, tt, ww: F.binary_cross_entropy(a, tt, weight=ww), x, torch.float32, t, w)


def test_binary_cross_entropy_input_outside_0_1_raises():
    x, t = torch.tensor([0.5, 1.5, 0.2]).to("axon"), torch.tensor([0.0, 1.0, 0.0]).to("axon")
    with pytest.raises(RuntimeError, match=r"binary_cross_entropy.*all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(x, t)
        torch.axon.synchronize()


def test_bad_beta_and_delta_raise_pytorchs_errors():
    x = torch.randn(3).to("axon")
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(x, x, delta=0.0)


def test_mse_loss_of_broadcast_and_strided_operands_matches_cpu():
    x, t = sample((6, 4), torch.float32), sample((4,), torch.float32, seed=3)
    with pytest.warns(UserWarning, match="target size"):  # F.mse_loss broadcasts (and warns) before the op
        check(lambda a, tt: F.mse_loss(a.t(), tt.unsqueeze(1).expand(4, 6)) + F.mse_loss(a[:, 0], tt[:1]), x,
              torch.float32, t)


def test_mse_loss_of_integer_tensors_goes_to_the_fallback_like_cpu():
    x = torch.arange(6).view(2, 3)
    with pytest.raises(RuntimeError) as cpu:
        F.mse_loss(x, x)
    with pytest.raises(RuntimeError) as axon:
        F.mse_loss(x.to("axon"), x.to("axon"))
    assert str(cpu.value).splitlines()[0] in str(axon.value)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", [(37, 300), (11,)], ids=["NC", "C"])
def test_fused_nll_log_softmax_backward_matches_the_two_ops_on_cpu(shape, weighted, reduction, dtype):
    # axon::nll_loss_log_softmax_backward (what a compiled cross-entropy's backward runs) against CPU's
    # _log_softmax_backward_data(nll_loss_backward(...)): every reduction, weights, an ignored target, no batch dim
    classes = shape[-1]
    logp = torch.log_softmax(sample(shape, torch.float64, seed=3), -1).to(dtype)
    target = targets(shape[:-1], classes, ignore=-100)
    weight = sample((classes,), torch.float64, seed=4).abs().to(dtype) if weighted else None
    red = {"none": 0, "mean": 1, "sum": 2}[reduction]
    _, total_weight = torch.ops.aten.nll_loss_forward(logp, target, weight, red, -100)
    grad_out = sample(shape[:-1] if reduction == "none" else (), dtype, seed=5)
    want = torch.ops.aten._log_softmax_backward_data(
        torch.ops.aten.nll_loss_backward(grad_out, logp, target, weight, red, -100, total_weight), logp, -1, dtype)
    dev = [t.to("axon") if t is not None else None for t in (grad_out, logp, target, weight, total_weight)]
    torch_axon.reset_fallback_stats()
    got = torch.ops.axon.nll_loss_log_softmax_backward(dev[0], dev[1], dev[2], dev[3], red, -100, dev[4])
    close(got, want, GRAD_TOL)
    assert torch_axon.fallback_stats() == {}


def test_fused_nll_log_softmax_backward_rejects_a_target_out_of_range():
    logp = torch.log_softmax(torch.randn(4, 5), -1).to("axon")
    target = torch.tensor([0, 1, 7, 2], device="axon")
    tw = torch.tensor(4.0, device="axon")
    with pytest.raises(RuntimeError, match="target 7 is out of bounds for 5 classes"):
        torch.ops.axon.nll_loss_log_softmax_backward(torch.tensor(1.0, device="axon"), logp, target, None, 1, -100,
                                                     tw)
        torch.axon.synchronize()


# ---- CTC ----

CTC_T, CTC_N, CTC_C = 12, 4, 6
CTC_INPUT_LENGTHS = [12, 9, 0, 3]
CTC_TARGET_LENGTHS = [4, 3, 0, 3]   # element 3: three labels with a repeat need 4 frames, it has 3 (infinite loss)
CTC_TARGETS = [[1, 2, 2, 5], [3, 3, 1, 0], [0, 0, 0, 0], [4, 4, 2, 0]]


def ctc_case(dtype, flat, target_dtype, tensor_lengths):
    logits = sample((CTC_T, CTC_N, CTC_C), torch.float64, seed=6).to(dtype)
    t = torch.tensor(CTC_TARGETS, dtype=target_dtype)
    if flat:
        t = torch.cat([t[b, :n] for b, n in enumerate(CTC_TARGET_LENGTHS)])
    il, tl = CTC_INPUT_LENGTHS, CTC_TARGET_LENGTHS
    if tensor_lengths:
        il, tl = torch.tensor(il), torch.tensor(tl, dtype=torch.int32)
    return logits, t, il, tl


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True], ids=["inf", "zero_inf"])
@pytest.mark.parametrize("form", ["padded-int64-lists", "flat-int32-tensors", "padded-int32-tensors"])
def test_ctc_loss_forward_and_backward_match_cpu(dtype, reduction, zero_infinity, form):
    logits, t, il, tl = ctc_case(dtype, form.startswith("flat"), torch.int32 if "int32" in form else torch.int64,
                                 form.endswith("tensors"))

    def run(device):
        x = logits.detach().to(device).requires_grad_()
        move = (lambda v: v.to(device)) if isinstance(il, torch.Tensor) else (lambda v: v)
        loss = F.ctc_loss(x.log_softmax(2), t.to(device), move(il), move(tl), blank=0, reduction=reduction,
                          zero_infinity=zero_infinity)
        (loss if reduction != "none" else loss[loss.isfinite()]).sum().backward()
        return loss.detach(), x.grad

    want_loss, want_grad = run("cpu")
    torch_axon.reset_fallback_stats()
    got_loss, got_grad = run("axon")
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    close(got_loss, want_loss, TOL)
    close(got_grad, want_grad, GRAD_TOL)


def test_ctc_loss_refusals_are_cpus():
    logits, t, il, tl = ctc_case(torch.float32, False, torch.int64, False)
    lp = logits.log_softmax(2)
    with pytest.raises(RuntimeError, match="input_lengths"):
        F.ctc_loss(lp.to("axon"), t.to("axon"), [13, 1, 1, 1], tl)
    with pytest.raises(RuntimeError, match="Half"):
        F.ctc_loss(lp.half().to("axon"), t.to("axon"), il, tl)


# ---- margin losses: multi_margin_loss and multilabel_margin_loss (libaxon/kernels/loss_margin.c) ----

MARGIN_DTYPES = [torch.float32, torch.float64]  # PyTorch CPU has no other


def label_lists(n, c, seed=3):
    """Rows of labels ended by -1 (entries after it are junk within range), one row full, one with a repeat."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, c, (n, c), generator=g)
    for row in range(n):
        if row % 3 != 1:
            t[row, 1 + row % (c - 1)] = -1
    t[0, 0] = t[0, 1] if c > 2 and t[0, 1] >= 0 else t[0, 0]
    return t


@pytest.mark.parametrize("dtype", MARGIN_DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("shape", [(6, 5), (5,)], ids=["rows", "one-row"])
def test_multi_margin_loss_matches_cpu(dtype, reduction, p, weighted, shape):
    c = shape[-1]
    x = sample(shape, dtype, seed=4)
    t = targets(shape[:-1], c, seed=5)
    w = sample((c,), dtype, seed=6).abs() if weighted else None
    check(lambda v, t, w: F.multi_margin_loss(v, t, p=p, margin=0.7, weight=w, reduction=reduction), x, dtype, t, w)


@pytest.mark.parametrize("dtype", MARGIN_DTYPES, ids=str)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("shape", [(7, 6), (6,)], ids=["rows", "one-row"])
def test_multilabel_margin_loss_matches_cpu(dtype, reduction, shape):
    c = shape[-1]
    x = sample(shape, dtype, seed=8)
    t = label_lists(1 if len(shape) == 1 else shape[0], c).view(*shape[:-1], c)
    check(lambda v, t: F.multilabel_margin_loss(v, t, reduction=reduction), x, dtype, t)


def test_margin_loss_targets_out_of_range_raise():
    x = torch.randn(4, 5, device="axon")
    with pytest.raises(RuntimeError, match=r"multi_margin_loss\(\): target 5 of row 2 is out of range for 5 classes"):
        F.multi_margin_loss(x, torch.tensor([0, 1, 5, 2], device="axon")).item()
    bad = label_lists(4, 5).to("axon")
    bad[3, 4] = -3
    with pytest.raises(RuntimeError, match=r"multilabel_margin_loss\(\): target -3 of row 3"):
        F.multilabel_margin_loss(x, bad).item()
    with pytest.raises(RuntimeError, match="only p == 1 and p == 2 supported"):
        torch.ops.aten.multi_margin_loss(x, torch.tensor([0, 1, 4, 2], device="axon"), 3)
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        torch.ops.aten.multi_margin_loss(x, torch.tensor([0, 1], device="axon"))
    # the device recovers: the next loss is right
    t = torch.tensor([0, 1, 4, 2])
    torch.testing.assert_close(F.multi_margin_loss(x, t.to("axon")).cpu(), F.multi_margin_loss(x.cpu(), t))

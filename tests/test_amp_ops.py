"""GradScaler's ops on libaxon's amp kernels: _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_
against PyTorch CPU (found_inf raised by inf, -inf and NaN and never cleared, unscaled values per dtype, scale and
growth tracker over growth/backoff/interval sequences), PyTorch's argument errors named by op, and a full
torch.amp.GradScaler training loop with fp16 autocast on axon, an injected inf gradient included, with no host
fallback and the CPU loop's parameters and scales.

Tolerances: both sides compute x * inv_scale in float (double for float64) and round once, so unscaled values and
scale updates are compared exactly. The training loop differs from CPU only through the fp16 matmuls and reductions
of the forward and backward passes: parameters within (rtol 1e-3, atol 1e-4), scales exactly."""

import pytest
import torch

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
UNSCALE = "aten::_amp_foreach_non_finite_check_and_unscale_"
UPDATE = "aten::_amp_update_scale_"


def grads(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    shapes = [(3, 5), (0,), (70000,), (4, 1, 6), (1,)]
    ts = [(torch.randn(s, generator=g, dtype=torch.float64) * 1000).to(dtype) for s in shapes]
    ts.append((torch.randn(6, 4, generator=g) * 1000).to(dtype).t())  # dense but not contiguous
    return ts


def unscale_both(ts, inv, found=0.0):
    """Run the op on CPU copies and on axon copies of ts; return (cpu grads, cpu found), (axon ...), fallback stats."""
    out = []
    for device in ("cpu", "axon"):
        gs = [t.clone().to(device) for t in ts]
        f = torch.tensor([found], device=device)
        s = torch.tensor([inv], device=device)
        torch_axon.reset_fallback_stats()
        torch._amp_foreach_non_finite_check_and_unscale_(gs, f, s)
        out.append(([t.cpu() for t in gs], f.cpu(), torch_axon.fallback_stats()))
    return out


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("inv", [1.0 / 65536, 1.0, 0.3], ids=["pow2", "one", "odd"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_unscale_of_finite_grads_matches_cpu_and_leaves_found_inf(dtype, inv):
    (ref, ref_f, _), (got, f, stats) = unscale_both(grads(dtype), inv)
    assert stats == {}, stats
    for a, b in zip(got, ref):
        same(a, b)
    assert f.item() == ref_f.item() == 0.0


@pytest.mark.parametrize("special", [float("inf"), float("-inf"), float("nan")], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_inf_or_nan_in_any_grad_sets_found_inf(dtype, special):
    ts = grads(dtype)
    ts[2][69999] = special  # the last element of the big tensor, handled by the last worker
    (ref, ref_f, _), (got, f, stats) = unscale_both(ts, 0.125)
    assert stats == {}, stats
    assert f.item() == ref_f.item() == 1.0
    for a, b in zip(got, ref):
        same(a, b)


def test_found_inf_already_set_is_never_cleared():
    (_, ref_f, _), (_, f, stats) = unscale_both(grads(torch.float32), 0.5, found=1.0)
    assert stats == {}, stats
    assert f.item() == ref_f.item() == 1.0


def test_mixed_dtype_list_runs_the_host_fallback_with_cpu_results():
    ts = [grads(torch.float32)[0], grads(torch.float16)[0]]
    ts[1][0, 0] = float("inf")
    (ref, ref_f, _), (got, f, stats) = unscale_both(ts, 0.25)
    assert stats == {UNSCALE: 1}, stats
    assert f.item() == ref_f.item() == 1.0
    for a, b in zip(got, ref):
        same(a, b)


def test_views_with_gaps_run_the_host_fallback_with_cpu_results():
    base = grads(torch.float32)[2]
    base[9] = float("nan")
    out = []
    for device in ("cpu", "axon"):
        b = base.clone().to(device)
        f, s = torch.zeros(1, device=device), torch.tensor([0.5], device=device)
        torch_axon.reset_fallback_stats()
        torch._amp_foreach_non_finite_check_and_unscale_([b[::3], b[1:50]], f, s)
        out.append((b.cpu(), f.item(), torch_axon.fallback_stats()))
    (ref, ref_f, _), (got, f, stats) = out
    assert stats == {UNSCALE: 1}, stats
    assert f == ref_f == 1.0
    same(got, ref)


def test_empty_list_is_a_no_op():
    f = torch.zeros(1, device="axon")
    torch._amp_foreach_non_finite_check_and_unscale_([], f, torch.ones(1, device="axon"))
    assert f.item() == 0.0


def update_both(founds, growth, backoff, interval, scale=65536.0, tracker=0):
    out = []
    for device in ("cpu", "axon"):
        s = torch.tensor([scale], device=device)
        t = torch.tensor([tracker], dtype=torch.int32, device=device)
        seq = []
        torch_axon.reset_fallback_stats()
        for found in founds:
            r = torch._amp_update_scale_(s, t, torch.tensor([found], device=device), growth, backoff, interval)
            assert r is s
            seq.append((s.item(), t.item()))
        out.append((seq, torch_axon.fallback_stats()))
    return out


@pytest.mark.parametrize("interval", [1, 2, 3, 2000])
def test_update_scale_growth_backoff_interval_sequences_match_cpu(interval):
    g = torch.Generator().manual_seed(interval)
    founds = [0.0 if x > 0.2 else 1.0 for x in torch.rand(40, generator=g).tolist()]
    founds[7] = float("nan")  # truthy, as in C++: a backoff
    (ref, _), (got, stats) = update_both(founds, 2.0, 0.5, interval)
    assert stats == {}, stats
    assert got == ref


def test_update_scale_odd_factors_round_like_cpu_and_refuse_overflowing_growth():
    (ref, _), (got, stats) = update_both([0.0, 0.0, 1.0, 0.0, 0.0, 0.0], 1.7, 0.3, 2, scale=3.3)
    assert stats == {} and got == ref
    (ref, _), (got, stats) = update_both([0.0, 0.0], 4.0, 0.5, 1, scale=3e38)  # growth to inf is not kept
    big = torch.tensor(3e38).item()
    assert stats == {} and got == ref == [(big, 0), (big, 0)]


def test_update_scale_growth_tracker_near_int32_max_matches_cpu():
    (ref, _), (got, stats) = update_both([0.0, 0.0], 2.0, 0.5, 2000, tracker=2**31 - 2)
    assert stats == {} and got == ref


@pytest.mark.parametrize("case,message", [
    ("found_int", "_amp_foreach_non_finite_check_and_unscale_: found_inf must be a float tensor"),
    ("inv_two", "_amp_foreach_non_finite_check_and_unscale_: inv_scale must be a 1-element tensor"),
    ("tracker_float", "_amp_update_scale_: growth_tracker must be an int tensor"),
    ("scale_double", "_amp_update_scale_: current_scale must be a float tensor"),
    ("found_two", "_amp_update_scale_: found_inf must be a 1-element tensor"),
])
def test_bad_numbers_raise_pytorch_errors_naming_the_op(case, message):
    d = "axon"
    one, gs = torch.ones(1, device=d), [torch.ones(3, device=d)]
    tracker = torch.zeros(1, dtype=torch.int32, device=d)
    with pytest.raises(RuntimeError, match=message):
        if case == "found_int":
            torch._amp_foreach_non_finite_check_and_unscale_(gs, torch.zeros(1, dtype=torch.int32, device=d), one)
        elif case == "inv_two":
            torch._amp_foreach_non_finite_check_and_unscale_(gs, torch.zeros(1, device=d), torch.ones(2, device=d))
        elif case == "tracker_float":
            torch._amp_update_scale_(one, torch.zeros(1, device=d), one, 2.0, 0.5, 10)
        elif case == "scale_double":
            torch._amp_update_scale_(one.double(), tracker, one, 2.0, 0.5, 10)
        else:
            torch._amp_update_scale_(one, tracker, torch.zeros(2, device=d), 2.0, 0.5, 10)


def train(device, inf_step=3, steps=7):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**12, growth_interval=2)
    g = torch.Generator().manual_seed(1)
    scales, skipped = [], []
    for step in range(steps):
        x = torch.randn(8, 16, generator=g).to(device)
        y = torch.randn(8, 4, generator=g).to(device)
        with torch.autocast(device, dtype=torch.float16):
            out = model(x)
            assert out.dtype == torch.float16
            loss = torch.nn.functional.mse_loss(out.float(), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        if step == inf_step:
            model[0].weight.grad[0, 0] = float("inf")
        before = [p.detach().clone() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        skipped.append(all(torch.equal(b, p.detach()) for b, p in zip(before, model.parameters())))
        scales.append(scaler.get_scale())
    return [p.detach().cpu() for p in model.parameters()], scales, skipped


def test_gradscaler_fp16_training_loop_is_native_skips_the_inf_step_and_matches_cpu():
    torch_axon.reset_fallback_stats()
    params, scales, skipped = train("axon")
    stats = torch_axon.fallback_stats()
    assert stats == {}, stats
    ref_params, ref_scales, ref_skipped = train("cpu")
    assert skipped == ref_skipped == [False, False, False, True, False, False, False]
    assert scales == ref_scales == [4096.0, 8192.0, 8192.0, 4096.0, 4096.0, 8192.0, 8192.0]
    for p, r in zip(params, ref_params):
        torch.testing.assert_close(p, r, rtol=1e-3, atol=1e-4)

"""torch.optim.Adam/AdamW/SGD on axon (foreach=True and fused=True) against the same optimizer on CPU: parameters and
state after several steps per dtype, the amsgrad/maximize/weight decay/nesterov/dampening variants, a tensor lr,
AMP's grad_scale/found_inf, no host fallback, and bad lists refused."""

import pytest
import torch

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
# (rtol, atol) on parameters and state after STEPS steps. Both sides use the same formulas in the same opmath type;
# differences are fused multiply-adds in PyTorch's vectorized CPU loops and, for half types, one rounding of a value
# near 1 (PyTorch's foreach sub/add with alpha rounds alpha * other to the half type first).
TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1.6e-2, 1.6e-2),
       torch.float16: (2e-3, 2e-3)}
SHAPES = [(8, 8), (8,), (3, 5, 7), (), (64, 3)]
STEPS = 3


def make_params(dtype, device):
    g = torch.Generator().manual_seed(0)
    return [torch.nn.Parameter(torch.randn(s, generator=g, dtype=torch.float64).to(dtype).to(device))
            for s in SHAPES]


def grads_for(step, dtype):
    g = torch.Generator().manual_seed(100 + step)
    return [torch.randn(s, generator=g, dtype=torch.float64).to(dtype) for s in SHAPES]


def run(make_opt, dtype, device):
    params = make_params(dtype, device)
    opt = make_opt(params)
    for step in range(STEPS):
        for p, g in zip(params, grads_for(step, dtype)):
            p.grad = g.to(device)
        opt.step()
    return params, opt


def assert_close(got, want, dtype):
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=rtol, atol=atol, equal_nan=True)


def compare(make_opt, dtype, make_cpu_opt=None):
    """make_opt's steps on axon against make_cpu_opt's (default: the same optimizer) on CPU."""
    cpu_params, cpu_opt = run(make_cpu_opt or make_opt, dtype, "cpu")
    torch_axon.reset_fallback_stats()
    axon_params, axon_opt = run(make_opt, dtype, "axon")
    assert torch_axon.fallback_stats() == {}
    for pa, pc in zip(axon_params, cpu_params):
        assert_close(pa, pc, dtype)
        sa, sc = axon_opt.state[pa], cpu_opt.state[pc]
        assert sa.keys() == sc.keys()
        for k in sc:
            if torch.is_tensor(sc[k]) and sc[k] is not None:
                assert_close(sa[k].to(sc[k].dtype), sc[k], dtype if sc[k].dtype == dtype else torch.float32)


ADAM = {
    "plain": {},
    "weight_decay": {"weight_decay": 0.1},
    "amsgrad": {"amsgrad": True, "weight_decay": 0.01},
    "maximize": {"maximize": True},
    "betas": {"betas": (0.5, 0.9), "eps": 1e-6},
}
SGD = {
    "plain": {},
    "momentum": {"momentum": 0.9},
    "nesterov": {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01},
    "dampening": {"momentum": 0.8, "dampening": 0.3},
    "maximize": {"momentum": 0.5, "maximize": True, "weight_decay": 0.1},
}
IMPL = {"foreach": {"foreach": True}, "fused": {"fused": True}}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("impl", IMPL, ids=list(IMPL))
@pytest.mark.parametrize("variant", ADAM, ids=list(ADAM))
@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW], ids=["Adam", "AdamW"])
def test_adam_and_adamw_steps_match_cpu(cls, variant, impl, dtype):
    compare(lambda p: cls(p, lr=0.01, **ADAM[variant], **IMPL[impl]), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("impl", IMPL, ids=list(IMPL))
@pytest.mark.parametrize("variant", SGD, ids=list(SGD))
def test_sgd_steps_match_cpu(variant, impl, dtype):
    # PyTorch's CPU fused SGD leaves float16/bfloat16 params unchanged in its vectorized loop (only the scalar tail
    # is stored), so for those the reference is CPU's foreach SGD, which has the documented semantics.
    cpu_impl = "foreach" if impl == "fused" and dtype in (torch.float16, torch.bfloat16) else impl
    compare(lambda p: torch.optim.SGD(p, lr=0.1, **SGD[variant], **IMPL[impl]), dtype,
            lambda p: torch.optim.SGD(p, lr=0.1, **SGD[variant], **IMPL[cpu_impl]))


@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD], ids=["Adam", "AdamW", "SGD"])
def test_fused_with_a_tensor_lr_matches_cpu(cls):
    extra = {"momentum": 0.9} if cls is torch.optim.SGD else {}
    compare(lambda p: cls(p, lr=torch.tensor(0.01), fused=True, **extra), torch.float32)


def fused_adam_state(device, dtype=torch.float32):
    g = torch.Generator().manual_seed(3)
    mk = lambda: [torch.randn(s, generator=g).to(dtype).to(device) for s in SHAPES]  # noqa: E731
    params, grads, avgs = mk(), mk(), mk()
    sqs = [t.abs() for t in mk()]
    steps = [torch.tensor(2.0, device=device) for _ in SHAPES]
    return params, grads, avgs, sqs, steps


@pytest.mark.parametrize("op", ["_fused_adam_", "_fused_adamw_"])
def test_grad_scale_unscales_grads_and_found_inf_skips_the_step(op):
    results = []
    for device in ("cpu", "axon"):
        params, grads, avgs, sqs, steps = fused_adam_state(device)
        scale = torch.tensor(128.0, device=device)
        found = torch.tensor(0.0, device=device)
        torch_axon.reset_fallback_stats()
        getattr(torch, op)(params, grads, avgs, sqs, [], steps, lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1,
                           eps=1e-8, amsgrad=False, maximize=False, grad_scale=scale, found_inf=found)
        before = [t.clone() for t in params + grads + avgs + sqs]
        found.fill_(1.0)
        getattr(torch, op)(params, grads, avgs, sqs, [], steps, lr=0.01, beta1=0.9, beta2=0.99, weight_decay=0.1,
                           eps=1e-8, amsgrad=False, maximize=False, grad_scale=scale, found_inf=found)
        for b, t in zip(before, params + grads + avgs + sqs):
            assert torch.equal(b.cpu(), t.cpu())  # found_inf: nothing changes
        if device == "axon":
            assert torch_axon.fallback_stats() == {}
        results.append(params + grads + avgs + sqs)
    for a, c in zip(results[1], results[0]):
        assert_close(a, c, torch.float32)


def test_fused_sgd_grad_scale_matches_cpu():
    results = []
    for device in ("cpu", "axon"):
        params, grads, bufs, _, _ = fused_adam_state(device)
        scale = torch.tensor(64.0, device=device)
        torch._fused_sgd_(params, grads, bufs, weight_decay=0.01, momentum=0.9, lr=0.1, dampening=0.0,
                          nesterov=True, maximize=False, is_first_step=False, grad_scale=scale, found_inf=None)
        results.append(params + grads + bufs)
    for a, c in zip(results[1], results[0]):
        assert_close(a, c, torch.float32)


def test_lists_of_different_lengths_are_refused():
    params, grads, avgs, sqs, steps = fused_adam_state("axon")
    with pytest.raises(RuntimeError, match="_fused_adam_: grads has 4 tensors but params has 5"):
        torch._fused_adam_(params, grads[:-1], avgs, sqs, [], steps, lr=0.01, beta1=0.9, beta2=0.99,
                           weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    with pytest.raises(RuntimeError, match="_fused_adam_: max_exp_avg_sqs has 0 tensors but params has 5"):
        torch._fused_adam_(params, grads, avgs, sqs, [], steps, lr=0.01, beta1=0.9, beta2=0.99,
                           weight_decay=0.0, eps=1e-8, amsgrad=True, maximize=False)
    with pytest.raises(RuntimeError, match="_fused_sgd_: momentum_buffer_list has 1 tensors but params has 5"):
        torch._fused_sgd_(params, grads, avgs[:1], weight_decay=0.0, momentum=0.9, lr=0.1, dampening=0.0,
                          nesterov=False, maximize=False, is_first_step=False)
    with pytest.raises(RuntimeError, match="Tensor lists must have the same number of tensors"):
        torch._foreach_addcdiv_(params, grads[:-1], avgs, 1.0)


def test_mismatched_state_shapes_raise_instead_of_writing_out_of_bounds():
    params, grads, avgs, sqs, steps = fused_adam_state("axon")
    avgs[0] = torch.zeros(3, device="axon")
    with pytest.raises(RuntimeError, match=r"_fused_adam_: exp_avgs\[0\] has shape \[3\] but params\[0\] has \[8, 8\]"):
        torch._fused_adam_(params, grads, avgs, sqs, [], steps, lr=0.01, beta1=0.9, beta2=0.99,
                           weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)


def test_a_parameter_list_is_one_command():
    params = [torch.nn.Parameter(torch.randn(64, 64, device="axon")) for _ in range(10)]
    for p in params:
        p.grad = torch.randn_like(p)
    opt = torch.optim.AdamW(params, lr=1e-3, fused=True)
    opt.step()
    torch.axon.synchronize()
    torch_axon._C._trace_clear()
    torch_axon._C._trace_enable(True)
    try:
        opt.step()
        torch.axon.synchronize()
        names = [r[0] for r in torch_axon._C._trace_records()]
    finally:
        torch_axon._C._trace_enable(False)
        torch_axon._C._trace_clear()
    assert names.count("fused_adamw") == 1, names


def test_optimizers_default_to_foreach_on_axon_and_allow_fused():
    # PyTorch lists the PrivateUse1 backend among the foreach and fused devices, so axon needs no registration.
    from torch.optim.optimizer import _default_to_fused_or_foreach
    params = [torch.zeros(3, device="axon")]
    assert _default_to_fused_or_foreach(params, differentiable=False, use_fused=False) == (False, True)
    assert _default_to_fused_or_foreach(params, differentiable=False, use_fused=True) == (True, False)


def test_the_functional_fused_variant_runs_natively():
    # Functionalization's _fused_adamw (no trailing underscore) is PyTorch's generated wrapper over the in-place op.
    params, grads, avgs, sqs, steps = fused_adam_state("axon")
    torch_axon.reset_fallback_stats()
    out = torch.ops.aten._fused_adamw(params, grads, avgs, sqs, [], steps, lr=0.1, beta1=0.9, beta2=0.99,
                                      weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
    cpu = fused_adam_state("cpu")
    want = torch.ops.aten._fused_adamw(*cpu[:4], [], cpu[4], lr=0.1, beta1=0.9, beta2=0.99, weight_decay=0.0,
                                       eps=1e-8, amsgrad=False, maximize=False)
    assert torch_axon.fallback_stats() == {}
    for got_list, want_list in zip(out, want):
        for g, w in zip(got_list, want_list):
            assert g.device.type == "axon"
            assert_close(g, w, torch.float32)

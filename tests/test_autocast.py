"""Autocast on axon: torch.autocast("axon", dtype=torch.bfloat16 or torch.float16) applies CUDA's op policies
(ATen/autocast_mode.h): matrix products and convolutions run in the low-precision dtype, CUDA's fp32 ops in float32,
promote ops in the widest input dtype.

Results are compared with the CPU computing the same op on the inputs cast as the policy casts them, within the
low-precision dtype's tolerance (TOLERANCES: bfloat16 rtol 1.6e-2 / atol 1e-2, float16 1e-3 / 1e-3, float32
1e-5 / 1e-5).
"""

import pytest
import torch
import torch.nn.functional as F

from axon_testing import assert_close, dtype_id

LOW = [torch.bfloat16, torch.float16]
low_dtypes = pytest.mark.parametrize("dtype", LOW, ids=dtype_id)


def _inputs(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g) for s in shapes]


# (name, shapes, op): float32 inputs; the op runs in the low-precision dtype under autocast
LOWER_PRECISION_OPS = [
    ("mm", [(4, 6), (6, 3)], torch.mm),
    ("matmul", [(2, 4, 6), (6, 3)], torch.matmul),
    ("matmul_operator", [(4, 6), (6, 3)], lambda a, b: a @ b),
    ("linear", [(5, 6), (3, 6), (3,)], F.linear),
    ("addmm", [(3,), (4, 6), (6, 3)], torch.addmm),
    ("bmm", [(2, 4, 6), (2, 6, 3)], torch.bmm),
    ("baddbmm", [(2, 4, 3), (2, 4, 6), (2, 6, 3)], torch.baddbmm),
    ("mv", [(4, 6), (6,)], torch.mv),
    ("einsum", [(4, 6), (6, 3)], lambda a, b: torch.einsum("ij,jk->ik", a, b)),
    ("conv1d", [(2, 3, 9), (4, 3, 3)], F.conv1d),
    ("conv2d", [(2, 3, 7, 7), (4, 3, 3, 3), (4,)], lambda x, w, b: F.conv2d(x, w, b, padding=1)),
    ("conv_transpose2d", [(2, 3, 5, 5), (3, 4, 3, 3)], F.conv_transpose2d),
    ("prelu", [(3, 4), (4,)], F.prelu),
    ("sdpa", [(2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 8)], F.scaled_dot_product_attention),
]

# (name, shapes, op): low-precision inputs; the op runs in float32 under autocast (CUDA's fp32 and fp32_set_opt_dtype
# lists)
FP32_OPS = [
    ("exp", [(4, 5)], torch.exp),
    ("log", [(4, 5)], lambda x: torch.log(x.abs())),
    ("rsqrt", [(4, 5)], lambda x: torch.rsqrt(x.abs())),
    ("pow", [(4, 5)], lambda x: torch.pow(x, 2)),
    ("softmax", [(4, 5)], lambda x: torch.softmax(x, 1)),
    ("log_softmax", [(4, 5)], lambda x: F.log_softmax(x, 1)),
    ("layer_norm", [(4, 5)], lambda x: F.layer_norm(x, (5,))),
    ("group_norm", [(2, 4, 3)], lambda x: F.group_norm(x, 2)),
    ("sum", [(4, 5)], torch.sum),
    ("sum_dim", [(4, 5)], lambda x: x.sum(1)),
    ("cumsum", [(4, 5)], lambda x: torch.cumsum(x, 1)),
    ("prod", [(4, 5)], lambda x: torch.prod(x, 1)),
    ("mse_loss", [(4, 5), (4, 5)], F.mse_loss),
    ("l1_loss", [(4, 5), (4, 5)], F.l1_loss),
    ("logsumexp", [(4, 5)], lambda x: torch.logsumexp(x, 1)),
    ("norm", [(4, 5)], lambda x: torch.norm(x)),
    ("cdist", [(4, 5), (3, 5)], torch.cdist),
    ("bce_with_logits", [(4, 5), (4, 5)], lambda x, y: F.binary_cross_entropy_with_logits(x, y.abs().clamp(max=1))),
]


@pytest.mark.parametrize("name, shapes, op", LOWER_PRECISION_OPS, ids=[o[0] for o in LOWER_PRECISION_OPS])
@low_dtypes
def test_lower_precision_ops_run_in_the_autocast_dtype(name, shapes, op, dtype):
    args = _inputs(*shapes)
    with torch.autocast("axon", dtype=dtype):
        got = op(*[a.to("axon") for a in args])
    assert got.device.type == "axon"
    assert got.dtype == dtype
    expected = op(*[a.to(dtype) for a in args])
    # within a few low-precision epsilons (of the largest value: products accumulate) of the float32 result, and of
    # CPU's own low-precision result: on a CPU without float16 arithmetic (AMD Zen 4) CPU's conv_transpose2d rounds
    # its partial sums to float16 and lands 0.013 from float32's result where axon's lands 0.007
    reference = op(*args)
    budget = 8 * torch.finfo(dtype).eps * reference.abs().max().item()
    assert (got.float().cpu() - reference).abs().max().item() <= budget
    assert (got.float().cpu() - expected.float()).abs().max().item() <= 2 * budget


@pytest.mark.parametrize("name, shapes, op", FP32_OPS, ids=[o[0] for o in FP32_OPS])
@low_dtypes
def test_fp32_ops_run_in_float32_even_on_low_precision_inputs(name, shapes, op, dtype):
    args = [a.to(dtype) for a in _inputs(*shapes)]
    with torch.autocast("axon", dtype=dtype):
        got = op(*[a.to("axon") for a in args])
    assert got.dtype == torch.float32
    assert_close(got, op(*[a.float() for a in args]))


@low_dtypes
def test_promote_ops_run_in_the_widest_input_dtype(dtype):
    a, b, c = _inputs((4,), (4,), (4,))
    a, b, c = a.to("axon"), b.to("axon").to(dtype), c.to("axon").to(dtype)
    with torch.autocast("axon", dtype=dtype):
        assert torch.addcmul(a, b, c).dtype == torch.float32
        assert torch.atan2(b, a).dtype == torch.float32
        dot = torch.dot(a, b)  # mixed dtypes are an error without autocast
        assert torch.addcmul(b, b, c).dtype == dtype
    assert dot.dtype == torch.float32
    assert_close(dot, torch.dot(a.cpu(), b.cpu().float()))
    with pytest.raises(RuntimeError, match="dtype"):
        torch.dot(a, b)


@low_dtypes
def test_ops_without_a_policy_keep_their_input_dtypes(dtype):
    x = _inputs((4, 5))[0].to("axon")
    with torch.autocast("axon", dtype=dtype):
        assert torch.relu(x).dtype == torch.float32
        assert (x + 1).dtype == torch.float32
        assert torch.relu(x.to(dtype)).dtype == dtype


@low_dtypes
def test_autocast_leaves_float64_and_integer_matrix_products_alone(dtype):
    a, b = _inputs((3, 4), (4, 2))
    with torch.autocast("axon", dtype=dtype):
        assert torch.mm(a.double().to("axon"), b.double().to("axon")).dtype == torch.float64
        ints = torch.mm(a.long().to("axon"), b.long().to("axon"))
    assert ints.dtype == torch.int64
    assert torch.equal(ints.cpu(), torch.mm(a.long(), b.long()))


@low_dtypes
def test_autocast_state_is_visible_through_torch_for_the_axon_device(dtype):
    assert not torch.is_autocast_enabled("axon")
    with torch.autocast("axon", dtype=dtype):
        assert torch.is_autocast_enabled("axon")
        assert torch.get_autocast_dtype("axon") == dtype
        assert not torch.is_autocast_enabled("cpu")
        assert not torch.is_autocast_enabled()  # the no-argument form is CUDA's
    assert not torch.is_autocast_enabled("axon")


def test_autocast_without_a_dtype_uses_float16_as_on_cuda():
    assert torch.get_autocast_dtype("axon") == torch.float16
    a, b = _inputs((2, 3), (3, 2))
    with torch.autocast("axon"):
        assert torch.mm(a.to("axon"), b.to("axon")).dtype == torch.float16


def test_amp_supported_dtypes_are_bfloat16_and_float16():
    assert set(torch.axon.get_amp_supported_dtype()) == {torch.bfloat16, torch.float16}


def test_autocast_with_an_unsupported_dtype_warns_and_is_disabled():
    a, b = _inputs((2, 3), (3, 2))
    with pytest.warns(UserWarning, match="not supported"):
        with torch.autocast("axon", dtype=torch.float64):
            assert not torch.is_autocast_enabled("axon")
            assert torch.mm(a.to("axon"), b.to("axon")).dtype == torch.float32


@low_dtypes
def test_a_nested_disabled_region_runs_in_float32(dtype):
    a, b = [t.to("axon") for t in _inputs((2, 3), (3, 2))]
    with torch.autocast("axon", dtype=dtype):
        with torch.autocast("axon", enabled=False):
            assert not torch.is_autocast_enabled("axon")
            assert torch.mm(a, b).dtype == torch.float32
        assert torch.is_autocast_enabled("axon")
        assert torch.mm(a, b).dtype == dtype


def test_a_nested_region_may_change_the_dtype():
    a, b = [t.to("axon") for t in _inputs((2, 3), (3, 2))]
    with torch.autocast("axon", dtype=torch.float16):
        with torch.autocast("axon", dtype=torch.bfloat16):
            assert torch.mm(a, b).dtype == torch.bfloat16
        assert torch.mm(a, b).dtype == torch.float16


def test_cpu_autocast_does_not_affect_axon_tensors():
    a, b = [t.to("axon") for t in _inputs((2, 3), (3, 2))]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.mm(a, b).dtype == torch.float32


def test_autocast_as_a_decorator():
    @torch.autocast("axon", dtype=torch.bfloat16)
    def f(x, w):
        return F.linear(x, w)

    x, w = [t.to("axon") for t in _inputs((2, 3), (4, 3))]
    assert f(x, w).dtype == torch.bfloat16


def test_binary_cross_entropy_is_refused_under_autocast_as_on_cuda():
    p, y = [t.sigmoid().to("axon") for t in _inputs((4,), (4,))]
    with torch.autocast("axon", dtype=torch.float16):
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(p, y)
    F.binary_cross_entropy(p, y)  # fine outside autocast


@low_dtypes
def test_backward_through_autocast_gives_float32_gradients_close_to_cpu(dtype):
    x, w, b, target = _inputs((8, 6), (4, 6), (4,), (8, 4))
    results = {}
    for device in ("cpu", "axon"):
        params = [t.to(device, copy=True).requires_grad_() for t in (w, b)]
        with torch.autocast(device, dtype=dtype):
            out = F.linear(x.to(device), *params)
            loss = F.mse_loss(out.float(), target.to(device))
        loss.backward()
        assert out.dtype == dtype and all(p.grad.dtype == torch.float32 for p in params)
        results[device] = [loss.detach()] + [p.grad for p in params]
    for got, want in zip(results["axon"], results["cpu"]):
        assert_close(got, want.cpu(), dtype=dtype)


def test_grad_scaler_steps_match_cpu():
    x, target = _inputs((8, 6), (8, 4))
    final = {}
    for device in ("cpu", "axon"):
        torch.manual_seed(0)
        model = torch.nn.Linear(6, 4).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler(device, init_scale=2.0**10)
        for _ in range(3):
            opt.zero_grad()
            with torch.autocast(device, dtype=torch.bfloat16):
                loss = F.mse_loss(model(x.to(device)).float(), target.to(device))
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        final[device] = (scaler.get_scale(), [p.detach().cpu() for p in model.parameters()])
    assert final["axon"][0] == final["cpu"][0]
    for got, want in zip(final["axon"][1], final["cpu"][1]):
        assert_close(got, want, dtype=torch.float32)

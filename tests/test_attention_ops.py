"""F.scaled_dot_product_attention on libaxon's fused attention kernel (forward and backward): results against
PyTorch on CPU, causal, bool and float masks, GQA, the layouts HF models pass (heads split by view + transpose,
masks expanded from one row: read as they are, no copies), decoding steps, dropout (determinism, dropped fraction, gradients against the
math formula with the mask recovered), gradcheck, nn.MultiheadAttention and a Llama-style block with no host
fallback, calls the kernel cannot take (PyTorch's math decomposition instead), and bad input.

Reference: F.scaled_dot_product_attention on CPU in float64 from the same (rounded) inputs, rounded to the dtype.
Tolerances (rtol, atol) below: float32 is computed in float32 (sums over up to a few hundred terms), the half types
in float32 and rounded once, so they differ by about one rounding of the output dtype; gradients sum more terms.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
TOL = {torch.float32: (1e-5, 2e-5), torch.float64: (1e-10, 1e-10), torch.bfloat16: (2e-2, 2e-2),
       torch.float16: (4e-3, 2e-3)}
GRAD_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-9), torch.bfloat16: (4e-2, 6e-2),
            torch.float16: (1e-2, 1e-2)}
FUSED = "ScaledDotProductFusedAttentionOverrideableBackward0"


def sample(shape, dtype, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def close(result, expected, tol):
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape)
    rtol, atol = tol[expected.dtype]
    torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)


def uses_fused_kernel(out):
    """Whether the autograd graph of out holds the fused attention's backward node."""
    seen, todo = set(), [out.grad_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        if type(fn).__name__ == FUSED:
            return True
        todo.extend(f for f, _ in fn.next_functions)
    return False


def run(device, inputs, grad, dtype, **kw):
    """sdpa on device (CPU: in float64) with gradients for q, k, v; returns (out, [dq, dk, dv], grad_fn name)."""
    work = torch.float64 if device == "cpu" else dtype
    leaves = [t.detach().to(device, work, copy=True).requires_grad_() for t in inputs[:3]]
    mask = inputs[3] if len(inputs) > 3 else None
    if mask is not None:
        mask = mask.to(device, mask.dtype if mask.dtype == torch.bool else work)
    out = F.scaled_dot_product_attention(*leaves, attn_mask=mask, **kw)
    out.backward(grad.to(device, work))
    return out.detach().to(dtype), [t.grad.to(dtype) for t in leaves[:3]], type(out.grad_fn).__name__


def check(dtype, shapes, mask=None, **kw):
    (bq, hq, lq, e), (bk, hk, s, ev) = shapes
    q, k = sample((bq, hq, lq, e), dtype, 1), sample((bk, hk, s, e), dtype, 2)
    v, g = sample((bk, hk, s, ev), dtype, 3), sample((bq, hq, lq, ev), dtype, 4)
    inputs = [q, k, v] + ([mask] if mask is not None else [])
    ref, ref_grads, _ = run("cpu", inputs, g, dtype, **kw)
    torch_axon.reset_fallback_stats()
    out, grads, fn = run("axon", inputs, g, dtype, **kw)
    assert torch_axon.fallback_stats() == {}
    assert fn == FUSED  # the fused kernel ran, not the math decomposition
    close(out, ref, TOL)
    for got, want in zip(grads, ref_grads):
        close(got, want, GRAD_TOL)


CASES = {
    "plain": (((2, 3, 70, 16), (2, 3, 130, 16)), {}),
    "one": (((1, 1, 1, 1), (1, 1, 1, 1)), {}),
    "ev_differs_scale": (((2, 2, 33, 8), (2, 2, 65, 24)), {"scale": 0.7}),
    "causal": (((1, 2, 100, 8), (1, 2, 100, 8)), {"is_causal": True}),
    "causal_l_gt_s": (((1, 2, 100, 8), (1, 2, 70, 8)), {"is_causal": True}),
    "causal_l_lt_s": (((1, 2, 50, 8), (1, 2, 150, 8)), {"is_causal": True}),
    "gqa": (((2, 6, 40, 8), (2, 2, 33, 8)), {"enable_gqa": True}),
    "gqa_causal_mqa": (((1, 4, 70, 8), (1, 1, 70, 8)), {"enable_gqa": True, "is_causal": True}),
    # head dims of 32 and 64: bfloat16's forward on AMX tiles where the CPU has them (32-row and 256-key blocks)
    "amx_gqa": (((2, 4, 70, 64), (2, 2, 300, 64)), {"enable_gqa": True}),
    "amx_causal_ev_differs": (((1, 2, 300, 32), (1, 2, 300, 48)), {"is_causal": True}),
    # a few query rows with head dims of 64: bfloat16's forward on AVX512-BF16 dot products where the CPU has them
    "few_rows_gqa": (((2, 8, 3, 64), (2, 2, 300, 64)), {"enable_gqa": True}),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES)
def test_sdpa_forward_and_backward_match_cpu(case, dtype):
    shapes, kw = CASES[case]
    check(dtype, shapes, **kw)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_float_mask_with_minus_inf_and_a_fully_masked_row_matches_cpu(dtype):
    mask = sample((67, 66), torch.float64, 5).to(dtype)
    mask[::3, ::2] = float("-inf")
    mask[7] = float("-inf")  # CPU gives 0 for a fully masked row, and no gradient through it
    check(dtype, ((2, 2, 67, 8), (2, 2, 66, 8)), mask=mask)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 1, 1, 70), (9, 70), (2, 3, 9, 70)], ids=str)
def test_bool_mask_broadcasts_and_matches_cpu(shape, dtype):
    g = torch.Generator().manual_seed(6)
    mask = torch.rand(shape, generator=g) > 0.3
    check(dtype, ((2, 3, 9, 8), (2, 3, 70, 8)), mask=mask)


def test_strided_inputs_match_cpu():
    # [B, L, H, E] memory seen as [B, H, L, E], as attention modules produce it
    q, k, v = (sample((2, 20, 3, 8), torch.float32, i).transpose(1, 2) for i in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch_axon.reset_fallback_stats()
    out = F.scaled_dot_product_attention(q.to("axon"), k.to("axon"), v.to("axon"), is_causal=True)
    assert torch_axon.fallback_stats() == {}
    close(out, ref, TOL)


# ---- the layouts HF models pass: heads split by view + transpose, masks expanded from one row ----

COPIES = {"aten.clone.default", "aten.copy_.default", "aten._to_copy.default", "aten.contiguous.default",
          "aten.expand_copy.default"}


class Ops(TorchDispatchMode):
    """The aten ops that run inside the block."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


def hf_attention(x, heads, **kw):
    """GPT-2's attention core: x [B, L, 3 * C] split into q, k, v, heads split off by view + transpose, sdpa, and
    the heads merged back by transpose + reshape."""
    b, n, c3 = x.shape
    c = c3 // 3
    q, k, v = (t.view(b, n, heads, c // heads).transpose(1, 2) for t in x.split(c, dim=2))
    out = F.scaled_dot_product_attention(q, k, v, **kw)
    return out, out.transpose(1, 2).reshape(b, n, c)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 70, 3, 24), (1, 40, 2, 32)], ids=str)
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_heads_split_by_transpose_run_without_copies_and_match_cpu(shape, causal, dtype):
    b, n, h, e = shape
    x, g = sample((b, n, 3 * h * e), dtype, 1), sample((b, n, h * e), dtype, 2)
    xr = x.to(torch.float64, copy=True).requires_grad_()
    ref_sdpa, ref = hf_attention(xr, h, is_causal=causal)
    ref.backward(g.to(torch.float64))
    xa, ga = x.to("axon").requires_grad_(), g.to("axon")
    torch_axon.reset_fallback_stats()
    with Ops() as ops:
        out_sdpa, out = hf_attention(xa, h, is_causal=causal)
        out.backward(ga)
    assert torch_axon.fallback_stats() == {}
    assert uses_fused_kernel(out)
    # CPU lays the output out like q ([B, L, H, E] memory), so the merge back is a view and nothing is copied
    assert out_sdpa.stride() == ref_sdpa.stride()
    assert not COPIES & set(ops.names), ops.names
    close(out.detach(), ref.detach().to(dtype), TOL)
    close(xa.grad, xr.grad.to(dtype), GRAD_TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["float", "bool"])
def test_masks_expanded_from_one_row_match_cpu_forward_and_backward(kind, dtype):
    # BERT: a [B, 1, 1, S] padding mask expanded to [B, 1, L, S] (stride 0 along L) is read as it is
    b, h, n, e = 2, 3, 70, 16
    pad = torch.zeros(b, 1, 1, n, dtype=torch.bool)
    pad[0, ..., 50:] = True
    small = pad.logical_not() if kind == "bool" else torch.where(pad, -1e4, 0.0).to(dtype)
    q, k, v, g = (sample((b, h, n, e), dtype, i) for i in range(4))
    results = []
    for device, work in (("cpu", torch.float64), ("axon", dtype)):
        leaves = [t.to(device, work, copy=True).requires_grad_() for t in (q, k, v)]
        mask = small.to(device, small.dtype if kind == "bool" else work).expand(b, 1, n, n)
        assert mask.stride(2) == 0
        grad = g.to(device, work)
        torch_axon.reset_fallback_stats()
        with Ops() as ops:
            out = F.scaled_dot_product_attention(*leaves, attn_mask=mask)
            out.backward(grad)
        if device == "axon":
            assert torch_axon.fallback_stats() == {}
            assert uses_fused_kernel(out)
            assert not COPIES & set(ops.names), ops.names
        results.append([out.detach().to(dtype)] + [t.grad.to(dtype) for t in leaves])
    close(results[1][0], results[0][0], TOL)
    for got, want in zip(results[1][1:], results[0][1:]):
        close(got, want, GRAD_TOL)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_decode_step_with_gqa_and_a_padding_mask_matches_cpu(dtype):
    # one or two new query rows against a cache: the few-row products
    mask = torch.zeros(2, 1, 1, 130)
    mask[1, ..., :9] = float("-inf")
    for lq in (1, 2):
        check(dtype, ((2, 8, lq, 32), (2, 4, 130, 32)), mask=mask.to(dtype), enable_gqa=True, scale=0.3)


def test_gradcheck_in_float64():
    inputs = [sample(s, torch.float64, i).to("axon").requires_grad_() for i, s in
              enumerate([(1, 2, 5, 3), (1, 2, 6, 3), (1, 2, 6, 4)])]
    mask = (sample((5, 6), torch.float64, 9)).to("axon")
    assert torch.autograd.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), inputs)
    assert torch.autograd.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), inputs)
    assert torch.autograd.gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), inputs)


# ---- dropout ----

def dropout_mask(p, seed, shape):
    """The keep mask (1/0) sdpa on axon applies for this seed: with q = 0 every weight is 1/S, and v = the identity
    makes out[..., i, j] = keep[i, j] / (S * (1 - p))."""
    b, h, l, s = shape
    torch.axon.manual_seed(seed)
    q = torch.zeros(b, h, l, 4, device="axon")
    k = torch.zeros(b, h, s, 4, device="axon")
    v = torch.eye(s, device="axon").expand(b, h, s, s).contiguous()
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=p).cpu()
    keep = out * s * (1 - p)
    assert torch.allclose(keep, keep.round(), atol=1e-4)  # every entry is 0 or 1
    return keep.round()


def test_dropout_with_the_same_seed_gives_the_same_result():
    q, k, v = (sample((2, 2, 30, 8), torch.float32, i).to("axon") for i in range(3))
    results = []
    for seed in (3, 3, 4):
        torch.axon.manual_seed(seed)
        results.append(F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).cpu())
    assert torch.equal(results[0], results[1])
    assert not torch.equal(results[0], results[2])
    torch.axon.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).cpu()
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).cpu()  # the generator moved on
    assert torch.equal(a, results[0]) and not torch.equal(a, b)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_drops_about_p_of_the_weights(p):
    keep = dropout_mask(p, 11, (2, 4, 64, 128))
    dropped = 1 - keep.mean().item()
    n = keep.numel()
    assert abs(dropped - p) < 5 * math.sqrt(p * (1 - p) / n), dropped


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_dropout_gradients_match_the_math_formula_with_the_mask_recovered(dtype):
    p, seed, shape = 0.4, 21, (2, 2, 40, 33)
    keep = dropout_mask(p, seed, shape).to(torch.float64)
    q, k, v, g = (sample(s, dtype, i) for i, s in
                  enumerate([(2, 2, 40, 8), (2, 2, 33, 8), (2, 2, 33, 8), (2, 2, 40, 8)]))
    # reference: softmax(q k^T * scale) * keep / (1 - p) @ v in float64 on CPU
    lq, lk, lv = (t.to(torch.float64, copy=True).requires_grad_() for t in (q, k, v))
    w = torch.softmax(lq @ lk.transpose(-2, -1) / math.sqrt(8), -1) * keep / (1 - p)
    ref = w @ lv
    ref.backward(g.to(torch.float64))
    torch.axon.manual_seed(seed)
    aq, ak, av = (t.to("axon").requires_grad_() for t in (q, k, v))
    out = F.scaled_dot_product_attention(aq, ak, av, dropout_p=p)
    out.backward(g.to("axon"))
    assert type(out.grad_fn).__name__ == FUSED
    close(out.detach(), ref.detach().to(dtype), TOL)
    for got, want in zip((aq, ak, av), (lq, lk, lv)):
        close(got.grad, want.grad.to(dtype), GRAD_TOL)


# ---- modules ----

def test_multihead_attention_runs_natively_and_matches_cpu():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(32, 4, batch_first=True)
    x = sample((3, 17, 32), torch.float32, 1)
    key_padding = torch.zeros(3, 17, dtype=torch.bool)
    key_padding[1, 12:] = True
    ref, _ = mha(x, x, x, need_weights=False, key_padding_mask=key_padding)
    ref.sum().backward()
    ref_grad = mha.in_proj_weight.grad.clone()
    mha.zero_grad()
    mha_ax = mha.to("axon")
    torch_axon.reset_fallback_stats()
    out, _ = mha_ax(x.to("axon"), x.to("axon"), x.to("axon"), need_weights=False,
                    key_padding_mask=key_padding.to("axon"))
    out.sum().backward()
    assert torch_axon.fallback_stats() == {}
    assert uses_fused_kernel(out)
    close(out.detach(), ref.detach(), GRAD_TOL)
    close(mha_ax.in_proj_weight.grad, ref_grad, GRAD_TOL)


class LlamaAttention(torch.nn.Module):
    """RMS norm, q/k/v projections, rotary embedding, causal GQA attention, output projection, SwiGLU MLP."""

    def __init__(self, dim=64, heads=8, kv_heads=2):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, dim // heads
        self.norm = torch.nn.RMSNorm(dim)
        self.q = torch.nn.Linear(dim, heads * self.hd, bias=False)
        self.k = torch.nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.v = torch.nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.o = torch.nn.Linear(heads * self.hd, dim, bias=False)
        self.up = torch.nn.Linear(dim, 2 * dim, bias=False)
        self.gate = torch.nn.Linear(dim, 2 * dim, bias=False)
        self.down = torch.nn.Linear(2 * dim, dim, bias=False)

    def rotate(self, x, cos, sin):
        x1, x2 = x[..., : self.hd // 2], x[..., self.hd // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        y = self.norm(x)
        q = self.q(y).view(b, t, self.h, self.hd).transpose(1, 2)
        k = self.k(y).view(b, t, self.kvh, self.hd).transpose(1, 2)
        v = self.v(y).view(b, t, self.kvh, self.hd).transpose(1, 2)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, -1))
        y = self.norm(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


def test_llama_style_block_runs_natively_and_matches_cpu():
    torch.manual_seed(0)
    block = LlamaAttention()
    t, hd = 24, 8
    freqs = torch.outer(torch.arange(t, dtype=torch.float32), 1.0 / 10000 ** (torch.arange(0, hd, 2) / hd))
    cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()
    x = sample((2, t, 64), torch.float32, 3)
    ref = block(x, cos, sin)
    ref.square().mean().backward()
    ref_grads = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    block.to("axon")
    torch_axon.reset_fallback_stats()
    out = block(x.to("axon"), cos.to("axon"), sin.to("axon"))
    out.square().mean().backward()
    assert torch_axon.fallback_stats() == {}
    assert uses_fused_kernel(out)
    close(out.detach(), ref.detach(), GRAD_TOL)
    for p, want in zip(block.parameters(), ref_grads):
        close(p.grad, want, GRAD_TOL)


# ---- calls the kernel does not take, and bad input ----

def test_mask_that_needs_a_gradient_goes_through_the_math_decomposition():
    q, k, v = (sample((1, 2, 6, 4), torch.float32, i) for i in range(3))
    m = sample((6, 6), torch.float32, 7)
    grads = []
    for device in ("cpu", "axon"):
        mask = m.to(device, copy=True).requires_grad_()
        out = F.scaled_dot_product_attention(q.to(device), k.to(device), v.to(device), attn_mask=mask)
        assert not uses_fused_kernel(out)
        out.sum().backward()
        grads.append((out.detach().cpu(), mask.grad.cpu()))
    close(grads[1][0], grads[0][0], TOL)
    close(grads[1][1], grads[0][1], GRAD_TOL)


def test_math_backend_chosen_by_the_user_still_works():
    q, k, v = (sample((1, 2, 6, 4), torch.float32, i) for i in range(3))
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q.to("axon"), k.to("axon"), v.to("axon"), is_causal=True)
    close(out, F.scaled_dot_product_attention(q, k, v, is_causal=True), TOL)


def test_three_d_inputs_go_through_the_math_decomposition():
    q, k, v = (sample((2, 6, 4), torch.float32, i) for i in range(3))
    out = F.scaled_dot_product_attention(q.to("axon"), k.to("axon"), v.to("axon"))
    close(out, F.scaled_dot_product_attention(q, k, v), TOL)


def test_bad_input_raises_clear_errors():
    ax = lambda *s: torch.randn(*s, device="axon")  # noqa: E731
    with pytest.raises(RuntimeError):  # head dims of q and k differ: PyTorch's own check
        F.scaled_dot_product_attention(ax(1, 2, 4, 8), ax(1, 2, 4, 6), ax(1, 2, 4, 8))
    with pytest.raises(RuntimeError, match="heads"):  # 3 heads do not divide 4, with enable_gqa
        F.scaled_dot_product_attention(ax(1, 4, 4, 8), ax(1, 3, 4, 8), ax(1, 3, 4, 8), enable_gqa=True)
    with pytest.raises(RuntimeError, match="attn_mask"):
        F.scaled_dot_product_attention(ax(1, 2, 4, 8), ax(1, 2, 4, 8), ax(1, 2, 4, 8),
                                       attn_mask=ax(4, 4), is_causal=True)
    fused = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    with pytest.raises(RuntimeError, match=r"attention: q's 4 heads are not a multiple of k and v's 3 heads"):
        fused(ax(1, 4, 4, 8), ax(1, 3, 4, 8), ax(1, 3, 4, 8))
    with pytest.raises(RuntimeError, match=r"attention: shapes do not fit"):
        fused(ax(1, 2, 4, 8), ax(1, 2, 4, 8), ax(1, 2, 5, 8))
    with pytest.raises(RuntimeError, match=r"mask shape \[3, 4\] does not broadcast"):
        fused(ax(1, 2, 4, 8), ax(1, 2, 4, 8), ax(1, 2, 4, 8), attn_bias=ax(3, 4))
    with pytest.raises(RuntimeError, match="4-d"):
        fused(ax(2, 4, 8), ax(2, 4, 8), ax(2, 4, 8))


@pytest.mark.parametrize("needs", [(True, False, False), (False, True, True), (False, False, True)],
                         ids=["q", "kv", "v"])
def test_backward_computes_only_the_gradients_asked_for(needs):
    base = [sample(s, torch.float32, i) for i, s in enumerate([(1, 2, 70, 8), (1, 2, 66, 8), (1, 2, 66, 8)])]
    grads = []
    for device in ("cpu", "axon"):
        leaves = [t.to(device, copy=True).requires_grad_(n) for t, n in zip(base, needs)]
        F.scaled_dot_product_attention(*leaves, is_causal=True).sum().backward()
        grads.append([t.grad for t in leaves])
    for want, got in zip(*grads):
        assert (want is None) == (got is None)
        if want is not None:
            close(got, want, GRAD_TOL)


@pytest.mark.skipif(torch.axon.device_count() < 2, reason="needs 2 axon devices (AXON_DEVICE_COUNT=2, as conftest sets)")
def test_attention_on_the_second_device_stays_there_and_matches_cpu():
    q, k, v = (sample((1, 2, 20, 8), torch.float32, i) for i in range(3))
    leaves = [t.to("axon:1").requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=True, dropout_p=0.0)
    out.sum().backward()
    assert out.device == torch.device("axon:1") and all(t.grad.device == out.device for t in leaves)
    close(out.detach(), F.scaled_dot_product_attention(q, k, v, is_causal=True), TOL)

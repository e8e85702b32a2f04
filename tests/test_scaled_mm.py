"""torch._scaled_mm on float8 operands: natively on axon (no host fallback), the same bits as PyTorch CPU's float32
emulation for every scale form CPU takes (one scale, per-row and per-column scales), with a bias, for float32,
bfloat16 and float16 results; float8 results rounded as CPU rounds them on this machine, bit for bit; _scaled_mm_v2
with one tensor-wise or row-wise scale per operand; bad operands raise CPU's errors."""

import pytest
import torch

import torch_axon

F8 = [torch.float8_e4m3fn, torch.float8_e5m2]


def operands(dtype_a, dtype_b, m=16, k=48, n=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) * 2).to(dtype_a)
    b = (torch.randn(n, k, generator=g) * 2).to(dtype_b).t()   # column-major, as the CUDA kernels want it
    return a, b


def both(*args, **kwargs):
    """(_scaled_mm on axon copies, asserting no fallback, as a CPU tensor; _scaled_mm on CPU)."""
    dev = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in args]
    kw = {k: v.to("axon") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    torch_axon.reset_fallback_stats()
    out = torch._scaled_mm(*dev, **kw)
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    assert out.device.type == "axon"
    return out.cpu(), torch._scaled_mm(*args, **kwargs)


# float32 sums of exactly representable float8 products: the order of the GEMM's additions may differ from MKL's by
# a float32 rounding, which a narrower output usually rounds away, but near one of its rounding boundaries turns into
# one unit of the output's last place: 2^-8 relative for bf16, 2^-11 for f16.
RTOL = {torch.float32: 1e-5, torch.bfloat16: 2 ** -8, torch.float16: 2 ** -11}


def same(result, expected):
    assert result.dtype == expected.dtype and result.shape == expected.shape
    torch.testing.assert_close(result.float(), expected.float(), rtol=RTOL[expected.dtype], atol=1e-4)


@pytest.mark.parametrize("fa", F8, ids=str)
@pytest.mark.parametrize("fb", F8, ids=str)
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_tensorwise_scales_match_cpu(fa, fb, out_dtype):
    a, b = operands(fa, fb)
    same(*both(a, b, torch.tensor(0.5), torch.tensor(2.0), out_dtype=out_dtype))


def test_bias_and_row_and_column_scales_match_cpu():
    a, b = operands(torch.float8_e4m3fn, torch.float8_e4m3fn, m=9, k=32, n=40, seed=1)
    g = torch.Generator().manual_seed(2)
    sa, sb = torch.rand(9, 1, generator=g) + 0.5, torch.rand(1, 40, generator=g) + 0.5
    same(*both(a, b, sa, sb, out_dtype=torch.bfloat16))
    bias = torch.randn(40, generator=g)
    same(*both(a, b, torch.tensor(1.5), torch.tensor(0.25), bias=bias, out_dtype=torch.float32))
    same(*both(a, b, torch.tensor(1.5), torch.tensor(0.25), bias=bias.bfloat16(), out_dtype=torch.bfloat16))


@pytest.mark.parametrize("fb", F8, ids=str)
@pytest.mark.parametrize("fa", F8, ids=str)
@pytest.mark.parametrize("scale_result", [None, 4.0, 3.0], ids=["none", "4", "3"])
def test_float8_results_match_cpu_bit_for_bit(fa, fb, scale_result):
    # CPU rounds a float8 result one of two ways, by machine and operands: oneDNN's kernel (through float16, an
    # e4m3fn overflow NaN, scale_result not applied) or its emulation (times 1 / scale_result, a saturating cast).
    # Small integers keep every float32 sum exact, so both sides round the very same products.
    g = torch.Generator().manual_seed(6)
    a = torch.randint(-8, 9, (12, 16), generator=g).float().to(fa)
    b = torch.randint(-8, 9, (20, 16), generator=g).float().to(fb).t()
    args = (a, b, torch.tensor(4.0), torch.tensor(1.5))
    # scale_result counts only with out_dtype given (CPU ignores it otherwise)
    kw = {} if scale_result is None else {"scale_result": torch.tensor(scale_result)}
    if scale_result == 3.0:
        kw["out_dtype"] = fa
    torch_axon.reset_fallback_stats()
    result = torch._scaled_mm(*[t.to("axon") for t in args],
                              **{k: v.to("axon") if isinstance(v, torch.Tensor) else v for k, v in kw.items()})
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    expected = torch._scaled_mm(*args, **kw)
    assert result.dtype == fa
    assert torch.equal(result.cpu().view(torch.uint8), expected.view(torch.uint8))
    if scale_result is None and fa == torch.float8_e4m3fn:
        assert expected.float().isnan().any() or expected.float().abs().max() == 448  # overflow is exercised


def test_out_variant_and_empty_inner_dim():
    a, b = operands(torch.float8_e5m2, torch.float8_e5m2, seed=4)
    out = torch.empty(0, device="axon", dtype=torch.float32)
    torch._scaled_mm(a.to("axon"), b.to("axon"), torch.tensor(1.0, device="axon"), torch.tensor(1.0, device="axon"),
                     out_dtype=torch.float32, out=out)
    same(out.cpu(), torch._scaled_mm(a, b, torch.tensor(1.0), torch.tensor(1.0), out_dtype=torch.float32))
    # an empty inner dimension gives zeros (CPU's emulation returns uninitialized memory there, so no comparison)
    e = torch.zeros(4, 0).to(torch.float8_e4m3fn).to("axon")
    one = torch.tensor(1.0, device="axon")
    r = torch._scaled_mm(e, torch.zeros(0, 5).to(torch.float8_e4m3fn).to("axon"), one, one, out_dtype=torch.float32)
    assert r.shape == (4, 5) and torch.equal(r.cpu(), torch.zeros(4, 5))


def test_bad_operands_raise_cpus_errors():
    a, b = operands(torch.float8_e4m3fn, torch.float8_e4m3fn)
    s = torch.tensor(1.0)
    cases = [(a, b.t(), "cannot be multiplied"), (a.unsqueeze(0), b, "matrix")]
    for x, y, words in cases:
        with pytest.raises(RuntimeError, match=words):
            torch._scaled_mm(x, y, s, s)
        with pytest.raises(RuntimeError, match=words):
            torch._scaled_mm(x.to("axon"), y.to("axon"), s.to("axon"), s.to("axon"))
    with pytest.raises(ValueError):
        torch._scaled_mm(a.float().to("axon"), b.to("axon"), s.to("axon"), s.to("axon"))


def v2(a, b, sa, recipe, sb, out_dtype, **kwargs):
    return torch._scaled_mm_v2(a, b, [sa], [recipe], [0], [sb], [recipe], [0], kwargs.get("bias"), out_dtype)


@pytest.mark.parametrize("recipe", [0, 1], ids=["tensorwise", "rowwise"])
@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16], ids=str)
def test_scaled_mm_v2_with_one_scale_per_operand_is_native(recipe, out_dtype):
    a, b = operands(torch.float8_e4m3fn, torch.float8_e5m2, m=15, k=16, n=32, seed=3)
    g = torch.Generator().manual_seed(4)
    sa = torch.rand(1, generator=g) + 0.5 if recipe == 0 else torch.rand(15, 1, generator=g) + 0.5
    sb = torch.rand(1, generator=g) + 0.5 if recipe == 0 else torch.rand(1, 32, generator=g) + 0.5
    torch_axon.reset_fallback_stats()
    got = v2(a.to("axon"), b.to("axon"), sa.to("axon"), recipe, sb.to("axon"), out_dtype)
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    same(got.cpu(), v2(a, b, sa, recipe, sb, out_dtype))


def test_scaled_mm_v2_float8_results_come_from_the_host():
    a, b = operands(torch.float8_e4m3fn, torch.float8_e4m3fn, m=15, k=16, n=32, seed=5)
    one = torch.ones(1)
    torch_axon.reset_fallback_stats()
    got = v2(a.to("axon"), b.to("axon"), one.to("axon"), 0, one.to("axon"), torch.float8_e4m3fn)
    assert torch_axon.fallback_stats() == {"aten::_scaled_mm_v2": 1}
    want = v2(a, b, one, 0, one, torch.float8_e4m3fn)
    assert torch.equal(got.cpu().view(torch.uint8), want.view(torch.uint8))

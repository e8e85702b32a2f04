"""torch._scaled_mm on float8 operands: natively on axon (no host fallback), the same bits as PyTorch CPU's float32
emulation for every scale form CPU takes (one scale, per-row and per-column scales), with a bias, for float32,
bfloat16 and float16 results; float8 results from the host, bit for bit; bad operands raise CPU's errors."""

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


@pytest.mark.parametrize("f8", F8, ids=str)
def test_float8_results_take_the_host_path_and_match_cpu_bit_for_bit(f8):
    # CPU turns an e4m3fn overflow into NaN where a cast saturates: float8 results are the host's, exactly
    a, b = operands(f8, f8, seed=3)
    args = (a, b, torch.tensor(300.0), torch.tensor(0.5))
    torch_axon.reset_fallback_stats()
    result = torch._scaled_mm(*[t.to("axon") for t in args], scale_result=torch.tensor(4.0, device="axon"))
    assert torch_axon.fallback_stats() == {"aten::_scaled_mm.out": 1}
    expected = torch._scaled_mm(*args, scale_result=torch.tensor(4.0))
    assert result.dtype == f8 and torch.equal(result.cpu().float().nan_to_num(7.0), expected.float().nan_to_num(7.0))


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

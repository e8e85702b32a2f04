"""Native torch.histc (libaxon's histogram kernel): counts against PyTorch CPU for floating inputs, CUDA's integer
rule for integer inputs (which CPU refuses), the data's own range when min == max, and PyTorch's errors."""

import pytest
import torch

import torch_axon

FLOATS = [torch.float32, torch.float64, torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("bins,lo,hi", [(10, 0.0, 0.0), (7, -1.0, 2.0), (1, -3.0, 3.0), (100, -0.5, 0.25)])
def test_histc_counts_match_cpu(dtype, bins, lo, hi):
    # PyTorch's CPU histc counts half-type inputs in the half type itself, which stops counting exactly past 256
    # (bfloat16) or 2048 (float16) per bin; axon counts in int64. Half-type inputs stay below those counts here.
    g = torch.Generator().manual_seed(bins)
    x = torch.randn(3001 if dtype in (torch.float32, torch.float64) else 241, generator=g).to(dtype)
    torch_axon.reset_fallback_stats()
    got = torch.histc(x.to("axon"), bins=bins, min=lo, max=hi)
    assert torch_axon.fallback_stats() == {}
    want = torch.histc(x, bins=bins, min=lo, max=hi)
    assert got.dtype == want.dtype and got.device.type == "axon"
    if dtype in (torch.float32, torch.float64):
        assert torch.equal(got.cpu(), want)
        return
    # Half types: many values sit on or next to an edge, whose rounding in the half type PyTorch's vectorized
    # linspace does its own way. Only those values may move, to a neighbouring bin.
    if lo == hi:
        lo, hi = x.min().item(), x.max().item()
    edges = torch.linspace(lo, hi, bins + 1, dtype=torch.float64)
    ulp = torch.finfo(dtype).eps * max(abs(lo), abs(hi))
    near = ((x.double()[:, None] - edges[None, 1:-1]).abs() <= 2 * ulp).any(1).sum().item()
    assert got.sum().item() == want.sum().item()
    assert (got.cpu().double() - want.double()).abs().sum().item() <= 2 * near


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_values_on_exact_edges_open_their_bin_as_on_cpu(dtype):
    x = torch.tensor([0.0, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 4.0, -0.25, 8.0], dtype=dtype)
    got = torch.histc(x.to("axon"), bins=8, min=0, max=4).cpu()
    assert torch.equal(got, torch.histc(x, bins=8, min=0, max=4))


def test_histc_ignores_nan_and_out_of_range_values():
    x = torch.tensor([float("nan"), -5.0, 0.5, 5.0, 1.0])
    assert torch.equal(torch.histc(x.to("axon"), bins=2, min=0, max=1).cpu(), torch.histc(x, bins=2, min=0, max=1))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8])
def test_histc_on_integers_counts_each_value_as_cuda_does(dtype):
    # A Mixture-of-Experts router counts tokens per expert: ids 0..E-1 in E bins over [0, E-1].
    experts = 8
    ids = torch.randint(0, experts, (500,), generator=torch.Generator().manual_seed(0)).to(dtype)
    got = torch.histc(ids.to("axon"), bins=experts, min=0, max=experts - 1)
    assert got.dtype == dtype
    assert torch.equal(got.cpu().long(), torch.bincount(ids.long(), minlength=experts))


def test_histc_out_and_an_empty_input():
    out = torch.empty(3, device="axon")
    torch.histc(torch.empty(0, device="axon"), bins=3, min=0, max=1, out=out)
    assert out.cpu().tolist() == [0.0, 0.0, 0.0]


def test_histc_errors_match_cpu():
    x = torch.randn(5, device="axon")
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        torch.histc(x, bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        torch.histc(x, bins=4, min=3, max=1)
    with pytest.raises(RuntimeError, match="is not finite"):
        torch.histc(x, bins=4, min=float("nan"))

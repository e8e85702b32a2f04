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


# torch.histogram and torch.histogramdd (libaxon's histogramdd kernel). The edges from bin counts are linspace in
# the input's dtype, which PyTorch's CPU computes partly vectorized (base + step * lane) and libaxon per element
# from the nearer end: they may differ by an ulp, so edges compare with a tolerance and the inputs keep away from
# them (random normals). Weighted sums are float64 sums rounded once (CPU sums in the dtype).
HIST_TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-12, 1e-12)}
HIST_CASES = [
    dict(bins=10), dict(bins=7, range=(-1.0, 2.0)), dict(bins=5, weight=True), dict(bins=6, density=True),
    dict(bins=[-3.0, -1.0, 0.0, 0.5, 4.0]), dict(bins=[-3.0, -1.0, 0.0, 0.5, 4.0], weight=True, density=True),
    dict(bins=1), dict(bins=3, range=(0.25, 0.25)),
]


def hist_args(case, x, device):
    kw = dict(case)
    g = torch.Generator().manual_seed(5)
    if kw.get("weight"):
        kw["weight"] = torch.rand(x.shape[:-1] if x.dim() > 1 and "dd" in case else x.shape, generator=g,
                                  dtype=torch.float64).to(x.dtype).to(device)
    if isinstance(kw["bins"], list) and isinstance(kw["bins"][0], float):
        kw["bins"] = torch.tensor(kw["bins"], dtype=x.dtype, device=device)
    return kw


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("case", HIST_CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_histogram_matches_cpu_natively(case, dtype):
    x = torch.randn(2000, generator=torch.Generator().manual_seed(3), dtype=torch.float64).mul(3).to(dtype)
    want = torch.histogram(x, **hist_args(case, x, "cpu"))
    torch_axon.reset_fallback_stats()
    got = torch.histogram(x.to("axon"), **hist_args(case, x, "axon"))
    assert torch_axon.fallback_stats() == {}
    rtol, atol = HIST_TOL[dtype]
    assert got.hist.device.type == "axon" and got.hist.dtype == dtype
    torch.testing.assert_close(got.bin_edges.cpu(), want.bin_edges, rtol=rtol, atol=atol)
    torch.testing.assert_close(got.hist.cpu(), want.hist, rtol=rtol, atol=atol)


@pytest.mark.parametrize("weighted", [False, True])
def test_histogramdd_matches_cpu_natively(weighted):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(3, 400, 3, generator=g)
    w = torch.rand(3, 400, generator=g) if weighted else None
    tensors = [torch.tensor([-2.0, 0.0, 0.3, 2.5]), torch.linspace(-1, 1, 6), torch.tensor([-9.0, 9.0])]
    for kw in (dict(bins=[3, 4, 5]), dict(bins=[2, 3, 2], range=[-1.0, 1.0, 0.0, 2.0, -3.0, 3.0], density=True),
               dict(bins=tensors)):
        want = torch.histogramdd(x, weight=w, **kw)
        akw = {k: ([t.to("axon") for t in v] if k == "bins" and isinstance(v[0], torch.Tensor) else v)
               for k, v in kw.items()}
        torch_axon.reset_fallback_stats()
        got = torch.histogramdd(x.to("axon"), weight=None if w is None else w.to("axon"), **akw)
        assert torch_axon.fallback_stats() == {}
        torch.testing.assert_close(got.hist.cpu(), want.hist, rtol=1e-5, atol=1e-6)
        for a, b in zip(got.bin_edges, want.bin_edges):
            torch.testing.assert_close(a.cpu(), b, rtol=1e-6, atol=1e-6)


def test_histogram_skips_nan_and_out_of_range_and_counts_the_last_edge():
    x = torch.tensor([float("nan"), -5.0, 0.0, 1.0, 2.0, 2.0, 7.0, float("inf")])
    for kw in (dict(bins=4, range=(0.0, 2.0)), dict(bins=torch.tensor([0.0, 1.0, 2.0]))):
        want = torch.histogram(x, **kw)
        got = torch.histogram(x.to("axon"), **{k: (v.to("axon") if isinstance(v, torch.Tensor) else v)
                                               for k, v in kw.items()})
        assert torch.equal(got.hist.cpu(), want.hist)
    assert torch.equal(torch.histogram(x.to("axon"), bins=4, range=(0.0, 2.0)).hist.cpu(),
                       torch.tensor([1.0, 0.0, 1.0, 2.0]))
    # a 0-dim input is one point (op_db's samples)
    torch_axon.reset_fallback_stats()
    got = torch.histogram(torch.tensor(1.5, device="axon"), bins=2, density=True)
    assert torch_axon.fallback_stats() == {}
    want = torch.histogram(torch.tensor(1.5), bins=2, density=True)
    assert torch.equal(got.hist.cpu(), want.hist) and torch.equal(got.bin_edges.cpu(), want.bin_edges)


def test_histogram_errors_and_other_dtypes_match_cpu():
    x = torch.randn(50)
    for fn, match in ((lambda t: torch.histogram(t, bins=0), "bins must be > 0"),
                      (lambda t: torch.histogram(t, bins=3, range=(1.0, 0.0)), "min should not exceed max"),
                      (lambda t: torch.histogram(t, bins=3, weight=torch.ones(49, device=t.device)), "same shape"),
                      (lambda t: torch.histogram(t.double(), bins=3, weight=torch.ones(50, device=t.device)),
                       "same dtype"),
                      (lambda t: torch.histogram(t.half(), bins=3), "not implemented for 'Half'"),
                      (lambda t: torch.histogram(t.new_full((2,), float("inf")), bins=3), "is not finite")):
        with pytest.raises(RuntimeError, match=match):
            fn(x)
        with pytest.raises(RuntimeError, match=match):
            fn(x.to("axon"))
    # float16 with a range: CPU counts in float16; here exact, the same for these counts
    h = x.half()
    want = torch.histogram(h, bins=5, range=(-1.0, 1.0))
    got = torch.histogram(h.to("axon"), bins=5, range=(-1.0, 1.0))
    assert torch.equal(got.hist.cpu(), want.hist)


def test_histogram_out_forms_write_their_outs_natively():
    x = torch.randn(500, generator=torch.Generator().manual_seed(6))
    want = torch.histogram(x, bins=8, range=(-2.0, 2.0))
    hist, edges = torch.empty(3, device="axon"), torch.empty(0, device="axon")
    torch_axon.reset_fallback_stats()
    got = torch.histogram(x.to("axon"), bins=8, range=(-2.0, 2.0), out=(hist, edges))
    assert torch_axon.fallback_stats() == {}
    assert got.hist is hist and got.bin_edges is edges
    torch.testing.assert_close(hist.cpu(), want.hist)
    torch.testing.assert_close(edges.cpu(), want.bin_edges, rtol=1e-6, atol=1e-6)
    b = torch.tensor([-1.0, 0.0, 2.0])
    got = torch.histogram(x.to("axon"), bins=b.to("axon"), out=(hist, edges))
    assert torch.equal(got.hist.cpu(), torch.histogram(x, bins=b).hist)
    with pytest.raises(RuntimeError, match="input tensor and hist tensor should have the same dtype"):  # the host
        torch.histogram(x.to("axon"), bins=3, out=(torch.empty(0, device="axon", dtype=torch.float64), edges))

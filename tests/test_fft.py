"""torch.fft on libaxon's FFT (libaxon/include/axon/fft.h, MKL's DFTI): every transform family, norm mode and
precision against PyTorch CPU, gradients, out=, strided inputs, and no host fallback; bad input as on CPU."""

import pytest
import torch

import torch_axon
from axon_testing import run_python

# (rtol, atol) per result dtype: both sides run MKL's DFTI, but multi-dimensional transforms run in another order
# (axon one dimension at a time, CPU one multi-dimensional descriptor), a few ulps of the largest term apart.
TOL = {torch.complex64: (1e-5, 1e-5), torch.float32: (1e-5, 1e-5), torch.complex128: (1e-12, 1e-12),
       torch.float64: (1e-12, 1e-12)}

needs_fft = pytest.mark.skipif(not torch_axon._C._fft_available(), reason="libaxon built without MKL: no FFT")


def native(fn, *cpu_args, **kwargs):
    axon_args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch_axon.reset_fallback_stats()
    out = fn(*axon_args, **kwargs)
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    return out


def check(got, want):
    assert got.device.type == "axon" and got.dtype == want.dtype and got.shape == want.shape
    rtol, atol = TOL[want.dtype]
    torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=atol)


def signal(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


CASES = {  # name: (function, kwargs, input is complex)
    "fft": (torch.fft.fft, {}, True),
    "fft_n_trim": (torch.fft.fft, {"n": 7, "dim": 1}, True),
    "ifft_ortho": (torch.fft.ifft, {"norm": "ortho"}, True),
    "fft2": (torch.fft.fft2, {}, True),
    "fftn_dims_forward": (torch.fft.fftn, {"dim": (0, 2), "norm": "forward"}, True),
    "ifftn_pad": (torch.fft.ifftn, {"s": (5, 12), "dim": (1, 2)}, True),
    "fft_of_real": (torch.fft.fft, {"dim": 0}, False),
    "rfft": (torch.fft.rfft, {}, False),
    "rfft_odd_n": (torch.fft.rfft, {"n": 9}, False),
    "rfftn": (torch.fft.rfftn, {"norm": "ortho"}, False),
    "irfft": (torch.fft.irfft, {}, True),
    "irfft_n": (torch.fft.irfft, {"n": 13, "dim": 1}, True),
    "irfft2": (torch.fft.irfft2, {"norm": "forward"}, True),
    "irfftn": (torch.fft.irfftn, {}, True),
    "hfft": (torch.fft.hfft, {}, True),
    "ihfft": (torch.fft.ihfft, {}, False),
    "ihfftn": (torch.fft.ihfftn, {"dim": (0, 1)}, False),
}


@needs_fft
@pytest.mark.parametrize("double", [False, True], ids=["single", "double"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_transforms_match_cpu(name, double):
    fn, kwargs, complex_in = CASES[name]
    dtype = (torch.complex128 if double else torch.complex64) if complex_in else (
        torch.float64 if double else torch.float32)
    x = signal((4, 6, 10), dtype)
    check(native(fn, x, **kwargs), fn(x, **kwargs))


@needs_fft
def test_integer_input_is_promoted_and_runs_natively():
    x = torch.arange(24, dtype=torch.int32).reshape(4, 6)
    check(native(torch.fft.rfft, x), torch.fft.rfft(x))


@needs_fft
def test_strided_and_transposed_inputs():
    x = signal((8, 12), torch.complex64)
    check(native(lambda t: torch.fft.fft(t.t(), dim=0), x), torch.fft.fft(x.t(), dim=0))
    r = signal((10, 16), torch.float32)
    check(native(lambda t: torch.fft.rfft(t[:, ::2]), r), torch.fft.rfft(r[:, ::2]))


@needs_fft
def test_large_batches_split_over_the_pool():
    x = signal((512, 96), torch.float32)
    check(native(torch.fft.rfft, x), torch.fft.rfft(x))
    z = signal((96, 512), torch.complex128)
    check(native(torch.fft.fft, z, dim=0), torch.fft.fft(z, dim=0))


@needs_fft
def test_out_variants_write_into_the_given_tensor():
    z = signal((3, 8), torch.complex64)
    out = torch.empty(0, dtype=torch.complex64, device="axon")
    res = native(torch.fft.fft, z, out=out)
    assert res.data_ptr() == out.data_ptr()
    check(out, torch.fft.fft(z))
    # a non-contiguous out is written through a temporary
    big = torch.zeros(8, 3, dtype=torch.float32, device="axon")
    native(torch.fft.irfft, z, n=8, out=big.t())
    check(big.t(), torch.fft.irfft(z, n=8))


@needs_fft
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fftn_dims_forward", "rfftn", "irfft2", "hfft"])
def test_gradients_match_cpu(name):
    fn, kwargs, complex_in = CASES[name]
    x = signal((3, 5, 8), torch.complex128 if complex_in else torch.float64)
    xa = x.to("axon").requires_grad_()
    xc = x.clone().requires_grad_()
    torch_axon.reset_fallback_stats()
    ya = fn(xa, **kwargs)
    (ya.abs() ** 2).sum().backward() if ya.is_complex() else (ya * ya).sum().backward()
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    yc = fn(xc, **kwargs)
    (yc.abs() ** 2).sum().backward() if yc.is_complex() else (yc * yc).sum().backward()
    check(ya.detach(), yc.detach())
    check(xa.grad, xc.grad)


def test_bad_input_is_refused_as_on_cpu():
    x = signal((4, 6), torch.complex64)
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        torch.fft.fft(x.to("axon"), n=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.fft.fft(x.to("axon"), dim=5)
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        torch.fft.irfft(x.to("axon"), n=0)


@needs_fft
def test_fft_and_16_bit_products_run_on_libaxons_own_mkl():
    # libtorch_cpu exports its own MKL's DFTI and 16-bit GEMM entry points; bound to those, libaxon's workers ran
    # torch's OpenMP build, which started an OpenMP team (a new thread) inside the pool. libaxon looks them up in its
    # mkl_rt (sequential), so running them starts no thread.
    code = """
import os, torch, torch_axon
torch.set_num_threads(2)
x = torch.randn(64, 256, dtype=torch.complex64, device="axon")
(x + 1).cpu()
before = len(os.listdir("/proc/self/task"))
for _ in range(3):
    torch.fft.fft2(x).cpu()
    (torch.randn(8, 64, device="axon", dtype=torch.bfloat16) @ torch.randn(64, 32, device="axon",
                                                                       dtype=torch.bfloat16)).cpu()
print(before, len(os.listdir("/proc/self/task")))
"""
    proc = run_python(code, AXON_THREADS="2")
    before, after = map(int, proc.stdout.split())
    assert after == before, f"threads {before} -> {after}: an MKL call started threads of its own"

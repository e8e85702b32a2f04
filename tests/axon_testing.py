"""Helpers shared by the feature tests: sample data per dtype and comparisons against PyTorch on CPU.

Tolerances depend on the dtype (TOLERANCES); copies, exactly representable casts, fills and views compare exactly,
bit for bit where NaNs or dtypes without arithmetic (float8, uint16) are involved.
"""

import os
import subprocess
import sys

import pytest
import torch

import torch_axon

# Every dtype the axon kernels handle natively.
KERNEL_DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
    torch.bool, torch.complex64, torch.complex128,
]
# Dtypes PyTorch has on CPU that libaxon's kernels do not compute in: moved as bytes; uint16/32/64 are libaxon's
# storage dtypes (converted by its copy kernel, read by pointwise ops), the others are converted by PyTorch on the host.
BYTE_DTYPES = [torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16, torch.uint32, torch.uint64, torch.complex32]
ALL_DTYPES = KERNEL_DTYPES + BYTE_DTYPES
FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

# (rtol, atol) for results computed in a dtype (not for copies, which are exact).
TOLERANCES = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-5, 1e-5),
    torch.float16: (1e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}

two_devices = pytest.mark.skipif(torch.axon.device_count() < 2,
                                 reason="needs 2 axon devices (AXON_DEVICE_COUNT=2, as tests/conftest.py sets)")


def dtype_id(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def sample(dtype, shape=(3, 5), seed=0) -> torch.Tensor:
    """A CPU tensor of `dtype` with varied values: both signs, fractions, and for floats inf, -inf, NaN and -0.0."""
    g = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype in (torch.uint8, torch.uint16, torch.uint32, torch.uint64):  # every bit pattern, the top bit too
        signed = {torch.uint8: torch.int8, torch.uint16: torch.int16, torch.uint32: torch.int32,
                  torch.uint64: torch.int64}[dtype]
        return sample(signed, shape, seed).view(dtype)
    if dtype in (torch.int8, torch.int16, torch.int32, torch.int64):
        info = torch.iinfo(dtype)
        return torch.randint(info.min, info.max, shape, generator=g, dtype=dtype)
    if dtype.is_complex:
        real = torch.randn(shape, generator=g, dtype=torch.float64) * 100
        imag = torch.randn(shape, generator=g, dtype=torch.float64) * 100
        return torch.complex(real, imag).to(dtype)
    x = (torch.randn(n, generator=g, dtype=torch.float64) * 10).to(dtype)
    specials = [float("inf"), float("-inf"), float("nan"), -0.0]
    if dtype == torch.float8_e4m3fn:
        specials = [float("nan"), -0.0]  # e4m3fn has no infinities
    x[: min(n, len(specials))] = torch.tensor(specials[:n], dtype=torch.float64).to(dtype)
    return x.reshape(shape)


def bits(t: torch.Tensor) -> torch.Tensor:
    """The bytes of a CPU tensor's elements in logical order."""
    return t.contiguous().reshape(-1).view(torch.uint8)


def assert_exact(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """actual (any device) equals the CPU tensor expected bit for bit, with the same dtype and shape."""
    actual = actual.cpu()
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    assert torch.equal(bits(actual), bits(expected)), f"\nactual:   {actual}\nexpected: {expected}"


def assert_same_values(actual: torch.Tensor, expected: torch.Tensor) -> None:
    """As assert_exact, but any NaN matches any NaN: PyTorch's own conversions do not keep NaN payloads and signs
    consistently (they depend on its vectorization), so converted values are compared this way. -0.0 still differs
    from 0.0."""
    actual = actual.cpu()
    assert actual.dtype == expected.dtype
    assert actual.shape == expected.shape
    if not (expected.dtype.is_floating_point or expected.dtype.is_complex):
        assert_exact(actual, expected)
        return

    def canonical(t):  # float64 holds every smaller float exactly, -0.0 included
        t = torch.view_as_real(t.to(torch.complex128)) if t.dtype.is_complex else t.to(torch.float64)
        return torch.where(t.isnan(), torch.full_like(t, float("nan")), t)

    a, e = canonical(actual), canonical(expected)
    assert torch.equal(a.isnan(), e.isnan()), f"\nactual:   {actual}\nexpected: {expected}"
    assert torch.equal(bits(a), bits(e)), f"\nactual:   {actual}\nexpected: {expected}"


def assert_close(actual: torch.Tensor, expected: torch.Tensor, dtype=None) -> None:
    """actual (any device) is within the dtype's tolerance of the CPU tensor expected."""
    rtol, atol = TOLERANCES[dtype or expected.dtype]
    torch.testing.assert_close(actual.cpu(), expected, rtol=rtol, atol=atol, equal_nan=True)


def native(fn):
    """fn() with the fallback counters reset; fails if any op went through the host fallback."""
    torch_axon.reset_fallback_stats()
    out = fn()
    torch.axon.synchronize()
    stats = torch_axon.fallback_stats()
    assert stats == {}, stats
    return out


def libaxon_commands(fn) -> list[str]:
    """The names of the commands libaxon ran for fn() (its tracing on for the call, off and cleared after)."""
    torch.axon.synchronize()
    torch_axon._C._trace_clear()
    torch_axon._C._trace_enable(True)
    try:
        fn()
        torch.axon.synchronize()
        return [r[0] for r in torch_axon._C._trace_records()]
    finally:
        torch_axon._C._trace_enable(False)
        torch_axon._C._trace_clear()


def same(result, expected):
    """Pure data movement: equal values (any NaN matches any NaN), same dtype and shape."""
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape,
                                                                                 expected.shape)
    if expected.is_floating_point() or expected.is_complex():
        torch.testing.assert_close(result, expected, rtol=0, atol=0, equal_nan=True)
    else:
        assert torch.equal(result, expected)


def run_python(code: str, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter with this environment plus `env`; fails the test on a non-zero exit."""
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc

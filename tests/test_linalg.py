"""torch.linalg's factorizations and solves on libaxon (libaxon/include/axon/linalg.h, MKL's LAPACK): LU, solves,
inverse, det/slogdet, triangular solves, Cholesky, eigh, SVD, QR, least squares and matrix_exp against PyTorch CPU
in every dtype CPU has for them, batched and broadcast, with gradients, out= and output strides as CPU's, and no host
fallback; bad input (singular and non-positive-definite matrices, bad shapes and dtypes, pivots that are not an
LU's) raises as on CPU."""

import math

import pytest
import torch

import torch_axon

DTYPES = [torch.float32, torch.float64, torch.complex64, torch.complex128]
# (rtol, atol) per dtype: both sides call LAPACK (MKL here, CPU's own build there), but blocked algorithms and
# threading split the sums differently; results of well-conditioned matrices agree to a few hundred ulps.
TOL = {torch.float32: (2e-4, 2e-4), torch.complex64: (2e-4, 2e-4), torch.float64: (1e-10, 1e-10),
       torch.complex128: (1e-10, 1e-10)}

needs_linalg = pytest.mark.skipif(not torch_axon._C._linalg_available(),
                                  reason="libaxon built without MKL: no linear algebra")
pytestmark = needs_linalg


def native(fn, *cpu_args, **kwargs):
    axon_args = [a.to("axon") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    torch_axon.reset_fallback_stats()
    out = fn(*axon_args, **kwargs)
    assert torch_axon.fallback_stats() == {}, f"fell back: {torch_axon.fallback_stats()}"
    return out


def check(got, want, dtype=None, strides=True):
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            check(g, w, dtype, strides)
        return
    assert got.device.type == "axon" and got.dtype == want.dtype and got.shape == want.shape
    if strides and want.numel() > 1:
        assert got.stride() == want.stride(), f"strides {got.stride()} against CPU's {want.stride()}"
    rtol, atol = TOL[dtype or want.dtype] if (dtype or want.dtype) in TOL else (0, 0)
    torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=atol)


def matrix(shape, dtype, seed=0, shift=0.0):
    """Random entries, plus `shift` on the diagonal (well-conditioned for shift ~ size)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(shape, generator=g, dtype=torch.complex128 if dtype.is_complex else torch.float64)
    if shift:
        a = a + shift * torch.eye(shape[-1], dtype=a.dtype)
    return a.to(dtype)


def hpd(shape, dtype, seed=0):
    m = matrix(shape, torch.complex128 if dtype.is_complex else torch.float64, seed)
    return (m @ m.mH + shape[-1] * torch.eye(shape[-1], dtype=m.dtype)).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(5, 5), (3, 6, 4), (2, 3, 4, 6), (1, 0, 3)], ids=str)
def test_lu_factor_and_unpack_match_cpu(dtype, shape):
    a = matrix(shape, dtype)
    check(native(torch.linalg.lu_factor_ex, a), torch.linalg.lu_factor_ex(a))
    check(native(torch.linalg.lu, a), torch.linalg.lu(a))
    LU, piv = torch.linalg.lu_factor(a)
    for data, pivots in [(True, True), (True, False), (False, True)]:
        check(native(torch.lu_unpack, LU, piv, data, pivots), torch.lu_unpack(LU, piv, data, pivots))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("left", [True, False], ids=["left", "right"])
@pytest.mark.parametrize("adjoint", [False, True], ids=["plain", "adjoint"])
def test_lu_solve_broadcasts_like_cpu(dtype, left, adjoint):
    a = matrix((2, 1, 4, 4), dtype, shift=4)
    b = matrix((3, 4, 2) if left else (3, 2, 4), dtype, seed=1)
    LU, piv = torch.linalg.lu_factor(a)
    check(native(torch.linalg.lu_solve, LU, piv, b, left=left, adjoint=adjoint),
          torch.linalg.lu_solve(LU, piv, b, left=left, adjoint=adjoint))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_solve_inverse_det_match_cpu(dtype):
    a = matrix((3, 5, 5), dtype, shift=3)
    for b in (matrix((3, 5, 2), dtype, seed=1), matrix((5,), dtype, seed=2), matrix((3, 5), dtype, seed=3)):
        check(native(torch.linalg.solve, a, b), torch.linalg.solve(a, b))
    check(native(torch.linalg.solve, a, matrix((3, 2, 5), dtype, seed=4), left=False),
          torch.linalg.solve(a, matrix((3, 2, 5), dtype, seed=4), left=False))
    check(native(torch.linalg.solve_ex, a, matrix((5, 1), dtype)), torch.linalg.solve_ex(a, matrix((5, 1), dtype)))
    check(native(torch.linalg.inv, a), torch.linalg.inv(a))
    check(native(torch.linalg.inv_ex, a), torch.linalg.inv_ex(a))
    check(native(torch.linalg.det, a), torch.linalg.det(a))
    check(native(torch.linalg.slogdet, a), torch.linalg.slogdet(a))
    check(native(torch.ops.aten._linalg_det, a), torch.ops.aten._linalg_det(a))
    # a 0 x 0 matrix: det 1, log |det| 0
    e = matrix((2, 0, 0), dtype)
    check(native(torch.linalg.det, e), torch.linalg.det(e))
    check(native(torch.linalg.slogdet, e), torch.linalg.slogdet(e))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gradients_match_cpu(dtype):
    """Backward formulas read the forward's LU and pivots (det and slogdet factor A^T, as CPU does)."""
    a = matrix((2, 4, 4), dtype, shift=2)
    b = matrix((2, 4, 3), dtype, seed=1)
    fns = {
        "det": lambda x, y: torch.linalg.det(x),
        "slogdet": lambda x, y: torch.linalg.slogdet(x)[1],
        "solve": lambda x, y: torch.linalg.solve(x, y),
        "inv": lambda x, y: torch.linalg.inv(x),
        "cholesky": lambda x, y: torch.linalg.cholesky(x @ x.mH + 4 * torch.eye(4, dtype=x.dtype, device=x.device)),
        "eigh": lambda x, y: torch.linalg.eigh(x + x.mH)[0],
        "svdvals": lambda x, y: torch.linalg.svdvals(x),
        "qr": lambda x, y: torch.linalg.qr(x)[1],
        "solve_triangular": lambda x, y: torch.linalg.solve_triangular(x, y, upper=True),
    }
    for name, fn in fns.items():
        grads = []
        for dev in ("cpu", "axon"):
            x = a.to(dev).clone().requires_grad_()
            y = b.to(dev).clone().requires_grad_()
            out = fn(x, y)
            g = torch.randn(out.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64).to(out.dtype)
            torch_axon.reset_fallback_stats()
            out.backward(g.to(dev))
            if dev == "axon":
                assert torch_axon.fallback_stats() == {}, f"{name} backward fell back: {torch_axon.fallback_stats()}"
            assert x.grad is not None, (name, dev)
            grads.append((x.grad.cpu(), y.grad.cpu() if y.grad is not None else None))
        rtol, atol = TOL[dtype]
        torch.testing.assert_close(grads[1][0], grads[0][0], rtol=rtol * 10, atol=atol * 10, msg=name)
        if grads[0][1] is not None:
            torch.testing.assert_close(grads[1][1], grads[0][1], rtol=rtol * 10, atol=atol * 10, msg=name)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_triangular_solves_match_cpu(dtype, upper):
    a = matrix((2, 1, 4, 4), dtype, shift=4)
    for left in (True, False):
        for unit in (False, True):
            b = matrix((3, 4, 2) if left else (3, 2, 4), dtype, seed=1)
            check(native(torch.linalg.solve_triangular, a, b, upper=upper, left=left, unitriangular=unit),
                  torch.linalg.solve_triangular(a, b, upper=upper, left=left, unitriangular=unit))
    # a row-major A of the result's batch is read in place as A^T (the other triangle, the transposed op)
    a1, b1 = a[:, 0], matrix((2, 4, 3), dtype, seed=3)
    for left in (True, False):
        rhs = b1 if left else b1.mT.contiguous()
        check(native(torch.linalg.solve_triangular, a1, rhs, upper=upper, left=left),
              torch.linalg.solve_triangular(a1, rhs, upper=upper, left=left))
    b = matrix((2, 1, 4, 3), dtype, seed=2)
    for transpose in (False, True):
        check(native(torch.triangular_solve, b, a, upper=upper, transpose=transpose),
              torch.triangular_solve(b, a, upper=upper, transpose=transpose))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
def test_cholesky_family_matches_cpu(dtype, upper):
    a = hpd((3, 5, 5), dtype)
    check(native(torch.linalg.cholesky_ex, a, upper=upper), torch.linalg.cholesky_ex(a, upper=upper))
    check(native(torch.cholesky, a, upper), torch.cholesky(a, upper))
    f = torch.linalg.cholesky(a, upper=upper)
    b = matrix((2, 1, 5, 3), dtype, seed=5)
    check(native(torch.cholesky_solve, b, f, upper), torch.cholesky_solve(b, f, upper))
    check(native(torch.cholesky_inverse, f[0], upper), torch.cholesky_inverse(f[0], upper))
    check(native(torch.cholesky_inverse, f, upper), torch.cholesky_inverse(f, upper))


def _canonical_columns(v):
    """Eigen/singular vectors are defined up to a unit factor per column: scale each so its largest entry is real
    and positive."""
    idx = v.abs().argmax(dim=-2, keepdim=True)
    lead = torch.gather(v, -2, idx)
    return v * (lead.abs() / lead)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eigh_and_svd_match_cpu(dtype):
    a = hpd((2, 6, 6), dtype) - 6 * torch.eye(6, dtype=dtype)    # eigenvalues of both signs
    for uplo in ("L", "U"):
        w, v = native(torch.linalg.eigh, a, UPLO=uplo)
        w0, v0 = torch.linalg.eigh(a, UPLO=uplo)
        check(w, w0)
        assert v.stride() == v0.stride()
        check(_canonical_columns(v), _canonical_columns(v0), strides=False)
        check(native(torch.linalg.eigvalsh, a, UPLO=uplo), torch.linalg.eigvalsh(a, UPLO=uplo))
    for shape in [(3, 6, 4), (4, 6), (5, 5)]:
        m = matrix(shape, dtype, seed=9)
        for full in (False, True):
            u, s, vh = native(torch.linalg.svd, m, full_matrices=full)
            u0, s0, vh0 = torch.linalg.svd(m, full_matrices=full)
            check(s, s0)
            assert (u.shape, u.stride(), vh.shape, vh.stride()) == (u0.shape, u0.stride(), vh0.shape, vh0.stride())
            k = s.shape[-1]
            # the factorization itself, and the first k singular vectors up to their unit factors
            rebuilt = u[..., :k] * s.to(dtype).unsqueeze(-2) @ vh[..., :k, :]
            check(rebuilt, m, strides=False)
            check(_canonical_columns(u[..., :k]), _canonical_columns(u0[..., :k]), strides=False)
        check(native(torch.linalg.svdvals, m), torch.linalg.svdvals(m))
    # empty matrices: identities where a full SVD asks for them
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        e = matrix(shape, dtype)
        check(native(torch.linalg.svd, e, full_matrices=True), torch.linalg.svd(e, full_matrices=True))
        check(native(torch.linalg.svd, e, full_matrices=False), torch.linalg.svd(e, full_matrices=False))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(6, 4), (2, 4, 6), (3, 5, 5), (0, 3), (4, 0)], ids=str)
def test_qr_matches_cpu(dtype, shape):
    m = matrix(shape, dtype, seed=3)
    for mode in ("reduced", "complete", "r"):
        check(native(torch.linalg.qr, m, mode=mode), torch.linalg.qr(m, mode=mode))
    if m.numel():
        check(native(torch.geqrf, m), torch.geqrf(m))
        a, tau = torch.geqrf(m)
        if shape[-2] >= shape[-1]:
            check(native(torch.linalg.householder_product, a, tau), torch.linalg.householder_product(a, tau))
            for left in (True, False):
                for transpose in (False, True):
                    c = matrix(shape[:-2] + ((shape[-2], 3) if left else (3, shape[-2])), dtype, seed=4)
                    check(native(torch.ormqr, a, tau, c, left, transpose), torch.ormqr(a, tau, c, left, transpose))


def test_out_variants_write_their_outs():
    a = matrix((3, 4, 4), torch.float64, shift=3)
    b = matrix((3, 4, 2), torch.float64, seed=1)
    ax, bx = a.to("axon"), b.to("axon")
    out = torch.empty(0, device="axon", dtype=torch.float64)
    torch_axon.reset_fallback_stats()
    torch.linalg.solve(ax, bx, out=out)
    LU, piv = torch.empty(0, device="axon", dtype=torch.float64), torch.empty(0, device="axon", dtype=torch.int32)
    torch.linalg.lu_factor(ax, out=(LU, piv))
    U, S, Vh = (torch.empty(0, device="axon", dtype=t) for t in (torch.float64, torch.float64, torch.float64))
    torch.linalg.svd(ax, out=(U, S, Vh))
    assert torch_axon.fallback_stats() == {}
    check(out, torch.linalg.solve(a, b))
    check(LU, torch.linalg.lu_factor(a)[0], strides=False)
    check(piv, torch.linalg.lu_factor(a)[1])
    check(S, torch.linalg.svdvals(a))
    # an out= of another dtype goes to the host, which raises CPU's error
    with pytest.raises(RuntimeError, match="dtype"):
        torch.linalg.inv(ax, out=torch.empty(0, device="axon", dtype=torch.float32))


def test_errors_as_on_cpu():
    singular = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    for fn in (torch.linalg.inv, lambda x: torch.linalg.solve(x, torch.ones(2, device="axon"))):
        with pytest.raises(torch.linalg.LinAlgError, match="singular"):
            fn(singular.to("axon"))
    with pytest.raises(torch.linalg.LinAlgError, match="positive-definite"):
        torch.linalg.cholesky(torch.tensor([[1.0, 2.0], [2.0, 1.0]], device="axon"))
    # non-finite input: LAPACK's refusal becomes CPU's error, not an internal one
    nan = torch.full((3, 3), float("nan"))
    for fn in (torch.linalg.svd, torch.linalg.svdvals, torch.linalg.eigh):
        with pytest.raises(torch.linalg.LinAlgError) as cpu_err:
            fn(nan)
        with pytest.raises(torch.linalg.LinAlgError) as axon_err:
            fn(nan.to("axon"))
        assert str(axon_err.value) == str(cpu_err.value)
    # the _ex forms report instead of raising
    L, info = torch.linalg.cholesky_ex(torch.tensor([[1.0, 2.0], [2.0, 1.0]], device="axon"))
    assert info.item() == 2
    assert torch.linalg.det(singular.to("axon")).item() == 0
    assert torch.linalg.slogdet(singular.to("axon")).logabsdet.item() == float("-inf")
    with pytest.raises(RuntimeError, match="square"):
        torch.linalg.inv(torch.ones(2, 3, device="axon"))
    with pytest.raises(RuntimeError, match="Float, Double, ComplexFloat or ComplexDouble|floating point or complex"):
        torch.linalg.inv(torch.ones(2, 2, device="axon", dtype=torch.int64))
    with pytest.raises(RuntimeError, match="2 or more dimensions"):
        torch.linalg.lu_factor(torch.ones(3, device="axon"))
    # pivots that are not an LU's are refused, never used to index rows
    LU = torch.eye(3, device="axon")
    with pytest.raises(RuntimeError, match="pivots must be between 1 and the number of rows"):
        torch.lu_unpack(LU, torch.tensor([1, 7, 3], dtype=torch.int32, device="axon"))
        torch.axon.synchronize()
    with pytest.raises(RuntimeError, match="pivots must be between 1 and the number of rows"):
        torch.linalg.lu_solve(LU, torch.tensor([0, 2, 3], dtype=torch.int32, device="axon"), torch.ones(3, 1,
                                                                                                       device="axon"))
        torch.axon.synchronize()
    # and the device works on afterwards
    check(torch.linalg.inv(torch.eye(3, device="axon") * 2), torch.eye(3) / 2, strides=False)


def test_half_precision_goes_to_the_host_with_cpus_error():
    with pytest.raises(RuntimeError) as axon_err:
        torch.linalg.inv(torch.eye(2, device="axon", dtype=torch.float16))
    with pytest.raises(RuntimeError) as cpu_err:
        torch.linalg.inv(torch.eye(2, dtype=torch.float16))
    assert str(cpu_err.value).split("\n")[0] in str(axon_err.value)


CROSS_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.complex128,
                torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64]


@pytest.mark.parametrize("dtype", CROSS_DTYPES, ids=str)
def test_cross_matches_cpu(dtype):
    g = torch.Generator().manual_seed(4)
    if dtype.is_floating_point or dtype.is_complex:
        a, b = (torch.randn(s, generator=g, dtype=torch.complex128 if dtype.is_complex else torch.float64).to(dtype)
                for s in [(4, 3, 5), (1, 3, 5)])
    else:   # products that wrap in the narrow integer types
        a, b = (torch.randint(0, 120, s, generator=g).to(dtype) for s in [(4, 3, 5), (1, 3, 5)])
    exact = {torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-2, 1e-2)}
    for fn, kw in [(torch.linalg.cross, {"dim": 1}), (torch.cross, {"dim": -2})]:
        got = native(fn, a, b, **kw)
        want = fn(a, b, **kw)
        rtol, atol = TOL.get(dtype, exact.get(dtype, (0, 0)))
        torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=atol)
    # a transposed operand, and an out= that is not contiguous
    rtol, atol = TOL.get(dtype, exact.get(dtype, (0, 0)))
    at = a.transpose(0, 2).contiguous().transpose(0, 2)
    out = torch.empty(5, 3, 4, dtype=dtype, device="axon").transpose(0, 2)
    torch_axon.reset_fallback_stats()
    torch.linalg.cross(at.to("axon"), b.to("axon"), dim=1, out=out)
    assert torch_axon.fallback_stats() == {}
    torch.testing.assert_close(out.cpu(), torch.linalg.cross(a, b, dim=1), rtol=rtol, atol=atol)


def test_cross_errors_as_on_cpu():
    with pytest.raises(RuntimeError, match="must have length 3"):
        torch.linalg.cross(torch.ones(2, 4, device="axon"), torch.ones(2, 4, device="axon"))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        torch.linalg.cross(torch.ones(3, device="axon"), torch.ones(3, device="axon", dtype=torch.float64))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("hermitian", [False, True], ids=["symmetric", "hermitian"])
def test_ldl_factor_and_solve_match_cpu(dtype, hermitian):
    m = matrix((2, 5, 5), dtype)
    a = m + (m.mH if hermitian else m.mT)            # indefinite: 2 x 2 pivots too
    check(native(torch.linalg.ldl_factor_ex, a, hermitian=hermitian),
          torch.linalg.ldl_factor_ex(a, hermitian=hermitian))
    LD, piv = torch.linalg.ldl_factor(a, hermitian=hermitian)
    b = matrix((2, 5, 3), dtype, seed=6)
    check(native(torch.linalg.ldl_solve, LD, piv, b, hermitian=hermitian),
          torch.linalg.ldl_solve(LD, piv, b, hermitian=hermitian))
    with pytest.raises(RuntimeError, match="pivots must be between 1 and the number of rows"):
        torch.linalg.ldl_solve(LD.to("axon"), torch.full_like(piv, 9).to("axon"), b.to("axon"), hermitian=hermitian)
        torch.axon.synchronize()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_matches_cpu(dtype):
    a = matrix((3, 6, 6), dtype, seed=8)            # real ones have complex conjugate pairs
    w, v = native(torch.linalg.eig, a)
    w0, v0 = torch.linalg.eig(a)
    tol = TOL[dtype]
    torch.testing.assert_close(w.cpu(), w0, rtol=tol[0] * 10, atol=tol[1] * 10)
    assert v.stride() == v0.stride() and v.dtype == v0.dtype
    # A V = V diag(w), and the vectors as CPU's (both are LAPACK's geev: unit norm, largest component real)
    av = a.to(v0.dtype) @ v.cpu()
    torch.testing.assert_close(av, v.cpu() * w.cpu().unsqueeze(-2), rtol=tol[0] * 10, atol=tol[1] * 10)
    torch.testing.assert_close(v.cpu(), v0, rtol=tol[0] * 100, atol=tol[1] * 100)
    torch.testing.assert_close(native(torch.linalg.eigvals, a).cpu(), w0, rtol=tol[0] * 10, atol=tol[1] * 10)
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        torch.linalg.eigvals(torch.full((2, 2), float("nan"), device="axon", dtype=dtype))


def test_repeated_calls_follow_each_calls_shapes_strides_and_arguments():
    """The glue caches meta results per thread, keyed by the inputs' metadata and the arguments: calls that differ in
    only one of them (strides, a flag, the mode, the dtype, the batch) get their own outputs' shapes and strides, and
    an error is raised again on every call, not only the first."""
    a = matrix((4, 4), torch.float64, shift=4.0)
    a = a @ a.mT
    for _ in range(2):
        for x in (a, a.mT.contiguous().mT, a.expand(3, 4, 4), a.to(torch.float32)):
            for upper in (False, True):
                check(native(torch.linalg.cholesky_ex, x, upper=upper), torch.linalg.cholesky_ex(x, upper=upper))
        for mode in ("reduced", "complete", "r"):
            for shape in ((5, 3), (3, 5)):
                m = matrix(shape, torch.float64)
                check(native(torch.linalg.qr, m, mode=mode), torch.linalg.qr(m, mode=mode))
        for dim in (0, 1, -1):
            u, v = torch.randn(3, 3, 3, dtype=torch.float64), torch.randn(3, 3, 3, dtype=torch.float64).mT
            check(native(torch.linalg.cross, u, v, dim=dim), torch.linalg.cross(u, v, dim=dim))
        with pytest.raises(RuntimeError, match="square"):
            torch.linalg.cholesky(torch.ones(2, 3, device="axon"))
        with pytest.raises(RuntimeError, match="must have length 3"):
            torch.linalg.cross(torch.ones(2, 4, device="axon"), torch.ones(2, 4, device="axon"))


LSTSQ_CASES = [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 6, 4), (2, 6, 3)), ((5, 3), (5,)), ((4, 4), (4, 1))]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("case", LSTSQ_CASES, ids=lambda c: f"{c[0]}-{c[1]}")
def test_lstsq_matches_cpu_for_every_driver(case, driver, dtype):
    a, b = matrix(case[0], dtype, seed=1), matrix(case[1], dtype, seed=2)
    want = torch.linalg.lstsq(a, b, driver=driver)
    got = native(torch.linalg.lstsq, a, b, driver=driver)
    # solution: CPU's view of its [.., max(m, n), k] work buffer, strides included; residuals, rank, singular values
    check(got.solution, want.solution, dtype)
    check(got.residuals, want.residuals, dtype, strides=False)
    assert torch.equal(got.rank.cpu(), want.rank)
    check(got.singular_values, want.singular_values, dtype, strides=False)


def test_lstsq_rank_deficiency_rcond_and_errors_as_on_cpu():
    a = matrix((6, 4), torch.float64, seed=3)
    a[:, 3] = a[:, 2]
    b = matrix((6, 2), torch.float64, seed=4)
    for driver in ("gelsy", "gelsd", "gelss"):
        want = torch.linalg.lstsq(a, b, driver=driver)
        got = native(torch.linalg.lstsq, a, b, driver=driver)
        assert got.rank.item() == want.rank.item() == 3
        assert got.residuals.shape == want.residuals.shape == (0,)   # not full rank: no residuals, as on CPU
        torch.testing.assert_close((a @ got.solution.cpu() - b).norm(), (a @ want.solution - b).norm())
    assert native(torch.linalg.lstsq, a, b, rcond=0.9, driver="gelsd").rank.item() == \
        torch.linalg.lstsq(a, b, rcond=0.9, driver="gelsd").rank.item()
    with pytest.raises(RuntimeError, match="parameter `driver` should be one of"):
        torch.linalg.lstsq(a.to("axon"), b.to("axon"), driver="qr")
    with pytest.raises(RuntimeError, match="input.size\\(-2\\) should match other.size\\(-2\\)|incompatible"):
        torch.linalg.lstsq(a.to("axon"), b[:5].to("axon"))


# --- matrix_exp (libaxon's scaling and squaring with the [13/13] Padé approximant, in float64 / complex128) --------


def _expm_reference(a):
    """exp(A) in float64 or complex128 by CPU's own method, as the reference both sides are held to."""
    wide = torch.complex128 if a.dtype.is_complex else torch.float64
    return torch.linalg.matrix_exp(a.to(wide))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,scale", [((1, 1), 1.0), ((4, 4), 0.01), ((3, 7, 7), 1.0), ((2, 2, 16, 16), 3.0),
                                         ((40, 40), 0.5), ((0, 3, 3), 1.0)], ids=str)
def test_matrix_exp_matches_cpu(dtype, shape, scale):
    # norms from about 0.01 (no scaling) to about 50 (a few squarings): entries scaled by 1/sqrt(n)
    a = matrix(shape, dtype) * (scale / max(1, shape[-1]) ** 0.5)
    got = native(torch.linalg.matrix_exp, a)
    assert got.device.type == "axon" and got.dtype == dtype and got.shape == a.shape
    if a.numel():
        assert got.stride() == torch.linalg.matrix_exp(a).stride()
    want = _expm_reference(a)
    # float64 against CPU's float64 (both accurate to a few ulps of the norm); float32 rounded once from float64
    rtol = 1e-5 if dtype in (torch.float32, torch.complex64) else 1e-10
    atol = rtol * want.abs().max().item() if want.numel() else 0.0
    torch.testing.assert_close(got.cpu().to(want.dtype), want, rtol=rtol, atol=atol)


def test_matrix_exp_of_known_matrices():
    zero = native(torch.linalg.matrix_exp, torch.zeros(3, 3))
    assert torch.equal(zero.cpu(), torch.eye(3))
    # a rotation generator: exp([[0, -t], [t, 0]]) = [[cos t, -sin t], [sin t, cos t]], t large enough to be scaled
    t = 20.0
    r = native(torch.linalg.matrix_exp, torch.tensor([[0.0, -t], [t, 0.0]], dtype=torch.float64)).cpu()
    want = torch.tensor([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]], dtype=torch.float64)
    torch.testing.assert_close(r, want, rtol=1e-12, atol=1e-12)
    # a nilpotent matrix: exp(N) = I + N + N^2 / 2 exactly
    n = torch.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    want = torch.eye(3, dtype=torch.float64) + n + n @ n / 2
    torch.testing.assert_close(native(torch.linalg.matrix_exp, n).cpu(), want)


def test_matrix_exp_of_nan_and_inf_is_nan_as_cpu():
    for bad in (float("nan"), float("inf")):
        a = torch.tensor([[bad, 1.0], [0.0, 1.0]])
        got = native(torch.linalg.matrix_exp, a).cpu()
        want = torch.linalg.matrix_exp(a)
        assert torch.equal(got.isnan(), want.isnan()) and got.isnan().all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128], ids=str)
def test_matrix_exp_gradient_matches_cpu(dtype):
    a = matrix((2, 4, 4), dtype) / 2
    g = matrix((2, 4, 4), dtype, seed=3)
    x = a.to("axon").requires_grad_()
    torch_axon.reset_fallback_stats()
    (torch.linalg.matrix_exp(x) * g.to("axon")).sum().abs().backward()
    assert torch_axon.fallback_stats() == {}
    y = a.clone().requires_grad_()
    (torch.linalg.matrix_exp(y) * g).sum().abs().backward()
    torch.testing.assert_close(x.grad.cpu(), y.grad, rtol=1e-9, atol=1e-9)


def test_matrix_exp_refuses_non_square_input_as_cpu():
    a = torch.randn(3, 4)
    with pytest.raises(RuntimeError) as cpu_err:
        torch.linalg.matrix_exp(a)
    with pytest.raises(RuntimeError) as axon_err:
        torch.linalg.matrix_exp(a.to("axon"))
    assert str(cpu_err.value).split("\n")[0] in str(axon_err.value)

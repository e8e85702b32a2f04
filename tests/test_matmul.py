"""Native matrix products (libaxon's GEMM): mm, bmm, addmm, baddbmm, addbmm, dot/vdot and what reaches them (matmul,
linear, their gradients), and trace, against PyTorch CPU with per-dtype tolerances, and no host fallback."""

import pytest
import torch

import torch_axon
from axon_testing import libaxon_commands

TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-10, 1e-10), torch.bfloat16: (3e-2, 3e-1),
       torch.float16: (3e-3, 3e-2)}
FLOATS = list(TOL)


def rand(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def same(result, expected):
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.dtype in TOL:
        rtol, atol = TOL[expected.dtype]
        torch.testing.assert_close(result, expected, rtol=rtol, atol=atol)
    else:
        assert torch.equal(result, expected)


def native(fn, *args):
    torch_axon.reset_fallback_stats()
    r = fn(*[a.to("axon") for a in args])
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    return r


CASES = {
    "mm": (lambda a, b: a @ b, [(33, 17), (17, 29)]),
    "mm_transposed": (lambda a, b: b.t() @ a.t(), [(33, 17), (17, 29)]),
    "mm_strided": (lambda a, b: a[::2, 1:] @ b[1:, ::3], [(20, 9), (9, 12)]),
    "bmm": (lambda a, b: a @ b, [(4, 8, 5), (4, 5, 6)]),
    "matmul_broadcast": (lambda a, b: a @ b, [(3, 4, 8, 5), (5, 6)]),
    "addmm_bias": (lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), [(29,), (33, 17), (17, 29)]),
    "addmm_full": (lambda c, a, b: torch.addmm(c, a, b), [(33, 29), (33, 17), (17, 29)]),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=2.0), [(4, 8, 6), (4, 8, 5), (4, 5, 6)]),
    "linear": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(7, 16), (4, 16), (4,)]),
    # vector products over views of mm and addmm
    "mv": (lambda a, v: a @ v, [(33, 17), (17,)]),
    "mv_transposed_strided": (lambda a, v: a.t() @ v[::2], [(34, 9), (68,)]),
    "vector_matrix": (lambda v, a: v @ a, [(17,), (17, 29)]),
    "dot": (lambda u, v: u @ v, [(40,), (40,)]),
    "dot_strided": (lambda u, v: torch.dot(u[::3], v[1::3]), [(60,), (60,)]),
    # addbmm: the batch's products summed, as one product over the batches side by side
    "addbmm": (lambda c, a, b: torch.addbmm(c, a, b, beta=0.5, alpha=-2.0), [(8, 6), (4, 8, 5), (4, 5, 6)]),
    "addbmm_broadcast": (lambda c, a, b: torch.addbmm(c, a, b), [(6,), (3, 7, 2), (3, 2, 6)]),
    "addbmm_transposed": (lambda c, a, b: torch.addbmm(c, a.transpose(1, 2), b), [(5, 6), (4, 9, 5), (4, 9, 6)]),
    "trace": (lambda a: torch.trace(a), [(9, 7)]),
    "trace_transposed_strided": (lambda a: torch.trace(a.t()[::2, 1::3]), [(12, 9)]),
    "mv_function": (lambda a, v: torch.mv(a, v), [(33, 17), (17,)]),
    "mv_strided_matrix": (lambda a, v: torch.mv(a[::2, 1:], v[::3]), [(12, 6), (15,)]),
    "mv_empty_inner": (lambda a, v: torch.mv(a, v), [(5, 0), (0,)]),
    "vdot": (lambda u, v: torch.vdot(u, v), [(40,), (40,)]),
    "inner": (lambda u, v: torch.inner(u, v), [(12,), (12,)]),
    "addmv": (lambda c, a, v: torch.addmv(c, a, v, beta=0.5, alpha=2.0), [(33,), (33, 17), (17,)]),
    "addmv_broadcast_scalar": (lambda c, a, v: torch.addmv(c, a, v), [(), (33, 17), (17,)]),
    "addmv_broadcast_one": (lambda c, a, v: torch.addmv(c, a, v, alpha=-1), [(1,), (33, 17), (17,)]),
    "addmv_transposed_strided": (lambda c, a, v: torch.addmv(c[::2], a.t(), v[::2], beta=-1.0, alpha=0.5),
                                 [(66,), (17, 33), (34,)]),
    "addmv_in_place": (lambda c, a, v: c.clone().addmv_(a, v, beta=2.0), [(33,), (33, 17), (17,)]),
    "addmv_out": (lambda c, a, v: torch.addmv(c, a, v, out=torch.empty(0, dtype=c.dtype, device=c.device)),
                  [(33,), (33, 17), (17,)]),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(CASES))
def test_matrix_products_match_cpu(name, dtype):
    fn, shapes = CASES[name]
    args = [rand(*s, dtype=dtype, seed=i) for i, s in enumerate(shapes)]
    same(native(fn, *args), fn(*args))


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.int8], ids=str)
def test_integer_matrix_products_are_exact(dtype):
    a = torch.randint(-5, 5, (6, 7)).to(dtype)
    b = torch.randint(-5, 5, (7, 3)).to(dtype)
    same(native(torch.mm, a, b), a @ b)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8], ids=str)
@pytest.mark.parametrize("name", ["mv", "mv_function", "dot", "dot_strided", "addmv", "addmv_broadcast_scalar",
                                  "vector_matrix", "trace",
                                  "trace_transposed_strided"])
def test_integer_vector_products_are_exact(name, dtype):
    fn, shapes = CASES[name]
    g = torch.Generator().manual_seed(3)
    args = [torch.randint(0, 4, s, generator=g).to(dtype) for s in shapes]
    same(native(fn, *args), fn(*args))


def test_empty_dot_is_zero_and_addmv_with_beta_zero_ignores_nan():
    e = torch.empty(0)
    same(native(torch.dot, e, e), torch.dot(e, e))
    c = torch.full((4,), float("nan"))
    a, v = rand(4, 3), rand(3, seed=1)
    same(native(lambda x, y, z: torch.addmv(x, y, z, beta=0), c, a, v), torch.addmv(c, a, v, beta=0))


def test_vector_products_with_bad_operands_raise_cpu_messages():
    u, a = torch.ones(3, device="axon"), torch.ones(2, 4, device="axon")
    with pytest.raises(RuntimeError, match="inconsistent tensor size"):
        torch.dot(u, torch.ones(4, device="axon"))
    with pytest.raises(RuntimeError, match="1D tensors expected"):
        torch.dot(a, a)
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.dot(u, torch.ones(3, dtype=torch.float64, device="axon"))
    with pytest.raises(RuntimeError, match="size mismatch"):
        torch.mv(a, u)


def test_beta_zero_ignores_nan_in_the_input_like_cpu():
    c = torch.full((3, 4), float("nan"))
    a, b = rand(3, 2), rand(2, 4, seed=1)
    same(native(lambda x, y, z: torch.addmm(x, y, z, beta=0), c, a, b), torch.addmm(c, a, b, beta=0))


def test_in_place_addmm_accumulates_into_its_input():
    c, a, b = rand(5, 6), rand(5, 3, seed=1), rand(3, 6, seed=2)
    ca = c.to("axon")
    ca.addmm_(a.to("axon"), b.to("axon"), beta=0.5)
    same(ca, c.clone().addmm_(a, b, beta=0.5))


def test_mismatched_shapes_and_dtypes_raise_cpu_messages():
    a = torch.ones(2, 3, device="axon")
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)"):
        a @ a
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ torch.ones(3, 2, dtype=torch.float64, device="axon")


@pytest.mark.parametrize("op", ["mm", "bmm", "addmm", "baddbmm"])
def test_functional_products_check_before_allocating_with_cpus_messages(op):
    # the functional forms are bound directly (no meta function): their checks and messages are CPU's
    def run(x, y, device):
        x, y, one = x.to(device), y.to(device), torch.ones((), device=device)  # a 0-dim self fits any product
        return {"mm": lambda: torch.mm(x, y), "bmm": lambda: torch.bmm(x, y),
                "addmm": lambda: torch.addmm(one, x, y), "baddbmm": lambda: torch.baddbmm(one, x, y)}[op]()
    a = torch.ones(2, 3) if op in ("mm", "addmm") else torch.ones(4, 2, 3)
    cases = [(a, a), (a, a.double().transpose(-1, -2)), (a.double(), a.transpose(-1, -2)),
             (a.flatten(), a.transpose(-1, -2)), (a, a.flatten())]
    if a.dim() == 3:
        cases.append((a, torch.ones(5, 3, 2)))
    for x, y in cases:
        with pytest.raises((RuntimeError, IndexError)) as cpu_err:
            run(x, y, "cpu")
        with pytest.raises((RuntimeError, IndexError)) as axon_err:
            run(x, y, "axon")
        assert cpu_err.type == axon_err.type
        assert str(cpu_err.value).split("\n")[0] == str(axon_err.value).split("\n")[0], (x.shape, y.shape)
    same(native(lambda x, y: run(x, y, "axon"), a, a.transpose(-1, -2)), run(a, a.transpose(-1, -2), "cpu"))


def test_linear_forward_and_backward_match_cpu_without_fallback():
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 4)
    la = torch.nn.Linear(16, 4).to("axon")
    la.load_state_dict(lin.state_dict())
    x = rand(8, 16)
    xa, xc = x.to("axon").requires_grad_(), x.clone().requires_grad_()
    torch_axon.reset_fallback_stats()
    la(xa).pow(2).sum().backward()
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    lin(xc).pow(2).sum().backward()
    same(xa.grad, xc.grad)
    same(la.weight.grad, lin.weight.grad)
    same(la.bias.grad, lin.bias.grad)


# Large enough that libaxon splits each product over its pool (oneDNN's bf16 path when built with it; float16 and the
# padded or transposed outs go through float32): rows, columns and whole matrices, with alpha, beta and bias.
BIG = {
    "mm": (lambda a, b: a @ b, [(200, 300), (300, 170)]),
    "mm_few_rows": (lambda a, b: a @ b, [(24, 256), (256, 400)]),
    "mm_transposed_b": (lambda a, w: a @ w.t(), [(130, 256), (190, 256)]),
    "bmm_odd_batch": (lambda a, b: a @ b, [(3, 96, 128), (3, 128, 80)]),
    "bmm_broadcast_b": (lambda a, b: a @ b, [(6, 64, 96), (96, 72)]),
    "baddbmm": (lambda c, a, b: torch.baddbmm(c, a, b, beta=-1.5, alpha=0.5), [(4, 64, 48), (4, 64, 80), (4, 80, 48)]),
    "linear": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(64, 512), (384, 512), (384,)]),
    "linear_few_rows": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(20, 256), (300, 256), (300,)]),
    # Batches of products past 2^20 multiply-adds each (float32: gemm_avx512.c where the CPU has AVX-512): an even
    # batch (whole matrices per thread) and an odd one (each matrix shared out), with alpha and beta.
    "bmm_even_batch_past_2_20": (lambda a, b: a @ b, [(4, 130, 100), (4, 100, 90)]),
    "baddbmm_odd_batch_past_2_20": (lambda c, a, b: torch.baddbmm(c, a, b, beta=0.5, alpha=-2.0),
                                    [(3, 100, 120), (3, 100, 110), (3, 110, 120)]),
    # Past 2048^3 multiply-adds bf16 runs libaxon's AMX kernel (where the CPU has AMX) with its large-product blocks:
    # odd sizes, so every tile has row, column and depth tails; B as stored and transposed (a Linear's weight).
    "mm_past_2048_cubed": (lambda a, b: a @ b, [(2050, 2049), (2049, 2051)]),
    "linear_past_2048_cubed": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(2048, 2080), (2100, 2080),
                                                                                      (2100,)]),
    # Decode-step Linears and few-column products: 16-bit ones run libaxon's float32 kernel, which widens them as it
    # packs (bfloat16 from 2 rows and columns where there is no AMX), few columns transposed.
    "linear_one_row": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(1, 768), (768, 768), (768,)]),
    "linear_four_rows": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(4, 1000), (1030, 1000), (1030,)]),
    "linear_three_columns": (lambda x, w, b: torch.nn.functional.linear(x, w, b), [(300, 256), (3, 256), (3,)]),
    "mm_one_column": (lambda a, b: a @ b, [(130, 200), (200, 1)]),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name", sorted(BIG))
def test_half_precision_products_at_model_sizes_match_cpu(name, dtype):
    fn, shapes = BIG[name]
    args = [rand(*s, dtype=dtype, seed=i) for i, s in enumerate(shapes)]
    got, want = native(fn, *args).cpu(), fn(*args)
    # Both accumulate in float32 and round once; allow one rounding of the result's scale (the sums' order differs).
    scale = want.float().abs().amax().item()
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(got, want, rtol=2 * eps, atol=2 * eps * scale)


# The Linear layers of a decode step (a few tokens): libaxon's few-row float32 kernel (gemm_skinny.c) takes those
# past OpenBLAS's small-product path, in both forms (weight stored (n, k) as Linear keeps it, and (k, n)), and the
# transposed-out form through a column-major out. Row counts 1..9, 12, 16 and 17 (17 is past the kernel's limit).
SKINNY_KN = [(256, 688), (256, 256), (256, 128), (688, 256), (256, 8192), (203, 1031)]


@pytest.mark.parametrize("k,n", SKINNY_KN, ids=str)
@pytest.mark.parametrize("m", [*range(1, 10), 12, 16, 17])
def test_few_row_linear_matches_cpu(m, k, n):
    x, w, b = rand(m, k), rand(n, k, seed=1), rand(n, seed=2)
    for fn in (lambda x, w, b: torch.nn.functional.linear(x, w, b), lambda x, w, b: x @ w.t(),
               lambda x, w, b: torch.addmm(b, x, w.t(), beta=0.5, alpha=-2.0),
               lambda x, w, b: (w @ x.t()).t(), lambda x, w, b: x @ w.t().contiguous()):
        want = fn(x, w, b)
        # float32 sums over k in another order: allow 1e-4 of the result's scale.
        torch.testing.assert_close(native(fn, x, w, b).cpu(), want, rtol=1e-4, atol=1e-4 * want.abs().amax().item())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_few_row_linear_backward_matches_cpu(dtype):
    x, w, b = rand(4, 256, dtype=dtype), rand(688, 256, dtype=dtype, seed=1), rand(688, dtype=dtype, seed=2)
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    xa, wa = x.to("axon").requires_grad_(), w.to("axon").requires_grad_()
    torch_axon.reset_fallback_stats()
    torch.nn.functional.linear(xa, wa, b.to("axon")).pow(2).sum().backward()
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    torch.nn.functional.linear(xc, wc, b).pow(2).sum().backward()
    for got, want in ((xa.grad, xc.grad), (wa.grad, wc.grad)):
        rtol, atol = TOL[dtype]
        torch.testing.assert_close(got.cpu(), want, rtol=rtol, atol=atol * want.abs().amax().item())


@pytest.mark.parametrize("name", sorted(BIG))
def test_float32_products_at_model_sizes_match_cpu(name):
    # Those of 2^20 to under 2^27 multiply-adds per matrix (single matrices with no fewer rows than columns past
    # 2^25) go to libaxon's AVX-512 kernel (gemm_avx512.c) where the CPU has it, the others to OpenBLAS or oneDNN.
    fn, shapes = BIG[name]
    args = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    want = fn(*args)
    torch.testing.assert_close(native(fn, *args).cpu(), want, rtol=1e-4, atol=1e-4 * want.abs().amax().item())


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_products_match_cpu_without_fallback(dtype):
    g = torch.Generator().manual_seed(3)

    def crand(*shape):
        return torch.complex(torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)).to(dtype)

    a, b, batch1, batch2 = crand(33, 20), crand(20, 17), crand(4, 9, 12), crand(4, 12, 5)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.complex64 else dict(rtol=1e-12, atol=1e-12)
    cases = [
        lambda x, y, p, q: x @ y, lambda x, y, p, q: torch.bmm(p, q), lambda x, y, p, q: x.t().conj() @ x,
        lambda x, y, p, q: x.mH @ x, lambda x, y, p, q: torch.matmul(p, q.conj()), lambda x, y, p, q: x[::2] @ y,
        lambda x, y, p, q: x @ y[:, 0],
    ]
    for fn in cases:
        torch_axon.reset_fallback_stats()
        got = fn(a.to("axon"), b.to("axon"), batch1.to("axon"), batch2.to("axon"))
        assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
        torch.testing.assert_close(got.cpu(), fn(a, b, batch1, batch2), **tol)
    # gradients through a complex product
    grads = []
    for dev in ("cpu", "axon"):
        x, y = a.detach().clone().to(dev).requires_grad_(), b.detach().clone().to(dev).requires_grad_()
        (x @ y).abs().sum().backward()
        grads.append((x.grad.cpu(), y.grad.cpu()))
    for got, want in zip(grads[1], grads[0]):
        torch.testing.assert_close(got, want, **tol)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_alpha_and_beta_scale_products_like_cpu(dtype):
    g = torch.Generator().manual_seed(8)

    def crand(*shape):
        return torch.complex(torch.randn(*shape, generator=g), torch.randn(*shape, generator=g)).to(dtype)

    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.complex64 else dict(rtol=1e-12, atol=1e-12)
    m, a, b, bias = crand(6, 5), crand(6, 4), crand(4, 5), crand(5)
    bm, p, q = crand(3, 6, 5), crand(3, 6, 4), crand(3, 4, 5)
    nan = torch.full((6, 5), complex(float("nan"), 0), dtype=dtype)
    cases = [
        lambda: torch.addmm(m, a, b, beta=1 + 2j, alpha=2 - 3j),
        lambda: torch.addmm(bias, a, b, alpha=0.5j),                       # broadcast input, real beta
        lambda: torch.addmm(m, a.conj(), b.t().conj().t(), beta=-1j),      # conjugate views
        lambda: torch.baddbmm(bm, p, q, beta=2j, alpha=1 + 1j),
        lambda: torch.addbmm(m, p, q, beta=1 - 1j, alpha=3j),
        lambda: m.clone().addmm_(a, b, beta=1j, alpha=1j),                 # in place
    ]
    for fn in cases:
        want = fn()
        m, a, b, bias, bm, p, q = (t.to("axon") for t in (m, a, b, bias, bm, p, q))
        torch_axon.reset_fallback_stats()
        got = fn()
        assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
        m, a, b, bias, bm, p, q = (t.cpu() for t in (m, a, b, bias, bm, p, q))
        torch.testing.assert_close(got.cpu(), want, **tol)
    # beta = 0 ignores the input, NaN included
    got = native(lambda x, y, z: torch.addmm(x, y, z, beta=0j, alpha=2j), nan, a, b)
    torch.testing.assert_close(got.cpu(), torch.addmm(nan, a, b, beta=0j, alpha=2j), **tol)


def test_negative_views_are_resolved_before_the_product():
    a, b = rand(6, 5), rand(5, 4, seed=1)
    got = (torch._neg_view(a.to("axon")) @ b.to("axon")).cpu()
    torch.testing.assert_close(got, -(a @ b))


def test_addbmm_in_place_out_and_integers_match_cpu():
    c, a, b = rand(8, 6), rand(4, 8, 5, seed=1), rand(4, 5, 6, seed=2)
    got = c.to("axon")
    torch_axon.reset_fallback_stats()
    got.addbmm_(a.to("axon"), b.to("axon"), beta=2.0)
    out = torch.empty(0, device="axon")
    torch.addbmm(c.to("axon"), a.to("axon"), b.to("axon"), out=out)
    assert torch_axon.fallback_stats() == {}
    same(got, c.clone().addbmm_(a, b, beta=2.0))
    same(out, torch.addbmm(c, a, b))
    ci, ai, bi = (torch.randint(-5, 5, s, generator=torch.Generator().manual_seed(3)) for s in [(3, 4), (2, 3, 5),
                                                                                                 (2, 5, 4)])
    same(native(lambda x, y, z: torch.addbmm(x, y, z, beta=2, alpha=3), ci, ai, bi), torch.addbmm(ci, ai, bi, beta=2,
                                                                                                   alpha=3))
    with pytest.raises(RuntimeError) as axon_err:
        torch.addbmm(c.to("axon"), a.to("axon"), rand(3, 5, 6).to("axon"))
    with pytest.raises(RuntimeError) as cpu_err:
        torch.addbmm(c, a, rand(3, 5, 6))
    assert str(cpu_err.value).split("\n")[0] in str(axon_err.value)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=str)
def test_complex_dot_and_vdot_match_cpu(dtype):
    g = torch.Generator().manual_seed(5)
    u, v = (torch.randn(37, generator=g, dtype=torch.complex128).to(dtype) for _ in range(2))
    tol = (1e-5, 1e-5) if dtype == torch.complex64 else (1e-12, 1e-12)
    for fn in (torch.dot, torch.vdot, lambda x, y: torch.dot(x.conj(), y.flip(0))):
        torch.testing.assert_close(native(fn, u, v).cpu(), fn(u, v), rtol=tol[0], atol=tol[1])


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int32, torch.int64], ids=str)
def test_trace_of_integers_promotes_like_cpu(dtype):
    a = torch.randint(0, 100, (6, 6), generator=torch.Generator().manual_seed(1)).to(dtype)
    same(native(torch.trace, a), torch.trace(a))


def test_trace_refuses_bool_and_vectors_like_cpu():
    for bad in (torch.ones(3, 3, dtype=torch.bool), torch.ones(3)):
        with pytest.raises(RuntimeError) as cpu_err:
            torch.trace(bad)
        with pytest.raises(RuntimeError) as axon_err:
            torch.trace(bad.to("axon"))
        assert str(cpu_err.value).split("\n")[0] in str(axon_err.value)


@pytest.mark.parametrize("dtype", FLOATS + [torch.complex64, torch.int64, torch.int8, torch.bool], ids=str)
def test_addr_matches_cpu_in_every_form(dtype):
    """addr of real dtypes is libaxon's addr kernel (any beta and alpha), complex numbers with beta 1 an addcmul pass,
    the rest (bool, other complex betas) ATen's composite: all against CPU, functional, in place and out=, with
    broadcast selves and strided vectors, without host fallback."""
    def make(*shape, seed):
        x = rand(*shape, seed=seed)
        return (x > 0) if dtype == torch.bool else (x * 4).to(dtype)
    m, u, v, row = make(6, 9, seed=1), make(6, seed=2), make(18, seed=3)[::2], make(9, seed=4)
    column, scalar = make(6, 1, seed=5), make(seed=6)
    scalars = [(1, 1), (0, 1)] if dtype == torch.bool else [(1, 1), (1, 3), (0, 2), (2, -1)]
    for beta, alpha in scalars:
        fn = lambda a, b, c: torch.addr(a, b, c, beta=beta, alpha=alpha)  # noqa: E731
        for self_ in (m, row, column, scalar):
            same(native(fn, self_, u, v), fn(self_, u, v))
        inplace = lambda a, b, c: a.clone().addr_(b, c, beta=beta, alpha=alpha)  # noqa: E731
        same(native(inplace, m, u, v), inplace(m, u, v))
        out = torch.empty(6, 9, dtype=dtype, device="axon")
        torch.addr(row.to("axon"), u.to("axon"), v.to("axon"), beta=beta, alpha=alpha, out=out)
        same(out, fn(row, u, v))
    if dtype.is_floating_point:  # beta 0 ignores self, NaN included; one kernel
        nan = torch.full((6, 9), float("nan"), dtype=dtype)
        fn = lambda a, b, c: torch.addr(a, b, c, beta=0, alpha=0.5)  # noqa: E731
        same(native(fn, nan, u, v), fn(nan, u, v))
        a, b, c = nan.to("axon"), u.to("axon"), v.to("axon")
        assert libaxon_commands(lambda: torch.addr(a, b, c, beta=0.6, alpha=0.2)) == ["addr"]


def test_addr_errors_and_gradients_match_cpu():
    u, v = rand(5), rand(7)
    for self_, a, b in [(rand(4, 7), u, v), (rand(5, 7), u[None], v), (rand(5, 7), u, v[None])]:
        with pytest.raises(RuntimeError) as cpu_err:
            torch.addr(self_, a, b)
        with pytest.raises(RuntimeError) as axon_err:
            torch.addr(self_.to("axon"), a.to("axon"), b.to("axon"))
        assert str(axon_err.value) == str(cpu_err.value)
    with pytest.raises(RuntimeError, match=r"size mismatch, input: \[1, 7\], v1: \[5\], v2: \[7\]"):
        rand(1, 7).to("axon").addr_(u.to("axon"), v.to("axon"))
    grads = []
    for device in ("cpu", "axon"):
        leaves = [t.detach().to(device).requires_grad_(True) for t in (rand(5, 7, seed=5), u, v)]
        torch_axon.reset_fallback_stats()
        torch.addr(*leaves, alpha=0.5).mul(rand(5, 7, seed=6).to(device)).sum().backward()
        assert device == "cpu" or torch_axon.fallback_stats() == {}
        grads.append([t.grad.cpu() for t in leaves])
    for g_axon, g_cpu in zip(grads[1], grads[0]):
        torch.testing.assert_close(g_axon, g_cpu, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
@pytest.mark.parametrize("batch", [0, 1, 40])
@pytest.mark.parametrize("size", [3, 24, 130])
def test_product_into_its_own_input(dtype, batch, size):
    # products of a few hundred multiply-adds run as plain loops in libaxon, which must not read what they have already
    # written when out is an input (mm(x, y, out=x)), and the BLAS and kernels of larger ones may write blocks of out
    # while other threads still pack the operands (MKL's small products on an AVX2 host cleared out first): the result
    # is the product of the inputs as they were (computed into scratch, whose order of sums may differ: dtype
    # tolerances)
    if batch == 40 and size == 130:
        batch = 3
    g = torch.Generator().manual_seed(0)
    shape = (batch, size, size) if batch else (size, size)
    x, y = (torch.randn(shape, generator=g).to(dtype).to("axon") for _ in range(2))
    want = (x @ y).cpu()
    (torch.bmm if batch else torch.mm)(x, y, out=x)
    torch.testing.assert_close(x.cpu(), want)
    y2 = y.clone()
    (torch.bmm if batch else torch.mm)(x, y2, out=y2)
    torch.testing.assert_close(y2.cpu(), (x @ y).cpu())
    if not batch:  # y stored transposed, as a Linear's weight (gemm_avx*_bt.c's shapes)
        want = (x @ y.t()).cpu()
        torch.mm(x, y.t(), out=x)
        torch.testing.assert_close(x.cpu(), want)

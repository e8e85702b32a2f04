"""Indexing and concatenation on libaxon's index kernels: index_select, gather, scatter (src, value, reduce),
scatter_add, scatter_reduce, index_add, index_copy (in place, functional, out=; a static KV cache's update),
nn.Embedding forward and backward (and its max_norm renorm), masked_fill and cat/stack (cat's row path too), against
PyTorch on CPU, with bad input raising CPU's errors, out-of-range indices reported at the next synchronization, and no
host fallback for the bound ops."""

import pytest
import torch

import torch_axon
from axon_testing import FLOAT_DTYPES, KERNEL_DTYPES, TOLERANCES, assert_exact, dtype_id, native, sample

REAL_DTYPES = [d for d in KERNEL_DTYPES if not d.is_complex]


def same(result, expected):
    result = result.cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape
    if expected.dtype in TOLERANCES:
        rtol, atol = TOLERANCES[expected.dtype]
        torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        assert torch.equal(result, expected)


def native(fn, *args):
    """fn on axon copies of args, checked to run without the host fallback."""
    torch_axon.reset_fallback_stats()
    r = fn(*[a.to("axon") if isinstance(a, torch.Tensor) else a for a in args])
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    return r


def randidx(shape, high, seed=1, negative=False):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-high if negative else 0, high, shape, generator=g)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select_matches_cpu(dtype, dim):
    x = sample(dtype, (4, 5, 6))
    for idx in (randidx((7,), x.size(dim)), randidx((3,), x.size(dim)).int(), torch.tensor([], dtype=torch.long)):
        same(native(lambda t, i: t.index_select(dim, i), x, idx), x.index_select(dim, idx))
    xt = x.transpose(0, 2)  # strided input
    idx = randidx((4,), xt.size(dim))
    same(native(lambda t, i: t.transpose(0, 2).index_select(dim, i), x, idx), xt.index_select(dim, idx))


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1])
def test_gather_matches_cpu(dtype, dim):
    x = sample(dtype, (4, 5))
    idx = randidx((3, 4), x.size(dim))
    same(native(lambda t, i: t.gather(dim, i), x, idx), x.gather(dim, idx))
    idx = randidx((3, 4), x.t().size(dim))
    same(native(lambda t, i: torch.gather(t.t(), dim, i), x, idx), torch.gather(x.t(), dim, idx))


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_scatter_src_and_value_match_cpu(dtype):
    x, src = sample(dtype, (5, 6)), sample(dtype, (4, 6), seed=3)
    # A permutation per column: no repeated targets, so the result does not depend on the order of writes.
    idx = torch.stack([torch.randperm(5, generator=torch.Generator().manual_seed(c))[:4] for c in range(6)], 1)
    same(native(lambda t, i, s: t.scatter(0, i, s), x, idx, src), x.scatter(0, idx, src))
    same(native(lambda t, i: t.scatter(0, i, 1), x, idx), x.scatter(0, idx, 1))

    def inplace(t, i, s):
        t.scatter_(0, i, s)
        return t

    same(native(inplace, x, idx, src), inplace(x.clone(), idx, src))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.int64],
                         ids=dtype_id)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_and_index_reduce_match_cpu(dtype, reduce, include_self):
    # include_self=False: the updated elements start from the reduction's identity; mean floors for integers; row 3
    # of x receives nothing and keeps its value
    x, src = sample(dtype, (4, 6)), sample(dtype, (9, 6), seed=5)
    if dtype.is_floating_point:
        x, src = x.clamp(-3, 3).nan_to_num(0), src.clamp(-2, 2).nan_to_num(1)
    else:
        x, src = x % 7 - 3, src % 5 - 2
    idx = randidx((9, 6), 3, negative=False)
    same(native(lambda t, i, s: t.scatter_reduce(0, i, s, reduce, include_self=include_self), x, idx, src),
         x.scatter_reduce(0, idx, src, reduce, include_self=include_self))
    if reduce != "sum":
        rows = randidx((9,), 3, negative=False)
        same(native(lambda t, i, s: t.index_reduce(0, i, s, reduce, include_self=include_self), x, rows, src),
             x.index_reduce(0, rows, src, reduce, include_self=include_self))
        y = sample(dtype, ())
        same(native(lambda t, i, s: t.index_reduce(0, i, s, reduce, include_self=include_self), y,
                    torch.tensor([0]), src[0, 0]),
             y.index_reduce(0, torch.tensor([0]), src[0, 0], reduce, include_self=include_self))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.int64],
                         ids=dtype_id)
@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
def test_scatter_reduce_with_repeated_indices_matches_cpu(dtype, reduce):
    x, src = sample(dtype, (4, 6)), sample(dtype, (9, 6), seed=5)
    if dtype.is_floating_point:
        x, src = x.clamp(-3, 3).nan_to_num(0), src.clamp(-2, 2).nan_to_num(1)
    else:
        x, src = x % 5, src % 3 + 1
    idx = randidx((9, 6), 4, negative=False)
    same(native(lambda t, i, s: t.scatter_reduce(0, i, s, reduce), x, idx, src),
         x.scatter_reduce(0, idx, src, reduce))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=dtype_id)
def test_complex_index_add_and_scatter_add_match_cpu(dtype):
    g = torch.Generator().manual_seed(3)
    x, src = (torch.randn(s, generator=g, dtype=torch.complex128).to(dtype) for s in [(5, 4), (6, 4)])
    idx = randidx((6,), 5)
    same(native(lambda t, i, s: t.index_add(0, i, s), x, idx, src), x.index_add(0, idx, src))
    same(native(lambda t, i, s: t.index_add(0, i, s, alpha=2 - 0.5j), x, idx, src), x.index_add(0, idx, src,
                                                                                              alpha=2 - 0.5j))
    idx2 = randidx((6, 4), 5, seed=4)
    same(native(lambda t, i, s: t.scatter_add(0, i, s), x, idx2, src), x.scatter_add(0, idx2, src))
    same(native(lambda t, i, s: t.scatter(0, i, s, reduce="add"), x, idx2, src), x.scatter(0, idx2, src, reduce="add"))
    # the other reductions stay on the host for complex, with CPU's answer or error
    with pytest.raises(RuntimeError) as cpu_err:
        x.scatter_reduce(0, idx2, src, "amax")
    with pytest.raises(RuntimeError) as axon_err:
        x.to("axon").scatter_reduce(0, idx2.to("axon"), src.to("axon"), "amax")
    assert str(cpu_err.value).split("\n")[0] in str(axon_err.value)


def test_scatter_into_a_scalar_matches_cpu():
    """0-dim self, index and src (max/min/median along dim 0 of a scalar scatter their gradient so): one element."""
    x, src, idx = torch.tensor(1.5), torch.tensor(-2.0), torch.tensor(0)
    for dim in (0, -1):
        same(native(lambda t, i, s: t.scatter(dim, i, s), x, idx, src), x.scatter(dim, idx, src))
        same(native(lambda t, i, s: t.scatter_reduce(dim, i, s, "amax"), x, idx, src),
             x.scatter_reduce(dim, idx, src, "amax"))
    xg = torch.tensor(3.0, device="axon", requires_grad=True)
    torch_axon.reset_fallback_stats()
    torch.max(xg, 0).values.backward()
    assert torch_axon.fallback_stats() == {} and xg.grad.item() == 1.0
    with pytest.raises(RuntimeError, match="out of bounds|out of range"):
        x.to("axon").scatter(0, torch.tensor(1, device="axon"), src.to("axon"))
        torch.axon.synchronize()


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=dtype_id)
def test_scatter_add_and_reduce_overloads_match_cpu(dtype):
    x, src = sample(dtype, (3, 5)), sample(dtype, (3, 7), seed=2)
    if dtype.is_floating_point:
        x, src = x.nan_to_num(0, 0, 0), src.nan_to_num(0, 0, 0).clamp(-4, 4)
    idx = randidx((3, 4), 5, negative=False)
    same(native(lambda t, i, s: t.scatter_add(1, i, s), x, idx, src), x.scatter_add(1, idx, src))
    same(native(lambda t, i, s: t.scatter(1, i, s, reduce="add"), x, idx, src), x.scatter(1, idx, src, reduce="add"))


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1])
def test_index_add_with_alpha_matches_cpu(dtype, dim):
    x = sample(dtype, (5, 4))
    n = 7
    src = sample(dtype, (n, 4) if dim == 0 else (5, n), seed=4)
    if dtype.is_floating_point:
        x, src = x.nan_to_num(0, 0, 0).clamp(-8, 8), src.nan_to_num(0, 0, 0).clamp(-8, 8)
    idx = randidx((n,), x.size(dim), negative=False)
    alpha = True if dtype == torch.bool else 2
    same(native(lambda t, i, s: t.index_add(dim, i, s, alpha=alpha), x, idx, src),
         x.index_add(dim, idx, src, alpha=alpha))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=dtype_id)
@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_forward_and_backward_match_cpu(dtype, padding_idx):
    torch.manual_seed(0)
    emb = torch.nn.Embedding(10, 6, padding_idx=padding_idx).to(dtype)
    idx = torch.tensor([[1, 2, 2, 9], [0, 2, 1, 1], [9, 9, 9, 3]])
    out = emb(idx)
    out.backward(torch.ones_like(out) * torch.arange(4, dtype=dtype).view(1, 4, 1))
    emb_a = torch.nn.Embedding(10, 6, padding_idx=padding_idx).to(dtype).to("axon")
    with torch.no_grad():
        emb_a.weight.copy_(emb.weight)
    torch_axon.reset_fallback_stats()
    out_a = emb_a(idx.to("axon"))
    out_a.backward(torch.ones_like(out_a) * torch.arange(4, dtype=dtype, device="axon").view(1, 4, 1))
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    same(out_a, out)
    same(emb_a.weight.grad, emb.weight.grad)


def test_embedding_backward_is_deterministic():
    g = torch.Generator().manual_seed(0)
    grad = torch.randn(4000, 16, generator=g).to("axon")
    idx = torch.randint(0, 20, (4000,), generator=g).to("axon")
    a = torch.ops.aten.embedding_dense_backward(grad, idx, 20, -1, False).cpu()
    b = torch.ops.aten.embedding_dense_backward(grad, idx, 20, -1, False).cpu()
    assert torch.equal(a, b)
    torch.testing.assert_close(a, torch.ops.aten.embedding_dense_backward(grad.cpu(), idx.cpu(), 20, -1, False))


# Rows of at least 64 bytes after dim take libaxon's whole-row paths (a memcpy per index for index_select, a vector
# add per index for index_add and embedding backward); these shapes reach them, with dims before dim and a strided
# outer view. Summed values are small integers, exact in every dtype here whatever the order of the additions, so
# the sums must match CPU's exactly (rounding differences of bfloat16 sums are not what this test is about).
ROW_DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.int64]


@pytest.mark.parametrize("dtype", ROW_DTYPES, ids=dtype_id)
def test_whole_row_paths_match_cpu(dtype):
    x = sample(dtype, (3, 2 * 9, 40))[:, ::2]  # [3, 9, 40] with a gap between the outer slices
    if dtype.is_floating_point:
        x = x.nan_to_num(0, 0, 0).clamp(-8, 8).round()
    idx = randidx((25,), 9, seed=3)
    same(native(lambda t, i: t.index_select(1, i), x, idx), x.index_select(1, idx))
    src = sample(dtype, (3, 25, 40), seed=5)
    if dtype.is_floating_point:
        src = src.nan_to_num(0, 0, 0).clamp(-8, 8).round()
    base = x.contiguous()
    same(native(lambda t, i, v: t.index_add(1, i, v, alpha=3), base, idx, src), base.index_add(1, idx, src, alpha=3))
    if dtype.is_floating_point:
        table = sample(dtype, (50, 64), seed=6).nan_to_num(0, 0, 0)
        ids = randidx((7, 30), 50, seed=7)
        same(native(torch.nn.functional.embedding, ids, table), torch.nn.functional.embedding(ids, table))
        grad = sample(dtype, (7, 30, 64), seed=8).nan_to_num(0, 0, 0).clamp(-8, 8).round()
        for pad in (-1, 4):
            same(native(torch.ops.aten.embedding_dense_backward, grad, ids, 50, pad, False),
                 torch.ops.aten.embedding_dense_backward(grad, ids, 50, pad, False))


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_masked_fill_matches_cpu(dtype):
    x = sample(dtype, (4, 5))
    mask = torch.rand(5, generator=torch.Generator().manual_seed(0)) > 0.5  # broadcast over rows
    value = True if dtype == torch.bool else 3
    same(native(lambda t, m: t.masked_fill(m, value), x, mask), x.masked_fill(mask, value))
    same(native(lambda t, m, v: t.masked_fill(m, v), x, mask, torch.tensor(value)), x.masked_fill(mask, value))


def test_cat_and_stack_match_cpu_with_mixed_dtypes_and_empty_inputs():
    a, b = sample(torch.float32, (2, 3)), sample(torch.int64, (4, 3), seed=1)
    c = sample(torch.float64, (3, 1), seed=2).t()  # [1, 3], strided
    e = torch.empty(0, 3, dtype=torch.float16)
    legacy = torch.tensor([])
    for dim in (0, -2):
        same(native(lambda *t: torch.cat(t, dim), a, b, c, e, legacy), torch.cat([a, b, c, e, legacy], dim))
    same(native(lambda *t: torch.cat(t, 1), a, a.int(), a.bool()), torch.cat([a, a.int(), a.bool()], 1))
    same(native(lambda *t: torch.stack(t, 1), a, a * 2, a.double()), torch.stack([a, a * 2, a.double()], 1))
    many = [sample(torch.bfloat16, (2, i % 3), seed=i) for i in range(60)]  # more inputs than one launch takes
    same(native(lambda *t: torch.cat(t, 1), *many), torch.cat(many, 1))
    same(native(lambda t: torch.cat([t]), a), torch.cat([a]))
    out = torch.empty(0, device="axon", dtype=torch.float64)
    torch.cat([a.to("axon"), b.to("axon")], out=out)
    same(out, torch.cat([a, b], out=torch.empty(0, dtype=torch.float64)))


def byte_dtype_sample(dtype, shape, seed):
    """Values of a dtype libaxon's kernels do not know (complex32, float8, uint16..64), made on CPU."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.complex32:
        return torch.randn(shape, dtype=torch.complex64, generator=g).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(0, 200, shape, generator=g).to(dtype)


def bits_dtype(t):
    """The integer dtype of t's element size: torch.equal on views of it compares bits (NaN and -0.0 included)."""
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]


BYTE_DTYPES = [torch.complex32, torch.float8_e4m3fn, torch.float8_e5m2, torch.uint16, torch.uint32, torch.uint64]


@pytest.mark.parametrize("dtype", BYTE_DTYPES, ids=dtype_id)
def test_cat_of_dtypes_the_kernels_do_not_know_moves_bytes_natively(dtype):
    a, b = byte_dtype_sample(dtype, (2, 3), 0), byte_dtype_sample(dtype, (4, 3), 1)
    c = byte_dtype_sample(dtype, (3, 2), 2).t()  # [2, 3], strided
    bits = bits_dtype(a)
    for dim, parts in ((0, (a, b)), (1, (a, c, a)), (-1, (c, a))):
        got = native(lambda *t: torch.cat(t, dim), *parts).cpu()
        want = torch.cat(parts, dim)
        assert got.dtype == dtype and got.shape == want.shape
        assert torch.equal(got.view(bits), want.view(bits))
    if dtype == torch.complex32:  # stack and split's backward (a cat) as op_db runs them
        got = native(lambda *t: torch.stack(t, 1), a, a).cpu()
        assert torch.equal(got.view(torch.int32), torch.stack([a, a], 1).view(torch.int32))
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):  # mixed with float64: refused as on CPU, not byte-joined
        other = torch.zeros(2, 3, dtype=torch.float64)
        for t in (a, other), (a.to("axon"), other.to("axon")):
            with pytest.raises(RuntimeError, match="Promotion for Float8 Types is not supported"):
                torch.cat(t)


@pytest.mark.parametrize("dtype", [torch.complex32, torch.float8_e4m3fn, torch.uint16], ids=dtype_id)
def test_masked_fill_of_dtypes_the_kernels_do_not_know_stores_the_converted_value(dtype):
    x = byte_dtype_sample(dtype, (4, 5), 0)
    mask = torch.rand(5, generator=torch.Generator().manual_seed(0)) > 0.5
    value = 1.5 if dtype != torch.uint16 else 7
    got = native(lambda t, m: t.masked_fill(m, value), x, mask).cpu()
    # CPU's masked_fill has no float8 or uint16 kernel; the expected tensor is built with where on wider types.
    wide = torch.complex64 if dtype == torch.complex32 else torch.float32 if dtype.is_floating_point else torch.int64
    want = x.to(wide).masked_fill(mask, value).to(dtype)
    bits = bits_dtype(x)
    assert torch.equal(got.view(bits), want.view(bits))


@pytest.mark.parametrize("dtype", BYTE_DTYPES, ids=dtype_id)
def test_index_copy_of_dtypes_the_kernels_do_not_know_moves_bytes_natively(dtype):
    # the fp8 static KV cache's update: rows of a new step copied into the cache at their positions
    cache, step = byte_dtype_sample(dtype, (2, 6, 4), 0), byte_dtype_sample(dtype, (2, 2, 4), 1)
    pos = torch.tensor([4, 1])
    bits = bits_dtype(cache)
    want = cache.view(bits).index_copy(1, pos, step.view(bits))
    got = native(lambda c, i, s: c.index_copy_(1, i, s), cache, pos, step).cpu()
    assert got.dtype == dtype and torch.equal(got.view(bits), want)
    with pytest.raises(RuntimeError, match="same dtype"):
        cache.to("axon").index_copy_(1, pos.to("axon"), torch.zeros(2, 2, 4, device="axon", dtype=torch.float64))


@pytest.mark.parametrize("dtype", BYTE_DTYPES, ids=dtype_id)
def test_where_of_dtypes_the_kernels_do_not_know_selects_bits_natively(dtype):
    a, b = byte_dtype_sample(dtype, (3, 4), 0), byte_dtype_sample(dtype, (1, 4), 1)  # b broadcasts
    cond = torch.rand(3, 4, generator=torch.Generator().manual_seed(2)) > 0.5
    bits = bits_dtype(a)
    want = torch.where(cond, a.view(bits), b.view(bits))
    got = native(torch.where, cond, a, b).cpu()
    assert got.dtype == dtype and torch.equal(got.view(bits), want)
    out = torch.empty(0, dtype=dtype, device="axon")
    torch.where(cond.to("axon"), a.to("axon"), b.to("axon"), out=out)
    assert torch.equal(out.cpu().view(bits), want)


def test_cat_checks_like_cpu():
    a, b = torch.zeros(2, 3, device="axon"), torch.zeros(2, 4, device="axon")
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        torch.cat([a, b])
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        torch.cat([a, a], out=torch.empty(0, dtype=torch.long, device="axon"))
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        torch.cat([torch.zeros((), device="axon")])
    for parts in ([a, a.cpu()], [a.cpu(), a]):  # CUDA's rule: no silent copy between devices
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
            torch.cat(parts)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.cat([a, a], out=torch.empty(0))


def test_functional_cat_gives_cpus_dtype_and_memory_format():
    x = sample(torch.float32, (2, 3, 4, 5)).to(memory_format=torch.channels_last)
    for parts in ((x, x), (x, x.contiguous()), (x, x.double()), (x.int(), x.bool())):
        for dim in (0, 1, 3):
            got, want = native(lambda *t: torch.cat(t, dim), *parts), torch.cat(parts, dim)
            assert got.stride() == want.stride() and got.dtype == want.dtype
            same(got, want)


@pytest.mark.parametrize("op", ["index_select", "gather", "scatter", "index_add", "embedding", "embedding_backward"])
def test_out_of_range_index_raises_out_of_bounds(op):
    x = torch.zeros(5, 2, device="axon")
    bad = torch.tensor([1, 7, 0], device="axon")
    with pytest.raises((RuntimeError, IndexError), match="out of bounds"):
        if op == "index_select":
            r = x.index_select(0, bad)
        elif op == "gather":
            r = x.gather(0, bad.view(3, 1).expand(3, 2))
        elif op == "scatter":
            r = x.scatter(0, bad.view(3, 1).expand(3, 2), 1.0)
        elif op == "index_add":
            r = x.index_add(0, bad, torch.ones(3, 2, device="axon"))
        elif op == "embedding":
            r = torch.nn.functional.embedding(bad, x)
        else:
            r = torch.ops.aten.embedding_dense_backward(torch.ones(3, 2, device="axon"), bad, 5, -1, False)
        r.cpu()
    # The stream stays usable afterwards.
    same(x.index_select(0, torch.tensor([4], device="axon")), torch.zeros(1, 2))


# ---- index_copy: libaxon's index_copy kernel (rows of 64 bytes or more after dim take its whole-row path) ----

def pick(size, n, seed):
    """n distinct indices in [0, size): CPU's result with repeated ones depends on its threading."""
    return torch.randperm(size, generator=torch.Generator().manual_seed(seed))[:n]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("dim", [0, 1, 2, 3, -1, -3])
@pytest.mark.parametrize("shape", [(3, 4, 5, 6), (2, 3, 4, 40)], ids=["short_rows", "long_rows"])
def test_index_copy_matches_cpu(dtype, dim, shape):
    x = sample(dtype, shape)
    n = max(1, x.size(dim) - 1)
    src_shape = list(shape)
    src_shape[dim] = n
    src = sample(dtype, tuple(src_shape), seed=7)
    idx = pick(x.size(dim), n, seed=dim % 4)

    def inplace(t, i, s):
        return t.index_copy_(dim, i, s)

    assert_exact(native(inplace, x, idx, src), inplace(x.clone(), idx, src))
    assert_exact(native(lambda t, i, s: torch.index_copy(t, dim, i, s), x, idx, src), x.index_copy(dim, idx, src))
    out = torch.empty(0, dtype=dtype, device="axon")
    native(lambda t, i, s: torch.index_copy(t, dim, i, s, out=out), x, idx, src)
    assert_exact(out, x.index_copy(dim, idx, src))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.complex64], ids=dtype_id)
def test_index_copy_with_strided_self_source_and_index_matches_cpu(dtype):
    base = sample(dtype, (6, 5, 40))
    src = sample(dtype, (40, 3, 6), seed=2)  # permuted below to [3, 6, 40]
    wide = torch.zeros(6, dtype=torch.long)
    wide[::2] = torch.tensor([4, 0, 2])  # read through a strided view: [4, 0, 2]

    def run(b, s, w):
        view = b.transpose(0, 1)  # [5, 6, 40], written through to b
        view.index_copy_(0, w[::2], s.permute(1, 2, 0))
        return b

    assert_exact(native(run, base, src, wide), run(base.clone(), src, wide))
    # Non-contiguous self along dim 1 with short rows: the element path.
    x = sample(dtype, (4, 7, 3))
    s = sample(dtype, (3, 2, 4), seed=4)
    i = torch.tensor([6, 1])
    assert_exact(native(lambda t, v, j: t.transpose(0, 2).index_copy(1, j, v), x, s, i),
                 x.transpose(0, 2).index_copy(1, i, s))


def test_index_copy_into_a_static_kv_cache_runs_natively():
    """HF's StaticCache: cache.index_copy_(2, cache_position, new_states) per layer and step."""
    cache = torch.zeros(4, 4, 128, 32)
    cache_a = cache.to("axon")
    torch_axon.reset_fallback_stats()
    for step in range(3):
        pos = torch.tensor([125 + step])
        new = sample(torch.float32, (4, 4, 1, 32), seed=step)
        cache.index_copy_(2, pos, new)
        cache_a.index_copy_(2, pos.to("axon"), new.to("axon"))
    prefill = torch.arange(0, 10)
    states = sample(torch.float32, (4, 4, 10, 32), seed=9)
    cache.index_copy_(2, prefill, states)
    cache_a.index_copy_(2, prefill.to("axon"), states.to("axon"))
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    assert_exact(cache_a, cache)


def test_index_copy_of_a_0d_source_and_an_empty_index_match_cpu():
    x = sample(torch.float64, (5,))
    one, v = torch.tensor([3]), torch.tensor(2.5, dtype=x.dtype)
    assert_exact(native(lambda t, i, s: t.index_copy(0, i, s), x, one, v), x.index_copy(0, one, v))
    y = sample(torch.float32, (3, 4))
    empty = torch.tensor([], dtype=torch.long)
    assert_exact(native(lambda t, i, s: t.index_copy(0, i, s), y, empty, torch.empty(0, 4)),
                 y.index_copy(0, empty, torch.empty(0, 4)))


def raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return e
    raise AssertionError("expected an error")


@pytest.mark.parametrize("case", ["int32_index", "2d_index", "too_many_indices", "slice_shapes", "ndim", "dtype",
                                  "dim", "scalar_source", "overlap", "expanded_self"])
def test_index_copy_bad_input_raises_like_cpu(case):
    def make(device):
        x = torch.zeros(3, 4, device=device)
        i = torch.tensor([0, 2], device=device)
        s = torch.ones(2, 4, device=device)
        if case == "int32_index":
            return lambda: x.index_copy_(0, i.int(), s)
        if case == "2d_index":
            return lambda: x.index_copy_(0, i.view(1, 2), s)
        if case == "too_many_indices":
            return lambda: x.index_copy_(0, torch.tensor([0, 1, 2], device=device), s)
        if case == "slice_shapes":
            return lambda: x.index_copy_(1, i, s)
        if case == "ndim":
            return lambda: x.index_copy_(0, i, s.view(2, 4, 1))
        if case == "dtype":
            return lambda: x.index_copy_(0, i, s.double())
        if case == "dim":
            return lambda: x.index_copy_(2, i, s)
        if case == "scalar_source":
            return lambda: x.index_copy_(0, i, torch.tensor(1.0, device=device))
        if case == "expanded_self":
            return lambda: x.expand(2, 3, 4).index_copy_(1, i, torch.ones(2, 2, 4, device=device))
        return lambda: x.index_copy_(0, i, x[:2])

    expected, got = raised(make("cpu")), raised(make("axon"))
    assert type(got) is type(expected)
    assert str(got).splitlines()[0] == str(expected).splitlines()[0]


@pytest.mark.parametrize("bad", [7, -1])
def test_index_copy_out_of_range_index_raises_at_sync_and_writes_nothing(bad):
    for width in (2, 32):  # element path, row path
        x = torch.zeros(5, width, device="axon")
        with pytest.raises((RuntimeError, IndexError),
                           match=f"index_copy\\(\\): index {bad} is out of bounds for dimension 0 with size 5"):
            x.index_copy_(0, torch.tensor([1, bad, 0], device="axon"), torch.ones(3, width, device="axon"))
            x.cpu()
        assert_exact(x, torch.zeros(5, width))


@pytest.mark.parametrize("bad", [(3000, 5000), (2047, -2000), (1024, 1 << 40)])
def test_scatter_add_names_the_first_bad_index_of_a_long_row_and_writes_nothing(bad):
    # Rows of 4096 int64 indices are checked 1024 at a time, vectorized, before anything is written; a bad index
    # past the first block must still be found, and the first of two named.
    (at, value) = bad
    index = torch.randint(0, 1000, (2, 4096))
    index[1, at] = value
    index[1, at + 500] = 1 << 50
    x = torch.zeros(2, 1000, device="axon")
    with pytest.raises((RuntimeError, IndexError),
                       match=f"index {value} is out of bounds for dimension 1 with size 1000"):
        x.scatter_add_(1, index.to("axon"), torch.ones(2, 4096, device="axon"))
        x.cpu()
    assert_exact(x, torch.zeros(2, 1000))


@pytest.mark.parametrize("dtype", [torch.float16, torch.int16, torch.float32, torch.float64], ids=str)
def test_gather_along_rows_names_a_bad_index(dtype):
    # the dense gather loops (2-, 4- and 8-byte elements, index and out contiguous), and an out-of-range index
    # named (gather takes no negative indices, as on CPU) before anything is read through it
    x = sample(dtype, (6, 300))
    idx = torch.randint(0, 300, (6, 77), generator=torch.Generator().manual_seed(5))
    same(native(lambda t, i: t.gather(1, i), x, idx), x.gather(1, idx))
    same(native(lambda t, i: t.gather(0, i), x, idx[:, :5] % 6), x.gather(0, idx[:, :5] % 6))
    idx[4, 50] = 300
    with pytest.raises((RuntimeError, IndexError), match="index 300 is out of bounds for dimension 1 with size 300"):
        x.to("axon").gather(1, idx.to("axon")).cpu()


# ---- cat's row path: each input's dense block copied into out's rows in one launch ----

@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_cat_row_path_matches_cpu_with_mixed_widths_and_layouts(dim):
    base = (3, 4, 10)
    shapes = []
    for k, w in enumerate([1, 7, 16, 3, 40, 2]):
        s = list(base)
        s[dim] = w
        shapes.append(s)
    parts = [sample(torch.float32, tuple(s), seed=k) for k, s in enumerate(shapes)]
    parts[1] = sample(torch.float32, tuple(reversed(shapes[1])), seed=11).permute(2, 1, 0)  # not dense: element copy
    wide = list(shapes[2])
    wide[0] *= 2
    parts[2] = sample(torch.float32, tuple(wide), seed=12)[::2]  # gaps between outer positions
    parts[4] = parts[4].double()  # converted: element copy
    same(native(lambda *t: torch.cat(t, dim), *parts), torch.cat(parts, dim))


def test_cat_along_the_last_dim_of_big_and_many_inputs_matches_cpu():
    x = [sample(torch.float32, (512, 256), seed=k) for k in range(3)]
    same(native(lambda *t: torch.cat(t, -1), *x), torch.cat(x, -1))
    kv = [sample(torch.bfloat16, (4, 4, 64, 64), seed=k) for k in range(2)]
    same(native(lambda *t: torch.cat(t, 2), *kv), torch.cat(kv, 2))
    many = [sample(torch.int16, (33, 1 + k % 5), seed=k) for k in range(50)]  # two launches of 24 and one of 2
    many[7] = many[7].t().contiguous().t()  # column-major: element copy
    same(native(lambda *t: torch.cat(t, 1), *many), torch.cat(many, 1))
    narrow = [sample(torch.bool, (1000, 1), seed=k) for k in range(5)]  # one-byte pieces
    same(native(lambda *t: torch.cat(t, 1), *narrow), torch.cat(narrow, 1))


# A scalar self is indexed as a vector of one element along dim 0 or -1 (op_db samples these), natively.
SCALAR_CASES = {
    "index_select": lambda s, i: s.index_select(0, i),
    "index_select dim -1": lambda s, i: torch.index_select(s, -1, i),
    "gather": lambda s, i: s.gather(0, i),
    "index_add_": lambda s, i: s.clone().index_add_(0, i, s * 2 + 1, alpha=3),
    "index_add": lambda s, i: torch.index_add(s, -1, i, s - 4),
    "index_copy_": lambda s, i: s.clone().index_copy_(0, i, s + 7),
    "index_copy out=": lambda s, i: torch.index_copy(s, 0, i, s * 3,
                                                     out=torch.empty(5, dtype=s.dtype, device=s.device)),
}


@pytest.mark.parametrize("case", SCALAR_CASES)
@pytest.mark.parametrize("index", [torch.tensor([0]), torch.tensor(0)], ids=["index [0]", "index 0-d"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bfloat16], ids=dtype_id)
def test_scalar_self_is_a_vector_of_one_element(case, index, dtype):
    fn = SCALAR_CASES[case]
    s = torch.tensor(5, dtype=dtype)
    expected = fn(s, index)
    same(native(fn, s, index), expected)


@pytest.mark.parametrize("index, message", [(torch.tensor([0, 0]), "Index to scalar can have only 1 value"),
                                            (torch.tensor([0.0]), "Expected dtype int32 or int64")])
def test_scalar_self_with_a_bad_index_raises_cpus_error(index, message):
    with pytest.raises(RuntimeError, match=message):
        torch.tensor(5.0).index_select(0, index)
    with pytest.raises(RuntimeError, match=message):
        torch.tensor(5.0, device="axon").index_select(0, index.to("axon"))
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.tensor(5.0, device="axon").index_select(1, torch.tensor([0], device="axon"))


def test_scalar_self_with_a_source_of_another_dtype_is_refused_before_any_write():
    s = torch.tensor(5.0, device="axon")
    i = torch.tensor([0], device="axon")
    with pytest.raises(RuntimeError, match="same scalar type"):
        s.index_add_(0, i, torch.tensor(2.0, dtype=torch.float64, device="axon"))
    with pytest.raises(RuntimeError, match="dtype"):
        s.index_copy_(0, i, torch.tensor(2.0, dtype=torch.float64, device="axon"))
    assert s.item() == 5.0


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_repeat_interleave_of_a_repeats_vector_matches_cpu(dtype):
    r = torch.tensor([2, 0, 3, 1, 0, 4], dtype=dtype)
    same(native(torch.repeat_interleave, r), torch.repeat_interleave(r))
    same(native(lambda t: torch.repeat_interleave(t, output_size=10), r), torch.repeat_interleave(r, output_size=10))
    same(native(torch.repeat_interleave, r[:0]), torch.repeat_interleave(r[:0]))


@pytest.mark.parametrize("dtype", REAL_DTYPES, ids=dtype_id)
def test_repeat_interleave_along_a_dim_with_tensor_repeats_runs_natively(dtype):
    x = sample(dtype, (4, 3))
    reps = torch.tensor([1, 0, 2, 3])
    same(native(lambda t, rr: torch.repeat_interleave(t, rr, dim=0), x, reps), torch.repeat_interleave(x, reps, dim=0))
    same(native(lambda t: torch.repeat_interleave(t, 2, dim=1), x), torch.repeat_interleave(x, 2, dim=1))


def test_repeat_interleave_refuses_negative_repeats_and_bad_shapes():
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        torch.repeat_interleave(torch.tensor([1, -1], device="axon"))
    with pytest.raises(RuntimeError, match="only accept 1D vector"):
        torch.repeat_interleave(torch.ones(2, 2, dtype=torch.int64, device="axon"))
    with pytest.raises(RuntimeError, match="repeats sum to 3, not the output size 4"):
        torch.repeat_interleave(torch.tensor([1, 2], device="axon"), output_size=4).cpu()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5])
def test_embedding_renorm_matches_cpu(dtype, norm_type):
    """Repeated and unsorted indices, rows above and below max_norm. The norm is a reduction whose order may differ
    from CPU's by a rounding, so scaled rows are compared with the dtype's tolerance; rows not looked up are exact."""
    w = torch.randn(10, 4, generator=torch.Generator().manual_seed(3)).to(dtype) * 2
    idx = torch.tensor([[1, 2, 2], [7, 1, 0]])
    assert (w[idx.flatten()].double().norm(norm_type, dim=1) > 1.0).any()  # some looked-up rows get scaled
    wa = w.to("axon")
    native(lambda: torch.embedding_renorm_(wa, idx.to("axon"), 1.0, norm_type))
    torch.embedding_renorm_(w, idx, 1.0, norm_type)
    rtol, atol = TOLERANCES[dtype]
    torch.testing.assert_close(wa.cpu(), w, rtol=rtol, atol=atol)
    untouched = torch.tensor([3, 4, 5, 6, 8, 9])
    assert_exact(wa[untouched.to("axon")], w[untouched])


def test_embedding_with_max_norm_trains_on_the_device():
    emb = torch.nn.Embedding(12, 5, max_norm=0.8)
    emb_a = torch.nn.Embedding(12, 5, max_norm=0.8).to("axon")
    emb_a.load_state_dict(emb.state_dict())
    idx = torch.tensor([[3, 4, 3], [11, 0, 4]])
    emb(idx).square().sum().backward()
    native(lambda: emb_a(idx.to("axon")).square().sum().backward())
    assert_exact(emb_a.weight.detach(), emb.weight.detach())
    torch.testing.assert_close(emb_a.weight.grad.cpu(), emb.weight.grad, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("weight_shape,indices,message", [
    ((2, 5, 3), torch.tensor([1]), "Expected 2-dimensional tensor, but got 3-dimensional tensor for argument #1"),
    ((5, 3), torch.tensor([1.0]), "Expected tensor for argument #2 'indices' to have one of the following scalar"),
])
def test_embedding_renorm_bad_input_fails_like_cpu(weight_shape, indices, message):
    for device in ("cpu", "axon"):
        with pytest.raises(RuntimeError, match=message):
            torch.embedding_renorm_(torch.ones(weight_shape, device=device), indices.to(device), 1.0, 2.0)

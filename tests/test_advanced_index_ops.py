"""Native advanced indexing (libaxon's index_advanced kernels): x[idx] in every index form, x[idx] = v and index_put_
with and without accumulate, nonzero / argwhere / where(cond) / nonzero_static, masked_select and masked_scatter_,
against PyTorch on CPU, with no host fallback; indexing's backward (index_put with accumulate) too; bad indices give
an error naming the op and the index."""

import pytest
import torch

import torch_axon
from axon_testing import KERNEL_DTYPES, dtype_id, native, same, sample

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def ix(*shape, high, seed=1, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-high, high, shape, generator=g).to(dtype)


# Index forms as functions of (x, index tensors already on x's device). x is (5, 6, 7).
FORMS = {
    "single": lambda x, d: x[d(ix(4, high=5))],
    "single_int32": lambda x, d: x[d(ix(4, high=5, dtype=torch.int32))],
    "two": lambda x, d: x[d(ix(3, high=5)), d(ix(3, high=6, seed=2))],
    "broadcast": lambda x, d: x[d(ix(3, 1, high=5)), d(ix(1, 4, high=6, seed=2))],
    "slice_then_index": lambda x, d: x[:, d(ix(2, 3, high=6))],
    "ellipsis": lambda x, d: x[..., d(ix(4, high=7))],
    "none_and_index": lambda x, d: x[None, d(ix(2, high=5)), :, None],
    "separated": lambda x, d: x[d(ix(3, high=5)), :, d(ix(3, high=7, seed=3))],
    "all_three": lambda x, d: x[d(ix(2, 2, high=5)), d(ix(2, 2, high=6, seed=4)), d(ix(2, 2, high=7, seed=5))],
    "zero_dim_index": lambda x, d: x[:, d(torch.tensor(-2))],
    "mask": lambda x, d: x[d(sample(torch.bool, (5, 6), seed=3))],
    "mask_last": lambda x, d: x[:, :, d(sample(torch.bool, (7,), seed=4))],
    "mask_and_index": lambda x, d: x[d(sample(torch.bool, (5,), seed=5)), :, d(torch.tensor([1]))],
    "empty_index": lambda x, d: x[d(torch.tensor([], dtype=torch.long))],
    "cpu_index": lambda x, d: x[ix(3, high=5)],
}


@pytest.mark.parametrize("form", FORMS, ids=str)
@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_index_matches_cpu_in_every_form(form, dtype):
    x = sample(dtype, (5, 6, 7))
    expected = FORMS[form](x, lambda t: t)
    same(native(lambda: FORMS[form](x.to("axon"), lambda t: t.to("axon"))), expected)


def test_index_of_strided_view_and_out_variant():
    x = sample(torch.float32, (8, 9))
    i = torch.tensor([3, -1, 0, 3])
    expected = x.t()[1:, i]
    same(native(lambda: x.to("axon").t()[1:, i.to("axon")]), expected)
    out = torch.empty(0, device="axon")
    native(lambda: torch.index_select(x.to("axon"), 0, i.abs().to("axon"), out=out))
    out2 = torch.empty(0, device="axon")
    native(lambda: torch.ops.aten.index.Tensor_out(x.to("axon"), [i.to("axon")], out=out2))
    same(out2, x[i])


def test_index_large_runs_in_parallel_and_matches_cpu():
    x = torch.randn(300, 500)
    i = ix(2000, high=300)
    j = ix(2000, high=500, seed=9)
    same(native(lambda: x.to("axon")[i.to("axon")]), x[i])
    same(native(lambda: x.to("axon")[i.to("axon"), j.to("axon")]), x[i, j])


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("form", ["single", "two", "mask", "slice", "broadcast_value"])
def test_index_put_without_accumulate_matches_cpu(dtype, form):
    x = sample(dtype, (5, 6))
    v = sample(dtype, (3, 6), seed=7)
    i = torch.tensor([4, -5, 2])  # distinct rows: the written value is then defined

    def put(x, d):
        y = x.clone()
        if form == "single":
            y[d(i)] = v.to(y.device)
        elif form == "two":
            y[d(i), d(torch.tensor([0, -1, 3]))] = v[:, 0].to(y.device)
        elif form == "mask":
            y[d(sample(torch.bool, (5, 6), seed=2))] = v[0, 0].to(y.device)
        elif form == "slice":
            y[:, d(torch.tensor([1, 5]))] = v[:, :2].t()[:2, :1].expand(2, 1).reshape(1, 2).to(y.device)
        else:
            y[d(i)] = v[0].to(y.device)  # one row broadcast to every indexed row
        return y

    same(native(lambda: put(x.to("axon"), lambda t: t.to("axon"))), put(x, lambda t: t))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                                   torch.int64, torch.int8, torch.bool, torch.complex64], ids=dtype_id)
def test_index_put_accumulate_with_duplicates_equals_cpu_bitwise(dtype):
    x = sample(dtype, (6, 4)) if dtype != torch.bool else torch.zeros(6, 4, dtype=torch.bool)
    i = torch.tensor([1, 1, -5, 3, 1, 0, 3])
    v = sample(dtype, (7, 4), seed=3)
    if dtype.is_floating_point:  # keep the sums finite so NaN/inf do not hide the order of additions
        x, v = x.nan_to_num(0, 0, 0), v.nan_to_num(0, 0, 0)
    expected = x.clone().index_put_((i,), v, accumulate=True)
    result = native(lambda: x.to("axon").index_put_((i.to("axon"),), v.to("axon"), accumulate=True))
    same(result, expected)


def test_index_put_accumulate_is_deterministic_and_close_to_cpu_at_scale():
    g = torch.Generator().manual_seed(0)
    x = torch.zeros(50, 64)
    i = torch.randint(0, 50, (5000,), generator=g)
    v = torch.randn(5000, 64, generator=g)
    # CPU's large accumulating index_put adds in an order of its own (parallel), so compare with a float64 sum; the
    # axon result must still be the same bits on every run.
    expected = x.double().index_put((i,), v.double(), accumulate=True).float()
    first = native(lambda: x.to("axon").index_put((i.to("axon"),), v.to("axon"), accumulate=True)).cpu()
    torch.testing.assert_close(first, expected, rtol=1e-5, atol=1e-4)
    for _ in range(3):
        again = x.to("axon").index_put((i.to("axon"),), v.to("axon"), accumulate=True).cpu()
        assert torch.equal(again, first)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_backward_through_indexing_matches_cpu(dtype):
    x = sample(torch.float64, (5, 6)).nan_to_num(0, 0, 0).to(dtype)
    i = torch.tensor([[0, 2], [2, -1]])
    grads = []
    for device in ("cpu", "axon"):
        leaf = x.to(device).detach().requires_grad_()
        torch_axon.reset_fallback_stats()
        out = leaf[i.to(device)] * 2
        out[:, :, 1:].sum().backward()
        if device == "axon":
            torch.axon.synchronize()
            assert {k: v for k, v in torch_axon.fallback_stats().items() if "index" in k or "put" in k} == {}
        grads.append(leaf.grad.cpu())
    same(grads[1], grads[0])


def test_masked_fill_through_setitem_with_a_mask_is_native():
    x = sample(torch.float32, (4, 5))
    m = x > 0
    y = x.clone()
    y[m] = 0.5
    r = x.to("axon")
    native(lambda: r.__setitem__(m.to("axon"), 0.5))
    same(r, y)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("shape", [(7,), (3, 4, 5), (0, 3), (), (2, 1, 3, 1)], ids=str)
def test_nonzero_argwhere_and_where_match_cpu(dtype, shape):
    x = sample(dtype, shape)
    if x.numel() > 2:
        x.view(-1)[::3] = 0
    same(native(lambda: torch.nonzero(x.to("axon"))), torch.nonzero(x))
    same(native(lambda: torch.argwhere(x.to("axon"))), torch.argwhere(x))
    if x.dim():
        for r, e in zip(native(lambda: torch.where(x.to("axon"))), torch.where(x)):
            same(r, e)


def test_nonzero_counts_nan_and_not_negative_zero():
    x = torch.tensor([0.0, -0.0, float("nan"), 1.0, float("-inf")])
    same(native(lambda: torch.nonzero(x.to("axon"))), torch.nonzero(x))


def test_nonzero_of_large_strided_input_and_static_form():
    g = torch.Generator().manual_seed(0)
    x = (torch.rand(700, 300, generator=g) > 0.7).t()
    same(native(lambda: torch.nonzero(x.to("axon"))), torch.nonzero(x))
    y = torch.tensor([[0, 1], [2, 0], [3, 4]])
    for size in (0, 2, 3, 6):
        same(native(lambda: torch.nonzero_static(y.to("axon"), size=size, fill_value=-7)),
             torch.nonzero_static(y, size=size, fill_value=-7))
    # one command without a read-back of the count: large inputs cut across blocks, an empty input all fill
    for size in (1, 5000, 63000, 70000):
        same(native(lambda: torch.nonzero_static(x.to("axon"), size=size, fill_value=-1)),
             torch.nonzero_static(x, size=size, fill_value=-1))
    for t in (torch.zeros(0, 3), torch.tensor(2.0), torch.tensor(0.0)):
        same(native(lambda: torch.nonzero_static(t.to("axon"), size=3, fill_value=5)),
             torch.nonzero_static(t, size=3, fill_value=5))


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_masked_select_matches_cpu_with_broadcasting(dtype):
    x = sample(dtype, (4, 5))
    for m in (sample(torch.bool, (4, 5), seed=1), sample(torch.bool, (5,), seed=2),
              sample(torch.bool, (3, 4, 1), seed=3), torch.zeros(4, 5, dtype=torch.bool)):
        same(native(lambda: torch.masked_select(x.to("axon"), m.to("axon"))), torch.masked_select(x, m))


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_masked_scatter_matches_cpu(dtype):
    x = sample(dtype, (4, 5))
    src = sample(dtype, (5, 5), seed=4)
    for m in (sample(torch.bool, (4, 5), seed=1), sample(torch.bool, (5,), seed=2)):
        expected = x.clone().masked_scatter_(m, src)
        same(native(lambda: x.to("axon").masked_scatter_(m.to("axon"), src.to("axon"))), expected)


def test_masked_scatter_with_too_small_source_fails_clearly():
    x = torch.zeros(4, device="axon")
    with pytest.raises(RuntimeError, match="masked_scatter_"):
        x.masked_scatter_(torch.ones(4, dtype=torch.bool, device="axon"), torch.ones(2, device="axon"))
        torch.axon.synchronize()


@pytest.mark.parametrize("put", [False, True], ids=["index", "index_put"])
def test_out_of_range_index_fails_naming_the_op_and_index(put):
    x = torch.zeros(5, 3, device="axon")
    i = torch.tensor([1, 7], device="axon")
    op = "index_put_" if put else "index"
    with pytest.raises((RuntimeError, IndexError), match=rf"{op}.*index 7 is out of bounds for dimension 0 with size 5"):
        if put:
            x.index_put_((i,), torch.ones(2, 3, device="axon"), accumulate=True)
        else:
            x[i]
        torch.axon.synchronize()
    # The stream survives and nothing was written.
    assert torch.equal(x.cpu(), torch.zeros(5, 3))
    with pytest.raises((RuntimeError, IndexError), match="index -6 is out of bounds"):
        x[torch.tensor([-6], device="axon")]
        torch.axon.synchronize()


def test_bad_index_forms_give_pytorchs_errors():
    x = torch.zeros(5, 3, device="axon")
    with pytest.raises(IndexError, match="too many indices"):
        x[torch.tensor([0], device="axon"), 0, 0]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[torch.tensor([0, 1], device="axon"), torch.tensor([0, 1, 2], device="axon")]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        x[torch.tensor([0.0], device="axon")]
    with pytest.raises(RuntimeError, match="shape mismatch"):
        x[torch.tensor([0, 1], device="axon")] = torch.ones(3, 3, device="axon")


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_take_put_and_index_fill_match_cpu(dtype):
    x = sample(dtype, (4, 5))
    i = torch.tensor([[0, -1], [19, 7]])
    same(native(lambda: torch.take(x.to("axon"), i.to("axon"))), torch.take(x, i))
    same(native(lambda: torch.take(x.to("axon").t(), i.to("axon"))), torch.take(x.t(), i))
    src = sample(dtype, (2, 2), seed=5)
    same(native(lambda: x.to("axon").put_(i.to("axon"), src.to("axon"))), x.clone().put_(i, src))
    flat_src = sample(dtype, (4,), seed=7)  # source pairs with index in index's row-major order, any shape
    same(native(lambda: x.to("axon").put_(i.t().to("axon"), flat_src.to("axon"))), x.clone().put_(i.t(), flat_src))
    same(native(lambda: x.to("axon").put_(torch.tensor(-2, device="axon"), flat_src[:1].to("axon"))),
         x.clone().put_(torch.tensor(-2), flat_src[:1]))
    if dtype not in (torch.bool,):
        j = torch.tensor([3, 3, 0, 3])
        s4 = sample(dtype, (4,), seed=6)
        if dtype.is_floating_point:
            s4 = s4.nan_to_num(0, 0, 0)
        same(native(lambda: x.to("axon").put_(j.to("axon"), s4.to("axon"), accumulate=True)),
             x.clone().put_(j, s4, accumulate=True))
    v = sample(dtype, (1,), seed=8)[0].item()
    for dim, idx in ((0, torch.tensor([1, -1])), (1, torch.tensor([4, 0, 2])), (-1, torch.tensor(3))):
        same(native(lambda: x.to("axon").index_fill_(dim, idx.to("axon"), v)), x.clone().index_fill_(dim, idx, v))
        same(native(lambda: x.to("axon").index_fill(dim, idx.to("axon"), torch.tensor(v, dtype=dtype))),
             x.index_fill(dim, idx, torch.tensor(v, dtype=dtype)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.bool,
                                   torch.complex128], ids=dtype_id)
def test_index_fill_visits_rows_and_columns_of_any_layout_like_cpu(dtype):
    # libaxon fills whole slices index by index when dim strides out further than the slice's fastest dim, else
    # position by position with every index at each; both on views (transposed, strided, 3-d, a negative stride),
    # repeated and negative indices.
    x = sample(dtype, (6, 9, 11), seed=2)
    views = [lambda t: t, lambda t: t.transpose(0, 2), lambda t: t[:, ::2, 1:], lambda t: t.flip(1)]
    v = sample(dtype, (1,), seed=9)[0].item()
    for view in views:
        for dim in (0, 1, 2, -1):
            size = view(x).shape[dim]
            for idx in (torch.tensor([0, size - 1, -1, 2, 2]), torch.arange(size), torch.tensor(1)):
                got = native(lambda: view(x.to("axon").clone()).index_fill_(dim, idx.to("axon"), v))
                same(got, view(x.clone()).index_fill_(dim, idx, v))


def test_index_fill_refuses_bad_indices_before_writing():
    x = torch.arange(12.0).reshape(3, 4)
    for dim, bad in ((0, torch.tensor([0, 3])), (1, torch.tensor([-5])), (1, torch.tensor([1, 4, 0]))):
        xa = x.to("axon")
        with pytest.raises((IndexError, RuntimeError), match="out of (bounds|range)"):
            xa.index_fill_(dim, bad.to("axon"), -1.0)
            torch.axon.synchronize()
        same(xa, x)   # nothing written
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.to("axon").index_fill_(0, torch.tensor([[0]], device="axon"), 1.0)
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        x.to("axon").index_fill_(0, torch.tensor([0], dtype=torch.int32, device="axon"), 1.0)
    empty = torch.empty(0, 4, device="axon")
    with pytest.raises((IndexError, RuntimeError), match="out of (bounds|range)"):
        empty.index_fill_(0, torch.tensor([0], device="axon"), 1.0)
        torch.axon.synchronize()


@pytest.mark.parametrize("index", [torch.tensor([0]), torch.tensor(0), torch.tensor([-1])], ids=["[0]", "0-d", "[-1]"])
@pytest.mark.parametrize("dim", [0, -1])
def test_index_fill_of_a_scalar_is_native(index, dim):
    s = torch.tensor(5.0)
    expected = s.clone().index_fill_(dim, index, -2.5)
    s_axon, index_axon = s.to("axon"), index.to("axon")
    same(native(lambda: s_axon.clone().index_fill_(dim, index_axon, -2.5)), expected)

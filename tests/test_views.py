"""Views of axon tensors: each view op gives CPU's shape, strides, offset and values, shares the base's storage (a
write through the view shows in the base and back), and runs without the host fallback (metadata only).

All comparisons are exact: views move no data.
"""

import pytest
import torch

import torch_axon
from axon_testing import assert_exact, sample

# (name, function of a 3x4x5 tensor returning one view)
VIEWS = [
    ("view", lambda t: t.view(12, 5)),
    ("view_minus_one", lambda t: t.view(-1)),
    ("view_dtype", lambda t: t.view(torch.int32)),
    ("reshape", lambda t: t.reshape(4, 15)),
    ("transpose", lambda t: t.transpose(0, 2)),
    ("permute", lambda t: t.permute(2, 0, 1)),
    ("t", lambda t: t[0].t()),
    ("mT", lambda t: t.mT),
    ("select", lambda t: t.select(1, 2)),
    ("index_int", lambda t: t[1]),
    ("negative_index", lambda t: t[-1, -2]),
    ("slice_steps", lambda t: t[::2, 1::2, ::3]),
    ("slice_negative_start", lambda t: t[:, -3:]),
    ("narrow", lambda t: t.narrow(2, 1, 3)),
    ("expand", lambda t: t[:, :1].expand(3, 7, 5)),
    ("expand_new_dim", lambda t: t[0, 0].expand(2, 5)),
    ("broadcast_to", lambda t: t[0, :, :1].broadcast_to(4, 5)),
    ("unsqueeze", lambda t: t.unsqueeze(1)),
    ("none_index", lambda t: t[None, :, None]),
    ("squeeze", lambda t: t[:, :1].squeeze()),
    ("squeeze_dim", lambda t: t[:, :1].squeeze(1)),
    ("flatten", lambda t: t.flatten(1)),
    ("unflatten", lambda t: t.unflatten(2, (1, 5))),
    ("diagonal", lambda t: t.diagonal(offset=1, dim1=1, dim2=2)),
    ("diagonal_negative", lambda t: t[0].diagonal(-1)),
    ("unfold", lambda t: t.unfold(2, 2, 1)),
    ("unfold_step", lambda t: t.unfold(1, 2, 2)),
    ("as_strided", lambda t: t.as_strided((4, 3), (2, 7), 3)),
    ("movedim", lambda t: t.movedim(0, -1)),
    ("swapaxes", lambda t: t.swapaxes(1, 2)),
    ("view_as", lambda t: t.view_as(torch.empty(60))),
    ("alias", lambda t: t.view_as(t)),
    ("real_of_real", lambda t: t.real),
    ("detach", lambda t: t.detach()),
]


def _base(device):
    """A 3x4x5 float32 tensor holding 0..59 (made on the CPU: arange on axon runs through the fallback)."""
    return torch.arange(60, dtype=torch.float32).reshape(3, 4, 5).clone().to(device)


@pytest.fixture
def no_fallback():
    """Asserts that the test ran nothing through the host fallback."""
    torch_axon.reset_fallback_stats()
    yield
    assert torch_axon.fallback_stats() == {}


def _assert_same_view(view, expected):
    assert view.device.type == "axon"
    assert (view.shape, view.stride(), view.storage_offset(), view.dtype) == (
        expected.shape, expected.stride(), expected.storage_offset(), expected.dtype)


@pytest.mark.parametrize("name, make", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_matches_cpu_and_needs_no_fallback(name, make, no_fallback):
    base = _base("axon")
    view = make(base)
    expected = make(_base("cpu"))
    _assert_same_view(view, expected)
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    assert view._is_view() == expected._is_view()
    assert_exact(view.cpu(), expected)  # reads through the copy path, not the fallback


@pytest.mark.parametrize("name, make", [v for v in VIEWS if not v[0].startswith(("expand", "broadcast"))],
                         ids=[v[0] for v in VIEWS if not v[0].startswith(("expand", "broadcast"))])
def test_write_through_a_view_shows_in_the_base(name, make, no_fallback):
    base, cpu_base = _base("axon"), _base("cpu")
    view, cpu_view = make(base), make(cpu_base)
    values = sample(cpu_view.dtype, tuple(cpu_view.shape), seed=7)
    view.copy_(values)
    cpu_view.copy_(values)
    assert_exact(base, cpu_base)
    view.fill_(-1)
    cpu_view.fill_(-1)
    assert_exact(base, cpu_base)


def test_write_to_the_base_shows_in_an_earlier_view(no_fallback):
    base = _base("axon")
    view = base.transpose(0, 1)[1:, ::2]
    base.fill_(5.0)
    base[2].copy_(torch.arange(20.0).reshape(4, 5).to("axon"))
    expected = torch.full((3, 4, 5), 5.0)
    expected[2] = torch.arange(20.0).reshape(4, 5)
    assert_exact(view, expected.transpose(0, 1)[1:, ::2])


def test_reshape_of_a_non_viewable_layout_copies(no_fallback):
    base = _base("axon")
    r = base.transpose(0, 1).reshape(-1)
    assert r.untyped_storage().data_ptr() != base.untyped_storage().data_ptr()
    assert_exact(r, _base("cpu").transpose(0, 1).reshape(-1))
    r.fill_(0.0)
    assert_exact(base, _base("cpu"))


def test_view_of_an_incompatible_layout_fails_as_on_cpu():
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        _base("axon").transpose(0, 1).view(-1)


def test_contiguous_of_a_strided_view_is_a_dense_copy(no_fallback):
    v = _base("axon").permute(2, 0, 1)
    c = v.contiguous()
    assert c.is_contiguous() and c.data_ptr() != v.data_ptr()
    assert_exact(c, _base("cpu").permute(2, 0, 1).contiguous())
    assert v.contiguous() is not v and c.contiguous() is c


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_view_as_real_and_view_as_complex_round_trip(dtype, no_fallback):
    z = sample(dtype, (3, 4))
    a = z.to("axon")
    r = torch.view_as_real(a)
    _assert_same_view(r, torch.view_as_real(z))
    assert r.data_ptr() == a.data_ptr()
    assert_exact(r, torch.view_as_real(z))
    back = torch.view_as_complex(r)
    _assert_same_view(back, z)
    assert_exact(back, z)
    r[..., 1].fill_(0.5)  # write the imaginary parts through the real view
    expected = z.clone()
    expected.imag.fill_(0.5)
    assert_exact(a, expected)
    assert_exact(a.real, expected.real)
    assert_exact(a.imag, expected.imag)


def test_view_as_complex_of_a_non_matching_layout_fails_as_on_cpu():
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        torch.view_as_complex(torch.zeros(3, 3, device="axon"))


@pytest.mark.parametrize("split", [
    lambda t: t.split(2, dim=1),
    lambda t: t.split([1, 3, 1], dim=2),
    lambda t: t.chunk(2, dim=0),
    lambda t: t.tensor_split(3, dim=2),
    lambda t: t.unbind(1),
    lambda t: t.unsafe_split(2, dim=1),
], ids=["split", "split_sizes", "chunk", "tensor_split", "unbind", "unsafe_split"])
def test_split_chunk_and_unbind_give_views_matching_cpu(split, no_fallback):
    base = _base("axon")
    parts, expected = split(base), split(_base("cpu"))
    assert len(parts) == len(expected)
    for p, e in zip(parts, expected):
        _assert_same_view(p, e)
        assert p.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
        assert_exact(p, e)
    parts[-1].fill_(-2.0)
    cpu_base = _base("cpu")
    split(cpu_base)[-1].fill_(-2.0)
    assert_exact(base, cpu_base)


def test_in_place_view_ops_change_only_metadata(no_fallback):
    a = _base("axon")
    ptr = a.data_ptr()
    a.transpose_(0, 2).unsqueeze_(0).squeeze_(0)
    c = _base("cpu").transpose_(0, 2).unsqueeze_(0).squeeze_(0)
    _assert_same_view(a, c)
    assert a.data_ptr() == ptr
    a.as_strided_((2, 2), (1, 3), 1)
    c.as_strided_((2, 2), (1, 3), 1)
    _assert_same_view(a, c)
    assert_exact(a, c)


def test_views_of_views_keep_the_storage_offset(no_fallback):
    base = _base("axon")
    v = base[1:][:, 2:][..., 3:].unfold(2, 1, 1).squeeze(-1).diagonal()
    e = _base("cpu")[1:][:, 2:][..., 3:].unfold(2, 1, 1).squeeze(-1).diagonal()
    _assert_same_view(v, e)
    assert_exact(v, e)


def test_views_of_an_empty_tensor_match_cpu(no_fallback):
    a, c = torch.empty(0, 4, device="axon"), torch.empty(0, 4)
    for make in (lambda t: t.t(), lambda t: t.view(4, 0), lambda t: t[:, ::2], lambda t: t.unsqueeze(0),
                 lambda t: t.reshape(2, 0, 2), lambda t: t.expand(3, 0, 4)):
        _assert_same_view(make(a), make(c))


def test_zero_dim_views_match_cpu(no_fallback):
    base = _base("axon")
    s = base[1, 2, 3]
    assert s.dim() == 0 and s.storage_offset() == 33
    assert_exact(s, torch.tensor(33.0))
    assert_exact(s.view(1, 1), torch.tensor([[33.0]]))
    assert_exact(s.expand(3), torch.full((3,), 33.0))

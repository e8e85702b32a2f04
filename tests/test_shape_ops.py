"""Native shape ops: tril/triu (and in place), flip, roll, reflection and replication pads 1d/2d/3d forward and
backward, circular and constant pads, eye, linspace, equal, unfold's backward and channel_shuffle, against PyTorch on
CPU, with no host fallback; bad pads and bad channel_shuffle groups give PyTorch's errors."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon
from axon_testing import KERNEL_DTYPES, FLOAT_DTYPES, dtype_id, libaxon_commands, native, same, sample

GRAD_TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-12, 1e-12), torch.float16: (1e-3, 1e-3),
            torch.bfloat16: (1e-2, 1e-2)}


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("diagonal", [-2, 0, 1, 4])
def test_tril_triu_and_in_place_forms_match_cpu(dtype, diagonal):
    x = sample(dtype, (2, 4, 5))
    for f in (torch.tril, torch.triu):
        same(native(lambda: f(x.to("axon"), diagonal)), f(x, diagonal))
        same(native(lambda: f(x.to("axon").transpose(1, 2), diagonal)), f(x.transpose(1, 2), diagonal))
    same(native(lambda: x.to("axon").tril_(diagonal)), x.clone().tril_(diagonal))
    same(native(lambda: x.to("axon").triu_(diagonal)), x.clone().triu_(diagonal))


def test_tril_of_1d_input_fails_like_cpu():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.tril(torch.ones(3, device="axon"))


@pytest.mark.parametrize("fn", [torch.tril_indices, torch.triu_indices], ids=["tril", "triu"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=str)
def test_tril_and_triu_indices_match_cpu(fn, dtype):
    # square, wide and tall matrices; offsets inside, at and beyond the edges; empty results
    for rows, cols in [(4, 4), (3, 7), (9, 2), (1, 1), (0, 5), (5, 0)]:
        for offset in (0, 1, -1, 3, -4, 10, -10, 2**62, -2**62):
            got = native(lambda: fn(rows, cols, offset, dtype=dtype, device="axon"))
            assert got.device.type == "axon"
            assert torch.equal(got.cpu(), fn(rows, cols, offset, dtype=dtype)), (rows, cols, offset)


def test_tril_indices_refusals_are_cpus():
    with pytest.raises(RuntimeError, match="row must be non-negative, got-1"):
        torch.tril_indices(-1, 3, device="axon")
    with pytest.raises(RuntimeError, match="col must be non-negative, got-2"):
        torch.triu_indices(3, -2, device="axon")
    with pytest.raises(NotImplementedError, match="\"tril_indices\" not implemented for 'Float'"):
        torch.tril_indices(3, 3, dtype=torch.float32, device="axon")


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_flip_and_roll_match_cpu(dtype):
    x = sample(dtype, (3, 4, 5))
    for dims in ([0], [2], [0, 2], [-1, 1, 0], []):
        same(native(lambda: torch.flip(x.to("axon"), dims)), torch.flip(x, dims))
    same(native(lambda: torch.flip(x.to("axon").transpose(0, 2), [1])), torch.flip(x.transpose(0, 2), [1]))
    for shifts, dims in ((2, 0), (-7, 2), ((1, -2), (0, 2)), ((5, 1, 9), (0, 1, 2)), (0, 1)):
        same(native(lambda: torch.roll(x.to("axon"), shifts, dims)), torch.roll(x, shifts, dims))
    same(native(lambda: torch.roll(x.to("axon"), 7)), torch.roll(x, 7))
    same(native(lambda: torch.roll(x.to("axon").transpose(0, 1), -3)), torch.roll(x.transpose(0, 1), -3))


def test_flip_with_repeated_dims_fails():
    with pytest.raises(RuntimeError, match="dims has duplicates"):
        torch.flip(torch.ones(2, 2, device="axon"), [0, 0])


PADS = [("reflect", 1, (2, 3)), ("reflect", 2, (2, 1, 0, 3)), ("reflect", 3, (1, 2, 2, 0, 1, 1)),
        ("replicate", 1, (4, 0)), ("replicate", 2, (2, 5, 3, 1)), ("replicate", 3, (1, 0, 2, 3, 0, 2)),
        ("replicate", 2, (-1, 2, 1, -2)),
        ("replicate", 2, (-5, 2, 1, -4))]   # crops past the input: every position clamps to an edge


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mode,nsp,pad", PADS, ids=lambda p: str(p))
@pytest.mark.parametrize("batched", [False, True], ids=["unbatched", "batched"])
def test_reflection_and_replication_pads_forward_and_backward_match_cpu(dtype, mode, nsp, pad, batched):
    shape = (2, 3) + (4, 5, 6)[:nsp] if batched else (3,) + (4, 5, 6)[:nsp]
    x = sample(torch.float64, shape).nan_to_num(0, 0, 0).to(dtype)
    results = []
    for device in ("cpu", "axon"):
        leaf = x.to(device).detach().requires_grad_()
        torch_axon.reset_fallback_stats()
        out = F.pad(leaf, pad, mode=mode)
        g = sample(torch.float64, out.shape, seed=3).nan_to_num(0, 0, 0).to(dtype).to(device)
        out.backward(g)
        if device == "axon":
            torch.axon.synchronize()
            assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
        results.append((out.detach().cpu(), leaf.grad.cpu()))
    same(results[1][0], results[0][0])
    rtol, atol = GRAD_TOL[dtype]
    torch.testing.assert_close(results[1][1], results[0][1], rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=dtype_id)
@pytest.mark.parametrize("mode,nsp,pad", PADS, ids=lambda p: str(p))
def test_complex_pads_forward_and_backward_match_cpu(dtype, mode, nsp, pad):
    """The backward adds each part as a real gradient."""
    x = sample(dtype, (2, 3) + (4, 5, 6)[:nsp])
    results = []
    for device in ("cpu", "axon"):
        leaf = x.to(device).detach().requires_grad_()
        torch_axon.reset_fallback_stats()
        out = F.pad(leaf, pad, mode=mode)
        out.backward(sample(dtype, out.shape, seed=3).to(device))
        if device == "axon":
            torch.axon.synchronize()
            assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
        results.append((out.detach().cpu(), leaf.grad.cpu()))
    same(results[1][0], results[0][0])
    tol = {torch.complex64: 1e-5, torch.complex128: 1e-12}[dtype]
    torch.testing.assert_close(results[1][1], results[0][1], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.int32, torch.uint8, torch.complex64, torch.int64], ids=dtype_id)
def test_pads_move_non_float_dtypes(dtype):
    x = sample(dtype, (2, 3, 4, 5))
    for mode in ("reflect", "replicate", "circular"):
        same(native(lambda: F.pad(x.to("axon"), (1, 2, 3, 1), mode=mode)), F.pad(x, (1, 2, 3, 1), mode=mode))
    same(native(lambda: F.pad(x.to("axon"), (1, 2, 3, 1), value=3)), F.pad(x, (1, 2, 3, 1), value=3))


def test_bad_pads_give_pytorchs_errors():
    x = torch.ones(1, 3, 4, device="axon")
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(x, (4, 0), mode="reflect")
    with pytest.raises(RuntimeError, match="padding size is expected to be 2"):
        torch.ops.aten.reflection_pad1d(x, [1, 1, 1])
    with pytest.raises(RuntimeError):
        torch.ops.aten.replication_pad2d(torch.ones(4, device="axon"), [1, 1, 1, 1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.complex64], ids=dtype_id)
def test_eye_matches_cpu(dtype):
    for n, m in ((3, None), (2, 5), (4, 1), (0, 3)):
        args = (n,) if m is None else (n, m)
        same(native(lambda: torch.eye(*args, dtype=dtype, device="axon")), torch.eye(*args, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3.5, 10, 101), (2, -2, 2), (1, 1, 4), (5, 7, 1), (0, 1, 0)])
def test_linspace_matches_cpu_and_hits_both_ends(dtype, start, end, steps):
    r = native(lambda: torch.linspace(start, end, steps, dtype=dtype, device="axon")).cpu()
    e = torch.linspace(start, end, steps, dtype=dtype)
    tol = {torch.float32: 1e-6, torch.float64: 1e-12, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(r, e, rtol=tol, atol=tol * max(abs(start), abs(end), 1))
    if steps >= 2:
        assert r[0].item() == e[0].item() and r[-1].item() == e[-1].item()


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64], ids=dtype_id)
@pytest.mark.parametrize("start,end,steps", [(-3, 120, 7), (10, -10, 7), (0.5, 99.9, 13), (-7.9, 7.9, 4), (5, 9, 1),
                                             (0, 100, 0), (3, 3, 5), (0, 127, 128)])
def test_integer_linspace_matches_cpu_exactly(dtype, start, end, steps):
    # CPU converts the ends to the dtype (toward zero), then counts in double from each end and truncates
    if dtype == torch.uint8 and min(start, end) < 0:
        start, end = abs(start), abs(end)
    r = native(lambda: torch.linspace(start, end, steps, dtype=dtype, device="axon")).cpu()
    same(r, torch.linspace(start, end, steps, dtype=dtype))


def test_integer_linspace_of_wide_ranges_and_into_a_strided_out():
    big = native(lambda: torch.linspace(-2**62, 2**62 - 1, 1001, dtype=torch.int64, device="axon")).cpu()
    same(big, torch.linspace(-2**62, 2**62 - 1, 1001, dtype=torch.int64))
    out = torch.zeros(2, 9, dtype=torch.int32, device="axon")[:, 0]   # two elements, stride 9
    native(lambda: torch.linspace(-5, 11, 2, dtype=torch.int32, out=out))
    same(out.cpu(), torch.tensor([-5, 11], dtype=torch.int32))


def test_integer_linspace_ends_that_overflow_the_dtype_raise_cpus_error():
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.linspace(0, 300, 4, dtype=torch.int8, device="axon")


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_equal_matches_cpu(dtype):
    x = sample(dtype, (3, 4)).nan_to_num(0, 0, 0) if dtype.is_floating_point else sample(dtype, (3, 4))
    y = x.clone()
    y[1, 2] = sample(dtype, (1,), seed=9)[0] if dtype != torch.bool else ~y[1, 2]
    assert native(lambda: torch.equal(x.to("axon"), x.to("axon").clone())) is True
    assert native(lambda: torch.equal(x.to("axon"), y.to("axon"))) is torch.equal(x, y)
    assert native(lambda: torch.equal(x.to("axon"), x.to("axon")[:2])) is False
    assert native(lambda: torch.equal(x.to("axon").t().contiguous().t(), x.to("axon"))) is True


def test_equal_follows_cpu_on_nan_signed_zero_conjugates_and_broadcast_views():
    nan = float("nan")
    pairs = [(torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0])),
             (torch.tensor([1.0, nan]), torch.tensor([1.0, nan])),
             (torch.tensor([1 + 2j, 3j]), torch.tensor([1 + 2j, 3j]).conj()),
             (torch.tensor([1 - 2j, -3j]), torch.tensor([1 + 2j, 3j]).conj()),
             (torch.ones(3, 1).expand(3, 4), torch.ones(3, 4)),
             (torch.arange(1 << 18, dtype=torch.float64), torch.arange(1 << 18, dtype=torch.float64).flip(0).flip(0))]
    for a, b in pairs:
        assert native(lambda: torch.equal(a.to("axon"), b.to("axon"))) is torch.equal(a, b), (a, b)
    last = torch.arange(1 << 18, dtype=torch.float64)
    changed = last.clone()
    changed[-1] = -1
    assert native(lambda: torch.equal(last.to("axon"), changed.to("axon"))) is False
    x = torch.tensor([1.0, nan])  # the same tensor: NaN still differs from itself
    xa = x.to("axon")
    assert native(lambda: torch.equal(xa, xa)) is torch.equal(x, x) is False


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("start,end,steps,base", [(0, 1, 5, 10.0), (-2, 3, 33, 2.0), (1, -1, 4, 0.5)])
def test_logspace_matches_cpu(dtype, start, end, steps, base):
    r = native(lambda: torch.logspace(start, end, steps, base=base, dtype=dtype, device="axon")).cpu()
    e = torch.logspace(start, end, steps, base=base, dtype=dtype)
    tol = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(r, e, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128], ids=dtype_id)
@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (1 + 2j, -3 + 4j, 7), (2j, 3, 1), (1j, 5, 33), (0, 1j, 0)])
def test_complex_linspace_matches_cpu(dtype, start, end, steps):
    """Two real sequences, one per part. libaxon computes float32's in float64 and rounds once where CPU rounds each
    step: an ulp apart at most."""
    r = native(lambda: torch.linspace(start, end, steps, dtype=dtype, device="axon")).cpu()
    e = torch.linspace(start, end, steps, dtype=dtype)
    tol = {torch.complex64: 1.2e-7, torch.complex128: 0}[dtype]
    torch.testing.assert_close(r, e, rtol=tol, atol=tol)
    out = torch.zeros(steps, 3, dtype=dtype, device="axon")[:, 2]   # a strided out
    native(lambda: torch.linspace(start, end, steps, out=out))
    torch.testing.assert_close(out.cpu(), e, rtol=tol, atol=tol)


INTEGER_DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


@pytest.mark.parametrize("dtype", INTEGER_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("start,end,steps,base", [
    (0, 3, 4, 10.0), (1, 10, 10, 3.5), (2.5, 7.9, 6, 2.0), (5, -5, 11, 0.5), (0, 3, 0, 10.0),
    (3.7, 5, 1, 2.0),  # one step: CPU takes 2 ** 3.7 (12), not 2 ** 3
    (-2, 5, 7, 2.0),   # uint8 takes -2 as 254: powers far past the dtype's range, converted as CPU converts them
])
def test_integer_logspace_matches_cpu_exactly(dtype, start, end, steps, base):
    r = native(lambda: torch.logspace(start, end, steps, base=base, dtype=dtype, device="axon")).cpu()
    same(r, torch.logspace(start, end, steps, base=base, dtype=dtype))
    out = torch.zeros(steps, 3, dtype=dtype, device="axon")[:, 1]   # a strided out
    native(lambda: torch.logspace(start, end, steps, base=base, out=out))
    same(out.cpu(), torch.logspace(start, end, steps, base=base, dtype=dtype))


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_ops_already_native_through_other_kernels_stay_native(dtype):
    """cat/stack of mixed dtypes, constant and circular pads, diag/diagonal copies, tensor_split with a tensor,
    repeat_interleave with an int and index_select with int32 indices reach native kernels (cat, copy, fill,
    index_select) without any fallback."""
    x = sample(dtype, (4, 5))
    y = sample(torch.float64, (2, 5), seed=2)
    same(native(lambda: torch.cat([x.to("axon"), y.to("axon")])), torch.cat([x, y]))
    same(native(lambda: torch.stack([x.to("axon"), x.to("axon").flip(0)], 1)), torch.stack([x, x.flip(0)], 1))
    same(native(lambda: F.pad(x.to("axon")[None], (2, 1), mode="circular")), F.pad(x[None], (2, 1), mode="circular"))
    same(native(lambda: torch.diag(x.to("axon"), 1)), torch.diag(x, 1))
    same(native(lambda: torch.diag(x.to("axon")[0])), torch.diag(x[0]))
    same(native(lambda: torch.diagonal_copy(x.to("axon"), -1)), torch.diagonal_copy(x, -1))
    for r, e in zip(native(lambda: torch.tensor_split(x.to("axon"), torch.tensor([1, 3]), 1)),
                    torch.tensor_split(x, torch.tensor([1, 3]), 1)):
        same(r, e)
    same(native(lambda: torch.repeat_interleave(x.to("axon"), 2, dim=1)), torch.repeat_interleave(x, 2, dim=1))
    i = torch.tensor([3, 0, 3], dtype=torch.int32)
    same(native(lambda: torch.index_select(x.to("axon"), 0, i.to("axon"))), torch.index_select(x, 0, i))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.complex64,
                                   torch.complex128])
@pytest.mark.parametrize("shape,dim,size,step", [((4, 11, 3), 1, 4, 2), ((4, 11, 3), 1, 2, 3), ((13,), 0, 13, 1),
                                                 ((5, 6), 0, 2, 1), ((5, 6), -1, 4, 4), ((), 0, 1, 1)])
def test_unfold_backward_matches_cpu(dtype, shape, dim, size, step):
    g = torch.Generator().manual_seed(7)
    base = torch.complex128 if dtype.is_complex else torch.float64  # complex: both parts random
    x = torch.randn(shape, generator=g, dtype=base).to(dtype)
    xa = x.to("axon").requires_grad_()
    xc = x.clone().requires_grad_()
    w = torch.randn(x.unfold(dim, size, step).shape, generator=g, dtype=base).to(dtype)
    torch_axon.reset_fallback_stats()
    (xa.unfold(dim, size, step) * w.to("axon")).real.sum().backward()
    assert torch_axon.fallback_stats() == {}
    (xc.unfold(dim, size, step) * w).real.sum().backward()
    tol = {torch.bfloat16: 2e-2, torch.float16: 2e-3}.get(dtype, 1e-6)
    torch.testing.assert_close(xa.grad.cpu(), xc.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_channel_shuffle_matches_cpu(dtype):
    for shape, groups in (((2, 6, 3, 4), 3), ((1, 8, 5), 2), ((2, 4, 2, 3, 2), 4), ((3, 6, 2, 2), 1)):
        x = sample(dtype, shape)
        same(native(lambda: F.channel_shuffle(x.to("axon"), groups)), F.channel_shuffle(x, groups))
    # channels_last stays channels_last, as on CPU; an empty batch gives an empty result of the same shape
    x = sample(dtype, (2, 6, 3, 4)).contiguous(memory_format=torch.channels_last)
    got = native(lambda: torch.channel_shuffle(x.to("axon"), 2))
    want = torch.channel_shuffle(x, 2)
    assert got.stride() == want.stride()
    same(got, want)
    assert native(lambda: torch.channel_shuffle(torch.empty(0, 4, 3, device="axon", dtype=dtype), 2)).shape == (0, 4, 3)


def test_channel_shuffle_backward_matches_cpu():
    x = torch.randn(2, 6, 3, 4, dtype=torch.float64, requires_grad=True)
    xa = x.detach().to("axon").requires_grad_()
    g = torch.randn(2, 6, 3, 4, dtype=torch.float64)
    F.channel_shuffle(x, 3).backward(g)
    native(lambda: F.channel_shuffle(xa, 3).backward(g.to("axon")))
    same(xa.grad, x.grad)


@pytest.mark.parametrize("dtype", KERNEL_DTYPES, ids=dtype_id)
def test_pixel_shuffle_and_unshuffle_are_one_copy_and_match_cpu(dtype):
    for shape, r in (((2, 9, 2, 3), 3), ((8, 2, 2), 2), ((2, 1, 4, 3, 2), 1), ((2, 3, 4, 2, 1, 1), 1)):
        x = sample(dtype, shape)
        for view in (lambda t: t, lambda t: t.transpose(-1, -2)):  # contiguous and strided selves
            v = view(x)
            if v.size(-3) % (r * r) == 0:
                got, want = native(lambda: F.pixel_shuffle(view(x.to("axon")), r)), F.pixel_shuffle(v, r)
                assert got.shape == want.shape and torch.equal(got.cpu().view(torch.uint8), want.view(torch.uint8))
            if v.size(-1) % r == 0 and v.size(-2) % r == 0:
                got, want = native(lambda: F.pixel_unshuffle(view(x.to("axon")), r)), F.pixel_unshuffle(v, r)
                assert got.shape == want.shape and torch.equal(got.cpu().view(torch.uint8), want.view(torch.uint8))
    a = torch.randn(2, 8, 3, 3).to("axon")
    assert libaxon_commands(lambda: F.pixel_shuffle(a, 2)) == ["tensor_copy"]
    assert native(lambda: F.pixel_shuffle(torch.empty(1, 0, 1, 1, device="axon"), 1)).shape == (1, 0, 1, 1)
    x = torch.randn(2, 8, 3, 3).contiguous(memory_format=torch.channels_last)  # CPU's format kept
    got, want = F.pixel_shuffle(x.to("axon"), 2), F.pixel_shuffle(x, 2)
    assert got.stride() == want.stride() and torch.equal(got.cpu(), want)


def test_pixel_shuffle_backward_and_errors_match_cpu():
    x = torch.randn(2, 8, 3, 3, dtype=torch.float64, requires_grad=True)
    xa = x.detach().to("axon").requires_grad_()
    g = torch.randn(2, 2, 6, 6, dtype=torch.float64)
    F.pixel_shuffle(x, 2).backward(g)
    native(lambda: F.pixel_shuffle(xa, 2).backward(g.to("axon")))
    same(xa.grad, x.grad)
    for fn in (lambda t: F.pixel_shuffle(t, 3), lambda t: F.pixel_shuffle(t, 0), lambda t: F.pixel_unshuffle(t, 2),
               lambda t: F.pixel_shuffle(t[0, 0], 1)):
        t = torch.ones(1, 4, 3, 3)
        with pytest.raises(RuntimeError) as cpu_err:
            fn(t)
        with pytest.raises(RuntimeError) as axon_err:
            fn(t.to("axon"))
        assert str(cpu_err.value).split("\n")[0] == str(axon_err.value).split("\n")[0]


@pytest.mark.parametrize("shape,groups,message", [
    ((4, 6), 2, "expects input with > 2 dims, but got input with sizes \\[4, 6\\]"),
    ((1, 6, 2), 0, "must be positive"),
    ((1, 6, 2), 4, "divisible by groups. Got 6 channels and 4 groups"),
])
def test_channel_shuffle_bad_arguments_fail_like_cpu(shape, groups, message):
    for device in ("cpu", "axon"):
        with pytest.raises(RuntimeError, match=message):
            torch.channel_shuffle(torch.ones(shape, device=device), groups)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8, torch.complex64, torch.bool, torch.float8_e4m3fn],
                         ids=dtype_id)
def test_narrow_copy_matches_cpu_with_cpus_errors(dtype):
    x = torch.arange(120, dtype=torch.float32).view(4, 6, 5)
    x = x > 60 if dtype == torch.bool else x.to(dtype)
    bits = (lambda t: t.view(torch.uint8)) if dtype == torch.float8_e4m3fn else (lambda t: t)
    for view in (lambda t: t, lambda t: t.transpose(0, 2)):
        for args in ((1, 1, 3), (0, -2, 2), (2, 1, 3), (-1, 4, 0)):
            got = native(lambda: view(x.to("axon")).narrow_copy(*args))
            want = view(x).narrow_copy(*args)
            assert got.is_contiguous() and got.shape == want.shape and torch.equal(bits(got.cpu()), bits(want))
    for args, message in (((1, 5, 3), r"start \(5\) \+ length \(3\) exceeds dimension size \(6\)"),
                          ((3, 0, 1), "Expected dim < "), ((0, 0, -1), r"length \(-1\) exceeds")):
        with pytest.raises(RuntimeError, match=message):
            x.to("axon").narrow_copy(*args)

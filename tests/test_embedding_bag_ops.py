"""Native embedding bags (libaxon's embedding_bag kernels) through F.embedding_bag and nn.EmbeddingBag: sum (with
and without per-sample weights), mean and max, padding_idx, include_last_offset, 2-d inputs, empty bags,
scale_grad_by_freq, int32 and int64 indices, in four dtypes: outputs, the weight's gradient and the per-sample
weights' gradient against PyTorch CPU with the fallback counter empty; bad indices and offsets as errors."""

import pytest
import torch
import torch.nn.functional as F

import torch_axon

# Bag sums of up to 6 rows in float32 (float64 for float64); the half types sum in float32 and round once, where
# CPU's half path may round differently.
TOL = {torch.float32: (1e-5, 1e-5), torch.float64: (1e-12, 1e-12), torch.bfloat16: (1e-2, 2e-2),
       torch.float16: (2e-3, 2e-3)}
DTYPES = list(TOL)
V, D = 20, 7
# 23 indices in 6 bags, one of them empty; index 4 is frequent (and the padding row where one is set).
INDICES = torch.tensor([4, 1, 9, 4, 4, 13, 0, 19, 4, 2, 7, 7, 4, 11, 5, 4, 18, 3, 4, 6, 4, 8, 12])
OFFSETS = torch.tensor([0, 3, 3, 9, 14, 18])


def run(device, dtype, index_dtype, mode, psw, padding_idx, include_last_offset, scale_grad_by_freq, two_d=False):
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(V, D, generator=gen).to(dtype).to(device).requires_grad_(True)
    if two_d:
        indices, offsets = INDICES[:20].reshape(4, 5).to(index_dtype).to(device), None
    else:
        indices = INDICES.to(index_dtype).to(device)
        offsets = OFFSETS
        if include_last_offset:
            offsets = torch.cat([offsets, torch.tensor([INDICES.numel()])])
        offsets = offsets.to(index_dtype).to(device)
    weights = None
    if psw:
        weights = torch.rand(indices.shape, generator=gen).to(dtype).to(device).requires_grad_(True)
    torch_axon.reset_fallback_stats()
    out = F.embedding_bag(indices, weight, offsets, mode=mode, per_sample_weights=weights, padding_idx=padding_idx,
                          include_last_offset=include_last_offset, scale_grad_by_freq=scale_grad_by_freq)
    grad = torch.randn(out.shape, generator=torch.Generator().manual_seed(1)).to(dtype).to(device)
    out.backward(grad)
    if device == "axon":
        torch.axon.synchronize()
    return (out.detach().cpu(), weight.grad.cpu(), None if weights is None else weights.grad.cpu(),
            torch_axon.fallback_stats())


CASES = [  # (mode, per-sample weights, padding_idx, include_last_offset, scale_grad_by_freq, 2-d input)
    ("sum", False, None, False, False, False), ("sum", True, None, False, False, False),
    ("sum", True, 4, True, False, False), ("sum", False, 4, False, True, False),
    ("mean", False, None, False, False, False), ("mean", False, 4, True, True, False),
    ("max", False, None, False, False, False), ("max", False, 4, True, False, False),
    ("sum", True, None, False, False, True), ("mean", False, -16, False, False, True),
    ("max", False, None, False, False, True),
]


@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c)))
def test_embedding_bag_matches_cpu_forward_and_backward(case, dtype, index_dtype):
    mode, psw, padding_idx, ilo, freq, two_d = case
    # PyTorch CPU's scale_grad_by_freq divides by the count of another index than the one it scales (EmbeddingBag.cpp
    # reads counts[indices_data[i]] with i the run of equal sorted indices, not the position): axon divides by each
    # index's own count among all indices, as documented and as CUDA does; the reference is CPU's unscaled gradient
    # divided by those counts.
    cpu = run("cpu", dtype, index_dtype, mode, psw, padding_idx, ilo, False, two_d)
    if freq:
        counts = torch.bincount(INDICES[:20] if two_d else INDICES, minlength=V).clamp(min=1)
        cpu = (cpu[0], (cpu[1].double() / counts[:, None]).to(dtype)) + cpu[2:]
    axon = run("axon", dtype, index_dtype, mode, psw, padding_idx, ilo, freq, two_d)
    assert axon[3] == {}, axon[3]
    rtol, atol = TOL[dtype]
    for got, want, what in zip(axon[:3], cpu[:3], ("output", "weight grad", "per-sample weights grad")):
        if want is not None:
            torch.testing.assert_close(got, want, rtol=rtol, atol=atol, msg=what)


@pytest.mark.parametrize("width", [16, 32, 64, 128, 300])
@pytest.mark.parametrize("mode,psw,padding_idx", [("sum", False, None), ("sum", True, 4), ("mean", False, 4)])
def test_float32_bags_of_every_register_width_match_cpu(width, mode, psw, padding_idx):
    # float32 sum and mean bags run a loop inlined per width (16, 32, 64, 128 columns; other widths and the rest of a
    # 256-column chunk take the general one): 200 bags of 0 to 40 rows from a 500-row table.
    gen = torch.Generator().manual_seed(width)
    weight = torch.randn(500, width, generator=gen)
    lengths = torch.randint(0, 41, (200,), generator=gen)
    indices = torch.randint(0, 500, (int(lengths.sum()),), generator=gen)
    indices[::7] = 4
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    weights = torch.rand(indices.shape, generator=gen) if psw else None
    outs = []
    for device in ("cpu", "axon"):
        torch_axon.reset_fallback_stats()
        out = F.embedding_bag(indices.to(device), weight.to(device), offsets.to(device), mode=mode,
                              per_sample_weights=None if weights is None else weights.to(device),
                              padding_idx=padding_idx)
        outs.append((out.cpu(), torch_axon.fallback_stats()))
    assert outs[1][1] == {}, outs[1][1]
    torch.testing.assert_close(outs[1][0], outs[0][0], rtol=1e-5, atol=1e-5)


def test_embedding_bag_module_trains_like_cpu():
    results = []
    for device in ("cpu", "axon"):
        torch.manual_seed(3)
        bag = torch.nn.EmbeddingBag(50, 16, mode="mean").to(device)
        opt = torch.optim.SGD(bag.parameters(), lr=0.5)
        idx = torch.randint(0, 50, (40,), generator=torch.Generator().manual_seed(4)).to(device)
        off = torch.tensor([0, 7, 7, 20, 33]).to(device)
        torch_axon.reset_fallback_stats()
        for _ in range(3):
            opt.zero_grad()
            bag(idx, off).square().sum().backward()
            opt.step()
        results.append((bag.weight.detach().cpu(), torch_axon.fallback_stats()))
    assert results[1][1] == {}, results[1][1]
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)


def test_bad_indices_and_offsets_raise_naming_the_value():
    weight = torch.randn(10, 3, device="axon")
    with pytest.raises(RuntimeError, match="index 12 is out of bounds for dimension 0 with size 10"):
        F.embedding_bag(torch.tensor([1, 12, 3], device="axon"), weight, torch.tensor([0, 2], device="axon")).cpu()
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(torch.tensor([1, 2, 3], device="axon"), weight, torch.tensor([1, 2], device="axon")).cpu()
    with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater than input's length 3"):
        F.embedding_bag(torch.tensor([1, 2, 3], device="axon"), weight, torch.tensor([0, 5], device="axon")).cpu()
    with pytest.raises((RuntimeError, NotImplementedError), match="per_sample_weights"):
        F.embedding_bag(torch.tensor([1, 2, 3], device="axon"), weight, torch.tensor([0, 2], device="axon"),
                        mode="max", per_sample_weights=torch.ones(3, device="axon"))
    # the device keeps working after the failed commands
    out = F.embedding_bag(torch.tensor([1, 2, 3], device="axon"), weight, torch.tensor([0, 2], device="axon"))
    want = F.embedding_bag(torch.tensor([1, 2, 3]), weight.cpu(), torch.tensor([0, 2]))
    torch.testing.assert_close(out.cpu(), want)

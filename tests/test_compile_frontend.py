"""torch.compile(model, backend="axon"): the front end (torch_axon/compile). Compiled results against eager axon
and PyTorch CPU with per-dtype tolerances, training, partition fallback for ops AXIR lacks, dynamic shapes with one
compile, graph breaks, AXON_DUMP_DIR, explain(), and the program glue's errors.

Results are right whether a partition runs as a libaxon program or eagerly; the tests that check that partitions
really ran as programs need libaxon's graph compiler and say so when it is missing."""

import glob
import os
import re

import pytest
import torch
import torch.nn.functional as F

import torch_axon
import torch_axon.compile as tc
from torch_axon import _C
from compile_cases import op_families

DEV = "axon"
# (rtol, atol) against CPU: GEMMs sum in another order than CPU's BLAS; bfloat16 rounds each op's result.
TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-10, 1e-10), torch.bfloat16: (3e-2, 3e-2)}
GRAD_TOL = {torch.float32: (1e-4, 1e-4), torch.float64: (1e-9, 1e-10), torch.bfloat16: (5e-2, 5e-2)}



@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each test compiles from scratch (Dynamo's per-code-object recompile limit would otherwise carry over)."""
    torch._dynamo.reset()
    tc.reset_stats()
    yield
    torch._dynamo.reset()


def sample(shape, dtype=torch.float32, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def close(result, expected, tol=TOL):
    result = result.detach().cpu()
    expected = expected.detach().cpu()
    assert result.dtype == expected.dtype and result.shape == expected.shape, (result.dtype, result.shape)
    rtol, atol = tol[expected.dtype]
    torch.testing.assert_close(result, expected, rtol=rtol, atol=atol, equal_nan=True)


def check_against_eager_and_cpu(model_cpu, inputs_cpu, dtype, **compile_kwargs):
    model_cpu = model_cpu.to(dtype)
    inputs_cpu = [x.to(dtype) if x.is_floating_point() else x for x in inputs_cpu]
    model = _copy_to(model_cpu, DEV)
    inputs = [x.to(DEV) for x in inputs_cpu]
    compiled = torch.compile(model, backend="axon", **compile_kwargs)
    with torch.no_grad():
        got = compiled(*inputs)
        eager = model(*inputs)
        ref = model_cpu(*inputs_cpu)
    close(got, ref)
    close(got, eager.cpu())
    return got


def _copy_to(model, device):
    import copy

    return copy.deepcopy(model).to(device)


class MLP(torch.nn.Module):
    def __init__(self, d_in=32, d_hidden=64, d_out=8):
        super().__init__()
        self.fc1 = torch.nn.Linear(d_in, d_hidden)
        self.fc2 = torch.nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Block(torch.nn.Module):
    """A pre-norm transformer block: attention (sdpa, or matmul + softmax) and a GELU MLP."""

    def __init__(self, d=32, heads=4, use_sdpa=True):
        super().__init__()
        self.heads, self.use_sdpa = heads, use_sdpa
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.use_sdpa:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            s = (q @ k.transpose(-1, -2)) * (d // self.heads) ** -0.5
            a = torch.softmax(s, dim=-1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))


def _compiled_texts(dump_dir) -> str:
    return "".join(open(f).read() for f in glob.glob(str(dump_dir / "*" / "fused_*.passes.axir")))


# ---- registration ----

def test_backend_is_registered_under_axon():
    assert "axon" in torch._dynamo.list_backends()
    assert torch._dynamo.lookup_backend("axon") is tc.backend


# ---- forward results ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_mlp_matches_eager_and_cpu(dtype):
    check_against_eager_and_cpu(MLP(), [sample((5, 32))], dtype)
    assert tc.stats()["graphs"] >= 1


@pytest.mark.parametrize("use_sdpa", [True, False], ids=["sdpa", "matmul_softmax"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_transformer_block_matches_eager_and_cpu(use_sdpa, dtype):
    torch.manual_seed(0)
    check_against_eager_and_cpu(Block(use_sdpa=use_sdpa), [sample((2, 7, 32))], dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_layer_norm_and_gelu_match_cpu(dtype):
    model = torch.nn.Sequential(torch.nn.LayerNorm(24), torch.nn.GELU(), torch.nn.Linear(24, 24), torch.nn.Tanh())
    check_against_eager_and_cpu(model, [sample((3, 4, 24), scale=2.0)], dtype)


def test_type_promotion_and_scalars_match_cpu():
    def f(x, i):
        return (x * 2 + i) / 3, (x > 0.5) & (i < 2), torch.where(x > 0, x, 0.25).sum(dim=1), (i * 3).float().mean()

    x, i = sample((4, 6)), torch.arange(24).reshape(4, 6) % 5
    got = torch.compile(f, backend="axon")(x.to(DEV), i.to(DEV))
    for g, r in zip(got, f(x, i)):
        assert g.dtype == r.dtype
        close(g, r) if r.is_floating_point() else torch.testing.assert_close(g.cpu(), r)


# ---- training ----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_training_step_grads_match_eager(dtype):
    torch.manual_seed(0)
    ref = MLP().to(dtype)
    model = _copy_to(ref, DEV)
    compiled = torch.compile(model, backend="axon")
    x = sample((6, 32), dtype)
    target = sample((6, 8), dtype, seed=1)
    for _ in range(2):
        for p in list(model.parameters()) + list(ref.parameters()):
            p.grad = None
        F.mse_loss(compiled(x.to(DEV)), target.to(DEV)).backward()
        F.mse_loss(ref(x), target).backward()
        for p, rp in zip(model.parameters(), ref.parameters()):
            close(p.grad, rp.grad, GRAD_TOL)
    kinds = tc.stats()["graphs"]
    assert kinds >= 2  # a forward and a backward graph


@pytest.mark.parametrize("opt", ["SGD", "Adam", "AdamW"])
def test_whole_training_step_with_optimizer_compiles_and_matches_cpu(opt, tmp_path, monkeypatch):
    # forward, loss, backward and the optimizer step in one compiled function: the optimizer's foreach list ops
    # lower to AXIR (one op per parameter) and fuse into kernels per parameter
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    ref = MLP()
    model = _copy_to(ref, DEV)
    kw = {"lr": 1e-2, "momentum": 0.9} if opt == "SGD" else {"lr": 1e-2, "weight_decay": 0.1}
    opt_ref, opt_dev = getattr(torch.optim, opt)(ref.parameters(), **kw), getattr(torch.optim, opt)(model.parameters(), **kw)

    @torch.compile(backend="axon")
    def step(x, y):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt_dev.step()
        opt_dev.zero_grad()
        return loss

    for i in range(3):
        x, y = sample((6, 32), seed=10 + i), sample((6, 8), seed=20 + i)
        loss = F.mse_loss(ref(x), y)
        loss.backward()
        opt_ref.step()
        opt_ref.zero_grad()
        close(step(x.to(DEV), y.to(DEV)), loss.detach())
    for p, rp in zip(model.parameters(), ref.parameters()):
        close(p.detach(), rp.detach(), GRAD_TOL)
    lowered = glob.glob(str(tmp_path / "*" / "fused_*.axir"))
    optimizer = [f for f in lowered if not f.endswith(".passes.axir") and "_foreach_" in open(f).read()]
    assert optimizer, "no optimizer list op was compiled"
    kernels = sum(open(f[:-len(".axir")] + ".passes.axir").read().count("\nkernel @") for f in optimizer)
    assert kernels >= len(list(model.parameters())), f"{kernels} fused kernels for the optimizer"
    # the updated parameters and optimizer states are written back by one multi-tensor copy, not one copy_ each
    graphs = [open(f).read() for f in glob.glob(str(tmp_path / "*" / "partitioned.py"))]
    step_graph = [g for g in graphs if "_foreach_copy_.default(" in g]
    assert step_graph, graphs   # SGD's first step, which creates the momentum buffers, is a graph of its own
    states = 2 if opt in ("Adam", "AdamW") else 1
    steps = len(list(model.parameters())) if states == 2 else 0   # Adam's step counts: CPU tensors, copied alone
    assert all(g.count("aten.copy_.default(") == steps for g in step_graph), step_graph
    copied = max(g.split("_foreach_copy_.default(")[1].split("]")[0].count(",") + 1 for g in step_graph)
    assert copied == (1 + states) * len(list(model.parameters())), step_graph


@pytest.mark.parametrize("train", [False, True], ids=["forward", "training"])
def test_dropout_in_compiled_graphs_draws_what_eager_draws(train):
    # dropout inside a compiled graph runs on the device's Philox generator: the same seed gives eager's mask, in the
    # forward and in the gradient, and a different seed another one
    def f(x):
        return F.dropout(torch.tanh(x) * 2, p=0.3, training=True) + 1

    compiled = torch.compile(f, backend="axon")
    results = []
    for fn, seed in ((f, 5), (compiled, 5), (compiled, 6)):
        x = sample((64, 48)).to(DEV).requires_grad_(train)
        torch.manual_seed(seed)
        out = fn(x)
        grad = torch.autograd.grad(out.sum(), x)[0].cpu() if train else None
        results.append((out.detach().cpu(), grad))
    (eager, eager_grad), (comp, comp_grad), (other, _) = results
    assert torch.equal(comp, eager)
    assert 0.2 < (eager == 1).float().mean().item() < 0.4  # about p of the elements dropped
    assert not torch.equal(other, eager)
    if train:
        assert torch.equal(comp_grad, eager_grad)


class TinyLM(torch.nn.Module):
    """Embedding, layer norm, a softmax attention written out, dropout and a cross-entropy: every op a transformer's
    training step needs besides the GEMMs."""

    def __init__(self, p: float):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 16, padding_idx=0)
        self.norm = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 50)
        self.p = p

    def forward(self, ids, target):
        h = self.norm(F.dropout(self.emb(ids), self.p, self.training))
        att = torch.softmax(h @ h.transpose(1, 2), dim=-1)
        h = F.dropout(att @ h, self.p, self.training) + h
        return F.cross_entropy(self.fc(h).flatten(0, 1), target.flatten(), ignore_index=3)


def test_training_ops_run_inside_programs(tmp_path, monkeypatch):
    # the backward of embedding, layer norm, softmax and the loss, and the loss and dropout themselves, are AXIR
    # library ops: nothing but views runs eagerly; gradients match CPU (no dropout) and, with dropout, axon eager's
    # (the same seed gives the same masks: the loss is the same bits)
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    ids = torch.randint(0, 50, (3, 7), generator=torch.Generator().manual_seed(1))
    target = torch.randint(0, 50, (3, 7), generator=torch.Generator().manual_seed(2))
    torch.manual_seed(0)
    ref = TinyLM(0.0).train()
    model = _copy_to(ref, DEV)

    def step(ids, target):
        loss = model(ids, target)
        loss.backward()
        return loss

    report = tc.explain(step, ids.to(DEV), target.to(DEV))
    ref(ids, target).backward()
    for p, rp in zip(model.parameters(), ref.parameters()):
        close(p.grad, rp.grad, GRAD_TOL)
    assert not [op for _, op, why in report.left_out if not why.startswith("view")], report.left_out
    text = _compiled_texts(tmp_path)
    for op in ("embedding_backward", "layer_norm_backward", "softmax_backward", "nll_loss"):
        assert f"= {op}(" in text, op

    torch._dynamo.reset()
    model = TinyLM(0.25).to(DEV).train()
    twin = _copy_to(model, DEV)
    torch.manual_seed(7)
    want = model(ids.to(DEV), target.to(DEV))
    want.backward()
    torch.manual_seed(7)
    got = torch.compile(twin, backend="axon")(ids.to(DEV), target.to(DEV))
    got.backward()
    assert torch.equal(got.detach().cpu(), want.detach().cpu())   # the same masks
    for p, tp in zip(model.parameters(), twin.parameters()):
        close(tp.grad, p.grad.cpu(), GRAD_TOL)   # (fused programs round in another order)
    assert "= dropout(" in _compiled_texts(tmp_path)   # (F.dropout with p = 0 is the identity: no dropout above)


def test_dropout_with_dynamic_shapes_draws_what_eager_draws(tmp_path, monkeypatch):
    # under dynamic=True the draws' Philox offsets come from the call's sizes: three batch sizes, one compile, each
    # call eager mode's masks (the loss is the same bits)
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    model = TinyLM(0.3).to(DEV).train()
    twin = _copy_to(model, DEV)
    compiled = torch.compile(twin, backend="axon", dynamic=True)
    for b in (2, 3, 5):
        ids = torch.randint(0, 50, (b, 6), generator=torch.Generator().manual_seed(b)).to(DEV)
        torch.manual_seed(b)
        want = model(ids, ids)
        torch.manual_seed(b)
        got = compiled(ids, ids)
        assert torch.equal(got.detach().cpu(), want.detach().cpu()), b
    assert tc.stats()["eager_partitions"] == 0
    text = _compiled_texts(tmp_path)
    assert "= dropout(" in text and "[s" in text, text   # in a program, over symbolic sizes


@pytest.mark.parametrize("reduction", ["sum", "none"])
def test_layer_norm_without_affine_and_loss_reductions_train_like_cpu(reduction, tmp_path, monkeypatch):
    # layer_norm_backward without a weight (no weight or bias gradient asked for) and nll_loss with reduction sum
    # and none (a per-token loss, weighted by the caller) inside the programs
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(12, 16), torch.nn.LayerNorm(16, elementwise_affine=False),
                              torch.nn.Linear(16, 9))
    model = _copy_to(ref, DEV)
    x, t = sample((10, 12), seed=4), torch.randint(0, 9, (10,), generator=torch.Generator().manual_seed(5))
    scale = torch.linspace(0.5, 1.5, 10)

    def loss_fn(m, x, t, scale):
        loss = F.cross_entropy(m(x), t, reduction=reduction)
        return (loss * scale).sum() if reduction == "none" else loss

    got = torch.compile(loss_fn, backend="axon")(model, x.to(DEV), t.to(DEV), scale.to(DEV))
    got.backward()
    want = loss_fn(ref, x, t, scale)
    want.backward()
    close(got, want.detach())
    for p, rp in zip(model.parameters(), ref.parameters()):
        close(p.grad, rp.grad, GRAD_TOL)
    text = _compiled_texts(tmp_path)
    assert f'reduction = "{reduction}"' in text and "= layer_norm_backward(" in text, text


def test_dropout_stays_eager_where_a_partition_would_reorder_the_draws(capsys):
    # a dropout on each side of an eager random op (rand_like has no lowering), the second one independent of it: one
    # partition would draw both after rand_like. They stay eager, and the results are eager mode's
    def f(x, y):
        a = F.dropout(x, 0.5) + 1
        r = torch.rand_like(y)
        return a, F.dropout(y, 0.5) * r

    x, y = sample((8, 8)).to(DEV), sample((8, 8), seed=1).to(DEV)
    torch.manual_seed(3)
    want = f(x, y)
    torch.manual_seed(3)
    got = torch.compile(f, backend="axon")(x, y)
    for g, w in zip(got, want):
        assert torch.equal(g.cpu(), w.cpu())
    report = tc.explain(f, x, y)
    kept = [why for _, op, why in report.left_out if "native_dropout" in op]
    assert kept and all("out of graph order" in why for why in kept), report.left_out


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_attention_dropout_trains_compiled_with_eager_modes_masks(dynamic, tmp_path, monkeypatch):
    # Hugging Face GPT-2 with its default dropouts (attention weights, residuals, embeddings): the fused attention
    # with dropout runs inside the forward program, taking its place in the program's Philox draws, and its backward
    # inside the backward program, drawing the same decisions again from the seed and offset the forward saved. The
    # same seed gives eager mode's loss (the same bits) and its gradients; under dynamic=True the draws' sizes come
    # from the call's sizes (two lengths, one compile)
    from transformers import GPT2Config, GPT2LMHeadModel

    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=300, n_positions=64,
                                       attn_pdrop=0.3)).train().to(DEV)
    twin = _copy_to(model, DEV)
    compiled = torch.compile(twin, backend="axon", dynamic=dynamic)
    for b, length in ((2, 20), (3, 13))[:2 if dynamic else 1]:
        ids = torch.randint(0, 300, (b, length), generator=torch.Generator().manual_seed(b)).to(DEV)
        torch.manual_seed(b)
        want = model(ids, labels=ids).loss
        want.backward()
        torch.manual_seed(b)
        got = compiled(ids, labels=ids).loss
        got.backward()
        assert torch.equal(got.detach().cpu(), want.detach().cpu()), (b, length)   # the same masks
        for p, tp in zip(model.parameters(), twin.parameters()):
            close(tp.grad, p.grad.cpu(), GRAD_TOL)
        model.zero_grad()
        twin.zero_grad()
    s = tc.stats()
    assert s["eager_partitions"] == 0 and s["eager_graphs"] == 0, s
    text = _compiled_texts(tmp_path)
    assert text.count("= philox_state()") == 2 and text.count("dropout_p = 0.3, is_causal = true") >= 4, text
    eager = "".join(open(f).read() for f in glob.glob(str(tmp_path / "*" / "partitioned.py")))
    assert "_scaled_dot_product" not in eager and "native_dropout" not in eager


def test_attention_dropout_kept_eager_hands_its_seed_to_the_compiled_backward(tmp_path, monkeypatch):
    # an attention with dropout kept eager (a partition would draw it after rand_like) returns its Philox seed and
    # offset as host tensors; the compiled backward takes them (copied to the device when it runs) and draws the
    # forward's decisions again: every output and gradient is eager mode's, bit for bit
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))

    def f(q, k, v, y):
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5) + 1
        r = torch.rand_like(y)
        return a, F.dropout(y, 0.5) * r

    inputs = [sample((2, 2, 8, 4), seed=i) for i in range(3)] + [sample((8, 8), seed=3)]
    results = []
    for fn in (f, torch.compile(f, backend="axon")):
        xs = [x.to(DEV).requires_grad_() for x in inputs]
        torch.manual_seed(3)
        a, b = fn(*xs)
        (a.sum() + (b * 2).sum()).backward()
        results.append([a.detach().cpu(), b.detach().cpu()] + [x.grad.cpu() for x in xs])
    for got, want in zip(results[1], results[0]):
        assert torch.equal(got, want)
    assert "dropout_p = 0.5" in _compiled_texts(tmp_path)   # the backward ran compiled
    report = tc.explain(f, *[x.to(DEV).requires_grad_() for x in inputs])
    kept = [why for _, op, why in report.left_out if "_scaled_dot_product" in op]
    assert kept and all("out of graph order" in why for why in kept), report.left_out


@pytest.mark.parametrize("use_sdpa", [False, True], ids=["matmul_attention", "sdpa"])
def test_training_block_grads_match_cpu(use_sdpa, tmp_path, monkeypatch):
    # with sdpa, the attention runs compiled in training too: sdpa_lse in the forward program (the log-sum-exp and
    # the zero Philox state are saved for the backward) and sdpa_backward in the backward program
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    ref = Block(use_sdpa=use_sdpa)
    model = _copy_to(ref, DEV)
    x = sample((2, 5, 32))
    torch.compile(model, backend="axon")(x.to(DEV)).square().mean().backward()
    ref(x).square().mean().backward()
    for p, rp in zip(model.parameters(), ref.parameters()):
        close(p.grad, rp.grad, GRAD_TOL)
    if use_sdpa:
        text = _compiled_texts(tmp_path)
        assert "sdpa_lse(" in text and "sdpa_backward(" in text, text
        eager = "".join(open(f).read() for f in glob.glob(str(tmp_path / "*" / "partitioned.py")))
        assert "torch.ops.aten._scaled_dot_product" not in eager


# ---- partition fallback ----

class WithCumsum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        return torch.sort(torch.cumsum(h, dim=1), dim=1).values * 2 + 1


def test_unsupported_ops_run_eagerly_and_results_match():
    torch.manual_seed(0)
    check_against_eager_and_cpu(WithCumsum(), [sample((3, 16))], torch.float32)
    s = tc.stats()
    assert s["eager_graphs"] == 0, s



def test_complex_logaddexp_compiles():
    # core ATen's decomposition of complex logaddexp holds a complex NaN constant that FX prints as `nan+nanj`: the
    # backend keeps the op whole (an eager op between programs), and the compile goes through.
    def f(x):
        z = x.to(torch.complex64) / 4
        return x * torch.logaddexp(z, z.flip(-1)).real + torch.logaddexp(x, 2 * x)

    x = sample((3, 8))
    got = torch.compile(f, backend="axon")(x.to("axon"))
    torch.testing.assert_close(got.cpu(), f(x), rtol=1e-5, atol=1e-5)
    assert tc.stats()["graphs"] >= 1

def test_explain_names_the_unsupported_op(capsys):
    torch.manual_seed(0)
    model = WithCumsum().to(DEV)
    with torch.no_grad():
        report = tc.explain(model, sample((3, 16)).to(DEV))
    assert "cumsum" in capsys.readouterr().out
    ops = report.unsupported_ops
    assert any("cumsum" in op for op in ops), ops
    assert any("sort" in op for op in ops), ops
    reasons = {op: why for _, op, why in report.left_out}
    assert "no AXIR lowering" in reasons["aten.cumsum.default"]
    assert sum(len(g.partitions) for g in report.graphs) >= 1


def test_tensor_constants_made_in_forward_join_the_partition():
    # torch.tensor(...) inside a compiled function reaches the backend as lift_fresh_copy of a constant: it is
    # lowered (a copy in the program), not left eager between partitions
    def fn(x):
        return x * torch.tensor([1.0, -2.0, 0.5], device=x.device) + 1

    x = sample((4, 3), seed=2)
    with torch.no_grad():
        report = tc.explain(fn, x.to(DEV))
        close(torch.compile(fn, backend="axon")(x.to(DEV)), fn(x))
    assert not any("lift_fresh_copy" in op for _, op, _ in report.left_out), report.left_out
    assert sum(len(g.partitions) for g in report.graphs) == 1


@pytest.mark.parametrize("case", ["slice_scatter", "pad_labels", "pad_2d"])
def test_slice_scatter_and_constant_pad_lower_to_slices_and_cat(case):
    # a slice's backward (rotary embeddings' rotate_half) and a loss's padded labels stay in the partition
    import torch.nn.functional as F

    fns = {
        "slice_scatter": (lambda x, y: torch.slice_scatter(torch.zeros_like(x), y, 1, 2, 5) * 2
                          + torch.slice_scatter(x, y, -2, -6, -3),
                          (sample((3, 8, 4), seed=1), sample((3, 3, 4), seed=2))),
        "pad_labels": (lambda t: F.pad(t, (0, 1), value=-100) + 1, (torch.randint(0, 10, (2, 7)),)),
        "pad_2d": (lambda x: F.pad(x, (1, 2, 0, 3), value=0.5) * 3, (sample((2, 3, 4), seed=3),)),
    }
    fn, args = fns[case]
    dev = [a.to(DEV) for a in args]
    with torch.no_grad():
        report = tc.explain(fn, *dev)
        got = torch.compile(fn, backend="axon")(*dev)
    want = fn(*args)
    if want.dtype.is_floating_point:
        close(got, want)
    else:
        assert torch.equal(got.cpu(), want)
    left = [op for _, op, _ in report.left_out]
    assert not any("slice_scatter" in op or "constant_pad" in op for op in left), left
    assert sum(len(g.partitions) for g in report.graphs) == 1


def test_silu_backward_empty_tensor_stays_in_the_partition(tmp_path, monkeypatch):
    # SiLU's backward (ATen's formula once made empty_permuted only to take its shape in full_like): all of it in the
    # program, nothing eager
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    w = torch.randn(8, 8, requires_grad=True)
    wd = w.detach().to(DEV).requires_grad_()

    def fn(x, w):
        return torch.nn.functional.silu(x @ w).sum()

    x = sample((4, 8), seed=5)
    fn(x, w).backward()
    torch.compile(fn, backend="axon")(x.to(DEV), wd).backward()
    close(wd.grad, w.grad, GRAD_TOL)
    traced = "".join(open(f).read() for f in glob.glob(str(tmp_path / "*backward" / "graph.py")))
    partitioned = "".join(open(f).read() for f in glob.glob(str(tmp_path / "*backward" / "partitioned.py")))
    assert "sigmoid" in traced, traced   # what aot_autograd hands over ...
    assert "fused_0" in partitioned and "torch.ops.aten." not in partitioned, partitioned   # ... is one program


@pytest.mark.parametrize("where", ["rows", "columns"])
def test_indexing_with_one_index_tensor_is_index_select_with_negative_indices_wrapped(where):
    # x[idx] / x[:, idx] (a Mixture-of-Experts' token gather): index_select in the program, negative indices wrapped
    # as PyTorch's indexing does; an index out of range is still an error naming it
    fn = (lambda x, i: x[i] * 2) if where == "rows" else (lambda x, i: x[:, i] + 1)
    x = sample((6, 5), seed=4)
    i = torch.tensor([0, -1, 3, -5, 2]) if where == "rows" else torch.tensor([4, -2, 0])
    with torch.no_grad():
        report = tc.explain(fn, x.to(DEV), i.to(DEV))
        assert torch.equal(torch.compile(fn, backend="axon")(x.to(DEV), i.to(DEV)).cpu(), fn(x, i))
    assert not any("index.Tensor" in op for _, op, _ in report.left_out), report.left_out
    with pytest.raises(RuntimeError, match="index 7 is out of bounds"):
        torch.compile(fn, backend="axon")(x.to(DEV), torch.tensor([0, 7], device=DEV))
        torch.axon.synchronize()


ANY_ALL_COPY = {
    "any_isinf": lambda x, y: torch.isinf(x).any(),
    "any_dim": lambda x, y: (x > 0).any(-1),
    "all_keepdim": lambda x, y: (x > -5).all(dim=1, keepdim=True),
    "any_float": lambda x, y: torch.any(x, dim=0),
    "all": lambda x, y: torch.all(x),
    "isinf_int": lambda x, y: torch.isinf(x.to(torch.int64)),
    "copy_broadcast": lambda x, y: torch.ops.aten.copy(x, y) * 2,
    "copy_cast": lambda x, y: torch.ops.aten.copy(x.to(torch.float64), y) + 1,
}


@pytest.mark.parametrize("case", list(ANY_ALL_COPY))
def test_any_all_isinf_and_functional_copy_lower(case):
    # T5's overflow checks (isinf(...).any()) and a functional copy stay in the program
    fn = ANY_ALL_COPY[case]
    x, y = sample((4, 6), seed=6), sample((6,), seed=7)
    x[1, 2] = float("inf")
    x[3, 0] = 0.0
    with torch.no_grad():
        report = tc.explain(fn, x.to(DEV), y.to(DEV))
        got = torch.compile(fn, backend="axon")(x.to(DEV), y.to(DEV))
    want = fn(x, y)
    assert got.dtype == want.dtype and torch.equal(got.cpu(), want), (got, want)
    assert not report.left_out or all("getitem" in op for _, op, _ in report.left_out), report.left_out


def test_cpu_scalar_tensors_are_read_by_value_at_each_call():
    # an optimizer's step count lives on the host as a 0-d CPU tensor: a program reads its value at each call
    # (not the value it had when compiled), and the arithmetic on it fuses with the device tensors'
    def fn(x, step):
        bias = 1 - 0.9 ** step
        return x * bias + x / bias

    x = sample((8, 16))
    compiled = torch.compile(fn, backend="axon")
    for value in (1.0, 2.0, 7.0):
        step = torch.tensor(value)
        close(compiled(x.to(DEV), step), fn(x, step))
    s = tc.stats()
    assert s["program_calls"] == 3 and s["eager_partitions"] == 0, s
    # the values travel in a queued copy: a call does not wait for the stream's earlier work
    big = torch.randn(1500, 1500, device=DEV)
    torch.axon.synchronize()
    xd = x.to(DEV)
    for _ in range(6):
        big = big @ big / 1500
    matmuls_done = torch.axon.Event()
    matmuls_done.record()
    compiled(xd, torch.tensor(2.0))
    assert not matmuls_done.query(), "the call waited for the queued matmuls"
    torch.axon.synchronize()
    # only the host arithmetic (on the CPU tensor) is left eager; x's mul, div and add are in the program
    report = tc.explain(fn, x.to(DEV), torch.tensor(3.0))
    left = [op for _, op, _ in report.left_out]
    assert not any(op.startswith(("aten.mul", "aten.div", "aten.add")) for op in left), report.left_out


def test_cat_with_a_legacy_empty_tensor_compiles():
    # a Hugging Face DynamicCache starts as cat([tensor([]), keys], -2): the empty 1-D tensor is skipped, the cat
    # joins the partition, and the transposed keys it reads are not copied out of the program first
    def fn(x, w):
        h = (x @ w).view(2, 8, 4, 4).transpose(1, 2)
        cache = torch.cat([torch.tensor([], device=x.device), h], dim=-2)
        return cache, torch.tanh(cache) * 2

    x, w = sample((16, 16)), sample((16, 16), seed=1)
    got = torch.compile(fn, backend="axon")(x.to(DEV), w.to(DEV))
    want = fn(x, w)
    for g, e in zip(got, want):
        close(g, e)
    s = tc.stats()
    assert s["partitions"] == 1 and s["eager_partitions"] == 0, s
    report = tc.explain(fn, x.to(DEV), w.to(DEV))
    assert not any(op.startswith("aten.cat") for _, op, _ in report.left_out), report.left_out


def test_cross_entropy_backward_runs_as_one_fused_op(tmp_path, monkeypatch):
    # log_softmax + nll_loss's backward pair becomes axon::nll_loss_log_softmax_backward; gradients match CPU, with an
    # ignored target and class weights
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    ref = torch.nn.Linear(16, 40)
    model = _copy_to(ref, DEV)
    weight = torch.rand(40) + 0.5
    target = torch.tensor([3, 17, -100, 39, 0, 21])
    x = sample((6, 16), seed=3)

    def loss_fn(m, x, t, w):
        return F.cross_entropy(m(x), t, weight=w, ignore_index=-100)

    compiled = torch.compile(loss_fn, backend="axon")
    want = loss_fn(ref, x, target, weight)
    want.backward()
    got = compiled(model, x.to(DEV), target.to(DEV), weight.to(DEV))
    got.backward()
    close(got, want.detach())
    for p, rp in zip(model.parameters(), ref.parameters()):
        close(p.grad, rp.grad, GRAD_TOL)
    graphs = [open(f).read() for f in glob.glob(str(tmp_path / "*backward" / "partitioned.py"))]
    assert not any("nll_loss_backward.default(" in g or "_log_softmax_backward_data" in g for g in graphs), graphs
    assert "= nll_loss_log_softmax_backward(" in _compiled_texts(tmp_path)   # inside the backward's program


def test_cache_update_is_written_in_place(tmp_path, monkeypatch):
    # a static KV cache's index_copy_ in an inference graph: the cache is written at the new positions in place (no
    # whole-cache copy and copy-back), inside the program (AXIR index_copy_into), the values match CPU, and a
    # parameter-style update is still copied back
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))

    def fn(cache, pos, kv, w, x):
        cache.index_copy_(2, pos, kv)
        w.mul_(0.5)
        return (cache * x).sum(-1) + w

    cpu = [torch.zeros(2, 3, 8, 4), torch.randn(2, 3, 8)]
    dev = [t.to(DEV) for t in cpu]
    compiled = torch.compile(fn, backend="axon")
    ptr = dev[0].data_ptr()
    with torch.no_grad():
        for step in range(3):
            pos = torch.tensor([step, step + 4])
            kv, x = sample((2, 3, 2, 4), seed=step), sample((2, 3, 8, 4), seed=10 + step)
            want = fn(cpu[0], pos, kv, cpu[1], x)
            got = compiled(dev[0], pos.to(DEV), kv.to(DEV), dev[1], x.to(DEV))
            close(got, want)
            close(dev[0], cpu[0])
            close(dev[1], cpu[1])
    assert dev[0].data_ptr() == ptr
    graph = open(glob.glob(str(tmp_path / "*" / "partitioned.py"))[0]).read()
    assert "index_put" not in graph, graph                # not eager: in the program, writing the input
    assert graph.count("copy_.default(") == 1, graph   # w's, at the end
    texts = _compiled_texts(tmp_path)
    assert "= index_copy_into(%arg0_1, " in texts and "index_put(" not in texts, texts


def test_cache_written_in_place_and_read_eagerly_is_not_copied(tmp_path, monkeypatch):
    # the cache update's partition hands the written cache to an eager op (sort has no lowering): the program has no
    # output of its own, the eager op reads the caller's tensor, and the values match CPU
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))

    def fn(cache, pos, kv, x):
        cache.index_copy_(2, pos, kv * 2)
        return torch.sort(cache, dim=-1)[0] + x.sum()

    cpu = torch.zeros(2, 3, 8, 4)
    dev = cpu.to(DEV)
    compiled = torch.compile(fn, backend="axon")
    with torch.no_grad():
        for step in range(3):
            pos = torch.tensor([step * 2])
            kv, x = sample((2, 3, 1, 4), seed=step), sample((5,), seed=20 + step)
            close(compiled(dev, pos.to(DEV), kv.to(DEV), x.to(DEV)), fn(cpu, pos, kv, x))
            close(dev, cpu)
    texts = _compiled_texts(tmp_path)
    assert re.search(r"= index_copy_into\(%arg0_1, [^\n]*\n(  [^\n]*\n)*  return\n", texts), texts
    assert tc.stats()["eager_partitions"] == 0, tc.stats()


@pytest.mark.parametrize("dynamic", [False, True])
def test_llama_decode_with_a_static_cache_is_one_program(tmp_path, monkeypatch, dynamic):
    # Hugging Face Llama decoding against a StaticCache: each layer's cache update (index_copy_ on the cache tensors)
    # runs inside the one program, writing the caches in place; logits and caches match CPU eager step after step.
    # Under dynamic=True too, where the cache's length is a symbol and the keys' whole-dim slices (keys[:, :, :])
    # were left eager, splitting the program in five
    from transformers import LlamaConfig, LlamaForCausalLM, StaticCache

    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    config = LlamaConfig(num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=300, max_position_embeddings=64)
    ref = LlamaForCausalLM(config).eval()
    model = _copy_to(ref, DEV)
    prompt = torch.randint(0, 300, (2, 7), generator=torch.Generator().manual_seed(1))
    caches = {d: StaticCache(config=config, max_cache_len=12) for d in ("cpu", DEV)}
    with torch.no_grad():
        ref(prompt, past_key_values=caches["cpu"], use_cache=True)
        model(prompt.to(DEV), past_key_values=caches[DEV], use_cache=True)

        def decode(m, ids, pos, cache):
            return m(ids, past_key_values=cache, cache_position=pos, use_cache=True).logits

        compiled = torch.compile(decode, backend="axon", dynamic=dynamic)
        for step in range(3):
            ids = torch.randint(0, 300, (2, 1), generator=torch.Generator().manual_seed(10 + step))
            pos = torch.tensor([7 + step])
            want = decode(ref, ids, pos, caches["cpu"])
            got = compiled(model, ids.to(DEV), pos.to(DEV), caches[DEV])
            close(got, want)
            for a, b in zip(caches[DEV].layers, caches["cpu"].layers):
                close(a.keys, b.keys)
                close(a.values, b.values)
        report = tc.explain(decode, model, ids.to(DEV), pos.to(DEV) + 1, caches[DEV], dynamic=dynamic)
    parts = [p for g in report.graphs for p in g.partitions]
    assert len(parts) == 1 and parts[0].compiled, report
    assert not any("index_put" in op for _, op, _ in report.left_out), report.left_out
    for d in glob.glob(str(tmp_path / "*")):   # each compile (the decode's and explain's): keys and values per layer
        text = "".join(open(f).read() for f in glob.glob(os.path.join(d, "fused_*.passes.axir")))
        assert text.count("= index_copy_into(") == 2 * config.num_hidden_layers, text


def test_cpu_model_runs_eagerly_through_the_backend():
    model = MLP()
    x = sample((4, 32))
    with torch.no_grad():
        close(torch.compile(model, backend="axon")(x), model(x))


# ---- dynamic shapes ----

def test_dynamic_batch_sizes_compile_once():
    torch.manual_seed(0)
    ref = MLP()
    model = _copy_to(ref, DEV)
    compiled = torch.compile(model, backend="axon", dynamic=True)
    with torch.no_grad():
        for b in (2, 3, 5, 7, 8, 11, 16, 31):
            x = sample((b, 32), seed=b)
            close(compiled(x.to(DEV)), ref(x))
    s = tc.stats()
    assert s["graphs"] == 1, s
    # one program, its symbols bound per call
    assert s["partitions"] == 1 and s["program_calls"] == 8, s


def test_hf_model_with_fused_attention_compiles_once_for_new_batch_sizes_and_lengths():
    # GPT-2 through F.scaled_dot_product_attention: the fused-attention choice reads sizes symbolically, so neither the
    # batch nor the sequence length is specialized (it was: one recompile per new batch size)
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    model = GPT2Model(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=64,
                                 attn_implementation="sdpa")).eval()
    dev = _copy_to(model, DEV)
    compiled = torch.compile(dev, backend="axon", dynamic=True)
    with torch.no_grad():
        for b, length in ((2, 24), (3, 24), (5, 17), (4, 40)):
            ids = torch.randint(0, 500, (b, length), generator=torch.Generator().manual_seed(b * 100 + length))
            close(compiled(ids.to(DEV)).last_hidden_state, model(ids).last_hidden_state)
    s = tc.stats()
    assert s["graphs"] == 1 and s["program_calls"] == 4, s


def test_an_input_size_that_is_an_expression_of_an_unbound_symbol_gets_a_symbol_of_its_own(tmp_path, monkeypatch):
    # Hugging Face's hidden_states[:, -logits_to_keep:] with a symbolic logits_to_keep of 0: the slice (a symbolic
    # start) runs eagerly and hands the partition a [s0, s2+s1, s3] tensor whose s2 no input has as a whole
    # dimension; the partition spells s2+s1 as a symbol of its own, bound by that input, instead of running eagerly
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))

    def fn(h, w, keep):
        return torch.tanh(h[:, -keep:, :] @ w) * 2

    w = sample((8, 5), seed=1)
    compiled = torch.compile(fn, backend="axon", dynamic=True)
    for b, length in ((2, 7), (3, 9), (4, 6)):
        h = sample((b, length, 8), seed=b)
        close(compiled(h.to(DEV), w.to(DEV), 0), fn(h, w, 0))
    s = tc.stats()
    assert s["graphs"] == 1 and s["eager_partitions"] == 0 and s["program_calls"] == 3, s
    assert "dyn0" in _compiled_texts(tmp_path)


def test_hf_lm_training_with_dynamic_shapes_compiles_every_partition_and_matches_cpu():
    # GPT-2 with labels under dynamic=True: the loss's sizes use a symbol only a SymInt input gives (passed as an
    # empty u8[v, 0] tensor) and logits_to_keep's s2+s1 (a symbol of its own); no partition is left eager
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    ref = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=300, n_positions=64, resid_pdrop=0.0,
                                     embd_pdrop=0.0, attn_pdrop=0.0)).train()
    model = _copy_to(ref, DEV)
    compiled = torch.compile(model, backend="axon", dynamic=True)
    for b, length in ((2, 20), (3, 33), (5, 9)):
        ids = torch.randint(0, 300, (b, length), generator=torch.Generator().manual_seed(b + length))
        got, want = compiled(ids.to(DEV), labels=ids.to(DEV)).loss, ref(ids, labels=ids).loss
        got.backward()
        want.backward()
        close(got, want.detach())
        for p, rp in zip(model.parameters(), ref.parameters()):
            close(p.grad, rp.grad, GRAD_TOL)
        model.zero_grad()
        ref.zero_grad()
    s = tc.stats()
    assert s["eager_partitions"] == 0 and s["eager_graphs"] == 0, s
    assert s["graphs"] <= 4, s   # forward and backward graphs of the model and of the loss, compiled once


def test_slices_of_symbolic_dims_stay_in_the_program(monkeypatch):
    # whole-dim slices (Hugging Face's mask[..., :] and a static cache's keys[:, :, :] under dynamic=True), static
    # bounds, negative ends, a step, and an end the trace clamped to the dim: all lower to AXIR slices, and the
    # elementwise run over the [s0, s1-2] slices fuses with a kernel symbol of its own (tier 1's C runs it: compiled
    # before the first call); an end that is another symbol (x[:, :m.shape[0]]) stays eager, named by explain
    monkeypatch.setenv("AXON_COMPILE_SYNC", "1")

    def f(x):
        return (x[:, :] * 2, x[:, : x.shape[1]] + 1, x[:, 2:5] * 3, x[:, -3:].sum(1), x[:, 1:-1] * x[:, :-2],
                x[:, 2:100] + 1, x[1:, ::3] - 1)

    compiled = torch.compile(f, backend="axon", dynamic=True)
    for width in (6, 7, 12, 40):
        x = sample((3, width), seed=width)
        for got, want in zip(compiled(x.to(DEV)), f(x)):
            close(got, want)
    s = tc.stats()
    assert s["graphs"] == 1 and s["partitions"] == 1 and s["eager_partitions"] == 0, s
    assert s["program_calls"] == 4, s
    assert tc.tier1_groups() >= 1

    def g(x, m):
        return x[:, : m.shape[0]] * 3

    x, m = sample((3, 9)), sample((4,))
    report = tc.explain(g, x.to(DEV), m.to(DEV), dynamic=True)
    close(torch.compile(g, backend="axon", dynamic=True)(x.to(DEV), m.to(DEV)), g(x, m))
    assert any("slice" in op and "symbolic dimension" in why for _, op, why in report.left_out), report.left_out


def test_float_arguments_under_dynamic_shapes_are_cast_inside_the_program():
    # dynamic=True makes a Python float argument a float64 0-d CPU input that the graph casts to float32 before the
    # device ops read it; the casts ran eagerly (prims.convert_element_type, 20 us each) and now run in the program
    def f(x, scale, eps):
        return torch.rsqrt(x * x * scale + eps) * x

    compiled = torch.compile(f, backend="axon", dynamic=True)
    x = sample((4, 6))
    for scale, eps in ((0.5, 1e-5), (2.0, 1e-6), (3.0, 0.25)):
        close(compiled(x.to(DEV), scale, eps), f(x, scale, eps))
    s = tc.stats()
    assert s["graphs"] == 1 and s["partitions"] == 1 and s["eager_partitions"] == 0, s
    report = tc.explain(f, x.to(DEV), 0.5, 1e-5, dynamic=True)
    assert not any("on cpu" in why for _, _, why in report.left_out), report.left_out


def test_host_scalar_arithmetic_read_outside_the_programs_stays_on_the_host():
    # t * 3 of a 0-d CPU input is a graph output: computed eagerly, it stays a CPU tensor as traced, while the cast
    # that only the program reads joins the program
    def f(x, t):
        return x * t.double().float(), t * 3

    compiled = torch.compile(f, backend="axon")
    x, t = sample((3, 5)), torch.tensor(1.5)
    got, want = compiled(x.to(DEV), t), f(x, t)
    close(got[0], want[0])
    assert got[1].device.type == "cpu" and torch.equal(got[1], want[1])
    report = tc.explain(f, x.to(DEV), t)
    left = {op: why for _, op, why in report.left_out}
    assert any("mul" in op and "outside the compiled programs" in why for op, why in left.items()), left
    assert not any("convert_element_type" in op or "_to_copy" in op for op in left), left


def test_symbolic_sizes_become_axir_dim_expressions(tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))

    def f(x):
        return (x.reshape(x.shape[0] * x.shape[1], -1) * 2).sum(dim=0, keepdim=True) + x.shape[0]

    compiled = torch.compile(f, backend="axon", dynamic=True)
    for b in (3, 4):
        x = sample((b, 5, 6))
        close(compiled(x.to(DEV)), f(x))
    texts = [open(p).read() for p in glob.glob(str(tmp_path / "*" / "*.axir")) if not p.endswith(".passes.axir")]
    assert texts
    # The symbols are bound by the input's dimensions and the reshape uses an expression over them.
    assert any(re.search(r"reshape\(%\w+\) \{shape = \[s\d+\*s\d+, s\d+\]\}", t) for t in texts), texts


# ---- graph breaks ----

def test_graph_breaks_give_correct_results():
    def f(x):
        y = torch.tanh(x) * 3
        print("graph break")
        z = y.sum().item()   # a data-dependent scalar: another break
        return y + z

    x = sample((4, 5))
    compiled = torch.compile(f, backend="axon")
    close(compiled(x.to(DEV)), f(x))
    assert tc.stats()["graphs"] >= 2


# ---- dumps ----

def test_dump_dir_gets_fx_graph_and_axir(tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    model = MLP().to(DEV)
    with torch.no_grad():
        torch.compile(model, backend="axon")(sample((3, 32)).to(DEV))
    dirs = glob.glob(str(tmp_path / "*"))
    assert dirs
    names = {os.path.basename(p) for d in dirs for p in glob.glob(d + "/*")}
    assert {"graph.py", "partitioned.py", "fused_0.fx.py", "fused_0.axir"} <= names, names
    assert "fused_0.passes.axir" in names or "fused_0.eager.txt" in names, names
    text = open(glob.glob(str(tmp_path / "*" / "fused_0.axir"))[0]).read()
    assert text.startswith("axir 1\n") and "addmm(" in text and "relu(" in text


@pytest.mark.parametrize("source", ["block", "hf_bert_eager", "hf_gpt2_eager"])
def test_written_out_attention_runs_as_the_fused_attention_op(source, tmp_path, monkeypatch):
    # softmax(q k^T * scale + mask) v written with matmuls (the Block without sdpa, Hugging Face's "eager" attention
    # with a padding mask) reaches the program as one sdpa: no scores materialized, results as on CPU
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    if source == "block":
        model, kwargs = Block(use_sdpa=False).eval(), {}
        args = (sample((2, 9, 32)),)
        get = lambda out: out
    else:
        from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

        if source == "hf_bert_eager":
            model = BertModel(BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                         intermediate_size=128, vocab_size=500, attn_implementation="eager"),
                              add_pooling_layer=False).eval()
        else:
            model = GPT2Model(GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=64,
                                         attn_implementation="eager")).eval()
        args = (torch.randint(0, 500, (2, 24)),)
        mask = torch.ones(2, 24, dtype=torch.long)
        mask[1, 17:] = 0
        kwargs = {"attention_mask": mask}
        get = lambda out: out.last_hidden_state
    with torch.no_grad():
        ref = get(model(*args, **kwargs))
        dev = model.to(DEV)
        out = get(torch.compile(dev, backend="axon")(*[a.to(DEV) for a in args],
                                                      **{k: v.to(DEV) for k, v in kwargs.items()}))
    close(out, ref)
    text = _compiled_texts(tmp_path)
    assert text.count("sdpa(") == 2 if source != "block" else text.count("sdpa(") == 1, text
    assert "softmax(" not in text and " bmm(" not in text


# ---- the lowering against libaxon's parser and verifier ----

@pytest.mark.parametrize("make", [lambda: MLP(), lambda: Block(use_sdpa=True), lambda: Block(use_sdpa=False),
                                  lambda: WithCumsum()], ids=["mlp", "block_sdpa", "block_matmul", "cumsum"])
def test_lowered_text_parses_and_verifies(make, tmp_path, monkeypatch):
    monkeypatch.setenv("AXON_DUMP_DIR", str(tmp_path))
    torch.manual_seed(0)
    model = make().to(DEV)
    x = sample((2, 5, 32) if isinstance(model, Block) else (3, 32 if isinstance(model, MLP) else 16)).to(DEV)
    torch.compile(model, backend="axon")(x).sum().backward()
    files = [p for p in glob.glob(str(tmp_path / "*" / "*.axir")) if not p.endswith(".passes.axir")]
    assert files
    for p in files:
        text = open(p).read()
        _C._axir_parse(text)   # raises with the located diagnostic if the front end wrote bad AXIR


def test_bad_axir_is_reported_with_its_location():
    with pytest.raises(RuntimeError, match=r"axir:\d+:\d+"):
        _C._axir_parse("axir 1\n\nfunc @main(%x: f32[2]) -> (f32[2]) {\n  %y = nosuchop(%x) : f32[2]\n  return %y\n}\n")


# ---- runs as programs (needs libaxon's compiler) ----

def test_mlp_runs_as_one_program():
    model = MLP().to(DEV)
    with torch.no_grad():
        torch.compile(model, backend="axon")(sample((3, 32)).to(DEV))
    s = tc.stats()
    # programs counts compiles; an earlier test may have compiled the same text (programs are cached by text).
    assert s["partitions"] == 1 and s["program_calls"] == 1 and s["eager_partitions"] == 0, s


def test_training_runs_programs_forward_and_backward():
    model = MLP().to(DEV)
    torch.compile(model, backend="axon")(sample((3, 32)).to(DEV)).sum().backward()
    s = tc.stats()
    assert s["program_calls"] >= 2 and s["eager_partitions"] == 0, s


def test_program_refuses_cpu_tensors_with_a_clear_error():
    text = "axir 1\n\nfunc @main(%x: f32[2]) -> (f32[2]) {\n  %y = neg(%x) : f32[2]\n  return %y\n}\n"
    prog = _C._compile(text)
    with pytest.raises(RuntimeError, match="axon tensors only"):
        _C._program_run(prog, [torch.ones(2)])
    with pytest.raises(RuntimeError, match="expected 1 input"):
        _C._program_run(prog, [])
    out = _C._program_run(prog, [torch.ones(2, device=DEV)])
    close(out[0], -torch.ones(2))
    assert "neg" in _C._program_text(prog)


def test_compile_error_names_status_and_location():
    with pytest.raises(RuntimeError, match=r"AXON_ERROR_\w+: axir:\d+:\d+"):
        _C._compile("axir 1\n\nfunc @main(%x: f32[2]) -> (f32[2]) {\n  %y = neg(%q) : f32[2]\n  return %y\n}\n")


def test_op_families_match_cpu():
    f = op_families
    x, i = sample((4, 6)), torch.tensor([3, 0, 2, 1])
    got = torch.compile(f, backend="axon")(x.to(DEV), i.to(DEV))
    for g, r in zip(got, f(x, i)):
        close(g, r)
    s = tc.stats()
    assert s["program_calls"] >= 1 and s["eager_partitions"] == 0, s


def test_batch_norm_backward_runs_as_its_kernel_in_a_compiled_training_step():
    # Batch norm's backward is kept whole (torch_axon/compile/__init__.py, _KEEP): decomposed, its row reductions
    # ran as fused groups on tier 0's interpreter, several times slower than the kernel.
    torch._dynamo.reset()
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU()).train()
    model = _copy_to(ref, DEV)
    x = torch.randn(4, 3, 10, 10)
    compiled = torch.compile(model, backend="axon")
    compiled(x.to(DEV)).square().sum().backward()   # compiles
    for p in model.parameters():
        p.grad = None
    torch.axon.synchronize()   # the first step's kernels finish before the trace starts
    _C._trace_clear()
    _C._trace_enable(True)
    try:
        compiled(x.to(DEV)).square().sum().backward()
        torch.axon.synchronize()
    finally:
        _C._trace_enable(False)
    names = [r[0] for r in _C._trace_records()]
    _C._trace_clear()
    ref(x).square().sum().backward()
    for p, rp in zip(model.parameters(), ref.parameters()):
        close(p.grad, rp.grad, GRAD_TOL)
    assert names.count("batch_norm_backward") == 1, names

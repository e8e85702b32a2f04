"""Warm start of torch.compile(backend="axon") (torch_axon/compile/precompile.py): a second process on the same
compile cache runs the compiled model without Dynamo tracing or aot_autograd (no frame compiled, no graph compiled
by axon), and its results match PyTorch CPU. Also what must fall back to a normal compile: another input shape, a
corrupt entry, an entry written by another torch_axon; and that nothing is saved without AXON_WARM_START. Frames
that Dynamo compiles on their own because of a graph break (in a property's getter, in a decorator's wrapper) and a
compiled optimizer step are saved and loaded too (precompile.py's repairs of PyTorch 2.13's caching precompile)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

# The child builds a model with fixed weights, compiles it for axon, runs it once and prints what Dynamo and the axon
# backend did, and the largest difference from the same model on CPU.
CHILD = textwrap.dedent("""
    import json, os, sys
    import torch
    import torch_axon, torch_axon.compile as tc
    from torch._dynamo.utils import counters
    from torch._dynamo.guards import CheckFunctionManager

    builds = [0]   # guard managers built (a loaded frame's guards should be built once)
    build_guards = CheckFunctionManager.build_guards
    def counted(self, *args, **kwargs):
        builds[0] += 1
        return build_guards(self, *args, **kwargs)
    CheckFunctionManager.build_guards = counted

    model_name, batch = sys.argv[1], int(sys.argv[2])
    torch.manual_seed(0)
    options = None
    if model_name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 16),
                                    torch.nn.LayerNorm(16))
        x = torch.randn(batch, 32)
    else:   # a decorated forward (Hugging Face's): needs the guard filter and the saved module repairs
        from transformers import GPT2Config, GPT2Model
        model = GPT2Model(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=64, n_positions=16))
        x = torch.randint(0, 64, (batch, 8))
        options = {"guard_filter_fn": tc.guard_filter}
    train = os.environ.get("TRAIN") == "1"
    if train:   # forward and backward: the saved activations include a view of an input (the weights' transpose)
        expected = model(x)
        expected.sum().backward()
        ref_grad = model[0].weight.grad.clone()
        model.zero_grad(set_to_none=True)
        compiled = torch.compile(model.to("axon"), backend="axon")
        got = compiled(x.to("axon"))
        got.sum().backward()
        grad_err = (model[0].weight.grad.cpu() - ref_grad).abs().max().item()
    else:
        model.eval()
        with torch.no_grad():
            expected = model(x)
            compiled = torch.compile(model.to("axon"), backend="axon", options=options)
            got = compiled(x.to("axon"))
        grad_err = 0.0
    if model_name != "mlp":
        expected, got = expected.last_hidden_state, got.last_hidden_state
    print(json.dumps({
        "grad_err": grad_err,
        "guard_builds": builds[0],
        "frames": counters["stats"]["unique_graphs"],
        "hits": counters["dynamo_cache"]["dynamo_cache_hit"],
        "graphs": tc.stats()["graphs"],
        "programs": tc.stats()["programs"],
        "err": (got.detach().cpu() - expected.detach()).abs().max().item(),
    }))
""")


def run(cache, model="mlp", batch=4, warm=True, train=False):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), AXON_CACHE_DIR=str(cache), AXON_COMPILE_SYNC="1",
               TRAIN="1" if train else "0")
    env.pop("AXON_WARM_START", None)
    if warm:
        env["AXON_WARM_START"] = "1"
    proc = subprocess.run([sys.executable, "-c", CHILD, model, str(batch)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def entries(cache):
    return sorted((cache / "dynamo").glob("*/entry"))


def test_second_process_skips_tracing_and_matches_cpu(tmp_path):
    cold = run(tmp_path)
    assert cold["frames"] == 1 and cold["graphs"] == 1 and cold["hits"] == 0, cold
    assert cold["err"] < 1e-4, cold
    assert len(entries(tmp_path)) == 1
    warm = run(tmp_path)
    assert warm["hits"] == 1 and warm["frames"] == 0 and warm["graphs"] == 0, warm
    assert warm["programs"] >= 1, warm          # the saved AXIR compiled again, run as a libaxon program
    assert warm["guard_builds"] == 1, warm      # filtered when saved: not built a second time for the filter
    assert warm["err"] < 1e-4, warm


def test_another_shape_compiles_again(tmp_path):
    run(tmp_path, batch=4)
    other = run(tmp_path, batch=6)
    assert other["hits"] == 1 and other["frames"] == 1 and other["graphs"] == 1, other   # the guards refused it
    assert other["err"] < 1e-4, other


def test_corrupt_entry_is_a_miss(tmp_path):
    run(tmp_path)
    (entry,) = entries(tmp_path)
    entry.write_bytes(entry.read_bytes()[:100])
    again = run(tmp_path)
    assert again["hits"] == 0 and again["frames"] == 1 and again["graphs"] == 1, again
    assert again["err"] < 1e-4, again


def test_entry_of_another_torch_axon_is_removed(tmp_path):
    run(tmp_path)
    (entry,) = entries(tmp_path)
    (entry.parent / "axon.stamp").write_text("an older torch_axon")
    again = run(tmp_path)
    assert again["hits"] == 0 and again["frames"] == 1 and again["graphs"] == 1, again
    assert again["err"] < 1e-4, again
    assert len(entries(tmp_path)) == 1                      # written again, with this torch_axon's stamp


def test_nothing_saved_without_warm_start(tmp_path):
    out = run(tmp_path, warm=False)
    assert out["frames"] == 1 and out["err"] < 1e-4, out
    assert entries(tmp_path) == []


def test_decorated_forward(tmp_path):
    pytest.importorskip("transformers")
    cold = run(tmp_path, model="gpt2", batch=2)
    assert cold["frames"] == 1 and cold["err"] < 1e-4, cold
    warm = run(tmp_path, model="gpt2", batch=2)
    assert warm["hits"] == 1 and warm["frames"] == 0 and warm["graphs"] == 0, warm
    assert warm["guard_builds"] == 1, warm
    assert warm["err"] < 1e-4, warm


def test_training_step(tmp_path):
    cold = run(tmp_path, train=True)
    assert cold["frames"] == 1 and cold["graphs"] == 2, cold     # forward and backward
    warm = run(tmp_path, train=True)
    assert warm["hits"] == 1 and warm["frames"] == 0 and warm["graphs"] == 0, warm
    assert warm["err"] < 1e-4 and warm["grad_err"] < 1e-4, warm


# A module of its own (Dynamo's package names code by module and qualified name, and checks its source lines): a
# graph break inside a decorator's wrapper (whose free variable `fn` gets a guard), inside a property's getter and
# inside the output's constructor, as Hugging Face's `can_return_tuple`, `loss_function` and model outputs have in a
# training step.
BREAKS = textwrap.dedent("""
    import functools
    import torch

    def wrapped(fn):
        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            out = fn(self, *args, **kwargs)
            torch._dynamo.graph_break()
            return Box(out * 2.0 if fn.__name__ == "forward" else out)
        return wrapper

    class Box:   # like Hugging Face's model outputs: a frame compiled after the call's last graph, with no graph
        def __init__(self, value):
            torch._dynamo.graph_break()
            self.value = value

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(16, 8)
            self._scale = 0.5

        @property
        def scale(self):
            torch._dynamo.graph_break()
            return self._scale

        @wrapped
        def forward(self, x):
            return torch.nn.functional.gelu(self.lin(x)) * self.scale
""")

BREAKS_CHILD = textwrap.dedent("""
    import json, sys
    import torch, torch_axon, torch_axon.compile as tc
    from torch._dynamo.utils import counters
    import breaks

    torch.manual_seed(0)
    cpu, x = breaks.Net(), torch.randn(4, 16)
    net = breaks.Net().to("axon")
    net.load_state_dict(cpu.state_dict())
    options = {"guard_filter_fn": tc.guard_filter}
    if sys.argv[1] == "forward":
        got = torch.compile(net, backend="axon", options=options)(x.to("axon")).value
        err = (got.cpu() - cpu(x).value).abs().max().item()
    else:   # a whole training step compiled: forward, loss, backward and AdamW
        def make_step(model):
            opt = torch.optim.AdamW(model.parameters(), lr=0.1)
            def step(x):
                loss = model(x).value.square().mean()
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                return loss
            return step
        ref, step = make_step(cpu), torch.compile(make_step(net), backend="axon", options=options)
        for _ in range(2):
            ref(x)
            step(x.to("axon"))
        err = (net.lin.weight.detach().cpu() - cpu.lin.weight.detach()).abs().max().item()
    print(json.dumps({"hits": counters["dynamo_cache"]["dynamo_cache_hit"],
                      "frames": counters["stats"]["unique_graphs"], "traced": counters["frames"]["total"],
                      "err": err}))
""")


def run_breaks(tmp_path, kind):
    (tmp_path / "breaks.py").write_text(BREAKS)
    (tmp_path / "child.py").write_text(BREAKS_CHILD)
    cache = tmp_path / "cache"
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), AXON_CACHE_DIR=str(cache), AXON_COMPILE_SYNC="1",
               AXON_WARM_START="1")
    proc = subprocess.run([sys.executable, str(tmp_path / "child.py"), kind], env=env, capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not saved" not in proc.stderr, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_graph_breaks_in_a_wrapper_and_a_property(tmp_path):
    cold = run_breaks(tmp_path, "forward")
    assert cold["hits"] == 0 and cold["frames"] >= 1 and cold["err"] < 1e-5, cold
    warm = run_breaks(tmp_path, "forward")
    assert warm["hits"] == 1 and warm["frames"] == 0 and warm["traced"] == 0, warm   # the output's frame too
    assert warm["err"] < 1e-5, warm


def test_compiled_optimizer_step(tmp_path):
    # The optimizer's frame holds the parameters as graph attributes, so Dynamo leaves it out of the package and
    # compiles it again in the second process; the forward and backward frames load.
    cold = run_breaks(tmp_path, "step")
    assert cold["hits"] == 0 and cold["err"] < 1e-4, cold
    warm = run_breaks(tmp_path, "step")
    assert warm["hits"] == 1 and warm["frames"] < cold["frames"] and warm["traced"] < cold["traced"], (cold, warm)
    assert warm["err"] < 1e-4, warm

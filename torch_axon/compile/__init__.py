"""torch.compile(model, backend="axon"): Dynamo's FX graph -> aot_autograd (core ATen decompositions; forward and
backward graphs) -> partitions that AXIR supports -> AXIR text -> libaxon's graph compiler -> one C call per partition
run. What AXIR or tier 0 cannot take runs eagerly on axon. docs/compile.md describes the pipeline.

The backend is registered with Dynamo through the `torch_dynamo_backends` entry point (pyproject.toml), so
backend="axon" works once torch_axon is installed; `backend=torch_axon.compile.backend` works too.
"""

from __future__ import annotations

import contextlib
import functools
import os

import torch

from .counters import reset_stats, stats
from .explain import Explanation, explain
from .graph import compile_graph, tier1_groups

__all__ = ["backend", "explain", "Explanation", "stats", "reset_stats", "decompositions", "tier1_groups", "warm_start",
           "guard_filter"]

aten = torch.ops.aten

# Core ATen ops left whole rather than decomposed: those AXIR has as ops of its own, and backward ops whose
# decompositions end in row reductions that a fused group would run on tier 0's interpreter (tier 1 compiles only
# elementwise kernels), several times slower than their eager kernels, which then run them between the programs.
# In a GPT-2 training step these decompositions cost 8.5 ms against 3.6 ms eager; batch norm's backward, in the CNN
# preset's training step (batch 32), 9 fused groups and 11.9 ms a step against 6.7 ms eager. And logaddexp: its
# decomposition of complex operands holds a complex NaN constant, which FX's code generator prints as `nan+nanj`
# (PyTorch 2.13: a NameError when the graph module is built, which failed the whole compile).
_KEEP = [aten.logaddexp.default, aten.silu.default, aten.gelu.default, aten._softmax.default, aten._log_softmax.default,
         aten.native_layer_norm.default, aten.embedding.default, aten.index_select.default, aten.clamp.default,
         aten._softmax_backward_data.default, aten._log_softmax_backward_data.default,
         aten.native_layer_norm_backward.default, aten.nll_loss_forward.default, aten.nll_loss_backward.default,
         aten.embedding_dense_backward.default, aten.native_batch_norm_backward.default]


@functools.cache
def decompositions() -> dict:
    """core_aten_decompositions() less the ops AXIR takes whole."""
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    for op in _KEEP:
        table.pop(op, None)
    return table


def backend(gm: torch.fx.GraphModule, example_inputs, **kwargs):
    """The Dynamo backend. kwargs: `reports` (a list that receives one GraphReport per graph compiled; explain()
    uses it); other options are accepted and ignored."""
    from torch._dynamo.backends.common import aot_autograd

    reports = kwargs.get("reports")
    fw = functools.partial(compile_graph, kind="forward", reports=reports)
    bw = functools.partial(compile_graph, kind="backward", reports=reports)
    inference = functools.partial(compile_graph, kind="inference", reports=reports)
    warm = contextlib.nullcontext()
    if _precompile is not None and _precompile.enabled():   # warm start (precompile.py)
        fw, bw, inference = _precompile.compilers(fw, bw, inference)
        warm = _precompile.compiling()
    with warm:
        # Inference graphs keep their input mutations as copy_ nodes, which mutation.py writes in place where it can.
        return aot_autograd(fw_compiler=fw, bw_compiler=bw, inference_compiler=inference,
                            decompositions=decompositions(), keep_inference_input_mutations=True)(gm, example_inputs)


_precompile = None


def warm_start(on: bool = True) -> None:
    """Turns the warm start of compiled models on or off (AXON_WARM_START=1 turns it on at import): a process whose
    compile cache holds a model's entry skips Dynamo's tracing and aot_autograd (precompile.py, docs/compile.md)."""
    global _precompile
    from . import precompile

    _precompile = precompile
    precompile.enable(on)


def guard_filter(entries) -> list[bool]:
    """torch.compile(..., options={"guard_filter_fn": torch_axon.compile.guard_filter}): lets models whose forward
    is a decorator's wrapper (Hugging Face's) be saved for a warm start (precompile.guard_filter)."""
    from .precompile import guard_filter as drop_closure_guards

    return drop_closure_guards(entries)


def _register() -> None:
    # Through the entry point when the package is installed (registering here as well would make Dynamo's own
    # entry-point load fail as a duplicate); directly only when the metadata is missing (a source checkout on
    # PYTHONPATH).
    from importlib.metadata import entry_points

    from torch._dynamo.backends import registry

    if "axon" in entry_points(group="torch_dynamo_backends").names:
        return
    if "axon" not in registry._COMPILER_FNS:
        registry.register_backend(backend, name="axon")


_register()
if os.environ.get("AXON_WARM_START", "0") == "1":
    warm_start()

"""Which FX nodes AXIR supports, and the split of a graph into supported partitions (the rest runs eagerly on axon).

A node is supported when lower.py can lower it on its own (op, dtypes, shapes; lower.check_node) and, once the C
compiler offers it, when tier 0 can run its op and dtype. Three more rules keep eager semantics:
- graph outputs reached from a node through view ops only stay eager: a program returns fresh buffers, but
  aot_autograd regenerates aliases of inputs and intermediates from the view it traced;
- a partition of view ops alone is not compiled (eager views are free);
- random ops draw in eager mode's order: a compiled partition takes the Philox blocks of all its dropouts when it
  runs (draw k = its k-th dropout in graph order), so the partitions and the eager random ops must run their draws in
  the graph's order; where partitioning would reorder them, the dropouts stay eager (compiled and eager dropout then
  agree for the same seed in every case).
View ops at a partition's edges stay in it: a view of an input may have symbolic sizes that only the un-viewed
input binds (AXIR reads symbols from whole parameter dimensions).
"""

from __future__ import annotations

import operator

import torch
import torch.fx as fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .lower import VIEW_OPS, check_node, host_scalar_op

__all__ = ["classify", "draws", "partition"]


def _aliased_outputs(gm: fx.GraphModule, num_user_outputs: int | None) -> set[fx.Node]:
    """Nodes from which one of the first num_user_outputs graph outputs (all when None) is reached through view ops
    only (the output itself included). The other outputs (activations saved for backward) may be copies."""
    out = next(n for n in gm.graph.nodes if n.op == "output")
    outs = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    if num_user_outputs is not None:
        outs = outs[:num_user_outputs]
    seen: set[fx.Node] = set()
    stack = [o for o in outs if isinstance(o, fx.Node)]
    while stack:
        n = stack.pop()
        if n in seen or n.op != "call_function" or n.target not in VIEW_OPS:
            continue
        seen.add(n)
        stack.extend(n.all_input_nodes)
    return seen


def classify(gm: fx.GraphModule, num_user_outputs: int | None = None) -> dict[fx.Node, str | None]:
    """Per compute node: None if it may go into a compiled partition, else the reason it runs eagerly.
    num_user_outputs: how many leading graph outputs the caller sees (aliasing matters for them only)."""
    aliased = _aliased_outputs(gm, num_user_outputs)
    verdict: dict[fx.Node, str | None] = {}
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if n.target is operator.getitem:
            src = n.args[0]
            verdict[n] = verdict.get(src, "getitem of a non-node") if isinstance(src, fx.Node) else "getitem"
            continue
        reason = check_node(n)
        if reason is None and n in aliased:
            reason = "view that a graph output aliases (kept eager so the output aliases as traced)"
        verdict[n] = reason
    # A getitem takes its producer's verdict, which the loop above saw first; a producer whose getitem is aliased
    # stays fine (getitems never produce new memory).
    # Host-scalar arithmetic (lower.host_scalar_op) joins a program only when programs alone read its result: a
    # program hands back device tensors, and an eager op or the graph's output expects the host scalar traced. In
    # reverse order, so that a chain of them (a float64 input cast to float32) is decided from its last link.
    for n in reversed(gm.graph.nodes):
        if verdict.get(n, "") is None and host_scalar_op(n) and any(
                u.op != "call_function" or verdict.get(u) is not None for u in n.users):
            verdict[n] = "a host scalar that code outside the compiled programs reads"
    return verdict


class _Support(OperatorSupportBase):
    def __init__(self, verdict: dict[fx.Node, str | None]):
        self.verdict = verdict

    def is_node_supported(self, submodules, node: fx.Node) -> bool:
        return node.op == "call_function" and self.verdict.get(node, "unknown") is None


def draws(n: fx.Node) -> bool:
    """Whether n draws from the device's random generator (ATen tags such ops nondeterministic_seeded; the fused
    attention draws only with dropout)."""
    if n.op != "call_function" or torch.Tag.nondeterministic_seeded not in getattr(n.target, "tags", ()):
        return False
    if n.target is torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default:
        return bool(n.args[4] if len(n.args) > 4 else n.kwargs.get("dropout_p", 0.0))
    return True


def partition(gm: fx.GraphModule, verdict: dict[fx.Node, str | None]) -> tuple[fx.GraphModule, list[str]]:
    """gm with each supported partition fused into a call_module node (fused_0, fused_1, ...); returns the names.
    verdict is updated for dropouts kept eager to keep the random draws in order (module docstring)."""
    random = [n for n in gm.graph.nodes if draws(n)]
    compiled = [n for n in random if verdict.get(n) is None]
    if not compiled:
        return _fuse(gm, verdict)
    backup = _copy(gm)   # fusing rewrites gm
    fused, names = _fuse(gm, verdict)
    if _draw_sequence(fused, names) == [n.name for n in random]:
        return fused, names
    for n in compiled:
        verdict[n] = "random op whose partition would draw out of graph order (kept eager: masks as in eager mode)"
    by_name = {n.name: why for n, why in verdict.items()}
    return _fuse(backup, {n: by_name[n.name] for n in backup.graph.nodes if n.name in by_name})


def _copy(gm: fx.GraphModule) -> fx.GraphModule:
    """gm's graph copied into a new module over the same attributes (node meta copied shallowly: fake tensors stay
    shared)."""
    graph = fx.Graph()
    out = graph.graph_copy(gm.graph, {})
    graph.output(out)
    return fx.GraphModule(gm, graph)


def _fuse(gm: fx.GraphModule, verdict: dict[fx.Node, str | None]) -> tuple[fx.GraphModule, list[str]]:
    p = CapabilityBasedPartitioner(gm, _Support(verdict), allows_single_node_partition=True)
    parts = p.propose_partitions()
    # A partition of views and getitems alone computes nothing: eager views are free.
    parts = [q for q in parts
             if any(n.target not in VIEW_OPS for n in q.nodes if n.op == "call_function")]
    if not parts:
        return gm, []
    position = {n: i for i, n in enumerate(gm.graph.nodes)}
    for q in parts:   # each partition's draws numbered in graph order (lower.py's dropout reads it)
        for k, n in enumerate(sorted((n for n in q.nodes if draws(n)), key=position.__getitem__)):
            n.meta["axon_draw"] = k
    fused = p.fuse_partitions(parts)
    names = [n.target for n in fused.graph.nodes if n.op == "call_module" and str(n.target).startswith("fused_")]
    return fused, names


def _draw_sequence(fused: fx.GraphModule, names: list[str]) -> list[str]:
    """The random ops' names in the order the fused graph runs their draws."""
    seq: list[str] = []
    for n in fused.graph.nodes:
        if n.op == "call_module" and n.target in names:
            sub = [m for m in getattr(fused, n.target).graph.nodes if draws(m)]
            seq += [m.name for m in sorted(sub, key=lambda m: m.meta["axon_draw"])]
        elif draws(n):
            seq.append(n.name)
    return seq

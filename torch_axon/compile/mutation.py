"""Input mutations in inference graphs, written in place.

aot_autograd (keep_inference_input_mutations=True) hands the backend a functional graph that ends in
`copy_(input, new_value)` for every input the model mutated: a static KV cache's `index_copy_`, an optimizer's
parameter and moment updates. Two rewrites keep that cheap:
- an index_put whose input nothing else reads and whose result is copied back into that input is done in place
  (`index_put_`): the cache is written at the new positions, not copied whole and then copied back;
- the copy-backs move to the end of the graph, after every read of the old values (partitioning reorders nodes by
  data dependencies only, which do not see that a read of an input must come before the copy into it);
- copy-backs between axon tensors of one floating dtype are batched into one `_foreach_copy_` per dtype: an AdamW
  step writes back every parameter and both moments, and one multi-tensor copy spreads them over the device's
  threads where separate copies each ran on one, behind one dispatch each.
"""

from __future__ import annotations

import torch
import torch.fx as fx

aten = torch.ops.aten

__all__ = ["write_mutations_in_place"]

_IN_PLACE = {aten.index_put.default: aten.index_put_.default}


def _copy_back(n: fx.Node) -> bool:
    return (n.op == "call_function" and n.target is aten.copy_.default and isinstance(n.args[0], fx.Node)
            and n.args[0].op == "placeholder")


def write_mutations_in_place(gm: fx.GraphModule) -> int:
    """Rewrites gm as above; returns how many ops now write their input in place."""
    graph = gm.graph
    output = next(n for n in graph.nodes if n.op == "output")
    copies = [n for n in graph.nodes if _copy_back(n)]
    done = 0
    for copy in copies:
        dst, src = copy.args[0], copy.args[1]
        if not (isinstance(src, fx.Node) and src.op == "call_function" and src.target in _IN_PLACE
                and src.args[0] is dst and set(dst.users) == {src, copy} and output not in src.users
                and not copy.users):
            continue
        src.target = _IN_PLACE[src.target]   # returns dst, updated: its readers read the same values
        graph.erase_node(copy)
        done += 1
    for copy in [n for n in graph.nodes if _copy_back(n)]:
        output.prepend(copy)
    _batch_copy_backs(graph, output)
    graph.lint()
    gm.recompile()
    return done


def _batchable(copy: fx.Node) -> torch.dtype | None:
    """The dtype under which copy can join a `_foreach_copy_`, or None: plain copy_(dst, src) with no users, both
    axon tensors of that floating dtype and one shape, contiguous (the multi-tensor kernel's fast path)."""
    if len(copy.args) != 2 or copy.kwargs or copy.users or not isinstance(copy.args[1], fx.Node):
        return None
    dst, src = (a.meta.get("val") for a in copy.args)
    if not (isinstance(dst, torch.Tensor) and isinstance(src, torch.Tensor)):
        return None
    ok = (dst.device.type == "axon" and src.device.type == "axon" and dst.dtype == src.dtype
          and dst.dtype.is_floating_point and dst.shape == src.shape and dst.is_contiguous() and src.is_contiguous())
    return dst.dtype if ok else None


def _batch_copy_backs(graph: fx.Graph, output: fx.Node) -> None:
    groups: dict[torch.dtype, list[fx.Node]] = {}
    for copy in [n for n in graph.nodes if _copy_back(n)]:
        dtype = _batchable(copy)
        if dtype is not None:
            groups.setdefault(dtype, []).append(copy)
    for copies in groups.values():
        if len(copies) < 2:
            continue
        with graph.inserting_before(output):
            graph.call_function(aten._foreach_copy_.default,
                                ([c.args[0] for c in copies], [c.args[1] for c in copies]))
        for copy in copies:
            graph.erase_node(copy)

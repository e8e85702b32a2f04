"""Input mutations in inference graphs, written in place.

aot_autograd (keep_inference_input_mutations=True) hands the backend a functional graph that ends in
`copy_(input, new_value)` for every input the model mutated: a static KV cache's `index_copy_`, an optimizer's
parameter and moment updates. Two rewrites keep that cheap:
- an index_put whose input nothing else reads and whose result is copied back into that input is done in place
  (`index_put_`): the cache is written at the new positions, not copied whole and then copied back;
- the copy-backs move to the end of the graph, after every read of the old values (partitioning reorders nodes by
  data dependencies only, which do not see that a read of an input must come before the copy into it).
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
    graph.lint()
    gm.recompile()
    return done

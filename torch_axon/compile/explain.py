"""torch_axon.compile.explain(model, *inputs): compile and run model once with the axon backend and report, per
graph, the partitions (compiled or eager, and why) and each op left to run eagerly with its reason."""

from __future__ import annotations

import dataclasses

import torch

__all__ = ["Explanation", "explain"]


@dataclasses.dataclass
class Explanation:
    graphs: list  # of graph.GraphReport

    @property
    def left_out(self) -> list[tuple[str, str, str]]:
        """(node, op, reason) for every op that runs eagerly: outside partitions, or in a partition that did not
        compile (reason: the partition's)."""
        out = []
        for g in self.graphs:
            out.extend(g.eager_nodes)
            for p in g.partitions:
                if not p.compiled:
                    out.extend((op.split("=")[0], op.split("=", 1)[1], f"in eager {p.name}: {p.reason}") for op in p.ops)
        return out

    @property
    def unsupported_ops(self) -> set[str]:
        """The aten ops some node of which AXIR could not take (views left eager at edges are not counted)."""
        return {op for _, op, why in self.left_out if not why.startswith("view")}

    def __str__(self) -> str:
        lines = []
        for i, g in enumerate(self.graphs):
            lines.append(f"graph {i} ({g.kind}): {len(g.partitions)} partition(s)"
                         + (f", ran eagerly: {g.error}" if g.error else ""))
            for p in g.partitions:
                state = "compiled" if p.compiled else f"eager: {p.reason}"
                lines.append(f"  {p.name}: {len(p.ops)} op(s), {state}")
                for op in p.ops:
                    lines.append(f"    {op}")
            for node, op, why in g.eager_nodes:
                lines.append(f"  eager {node} ({op}): {why}")
        return "\n".join(lines)


def explain(model, *inputs, **compile_kwargs) -> Explanation:
    """Compile model with the axon backend, run it on inputs once, print and return what went where."""
    from . import backend

    reports: list = []

    def recording_backend(gm, example_inputs):
        return backend(gm, example_inputs, reports=reports)

    torch.compile(model, backend=recording_backend, **compile_kwargs)(*inputs)
    result = Explanation(reports)
    print(result)
    return result

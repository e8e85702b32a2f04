"""A compiled cross-entropy's backward, fused.

aot_autograd hands the backward of `cross_entropy` (log_softmax, then nll_loss) as two ATen ops:
`nll_loss_backward`, which zero-fills a [N, C] gradient and writes -weight * g at each target, and
`_log_softmax_backward_data`, which reads that gradient and the saved log-probabilities and writes the input's
gradient. Both run eagerly between programs (compile/__init__.py keeps them whole). When the first feeds only the
second and both see the same log-probabilities, they become one `axon::nll_loss_log_softmax_backward`: one pass over
[N, C] instead of three (libaxon/include/axon/loss.h). For a language model's [tokens, vocabulary] logits that is the
largest tensor of the step.
"""

from __future__ import annotations

import torch
import torch.fx as fx

aten = torch.ops.aten

__all__ = ["fuse_cross_entropy_backward"]


def _val(n) -> torch.Tensor | None:
    v = n.meta.get("val") if isinstance(n, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _fusable(nll: fx.Node, lsm: fx.Node) -> bool:
    # nll_loss_backward reads its `self` for the shape only; the log-probabilities come from the softmax backward's
    # `output` (often an alias of the same saved tensor, which the backward graph alone cannot tell).
    _, output, dim, input_dtype = lsm.args
    shape_of, val = _val(nll.args[1]), _val(output)
    return (set(nll.users) == {lsm} and lsm.args[0] is nll and not nll.kwargs and not lsm.kwargs
            and val is not None and shape_of is not None and val.dim() in (1, 2) and shape_of.shape == val.shape
            and shape_of.dtype == val.dtype and dim in (val.dim() - 1, -1) and input_dtype == val.dtype
            and val.device.type == "axon")


def fuse_cross_entropy_backward(gm: fx.GraphModule) -> int:
    """Rewrites gm as above; returns how many pairs were fused."""
    graph = gm.graph
    done = 0
    for lsm in [n for n in graph.nodes if n.op == "call_function"
                and n.target is aten._log_softmax_backward_data.default]:
        nll = lsm.args[0]
        if not (isinstance(nll, fx.Node) and nll.op == "call_function"
                and nll.target is aten.nll_loss_backward.default and _fusable(nll, lsm)):
            continue
        with graph.inserting_before(lsm):
            grad_output, _, target, weight, reduction, ignore_index, total_weight = nll.args
            fused = graph.call_function(torch.ops.axon.nll_loss_log_softmax_backward.default,
                                        (grad_output, lsm.args[1], target, weight, reduction, ignore_index,
                                         total_weight))
        fused.meta = dict(lsm.meta)
        lsm.replace_all_uses_with(fused)
        graph.erase_node(lsm)
        graph.erase_node(nll)
        done += 1
    if done:
        graph.lint()
        gm.recompile()
    return done

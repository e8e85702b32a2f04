"""Functions shared by the compile tests: one covers many op families that the front end lowers to AXIR."""

import torch


def op_families(x, i):
    """clamp, reductions, where, slicing, split/cat, views, softmax, argmax, index_select and gather on x (4, 6) with
    i (4,) int64 indices: the families tests/test_compile_lowering.py checks lower and test_compile_frontend.py
    checks against CPU."""
    a = torch.clamp(x, -0.5, 0.5) + torch.clamp(x, min=0.1)
    b = torch.var(x, dim=1, keepdim=True) + x.amax(dim=0) - x.mean()
    c = torch.where(x > 0, x, -x)[1:3, ::2].sum() + x.select(1, -1).sum()
    d, e = torch.split(x, [2, 2], dim=0)
    g = torch.cat([d, e * 2], dim=1).unsqueeze(0).squeeze(0)
    h = torch.softmax(x, -1) + torch.log_softmax(x, 0) + torch.argmax(x).float()
    k = torch.index_select(x, 0, i) + torch.gather(x, 1, i.unsqueeze(1).expand(4, 6))
    return a, b, c, g, h, k

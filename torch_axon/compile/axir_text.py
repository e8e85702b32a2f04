"""Spelling of AXIR text pieces (docs/axir.md): dtypes, symbolic dimensions, types, attribute values.

Translation only: every function here turns a PyTorch-side description (a dtype, a SymInt's sympy expression, a
Python scalar) into the characters the AXIR grammar expects, or raises Unsupported naming what has no spelling.
"""

from __future__ import annotations

import contextlib
import contextvars
import math

import sympy
import torch

__all__ = ["Unsupported", "DTYPES", "dtype_text", "dim_text", "type_text", "attr_text", "free_symbols", "expr_of",
           "substituted"]

# Whole size expressions spelled as symbols of their own while a partition is lowered (lower.py,
# _whole_dim_substitution): {expr: sympy.Symbol}.
_SUBST: contextvars.ContextVar[dict] = contextvars.ContextVar("axir_subst", default={})


@contextlib.contextmanager
def substituted(subst: dict):
    """Within the block, every size expression is read with subst's expressions replaced by their symbols."""
    token = _SUBST.set(subst)
    try:
        yield
    finally:
        _SUBST.reset(token)


class Unsupported(Exception):
    """A node or graph that AXIR (or tier 0) cannot express; the message says why. Such parts run eagerly."""


DTYPES = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int8: "i8", torch.uint8: "u8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
    torch.bool: "bool", torch.complex64: "c64", torch.complex128: "c128",
}

MAX_RANK = 8  # AXON_MAX_DIMS


def dtype_text(dtype: torch.dtype) -> str:
    try:
        return DTYPES[dtype]
    except KeyError:
        raise Unsupported(f"dtype {dtype} has no AXIR type") from None


def expr_of(d) -> sympy.Expr | int:
    """An int, or the sympy expression behind a SymInt (its shape-env symbols), under the current substitution."""
    if isinstance(d, bool):
        raise Unsupported("a bool where a dimension was expected")
    if isinstance(d, int):
        return d
    if isinstance(d, torch.SymInt):
        d = d.node.expr
        if isinstance(d, int):
            return d
    if isinstance(d, sympy.Expr):
        subst = _SUBST.get()
        if subst and not isinstance(d, sympy.Integer):
            d = d.subs(subst)
        return int(d) if isinstance(d, sympy.Integer) else d
    raise Unsupported(f"{type(d).__name__} {d!r} is not a dimension")


def free_symbols(d) -> set[str]:
    e = expr_of(d)
    return set() if isinstance(e, int) else {str(s) for s in e.free_symbols}


def _sym(e) -> str:
    """Fully parenthesized AXIR dim expression for sympy expression e (a SymInt's expr)."""
    from torch.utils._sympy.functions import CleanDiv, FloorDiv, Mod, PythonMod

    if isinstance(e, sympy.Integer):
        v = int(e)
        return str(v) if v >= 0 else f"(0-{-v})"
    if isinstance(e, sympy.Symbol):
        name = str(e)
        if not name[0].isalpha() or name in DTYPES.values():
            raise Unsupported(f"symbol {name} has no AXIR spelling")
        if name[0] == "u":
            raise Unsupported(f"data-dependent size {name}")
        return name
    if isinstance(e, sympy.Add):
        pos, neg = [], []
        for term in e.args:
            coeff, rest = term.as_coeff_Mul()
            if coeff < 0:
                neg.append(_sym(-term))
            else:
                pos.append(_sym(term))
        text = "+".join(pos) if pos else "0"
        for n in neg:
            text += "-" + n
        return f"({text})"
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff < 0:
            return f"(0-{_sym(-e)})"
        return "(" + "*".join(_sym(a) for a in e.args) + ")"
    if isinstance(e, sympy.Pow) and isinstance(e.exp, sympy.Integer) and int(e.exp) > 0:
        return "(" + "*".join([_sym(e.base)] * int(e.exp)) + ")"
    if isinstance(e, (FloorDiv, CleanDiv)):
        return f"({_sym(e.args[0])}//{_sym(e.args[1])})"
    if isinstance(e, (PythonMod, Mod)):
        return f"({_sym(e.args[0])}%{_sym(e.args[1])})"
    raise Unsupported(f"size expression {e} ({type(e).__name__}) has no AXIR spelling")


def dim_text(d) -> str:
    e = expr_of(d)
    if isinstance(e, int):
        if e < 0:
            raise Unsupported(f"negative size {e}")
        return str(e)
    text = _sym(e)
    # The outermost parentheses are redundant; keep the text readable in dumps.
    if text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1]
    return text


def _balanced(s: str) -> bool:
    depth = 0
    for c in s:
        depth += c == "("
        depth -= c == ")"
        if depth < 0:
            return False
    return depth == 0


def type_text(t: torch.Tensor) -> str:
    """AXIR type of a (fake) tensor: dtype and logical shape."""
    if t.dim() > MAX_RANK:
        raise Unsupported(f"rank {t.dim()} exceeds AXIR's {MAX_RANK} dimensions")
    return f"{dtype_text(t.dtype)}[{', '.join(dim_text(d) for d in t.shape)}]"


def float_text(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = repr(float(v)).replace("e+", "e")  # shortest round-trip form; '.' or an exponent, never a bare INT
    return text


def attr_text(v) -> str:
    """An attribute value: bool, int, float, str, dtype or a list of dims."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return float_text(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    if isinstance(v, torch.dtype):
        return dtype_text(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_list_item(d) for d in v) + "]"
    raise Unsupported(f"attribute value {v!r} has no AXIR spelling")


def _list_item(d) -> str:
    e = expr_of(d)
    if isinstance(e, int):
        return str(e)  # list items may be negative (never for dims we emit, but harmless)
    return dim_text(d)

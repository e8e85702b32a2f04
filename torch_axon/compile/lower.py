"""FX graphs in core ATen IR (after aot_autograd's decompositions) -> AXIR text (docs/axir.md).

One lowering function per aten op family, found through the table LOWERINGS (aten overload -> function). Lowering is
translation, not computation: each function reads a node's arguments and its fake-tensor metadata (node.meta["val"]:
dtype and shape, SymInt sizes as shape-env symbols) and writes AXIR statements. Type promotion is made explicit with
`cast`, Python scalars become `const` values, SymInt graph inputs are bound from tensor shapes (never passed as
tensors), and sizes that are SymInt expressions become AXIR dim expressions (s0*12).

The same code answers "can this node be lowered?" for the partitioner (Lowering(check_only=True) lowers one node on
stand-in parameters), so the partitioner and the lowering cannot disagree about what AXIR supports.
"""

from __future__ import annotations

import operator
import re
from typing import Callable

import sympy
import torch
import torch.fx as fx

from .axir_text import Unsupported, attr_text, dim_text, dtype_text, expr_of, free_symbols, substituted, type_text

aten = torch.ops.aten
prims = torch.ops.prims

__all__ = ["Unsupported", "Lowering", "lower_graph", "LOWERINGS", "VIEW_OPS", "check_node"]


def _val(a):
    return a.meta.get("val") if isinstance(a, fx.Node) else a


def _is_tensor(v) -> bool:
    return isinstance(v, torch.Tensor)


def _meta_like(v) -> torch.Tensor:
    """A meta tensor with v's dtype and rank, for dtype promotion questions (0-d-ness matters there)."""
    if isinstance(v, torch.Tensor):
        return torch.empty([1] * v.dim(), dtype=v.dtype, device="meta")
    return v


class Lowering:
    """Builds one AXIR function (@main) from an FX graph, statement by statement."""

    def __init__(self, check_only: bool = False):
        self.check_only = check_only
        self.params: list[str] = []       # "%name: type"
        self.param_nodes: list[fx.Node] = []
        self.lines: list[str] = []
        self.values: dict[fx.Node, object] = {}   # node -> "%name", a list of them, or a SymInt / scalar
        self.bound: set[str] = set()              # symbols that some parameter has as a whole dimension
        self.used: set[str] = set()               # symbols that some type or attribute mentions
        self._names: set[str] = set()
        self._fresh = 0
        self.vtype: dict[str, str] = {}           # value -> its AXIR dtype
        self.ops: list[tuple[str, str]] = []      # (op, the dtype tier 0 is asked about), for tier0_refusal
        self.size_inputs: dict[str, fx.Node] = {}  # symbol -> the SymInt input that is exactly that symbol
        self.sources: list = []                   # per graph output: its program output k, or an InputView

    # ---- names and statements ----

    def name(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.]", "_", hint) or "v"
        if not (base[0].isalpha() or base[0] == "_"):
            base = "v" + base
        n, i = base, 0
        while n in self._names:
            i += 1
            n = f"{base}.{i}"
        self._names.add(n)
        return "%" + n

    def fresh(self) -> str:
        self._fresh += 1
        return self.name(f"t{self._fresh}")

    def _note_symbols(self, t: torch.Tensor) -> None:
        for d in t.shape:
            self.used |= free_symbols(d)

    def emit(self, op: str, operands: list[str], attrs: dict, result_types: list[str], hint: str | None = None,
             nresults: int = 1) -> list[str]:
        names = [self.name(f"{hint}.{i}" if nresults > 1 else hint) if hint else self.fresh() for i in range(nresults)]
        attr = ""
        if attrs:
            attr = " {" + ", ".join(f"{k} = {attr_text(v)}" for k, v in sorted(attrs.items())) + "}"
        res = result_types[0] if len(result_types) == 1 else "(" + ", ".join(result_types) + ")"
        for nm, ty in zip(names, result_types):
            self.vtype[nm] = ty.split("[")[0]
        # The dtype axon_compile_supports is asked about: the operands' for comparisons, isnan, logical_not and
        # where's branches, else the result's.
        key = 1 if op == "where" else 0 if op in _OPERAND_DTYPE_OPS else None
        self.ops.append((op, self.vtype.get(operands[key], "") if key is not None else result_types[0].split("[")[0]))
        self.lines.append(f"  {', '.join(names)} = {op}({', '.join(operands)}){attr} : {res}")
        return names

    def emit1(self, op: str, operands: list[str], attrs: dict, out: torch.Tensor, hint: str | None = None) -> str:
        self._note_symbols(out)
        return self.emit(op, operands, attrs, [type_text(out)], hint)[0]

    def add_param(self, node: fx.Node, t: torch.Tensor) -> str:
        if not host_scalar(t):
            check_device(t, node)
        n = self.name(node.name)
        self.params.append(f"{n}: {type_text(t)}")
        self.vtype[n] = type_text(t).split("[")[0]
        self.param_nodes.append(node)
        for d in t.shape:
            if isinstance(d, torch.SymInt):
                e = expr_of(d)
                if getattr(e, "is_Symbol", False):
                    self.bound.add(str(e))
        self._note_symbols(t)
        return n

    # ---- operands ----

    def tensor(self, a) -> str:
        """The AXIR value of a tensor argument."""
        if not isinstance(a, fx.Node):
            raise Unsupported(f"expected a tensor, got {type(a).__name__}")
        if a not in self.values:
            if not self.check_only:
                raise Unsupported(f"{a.name} used before it is defined")
            t = _val(a)
            if not _is_tensor(t):
                raise Unsupported(f"{a.name} is not a tensor")
            self.values[a] = self.add_param(a, t)
        v = self.values[a]
        if v is _UNREAD_HOST_SCALAR:
            v = self.values[a] = self.add_param(a, _val(a))
        if not isinstance(v, str):
            raise Unsupported(f"{a.name} is not a tensor value")
        return v

    def type_of(self, dtype: torch.dtype, shape) -> str:
        """The AXIR type of a value of dtype and shape (an intermediate no FX node describes); notes its symbols."""
        self.dims_attr(shape)
        return f"{dtype_text(dtype)}[{', '.join(dim_text(d) for d in shape)}]"

    def cast(self, v: str, src: torch.Tensor, dtype: torch.dtype) -> str:
        if src.dtype == dtype:
            return v
        return self.emit("cast", [v], {}, [self.type_of(dtype, src.shape)])[0]

    def operand(self, a, dtype: torch.dtype) -> str:
        """A tensor argument cast to dtype, or a Python scalar as a 0-d `const` of dtype."""
        if isinstance(a, fx.Node):
            t = _val(a)
            if not _is_tensor(t):
                raise Unsupported(f"{a.name} is a {type(t).__name__}, not a tensor (symbolic scalars are not lowered)")
            return self.cast(self.tensor(a), t, dtype)
        return self.const(a, dtype, [])

    def const(self, value, dtype: torch.dtype, shape, hint: str | None = None) -> str:
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise Unsupported("a symbolic scalar operand")
        if isinstance(value, complex) or dtype.is_complex:
            raise Unsupported("complex constants")
        if dtype == torch.bool:
            v = bool(value)
        elif dtype.is_floating_point:
            v = float(value)
        elif isinstance(value, float) and not value.is_integer():
            raise Unsupported(f"constant {value} for integer dtype {dtype}")
        else:
            v = int(value)
        return self.emit("const", [], {"value": v}, [self.type_of(dtype, shape)], hint)[0]

    def dims_attr(self, dims) -> list:
        for d in dims:
            self.used |= free_symbols(d)
            dim_text(d)
        return list(dims)

    # ---- whole graphs ----

    def lower_node(self, node: fx.Node) -> None:
        if node.op == "call_function" and node.target is operator.getitem:
            src, i = node.args
            vals = self.values.get(src) if isinstance(src, fx.Node) else None
            if not isinstance(vals, list) or not isinstance(i, int) or not 0 <= i < len(vals) or vals[i] is None:
                raise Unsupported(f"getitem {i} of {getattr(src, 'name', src)}")
            self.values[node] = vals[i]
            return
        if node.op != "call_function":
            raise Unsupported(f"{node.op} node {node.name}")
        fn = LOWERINGS.get(node.target)
        if fn is None:
            raise Unsupported(f"no AXIR lowering for {node.target}")
        out = node.meta.get("val")
        on_host = host_scalar_op(node)
        for t in (out if isinstance(out, (list, tuple)) else [out]):
            if _is_tensor(t):
                if not on_host:
                    check_device(t, node)
                type_text(t)
        self.values[node] = fn(self, node)

    def lower(self, gm: fx.GraphModule) -> str:
        output = None
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                v = _val(node)
                if host_scalar(v):
                    self.values[node] = _UNREAD_HOST_SCALAR   # a parameter once an op reads it
                elif _is_tensor(v) and v.device.type != torch._C._get_privateuse1_backend_name():
                    self.values[node] = None   # a CPU tensor no op may read
                elif _is_tensor(v):
                    self.values[node] = self.add_param(node, v)
                elif isinstance(v, (int, torch.SymInt)):
                    self.values[node] = v   # bound from the tensors' shapes, not passed
                    e = expr_of(v) if isinstance(v, torch.SymInt) else None
                    if getattr(e, "is_Symbol", False):
                        self.size_inputs.setdefault(str(e), node)
                else:
                    raise Unsupported(f"input {node.name} is a {type(v).__name__}")
            elif node.op == "output":
                output = node
            else:
                self.lower_node(node)
        if output is None:
            raise Unsupported("graph without output")
        outs = output.args[0]
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        rets, types = [], []
        for o in outs:
            if not isinstance(o, fx.Node) or not _is_tensor(_val(o)) or not isinstance(self.values.get(o), str):
                raise Unsupported(f"output {o} is not a tensor")
            view = InputView.of(o, self.param_nodes)
            if view is not None:
                # An input the partition hands on unchanged or through views only (an activation saved for the
                # backward, a transposed weight, a flattened gradient) is returned as that view of the input, as
                # the FX graph would, not copied into a program output.
                self.sources.append(view)
                continue
            v = self.values[o]
            if v in rets:
                # The same value twice (an output and its alias saved for the backward): one program output, one
                # buffer, where two outputs would copy it.
                self.sources.append(rets.index(v))
                continue
            self.sources.append(len(rets))
            rets.append(v)
            types.append(type_text(_val(o)))
        if not rets and not any(op == "index_copy_into" for op, _ in self.ops):
            raise Unsupported("nothing to compute: every output is an input")
        for sym in sorted((self.used - self.bound) & self.size_inputs.keys()):
            # A symbol that only a SymInt input gives: passed as an empty u8[v, 0] tensor (CompiledPartition makes
            # it per call), since AXIR binds symbols from the dimensions of tensor parameters.
            node = self.size_inputs[sym]
            n = self.name(f"{node.name}_size")
            self.params.append(f"{n}: u8[{sym}, 0]")
            self.param_nodes.append(node)
            self.bound.add(sym)
        if not self.params:
            raise Unsupported("no tensor inputs (the device comes from the inputs)")
        unbound = self.used - self.bound
        if unbound:
            raise UnboundSymbols(unbound, self.param_dims())
        return ("axir 1\n\nfunc @main(" + ", ".join(self.params) + ") -> (" + ", ".join(types) + ") {\n"
                + "\n".join(self.lines) + ("\n" if self.lines else "") + "  return " + ", ".join(rets) + "\n}\n")

    def param_dims(self) -> list:
        """The size expressions of the tensor parameters' dimensions that are not plain symbols or integers."""
        dims = []
        for node in self.param_nodes:
            if not _is_tensor(_val(node)):
                continue   # a SymInt carrier
            for d in _val(node).shape:
                e = expr_of(d)
                if not isinstance(e, int) and not e.is_Symbol and e not in dims:
                    dims.append(e)
        return dims

    def _param_names(self) -> set[str]:
        return {p.split(":")[0] for p in self.params}


# A 0-d CPU tensor input that no op has read yet (attention's Philox seed and offset are read by none).
_UNREAD_HOST_SCALAR = object()


def host_scalar(t) -> bool:
    """A 0-d CPU tensor (an optimizer's step count or bias correction when its state lives on the host): a program
    reads it as a 0-d tensor; each call copies the values to the device (graph.CompiledPartition)."""
    return _is_tensor(t) and t.device.type == "cpu" and t.dim() == 0 and not t.dtype.is_complex


def host_scalar_op(node: fx.Node) -> bool:
    """Arithmetic on host scalars alone (0-d CPU tensors in, one out: under dynamic=True the float attributes Dynamo
    passes as float64 inputs, cast to float32 before the device ops read them). Such a node may join a program, which
    computes it on the device from the scalars it is handed (graph.CompiledPartition copies them in), provided nothing
    outside the programs reads its result (partition.classify sees to that)."""
    if node.op != "call_function" or not host_scalar(node.meta.get("val")):
        return False
    operands = [a for a in (*node.args, *node.kwargs.values()) if isinstance(a, fx.Node)]
    return bool(operands) and all(host_scalar(_val(a)) for a in operands)


def check_device(t: torch.Tensor, node: fx.Node) -> None:
    if t.device.type != torch._C._get_privateuse1_backend_name():
        raise Unsupported(f"{node.name} is on {t.device}, not an axon device")


class InputView:
    """A graph output that view ops alone make from one of the graph's inputs (the input itself when there are
    none): it is computed eagerly from the call's arguments, which costs no copy, instead of being a program output.
    Views run as on real tensors (view as reshape: the real input's strides may differ from the traced ones)."""

    _EAGER = {aten.view.default: aten.reshape.default, aten._unsafe_view.default: aten.reshape.default}

    def __init__(self, chain: list[fx.Node], placeholders: list[fx.Node]):
        self.chain = chain                  # the view nodes, input first
        self.placeholders = placeholders    # all of the graph's placeholders, in order (the call's arguments)

    @staticmethod
    def of(o: fx.Node, params: list[fx.Node]) -> "InputView | None":
        chain = []
        n = o
        while n.op == "call_function" and (n.target in VIEW_OPS or n.target in IN_PLACE_OPS) and isinstance(
                n.args[0], fx.Node):
            if n.target not in IN_PLACE_OPS and any(a.op != "placeholder" for a in n.all_input_nodes
                                                    if a is not n.args[0]):
                return None   # a size computed inside the graph (an in-place op's other operands are not rerun)
            chain.append(n)
            n = n.args[0]
        if n.op != "placeholder" or n not in params:
            return None
        graph_placeholders = [p for p in n.graph.nodes if p.op == "placeholder"]
        return InputView([n] + chain[::-1], graph_placeholders)

    @property
    def source(self) -> fx.Node:
        return self.chain[0]

    def __call__(self, args) -> torch.Tensor:
        env = dict(zip(self.placeholders, args))
        for n in self.chain[1:]:
            if n.target in IN_PLACE_OPS:   # the program wrote it: the result is the input itself
                env[n] = env[n.args[0]]
                continue
            fn = self._EAGER.get(n.target, n.target)
            env[n] = fn(*fx.node.map_arg(n.args, env.__getitem__), **fx.node.map_arg(n.kwargs, env.__getitem__))
        return env[self.chain[-1]]


class UnboundSymbols(Unsupported):
    """Symbols that the partition's sizes use but no tensor input has as a whole dimension: AXIR could not bind them."""

    def __init__(self, unbound: set[str], param_dims: list):
        super().__init__(f"symbol(s) {', '.join(sorted(unbound))} not a whole dimension of any tensor input")
        self.unbound, self.param_dims = unbound, param_dims


def _whole_dim_substitution(e: UnboundSymbols) -> dict:
    """A fresh symbol for each input dimension whose expression holds an unbound symbol (`s55+s70` for a Hugging Face
    model's `hidden_states[:, -logits_to_keep:]` when Dynamo made logits_to_keep symbolic): the input's size then
    binds that symbol, and every size written from the same expression reads it. Sizes that use the unbound symbols
    in other ways stay unbound, and the partition runs eagerly as before."""
    subst = {}
    for dim in e.param_dims:
        if {str(s) for s in dim.free_symbols} & e.unbound:
            subst[dim] = sympy.Symbol(f"dyn{len(subst)}", integer=True, positive=True)
    return subst


def lower_graph(gm: fx.GraphModule) -> tuple[str, list[int], list]:
    """AXIR text for gm; the positions of gm's placeholders that are program inputs (the tensors, and SymInts whose
    symbol no tensor gives: CompiledPartition passes those as u8[v, 0] tensors); and per output of gm, the program
    output it is (an int k >= 0) or the InputView that makes it from the call's arguments."""
    L = Lowering()
    try:
        text = L.lower(gm)
    except UnboundSymbols as e:
        subst = _whole_dim_substitution(e)
        if not subst:
            raise
        with substituted(subst):
            L = Lowering()
            text = L.lower(gm)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return text, [placeholders.index(n) for n in L.param_nodes], L.sources


_OPERAND_DTYPE_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "isnan", "logical_not"}


def tier0_refusal(ops) -> str | None:
    """The first (op, dtype) that libaxon's compiler says tier 0 cannot run, as a reason; None if all can."""
    from torch_axon import _C

    for op, dt in ops:
        if not _C._compile_supports(op, dt):
            return f"tier 0 does not run {op} on {dt}"
    return None


def check_node(node: fx.Node) -> str | None:
    """None if node can be lowered on its own (operands as parameters) into ops tier 0 runs, else the reason."""
    try:
        L = Lowering(check_only=True)
        L.lower_node(node)
    except Unsupported as e:
        return str(e)
    except Exception as e:  # noqa: BLE001  (an unexpected argument form: not lowered, reason kept)
        return f"{type(e).__name__}: {e}"
    return tier0_refusal(L.ops)


# ---- helpers shared by the families ----

def _out(node: fx.Node) -> torch.Tensor:
    return node.meta["val"]


def _arg(node: fx.Node, i: int, name: str, default=None):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _wrap(d: int, rank: int) -> int:
    r = max(rank, 1)
    if not -r <= d < r:
        raise Unsupported(f"dim {d} out of range for rank {rank}")
    return d % r


def _static(d, what: str) -> int:
    if isinstance(d, torch.SymInt):
        e = d.node.expr
        if e.is_Integer:
            return int(e)
        raise Unsupported(f"{what} is symbolic ({e})")
    return int(d)


def _result_dtype(a, b) -> torch.dtype:
    return torch.result_type(_meta_like(_val(a)), _meta_like(_val(b)))


# ---- elementwise ----

def _unary(op: str, keep_input_dtype: bool = False):
    def lower(L: Lowering, n: fx.Node):
        out = _out(n)
        x = n.args[0]
        dt = _val(x).dtype if keep_input_dtype else out.dtype
        return L.emit1(op, [L.operand(x, dt)], {}, out, n.name)
    return lower


def _binary(op: str, kind: str = "arith"):
    """kind: arith (operands in the result dtype), compare (common dtype, bool result), logical (as bool)."""
    def lower(L: Lowering, n: fx.Node):
        out = _out(n)
        a, b = n.args[0], n.args[1]
        if kind == "compare":
            dt = _result_dtype(a, b)
        elif kind == "logical":
            dt = torch.bool
        else:
            dt = out.dtype
        va, vb = L.operand(a, dt), _scaled(L, b, dt, n.kwargs.get("alpha", 1))
        attrs = {}
        mode = n.kwargs.get("rounding_mode")
        if mode is not None:
            attrs["rounding_mode"] = mode
        return L.emit1(op, [va, vb], attrs, out, n.name)
    lower.broadcasts = True   # a 0-d operand gives the same result as a full one (_full relies on it)
    return lower


def _scaled(L: Lowering, b, dt: torch.dtype, alpha):
    """Operand b (a tensor node or a Python scalar) in dtype dt, times alpha unless alpha is 1 (add/sub's alpha)."""
    vb = L.operand(b, dt)
    if alpha == 1:
        return vb
    shape = _val(b).shape if isinstance(b, fx.Node) else []
    return L.emit("mul", [vb, L.const(alpha, dt, [])], {},
                  [f"{dtype_text(dt)}[{', '.join(dim_text(d) for d in shape)}]"])[0]


def _pow_scalar_base(L: Lowering, n: fx.Node):
    out = _out(n)
    return L.emit1("pow", [L.operand(n.args[0], out.dtype), L.operand(n.args[1], out.dtype)], {}, out, n.name)


def _where(L: Lowering, n: fx.Node):
    out = _out(n)
    c, a, b = n.args
    return L.emit1("where", [L.operand(c, torch.bool), L.operand(a, out.dtype), L.operand(b, out.dtype)], {}, out,
                   n.name)


def _clamp(L: Lowering, n: fx.Node):
    """clamp(x, lo, hi) = minimum(maximum(x, lo), hi), with either bound optional."""
    out = _out(n)
    lo, hi = _arg(n, 1, "min"), _arg(n, 2, "max")
    if lo is None and hi is None:
        raise Unsupported("clamp without bounds")
    x = L.operand(n.args[0], out.dtype)
    if lo is not None:
        x = L.emit1("maximum", [x, L.operand(lo, out.dtype)], {}, out, n.name if hi is None else None)
    if hi is not None:
        x = L.emit1("minimum", [x, L.operand(hi, out.dtype)], {}, out, n.name)
    return x


def _gelu(L: Lowering, n: fx.Node):
    out = _out(n)
    return L.emit1("gelu", [L.operand(n.args[0], out.dtype)], {"approximate": n.kwargs.get("approximate", "none")},
                   out, n.name)


def _convert(L: Lowering, n: fx.Node):
    out = _out(n)
    return L.emit1("cast", [L.tensor(n.args[0])], {}, out, n.name) if _val(n.args[0]).dtype != out.dtype else \
        L.emit1("contiguous", [L.tensor(n.args[0])], {}, out, n.name)


def _to_copy(L: Lowering, n: fx.Node):
    src, out = _val(n.args[0]), _out(n)
    if out.device != src.device or out.layout != torch.strided:
        raise Unsupported(f"_to_copy to {out.device}/{out.layout}")
    return _convert(L, n)


def _identity(L: Lowering, n: fx.Node):
    return L.tensor(n.args[0])


# ---- reductions ----

def _reduce(op: str, cast_input: bool = True, all_when_empty: bool = True):
    def lower(L: Lowering, n: fx.Node):
        x, out = _val(n.args[0]), _out(n)
        target = n.target
        if target in (aten.sum.default, aten.mean.default, aten.prod.default):
            dims, keepdim = None, False
        elif target == aten.prod.dim_int:
            dims, keepdim = [_arg(n, 1, "dim")], _arg(n, 2, "keepdim", False)
        else:
            dims, keepdim = _arg(n, 1, "dim"), _arg(n, 2, "keepdim", False)
        if dims is None or (all_when_empty and len(dims) == 0):
            dims = list(range(x.dim()))
        dims = sorted({_wrap(d, x.dim()) for d in dims}) if x.dim() else []
        v = L.tensor(n.args[0])
        if cast_input:
            v = L.cast(v, x, out.dtype)
        attrs = {"dims": dims, "keepdim": bool(keepdim)}
        if op == "var":
            c = n.kwargs.get("correction")
            attrs["correction"] = 1 if c is None else _static(c, "correction")
            if isinstance(attrs["correction"], float):
                raise Unsupported("fractional correction")
        return L.emit1(op, [v], attrs, out, n.name)
    return lower


def _any_all(kind: str):
    # any: a sum of the values as int64 is not 0; all: a sum of their negations is 0 (AXIR has no boolean reduction)
    def lower(L: Lowering, n: fx.Node):
        x, out = _val(n.args[0]), _out(n)
        dims = _arg(n, 1, "dim") if n.target not in (aten.any.default, aten.all.default) else None
        dims = [dims] if isinstance(dims, int) else dims
        keepdim = _arg(n, 2, "keepdim", False) if dims is not None else False
        dims = sorted({_wrap(d, x.dim()) for d in dims}) if dims and x.dim() else list(range(x.dim()))
        v = L.tensor(n.args[0])
        if x.dtype != torch.bool:
            v = L.emit("ne", [v, L.const(0, x.dtype, [])], {}, [L.type_of(torch.bool, x.shape)])[0]
        if kind == "all":
            v = L.emit("logical_not", [v], {}, [L.type_of(torch.bool, x.shape)])[0]
        v = L.emit("cast", [v], {}, [L.type_of(torch.int64, x.shape)])[0]
        kept = [1 if d in dims else s for d, s in enumerate(x.shape)] if keepdim else \
            [s for d, s in enumerate(x.shape) if d not in dims]
        total = L.emit("sum", [v], {"dims": dims, "keepdim": bool(keepdim)}, [L.type_of(torch.int64, kept)])[0]
        return L.emit1("ne" if kind == "any" else "eq", [total, L.const(0, torch.int64, [])], {}, out, n.name)
    return lower


def _isinf(L: Lowering, n: fx.Node):
    # |x| == inf (NaN compares unequal); integers are never infinite
    x, out = _val(n.args[0]), _out(n)
    if not x.dtype.is_floating_point:
        return L.const(False, torch.bool, L.dims_attr(list(out.shape)), n.name)
    a = L.emit("abs", [L.tensor(n.args[0])], {}, [type_text(x)])[0]
    return L.emit1("eq", [a, L.const(float("inf"), x.dtype, [])], {}, out, n.name)


def _copy(L: Lowering, n: fx.Node):
    # the functional copy(self, src): src broadcast to self's shape in self's dtype, as a new tensor
    out = _out(n)
    v = L.operand(n.args[1], out.dtype)
    if tuple(_val(n.args[1]).shape) != tuple(out.shape):
        v = L.emit("expand", [v], {"shape": L.dims_attr(list(out.shape))}, [type_text(out)])[0]
    return L.emit1("contiguous", [v], {}, out, n.name)


def _arg_reduce(op: str):
    def lower(L: Lowering, n: fx.Node):
        x, out = _val(n.args[0]), _out(n)
        dim, keepdim = _arg(n, 1, "dim"), _arg(n, 2, "keepdim", False)
        v = L.tensor(n.args[0])
        if dim is None:
            if keepdim:
                raise Unsupported(f"{op} over all dims with keepdim")
            numel = x.numel()
            v = L.emit("reshape", [v], {"shape": L.dims_attr([numel])},
                       [f"{dtype_text(x.dtype)}[{dim_text(numel)}]"])[0]
            dim = 0
        else:
            dim = _wrap(dim, x.dim())
        return L.emit1(op, [v], {"dim": dim, "keepdim": bool(keepdim)}, out, n.name)
    return lower


# ---- views and shapes ----

def _reshape(L: Lowering, n: fx.Node):
    out = _out(n)
    return L.emit1("reshape", [L.tensor(n.args[0])], {"shape": L.dims_attr(out.shape)}, out, n.name)


def _expand(L: Lowering, n: fx.Node):
    out = _out(n)
    return L.emit1("expand", [L.tensor(n.args[0])], {"shape": L.dims_attr(out.shape)}, out, n.name)


def _permute(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    dims = [_wrap(d, x.dim()) for d in n.args[1]]
    return L.emit1("permute", [L.tensor(n.args[0])], {"dims": dims}, _out(n), n.name)


def _transpose(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    if n.target == aten.t.default:
        d0, d1 = 0, 1
    else:
        d0, d1 = _wrap(n.args[1], x.dim()), _wrap(n.args[2], x.dim())
    if x.dim() < 2:
        return L.tensor(n.args[0])
    dims = list(range(x.dim()))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return L.emit1("permute", [L.tensor(n.args[0])], {"dims": dims}, _out(n), n.name)


def _slice_bounds(size, start, end, step) -> tuple[int, int]:
    size = _static(size, "sliced dimension")
    start = 0 if start is None else _static(start, "slice start")
    end = size if end is None else _static(end, "slice end")
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    if step < 1:
        raise Unsupported(f"slice step {step}")
    return start, end


_OPEN_END = 1 << 62   # an end at or past this is "to the end" (FX writes sys.maxsize), as AXIR's slice reads it


def _is_symbolic(d) -> bool:
    e = expr_of(d)
    return not (isinstance(e, int) or e.is_Integer)


def _symbolic_slice(size, start, end, step, out_size) -> tuple[int, int] | None:
    """The static bounds of a slice along a symbolic dim, when AXIR's slice gives exactly the traced result's size:
    AXIR takes the ends of a symbolic dim to be in range (docs/axir.md), so the bounds are kept only where its size
    formula equals the size the trace computed (under Dynamo's guards). An end equal to the dim itself is an open
    end. None where they differ or a bound is symbolic: an end that is another symbol (mask[..., :key_length]), a
    start past the end, clamping the trace resolved."""
    from torch.utils._sympy.functions import FloorDiv

    dim = expr_of(size)
    start = 0 if start is None else start
    if end is None or (isinstance(end, int) and end >= _OPEN_END) or (
            not isinstance(end, int) and expr_of(end) == dim):
        end = _OPEN_END
    if _is_symbolic(start) or _is_symbolic(end):
        return None
    start, end = int(expr_of(start)), int(expr_of(end))
    first = dim + start if start < 0 else sympy.Integer(start)
    last = dim if end >= _OPEN_END else dim + end if end < 0 else sympy.Integer(end)
    want = expr_of(out_size)

    def sized(last):
        length = last - first if step == 1 else FloorDiv(last - first + step - 1, step)
        return sympy.simplify(length - want) == 0

    if sized(last):
        return start, end
    # an end past the dim that the trace clamped to it (x[:, 2:100] under a guard that the dim is at most 100)
    return (start, _OPEN_END) if end >= 0 and sized(dim) else None


def _bound(a):
    """A slice bound as a value: a SymInt graph input (a sequence length Dynamo passes) by its traced SymInt."""
    if isinstance(a, fx.Node) and isinstance(a.meta.get("val"), (int, torch.SymInt)):
        return a.meta["val"]
    return a


def _slice(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    dim = _wrap(_arg(n, 1, "dim", 0), x.dim())
    step = _static(_arg(n, 4, "step", 1), "slice step")
    if _is_symbolic(x.shape[dim]):
        bounds = _symbolic_slice(x.shape[dim], _bound(_arg(n, 2, "start")), _bound(_arg(n, 3, "end")), step,
                                 _out(n).shape[dim])
        if bounds is None:
            raise Unsupported(f"slice bounds of the symbolic dimension {expr_of(x.shape[dim])} that AXIR's slice "
                              "would not size as traced")
        if bounds == (0, _OPEN_END) and step == 1:
            return L.tensor(n.args[0])   # the whole dim: the value itself
        start, end = bounds
    else:
        start, end = _slice_bounds(x.shape[dim], _arg(n, 2, "start"), _arg(n, 3, "end"), step)
    return L.emit1("slice", [L.tensor(n.args[0])], {"dim": dim, "start": start, "end": end, "step": step}, _out(n),
                   n.name)


def _slice_scatter(L: Lowering, n: fx.Node):
    # base with src written over base[start:end] along dim: the parts of base around the slice and src, joined by
    # cat (the backward of a slice, e.g. rotary embeddings' rotate_half, scatters into zeros this way)
    base = _val(n.args[0])
    dim = _wrap(_arg(n, 2, "dim", 0), base.dim())
    if _static(_arg(n, 5, "step", 1), "slice_scatter step") != 1:
        raise Unsupported("slice_scatter with a step other than 1")
    if _is_symbolic(base.shape[dim]):
        # over a whole symbolic dim (the backward of x[:, :] under dynamic=True) the result is src
        bounds = _symbolic_slice(base.shape[dim], _bound(_arg(n, 3, "start")), _bound(_arg(n, 4, "end")), 1,
                                 _val(n.args[1]).shape[dim])
        if bounds != (0, _OPEN_END):
            raise Unsupported(f"slice_scatter into part of the symbolic dimension {expr_of(base.shape[dim])}")
        return L.emit1("contiguous", [L.tensor(n.args[1])], {}, _out(n), n.name)
    start, end = _slice_bounds(base.shape[dim], _arg(n, 3, "start"), _arg(n, 4, "end"), 1)
    size = _static(base.shape[dim], "scattered dimension")
    b, parts = L.tensor(n.args[0]), []
    for lo, hi in ((0, start), (start, end), (end, size)):
        if hi <= lo:
            continue
        if (lo, hi) == (start, end):
            parts.append(L.tensor(n.args[1]))
            continue
        shape = list(base.shape)
        shape[dim] = hi - lo
        parts.append(L.emit("slice", [b], {"dim": dim, "start": lo, "end": hi, "step": 1},
                            [L.type_of(base.dtype, shape)])[0])
    if len(parts) == 1:
        return L.emit1("contiguous", parts, {}, _out(n), n.name)
    return L.emit1("cat", parts, {"dim": dim}, _out(n), n.name)


def _constant_pad(L: Lowering, n: fx.Node):
    # constant_pad_nd with pads >= 0: each padded dimension is cat(const, x, const) (a loss's labels padded with
    # ignore_index, for one); cropping (negative pads) runs eagerly
    x = _val(n.args[0])
    pads = [_static(p, "pad") for p in n.args[1]]
    value = _arg(n, 2, "value", 0)
    if any(p < 0 for p in pads):
        raise Unsupported("constant_pad_nd with a negative pad (cropping)")
    v, shape = L.tensor(n.args[0]), list(x.shape)
    pairs = [(x.dim() - 1 - i, pads[2 * i], pads[2 * i + 1]) for i in range(len(pads) // 2)]
    pairs = [p for p in pairs if p[1] or p[2]]
    for k, (dim, left, right) in enumerate(pairs):
        parts = []
        for amount in (left, None, right):
            if amount is None:
                parts.append(v)
            elif amount:
                shape_c = list(shape)
                shape_c[dim] = amount
                parts.append(L.const(value, x.dtype, shape_c))
        shape[dim] = shape[dim] + left + right
        if k == len(pairs) - 1:
            return L.emit1("cat", parts, {"dim": dim}, _out(n), n.name)
        v = L.emit("cat", parts, {"dim": dim}, [L.type_of(x.dtype, shape)])[0]
    return L.emit1("contiguous", [v], {}, _out(n), n.name)


def _select(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    dim = _wrap(n.args[1], x.dim())
    index = _static(n.args[2], "select index")
    if index < 0:
        index += _static(x.shape[dim], "selected dimension")
    return L.emit1("select", [L.tensor(n.args[0])], {"dim": dim, "index": index}, _out(n), n.name)


def _split(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    dim = _wrap(_arg(n, 2, "dim", 0), x.dim())
    outs = n.meta["val"]
    v = L.tensor(n.args[0])
    names, start = [], 0
    for i, o in enumerate(outs):
        size = _static(o.shape[dim], "split size")
        names.append(L.emit1("slice", [v], {"dim": dim, "start": start, "end": start + size, "step": 1}, o,
                             f"{n.name}.{i}"))
        start += size
    return names


def _squeeze(L: Lowering, n: fx.Node):
    x, out = _val(n.args[0]), _out(n)
    if n.target == aten.squeeze.default:
        dims = [i for i, d in enumerate(x.shape) if _static(d, "squeezed dimension") == 1]
    elif n.target == aten.squeeze.dim:
        dims = [_wrap(n.args[1], x.dim())]
    else:
        dims = [_wrap(d, x.dim()) for d in n.args[1]]
    # squeeze drops only the listed dims that have size 1; the others stay.
    dims = sorted({d for d in dims if x.dim() and _static(x.shape[d], "squeezed dimension") == 1})
    if not dims:
        return L.tensor(n.args[0])
    return L.emit1("squeeze", [L.tensor(n.args[0])], {"dims": dims}, out, n.name)


def _unsqueeze(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    dim = _wrap(n.args[1], x.dim() + 1)
    return L.emit1("unsqueeze", [L.tensor(n.args[0])], {"dim": dim}, _out(n), n.name)


# ---- copies and constants ----

def _clone(L: Lowering, n: fx.Node):
    return L.emit1("contiguous", [L.tensor(n.args[0])], {}, _out(n), n.name)


def _cat(L: Lowering, n: fx.Node):
    out = _out(n)
    tensors = n.args[0]
    dim = _wrap(_arg(n, 1, "dim", 0), out.dim())
    # PyTorch's cat skips 1-D tensors of size 0 whatever the other inputs' rank (the legacy empty form: a
    # DynamicCache starts as cat([tensor([]), keys])); they add nothing but their dtype to the result's.
    tensors = [t for t in tensors if not (_val(t).dim() == 1 and isinstance(_val(t).shape[0], int)
                                      and _val(t).shape[0] == 0 and out.dim() != 1)]
    if not tensors:
        raise Unsupported("cat of empty tensors only")
    for t in tensors:
        if _val(t).dim() != out.dim():
            raise Unsupported("cat of tensors of different ranks")
    return L.emit1("cat", [L.operand(t, out.dtype) for t in tensors], {"dim": dim}, out, n.name)


def _full(L: Lowering, n: fx.Node):
    out = _out(n)
    value = n.args[1] if n.target in (aten.full.default, aten.full_like.default) else n.args[0]
    shape = list(out.shape)
    L.dims_attr(shape)
    if isinstance(value, (torch.SymInt, torch.SymFloat, fx.Node)):
        raise Unsupported("fill value is symbolic")
    if _read_elementwise_only(n, out.shape):
        # Only elementwise ops of the same shape read it (an AdamW step's full_like lerp weights): a 0-d const that
        # they broadcast, not a buffer of the parameter's size filled and read on every call.
        return L.const(value, out.dtype, [], n.name)
    return L.const(value, out.dtype, shape, n.name)


def _empty(L: Lowering, n: fx.Node):
    # Uninitialized memory may hold anything, zeros included. The usual reader is a full_like that only takes its
    # shape (SiLU's backward: empty_permuted -> full_like(1) - sigmoid), and then the compiler drops this constant.
    out = _out(n)
    return L.const(0, out.dtype, L.dims_attr(list(out.shape)), n.name)


def _read_elementwise_only(n: fx.Node, shape) -> bool:
    """Whether every reader of n is a broadcasting elementwise op (lowering marked `broadcasts`) whose result where it
    reads n has n's shape, so that a 0-d n would give the same result."""
    for u in n.users:
        if u.op != "call_function" or not getattr(LOWERINGS.get(u.target), "broadcasts", False):
            return False
        v = _val(u)
        if isinstance(v, (list, tuple)):   # a foreach op: n at position i of a list argument makes output i
            at = [i for a in u.args if isinstance(a, (list, tuple)) for i, x in enumerate(a) if x is n]
            if not at or any(not _is_tensor(v[i]) or v[i].shape != shape for i in at) or n in u.args:
                return False
        elif not _is_tensor(v) or v.shape != shape:
            return False
    return bool(n.users)


def _arange(L: Lowering, n: fx.Node):
    out = _out(n)
    if n.target == aten.arange.default:
        start, step = 0, 1
    else:
        start, step = n.args[0], _arg(n, 2, "step", 1)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, step)):
        raise Unsupported("arange with non-integer or symbolic start/step")
    return L.emit1("iota", [], {"start": start, "step": step}, out, n.name)


# ---- library ops ----

def _matmul(op: str):
    def lower(L: Lowering, n: fx.Node):
        out = _out(n)
        return L.emit1(op, [L.operand(a, out.dtype) for a in n.args[:2]], {}, out, n.name)
    return lower


def _addmm(L: Lowering, n: fx.Node):
    out = _out(n)
    attrs = {}
    for k in ("alpha", "beta"):
        v = n.kwargs.get(k, 1)
        if isinstance(v, (torch.SymInt, torch.SymFloat)):
            raise Unsupported(f"symbolic {k}")
        if v != 1:
            attrs[k] = float(v)
    return L.emit1("addmm", [L.operand(a, out.dtype) for a in n.args[:3]], attrs, out, n.name)


def _softmax(op: str):
    def lower(L: Lowering, n: fx.Node):
        x = _val(n.args[0])
        if n.args[2] and x.dtype != torch.float32:
            raise Unsupported(f"{op} with half_to_float")
        return L.emit1(op, [L.tensor(n.args[0])], {"dim": _wrap(n.args[1], x.dim())}, _out(n), n.name)
    return lower


def _layer_norm(L: Lowering, n: fx.Node):
    x, shape, w, b, eps = n.args
    if w is None and b is not None:
        raise Unsupported("layer_norm with a bias but no weight")
    ops = [L.tensor(x)] + [L.tensor(a) for a in (w, b) if a is not None]
    return L.emit("layer_norm", ops, {"normalized_ndim": len(shape), "eps": float(eps)},
                  _results(L, n, [type_text(o) for o in n.meta["val"]]), n.name, nresults=3)


def _rms_norm(L: Lowering, n: fx.Node):
    x, shape, w, eps = n.args[0], n.args[1], _arg(n, 2, "weight"), _arg(n, 3, "eps")
    if eps is None:
        raise Unsupported("rms_norm without an explicit eps (the default depends on the dtype)")
    ops = [L.tensor(x)] + ([L.tensor(w)] if w is not None else [])
    return L.emit("rms_norm", ops, {"normalized_ndim": len(shape), "eps": float(eps)},
                  _results(L, n, [type_text(o) for o in n.meta["val"]]), n.name, nresults=2)


def _softmax_backward(op: str):
    def lower(L: Lowering, n: fx.Node):
        grad, out, dim, input_dtype = n.args
        y = _val(out)
        if input_dtype != y.dtype:
            raise Unsupported(f"{op} into another dtype ({input_dtype})")
        return L.emit1(op, [L.tensor(grad), L.tensor(out)], {"dim": _wrap(dim, y.dim())}, _out(n), n.name)
    return lower


def _results(L: Lowering, n: fx.Node, types: list[str]) -> list[str]:
    """The op's results named after n: its declared types (the gradients output_mask leaves out still get one)."""
    for t in n.meta["val"]:
        if _is_tensor(t):
            L._note_symbols(t)
    return types


def _norm_backward(op: str, nstats: int):
    """native_layer_norm_backward (grad, x, shape, mean, rstd, weight, ...) and _fused_rms_norm_backward (grad, x,
    shape, rstd, weight, ...): x's gradient, then one weight-shaped gradient per affine parameter. Each norm has as
    many affine parameters as statistics: layer norm 2 (mean, rstd; weight, bias), RMS norm 1 (rstd; weight)."""
    def lower(L: Lowering, n: fx.Node):
        grad, x, shape = n.args[:3]
        stats, w = n.args[3:3 + nstats], n.args[3 + nstats]
        xv = _val(x)
        param = L.type_of(xv.dtype, xv.shape[xv.dim() - len(shape):])
        ops = [L.tensor(a) for a in (grad, x, *stats)] + ([L.tensor(w)] if w is not None else [])
        return L.emit(op, ops, {"normalized_ndim": len(shape)}, _results(L, n, [type_text(xv)] + [param] * nstats),
                      n.name, nresults=1 + nstats)
    return lower


def _embedding_backward(L: Lowering, n: fx.Node):
    grad, indices, num_weights, padding_idx, scale_grad_by_freq = n.args[:5]
    if scale_grad_by_freq:
        raise Unsupported("embedding backward with scale_grad_by_freq")
    attrs = {"num_weights": _static(num_weights, "embedding's num_weights"), "padding_idx": int(padding_idx)}
    return L.emit1("embedding_backward", [L.tensor(grad), L.tensor(indices)], attrs, _out(n), n.name)


_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}   # at::Reduction


def _nll_attrs(x, target, reduction, ignore_index) -> dict:
    xv, tv = _val(x), _val(target)
    if xv.dim() not in (1, 2) or tv.dtype != torch.int64:
        raise Unsupported("nll_loss beyond [N, C] or [C] log-probabilities with int64 targets")
    return {"reduction": _REDUCTIONS[reduction], "ignore_index": int(ignore_index)}


def _nll_loss(L: Lowering, n: fx.Node):
    x, target, weight, reduction, ignore_index = n.args[:5]
    ops = [L.tensor(x), L.tensor(target)] + ([L.tensor(weight)] if weight is not None else [])
    return L.emit("nll_loss", ops, _nll_attrs(x, target, reduction, ignore_index),
                  _results(L, n, [type_text(t) for t in n.meta["val"]]), n.name, nresults=2)


def _nll_loss_backward(op: str):
    """nll_loss_backward (logp only gives the shape) and the fused cross-entropy backward (cross_entropy.py):
    (grad_output, logp, target, total_weight[, weight])."""
    def lower(L: Lowering, n: fx.Node):
        grad, x, target, weight, reduction, ignore_index, total_weight = n.args[:7]
        ops = [L.tensor(a) for a in (grad, x, target, total_weight)] + ([L.tensor(weight)] if weight is not None else [])
        return L.emit1(op, ops, _nll_attrs(x, target, reduction, ignore_index), _out(n), n.name)
    return lower


def _dropout(L: Lowering, n: fx.Node):
    """native_dropout in training: AXIR's dropout, whose `draw` (partition.py numbers them) fixes its place in the
    partition's Philox blocks, so that the mask is the one eager mode draws."""
    x, p, train = n.args[0], n.args[1], _arg(n, 2, "train")
    if train is False:
        raise Unsupported("native_dropout with train=False")
    if isinstance(p, (torch.SymFloat, torch.SymInt)):
        raise Unsupported("symbolic dropout probability")
    return L.emit("dropout", [L.tensor(x)], {"p": float(p), "draw": int(n.meta.get("axon_draw", 0))},
                  _results(L, n, [type_text(t) for t in n.meta["val"]]), n.name, nresults=2)


def _embedding(L: Lowering, n: fx.Node):
    return L.emit1("embedding", [L.tensor(n.args[0]), L.tensor(n.args[1])], {}, _out(n), n.name)


def _gather(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    return L.emit1("gather", [L.tensor(n.args[0]), L.tensor(n.args[2])], {"dim": _wrap(n.args[1], x.dim())},
                   _out(n), n.name)


def _index_select(L: Lowering, n: fx.Node):
    x = _val(n.args[0])
    return L.emit1("index_select", [L.tensor(n.args[0]), L.tensor(n.args[2])], {"dim": _wrap(n.args[1], x.dim())},
                   _out(n), n.name)


def _single_index(indices, op: str):
    """(dim, index node, its value) of an indices list that holds one 1-D integer tensor and None elsewhere."""
    given = [(d, i) for d, i in enumerate(indices) if i is not None]
    if len(given) != 1:
        raise Unsupported(f"{op} with more than one index tensor")
    dim, idx = given[0]
    iv = _val(idx)
    if not _is_tensor(iv) or iv.dim() != 1 or iv.dtype not in (torch.int64, torch.int32):
        raise Unsupported(f"{op} with an index that is not a 1-d integer tensor")
    return dim, idx, iv


def _index(L: Lowering, n: fx.Node):
    # x[..., idx] with one 1-D integer index tensor (the other positions None): index_select along its dimension,
    # with negative indices wrapped first as PyTorch's indexing does (index_select itself refuses them). Bool masks
    # (a data-dependent size), several index tensors and N-d indices run eagerly.
    x = _val(n.args[0])
    dim, idx, iv = _single_index(n.args[1], "index")
    i, ty = L.tensor(idx), type_text(iv)
    size = L.const(_static(x.shape[dim], "indexed dimension"), iv.dtype, [])
    neg = L.emit("lt", [i, L.const(0, iv.dtype, [])], {}, [L.type_of(torch.bool, iv.shape)])[0]
    wrapped = L.emit("where", [neg, L.emit("add", [i, size], {}, [ty])[0], i], {}, [ty])[0]
    return L.emit1("index_select", [L.tensor(n.args[0]), wrapped], {"dim": dim}, _out(n), n.name)


def _index_put_(L: Lowering, n: fx.Node):
    # x[..., idx] = v written into an input in place (mutation.py makes it from a static KV cache's index_copy_):
    # AXIR's index_copy_into, whose result is the input itself. Only a graph input that nothing else reads may be
    # written (the verifier's rule: no read of the old contents can then come after the write); one 1-D integer index
    # tensor with None elsewhere; values of exactly the indexed shape and x's dtype; no accumulate.
    dst, indices, values = n.args[0], n.args[1], n.args[2]
    accumulate = n.args[3] if len(n.args) > 3 else n.kwargs.get("accumulate", False)
    if accumulate:
        raise Unsupported("index_put_ with accumulate")
    if not isinstance(dst, fx.Node) or dst.op != "placeholder" or len(dst.users) != 1:
        raise Unsupported("index_put_ into a tensor that is not a graph input read by it alone")
    x, v = _val(dst), _val(values)
    dim, idx, iv = _single_index(indices, "index_put_")
    want = list(x.shape[:dim]) + [iv.shape[0]] + list(x.shape[dim + 1:])
    if not _is_tensor(v) or v.dtype != x.dtype or len(v.shape) != len(want) or any(
            expr_of(a) != expr_of(b) for a, b in zip(v.shape, want)):
        raise Unsupported("index_put_ whose values are not exactly the indexed shape in the input's dtype")
    return L.emit1("index_copy_into", [L.tensor(dst), L.tensor(idx), L.tensor(values)], {"dim": dim}, _out(n), n.name)


def _sdpa_mask(L: Lowering, q, mask) -> list[str]:
    if mask is None:
        return []
    return [L.operand(mask, _val(q).dtype) if _val(mask).dtype != torch.bool else L.tensor(mask)]


def _sdpa(L: Lowering, n: fx.Node):
    """The fused attention op: `sdpa` for its output alone (inference), `sdpa_lse` when the log-sum-exp is read too
    (training saves it for the backward). Its Philox seed and offset (outputs 6 and 7, which training also saves for
    the backward) are 0 without dropout, as the eager op returns them (`const` values here); with dropout the op takes
    its `draw` (partition.py numbers the partition's draws) and `philox_state` gives that draw's seed and offset."""
    q, k, v = n.args[:3]
    mask = _arg(n, 3, "attn_bias")
    dropout = _arg(n, 4, "dropout_p", 0.0)
    causal = _arg(n, 5, "is_causal", False)
    debug = _arg(n, 6, "return_debug_mask", False)
    scale = n.kwargs.get("scale")
    if debug:
        raise Unsupported("attention with a debug mask")
    if isinstance(dropout, (torch.SymFloat, torch.SymInt)):
        raise Unsupported("symbolic dropout probability")
    used = set()
    for user in n.users:
        if user.target is not operator.getitem or user.args[1] not in (0, 1, 6, 7):
            raise Unsupported("attention whose sequence-length or debug outputs are read")
        used.add(user.args[1])
    attrs = {"is_causal": bool(causal), "dropout_p": float(dropout)}
    if dropout:
        attrs["draw"] = int(n.meta.get("axon_draw", 0))
    if scale is not None:
        attrs["scale"] = float(scale)
    ops = [L.tensor(q), L.tensor(k), L.tensor(v)] + _sdpa_mask(L, q, mask)
    vals = n.meta["val"]
    if dropout and used & {6, 7}:
        state = L.emit("philox_state", [], {"draw": attrs["draw"]}, ["i64[]", "i64[]"], f"{n.name}.rng", nresults=2)
        rng = [r if i in used else None for r, i in zip(state, (6, 7))]
    else:
        rng = [L.const(0, torch.int64, [], f"{n.name}.{i}") if i in used else None for i in (6, 7)]
    rest = [None] * 4 + rng + [None] * (len(vals) - 8)
    if 1 not in used:
        return [L.emit1("sdpa", ops, attrs, vals[0], n.name), None] + rest
    for t in vals[:2]:
        L._note_symbols(t)
    return L.emit("sdpa_lse", ops, attrs, [type_text(vals[0]), type_text(vals[1])], n.name, nresults=2) + rest


def _sdpa_backward(L: Lowering, n: fx.Node):
    """The fused attention's backward: sdpa_backward(dout, q, k, v, out, lse[, mask][, seed, offset]) -> dq, dk, dv
    (no gradient for the mask). With dropout it takes the forward's Philox seed and offset, 0-d int64 tensors, and
    draws the forward's decisions again from them when it runs."""
    dout, q, k, v, mask, grad_mask, out, lse = n.args[:8]
    dropout, causal = _arg(n, 12, "dropout_p", 0.0), _arg(n, 13, "is_causal", False)
    seed, offset = _arg(n, 14, "philox_seed"), _arg(n, 15, "philox_offset")
    scale = n.kwargs.get("scale")
    if isinstance(dropout, (torch.SymFloat, torch.SymInt)):
        raise Unsupported("symbolic dropout probability")
    if mask is not None and len(grad_mask) > 3 and grad_mask[3]:
        raise Unsupported("the gradient of an attention mask")
    vals = n.meta["val"]
    if any(i < 3 and not _is_tensor(t) for i, t in enumerate(vals)):
        raise Unsupported("attention backward without all of dq, dk, dv")
    attrs = {"is_causal": bool(causal)}
    if scale is not None:
        attrs["scale"] = float(scale)
    ops = [L.tensor(a) for a in (dout, q, k, v, out, lse)] + _sdpa_mask(L, q, mask)
    if dropout:
        attrs["dropout_p"] = float(dropout)
        ops += [L.operand(seed, torch.int64), L.operand(offset, torch.int64)]
    for t in vals[:3]:
        L._note_symbols(t)
    grads = L.emit("sdpa_backward", ops, attrs, [type_text(t) for t in vals[:3]], n.name, nresults=3)
    return grads + [None] * (len(vals) - 3)


# ---- foreach (optimizer steps): each list op becomes one op per tensor, which the fuse pass then joins per tensor
# across the whole step (Adam's dozen list ops become one kernel per parameter) ----

def _foreach_outputs(n: fx.Node) -> list:
    outs = n.meta.get("val")
    if not isinstance(outs, (list, tuple)) or not all(_is_tensor(o) for o in outs):
        raise Unsupported("foreach op without tensor-list metadata")
    return list(outs)


def _foreach_item(arg, i: int):
    """Element i of a list argument (Tensor[] or Scalar[]), or the argument itself (a Scalar or a Tensor)."""
    return arg[i] if isinstance(arg, (list, tuple)) else arg


def _foreach_binary(op: str):
    """_foreach_<op>.List / .Scalar / .ScalarList / .Tensor: op(self[i], other[i] or other), alpha scaling other."""
    def lower(L: Lowering, n: fx.Node):
        alpha = n.kwargs.get("alpha", 1)
        names = []
        for i, o in enumerate(_foreach_outputs(n)):
            va = L.operand(n.args[0][i], o.dtype)
            vb = _scaled(L, _foreach_item(n.args[1], i), o.dtype, alpha)
            names.append(L.emit1(op, [va, vb], {}, o, f"{n.name}.{i}"))
        return names
    lower.broadcasts = True
    return lower


def _foreach_unary(op: str):
    def lower(L: Lowering, n: fx.Node):
        return [L.emit1(op, [L.operand(n.args[0][i], o.dtype)], {}, o, f"{n.name}.{i}")
                for i, o in enumerate(_foreach_outputs(n))]
    return lower


def _foreach_pow_scalar_base(L: Lowering, n: fx.Node):
    """_foreach_pow.ScalarAndTensor(base, exponents): base ** exponent[i] (Adam's bias corrections)."""
    return [L.emit1("pow", [L.const(n.args[0], o.dtype, []), L.operand(n.args[1][i], o.dtype)], {}, o,
                    f"{n.name}.{i}") for i, o in enumerate(_foreach_outputs(n))]


def _foreach_addc(op: str):
    """_foreach_addcmul / _foreach_addcdiv .Scalar and .ScalarList: self + value * t1 (op) t2, in PyTorch's CPU
    order of operations ((value * t1) op t2, then the add)."""
    def lower(L: Lowering, n: fx.Node):
        value = _arg(n, 3, "scalars" if n.target._overloadname == "ScalarList" else "value", 1)
        if isinstance(value, fx.Node):
            raise Unsupported("addcmul/addcdiv with a tensor of values")
        names = []
        for i, o in enumerate(_foreach_outputs(n)):
            dt = o.dtype
            t1 = L.operand(n.args[1][i], dt)
            v = _foreach_item(value, i)
            if v != 1:
                t1 = L.emit1("mul", [L.const(v, dt, []), t1], {}, o)
            q = L.emit1(op, [t1, L.operand(n.args[2][i], dt)], {}, o)
            names.append(L.emit1("add", [L.operand(n.args[0][i], dt), q], {}, o, f"{n.name}.{i}"))
        return names
    lower.broadcasts = True
    return lower


def _foreach_lerp_scalar(L: Lowering, n: fx.Node):
    """_foreach_lerp.Scalar(self, end, weight): PyTorch's two-sided formula, chosen here since weight is a number:
    self + w (end - self) for |w| < 0.5, else end - (end - self) (1 - w)."""
    w = _arg(n, 2, "weight", None)
    if not isinstance(w, (int, float)) or isinstance(w, bool):
        raise Unsupported("lerp with a symbolic weight")
    names = []
    for i, o in enumerate(_foreach_outputs(n)):
        dt = o.dtype
        a, b = L.operand(n.args[0][i], dt), L.operand(n.args[1][i], dt)
        diff = L.emit1("sub", [b, a], {}, o)
        if abs(w) < 0.5:
            names.append(L.emit1("add", [a, L.emit1("mul", [L.const(w, dt, []), diff], {}, o)], {}, o,
                                 f"{n.name}.{i}"))
        else:
            names.append(L.emit1("sub", [b, L.emit1("mul", [diff, L.const(1 - w, dt, [])], {}, o)], {}, o,
                                 f"{n.name}.{i}"))
    return names


# ---- the table ----

LOWERINGS: dict[object, Callable[[Lowering, fx.Node], object]] = {}

for _name in ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
              "tanh", "sigmoid", "relu", "silu", "erf", "reciprocal", "floor", "ceil", "trunc", "sign",
              "bitwise_not"]:
    LOWERINGS[getattr(aten, _name).default] = _unary(_name)
LOWERINGS[aten.round.default] = _unary("round")
LOWERINGS[aten.logical_not.default] = _unary("logical_not", keep_input_dtype=True)
LOWERINGS[aten.isnan.default] = _unary("isnan", keep_input_dtype=True)
LOWERINGS[aten.gelu.default] = _gelu

for _name, _kind in [("add", "arith"), ("sub", "arith"), ("mul", "arith"), ("div", "arith"), ("remainder", "arith"),
                     ("fmod", "arith"), ("bitwise_and", "arith"), ("bitwise_or", "arith"), ("bitwise_xor", "arith"),
                     ("eq", "compare"), ("ne", "compare"), ("lt", "compare"), ("le", "compare"), ("gt", "compare"),
                     ("ge", "compare")]:
    _packet = getattr(aten, _name)
    for _ov in ("Tensor", "Scalar"):
        if hasattr(_packet, _ov):
            LOWERINGS[getattr(_packet, _ov)] = _binary(_name, _kind)
LOWERINGS[aten.true_divide.Tensor] = _binary("div", "arith")   # div without a rounding mode, by its older name
LOWERINGS[aten.true_divide.Scalar] = _binary("div", "arith")
LOWERINGS[aten.div.Tensor_mode] = _binary("div")
LOWERINGS[aten.div.Scalar_mode] = _binary("div")
LOWERINGS[aten.pow.Tensor_Tensor] = _binary("pow")
LOWERINGS[aten.pow.Tensor_Scalar] = _binary("pow")
LOWERINGS[aten.pow.Scalar] = _pow_scalar_base
LOWERINGS[aten.maximum.default] = _binary("maximum")
LOWERINGS[aten.minimum.default] = _binary("minimum")
LOWERINGS[aten.atan2.default] = _binary("atan2")
LOWERINGS[aten.logical_and.default] = _binary("logical_and", "logical")
LOWERINGS[aten.logical_or.default] = _binary("logical_or", "logical")
LOWERINGS[aten.where.self] = _where
LOWERINGS[aten.clamp.default] = _clamp
LOWERINGS[aten.clamp.Tensor] = _clamp
LOWERINGS[prims.convert_element_type.default] = _convert
LOWERINGS[aten._to_copy.default] = _to_copy

LOWERINGS[aten.sum.dim_IntList] = _reduce("sum")
LOWERINGS[aten.sum.default] = _reduce("sum")
LOWERINGS[aten.mean.dim] = _reduce("mean")
LOWERINGS[aten.mean.default] = _reduce("mean")
LOWERINGS[aten.prod.dim_int] = _reduce("prod")
LOWERINGS[aten.prod.default] = _reduce("prod")
LOWERINGS[aten.amax.default] = _reduce("amax", cast_input=False)
LOWERINGS[aten.amin.default] = _reduce("amin", cast_input=False)
LOWERINGS[aten.var.correction] = _reduce("var")
LOWERINGS[aten.argmax.default] = _arg_reduce("argmax")
LOWERINGS[aten.argmin.default] = _arg_reduce("argmin")

LOWERINGS[aten.view.default] = _reshape
LOWERINGS[aten._unsafe_view.default] = _reshape
LOWERINGS[aten.reshape.default] = _reshape
LOWERINGS[aten.expand.default] = _expand
LOWERINGS[aten.permute.default] = _permute
LOWERINGS[aten.t.default] = _transpose
LOWERINGS[aten.transpose.int] = _transpose
LOWERINGS[aten.slice.Tensor] = _slice
LOWERINGS[aten.select.int] = _select
LOWERINGS[aten.split_with_sizes.default] = _split
LOWERINGS[aten.split.Tensor] = _split
LOWERINGS[aten.squeeze.default] = _squeeze
LOWERINGS[aten.squeeze.dim] = _squeeze
LOWERINGS[aten.squeeze.dims] = _squeeze
LOWERINGS[aten.unsqueeze.default] = _unsqueeze
LOWERINGS[aten.alias.default] = _identity
LOWERINGS[aten.detach.default] = _identity

for _ov in ("default", "dim", "dims"):
    if hasattr(aten.any, _ov):
        LOWERINGS[getattr(aten.any, _ov)] = _any_all("any")
    if hasattr(aten.all, _ov):
        LOWERINGS[getattr(aten.all, _ov)] = _any_all("all")
LOWERINGS[aten.isinf.default] = _isinf

LOWERINGS[aten.clone.default] = _clone
LOWERINGS[aten.copy.default] = _copy
LOWERINGS[aten.lift_fresh_copy.default] = _clone   # a tensor constant made in forward (torch.tensor(...) in a model)
LOWERINGS[aten.cat.default] = _cat
LOWERINGS[aten.slice_scatter.default] = _slice_scatter
LOWERINGS[aten.constant_pad_nd.default] = _constant_pad
LOWERINGS[aten.full.default] = _full
LOWERINGS[aten.scalar_tensor.default] = _full
LOWERINGS[aten.full_like.default] = _full
LOWERINGS[aten.empty_permuted.default] = _empty
LOWERINGS[aten.empty.memory_format] = _empty
LOWERINGS[aten.arange.default] = _arange
LOWERINGS[aten.arange.start_step] = _arange

LOWERINGS[aten.mm.default] = _matmul("mm")
LOWERINGS[aten.bmm.default] = _matmul("bmm")
LOWERINGS[aten.addmm.default] = _addmm
LOWERINGS[aten._softmax.default] = _softmax("softmax")
LOWERINGS[aten._log_softmax.default] = _softmax("log_softmax")
LOWERINGS[aten.native_layer_norm.default] = _layer_norm
if hasattr(aten, "_fused_rms_norm"):
    LOWERINGS[aten._fused_rms_norm.default] = _rms_norm
LOWERINGS[aten.embedding.default] = _embedding
LOWERINGS[aten.gather.default] = _gather
LOWERINGS[aten.index_select.default] = _index_select
LOWERINGS[aten.index.Tensor] = _index
LOWERINGS[aten.index_put_.default] = _index_put_
LOWERINGS[aten._scaled_dot_product_fused_attention_overrideable.default] = _sdpa
LOWERINGS[aten._scaled_dot_product_fused_attention_overrideable_backward.default] = _sdpa_backward
LOWERINGS[aten._softmax_backward_data.default] = _softmax_backward("softmax_backward")
LOWERINGS[aten._log_softmax_backward_data.default] = _softmax_backward("log_softmax_backward")
LOWERINGS[aten.native_layer_norm_backward.default] = _norm_backward("layer_norm_backward", 2)
if hasattr(aten, "_fused_rms_norm_backward"):
    LOWERINGS[aten._fused_rms_norm_backward.default] = _norm_backward("rms_norm_backward", 1)
LOWERINGS[aten.embedding_dense_backward.default] = _embedding_backward
LOWERINGS[aten.nll_loss_forward.default] = _nll_loss
LOWERINGS[aten.nll_loss_backward.default] = _nll_loss_backward("nll_loss_backward")
LOWERINGS[torch.ops.axon.nll_loss_log_softmax_backward.default] = _nll_loss_backward("nll_loss_log_softmax_backward")
LOWERINGS[aten.native_dropout.default] = _dropout

for _name in ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]:
    _packet = getattr(aten, "_foreach_" + _name)
    for _ov in ("List", "Scalar", "ScalarList", "Tensor"):
        if hasattr(_packet, _ov):
            LOWERINGS[getattr(_packet, _ov)] = _foreach_binary(_name)
for _name in ["neg", "abs", "exp", "log", "sqrt", "reciprocal", "sigmoid", "tanh", "sign"]:
    LOWERINGS[getattr(aten, "_foreach_" + _name).default] = _foreach_unary(_name)
LOWERINGS[aten._foreach_pow.ScalarAndTensor] = _foreach_pow_scalar_base
for _name in ["addcmul", "addcdiv"]:
    for _ov in ("Scalar", "ScalarList"):
        LOWERINGS[getattr(getattr(aten, "_foreach_" + _name), _ov)] = _foreach_addc("mul" if _name == "addcmul" else "div")
LOWERINGS[aten._foreach_lerp.Scalar] = _foreach_lerp_scalar

# Ops whose result may share memory with an operand: a graph output reached through these only is computed eagerly,
# so that aot_autograd sees the aliasing it traced (a program's outputs are always fresh buffers).
# Ops whose result is their first argument, written by the program (InputView hands it on uncopied).
IN_PLACE_OPS = {aten.index_put_.default}
VIEW_OPS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.expand.default,
            aten.permute.default, aten.t.default, aten.transpose.int, aten.slice.Tensor, aten.select.int,
            aten.split_with_sizes.default, aten.split.Tensor, aten.squeeze.default, aten.squeeze.dim,
            aten.squeeze.dims, aten.unsqueeze.default, aten.alias.default, aten.detach.default, operator.getitem}

del _name, _kind, _packet, _ov

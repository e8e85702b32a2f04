"""The graph compiler that aot_autograd calls for each forward, backward and inference graph:
classify nodes -> partition -> lower each partition to AXIR -> libaxon's compiler -> a CompiledPartition module in
place of the partition's FX submodule. A partition that does not lower or compile stays an FX submodule and runs
eagerly on axon (with its reason logged, dumped and counted); an unexpected error anywhere leaves the whole graph
eager. Nothing here computes tensor values: programs run in C, eager parts through ATen on axon."""

from __future__ import annotations

import collections
import dataclasses
import logging
import threading

import torch
import torch.fx as fx
from torch_axon import _C

from . import counters
from .dump import Dump
from .lower import Unsupported, host_scalar, lower_graph
from .cross_entropy import fuse_cross_entropy_backward
from .mutation import write_mutations_in_place
from .partition import classify, partition

log = logging.getLogger("torch_axon.compile")
aten = torch.ops.aten
_SDPA_BACKWARD = aten._scaled_dot_product_fused_attention_overrideable_backward.default

__all__ = ["compile_graph", "CompiledPartition", "GraphReport", "tier1_groups"]


@dataclasses.dataclass
class PartitionReport:
    name: str
    ops: list[str]
    compiled: bool
    reason: str | None = None


@dataclasses.dataclass
class GraphReport:
    """What one graph compile did: its partitions and every node left to run eagerly, with the reason."""
    kind: str
    partitions: list[PartitionReport] = dataclasses.field(default_factory=list)
    eager_nodes: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # (node, op, reason)
    error: str | None = None


class CompiledPartition(torch.nn.Module):
    """A partition compiled into a libaxon program: each call is one C call (prepare, allocate, run on the current
    stream). Non-tensor inputs (SymInt sizes) are not passed: the program binds its symbols from tensor shapes."""

    def __init__(self, name: str, program, tensor_positions: list[int], sources: list, single: bool,
                 eager: fx.GraphModule):
        super().__init__()
        self.name = name
        self.program = program
        self.tensor_positions = tensor_positions
        self.sources = sources           # per output: program output k, or the lower.InputView that makes it
        self.remap = sources != list(range(len(sources)))
        self.single = single
        self.eager = eager   # the partition's FX graph, for dumps and explain
        # 0-d CPU inputs (lower.host_scalar), grouped by dtype once here: [(dtype, [input index, ...])]
        vals = [v.meta.get("val") for v in eager.graph.nodes if v.op == "placeholder"]
        host: dict[torch.dtype, list[int]] = {}
        for k, i in enumerate(tensor_positions):
            if host_scalar(vals[i]):
                host.setdefault(vals[i].dtype, []).append(k)
        self.host_scalars = list(host.items())
        # SymInt inputs whose symbol no tensor input has as a dimension: passed as empty u8[v, 0] tensors
        self.size_carriers = [k for k, i in enumerate(tensor_positions) if not isinstance(vals[i], torch.Tensor)]
        self.device_input = next((k for k, i in enumerate(tensor_positions)
                                  if isinstance(vals[i], torch.Tensor) and not host_scalar(vals[i])), -1)
        # The Philox seed and offset an attention backward takes: traced as device tensors, but on the host when the
        # forward's attention ran eagerly (the eager op returns them so): such inputs go to the device at call time.
        placeholders = [v for v in eager.graph.nodes if v.op == "placeholder"]
        philox = {a for v in eager.graph.nodes if v.target == _SDPA_BACKWARD for a in v.args[14:16]}
        self.philox_inputs = [k for k, i in enumerate(tensor_positions) if placeholders[i] in philox]

    def forward(self, *args):
        counters.bump("program_calls")
        inputs = [args[i] for i in self.tensor_positions]
        if self.size_carriers:
            device = inputs[self.device_input].device if self.device_input >= 0 else _current_axon_device()
            for k in self.size_carriers:
                inputs[k] = torch.empty((int(inputs[k]), 0), dtype=torch.uint8, device=device)
        if self.host_scalars:
            _host_scalars_to_device(inputs, self.host_scalars, self.device_input)
        if self.philox_inputs:
            on_host = [k for k in self.philox_inputs if inputs[k].device.type == "cpu"]
            if on_host:
                _host_scalars_to_device(inputs, [(torch.int64, on_host)], self.device_input)
        outs = _C._program_run(self.program, inputs)
        if self.remap:
            outs = [outs[s] if isinstance(s, int) else s(args) for s in self.sources]
        return outs[0] if self.single else tuple(outs)

    # Called from the partitioned graph's code once per run: straight to forward, without nn.Module's hook
    # machinery (no hooks are ever registered on a partition; 4 Python frames a call).
    __call__ = forward


def boxed(gm: fx.GraphModule):
    """What aot_autograd calls for a compiled graph: gm's generated code, called with one list of arguments. It calls
    gm.forward itself, not gm: GraphModule's __call__ and nn.Module's add 4 Python frames a call (hooks and traceback
    decoration, unused here). __wrapped__ is gm, as functools.wraps would set it (precompile saves it)."""
    forward = gm.forward

    def run(args):
        return forward(*args)

    run._boxed_call = True
    run.__wrapped__ = gm
    return run


def _current_axon_device() -> torch.device:
    return torch.device(torch._C._get_privateuse1_backend_name(), torch.accelerator.current_device_index())


def _host_scalars_to_device(inputs: list, groups: list, device_input: int) -> None:
    """Replaces the 0-d CPU tensors of groups ([(dtype, input indices)]: an optimizer's step counts and bias
    corrections, lower.host_scalar) by device scalars: their values are read now (a CPU tensor's value is at hand)
    and go to the device in one copy per dtype, in stream order with the program that reads them. The staging tensor
    is pinned, so the copy is queued and the host does not wait for the stream's earlier work (a pageable one would)."""
    device = inputs[device_input].device
    for dtype, ks in groups:
        values = torch.tensor([inputs[k].item() for k in ks], dtype=dtype, pin_memory=True).to(device,
                                                                                              non_blocking=True)
        for j, k in enumerate(ks):
            inputs[k] = values[j]


# Programs by AXIR text: recompiles (a new batch size without dynamic shapes, forward graphs seen again) reuse them.
_cache: collections.OrderedDict[str, object] = collections.OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 256


def _compile_text(text: str):
    with _cache_lock:
        prog = _cache.get(text)
        if prog is not None:
            _cache.move_to_end(text)
            return prog
    prog = _C._compile(text)
    counters.bump("programs")
    with _cache_lock:
        _cache[text] = prog
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return prog


def tier1_groups(wait: bool = False) -> int:
    """How many fused groups of the compiled programs run as tier-1 generated C now; with wait, after every program's
    tier-1 compile has finished (AXON_COMPILE_SYNC=1 makes compiles finish before the first run instead)."""
    with _cache_lock:
        programs = list(_cache.values())
    total = 0
    for prog in programs:
        try:
            total += _C._program_tier1_ready(prog, wait)
        except RuntimeError:
            pass   # no fused group, no C compiler or a failed compile: tier 0 runs that program's groups
    return total


def _eager_rewrites(gm: fx.GraphModule) -> None:
    """Rewrites the nodes that run eagerly.
    - Eager nodes run on real tensors whose strides may differ from the fake ones traced (a kernel's meta function
      and its axon kernel need not agree on output layout): reshape is view where view works, a copy where not.
    - prims.convert_element_type (what the decompositions make of a cast: the host's scalar arithmetic on symbolic
      sizes under dynamic=True, a dozen and more per call) runs eagerly through its Python implementation, 20 us a
      call against 3.4 for aten._to_copy, which makes the same dense copy."""
    for n in gm.graph.nodes:
        if n.op != "call_function":
            continue
        if n.target in (aten.view.default, aten._unsafe_view.default):
            n.target = aten.reshape.default
        elif n.target is torch.ops.prims.convert_element_type.default:
            n.target = aten._to_copy.default
            n.kwargs = {"dtype": n.args[1]}
            n.args = (n.args[0],)
    gm.recompile()


def _ops(gm: fx.GraphModule) -> list[str]:
    return [f"{n.name}={n.target}" for n in gm.graph.nodes if n.op == "call_function"]


def _single_output(gm: fx.GraphModule) -> bool:
    out = next(n for n in gm.graph.nodes if n.op == "output")
    return not isinstance(out.args[0], (tuple, list))


def _num_user_outputs(kind: str) -> int | None:
    """How many leading outputs of this graph the user (through aot_autograd's alias handling) sees: for forward and
    inference graphs the mutated inputs, outputs and intermediate bases (not the activations saved for backward);
    none for backward graphs (gradients carry no aliasing contract). None if unknown: then all of them."""
    if kind == "backward":
        return 0
    ctx = torch._guards.TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    n = getattr(meta, "num_forward_returns", None)
    return n if isinstance(n, int) else None


def compile_graph(gm: fx.GraphModule, example_inputs, kind: str = "forward", reports: list | None = None):
    """aot_autograd's fw/bw/inference compiler: returns a boxed callable running gm with its partitions compiled."""
    counters.bump("graphs")
    report = GraphReport(kind)
    if reports is not None:
        reports.append(report)
    dump = Dump(kind)
    dump.graph("graph.py", gm)
    try:
        if kind == "inference":
            write_mutations_in_place(gm)
        if kind == "backward":
            fuse_cross_entropy_backward(gm)
        verdict = classify(gm, _num_user_outputs(kind))
        fused, names = partition(gm, verdict)
        for name in names:
            sub = getattr(fused, name)
            counters.bump("partitions")
            dump.graph(f"{name}.fx.py", sub)
            try:
                text, positions, sources = lower_graph(sub)
                dump.write(f"{name}.axir", text)
                program = _compile_text(text)
            except Exception as e:  # noqa: BLE001  (Unsupported, the compiler's located diagnostic, or a lowering gap)
                reason = str(e) if isinstance(e, Unsupported) else f"{type(e).__name__}: {e}"
                counters.bump("eager_partitions")
                log.info("axon compile: %s partition %s runs eagerly: %s", kind, name, reason)
                dump.write(f"{name}.eager.txt", reason + "\n")
                _eager_rewrites(sub)
                report.partitions.append(PartitionReport(name, _ops(sub), False, reason))
                continue
            if dump.dir is not None:
                dump.write(f"{name}.passes.axir", _C._program_text(program))
            setattr(fused, name, CompiledPartition(name, program, positions, sources, _single_output(sub), sub))
            report.partitions.append(PartitionReport(name, _ops(sub), True))
        by_name = {n.name: why for n, why in verdict.items()}
        for n in fused.graph.nodes:
            if n.op == "call_function":
                why = by_name.get(n.name) or "view or getitem outside the partitions (free eagerly)"
                report.eager_nodes.append((n.name, str(n.target), why))
        _eager_rewrites(fused)
        dump.graph("partitioned.py", fused)
        return boxed(fused)
    except Exception as e:  # noqa: BLE001  (never a whole-graph failure: the graph runs eagerly on axon)
        counters.bump("eager_graphs")
        report.error = f"{type(e).__name__}: {e}"
        log.warning("axon compile: %s graph runs eagerly after an error: %s", kind, report.error, exc_info=True)
        dump.write("error.txt", report.error + "\n")
        return boxed(gm)

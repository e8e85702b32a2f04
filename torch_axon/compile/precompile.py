"""Warm start for torch.compile(backend="axon"): a process whose compile cache already holds a model's entry skips
Dynamo's bytecode tracing and aot_autograd and rebuilds the compiled model from disk (docs/compile.md, "Warm start").

Opt-in (AXON_WARM_START=1, or enable()), because it rides on PyTorch's experimental caching precompile
(torch._dynamo.config.caching_precompile): Dynamo records each compiled frame (its bytecode, guards and the names of
its compiled functions) in a package keyed by the function's name and first line, and aot_autograd, given a
forward compiler that returns an OutputCode, bundles the compiled graphs with its runtime wrappers. The axon
compilers here return AxonOutputCode: the partitioned FX graph, pickled with each libaxon program as its AXIR text.
Loading compiles the texts again (libaxon's compile is milliseconds; tier 1's generated C comes from the .so cache in
AXON_CACHE_DIR). torch.compile() loads a saved package when it wraps the model; its first call then only checks
guards.

Saving is automatic: the first call after a compile writes the packages whose graphs axon compiled to
<TORCHINDUCTOR_CACHE_DIR>/dynamo/<key>/entry (without the inlined modules' source text, _slim), after two
repairs and a check of what PyTorch 2.13 records:
- the main function's module: Dynamo records fn.__module__, which functools.wraps copies from the wrapped function
  (Hugging Face's decorated forward methods), while the frame's globals, where the compiled function is installed and
  the guards look up globals, are those of the module that defines the code (the one named by its file);
- module globals that Dynamo's bytecode loads (`___module_<name>_<id>_c<n>`, codegen.create_load_python_module) are
  installed in the frame's globals but not recorded as imports of the package; they are added;
- a package whose guards cannot be rebuilt from their saved state (closures of a decorated function are saved as
  missing values, so a guard on them fails to build) is not saved: loading it would fail inside torch.compile()
  (eval_frame's fallback re-initializes an already initialized package and raises). guard_filter drops such guards;
  pass it as torch.compile(..., options={"guard_filter_fn": torch_axon.compile.guard_filter}).
enable() also starts Dynamo's counter of global names at a random point (_unique_global_names), and has a loaded
package's guards built once, not twice (_load_guards_once).
Stale entries: the AOT cache key carries a stamp of this package's compiler sources and binaries
(torch.compiler.config.cache_key_tag), each saved package a sidecar file with the stamp, and enable() deletes the
packages whose stamp differs; Dynamo itself rejects another PyTorch or Python version and changed model sources, and
its guards reject other shapes, dtypes and module attributes. An entry that does not unpickle is a cache miss.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import hashlib
import io
import logging
import os
import pickle
import shutil
import sys
import types
from typing import Any

import torch
import torch.fx as fx

log = logging.getLogger("torch_axon.compile")

__all__ = ["enable", "enabled", "guard_filter", "save", "stamp"]

_STAMP_FILE = "axon.stamp"
_enabled = False
_dirty = False   # a graph or a frame was compiled (not loaded) since the last save


def enabled() -> bool:
    return _enabled and torch._dynamo.config.caching_precompile


def enable(on: bool = True) -> None:
    """Turns warm start on (torch._dynamo.config.caching_precompile, for every backend) or off, and deletes saved
    packages that an older torch_axon wrote. Call it before torch.compile(): the compile cache is read when
    torch.compile() wraps the model."""
    global _enabled
    _enabled = on
    torch._dynamo.config.caching_precompile = on
    if on:
        _prune_stale()
        _unique_global_names()
        _load_guards_once()
        _name_property_code()
        _allow_bypassed_frames()
        _save_later_frames()


def _unique_global_names() -> None:
    # Dynamo names the globals it installs in a frame's module (the builtins dict its guards read, resume functions)
    # from a per-process counter that starts at 0, so a loaded package's `__builtins_dict___0` collides with the
    # first frame this process compiles into the same module (a guard miss: another shape) and that compile fails
    # (CleanupHook.create: "already exists in scope"). Starting the counter at a random point makes the names of
    # different processes distinct.
    import itertools
    import random

    from torch._dynamo import bytecode_transformation

    bytecode_transformation._unique_id_counter = itertools.count(random.SystemRandom().randrange(1 << 24, 1 << 48))


def _patch(owner, name: str, wrap) -> bool:
    """Replaces owner.<name> by wrap(original), once per process (enable() may run again); whether it did."""
    original = getattr(owner, name)
    if getattr(original, "_axon_patched", False):
        return False
    patched = functools.wraps(original)(wrap(original))
    patched._axon_patched = True
    setattr(owner, name, patched)
    return True


def _load_guards_once() -> None:
    # With caching_precompile on, Dynamo's CheckFunctionManager builds a frame's guards twice: once for a filter
    # that drops the guards a package cannot hold (ID_MATCH and the like), then again with those it kept. A saved
    # package's guards went through that filter when it was saved, so loading builds them once, with the setting
    # off for the call: MiniLM's warm start (1694 guards) took 280 ms, 215 of them in torch.compile(); 210 and 145.
    from torch._dynamo import package

    def wrap(load):
        def load_guard_manager(*args, **kwargs):
            with torch._dynamo.config.patch(caching_precompile=False):
                return load(*args, **kwargs)

        return load_guard_manager

    _patch(package, "load_guard_manager", wrap)


def _name_property_code() -> None:
    # A graph break inside a property's getter (Hugging Face's `loss_function`, which logs a warning Dynamo cannot
    # trace, in every training step) makes Dynamo compile the getter's frame on its own, and the package must name
    # that code for a later process. PyTorch 2.13's _get_code_source walks the qualified name to
    # `PreTrainedModel.loss_function`, finds a property where it expects a function, and raises PackageError: the
    # whole torch.compile() failed with warm start on. The code is named through the property's accessor instead
    # (`fget.__code__`), which the loader's attribute walk (_lookup_code) follows as it is.
    from torch._dynamo import package

    def wrap(find):
        def get_code_source(code: types.CodeType) -> tuple[str, str]:
            try:
                return find(code)
            except package.PackageError:
                named = _property_accessor(code)
                if named is None:
                    raise
                return named

        return get_code_source

    _patch(package, "_get_code_source", wrap)


def _allow_bypassed_frames() -> None:
    # Dynamo leaves a frame out of its package (bypass_package) when the frame's graph holds parameters as
    # attributes, as an optimizer step's does (static addresses), and then builds that frame's guards without their
    # saved state; PyTorch 2.13's convert_frame still asserts that the saved state exists, so any compiled optimizer
    # step failed with warm start on ("check_fn.guards_state must not be None"). A bypassed frame's entry ignores
    # the state it is given (CompilePackage.add_guarded_code returns early), so an empty one is handed over; the
    # frame compiles in each process as it does without warm start, the rest of the package still loads.
    from torch._dynamo.guards import CheckFunctionManager

    def wrap(init):
        def __init__(self, f_code, output_graph, *args, **kwargs):
            init(self, f_code, output_graph, *args, **kwargs)
            if self.guards_state is None and kwargs.get("save_guards") and getattr(output_graph, "package", 0) is None:
                self.guards_state = b""

        return __init__

    _patch(CheckFunctionManager, "__init__", wrap)


def _save_later_frames() -> None:
    # The package is saved by the first call of a compiled graph after a compile, but Dynamo may compile more frames
    # of the same package after the last graph of a call has run: a training step's model output's __init__ (Hugging
    # Face's ModelOutput wrapper, compiled on its own after the loss's graph break) was never saved, and every warm
    # start traced it again (0.4 s of GPT-2's training step). A frame's guarded code marks the package dirty too:
    # the next call of a compiled graph saves it, and so does the process's exit.
    import atexit

    from torch._dynamo.package import CompilePackage

    def wrap(add):
        def add_guarded_code(self, *args, **kwargs):
            global _dirty
            add(self, *args, **kwargs)
            _dirty = True

        return add_guarded_code

    if _patch(CompilePackage, "add_guarded_code", wrap):
        atexit.register(_save_at_exit)


def _save_at_exit() -> None:
    if _dirty and enabled():
        save()


def _property_accessor(code: types.CodeType) -> tuple[str, str] | None:
    """(qualified name of the property, path from it to code) when code is a property accessor's, else None."""
    import inspect

    *owner_path, name = code.co_qualname.split(".")
    owner: Any = inspect.getmodule(code)
    for part in owner_path:
        owner = getattr(owner, part, None)
    if not inspect.isclass(owner) or not isinstance(owner.__dict__.get(name), property):
        return None
    prop = owner.__dict__[name]
    for accessor in ("fget", "fset", "fdel"):
        fn = getattr(prop, accessor)
        if inspect.isfunction(fn) and fn.__code__ is code:
            return code.co_qualname, f"{accessor}.__code__"
    return None


@functools.cache
def stamp() -> str:
    """What a saved entry must have been compiled by: torch_axon's version, its compiler's Python sources and its
    binaries (the extension and libaxon, by size and modification time)."""
    import torch_axon
    from torch_axon import _C

    h = hashlib.sha256(torch_axon.__version__.encode())
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "*.py"))):
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + f.read())
    binary_dir = os.path.dirname(_C.__file__)
    for path in sorted([_C.__file__] + glob.glob(os.path.join(binary_dir, "lib", "*"))):
        st = os.stat(path)
        h.update(f"{os.path.basename(path)}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:32]


def _dynamo_dir() -> str:
    from torch._dynamo.package import DynamoCache

    return DynamoCache.path_prefix()


def _prune_stale() -> None:
    for path in glob.glob(os.path.join(_dynamo_dir(), "*", _STAMP_FILE)):
        try:
            with open(path) as f:
                ok = f.read().strip() == stamp()
        except OSError:
            ok = False
        if not ok:
            log.info("axon warm start: removing %s (compiled by another torch_axon)", os.path.dirname(path))
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)


# ---- the compiled graph as an OutputCode ------------------------------------------------------------------------


def _graph_compiler(compile_fn, kind: str):
    """Wraps one of graph.compile_graph's partials into a compiler that returns an AxonOutputCode."""

    def compiler(gm: fx.GraphModule, example_inputs):
        global _dirty
        boxed = compile_fn(gm, example_inputs)
        fused = boxed.__wrapped__    # graph.boxed(gm) keeps gm there
        try:
            payload = _dumps(fused)
        except Exception as e:  # noqa: BLE001  (not saved: the compile itself stands)
            log.info("axon warm start: %s graph not saved: %s: %s", kind, type(e).__name__, e)
            payload = None
        _dirty = True
        return AxonOutputCode(kind=kind, payload=payload, stamp=stamp(), fn=boxed)

    return compiler


@contextlib.contextmanager
def compiling():
    """The context of the backend's aot_autograd call in warm-start mode: the AOT cache key carries the stamp, and
    the backward graph is compiled with the forward (so that both are in the entry saved after the first call)."""
    tag = torch.compiler.config.cache_key_tag
    with torch.compiler.config.patch(cache_key_tag=f"{tag}|axon:{stamp()}"), \
            torch._functorch.config.patch(force_non_lazy_backward_lowering=True):
        yield


def compilers(fw, bw, inference):
    """The forward, backward and inference compilers for aot_autograd in warm-start mode."""
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler
    from torch._inductor.output_code import OutputCode

    return (SerializableAOTDispatchCompiler(OutputCode, _graph_compiler(fw, "forward")),
            _graph_compiler(bw, "backward"),
            SerializableAOTDispatchCompiler(OutputCode, _graph_compiler(inference, "inference")))


def _output_code_base():
    from torch._inductor.output_code import OutputCode

    return OutputCode


@dataclasses.dataclass
class AxonOutputCode(_output_code_base()):
    """One aot_autograd graph compiled by axon, in the form aot_autograd's bundled cache saves: `payload` is the
    partitioned graph module pickled by _dumps, `fn` the boxed callable (None while serialized)."""

    kind: str = "forward"
    payload: bytes | None = None
    stamp: str = ""
    fn: Any = None

    def __post_init__(self):
        self._boxed_call = True   # aot_autograd calls it with one list of arguments

    def __call__(self, inputs):
        if _dirty:
            save()
        return self.fn(inputs)

    def prepare_for_serialization(self) -> None:
        if self.payload is None:
            raise pickle.PicklingError(f"axon {self.kind} graph has no serialized form")
        self.fn = None

    def post_compile(self, example_inputs, constants, graph_kwargs) -> None:
        if self.fn is not None:
            return
        if self.stamp != stamp():
            raise RuntimeError(f"axon warm start: a saved {self.kind} graph was compiled by another torch_axon; "
                               f"delete {_dynamo_dir()} (or the entry) to compile again")
        from .graph import boxed

        self.fn = boxed(_loads(self.payload))

    def set_triton_bundle(self, triton_bundle) -> None:
        pass


# ---- pickling a partitioned graph module ------------------------------------------------------------------------
# Programs are pickled as their AXIR text and compiled again on load; ATen operators by name. Graph modules are
# pickled as their generated code and attributes and come back as plain modules running that code: no fx.Graph is rebuilt (GraphModule's own
# unpickling traces the code again, 80 ms for GPT-2, and its make_fx tracer would trace into compiled partitions).


class _Pickler(pickle.Pickler):
    def __init__(self, f, texts: dict[int, str]):
        super().__init__(f)
        self.texts = texts

    def persistent_id(self, obj):
        text = self.texts.get(id(obj))
        return None if text is None else ("axon-program", text)

    def reducer_override(self, obj):
        if isinstance(obj, fx.GraphModule):
            body = {k: v for k, v in obj.__dict__.items()
                    if k not in ("_graph", "_tracer_cls", "_tracer_extras", "_code", "_lineno_map",
                                 "_prologue_start", "meta")}
            python_code = obj.graph.python_code(root_module="self")
            imports = _import_block(python_code.globals)
            return _code_module, (imports + python_code.src, body)
        if isinstance(obj, fx.Node):
            # a node that a partition's glue keeps (lower.InputView's view chain): rebuilt without its graph
            return _node, (obj.op, obj.target, obj.args, obj.kwargs, obj.name)
        if isinstance(obj, torch._ops.OpOverload):
            return _op, (obj.namespace, obj._opname, obj._overloadname)
        return NotImplemented


class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        from .graph import _compile_text

        kind, text = pid
        if kind != "axon-program":
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        return _compile_text(text)


def _import_block(globals_: dict[str, Any]) -> str:
    from torch.fx.graph_module import _format_import_block
    from torch.package import sys_importer

    return _format_import_block(globals_, sys_importer) + "\n"


class _CodeModule(torch.nn.Module):
    """A graph module's generated code and attributes, without its graph."""


def _code_module(src: str, body: dict) -> torch.nn.Module:
    mod = _CodeModule.__new__(_CodeModule)
    mod.__dict__.update(body)
    scope: dict[str, Any] = {}
    exec(compile(src, "<axon warm start>", "exec"), scope)  # noqa: S102  (code this package generated and saved)
    mod.forward = types.MethodType(scope["forward"], mod)
    return mod


def _node(op: str, target, args, kwargs, name: str) -> fx.Node:
    # Each in a graph of its own: only its op, target and arguments (other such nodes) are used.
    return fx.Graph().create_node(op, target, args, kwargs, name)


def _op(namespace: str, name: str, overload: str) -> torch._ops.OpOverload:
    return getattr(getattr(getattr(torch.ops, namespace), name), overload)


def _dumps(fused: torch.nn.Module) -> bytes:
    from torch.utils._python_dispatch import _disable_current_modes

    from .graph import _cache, _cache_lock

    with _cache_lock:
        texts = {id(prog): text for text, prog in _cache.items()}
    f = io.BytesIO()
    with _disable_current_modes():   # constants are real tensors; the compile runs under a fake mode
        _Pickler(f, texts).dump(fused)
    return f.getvalue()


def _loads(payload: bytes) -> torch.nn.Module:
    return _Unpickler(io.BytesIO(payload)).load()


# ---- saving -------------------------------------------------------------------------------------------------------


def guard_filter(entries) -> list[bool]:
    """A torch.compile guard_filter_fn that drops guards on the contents of function closures: in a warm start they
    cannot be rebuilt when the function is a decorator's wrapper (Hugging Face's forward methods), and they guard
    values fixed when the model's source was imported (whose changes Dynamo's source checksums catch). Those are
    reached through a `__closure__` attribute, or, in a frame Dynamo compiles on its own (a decorator's wrapper
    with a graph break in it), are the frame's free variables themselves (`L['func']`).
    It also clears each guard's source stack, which only annotates a recompile reason with the model's file and line:
    formatting them is 10-15% of GPT-2's warm start (2248 guards)."""
    for e in entries:
        e.orig_guard.stack = None
        e.orig_guard.user_stack = None
    return ["__closure__" not in e.name and not _in_cell(e.orig_guard.originating_source) for e in entries]


def _in_cell(source) -> bool:
    """Whether a guard's source starts at the contents of one of its frame's cells (co_freevars, co_cellvars)."""
    while getattr(source, "base", None) is not None:
        source = source.base
    return bool(getattr(source, "is_derefed_cell_contents", False))


def _is_axon(artifact) -> bool:
    content = getattr(artifact, "content", None)
    fw = getattr(getattr(content, "compiled_fw", None), "result", None)
    return isinstance(fw, AxonOutputCode)


def _repair(entry) -> None:
    """The first two repairs of the module docstring, on a recorded Dynamo entry."""
    from torch._dynamo.package import SerializedCode

    by_file = {getattr(m, "__file__", None): name for name, m in list(sys.modules.items())}
    for code in entry.codes:
        module = by_file.get(code.python_code.co_filename)
        if module is not None:
            code.python_module = module
        scope = sys.modules[code.python_module].__dict__
        for guarded in code.guarded_codes:
            names: set[str] = set()
            stack = [guarded.dynamo_code]
            while stack:
                c = stack.pop()
                names.update(c.co_names)
                stack.extend(x for x in c.co_consts if isinstance(x, SerializedCode))
            for name in names:
                value = scope.get(name)
                if name.startswith("___module_") and isinstance(value, types.ModuleType):
                    code.import_sources.setdefault(name, value.__name__)


def _check_guards(entry) -> None:
    """Builds each guard manager from its saved state, as loading will; raises what loading would."""
    from torch._dynamo.package import SerializedCode, load_guard_manager, load_guards_state

    quiet = logging.getLogger("torch._guards")   # it logs a failing guard at ERROR level before raising
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        for code in entry.codes:
            scope = sys.modules[code.python_module].__dict__
            target = SerializedCode.to_code_object(code.python_code)
            for guarded in code.guarded_codes:
                load_guard_manager(load_guards_state(guarded.guards_state), target, scope)
    finally:
        quiet.setLevel(level)


def _slim(entry):
    """The entry without the whole source text of each module it inlined from (GPT-2: 1 MB of its 1.5), which
    loading does not read: it compares the inlined lines' checksums with the current source."""
    sources = {dataclasses.replace(s, content="") for s in entry.source_info.inlined_sources}
    return dataclasses.replace(entry, source_info=dataclasses.replace(entry.source_info, inlined_sources=sources))


def save() -> int:
    """Writes the Dynamo packages whose graphs axon compiled (done by the first call after each compile); returns how
    many were written."""
    global _dirty
    _dirty = False
    from torch._dynamo.package import DynamoCache, PrecompileCacheEntry
    from torch._dynamo.precompile_context import PrecompileContext

    written = 0
    for key, dynamo_entry in list(PrecompileContext._dynamo_cache_entries.items()):
        try:
            backends = {b: PrecompileContext.serialize_artifact_by_key(b) for b in dynamo_entry.backend_ids}
            if not backends or not all(_is_axon(a) for a in backends.values()):
                continue   # another backend's package, or a graph whose entry is not complete yet
            _repair(dynamo_entry)
            _check_guards(dynamo_entry)
            DynamoCache.write(PrecompileCacheEntry.from_cache_entry(_slim(dynamo_entry), backends), key)
            with open(os.path.join(_dynamo_dir(), key, _STAMP_FILE), "w") as f:
                f.write(stamp())
            written += 1
        except Exception as e:  # noqa: BLE001  (never fails the call that saves: the next process compiles)
            log.warning("axon warm start: %s not saved: %s: %s", getattr(dynamo_entry, "fn_name", key),
                        type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return written

"""Runs PyTorch's own op database (OpInfo samples) on axon and on CPU and compares them.

One (op, dtype) pair is checked by `check_pair`: every sample (up to MAX_SAMPLES) is made on axon, as PyTorch's
device tests make them, and runs there and, copied, on CPU; outputs are compared with per-dtype tolerances, and for
differentiable ops the gradients of the inputs too (backward with the same fixed output gradient on both devices).
Host fallbacks seen while running on axon are recorded, so a pair is classified as native (no fallback), fallback
(correct, but some op ran on the host) or failing. Used by tests/test_ops.py (which asserts) and
benchmarks/coverage.py (which prints the table).
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import torch
from torch.utils import _pytree as pytree

import torch_axon

# Samples checked per (op, dtype): the first ones of each OpInfo cover the common cases; all of them would take the
# full op database past an hour on two cores.
MAX_SAMPLES = 4

# (rtol, atol) per dtype of the compared tensor. Float64 and float32 allow for a different order of summation
# (libaxon accumulates in float64 where CPU uses float32 or pairwise sums); the half types allow a few ulps of the
# result because intermediate rounding differs.
TOLERANCES = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1.3e-4, 1e-5),
    torch.float16: (1e-2, 1e-3),
    torch.bfloat16: (3e-2, 1e-2),
    torch.complex128: (1e-7, 1e-7),
    torch.complex64: (1.3e-4, 1e-5),
    torch.complex32: (1e-2, 1e-3),
}
# Gradients are sums of products and cancel: one step looser.
GRAD_TOLERANCES = {
    torch.float64: (1e-6, 1e-6),
    torch.float32: (1e-3, 1e-4),
    torch.float16: (3e-2, 3e-3),
    torch.bfloat16: (8e-2, 3e-2),
    torch.complex128: (1e-6, 1e-6),
    torch.complex64: (1e-3, 1e-4),
    torch.complex32: (3e-2, 3e-3),
}

# Ops whose outputs are random or depend on the generator: the same seed gives different numbers on CPU (mt19937)
# and axon (Philox), so only shapes and dtypes are compared.
RANDOM_OPS = {
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "multinomial", "normal", "normal.in_place",
    "normal.number_mean", "rand_like", "randint", "randint_like", "randn", "randn_like", "uniform",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
    "nn.functional.feature_alpha_dropout", "nn.functional.feature_alpha_dropout.with_train",
    "nn.functional.feature_alpha_dropout.without_train", "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d", "randperm", "empty", "empty_like", "empty_strided", "new_empty",
    "new_empty_strided", "empty_permuted", "torch.empty", "rand", "nn.functional.multi_head_attention_forward",
    "svd_lowrank", "pca_lowrank",  # randomized algorithms: they draw a random projection
}

def random_sample(op, sample) -> bool:
    """Samples of otherwise deterministic ops that draw random numbers (attention with dropout)."""
    return op.name == "nn.functional.scaled_dot_product_attention" and sample.kwargs.get("dropout_p", 0.0) > 0


# Ops whose result is an uninitialized tensor: nothing to compare but metadata.
UNINITIALIZED_OPS = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}


def op_id(op) -> str:
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclasses.dataclass
class PairResult:
    op: str
    dtype: str
    status: str                 # "native", "fallback", "failing", "skipped"
    samples: int = 0            # samples compared
    fallback_ops: tuple = ()    # ops that ran on the host
    error: str = ""             # first failure, one line


def _to_cpu(x):
    if isinstance(x, torch.Tensor) and x.device.type == "axon":
        t = x.detach().cpu()
        if x.requires_grad:
            t.requires_grad_(True)
        return t
    if isinstance(x, torch.device) and x.type == "axon":
        return torch.device("cpu")
    if isinstance(x, str) and x.startswith("axon"):
        return "cpu"
    return x


def _fresh(sample, to_cpu):
    """The sample's (input, args, kwargs) with every tensor a fresh leaf (on CPU if to_cpu), so gradients are
    collected per run. Tensors the OpInfo deliberately made on CPU (tensor_split's indices) stay there."""
    def fresh(x):
        if to_cpu:
            return _to_cpu(x)
        if isinstance(x, torch.Tensor):
            t = x.detach().clone()
            if x.requires_grad:
                t.requires_grad_(True)
            return t
        return x
    return pytree.tree_map(fresh, (sample.input, sample.args, sample.kwargs))


def _grad_inputs(tree):
    return [t for t in pytree.tree_leaves(tree) if isinstance(t, torch.Tensor) and t.requires_grad]


def _first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".strip().splitlines()
    return text[0][:300] if text else type(e).__name__


def _compare(name, got, expected, tolerances, metadata_only=False):
    """Raise AssertionError naming `name` if axon's result differs from CPU's."""
    g_leaves, g_spec = pytree.tree_flatten(got)
    e_leaves, e_spec = pytree.tree_flatten(expected)
    if g_spec != e_spec:
        raise AssertionError(f"{name}: result structure {g_spec} != CPU's {e_spec}")
    for i, (g, e) in enumerate(zip(g_leaves, e_leaves)):
        where = f"{name}[{i}]" if len(e_leaves) > 1 else name
        if isinstance(e, torch.Tensor):
            if not isinstance(g, torch.Tensor):
                raise AssertionError(f"{where}: got {type(g).__name__}, CPU gave a tensor")
            if g.device.type != "axon" and e.device.type == "cpu":
                raise AssertionError(f"{where}: result on {g.device}, expected an axon tensor")
            if g.dtype != e.dtype or g.shape != e.shape:
                raise AssertionError(f"{where}: {g.dtype}{list(g.shape)} != CPU's {e.dtype}{list(e.shape)}")
            if metadata_only:
                continue
            gc = g.detach().cpu()
            ed = e.detach()
            if gc.layout != torch.strided or ed.layout != torch.strided:
                gc, ed = gc.to_dense(), ed.to_dense()
            rtol, atol = tolerances.get(e.dtype, (0, 0))
            torch.testing.assert_close(gc, ed, rtol=rtol, atol=atol, equal_nan=True, check_stride=False,
                                       msg=lambda m: f"{where}: {m.splitlines()[0]} ... {m.splitlines()[-1]}")
        elif isinstance(e, float) and isinstance(g, float):
            if not (math.isclose(g, e, rel_tol=1e-5, abs_tol=1e-6) or (math.isnan(g) and math.isnan(e))):
                raise AssertionError(f"{where}: {g} != CPU's {e}")
        elif isinstance(e, torch.dtype) or isinstance(e, (int, bool, str, type(None), torch.Size)):
            if g != e:
                raise AssertionError(f"{where}: {g!r} != CPU's {e!r}")


def _output_grad(out, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(out.shape, generator=g, dtype=torch.float64).to(out.dtype)


LOW_PRECISION = {torch.float16: torch.float64, torch.bfloat16: torch.float64, torch.complex32: torch.complex128}


def _upcast(x):
    """float16/bfloat16 (complex32) tensors as float64 (complex128) CPU leaves; everything else unchanged."""
    if isinstance(x, torch.Tensor) and x.dtype in LOW_PRECISION:
        t = x.detach().cpu().to(LOW_PRECISION[x.dtype])
        return t.requires_grad_(x.requires_grad)
    return x


def _outputs_with_grad(result):
    return [t for t in pytree.tree_leaves(result) if isinstance(t, torch.Tensor) and t.requires_grad and t.numel() > 0]


def _grads(outs, leaves, seed_outs, device):
    grads_out = [_output_grad(o, 1234 + i).to(device=device, dtype=outs[i].dtype) for i, o in enumerate(seed_outs)]
    return list(torch.autograd.grad(outs, leaves, grads_out, allow_unused=True))


def _no_less_accurate(name, got, expected, reference):
    """For half-precision results that differ from CPU's by more than the tolerance: pass if axon's are no further
    from the float64 reference than CPU's (axon accumulates in float32 or float64 where CPU may round in between)."""
    for i, (g, e, r) in enumerate(zip(pytree.tree_leaves(got), pytree.tree_leaves(expected),
                                      pytree.tree_leaves(reference))):
        if not isinstance(e, torch.Tensor) or e.dtype not in LOW_PRECISION or not isinstance(r, torch.Tensor):
            continue
        g64, e64, r64 = (t.detach().cpu().to(LOW_PRECISION[e.dtype]) for t in (g, e, r))
        if not torch.equal(g64.isnan(), e64.isnan()):
            raise AssertionError(f"{name}[{i}]: NaN where CPU has none (or the reverse)")
        finite = r64.isfinite() & e64.isfinite()
        if not torch.equal(g64[~finite].nan_to_num(), e64[~finite].nan_to_num()):
            raise AssertionError(f"{name}[{i}]: infinities differ from CPU's")
        err_axon = (g64[finite] - r64[finite]).abs().max().item() if finite.any() else 0.0
        err_cpu = (e64[finite] - r64[finite]).abs().max().item() if finite.any() else 0.0
        rtol, atol = TOLERANCES[e.dtype]
        if err_axon > 1.5 * err_cpu + atol:
            raise AssertionError(f"{name}[{i}]: off the float64 result by {err_axon:.3g}, CPU by {err_cpu:.3g}")


def _run_sample(op, sample, check_grad, metadata_only):
    """Run one sample (made on axon) on axon and, copied, on CPU; return the host-fallback ops seen on axon.
    Raises on a mismatch."""
    cpu_in, cpu_args, cpu_kwargs = _fresh(sample, to_cpu=True)
    ax_in, ax_args, ax_kwargs = _fresh(sample, to_cpu=False)
    try:
        expected = op(cpu_in, *cpu_args, **cpu_kwargs)
    except Exception:  # CPU refuses this sample: axon must refuse it too
        try:
            op(ax_in, *ax_args, **ax_kwargs)
            torch.axon.synchronize()
        except Exception:
            return ()
        raise AssertionError("CPU raised on this sample but axon did not")
    torch_axon.reset_fallback_stats()
    got = op(ax_in, *ax_args, **ax_kwargs)
    torch.axon.synchronize()

    reference = None  # the float64 run, computed only if a half-precision comparison needs it

    def float64_run():
        nonlocal reference
        if reference is None:
            r_in, r_args, r_kwargs = pytree.tree_map(_upcast, (cpu_in, cpu_args, cpu_kwargs))
            reference = (r_in, r_args, r_kwargs, op(r_in, *r_args, **r_kwargs))
        return reference

    try:
        _compare("output", got, expected, TOLERANCES, metadata_only)
    except AssertionError:
        if not any(isinstance(t, torch.Tensor) and t.dtype in LOW_PRECISION for t in pytree.tree_leaves(expected)):
            raise
        try:
            ref_out = float64_run()[3]
        except Exception:
            raise AssertionError("output differs from CPU's and there is no float64 reference") from None
        _no_less_accurate("output", got, expected, ref_out)

    if check_grad and not metadata_only:
        cpu_leaves = _grad_inputs((cpu_in, cpu_args, cpu_kwargs))
        ax_leaves = _grad_inputs((ax_in, ax_args, ax_kwargs))
        outs_cpu, outs_ax = _outputs_with_grad(expected), _outputs_with_grad(got)
        if cpu_leaves and outs_cpu and len(outs_cpu) == len(outs_ax):
            try:
                g_cpu = _grads(outs_cpu, cpu_leaves, outs_cpu, "cpu")
            except Exception:  # CPU has no backward for this sample (e.g. a kernel missing for complex32)
                return tuple(sorted(torch_axon.fallback_stats()))
            g_ax = _grads(outs_ax, ax_leaves, outs_cpu, "axon")
            torch.axon.synchronize()
            try:
                _compare("grad", g_ax, g_cpu, GRAD_TOLERANCES)
            except AssertionError:
                if not any(t is not None and t.dtype in LOW_PRECISION for t in g_cpu):
                    raise
                try:
                    r_in, r_args, r_kwargs, r_out = float64_run()
                    g_ref = _grads(_outputs_with_grad(r_out), _grad_inputs((r_in, r_args, r_kwargs)), outs_cpu,
                                   "cpu")
                except Exception:
                    raise AssertionError("grad differs from CPU's and there is no float64 reference") from None
                _no_less_accurate("grad", g_ax, g_cpu, g_ref)
    return tuple(sorted(torch_axon.fallback_stats()))


def supported_dtypes(op):
    return sorted(op.supported_dtypes("cpu"), key=str)


def check_pair(op, dtype, max_samples=MAX_SAMPLES) -> PairResult:
    """Compare op on axon against CPU for one dtype; never raises."""
    name, dname = op_id(op), dtype_name(dtype)
    differentiable = op.supports_autograd and (dtype.is_floating_point or dtype.is_complex) \
        and dtype in op.supported_backward_dtypes("cpu")
    metadata_only = op.name in RANDOM_OPS or op_id(op) in RANDOM_OPS
    fallbacks: set = set()
    n = 0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            samples = op.sample_inputs("axon", dtype, requires_grad=differentiable)
            for sample in samples:
                if n >= max_samples:
                    break
                torch.manual_seed(0)
                fallbacks.update(_run_sample(op, sample, differentiable,
                                             metadata_only or random_sample(op, sample)))
                n += 1
    except Exception as e:  # a mismatch (AssertionError) or an error on axon only
        return PairResult(name, dname, "failing", n, tuple(sorted(fallbacks)), _first_line(e))
    if n == 0:
        return PairResult(name, dname, "skipped", 0, (), "no samples")
    return PairResult(name, dname, "fallback" if fallbacks else "native", n, tuple(sorted(fallbacks)))

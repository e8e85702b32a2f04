"""The torch.compile front end's FX -> AXIR translation (torch_axon/compile/lower.py, axir_text.py), checked on its
text: spellings of dims, types and attributes, explicit casts and constants, symbols bound from inputs, and the
reasons given for what is not lowered. Needs no libaxon compiler."""

import sympy
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from torch_axon.compile import decompositions
from torch_axon.compile.axir_text import Unsupported, attr_text, dim_text, float_text
from torch_axon.compile.lower import lower_graph
from torch_axon.compile.partition import classify
from torch.utils._sympy.functions import FloorDiv
from compile_cases import op_families


def test_dims_print_as_axir_expressions():
    s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
    assert dim_text(7) == "7"
    assert dim_text(s0) == "s0"
    assert dim_text(12 * s0) in ("12*s0", "s0*12")
    assert dim_text(s0 - 1) == "s0-1"
    assert dim_text(FloorDiv(s0 + 1, 2)) == "(1+s0)//2" or dim_text(FloorDiv(s0 + 1, 2)) == "(s0+1)//2"
    assert dim_text(s0 * s1 + 3).replace("(", "").replace(")", "") in ("3+s0*s1", "s0*s1+3")
    with pytest.raises(Unsupported, match="negative size"):
        dim_text(-1)
    with pytest.raises(Unsupported, match="data-dependent"):
        dim_text(sympy.Symbol("u0", integer=True))


def test_attribute_values_print_as_the_grammar_says():
    assert attr_text(True) == "true" and attr_text(3) == "3" and attr_text(2.0) == "2.0"
    assert float_text(1e-5) == "1e-05" and float_text(1e20) == "1e20"
    assert float_text(float("inf")) == "inf" and float_text(float("-inf")) == "-inf" and float_text(float("nan")) == "nan"
    assert attr_text("tanh") == '"tanh"' and attr_text('a"b') == '"a\\"b"'
    assert attr_text([1, 0]) == "[1, 0]"


def trace(fn, *inputs, dynamic=False):
    """fn in core ATen IR with fake-tensor metadata on axon, as aot_autograd hands graphs to the backend."""
    mode = FakeTensorMode(shape_env=ShapeEnv()) if dynamic else FakeTensorMode()
    with mode:
        fakes = [mode.from_tensor(x) for x in inputs]
    return make_fx(fn, decomposition_table=decompositions(), tracing_mode="symbolic" if dynamic else "fake")(*fakes)


def axon(*shape, dtype=torch.float32):
    return torch.zeros(shape, dtype=dtype, device="axon")


def test_mlp_lowers_to_addmm_and_gelu():
    w, b, x = axon(16, 8), axon(16), axon(3, 8)
    text, positions, _ = lower_graph(trace(lambda w, b, x: torch.nn.functional.gelu(torch.addmm(b, x, w.t())), w, b, x))
    assert text.startswith("axir 1\n\nfunc @main(")
    assert "permute(" in text and "addmm(" in text and 'gelu(' in text and '{approximate = "none"}' in text
    assert positions == [0, 1, 2]


def test_inputs_handed_on_unchanged_are_not_program_outputs():
    # a partition returning one of its inputs as it is (an activation the backward needs) hands on that tensor:
    # the program computes only the rest, and the call puts the input back in its place
    w, x = axon(4, 4), axon(2, 4)
    text, positions, sources = lower_graph(trace(lambda w, x: (torch.tanh(x @ w), w, x * 2), w, x))
    assert "contiguous(" not in text and text.count("-> (") == 1 and "-> (f32[2, 4], f32[2, 4])" in text, text
    assert sources[0] == 0 and sources[2] == 1 and positions == [0, 1]
    assert sources[1].source.name.startswith("w") and len(sources[1].chain) == 1


def test_views_of_inputs_are_not_program_outputs():
    # a transposed weight and a flattened input that the backward saves are views of inputs: the call makes them
    # eagerly, aliasing the inputs, where a program output would copy them
    w, x = torch.randn(4, 4, device="axon"), torch.randn(2, 3, 4, device="axon")
    gm = trace(lambda w, x: (torch.tanh(x @ w), w.t(), x.view(6, 4)), w, x)
    text, positions, sources = lower_graph(gm)
    assert "-> (f32[2, 3, 4])" in text, text
    assert sources[0] == 0 and [type(s).__name__ for s in sources[1:]] == ["InputView", "InputView"]
    wt, xv = sources[1]((w, x)), sources[2]((w, x))
    assert wt.data_ptr() == w.data_ptr() and torch.equal(wt.cpu(), w.cpu().t())
    assert xv.data_ptr() == x.data_ptr() and xv.shape == (6, 4)
    # a view of a computed value is still a program output
    text, _, sources = lower_graph(trace(lambda x: (x * 2).t(), torch.randn(3, 4, device="axon")))
    assert sources == [0] and "-> (f32[4, 3])" in text, text


def test_promotion_is_explicit_and_scalars_are_consts():
    text, _, _ = lower_graph(trace(lambda x, i: (x * 2 + i) > 1.5, axon(4), axon(4, dtype=torch.int64)))
    assert "cast(" in text and ": f32[4]" in text
    assert "const() {value = 2.0} : f32[]" in text
    assert "gt(" in text and ": bool[4]" in text


def test_symbolic_batch_is_bound_by_the_input_and_used_in_reshape():
    gm = trace(lambda x: (x.reshape(-1, 6) * 2).sum(0), axon(3, 5, 6), dynamic=True)
    text, _, _ = lower_graph(gm)
    syms = text.split("f32[")[1].split("]")[0].split(", ")[:2]   # the input's first two dimensions: symbols
    assert all(s.startswith("s") for s in syms), text
    assert f"reshape(%x_1) {{shape = [{syms[0]}*{syms[1]}, 6]}}" in text, text


def test_unsupported_ops_get_reasons():
    gm = trace(lambda x: torch.cumsum(x, 0) + 1, axon(4))
    verdict = {n.target: why for n, why in classify(gm).items()}
    assert "no AXIR lowering" in verdict[torch.ops.aten.cumsum.default]
    assert verdict[torch.ops.aten.add.Tensor] is None


def test_outputs_that_view_inputs_stay_eager():
    gm = trace(lambda x: (x.t(), x + 1), axon(2, 3))
    verdict = {n.target: why for n, why in classify(gm).items()}
    assert "aliases" in verdict[torch.ops.aten.permute.default]


def test_cpu_tensors_are_not_lowered():
    gm = trace(lambda x: x + 1, torch.zeros(3))
    assert all("not an axon device" in why for why in classify(gm).values())


def test_op_families_lower_to_text_that_libaxon_verifies():
    from torch_axon import _C

    f = op_families
    gm = trace(f, axon(4, 6), torch.zeros(4, dtype=torch.int64, device="axon"))
    verdict = classify(gm)
    assert all(why is None or "aliases" in why for why in verdict.values()), verdict
    text, _, _ = lower_graph(gm)
    _C._axir_parse(text)   # raises with the located diagnostic on any mistake


def test_a_value_returned_twice_is_one_program_output():
    # aot_autograd returns log_softmax's result and its alias saved for the backward: one buffer, not a copy
    x = torch.randn(3, 4, device="axon")
    def fn(x):
        y = torch.log_softmax(x * 2, 1)
        return y, torch.ops.aten.alias(y)

    text, _, sources = lower_graph(trace(fn, x))
    assert sources == [0, 0] and "-> (f32[3, 4])" in text, text


def test_a_full_tensor_read_only_by_elementwise_ops_is_a_scalar_const():
    # an optimizer's lerp weight: full_like(p, 0.1) * (g - m) is a 0-d const broadcast by the mul, not a buffer of
    # p's size; a full tensor that a reduction reads stays full
    p, g = axon(64, 32), axon(64, 32)
    text, _, _ = lower_graph(trace(lambda p, g: torch.full_like(p, 0.1) * (g - p), p, g))
    assert "const() {value = 0.1} : f32[]" in text and "f32[64, 32] = const" not in text.replace("%", ""), text
    text, _, _ = lower_graph(trace(lambda p: torch.full_like(p, 0.1).sum(0) + p, p))
    assert "{value = 0.1} : f32[64, 32]" in text, text
    # a foreach op reading it at its own list position (AdamW's first moment)
    text, _, _ = lower_graph(trace(lambda p, g: torch._foreach_addcmul([p], [g], [torch.full_like(p, 0.1)])[0], p, g))
    assert "const() {value = 0.1} : f32[]" in text, text

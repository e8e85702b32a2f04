"""nn.LSTM, nn.GRU and their cells on the fused axon cell kernels (_thnn_fused_lstm_cell / _thnn_fused_gru_cell):
outputs, states and gradients against PyTorch CPU per dtype, with no host fallback."""

import copy

import pytest
import torch
import torch.nn as nn

import torch_axon

# CPU's cells round every intermediate (gate sums, activations, products) to the dtype; the fused cell rounds once,
# so half-type gradients through two stacked layers differ by a few of the dtype's ulps.
TOL = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-10, 1e-10), torch.bfloat16: (6e-2, 6e-2),
       torch.float16: (5e-3, 5e-3)}


def run(module, inputs, device):
    m = copy.deepcopy(module).to(device)
    xs = [x.detach().to(device).requires_grad_(x.is_floating_point()) for x in inputs]
    out = m(*xs)
    flat = [t for t in (out[0], *(out[1] if isinstance(out[1], tuple) else (out[1],)))] if isinstance(out, tuple) \
        else [out]
    loss = sum((t.double() * (i + 1)).sin().sum() for i, t in enumerate(flat))
    loss.backward()
    grads = [x.grad.cpu().clone() for x in xs if x.grad is not None] + [p.grad.cpu().clone() for p in m.parameters()]
    return [t.detach().cpu().clone() for t in flat], grads


@pytest.mark.parametrize("dtype", list(TOL), ids=str)
@pytest.mark.parametrize("kind", ["lstm", "gru", "lstm_cell", "gru_cell", "lstm_nobias", "gru_2layer_bidir"])
def test_recurrent_modules_match_cpu_without_fallback(kind, dtype):
    torch.manual_seed(0)
    make = {
        "lstm": lambda: nn.LSTM(8, 16, batch_first=True),
        "gru": lambda: nn.GRU(8, 16, batch_first=True),
        "lstm_cell": lambda: nn.LSTMCell(8, 16),
        "gru_cell": lambda: nn.GRUCell(8, 16),
        "lstm_nobias": lambda: nn.LSTM(8, 16, bias=False),
        "gru_2layer_bidir": lambda: nn.GRU(8, 16, num_layers=2, bidirectional=True),
    }[kind]
    module = make().to(dtype)
    shape = (4, 8) if kind.endswith("cell") else (3, 5, 8)
    x = torch.randn(shape, dtype=torch.float64).to(dtype)
    cpu_out, cpu_grads = run(module, [x], "cpu")
    torch_axon.reset_fallback_stats()
    axon_out, axon_grads = run(module, [x], "axon")
    assert torch_axon.fallback_stats() == {}
    rtol, atol = TOL[dtype]
    for got, want in zip(axon_out + axon_grads, cpu_out + cpu_grads):
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


def test_lstm_cell_backward_with_only_one_gradient():
    cell = nn.LSTMCell(4, 6).to("axon")
    x = torch.randn(2, 4, device="axon", requires_grad=True)
    h, c = cell(x)
    c.sum().backward()  # grad_hy undefined: only the cell state carries a gradient
    ref_cell = nn.LSTMCell(4, 6)
    ref_cell.load_state_dict({k: v.cpu() for k, v in cell.state_dict().items()})
    xr = x.detach().cpu().requires_grad_()
    ref_cell(xr)[1].sum().backward()
    torch.testing.assert_close(x.grad.cpu(), xr.grad, rtol=1e-5, atol=1e-6)


def test_fused_cell_rejects_mismatched_state():
    gates = torch.randn(2, 24, device="axon")
    with pytest.raises(RuntimeError, match="does not match gates"):
        torch.ops.aten._thnn_fused_lstm_cell(gates, gates, torch.randn(3, 6, device="axon"))

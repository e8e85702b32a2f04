// The fused LSTM and GRU cells nn.LSTM / nn.GRU call on accelerators (_thnn_fused_*), on libaxon's cell kernels
// (libaxon/include/axon/rnn.h). Operands are made contiguous here; outputs take input_gates' dtype, as on CUDA.
// Bias gradients are the batch sums of the gate gradients, as PyTorch's CUDA backward computes them.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <axon/rnn.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool floats(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (t->defined() && !(t->scalar_type() == at::kFloat || t->scalar_type() == at::kDouble ||
                          t->scalar_type() == at::kHalf || t->scalar_type() == at::kBFloat16))
      return false;
  return true;
}

at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : at::Tensor();
}

// The descriptor of t, or nullopt for an undefined tensor.
std::optional<axon_tensor_t> maybe(const at::Tensor& t, const char* op) {
  if (!t.defined()) return std::nullopt;
  return describe(t, op);
}

const axon_tensor_t* ptr(const std::optional<axon_tensor_t>& t) { return t ? &*t : nullptr; }

void check_gates(const at::Tensor& gates, int64_t n, const at::Tensor& state, const char* op) {
  TORCH_CHECK(gates.dim() == 2 && gates.size(1) % n == 0, op, ": expected gates of shape [batch, ", n,
              " * hidden], got ", gates.sizes());
  TORCH_CHECK(state.dim() == 2 && state.size(0) == gates.size(0) && state.size(1) * n == gates.size(1), op,
              ": state of shape ", state.sizes(), " does not match gates of shape ", gates.sizes());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                                         const at::Tensor& cx,
                                                         const std::optional<at::Tensor>& input_bias_opt,
                                                         const std::optional<at::Tensor>& hidden_bias_opt) {
  const at::Tensor ib = contiguous_or_undefined(input_bias_opt), hb = contiguous_or_undefined(hidden_bias_opt);
  if (!floats({&input_gates, &hidden_gates, &cx, &ib, &hb}))
    return fall_back<ATEN_OP(_thnn_fused_lstm_cell)>(input_gates, hidden_gates, cx, input_bias_opt, hidden_bias_opt);
  check_gates(input_gates, 4, cx, "_thnn_fused_lstm_cell");
  const at::Tensor ig = input_gates.contiguous(), hg = hidden_gates.contiguous(), c = cx.contiguous();
  at::Tensor hy = at::empty(c.sizes(), ig.options()), cy = at::empty(c.sizes(), ig.options());
  at::Tensor workspace = at::empty(ig.sizes(), ig.options());
  const char* op = "_thnn_fused_lstm_cell";
  const axon_tensor_t hyd = describe(hy, op), cyd = describe(cy, op), wd = describe(workspace, op);
  const axon_tensor_t igd = describe(ig, op), hgd = describe(hg, op), cd = describe(c, op);
  const auto ibd = maybe(ib, op), hbd = maybe(hb, op);
  AXON_CHECK(axon_kernel_lstm_cell(current_stream(ig.device().index()), &hyd, &cyd, &wd, &igd, &hgd, &cd, ptr(ibd),
                                   ptr(hbd)));
  return {hy, cy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_cell_backward(const std::optional<at::Tensor>& grad_hy_opt,
                                                                  const std::optional<at::Tensor>& grad_cy_opt,
                                                                  const at::Tensor& cx, const at::Tensor& cy,
                                                                  const at::Tensor& workspace, bool has_bias) {
  const at::Tensor ghy = contiguous_or_undefined(grad_hy_opt), gcy = contiguous_or_undefined(grad_cy_opt);
  if (!floats({&ghy, &gcy, &cx, &cy, &workspace}))
    return fall_back<ATEN_OP(_thnn_fused_lstm_cell_backward_impl)>(grad_hy_opt, grad_cy_opt, cx, cy, workspace,
                                                                   has_bias);
  if (!ghy.defined() && !gcy.defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};  // as CUDA
  const at::Tensor w = workspace.contiguous(), c = cx.contiguous(), cyc = cy.contiguous();
  at::Tensor grad_gates = at::empty(w.sizes(), w.options()), grad_cx = at::empty(c.sizes(), c.options());
  const char* op = "_thnn_fused_lstm_cell_backward";
  const axon_tensor_t ggd = describe(grad_gates, op), gcxd = describe(grad_cx, op), cd = describe(c, op);
  const axon_tensor_t cyd = describe(cyc, op), wd = describe(w, op);
  const auto ghyd = maybe(ghy, op), gcyd = maybe(gcy, op);
  AXON_CHECK(axon_kernel_lstm_cell_backward(current_stream(w.device().index()), &ggd, &gcxd, ptr(ghyd), ptr(gcyd), &cd,
                                            &cyd, &wd));
  return {grad_gates, grad_cx, has_bias ? grad_gates.sum(0, /*keepdim=*/false) : at::Tensor()};
}

std::tuple<at::Tensor, at::Tensor> gru_cell(const at::Tensor& input_gates, const at::Tensor& hidden_gates,
                                            const at::Tensor& hx, const std::optional<at::Tensor>& input_bias_opt,
                                            const std::optional<at::Tensor>& hidden_bias_opt) {
  const at::Tensor ib = contiguous_or_undefined(input_bias_opt), hb = contiguous_or_undefined(hidden_bias_opt);
  if (!floats({&input_gates, &hidden_gates, &hx, &ib, &hb}))
    return fall_back<ATEN_OP(_thnn_fused_gru_cell)>(input_gates, hidden_gates, hx, input_bias_opt, hidden_bias_opt);
  check_gates(input_gates, 3, hx, "_thnn_fused_gru_cell");
  const at::Tensor ig = input_gates.contiguous(), hg = hidden_gates.contiguous(), h = hx.contiguous();
  at::Tensor hy = at::empty(h.sizes(), ig.options());
  at::Tensor workspace = at::empty({h.size(0), h.size(1) * 5}, ig.options());
  const char* op = "_thnn_fused_gru_cell";
  const axon_tensor_t hyd = describe(hy, op), wd = describe(workspace, op), igd = describe(ig, op);
  const axon_tensor_t hgd = describe(hg, op), hd = describe(h, op);
  const auto ibd = maybe(ib, op), hbd = maybe(hb, op);
  AXON_CHECK(axon_kernel_gru_cell(current_stream(ig.device().index()), &hyd, &wd, &igd, &hgd, &hd, ptr(ibd),
                                  ptr(hbd)));
  return {hy, workspace};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> gru_cell_backward(const at::Tensor& grad_hy,
                                                                                         const at::Tensor& workspace,
                                                                                         bool has_bias) {
  if (!floats({&grad_hy, &workspace}))
    return fall_back<ATEN_OP(_thnn_fused_gru_cell_backward)>(grad_hy, workspace, has_bias);
  const at::Tensor g = grad_hy.contiguous(), w = workspace.contiguous();
  TORCH_CHECK(w.dim() == 2 && g.dim() == 2 && w.size(1) == 5 * g.size(1) && w.size(0) == g.size(0),
              "_thnn_fused_gru_cell_backward: workspace of shape ", w.sizes(), " does not match grad_hy of shape ",
              g.sizes());
  const int64_t batch = g.size(0), hidden = g.size(1);
  at::Tensor gig = at::empty({batch, 3 * hidden}, w.options()), ghg = at::empty({batch, 3 * hidden}, w.options());
  at::Tensor ghx = at::empty({batch, hidden}, w.options());
  const char* op = "_thnn_fused_gru_cell_backward";
  const axon_tensor_t gigd = describe(gig, op), ghgd = describe(ghg, op), ghxd = describe(ghx, op);
  const axon_tensor_t gd = describe(g, op), wd = describe(w, op);
  AXON_CHECK(axon_kernel_gru_cell_backward(current_stream(w.device().index()), &gigd, &ghgd, &ghxd, &gd, &wd));
  at::Tensor gib = has_bias ? gig.sum(0, false) : at::Tensor(), ghb = has_bias ? ghg.sum(0, false) : at::Tensor();
  return {gig, ghg, ghx, gib, ghb};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstm_cell_backward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gru_cell_backward));
}

}  // namespace
}  // namespace torch_axon

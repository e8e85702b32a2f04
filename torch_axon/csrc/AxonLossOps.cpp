// nll_loss and nll_loss2d (forward and backward) on libaxon's loss kernels (libaxon/include/axon/loss.h). With
// log_softmax (AxonNormOps.cpp) this makes F.cross_entropy with class indices native. Below them, the element-wise
// losses mse_loss, smooth_l1_loss, huber_loss and binary_cross_entropy with their backward, and the CTC loss.
//
// libaxon takes the input as [N, C, K]: [C] is viewed as [1, C, 1], [N, C] as [N, C, 1] and nll_loss2d's [N, C, H, W]
// as [N, C, H * W]; the target as int64 [N, K]. Shapes are checked here with PyTorch's messages; a target out of
// range is found by the kernel and reported at the next synchronization. Targets other than int64, inputs or
// weights of other dtypes (or mixed with the input's) go through the host fallback, which gives PyTorch's errors.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <axon/loss.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <tuple>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// Whether the kernels take these operands: float input, int64 target, and a weight (if any) of the input's dtype
// (PyTorch refuses a mixed weight; the fallback then raises its error).
bool native(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight) {
  return is_float(self.scalar_type()) && target.scalar_type() == at::kLong &&
         (!weight.defined() || weight.scalar_type() == self.scalar_type()) && self.device() == target.device() &&
         (!weight.defined() || weight.device() == self.device());
}

at::Tensor defined_or_empty(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? *t : at::Tensor();
}

axon_loss_reduction_t reduction_of(int64_t r) {
  TORCH_CHECK(r >= 0 && r < AXON_LOSS_REDUCTION_COUNT, "nll_loss: reduction ", r, " is not none, mean or sum");
  return static_cast<axon_loss_reduction_t>(r);
}

// The checks of PyTorch's nll_loss_forward (LossNLL.cpp) with its messages; returns (N, C, K).
std::tuple<int64_t, int64_t, int64_t> nll_shape(const at::Tensor& self, const at::Tensor& target,
                                                const at::Tensor& weight, bool two_d) {
  if (two_d) {
    TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of size: ",
                self.sizes());
    TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of size: ",
                target.sizes());
    TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
                "nll_loss2d: input and target batch or spatial sizes don't match: target ", target.sizes(),
                ", input ", self.sizes());
  } else {
    TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
    TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
    const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
    TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0), "size mismatch (got input: ", self.sizes(),
                ", target: ", target.sizes(), ")");
  }
  const int64_t c = self.dim() == 1 ? self.size(0) : self.size(1);
  TORCH_CHECK(!weight.defined() || (weight.dim() <= 1 && weight.numel() == c),
              "weight tensor should be defined either for all ", c,
              " classes or no classes but got weight tensor of shape: ", weight.sizes());
  const int64_t n = self.dim() == 1 ? 1 : self.size(0);
  const int64_t k = two_d ? self.size(2) * self.size(3) : 1;
  return {n, c, k};
}

template <bool TWO_D>
std::tuple<at::Tensor&, at::Tensor&> nll_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                     const std::optional<at::Tensor>& weight_opt, int64_t reduction,
                                                     int64_t ignore_index, at::Tensor& output,
                                                     at::Tensor& total_weight) {
  const at::Tensor weight = defined_or_empty(weight_opt);
  if (!native(self, target, weight)) {
    if (TWO_D)
      return fall_back<ATEN_OP2(nll_loss2d_forward, output)>(self, target, weight_opt, reduction, ignore_index,
                                                             output, total_weight);
    return fall_back<ATEN_OP2(nll_loss_forward, output)>(self, target, weight_opt, reduction, ignore_index, output,
                                                         total_weight);
  }
  const auto [n, c, k] = nll_shape(self, target, weight, TWO_D);
  const axon_loss_reduction_t red = reduction_of(reduction);
  const bool batched = self.dim() > 1;
  if (red == AXON_LOSS_NONE && batched)
    at::native::resize_output(output, TWO_D ? target.sizes() : c10::IntArrayRef{n});
  else
    at::native::resize_output(output, {});
  at::native::resize_output(total_weight, {});
  // PyTorch leaves total_weight 0 for an unreduced batch (it is not used by the backward then).
  const bool want_tw = red != AXON_LOSS_NONE || !batched;
  if (!want_tw) total_weight.zero_();
  const char* name = "nll_loss";
  const at::Tensor x = self.contiguous().view({n, c, k}), t = target.contiguous().view({n, k});
  const at::Tensor w = weight.defined() ? weight.contiguous().view({c}) : at::Tensor();
  at::Tensor out = output.is_contiguous() ? output : at::empty(output.sizes(), output.options());
  at::Tensor tw = total_weight.is_contiguous() ? total_weight : at::empty({}, total_weight.options());
  const axon_tensor_t xd = describe(x, name), td = describe(t, name);
  const axon_tensor_t od = red == AXON_LOSS_NONE ? describe(out.view({n, k}), name) : describe(out, name);
  const axon_tensor_t twd = describe(tw, name);
  const std::optional<axon_tensor_t> wd = w.defined() ? std::optional(describe(w, name)) : std::nullopt;
  AXON_CHECK(axon_kernel_nll_loss(current_stream(self.device().index()), &od, want_tw ? &twd : nullptr, &xd, &td,
                                  wd ? &*wd : nullptr, red, ignore_index));
  if (!out.is_same(output)) output.copy_(out);
  if (!tw.is_same(total_weight)) total_weight.copy_(tw);
  return {output, total_weight};
}

// FUSED: self is log_softmax's output and grad_input gets the fused nll_loss + log_softmax backward.
template <bool TWO_D, bool FUSED = false>
at::Tensor& nll_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight_opt, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight, at::Tensor& grad_input) {
  const at::Tensor weight = defined_or_empty(weight_opt);
  if (!native(self, target, weight) || grad_output.scalar_type() != self.scalar_type() ||
      total_weight.scalar_type() != self.scalar_type()) {
    // nll_log_softmax_backward composes ATen ops for these operands before it gets here: a fallback would compute
    // nll_loss_backward alone.
    TORCH_INTERNAL_ASSERT(!FUSED, "nll_loss_log_softmax_backward reached the nll_loss_backward fallback");
    if (TWO_D)
      return fall_back<ATEN_OP2(nll_loss2d_backward, grad_input)>(grad_output, self, target, weight_opt, reduction,
                                                                  ignore_index, total_weight, grad_input);
    return fall_back<ATEN_OP2(nll_loss_backward, grad_input)>(grad_output, self, target, weight_opt, reduction,
                                                              ignore_index, total_weight, grad_input);
  }
  const auto [n, c, k] = nll_shape(self, target, weight, TWO_D);
  const axon_loss_reduction_t red = reduction_of(reduction);
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  const int64_t want = red == AXON_LOSS_NONE ? n * k : 1;
  TORCH_CHECK(grad_output.numel() == want, "nll_loss_backward: expected grad_output of ", want,
              " element(s), got shape ", grad_output.sizes());
  at::native::resize_output(grad_input, self.sizes());
  const char* name = "nll_loss_backward";
  // With no batch dimension an unreduced loss is one element, as a reduced one: the kernel's NONE case still fits.
  const at::Tensor g = red == AXON_LOSS_NONE ? grad_output.contiguous().view({n, k})
                                             : grad_output.contiguous().view(c10::IntArrayRef{});
  const at::Tensor t = target.contiguous().view({n, k});
  const at::Tensor w = weight.defined() ? weight.contiguous().view({c}) : at::Tensor();
  const at::Tensor tw = total_weight.contiguous().view(c10::IntArrayRef{});
  at::Tensor gi = grad_input.is_contiguous() ? grad_input : at::empty(self.sizes(), grad_input.options());
  const axon_tensor_t gid = describe(gi.view({n, c, k}), name), td = describe(t, name), twd = describe(tw, name);
  const axon_tensor_t gd = describe(g, name);
  const std::optional<axon_tensor_t> wd = w.defined() ? std::optional(describe(w, name)) : std::nullopt;
  if (FUSED) {
    const axon_tensor_t ld = describe(self.contiguous().view({n, c, k}), name);
    AXON_CHECK(axon_kernel_nll_loss_log_softmax_backward(current_stream(self.device().index()), &gid, &gd, &ld, &td,
                                                         wd ? &*wd : nullptr, &twd, red, ignore_index));
  } else {
    AXON_CHECK(axon_kernel_nll_loss_backward(current_stream(self.device().index()), &gid, &gd, &td,
                                             wd ? &*wd : nullptr, &twd, red, ignore_index));
  }
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
  return grad_input;
}

// axon::nll_loss_log_softmax_backward: _log_softmax_backward_data(nll_loss_backward(...), output, 1, dtype) in one
// kernel pass. The compile front end (torch_axon/compile/cross_entropy.py) rewrites a compiled cross-entropy's backward
// to it; operands the kernel does not take get that composition of ATen ops instead.
at::Tensor nll_log_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, const at::Tensor& target,
                                    const std::optional<at::Tensor>& weight_opt, int64_t reduction,
                                    int64_t ignore_index, const at::Tensor& total_weight) {
  const at::Tensor weight = defined_or_empty(weight_opt);
  if (!native(output, target, weight) || output.dim() > 2 || grad_output.scalar_type() != output.scalar_type() ||
      total_weight.scalar_type() != output.scalar_type() || grad_output.device() != output.device()) {
    at::Tensor g = at::nll_loss_backward(grad_output, output, target, weight_opt, reduction, ignore_index,
                                         total_weight);
    return at::_log_softmax_backward_data(g, output, output.dim() - 1, output.scalar_type());
  }
  at::Tensor grad_input = at::empty(output.sizes(), output.options());
  nll_backward_out<false, true>(grad_output, output, target, weight_opt, reduction, ignore_index, total_weight,
                                grad_input);
  return grad_input;
}

std::tuple<at::Tensor, at::Tensor> nll2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                 const std::optional<at::Tensor>& weight, int64_t reduction,
                                                 int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options()), total_weight = at::empty({}, self.options());
  nll_forward_out<true>(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

at::Tensor nll2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                          const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                          const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  return nll_backward_out<true>(grad_output, self, target, weight, reduction, ignore_index, total_weight,
                                grad_input);
}

// ---- element-wise losses ----

// The kernels take operands of one shape and one float dtype (F.mse_loss and friends broadcast before calling the
// op); anything else, and tensors on another device, go through the host fallback.
bool same_float(const at::Tensor& self, std::initializer_list<const at::Tensor*> others) {
  if (!is_float(self.scalar_type())) return false;
  for (const at::Tensor* t : others)
    if (t->defined() && (t->scalar_type() != self.scalar_type() || !t->sizes().equals(self.sizes()) ||
                         t->device() != self.device()))
      return false;
  return true;
}

void check_param(axon_ploss_t op, double param) {
  if (op == AXON_PLOSS_SMOOTH_L1) TORCH_CHECK(param >= 0, "smooth_l1_loss does not support negative values for beta.");
  if (op == AXON_PLOSS_HUBER) TORCH_CHECK(param > 0, "huber_loss does not support non-positive values for delta.");
}

// out = loss(self, target[, weight]) reduced; out resized to self's shape (none) or [].
at::Tensor& ploss_into(axon_ploss_t op, const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight,
                       int64_t reduction, double param, at::Tensor& out) {
  check_param(op, param);
  const axon_loss_reduction_t red = reduction_of(reduction);
  if (red == AXON_LOSS_NONE) at::native::resize_output(out, self.sizes());
  else at::native::resize_output(out, {});
  const char* name = axon_ploss_name(op);
  const at::Tensor x = self.contiguous(), t = target.contiguous();
  const at::Tensor w = weight.defined() ? weight.contiguous() : at::Tensor();
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  const axon_tensor_t xd = describe(x, name), td = describe(t, name), od = describe(o, name);
  const std::optional<axon_tensor_t> wd = w.defined() ? std::optional(describe(w, name)) : std::nullopt;
  AXON_CHECK(axon_kernel_pointwise_loss(current_stream(self.device().index()), op, &od, &xd, &td,
                                        wd ? &*wd : nullptr, red, param));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor& ploss_backward_into(axon_ploss_t op, const at::Tensor& grad_output, const at::Tensor& self,
                                const at::Tensor& target, const at::Tensor& weight, int64_t reduction, double param,
                                at::Tensor& grad_input) {
  check_param(op, param);
  const axon_loss_reduction_t red = reduction_of(reduction);
  const char* name = axon_ploss_name(op);
  TORCH_CHECK(red == AXON_LOSS_NONE ? grad_output.sizes().equals(self.sizes()) : grad_output.numel() == 1, name,
              "_backward: grad_output has shape ", grad_output.sizes(), ", expected ",
              red == AXON_LOSS_NONE ? "the input's shape" : "one element", " (input ", self.sizes(), ")");
  at::native::resize_output(grad_input, self.sizes());
  const at::Tensor x = self.contiguous(), t = target.contiguous();
  const at::Tensor g = red == AXON_LOSS_NONE ? grad_output.contiguous()
                                             : grad_output.contiguous().view(c10::IntArrayRef{});
  const at::Tensor w = weight.defined() ? weight.contiguous() : at::Tensor();
  at::Tensor gi = grad_input.is_contiguous() ? grad_input : at::empty(self.sizes(), grad_input.options());
  const axon_tensor_t xd = describe(x, name), td = describe(t, name), gd = describe(g, name);
  const axon_tensor_t gid = describe(gi, name);
  const std::optional<axon_tensor_t> wd = w.defined() ? std::optional(describe(w, name)) : std::nullopt;
  AXON_CHECK(axon_kernel_pointwise_loss_backward(current_stream(self.device().index()), op, &gid, &gd, &xd, &td,
                                                 wd ? &*wd : nullptr, red, param));
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
  return grad_input;
}

at::Tensor& mse_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& out) {
  if (!same_float(self, {&target}) || out.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(mse_loss, out)>(self, target, reduction, out);
  return ploss_into(AXON_PLOSS_MSE, self, target, at::Tensor(), reduction, 0.0, out);
}

at::Tensor mse(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  if (!same_float(self, {&target})) return fall_back<ATEN_OP(mse_loss)>(self, target, reduction);
  at::Tensor out = at::empty({0}, self.options());
  return ploss_into(AXON_PLOSS_MSE, self, target, at::Tensor(), reduction, 0.0, out);
}

at::Tensor& mse_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction, at::Tensor& grad_input) {
  if (!same_float(self, {&target}) || grad_output.scalar_type() != self.scalar_type() ||
      grad_input.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(mse_loss_backward, grad_input)>(grad_output, self, target, reduction, grad_input);
  return ploss_backward_into(AXON_PLOSS_MSE, grad_output, self, target, at::Tensor(), reduction, 0.0, grad_input);
}

at::Tensor mse_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                        int64_t reduction) {
  if (!same_float(self, {&target}) || grad_output.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP(mse_loss_backward)>(grad_output, self, target, reduction);
  at::Tensor gi = at::empty(self.sizes(), self.options());
  return ploss_backward_into(AXON_PLOSS_MSE, grad_output, self, target, at::Tensor(), reduction, 0.0, gi);
}

// smooth_l1 and huber share a shape: (self, target, reduction, param).
template <axon_ploss_t OP, class OutOp>
at::Tensor& param_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double param,
                      at::Tensor& out) {
  if (!same_float(self, {&target}) || out.scalar_type() != self.scalar_type())
    return fall_back<OutOp>(self, target, reduction, param, out);
  return ploss_into(OP, self, target, at::Tensor(), reduction, param, out);
}

template <axon_ploss_t OP, class Op>
at::Tensor param_fn(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double param) {
  if (!same_float(self, {&target})) return fall_back<Op>(self, target, reduction, param);
  at::Tensor out = at::empty({0}, self.options());
  return ploss_into(OP, self, target, at::Tensor(), reduction, param, out);
}

template <axon_ploss_t OP, class OutOp>
at::Tensor& param_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, double param, at::Tensor& grad_input) {
  if (!same_float(self, {&target}) || grad_output.scalar_type() != self.scalar_type() ||
      grad_input.scalar_type() != self.scalar_type())
    return fall_back<OutOp>(grad_output, self, target, reduction, param, grad_input);
  return ploss_backward_into(OP, grad_output, self, target, at::Tensor(), reduction, param, grad_input);
}

template <axon_ploss_t OP, class Op>
at::Tensor param_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                          int64_t reduction, double param) {
  if (!same_float(self, {&target}) || grad_output.scalar_type() != self.scalar_type())
    return fall_back<Op>(grad_output, self, target, reduction, param);
  at::Tensor gi = at::empty(self.sizes(), self.options());
  return ploss_backward_into(OP, grad_output, self, target, at::Tensor(), reduction, param, gi);
}

at::Tensor& bce_out(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
                    int64_t reduction, at::Tensor& out) {
  const at::Tensor w = defined_or_empty(weight_opt);
  if (!same_float(self, {&target, &w}) || out.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(binary_cross_entropy, out)>(self, target, weight_opt, reduction, out);
  return ploss_into(AXON_PLOSS_BCE, self, target, w, reduction, 0.0, out);
}

at::Tensor bce(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
               int64_t reduction) {
  const at::Tensor w = defined_or_empty(weight_opt);
  if (!same_float(self, {&target, &w}))
    return fall_back<ATEN_OP(binary_cross_entropy)>(self, target, weight_opt, reduction);
  at::Tensor out = at::empty({0}, self.options());
  return ploss_into(AXON_PLOSS_BCE, self, target, w, reduction, 0.0, out);
}

at::Tensor& bce_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight_opt, int64_t reduction, at::Tensor& grad_input) {
  const at::Tensor w = defined_or_empty(weight_opt);
  if (!same_float(self, {&target, &w}) || grad_output.scalar_type() != self.scalar_type() ||
      grad_input.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(binary_cross_entropy_backward, grad_input)>(grad_output, self, target, weight_opt,
                                                                         reduction, grad_input);
  return ploss_backward_into(AXON_PLOSS_BCE, grad_output, self, target, w, reduction, 0.0, grad_input);
}

at::Tensor bce_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                        const std::optional<at::Tensor>& weight_opt, int64_t reduction) {
  const at::Tensor w = defined_or_empty(weight_opt);
  if (!same_float(self, {&target, &w}) || grad_output.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP(binary_cross_entropy_backward)>(grad_output, self, target, weight_opt, reduction);
  at::Tensor gi = at::empty(self.sizes(), self.options());
  return ploss_backward_into(AXON_PLOSS_BCE, grad_output, self, target, w, reduction, 0.0, gi);
}

// ---- CTC ----

// The arguments libaxon's CTC kernels take: [T, N, C] float32/float64 log_probs, int32/int64 targets (padded rows or
// concatenated), lengths that fit them, one device. Anything else goes to the host, for CPU's own messages.
bool ctc_native(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef il, at::IntArrayRef tl,
                int64_t blank) {
  const auto t = log_probs.scalar_type(), tt = targets.scalar_type();
  if (log_probs.dim() != 3 || (t != at::kFloat && t != at::kDouble) || (tt != at::kInt && tt != at::kLong) ||
      (targets.dim() != 1 && targets.dim() != 2) || targets.device() != log_probs.device())
    return false;
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  if (blank < 0 || blank >= C || static_cast<int64_t>(il.size()) != N || static_cast<int64_t>(tl.size()) != N ||
      (targets.dim() == 2 && targets.size(0) != N))
    return false;
  int64_t total = 0;
  for (int64_t b = 0; b < N; ++b) {
    if (il[b] < 0 || il[b] > T || tl[b] < 0 || (targets.dim() == 2 && tl[b] > targets.size(1))) return false;
    total += tl[b];
  }
  return targets.dim() == 2 || total <= targets.numel();
}

at::Tensor lengths_on(const at::Tensor& like, at::IntArrayRef v) {
  return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(like.device());
}

std::vector<int64_t> lengths_of(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef il, at::IntArrayRef tl, int64_t blank,
                                            bool zero_infinity) {
  if (!ctc_native(log_probs, targets, il, tl, blank))
    return fall_back<ATEN_OP(_ctc_loss)>(log_probs, targets, il, tl, blank, zero_infinity);
  const int64_t T = log_probs.size(0), N = log_probs.size(1);
  const int64_t max_tl = tl.empty() ? 0 : *std::max_element(tl.begin(), tl.end());
  const at::Tensor lp = log_probs.contiguous(), tg = targets.contiguous();
  at::Tensor nll = at::empty({N}, lp.options()), log_alpha = at::empty({N, T, 2 * max_tl + 1}, lp.options());
  if (N == 0) return {nll, log_alpha};
  const at::Tensor ilt = lengths_on(lp, il), tlt = lengths_on(lp, tl);
  const char* op = "ctc_loss";
  const axon_tensor_t nd = describe(nll, op), ad = describe(log_alpha, op), ld = describe(lp, op);
  const axon_tensor_t td = describe(tg, op), id = describe(ilt, op), sd = describe(tlt, op);
  AXON_CHECK(axon_kernel_ctc_loss(current_stream(lp.device().index()), &nd, &ad, &ld, &td, &id, &sd, blank));
  return {nll, log_alpha};
}

std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                   const at::Tensor& il, const at::Tensor& tl, int64_t blank,
                                                   bool zero_infinity) {
  if (!at::isIntegralType(il.scalar_type(), false) || !at::isIntegralType(tl.scalar_type(), false))
    return fall_back<ATEN_OP2(_ctc_loss, Tensor)>(log_probs, targets, il, tl, blank, zero_infinity);
  return ctc_loss(log_probs, targets, lengths_of(il), lengths_of(tl), blank, zero_infinity);
}

at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                             at::IntArrayRef il, at::IntArrayRef tl, const at::Tensor& nll,
                             const at::Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  const int64_t max_tl = tl.empty() ? 0 : *std::max_element(tl.begin(), tl.end());
  const bool native = ctc_native(log_probs, targets, il, tl, blank) && grad.scalar_type() == log_probs.scalar_type() &&
                      nll.scalar_type() == log_probs.scalar_type() &&
                      log_alpha.scalar_type() == log_probs.scalar_type() && grad.dim() == 1 &&
                      grad.size(0) == log_probs.size(1) && log_alpha.dim() == 3 &&
                      log_alpha.size(0) == log_probs.size(1) && log_alpha.size(1) == log_probs.size(0) &&
                      log_alpha.size(2) >= 2 * max_tl + 1;
  if (!native)
    return fall_back<ATEN_OP(_ctc_loss_backward)>(grad, log_probs, targets, il, tl, nll, log_alpha, blank,
                                                  zero_infinity);
  const at::Tensor lp = log_probs.contiguous(), tg = targets.contiguous(), la = log_alpha.contiguous();
  const at::Tensor g = grad.contiguous(), nl = nll.contiguous();
  at::Tensor grad_in = at::empty(lp.sizes(), lp.options()), log_beta = at::empty(la.sizes(), la.options());
  if (lp.size(1) == 0) return grad_in.zero_();
  const at::Tensor ilt = lengths_on(lp, il), tlt = lengths_on(lp, tl);
  const char* op = "ctc_loss_backward";
  const axon_tensor_t gid = describe(grad_in, op), bd = describe(log_beta, op), gd = describe(g, op);
  const axon_tensor_t ld = describe(lp, op), td = describe(tg, op), id = describe(ilt, op), sd = describe(tlt, op);
  const axon_tensor_t nd = describe(nl, op), ad = describe(la, op);
  AXON_CHECK(axon_kernel_ctc_loss_backward(current_stream(lp.device().index()), &gid, &bd, &gd, &ld, &td, &id, &sd,
                                           &nd, &ad, blank, zero_infinity ? 1 : 0));
  return grad_in;
}

at::Tensor ctc_loss_backward_tensor(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                                    const at::Tensor& il, const at::Tensor& tl, const at::Tensor& nll,
                                    const at::Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  if (!at::isIntegralType(il.scalar_type(), false) || !at::isIntegralType(tl.scalar_type(), false))
    return fall_back<ATEN_OP2(_ctc_loss_backward, Tensor)>(grad, log_probs, targets, il, tl, nll, log_alpha, blank,
                                                           zero_infinity);
  return ctc_loss_backward(grad, log_probs, targets, lengths_of(il), lengths_of(tl), nll, log_alpha, blank,
                           zero_infinity);
}

at::Tensor nll_log_softmax_backward_meta(const at::Tensor& grad_output, const at::Tensor& output,
                                         const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                         int64_t reduction, int64_t ignore_index, const at::Tensor& total_weight) {
  return at::empty_like(output);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward.output", TORCH_FN(nll_forward_out<false>));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_backward_out<false>));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_forward_out<true>));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_backward_out<true>));
  m.impl("nll_loss2d_forward", TORCH_FN(nll2d_forward));
  m.impl("nll_loss2d_backward", TORCH_FN(nll2d_backward));
  m.impl("mse_loss", TORCH_FN(mse));
  m.impl("mse_loss.out", TORCH_FN(mse_out));
  m.impl("mse_loss_backward", TORCH_FN(mse_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_backward_out));
  m.impl("smooth_l1_loss", TORCH_FN((param_fn<AXON_PLOSS_SMOOTH_L1, ATEN_OP(smooth_l1_loss)>)));
  m.impl("smooth_l1_loss.out", TORCH_FN((param_out<AXON_PLOSS_SMOOTH_L1, ATEN_OP2(smooth_l1_loss, out)>)));
  m.impl("smooth_l1_loss_backward",
         TORCH_FN((param_backward<AXON_PLOSS_SMOOTH_L1, ATEN_OP(smooth_l1_loss_backward)>)));
  m.impl("smooth_l1_loss_backward.grad_input",
         TORCH_FN((param_backward_out<AXON_PLOSS_SMOOTH_L1, ATEN_OP2(smooth_l1_loss_backward, grad_input)>)));
  m.impl("huber_loss", TORCH_FN((param_fn<AXON_PLOSS_HUBER, ATEN_OP(huber_loss)>)));
  m.impl("huber_loss.out", TORCH_FN((param_out<AXON_PLOSS_HUBER, ATEN_OP2(huber_loss, out)>)));
  m.impl("huber_loss_backward", TORCH_FN((param_backward<AXON_PLOSS_HUBER, ATEN_OP(huber_loss_backward)>)));
  m.impl("huber_loss_backward.out",
         TORCH_FN((param_backward_out<AXON_PLOSS_HUBER, ATEN_OP2(huber_loss_backward, out)>)));
  m.impl("binary_cross_entropy", TORCH_FN(bce));
  m.impl("binary_cross_entropy.out", TORCH_FN(bce_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(bce_backward));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(bce_backward_out));
  m.impl("_ctc_loss", TORCH_FN(ctc_loss));
  m.impl("_ctc_loss.Tensor", TORCH_FN(ctc_loss_tensor));
  m.impl("_ctc_loss_backward", TORCH_FN(ctc_loss_backward));
  m.impl("_ctc_loss_backward.Tensor", TORCH_FN(ctc_loss_backward_tensor));
}

TORCH_LIBRARY(axon, m) {
  m.def("nll_loss_log_softmax_backward(Tensor grad_output, Tensor output, Tensor target, Tensor? weight, "
        "int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor");
}

TORCH_LIBRARY_IMPL(axon, PrivateUse1, m) {
  m.impl("nll_loss_log_softmax_backward", TORCH_FN(nll_log_softmax_backward));
}

TORCH_LIBRARY_IMPL(axon, Meta, m) {
  m.impl("nll_loss_log_softmax_backward", TORCH_FN(nll_log_softmax_backward_meta));
}

}  // namespace
}  // namespace torch_axon

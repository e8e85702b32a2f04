// multi_margin_loss and multilabel_margin_loss, with their backward, on libaxon's margin-loss kernels
// (libaxon/include/axon/loss.h).
//
// PyTorch's shape rules live here (LossMultiMargin.cpp, LossMultiLabelMargin.cpp): an input of 0 or 1 dimensions is
// one row, and then (or with a reduction) the loss is a 0-d tensor. libaxon takes the input as [N, C] and the
// targets as int64 [N] (multi_margin) or [N, C] (multilabel). A target out of range is found by the kernel and
// reported at the next synchronization. Other dtypes (PyTorch CPU has float32 and float64 only) go through the host
// fallback, which raises PyTorch's errors.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <axon/loss.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool native(const at::Tensor& self, const at::Tensor& target, const at::Tensor& weight) {
  const bool fl = self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble;
  return fl && target.scalar_type() == at::kLong && target.device() == self.device() &&
         (!weight.defined() || (weight.scalar_type() == self.scalar_type() && weight.device() == self.device()));
}

axon_loss_reduction_t reduction_of(int64_t r, const char* op) {
  TORCH_CHECK(r >= 0 && r < AXON_LOSS_REDUCTION_COUNT, op, ": reduction ", r, " is not none, mean or sum");
  return static_cast<axon_loss_reduction_t>(r);
}

// PyTorch's check of the input (non-empty vector or matrix, or a 0-d tensor); returns (nframe, dim).
std::pair<int64_t, int64_t> frames(const at::Tensor& input) {
  const int64_t nd = input.dim();
  const bool valid = (nd == 2 && input.size(1) != 0) || (nd == 1 && input.size(0) != 0) || nd == 0;
  TORCH_CHECK(valid, "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", input.sizes());
  if (nd <= 1) return {1, nd == 0 ? 1 : input.size(0)};
  return {input.size(0), input.size(1)};
}

// ---- multi_margin_loss ----

int multi_p(const at::Scalar& p) {
  const int64_t v = p.toLong();
  TORCH_CHECK(v == 1 || v == 2, "only p == 1 and p == 2 supported");
  return static_cast<int>(v);
}

std::pair<int64_t, int64_t> multi_shape(const at::Tensor& input, const at::Tensor& target, const at::Tensor& weight) {
  const auto [n, c] = frames(input);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == n, "inconsistent target size, got: ", target.sizes());
  TORCH_CHECK(!weight.defined() || (weight.dim() <= 1 && weight.numel() == c),
              "inconsistent weight size, expected ", c, " but got ", weight.sizes());
  return {n, c};
}

// The margin as PyTorch's kernel uses it: converted to the input's dtype.
double margin_of(const at::Scalar& margin, const at::Tensor& self) {
  return self.scalar_type() == at::kFloat ? static_cast<double>(margin.to<float>()) : margin.toDouble();
}

at::Tensor& multi_margin_out(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                             const at::Scalar& margin, const std::optional<at::Tensor>& weight_opt, int64_t reduction,
                             at::Tensor& out) {
  const at::Tensor w = weight_opt.has_value() && weight_opt->defined() ? *weight_opt : at::Tensor();
  if (!native(self, target, w) || out.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(multi_margin_loss, out)>(self, target, p, margin, weight_opt, reduction, out);
  const char* op = "multi_margin_loss";
  const int pi = multi_p(p);
  const axon_loss_reduction_t red = reduction_of(reduction, op);
  const auto [n, c] = multi_shape(self, target, w);
  const bool per_row = red == AXON_LOSS_NONE && target.dim() > 0;
  at::native::resize_output(out, per_row ? at::IntArrayRef{n} : at::IntArrayRef{});
  if (self.numel() == 0) return out;
  const at::Tensor x = self.contiguous().view({n, c}), t = target.contiguous().view({n});
  const at::Tensor wc = w.defined() ? w.contiguous().view({c}) : at::Tensor();
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  const at::Tensor ov = per_row || red == AXON_LOSS_NONE ? o.view({n}) : o.view({1});
  const axon_tensor_t xd = describe(x, op), td = describe(t, op), od = describe(ov, op);
  const std::optional<axon_tensor_t> wd = wc.defined() ? std::optional(describe(wc, op)) : std::nullopt;
  AXON_CHECK(axon_kernel_multi_margin_loss(current_stream(self.device().index()), &od, &xd, &td,
                                           wd ? &*wd : nullptr, pi, margin_of(margin, self), red));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor multi_margin(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                        const at::Scalar& margin, const std::optional<at::Tensor>& weight_opt, int64_t reduction) {
  const at::Tensor w = weight_opt.has_value() && weight_opt->defined() ? *weight_opt : at::Tensor();
  if (!native(self, target, w))
    return fall_back<ATEN_OP(multi_margin_loss)>(self, target, p, margin, weight_opt, reduction);
  at::Tensor out = at::empty({0}, self.options());
  return multi_margin_out(self, target, p, margin, weight_opt, reduction, out);
}

at::Tensor& multi_margin_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                      const at::Scalar& p, const at::Scalar& margin,
                                      const std::optional<at::Tensor>& weight_opt, int64_t reduction,
                                      at::Tensor& grad_input) {
  const at::Tensor w = weight_opt.has_value() && weight_opt->defined() ? *weight_opt : at::Tensor();
  if (!native(self, target, w) || grad_output.scalar_type() != self.scalar_type() ||
      grad_input.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(multi_margin_loss_backward, grad_input)>(grad_output, self, target, p, margin,
                                                                       weight_opt, reduction, grad_input);
  const char* op = "multi_margin_loss_backward";
  const int pi = multi_p(p);
  axon_loss_reduction_t red = reduction_of(reduction, op);
  const auto [n, c] = multi_shape(self, target, w);
  at::native::resize_output(grad_input, self.sizes());
  if (self.numel() == 0) return grad_input;
  // PyTorch reads a 0-d grad_output as the one gradient of every row (the 1-D input's case, even with no reduction)
  if (red == AXON_LOSS_NONE && grad_output.dim() == 0) red = AXON_LOSS_SUM;
  TORCH_CHECK(red != AXON_LOSS_NONE ? grad_output.numel() == 1 : grad_output.numel() == n, op,
              ": grad_output has shape ", grad_output.sizes(), " for ", n, " rows");
  const at::Tensor x = self.contiguous().view({n, c}), t = target.contiguous().view({n});
  const at::Tensor g = grad_output.contiguous().view({red == AXON_LOSS_NONE ? n : 1});
  const at::Tensor wc = w.defined() ? w.contiguous().view({c}) : at::Tensor();
  at::Tensor gi = grad_input.is_contiguous() ? grad_input : at::empty(self.sizes(), grad_input.options());
  const axon_tensor_t xd = describe(x, op), td = describe(t, op), gd = describe(g, op),
                      gid = describe(gi.view({n, c}), op);
  const std::optional<axon_tensor_t> wd = wc.defined() ? std::optional(describe(wc, op)) : std::nullopt;
  AXON_CHECK(axon_kernel_multi_margin_loss_backward(current_stream(self.device().index()), &gid, &gd, &xd, &td,
                                                    wd ? &*wd : nullptr, pi, margin_of(margin, self), red));
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
  return grad_input;
}

at::Tensor multi_margin_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                 const at::Scalar& p, const at::Scalar& margin,
                                 const std::optional<at::Tensor>& weight_opt, int64_t reduction) {
  const at::Tensor w = weight_opt.has_value() && weight_opt->defined() ? *weight_opt : at::Tensor();
  if (!native(self, target, w) || grad_output.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP(multi_margin_loss_backward)>(grad_output, self, target, p, margin, weight_opt,
                                                          reduction);
  at::Tensor gi = at::empty(self.sizes(), self.options());
  return multi_margin_backward_out(grad_output, self, target, p, margin, weight_opt, reduction, gi);
}

// ---- multilabel_margin_loss ----

std::pair<int64_t, int64_t> multilabel_shape(const at::Tensor& input, const at::Tensor& target) {
  const auto [n, c] = frames(input);
  const bool ok = input.dim() <= 1 ? target.dim() <= 1 && target.numel() == c
                                   : target.dim() == 2 && target.size(0) == n && target.size(1) == c;
  TORCH_CHECK(ok, "inconsistent size ", target.sizes(), " for argument #2 'target'");
  return {n, c};
}

std::tuple<at::Tensor&, at::Tensor&> multilabel_out(const at::Tensor& self, const at::Tensor& target,
                                                    int64_t reduction, at::Tensor& out, at::Tensor& is_target) {
  if (!native(self, target, at::Tensor()) || out.scalar_type() != self.scalar_type() ||
      is_target.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(multilabel_margin_loss_forward, output)>(self, target, reduction, out, is_target);
  const char* op = "multilabel_margin_loss";
  const axon_loss_reduction_t red = reduction_of(reduction, op);
  const auto [n, c] = multilabel_shape(self, target);
  const bool per_row = red == AXON_LOSS_NONE && target.dim() > 1;
  at::native::resize_output(out, per_row ? at::IntArrayRef{n} : at::IntArrayRef{});
  at::native::resize_output(is_target, target.sizes());
  TORCH_CHECK(is_target.is_contiguous(), "is_target must be contiguous");
  if (self.numel() == 0) {
    is_target.zero_();
    return {out, is_target};
  }
  // A 1-D target's one row, even unreduced, is a 0-d loss: reduce it as a sum of one row.
  const axon_loss_reduction_t kred = red == AXON_LOSS_NONE && !per_row ? AXON_LOSS_SUM : red;
  const at::Tensor x = self.contiguous().view({n, c}), t = target.contiguous().view({n, c});
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  const axon_tensor_t xd = describe(x, op), td = describe(t, op), od = describe(o.view({per_row ? n : 1}), op),
                      itd = describe(is_target.view({n, c}), op);
  AXON_CHECK(axon_kernel_multilabel_margin_loss(current_stream(self.device().index()), &od, &itd, &xd, &td, kred));
  if (!o.is_same(out)) out.copy_(o);
  return {out, is_target};
}

std::tuple<at::Tensor, at::Tensor> multilabel(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  if (!native(self, target, at::Tensor()))
    return fall_back<ATEN_OP(multilabel_margin_loss_forward)>(self, target, reduction);
  at::Tensor out = at::empty({0}, self.options()), is_target = at::empty({0}, self.options());
  multilabel_out(self, target, reduction, out, is_target);
  return {out, is_target};
}

at::Tensor& multilabel_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    int64_t reduction, const at::Tensor& is_target, at::Tensor& grad_input) {
  if (!native(self, target, at::Tensor()) || grad_output.scalar_type() != self.scalar_type() ||
      is_target.scalar_type() != self.scalar_type() || grad_input.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(multilabel_margin_loss_backward, grad_input)>(grad_output, self, target, reduction,
                                                                            is_target, grad_input);
  const char* op = "multilabel_margin_loss_backward";
  axon_loss_reduction_t red = reduction_of(reduction, op);
  const auto [n, c] = multilabel_shape(self, target);
  TORCH_CHECK(is_target.sizes().equals(target.sizes()), op, ": is_target has shape ", is_target.sizes(),
              ", target ", target.sizes());
  at::native::resize_output(grad_input, self.sizes());
  if (grad_input.numel() == 0) return grad_input;
  if (red == AXON_LOSS_NONE && grad_output.dim() == 0) red = AXON_LOSS_SUM;
  TORCH_CHECK(red != AXON_LOSS_NONE ? grad_output.numel() == 1 : grad_output.numel() == n, op,
              ": grad_output has shape ", grad_output.sizes(), " for ", n, " rows");
  const at::Tensor x = self.contiguous().view({n, c}), t = target.contiguous().view({n, c});
  const at::Tensor it = is_target.contiguous().view({n, c});
  const at::Tensor g = grad_output.contiguous().view({red == AXON_LOSS_NONE ? n : 1});
  at::Tensor gi = grad_input.is_contiguous() ? grad_input : at::empty(self.sizes(), grad_input.options());
  const axon_tensor_t xd = describe(x, op), td = describe(t, op), itd = describe(it, op), gd = describe(g, op),
                      gid = describe(gi.view({n, c}), op);
  AXON_CHECK(axon_kernel_multilabel_margin_loss_backward(current_stream(self.device().index()), &gid, &gd, &xd, &td,
                                                         &itd, red));
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
  return grad_input;
}

at::Tensor multilabel_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, const at::Tensor& is_target) {
  if (!native(self, target, at::Tensor()) || grad_output.scalar_type() != self.scalar_type() ||
      is_target.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP(multilabel_margin_loss_backward)>(grad_output, self, target, reduction, is_target);
  at::Tensor gi = at::empty(self.sizes(), self.options());
  return multilabel_backward_out(grad_output, self, target, reduction, is_target, gi);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multi_margin_loss", TORCH_FN(multi_margin));
  m.impl("multi_margin_loss.out", TORCH_FN(multi_margin_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(multi_margin_backward_out));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(multilabel));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(multilabel_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabel_backward));
  m.impl("multilabel_margin_loss_backward.grad_input", TORCH_FN(multilabel_backward_out));
}

}  // namespace torch_axon

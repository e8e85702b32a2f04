// Convolutions on libaxon's conv kernels (libaxon/include/axon/conv.h).
//
// PyTorch's device-independent at::convolution -> at::_convolution checks the shapes (with PyTorch's own messages)
// and hands a device it has no backend for to convolution_overrideable and convolution_backward_overrideable: the
// two hooks bound here, as XLA and PyTorch's OpenReg test backend do. A conv1d arrives as a 2-d convolution of
// height 1. The kernels take images and weights contiguous or channels-last (PyTorch's channels_last /
// channels_last_3d): the images and their gradients are passed in PyTorch CPU's layout for the call (channels_last
// when the input or the weight is), the weight and its gradient in the weight's, and results come back so. Dtypes
// other than the four float types run through the host fallback as the whole aten::convolution (or
// convolution_backward): the CPU has no convolution_overrideable to fall back to.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <axon/conv.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
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

// The forward also takes int64 (libaxon's wraps as CPU's does); integer tensors have no gradients.
bool takes(c10::ScalarType t, bool forward) { return is_float(t) || (forward && t == at::kLong); }

// Whether the kernels take these operands: floats of one dtype (or int64 for the forward), 1 to 3 spatial
// dimensions. Mixed dtypes are refused with the message PyTorch's CPU convolution gives.
bool native(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, bool forward = false) {
  if (!takes(input.scalar_type(), forward) || !takes(weight.scalar_type(), forward) ||
      (bias.defined() && !takes(bias.scalar_type(), forward)))
    return false;
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.scalar_type(),
              ") and weight type (", weight.scalar_type(), ") should be the same");
  TORCH_CHECK(!bias.defined() || bias.scalar_type() == input.scalar_type(), "Input type (", input.scalar_type(),
              ") and bias type (", bias.scalar_type(), ") should be the same");
  return weight.dim() >= 3 && weight.dim() <= 2 + AXON_CONV_MAX_SPATIAL && input.dim() == weight.dim();
}

// The layout of a convolution's images and results, as PyTorch CPU picks it: channels_last when the input or the
// weight is.
at::MemoryFormat image_format(const at::Tensor& input, const at::Tensor& weight) {
  const auto fmt = input.suggest_memory_format();
  return fmt != at::MemoryFormat::Contiguous ? fmt : weight.suggest_memory_format();
}

// One entry per spatial dimension (a single value applies to all, as PyTorch's expand_param_if_needed does).
void fill(int64_t* dst, c10::SymIntArrayRef v, int nspatial, const char* what) {
  const auto a = C10_AS_INTARRAYREF_SLOW(v);
  TORCH_CHECK(a.size() == 1 || static_cast<int>(a.size()) == nspatial, "convolution: expected ", what, " to have ",
              nspatial, " values, got ", a.size());
  for (int i = 0; i < nspatial; ++i) dst[i] = a[a.size() == 1 ? 0 : i];
}

axon_conv_params_t params(int nspatial, c10::SymIntArrayRef stride, c10::SymIntArrayRef padding,
                          c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
                          const c10::SymInt& groups) {
  axon_conv_params_t p = axon_conv_params_default(nspatial);
  fill(p.stride, stride, nspatial, "stride");
  fill(p.padding, padding, nspatial, "padding");
  fill(p.dilation, dilation, nspatial, "dilation");
  if (transposed) fill(p.output_padding, output_padding, nspatial, "output_padding");
  p.groups = groups.expect_int();
  p.transposed = transposed ? 1 : 0;
  return p;
}

// The output shape for p (the formulas of axon/conv.h); libaxon checks it again.
std::vector<int64_t> output_shape(const at::Tensor& input, const at::Tensor& weight, const axon_conv_params_t& p) {
  std::vector<int64_t> shape{input.size(0), p.transposed ? weight.size(1) * p.groups : weight.size(0)};
  for (int i = 0; i < p.nspatial; ++i) {
    const int64_t in = input.size(2 + i), span = p.dilation[i] * (weight.size(2 + i) - 1) + 1;
    shape.push_back(p.transposed ? (in - 1) * p.stride[i] - 2 * p.padding[i] + span + p.output_padding[i]
                                 : (in + 2 * p.padding[i] - span) / p.stride[i] + 1);
  }
  return shape;
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias_opt, c10::SymIntArrayRef stride,
                                    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
                                    c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  const at::Tensor bias = bias_opt.has_value() && bias_opt->defined() ? bias_opt->contiguous() : at::Tensor();
  if (!native(input, weight, bias, /*forward=*/true))
    return fall_back_symint<ATEN_OP(convolution)>(input, weight, bias_opt, stride, padding, dilation, transposed,
                                                  output_padding, groups);
  const char* name = transposed ? "conv_transpose" : "conv";
  const axon_conv_params_t p = params(static_cast<int>(weight.dim()) - 2, stride, padding, dilation, transposed,
                                      output_padding, groups);
  const auto fmt = image_format(input, weight);
  const at::Tensor x = input.contiguous(fmt), w = weight.contiguous(weight.suggest_memory_format());
  at::Tensor out = at::empty(output_shape(x, w, p), x.options().memory_format(fmt));
  const axon_tensor_t od = describe(out, name), xd = describe(x, name), wd = describe(w, name);
  const std::optional<axon_tensor_t> bd = bias.defined() ? std::optional(describe(bias, name)) : std::nullopt;
  AXON_CHECK(axon_kernel_conv(current_stream(input.device().index()), &od, &xd, &wd, bd ? &*bd : nullptr, &p));
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> output_mask) {
  const int64_t out_channels = transposed ? weight.size(1) * groups.expect_int() : weight.size(0);
  if (!native(input, weight, at::Tensor()) || grad_output.scalar_type() != input.scalar_type()) {
    const std::vector<c10::SymInt> bias_sizes{c10::SymInt(out_channels)};
    return fall_back_symint<ATEN_OP(convolution_backward)>(
        grad_output, input, weight, output_mask[2] ? at::OptionalSymIntArrayRef(bias_sizes) : std::nullopt, stride,
        padding, dilation, transposed, output_padding, groups, output_mask);
  }
  const char* name = transposed ? "conv_transpose_backward" : "conv_backward";
  const axon_conv_params_t p = params(static_cast<int>(weight.dim()) - 2, stride, padding, dilation, transposed,
                                      output_padding, groups);
  const auto fmt = image_format(input, weight);
  const auto wfmt = weight.suggest_memory_format();
  const at::Tensor g = grad_output.contiguous(fmt), x = input.contiguous(fmt), w = weight.contiguous(wfmt);
  at::Tensor gi = output_mask[0] ? at::empty(x.sizes(), x.options().memory_format(fmt)) : at::Tensor();
  at::Tensor gw = output_mask[1] ? at::empty(w.sizes(), w.options().memory_format(wfmt)) : at::Tensor();
  at::Tensor gb = output_mask[2] ? at::empty({out_channels}, g.options()) : at::Tensor();
  auto opt = [&](const at::Tensor& t) { return t.defined() ? std::optional(describe(t, name)) : std::nullopt; };
  const auto gid = opt(gi), gwd = opt(gw), gbd = opt(gb);
  const axon_tensor_t gd = describe(g, name), xd = describe(x, name), wd = describe(w, name);
  AXON_CHECK(axon_kernel_conv_backward(current_stream(input.device().index()), gid ? &*gid : nullptr,
                                       gwd ? &*gwd : nullptr, gbd ? &*gbd : nullptr, &gd, &xd, &wd, &p));
  // PyTorch CPU's layouts: each gradient in its tensor's own memory format.
  auto as = [](const at::Tensor& t, at::MemoryFormat f) { return t.defined() ? t.contiguous(f) : t; };
  return {as(gi, input.suggest_memory_format()), as(gw, weight.suggest_memory_format()),
          gb};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution_overrideable));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward_overrideable));
}

}  // namespace
}  // namespace torch_axon

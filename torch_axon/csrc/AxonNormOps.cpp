// Softmax, log-softmax, layer norm and RMS norm on libaxon's normalization kernels (libaxon/include/axon/norm.h).
//
// libaxon wants contiguous tensors, so inputs are made contiguous here (a copy only for strided views) and results
// go through a contiguous temporary when `out` is not contiguous. Softmax is described as [outer, len, inner] along
// dim; the norms as [rows, normalized]. The functional _softmax and _softmax_backward_data reach these through
// their structured .out forms. Statistics (mean, rstd) are float32 for float32/float16/bfloat16 inputs and float64
// for float64, as CUDA's native_layer_norm returns them. Dtypes other than the four float types, and empty
// normalized shapes, run through the host fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <axon/norm.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <limits>
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

bool floats(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (t->defined() && !is_float(t->scalar_type())) return false;
  return true;
}

// Runs launch(o) on a contiguous tensor o of out's (already resized) shape, copying back if out is strided.
template <class Launch>
void into_contiguous(at::Tensor& out, Launch launch) {
  if (out.is_contiguous()) {
    launch(out);
    return;
  }
  at::Tensor tmp = at::empty(out.sizes(), out.options());
  launch(tmp);
  out.copy_(tmp);
}

// ---- softmax ----

template <bool LOG, class AtenOp>
at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  if (!floats({&self, &out})) return fall_back<AtenOp>(self, dim, half_to_float, out);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  const at::Tensor in = self.contiguous();
  into_contiguous(out, [&](const at::Tensor& o) {
    const axon_tensor_t od = describe_around(o, d, /*written=*/true), td = describe_around(in, d);
    AXON_CHECK(axon_kernel_softmax(current_stream(self.device().index()), &od, &td, 1, LOG));
  });
  return out;
}

// The functional forms, registered directly: PyTorch's route to `.out` runs the structured meta function first.
template <bool LOG, class AtenOp>
at::Tensor softmax_functional(const at::Tensor& self, int64_t dim, bool half_to_float) {
  at::Tensor out = at::empty(self.sizes(), self.options().dtype(half_to_float ? at::kFloat : self.scalar_type()));
  return softmax_out<LOG, AtenOp>(self, dim, half_to_float, out);
}

// _safe_softmax (softmax with rows of all -inf giving 0; the math attention's softmax): one kernel instead of ATen's
// composite of softmax, isneginf, all and where. Its autograd formula is softmax's backward of the result.
at::Tensor safe_softmax(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) {
  const at::Tensor in = dtype ? self.to(*dtype) : self;
  if (!floats({&in})) return fall_back<ATEN_OP(_safe_softmax)>(self, dim, dtype);
  const int64_t d = at::maybe_wrap_dim(dim, in.dim());
  at::Tensor out = at::empty(in.sizes(), in.options());
  if (in.numel() == 0) return out;
  const at::Tensor x = in.contiguous();
  const axon_tensor_t od = describe_around(out, d, /*written=*/true);
  const axon_tensor_t xd = describe_around(x, d);
  AXON_CHECK(axon_kernel_safe_softmax(current_stream(self.device().index()), &od, &xd, 1));
  return out;
}

template <bool LOG, class AtenOp>
at::Tensor& softmax_backward_out(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                 c10::ScalarType input_dtype, at::Tensor& grad_input) {
  if (!floats({&grad_output, &output, &grad_input}))
    return fall_back<AtenOp>(grad_output, output, dim, input_dtype, grad_input);
  TORCH_CHECK(grad_output.sizes() == output.sizes(), "grad_output shape ", grad_output.sizes(),
              " does not match output shape ", output.sizes());
  const int64_t d = at::maybe_wrap_dim(dim, output.dim());
  at::native::resize_output(grad_input, output.sizes());
  if (output.numel() == 0) return grad_input;
  const at::Tensor g = grad_output.contiguous(), y = output.contiguous();
  into_contiguous(grad_input, [&](const at::Tensor& o) {
    const axon_tensor_t od = describe_around(o, d, /*written=*/true);
    const axon_tensor_t gd = describe_around(g, d), yd = describe_around(y, d);
    AXON_CHECK(axon_kernel_softmax_backward(current_stream(output.device().index()), &od, &gd, &yd, 1, LOG));
  });
  return grad_input;
}

// ---- layer norm and RMS norm ----

// Rows and row length for normalized_shape, checked as PyTorch's layer_norm does.
std::pair<int64_t, int64_t> rows_cols(const at::Tensor& input, c10::IntArrayRef normalized_shape,
                                      const at::Tensor& weight, const at::Tensor& bias, const char* name) {
  const int64_t nd = static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(nd >= 1, name, ": normalized_shape must have at least one dimension");
  TORCH_CHECK(input.dim() >= nd && input.sizes().slice(input.dim() - nd).equals(normalized_shape), name,
              ": given normalized_shape=", normalized_shape, ", expected input with shape [*, ...", normalized_shape,
              "], but got input of size", input.sizes());
  TORCH_CHECK(!weight.defined() || weight.sizes().equals(normalized_shape), name, ": expected weight of shape ",
              normalized_shape, ", got ", weight.sizes());
  TORCH_CHECK(!bias.defined() || bias.sizes().equals(normalized_shape), name, ": expected bias of shape ",
              normalized_shape, ", got ", bias.sizes());
  int64_t n = 1;
  for (int64_t s : normalized_shape) n *= s;
  return {n == 0 ? 0 : input.numel() / n, n};
}

// input's shape with the normalized dims set to 1: the shape of mean and rstd.
std::vector<int64_t> stat_shape(const at::Tensor& input, int64_t nd) {
  std::vector<int64_t> s(input.sizes().begin(), input.sizes().end());
  for (int64_t i = input.dim() - nd; i < input.dim(); ++i) s[i] = 1;
  return s;
}

c10::ScalarType stat_dtype(const at::Tensor& input) {
  return input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// Optional descriptor of a [count] view of t (made contiguous by the caller).
std::optional<axon_tensor_t> flat(const at::Tensor& t, int64_t count, const char* name) {
  if (!t.defined()) return std::nullopt;
  return describe(t.view({count}), name);
}

const axon_tensor_t* ptr(const std::optional<axon_tensor_t>& t) { return t ? &*t : nullptr; }

at::Tensor contiguous_or_undefined(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? t->contiguous() : at::Tensor();
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                  c10::SymIntArrayRef normalized_shape,
                                                                  const std::optional<at::Tensor>& weight_opt,
                                                                  const std::optional<at::Tensor>& bias_opt,
                                                                  double eps) {
  const at::Tensor weight = contiguous_or_undefined(weight_opt), bias = contiguous_or_undefined(bias_opt);
  const auto shape = C10_AS_INTARRAYREF_SLOW(normalized_shape);
  const auto [rows, n] = rows_cols(input, shape, weight, bias, "layer_norm");
  if (!floats({&input, &weight, &bias}) || n == 0)
    return fall_back<ATEN_OP(native_layer_norm)>(input, shape, weight_opt, bias_opt, eps);
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  const auto ss = stat_shape(x, static_cast<int64_t>(shape.size()));
  at::Tensor mean = at::empty(ss, x.options().dtype(stat_dtype(x)));
  at::Tensor rstd = at::empty(ss, x.options().dtype(stat_dtype(x)));
  if (rows == 0) return {out, mean, rstd};
  const axon_tensor_t xd = describe(x.view({rows, n}), "layer_norm"), od = describe(out.view({rows, n}), "layer_norm");
  const auto md = flat(mean, rows, "layer_norm"), rd = flat(rstd, rows, "layer_norm");
  const auto wd = flat(weight, n, "layer_norm"), bd = flat(bias, n, "layer_norm");
  AXON_CHECK(axon_kernel_layer_norm(current_stream(input.device().index()), &od, ptr(md), ptr(rd), &xd, ptr(wd),
                                    ptr(bd), n, eps));
  return {out, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt, const std::optional<at::Tensor>& bias_opt,
    std::array<bool, 3> mask) {
  const at::Tensor weight = contiguous_or_undefined(weight_opt), bias = contiguous_or_undefined(bias_opt);
  const auto shape = C10_AS_INTARRAYREF_SLOW(normalized_shape);
  const auto [rows, n] = rows_cols(input, shape, weight, bias, "layer_norm_backward");
  if (!floats({&grad_out, &input, &mean, &rstd, &weight, &bias}) || n == 0)
    return fall_back<ATEN_OP(native_layer_norm_backward)>(grad_out, input, shape, mean, rstd, weight_opt,
                                                          bias_opt, mask);
  const at::Tensor x = input.contiguous(), g = grad_out.contiguous(), m = mean.contiguous(), r = rstd.contiguous();
  at::Tensor gi = mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor();
  at::Tensor gw = mask[1] && weight.defined() ? at::empty(weight.sizes(), weight.options()) : at::Tensor();
  at::Tensor gb = mask[2] && bias.defined() ? at::empty(bias.sizes(), bias.options()) : at::Tensor();
  const char* name = "layer_norm_backward";
  const axon_tensor_t xd = describe(x.view({rows, n}), name), gd = describe(g.view({rows, n}), name);
  const auto gid = gi.defined() ? std::optional(describe(gi.view({rows, n}), name)) : std::nullopt;
  const auto md = flat(m, rows, name), rd = flat(r, rows, name), wd = flat(weight, n, name);
  const auto gwd = flat(gw, n, name), gbd = flat(gb, n, name);
  AXON_CHECK(axon_kernel_layer_norm_backward(current_stream(input.device().index()), ptr(gid), ptr(gwd), ptr(gbd),
                                             &gd, &xd, ptr(md), ptr(rd), ptr(wd), n));
  return {gi, gw, gb};
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm(const at::Tensor& input, c10::IntArrayRef normalized_shape,
                                                  const std::optional<at::Tensor>& weight_opt,
                                                  std::optional<double> eps) {
  const at::Tensor weight = contiguous_or_undefined(weight_opt);
  const auto [rows, n] = rows_cols(input, normalized_shape, weight, at::Tensor(), "rms_norm");
  if (!floats({&input, &weight}) || n == 0)
    return fall_back<ATEN_OP(_fused_rms_norm)>(input, normalized_shape, weight_opt, eps);
  // PyTorch's default eps is the machine epsilon of the compute type: float for the half types.
  const double e = eps.has_value() ? *eps
                   : input.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                                        : std::numeric_limits<float>::epsilon();
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  at::Tensor rstd = at::empty(stat_shape(x, static_cast<int64_t>(normalized_shape.size())),
                              x.options().dtype(stat_dtype(x)));
  if (rows == 0) return {out, rstd};
  const axon_tensor_t xd = describe(x.view({rows, n}), "rms_norm"), od = describe(out.view({rows, n}), "rms_norm");
  const auto rd = flat(rstd, rows, "rms_norm"), wd = flat(weight, n, "rms_norm");
  AXON_CHECK(axon_kernel_rms_norm(current_stream(input.device().index()), &od, ptr(rd), &xd, ptr(wd), n, e));
  return {out, rstd};
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                                                           c10::IntArrayRef normalized_shape, const at::Tensor& rstd,
                                                           const std::optional<at::Tensor>& weight_opt,
                                                           std::array<bool, 2> mask) {
  const at::Tensor weight = contiguous_or_undefined(weight_opt);
  const auto [rows, n] = rows_cols(input, normalized_shape, weight, at::Tensor(), "rms_norm_backward");
  if (!floats({&grad_out, &input, &rstd, &weight}) || n == 0)
    return fall_back<ATEN_OP(_fused_rms_norm_backward)>(grad_out, input, normalized_shape, rstd, weight_opt, mask);
  const at::Tensor x = input.contiguous(), g = grad_out.contiguous(), r = rstd.contiguous();
  at::Tensor gi = mask[0] ? at::empty(x.sizes(), x.options()) : at::Tensor();
  at::Tensor gw = mask[1] && weight.defined() ? at::empty(weight.sizes(), weight.options()) : at::Tensor();
  const char* name = "rms_norm_backward";
  const axon_tensor_t xd = describe(x.view({rows, n}), name), gd = describe(g.view({rows, n}), name);
  const auto gid = gi.defined() ? std::optional(describe(gi.view({rows, n}), name)) : std::nullopt;
  const auto rd = flat(r, rows, name), wd = flat(weight, n, name), gwd = flat(gw, n, name);
  AXON_CHECK(axon_kernel_rms_norm_backward(current_stream(input.device().index()), ptr(gid), ptr(gwd), &gd, &xd,
                                           ptr(rd), ptr(wd), n));
  return {gi, gw};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_softmax", TORCH_FN((softmax_functional<false, ATEN_OP2(_softmax, out)>)));
  m.impl("_safe_softmax", TORCH_FN(safe_softmax));
  m.impl("_log_softmax", TORCH_FN((softmax_functional<true, ATEN_OP2(_log_softmax, out)>)));
  m.impl("_softmax.out", TORCH_FN((softmax_out<false, ATEN_OP2(_softmax, out)>)));
  m.impl("_log_softmax.out", TORCH_FN((softmax_out<true, ATEN_OP2(_log_softmax, out)>)));
  m.impl("_softmax_backward_data.out",
         TORCH_FN((softmax_backward_out<false, ATEN_OP2(_softmax_backward_data, out)>)));
  m.impl("_log_softmax_backward_data.out",
         TORCH_FN((softmax_backward_out<true, ATEN_OP2(_log_softmax_backward_data, out)>)));
  m.impl("native_layer_norm", TORCH_FN(native_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
  m.impl("_fused_rms_norm", TORCH_FN(fused_rms_norm));
  m.impl("_fused_rms_norm_backward", TORCH_FN(fused_rms_norm_backward));
}

}  // namespace
}  // namespace torch_axon

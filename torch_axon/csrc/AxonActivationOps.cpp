// Activations that batch norm's model set uses beyond AxonPointwiseOps.cpp's: log_sigmoid, logit, softshrink,
// hardshrink, threshold, glu, prelu and rrelu, each with its backward, on libaxon's pointwise ops
// (libaxon/include/axon/pointwise.h). Every operand has the input's dtype and shape (prelu's weight is expanded to
// it, glu's halves are strided views), so each op is one launch over descriptors. The dtypes are the float ones, and
// the integers for threshold; logit converts an integer input to the float dtype first. Other dtypes, mixed-dtype
// calls and layouts libaxon cannot describe go through the host fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/softshrink_compositeexplicitautogradnonfunctional_dispatch.h>
#include <axon/pointwise.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <initializer_list>
#include <optional>
#include <tuple>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// Whether libaxon's op of this arity has a loop for dtype t (float only, except THRESHOLD, which has integers too).
bool supported(int arity, int op, c10::ScalarType t) {
  const auto d = axon_dtype_of(t);
  if (!d) return false;
  if (arity == 1) return axon_unary_supports((axon_unary_op_t)op, *d) != 0;
  if (arity == 2) return axon_binary_supports((axon_binary_op_t)op, *d) != 0;
  return axon_ternary_supports((axon_ternary_op_t)op, *d) != 0;
}

// Whether out and the inputs can go to one pointwise launch: one dtype, one shape, describable.
bool launchable(const at::Tensor& out, std::initializer_list<const at::Tensor*> ins) {
  if (!fits(out)) return false;
  for (const at::Tensor* t : ins)
    if (t->scalar_type() != out.scalar_type() || !t->sizes().equals(out.sizes()) || !fits(*t)) return false;
  return true;
}

// out (resized to like's shape) = op(ins...); false, with nothing launched, when the case belongs to the fallback.
bool run(at::Tensor& out, const at::Tensor& like, int arity, int op, std::initializer_list<const at::Tensor*> ins,
         const axon_op_params_t& p, const char* name) {
  if (!supported(arity, op, like.scalar_type()) || out.scalar_type() != like.scalar_type()) return false;
  at::native::resize_output(out, like.sizes());
  if (!launchable(out, ins)) return false;
  if (out.numel() == 0) return true;
  const axon_tensor_t od = describe(out, name);
  axon_tensor_t d[3];
  int k = 0;
  for (const at::Tensor* t : ins) d[k++] = describe(*t, name);
  axon_stream_t s = current_stream(out.device().index());
  if (arity == 1) AXON_CHECK(axon_kernel_unary(s, (axon_unary_op_t)op, &od, &d[0], &p));
  if (arity == 2) AXON_CHECK(axon_kernel_binary(s, (axon_binary_op_t)op, &od, &d[0], &d[1], &p));
  if (arity == 3) AXON_CHECK(axon_kernel_ternary(s, (axon_ternary_op_t)op, &od, &d[0], &d[1], &d[2], &p));
  return true;
}

// logit promotes integers and bool to the default float dtype (PyTorch's unary float op): the input converted to
// `dtype` on the device, so the float kernel takes it.
at::Tensor as_float(const at::Tensor& self, c10::ScalarType dtype) {
  return c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) && is_float(dtype) ? self.to(dtype) : self;
}

axon_op_params_t params() { return axon_op_params_default(); }

// ---- log_sigmoid ----

std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  at::Tensor out = at::empty_like(self);
  // CPU returns a buffer of self's shape that its backward does not read; so does this one, left unwritten.
  if (run(out, self, 1, AXON_UNARY_LOG_SIGMOID, {&self}, params(), "log_sigmoid"))
    return {out, at::empty_like(self)};
  return fall_back<ATEN_OP(log_sigmoid_forward)>(self);
}

at::Tensor log_sigmoid_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& buffer) {
  at::Tensor gi = at::empty_like(self);
  if (run(gi, self, 2, AXON_BINARY_LOG_SIGMOID_BACKWARD, {&grad_output, &self}, params(), "log_sigmoid_backward"))
    return gi;
  return fall_back<ATEN_OP(log_sigmoid_backward)>(grad_output, self, buffer);
}

// ---- logit ----

axon_op_params_t logit_params(std::optional<double> eps) {
  axon_op_params_t p = params();
  p.logit_eps = eps.has_value() ? *eps : -1.0;
  return p;
}

at::Tensor logit(const at::Tensor& self, std::optional<double> eps) {
  const at::Tensor x = as_float(self, c10::typeMetaToScalarType(c10::get_default_dtype()));
  at::Tensor out = at::empty_like(x);
  if (run(out, x, 1, AXON_UNARY_LOGIT, {&x}, logit_params(eps), "logit")) return out;
  return fall_back<ATEN_OP(logit)>(self, eps);
}

at::Tensor& logit_out(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  const at::Tensor x = as_float(self, out.scalar_type());
  if (run(out, x, 1, AXON_UNARY_LOGIT, {&x}, logit_params(eps), "logit")) return out;
  return fall_back<ATEN_OP2(logit, out)>(self, eps, out);
}

at::Tensor& logit_backward_out(const at::Tensor& grad_output, const at::Tensor& self, std::optional<double> eps,
                               at::Tensor& grad_input) {
  if (run(grad_input, self, 2, AXON_BINARY_LOGIT_BACKWARD, {&grad_output, &self}, logit_params(eps),
          "logit_backward"))
    return grad_input;
  return fall_back<ATEN_OP2(logit_backward, grad_input)>(grad_output, self, eps, grad_input);
}

// ---- shrink and threshold ----

axon_op_params_t shrink_params(const c10::Scalar& lambd) {
  axon_op_params_t p = params();
  p.lambd = lambd.toDouble();
  return p;
}

at::Tensor& softshrink_out(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out) {
  // lambd's range is checked by PyTorch before the dispatch reaches here (softshrink's meta function).
  if (run(out, self, 1, AXON_UNARY_SOFTSHRINK, {&self}, shrink_params(lambd), "softshrink")) return out;
  return fall_back<ATEN_OP2(softshrink, out)>(self, lambd, out);
}

at::Tensor& hardshrink_out(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out) {
  if (run(out, self, 1, AXON_UNARY_HARDSHRINK, {&self}, shrink_params(lambd), "hardshrink")) return out;
  return fall_back<ATEN_OP2(hardshrink, out)>(self, lambd, out);
}

// The functional forms, registered directly: PyTorch's generic route runs the structured meta function and then the
// .out kernel. A softshrink lambd outside [0, the dtype's largest value] takes that route for the meta function's
// error.
template <bool SOFT>
at::Tensor shrink(const at::Tensor& self, const c10::Scalar& lambd) {
  if (SOFT) {
    const double l = lambd.toDouble();
    const auto t = self.scalar_type();
    const double largest = t == at::kHalf ? 65504.0 : t == at::kBFloat16 ? 3.3895313892515355e38
                         : t == at::kFloat ? 3.4028234663852886e38 : 1.7976931348623157e308;
    if (!(l >= 0 && l <= largest)) return at::compositeexplicitautogradnonfunctional::softshrink(self, lambd);
  }
  at::Tensor out = at::empty_like(self);
  const axon_unary_op_t op = SOFT ? AXON_UNARY_SOFTSHRINK : AXON_UNARY_HARDSHRINK;
  if (run(out, self, 1, op, {&self}, shrink_params(lambd), SOFT ? "softshrink" : "hardshrink")) return out;
  return SOFT ? fall_back<ATEN_OP(softshrink)>(self, lambd) : fall_back<ATEN_OP(hardshrink)>(self, lambd);
}

template <class AtenOp>
at::Tensor& shrink_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const c10::Scalar& lambd,
                                at::Tensor& grad_input) {
  if (run(grad_input, self, 2, AXON_BINARY_SHRINK_BACKWARD, {&grad_output, &self}, shrink_params(lambd),
          "shrink_backward"))
    return grad_input;
  return fall_back<AtenOp>(grad_output, self, lambd, grad_input);
}

at::Tensor& threshold_out(const at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value,
                          at::Tensor& out) {
  axon_op_params_t p = params();
  p.threshold = threshold.toDouble();
  p.value = value.toDouble();
  if (run(out, self, 1, AXON_UNARY_THRESHOLD, {&self}, p, "threshold")) return out;
  return fall_back<ATEN_OP2(threshold, out)>(self, threshold, value, out);
}

at::Tensor& threshold_inplace(at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value) {
  return threshold_out(self, threshold, value, self);
}

// ---- glu ----

// dim wrapped, with PyTorch's checks.
int64_t glu_dim(const at::Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ",
              self.size(d));
  return d;
}

at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  const int64_t d = glu_dim(self, dim);
  const int64_t half = self.size(d) / 2;
  const at::Tensor a = self.narrow(d, 0, half), b = self.narrow(d, half, half);
  if (run(out, a, 2, AXON_BINARY_GLU, {&a, &b}, params(), "glu")) return out;
  return fall_back<ATEN_OP2(glu, out)>(self, dim, out);
}

// The functional form, bound directly (PyTorch's generic route runs the meta function before glu.out).
at::Tensor glu(const at::Tensor& self, int64_t dim) {
  at::Tensor out = at::empty({0}, self.options());
  return glu_out(self, dim, out);
}

at::Tensor& glu_backward_out(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim,
                             at::Tensor& grad_input) {
  const int64_t d = glu_dim(self, dim);
  const int64_t half = self.size(d) / 2;
  const at::Tensor a = self.narrow(d, 0, half), b = self.narrow(d, half, half);
  if (is_float(self.scalar_type()) && grad_input.scalar_type() == self.scalar_type() &&
      launchable(grad_output, {&a, &b})) {
    at::native::resize_output(grad_input, self.sizes());
    at::Tensor ga = grad_input.narrow(d, 0, half), gb = grad_input.narrow(d, half, half);
    // d/da = g sigmoid(b) is glu(g, b) itself; d/db = g a s (1 - s).
    if (run(ga, a, 2, AXON_BINARY_GLU, {&grad_output, &b}, params(), "glu_backward") &&
        run(gb, a, 3, AXON_TERNARY_GLU_BACKWARD, {&grad_output, &a, &b}, params(), "glu_backward"))
      return grad_input;
  }
  return fall_back<ATEN_OP2(glu_backward, grad_input)>(grad_output, self, dim, grad_input);
}

at::Tensor glu_backward(const at::Tensor& grad_output, const at::Tensor& self, int64_t dim) {
  at::Tensor gi = at::empty_like(self);
  return glu_backward_out(grad_output, self, dim, gi);
}

// ---- prelu and rrelu ----

at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  at::Tensor out = at::empty_like(self);
  if (weight.scalar_type() == self.scalar_type()) {
    const at::Tensor w = weight.expand(self.sizes());
    if (run(out, self, 2, AXON_BINARY_PRELU, {&self, &w}, params(), "prelu")) return out;
  }
  return fall_back<ATEN_OP(_prelu_kernel)>(self, weight);
}

std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                                         const at::Tensor& weight) {
  // Both gradients have the broadcast (self's) shape; autograd sums grad_weight down to weight's shape.
  at::Tensor gi = at::empty_like(self), gw = at::empty(self.sizes(), weight.options());
  if (weight.scalar_type() == self.scalar_type() && grad_output.sizes().equals(self.sizes())) {
    const at::Tensor w = weight.expand(self.sizes());
    if (run(gi, self, 3, AXON_TERNARY_PRELU_BACKWARD, {&grad_output, &self, &w}, params(), "prelu_backward") &&
        run(gw, self, 2, AXON_BINARY_PRELU_BACKWARD_WEIGHT, {&grad_output, &self}, params(), "prelu_backward"))
      return {gi, gw};
  }
  return fall_back<ATEN_OP(_prelu_kernel_backward)>(grad_output, self, weight);
}

// Eval mode is leaky_relu with the mean slope, as in PyTorch. Training draws a slope per element, uniform in
// [lower, upper], on the device's generator: where x <= 0 noise keeps it and out = x * slope; elsewhere (NaN included)
// noise is 1 and out = x, PyTorch's definition, here on native ops. A noise of another shape or dtype goes to the host.
bool rrelu_train(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                 std::optional<at::Generator> generator, at::Tensor& out) {
  if (!noise.sizes().equals(self.sizes()) || noise.scalar_type() != self.scalar_type() ||
      noise.device() != self.device() || !at::isFloatingType(self.scalar_type()))
    return false;
  noise.uniform_(lower.toDouble(), upper.toDouble(), generator);
  noise.masked_fill_(self.le(0).logical_not_(), 1);
  at::mul_out(out, self, noise);
  return true;
}

at::Tensor rrelu_with_noise(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower,
                            const c10::Scalar& upper, bool training, std::optional<at::Generator> generator) {
  at::Tensor out = at::empty_like(self);
  if (training && rrelu_train(self, noise, lower, upper, generator, out)) return out;
  if (!training) {
    axon_op_params_t p = params();
    p.negative_slope = (lower.toDouble() + upper.toDouble()) / 2;
    if (run(out, self, 1, AXON_UNARY_LEAKY_RELU, {&self}, p, "rrelu")) return out;
  }
  return fall_back<ATEN_OP(rrelu_with_noise)>(self, noise, lower, upper, training, generator);
}

at::Tensor& rrelu_with_noise_(at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                              bool training, std::optional<at::Generator> generator) {
  if (training && rrelu_train(self, noise, lower, upper, generator, self)) return self;
  if (!training) return at::leaky_relu_(self, (lower.toDouble() + upper.toDouble()) / 2);
  return fall_back<ATEN_OP(rrelu_with_noise_)>(self, noise, lower, upper, training, generator);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
  m.impl("logit", TORCH_FN(logit));
  m.impl("logit.out", TORCH_FN(logit_out));
  m.impl("logit_backward.grad_input", TORCH_FN(logit_backward_out));
  m.impl("softshrink.out", TORCH_FN(softshrink_out));
  m.impl("hardshrink.out", TORCH_FN(hardshrink_out));
  m.impl("softshrink", TORCH_FN(shrink<true>));
  m.impl("hardshrink", TORCH_FN(shrink<false>));
  m.impl("softshrink_backward.grad_input",
         TORCH_FN(shrink_backward_out<ATEN_OP2(softshrink_backward, grad_input)>));
  m.impl("hardshrink_backward.grad_input",
         TORCH_FN(shrink_backward_out<ATEN_OP2(hardshrink_backward, grad_input)>));
  m.impl("threshold.out", TORCH_FN(threshold_out));
  m.impl("threshold_", TORCH_FN(threshold_inplace));
  m.impl("glu.out", TORCH_FN(glu_out));
  m.impl("glu", TORCH_FN(glu));
  m.impl("glu_backward", TORCH_FN(glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(glu_backward_out));
  m.impl("_prelu_kernel", TORCH_FN(prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));
  m.impl("rrelu_with_noise", TORCH_FN(rrelu_with_noise));
  m.impl("rrelu_with_noise_", TORCH_FN(rrelu_with_noise_));
}

}  // namespace
}  // namespace torch_axon

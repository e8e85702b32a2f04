// torch.complex and torch.polar: a complex out is a real tensor of pairs (view_as_real), so each part is written by
// libaxon's copy kernel (complex) or by its pointwise kernels (polar: abs * cos(angle), abs * sin(angle), as
// PyTorch's CPU kernel computes them). complex32 outs work the same way, as float16 pairs. Mismatched or unsupported
// dtypes, conjugated outs and other devices go through the host fallback, which gives PyTorch's answer or error.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include "AxonFallback.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

// Whether real and imag (or abs and angle) can fill out natively: one float dtype (float16, float32, float64), out of
// its complex dtype, all on this backend, out without the conjugate bit.
bool parts_native(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  const auto t = a.scalar_type();
  const bool float_dtype = t == at::kHalf || t == at::kFloat || t == at::kDouble;
  return float_dtype && b.scalar_type() == t && out.scalar_type() == c10::toComplexType(t) && !out.is_conj() &&
         a.device() == out.device() && b.device() == out.device();
}

// out resized to the broadcast shape of a and b; returns its (real, imaginary) parts as real views.
std::pair<at::Tensor, at::Tensor> resized_parts(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  const auto shape = at::infer_size(a.sizes(), b.sizes());
  at::native::resize_output(out, shape);
  const at::Tensor pairs = at::view_as_real(out);
  return {pairs.select(-1, 0), pairs.select(-1, 1)};
}

at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  if (!parts_native(real, imag, out)) return fall_back<ATEN_OP2(complex, out)>(real, imag, out);
  auto [re, im] = resized_parts(real, imag, out);
  re.copy_(real.expand(re.sizes()));
  im.copy_(imag.expand(im.sizes()));
  return out;
}

at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  // float16 is CPU's refusal ("polar" is not implemented for Half): the fallback raises it.
  if (!parts_native(abs, angle, out) || abs.scalar_type() == at::kHalf) {
    return fall_back<ATEN_OP2(polar, out)>(abs, angle, out);
  }
  auto [re, im] = resized_parts(abs, angle, out);
  at::mul_out(re, abs, at::cos(angle));
  at::mul_out(im, abs, at::sin(angle));
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("complex.out", TORCH_FN(complex_out));
  m.impl("polar.out", TORCH_FN(polar_out));
}

}  // namespace
}  // namespace torch_axon

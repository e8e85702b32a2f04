// torch.complex and torch.polar. float32 and float64 parts go to libaxon's complex_parts kernel over the iterator
// PyTorch's CPU kernels build (broadcasting, out's resize and overlap checks); polar's cos and sin are the unary
// kernels' loops, times abs, as PyTorch's CPU kernel computes abs * cos(angle), abs * sin(angle). complex() of
// float16 parts fills the complex32 out's halves with libaxon's copy kernel (a complex32 out is a float16 tensor of
// pairs). Mismatched or unsupported dtypes, conjugated outs and other devices go through the host fallback, which
// gives PyTorch's answer or error.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Operators.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <axon/complex_parts.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
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

// out = the complex numbers of a and b (float32 or float64) through the iterator CPU's kernel builds; false where the
// iterator has more dimensions than libaxon's descriptors.
bool run_parts(axon_complex_parts_t parts, const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(out)
                                .add_const_input(a)
                                .add_const_input(b)
                                .check_all_same_dtype(false)
                                .build();
  if (iter.ndim() > AXON_MAX_DIMS) return false;
  if (iter.numel() == 0) return true;
  const axon_dtype_t real = a.scalar_type() == at::kFloat ? AXON_FLOAT32 : AXON_FLOAT64;
  const axon_dtype_t complex = real == AXON_FLOAT32 ? AXON_COMPLEX64 : AXON_COMPLEX128;
  const axon_tensor_t o = describe_iter_operand(iter, 0, complex), ad = describe_iter_operand(iter, 1, real),
                      bd = describe_iter_operand(iter, 2, real);
  AXON_CHECK(axon_kernel_complex_parts(current_stream(out.device().index()), parts, &o, &ad, &bd));
  return true;
}

at::Tensor& complex_out(const at::Tensor& real, const at::Tensor& imag, at::Tensor& out) {
  if (!parts_native(real, imag, out)) return fall_back<ATEN_OP2(complex, out)>(real, imag, out);
  if (real.scalar_type() != at::kHalf && run_parts(AXON_PARTS_CARTESIAN, real, imag, out)) return out;
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
  if (run_parts(AXON_PARTS_POLAR, abs, angle, out)) return out;
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

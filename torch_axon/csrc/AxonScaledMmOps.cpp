// torch._scaled_mm for float8 operands (e4m3fn, e5m2) the way PyTorch CPU computes it when oneDNN has no float8
// kernel: each operand widened to float32 and multiplied by its scale (a 1-element tensor, or one scale per row of
// self and per column of mat2), one float32 product, the bias added, then the cast to out's dtype (float32, bfloat16
// or float16). Composed from axon's own cast, mul, mm and add kernels, so nothing leaves the device and
// no scale is read back to the host. Other operand dtypes go to the host fallback, which raises CPU's error; so do
// float8 results: CPU's conversion there turns an e4m3fn overflow into NaN (where a cast saturates to 448) by a rule
// not documented, and the op database checks it bit for bit.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "AxonFallback.h"

namespace torch_axon {
namespace {

bool is_float8(const at::Tensor& t) {
  return t.scalar_type() == c10::kFloat8_e4m3fn || t.scalar_type() == c10::kFloat8_e5m2;
}

// A scale that broadcasts over the operand's float32 copy as CPU applies it: one element, or a column [rows, 1] for
// self and a row [1, cols] for mat2.
bool scale_fits(const at::Tensor& scale, const at::Tensor& mat, bool rows) {
  if (scale.numel() == 1) return true;
  if (scale.dim() != 2) return false;
  return rows ? scale.size(0) == mat.size(0) && scale.size(1) == 1 : scale.size(0) == 1 && scale.size(1) == mat.size(1);
}

at::Tensor& scaled_mm_out(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                          const std::optional<at::Tensor>& scale_result, std::optional<c10::ScalarType> out_dtype,
                          bool use_fast_accum, at::Tensor& out) {
  const c10::ScalarType dtype = out_dtype.value_or(self.scalar_type());
  const bool native = is_float8(self) && is_float8(mat2) && self.dim() == 2 && mat2.dim() == 2 &&
                      (dtype == c10::kFloat || dtype == c10::kBFloat16 || dtype == c10::kHalf) &&
                      self.size(1) == mat2.size(0) && scale_fits(scale_a, self, true) &&
                      scale_fits(scale_b, mat2, false) && scale_a.is_floating_point() && scale_b.is_floating_point();
  if (!native)
    return fall_back<ATEN_OP2(_scaled_mm, out)>(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype,
                                                use_fast_accum, out);
  TORCH_CHECK(out.scalar_type() == dtype, "_scaled_mm: out has dtype ", out.scalar_type(), ", expected ", dtype);
  auto flat = [](const at::Tensor& s) { return s.numel() == 1 ? s.reshape({}).to(c10::kFloat) : s.to(c10::kFloat); };
  const at::Tensor a = self.to(c10::kFloat).mul_(flat(scale_a));
  const at::Tensor b = mat2.to(c10::kFloat).mul_(flat(scale_b));
  at::Tensor product = at::mm(a, b);
  if (bias.has_value() && bias->defined()) product.add_(*bias);
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  out.copy_(product);
  return out;
}

at::Tensor scaled_mm(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                     const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                     const std::optional<at::Tensor>& scale_result, std::optional<c10::ScalarType> out_dtype,
                     bool use_fast_accum) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_dtype.value_or(self.scalar_type())));
  return scaled_mm_out(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_mm", TORCH_FN(scaled_mm));
  m.impl("_scaled_mm.out", TORCH_FN(scaled_mm_out));
}

}  // namespace torch_axon

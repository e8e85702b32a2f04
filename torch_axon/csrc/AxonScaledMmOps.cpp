// torch._scaled_mm for float8 operands (e4m3fn, e5m2) as PyTorch CPU computes it: each operand widened to float32
// and multiplied by its scale (a 1-element tensor, or one scale per row of self and per column of mat2), one float32
// product, the bias added, then the result in out's dtype (float32, bfloat16, float16, or float8 as CPU's oneDNN
// kernel or its emulation rounds it, whichever CPU would pick on this machine). Composed from axon's own cast, mul,
// mm and add kernels (float8 values convert through the host's casts), and no scale is read back to the host. Other
// operand dtypes go to the host fallback, which raises CPU's error.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <limits>

#include "AxonFallback.h"
#include "AxonFunctions.h"

namespace torch_axon {
namespace {

bool is_float8_type(c10::ScalarType t) { return t == c10::kFloat8_e4m3fn || t == c10::kFloat8_e5m2; }

bool is_float8(const at::Tensor& t) { return is_float8_type(t.scalar_type()); }

// A scale that broadcasts over the operand's float32 copy as CPU applies it: one element, or a column [rows, 1] for
// self and a row [1, cols] for mat2.
bool scale_fits(const at::Tensor& scale, const at::Tensor& mat, bool rows) {
  if (scale.numel() == 1) return true;
  if (scale.dim() != 2) return false;
  return rows ? scale.size(0) == mat.size(0) && scale.size(1) == 1 : scale.size(0) == 1 && scale.size(1) == mat.size(1);
}

// Whether PyTorch CPU runs these operands on oneDNN's float8 kernel rather than its float32 emulation (Blas.cpp's
// _scaled_mm_out_cpu): oneDNN enabled, one scale per operand, and AMX-INT8 for operands of one float8 dtype,
// AMX-FP16 for two. The two round a float8 result differently (float8_result below).
bool cpu_takes_onednn(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                      const at::Tensor& scale_b) {
  if (!at::globalContext().userEnabledMkldnn() || scale_a.numel() != 1 || scale_b.numel() != 1) return false;
  static const unsigned features = [] {
    axon_device_t dev = nullptr;
    axon_device_props_t p{};
    return axon_device_get(runtime(), 0, &dev) == AXON_OK && axon_device_properties(dev, &p) == AXON_OK
               ? p.cpu_features
               : 0u;
  }();
  return (features & (self.scalar_type() == mat2.scalar_type() ? AXON_CPU_AMX_INT8 : AXON_CPU_AMX_FP16)) != 0;
}

// product (float32, bias added) into a float8 out as CPU computes it. Both of its paths multiply by 1 / scale_result
// (a float32 reciprocal), but only when out_dtype was given. oneDNN's kernel then rounds to float16 and from there to
// float8, an e4m3fn overflow (past 464 in float16) giving NaN of the value's sign; the emulation casts directly,
// which saturates e4m3fn at 448.
void float8_result(at::Tensor& product, bool onednn, const std::optional<at::Tensor>& scale_result,
                   bool out_dtype_given, at::Tensor& out) {
  if (out_dtype_given && scale_result.has_value() && scale_result->defined())
    product.mul_(scale_result->to(c10::kFloat).reshape({}).reciprocal());
  if (!onednn) {
    out.copy_(product);
    return;
  }
  at::Tensor h = product.to(c10::kHalf);
  if (out.scalar_type() == c10::kFloat8_e4m3fn) {
    const at::Tensor nan = at::copysign(at::full_like(h, std::numeric_limits<float>::quiet_NaN()), h);
    h = at::where(h.abs() > 464, nan, h);
  }
  out.copy_(h);
}

at::Tensor& scaled_mm_out(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                          const std::optional<at::Tensor>& scale_result, std::optional<c10::ScalarType> out_dtype,
                          bool use_fast_accum, at::Tensor& out) {
  const c10::ScalarType dtype = out_dtype.value_or(self.scalar_type());
  const bool native = is_float8(self) && is_float8(mat2) && self.dim() == 2 && mat2.dim() == 2 &&
                      (dtype == c10::kFloat || dtype == c10::kBFloat16 || dtype == c10::kHalf ||
                       is_float8_type(dtype)) &&
                      scale_a.device() == self.device() && scale_b.device() == self.device() &&
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
  if (is_float8_type(dtype)) {
    float8_result(product, cpu_takes_onednn(self, mat2, scale_a, scale_b), scale_result, out_dtype.has_value(), out);
  } else {
    out.copy_(product);
  }
  return out;
}

at::Tensor scaled_mm(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                     const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                     const std::optional<at::Tensor>& scale_result, std::optional<c10::ScalarType> out_dtype,
                     bool use_fast_accum) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_dtype.value_or(self.scalar_type())));
  return scaled_mm_out(self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum, out);
}

// torch._scaled_mm_v2 (scales as lists, with a recipe and a swizzle each): one tensor-wise or row-wise scale per
// operand, unswizzled, over the usual contraction, is _scaled_mm's computation above. Other recipes (block-wise
// scales), swizzles and float8 results go to the host fallback, which computes or refuses them as CPU does.
constexpr int64_t kTensorWise = 0, kRowWise = 1, kNoSwizzle = 0;

at::Tensor scaled_mm_v2(const at::Tensor& self, const at::Tensor& mat2, at::TensorList scale_a,
                        at::IntArrayRef recipe_a, at::IntArrayRef swizzle_a, at::TensorList scale_b,
                        at::IntArrayRef recipe_b, at::IntArrayRef swizzle_b, const std::optional<at::Tensor>& bias,
                        std::optional<c10::ScalarType> out_dtype, at::IntArrayRef contraction_dim,
                        bool use_fast_accum) {
  const auto one_recipe = [](at::TensorList scales, at::IntArrayRef recipe, at::IntArrayRef swizzle) {
    return scales.size() == 1 && recipe.size() == 1 && (recipe[0] == kTensorWise || recipe[0] == kRowWise) &&
           (swizzle.empty() || (swizzle.size() == 1 && swizzle[0] == kNoSwizzle));
  };
  const bool native = one_recipe(scale_a, recipe_a, swizzle_a) && one_recipe(scale_b, recipe_b, swizzle_b) &&
                      recipe_a[0] == recipe_b[0] && contraction_dim.empty() && out_dtype.has_value() &&
                      !is_float8_type(*out_dtype) && self.device() == mat2.device() &&
                      scale_a[0].device() == self.device() && scale_b[0].device() == self.device() &&
                      (recipe_a[0] == kTensorWise ? scale_a[0].numel() == 1 && scale_b[0].numel() == 1
                                                  : scale_a[0].dim() == 2 && scale_b[0].dim() == 2);
  if (!native) {
    return fall_back<ATEN_OP(_scaled_mm_v2)>(self, mat2, scale_a, recipe_a, swizzle_a, scale_b, recipe_b, swizzle_b,
                                             bias, out_dtype, contraction_dim, use_fast_accum);
  }
  return scaled_mm(self, mat2, scale_a[0], scale_b[0], bias, std::nullopt, out_dtype, use_fast_accum);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_mm", TORCH_FN(scaled_mm));
  m.impl("_scaled_mm.out", TORCH_FN(scaled_mm_out));
  m.impl("_scaled_mm_v2", TORCH_FN(scaled_mm_v2));
}

}  // namespace torch_axon

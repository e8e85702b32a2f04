// Matrix products on libaxon's GEMM kernel (libaxon/include/axon/gemm.h): mm, bmm, addmm and baddbmm, which
// matmul, linear and the autograd formulas of both reach, and addmv, dot and vdot (real) over views of them. The
// checks and messages are PyTorch's; addmm's input, when it is a row vector broadcast over the rows (linear's bias),
// goes to the kernel as its bias instead of being copied into out first. Complex64 and complex128 take libaxon's
// cgemm/zgemm path, complex alpha and beta scaling the product on the pointwise kernels; what libaxon does not cover
// (bool, complex dot and vdot) runs through the host fallback.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/addmm_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/addr_native.h>
#include <ATen/ops/baddbmm_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/bmm_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/mm_compositeexplicitautogradnonfunctional_dispatch.h>
#include <axon/gemm.h>
#include <axon/pointwise.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string_view>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool gemm_dtype(c10::ScalarType t) {
  return kernels_support(t) && t != c10::kBool && !c10::isComplexType(t);
}

// The products also take complex64/complex128 (alpha and beta any numbers). A conjugate view reaches them unresolved
// (PyTorch's Conjugate key lets the matrix products through, for BLAS's conjugate-transpose flags), so the operands
// are materialized first (resolve_conj: a no-op for the others); a conjugate out goes to the host.
bool product_dtype(c10::ScalarType t, const c10::Scalar& beta = 0, const c10::Scalar& alpha = 1) {
  if (t == c10::kComplexFloat || t == c10::kComplexDouble) return true;
  return gemm_dtype(t) && !beta.isComplex() && !alpha.isComplex();  // else PyTorch's refusal, from the host
}

void check_operands(const char* op, const at::Tensor& a, const at::Tensor& b, int64_t dims, const at::Tensor& out) {
  TORCH_CHECK(a.dim() == dims, op, ": self must be a ", dims, "D tensor");
  TORCH_CHECK(b.dim() == dims, op, ": mat2 must be a ", dims, "D tensor");
  // CPU's kernels' messages (the meta functions leave dtypes to the kernels)
  if (dims == 3) {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected scalar type ", a.scalar_type(), " but found ",
                b.scalar_type());
  } else if (std::string_view(op) == "addmm") {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "mat1 and mat2 must have the same dtype, but got ",
                a.scalar_type(), " and ", b.scalar_type());
  } else {
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected m1 and m2 to have the same dtype, but got: ", a.dtype(),
                " != ", b.dtype());
  }
  TORCH_CHECK(out.scalar_type() == a.scalar_type(), op, ": expected out to have dtype ", a.scalar_type(),
              ", but got ", out.scalar_type());
  if (dims == 2) {
    TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
                " and ", b.size(0), "x", b.size(1), ")");
  } else {
    TORCH_CHECK(a.size(0) == b.size(0), "batch1 and batch2 must have same number of batches, got ", a.size(0),
                " and ", b.size(0));
    TORCH_CHECK(a.size(2) == b.size(1), "Expected size for first two dimensions of batch2 tensor to be: [", a.size(0),
                ", ", a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  }
}

std::vector<int64_t> product_shape(const at::Tensor& a, const at::Tensor& b) {
  if (a.dim() == 2) return {a.size(0), b.size(1)};
  return {a.size(0), a.size(1), b.size(2)};
}

void launch(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const axon_gemm_params_t& p,
            const char* name) {
  const axon_tensor_t od = describe(out, name), ad = describe(a, name), bd = describe(b, name);
  AXON_CHECK(axon_kernel_matmul(current_stream(out.device().index()), &od, &ad, &bd, &p));
}

void launch_described(const axon_tensor_t& out, const axon_tensor_t& a, const axon_tensor_t& b,
                      c10::DeviceIndex device) {
  const axon_gemm_params_t p = axon_gemm_params_default();
  AXON_CHECK(axon_kernel_matmul(current_stream(device), &out, &a, &b, &p));
}

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_operands("mm", self, mat2, 2, out);
  if (!product_dtype(self.scalar_type()) || out.is_conj()) return fall_back<ATEN_OP2(mm, out)>(self, mat2, out);
  at::native::resize_output(out, product_shape(self, mat2));
  launch(out, self.resolve_conj(), mat2.resolve_conj(), axon_gemm_params_default(), "mm");
  return out;
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_operands("bmm", self, mat2, 3, out);
  if (!product_dtype(self.scalar_type()) || out.is_conj()) return fall_back<ATEN_OP2(bmm, out)>(self, mat2, out);
  at::native::resize_output(out, product_shape(self, mat2));
  launch(out, self.resolve_conj(), mat2.resolve_conj(), axon_gemm_params_default(), "bmm");
  return out;
}

// out = beta * input + alpha * (a @ b), input broadcast to the product's shape.
void add_product(const at::Tensor& input, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta,
                 const c10::Scalar& alpha, at::Tensor& out, const char* name) {
  const auto shape = product_shape(a, b);
  const bool out_is_input = out.is_same(input);
  if (!out_is_input) at::native::resize_output(out, shape);
  TORCH_CHECK(out.sizes() == at::IntArrayRef(shape), name, ": the result of shape ", at::IntArrayRef(shape),
              " does not fit the in-place input of shape ", out.sizes());
  if (alpha.isComplex() || beta.isComplex()) {
    // libaxon's GEMM scales by real numbers: the product goes to a temporary, the complex scaling to the pointwise
    // kernels. beta = 0 ignores input (NaN included), as PyTorch does.
    at::Tensor product = at::empty(shape, out.options());
    launch(product, a, b, axon_gemm_params_default(), name);
    if (beta.toComplexDouble() == 0.0) {
      at::mul_out(out, product, alpha);
    } else {
      at::add_out(out, at::mul(product, alpha), input, beta);
    }
    return;
  }
  axon_gemm_params_t p = axon_gemm_params_default();
  // Integer products take alpha and beta as integers, truncated as PyTorch's CPU kernels do (alpha=0.6 is 0).
  const bool integral = c10::isIntegralType(out.scalar_type(), /*includeBool=*/false);
  p.alpha = integral ? static_cast<double>(alpha.toLong()) : alpha.toDouble();
  const double beta_v = integral ? static_cast<double>(beta.toLong()) : beta.toDouble();
  const int64_t n = shape.back();
  // A row vector broadcast over rows (linear's bias) becomes the kernel's bias: no copy into out first.
  const bool row_bias = !out_is_input && beta_v != 0.0 && input.numel() == n &&
                        (input.dim() == 1 || (input.dim() >= 1 && input.size(-1) == n));
  axon_tensor_t bias{};
  if (row_bias) {
    bias = describe(input.reshape({n}), name);
    p.bias = &bias;
    p.bias_scale = beta_v;
  } else if (beta_v != 0.0) {
    if (!out_is_input) out.copy_(input.expand(shape));
    p.beta = beta_v;
  }
  launch(out, a, b, p, name);
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == mat2.scalar_type(), "self and mat2 must have the same dtype, but got ",
              self.scalar_type(), " and ", mat2.scalar_type());
  check_operands("addmm", mat1, mat2, 2, out);
  if (!product_dtype(mat1.scalar_type(), beta, alpha) || out.is_conj()) {
    return fall_back<ATEN_OP2(addmm, out)>(self, mat1, mat2, beta, alpha, out);
  }
  add_product(self.resolve_conj(), mat1.resolve_conj(), mat2.resolve_conj(), beta, alpha, out, "addmm");
  return out;
}

at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                        const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == batch1.scalar_type(), "Input dtypes must be the same, got: input ", self.dtype(),
              ", batch1: ", batch1.dtype(), ", batch2: ", batch2.dtype());
  check_operands("baddbmm", batch1, batch2, 3, out);
  if (!product_dtype(batch1.scalar_type(), beta, alpha) || out.is_conj()) {
    return fall_back<ATEN_OP2(baddbmm, out)>(self, batch1, batch2, beta, alpha, out);
  }
  add_product(self.resolve_conj(), batch1.resolve_conj(), batch2.resolve_conj(), beta, alpha, out, "baddbmm");
  return out;
}

// The functional forms of the products, registered directly: PyTorch's generic route to `.out` runs the structured
// meta function (its checks, and the output allocated through the dispatcher) before the .out kernel checks again.
// Operands that would fail a check take that generic route, for the meta function's own messages.
bool valid_product(const at::Tensor& a, const at::Tensor& b, int64_t dims, const at::Tensor* self = nullptr) {
  if (a.dim() != dims || b.dim() != dims || a.scalar_type() != b.scalar_type()) return false;
  if (a.size(-1) != b.size(-2) || (dims == 3 && a.size(0) != b.size(0))) return false;
  return !self || (self->scalar_type() == a.scalar_type() && at::is_expandable_to(self->sizes(), product_shape(a, b)));
}

at::Tensor mm(const at::Tensor& self, const at::Tensor& mat2) {
  if (!valid_product(self, mat2, 2)) return at::compositeexplicitautogradnonfunctional::mm(self, mat2);
  at::Tensor out = at::empty(product_shape(self, mat2), self.options());
  return mm_out(self, mat2, out);
}

at::Tensor bmm(const at::Tensor& self, const at::Tensor& mat2) {
  if (!valid_product(self, mat2, 3)) return at::compositeexplicitautogradnonfunctional::bmm(self, mat2);
  at::Tensor out = at::empty(product_shape(self, mat2), self.options());
  return bmm_out(self, mat2, out);
}

at::Tensor addmm(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  if (!valid_product(mat1, mat2, 2, &self))
    return at::compositeexplicitautogradnonfunctional::addmm(self, mat1, mat2, beta, alpha);
  at::Tensor out = at::empty(product_shape(mat1, mat2), mat1.options());
  return addmm_out(self, mat1, mat2, beta, alpha, out);
}

at::Tensor baddbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                   const c10::Scalar& beta, const c10::Scalar& alpha) {
  if (!valid_product(batch1, batch2, 3, &self))
    return at::compositeexplicitautogradnonfunctional::baddbmm(self, batch1, batch2, beta, alpha);
  at::Tensor out = at::empty(product_shape(batch1, batch2), batch1.options());
  return baddbmm_out(self, batch1, batch2, beta, alpha, out);
}

// addmv of real operands as one row product: vec as [1, m] times mat's transpose into out seen as [1, n], with self
// (n elements, or one broadcast) as the kernel's row bias: no view, copy or meta function. An undefined self is mv (no
// bias). False where it does not apply (complex numbers, other dtypes or devices, shapes ATen refuses, an out that is
// not a fresh contiguous vector of n elements apart from self).
bool addmv_direct(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                  const c10::Scalar& alpha, at::Tensor& out) {
  const c10::ScalarType t = mat.scalar_type();
  if (mat.dim() != 2 || vec.dim() != 1 || mat.size(1) != vec.size(0) || !gemm_dtype(t) || vec.scalar_type() != t ||
      vec.device() != mat.device() || alpha.isComplex() || beta.isComplex()) {
    return false;
  }
  const int64_t n = mat.size(0), m = mat.size(1);
  if (self.defined() && (self.dim() > 1 || self.scalar_type() != t || self.device() != mat.device() ||
                         (self.numel() != n && self.numel() != 1))) {
    return false;
  }
  if (!out.defined()) {
    out = at::empty({n}, mat.options());
  } else if (out.scalar_type() != t || out.device() != mat.device() || out.dim() != 1 || out.size(0) != n ||
             !out.is_contiguous() || out.is_conj() || out.is_neg() || (self.defined() && out.is_alias_of(self)) ||
             out.is_alias_of(mat) || out.is_alias_of(vec)) {
    return false;
  }
  if (n == 0) return true;
  axon_gemm_params_t p = axon_gemm_params_default();
  const bool integral = c10::isIntegralType(t, /*includeBool=*/false);  // PyTorch truncates alpha and beta there
  p.alpha = integral ? static_cast<double>(alpha.toLong()) : alpha.toDouble();
  const double beta_v = integral ? static_cast<double>(beta.toLong()) : beta.toDouble();
  axon_tensor_t bias{};
  if (self.defined() && beta_v != 0.0) {  // beta = 0 ignores self, NaN included
    const int64_t bias_size[1] = {n}, bias_stride[1] = {self.numel() == 1 ? 0 : self.stride(0)};
    bias = describe_strided(self, 1, bias_size, bias_stride);
    p.bias = &bias;
    p.bias_scale = beta_v;
  }
  const int64_t out_sizes[2] = {1, n}, out_strides[2] = {n, 1};
  const int64_t vec_sizes[2] = {1, m}, vec_strides[2] = {m * vec.stride(0), vec.stride(0)};
  const int64_t mat_sizes[2] = {m, n}, mat_strides[2] = {mat.stride(1), mat.stride(0)};
  const axon_tensor_t od = describe_strided(out, 2, out_sizes, out_strides);
  const axon_tensor_t ad = describe_strided(vec, 2, vec_sizes, vec_strides);
  const axon_tensor_t bd = describe_strided(mat, 2, mat_sizes, mat_strides);
  AXON_CHECK(axon_kernel_matmul(current_stream(mat.device().index()), &od, &ad, &bd, &p));
  return true;
}

at::Tensor addmv(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                 const c10::Scalar& alpha) {
  at::Tensor out;
  if (addmv_direct(self, mat, vec, beta, alpha, out)) return out;
  out = at::empty({0}, mat.options());
  return at::addmv_out(out, self, mat, vec, beta, alpha);
}

// out = beta * self + alpha * (mat @ vec): addmv_direct where it applies, else as addmm over [n, 1] views (in-place
// and aliased outs, complex numbers). Operands PyTorch refuses go to the host fallback, which raises its errors.
at::Tensor& addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  if (addmv_direct(self, mat, vec, beta, alpha, out)) return out;
  const bool valid = mat.dim() == 2 && vec.dim() == 1 && self.dim() <= 1 && mat.size(1) == vec.size(0) &&
                     (mat.size(0) == self.numel() || self.numel() == 1) &&
                     product_dtype(mat.scalar_type(), beta, alpha) && !out.is_conj() &&
                     vec.scalar_type() == mat.scalar_type() && self.scalar_type() == mat.scalar_type() &&
                     out.scalar_type() == mat.scalar_type() && vec.device() == mat.device() &&
                     self.device() == mat.device() && out.device() == mat.device();
  if (!valid) return fall_back<ATEN_OP2(addmv, out)>(self, mat, vec, beta, alpha, out);
  const int64_t n = mat.size(0), m = mat.size(1);
  if (!out.is_same(self)) at::native::resize_output(out, {n});
  at::Tensor out2 = out.view({n, 1});
  add_product(self.resolve_conj().reshape({self.numel(), 1}).expand({n, 1}), mat.resolve_conj(),
              vec.resolve_conj().view({m, 1}), beta, alpha, out2, "addmv");
  return out;
}

// mv: real products as addmv_direct without a bias (ATen's composite reaches addmv_ and its meta function first);
// anything else takes that composite's route, with its checks.
at::Tensor mv(const at::Tensor& self, const at::Tensor& vec) {
  at::Tensor out;
  if (addmv_direct(at::Tensor(), self, vec, 0, 1, out)) return out;
  at::Tensor result = at::empty({self.size(0)}, vec.options());
  return at::addmv_(result, self, vec, 0, 1);
}

// dot and vdot (self conjugated) as a [1, n] x [n, 1] product.
at::Tensor dot_product(const at::Tensor& self, const at::Tensor& other, bool conjugate) {
  const bool valid = self.dim() == 1 && other.dim() == 1 && self.scalar_type() == other.scalar_type() &&
                     self.numel() == other.numel() && product_dtype(self.scalar_type()) &&
                     other.device() == self.device();
  if (!valid) return conjugate ? fall_back<ATEN_OP(vdot)>(self, other) : fall_back<ATEN_OP(dot)>(self, other);
  const int64_t n = self.numel();
  if (gemm_dtype(self.scalar_type())) {
    // Real: [1, n] x [n, 1] descriptors of the vectors themselves, into a 0-dim out (three views and mm's checks
    // were most of a small dot's time).
    at::Tensor out = at::empty({}, self.options());
    const int64_t rows[2] = {1, n}, row_strides[2] = {n * self.stride(0), self.stride(0)};
    const int64_t cols[2] = {n, 1}, col_strides[2] = {other.stride(0), 1};
    const int64_t one[2] = {1, 1};
    launch_described(describe_strided(out, 2, one, one), describe_strided(self, 2, rows, row_strides),
                     describe_strided(other, 2, cols, col_strides), self.device().index());
    return out;
  }
  at::Tensor out = at::empty({1, 1}, self.options());
  mm_out((conjugate ? self.conj() : self).view({1, n}), other.view({n, 1}), out);
  return out.view(at::IntArrayRef{});  // {} alone would pick view(ScalarType)
}

// addbmm: out = beta * self + alpha * sum_b batch1[b] @ batch2[b], the sum over b being one product's inner sum:
// [n, B * k] x [B * k, m] with batch1's batches side by side. Shapes PyTorch refuses go to the host, with its errors.
at::Tensor& addbmm_out(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  const bool valid = batch1.dim() == 3 && batch2.dim() == 3 && batch1.size(0) == batch2.size(0) &&
                     batch1.size(2) == batch2.size(1) && batch1.scalar_type() == batch2.scalar_type() &&
                     self.scalar_type() == batch1.scalar_type() && out.scalar_type() == batch1.scalar_type() &&
                     product_dtype(batch1.scalar_type(), beta, alpha) && !out.is_conj() &&
                     batch1.device() == self.device() && batch2.device() == self.device() &&
                     out.device() == self.device() && self.dim() <= 2 &&
                     at::is_expandable_to(self.sizes(), {batch1.size(1), batch2.size(2)});
  if (!valid) return fall_back<ATEN_OP2(addbmm, out)>(self, batch1, batch2, beta, alpha, out);
  const int64_t b = batch1.size(0), n = batch1.size(1), k = batch1.size(2), m = batch2.size(2);
  const at::Tensor a = batch1.transpose(0, 1).reshape({n, b * k}), c = batch2.reshape({b * k, m});
  add_product(self.resolve_conj(), a.resolve_conj(), c.resolve_conj(), beta, alpha, out, "addbmm");
  return out;
}

at::Tensor addbmm(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
  at::Tensor out = at::empty({0}, self.options());
  return addbmm_out(self, batch1, batch2, beta, alpha, out);
}

at::Tensor& addbmm_(at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2, const c10::Scalar& beta,
                    const c10::Scalar& alpha) {
  return addbmm_out(self, batch1, batch2, beta, alpha, self);
}

// addr: beta * self + alpha * outer(vec1, vec2). Real dtypes are one ternary kernel (AXON_TERNARY_ADDR) over
// [len(vec1), len(vec2)] with self broadcast, vec1 down the rows and vec2 across them by their strides: no view,
// iterator or outer product. Complex numbers with beta 1 are addcmul(self, vec1[:, None], vec2, alpha); the rest
// (bool, complex with other betas, arguments PyTorch refuses) goes to ATen's composite, with its errors. (Its out=
// form calls at::addr, so the functional form must never come back here for the composite.)

// CPU's checks, in its order and with its messages: 1-D vectors, then self expandable to [len(vec1), len(vec2)].
void addr_check(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2) {
  TORCH_CHECK(vec1.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  TORCH_CHECK(vec2.dim() == 1, "addr: Expected 1-D argument vec2, but got ", vec2.dim(), "-D");
  if (!at::is_expandable_to(self.sizes(), {vec1.size(0), vec2.size(0)}))
    (void)self.expand({vec1.size(0), vec2.size(0)});   // raises expand's own error, as CPU's addr does
}

bool addr_operands_match(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2) {
  const c10::ScalarType t = self.scalar_type();
  return vec1.scalar_type() == t && vec2.scalar_type() == t && vec1.device() == self.device() &&
         vec2.device() == self.device();
}

// The ternary kernel into out (undefined: a new tensor); false where it does not apply. addr_check has run.
bool addr_direct(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const c10::Scalar& beta,
                 const c10::Scalar& alpha, at::Tensor& out) {
  const c10::ScalarType t = self.scalar_type();
  const auto d = axon_dtype_of(t);
  const bool integral = c10::isIntegralType(t, /*includeBool=*/false);
  if (!addr_operands_match(self, vec1, vec2) || !d || !axon_ternary_supports(AXON_TERNARY_ADDR, *d) ||
      beta.isComplex() || alpha.isComplex() || beta.isBoolean() || alpha.isBoolean() ||
      (integral && (beta.isFloatingPoint() || alpha.isFloatingPoint()))) {  // PyTorch's refusals stay its own
    return false;
  }
  const int64_t n = vec1.size(0), m = vec2.size(0);
  if (!out.defined()) {
    out = at::empty({n, m}, self.options());
  } else {
    if (out.scalar_type() != t || out.device() != self.device()) return false;
    at::native::resize_output(out, {n, m});
    if (!out.is_contiguous()) return false;
    for (const at::Tensor* x : {&self, &vec1, &vec2}) {  // out = self (addr_) is fine: one element at a time
      const at::MemOverlapStatus s = at::get_overlap_status(out, *x);
      if (s != at::MemOverlapStatus::No && !(s == at::MemOverlapStatus::Full && x == &self)) return false;
    }
  }
  if (out.numel() == 0) return true;
  const int64_t sizes[2] = {n, m}, out_strides[2] = {m, 1};
  int64_t self_strides[2] = {0, 0};
  for (int64_t k = 0; k < self.dim(); ++k) {  // broadcast from the right: size-1 dimensions repeat
    const int64_t at = 2 - self.dim() + k;
    self_strides[at] = self.size(k) == 1 ? 0 : self.stride(k);
  }
  const int64_t vec1_strides[2] = {vec1.stride(0), 0}, vec2_strides[2] = {0, vec2.stride(0)};
  const axon_tensor_t od = describe_strided(out, 2, sizes, out_strides);
  const axon_tensor_t sd = describe_strided(self, 2, sizes, self_strides);
  const axon_tensor_t ad = describe_strided(vec1, 2, sizes, vec1_strides);
  const axon_tensor_t bd = describe_strided(vec2, 2, sizes, vec2_strides);
  axon_op_params_t p = axon_op_params_default();
  p.alpha = to_axon_scalar(alpha);
  p.beta = integral ? static_cast<double>(beta.toLong()) : beta.toDouble();
  p.compute = *d;
  AXON_CHECK(axon_kernel_ternary(current_stream(self.device().index()), AXON_TERNARY_ADDR, &od, &sd, &ad, &bd, &p));
  return true;
}

// Complex numbers with beta 1: addcmul's complex loop.
bool addr_as_addcmul(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const c10::Scalar& beta,
                     c10::ScalarType out_type, c10::Device out_device) {
  return addr_operands_match(self, vec1, vec2) && at::isComplexType(self.scalar_type()) &&
         out_type == self.scalar_type() && out_device == self.device() && !beta.isComplex() && !beta.isBoolean() &&
         beta.toDouble() == 1.0;
}

at::Tensor& addr_out(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const c10::Scalar& beta,
                     const c10::Scalar& alpha, at::Tensor& out) {
  addr_check(self, vec1, vec2);
  if (addr_direct(self, vec1, vec2, beta, alpha, out)) return out;
  if (!addr_as_addcmul(self, vec1, vec2, beta, out.scalar_type(), out.device()))
    return at::native::math_addr_out(self, vec1, vec2, beta, alpha, out);
  return at::addcmul_out(out, self, vec1.unsqueeze(1), vec2, alpha);
}

at::Tensor addr(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const c10::Scalar& beta,
                const c10::Scalar& alpha) {
  addr_check(self, vec1, vec2);
  at::Tensor out;
  if (addr_direct(self, vec1, vec2, beta, alpha, out)) return out;
  if (!addr_as_addcmul(self, vec1, vec2, beta, self.scalar_type(), self.device()))
    return at::native::math_addr(self, vec1, vec2, beta, alpha);
  return at::addcmul(self, vec1.unsqueeze(1), vec2, alpha);
}

at::Tensor& addr_(at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
  addr_check(self, vec1, vec2);
  TORCH_CHECK(self.dim() == 2 && self.size(0) == vec1.size(0) && self.size(1) == vec2.size(0),
              "size mismatch, input: ", self.sizes(), ", v1: ", vec1.sizes(), ", v2: ", vec2.sizes());
  return addr_out(self, vec1, vec2, beta, alpha, self);
}

at::Tensor dot(const at::Tensor& self, const at::Tensor& other) { return dot_product(self, other, false); }
at::Tensor vdot(const at::Tensor& self, const at::Tensor& other) { return dot_product(self, other, true); }

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("addmv", TORCH_FN(addmv));
  m.impl("addmv.out", TORCH_FN(addmv_out));
  m.impl("mv", TORCH_FN(mv));
  m.impl("addr", TORCH_FN(addr));
  m.impl("addr_", TORCH_FN(addr_));
  m.impl("addr.out", TORCH_FN(addr_out));
  m.impl("dot", TORCH_FN(dot));
  m.impl("vdot", TORCH_FN(vdot));
  m.impl("mm.out", TORCH_FN(mm_out));
  m.impl("mm", TORCH_FN(mm));
  m.impl("bmm.out", TORCH_FN(bmm_out));
  m.impl("bmm", TORCH_FN(bmm));
  m.impl("addmm.out", TORCH_FN(addmm_out));
  m.impl("addmm", TORCH_FN(addmm));
  m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
  m.impl("baddbmm", TORCH_FN(baddbmm));
  m.impl("addbmm", TORCH_FN(addbmm));
  m.impl("addbmm_", TORCH_FN(addbmm_));
  m.impl("addbmm.out", TORCH_FN(addbmm_out));
}

}  // namespace
}  // namespace torch_axon

// Pointwise ATen ops on libaxon's pointwise kernels (libaxon/include/axon/pointwise.h).
//
// Each op builds the TensorIterator its CPU kernel would build (the same broadcasting, type promotion, output resize,
// overlap checks and error messages), then hands the iterator's coalesced shape and strides to one libaxon launch
// on the current stream. A 0-dim CPU tensor operand (a Python number) goes to the kernel by value. What libaxon does
// not cover (an (op, dtype) pair it does not define, such as erf on complex, or more than AXON_MAX_DIMS dimensions)
// runs through the host fallback instead, so every op keeps working.
//
// Registering the structured ops' `.out` overloads is enough: PyTorch routes their functional and in-place forms
// through them.
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Operators.h>
#include <ATen/ScalarOps.h>
#include <ATen/Dispatch.h>
#include <ATen/TensorIterator.h>
#include <ATen/native/Resize.h>
#include <ATen/native/CPUFallback.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/add_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/clamp_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/clamp_max_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/clamp_min_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/div_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/mul_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/pow_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/sub_compositeexplicitautogradnonfunctional_dispatch.h>
#include <axon/pointwise.h>
#include <c10/util/Exception.h>
#include <c10/util/TypeCast.h>
#include <torch/library.h>

#include <array>
#include <limits>
#include <optional>
#include <string_view>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

// A number operand's value in the kind libaxon expects for the compute dtype. For complex32, the number rounded to
// it first, as CPU's kernels take it (original_scalar_value<c10::complex<Half>>).
axon_scalar_t scalar_operand(at::TensorIteratorBase& iter, int arg, c10::ScalarType compute) {
  if (compute == c10::kComplexHalf) {
    const c10::complex<float> z = iter.original_scalar_value<c10::complex<c10::Half>>(arg);
    return axon_scalar_complex(z.real(), z.imag());
  }
  if (c10::isComplexType(compute)) {
    const auto z = iter.original_scalar_value<c10::complex<double>>(arg);
    return axon_scalar_complex(z.real(), z.imag());
  }
  if (compute == c10::ScalarType::Bool) return axon_scalar_bool(iter.original_scalar_value<bool>(arg));
  if (c10::isIntegralType(compute, /*includeBool=*/false)) return axon_scalar_int(iter.original_scalar_value<int64_t>(arg));
  return axon_scalar_float(iter.original_scalar_value<double>(arg));
}

// The operands of a built iterator as libaxon descriptors; number operands become params.operand values.
struct Operands {
  axon_tensor_t out{};
  std::array<axon_tensor_t, 3> in{};
  std::array<const axon_tensor_t*, 3> in_ptr{};
};

// Fills `ops` from iter; false when libaxon cannot take this iterator (dtype or rank), so the caller falls back.
// The iterator's inputs fill the kernel's operand slots in order, skipping the slots in `numbers` (operands the
// caller already put into params.operand).
bool describe_iter(at::TensorIteratorBase& iter, c10::ScalarType compute, axon_op_params_t& params, Operands& ops,
                   unsigned numbers = 0) {
  if (iter.ndim() > AXON_MAX_DIMS) return false;  // (the callers have checked that libaxon computes in `compute`)
  std::array<int, 3> slot{};
  for (int k = 0, next = 0; k < 3; ++k) {
    while (next < 3 && (numbers & (1u << next))) ops.in_ptr[next++] = nullptr;
    slot[k] = next++;
  }
  for (int arg = 0; arg < iter.ntensors(); ++arg) {
    const auto dtype = axon_storage_dtype_of(iter.dtype(arg));  // operands are converted to and from `compute`
    if (!dtype.has_value()) return false;
    const bool is_output = arg < iter.noutputs();
    if (!is_output && iter.is_cpu_scalar(arg)) {
      const int k = slot[arg - iter.noutputs()];
      params.operand[k] = scalar_operand(iter, arg, compute);
      ops.in_ptr[k] = nullptr;
      continue;
    }
    const axon_tensor_t d = describe_iter_operand(iter, arg, *dtype);
    if (is_output) {
      ops.out = d;
    } else {
      const int k = slot[arg - iter.noutputs()];
      ops.in[k] = d;
      ops.in_ptr[k] = &ops.in[k];
    }
  }
  return true;
}

axon_stream_t stream_of(at::TensorIteratorBase& iter) { return current_stream(iter.device(0).index()); }

// The ops PyTorch CPU defines for complex32, each computed as c10::complex<Half>'s operators compute it: in
// complex<float>, rounded once to complex32. Elsewhere CPU refuses the dtype ("not implemented for 'ComplexHalf'"),
// and so does the fallback here.
bool complex32_op(axon_unary_op_t op) {
  return op == AXON_UNARY_NEG || op == AXON_UNARY_ABS || op == AXON_UNARY_SIGN || op == AXON_UNARY_CONJ ||
         op == AXON_UNARY_ISNAN;
}
bool complex32_op(axon_binary_op_t op) {
  return op == AXON_BINARY_ADD || op == AXON_BINARY_SUB || op == AXON_BINARY_MUL || op == AXON_BINARY_EQ ||
         op == AXON_BINARY_NE;
}
bool complex32_op(axon_ternary_op_t) { return false; }  // CPU's addcmul rounds each step: not one complex64 op

// libaxon's compute dtype for PyTorch's: its own, or complex64 for complex32 in the ops above (libaxon reads and
// stores complex32 as a storage dtype).
template <class Op>
std::optional<axon_dtype_t> compute_dtype(c10::ScalarType t, Op op) {
  if (t == c10::kComplexHalf) return complex32_op(op) ? std::optional<axon_dtype_t>(AXON_COMPLEX64) : std::nullopt;
  return axon_dtype_of(t);
}

bool is_one(const axon_scalar_t& v) {
  switch (v.dtype) {
    case AXON_FLOAT64: return v.f == 1.0;
    case AXON_COMPLEX128: return v.f == 1.0 && v.imag == 0.0;
    default: return v.i == 1;  // int64, bool
  }
}

bool run_unary(at::TensorIteratorBase& iter, axon_unary_op_t op, axon_op_params_t params, c10::ScalarType compute) {
  Operands ops;
  const auto cd = compute_dtype(compute, op);
  if (!cd || !axon_unary_supports(op, *cd) || !describe_iter(iter, compute, params, ops)) return false;
  params.compute = *cd;  // the iterator's common dtype, also when out= has another dtype
  if (iter.numel() > 0) AXON_CHECK(axon_kernel_unary(stream_of(iter), op, &ops.out, ops.in_ptr[0], &params));
  iter.cast_outputs();
  return true;
}

bool run_binary(at::TensorIteratorBase& iter, axon_binary_op_t op, axon_op_params_t params, c10::ScalarType compute) {
  Operands ops;
  const auto cd = compute_dtype(compute, op);
  if (!cd || !axon_binary_supports(op, *cd) || !describe_iter(iter, compute, params, ops)) return false;
  params.compute = *cd;  // the iterator's common dtype, also when out= has another dtype
  if (ops.in_ptr[0] == nullptr && ops.in_ptr[1] == nullptr) return false;  // two numbers: let the host do it
  if (compute == c10::kComplexHalf && !is_one(params.alpha)) return false;  // see complex32_scaled
  if (iter.numel() > 0) {
    AXON_CHECK(axon_kernel_binary(stream_of(iter), op, &ops.out, ops.in_ptr[0], ops.in_ptr[1], &params));
  }
  iter.cast_outputs();
  return true;
}

bool run_ternary(at::TensorIteratorBase& iter, axon_ternary_op_t op, axon_op_params_t params, c10::ScalarType compute,
                 unsigned numbers = 0) {
  Operands ops;
  const auto cd = compute_dtype(compute, op);
  if (!cd || !axon_ternary_supports(op, *cd) || !describe_iter(iter, compute, params, ops, numbers)) return false;
  params.compute = *cd;  // the iterator's common dtype, also when out= has another dtype
  if (!ops.in_ptr[0] && !ops.in_ptr[1] && !ops.in_ptr[2]) return false;
  if (iter.numel() > 0) {
    AXON_CHECK(axon_kernel_ternary(stream_of(iter), op, &ops.out, ops.in_ptr[0], ops.in_ptr[1], ops.in_ptr[2],
                                   &params));
  }
  iter.cast_outputs();
  return true;
}

// For out= ops: PyTorch's rule that the result type must be castable to out's dtype.
void check_castable(c10::ScalarType result, const at::Tensor& out) {
  TORCH_CHECK(c10::canCast(result, out.scalar_type()), "result type ", result, " can't be cast to the desired output type ",
              out.scalar_type());
}

// An iterator over out and one input that keeps both dtypes (the kernel converts on load and store): abs of a
// complex self, the predicates, and the ops whose other operands go to the kernel as numbers.
at::TensorIterator own_dtypes_iter(const at::Tensor& out, const at::Tensor& input) {
  return at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(input).build();
}

// ---- the direct path ----

// Two same-dtype, same-shape, contiguous tensors on the current axon device: the iterator would only allocate a
// contiguous output of that shape and dtype (its "fast setup") and hand one run to the kernel. This is the common
// eager case, so it skips building the iterator and describes each tensor as one run of numel elements. Anything else
// (broadcasting, promotion, CPU numbers, other layouts) takes the iterator.
bool same_dense(const at::Tensor& a, const at::Tensor& b) {
  return a.device() == b.device() && a.device().index() == current_device() && a.scalar_type() == b.scalar_type() &&
         a.sizes().equals(b.sizes()) && a.is_contiguous() && b.is_contiguous();
}

// A given out (out= and in-place forms) for the direct path: self's dtype, shape and device, contiguous, and either
// the very same elements as an input or disjoint from both. A partial overlap takes the iterator, which refuses it
// with PyTorch's message.
bool direct_out(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  if (out.device() != self.device() || out.scalar_type() != self.scalar_type() || !out.sizes().equals(self.sizes()) ||
      !out.is_contiguous()) {
    return false;
  }
  for (const at::Tensor* t : {&self, &other}) {
    const at::MemOverlapStatus s = at::get_overlap_status(out, *t);
    if (s != at::MemOverlapStatus::No && s != at::MemOverlapStatus::Full) return false;
  }
  return true;
}

// t (contiguous) as one run of numel elements. An output's pointer is taken as mutable, so that a copy-on-write
// storage is materialized before the kernel writes it: describe out before the inputs that may share its storage.
axon_tensor_t describe_run(const at::TensorBase& t, axon_dtype_t dtype, bool written = false) {
  axon_tensor_t d{};
  d.data = written ? t.mutable_data_ptr() : const_cast<void*>(t.const_data_ptr());
  d.dtype = dtype;
  d.ndim = 1;
  d.sizes[0] = t.numel();
  d.strides[0] = 1;
  return d;
}

// A new contiguous device tensor of self's sizes and dtype, allocated without the factory's dispatch (the direct
// paths' output).
at::Tensor empty_dense_like(const at::Tensor& self) {
  const c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  return at::detail::empty_generic(self.sizes(), device_allocator(), keys, self.scalar_type(), std::nullopt);
}

// Floating and complex dtypes are their own results in the ops that promote integers to float (sqrt, div).
bool keeps_dtype_in_float_ops(c10::ScalarType t) { return c10::isFloatingType(t) || c10::isComplexType(t); }

// op(self) into out (given, or a new tensor when undefined) on the direct path; false when it does not apply: self
// and out contiguous, of one dtype and shape, the same elements or disjoint; floats only for FLOAT_OP ops.
template <bool FLOAT_OP>
bool unary_direct(at::Tensor& out, const at::Tensor& self, axon_unary_op_t op, const axon_op_params_t& params) {
  if (!same_dense(self, self) || (FLOAT_OP && !keeps_dtype_in_float_ops(self.scalar_type()))) return false;
  const auto d = axon_dtype_of(self.scalar_type());
  if (!d || !axon_unary_supports(op, *d)) return false;
  if (!out.defined()) {
    out = empty_dense_like(self);
  } else if (!direct_out(out, self, self)) {
    return false;
  }
  if (out.numel() == 0) return true;
  const axon_tensor_t o = describe_run(out, *d, /*written=*/true), a = describe_run(self, *d);
  AXON_CHECK(axon_kernel_unary(current_stream(out.device().index()), op, &o, &a, &params));
  return true;
}

// ---- unary ----

template <axon_unary_op_t OP, bool FLOAT_OP, class AtenOp>
at::Tensor& unary_out(const at::Tensor& self, at::Tensor& out) {
  if (unary_direct<FLOAT_OP>(out, self, OP, axon_op_params_default())) return out;
  at::TensorIterator iter = FLOAT_OP ? at::TensorIterator::unary_float_op(out, self) : at::TensorIterator::unary_op(out, self);
  if (run_unary(iter, OP, axon_op_params_default(), iter.common_dtype())) return out;
  return fall_back<AtenOp>(self, out);
}

// The functional forms of common structured unary ops, registered directly: PyTorch's generic route to `.out` builds
// an iterator in the op's meta function and allocates the output before the `.out` kernel builds its own.
template <axon_unary_op_t OP, bool FLOAT_OP, class AtenOp>
at::Tensor unary_functional(const at::Tensor& self) {
  at::Tensor out;
  if (unary_direct<FLOAT_OP>(out, self, OP, axon_op_params_default())) return out;
  at::TensorIterator iter =
      FLOAT_OP ? at::TensorIterator::unary_float_op(out, self) : at::TensorIterator::unary_op(out, self);
  if (run_unary(iter, OP, axon_op_params_default(), iter.common_dtype())) return iter.output();
  return fall_back<AtenOp>(self);
}

// The in-place forms (x.sqrt_(), x.lerp_(y, w), ...): PyTorch's route runs the meta function (which checks that the
// result casts to self's dtype and that the operands broadcast to self's shape) before the .out kernel. Here the
// .out kernels run with out = self: their iterator makes the cast check, check_inplace_shape the shape check.
void check_inplace_shape(const at::Tensor& self, std::initializer_list<const at::Tensor*> others) {
  c10::DimVector shape(self.sizes().begin(), self.sizes().end());
  for (const at::Tensor* t : others) shape = at::infer_size_dimvector(shape, t->sizes());
  TORCH_CHECK(self.sizes().equals(shape), "output with shape ", self.sizes(), " doesn't match the broadcast shape ",
              c10::IntArrayRef(shape));
}

template <axon_unary_op_t OP, bool FLOAT_OP, class AtenOp>
at::Tensor& unary_inplace(at::Tensor& self) {
  return unary_out<OP, FLOAT_OP, AtenOp>(self, self);
}

// abs and angle: a complex self has a real result (the `.out` form gets a float out from the functional form, and a
// complex out keeps the value with a zero imaginary part), computed in self's complex dtype.
template <axon_unary_op_t OP, bool FLOAT_OP, class AtenOp>
at::Tensor& real_of_complex_out(const at::Tensor& self, at::Tensor& out) {
  if (!self.is_complex()) return unary_out<OP, FLOAT_OP, AtenOp>(self, out);
  check_castable(c10::toRealValueType(self.scalar_type()), out);
  at::TensorIterator iter = own_dtypes_iter(out, self);
  if (run_unary(iter, OP, axon_op_params_default(), self.scalar_type())) return out;
  return fall_back<AtenOp>(self, out);
}

// sign refuses complex (sgn is its complex form); libaxon's SIGN of a complex dtype is sgn.
void check_sign(const at::Tensor& self) {
  TORCH_CHECK(!self.is_complex(), "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
              "torch.sgn instead.");
}

at::Tensor& sign_out(const at::Tensor& self, at::Tensor& out) {
  check_sign(self);
  return unary_out<AXON_UNARY_SIGN, false, ATEN_OP2(sign, out)>(self, out);
}

// Unary ops whose result is bool (or any dtype given by out): computed in the input's dtype.
template <axon_unary_op_t OP, class AtenOp>
at::Tensor& unary_predicate_out(const at::Tensor& self, at::Tensor& out) {
  at::TensorIterator iter = own_dtypes_iter(out, self);
  axon_op_params_t p = axon_op_params_default();
  if (const auto d = axon_dtype_of(self.scalar_type())) p.compute = *d;
  if (run_unary(iter, OP, p, self.scalar_type())) return out;
  return fall_back<AtenOp>(self, out);
}

// isnan has no out= overload: the functional form is the backend's kernel (a bool tensor of self's shape).
at::Tensor isnan(const at::Tensor& self) {
  at::Tensor out = at::empty(self.sizes(), self.options().dtype(at::kBool));
  return unary_predicate_out<AXON_UNARY_ISNAN, ATEN_OP2(isnan, out)>(self, out);
}

// A unary op with parameters into out (undefined: a new tensor, the functional form; out = self: the in-place form):
// the direct path, else the iterator. False where the kernel cannot take it (the caller falls back, for PyTorch's
// errors). The functional and in-place forms are bound directly for the reason unary_functional's are.
template <bool FLOAT_OP>
bool param_unary_into(at::Tensor& out, const at::Tensor& self, axon_unary_op_t op, const axon_op_params_t& p) {
  if (unary_direct<FLOAT_OP>(out, self, op, p)) return true;
  at::TensorIterator iter =
      FLOAT_OP ? at::TensorIterator::unary_float_op(out, self) : at::TensorIterator::unary_op(out, self);
  if (!run_unary(iter, op, p, iter.common_dtype())) return false;
  if (!out.defined()) out = iter.output();
  return true;
}

axon_unary_op_t gelu_op(c10::string_view approximate) {
  TORCH_CHECK(approximate == "tanh" || approximate == "none", "approximate argument must be either none or tanh.");
  return approximate == "tanh" ? AXON_UNARY_GELU_TANH : AXON_UNARY_GELU;
}

at::Tensor& gelu_out(const at::Tensor& self, c10::string_view approximate, at::Tensor& out) {
  if (param_unary_into<false>(out, self, gelu_op(approximate), axon_op_params_default())) return out;
  return fall_back<ATEN_OP2(gelu, out)>(self, approximate, out);
}

at::Tensor gelu(const at::Tensor& self, c10::string_view approximate) {
  at::Tensor out;
  if (param_unary_into<false>(out, self, gelu_op(approximate), axon_op_params_default())) return out;
  return fall_back<ATEN_OP(gelu)>(self, approximate);
}

at::Tensor& gelu_(at::Tensor& self, c10::string_view approximate) { return gelu_out(self, approximate, self); }

axon_op_params_t polygamma_params(int64_t n) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  axon_op_params_t p = axon_op_params_default();
  p.polygamma_n = n;
  return p;
}

at::Tensor& polygamma_out(int64_t n, const at::Tensor& self, at::Tensor& out) {
  if (param_unary_into<true>(out, self, AXON_UNARY_POLYGAMMA, polygamma_params(n))) return out;
  return fall_back<ATEN_OP2(polygamma, out)>(n, self, out);
}

at::Tensor polygamma(int64_t n, const at::Tensor& self) {
  at::Tensor out;
  if (param_unary_into<true>(out, self, AXON_UNARY_POLYGAMMA, polygamma_params(n))) return out;
  return fall_back<ATEN_OP(polygamma)>(n, self);
}

// zeta: PyTorch's CPU kernel is float32 and float64 only; the host raises its error for the half floats.
at::Tensor& special_zeta_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  at::TensorIterator iter = at::TensorIterator::binary_float_op(out, self, other);
  const c10::ScalarType t = iter.common_dtype();
  if ((t == at::kFloat || t == at::kDouble) && run_binary(iter, AXON_BINARY_ZETA, axon_op_params_default(), t)) {
    return out;
  }
  return fall_back<ATEN_OP2(special_zeta, out)>(self, other, out);
}

axon_op_params_t softplus_params(const c10::Scalar& beta, const c10::Scalar& threshold) {
  axon_op_params_t p = axon_op_params_default();
  p.beta = beta.toDouble();
  p.threshold = threshold.toDouble();
  return p;
}

at::Tensor& softplus_out(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold, at::Tensor& out) {
  if (param_unary_into<false>(out, self, AXON_UNARY_SOFTPLUS, softplus_params(beta, threshold))) return out;
  return fall_back<ATEN_OP2(softplus, out)>(self, beta, threshold, out);
}

at::Tensor softplus(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold) {
  at::Tensor out;
  if (param_unary_into<false>(out, self, AXON_UNARY_SOFTPLUS, softplus_params(beta, threshold))) return out;
  return fall_back<ATEN_OP(softplus)>(self, beta, threshold);
}

at::Tensor& hardtanh_out(const at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val, at::Tensor& out) {
  axon_op_params_t p = axon_op_params_default();
  p.min_val = min_val.toDouble();
  p.max_val = max_val.toDouble();
  if (param_unary_into<false>(out, self, AXON_UNARY_HARDTANH, p)) return out;
  return fall_back<ATEN_OP2(hardtanh, out)>(self, min_val, max_val, out);
}

axon_op_params_t leaky_relu_params(const c10::Scalar& slope) {
  axon_op_params_t p = axon_op_params_default();
  p.negative_slope = slope.toDouble();
  return p;
}

at::Tensor& leaky_relu_out(const at::Tensor& self, const c10::Scalar& slope, at::Tensor& out) {
  if (param_unary_into<false>(out, self, AXON_UNARY_LEAKY_RELU, leaky_relu_params(slope))) return out;
  return fall_back<ATEN_OP2(leaky_relu, out)>(self, slope, out);
}

at::Tensor leaky_relu(const at::Tensor& self, const c10::Scalar& slope) {
  at::Tensor out;
  if (param_unary_into<false>(out, self, AXON_UNARY_LEAKY_RELU, leaky_relu_params(slope))) return out;
  return fall_back<ATEN_OP(leaky_relu)>(self, slope);
}

at::Tensor& leaky_relu_(at::Tensor& self, const c10::Scalar& slope) { return leaky_relu_out(self, slope, self); }

axon_op_params_t elu_params(const c10::Scalar& alpha, const c10::Scalar& scale, const c10::Scalar& input_scale) {
  axon_op_params_t p = axon_op_params_default();
  p.elu_alpha = alpha.toDouble();
  p.elu_scale = scale.toDouble();
  p.elu_input_scale = input_scale.toDouble();
  return p;
}

at::Tensor& elu_out(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                    const c10::Scalar& input_scale, at::Tensor& out) {
  if (param_unary_into<false>(out, self, AXON_UNARY_ELU, elu_params(alpha, scale, input_scale))) return out;
  return fall_back<ATEN_OP2(elu, out)>(self, alpha, scale, input_scale, out);
}

at::Tensor elu(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
               const c10::Scalar& input_scale) {
  at::Tensor out;
  if (param_unary_into<false>(out, self, AXON_UNARY_ELU, elu_params(alpha, scale, input_scale))) return out;
  return fall_back<ATEN_OP(elu)>(self, alpha, scale, input_scale);
}

at::Tensor& elu_(at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                 const c10::Scalar& input_scale) {
  return elu_out(self, alpha, scale, input_scale, self);
}

// hardtanh's functional and in-place forms have their own kernels (not routed through hardtanh.out).
at::Tensor hardtanh(const at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val) {
  at::Tensor out = at::empty_like(self);
  return hardtanh_out(self, min_val, max_val, out);
}

at::Tensor& hardtanh_(at::Tensor& self, const c10::Scalar& min_val, const c10::Scalar& max_val) {
  return hardtanh_out(self, min_val, max_val, self);
}

// hardswish_ likewise.
at::Tensor& hardswish_(at::Tensor& self) {
  return unary_out<AXON_UNARY_HARDSWISH, false, ATEN_OP2(hardswish, out)>(self, self);
}

// relu has no out= overload: its functional and in-place forms are the backend's kernels.
at::Tensor relu(const at::Tensor& self) {
  at::Tensor direct;
  if (unary_direct<false>(direct, self, AXON_UNARY_RELU, axon_op_params_default())) return direct;
  at::Tensor out = at::empty_like(self);
  at::TensorIterator iter = at::TensorIterator::unary_op(out, self);
  if (run_unary(iter, AXON_UNARY_RELU, axon_op_params_default(), iter.common_dtype())) return out;
  return fall_back<ATEN_OP(relu)>(self);
}

at::Tensor& relu_(at::Tensor& self) {
  if (unary_direct<false>(self, self, AXON_UNARY_RELU, axon_op_params_default())) return self;
  at::TensorIterator iter = at::TensorIterator::unary_op(self, self);
  if (run_unary(iter, AXON_UNARY_RELU, axon_op_params_default(), iter.common_dtype())) return self;
  return fall_back<ATEN_OP(relu_)>(self);
}

// ---- binary ----

// other as a number operand of the direct path (x * 2.5): a 0-dim CPU tensor, as the argument parser wraps a Python
// number, that leaves the result in self's dtype. Its value goes to the kernel in params.operand[1].
bool number_operand(const at::Tensor& self, const at::Tensor& other) {
  return other.dim() == 0 && other.is_cpu() && same_dense(self, self) &&
         at::result_type(self, other) == self.scalar_type();
}

// A number operand's value in the kind libaxon expects for the compute dtype (as the iterator's CPU scalars).
axon_scalar_t number_value(const at::Tensor& number, c10::ScalarType compute) {
  const void* p = number.const_data_ptr();
  if (c10::isComplexType(compute)) {
    const auto z = c10::fetch_and_cast<c10::complex<double>>(number.scalar_type(), p);
    return axon_scalar_complex(z.real(), z.imag());
  }
  if (compute == c10::ScalarType::Bool) return axon_scalar_bool(c10::fetch_and_cast<bool>(number.scalar_type(), p));
  if (c10::isIntegralType(compute, /*includeBool=*/false)) {
    return axon_scalar_int(c10::fetch_and_cast<int64_t>(number.scalar_type(), p));
  }
  return axon_scalar_float(c10::fetch_and_cast<double>(number.scalar_type(), p));
}

// libaxon's dtype when op can run directly on self and other: same_dense or a number operand, a loop for the dtype,
// and floats only for FLOAT_OP ops (true division promotes integers).
// other as a device tensor of self's dtype that broadcasts into a contiguous self (x * scale with scale a 0-dim
// buffer, x / norm with norm [n, 1], x + bias with bias [d]), or has self's shape with other strides: read by its
// strides, with a stride of 0 along its size-1 and missing dimensions, as the iterator would describe it, so the
// result has self's shape.
bool broadcast_operand(const at::Tensor& self, const at::Tensor& other) {
  if (other.device() != self.device() || other.scalar_type() != self.scalar_type() || other.dim() > self.dim() ||
      self.dim() > AXON_MAX_DIMS || !same_dense(self, self)) {
    return false;
  }
  for (int64_t k = 1; k <= other.dim(); ++k) {
    const int64_t o = other.size(-k);
    if (o != 1 && o != self.size(-k)) return false;
  }
  return true;
}

template <bool FLOAT_OP>
std::optional<axon_dtype_t> direct_dtype(const at::Tensor& self, const at::Tensor& other, axon_binary_op_t op) {
  if (!same_dense(self, other) && !number_operand(self, other) && !broadcast_operand(self, other)) {
    return std::nullopt;
  }
  if (FLOAT_OP && !keeps_dtype_in_float_ops(self.scalar_type())) return std::nullopt;
  const auto d = axon_dtype_of(self.scalar_type());
  if (!d || !axon_binary_supports(op, *d)) return std::nullopt;
  return d;
}

// t (contiguous) described with its own sizes, for an operand broadcast to them.
axon_tensor_t describe_dense(const at::Tensor& t, axon_dtype_t dtype, bool written) {
  axon_tensor_t d = describe_run(t, dtype, written);
  d.ndim = static_cast<int>(t.dim());
  int64_t step = 1;
  for (int k = d.ndim - 1; k >= 0; --k) {
    d.sizes[k] = t.size(k);
    d.strides[k] = step;
    step *= t.size(k);
  }
  return d;
}

// op(self, other) on the direct path; other null: a number operand already in params.operand[1]. out is of the
// inputs' dtype, or bool for the comparisons (whose params name the inputs' dtype as the compute dtype).
void launch_direct(const at::Tensor& out, const at::Tensor& self, const at::Tensor* other, axon_dtype_t dtype,
                   axon_binary_op_t op, const axon_op_params_t& params, bool swapped = false) {
  if (out.numel() == 0) return;
  const axon_dtype_t out_dtype = out.scalar_type() == c10::kBool ? AXON_BOOL : dtype;
  axon_tensor_t o = describe_run(out, out_dtype, /*written=*/true), a = describe_run(self, dtype), b{};
  if (other && !(other->sizes().equals(self.sizes()) && other->is_contiguous())) {
    // broadcast_operand (or a strided other of self's shape): out and self with their dimensions
    o = describe_dense(out, out_dtype, /*written=*/true);
    a = describe_dense(self, dtype, /*written=*/false);
    b = describe_run(*other, dtype);
    b.ndim = o.ndim;
    for (int k = 0; k < o.ndim; ++k) {
      const int64_t j = k - (self.dim() - other->dim());  // other's dimension aligned with k, if any
      b.sizes[k] = o.sizes[k];
      b.strides[k] = j < 0 || other->size(j) == 1 ? 0 : other->stride(j);
    }
  } else if (other) {
    b = describe_run(*other, dtype);
  }
  const axon_tensor_t* first = swapped ? &b : &a;  // swapped: op(other, self), for rsub
  const axon_tensor_t* second = swapped ? &a : (other ? &b : nullptr);
  AXON_CHECK(axon_kernel_binary(current_stream(out.device().index()), op, &o, first, second, &params));
}

// launch_direct for a tensor or number other.
void launch_direct_operand(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other, axon_dtype_t dtype,
                           axon_binary_op_t op, axon_op_params_t params) {
  if (!other.is_cpu()) return launch_direct(out, self, &other, dtype, op, params);
  params.operand[1] = number_value(other, self.scalar_type());
  launch_direct(out, self, nullptr, dtype, op, params);
}

// op(self, other) into a new tensor, or nothing when the direct path does not apply (the caller takes the iterator).
template <bool FLOAT_OP>
std::optional<at::Tensor> binary_direct(const at::Tensor& self, const at::Tensor& other, axon_binary_op_t op,
                                        const axon_op_params_t& params) {
  const auto d = direct_dtype<FLOAT_OP>(self, other, op);
  if (!d) return std::nullopt;
  at::Tensor out = empty_dense_like(self);
  launch_direct_operand(out, self, other, *d, op, params);
  return out;
}

// op(self, other) into the given out; false when the direct path does not apply.
template <bool FLOAT_OP>
bool binary_direct_into(at::Tensor& out, const at::Tensor& self, const at::Tensor& other, axon_binary_op_t op,
                        const axon_op_params_t& params) {
  const auto d = direct_dtype<FLOAT_OP>(self, other, op);
  if (!d || !direct_out(out, self, other)) return false;
  launch_direct_operand(out, self, other, *d, op, params);
  return true;
}

template <axon_binary_op_t OP, bool FLOAT_OP, class AtenOp>
at::Tensor& binary_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  if (binary_direct_into<FLOAT_OP>(out, self, other, OP, axon_op_params_default())) return out;
  at::TensorIterator iter = FLOAT_OP ? at::TensorIterator::binary_float_op(out, self, other)
                                     : at::TensorIterator::borrowing_binary_op(out, self, other);
  if (run_binary(iter, OP, axon_op_params_default(), iter.common_dtype())) return out;
  return fall_back<AtenOp>(self, other, out);
}

template <axon_binary_op_t OP, bool FLOAT_OP, class AtenOp>
at::Tensor& binary_inplace_checked(at::Tensor& self, const at::Tensor& other) {
  check_inplace_shape(self, {&other});
  return binary_out<OP, FLOAT_OP, AtenOp>(self, other, self);
}

// PyTorch's refusals of subtraction with bools (a bool number counts: x - True).
void check_subtraction(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.scalar_type() != c10::kBool || other.scalar_type() != c10::kBool,
              "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` "
              "operator instead.");
  TORCH_CHECK(self.scalar_type() != c10::kBool && other.scalar_type() != c10::kBool,
              "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, "
              "use the `~` or `logical_not()` operator instead.");
}

// complex32 with an alpha other than 1: CPU computes a + alpha b in c10::complex<Half>, whose product rounds to
// complex32 before the sum (sub is add with -alpha). Here the product is mul (which rounds as CPU's does), then the
// plain sum of the parts as float16 (add's own x + 1 * y would turn an infinite part of the product into NaN).
// (A float16 operand is first converted to complex32, as CPU's iterator converts it.)
bool complex32_scaled(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  return (self.scalar_type() == c10::kComplexHalf || other.scalar_type() == c10::kComplexHalf) && !alpha.equal(1) &&
         self.device().type() == kAxon && other.device() == self.device() &&
         at::result_type(self, other) == c10::kComplexHalf;
}

at::Tensor complex32_parts(const at::Tensor& t) { return at::view_as_real(t.to(c10::kComplexHalf)); }

at::Tensor complex32_scaled_product(const at::Tensor& other, const c10::Scalar& alpha, axon_binary_op_t op) {
  return at::view_as_real(at::mul(other.to(c10::kComplexHalf), op == AXON_BINARY_SUB ? -alpha : alpha));
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor& add_sub_out(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha, at::Tensor& out) {
  if (OP == AXON_BINARY_SUB) check_subtraction(self, other);
  if (complex32_scaled(self, other, alpha) && out.scalar_type() == c10::kComplexHalf && out.device() == self.device()) {
    const at::Tensor product = complex32_scaled_product(other, alpha, OP);
    at::native::resize_output(out, at::infer_size_dimvector(self.sizes(), other.sizes()));
    at::Tensor parts = at::view_as_real(out);
    at::add_out(parts, complex32_parts(self), product);
    return out;
  }
  axon_op_params_t p = axon_op_params_default();
  p.alpha = to_axon_scalar(alpha);
  if (binary_direct_into<false>(out, self, other, OP, p)) return out;
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  if (run_binary(iter, OP, p, iter.common_dtype())) return out;
  return fall_back<AtenOp>(self, other, alpha, out);
}

// The functional forms of the hottest binary ops, registered directly. PyTorch's generic route to `.out` runs the
// op's meta function and allocates the output before the `.out` kernel builds its own TensorIterator; building one
// iterator, which allocates the output itself, halves that work on every call (about a third of a small add's host
// time).
template <axon_binary_op_t OP, bool FLOAT_OP, class AtenOp>
at::Tensor binary_functional(const at::Tensor& self, const at::Tensor& other) {
  if (auto r = binary_direct<FLOAT_OP>(self, other, OP, axon_op_params_default())) return *std::move(r);
  at::Tensor out;
  at::TensorIterator iter = FLOAT_OP ? at::TensorIterator::binary_float_op(out, self, other)
                                     : at::TensorIterator::binary_op(out, self, other);
  if (run_binary(iter, OP, axon_op_params_default(), iter.common_dtype())) return iter.output();
  return fall_back<AtenOp>(self, other);
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor add_sub_functional(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  if (OP == AXON_BINARY_SUB) check_subtraction(self, other);
  if (complex32_scaled(self, other, alpha))
    return at::view_as_complex(at::add(complex32_parts(self), complex32_scaled_product(other, alpha, OP)));
  axon_op_params_t p = axon_op_params_default();
  p.alpha = to_axon_scalar(alpha);
  if (auto r = binary_direct<false>(self, other, OP, p)) return *std::move(r);
  at::Tensor out;
  at::TensorIterator iter = at::TensorIterator::binary_op(out, self, other);
  if (run_binary(iter, OP, p, iter.common_dtype())) return iter.output();
  return fall_back<AtenOp>(self, other, alpha);
}

// The in-place forms of the same ops: the direct path when it applies (same shape, or a number that keeps self's
// dtype), else the `.out` route into self after the broadcast check (its iterator refuses an unsafe cast to self).
// PyTorch's generic in-place route computed into a new tensor and copied it back: 1.8 us for a [8, 1] add_, of
// which bilinear's _trilinear makes five.
template <axon_binary_op_t OP, bool FLOAT_OP>
at::Tensor& binary_inplace(at::Tensor& self, const at::Tensor& other) {
  if (binary_direct_into<FLOAT_OP>(self, self, other, OP, axon_op_params_default())) return self;
  check_inplace_shape(self, {&other});
  return OP == AXON_BINARY_MUL ? binary_out<AXON_BINARY_MUL, false, ATEN_OP2(mul, out)>(self, other, self)
                               : binary_out<AXON_BINARY_DIV, true, ATEN_OP2(div, out)>(self, other, self);
}

template <axon_binary_op_t OP>
at::Tensor& add_sub_inplace(at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  if (OP == AXON_BINARY_SUB) check_subtraction(self, other);
  axon_op_params_t p = axon_op_params_default();
  p.alpha = to_axon_scalar(alpha);
  if (binary_direct_into<false>(self, self, other, OP, p)) return self;
  check_inplace_shape(self, {&other});
  return OP == AXON_BINARY_ADD ? add_sub_out<AXON_BINARY_ADD, ATEN_OP2(add, out)>(self, other, alpha, self)
                               : add_sub_out<AXON_BINARY_SUB, ATEN_OP2(sub, out)>(self, other, alpha, self);
}

// floor_divide keeps its own overloads (it predates div's rounding modes); it rounds toward negative infinity.
at::Tensor& floor_divide_into(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  if (run_binary(iter, AXON_BINARY_DIV_FLOOR, axon_op_params_default(), iter.common_dtype())) return out;
  return fall_back<ATEN_OP2(floor_divide, out)>(self, other, out);
}

at::Tensor floor_divide(const at::Tensor& self, const at::Tensor& other) {
  at::Tensor out = at::empty({0}, self.options().dtype(at::result_type(self, other)));
  return floor_divide_into(self, other, out);
}

at::Tensor& floor_divide_(at::Tensor& self, const at::Tensor& other) { return floor_divide_into(self, other, self); }

// div's rounding modes as libaxon ops, with PyTorch's message for any other.
axon_binary_op_t rounding_div(c10::string_view mode) {
  TORCH_CHECK(mode == "trunc" || mode == "floor", "div expected rounding_mode to be one of None, 'trunc', or 'floor' "
              "but found '", mode, "'");
  return mode == "trunc" ? AXON_BINARY_DIV_TRUNC : AXON_BINARY_DIV_FLOOR;
}

at::Tensor& div_mode_out(const at::Tensor& self, const at::Tensor& other, std::optional<c10::string_view> mode,
                         at::Tensor& out) {
  if (!mode.has_value()) return binary_out<AXON_BINARY_DIV, true, ATEN_OP2(div, out)>(self, other, out);
  const axon_binary_op_t op = rounding_div(*mode);
  if (binary_direct_into<false>(out, self, other, op, axon_op_params_default())) return out;
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  if (run_binary(iter, op, axon_op_params_default(), iter.common_dtype())) return out;
  return fall_back<ATEN_OP2(div, out_mode)>(self, other, mode, out);
}

// The functional and in-place forms with a rounding mode, registered directly for the reason binary_functional's
// are: the direct path when it applies, else one iterator (functional) or PyTorch's generic in-place route.
at::Tensor div_mode(const at::Tensor& self, const at::Tensor& other, std::optional<c10::string_view> mode) {
  if (!mode.has_value()) return binary_functional<AXON_BINARY_DIV, true, ATEN_OP2(div, Tensor)>(self, other);
  const axon_binary_op_t op = rounding_div(*mode);
  if (auto r = binary_direct<false>(self, other, op, axon_op_params_default())) return *std::move(r);
  at::Tensor out;
  at::TensorIterator iter = at::TensorIterator::binary_op(out, self, other);
  if (run_binary(iter, op, axon_op_params_default(), iter.common_dtype())) return iter.output();
  return fall_back<ATEN_OP2(div, Tensor_mode)>(self, other, mode);
}

at::Tensor& div_mode_(at::Tensor& self, const at::Tensor& other, std::optional<c10::string_view> mode) {
  if (mode.has_value() && binary_direct_into<false>(self, self, other, rounding_div(*mode), axon_op_params_default()))
    return self;
  if (!mode.has_value() && binary_direct_into<true>(self, self, other, AXON_BINARY_DIV, axon_op_params_default()))
    return self;
  return at::compositeexplicitautogradnonfunctional::div_(self, other, mode);
}

// Comparisons and logical ops: computed in the inputs' common dtype, stored into out's dtype (normally bool).

// A comparison on the direct path (same_dense inputs, or a number that keeps self's dtype): a new bool tensor of
// self's shape, or nothing when the path does not apply.
std::optional<at::Tensor> compare_direct(const at::Tensor& self, const at::Tensor& other, axon_binary_op_t op) {
  const auto d = direct_dtype<false>(self, other, op);
  if (!d) return std::nullopt;
  const c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  at::Tensor out = at::detail::empty_generic(self.sizes(), device_allocator(), keys, c10::kBool, std::nullopt);
  axon_op_params_t p = axon_op_params_default();
  p.compute = *d;
  launch_direct_operand(out, self, other, *d, op, p);
  return out;
}

// A comparison into a new bool tensor: the direct path, else the comparison iterator; nothing when libaxon declines.
std::optional<at::Tensor> compare_new(const at::Tensor& self, const at::Tensor& other, axon_binary_op_t op) {
  if (auto r = compare_direct(self, other, op)) return r;
  at::Tensor out;
  at::TensorIterator iter = at::TensorIterator::comparison_op(out, self, other);
  if (run_binary(iter, op, axon_op_params_default(), iter.common_dtype())) return iter.output();
  return std::nullopt;
}

// The functional forms of the comparisons (gt, eq, ...), registered directly for the reason binary_functional's are.
template <axon_binary_op_t OP, class AtenOp>
at::Tensor compare_functional(const at::Tensor& self, const at::Tensor& other) {
  if (auto r = compare_new(self, other, OP)) return *std::move(r);
  return fall_back<AtenOp>(self, other);
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor compare_scalar_functional(const at::Tensor& self, const c10::Scalar& other) {
  if (auto r = compare_new(self, at::native::wrapped_scalar_tensor(other), OP)) return *std::move(r);
  return fall_back<AtenOp>(self, other);
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor& compare_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  at::TensorIterator iter = at::TensorIterator::comparison_op(out, self, other);
  axon_op_params_t p = axon_op_params_default();
  const c10::ScalarType compute = iter.common_dtype();
  if (const auto d = axon_dtype_of(compute)) p.compute = *d;
  if (run_binary(iter, OP, p, compute)) return out;
  return fall_back<AtenOp>(self, other, out);
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor& compare_scalar_out(const at::Tensor& self, const c10::Scalar& other, at::Tensor& out) {
  const at::Tensor wrapped = at::native::wrapped_scalar_tensor(other);
  at::TensorIterator iter = at::TensorIterator::comparison_op(out, self, wrapped);
  axon_op_params_t p = axon_op_params_default();
  const c10::ScalarType compute = iter.common_dtype();
  if (const auto d = axon_dtype_of(compute)) p.compute = *d;
  if (run_binary(iter, OP, p, compute)) return out;
  return fall_back<AtenOp>(self, other, out);
}

// The in-place comparisons (x.eq_(y): 1 or 0 in self's dtype) into self through the `.out` forms: PyTorch's generic
// in-place route ran the meta function and dispatched again (eq_ of [5, 5] 1.5x CPU's time).
// The direct path when it applies (libaxon stores the bool result in self's dtype).
bool compare_direct_into_self(at::Tensor& self, const at::Tensor& other, axon_binary_op_t op) {
  const auto d = direct_dtype<false>(self, other, op);
  if (!d || !direct_out(self, self, other)) return false;
  axon_op_params_t p = axon_op_params_default();
  p.compute = *d;
  launch_direct_operand(self, self, other, *d, op, p);
  return true;
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor& compare_inplace(at::Tensor& self, const at::Tensor& other) {
  if (compare_direct_into_self(self, other, OP)) return self;
  check_inplace_shape(self, {&other});
  return compare_out<OP, AtenOp>(self, other, self);
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor& compare_scalar_inplace(at::Tensor& self, const c10::Scalar& other) {
  if (compare_direct_into_self(self, at::native::wrapped_scalar_tensor(other), OP)) return self;
  return compare_scalar_out<OP, AtenOp>(self, other, self);
}

at::Tensor& sign_inplace(at::Tensor& self) {
  check_sign(self);
  return unary_out<AXON_UNARY_SIGN, false, ATEN_OP2(sign, out)>(self, self);
}

at::Tensor& pow_tensor_scalar_out(const at::Tensor& self, const c10::Scalar& exponent, at::Tensor& out) {
  // Exponents PyTorch's CPU kernel computes without pow (x*x, sqrt, ...) take the same unary form here: the same bits,
  // and 20x faster than pow for x^3 (GPT-2's tanh GELU). Complex self too (square, sqrt, rsqrt, reciprocal).
  axon_unary_op_t fast;
  if (!exponent.isComplex() && keeps_dtype_in_float_ops(self.scalar_type()) && self.scalar_type() == out.scalar_type() &&
      axon_pow_scalar_unary(exponent.toDouble(), &fast)) {
    at::TensorIterator iter = at::TensorIterator::unary_op(out, self);
    if (run_unary(iter, fast, axon_op_params_default(), iter.common_dtype())) return out;
  }
  const at::Tensor wrapped = at::native::wrapped_scalar_tensor(exponent);
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, self, wrapped);
  if (run_binary(iter, AXON_BINARY_POW, axon_op_params_default(), iter.common_dtype())) return out;
  return fall_back<ATEN_OP2(pow, Tensor_Scalar_out)>(self, exponent, out);
}

// pow's functional form, registered directly (PyTorch's generic route runs the meta function's iterator before the
// `.out` kernel builds its own: half of a small pow's host time). A dense self gets a result laid out as self, as the
// meta function would; any other layout takes that generic route.
at::Tensor pow_tensor_scalar(const at::Tensor& self, const c10::Scalar& exponent) {
  TORCH_CHECK(!(at::isIntegralType(self.scalar_type(), true) && exponent.isIntegral(true) && exponent.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  // x ** 1 is a copy, as in PyTorch's CPU kernel: the generic pow took 0.35 ms on a float32 [512, 1024], 2.3 ms on
  // negative bases (libmvec's powf takes those one by one), and autograd's pow backward asks for it (x ** 2 - 1)
  // once per RMSNorm of a Llama's training step.
  if (!exponent.isComplex() && !self.is_complex() && exponent.toDouble() == 1.0 &&
      at::result_type(self, exponent) == self.scalar_type())
    return self.clone(at::MemoryFormat::Preserve);
  axon_unary_op_t fast;
  at::Tensor out;
  if (!exponent.isComplex() && keeps_dtype_in_float_ops(self.scalar_type()) &&
      axon_pow_scalar_unary(exponent.toDouble(), &fast) &&
      unary_direct<false>(out, self, fast, axon_op_params_default())) {
    return out;
  }
  // A real number exponent that keeps self's real dtype: the kernel takes it as a value (a complex self takes the
  // wrapped number below).
  const auto d = axon_dtype_of(self.scalar_type());
  if (!exponent.isComplex() && !self.is_complex() && same_dense(self, self) && d &&
      axon_binary_supports(AXON_BINARY_POW, *d) && at::result_type(self, exponent) == self.scalar_type()) {
    axon_op_params_t p = axon_op_params_default();
    p.operand[1] = at::isFloatingType(self.scalar_type()) ? axon_scalar_float(exponent.toDouble())
                                                          : axon_scalar_int(exponent.toLong());
    out = empty_dense_like(self);
    launch_direct(out, self, nullptr, *d, AXON_BINARY_POW, p);
    return out;
  }
  if (!self.is_non_overlapping_and_dense()) return at::compositeexplicitautogradnonfunctional::pow(self, exponent);
  out = at::empty_like(self, self.options().dtype(at::result_type(self, exponent)));
  return pow_tensor_scalar_out(self, exponent, out);
}

at::Tensor& pow_scalar_out(const c10::Scalar& self, const at::Tensor& exponent, at::Tensor& out) {
  const at::Tensor wrapped = at::native::wrapped_scalar_tensor(self);
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, wrapped, exponent);
  if (run_binary(iter, AXON_BINARY_POW, axon_op_params_default(), iter.common_dtype())) return out;
  return fall_back<ATEN_OP2(pow, Scalar_out)>(self, exponent, out);
}

// ---- ternary ----

// An iterator over three inputs promoted to their common dtype, as the CPU kernels of these ops build it.
at::TensorIterator ternary_iter(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const at::Tensor& c,
                                bool promote_integer_to_float = false) {
  return at::TensorIteratorConfig()
      .set_check_mem_overlap(true)
      .add_output(out)
      .add_const_input(a)
      .add_const_input(b)
      .add_const_input(c)
      .allow_cpu_scalars(true)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true)
      .promote_integer_inputs_to_float(promote_integer_to_float)
      .build();
}

// op(a, b, c) into out (given, or a new tensor when undefined) on the direct path: a, b and c (null: a number
// already in params.operand[2]) contiguous, of one dtype and shape, out as for binary ops; false when it does not
// apply. The iterator with four operands was most of a small lerp's or addcmul's time.
bool ternary_direct(at::Tensor& out, const at::Tensor& a, const at::Tensor& b, const at::Tensor* c,
                    axon_ternary_op_t op, axon_op_params_t params) {
  if (!same_dense(a, b) || (c && !same_dense(a, *c))) return false;
  const auto d = axon_dtype_of(a.scalar_type());
  if (!d || !axon_ternary_supports(op, *d)) return false;
  if (!out.defined()) {
    out = empty_dense_like(a);
  } else if (!direct_out(out, a, b) || (c && !direct_out(out, a, *c))) {
    return false;
  }
  if (out.numel() == 0) return true;
  params.compute = *d;
  const axon_tensor_t o = describe_run(out, *d, /*written=*/true), ad = describe_run(a, *d), bd = describe_run(b, *d);
  const axon_tensor_t cd = c ? describe_run(*c, *d) : axon_tensor_t{};
  AXON_CHECK(axon_kernel_ternary(current_stream(out.device().index()), op, &o, &ad, &bd, c ? &cd : nullptr, &params));
  return true;
}

// After a successful run on an iterator built over out: out, or the iterator's own output when out was undefined
// (a functional form, whose iterator allocated it).
at::Tensor& result_of(at::TensorIteratorBase& iter, at::Tensor& out) {
  if (!out.defined()) out = iter.output();
  return out;
}

// addcmul and addcdiv into out (their .out kernels), or into a new tensor when out is undefined (their functional
// forms, registered directly for the reason binary_functional's are: the iterator allocates the output).
at::Tensor& addcmul_into(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value,
                         at::Tensor& out) {
  axon_op_params_t p = axon_op_params_default();
  p.alpha = to_axon_scalar(value);
  if (ternary_direct(out, self, t1, &t2, AXON_TERNARY_ADDCMUL, p)) return out;
  at::TensorIterator iter = ternary_iter(out, self, t1, t2);
  if (run_ternary(iter, AXON_TERNARY_ADDCMUL, p, iter.common_dtype())) return result_of(iter, out);
  if (!out.defined()) return out = fall_back<ATEN_OP(addcmul)>(self, t1, t2, value);
  return fall_back<ATEN_OP2(addcmul, out)>(self, t1, t2, value, out);
}

at::Tensor& addcdiv_into(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value,
                         at::Tensor& out) {
  TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) && c10::isIntegralType(t2.scalar_type(), true)),
              "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform a "
              "true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
              "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + "
              "value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
              "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  axon_op_params_t p = axon_op_params_default();
  p.alpha = to_axon_scalar(value);
  if (ternary_direct(out, self, t1, &t2, AXON_TERNARY_ADDCDIV, p)) return out;
  at::TensorIterator iter = ternary_iter(out, self, t1, t2);
  if (run_ternary(iter, AXON_TERNARY_ADDCDIV, p, iter.common_dtype())) return result_of(iter, out);
  if (!out.defined()) return out = fall_back<ATEN_OP(addcdiv)>(self, t1, t2, value);
  return fall_back<ATEN_OP2(addcdiv, out)>(self, t1, t2, value, out);
}

at::Tensor& addcmul_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  check_inplace_shape(self, {&t1, &t2});
  return addcmul_into(self, t1, t2, value, self);
}

at::Tensor& addcdiv_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  check_inplace_shape(self, {&t1, &t2});
  return addcdiv_into(self, t1, t2, value, self);
}

at::Tensor addcmul(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  at::Tensor out;
  return addcmul_into(self, t1, t2, value, out);
}

at::Tensor addcdiv(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  at::Tensor out;
  return addcdiv_into(self, t1, t2, value, out);
}

// lerp's meta checks (a backend's out= kernel replaces the meta function); integer self goes to the host, which
// raises CPU's "not implemented" error.
bool lerp_checks(const at::Tensor& self, const at::Tensor& end, const at::Tensor* weight) {
  TORCH_CHECK(self.dtype() == end.dtype(), "expected dtype ", self.dtype(), " for `end` but got dtype ", end.dtype());
  if (weight) {
    TORCH_CHECK(self.dtype() == weight->dtype(), "expected dtype ", self.dtype(), " for `weight` but got dtype ",
                weight->dtype());
  }
  return keeps_dtype_in_float_ops(self.scalar_type());
}

// lerp into out (the .out kernels), or into a new tensor when out is undefined (the functional forms, registered
// directly for the reason binary_functional's are).
at::Tensor& lerp_scalar_into(const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight, at::Tensor& out) {
  if (lerp_checks(self, end, nullptr)) {
    // The weight as a number in the compute dtype's kind, as the iterator would pass it. A complex weight with a real
    // self goes to the host, which refuses a nonzero imaginary part ("cannot be converted to type float").
    const bool complex = c10::isComplexType(self.scalar_type());
    if (!complex && weight.isComplex()) {
      if (!out.defined()) return out = fall_back<ATEN_OP2(lerp, Scalar)>(self, end, weight);
      return fall_back<ATEN_OP2(lerp, Scalar_out)>(self, end, weight, out);
    }
    axon_op_params_t p = axon_op_params_default();
    const auto value = weight.toComplexDouble();
    p.operand[2] = complex ? axon_scalar_complex(value.real(), value.imag()) : axon_scalar_float(value.real());
    if (ternary_direct(out, self, end, nullptr, AXON_TERNARY_LERP, p)) return out;
    const at::Tensor w = at::native::wrapped_scalar_tensor(weight);
    at::TensorIterator iter = ternary_iter(out, self, end, w);
    if (run_ternary(iter, AXON_TERNARY_LERP, axon_op_params_default(), iter.common_dtype())) return result_of(iter, out);
  }
  if (!out.defined()) return out = fall_back<ATEN_OP2(lerp, Scalar)>(self, end, weight);
  return fall_back<ATEN_OP2(lerp, Scalar_out)>(self, end, weight, out);
}

at::Tensor& lerp_tensor_into(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight, at::Tensor& out) {
  if (lerp_checks(self, end, &weight)) {
    if (ternary_direct(out, self, end, &weight, AXON_TERNARY_LERP, axon_op_params_default())) return out;
    at::TensorIterator iter = ternary_iter(out, self, end, weight);
    if (run_ternary(iter, AXON_TERNARY_LERP, axon_op_params_default(), iter.common_dtype())) return result_of(iter, out);
  }
  if (!out.defined()) return out = fall_back<ATEN_OP2(lerp, Tensor)>(self, end, weight);
  return fall_back<ATEN_OP2(lerp, Tensor_out)>(self, end, weight, out);
}

at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  check_inplace_shape(self, {&end});
  return lerp_scalar_into(self, end, weight, self);
}

at::Tensor& lerp_tensor_(at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  check_inplace_shape(self, {&end, &weight});
  return lerp_tensor_into(self, end, weight, self);
}

at::Tensor lerp_scalar(const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  at::Tensor out;
  return lerp_scalar_into(self, end, weight, out);
}

at::Tensor lerp_tensor(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  at::Tensor out;
  return lerp_tensor_into(self, end, weight, out);
}

bool is_cpu_scalar(const at::Tensor& t) { return t.is_cpu() && t.dim() == 0; }

// The integer dtype of an element size, for ops that only move elements of dtypes libaxon does not know.
std::optional<c10::ScalarType> same_size_integer(size_t element_size) {
  switch (element_size) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    case 8: return at::kLong;
    default: return std::nullopt;
  }
}

at::Tensor& where_out(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const c10::ScalarType result = at::result_type(self, other);
  check_castable(result, out);
  // complex32, float8, uint16..64 with nothing to convert: where only selects, so it selects their bits, as integers
  // of the same size (views of the same memory).
  const std::optional<c10::ScalarType> bits = same_size_integer(c10::elementSize(result));
  if (!kernels_support(result) && bits && self.scalar_type() == result && other.scalar_type() == result &&
      out.scalar_type() == result && self.device() == out.device() && other.device() == out.device()) {
    at::native::resize_output(out, at::infer_size(at::infer_size(cond.sizes(), self.sizes()), other.sizes()));
    at::Tensor o = out.view(*bits);
    where_out(cond, self.view(*bits), other.view(*bits), o);
    return out;
  }
  if (is_cpu_scalar(self) && is_cpu_scalar(other)) {  // torch.where(c, 1.0, 0.0): both values go by value
    at::TensorIterator iter = own_dtypes_iter(out, cond);
    axon_op_params_t p = axon_op_params_default();
    if (const auto d = axon_dtype_of(result)) p.compute = *d;
    p.operand[1] = to_axon_scalar(self.item());
    p.operand[2] = to_axon_scalar(other.item());
    if (run_ternary(iter, AXON_TERNARY_WHERE, p, result, /*numbers=*/0b110)) return out;
    return fall_back<ATEN_OP2(where, self_out)>(cond, self, other, out);
  }
  // The condition keeps its dtype (read as bool); self and other meet in the result type.
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .set_check_mem_overlap(true)
                                .check_all_same_dtype(false)
                                .add_output(out)
                                .add_const_input(cond)
                                .add_const_input(self)
                                .add_const_input(other)
                                .allow_cpu_scalars(true)
                                .build();
  axon_op_params_t p = axon_op_params_default();
  if (const auto d = axon_dtype_of(result)) p.compute = *d;
  if (run_ternary(iter, AXON_TERNARY_WHERE, p, result)) return out;
  return fall_back<ATEN_OP2(where, self_out)>(cond, self, other, out);
}

at::Tensor where_self(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other) {
  const c10::ScalarType result = at::result_type(self, other);
  const auto shape = at::infer_size(at::infer_size(cond.sizes(), self.sizes()), other.sizes());
  at::Tensor out = at::empty(shape, self.options().dtype(result));
  return where_out(cond, self, other, out);
}

at::Tensor& clamp_out(const at::Tensor& self, const std::optional<c10::Scalar>& min,
                      const std::optional<c10::Scalar>& max, at::Tensor& out) {
  TORCH_CHECK(min.has_value() || max.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (min.has_value() && max.has_value()) {
    // Two numbers: a TensorIterator takes at most one CPU scalar on a device, so they go to the kernel as values.
    at::native::ResultTypeState state{};
    state = at::native::update_result_type_state(self, state);
    state = at::native::update_result_type_state(*min, state);
    state = at::native::update_result_type_state(*max, state);
    const c10::ScalarType result = at::native::result_type(state);
    check_castable(result, out);
    at::TensorIterator iter = own_dtypes_iter(out, self);
    axon_op_params_t p = axon_op_params_default();
    p.operand[1] = to_axon_scalar(*min);
    p.operand[2] = to_axon_scalar(*max);
    if (run_ternary(iter, AXON_TERNARY_CLAMP, p, result, /*numbers=*/0b110)) return out;
  } else {
    const at::Tensor bound = at::native::wrapped_scalar_tensor(min.has_value() ? *min : *max);
    at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, self, bound);
    const axon_binary_op_t op = min.has_value() ? AXON_BINARY_MAXIMUM : AXON_BINARY_MINIMUM;
    if (run_binary(iter, op, axon_op_params_default(), iter.common_dtype())) return out;
  }
  return fall_back<ATEN_OP2(clamp, out)>(self, min, max, out);
}

// clamp's functional form with numbers as bounds, registered directly for the reason pow's is; the result dtype is
// the meta function's (self's when floating, else promoted with the bounds).
at::Tensor clamp_numbers(const at::Tensor& self, const std::optional<c10::Scalar>& min,
                         const std::optional<c10::Scalar>& max) {
  TORCH_CHECK(!self.is_complex(), "clamp is not supported for complex types");
  if (!self.is_non_overlapping_and_dense()) return at::compositeexplicitautogradnonfunctional::clamp(self, min, max);
  c10::ScalarType result = self.scalar_type();
  if (!at::isFloatingType(result)) {
    at::native::ResultTypeState state{};
    state = at::native::update_result_type_state(self, state);
    if (min.has_value()) state = at::native::update_result_type_state(*min, state);
    if (max.has_value()) state = at::native::update_result_type_state(*max, state);
    result = at::native::result_type(state);
  }
  TORCH_CHECK(!at::isComplexType(result), "clamp is not supported for complex types");
  const auto d = axon_dtype_of(result);
  if (min.has_value() && max.has_value() && result == self.scalar_type() && same_dense(self, self) && d &&
      axon_ternary_supports(AXON_TERNARY_CLAMP, *d)) {
    // The direct path: both bounds as numbers into a new tensor of self's layout, no iterator.
    at::Tensor out = empty_dense_like(self);
    if (out.numel() == 0) return out;
    axon_op_params_t p = axon_op_params_default();
    p.compute = *d;
    p.operand[1] = to_axon_scalar(*min);
    p.operand[2] = to_axon_scalar(*max);
    const axon_tensor_t o = describe_run(out, *d, /*written=*/true), a = describe_run(self, *d);
    AXON_CHECK(axon_kernel_ternary(current_stream(out.device().index()), AXON_TERNARY_CLAMP, &o, &a, nullptr, nullptr,
                                   &p));
    return out;
  }
  if (min.has_value() != max.has_value()) {  // one bound: maximum or minimum with a number, on the direct path
    const at::Tensor bound = at::native::wrapped_scalar_tensor(min.has_value() ? *min : *max);
    const axon_binary_op_t op = min.has_value() ? AXON_BINARY_MAXIMUM : AXON_BINARY_MINIMUM;
    if (auto r = binary_direct<false>(self, bound, op, axon_op_params_default())) return *std::move(r);
  }
  at::Tensor out = at::empty_like(self, self.options().dtype(result));
  return clamp_out(self, min, max, out);
}

// clamp with tensor bounds into out (the .out kernel), or into a new tensor when out is undefined (the functional
// forms).
at::Tensor& clamp_tensor_into(const at::Tensor& self, const std::optional<at::Tensor>& min,
                              const std::optional<at::Tensor>& max, at::Tensor& out) {
  TORCH_CHECK(min.has_value() || max.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (!self.is_complex()) {  // the direct paths: bounds of self's dtype and layout, or one bound that broadcasts
    if (min.has_value() && max.has_value()) {
      if (ternary_direct(out, self, *min, &*max, AXON_TERNARY_CLAMP, axon_op_params_default())) return out;
    } else {
      const axon_binary_op_t op = min.has_value() ? AXON_BINARY_MAXIMUM : AXON_BINARY_MINIMUM;
      const at::Tensor& bound = min.has_value() ? *min : *max;
      if (!out.defined()) {
        if (auto r = binary_direct<false>(self, bound, op, axon_op_params_default())) return out = *std::move(r);
      } else if (binary_direct_into<false>(out, self, bound, op, axon_op_params_default())) {
        return out;
      }
    }
  }
  if (min.has_value() && max.has_value()) {
    at::TensorIterator iter = ternary_iter(out, self, *min, *max);
    if (run_ternary(iter, AXON_TERNARY_CLAMP, axon_op_params_default(), iter.common_dtype())) return result_of(iter, out);
  } else {
    at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, self, min.has_value() ? *min : *max);
    const axon_binary_op_t op = min.has_value() ? AXON_BINARY_MAXIMUM : AXON_BINARY_MINIMUM;
    if (run_binary(iter, op, axon_op_params_default(), iter.common_dtype())) return result_of(iter, out);
  }
  if (!out.defined()) return out = fall_back<ATEN_OP2(clamp, Tensor)>(self, min, max);
  return fall_back<ATEN_OP2(clamp, Tensor_out)>(self, min, max, out);
}

at::Tensor clamp_tensor(const at::Tensor& self, const std::optional<at::Tensor>& min,
                        const std::optional<at::Tensor>& max) {
  TORCH_CHECK(!self.is_complex(), "clamp is not supported for complex types");
  at::Tensor out;
  return clamp_tensor_into(self, min, max, out);
}

at::Tensor& clamp_min_out(const at::Tensor& self, const c10::Scalar& min, at::Tensor& out) {
  return clamp_out(self, min, std::nullopt, out);
}

at::Tensor& clamp_max_out(const at::Tensor& self, const c10::Scalar& max, at::Tensor& out) {
  return clamp_out(self, std::nullopt, max, out);
}

at::Tensor& clamp_min_tensor_out(const at::Tensor& self, const at::Tensor& min, at::Tensor& out) {
  return clamp_tensor_into(self, min, std::nullopt, out);
}

at::Tensor& clamp_max_tensor_out(const at::Tensor& self, const at::Tensor& max, at::Tensor& out) {
  return clamp_tensor_into(self, std::nullopt, max, out);
}

at::Tensor& clamp_(at::Tensor& self, const std::optional<c10::Scalar>& min, const std::optional<c10::Scalar>& max) {
  return clamp_out(self, min, max, self);
}

at::Tensor& clamp_tensor_(at::Tensor& self, const std::optional<at::Tensor>& min, const std::optional<at::Tensor>& max) {
  if (min.has_value()) check_inplace_shape(self, {&*min});
  if (max.has_value()) check_inplace_shape(self, {&*max});
  return clamp_tensor_into(self, min, max, self);
}

at::Tensor clamp_min(const at::Tensor& self, const c10::Scalar& min) {
  return clamp_numbers(self, min, std::nullopt);
}
at::Tensor clamp_max(const at::Tensor& self, const c10::Scalar& max) {
  return clamp_numbers(self, std::nullopt, max);
}
// clamp_min and clamp_max with one tensor bound: clamp_tensor_into's direct path (maximum or minimum), else its
// iterator.
at::Tensor clamp_min_tensor(const at::Tensor& self, const at::Tensor& min) {
  return clamp_tensor(self, min, std::nullopt);
}
at::Tensor clamp_max_tensor(const at::Tensor& self, const at::Tensor& max) {
  return clamp_tensor(self, std::nullopt, max);
}

// Their in-place forms (cosine_similarity clamps its norms by a 0-dim eps this way), with a tensor or a number bound;
// off the direct path, PyTorch's generic in-place route (its meta function checks the shape and the cast to self).
template <bool MIN>
at::Tensor& clamp_bound_tensor_(at::Tensor& self, const at::Tensor& bound) {
  const axon_binary_op_t op = MIN ? AXON_BINARY_MAXIMUM : AXON_BINARY_MINIMUM;
  if (!self.is_complex() && binary_direct_into<false>(self, self, bound, op, axon_op_params_default())) return self;
  return MIN ? at::compositeexplicitautogradnonfunctional::clamp_min_(self, bound)
             : at::compositeexplicitautogradnonfunctional::clamp_max_(self, bound);
}

template <bool MIN>
at::Tensor& clamp_bound_number_(at::Tensor& self, const c10::Scalar& bound) {
  const axon_binary_op_t op = MIN ? AXON_BINARY_MAXIMUM : AXON_BINARY_MINIMUM;
  if (!self.is_complex() && !bound.isComplex() &&
      binary_direct_into<false>(self, self, at::native::wrapped_scalar_tensor(bound), op, axon_op_params_default())) {
    return self;
  }
  return MIN ? at::compositeexplicitautogradnonfunctional::clamp_min_(self, bound)
             : at::compositeexplicitautogradnonfunctional::clamp_max_(self, bound);
}

// rsub: other - alpha * self, which is sub with the operands swapped (its checks and messages too).
at::Tensor rsub_tensor(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  // A device `other` of self's dtype that broadcasts into self (rsub(x, bias), a 0-dim other): sub on the direct
  // path with the operands swapped; sub's own direct path cannot take a broadcast first operand.
  if (!other.is_cpu()) {
    check_subtraction(other, self);
    if (const auto d = direct_dtype<false>(self, other, AXON_BINARY_SUB)) {
      at::Tensor out = empty_dense_like(self);
      axon_op_params_t p = axon_op_params_default();
      p.alpha = to_axon_scalar(alpha);
      launch_direct(out, self, &other, *d, AXON_BINARY_SUB, p, /*swapped=*/true);
      return out;
    }
  }
  return at::sub(other, self, alpha);
}

// ---- activation backward ----
//
// grad_input = op(grad_output, x) over the binary iterator the CPU kernel builds (promotion, broadcasting, safe
// casting to grad_input). The structured ops' functional forms route through their .grad_input overloads, except
// silu_backward (its composite formula wins), which gets its functional form bound, as gelu_backward does to skip the
// detour; hardtanh, hardswish and mish backward are not structured and get theirs bound too. `out` may be undefined:
// the iterator allocates it. Returns the result, or nothing when libaxon declines and the caller falls back.
std::optional<at::Tensor> run_backward(const at::Tensor& out, const at::Tensor& grad, const at::Tensor& x,
                                       axon_binary_op_t op, const axon_op_params_t& p) {
  at::TensorIterator iter = at::TensorIterator::borrowing_binary_op(out, grad, x);
  if (!run_binary(iter, op, p, iter.common_dtype())) return std::nullopt;
  return iter.output();
}

// Backward ops that take no parameters: (grad_output, x, grad_input).
template <axon_binary_op_t OP, class AtenOp>
at::Tensor& backward_out(const at::Tensor& grad, const at::Tensor& x, at::Tensor& grad_input) {
  if (run_backward(grad_input, grad, x, OP, axon_op_params_default())) return grad_input;
  return fall_back<AtenOp>(grad, x, grad_input);
}

template <axon_binary_op_t OP, class AtenOp>
at::Tensor backward_functional(const at::Tensor& grad, const at::Tensor& x) {
  if (auto r = run_backward(at::Tensor(), grad, x, OP, axon_op_params_default())) return *r;
  return fall_back<AtenOp>(grad, x);
}

at::Tensor& gelu_backward_out(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate,
                              at::Tensor& grad_input) {
  TORCH_CHECK(approximate == "tanh" || approximate == "none", "approximate argument must be either none or tanh.");
  const axon_binary_op_t op = approximate == "tanh" ? AXON_BINARY_GELU_TANH_BACKWARD : AXON_BINARY_GELU_BACKWARD;
  if (run_backward(grad_input, grad, self, op, axon_op_params_default())) return grad_input;
  return fall_back<ATEN_OP2(gelu_backward, grad_input)>(grad, self, approximate, grad_input);
}

at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  TORCH_CHECK(approximate == "tanh" || approximate == "none", "approximate argument must be either none or tanh.");
  const axon_binary_op_t op = approximate == "tanh" ? AXON_BINARY_GELU_TANH_BACKWARD : AXON_BINARY_GELU_BACKWARD;
  if (auto r = run_backward(at::Tensor(), grad, self, op, axon_op_params_default())) return *r;
  return fall_back<ATEN_OP(gelu_backward)>(grad, self, approximate);
}

at::Tensor& threshold_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& threshold,
                                   at::Tensor& grad_input) {
  axon_op_params_t p = axon_op_params_default();
  p.threshold = threshold.toDouble();
  if (run_backward(grad_input, grad, self, AXON_BINARY_THRESHOLD_BACKWARD, p)) return grad_input;
  return fall_back<ATEN_OP2(threshold_backward, grad_input)>(grad, self, threshold, grad_input);
}

axon_op_params_t hardtanh_params(const c10::Scalar& min_val, const c10::Scalar& max_val) {
  axon_op_params_t p = axon_op_params_default();
  p.min_val = min_val.toDouble();
  p.max_val = max_val.toDouble();
  return p;
}

at::Tensor& hardtanh_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& min_val,
                                  const c10::Scalar& max_val, at::Tensor& grad_input) {
  if (run_backward(grad_input, grad, self, AXON_BINARY_HARDTANH_BACKWARD, hardtanh_params(min_val, max_val))) {
    return grad_input;
  }
  return fall_back<ATEN_OP2(hardtanh_backward, grad_input)>(grad, self, min_val, max_val, grad_input);
}

at::Tensor hardtanh_backward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& min_val,
                             const c10::Scalar& max_val) {
  const axon_op_params_t p = hardtanh_params(min_val, max_val);
  if (auto r = run_backward(at::Tensor(), grad, self, AXON_BINARY_HARDTANH_BACKWARD, p)) return *r;
  return fall_back<ATEN_OP(hardtanh_backward)>(grad, self, min_val, max_val);
}

at::Tensor& leaky_relu_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& slope,
                                    bool self_is_result, at::Tensor& grad_input) {
  // PyTorch's check: from the output, a negative slope flips the sign test, so the gradient would be wrong.
  TORCH_CHECK(!self_is_result || slope.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you "
              "do require supporting in-place leakRelu backward calculation with negative slope");
  axon_op_params_t p = axon_op_params_default();
  p.negative_slope = slope.toDouble();
  if (run_backward(grad_input, grad, self, AXON_BINARY_LEAKY_RELU_BACKWARD, p)) return grad_input;
  return fall_back<ATEN_OP2(leaky_relu_backward, grad_input)>(grad, self, slope, self_is_result, grad_input);
}

at::Tensor& elu_backward_out(const at::Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                             const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result,
                             at::Tensor& grad_input) {
  TORCH_CHECK(!is_result || alpha.to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead.");
  axon_op_params_t p = axon_op_params_default();
  p.elu_alpha = alpha.toDouble();
  p.elu_scale = scale.toDouble();
  p.elu_input_scale = input_scale.toDouble();
  p.elu_is_result = is_result ? 1 : 0;
  if (run_backward(grad_input, grad, self_or_result, AXON_BINARY_ELU_BACKWARD, p)) return grad_input;
  return fall_back<ATEN_OP2(elu_backward, grad_input)>(grad, alpha, scale, input_scale, is_result, self_or_result,
                                                       grad_input);
}

at::Tensor& softplus_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& beta,
                                  const c10::Scalar& threshold, at::Tensor& grad_input) {
  axon_op_params_t p = axon_op_params_default();
  p.beta = beta.toDouble();
  p.threshold = threshold.toDouble();
  if (run_backward(grad_input, grad, self, AXON_BINARY_SOFTPLUS_BACKWARD, p)) return grad_input;
  return fall_back<ATEN_OP2(softplus_backward, grad_input)>(grad, self, beta, threshold, grad_input);
}

// heaviside: PyTorch refuses mixed dtypes rather than promote them.
// PyTorch's refusals for heaviside, shared by its three forms.
void check_heaviside(const at::Tensor& self, const at::Tensor& values) {
  TORCH_CHECK(!self.is_complex() && !values.is_complex(),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(self.scalar_type() == values.scalar_type(),
              "heaviside is not yet implemented for tensors with different dtypes.");
}

at::Tensor& heaviside_out(const at::Tensor& self, const at::Tensor& values, at::Tensor& out) {
  check_heaviside(self, values);
  return binary_out<AXON_BINARY_HEAVISIDE, false, ATEN_OP2(heaviside, out)>(self, values, out);
}

// Its functional and in-place forms, bound for the reason binary_functional's are (PyTorch's generic route ran the
// meta function and dispatched to heaviside.out: 1.4x CPU's time in op_db).
at::Tensor heaviside(const at::Tensor& self, const at::Tensor& values) {
  check_heaviside(self, values);
  return binary_functional<AXON_BINARY_HEAVISIDE, false, ATEN_OP(heaviside)>(self, values);
}

at::Tensor& heaviside_inplace(at::Tensor& self, const at::Tensor& values) {
  check_heaviside(self, values);
  check_inplace_shape(self, {&values});
  return binary_out<AXON_BINARY_HEAVISIDE, false, ATEN_OP2(heaviside, out)>(self, values, self);
}

// angle of a real self: pi for negatives, 0 otherwise; integers and bool promote to float. A complex self has a real
// result, atan2(im, re), computed in self's complex dtype as abs is.
constexpr auto angle_out = real_of_complex_out<AXON_UNARY_ANGLE, true, ATEN_OP2(angle, out)>;

// abs's functional form is composite explicit (an empty tensor, then abs.out through the dispatcher); bound here so
// that a real self takes unary_functional's direct path.
at::Tensor abs(const at::Tensor& self) {
  if (!self.is_complex()) return unary_functional<AXON_UNARY_ABS, false, ATEN_OP(abs)>(self);
  at::Tensor out = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return real_of_complex_out<AXON_UNARY_ABS, false, ATEN_OP2(abs, out)>(self, out);
}

at::Tensor angle(const at::Tensor& self) {
  if (!self.is_complex()) return unary_functional<AXON_UNARY_ANGLE, true, ATEN_OP(angle)>(self);
  at::Tensor out = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return angle_out(self, out);
}

// frexp: self = mantissa * 2^exponent with 0.5 <= |mantissa| < 1; libaxon computes each part as a unary op in self's
// dtype, the exponent stored into int32. Other out dtypes go to the host for CPU's messages.
std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa, at::Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "torch.frexp() only supports floating-point dtypes");
  if (mantissa.scalar_type() == self.scalar_type() && exponent.scalar_type() == at::kInt) {
    axon_op_params_t p = axon_op_params_default();
    at::TensorIterator m = own_dtypes_iter(mantissa, self), e = own_dtypes_iter(exponent, self);
    if (run_unary(m, AXON_UNARY_FREXP_MANTISSA, p, self.scalar_type()) &&
        run_unary(e, AXON_UNARY_FREXP_EXPONENT, p, self.scalar_type())) {
      return {mantissa, exponent};
    }
  }
  return fall_back<ATEN_OP2(frexp, Tensor_out)>(self, mantissa, exponent);
}

// nan_to_num: PyTorch's defaults for the infinities are the dtype's largest finite values; integers and bool are
// copied. Complex (real and imaginary parts each) goes to the host.
at::Tensor& nan_to_num_out(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "nan_to_num: dtype of out: ", out.scalar_type(),
              " should be same as input: ", self.scalar_type());
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
    return out;
  }
  if (!self.is_complex()) {
    double hi = 0, lo = 0;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, self.scalar_type(), "nan_to_num", [&] {
      hi = static_cast<double>(std::numeric_limits<scalar_t>::max());
      lo = static_cast<double>(std::numeric_limits<scalar_t>::lowest());
    });
    axon_op_params_t p = axon_op_params_default();
    p.nan_value = nan.value_or(0.0);
    p.posinf_value = posinf.value_or(hi);
    p.neginf_value = neginf.value_or(lo);
    if (unary_direct<false>(out, self, AXON_UNARY_NAN_TO_NUM, p)) return out;
    at::TensorIterator iter = at::TensorIterator::unary_op(out, self);
    if (run_unary(iter, AXON_UNARY_NAN_TO_NUM, p, iter.common_dtype())) return out;
  }
  return fall_back<ATEN_OP2(nan_to_num, out)>(self, nan, posinf, neginf, out);
}

// round(x, decimals): decimals 0 is plain round (integers included); otherwise floats only, as in PyTorch.
// round to `decimals` places: ROUND for 0, else ROUND_DECIMALS. Integer inputs go to the host, whose kernels refuse
// them with CPU's errors (round.decimals has no integer loop, even for 0 places).
std::optional<axon_unary_op_t> round_op(const at::Tensor& self, int64_t decimals, axon_op_params_t& p) {
  p = axon_op_params_default();
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) return std::nullopt;
  if (decimals == 0) return AXON_UNARY_ROUND;
  p.decimals = decimals;
  return AXON_UNARY_ROUND_DECIMALS;
}

at::Tensor& round_decimals_out(const at::Tensor& self, int64_t decimals, at::Tensor& out) {
  axon_op_params_t p;
  const auto op = round_op(self, decimals, p);
  if (op && param_unary_into<false>(out, self, *op, p)) return out;
  return fall_back<ATEN_OP2(round, decimals_out)>(self, decimals, out);
}

// The functional and in-place forms, bound directly (one kernel on the direct path, no meta function first).
at::Tensor round_decimals(const at::Tensor& self, int64_t decimals) {
  axon_op_params_t p;
  const auto op = round_op(self, decimals, p);
  at::Tensor out;
  if (op && param_unary_into<false>(out, self, *op, p)) return out;
  return fall_back<ATEN_OP2(round, decimals)>(self, decimals);
}

at::Tensor& round_decimals_(at::Tensor& self, int64_t decimals) { return round_decimals_out(self, decimals, self); }

// Each op's `.out` overload and its functional form: PyTorch's generic route from a structured op's functional form
// to `.out` runs the meta function's iterator and allocates the output through the dispatcher before the `.out`
// kernel builds its own iterator (about 1 us of a tiny op's 2.5). Every functional form bound here is structured
// (CompositeExplicitAutogradNonFunctional), so that autograd keeps its formula.
#define AXON_UNARY_OUT(name, OP, FLOAT) m.impl(#name ".out", TORCH_FN((unary_out<OP, FLOAT, ATEN_OP2(name, out)>)));
#define AXON_UNARY(name, OP, FLOAT) \
  AXON_UNARY_OUT(name, OP, FLOAT)   \
  m.impl(#name, TORCH_FN((unary_functional<OP, FLOAT, ATEN_OP(name)>)));
// ... and the in-place form `name_`, for the ops that have one.
#define AXON_UNARY_I(name, OP, FLOAT) \
  AXON_UNARY(name, OP, FLOAT)         \
  m.impl(#name "_", TORCH_FN((unary_inplace<OP, FLOAT, ATEN_OP2(name, out)>)));
#define AXON_BINARY_OUT(name, overload, OP, FLOAT) \
  m.impl(#name "." #overload, TORCH_FN((binary_out<OP, FLOAT, ATEN_OP2(name, overload)>)));
// `name.out` with the functional form `name`, and `name.<out_overload>` with `name.<overload>`.
#define AXON_BINARY(name, OP, FLOAT)         \
  AXON_BINARY_OUT(name, out, OP, FLOAT)      \
  m.impl(#name, TORCH_FN((binary_functional<OP, FLOAT, ATEN_OP(name)>)));
#define AXON_BINARY2(name, out_overload, overload, OP, FLOAT) \
  AXON_BINARY_OUT(name, out_overload, OP, FLOAT)              \
  m.impl(#name "." #overload, TORCH_FN((binary_functional<OP, FLOAT, ATEN_OP2(name, overload)>)));
#define AXON_BINARY_I(name, OP, FLOAT) \
  AXON_BINARY(name, OP, FLOAT)         \
  m.impl(#name "_", TORCH_FN((binary_inplace_checked<OP, FLOAT, ATEN_OP2(name, out)>)));
#define AXON_BINARY2_I(name, out_overload, overload, OP, FLOAT) \
  AXON_BINARY2(name, out_overload, overload, OP, FLOAT)         \
  m.impl(#name "_." #overload, TORCH_FN((binary_inplace_checked<OP, FLOAT, ATEN_OP2(name, out_overload)>)));
#define AXON_COMPARE(name, OP)                                                                 \
  m.impl(#name ".Tensor_out", TORCH_FN((compare_out<OP, ATEN_OP2(name, Tensor_out)>)));        \
  m.impl(#name ".Scalar_out", TORCH_FN((compare_scalar_out<OP, ATEN_OP2(name, Scalar_out)>)));  \
  m.impl(#name ".Tensor", TORCH_FN((compare_functional<OP, ATEN_OP2(name, Tensor)>)));          \
  m.impl(#name ".Scalar", TORCH_FN((compare_scalar_functional<OP, ATEN_OP2(name, Scalar)>)));         \
  m.impl(#name "_.Tensor", TORCH_FN((compare_inplace<OP, ATEN_OP2(name, Tensor_out)>)));                \
  m.impl(#name "_.Scalar", TORCH_FN((compare_scalar_inplace<OP, ATEN_OP2(name, Scalar_out)>)));

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  AXON_UNARY_I(neg, AXON_UNARY_NEG, false)
  m.impl("abs.out", TORCH_FN((real_of_complex_out<AXON_UNARY_ABS, false, ATEN_OP2(abs, out)>)));
  m.impl("abs", TORCH_FN(abs));
  m.impl("sign.out", TORCH_FN(sign_out));
  m.impl("sign_", TORCH_FN(sign_inplace));
  AXON_UNARY_I(sgn, AXON_UNARY_SIGN, false)  // sign for real dtypes, z / |z| for complex
  AXON_UNARY_OUT(conj_physical, AXON_UNARY_CONJ, false)  // its functional form is composite implicit
  AXON_UNARY_I(reciprocal, AXON_UNARY_RECIPROCAL, true)
  AXON_UNARY_I(sqrt, AXON_UNARY_SQRT, true)
  AXON_UNARY_I(rsqrt, AXON_UNARY_RSQRT, true)
  AXON_UNARY_I(exp, AXON_UNARY_EXP, true)
  AXON_UNARY_I(exp2, AXON_UNARY_EXP2, true)
  AXON_UNARY_I(expm1, AXON_UNARY_EXPM1, true)
  AXON_UNARY_I(log, AXON_UNARY_LOG, true)
  AXON_UNARY_I(log2, AXON_UNARY_LOG2, true)
  AXON_UNARY_I(log10, AXON_UNARY_LOG10, true)
  AXON_UNARY_I(log1p, AXON_UNARY_LOG1P, true)
  AXON_UNARY_I(sin, AXON_UNARY_SIN, true)
  AXON_UNARY_I(cos, AXON_UNARY_COS, true)
  AXON_UNARY_I(tan, AXON_UNARY_TAN, true)
  AXON_UNARY_I(asin, AXON_UNARY_ASIN, true)
  AXON_UNARY_I(acos, AXON_UNARY_ACOS, true)
  AXON_UNARY_I(atan, AXON_UNARY_ATAN, true)
  AXON_UNARY_I(sinh, AXON_UNARY_SINH, true)
  AXON_UNARY_I(cosh, AXON_UNARY_COSH, true)
  AXON_UNARY_I(tanh, AXON_UNARY_TANH, true)
  AXON_UNARY_I(asinh, AXON_UNARY_ASINH, true)
  AXON_UNARY_I(acosh, AXON_UNARY_ACOSH, true)
  AXON_UNARY_I(atanh, AXON_UNARY_ATANH, true)
  AXON_UNARY_I(erf, AXON_UNARY_ERF, true)
  AXON_UNARY_I(erfc, AXON_UNARY_ERFC, true)
  AXON_UNARY_I(lgamma, AXON_UNARY_LGAMMA, true)
  AXON_UNARY_I(digamma, AXON_UNARY_DIGAMMA, true)
  m.impl("polygamma.out", TORCH_FN(polygamma_out));
  m.impl("polygamma", TORCH_FN(polygamma));
  // torch.special's Bessel and normal-distribution functions (those CPU defines for float32 and float64 only are
  // only those in libaxon's tables: the half types go to the host, which raises CPU's error)
  AXON_UNARY(special_bessel_j0, AXON_UNARY_BESSEL_J0, true)
  AXON_UNARY(special_bessel_j1, AXON_UNARY_BESSEL_J1, true)
  AXON_UNARY(special_bessel_y0, AXON_UNARY_BESSEL_Y0, true)
  AXON_UNARY(special_bessel_y1, AXON_UNARY_BESSEL_Y1, true)
  AXON_UNARY(special_modified_bessel_i0, AXON_UNARY_MODIFIED_BESSEL_I0, true)
  AXON_UNARY(special_modified_bessel_i1, AXON_UNARY_MODIFIED_BESSEL_I1, true)
  AXON_UNARY(special_modified_bessel_k0, AXON_UNARY_MODIFIED_BESSEL_K0, true)
  AXON_UNARY(special_modified_bessel_k1, AXON_UNARY_MODIFIED_BESSEL_K1, true)
  AXON_UNARY(special_scaled_modified_bessel_k0, AXON_UNARY_SCALED_MODIFIED_BESSEL_K0, true)
  AXON_UNARY(special_scaled_modified_bessel_k1, AXON_UNARY_SCALED_MODIFIED_BESSEL_K1, true)
  AXON_UNARY_I(i0, AXON_UNARY_I0, true)
  AXON_UNARY(special_i0e, AXON_UNARY_I0E, true)
  AXON_UNARY(special_i1, AXON_UNARY_I1, true)
  AXON_UNARY(special_i1e, AXON_UNARY_I1E, true)
  AXON_UNARY(special_spherical_bessel_j0, AXON_UNARY_SPHERICAL_BESSEL_J0, true)
  AXON_UNARY(special_airy_ai, AXON_UNARY_AIRY_AI, true)
  AXON_UNARY(special_erfcx, AXON_UNARY_ERFCX, true)
  AXON_UNARY(special_log_ndtr, AXON_UNARY_LOG_NDTR, true)
  AXON_UNARY(special_ndtri, AXON_UNARY_NDTRI, true)
  AXON_UNARY(special_entr, AXON_UNARY_ENTR, true)
  AXON_UNARY_I(sinc, AXON_UNARY_SINC, true)
  AXON_UNARY_I(erfinv, AXON_UNARY_ERFINV, true)
  m.impl("angle.out", TORCH_FN(angle_out));
  m.impl("angle", TORCH_FN(angle));
  m.impl("frexp.Tensor_out", TORCH_FN(frexp_out));
  m.impl("nan_to_num.out", TORCH_FN(nan_to_num_out));
  m.impl("round.decimals_out", TORCH_FN(round_decimals_out));
  m.impl("round.decimals", TORCH_FN(round_decimals));
  m.impl("round_.decimals", TORCH_FN(round_decimals_));
  AXON_UNARY_I(sigmoid, AXON_UNARY_SIGMOID, true)
  AXON_UNARY_I(silu, AXON_UNARY_SILU, false)
  AXON_UNARY_I(mish, AXON_UNARY_MISH, false)
  AXON_UNARY_I(hardsigmoid, AXON_UNARY_HARDSIGMOID, false)
  AXON_UNARY(hardswish, AXON_UNARY_HARDSWISH, false)
  AXON_UNARY_I(floor, AXON_UNARY_FLOOR, false)
  AXON_UNARY_I(ceil, AXON_UNARY_CEIL, false)
  AXON_UNARY_I(round, AXON_UNARY_ROUND, false)
  AXON_UNARY_I(trunc, AXON_UNARY_TRUNC, false)
  AXON_UNARY_I(frac, AXON_UNARY_FRAC, false)
  AXON_UNARY_I(bitwise_not, AXON_UNARY_BITWISE_NOT, false)
  m.impl("logical_not.out", TORCH_FN((unary_predicate_out<AXON_UNARY_LOGICAL_NOT, ATEN_OP2(logical_not, out)>)));
  m.impl("isnan", TORCH_FN(isnan));
  m.impl("isposinf.out", TORCH_FN((unary_predicate_out<AXON_UNARY_ISPOSINF, ATEN_OP2(isposinf, out)>)));
  m.impl("isneginf.out", TORCH_FN((unary_predicate_out<AXON_UNARY_ISNEGINF, ATEN_OP2(isneginf, out)>)));
  m.impl("signbit.out", TORCH_FN((unary_predicate_out<AXON_UNARY_SIGNBIT, ATEN_OP2(signbit, out)>)));
  m.impl("gelu.out", TORCH_FN(gelu_out));
  m.impl("gelu", TORCH_FN(gelu));
  m.impl("gelu_", TORCH_FN(gelu_));
  m.impl("softplus.out", TORCH_FN(softplus_out));
  m.impl("softplus", TORCH_FN(softplus));
  m.impl("hardtanh.out", TORCH_FN(hardtanh_out));
  m.impl("leaky_relu.out", TORCH_FN(leaky_relu_out));
  m.impl("leaky_relu", TORCH_FN(leaky_relu));
  m.impl("leaky_relu_", TORCH_FN(leaky_relu_));
  m.impl("elu.out", TORCH_FN(elu_out));
  m.impl("elu", TORCH_FN(elu));
  m.impl("elu_", TORCH_FN(elu_));
  m.impl("hardtanh", TORCH_FN(hardtanh));
  m.impl("hardswish_", TORCH_FN(hardswish_));
  m.impl("hardtanh_", TORCH_FN(hardtanh_));
  m.impl("relu", TORCH_FN(relu));
  m.impl("relu_", TORCH_FN(relu_));

  m.impl("add.out", TORCH_FN((add_sub_out<AXON_BINARY_ADD, ATEN_OP2(add, out)>)));
  m.impl("add.Tensor", TORCH_FN((add_sub_functional<AXON_BINARY_ADD, ATEN_OP2(add, Tensor)>)));
  m.impl("sub.Tensor", TORCH_FN((add_sub_functional<AXON_BINARY_SUB, ATEN_OP2(sub, Tensor)>)));
  m.impl("mul.Tensor", TORCH_FN((binary_functional<AXON_BINARY_MUL, false, ATEN_OP2(mul, Tensor)>)));
  m.impl("div.Tensor", TORCH_FN((binary_functional<AXON_BINARY_DIV, true, ATEN_OP2(div, Tensor)>)));
  m.impl("sub.out", TORCH_FN((add_sub_out<AXON_BINARY_SUB, ATEN_OP2(sub, out)>)));
  m.impl("add_.Tensor", TORCH_FN(add_sub_inplace<AXON_BINARY_ADD>));
  m.impl("sub_.Tensor", TORCH_FN(add_sub_inplace<AXON_BINARY_SUB>));
  m.impl("mul_.Tensor", TORCH_FN((binary_inplace<AXON_BINARY_MUL, false>)));
  m.impl("div_.Tensor", TORCH_FN((binary_inplace<AXON_BINARY_DIV, true>)));
  AXON_BINARY_OUT(mul, out, AXON_BINARY_MUL, false)
  AXON_BINARY_OUT(div, out, AXON_BINARY_DIV, true)
  m.impl("div.out_mode", TORCH_FN(div_mode_out));
  m.impl("div.Tensor_mode", TORCH_FN(div_mode));
  m.impl("div_.Tensor_mode", TORCH_FN(div_mode_));
  m.impl("floor_divide", TORCH_FN(floor_divide));
  m.impl("floor_divide_.Tensor", TORCH_FN(floor_divide_));
  m.impl("floor_divide.out", TORCH_FN(floor_divide_into));
  AXON_BINARY2_I(remainder, Tensor_out, Tensor, AXON_BINARY_REMAINDER, false)
  m.impl("special_zeta.out", TORCH_FN(special_zeta_out));
  AXON_BINARY(special_chebyshev_polynomial_t, AXON_BINARY_CHEBYSHEV_T, true)
  AXON_BINARY(special_chebyshev_polynomial_u, AXON_BINARY_CHEBYSHEV_U, true)
  AXON_BINARY(special_chebyshev_polynomial_v, AXON_BINARY_CHEBYSHEV_V, true)
  AXON_BINARY(special_chebyshev_polynomial_w, AXON_BINARY_CHEBYSHEV_W, true)
  AXON_BINARY(special_shifted_chebyshev_polynomial_t, AXON_BINARY_SHIFTED_CHEBYSHEV_T, true)
  AXON_BINARY(special_shifted_chebyshev_polynomial_u, AXON_BINARY_SHIFTED_CHEBYSHEV_U, true)
  AXON_BINARY(special_shifted_chebyshev_polynomial_v, AXON_BINARY_SHIFTED_CHEBYSHEV_V, true)
  AXON_BINARY(special_shifted_chebyshev_polynomial_w, AXON_BINARY_SHIFTED_CHEBYSHEV_W, true)
  AXON_BINARY(special_hermite_polynomial_h, AXON_BINARY_HERMITE_H, true)
  AXON_BINARY(special_hermite_polynomial_he, AXON_BINARY_HERMITE_HE, true)
  AXON_BINARY(special_laguerre_polynomial_l, AXON_BINARY_LAGUERRE_L, true)
  AXON_BINARY(special_legendre_polynomial_p, AXON_BINARY_LEGENDRE_P, true)
  AXON_BINARY(special_xlog1py, AXON_BINARY_XLOG1PY, true)
  AXON_BINARY(logaddexp, AXON_BINARY_LOGADDEXP, false)
  AXON_BINARY(logaddexp2, AXON_BINARY_LOGADDEXP2, false)
  m.impl("heaviside.out", TORCH_FN(heaviside_out));
  m.impl("heaviside", TORCH_FN(heaviside));
  m.impl("heaviside_", TORCH_FN(heaviside_inplace));
  AXON_BINARY_I(nextafter, AXON_BINARY_NEXTAFTER, false)  // the half types step their bit patterns (c10's rule)
  AXON_BINARY_I(gcd, AXON_BINARY_GCD, false)
  AXON_BINARY_I(lcm, AXON_BINARY_LCM, false)
  AXON_BINARY2_I(fmod, Tensor_out, Tensor, AXON_BINARY_FMOD, false)
  AXON_BINARY2(pow, Tensor_Tensor_out, Tensor_Tensor, AXON_BINARY_POW, false)
  m.impl("pow.Tensor_Scalar_out", TORCH_FN(pow_tensor_scalar_out));
  m.impl("pow.Tensor_Scalar", TORCH_FN(pow_tensor_scalar));
  m.impl("pow.Scalar_out", TORCH_FN(pow_scalar_out));
  AXON_BINARY_I(atan2, AXON_BINARY_ATAN2, true)
  AXON_BINARY(maximum, AXON_BINARY_MAXIMUM, false)
  AXON_BINARY(minimum, AXON_BINARY_MINIMUM, false)
  AXON_BINARY(fmax, AXON_BINARY_FMAX, false)
  AXON_BINARY(fmin, AXON_BINARY_FMIN, false)
  AXON_BINARY_I(hypot, AXON_BINARY_HYPOT, false)  // integers: CPU's refusal, from the host
  AXON_BINARY2_I(copysign, out, Tensor, AXON_BINARY_COPYSIGN, true)
  AXON_BINARY2_I(xlogy, OutTensor, Tensor, AXON_BINARY_XLOGY, true)
  AXON_BINARY_I(igamma, AXON_BINARY_IGAMMA, false)  // integer operands: CPU's refusal, from the host
  AXON_BINARY_I(igammac, AXON_BINARY_IGAMMAC, false)
  AXON_BINARY2_I(bitwise_and, Tensor_out, Tensor, AXON_BINARY_BITWISE_AND, false)
  AXON_BINARY2_I(bitwise_or, Tensor_out, Tensor, AXON_BINARY_BITWISE_OR, false)
  AXON_BINARY2_I(bitwise_xor, Tensor_out, Tensor, AXON_BINARY_BITWISE_XOR, false)
  AXON_BINARY2_I(bitwise_left_shift, Tensor_out, Tensor, AXON_BINARY_SHIFT_LEFT, false)
  AXON_BINARY2_I(bitwise_right_shift, Tensor_out, Tensor, AXON_BINARY_SHIFT_RIGHT, false)
  AXON_COMPARE(eq, AXON_BINARY_EQ)
  AXON_COMPARE(ne, AXON_BINARY_NE)
  AXON_COMPARE(lt, AXON_BINARY_LT)
  AXON_COMPARE(le, AXON_BINARY_LE)
  AXON_COMPARE(gt, AXON_BINARY_GT)
  AXON_COMPARE(ge, AXON_BINARY_GE)
  m.impl("logical_and.out", TORCH_FN((compare_out<AXON_BINARY_LOGICAL_AND, ATEN_OP2(logical_and, out)>)));
  m.impl("logical_or.out", TORCH_FN((compare_out<AXON_BINARY_LOGICAL_OR, ATEN_OP2(logical_or, out)>)));
  m.impl("logical_xor.out", TORCH_FN((compare_out<AXON_BINARY_LOGICAL_XOR, ATEN_OP2(logical_xor, out)>)));

  m.impl("addcmul.out", TORCH_FN(addcmul_into));
  m.impl("addcdiv.out", TORCH_FN(addcdiv_into));
  m.impl("addcmul", TORCH_FN(addcmul));
  m.impl("addcmul_", TORCH_FN(addcmul_));
  m.impl("addcdiv_", TORCH_FN(addcdiv_));
  m.impl("lerp_.Scalar", TORCH_FN(lerp_scalar_));
  m.impl("lerp_.Tensor", TORCH_FN(lerp_tensor_));
  m.impl("clamp_", TORCH_FN(clamp_));
  m.impl("clamp_.Tensor", TORCH_FN(clamp_tensor_));
  m.impl("addcdiv", TORCH_FN(addcdiv));
  m.impl("lerp.Scalar_out", TORCH_FN(lerp_scalar_into));
  m.impl("lerp.Tensor_out", TORCH_FN(lerp_tensor_into));
  m.impl("lerp.Scalar", TORCH_FN(lerp_scalar));
  m.impl("lerp.Tensor", TORCH_FN(lerp_tensor));
  m.impl("where.self_out", TORCH_FN(where_out));
  m.impl("where.self", TORCH_FN(where_self));
  m.impl("clamp", TORCH_FN(clamp_numbers));
  m.impl("clamp.out", TORCH_FN(clamp_out));
  m.impl("clamp.Tensor_out", TORCH_FN(clamp_tensor_into));
  m.impl("clamp_min.out", TORCH_FN(clamp_min_out));
  m.impl("clamp_min.Tensor_out", TORCH_FN(clamp_min_tensor_out));
  m.impl("clamp_max.Tensor_out", TORCH_FN(clamp_max_tensor_out));
  m.impl("rsub.Tensor", TORCH_FN(rsub_tensor));
  m.impl("clamp_max.out", TORCH_FN(clamp_max_out));
  m.impl("clamp.Tensor", TORCH_FN(clamp_tensor));
  m.impl("clamp_min", TORCH_FN(clamp_min));
  m.impl("clamp_max", TORCH_FN(clamp_max));
  m.impl("clamp_min.Tensor", TORCH_FN(clamp_min_tensor));
  m.impl("clamp_max.Tensor", TORCH_FN(clamp_max_tensor));
  m.impl("clamp_min_.Tensor", TORCH_FN(clamp_bound_tensor_<true>));
  m.impl("clamp_max_.Tensor", TORCH_FN(clamp_bound_tensor_<false>));
  m.impl("clamp_min_", TORCH_FN(clamp_bound_number_<true>));
  m.impl("clamp_max_", TORCH_FN(clamp_bound_number_<false>));

  // gelu_backward and silu_backward: their functional forms too, which autograd calls. Without its own, silu's ran
  // ATen's composite formula on PrivateUse1 (five pointwise commands, 4.7x torch CPU's time).
  m.impl("gelu_backward.grad_input", TORCH_FN(gelu_backward_out));
  m.impl("gelu_backward", TORCH_FN(gelu_backward));
  m.impl("silu_backward.grad_input",
         TORCH_FN((backward_out<AXON_BINARY_SILU_BACKWARD, ATEN_OP2(silu_backward, grad_input)>)));
  m.impl("silu_backward", TORCH_FN((backward_functional<AXON_BINARY_SILU_BACKWARD, ATEN_OP(silu_backward)>)));
  m.impl("mish_backward", TORCH_FN((backward_functional<AXON_BINARY_MISH_BACKWARD, ATEN_OP(mish_backward)>)));
  m.impl("sigmoid_backward.grad_input",
         TORCH_FN((backward_out<AXON_BINARY_SIGMOID_BACKWARD, ATEN_OP2(sigmoid_backward, grad_input)>)));
  m.impl("tanh_backward.grad_input",
         TORCH_FN((backward_out<AXON_BINARY_TANH_BACKWARD, ATEN_OP2(tanh_backward, grad_input)>)));
  m.impl("threshold_backward.grad_input", TORCH_FN(threshold_backward_out));
  m.impl("hardtanh_backward.grad_input", TORCH_FN(hardtanh_backward_out));
  m.impl("hardtanh_backward", TORCH_FN(hardtanh_backward));
  m.impl("leaky_relu_backward.grad_input", TORCH_FN(leaky_relu_backward_out));
  m.impl("elu_backward.grad_input", TORCH_FN(elu_backward_out));
  m.impl("softplus_backward.grad_input", TORCH_FN(softplus_backward_out));
  m.impl("hardswish_backward",
         TORCH_FN((backward_functional<AXON_BINARY_HARDSWISH_BACKWARD, ATEN_OP(hardswish_backward)>)));
  m.impl("hardswish_backward.out",
         TORCH_FN((backward_out<AXON_BINARY_HARDSWISH_BACKWARD, ATEN_OP2(hardswish_backward, out)>)));
  m.impl("hardsigmoid_backward.grad_input",
         TORCH_FN((backward_out<AXON_BINARY_HARDSIGMOID_BACKWARD, ATEN_OP2(hardsigmoid_backward, grad_input)>)));
}

}  // namespace
}  // namespace torch_axon

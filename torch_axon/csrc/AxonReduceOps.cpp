// Reductions, arg-reductions and scans on libaxon's reduce kernels (libaxon/include/axon/reduce.h).
//
// libaxon takes the output in keepdim form (the input's rank, size 1 on reduced dims), so each op resizes `out` as
// PyTorch would, views it in keepdim form (or computes into a keepdim temporary when out's layout cannot be viewed
// that way) and launches one kernel. Output dtypes come from the caller as in PyTorch: the structured ops' meta
// functions pick them for the functional forms; out= keeps out's dtype. Cases libaxon does not cover (complex, more
// than AXON_MAX_DIMS dimensions, dtypes it lacks) run through the host fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <axon/pointwise.h>
#include <axon/reduce.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <bitset>
#include <cmath>
#include <optional>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

constexpr size_t kMaxDims = 64;

// The reduced dims as a mask; an absent or empty list means every dim, as in PyTorch.
std::bitset<kMaxDims> reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim) {
  std::bitset<kMaxDims> mask;
  const int64_t ndim = self.dim();
  if (!dim.has_value() || dim->empty()) {
    for (int64_t d = 0; d < ndim; ++d) mask.set(d);
    return mask;
  }
  for (int64_t d : *dim) {
    const int64_t w = at::maybe_wrap_dim(d, std::max<int64_t>(ndim, 1));
    TORCH_CHECK(!mask.test(w), "dim ", w, " appears multiple times in the list of dims");
    mask.set(w);
  }
  return mask;
}

std::vector<int64_t> keepdim_shape(const at::Tensor& self, const std::bitset<kMaxDims>& mask) {
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  for (size_t d = 0; d < shape.size(); ++d)
    if (mask.test(d)) shape[d] = 1;
  return shape;
}

std::vector<int64_t> result_shape(const at::Tensor& self, const std::bitset<kMaxDims>& mask, bool keepdim) {
  if (keepdim) return keepdim_shape(self, mask);
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!mask.test(d)) shape.push_back(self.size(d));
  return shape;
}

// libaxon's reduce kernels take every real dtype it knows; complex ones run on the host (but sum and mean, below).
bool reducible(c10::ScalarType t) { return kernels_support(t) && !c10::isComplexType(t); }

bool libaxon_can_take(const at::Tensor& self, const at::Tensor& out) {
  return self.dim() <= AXON_MAX_DIMS && reducible(self.scalar_type()) && reducible(out.scalar_type());
}

// sum and mean also take complex self and out: libaxon reduces the real and the imaginary parts.
bool libaxon_can_sum(const at::Tensor& self, const at::Tensor& out) {
  if (self.is_complex() && out.is_complex()) {  // complex64 and complex128; complex32 stays the host's
    return self.dim() <= AXON_MAX_DIMS && kernels_support(self.scalar_type()) && kernels_support(out.scalar_type());
  }
  return libaxon_can_take(self, out);
}

// any, all and count_nonzero also take a complex self, complex32 included: libaxon tests x != 0 on both parts.
bool testable(c10::ScalarType t) { return kernels_support(t) || t == c10::kComplexHalf; }

bool libaxon_can_test(const at::Tensor& self, const at::Tensor& out) {
  return self.dim() <= AXON_MAX_DIMS && testable(self.scalar_type()) && reducible(out.scalar_type());
}

// prod, logsumexp and the scans also take a complex out (from a complex or a real self): libaxon computes them in
// complex128.
bool libaxon_can_scan(const at::Tensor& self, const at::Tensor& out) {
  if (out.is_complex()) {  // complex64 and complex128; complex32 stays the host's
    return self.dim() <= AXON_MAX_DIMS && kernels_support(self.scalar_type()) && kernels_support(out.scalar_type());
  }
  return libaxon_can_take(self, out);
}

// Runs `launch(out_keepdim)` with out viewed in keepdim form; out has already been resized to its result shape.
template <class Launch>
void into_keepdim(const at::Tensor& self, const std::bitset<kMaxDims>& mask, at::Tensor& out, Launch launch) {
  const auto shape = keepdim_shape(self, mask);
  if (out.is_contiguous()) {
    launch(out.view(shape));
    return;
  }
  at::Tensor tmp = at::empty(shape, out.options());
  launch(tmp);
  out.copy_(tmp.view(out.sizes()));
}

// One reduction: resize out, then launch op over the masked dims.
void reduce(axon_reduce_op_t op, const at::Tensor& self, const std::bitset<kMaxDims>& mask, bool keepdim,
            at::Tensor& out, const axon_reduce_params_t& params, const char* name) {
  at::native::resize_output(out, result_shape(self, mask, keepdim));
  into_keepdim(self, mask, out, [&](const at::Tensor& o) {
    const axon_tensor_t in = describe_storage(self, name), od = describe(o, name);
    AXON_CHECK(axon_kernel_reduce(current_stream(self.device().index()), op, &od, &in, &params));
  });
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  // complex32 as CPU: no kernel, so a refusal, except over no elements (zeros); autograd reaches it, as index_put's
  // backward into broadcast values
  if (self.scalar_type() == c10::kComplexHalf || out.scalar_type() == c10::kComplexHalf) {
    TORCH_CHECK(self.numel() == 0, "\"sum_cpu\" not implemented for 'ComplexHalf'");
    at::native::resize_output(out, result_shape(self, reduced_dims(self, dim), keepdim));
    return out.zero_();
  }
  if (!libaxon_can_sum(self, out)) return fall_back<ATEN_OP2(sum, IntList_out)>(self, dim, keepdim, dtype, out);
  reduce(AXON_REDUCE_SUM, self, reduced_dims(self, dim), keepdim, out, axon_reduce_params_default(), "sum");
  return out;
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  TORCH_CHECK(at::isFloatingType(out.scalar_type()) || at::isComplexType(out.scalar_type()),
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
              "Got: ", self.scalar_type());
  if (!libaxon_can_sum(self, out)) return fall_back<ATEN_OP2(mean, out)>(self, dim, keepdim, dtype, out);
  reduce(AXON_REDUCE_MEAN, self, reduced_dims(self, dim), keepdim, out, axon_reduce_params_default(), "mean");
  return out;
}

at::Tensor& prod_int_out(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype,
                         at::Tensor& out) {
  if (!libaxon_can_scan(self, out)) return fall_back<ATEN_OP2(prod, int_out)>(self, dim, keepdim, dtype, out);
  const int64_t d[1] = {dim};
  reduce(AXON_REDUCE_PROD, self, reduced_dims(self, at::IntArrayRef(d)), keepdim, out, axon_reduce_params_default(),
         "prod");
  return out;
}

// prod over every element: the one-dimension product over a flat view.
at::Tensor prod_all(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  if (!kernels_support(self.scalar_type()) || self.dim() > AXON_MAX_DIMS) return fall_back<ATEN_OP(prod)>(self, dtype);
  return at::prod(self.reshape({-1}), 0, false, dtype);
}

// nansum: the sum with NaN taken as 0 (integers have none).
at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<c10::ScalarType> dtype) {
  if (!reducible(self.scalar_type()) || self.is_complex() || self.dim() > AXON_MAX_DIMS)
    return fall_back<ATEN_OP(nansum)>(self, dim, keepdim, dtype);
  const c10::ScalarType out_type = dtype.value_or(self.scalar_type());
  if (!at::isFloatingType(self.scalar_type())) return at::sum(self, dim, keepdim, dtype);   // no NaN to skip
  at::Tensor out = at::empty({0}, self.options().dtype(out_type));
  if (!at::isFloatingType(out_type) || !libaxon_can_sum(self, out))   // NaN to an integer dtype: CPU's casts
    return at::sum(at::where(at::isnan(self), at::zeros({}, self.options()), self), dim, keepdim, dtype);
  reduce(AXON_REDUCE_NANSUM, self, reduced_dims(self, dim), keepdim, out, axon_reduce_params_default(), "nansum");
  return out;
}

template <axon_reduce_op_t OP, class AtenOp>
at::Tensor& amax_amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), OP == AXON_REDUCE_AMAX ? "amax" : "amin",
              "(): Expected out tensor to have dtype ", self.scalar_type(), ", but got ", out.scalar_type(),
              " instead");
  if (!libaxon_can_take(self, out)) return fall_back<AtenOp>(self, dim, keepdim, out);
  const auto mask = reduced_dims(self, dim);
  for (int64_t d = 0; d < self.dim(); ++d) {
    TORCH_CHECK(!mask.test(d) || self.size(d) != 0, OP == AXON_REDUCE_AMAX ? "amax" : "amin",
                "(): Expected reduction dim ", d, " to have non-zero size.");
  }
  reduce(OP, self, mask, keepdim, out, axon_reduce_params_default(), OP == AXON_REDUCE_AMAX ? "amax" : "amin");
  return out;
}

// max() and min() over every element: the functional forms have their own kernels.
template <axon_reduce_op_t OP, class AtenOp>
at::Tensor max_min_all(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, OP == AXON_REDUCE_AMAX ? "max" : "min",
              "(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
              "'dim' argument.");
  if (!reducible(self.scalar_type()) || self.dim() > AXON_MAX_DIMS) return fall_back<AtenOp>(self);
  at::Tensor out = at::empty({}, self.options());
  reduce(OP, self, reduced_dims(self, std::nullopt), false, out, axon_reduce_params_default(), "max");
  return out;
}

template <axon_reduce_op_t OP, class AtenOp>
at::Tensor& any_all_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  if (!libaxon_can_test(self, out)) return fall_back<AtenOp>(self, dim, keepdim, out);
  reduce(OP, self, reduced_dims(self, dim), keepdim, out, axon_reduce_params_default(),
         OP == AXON_REDUCE_ANY ? "any" : "all");
  return out;
}

template <axon_reduce_op_t OP, class AtenOp>
at::Tensor& any_all_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  if (!libaxon_can_test(self, out)) return fall_back<AtenOp>(self, dim, keepdim, out);
  const int64_t d[1] = {dim};
  reduce(OP, self, reduced_dims(self, at::IntArrayRef(d)), keepdim, out, axon_reduce_params_default(),
         OP == AXON_REDUCE_ANY ? "any" : "all");
  return out;
}

template <axon_reduce_op_t OP, class AtenOp>
at::Tensor& any_all_all_out(const at::Tensor& self, at::Tensor& out) {
  if (!libaxon_can_test(self, out)) return fall_back<AtenOp>(self, out);
  reduce(OP, self, reduced_dims(self, std::nullopt), false, out, axon_reduce_params_default(),
         OP == AXON_REDUCE_ANY ? "any" : "all");
  return out;
}

template <axon_reduce_op_t OP, class AtenOp>
at::Tensor& var_std_out(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                        bool keepdim, at::Tensor& out) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type()),
              OP == AXON_REDUCE_VAR ? "var" : "std", " only supports floating point and complex dtypes");
  if (self.is_complex() && libaxon_can_test(self, out)) {
    // PyTorch's own rule for complex: the variance of the real parts plus that of the imaginary parts (and for std
    // its square root), each a real reduction of a strided view.
    const at::Tensor re = at::var(at::real(self), dim, correction, keepdim);
    const at::Tensor im = at::var(at::imag(self), dim, correction, keepdim);
    at::add_out(out, re, im);
    if (OP == AXON_REDUCE_STD) at::sqrt_out(out, out);
    return out;
  }
  if (!libaxon_can_take(self, out)) return fall_back<AtenOp>(self, dim, correction, keepdim, out);
  axon_reduce_params_t p = axon_reduce_params_default();
  p.correction = correction.has_value() ? correction->toDouble() : 1.0;
  reduce(OP, self, reduced_dims(self, dim), keepdim, out, p, OP == AXON_REDUCE_VAR ? "var" : "std");
  return out;
}

// var and std also have functional kernels of their own (not routed through .correction_out).
template <axon_reduce_op_t OP, class AtenOp, class AtenOutOp>
at::Tensor var_std(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                   bool keepdim) {
  const c10::ScalarType dtype = at::isComplexType(self.scalar_type()) ? c10::toRealValueType(self.scalar_type())
                                                                       : self.scalar_type();
  if (!testable(self.scalar_type()) || self.dim() > AXON_MAX_DIMS) {  // complex32 too: its parts' variances
    return fall_back<AtenOp>(self, dim, correction, keepdim);
  }
  at::Tensor out = at::empty({0}, self.options().dtype(dtype));
  return var_std_out<OP, AtenOutOp>(self, dim, correction, keepdim, out);
}

// var_mean and std_mean: the two native reductions (float and complex dtypes; the refusals go to the host fallback).
template <axon_reduce_op_t OP, class AtenOp>
std::tuple<at::Tensor, at::Tensor> var_std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                                const std::optional<c10::Scalar>& correction, bool keepdim) {
  const bool float_or_complex = at::isFloatingType(self.scalar_type()) || at::isComplexType(self.scalar_type());
  if (!float_or_complex || !kernels_support(self.scalar_type()) || self.dim() > AXON_MAX_DIMS)
    return fall_back<AtenOp>(self, dim, correction, keepdim);
  at::Tensor spread = OP == AXON_REDUCE_VAR ? at::var(self, dim, correction, keepdim)
                                            : at::std(self, dim, correction, keepdim);
  return {spread, at::mean(self, dim, keepdim)};
}

// aminmax: amin and amax into min and max (PyTorch's refusals, such as no elements, from the host fallback).
std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                                                 at::Tensor& min, at::Tensor& max) {
  const bool empty = dim.has_value() && self.dim() > 0 ? self.size(at::maybe_wrap_dim(*dim, self.dim())) == 0
                                                       : self.numel() == 0;
  if (empty || !libaxon_can_take(self, min) || !libaxon_can_take(self, max) ||
      min.scalar_type() != self.scalar_type() || max.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(aminmax, out)>(self, dim, keepdim, min, max);
  if (dim.has_value()) {
    const int64_t d[1] = {*dim};
    at::amin_out(min, self, at::IntArrayRef(d), keepdim);
    at::amax_out(max, self, at::IntArrayRef(d), keepdim);
  } else {  // every element; keepdim keeps every dimension as 1
    at::amin_out(min, self, {}, keepdim);
    at::amax_out(max, self, {}, keepdim);
  }
  return {min, max};
}

// renorm: PyTorch's own composition, on native ops. Each sub-tensor along dim is scaled to a p-norm of at most
// maxnorm: the norms over the other dims (accumulated in float32 for float16 and bfloat16, as CPU does), a factor of
// maxnorm / (norm + 1e-7) where a norm exceeds maxnorm and 1 elsewhere (libaxon's RENORM_FACTOR, written over the
// norms in place, or into self's dtype for the halves), and a product.
at::Tensor& renorm_out(const at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm,
                       at::Tensor& out) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0.0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(), " dimensions");
  const c10::ScalarType t = self.scalar_type();
  if (!kernels_support(t) || !(at::isFloatingType(t) || at::isComplexType(t)) || self.dim() > AXON_MAX_DIMS ||
      out.scalar_type() != t) {
    return fall_back<ATEN_OP2(renorm, out)>(self, p, dim, maxnorm, out);
  }
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> reduce_dims;
  for (int64_t k = 0; k < self.dim(); ++k)
    if (k != d) reduce_dims.push_back(k);
  const bool half = t == at::kHalf || t == at::kBFloat16;
  const at::Tensor norm = half ? at::linalg_vector_norm(self, p, reduce_dims, true, at::kFloat)
                               : at::linalg_vector_norm(self, p, reduce_dims, true);
  // The scale, as CPU's renorm_scale_factor kernel computes it, in the norm's dtype and stored in self's real dtype.
  axon_op_params_t params = axon_op_params_default();
  params.maxnorm = maxnorm.toDouble();
  params.compute = *axon_dtype_of(norm.scalar_type());
  const at::Tensor factor = half ? at::empty(norm.sizes(), norm.options().dtype(t)) : norm;
  const axon_tensor_t fd = describe(factor, "renorm"), nd = describe(norm, "renorm");
  AXON_CHECK(axon_kernel_unary(current_stream(self.device().index()), AXON_UNARY_RENORM_FACTOR, &fd, &nd, &params));
  at::native::resize_output(out, self.sizes());
  at::mul_out(out, self, factor);
  return out;
}

at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  const bool complex = out.is_complex() && libaxon_can_scan(self, out);
  if (!complex && (!libaxon_can_take(self, out) || !at::isFloatingType(out.scalar_type()))) {
    return fall_back<ATEN_OP2(logsumexp, out)>(self, dim, keepdim, out);
  }
  reduce(AXON_REDUCE_LOGSUMEXP, self, reduced_dims(self, dim), keepdim, out, axon_reduce_params_default(),
         "logsumexp");
  return out;
}

at::Tensor& vector_norm_out(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  // complex32 as CPU computes it: the magnitudes and their reduction in float32, rounded to float16 once at the end
  if (self.scalar_type() == c10::kComplexHalf && !dtype && out.scalar_type() == c10::kHalf &&
      out.device() == self.device()) {
    const at::Tensor wide = at::linalg_vector_norm(at::abs(self.to(c10::kComplexFloat)), ord, dim, keepdim);
    at::native::resize_output(out, wide.sizes());
    out.copy_(wide);
    return out;
  }
  // a complex vector's norm is its magnitudes' (out is real; a dtype, if given, is the complex type computed in)
  if (self.is_complex() && kernels_support(self.scalar_type()) && (!dtype || at::isComplexType(*dtype)) &&
      out.scalar_type() == c10::toRealValueType(dtype.value_or(self.scalar_type())) && out.device() == self.device())
    return vector_norm_out(at::abs(dtype ? self.to(*dtype) : self), ord, dim, keepdim, std::nullopt, out);
  if (!libaxon_can_take(self, out) || !at::isFloatingType(out.scalar_type())) {
    return fall_back<ATEN_OP2(linalg_vector_norm, out)>(self, ord, dim, keepdim, dtype, out);
  }
  axon_reduce_params_t p = axon_reduce_params_default();
  p.p = ord.toDouble();
  const auto mask = reduced_dims(self, dim);
  if (self.numel() == 0 && std::isinf(p.p)) {  // PyTorch's error for an empty inf-norm
    for (int64_t d = 0; d < self.dim(); ++d) {
      TORCH_CHECK(!mask.test(d) || self.size(d) != 0, "linalg.vector_norm cannot compute the ", ord,
                  " norm on the empty tensor because the operation does not have an identity");
    }
  }
  reduce(AXON_REDUCE_NORM, self, mask, keepdim, out, p, "linalg_vector_norm");
  return out;
}

// The legacy norm (torch.norm with dims; cosine_similarity, pairwise_distance and dist reach it): the vector norm of
// order p (2 when None), for real floating and complex dtypes.
at::Tensor& norm_out(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim,
                     at::Tensor& out) {
  const bool complex_ok = self.is_complex() && out.scalar_type() == c10::toRealValueType(self.scalar_type());
  if (!(at::isFloatingType(self.scalar_type()) && out.scalar_type() == self.scalar_type()) && !complex_ok)
    return fall_back<ATEN_OP2(norm, out)>(self, p, dim, keepdim, out);
  return vector_norm_out(self, p.value_or(2.0), dim, keepdim, std::nullopt, out);
}

at::Tensor& norm_dtype_out(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                           bool keepdim, c10::ScalarType dtype, at::Tensor& out) {
  if (!at::isFloatingType(self.scalar_type()) || !at::isFloatingType(dtype) || out.scalar_type() != dtype)
    return fall_back<ATEN_OP2(norm, dtype_out)>(self, p, dim, keepdim, dtype, out);
  return vector_norm_out(self, p.value_or(2.0), dim, keepdim, dtype, out);
}

// trace: the sum of the diagonal (a view), so it promotes integers to int64 as sum does.
at::Tensor trace(const at::Tensor& self) {
  if (self.dim() != 2 || !kernels_support(self.scalar_type()) || self.scalar_type() == at::kBool)  // CPU refuses bool
    return fall_back<ATEN_OP(trace)>(self);
  const c10::ScalarType t = self.scalar_type();
  at::Tensor out = at::empty({}, self.options().dtype(c10::isIntegralType(t, /*includeBool=*/true) ? at::kLong : t));
  if (!libaxon_can_sum(self, out)) return at::sum(self.diagonal());
  // The diagonal as a descriptor (one stride, the two summed): a view and sum's dispatch were half of a small
  // trace's time.
  const int64_t diag_size[1] = {std::min(self.size(0), self.size(1))};
  const int64_t diag_stride[1] = {self.stride(0) + self.stride(1)}, one[1] = {1};
  const axon_tensor_t in = describe_strided(self, 1, diag_size, diag_stride), od = describe_strided(out, 1, one, one);
  AXON_CHECK(axon_kernel_reduce(current_stream(self.device().index()), AXON_REDUCE_SUM, &od, &in, nullptr));
  return out;
}

at::Tensor count_nonzero_dims(const at::Tensor& self, at::IntArrayRef dims) {
  if (!testable(self.scalar_type()) || self.dim() > AXON_MAX_DIMS) {
    return fall_back<ATEN_OP2(count_nonzero, dim_IntList)>(self, dims);
  }
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  reduce(AXON_REDUCE_COUNT_NONZERO, self, reduced_dims(self, dims), false, out, axon_reduce_params_default(),
         "count_nonzero");
  return out;
}

// hash_tensor, mode 0: the xor of the elements' bits, floats widened to float64 and integers to int64, into uint64,
// which libaxon's XOR computes in one pass (uint64 out described as int64: the same bits).
// uint16/32/64 selves (which CPU refuses), other modes and empty selves go to the host for CPU's own errors.
at::Tensor& hash_tensor_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode, at::Tensor& out) {
  if (mode != 0 || !reducible(self.scalar_type()) || self.numel() == 0 ||
      out.scalar_type() != at::kUInt64 || self.dim() > AXON_MAX_DIMS)
    return fall_back<ATEN_OP2(hash_tensor, out)>(self, dim, keepdim, mode, out);
  const auto mask = reduced_dims(self, dim);
  at::native::resize_output(out, result_shape(self, mask, keepdim));
  into_keepdim(self, mask, out, [&](const at::Tensor& o) {
    const axon_tensor_t in = describe(self, "hash_tensor"), od = describe_bytes(o, "hash_tensor");
    const axon_reduce_params_t params = axon_reduce_params_default();
    AXON_CHECK(axon_kernel_reduce(current_stream(self.device().index()), AXON_REDUCE_XOR, &od, &in, &params));
  });
  return out;
}

// ---- along one dim: max/min with indices, argmax/argmin ----

template <axon_arg_reduce_op_t OP, class AtenOp>
std::tuple<at::Tensor&, at::Tensor&> max_min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                    at::Tensor& values, at::Tensor& indices) {
  if (self.dim() == 0 && libaxon_can_take(self, values) && values.scalar_type() == self.scalar_type() &&
      indices.scalar_type() == at::kLong) {  // a scalar is its own maximum, at index 0
    at::maybe_wrap_dim(dim, static_cast<int64_t>(0));
    at::native::resize_output(values, {});
    at::native::resize_output(indices, {});
    values.copy_(self);
    indices.zero_();
    return {values, indices};
  }
  if (!libaxon_can_take(self, values) || self.dim() == 0) return fall_back<AtenOp>(self, dim, keepdim, values, indices);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) != 0, OP == AXON_ARG_REDUCE_MAX ? "max" : "min", "(): Expected reduction dim ", d,
              " to have non-zero size.");
  const int64_t dims[1] = {d};
  const auto mask = reduced_dims(self, at::IntArrayRef(dims));
  const auto shape = result_shape(self, mask, keepdim), kshape = keepdim_shape(self, mask);
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  at::Tensor v = values.is_contiguous() ? values.view(kshape) : at::empty(kshape, values.options());
  at::Tensor i = indices.is_contiguous() ? indices.view(kshape) : at::empty(kshape, indices.options());
  const axon_tensor_t in = describe(self, "max.dim"), vd = describe(v, "max.dim"), id = describe(i, "max.dim");
  AXON_CHECK(axon_kernel_arg_reduce(current_stream(self.device().index()), OP, &vd, &id, &in, static_cast<int>(d)));
  if (!values.is_contiguous()) values.copy_(v.view(shape));
  if (!indices.is_contiguous()) indices.copy_(i.view(shape));
  return {values, indices};
}

template <axon_arg_reduce_op_t OP, class AtenOp>
at::Tensor& argmax_argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  if (!reducible(self.scalar_type()) || self.dim() > AXON_MAX_DIMS) return fall_back<AtenOp>(self, dim, keepdim, out);
  // Without a dim, PyTorch takes the index into the flattened tensor.
  const at::Tensor in_t = dim.has_value() ? self : self.reshape({-1});
  const int64_t d = dim.has_value() ? at::maybe_wrap_dim(*dim, std::max<int64_t>(self.dim(), 1)) : 0;
  TORCH_CHECK(in_t.numel() > 0 && (in_t.dim() == 0 || in_t.size(d) != 0),
              OP == AXON_ARG_REDUCE_ARGMAX ? "argmax" : "argmin",
              "(): Expected reduction dim to have non-zero size.");
  if (in_t.dim() == 0) {  // a scalar's index is 0
    at::native::resize_output(out, {});
    out.zero_();
    return out;
  }
  const int64_t dims[1] = {d};
  const auto mask = reduced_dims(in_t, at::IntArrayRef(dims));
  const auto shape = dim.has_value() ? result_shape(in_t, mask, keepdim)
                                     : (keepdim ? std::vector<int64_t>(self.dim(), 1) : std::vector<int64_t>{});
  at::native::resize_output(out, shape);
  const auto kshape = keepdim_shape(in_t, mask);
  at::Tensor o = out.is_contiguous() ? out.view(kshape) : at::empty(kshape, out.options());
  const axon_tensor_t in = describe(in_t, "argmax"), od = describe(o, "argmax");
  AXON_CHECK(axon_kernel_arg_reduce(current_stream(self.device().index()), OP, nullptr, &od, &in, static_cast<int>(d)));
  if (!out.is_contiguous()) out.copy_(o.view(shape));
  return out;
}

// ---- scans ----

template <axon_cumulative_op_t OP, class AtenOp>
at::Tensor& cumulative_out(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  if (!libaxon_can_scan(self, out)) return fall_back<AtenOp>(self, dim, dtype, out);
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  if (self.dim() == 0) {
    out.copy_(self);
    return out;
  }
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  at::Tensor o = out.is_contiguous() ? out : at::empty(self.sizes(), out.options());
  const axon_tensor_t in = describe(self, "cumsum"), od = describe(o, "cumsum");
  AXON_CHECK(axon_kernel_cumulative(current_stream(self.device().index()), OP, &od, &in, static_cast<int>(d)));
  if (!out.is_contiguous()) out.copy_(o);
  return out;
}

// logcumsumexp of a floating or complex self, into a new tensor.
at::Tensor log_cumsum_exp(const at::Tensor& self, int64_t dim) {
  if (!(at::isFloatingType(self.scalar_type()) || self.is_complex()) || !libaxon_can_scan(self, self))
    return fall_back<ATEN_OP(_logcumsumexp)>(self, dim);
  at::Tensor out = at::empty(self.sizes(), self.options());
  if (self.numel() == 0) return out;
  if (self.dim() == 0) return out.copy_(self);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const axon_tensor_t in = describe(self, "logcumsumexp"), od = describe(out, "logcumsumexp");
  AXON_CHECK(axon_kernel_cumulative(current_stream(self.device().index()), AXON_CUMULATIVE_LOGSUMEXP, &od, &in,
                                    static_cast<int>(d)));
  return out;
}

at::Tensor& log_cumsum_exp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  if (!(at::isFloatingType(self.scalar_type()) || self.is_complex()) || out.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(_logcumsumexp, out)>(self, dim, out);
  at::native::resize_output(out, self.sizes());
  out.copy_(log_cumsum_exp(self, dim));
  return out;
}

// cummax and cummin: PyTorch's composite cummax_out resizes values (self's dtype) and indices (int64) to self's shape
// and calls these helpers for a tensor with a dimension and an element.
template <axon_arg_reduce_op_t OP, class AtenOp>
void cumulative_extreme(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  if (!libaxon_can_take(self, values) || indices.scalar_type() != at::kLong)
    return fall_back<AtenOp>(self, values, indices, dim);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  at::Tensor v = values.is_contiguous() ? values : at::empty(self.sizes(), values.options());
  at::Tensor i = indices.is_contiguous() ? indices : at::empty(self.sizes(), indices.options());
  const char* name = OP == AXON_ARG_REDUCE_MAX ? "cummax" : "cummin";
  const axon_tensor_t in = describe(self, name), vd = describe(v, name), id = describe(i, name);
  AXON_CHECK(axon_kernel_cumulative_extreme(current_stream(self.device().index()), OP, &vd, &id, &in,
                                            static_cast<int>(d)));
  if (!v.is_same(values)) values.copy_(v);
  if (!i.is_same(indices)) indices.copy_(i);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean.out", TORCH_FN(mean_out));
  m.impl("prod.int_out", TORCH_FN(prod_int_out));
  m.impl("prod", TORCH_FN(prod_all));
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("amax.out", TORCH_FN((amax_amin_out<AXON_REDUCE_AMAX, ATEN_OP2(amax, out)>)));
  m.impl("amin.out", TORCH_FN((amax_amin_out<AXON_REDUCE_AMIN, ATEN_OP2(amin, out)>)));
  m.impl("max", TORCH_FN((max_min_all<AXON_REDUCE_AMAX, ATEN_OP(max)>)));
  m.impl("min", TORCH_FN((max_min_all<AXON_REDUCE_AMIN, ATEN_OP(min)>)));
  m.impl("any.dims_out", TORCH_FN((any_all_dims_out<AXON_REDUCE_ANY, ATEN_OP2(any, dims_out)>)));
  m.impl("all.dims_out", TORCH_FN((any_all_dims_out<AXON_REDUCE_ALL, ATEN_OP2(all, dims_out)>)));
  m.impl("any.out", TORCH_FN((any_all_dim_out<AXON_REDUCE_ANY, ATEN_OP2(any, out)>)));
  m.impl("all.out", TORCH_FN((any_all_dim_out<AXON_REDUCE_ALL, ATEN_OP2(all, out)>)));
  m.impl("any.all_out", TORCH_FN((any_all_all_out<AXON_REDUCE_ANY, ATEN_OP2(any, all_out)>)));
  m.impl("all.all_out", TORCH_FN((any_all_all_out<AXON_REDUCE_ALL, ATEN_OP2(all, all_out)>)));
  m.impl("var.correction_out", TORCH_FN((var_std_out<AXON_REDUCE_VAR, ATEN_OP2(var, correction_out)>)));
  m.impl("std.correction_out", TORCH_FN((var_std_out<AXON_REDUCE_STD, ATEN_OP2(std, correction_out)>)));
  m.impl("var.correction", TORCH_FN((var_std<AXON_REDUCE_VAR, ATEN_OP2(var, correction), ATEN_OP2(var, correction_out)>)));
  m.impl("std.correction", TORCH_FN((var_std<AXON_REDUCE_STD, ATEN_OP2(std, correction), ATEN_OP2(std, correction_out)>)));
  m.impl("var_mean.correction", TORCH_FN((var_std_mean<AXON_REDUCE_VAR, ATEN_OP2(var_mean, correction)>)));
  m.impl("std_mean.correction", TORCH_FN((var_std_mean<AXON_REDUCE_STD, ATEN_OP2(std_mean, correction)>)));
  m.impl("aminmax.out", TORCH_FN(aminmax_out));
  m.impl("logsumexp.out", TORCH_FN(logsumexp_out));
  m.impl("renorm.out", TORCH_FN(renorm_out));
  m.impl("linalg_vector_norm.out", TORCH_FN(vector_norm_out));
  m.impl("trace", TORCH_FN(trace));
  m.impl("norm.out", TORCH_FN(norm_out));
  m.impl("norm.dtype_out", TORCH_FN(norm_dtype_out));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(count_nonzero_dims));
  m.impl("hash_tensor.out", TORCH_FN(hash_tensor_out));
  m.impl("max.dim_max", TORCH_FN((max_min_dim_out<AXON_ARG_REDUCE_MAX, ATEN_OP2(max, dim_max)>)));
  m.impl("min.dim_min", TORCH_FN((max_min_dim_out<AXON_ARG_REDUCE_MIN, ATEN_OP2(min, dim_min)>)));
  m.impl("argmax.out", TORCH_FN((argmax_argmin_out<AXON_ARG_REDUCE_ARGMAX, ATEN_OP2(argmax, out)>)));
  m.impl("argmin.out", TORCH_FN((argmax_argmin_out<AXON_ARG_REDUCE_ARGMIN, ATEN_OP2(argmin, out)>)));
  m.impl("cumsum.out", TORCH_FN((cumulative_out<AXON_CUMULATIVE_SUM, ATEN_OP2(cumsum, out)>)));
  m.impl("cumprod.out", TORCH_FN((cumulative_out<AXON_CUMULATIVE_PROD, ATEN_OP2(cumprod, out)>)));
  m.impl("_logcumsumexp", TORCH_FN(log_cumsum_exp));
  m.impl("_logcumsumexp.out", TORCH_FN(log_cumsum_exp_out));
  m.impl("_cummax_helper", TORCH_FN((cumulative_extreme<AXON_ARG_REDUCE_MAX, ATEN_OP(_cummax_helper)>)));
  m.impl("_cummin_helper", TORCH_FN((cumulative_extreme<AXON_ARG_REDUCE_MIN, ATEN_OP(_cummin_helper)>)));
}

}  // namespace
}  // namespace torch_axon

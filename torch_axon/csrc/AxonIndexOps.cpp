// Indexing and concatenation on libaxon's index kernels (libaxon/include/axon/index.h): index_select, gather,
// scatter (src, value, reduce and scatter_reduce with include_self), scatter_add, index_add, index_copy, embedding's
// dense backward and max_norm renorm, masked_fill_, cat and the index vector of repeat_interleave. Embedding's
// forward is composite over index_select. index_copy and index_add are structured: binding .out is enough, PyTorch
// routes index_copy_ and index_copy through it after its meta checks (which .out repeats, for direct out= calls).
//
// Each op makes PyTorch's checks (with its messages), resizes out, describes the tensors and launches one kernel.
// Indices follow these ops' PyTorch rule, [0, size) (no negative wrap). They are read on the device, so an
// out-of-range index is reported at the next synchronization of the stream (e.g. `.cpu()`), with PyTorch's
// "index 7 is out of bounds for dimension 0 with size 5", and nothing is written.
// scatter_reduce (every reduction, include_self either way) and index_reduce run on the same kernel. What libaxon
// does not cover (more than AXON_MAX_DIMS dimensions, 0-dim self, dtypes it lacks, mean of bool, embedding's
// scale_grad_by_freq) runs through the host fallback.
#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Operators.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <axon/index.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>
#include <string_view>
#include <vector>

#include "AxonElementBytes.h"
#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

axon_stream_t stream_of(const at::Tensor& t) { return current_stream(t.device().index()); }

bool fits_dims(const at::Tensor& t) { return t.dim() >= 1 && t.dim() <= AXON_MAX_DIMS; }

// Tensors on another device (a CPU index) go to the host fallback, which raises PyTorch's device error or handles
// them as PyTorch does; describing them would hand libaxon host pointers the op never meant to share.
bool on_device_of(const at::Tensor& self, const at::Tensor& t) { return t.device() == self.device(); }

bool is_index_dtype(const at::Tensor& index) {
  return index.scalar_type() == at::kLong || index.scalar_type() == at::kInt;
}

// A scalar self along dim 0 (or -1) is a vector of one element, as PyTorch indexes it: the ops below run on one-element
// views of their scalar operands when the index has exactly one element (anything else goes to the host fallback,
// which raises PyTorch's error).
bool scalar_self(const at::Tensor& self, const at::Tensor& index) { return self.dim() == 0 && index.numel() == 1; }

// The in-place ops' scalar path copies self into out first: only when nothing will be refused after that copy.
bool same_dtypes(const at::Tensor& self, const at::Tensor& source, const at::Tensor& out) {
  return source.scalar_type() == self.scalar_type() && out.scalar_type() == self.scalar_type();
}

// ---- index_select ----

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(is_index_dtype(index), "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "index_select(): self and result must have the same scalar "
              "type");
  if (scalar_self(self, index) && on_device_of(self, index) && on_device_of(self, out)) {
    at::maybe_wrap_dim(dim, static_cast<int64_t>(0));  // a scalar takes dim 0 or -1
    at::native::resize_output(out, {});
    at::Tensor o = out.view({1});
    index_select_out(self.view({1}), 0, index.reshape({1}), o);
    return out;
  }
  if (!fits_dims(self) || !on_device_of(self, index) || !on_device_of(self, out)) {
    return fall_back<ATEN_OP2(index_select, out)>(self, dim, index, out);
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  shape[dim] = index.numel();
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  TORCH_CHECK_INDEX(self.size(dim) > 0, "index_select(): self indexing axis dim should be positive");
  const axon_tensor_t o = describe_bytes(out, "index_select"), s = describe_bytes(self, "index_select"),
                      x = describe(index, "index_select");
  AXON_CHECK(axon_kernel_index_select(stream_of(self), &o, &s, static_cast<int>(dim), &x, AXON_INDEX_DEFAULT));
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  if ((!fits_dims(self) && !scalar_self(self, index)) || !on_device_of(self, index))
    return fall_back<ATEN_OP(index_select)>(self, dim, index);
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

// ---- gather and scatter: PyTorch's scatter_gather_checks ----

void check_gather_shapes(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor* src,
                         const char* op) {
  TORCH_CHECK(is_index_dtype(index), op, "(): Expected dtype int32/int64 for index");
  TORCH_CHECK(index.dim() == self.dim(), "Index tensor must have the same number of dimensions as ",
              src ? "self tensor" : "input tensor");
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d != dim) {
      TORCH_CHECK(index.size(d) <= self.size(d), "Expected index ", index.sizes(), " to be no larger than self ",
                  self.sizes(), " apart from dimension ", dim);
    }
    if (src) {
      TORCH_CHECK(index.size(d) <= src->size(d), "Expected index ", index.sizes(), " to be no larger than src ",
                  src->sizes());
    }
  }
  if (src) {
    TORCH_CHECK(src->dim() == self.dim(), "Index tensor must have the same number of dimensions as src tensor");
    TORCH_CHECK(src->scalar_type() == self.scalar_type(), op, "(): Expected self.dtype to be equal to src.dtype");
  }
}

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad,
                       at::Tensor& out) {
  if (scalar_self(self, index) && index.dim() <= 1 && on_device_of(self, index) && on_device_of(self, out)) {
    at::maybe_wrap_dim(dim, static_cast<int64_t>(0));  // a scalar takes dim 0 or -1
    TORCH_CHECK(self.scalar_type() == out.scalar_type(), "gather(): Expected self.dtype to be equal to out.dtype");
    TORCH_CHECK(is_index_dtype(index), "gather(): Expected dtype int32/int64 for index");
    at::native::resize_output(out, index.sizes());
    at::Tensor o = out.view({1});
    gather_out(self.view({1}), 0, index.reshape({1}), sparse_grad, o);
    return out;
  }
  if (!fits_dims(self) || index.dim() != self.dim() || !on_device_of(self, index) || !on_device_of(self, out)) {
    return fall_back<ATEN_OP2(gather, out)>(self, dim, index, sparse_grad, out);
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "gather(): Expected self.dtype to be equal to out.dtype");
  if (index.numel() != 0) check_gather_shapes(self, dim, index, nullptr, "gather");
  at::native::resize_output(out, index.sizes());
  if (out.numel() == 0) return out;
  const axon_tensor_t o = describe_bytes(out, "gather"), s = describe_bytes(self, "gather"),
                      x = describe(index, "gather");
  AXON_CHECK(axon_kernel_gather(stream_of(self), &o, &s, static_cast<int>(dim), &x, AXON_INDEX_DEFAULT));
  return out;
}

std::optional<axon_scatter_reduce_t> scatter_reduce_of(std::string_view r) {
  if (r == "add" || r == "sum") return AXON_SCATTER_SUM;
  if (r == "multiply" || r == "prod") return AXON_SCATTER_PROD;
  if (r == "amax") return AXON_SCATTER_AMAX;
  if (r == "amin") return AXON_SCATTER_AMIN;
  return std::nullopt;
}

bool scatter_supported(const at::Tensor& self, const at::Tensor& index, axon_scatter_reduce_t reduce,
                       const at::Tensor& out, const at::Tensor* src = nullptr) {
  if (self.dim() > AXON_MAX_DIMS || index.dim() != self.dim() || !kernels_support(self.scalar_type())) return false;
  if (!on_device_of(self, index) || !on_device_of(self, out) || (src && !on_device_of(self, *src))) return false;
  return reduce == AXON_SCATTER_NONE || reduce == AXON_SCATTER_SUM || !self.is_complex();   // libaxon's complex sums
}

// A scalar as a tensor of one element (a view): the scatter kernels take dimension 0 of it, as PyTorch does dim 0 or
// -1 of a scalar.
at::Tensor one_d(const at::Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }

// out = self, then out[index] op= src (or value). The caller has checked scatter_supported.
void scatter_into(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor* src,
                  const c10::Scalar& value, axon_scatter_reduce_t reduce, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "scatter(): Expected self.dtype to be equal to out.dtype");
  if (index.numel() != 0) check_gather_shapes(self, dim, index, src, "scatter");
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
  }
  if (index.numel() == 0) return;
  const axon_tensor_t o = describe(one_d(out), "scatter"), x = describe(one_d(index), "scatter");
  axon_tensor_t s{};
  if (src) s = describe(one_d(*src), "scatter");
  AXON_CHECK(axon_kernel_scatter(stream_of(self), reduce, &o, static_cast<int>(dim), &x, src ? &s : nullptr,
                                 to_axon_scalar(value), AXON_INDEX_DEFAULT));
}

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  if (!scatter_supported(self, index, AXON_SCATTER_NONE, out, &src) || src.dim() != self.dim()) {
    return fall_back<ATEN_OP2(scatter, src_out)>(self, dim, index, src, out);
  }
  scatter_into(self, dim, index, &src, 0, AXON_SCATTER_NONE, out);
  return out;
}

at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value,
                              at::Tensor& out) {
  if (!scatter_supported(self, index, AXON_SCATTER_NONE, out)) {
    return fall_back<ATEN_OP2(scatter, value_out)>(self, dim, index, value, out);
  }
  scatter_into(self, dim, index, nullptr, value, AXON_SCATTER_NONE, out);
  return out;
}

at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                               c10::string_view reduce, at::Tensor& out) {
  const auto r = scatter_reduce_of(std::string_view(reduce.data(), reduce.size()));
  if (!r || (reduce != "add" && reduce != "multiply") || !scatter_supported(self, index, *r, out, &src) ||
      src.dim() != self.dim()) {
    return fall_back<ATEN_OP2(scatter, reduce_out)>(self, dim, index, src, reduce, out);
  }
  scatter_into(self, dim, index, &src, 0, *r, out);
  return out;
}

at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const at::Scalar& value, c10::string_view reduce, at::Tensor& out) {
  const auto r = scatter_reduce_of(std::string_view(reduce.data(), reduce.size()));
  if (!r || (reduce != "add" && reduce != "multiply") || !scatter_supported(self, index, *r, out)) {
    return fall_back<ATEN_OP2(scatter, value_reduce_out)>(self, dim, index, value, reduce, out);
  }
  scatter_into(self, dim, index, nullptr, value, *r, out);
  return out;
}

at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  if (!scatter_supported(self, index, AXON_SCATTER_SUM, out, &src) || src.dim() != self.dim()) {
    return fall_back<ATEN_OP2(scatter_add, out)>(self, dim, index, src, out);
  }
  scatter_into(self, dim, index, &src, 0, AXON_SCATTER_SUM, out);
  return out;
}

at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce, bool include_self,
                                   at::Tensor& out) {
  const std::string_view name(reduce.data(), reduce.size());
  const auto r = name == "mean" ? std::optional<axon_scatter_reduce_t>(AXON_SCATTER_MEAN) : scatter_reduce_of(name);
  TORCH_CHECK(r && reduce != "add" && reduce != "multiply",
              "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  if (!scatter_supported(self, index, *r, out, &src) || src.dim() != self.dim() || self.is_complex() ||
      (*r == AXON_SCATTER_MEAN && self.scalar_type() == at::kBool)) {
    return fall_back<ATEN_OP2(scatter_reduce, two_out)>(self, dim, index, src, reduce, include_self, out);
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "scatter(): Expected self.dtype to be equal to out.dtype");
  if (index.numel() != 0) check_gather_shapes(self, dim, index, &src, "scatter");
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
  }
  if (index.numel() == 0) return out;
  const axon_tensor_t o = describe(one_d(out), "scatter_reduce"), x = describe(one_d(index), "scatter_reduce"),
                      s = describe(one_d(src), "scatter_reduce");
  AXON_CHECK(axon_kernel_scatter_reduce(stream_of(self), *r, &o, static_cast<int>(dim), &x, &s, include_self ? 1 : 0,
                                        AXON_INDEX_DEFAULT));
  return out;
}

// index_add's and index_reduce's meta checks, with PyTorch's messages (prefixed by op, "index_add_()"), then out =
// self. Returns dim wrapped.
int64_t prepare_index_along(const char* op, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                            const at::Tensor& source, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(index.dim() <= 1, op, "(): Index is supposed to be a vector");
  TORCH_CHECK(is_index_dtype(index), op, "(): Expected dtype int32/int64 for index");
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), op, "(): self (", self.scalar_type(), ") and source (",
              source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(index.numel() == source.size(dim), op, "(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim) (", source.size(dim), ")");
  for (int64_t d = 0; d < self.dim(); ++d) {
    TORCH_CHECK(d == dim || self.size(d) == source.size(d), op, "(): self and source must have the same size apart "
                "from dim ", dim, ", got ", self.sizes(), " and ", source.sizes());
  }
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
  }
  return dim;
}

// out = self for a scalar self (dim must be 0 or -1, as PyTorch takes for a scalar), seen as one element:
// index_reduce and index_copy update it through that view.
at::Tensor scalar_out_view(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  at::maybe_wrap_dim(dim, static_cast<int64_t>(0));
  if (!out.is_same(self)) {
    at::native::resize_output(out, {});
    out.copy_(self);
  }
  return out.view({1});
}

// index_reduce: PyTorch's checks (its meta function's, with its messages), then one kernel.
at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                             c10::string_view reduce, bool include_self, at::Tensor& out) {
  const std::string_view name(reduce.data(), reduce.size());
  TORCH_CHECK(name == "prod" || name == "mean" || name == "amax" || name == "amin",
              "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ", reduce, ".");
  const axon_scatter_reduce_t r = name == "mean" ? AXON_SCATTER_MEAN : *scatter_reduce_of(name);
  if (self.dim() == 0 && source.dim() == 0 && index.numel() == 1 && index.dim() <= 1 &&
      source.scalar_type() == self.scalar_type() && out.scalar_type() == self.scalar_type() &&
      on_device_of(self, index) && on_device_of(self, source) && on_device_of(self, out)) {
    at::Tensor o = scalar_out_view(self, dim, out);
    index_reduce_out(o, 0, index.reshape({1}), source.view({1}), reduce, include_self, o);
    return out;
  }
  if (!fits_dims(self) || self.dim() == 0 || source.dim() != self.dim() || !kernels_support(self.scalar_type()) ||
      self.is_complex() || self.scalar_type() == at::kBool || !on_device_of(self, index) ||
      !on_device_of(self, source) || !on_device_of(self, out)) {
    return fall_back<ATEN_OP2(index_reduce, out)>(self, dim, index, source, reduce, include_self, out);
  }
  dim = prepare_index_along("index_reduce_", self, dim, index, source, out);
  if (index.numel() == 0) return out;
  const axon_tensor_t o = describe(out, "index_reduce"), x = describe(index, "index_reduce"),
                      s = describe(source, "index_reduce");
  AXON_CHECK(axon_kernel_index_reduce(stream_of(self), r, &o, static_cast<int>(dim), &x, &s, include_self ? 1 : 0,
                                      AXON_INDEX_DEFAULT));
  return out;
}

// ---- index_add ----

// complex32: c10::complex<Half>'s += adds part by part in float and rounds each to float16, which is libaxon's
// float16 index_add on the two tensors' real views. An alpha other than 1 scales source first (mul rounds the
// product to complex32 as CPU's source * alpha does).
bool index_add_complex32(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                         const at::Scalar& alpha, at::Tensor& out) {
  if (self.scalar_type() != c10::kComplexHalf || !same_dtypes(self, source, out) || source.dim() != self.dim() ||
      !on_device_of(self, source) || !on_device_of(self, out)) {
    return false;
  }
  dim = at::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  if (!out.is_same(self)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
  }
  // 0-dim tensors as vectors of one element (the real views' trailing dimension must not be the one indexed)
  at::Tensor parts = at::view_as_real(out.dim() == 0 ? out.view({1}) : out);
  const at::Tensor scaled = alpha.equal(1) ? source : at::mul(source, alpha);
  const at::Tensor src = at::view_as_real(scaled.dim() == 0 ? scaled.view({1}) : scaled);
  at::index_add_out(parts, parts, dim, index, src);
  return true;
}

at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                          const at::Scalar& alpha, at::Tensor& out) {
  if (index_add_complex32(self, dim, index, source, alpha, out)) return out;
  if (scalar_self(self, index) && source.dim() == 0 && index.dim() <= 1 && same_dtypes(self, source, out) &&
      kernels_support(self.scalar_type()) && on_device_of(self, index) && on_device_of(self, source) &&
      on_device_of(self, out)) {
    // A scalar self, index and source, each one element: described as such, without the views (three of them were
    // most of the call's time)
    at::maybe_wrap_dim(dim, static_cast<int64_t>(0));
    TORCH_CHECK(is_index_dtype(index), "index_add_(): Expected dtype int32/int64 for index");
    if (!out.is_same(self)) {
      at::native::resize_output(out, {});
      out.copy_(self);
    }
    const int64_t one = 1;
    const axon_tensor_t o = describe_strided(out, 1, &one, &one, /*written=*/true);
    const axon_tensor_t x = describe_strided(index, 1, &one, &one), s = describe_strided(source, 1, &one, &one);
    AXON_CHECK(axon_kernel_index_add(stream_of(self), &o, 0, &x, &s, to_axon_scalar(alpha), AXON_INDEX_DEFAULT));
    return out;
  }
  if (!fits_dims(self) || source.dim() != self.dim() || !kernels_support(self.scalar_type()) ||
      !on_device_of(self, index) || !on_device_of(self, source) || !on_device_of(self, out)) {
    return fall_back<ATEN_OP2(index_add, out)>(self, dim, index, source, alpha, out);
  }
  dim = prepare_index_along("index_add_", self, dim, index, source, out);
  if (index.numel() == 0) return out;
  const axon_tensor_t o = describe(out, "index_add"), x = describe(index, "index_add"),
                      s = describe(source, "index_add");
  AXON_CHECK(axon_kernel_index_add(stream_of(self), &o, static_cast<int>(dim), &x, &s, to_axon_scalar(alpha),
                                   AXON_INDEX_DEFAULT));
  return out;
}

// ---- index_copy ----

// PyTorch's index_copy meta checks, with its messages; dim is wrapped.
void check_index_copy(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  const int64_t n = index.numel();
  TORCH_CHECK_INDEX(index.dim() < 2, "index_copy_(): Index should have dimension 1 or 0 (got ", index.dim(), ")");
  TORCH_CHECK_INDEX(source.dim() != 0 || n == 1, "index_copy_(): When source is scalar, index should have one "
                    "element (got ", n, ")");
  TORCH_CHECK_INDEX(source.dim() == self.dim() || source.dim() == 0 || self.dim() == 0, "index_copy_(): When source "
                    "and destination are not scalars, their dimensionality must match. Source dimensionality (",
                    source.dim(), "), destination dimensionality (", self.dim(), ")");
  TORCH_CHECK(index.scalar_type() == at::kLong, "index_copy_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "index_copy_(): self and source expected to have the same "
              "dtype, but got (self) ", self.scalar_type(), " and (source) ", source.scalar_type());
  std::vector<int64_t> self_slice(self.sizes().begin(), self.sizes().end());
  std::vector<int64_t> source_slice(source.sizes().begin(), source.sizes().end());
  if (!self_slice.empty()) self_slice.erase(self_slice.begin() + dim);
  if (!source_slice.empty()) source_slice.erase(source_slice.begin() + dim);
  if (self_slice != source_slice) {
    auto words = [](const std::vector<int64_t>& v) {  // "4 5", as PyTorch prints the slice shapes
      std::string r;
      for (const int64_t x : v) r += (r.empty() ? "" : " ") + std::to_string(x);
      return r;
    };
    TORCH_CHECK(false, "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice "
                "shape: ", words(self_slice), " at dimension ", dim, " and source slice shape: ", words(source_slice),
                " at dimension 0.");
  }
  TORCH_CHECK_INDEX(source.dim() == 0 || n == source.size(dim), "index_copy_(): Number of indices (", n,
                    ") should be equal to source.size(dim) (", source.size(dim), ")");
}

at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           at::Tensor& out) {
  if (scalar_self(self, index) && source.dim() <= 1 && source.numel() == 1 && index.dim() <= 1 &&
      same_dtypes(self, source, out) && on_device_of(self, index) && on_device_of(self, source) &&
      on_device_of(self, out)) {
    at::Tensor o = scalar_out_view(self, dim, out);
    index_copy_out(o, 0, index.reshape({1}), source.reshape({1}), o);
    return out;
  }
  if (!fits_dims(self) || !on_device_of(self, index) || !on_device_of(self, source) || !on_device_of(self, out)) {
    return fall_back<ATEN_OP2(index_copy, out)>(self, dim, index, source, out);
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_index_copy(self, dim, index, source);
  if (!out.is_same(self)) {
    TORCH_CHECK(out.scalar_type() == self.scalar_type(), "Expected out tensor to have dtype ", self.scalar_type(),
                ", but got ", out.scalar_type(), " instead");
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
  }
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, index);
  at::assert_no_overlap(out, source);
  if (index.numel() == 0) return out;
  // A 0-dim source goes into a 1-d self (the meta checks allow no other case): one element along dim.
  const at::Tensor src = source.dim() == 0 ? source.view({1}) : source;
  // self and source share a dtype (checked above): one libaxon does not know (complex32, float8: an fp8 KV cache)
  // moves as bytes.
  const auto desc = kernels_support(self.scalar_type()) ? describe : describe_bytes;
  const axon_tensor_t o = desc(out, "index_copy"), x = describe(index, "index_copy"), s = desc(src, "index_copy");
  AXON_CHECK(axon_kernel_index_copy(stream_of(self), &o, static_cast<int>(dim), &x, &s, AXON_INDEX_DEFAULT));
  return out;
}

// ---- embedding ----

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  const int64_t nw = num_weights;
  const int64_t d = grad_output.size(-1);
  if (scale_grad_by_freq || !is_index_dtype(indices) || !kernels_support(grad_output.scalar_type()) ||
      grad_output.is_complex() || !on_device_of(grad_output, indices)) {
    return fall_back<ATEN_OP(embedding_dense_backward)>(grad_output, indices, num_weights, padding_idx,
                                                        scale_grad_by_freq);
  }
  at::Tensor grad_weight = at::empty({nw, d}, grad_output.options());
  const at::Tensor idx = indices.reshape({-1});
  const at::Tensor grad = grad_output.reshape({idx.numel(), d});
  if (grad_weight.numel() == 0) return grad_weight;
  const axon_tensor_t w = describe(grad_weight, "embedding_backward"), g = describe(grad, "embedding_backward"),
                      x = describe(idx, "embedding_backward");
  AXON_CHECK(axon_kernel_embedding_backward(stream_of(grad_output), &w, &g, &x, padding_idx));
  return grad_weight;
}

// nn.Embedding(max_norm=...)'s in-place renorm of the looked-up rows, as CPU does it: each distinct row whose p-norm
// (in the weight's dtype) exceeds max_norm is scaled by max_norm / (norm + 1e-7), computed in double and rounded to
// the weight's dtype, as CPU's `row *= scale` rounds its scalar. Composed of native ops: unique, index_select, the
// vector norm and index_copy_ (rows at or under the limit are written back times 1, which leaves them unchanged).
at::Tensor& embedding_renorm(at::Tensor& self, const at::Tensor& indices, double max_norm, double norm_type) {
  const at::TensorArg self_arg(self, "self", 1), indices_arg(indices, "indices", 2);
  at::checkDim("embedding_renorm_", self_arg, 2);
  at::checkScalarTypes("embedding_renorm_", indices_arg, {at::kLong, at::kInt});
  const c10::ScalarType t = self.scalar_type();
  const bool floating = t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
  if (!floating || !on_device_of(self, indices)) {
    return fall_back<ATEN_OP(embedding_renorm_)>(self, indices, max_norm, norm_type);
  }
  if (indices.numel() == 0) return self;
  const at::Tensor rows = std::get<0>(at::_unique(indices.reshape({-1}), /*sorted=*/true, /*return_inverse=*/false));
  const at::Tensor weights = self.index_select(0, rows);
  const at::Tensor norm = at::linalg_vector_norm(weights, norm_type, at::IntArrayRef{1}, /*keepdim=*/true)
                              .to(at::kDouble);
  const at::Tensor scale = at::where(norm > max_norm, max_norm / (norm + 1e-7), at::scalar_tensor(1.0, norm.options()));
  self.index_copy_(0, rows, weights.mul(scale.to(t)));
  return self;
}

// ---- masked_fill ----

at::Tensor& masked_fill_scalar(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value) {
  if (self.dim() > AXON_MAX_DIMS || mask.device() != self.device() || mask.dim() > self.dim()) {
    return fall_back<ATEN_OP2(masked_fill_, Scalar)>(self, mask, value);
  }
  // Dtypes libaxon does not know (complex32, float8, uint16..64): the value converted on the host, stored as bytes.
  const bool bytes = !kernels_support(self.scalar_type());
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  at::assert_no_internal_overlap(self);
  if (self.numel() == 0) return self;
  // A 0-dim self is filled through a 1-element view; the mask broadcasts to self's shape (0 strides).
  const at::Tensor s = self.dim() == 0 ? self.view({1}) : self;
  const at::Tensor m = mask.expand(self.sizes()).expand(s.sizes());
  const axon_tensor_t o = bytes ? describe_bytes(s, "masked_fill_") : describe(s, "masked_fill_"),
                      md = describe(m, "masked_fill_");
  const axon_scalar_t v = bytes ? element_bytes_scalar(value, self.scalar_type()) : to_axon_scalar(value);
  AXON_CHECK(axon_kernel_masked_fill(stream_of(self), &o, &md, v));
  return self;
}

at::Tensor& masked_fill_tensor(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (!value.is_cpu() && value.device() != self.device()) {
    return fall_back<ATEN_OP2(masked_fill_, Tensor)>(self, mask, value);
  }
  return masked_fill_scalar(self, mask, value.item());
}

// ---- cat ----

// PyTorch skips 1-d empty inputs of any size elsewhere (the legacy "cat with torch.tensor([])").
bool cat_skips(const at::Tensor& t) { return t.dim() == 1 && t.numel() == 0; }

// The memory format of cat's result, by the rule of PyTorch's meta function: the inputs' common suggested format,
// contiguous if any input suggests it or two disagree.
at::MemoryFormat cat_memory_format(const at::MaterializedITensorListRef& tensors) {
  std::optional<at::MemoryFormat> format;
  for (const at::Tensor& t : tensors) {
    const at::MemoryFormat f = t.suggest_memory_format();
    if (f == at::MemoryFormat::Contiguous || (format && *format != f)) return at::MemoryFormat::Contiguous;
    format = f;
  }
  return format.value_or(at::MemoryFormat::Contiguous);
}

// cat into out, or into a new tensor of the inputs' result type and memory format when out is undefined (the
// functional form: PyTorch's generic route runs the meta function, which checks and sizes the output, before the
// .out kernel checks and sizes it again).
at::Tensor& cat_into(const at::ITensorListRef& list, int64_t dim, at::Tensor& out) {
  const auto tensors = list.materialize();
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  const c10::Device device = tensors[0].get().device();
  const auto check_device = [&](const at::Tensor& t) {
    TORCH_CHECK(t.device() == device, "Expected all tensors to be on the same device, but found at least two devices, ",
                device, " and ", t.device(), "!");
  };
  for (const at::Tensor& t : tensors) check_device(t);
  const bool fresh = !out.defined();
  if (!fresh) check_device(out);
  const at::ScalarType result = at::native::result_type(list), out_type = fresh ? result : out.scalar_type();
  // Dtypes libaxon does not know (complex32, float8, uint16..64) are joined as their bytes when no input needs a
  // conversion: the copy is exact whatever the element means.
  bool same_dtype = true, supported = kernels_support(out_type);
  const at::Tensor* ref = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    TORCH_CHECK(t.dim() > 0, "zero-dimensional tensor (at position ", i, ") cannot be concatenated");
    same_dtype = same_dtype && t.scalar_type() == out_type;
    supported = supported && kernels_support(t.scalar_type());
    if (!cat_skips(t) && !ref) ref = &t;
  }
  const bool bytes = !supported && same_dtype;
  const auto desc = bytes ? describe_bytes : describe;
  if (!(supported || bytes) || (ref && ref->dim() > AXON_MAX_DIMS)) {
    if (fresh) return out = fall_back<ATEN_OP(cat)>(list, dim);
    return fall_back<ATEN_OP2(cat, out)>(list, dim, out);
  }
  TORCH_CHECK(c10::canCast(result, out_type), "torch.cat(): input types can't be cast to the desired output type ",
              out_type);
  const c10::DispatchKeySet keys(c10::DispatchKey::PrivateUse1);
  if (!ref) {  // only legacy empty inputs: the result is the first of them, empty
    if (fresh) return out = at::empty(tensors[0].get().sizes(), tensors[0].get().options().dtype(result));
    at::native::resize_output(out, tensors[0].get().sizes());
    return out;
  }
  dim = at::maybe_wrap_dim(dim, ref->dim());
  std::vector<int64_t> shape(ref->sizes().begin(), ref->sizes().end());
  shape[dim] = 0;
  std::vector<axon_tensor_t> descs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    if (cat_skips(t)) continue;
    TORCH_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ", ref->dim(), " and ",
                t.dim());
    for (int64_t d = 0; d < t.dim(); ++d) {
      TORCH_CHECK(d == dim || t.size(d) == ref->size(d), "Sizes of tensors must match except in dimension ", dim,
                  ". Expected size ", ref->size(d), " but got size ", t.size(d), " for tensor number ", i,
                  " in the list.");
    }
    shape[dim] += t.size(dim);
  }
  if (fresh) {  // allocated without the factory's dispatch (a tenth of a small cat's time)
    c10::OptionalDeviceGuard guard;
    if (device.index() != current_device()) guard.reset_device(device);
    out = at::detail::empty_generic(shape, device_allocator(), keys, result, cat_memory_format(tensors));
  } else {
    at::native::resize_output(out, shape);
  }
  if (out.numel() == 0) return out;
  for (const at::Tensor& t : tensors) {
    if (cat_skips(t)) continue;
    at::assert_no_partial_overlap(out, t);
    descs.push_back(desc(t, "cat"));
  }
  // Groups of at most AXON_CAT_MAX_INPUTS inputs, each into its slice of out.
  int64_t offset = 0;
  size_t k = 0;
  std::vector<int64_t> widths;
  for (const at::Tensor& t : tensors)
    if (!cat_skips(t)) widths.push_back(t.size(dim));
  while (k < descs.size()) {
    const size_t n = std::min<size_t>(AXON_CAT_MAX_INPUTS, descs.size() - k);
    int64_t width = 0;
    for (size_t i = k; i < k + n; ++i) width += widths[i];
    // One group (the usual case) fills all of out: no narrowed view to build.
    const axon_tensor_t o = n == descs.size() ? desc(out, "cat") : desc(out.narrow(dim, offset, width), "cat");
    AXON_CHECK(axon_kernel_cat(stream_of(out), &o, descs.data() + k, static_cast<int>(n), static_cast<int>(dim)));
    offset += width;
    k += n;
  }
  return out;
}

at::Tensor& cat_out(const at::ITensorListRef& list, int64_t dim, at::Tensor& out) { return cat_into(list, dim, out); }

at::Tensor cat(const at::ITensorListRef& list, int64_t dim) {
  at::Tensor out;
  return cat_into(list, dim, out);
}

// repeat_interleave of a repeats vector (the index vector of repeat_interleave(x, repeats, dim)): the output's
// length is the repeats' sum, read back from the device (one sync, as on CUDA) unless output_size gives it; the
// kernel refuses negative repeats and a sum other than that length.
at::Tensor repeat_interleave_tensor(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == at::kLong || repeats.scalar_type() == at::kInt,
              "repeats has to be Long or Int tensor");
  if (repeats.size(0) == 0) return at::empty({0}, repeats.options());
  const at::Tensor r = repeats.contiguous();
  int64_t total = 0;
  if (output_size.has_value()) {
    total = output_size->guard_int(__FILE__, __LINE__);
  } else {
    TORCH_CHECK(at::amin(r).item<int64_t>() >= 0, "repeats can not be negative");
    total = at::sum(r).item<int64_t>();
  }
  at::Tensor out = at::empty({total}, r.options());
  const axon_tensor_t od = describe(out, "repeat_interleave"), rd = describe(r, "repeat_interleave");
  AXON_CHECK(axon_kernel_repeat_interleave(current_stream(r.device().index()), &od, &rd));
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_out));
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_value_reduce_out));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_two_out));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
  m.impl("embedding_renorm_", TORCH_FN(embedding_renorm));
  m.impl("masked_fill_.Scalar", TORCH_FN(masked_fill_scalar));
  m.impl("masked_fill_.Tensor", TORCH_FN(masked_fill_tensor));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("cat", TORCH_FN(cat));
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave_tensor));
}

}  // namespace
}  // namespace torch_axon

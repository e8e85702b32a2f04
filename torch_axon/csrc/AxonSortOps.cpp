// sort (and so argsort, msort), topk, kthvalue, median, nanmedian and mode on libaxon's sort kernels
// (libaxon/include/axon/sort.h).
//
// Inputs are made contiguous and viewed as [outer, len, inner] around dim; outputs go through contiguous
// temporaries when the given ones are strided. The kernels need a workspace (they never allocate): a byte tensor
// from the caching allocator, sized by axon_sort_workspace_size. Complex tensors, dtypes libaxon does not know, and
// outputs of unexpected dtypes go through the host fallback, which gives PyTorch's answer or error.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <axon/sort.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

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

// Whether the kernels take self, and values/indices of the dtypes the op produces. PyTorch's CPU topk, kthvalue and
// median refuse bool (`bool_ok` false): those go to the fallback, which raises the same error.
bool native(const at::Tensor& self, const at::Tensor& values, const at::Tensor& indices, bool bool_ok) {
  return kernels_support(self.scalar_type()) && !self.is_complex() && (bool_ok || self.scalar_type() != at::kBool) &&
         values.scalar_type() == self.scalar_type() &&
         indices.scalar_type() == at::kLong && values.device() == self.device() &&
         indices.device() == self.device();
}

// self's shape with `len` at dim (dim removed if !keep); a 0-d self stays 0-d.
std::vector<int64_t> out_shape(const at::Tensor& self, int64_t dim, int64_t len, bool keep) {
  std::vector<int64_t> s(self.sizes().begin(), self.sizes().end());
  if (self.dim() == 0) return s;
  if (keep) s[dim] = len;
  else s.erase(s.begin() + dim);
  return s;
}

struct Rows {
  int64_t outer = 1, len = 1, inner = 1;
};

Rows rows_of(const at::Tensor& t, int64_t dim) {
  Rows r;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) r.outer *= t.size(d);
    if (d == dim) r.len = t.size(d);
    if (d > dim) r.inner *= t.size(d);
  }
  return r;
}

enum class Kind { Sort, Topk, Kth, NanMedian, Mode };

// Runs one sort-family kernel on self along dim into values and indices (already resized; their element count is
// outer * out_len * inner), through contiguous temporaries where they are strided.
void launch(Kind kind, const at::Tensor& self, int64_t dim, int64_t out_len, int64_t k, bool flag, at::Tensor& values,
            at::Tensor& indices, const char* name) {
  const Rows r = rows_of(self, dim);
  if (self.numel() == 0 || values.numel() == 0) return;
  const at::Tensor in = self.contiguous().view({r.outer, r.len, r.inner});
  at::Tensor v = values.is_contiguous() ? values : at::empty(values.sizes(), values.options());
  at::Tensor i = indices.is_contiguous() ? indices : at::empty(indices.sizes(), indices.options());
  const at::Tensor ws = at::empty({static_cast<int64_t>(axon_sort_workspace_size(self.numel()))},
                                  self.options().dtype(at::kByte));
  const axon_tensor_t ind = describe(in, name), wsd = describe(ws, name);
  const axon_tensor_t vd = describe(v.view({r.outer, out_len, r.inner}), name);
  const axon_tensor_t id = describe(i.view({r.outer, out_len, r.inner}), name);
  axon_stream_t s = current_stream(self.device().index());
  if (kind == Kind::Sort) AXON_CHECK(axon_kernel_sort(s, &vd, &id, &ind, 1, flag, &wsd));
  else if (kind == Kind::Topk) AXON_CHECK(axon_kernel_topk(s, &vd, &id, &ind, 1, k, flag, &wsd));
  else if (kind == Kind::Kth) AXON_CHECK(axon_kernel_kthvalue(s, &vd, &id, &ind, 1, k, flag, &wsd));
  else if (kind == Kind::NanMedian) AXON_CHECK(axon_kernel_nanmedian(s, &vd, &id, &ind, 1, &wsd));
  else AXON_CHECK(axon_kernel_mode(s, &vd, &id, &ind, 1, &wsd));
  if (!v.is_same(values)) values.copy_(v);
  if (!i.is_same(indices)) indices.copy_(i);
}

std::tuple<at::Tensor&, at::Tensor&> sort_out(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                              bool descending, at::Tensor& values, at::Tensor& indices) {
  if (!native(self, values, indices, true))
    return fall_back<ATEN_OP2(sort, values_stable)>(self, stable, dim, descending, values, indices);
  // Always stable: among equal values the lower index comes first, which an unstable sort may also return.
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  at::native::resize_output(values, self.sizes());
  at::native::resize_output(indices, self.sizes());
  launch(Kind::Sort, self, d, rows_of(self, d).len, 0, descending, values, indices, "sort");
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, c10::SymInt k_sym, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices) {
  if (!native(self, values, indices, false))
    return fall_back<ATEN_OP2(topk, values)>(self, k_sym.expect_int(), dim, largest, sorted, values, indices);
  const int64_t k = k_sym.expect_int();
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const int64_t len = self.dim() ? self.size(d) : 1;
  TORCH_CHECK(k >= 0 && k <= len, "selected index k out of range");
  // Results are always sorted (largest first for largest), which also satisfies sorted=False. A 0-d self gives its
  // element even for k = 0, as on CPU.
  const int64_t kk = self.dim() == 0 ? 1 : k;
  at::native::resize_output(values, out_shape(self, d, kk, true));
  at::native::resize_output(indices, out_shape(self, d, kk, true));
  launch(Kind::Topk, self, d, kk, kk, largest, values, indices, "topk");
  return {values, indices};
}

// kthvalue and median along a dim: one element per row, the k-th smallest (or the first NaN for median).
std::tuple<at::Tensor&, at::Tensor&> kth(const at::Tensor& self, int64_t k, int64_t d, bool keepdim, bool median,
                                         at::Tensor& values, at::Tensor& indices) {
  at::native::resize_output(values, out_shape(self, d, 1, keepdim));
  at::native::resize_output(indices, out_shape(self, d, 1, keepdim));
  launch(Kind::Kth, self, d, 1, k, median, values, indices, median ? "median" : "kthvalue");
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, c10::SymInt k_sym, int64_t dim,
                                                  bool keepdim, at::Tensor& values, at::Tensor& indices) {
  if (!native(self, values, indices, false))
    return fall_back<ATEN_OP2(kthvalue, values)>(self, k_sym.expect_int(), dim, keepdim, values, indices);
  const int64_t k = k_sym.expect_int();
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const int64_t len = self.dim() ? self.size(d) : 1;
  TORCH_CHECK_INDEX(self.dim() == 0 || len > 0, "kthvalue(): Expected reduction dim ", d, " to have non-zero size.");
  TORCH_CHECK(k >= 1 && k <= len, "kthvalue(): selected number k out of range for dimension ", d);
  return kth(self, k, d, keepdim, false, values, indices);
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                    at::Tensor& values, at::Tensor& indices) {
  if (!native(self, values, indices, false))
    return fall_back<ATEN_OP2(median, dim_values)>(self, dim, keepdim, values, indices);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const int64_t len = self.dim() ? self.size(d) : 1;
  TORCH_CHECK_INDEX(len > 0, "median(): Expected reduction dim ", d, " to have non-zero size.");
  return kth(self, (len - 1) / 2 + 1, d, keepdim, true, values, indices);
}

// Whether the whole-tensor median and nanmedian take self (CPU refuses bool; complex is the host's).
bool whole_median_native(const at::Tensor& self) {
  return kernels_support(self.scalar_type()) && !self.is_complex() && self.scalar_type() != at::kBool;
}

// The median (or nanmedian) of all of self's elements: NaN for an empty self, as on CPU.
at::Tensor whole_median(const at::Tensor& self, bool skip_nan) {
  if (self.numel() == 0) return at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options());
  const at::Tensor flat = self.reshape({-1});
  at::Tensor values = at::empty({}, self.options()), indices = at::empty({}, self.options().dtype(at::kLong));
  if (skip_nan) launch(Kind::NanMedian, flat, 0, 1, 1, false, values, indices, "nanmedian");
  else kth(flat, (flat.numel() - 1) / 2 + 1, 0, false, true, values, indices);
  return values;
}

at::Tensor median(const at::Tensor& self) {
  if (!whole_median_native(self)) return fall_back<ATEN_OP(median)>(self);
  return whole_median(self, false);
}

// nanmedian: each row's lower median of its non-NaN elements (the first NaN of a row of NaNs only).
std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                       at::Tensor& values, at::Tensor& indices) {
  if (!native(self, values, indices, false))
    return fall_back<ATEN_OP2(nanmedian, dim_values)>(self, dim, keepdim, values, indices);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const int64_t len = self.dim() ? self.size(d) : 1;
  TORCH_CHECK_INDEX(len > 0, "nanmedian(): Expected reduction dim ", d, " to have non-zero size.");
  at::native::resize_output(values, out_shape(self, d, 1, keepdim));
  at::native::resize_output(indices, out_shape(self, d, 1, keepdim));
  launch(Kind::NanMedian, self, d, 1, 1, false, values, indices, "nanmedian");
  return {values, indices};
}

at::Tensor nanmedian(const at::Tensor& self) {
  if (!whole_median_native(self)) return fall_back<ATEN_OP(nanmedian)>(self);
  return whole_median(self, true);
}

// mode along a dim: each row's most frequent value (the smallest among equally frequent ones) and the position of
// its last occurrence. That is PyTorch CPU's answer where its std::sort keeps equal values in order (rows of up to 16
// elements); on longer rows CPU may give another position holding the same value.
std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  if (!kernels_support(self.scalar_type()) || self.is_complex()) return fall_back<ATEN_OP(mode)>(self, dim, keepdim);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(d) > 0, "mode(): Expected reduction dim ", d,
                    " to have non-zero size.");
  at::Tensor values = at::empty(out_shape(self, d, 1, keepdim), self.options());
  at::Tensor indices = at::empty(out_shape(self, d, 1, keepdim), self.options().dtype(at::kLong));
  launch(Kind::Mode, self, d, 1, 1, false, values, indices, "mode");
  return {values, indices};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mode", TORCH_FN(mode));
  m.impl("sort.values_stable", TORCH_FN(sort_out));
  m.impl("topk.values", TORCH_FN(topk_out));
  m.impl("kthvalue.values", TORCH_FN(kthvalue_out));
  m.impl("median.dim_values", TORCH_FN(median_dim_out));
  m.impl("median", TORCH_FN(median));
  m.impl("nanmedian.dim_values", TORCH_FN(nanmedian_dim_out));
  m.impl("nanmedian", TORCH_FN(nanmedian));
}

}  // namespace
}  // namespace torch_axon

// searchsorted, bucketize, isin and bincount on libaxon's search kernels (libaxon/include/axon/search.h).
//
// The glue promotes sorted and values to one dtype (as PyTorch's CPU kernel does), views them as rows ([rows, M] and
// [rows, N], or one row shared by all values) and checks what needs the data: sorter entries in range and
// bincount's input non-negative, read back from the device, as CUDA does. Anything else PyTorch rejects (shapes,
// side vs right, out dtypes, bool or complex inputs) goes through the host fallback, which raises PyTorch's error.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/ScalarOps.h>
#include <ATen/native/Resize.h>
#include <axon/search.h>
#include <c10/util/Exception.h>
#include <c10/util/accumulate.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <string_view>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool orderable(c10::ScalarType t) {
  return kernels_support(t) && t != at::kBool && !c10::isComplexType(t);
}

// Whether the kernel takes this call as it is; everything else is the fallback's (PyTorch's errors included).
bool native_search(const at::Tensor& seq, const at::Tensor& self, bool out_int32, bool right,
                   const std::optional<c10::string_view>& side, const std::optional<at::Tensor>& sorter,
                   const at::Tensor* out) {
  if (!orderable(seq.scalar_type()) || !orderable(self.scalar_type()) || seq.dim() < 1) return false;
  if (seq.device() != self.device()) return false;
  if (side.has_value() && !((*side == "left" && !right) || *side == "right")) return false;
  if (seq.dim() > 1) {
    if (self.dim() != seq.dim()) return false;
    for (int64_t d = 0; d + 1 < seq.dim(); ++d)
      if (self.size(d) != seq.size(d)) return false;
  }
  if (sorter.has_value() && sorter->defined() &&
      (sorter->scalar_type() != at::kLong || sorter->sizes() != seq.sizes() || sorter->device() != seq.device()))
    return false;
  if (out && (out->scalar_type() != (out_int32 ? at::kInt : at::kLong) || out->device() != self.device()))
    return false;
  return true;
}

// A contiguous t's elements as `rows` rows (one row when rows is 0: the 1-d form), without a view op.
axon_tensor_t describe_rows(const at::Tensor& t, int64_t rows) {
  const int64_t n = t.numel();
  if (rows == 0) {
    const int64_t size[1] = {n}, stride[1] = {1};
    return describe_strided(t, 1, size, stride);
  }
  const int64_t sizes[2] = {rows, rows ? n / rows : 0}, strides[2] = {sizes[1], 1};
  return describe_strided(t, 2, sizes, strides);
}

at::Tensor& search_into(const at::Tensor& seq_in, const at::Tensor& self_in, bool right,
                        const std::optional<c10::string_view>& side, const std::optional<at::Tensor>& sorter,
                        at::Tensor& out) {
  const bool r = right || (side.has_value() && *side == "right");
  at::native::resize_output(out, self_in.sizes());
  if (self_in.numel() == 0) return out;
  const at::ScalarType common = at::promote_types(seq_in.scalar_type(), self_in.scalar_type());
  const auto as_common = [&](const at::Tensor& t) {  // .to() only where it converts (its dispatch is not free)
    return (t.scalar_type() == common ? t : t.to(common)).contiguous();
  };
  const at::Tensor seq = as_common(seq_in), self = as_common(self_in);
  const int64_t m = seq.size(-1);
  const bool has_sorter = sorter.has_value() && sorter->defined();
  at::Tensor perm;
  if (has_sorter) {
    perm = sorter->contiguous();
    if (perm.numel() > 0) {
      TORCH_CHECK(at::amin(perm).item<int64_t>() >= 0 && at::amax(perm).item<int64_t>() < m,
                  "torch.searchsorted(): sorter index out of range");
    }
  }
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  // [rows, m] sequences and [rows, k] values (1-d: [m] and [numel]).
  const int64_t rows = seq.dim() > 1 ? c10::multiply_integers(seq.sizes().begin(), seq.sizes().end() - 1) : 0;
  const axon_tensor_t sd = describe_rows(seq, rows), vd = describe_rows(self, rows), od = describe_rows(o, rows);
  axon_tensor_t pd{};
  if (has_sorter) pd = describe_rows(perm, rows);
  AXON_CHECK(axon_kernel_searchsorted(current_stream(self.device().index()), &od, &sd, &vd,
                                      has_sorter ? &pd : nullptr, r));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor& searchsorted_out(const at::Tensor& seq, const at::Tensor& self, bool out_int32, bool right,
                             std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter,
                             at::Tensor& out) {
  if (!native_search(seq, self, out_int32, right, side, sorter, &out))
    return fall_back<ATEN_OP2(searchsorted, Tensor_out)>(seq, self, out_int32, right, side, sorter, out);
  return search_into(seq, self, right, side, sorter, out);
}

at::Tensor searchsorted(const at::Tensor& seq, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  if (!native_search(seq, self, out_int32, right, side, sorter, nullptr))
    return fall_back<ATEN_OP2(searchsorted, Tensor)>(seq, self, out_int32, right, side, sorter);
  at::Tensor out = at::empty(self.sizes(), self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return search_into(seq, self, right, side, sorter, out);
}

at::Tensor searchsorted_scalar(const at::Tensor& seq, const at::Scalar& self, bool out_int32, bool right,
                               std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  // A scalar searches a 1-d sequence as a 0-d tensor of the scalar's own dtype, as PyTorch does.
  const at::Tensor value = c10::scalar_to_tensor(self, seq.device());
  if (seq.dim() != 1 || !native_search(seq, value, out_int32, right, side, sorter, nullptr))
    return fall_back<ATEN_OP2(searchsorted, Scalar)>(seq, self, out_int32, right, side, sorter);
  at::Tensor out = at::empty({}, value.options().dtype(out_int32 ? at::kInt : at::kLong));
  return search_into(seq, value, right, side, sorter, out);
}

// bucketize is searchsorted with 1-d boundaries; other boundaries get PyTorch's error from the fallback.
at::Tensor& bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                          at::Tensor& out) {
  if (boundaries.dim() != 1 || !native_search(boundaries, self, out_int32, right, std::nullopt, std::nullopt, &out))
    return fall_back<ATEN_OP2(bucketize, Tensor_out)>(self, boundaries, out_int32, right, out);
  return search_into(boundaries, self, right, std::nullopt, std::nullopt, out);
}

at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  if (boundaries.dim() != 1 || !native_search(boundaries, self, out_int32, right, std::nullopt, std::nullopt, nullptr))
    return fall_back<ATEN_OP2(bucketize, Tensor)>(self, boundaries, out_int32, right);
  at::Tensor out = at::empty(self.sizes(), self.options().dtype(out_int32 ? at::kInt : at::kLong));
  return search_into(boundaries, self, right, std::nullopt, std::nullopt, out);
}

at::Tensor bucketize_scalar(const at::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  const at::Tensor value = c10::scalar_to_tensor(self, boundaries.device());
  if (boundaries.dim() != 1 || !native_search(boundaries, value, out_int32, right, std::nullopt, std::nullopt, nullptr))
    return fall_back<ATEN_OP2(bucketize, Scalar)>(self, boundaries, out_int32, right);
  at::Tensor out = at::empty({}, value.options().dtype(out_int32 ? at::kInt : at::kLong));
  return search_into(boundaries, value, right, std::nullopt, std::nullopt, out);
}

// bincount: the output's length needs the input's maximum, read back from the device (one sync, as on CUDA).
at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights, int64_t minlength) {
  const bool weighted = weights.has_value() && weights->defined();
  const bool native = self.dim() == 1 && orderable(self.scalar_type()) && at::isIntegralType(self.scalar_type(), false) &&
                      minlength >= 0 &&
                      (!weighted || (weights->dim() == 1 && weights->size(0) == self.size(0) &&
                                     orderable(weights->scalar_type()) && weights->device() == self.device()));
  if (!native) return fall_back<ATEN_OP(bincount)>(self, weights, minlength);
  int64_t bins = minlength;
  if (self.numel() > 0) {
    TORCH_CHECK(at::amin(self).item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
    bins = std::max(bins, at::amax(self).item<int64_t>() + 1);
  }
  // PyTorch's CPU output dtypes: int64 counts, float32 sums of float32 weights, float64 sums of any other weights.
  const at::ScalarType odt =
      !weighted ? at::kLong : weights->scalar_type() == at::kFloat ? at::kFloat : at::kDouble;
  at::Tensor out = at::empty({bins}, self.options().dtype(odt));
  const at::Tensor in = self.contiguous();
  const at::Tensor w = weighted ? weights->contiguous() : at::Tensor();
  const axon_tensor_t od = describe(out, "bincount"), id = describe(in, "bincount");
  axon_tensor_t wd{};
  if (weighted) wd = describe(w, "bincount");
  AXON_CHECK(axon_kernel_bincount(current_stream(self.device().index()), &od, &id, weighted ? &wd : nullptr));
  return out;
}

// isin: both sets promoted to their result type, as PyTorch's CPU kernel compares them. Bool and complex (which
// PyTorch refuses) and an out that is not bool go through the fallback, which raises PyTorch's errors.
at::Tensor& isin_out(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique, bool invert,
                     at::Tensor& out) {
  const at::ScalarType common = at::result_type(elements, test_elements);
  if (!orderable(elements.scalar_type()) || !orderable(test_elements.scalar_type()) || !orderable(common) ||
      out.scalar_type() != at::kBool || elements.device() != test_elements.device() ||
      out.device() != elements.device())
    return fall_back<ATEN_OP2(isin, Tensor_Tensor_out)>(elements, test_elements, assume_unique, invert, out);
  at::native::resize_output(out, elements.sizes());
  if (elements.numel() == 0) return out;
  const at::Tensor e = elements.to(common).contiguous(), t = test_elements.to(common).contiguous();
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  const axon_tensor_t od = describe(o, "isin"), ed = describe(e, "isin"), td = describe(t, "isin");
  AXON_CHECK(axon_kernel_isin(current_stream(e.device().index()), &od, &ed, &td, invert));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("searchsorted.Tensor", TORCH_FN(searchsorted));
  m.impl("searchsorted.Tensor_out", TORCH_FN(searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(searchsorted_scalar));
  m.impl("bucketize.Tensor", TORCH_FN(bucketize));
  m.impl("bucketize.Tensor_out", TORCH_FN(bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(bucketize_scalar));
  m.impl("bincount", TORCH_FN(bincount));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isin_out));
}

}  // namespace
}  // namespace torch_axon

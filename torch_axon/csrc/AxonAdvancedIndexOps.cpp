// Advanced indexing on libaxon's kernels (libaxon/include/axon/index_advanced.h): x[i0, i1, ...] (index.Tensor),
// x[i0, ...] = v and index_put_ with or without accumulate (_index_put_impl_), take, put_, index_fill_ (libaxon's
// index_fill, axon/index.h), nonzero (and so argwhere, x[mask], torch.where(cond)), nonzero_static, masked_select and
// masked_scatter_.
//
// index and index_put share ATen's layout (IndexingUtils.h): masks become long indices through nonzero, the
// indices broadcast together, and the indexed tensor is restrided over the result's shape with 0 strides where the
// indices replace its dimensions; libaxon then adds index * stride per index. Negative indices wrap; one out of
// range fails the command, reported at the next synchronization with "index 7 is out of bounds for dimension 0
// with size 5", and nothing is written. nonzero and masked_select need their result's size on the host: a count
// kernel runs first and its value is read back (a synchronization, as on CUDA).
// What falls back: more than AXON_MAX_DIMS dimensions, a 0-d self, accumulation in a dtype libaxon lacks, tensors
// on another device (other than indices, which ATen moves here).
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Operators.h>
#include <ATen/native/IndexingUtils.h>
#include <ATen/native/TensorAdvancedIndexingUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <axon/index.h>
#include <axon/index_advanced.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <vector>

#include "AxonElementBytes.h"
#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

axon_stream_t stream_of(const at::Tensor& t) { return current_stream(t.device().index()); }

using IndexList = c10::List<std::optional<at::Tensor>>;

// The indexed tensor restrided over the result's shape, the broadcast indices and what each one indexes.
struct Layout {
  at::Tensor src;
  std::vector<at::Tensor> indices;
  std::vector<int64_t> sizes, strides;
};

// ATen's layout for self[indices] (as its make_info and AdvancedIndex build it); nullopt where libaxon cannot take it.
std::optional<Layout> layout_of(const at::Tensor& self, const IndexList& list) {
  if (self.dim() == 0 || self.dim() > AXON_MAX_DIMS) return std::nullopt;
  at::native::checkIndexTensorTypes(list, /*allow_int=*/true);
  TORCH_CHECK_INDEX(list.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", list.size(), ")");
  std::vector<at::Tensor> idx = at::native::expandTensors(self, list, /*ensure_same_device=*/true);
  try {
    idx = at::expand_outplace(idx);
  } catch (std::exception&) {
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                      at::native::shapes_as_str(idx));
  }
  while (idx.size() < static_cast<size_t>(self.dim())) idx.emplace_back();
  at::Tensor src = self;
  if (!at::native::hasContiguousSubspace(idx)) std::tie(src, idx) = at::native::transposeToFront(src, idx);
  Layout l;
  std::vector<int64_t> shape, strides;
  at::IntArrayRef replaced;
  int64_t before = 0;
  bool seen = false;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (!idx[d].defined()) {
      shape.push_back(src.size(d));
      strides.push_back(src.stride(d));
      before += seen ? 0 : 1;
      continue;
    }
    if (!seen) {
      replaced = idx[d].sizes();
      for (int64_t s : replaced) {
        shape.push_back(s);
        strides.push_back(0);
      }
    }
    seen = true;
    l.sizes.push_back(src.size(d));
    l.strides.push_back(src.stride(d));
    l.indices.push_back(idx[d]);
  }
  if (l.indices.empty() || shape.size() > AXON_MAX_DIMS) return std::nullopt;
  for (size_t k = 0; k < l.sizes.size(); ++k) {
    TORCH_CHECK_INDEX(l.sizes[k] != 0 || c10::multiply_integers(replaced) == 0,
                      "index is out of bounds for dimension with size 0");
  }
  l.src = src.as_strided(shape, strides);
  // Each index over the result's shape: its own dimensions where the replaced block lies, broadcast elsewhere.
  std::vector<int64_t> view(shape.size(), 1);
  for (size_t i = 0; i < replaced.size(); ++i) view[before + i] = replaced[i];
  for (at::Tensor& t : l.indices) t = t.reshape(view).expand(shape);
  return l;
}

std::vector<axon_tensor_t> describe_indices(const Layout& l, const char* op) {
  std::vector<axon_tensor_t> d;
  for (const at::Tensor& t : l.indices) d.push_back(describe(t, op));
  return d;
}

// ---- index ----

at::Tensor& index_out(const at::Tensor& self, const IndexList& indices, at::Tensor& out) {
  std::optional<Layout> l;
  if (out.device() == self.device()) l = layout_of(self, indices);
  if (!l) return fall_back<ATEN_OP2(index, Tensor_out)>(self, indices, out);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_out: self (", self.scalar_type(), ") and out (",
              out.scalar_type(), ") must have the same dtype");
  at::native::resize_output(out, l->src.sizes());
  if (out.numel() == 0) return out;
  at::assert_no_overlap(out, self);
  const axon_tensor_t o = describe_bytes(out, "index"), s = describe_bytes(l->src, "index");
  const std::vector<axon_tensor_t> x = describe_indices(*l, "index");
  AXON_CHECK(axon_kernel_index(stream_of(self), &o, &s, x.data(), static_cast<int>(x.size()), l->sizes.data(),
                               l->strides.data()));
  return out;
}

at::Tensor index(const at::Tensor& self, const IndexList& indices) {
  const std::optional<Layout> l = layout_of(self, indices);
  if (!l) return fall_back<ATEN_OP2(index, Tensor)>(self, indices);
  at::Tensor out = at::empty(l->src.sizes(), self.options());
  if (out.numel() == 0) return out;
  const axon_tensor_t o = describe_bytes(out, "index"), s = describe_bytes(l->src, "index");
  const std::vector<axon_tensor_t> x = describe_indices(*l, "index");
  AXON_CHECK(axon_kernel_index(stream_of(self), &o, &s, x.data(), static_cast<int>(x.size()), l->sizes.data(),
                               l->strides.data()));
  return out;
}

// ---- index_put_ ----

at::Tensor& index_put_impl(at::Tensor& self, const IndexList& indices, const at::Tensor& values, bool accumulate,
                           bool unsafe) {
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  const bool here = values.device() == self.device() || (values.is_cpu() && values.dim() == 0);
  if (here && accumulate && self.scalar_type() == c10::kComplexHalf && values.scalar_type() == c10::kComplexHalf) {
    // c10::complex<Half>'s += adds part by part in float and rounds each to float16: the float16 accumulation on
    // the real views (whose trailing dimension of parts no index reaches).
    at::Tensor parts = at::view_as_real(self);
    index_put_impl(parts, indices, at::view_as_real(values.to(self.device())), true, unsafe);
    return self;
  }
  if (!here || (accumulate && !kernels_support(self.scalar_type())))
    return fall_back<ATEN_OP(_index_put_impl_)>(self, indices, values, accumulate, unsafe);
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "Index put requires the source and destination dtypes "
              "match, got ", self.scalar_type(), " for the destination and ", values.scalar_type(), " for the source.");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing "
               "this operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
    return fall_back<ATEN_OP(_index_put_impl_)>(self, indices, values, accumulate, unsafe);
  }
  const std::optional<Layout> l = layout_of(self, indices);
  if (!l) return fall_back<ATEN_OP(_index_put_impl_)>(self, indices, values, accumulate, unsafe);
  at::assert_no_overlap(self, values);
  for (const at::Tensor& t : l->indices) at::assert_no_overlap(self, t);
  const at::IntArrayRef shape = l->src.sizes();
  TORCH_CHECK(at::is_expandable_to(values.sizes(), shape), "shape mismatch: value tensor of shape ", values.sizes(),
              " cannot be broadcast to indexing result of shape ", shape);
  if (c10::multiply_integers(shape) == 0) return self;
  const at::Tensor v = values.to(self.device()).expand(shape);
  const auto desc = accumulate ? describe : describe_bytes;
  const axon_tensor_t dd = desc(l->src, "index_put_"), vd = desc(v, "index_put_");
  const std::vector<axon_tensor_t> x = describe_indices(*l, "index_put_");
  AXON_CHECK(axon_kernel_index_put(stream_of(self), &dd, &vd, x.data(), static_cast<int>(x.size()), l->sizes.data(),
                                   l->strides.data(), accumulate ? 1 : 0));
  return self;
}

// ---- take, put_, index_fill_: the same kernels over a flat or one-dimension index ----

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  TORCH_CHECK(index.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  // Dtypes libaxon's kernels lack go to the host, for CPU's refusal of float8 and the like.
  if (index.device() != self.device() || self.dim() > AXON_MAX_DIMS || !kernels_support(self.scalar_type()))
    return fall_back<ATEN_OP(take)>(self, index);
  if (self.is_contiguous() && self.numel() > 0 && index.dim() <= AXON_MAX_DIMS) {
    // The index kernel over index's shape, self's elements at index * 1 (index()'s layout work, for one flat index,
    // was most of a small take's time).
    at::Tensor out = at::empty(index.sizes(), self.options());
    if (out.numel() == 0) return out;
    const axon_tensor_t o = describe_bytes(out, "take"), x = describe(index, "take");
    axon_tensor_t src = o;
    src.data = const_cast<void*>(self.const_data_ptr());
    for (int d = 0; d < src.ndim; ++d) src.strides[d] = 0;
    const int64_t size = self.numel(), stride = 1;
    AXON_CHECK(axon_kernel_index(stream_of(self), &o, &src, &x, 1, &size, &stride));
    return out;
  }
  IndexList list;
  list.push_back(index);
  return torch_axon::index(self.reshape({-1}), list);
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  TORCH_CHECK(index.scalar_type() == at::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to have the same dtype, "
              "but got self.dtype = ", self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(source.numel() == index.numel(), "put_(): Expected source and index to have the same number of "
              "elements, but got source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  if (!self.is_contiguous() || self.numel() == 0 || index.device() != self.device() ||
      source.device() != self.device())
    return fall_back<ATEN_OP(put_)>(self, index, source, accumulate);
  if (source.is_contiguous() && index.dim() <= AXON_MAX_DIMS && kernels_support(self.scalar_type())) {
    // The index_put kernel over index's shape: self's elements at index * 1, source read in index's row-major order
    // (put_'s pairing; index_put_impl's layout work, for one flat index, was most of a small put_'s time).
    if (index.numel() == 0) return self;
    at::assert_no_overlap(self, source);
    at::assert_no_overlap(self, index);
    const auto desc = accumulate ? describe : describe_bytes;
    const axon_tensor_t x = describe(index, "put_");
    axon_tensor_t dst = desc(self, "put_"), values = desc(source, "put_");
    dst.ndim = values.ndim = x.ndim;
    int64_t step = 1;
    for (int d = x.ndim - 1; d >= 0; step *= x.sizes[d], --d) {
      dst.sizes[d] = values.sizes[d] = x.sizes[d];
      dst.strides[d] = 0;
      values.strides[d] = step;
    }
    const int64_t size = self.numel(), stride = 1;
    AXON_CHECK(axon_kernel_index_put(stream_of(self), &dst, &values, &x, 1, &size, &stride, accumulate ? 1 : 0));
    return self;
  }
  at::Tensor flat = self.view({-1});
  IndexList list;
  list.push_back(index.reshape({-1}));
  index_put_impl(flat, list, source.reshape({-1}), accumulate, false);
  return self;
}

at::Tensor& index_fill_scalar(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_fill_(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  if (self.dim() == 0 && index.numel() == 1 && index.device() == self.device()) {
    at::maybe_wrap_dim(dim, static_cast<int64_t>(0));  // a scalar is a vector of one element along dim 0 or -1
    at::Tensor one = self.view({1});
    index_fill_scalar(one, 0, index, value);
    return self;
  }
  if (self.dim() == 0 || self.dim() > AXON_MAX_DIMS || index.device() != self.device())
    return fall_back<ATEN_OP2(index_fill_, int_Scalar)>(self, dim, index, value);
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::assert_no_internal_overlap(self);
  // Dtypes libaxon does not know (complex32, float8, uint16..64): the value converted on the host, stored as bytes.
  const bool bytes = !kernels_support(self.scalar_type());
  const axon_tensor_t out = bytes ? describe_bytes(self, "index_fill_") : describe(self, "index_fill_"),
                      idx = describe(index, "index_fill_");
  const axon_scalar_t v = bytes ? element_bytes_scalar(value, self.scalar_type()) : to_axon_scalar(value);
  AXON_CHECK(axon_kernel_index_fill(stream_of(self), &out, static_cast<int>(dim), &idx, v, AXON_INDEX_WRAP));
  return self;
}

at::Tensor& index_fill_tensor(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (!value.is_cpu() && value.device() != self.device())
    return fall_back<ATEN_OP2(index_fill_, int_Tensor)>(self, dim, index, value);
  return index_fill_scalar(self, dim, index, value.item());
}

// ---- nonzero ----

// The number of nonzero elements of t, read back to the host (waits for the stream).
int64_t count_nonzero_sync(const at::Tensor& t, const char* op) {
  at::Tensor count = at::empty({}, t.options().dtype(at::kLong));
  const axon_tensor_t c = describe(count, op), d = describe_storage(t, op);
  AXON_CHECK(axon_kernel_count_nonzero(stream_of(t), &c, &d));
  return count.item<int64_t>();
}

// The dtypes CPU's nonzero takes: libaxon's own and complex32 (read through its conversion to bool); CPU refuses
// uint16/32/64, and so does the fallback.
bool nonzero_native(const at::Tensor& self) {
  const c10::ScalarType t = self.scalar_type();
  return self.dim() <= AXON_MAX_DIMS && (kernels_support(t) || t == c10::kComplexHalf);
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  if (!nonzero_native(self) || out.device() != self.device())
    return fall_back<ATEN_OP2(nonzero, out)>(self, out);
  TORCH_CHECK(out.scalar_type() == at::kLong, "nonzero: Expected out tensor to have scalar type Long but got scalar "
              "type", out.scalar_type());
  const int64_t n = count_nonzero_sync(self, "nonzero");
  at::native::resize_output(out, {n, self.dim()});
  if (n == 0 || self.dim() == 0) return out;
  const axon_tensor_t o = describe(out, "nonzero"), s = describe_storage(self, "nonzero");
  AXON_CHECK(axon_kernel_nonzero(stream_of(self), &o, &s));
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  if (!nonzero_native(self)) return fall_back<ATEN_OP(nonzero)>(self);
  at::Tensor out = at::empty({0}, self.options().dtype(at::kLong));
  return nonzero_out(self, out);
}

at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer, but got size: ", size);
  if (!nonzero_native(self)) return fall_back<ATEN_OP(nonzero_static)>(self, size, fill_value);
  // One command, no read-back of the count (the reason nonzero_static exists): the first `size` coordinates, then
  // fill_value.
  at::Tensor out = at::empty({size, self.dim()}, self.options().dtype(at::kLong));
  if (self.dim() == 0 || size == 0) return out;
  const axon_tensor_t o = describe(out, "nonzero_static"), s = describe_storage(self, "nonzero_static");
  AXON_CHECK(axon_kernel_nonzero_static(stream_of(self), &o, &s, fill_value));
  return out;
}

// ---- masked_select / masked_scatter_ ----

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "masked_select(): self and result must have the same scalar "
              "type");
  if (mask.device() != self.device() || out.device() != self.device())
    return fall_back<ATEN_OP2(masked_select, out)>(self, mask, out);
  auto [s, m] = at::expand_outplace(self, mask);
  if (s->dim() > AXON_MAX_DIMS) return fall_back<ATEN_OP2(masked_select, out)>(self, mask, out);
  const int64_t n = count_nonzero_sync(*m, "masked_select");
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  at::assert_no_overlap(out, self);
  const at::Tensor s1 = s->dim() ? *s : s->view({1}), m1 = m->dim() ? *m : m->view({1});
  const axon_tensor_t o = describe_bytes(out, "masked_select"), sd = describe_bytes(s1, "masked_select"),
                      md = describe(m1, "masked_select");
  AXON_CHECK(axon_kernel_masked_select(stream_of(self), &o, &sd, &md));
  return out;
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  at::Tensor out = at::empty({0}, self.options());
  return masked_select_out(self, mask, out);
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "masked_scatter_: expected self and source to have same "
              "dtypes but got", self.scalar_type(), " and ", source.scalar_type());
  if (mask.device() != self.device() || source.device() != self.device() || self.dim() > AXON_MAX_DIMS)
    return fall_back<ATEN_OP(masked_scatter_)>(self, mask, source);
  at::assert_no_internal_overlap(self);
  const c10::MaybeOwned<at::Tensor> m = at::expand_inplace(self, mask, "masked_scatter_");
  if (self.numel() == 0) return self;
  const at::Tensor s1 = self.dim() ? self : self.view({1}), m1 = m->dim() ? *m : m->view({1});
  const at::Tensor src = source.reshape({-1});
  const axon_tensor_t d = describe_bytes(s1, "masked_scatter_"), md = describe(m1, "masked_scatter_"),
                      sd = describe_bytes(src, "masked_scatter_");
  AXON_CHECK(axon_kernel_masked_scatter(stream_of(self), &d, &md, &sd));
  return self;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index.Tensor", TORCH_FN(index));
  m.impl("index.Tensor_out", TORCH_FN(index_out));
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl));
  m.impl("take", TORCH_FN(take));
  m.impl("put_", TORCH_FN(put_));
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_scalar));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor));
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("nonzero_static", TORCH_FN(nonzero_static));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
}

}  // namespace
}  // namespace torch_axon

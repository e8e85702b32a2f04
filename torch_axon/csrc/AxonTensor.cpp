#include "AxonTensor.h"

#include <ATen/TensorIterator.h>

#include <c10/util/Exception.h>

namespace torch_axon {

namespace {

std::optional<axon_dtype_t> axon_dtype_of_size(size_t itemsize) {
  switch (itemsize) {
    case 1: return AXON_UINT8;
    case 2: return AXON_INT16;
    case 4: return AXON_INT32;
    case 8: return AXON_INT64;
    case 16: return AXON_COMPLEX128;
    default: return std::nullopt;
  }
}

std::optional<axon_dtype_t> dtype_for(const at::TensorBase& t, bool bytes) {
  return bytes ? axon_dtype_of_size(t.dtype().itemsize()) : axon_dtype_of(t.scalar_type());
}

// Fills in the descriptors of n tensors of one shape; returns their number of dimensions, or -1 (descriptors
// unusable) if more than AXON_MAX_DIMS are needed. Up to AXON_MAX_DIMS dimensions are taken as they are; beyond,
// size-1 dimensions are dropped and a dimension is merged into the one before it where, in every tensor, the outer
// stride is the inner stride times the inner size (the element order stays row-major).
int describe_all(const at::TensorBase* const* t, axon_tensor_t* const* d, int n, bool bytes, const char* op) {
  for (int k = 0; k < n; ++k) {
    const auto dtype = dtype_for(*t[k], bytes);
    TORCH_CHECK(dtype.has_value(), op, ": dtype ", t[k]->scalar_type(), " is not supported by axon kernels");
    *d[k] = axon_tensor_t{};
    d[k]->data = t[k]->numel() > 0 ? const_cast<void*>(t[k]->const_data_ptr()) : nullptr;
    d[k]->dtype = *dtype;
  }
  const int64_t dims = t[0]->dim();
  int nd = 0;
  if (dims <= AXON_MAX_DIMS) {
    nd = static_cast<int>(dims);
    for (int k = 0; k < n; ++k) {
      for (int i = 0; i < nd; ++i) {
        d[k]->sizes[i] = t[k]->size(i);
        d[k]->strides[i] = t[k]->stride(i);
      }
    }
  } else if (t[0]->numel() == 0) {
    nd = 1;  // no elements: any shape with none will do (sizes[0] == 0)
  } else {
    for (int64_t i = 0; i < dims; ++i) {
      const int64_t size = t[0]->size(i);
      if (size == 1) continue;
      bool merge = nd > 0;
      for (int k = 0; k < n && merge; ++k) merge = d[k]->strides[nd - 1] == t[k]->stride(i) * size;
      if (!merge) {
        if (nd == AXON_MAX_DIMS) return -1;
        for (int k = 0; k < n; ++k) d[k]->sizes[nd] = 1;
        ++nd;
      }
      for (int k = 0; k < n; ++k) {
        d[k]->sizes[nd - 1] *= size;
        d[k]->strides[nd - 1] = t[k]->stride(i);
      }
    }
  }
  for (int k = 0; k < n; ++k) d[k]->ndim = nd;  // 0 if every size is 1: one element
  return nd;
}

void check_fits(int nd, const at::TensorBase& t, const char* op) {
  TORCH_CHECK(nd >= 0, op, ": tensors of more than ", AXON_MAX_DIMS,
              " dimensions are supported only where their strides let dimensions merge (got ", t.sizes(),
              " with strides ", t.strides(), ")");
}

axon_tensor_t describe_one(const at::TensorBase& t, bool bytes, const char* op) {
  const at::TensorBase* ts[] = {&t};
  axon_tensor_t d;
  axon_tensor_t* ds[] = {&d};
  check_fits(describe_all(ts, ds, 1, bytes, op), t, op);
  return d;
}

}  // namespace

axon_tensor_t describe(const at::TensorBase& t, const char* op) { return describe_one(t, /*bytes=*/false, op); }

axon_tensor_t describe_bytes(const at::TensorBase& t, const char* op) { return describe_one(t, /*bytes=*/true, op); }

axon_tensor_t describe_storage(const at::TensorBase& t, const char* op) {
  const auto dtype = axon_storage_dtype_of(t.scalar_type());
  TORCH_CHECK(dtype.has_value(), op, ": dtype ", t.scalar_type(), " is not supported by axon kernels");
  axon_tensor_t d = describe_one(t, /*bytes=*/true, op);
  d.dtype = *dtype;
  return d;
}

axon_tensor_t describe_iter_operand(const at::TensorIteratorBase& iter, int arg, axon_dtype_t dtype) {
  axon_tensor_t d{};
  d.data = iter.data_ptr(arg);
  d.dtype = dtype;
  d.ndim = iter.ndim();
  const auto strides = iter.strides(arg);
  const int64_t elem = iter.element_size(arg);
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = iter.shape()[i];
    d.strides[i] = strides[i] / elem;
  }
  return d;
}

axon_tensor_t describe_flat(const at::TensorBase& t, const char* op) {
  TORCH_CHECK(t.is_non_overlapping_and_dense(), op, ": expected a non-overlapping, dense tensor, got sizes ", t.sizes(),
              " and strides ", t.strides());
  const auto dtype = dtype_for(t, /*bytes=*/false);
  TORCH_CHECK(dtype.has_value(), op, ": dtype ", t.scalar_type(), " is not supported by axon kernels");
  axon_tensor_t d{};
  d.data = t.numel() > 0 ? const_cast<void*>(t.const_data_ptr()) : nullptr;
  d.dtype = *dtype;
  d.ndim = 1;
  d.sizes[0] = t.numel();
  d.strides[0] = 1;
  return d;
}

axon_tensor_t describe_strided(const at::TensorBase& t, int ndim, const int64_t* sizes, const int64_t* strides,
                               bool written) {
  TORCH_INTERNAL_ASSERT(ndim >= 0 && ndim <= AXON_MAX_DIMS && kernels_support(t.scalar_type()));
  axon_tensor_t d;  // every field set below: `d{}` and a copy up to ndim became `rep stosq` and `rep movsq`, whose
                    // start-up was 7% of a tiny trace
  d.data = written ? t.mutable_data_ptr() : const_cast<void*>(t.const_data_ptr());
  d.dtype = *axon_dtype_of(t.scalar_type());
  d.ndim = ndim;
  for (int k = 0; k < AXON_MAX_DIMS; ++k) {
    d.sizes[k] = k < ndim ? sizes[k] : 0;
    d.strides[k] = k < ndim ? strides[k] : 0;
  }
  return d;
}

axon_tensor_t describe_around(const at::TensorBase& t, int64_t dim, bool written) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) outer *= t.size(d);
    if (d > dim) inner *= t.size(d);
  }
  const int64_t n = t.dim() ? t.size(dim) : 1;
  const int64_t sizes[3] = {outer, n, inner}, strides[3] = {n * inner, inner, 1};
  return describe_strided(t, 3, sizes, strides, written);
}

std::vector<axon_tensor_t> describe_flat_list(at::TensorList l, const char* op) {
  std::vector<axon_tensor_t> out;
  out.reserve(l.size());
  for (const at::Tensor& t : l) out.push_back(describe_flat(t, op));
  return out;
}

void describe_pair(const at::TensorBase& dst, const at::TensorBase& src, bool bytes, const char* op,
                   axon_tensor_t* dst_desc, axon_tensor_t* src_desc) {
  TORCH_CHECK(dst.sizes() == src.sizes(), op, ": shapes differ: ", dst.sizes(), " and ", src.sizes());
  const at::TensorBase* ts[] = {&dst, &src};
  axon_tensor_t* ds[] = {dst_desc, src_desc};
  check_fits(describe_all(ts, ds, 2, bytes, op), src, op);
}

bool fits(const at::TensorBase& t) {
  if (t.dim() <= AXON_MAX_DIMS) return true;
  const at::TensorBase* ts[] = {&t};
  axon_tensor_t d;
  axon_tensor_t* ds[] = {&d};
  return describe_all(ts, ds, 1, /*bytes=*/true, "fits") >= 0;
}

bool fits_pair(const at::TensorBase& dst, const at::TensorBase& src) {
  if (dst.dim() <= AXON_MAX_DIMS) return true;
  const at::TensorBase* ts[] = {&dst, &src};
  axon_tensor_t d, s;
  axon_tensor_t* ds[] = {&d, &s};
  return describe_all(ts, ds, 2, /*bytes=*/true, "fits") >= 0;
}

axon_scalar_t to_axon_scalar(const c10::Scalar& s) {
  axon_scalar_t out{};
  if (s.isBoolean()) {
    out.dtype = AXON_BOOL;
    out.i = s.toBool() ? 1 : 0;
    out.f = static_cast<double>(out.i);
  } else if (s.isIntegral(/*includeBool=*/false)) {
    out.dtype = AXON_INT64;
    out.i = s.toLong();
    out.f = static_cast<double>(out.i);
  } else if (s.isComplex()) {
    out.dtype = AXON_COMPLEX128;
    const auto c = s.toComplexDouble();
    out.f = c.real();
    out.imag = c.imag();
  } else {
    out.dtype = AXON_FLOAT64;
    out.f = s.toDouble();
  }
  return out;
}

}  // namespace torch_axon

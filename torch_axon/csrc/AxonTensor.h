// Translating ATen tensors into libaxon's tensor descriptors: the one place that knows both layouts.
#pragma once

#include <ATen/core/Tensor.h>
#include <axon/kernels.h>
#include <axon/tensor.h>
#include <c10/core/Scalar.h>

#include <optional>
#include <vector>

namespace at {
struct TensorIteratorBase;
}

namespace torch_axon {

// libaxon's dtype for t, or nullopt when libaxon's kernels do not handle it (e.g. fp8, uint32). Inline: every op asks
// several times, and as a call its optional comes back through memory.
inline std::optional<axon_dtype_t> axon_dtype_of(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return AXON_FLOAT32;
    case c10::ScalarType::Double: return AXON_FLOAT64;
    case c10::ScalarType::Half: return AXON_FLOAT16;
    case c10::ScalarType::BFloat16: return AXON_BFLOAT16;
    case c10::ScalarType::Char: return AXON_INT8;
    case c10::ScalarType::Byte: return AXON_UINT8;
    case c10::ScalarType::Short: return AXON_INT16;
    case c10::ScalarType::Int: return AXON_INT32;
    case c10::ScalarType::Long: return AXON_INT64;
    case c10::ScalarType::Bool: return AXON_BOOL;
    case c10::ScalarType::ComplexFloat: return AXON_COMPLEX64;
    case c10::ScalarType::ComplexDouble: return AXON_COMPLEX128;
    default: return std::nullopt;
  }
}

// axon_dtype_of, and libaxon's storage dtypes uint16/32/64 and complex32: what copies take, and what pointwise kernels
// read and write as operands while computing in another dtype (PyTorch computes little in these dtypes either).
inline std::optional<axon_dtype_t> axon_storage_dtype_of(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::ComplexHalf: return AXON_COMPLEX32;
    case c10::ScalarType::UInt16: return AXON_UINT16;
    case c10::ScalarType::UInt32: return AXON_UINT32;
    case c10::ScalarType::UInt64: return AXON_UINT64;
    default: return axon_dtype_of(t);
  }
}

// True if libaxon's kernels can take tensors of this dtype.
inline bool kernels_support(c10::ScalarType t) { return axon_dtype_of(t).has_value(); }

// t, computed contiguous (NCHW) by a kernel, in the memory format PyTorch CPU gives that result (channels_last for
// convolutions and norms of channels_last inputs): one copy when fmt is not Contiguous.
inline at::Tensor in_memory_format(const at::Tensor& t, at::MemoryFormat fmt) {
  return !t.defined() || fmt == at::MemoryFormat::Contiguous ? t : t.contiguous(fmt);
}

// The descriptor of t (data pointer with the storage offset applied, sizes, strides in elements). A tensor of more
// than AXON_MAX_DIMS dimensions is described with its size-1 dimensions dropped and adjacent dimensions merged where
// its strides allow: the same elements in the same row-major order. Throws naming `op` if t's dtype is not supported
// or it still has too many dimensions.
axon_tensor_t describe(const at::TensorBase& t, const char* op);

// A non-overlapping, dense tensor's elements as one contiguous run in memory order (numel elements from the data
// pointer), the form list kernels take. Cheaper than describe(t.as_strided({numel}, {1})): no view is made.
axon_tensor_t describe_flat(const at::TensorBase& t, const char* op);
std::vector<axon_tensor_t> describe_flat_list(at::TensorList l, const char* op);

// A descriptor of t's memory from its data pointer with the given sizes and strides (in elements), t's own dimensions
// ignored: diagonals, vectors as rows or columns, broadcasts, without a view op. The caller keeps it within t's
// storage; t's dtype must be one libaxon knows (kernels_support). `written`: the pointer is taken as mutable
// (copy-on-write storage materialized), for an output.
axon_tensor_t describe_strided(const at::TensorBase& t, int ndim, const int64_t* sizes, const int64_t* strides,
                               bool written = false);

// A contiguous t as [outer, size(dim), inner] (a 0-dim t as [1, 1, 1]), without a view: the form of kernels that work
// along one dimension (softmax, segment reductions). `written` as for describe_strided.
axon_tensor_t describe_around(const at::TensorBase& t, int64_t dim, bool written = false);

// The descriptor of t's bytes: as describe(), but with the libaxon dtype of t's element size (uint8, int16, int32,
// int64, complex128), for kernels that only move bytes (same-dtype copies, fills with a converted value). Works for
// dtypes libaxon does not know (float8, uint16, complex32, ...).
axon_tensor_t describe_bytes(const at::TensorBase& t, const char* op);

// As describe(), but in libaxon's storage dtype of t (uint16/32/64 and complex32 included; axon_storage_dtype_of),
// for kernels that read such operands through their conversions (nonzero's and any's tests of x != 0).
axon_tensor_t describe_storage(const at::TensorBase& t, const char* op);

// Operand `arg` of a built TensorIterator in its coalesced shape (iter.ndim() <= AXON_MAX_DIMS), strides in elements,
// described as `dtype`.
axon_tensor_t describe_iter_operand(const at::TensorIteratorBase& iter, int arg, axon_dtype_t dtype);

// Descriptors of two tensors of the same shape for one element-wise kernel (dst, src of a copy): as describe() (or
// describe_bytes() if `bytes`), with dimensions merged only where both tensors' strides allow.
void describe_pair(const at::TensorBase& dst, const at::TensorBase& src, bool bytes, const char* op,
                   axon_tensor_t* dst_desc, axon_tensor_t* src_desc);

// Whether describe(t) (describe_pair(dst, src)) fits in AXON_MAX_DIMS dimensions. Where it does not, callers split the
// work along the first dimension (or go through a contiguous temporary) rather than fail.
bool fits(const at::TensorBase& t);
bool fits_pair(const at::TensorBase& dst, const at::TensorBase& src);

// A scalar in libaxon's form, keeping integers exact.
axon_scalar_t to_axon_scalar(const c10::Scalar& s);

}  // namespace torch_axon

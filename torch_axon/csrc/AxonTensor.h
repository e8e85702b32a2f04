// Translating ATen tensors into libaxon's tensor descriptors: the one place that knows both layouts.
#pragma once

#include <ATen/core/Tensor.h>
#include <axon/kernels.h>
#include <axon/tensor.h>
#include <c10/core/Scalar.h>

#include <optional>

namespace torch_axon {

// libaxon's dtype for t, or nullopt when libaxon's kernels do not handle it (e.g. fp8, uint32).
std::optional<axon_dtype_t> axon_dtype_of(c10::ScalarType t);

// True if libaxon's kernels can take tensors of this dtype.
inline bool kernels_support(c10::ScalarType t) { return axon_dtype_of(t).has_value(); }

// The descriptor of t (data pointer with the storage offset applied, sizes, strides in elements). Throws naming `op`
// if t's dtype is not supported or it has more than AXON_MAX_DIMS dimensions.
axon_tensor_t describe(const at::TensorBase& t, const char* op);

// A scalar in libaxon's form, keeping integers exact.
axon_scalar_t to_axon_scalar(const c10::Scalar& s);

}  // namespace torch_axon

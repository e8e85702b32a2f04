// A scalar as one element of a dtype, in the form libaxon's byte-moving kernels (fill, masked_fill) store: the value
// converted on the host with c10's checked conversion, so any dtype works, complex32, float8 and uint16 included.
#pragma once

#include <axon/tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

namespace torch_axon {

// For a tensor described with describe_bytes(): complex128 elements come back as libaxon's complex scalar, every
// narrower one as its bytes in the low bytes of an integer scalar (libaxon narrows integers by keeping those).
// Throws c10's error if value does not fit dtype.
axon_scalar_t element_bytes_scalar(const c10::Scalar& value, c10::ScalarType dtype);

}  // namespace torch_axon

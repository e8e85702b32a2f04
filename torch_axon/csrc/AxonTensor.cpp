#include "AxonTensor.h"

#include <c10/util/Exception.h>

namespace torch_axon {

std::optional<axon_dtype_t> axon_dtype_of(c10::ScalarType t) {
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

axon_tensor_t describe(const at::TensorBase& t, const char* op) {
  const auto dtype = axon_dtype_of(t.scalar_type());
  TORCH_CHECK(dtype.has_value(), op, ": dtype ", t.scalar_type(), " is not supported by axon kernels");
  TORCH_CHECK(t.dim() <= AXON_MAX_DIMS, op, ": tensors of more than ", AXON_MAX_DIMS, " dimensions are not supported (got ",
              t.dim(), ")");
  axon_tensor_t d{};
  d.data = t.numel() > 0 ? const_cast<void*>(t.const_data_ptr()) : nullptr;
  d.dtype = *dtype;
  d.ndim = static_cast<int>(t.dim());
  for (int i = 0; i < d.ndim; ++i) {
    d.sizes[i] = t.size(i);
    d.strides[i] = t.stride(i);
  }
  return d;
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

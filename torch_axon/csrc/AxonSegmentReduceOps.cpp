// torch.segment_reduce and its backward (_segment_reduce_backward) on libaxon's segment kernels
// (libaxon/include/axon/segment.h): PyTorch's checks and messages here, the reductions there.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/WrapDimUtils.h>
#include <axon/segment.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string_view>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

std::optional<axon_segment_reduce_t> segment_op_of(std::string_view r) {
  if (r == "sum") return AXON_SEGMENT_SUM;
  if (r == "mean") return AXON_SEGMENT_MEAN;
  if (r == "max") return AXON_SEGMENT_MAX;
  if (r == "min") return AXON_SEGMENT_MIN;
  if (r == "prod") return AXON_SEGMENT_PROD;
  return std::nullopt;
}

bool segment_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// t (contiguous) as [outer, middle, inner] around dimension `dim`, without a view.
axon_tensor_t describe_around(const at::Tensor& t, int64_t dim) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) outer *= t.size(d);
    if (d > dim) inner *= t.size(d);
  }
  const int64_t sizes[3] = {outer, t.size(dim), inner}, strides[3] = {t.size(dim) * inner, inner, 1};
  return describe_strided(t, 3, sizes, strides);
}

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial) {
  const auto op = segment_op_of(std::string_view(reduce.data(), reduce.size()));
  TORCH_CHECK(op.has_value(), "unsupported reduction given! ", reduce);
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(!indices.has_value(), "segment_reduce(): indices based reduction is not supported yet.");
  const bool has_offsets = offsets.has_value() && offsets->defined();
  const bool has_lengths = lengths.has_value() && lengths->defined();
  TORCH_CHECK(has_lengths || has_offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  const at::Tensor& counts = has_offsets ? *offsets : *lengths;
  const char* what = has_offsets ? "offsets" : "lengths";
  TORCH_CHECK(data.get_device() == counts.get_device());
  TORCH_CHECK(data.dim() >= counts.dim());
  TORCH_CHECK(axis == counts.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ", what,
              " but got ", axis, ".");
  const bool native = segment_dtype(data.scalar_type()) && data.dim() <= AXON_MAX_DIMS &&
                      (counts.scalar_type() == at::kLong || counts.scalar_type() == at::kInt) &&
                      (!initial.has_value() || !initial->isComplex());
  if (!native) {
    return fall_back<ATEN_OP(segment_reduce)>(data, reduce, lengths, indices, offsets, axis, unsafe, initial);
  }
  if (has_lengths && !has_offsets && !unsafe) {  // CPU's checks of the lengths (two reads back, as there)
    TORCH_CHECK(lengths->min().item<int64_t>() >= 0, "lengths contains negative value!");
    TORCH_CHECK(at::all(lengths->sum({-1}) == data.size(axis)).item<bool>(), "segment_reduce(): Expected all rows "
                "of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  const int64_t segments = counts.size(axis) - (has_offsets ? 1 : 0);
  std::vector<int64_t> shape = data.sizes().vec();
  shape[axis] = segments;
  at::Tensor out = at::empty(shape, data.options());
  if (out.numel() == 0) return out;
  const at::Tensor x = data.contiguous(), c = counts.contiguous();
  const axon_tensor_t od = describe_around(out, axis), xd = describe_around(x, axis);
  // lengths or offsets as [outer, segments (+1)]: their dimensions before axis are data's
  const int64_t csizes[2] = {c.numel() / c.size(axis), c.size(axis)}, cstrides[2] = {c.size(axis), 1};
  const axon_tensor_t cd = describe_strided(c, 2, csizes, cstrides);
  AXON_CHECK(axon_kernel_segment_reduce(current_stream(data.device().index()), *op, &od, &xd, &cd,
                                        has_offsets ? 1 : 0, initial.has_value() ? 1 : 0,
                                        initial.has_value() ? initial->toDouble() : 0.0));
  return out;
}

at::Tensor segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                   c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                   const std::optional<at::Tensor>& offsets, int64_t axis,
                                   const std::optional<at::Scalar>& initial) {
  const auto op = segment_op_of(std::string_view(reduce.data(), reduce.size()));
  TORCH_CHECK(op.has_value(), "unsupported reduction given! ", reduce);
  axis = at::maybe_wrap_dim(axis, data.dim());
  const bool has_offsets = offsets.has_value() && offsets->defined();
  const bool has_lengths = lengths.has_value() && lengths->defined();
  TORCH_CHECK(has_lengths || has_offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  const at::Tensor& counts = has_offsets ? *offsets : *lengths;
  const bool native = segment_dtype(data.scalar_type()) && data.dim() <= AXON_MAX_DIMS &&
                      grad.scalar_type() == data.scalar_type() && output.scalar_type() == data.scalar_type() &&
                      grad.sizes() == output.sizes() && axis == counts.dim() - 1 &&
                      (counts.scalar_type() == at::kLong || counts.scalar_type() == at::kInt) &&
                      (!initial.has_value() || !initial->isComplex());
  if (!native) {
    return fall_back<ATEN_OP(_segment_reduce_backward)>(grad, output, data, reduce, lengths, offsets, axis, initial);
  }
  at::Tensor grad_in = at::zeros(data.sizes(), data.options());
  if (data.numel() == 0 || output.numel() == 0) return grad_in;
  const at::Tensor x = data.contiguous(), g = grad.contiguous(), y = output.contiguous(), c = counts.contiguous();
  const int64_t csizes[2] = {c.numel() / c.size(axis), c.size(axis)}, cstrides[2] = {c.size(axis), 1};
  const axon_tensor_t gid = describe_around(grad_in, axis), xd = describe_around(x, axis);
  const axon_tensor_t gd = describe_around(g, axis), yd = describe_around(y, axis);
  const axon_tensor_t cd = describe_strided(c, 2, csizes, cstrides);
  AXON_CHECK(axon_kernel_segment_reduce_backward(current_stream(data.device().index()), *op, &gid, &gd, &yd, &xd, &cd,
                                                 has_offsets ? 1 : 0, initial.has_value() ? 1 : 0,
                                                 initial.has_value() ? initial->toDouble() : 0.0));
  return grad_in;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(segment_reduce_backward));
}

}  // namespace
}  // namespace torch_axon

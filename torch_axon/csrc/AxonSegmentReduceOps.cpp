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

// The arguments both directions share: the reduction, the segments' lengths or offsets (offsets win when both are
// given, as on CPU), and whether the dtypes are ones the kernels take.
struct SegmentArgs {
  axon_segment_reduce_t op;
  const at::Tensor* counts;  // lengths or offsets
  bool offsets;
  bool native;
};

SegmentArgs segment_args(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                         const std::optional<at::Tensor>& offsets, const std::optional<at::Scalar>& initial) {
  const auto op = segment_op_of(std::string_view(reduce.data(), reduce.size()));
  TORCH_CHECK(op.has_value(), "unsupported reduction given! ", reduce);
  const bool has_offsets = offsets.has_value() && offsets->defined();
  const bool has_lengths = lengths.has_value() && lengths->defined();
  TORCH_CHECK(has_lengths || has_offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  const at::Tensor& counts = has_offsets ? *offsets : *lengths;
  const bool native = segment_dtype(data.scalar_type()) && data.dim() <= AXON_MAX_DIMS &&
                      (counts.scalar_type() == at::kLong || counts.scalar_type() == at::kInt) &&
                      (!initial.has_value() || !initial->isComplex());
  return {*op, &counts, has_offsets, native};
}

// lengths or offsets (contiguous) as [outer, segments (+1)]: their dimensions before axis are data's.
axon_tensor_t describe_counts(const at::Tensor& c, int64_t axis) {
  const int64_t sizes[2] = {c.numel() / c.size(axis), c.size(axis)}, strides[2] = {c.size(axis), 1};
  return describe_strided(c, 2, sizes, strides);
}

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial) {
  const SegmentArgs args = segment_args(data, reduce, lengths, offsets, initial);
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(!indices.has_value(), "segment_reduce(): indices based reduction is not supported yet.");
  const at::Tensor& counts = *args.counts;
  TORCH_CHECK(data.get_device() == counts.get_device());
  TORCH_CHECK(data.dim() >= counts.dim());
  TORCH_CHECK(axis == counts.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ",
              args.offsets ? "offsets" : "lengths", " but got ", axis, ".");
  if (!args.native) {
    return fall_back<ATEN_OP(segment_reduce)>(data, reduce, lengths, indices, offsets, axis, unsafe, initial);
  }
  if (!args.offsets && !unsafe) {  // CPU's checks of the lengths (two reads back, as there)
    TORCH_CHECK(lengths->min().item<int64_t>() >= 0, "lengths contains negative value!");
    TORCH_CHECK(at::all(lengths->sum({-1}) == data.size(axis)).item<bool>(), "segment_reduce(): Expected all rows "
                "of lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  const int64_t segments = counts.size(axis) - (args.offsets ? 1 : 0);
  std::vector<int64_t> shape = data.sizes().vec();
  shape[axis] = segments;
  at::Tensor out = at::empty(shape, data.options());
  if (out.numel() == 0) return out;
  const at::Tensor x = data.contiguous(), c = counts.contiguous();
  const axon_tensor_t od = describe_around(out, axis), xd = describe_around(x, axis), cd = describe_counts(c, axis);
  AXON_CHECK(axon_kernel_segment_reduce(current_stream(data.device().index()), args.op, &od, &xd, &cd,
                                        args.offsets ? 1 : 0, initial.has_value() ? 1 : 0,
                                        initial.has_value() ? initial->toDouble() : 0.0));
  return out;
}

at::Tensor segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                   c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                   const std::optional<at::Tensor>& offsets, int64_t axis,
                                   const std::optional<at::Scalar>& initial) {
  const SegmentArgs args = segment_args(data, reduce, lengths, offsets, initial);
  axis = at::maybe_wrap_dim(axis, data.dim());
  const at::Tensor& counts = *args.counts;
  const bool native = args.native && grad.scalar_type() == data.scalar_type() &&
                      output.scalar_type() == data.scalar_type() && grad.sizes() == output.sizes() &&
                      axis == counts.dim() - 1;
  if (!native) {
    return fall_back<ATEN_OP(_segment_reduce_backward)>(grad, output, data, reduce, lengths, offsets, axis, initial);
  }
  at::Tensor grad_in = at::zeros(data.sizes(), data.options());
  if (data.numel() == 0 || output.numel() == 0) return grad_in;
  const at::Tensor x = data.contiguous(), g = grad.contiguous(), y = output.contiguous(), c = counts.contiguous();
  const axon_tensor_t gid = describe_around(grad_in, axis), xd = describe_around(x, axis);
  const axon_tensor_t gd = describe_around(g, axis), yd = describe_around(y, axis), cd = describe_counts(c, axis);
  AXON_CHECK(axon_kernel_segment_reduce_backward(current_stream(data.device().index()), args.op, &gid, &gd, &yd, &xd,
                                                 &cd, args.offsets ? 1 : 0, initial.has_value() ? 1 : 0,
                                                 initial.has_value() ? initial->toDouble() : 0.0));
  return grad_in;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(segment_reduce_backward));
}

}  // namespace
}  // namespace torch_axon

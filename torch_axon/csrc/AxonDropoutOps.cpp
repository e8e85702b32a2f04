// Dropout on libaxon's fused kernels (libaxon/include/axon/dropout.h): native_dropout draws its keep-mask from the
// device's Philox generator (the blocks are claimed here, as for the other random ops, so a seed gives the same mask
// whatever the thread count) and native_dropout_backward applies a saved mask. native_dropout's other dtypes run
// through the host fallback, which raises PyTorch's error for them.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/core/DistributionsHelper.h>
#include <axon/dropout.h>
#include <axon/kernels.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (!is_float(input.scalar_type())) return fall_back<ATEN_OP(native_dropout)>(input, p, train);
  // train == nullopt means training, as in PyTorch's kernels.
  if (train.has_value() && !*train)
    return {input.clone(), at::ones(input.sizes(), input.options().dtype(at::kBool))};
  const at::Tensor x = input.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options()), mask = at::empty(x.sizes(), x.options().dtype(at::kBool));
  if (x.numel() == 0) return {out, mask};
  const PhiloxDraw draw = claim_philox(std::nullopt, x.device().index(), axon_philox_blocks(AXON_FLOAT32, x.numel()));
  const axon_tensor_t od = describe(out.view({-1}), "native_dropout"), md = describe(mask.view({-1}), "native_dropout");
  const axon_tensor_t xd = describe(x.view({-1}), "native_dropout");
  AXON_CHECK(axon_kernel_dropout(current_stream(x.device().index()), &od, &md, &xd, p, draw.seed, draw.offset));
  return {out, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be Bool Scalar Type", mask.scalar_type());
  if (grad_output.sizes() != mask.sizes())
    return fall_back<ATEN_OP(native_dropout_backward)>(grad_output, mask, scale);  // CPU's error or broadcast
  // Integer and bool gradients: CPU promotes to the default float dtype, as grad * mask * scale does on axon's
  // kernels (the masked integer is exact, then one float32 product with the scale).
  if (!is_float(grad_output.scalar_type())) return at::mul(at::mul(grad_output, mask), scale);
  const at::Tensor g = grad_output.contiguous(), m = mask.contiguous();
  at::Tensor gi = at::empty(g.sizes(), g.options());
  if (g.numel() == 0) return gi;
  const char* op = "native_dropout_backward";
  const axon_tensor_t gid = describe(gi.view({-1}), op), gd = describe(g.view({-1}), op);
  const axon_tensor_t md = describe(m.view({-1}), op);
  AXON_CHECK(axon_kernel_dropout_backward(current_stream(g.device().index()), &gid, &gd, &md, scale));
  return gi;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

}  // namespace
}  // namespace torch_axon

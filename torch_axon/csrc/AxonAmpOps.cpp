// GradScaler's two ops, _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_, on libaxon's amp kernels
// (libaxon/include/axon/amp.h).
//
// The fast route: every gradient, found_inf and inv_scale (and scale, growth_tracker) on one axon device, the
// gradients of one float dtype, strided, non-overlapping and dense (each described as its flat memory: the op is
// element-wise). GradScaler groups gradients by device and dtype before the call, so its lists always qualify.
// found_inf and the scale are read and written by the kernels when they run: no host synchronization. Other lists
// (mixed dtypes, views with gaps) run PyTorch's CPU kernel through the host fallback. Argument errors are PyTorch's,
// prefixed with the op's name.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/ForeachUtils.h>
#include <axon/amp.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// The checks PyTorch's CPU kernel makes on a one-element number.
void check_number(const char* op, const char* role, const at::Tensor& t, c10::ScalarType want, const char* kind) {
  TORCH_CHECK(t.numel() == 1, op, ": ", role, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == want, op, ": ", role, " must be ", kind, " tensor.");
}

bool on(const at::Tensor& t, const at::Device& dev) { return t.device() == dev && t.layout() == at::kStrided; }

bool fast_grads(at::TensorList grads, const at::Device& dev) {
  if (dev.type() != kAxon) return false;
  for (const at::Tensor& t : grads)
    if (!on(t, dev) || t.scalar_type() != grads[0].scalar_type() || !is_float(t.scalar_type()) || t.is_conj() ||
        t.is_neg() || !t.is_non_overlapping_and_dense())
      return false;
  return true;
}

void non_finite_check_and_unscale_(at::TensorList grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  if (grads.empty()) return;
  check_number(op, "inv_scale", inv_scale, at::kFloat, "a float");
  check_number(op, "found_inf", found_inf, at::kFloat, "a float");
  at::native::check_foreach_api_restrictions(grads);
  const at::Device dev = found_inf.device();
  if (!on(found_inf, dev) || !on(inv_scale, dev) || !fast_grads(grads, dev))
    return fall_back<ATEN_OP(_amp_foreach_non_finite_check_and_unscale_)>(grads, found_inf, inv_scale);
  std::vector<axon_tensor_t> gd;
  gd.reserve(grads.size());
  for (const at::Tensor& t : grads) gd.push_back(describe(t.as_strided({t.numel()}, {1}), op));
  const axon_tensor_t fd = describe(found_inf, op), sd = describe(inv_scale, op);
  AXON_CHECK(axon_amp_non_finite_check_and_unscale(current_stream(dev.index()), static_cast<int64_t>(gd.size()),
                                                   gd.data(), &fd, &sd));
}

at::Tensor& update_scale_(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_number(op, "growth_tracker", growth_tracker, at::kInt, "an int");
  check_number(op, "current_scale", scale, at::kFloat, "a float");
  check_number(op, "found_inf", found_inf, at::kFloat, "a float");
  const at::Device dev = scale.device();
  if (dev.type() != kAxon || !on(growth_tracker, dev) || !on(found_inf, dev))
    return fall_back<ATEN_OP(_amp_update_scale_)>(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                                                  growth_interval);
  const axon_tensor_t sd = describe(scale, op), td = describe(growth_tracker, op), fd = describe(found_inf, op);
  AXON_CHECK(axon_amp_update_scale(current_stream(dev.index()), &sd, &td, &fd, growth_factor, backoff_factor,
                                   growth_interval));
  return scale;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(non_finite_check_and_unscale_));
  m.impl("_amp_update_scale_", TORCH_FN(update_scale_));
}

}  // namespace torch_axon

// torch.histc on libaxon's histogram kernel (libaxon/include/axon/histogram.h).
//
// PyTorch's range rules live here: min == max means the data's own range (read back from the device, as CUDA
// does), and an empty range is widened by one on each side. Integer inputs are counted as CUDA counts them (CPU's
// histc refuses them, but Mixture-of-Experts routers on accelerators rely on them).
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <axon/histogram.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool countable(c10::ScalarType t) {
  return kernels_support(t) && t != at::kBool && !c10::isComplexType(t);
}

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                      at::Tensor& out) {
  if (!countable(self.scalar_type()) || !countable(out.scalar_type()))
    return fall_back<ATEN_OP2(histc, out)>(self, bins, min, max, out);
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  double lo = min.toDouble(), hi = max.toDouble();
  if (lo == hi && self.numel() > 0) {
    lo = at::amin(self).item<double>();
    hi = at::amax(self).item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(!(std::isfinite(lo) && std::isfinite(hi)) || lo < hi, "torch.histc: max must be larger than min");
  TORCH_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histc: range of [", lo, ", ", hi, "] is not finite");
  at::native::resize_output(out, {bins});
  const at::Tensor in = self.contiguous();
  at::Tensor o = out.is_contiguous() ? out : at::empty({bins}, out.options());
  const axon_tensor_t od = describe(o, "histc"), id = describe(in.reshape({-1}), "histc");
  AXON_CHECK(axon_kernel_histc(current_stream(self.device().index()), &od, &id, bins, lo, hi));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor histc(const at::Tensor& self, int64_t bins, const at::Scalar& min, const at::Scalar& max) {
  at::Tensor out = at::empty({0}, self.options());
  return histc_out(self, bins, min, max, out);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
}

}  // namespace
}  // namespace torch_axon

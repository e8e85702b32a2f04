// torch.cdist and torch.nn.functional.pdist on libaxon's distance kernels (libaxon/include/axon/distance.h).
//
// PyTorch's shape rules live here: batch dimensions broadcast and fold into one, empty operands give empty or zero
// results, and p = 2 with compute_mode 1 (or 0 with more than 25 rows on a side) takes PyTorch's matrix-product form,
// _euclidean_dist, which runs on axon's own ops as it does on CPU. Dtypes other than float32 and float64 go through
// the host fallback, which raises PyTorch's errors.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Operators.h>
#include <axon/distance.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool native_dtype(const at::Tensor& t) { return t.scalar_type() == at::kFloat || t.scalar_type() == at::kDouble; }

// The broadcast batch sizes of x1 [..., r1, c] and x2 [..., r2, c].
std::vector<int64_t> batch_of(const at::Tensor& x1, const at::Tensor& x2) {
  return at::infer_size(x1.sizes().slice(0, x1.dim() - 2), x2.sizes().slice(0, x2.dim() - 2));
}

// x expanded to the batch, contiguous, viewed as [B, r, c].
at::Tensor batched(const at::Tensor& x, const std::vector<int64_t>& batch, int64_t b) {
  std::vector<int64_t> size(batch);
  size.insert(size.end(), {x.size(-2), x.size(-1)});
  return x.expand(size).contiguous().view({b, x.size(-2), x.size(-1)});
}

at::Tensor cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  if (!native_dtype(x1) || x2.scalar_type() != x1.scalar_type() || x1.device() != x2.device())
    return fall_back<ATEN_OP(_cdist_forward)>(x1, x2, p, compute_mode);
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode.value_or(0);
  TORCH_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  const std::vector<int64_t> batch = batch_of(x1, x2);
  const int64_t b = c10::multiply_integers(batch);
  std::vector<int64_t> out_shape(batch);
  out_shape.insert(out_shape.end(), {r1, r2});
  if (r1 == 0 || r2 == 0 || b == 0) return at::empty(out_shape, x1.options());
  if (c == 0) return at::zeros(out_shape, x1.options());
  const at::Tensor a1 = batched(x1, batch, b), a2 = batched(x2, batch, b);
  if (p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25))))
    return (b == 1 ? at::_euclidean_dist(x1, x2) : at::_euclidean_dist(a1, a2)).view(out_shape);
  at::Tensor out = at::empty({b, r1, r2}, x1.options());
  const char* op = "cdist";
  const axon_tensor_t od = describe(out, op), d1 = describe(a1, op), d2 = describe(a2, op);
  AXON_CHECK(axon_kernel_cdist(current_stream(x1.device().index()), &od, &d1, &d2, p));
  return out.view(out_shape);
}

at::Tensor cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                          const at::Tensor& cdist) {
  if (!native_dtype(x1) || x2.scalar_type() != x1.scalar_type() || grad.scalar_type() != x1.scalar_type() ||
      cdist.scalar_type() != x1.scalar_type())
    return fall_back<ATEN_OP(_cdist_backward)>(grad, x1, x2, p, cdist);
  const int64_t r1 = x1.size(-2), r2 = x2.size(-2), c = x1.size(-1);
  const std::vector<int64_t> batch = batch_of(x1, x2);
  const int64_t b = c10::multiply_integers(batch);
  if (r1 == 0 || r2 == 0 || c == 0 || b == 0) return at::zeros_like(x1);
  std::vector<int64_t> x1_size(batch);
  x1_size.insert(x1_size.end(), {r1, c});
  const at::Tensor a1 = batched(x1, batch, b), a2 = batched(x2, batch, b);
  const at::Tensor g = grad.contiguous().view({b, r1, r2}), dist = cdist.contiguous().view({b, r1, r2});
  at::Tensor grad_x1 = at::empty({b, r1, c}, x1.options());
  const char* op = "cdist_backward";
  const axon_tensor_t gxd = describe(grad_x1, op), gd = describe(g, op), d1 = describe(a1, op),
                      d2 = describe(a2, op), dd = describe(dist, op);
  AXON_CHECK(axon_kernel_cdist_backward(current_stream(x1.device().index()), &gxd, &gd, &d1, &d2, &dd, p));
  // the broadcast x1's shape: autograd reduces over broadcast dimensions itself
  return grad_x1.view(x1_size);
}

at::Tensor pdist_forward(const at::Tensor& self, double p) {
  if (!native_dtype(self) || self.dim() != 2) return fall_back<ATEN_OP(_pdist_forward)>(self, p);
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t n = self.size(0);
  if (n <= 1) return at::empty({0}, self.options());
  if (self.size(1) == 0) return at::zeros({n * (n - 1) / 2}, self.options());
  at::Tensor out = at::empty({n * (n - 1) / 2}, self.options());
  const char* op = "pdist";
  const axon_tensor_t od = describe(out, op), xd = describe(self, op);
  AXON_CHECK(axon_kernel_pdist(current_stream(self.device().index()), &od, &xd, p));
  return out;
}

at::Tensor pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist) {
  if (!native_dtype(self) || self.dim() != 2 || grad.scalar_type() != self.scalar_type() ||
      pdist.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP(_pdist_backward)>(grad, self, p, pdist);
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  const at::Tensor g = grad.contiguous();
  const char* op = "pdist_backward";
  const axon_tensor_t od = describe(out, op), gd = describe(g, op), xd = describe(self, op),
                      dd = describe(pdist, op);
  AXON_CHECK(axon_kernel_pdist_backward(current_stream(self.device().index()), &od, &gd, &xd, &dd, p));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cdist_forward", TORCH_FN(cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
}

}  // namespace torch_axon

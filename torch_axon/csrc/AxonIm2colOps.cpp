// im2col and col2im (F.unfold and F.fold) on libaxon's im2col kernel (libaxon/include/axon/im2col.h).
//
// ATen's own shape checks run first (im2col_shape_check.h), so errors read as on CPU; unbatched inputs get a batch
// of 1. im2col copies the dtypes PyTorch CPU unfolds (floating, complex, bool: not integers); col2im sums in
// float32 or float64, the half types in a float32 temporary. Other dtypes go to the host fallback (CPU's error).
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/im2col_shape_check.h>
#include <axon/im2col.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

axon_im2col_params_t params(c10::IntArrayRef kernel, c10::IntArrayRef dilation, c10::IntArrayRef padding,
                            c10::IntArrayRef stride) {
  axon_im2col_params_t p{};
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = kernel[i], p.dilation[i] = dilation[i], p.padding[i] = padding[i], p.stride[i] = stride[i];
  }
  return p;
}

void check_lengths(const char* op, c10::IntArrayRef kernel, c10::IntArrayRef dilation, c10::IntArrayRef padding,
                   c10::IntArrayRef stride) {
  TORCH_CHECK(kernel.size() == 2 && dilation.size() == 2 && padding.size() == 2 && stride.size() == 2, op,
              ": kernel_size, dilation, padding and stride must have two elements each");
}

at::Tensor im2col(const at::Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef dilation,
                  c10::IntArrayRef padding, c10::IntArrayRef stride) {
  const auto st = self.scalar_type();
  if (!kernels_support(st) || !(at::isFloatingType(st) || at::isComplexType(st) || st == at::kBool))
    return fall_back<ATEN_OP(im2col)>(self, kernel, dilation, padding, stride);
  check_lengths("im2col", kernel, dilation, padding, stride);
  at::native::im2col_shape_check(self, at::Tensor(), kernel[0], kernel[1], dilation[0], dilation[1], padding[0],
                                 padding[1], stride[0], stride[1]);
  const bool batched = self.dim() == 4;
  const at::Tensor x = (batched ? self : self.unsqueeze(0)).contiguous();
  const int64_t oh = (x.size(2) + 2 * padding[0] - (dilation[0] * (kernel[0] - 1) + 1)) / stride[0] + 1;
  const int64_t ow = (x.size(3) + 2 * padding[1] - (dilation[1] * (kernel[1] - 1) + 1)) / stride[1] + 1;
  at::Tensor out = at::empty({x.size(0), x.size(1) * kernel[0] * kernel[1], oh * ow}, self.options());
  if (out.numel() > 0) {
    const axon_im2col_params_t p = params(kernel, dilation, padding, stride);
    const axon_tensor_t od = describe(out, "im2col"), xd = describe(x, "im2col");
    AXON_CHECK(axon_kernel_im2col(current_stream(self.device().index()), &od, &xd, &p));
  }
  return batched ? out : out.squeeze(0);
}

at::Tensor col2im(const at::Tensor& self, c10::SymIntArrayRef output_size_sym, c10::IntArrayRef kernel,
                  c10::IntArrayRef dilation, c10::IntArrayRef padding, c10::IntArrayRef stride) {
  const c10::IntArrayRef output_size = C10_AS_INTARRAYREF_SLOW(output_size_sym);
  const auto st = self.scalar_type();
  if (st != at::kFloat && st != at::kDouble && st != at::kHalf && st != at::kBFloat16)
    return fall_back<ATEN_OP(col2im)>(self, output_size, kernel, dilation, padding, stride);
  check_lengths("col2im", kernel, dilation, padding, stride);
  TORCH_CHECK(output_size.size() == 2, "col2im: output_size must have two elements");
  at::native::col2im_shape_check(self, at::Tensor(), output_size[0], output_size[1], kernel[0], kernel[1],
                                 dilation[0], dilation[1], padding[0], padding[1], stride[0], stride[1]);
  const bool batched = self.dim() == 3;
  const at::Tensor c = (batched ? self : self.unsqueeze(0)).contiguous();
  const int64_t channels = c.size(1) / (kernel[0] * kernel[1]);
  const bool half = st == at::kHalf || st == at::kBFloat16;
  at::Tensor out = at::empty({c.size(0), channels, output_size[0], output_size[1]}, self.options());
  if (out.numel() > 0) {
    // libaxon sums in the image's dtype: the half types sum in float32 and round once.
    const at::Tensor cols = half ? c.to(at::kFloat) : c;
    at::Tensor img = half ? at::empty(out.sizes(), out.options().dtype(at::kFloat)) : out;
    const axon_im2col_params_t p = params(kernel, dilation, padding, stride);
    const axon_tensor_t id = describe(img, "col2im"), cd = describe(cols, "col2im");
    AXON_CHECK(axon_kernel_col2im(current_stream(self.device().index()), &id, &cd, &p));
    if (half) out.copy_(img);
  }
  return batched ? out : out.squeeze(0);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", TORCH_FN(im2col));
  m.impl("col2im", TORCH_FN(col2im));
}

}  // namespace
}  // namespace torch_axon

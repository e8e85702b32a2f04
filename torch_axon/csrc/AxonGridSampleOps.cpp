// grid_sampler_2d and grid_sampler_3d (F.grid_sample) with their backward, on libaxon's grid sampling kernel
// (libaxon/include/axon/grid_sample.h).
//
// PyTorch's own checks run first (GridSamplerUtils.h), so errors read as on CPU. Inputs are made contiguous; the
// backward returns grad_grid always and grad_input when asked (output_mask[0]), as PyTorch CPU does; a half-type
// grad_input accumulates in a float32 temporary. Other dtypes go to the host fallback, which reports CPU's error.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/GridSamplerUtils.h>
#include <ATen/native/Resize.h>
#include <axon/grid_sample.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <tuple>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool floats(const at::Tensor& a, const at::Tensor& b) {
  for (const at::Tensor* t : {&a, &b}) {
    const auto s = t->scalar_type();
    if (s != at::kFloat && s != at::kDouble && s != at::kHalf && s != at::kBFloat16) return false;
  }
  return true;
}

bool is_half(const at::Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

axon_grid_sample_params_t params(const at::Tensor& input, const at::Tensor& grid, int64_t interp, int64_t padding,
                                 bool align_corners) {
  at::native::check_grid_sampler_common(input, grid);
  if (input.dim() == 4) at::native::check_grid_sampler_2d(input, grid);
  else at::native::check_grid_sampler_3d(input, grid, interp);
  TORCH_CHECK(interp >= 0 && interp < AXON_GRID_INTERP_COUNT, "grid_sampler(): unknown interpolation mode ", interp);
  TORCH_CHECK(padding >= 0 && padding < AXON_GRID_PADDING_COUNT, "grid_sampler(): unknown padding mode ", padding);
  axon_grid_sample_params_t p{};
  p.nspatial = static_cast<int>(input.dim()) - 2;
  p.interp = static_cast<axon_grid_interp_t>(interp);
  p.padding = static_cast<axon_grid_padding_t>(padding);
  p.align_corners = align_corners;
  return p;
}

const char* name(const at::Tensor& input, bool backward) {
  if (input.dim() == 5) return backward ? "grid_sampler_3d_backward" : "grid_sampler_3d";
  return backward ? "grid_sampler_2d_backward" : "grid_sampler_2d";
}

at::Tensor forward(const at::Tensor& input, const at::Tensor& grid, int64_t interp, int64_t padding,
                   bool align_corners) {
  const axon_grid_sample_params_t p = params(input, grid, interp, padding, align_corners);
  std::vector<int64_t> shape{input.size(0), input.size(1)};
  for (int64_t i = 1; i < grid.dim() - 1; ++i) shape.push_back(grid.size(i));
  at::Tensor out = at::empty(shape, input.options());
  if (out.numel() == 0) return out;
  const at::Tensor x = input.contiguous(), g = grid.contiguous();
  const char* op = name(input, false);
  const axon_tensor_t od = describe(out, op), xd = describe(x, op), gd = describe(g, op);
  AXON_CHECK(axon_kernel_grid_sample(current_stream(input.device().index()), &od, &xd, &gd, &p));
  return out;
}

std::tuple<at::Tensor, at::Tensor> backward(const at::Tensor& grad_output, const at::Tensor& input,
                                            const at::Tensor& grid, int64_t interp, int64_t padding,
                                            bool align_corners, std::array<bool, 2> output_mask) {
  const axon_grid_sample_params_t p = params(input, grid, interp, padding, align_corners);
  const char* op = name(input, true);
  std::vector<int64_t> out_shape{input.size(0), input.size(1)};
  for (int64_t i = 1; i < grid.dim() - 1; ++i) out_shape.push_back(grid.size(i));
  TORCH_CHECK(grad_output.sizes() == c10::IntArrayRef(out_shape), op, ": grad_output of shape ",
              grad_output.sizes(), " does not match the output's shape ", c10::IntArrayRef(out_shape));
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options());
  at::Tensor grad_input = output_mask[0] ? at::empty(input.sizes(), input.options()) : at::Tensor();
  // libaxon adds into grad_input in its dtype: the half types accumulate in float32 instead.
  at::Tensor gi = output_mask[0] && is_half(input) ? at::empty(input.sizes(), input.options().dtype(at::kFloat))
                                                  : grad_input;
  if (grad_grid.numel() == 0 && (!gi.defined() || gi.numel() == 0)) return {grad_input, grad_grid};
  const at::Tensor go = grad_output.contiguous(), x = input.contiguous(), g = grid.contiguous();
  const axon_tensor_t god = describe(go, op), xd = describe(x, op), gd = describe(g, op);
  const axon_tensor_t ggd = describe(grad_grid, op);
  const std::optional<axon_tensor_t> gid = gi.defined() ? std::optional(describe(gi, op)) : std::nullopt;
  AXON_CHECK(axon_kernel_grid_sample_backward(current_stream(input.device().index()), gid ? &*gid : nullptr, &ggd,
                                              &god, &xd, &gd, &p));
  if (gi.defined() && !gi.is_same(grad_input)) grad_input.copy_(gi);
  return {grad_input, grad_grid};
}

template <class Op>
at::Tensor grid_sampler(const at::Tensor& input, const at::Tensor& grid, int64_t interp, int64_t padding,
                        bool align_corners) {
  if (!floats(input, grid)) return fall_back<Op>(input, grid, interp, padding, align_corners);
  return forward(input, grid, interp, padding, align_corners);
}

template <class Op>
std::tuple<at::Tensor, at::Tensor> grid_sampler_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                         const at::Tensor& grid, int64_t interp, int64_t padding,
                                                         bool align_corners, std::array<bool, 2> output_mask) {
  if (!floats(input, grid) || !floats(grad_output, grid))
    return fall_back<Op>(grad_output, input, grid, interp, padding, align_corners, output_mask);
  return backward(grad_output, input, grid, interp, padding, align_corners, output_mask);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler<ATEN_OP(grid_sampler_2d)>));
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler<ATEN_OP(grid_sampler_3d)>));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_backward<ATEN_OP(grid_sampler_2d_backward)>));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_backward<ATEN_OP(grid_sampler_3d_backward)>));
}

}  // namespace
}  // namespace torch_axon

// upsample_nearest1d/2d/3d, _upsample_nearest_exact1d/2d/3d, upsample_linear1d, upsample_bilinear2d,
// upsample_trilinear3d and upsample_bicubic2d, with their backward, on libaxon's upsample kernel
// (libaxon/include/axon/upsample.h); _upsample_bilinear2d_aa and _upsample_bicubic2d_aa (antialias=True) and their
// backward on its antialiased kernels (axon/upsample_aa.h).
//
// All are structured ops: the .out / .grad_input forms are bound, and the functional forms (and the .vec forms
// F.interpolate calls) reach them after PyTorch's meta checks. The same checks run here too (ATen's
// upsample_Nd_common_check) for direct .out calls. PyTorch's scale factors are passed through (a missing or
// non-positive one becomes 0, "use the size ratio", as PyTorch's compute_scales_value does). Inputs are made
// contiguous; a strided out goes through a contiguous temporary; a half-type grad_input accumulates in a float32
// temporary. Dtypes other than the four float types (PyTorch CPU also resizes uint8 images) use the host fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <ATen/native/UpSample.h>
#include <axon/upsample.h>
#include <axon/upsample_aa.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool floats(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts) {
    const auto s = t->scalar_type();
    if (t->defined() && s != at::kFloat && s != at::kDouble && s != at::kHalf && s != at::kBFloat16) return false;
  }
  return true;
}

// Nearest forward also copies uint8 elements (CPU's only integer dtype there).
bool nearest_ok(const at::Tensor& self, const at::Tensor& out) {
  return floats({&self, &out}) || (self.scalar_type() == at::kByte && out.scalar_type() == at::kByte);
}

bool is_half(const at::Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

using Scales = std::array<std::optional<double>, 3>;

// The full output shape [N, C, spatial...] from PyTorch's check of input and output sizes.
template <size_t N>
std::vector<int64_t> output_shape(c10::IntArrayRef input_size, c10::IntArrayRef output_size) {
  if constexpr (N == 1) {
    const auto s = at::native::upsample_1d_common_check(input_size, output_size);
    return {s.begin(), s.end()};
  } else if constexpr (N == 2) {
    const auto s = at::native::upsample_2d_common_check(input_size, output_size);
    return {s.begin(), s.end()};
  } else {
    const auto s = at::native::upsample_3d_common_check(input_size, output_size);
    return {s.begin(), s.end()};
  }
}

template <size_t N>
axon_upsample_params_t params(axon_upsample_mode_t mode, bool align_corners, const Scales& scales) {
  axon_upsample_params_t p{};
  p.nspatial = static_cast<int>(N);
  p.mode = mode;
  p.align_corners = align_corners;
  for (size_t i = 0; i < N; ++i) p.scales[i] = scales[i].has_value() && *scales[i] > 0 ? *scales[i] : 0.0;
  return p;
}

template <size_t N>
at::Tensor& forward(const at::Tensor& self, c10::SymIntArrayRef output_size, axon_upsample_mode_t mode,
                    bool align_corners, const Scales& scales, const char* op, at::Tensor& out) {
  TORCH_CHECK(self.dim() == static_cast<int64_t>(N) + 2, op, ": non-empty ", N + 2,
              "D data tensor expected but got a tensor with sizes ", self.sizes());
  const auto shape = output_shape<N>(self.sizes(), C10_AS_INTARRAYREF_SLOW(output_size));
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  const at::Tensor x = self.contiguous();
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  const axon_tensor_t xd = describe(x, op), od = describe(o, op);
  const axon_upsample_params_t p = params<N>(mode, align_corners, scales);
  AXON_CHECK(axon_kernel_upsample(current_stream(self.device().index()), &od, &xd, &p));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

template <size_t N>
at::Tensor& backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size,
                     axon_upsample_mode_t mode, bool align_corners, const Scales& scales, const char* op,
                     at::Tensor& grad_input) {
  const auto in_shape = C10_AS_INTARRAYREF_SLOW(input_size);
  const auto shape = output_shape<N>(in_shape, C10_AS_INTARRAYREF_SLOW(output_size));
  TORCH_CHECK(grad_output.dim() == static_cast<int64_t>(N) + 2, op, ": Expected grad_output to be a tensor of ",
              N + 2, " dimensions, but got ", grad_output.dim());
  for (int64_t i = 0; i < grad_output.dim(); ++i)
    TORCH_CHECK(grad_output.size(i) == shape[i], op, ": Expected grad_output to have the same shape as output; ",
                "output.size(", i, ") = ", shape[i], " but got grad_output.size(", i, ") = ", grad_output.size(i));
  at::native::resize_output(grad_input, in_shape);
  if (grad_input.numel() == 0) return grad_input;
  const at::Tensor go = grad_output.contiguous();
  // libaxon adds into grad_in in its dtype: half types accumulate in a float32 temporary instead.
  at::Tensor gi = grad_input.is_contiguous() && !is_half(grad_input)
                      ? grad_input
                      : at::empty(grad_input.sizes(),
                                  grad_input.options().dtype(is_half(grad_input) ? at::kFloat
                                                                                 : grad_input.scalar_type()));
  const axon_tensor_t god = describe(go, op), gid = describe(gi, op);
  const axon_upsample_params_t p = params<N>(mode, align_corners, scales);
  AXON_CHECK(axon_kernel_upsample_backward(current_stream(grad_output.device().index()), &gid, &god, &p));
  if (!gi.is_same(grad_input)) grad_input.copy_(gi);
  return grad_input;
}

using OptD = std::optional<double>;
using SymArr = c10::SymIntArrayRef;

// The host fallback calls the op's int (not SymInt) signature.
c10::IntArrayRef ints(SymArr a) { return C10_AS_INTARRAYREF_SLOW(a); }
constexpr axon_upsample_mode_t NEAREST = AXON_UPSAMPLE_NEAREST, EXACT = AXON_UPSAMPLE_NEAREST_EXACT;
constexpr axon_upsample_mode_t LINEAR = AXON_UPSAMPLE_LINEAR, CUBIC = AXON_UPSAMPLE_CUBIC;

// ---- nearest and nearest-exact: (self, output_size, scales...) ----

template <axon_upsample_mode_t M, class Op>
at::Tensor& nearest1d_out(const at::Tensor& self, SymArr os, OptD s, at::Tensor& out) {
  if (!nearest_ok(self, out)) return fall_back<Op>(self, ints(os), s, out);
  return forward<1>(self, os, M, false, {s}, M == NEAREST ? "upsample_nearest1d" : "upsample_nearest_exact1d", out);
}

template <axon_upsample_mode_t M, class Op>
at::Tensor& nearest2d_out(const at::Tensor& self, SymArr os, OptD sh, OptD sw, at::Tensor& out) {
  if (!nearest_ok(self, out)) return fall_back<Op>(self, ints(os), sh, sw, out);
  return forward<2>(self, os, M, false, {sh, sw}, M == NEAREST ? "upsample_nearest2d" : "upsample_nearest_exact2d",
                    out);
}

template <axon_upsample_mode_t M, class Op>
at::Tensor& nearest3d_out(const at::Tensor& self, SymArr os, OptD sd, OptD sh, OptD sw, at::Tensor& out) {
  if (!nearest_ok(self, out)) return fall_back<Op>(self, ints(os), sd, sh, sw, out);
  return forward<3>(self, os, M, false, {sd, sh, sw},
                    M == NEAREST ? "upsample_nearest3d" : "upsample_nearest_exact3d", out);
}

template <axon_upsample_mode_t M, class Op>
at::Tensor& nearest1d_backward(const at::Tensor& g, SymArr os, SymArr is, OptD s, at::Tensor& gi) {
  if (!floats({&g, &gi})) return fall_back<Op>(g, ints(os), ints(is), s, gi);
  return backward<1>(g, os, is, M, false, {s},
                     M == NEAREST ? "upsample_nearest1d_backward" : "upsample_nearest_exact1d_backward", gi);
}

template <axon_upsample_mode_t M, class Op>
at::Tensor& nearest2d_backward(const at::Tensor& g, SymArr os, SymArr is, OptD sh, OptD sw, at::Tensor& gi) {
  if (!floats({&g, &gi})) return fall_back<Op>(g, ints(os), ints(is), sh, sw, gi);
  return backward<2>(g, os, is, M, false, {sh, sw},
                     M == NEAREST ? "upsample_nearest2d_backward" : "upsample_nearest_exact2d_backward", gi);
}

template <axon_upsample_mode_t M, class Op>
at::Tensor& nearest3d_backward(const at::Tensor& g, SymArr os, SymArr is, OptD sd, OptD sh, OptD sw,
                               at::Tensor& gi) {
  if (!floats({&g, &gi})) return fall_back<Op>(g, ints(os), ints(is), sd, sh, sw, gi);
  return backward<3>(g, os, is, M, false, {sd, sh, sw},
                     M == NEAREST ? "upsample_nearest3d_backward" : "upsample_nearest_exact3d_backward", gi);
}

// ---- linear, bilinear, bicubic, trilinear: (self, output_size, align_corners, scales...) ----

at::Tensor& linear1d_out(const at::Tensor& self, SymArr os, bool ac, OptD s, at::Tensor& out) {
  if (!floats({&self, &out})) return fall_back<ATEN_OP2(upsample_linear1d, out)>(self, ints(os), ac, s, out);
  return forward<1>(self, os, LINEAR, ac, {s}, "upsample_linear1d", out);
}

template <axon_upsample_mode_t M, class Op>
at::Tensor& interp2d_out(const at::Tensor& self, SymArr os, bool ac, OptD sh, OptD sw, at::Tensor& out) {
  if (!floats({&self, &out})) return fall_back<Op>(self, ints(os), ac, sh, sw, out);
  return forward<2>(self, os, M, ac, {sh, sw}, M == LINEAR ? "upsample_bilinear2d" : "upsample_bicubic2d", out);
}

at::Tensor& trilinear3d_out(const at::Tensor& self, SymArr os, bool ac, OptD sd, OptD sh, OptD sw, at::Tensor& out) {
  if (!floats({&self, &out}))
    return fall_back<ATEN_OP2(upsample_trilinear3d, out)>(self, ints(os), ac, sd, sh, sw, out);
  return forward<3>(self, os, LINEAR, ac, {sd, sh, sw}, "upsample_trilinear3d", out);
}

at::Tensor& linear1d_backward(const at::Tensor& g, SymArr os, SymArr is, bool ac, OptD s, at::Tensor& gi) {
  if (!floats({&g, &gi}))
    return fall_back<ATEN_OP2(upsample_linear1d_backward, grad_input)>(g, ints(os), ints(is), ac, s, gi);
  return backward<1>(g, os, is, LINEAR, ac, {s}, "upsample_linear1d_backward", gi);
}

template <axon_upsample_mode_t M, class Op>
at::Tensor& interp2d_backward(const at::Tensor& g, SymArr os, SymArr is, bool ac, OptD sh, OptD sw, at::Tensor& gi) {
  if (!floats({&g, &gi})) return fall_back<Op>(g, ints(os), ints(is), ac, sh, sw, gi);
  return backward<2>(g, os, is, M, ac, {sh, sw},
                     M == LINEAR ? "upsample_bilinear2d_backward" : "upsample_bicubic2d_backward", gi);
}

at::Tensor& trilinear3d_backward(const at::Tensor& g, SymArr os, SymArr is, bool ac, OptD sd, OptD sh, OptD sw,
                                 at::Tensor& gi) {
  if (!floats({&g, &gi}))
    return fall_back<ATEN_OP2(upsample_trilinear3d_backward, grad_input)>(g, ints(os), ints(is), ac, sd, sh, sw, gi);
  return backward<3>(g, os, is, LINEAR, ac, {sd, sh, sw}, "upsample_trilinear3d_backward", gi);
}

// ---- antialiased bilinear and bicubic (axon/upsample_aa.h) ----
//
// float32 and float64 (CPU's float types here); uint8 images, and what CPU refuses, go to the host. The forward runs
// PyTorch's separable passes: W into a [N, C, IH, OW] temporary, then H (one pass when only one of them changes).
// A window libaxon does not take (a downscale by more than about 500) also goes to the host.

bool aa_floats(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && (a.scalar_type() == at::kFloat || a.scalar_type() == at::kDouble);
}

axon_upsample_aa_params_t aa_params(axon_aa_filter_t filter, bool align_corners, OptD sh, OptD sw) {
  axon_upsample_aa_params_t p{};
  p.filter = filter;
  p.align_corners = align_corners;
  p.scales[0] = sh.has_value() && *sh > 0 ? *sh : 0.0;
  p.scales[1] = sw.has_value() && *sw > 0 ? *sw : 0.0;
  return p;
}

// False (nothing enqueued) when libaxon declines the window; other errors raise.
bool aa_pass(const at::Tensor& out, const at::Tensor& in, const axon_upsample_aa_params_t& p, const char* op) {
  const axon_tensor_t od = describe(out, op), id = describe(in, op);
  const axon_status_t st = axon_kernel_upsample_aa_pass(current_stream(in.device().index()), &od, &id, &p);
  if (st == AXON_ERROR_UNSUPPORTED) return false;
  AXON_CHECK(st);
  return true;
}

template <axon_aa_filter_t F, class Op>
at::Tensor& aa_out(const at::Tensor& self, SymArr os, bool ac, OptD sh, OptD sw, at::Tensor& out) {
  const char* op = F == AXON_AA_TRIANGLE ? "_upsample_bilinear2d_aa" : "_upsample_bicubic2d_aa";
  if (!aa_floats(self, out)) return fall_back<Op>(self, ints(os), ac, sh, sw, out);
  TORCH_CHECK(self.dim() == 4, op, ": non-empty 4D data tensor expected but got a tensor with sizes ", self.sizes());
  const auto shape = output_shape<2>(self.sizes(), C10_AS_INTARRAYREF_SLOW(os));
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  const at::Tensor x = self.contiguous();
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  const axon_upsample_aa_params_t p = aa_params(F, ac, sh, sw);
  bool done;
  if (shape[2] != x.size(2) && shape[3] != x.size(3)) {
    const at::Tensor tmp = at::empty({x.size(0), x.size(1), x.size(2), shape[3]}, x.options());
    done = aa_pass(tmp, x, p, op) && aa_pass(o, tmp, p, op);
  } else {
    done = aa_pass(o, x, p, op);
  }
  if (!done) return fall_back<Op>(self, ints(os), ac, sh, sw, out);
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

template <axon_aa_filter_t F, class Op>
at::Tensor& aa_backward(const at::Tensor& g, SymArr os, SymArr is, bool ac, OptD sh, OptD sw, at::Tensor& gi) {
  const char* op = F == AXON_AA_TRIANGLE ? "_upsample_bilinear2d_aa_backward" : "_upsample_bicubic2d_aa_backward";
  if (!aa_floats(g, gi)) return fall_back<Op>(g, ints(os), ints(is), ac, sh, sw, gi);
  const auto in_shape = C10_AS_INTARRAYREF_SLOW(is);
  const auto shape = output_shape<2>(in_shape, C10_AS_INTARRAYREF_SLOW(os));
  TORCH_CHECK(g.dim() == 4, op, ": Expected grad_output to be a tensor of 4 dimensions, but got ", g.dim());
  for (int64_t i = 0; i < 4; ++i)
    TORCH_CHECK(g.size(i) == shape[i], op, ": Expected grad_output to have the same shape as output; output.size(", i,
                ") = ", shape[i], " but got grad_output.size(", i, ") = ", g.size(i));
  at::native::resize_output(gi, in_shape);
  if (gi.numel() == 0) return gi;
  const at::Tensor go = g.contiguous();
  at::Tensor o = gi.is_contiguous() ? gi : at::empty(gi.sizes(), gi.options());
  const axon_upsample_aa_params_t p = aa_params(F, ac, sh, sw);
  const axon_tensor_t od = describe(o, op), gd = describe(go, op);
  const axon_status_t st = axon_kernel_upsample_aa_backward(current_stream(g.device().index()), &od, &gd, &p);
  if (st == AXON_ERROR_UNSUPPORTED) return fall_back<Op>(g, ints(os), ints(is), ac, sh, sw, gi);
  AXON_CHECK(st);
  if (!o.is_same(gi)) gi.copy_(o);
  return gi;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_upsample_bilinear2d_aa.out",
         TORCH_FN((aa_out<AXON_AA_TRIANGLE, ATEN_OP2(_upsample_bilinear2d_aa, out)>)));
  m.impl("_upsample_bicubic2d_aa.out", TORCH_FN((aa_out<AXON_AA_CUBIC, ATEN_OP2(_upsample_bicubic2d_aa, out)>)));
  m.impl("_upsample_bilinear2d_aa_backward.grad_input",
         TORCH_FN((aa_backward<AXON_AA_TRIANGLE, ATEN_OP2(_upsample_bilinear2d_aa_backward, grad_input)>)));
  m.impl("_upsample_bicubic2d_aa_backward.grad_input",
         TORCH_FN((aa_backward<AXON_AA_CUBIC, ATEN_OP2(_upsample_bicubic2d_aa_backward, grad_input)>)));
  m.impl("upsample_nearest1d.out", TORCH_FN((nearest1d_out<NEAREST, ATEN_OP2(upsample_nearest1d, out)>)));
  m.impl("upsample_nearest2d.out", TORCH_FN((nearest2d_out<NEAREST, ATEN_OP2(upsample_nearest2d, out)>)));
  m.impl("upsample_nearest3d.out", TORCH_FN((nearest3d_out<NEAREST, ATEN_OP2(upsample_nearest3d, out)>)));
  m.impl("_upsample_nearest_exact1d.out", TORCH_FN((nearest1d_out<EXACT, ATEN_OP2(_upsample_nearest_exact1d, out)>)));
  m.impl("_upsample_nearest_exact2d.out", TORCH_FN((nearest2d_out<EXACT, ATEN_OP2(_upsample_nearest_exact2d, out)>)));
  m.impl("_upsample_nearest_exact3d.out", TORCH_FN((nearest3d_out<EXACT, ATEN_OP2(_upsample_nearest_exact3d, out)>)));
  m.impl("upsample_nearest1d_backward.grad_input",
         TORCH_FN((nearest1d_backward<NEAREST, ATEN_OP2(upsample_nearest1d_backward, grad_input)>)));
  m.impl("upsample_nearest2d_backward.grad_input",
         TORCH_FN((nearest2d_backward<NEAREST, ATEN_OP2(upsample_nearest2d_backward, grad_input)>)));
  m.impl("upsample_nearest3d_backward.grad_input",
         TORCH_FN((nearest3d_backward<NEAREST, ATEN_OP2(upsample_nearest3d_backward, grad_input)>)));
  m.impl("_upsample_nearest_exact1d_backward.grad_input",
         TORCH_FN((nearest1d_backward<EXACT, ATEN_OP2(_upsample_nearest_exact1d_backward, grad_input)>)));
  m.impl("_upsample_nearest_exact2d_backward.grad_input",
         TORCH_FN((nearest2d_backward<EXACT, ATEN_OP2(_upsample_nearest_exact2d_backward, grad_input)>)));
  m.impl("_upsample_nearest_exact3d_backward.grad_input",
         TORCH_FN((nearest3d_backward<EXACT, ATEN_OP2(_upsample_nearest_exact3d_backward, grad_input)>)));
  m.impl("upsample_linear1d.out", TORCH_FN(linear1d_out));
  m.impl("upsample_bilinear2d.out", TORCH_FN((interp2d_out<LINEAR, ATEN_OP2(upsample_bilinear2d, out)>)));
  m.impl("upsample_bicubic2d.out", TORCH_FN((interp2d_out<CUBIC, ATEN_OP2(upsample_bicubic2d, out)>)));
  m.impl("upsample_trilinear3d.out", TORCH_FN(trilinear3d_out));
  m.impl("upsample_linear1d_backward.grad_input", TORCH_FN(linear1d_backward));
  m.impl("upsample_bilinear2d_backward.grad_input",
         TORCH_FN((interp2d_backward<LINEAR, ATEN_OP2(upsample_bilinear2d_backward, grad_input)>)));
  m.impl("upsample_bicubic2d_backward.grad_input",
         TORCH_FN((interp2d_backward<CUBIC, ATEN_OP2(upsample_bicubic2d_backward, grad_input)>)));
  m.impl("upsample_trilinear3d_backward.grad_input", TORCH_FN(trilinear3d_backward));
}

}  // namespace
}  // namespace torch_axon

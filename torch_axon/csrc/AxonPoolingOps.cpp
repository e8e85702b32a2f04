// Max, average, adaptive average and adaptive max pooling (2d and 3d ATen ops; the 1d functions reach the 2d ops),
// and max_unpool2d/3d, on libaxon's pooling kernels (libaxon/include/axon/pooling.h).
//
// Argument checks and output shapes are PyTorch's own (ATen/native/Pool.h: pooling_output_shape and the
// pool2d/pool3d shape checks), so bad input gets PyTorch's error message. The structured ops (max_pool2d_with_indices,
// avg_pool2d/3d, adaptive_max_pool2d/3d and their backward) are bound in their .out form, which their functional
// forms call after PyTorch's meta checks; max_pool3d_with_indices and _adaptive_avg_pool2d/3d are not structured and
// are bound in both forms. Inputs are made contiguous; results go through a contiguous temporary when an out tensor
// is strided. Backward passes of half-type tensors accumulate into a float32 temporary (libaxon adds into grad_in in
// its dtype). Dtypes other than the four float types (PyTorch CPU also pools integers) and non-int64 indices run
// through the host fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>
#include <axon/pooling.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <tuple>
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

// Max pooling also takes integer tensors, self and out of one dtype (libaxon compares them in int64).
bool max_poolable(const at::Tensor& self, const at::Tensor& out) {
  const auto s = self.scalar_type();
  const bool integer = s == at::kChar || s == at::kShort || s == at::kInt || s == at::kLong || s == at::kByte;
  return floats({&self, &out}) || (integer && out.scalar_type() == s);
}

// An N-d pool's input is unbatched (C, spatial...) or batched (N, C, spatial...).
template <size_t N>
bool rank_ok(const at::Tensor& t) {
  return t.dim() == static_cast<int64_t>(N) + 1 || t.dim() == static_cast<int64_t>(N) + 2;
}

bool is_half(const at::Tensor& t) { return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16; }

// A window argument of N ints given as 1 or N values (empty = fallback, for stride's "same as kernel").
template <size_t N>
std::array<int64_t, N> expand(c10::IntArrayRef v, const char* op, const char* what,
                              const std::array<int64_t, N>& fallback) {
  TORCH_CHECK(v.size() == 1 || v.size() == N || (v.empty() && what[0] == 's'), op, ": ", what,
              " must either be a single int, or a tuple of ", N == 2 ? "two" : "three", " ints");
  std::array<int64_t, N> r{};
  for (size_t i = 0; i < N; ++i) r[i] = v.empty() ? fallback[i] : v.size() == 1 ? v[0] : v[i];
  return r;
}

// libaxon's window parameters for an N-d pool, checked by PyTorch's own shape checks, and the output shape.
template <size_t N>
struct Pool {
  axon_pool_params_t params{};
  std::vector<int64_t> out_shape;
};

template <size_t N>
Pool<N> pool_geometry(const at::Tensor& self, c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                      c10::IntArrayRef padding, c10::IntArrayRef dilation, bool ceil_mode, const char* op) {
  const auto k = expand<N>(kernel_size, op, "kernel_size", {});
  const auto s = expand<N>(stride, op, "stride", k);
  const auto p = expand<N>(padding, op, "padding", {});
  const auto d = dilation.empty() ? std::array<int64_t, N>{} : expand<N>(dilation, op, "dilation", {});
  std::array<int64_t, N> dil = d;
  if (dilation.empty()) dil.fill(1);
  TORCH_CHECK(rank_ok<N>(self), op, ": non-empty ", N + 1, "D or ", N + 2,
              "D (batch mode) tensor expected for input, but got ", self.sizes());
  Pool<N> r;
  r.params.nspatial = static_cast<int>(N);
  r.out_shape.assign(self.sizes().begin(), self.sizes().end());
  std::array<int64_t, N> in{}, out{};
  for (size_t i = 0; i < N; ++i) {
    in[i] = self.size(self.dim() - N + i);
    out[i] = at::native::pooling_output_shape<int64_t>(in[i], k[i], p[i], s[i], dil[i], ceil_mode);
    r.out_shape[self.dim() - N + i] = out[i];
    r.params.kernel[i] = k[i], r.params.stride[i] = s[i], r.params.padding[i] = p[i], r.params.dilation[i] = dil[i];
  }
  const int64_t planes = self.size(self.dim() - N - 1);
  if constexpr (N == 2) {
    at::native::pool2d_shape_check(self, k[0], k[1], s[0], s[1], p[0], p[1], dil[0], dil[1], planes, in[0], in[1],
                                   out[0], out[1], at::MemoryFormat::Contiguous);
  } else {
    at::native::pool3d_shape_check(self, planes, k[0], k[1], k[2], s[0], s[1], s[2], p[0], p[1], p[2], dil[0],
                                   dil[1], dil[2], in[0], in[1], in[2], out[0], out[1], out[2], op, true);
  }
  return r;
}

// Output shape of an adaptive N-d pool, with PyTorch's checks.
template <size_t N>
std::vector<int64_t> adaptive_shape(const at::Tensor& self, c10::IntArrayRef output_size, const char* op) {
  TORCH_CHECK(output_size.size() == N, op, ": output_size must be ", N);
  TORCH_CHECK(rank_ok<N>(self), op, "(): Expected ", N + 1, "D or ", N + 2,
              "D tensor, but got ", self.sizes());
  for (int64_t i = 1; i < self.dim(); ++i)
    TORCH_CHECK(self.size(i) > 0, op, "(): Expected input to have non-zero size for non-batch dimensions, but input "
                "has sizes ", self.sizes(), " with dimension ", i, " being empty");
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  for (size_t i = 0; i < N; ++i) {
    TORCH_CHECK(output_size[i] >= 0, op, ": elements of output_size must be greater than or equal to 0 but received ",
                output_size);
    shape[self.dim() - N + i] = output_size[i];
  }
  return shape;
}

// Runs launch(o, i) on contiguous tensors of out's and indices' (resized) shapes, copying back strided ones.
template <class Launch>
void into_contiguous(at::Tensor& out, at::Tensor& indices, Launch launch,
                     at::MemoryFormat fmt = at::MemoryFormat::Contiguous) {
  at::Tensor o = out.is_contiguous(fmt) ? out : at::empty(out.sizes(), out.options().memory_format(fmt));
  at::Tensor i =
      indices.is_contiguous(fmt) ? indices : at::empty(indices.sizes(), indices.options().memory_format(fmt));
  launch(o, i);
  if (!o.is_same(out)) out.copy_(o);
  if (!i.is_same(indices)) indices.copy_(i);
}

// Runs launch(g) on a contiguous gradient of grad_input's (resized) shape: float32 for the half types, so that the
// scatter accumulates in float32, then copies back.
template <class Launch>
void accumulate_into(at::Tensor& grad_input, Launch launch, at::MemoryFormat fmt = at::MemoryFormat::Contiguous) {
  if (grad_input.is_contiguous(fmt) && !is_half(grad_input)) {
    launch(grad_input);
    return;
  }
  const auto dtype = is_half(grad_input) ? at::kFloat : grad_input.scalar_type();
  at::Tensor g = at::empty(grad_input.sizes(), grad_input.options().dtype(dtype).memory_format(fmt));
  launch(g);
  grad_input.copy_(g);
}

void check_grad_shape(const at::Tensor& t, const std::vector<int64_t>& shape, const char* op, const char* what) {
  TORCH_CHECK(t.sizes().equals(shape), op, ": expected ", what, " of shape ", c10::IntArrayRef(shape), ", got ",
              t.sizes());
}

// ---- max pooling ----

// The layout max pooling runs in: libaxon takes float32 batched [N, C, spatial...] tensors channels-last as they
// are (PyTorch CPU keeps that layout), everything else channels-first.
at::MemoryFormat max_pool_format(const at::Tensor& self, int nspatial) {
  if (self.scalar_type() != at::kFloat || self.dim() != nspatial + 2) return at::MemoryFormat::Contiguous;
  return self.suggest_memory_format();
}

template <size_t N, class Op>
std::tuple<at::Tensor&, at::Tensor&> max_pool_out(const at::Tensor& self, c10::IntArrayRef kernel_size,
                                                   c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                   c10::IntArrayRef dilation, bool ceil_mode, at::Tensor& out,
                                                   at::Tensor& indices) {
  if (!max_poolable(self, out) || indices.scalar_type() != at::kLong)
    return fall_back<Op>(self, kernel_size, stride, padding, dilation, ceil_mode, out, indices);
  const char* op = N == 2 ? "max_pool2d" : "max_pool3d";
  const Pool<N> g = pool_geometry<N>(self, kernel_size, stride, padding, dilation, ceil_mode, op);
  at::native::resize_output(out, g.out_shape);
  at::native::resize_output(indices, g.out_shape);
  if (N == 3) {  // not structured: restrided to the input's layout here, as CPU's max_pool3d does
    out.resize_(g.out_shape, self.suggest_memory_format());
    indices.resize_(g.out_shape, self.suggest_memory_format());
  }
  if (out.numel() == 0) return {out, indices};
  const auto fmt = out.scalar_type() == at::kFloat ? max_pool_format(self, N) : at::MemoryFormat::Contiguous;
  const at::Tensor x = self.contiguous(fmt);
  into_contiguous(out, indices, [&](const at::Tensor& o, const at::Tensor& i) {
    const axon_tensor_t xd = describe(x, op), od = describe(o, op), id = describe(i, op);
    AXON_CHECK(axon_kernel_max_pool(current_stream(self.device().index()), &od, &id, &xd, &g.params));
  }, fmt);
  return {out, indices};
}

std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(const at::Tensor& self, c10::IntArrayRef kernel_size,
                                                           c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                           c10::IntArrayRef dilation, bool ceil_mode) {
  if (!max_poolable(self, self))
    return fall_back<ATEN_OP(max_pool3d_with_indices)>(self, kernel_size, stride, padding, dilation, ceil_mode);
  at::Tensor out = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(at::kLong));
  max_pool_out<3, ATEN_OP2(max_pool3d_with_indices, out)>(self, kernel_size, stride, padding, dilation, ceil_mode,
                                                          out, indices);
  return {out, indices};
}

// The backward of max and adaptive max pooling: a scatter by the forward's indices (shape `out_shape`).
at::Tensor& index_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                           const std::vector<int64_t>& out_shape, int nspatial, const char* op,
                           at::Tensor& grad_input) {
  check_grad_shape(grad_output, out_shape, op, "grad_output");
  check_grad_shape(indices, out_shape, op, "indices");
  at::native::resize_output(grad_input, self.sizes());
  if (grad_input.numel() == 0) return grad_input;
  const auto fmt = grad_output.scalar_type() == at::kFloat && grad_input.scalar_type() == at::kFloat
                       ? max_pool_format(self, nspatial)
                       : at::MemoryFormat::Contiguous;
  const at::Tensor go = grad_output.contiguous(fmt), ix = indices.contiguous(fmt);
  accumulate_into(grad_input, [&](const at::Tensor& gi) {
    const axon_tensor_t gid = describe(gi, op), god = describe(go, op), ixd = describe(ix, op);
    AXON_CHECK(axon_kernel_max_pool_backward(current_stream(self.device().index()), &gid, &god, &ixd, nspatial));
  }, fmt);
  return grad_input;
}

template <size_t N, class Op>
at::Tensor& max_pool_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  c10::IntArrayRef kernel_size, c10::IntArrayRef stride, c10::IntArrayRef padding,
                                  c10::IntArrayRef dilation, bool ceil_mode, const at::Tensor& indices,
                                  at::Tensor& grad_input) {
  if (!floats({&grad_output, &self, &grad_input}) || indices.scalar_type() != at::kLong)
    return fall_back<Op>(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices, grad_input);
  const char* op = N == 2 ? "max_pool2d_with_indices_backward" : "max_pool3d_with_indices_backward";
  const Pool<N> g = pool_geometry<N>(self, kernel_size, stride, padding, dilation, ceil_mode, op);
  return index_backward(grad_output, self, indices, g.out_shape, static_cast<int>(N), op, grad_input);
}

at::Tensor max_pool3d_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                                            c10::IntArrayRef padding, c10::IntArrayRef dilation, bool ceil_mode,
                                            const at::Tensor& indices) {
  if (!floats({&grad_output, &self}) || indices.scalar_type() != at::kLong)
    return fall_back<ATEN_OP(max_pool3d_with_indices_backward)>(grad_output, self, kernel_size, stride, padding,
                                                                dilation, ceil_mode, indices);
  at::Tensor grad_input = at::empty({0}, self.options());
  return max_pool_backward_out<3, ATEN_OP2(max_pool3d_with_indices_backward, grad_input)>(
      grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices, grad_input);
}

// ---- fractional max pooling ----
//
// float32 and float64 on libaxon's kernel, the windows from the random samples as CPU places them; the backward is
// max pooling's scatter by the indices. The half types (CPU computes their window starts in the half type) and
// arguments CPU refuses go to the host, with its errors.

template <size_t N, class Op>
std::tuple<at::Tensor&, at::Tensor&> fractional_out(const at::Tensor& self, c10::IntArrayRef kernel_size,
                                                    c10::IntArrayRef output_size, const at::Tensor& samples,
                                                    at::Tensor& out, at::Tensor& indices) {
  const int64_t nd = self.dim(), n = static_cast<int64_t>(N);
  const c10::ScalarType t = self.scalar_type();
  bool ok = floats({&self}) && out.scalar_type() == t && samples.scalar_type() == t &&
            indices.scalar_type() == at::kLong && (nd == n + 1 || nd == n + 2) && self.numel() > 0 &&
            kernel_size.size() == N && output_size.size() == N && samples.dim() == 3 && samples.size(2) == n &&
            samples.device() == self.device() && out.device() == self.device() && indices.device() == self.device();
  for (size_t i = 0; ok && i < N; ++i) {
    const int64_t in = self.size(nd - n + static_cast<int64_t>(i));
    ok = kernel_size[i] >= 1 && output_size[i] >= 1 && output_size[i] + kernel_size[i] - 1 <= in &&
         output_size[i] <= 2048;
  }
  ok = ok && samples.numel() == self.numel() / [&] {
    int64_t sp = 1;
    for (int64_t d = nd - n; d < nd; ++d) sp *= self.size(d);
    return sp;
  }() * n;
  if (!ok) return fall_back<Op>(self, kernel_size, output_size, samples, out, indices);
  const char* op = N == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d";
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - n);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  at::native::resize_output(out, shape);
  at::native::resize_output(indices, shape);
  const at::Tensor x = self.contiguous(), u = samples.contiguous();
  into_contiguous(out, indices, [&](const at::Tensor& o, const at::Tensor& i) {
    const axon_tensor_t xd = describe(x, op), od = describe(o, op), id = describe(i, op), ud = describe(u, op);
    AXON_CHECK(axon_kernel_fractional_max_pool(current_stream(self.device().index()), &od, &id, &xd, &ud,
                                               kernel_size.data(), static_cast<int>(N)));
  }, at::MemoryFormat::Contiguous);
  return {out, indices};
}

template <size_t N, class Op>
at::Tensor& fractional_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    c10::IntArrayRef kernel_size, c10::IntArrayRef output_size,
                                    const at::Tensor& indices, at::Tensor& grad_input) {
  const int64_t nd = self.dim(), n = static_cast<int64_t>(N);
  if (!floats({&grad_output, &self, &grad_input}) || indices.scalar_type() != at::kLong || output_size.size() != N ||
      (nd != n + 1 && nd != n + 2))
    return fall_back<Op>(grad_output, self, kernel_size, output_size, indices, grad_input);
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - n);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  return index_backward(grad_output, self, indices, shape, static_cast<int>(N),
                        N == 2 ? "fractional_max_pool2d_backward" : "fractional_max_pool3d_backward", grad_input);
}

// fractional_max_pool3d_backward's functional form is not structured: bound too.
at::Tensor fractional3d_backward(const at::Tensor& grad_output, const at::Tensor& self, c10::IntArrayRef kernel_size,
                                 c10::IntArrayRef output_size, const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return fractional_backward_out<3, ATEN_OP2(fractional_max_pool3d_backward, grad_input)>(
      grad_output, self, kernel_size, output_size, indices, grad_input);
}

// ---- average pooling ----

template <size_t N>
Pool<N> avg_geometry(const at::Tensor& self, c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                     c10::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                     std::optional<int64_t> divisor_override, const char* op) {
  TORCH_CHECK(!divisor_override.has_value() || *divisor_override != 0, "divisor must be not zero");
  Pool<N> g = pool_geometry<N>(self, kernel_size, stride, padding, {}, ceil_mode, op);
  g.params.count_include_pad = count_include_pad;
  g.params.divisor_override = divisor_override.value_or(0);
  return g;
}

template <size_t N, class Op>
at::Tensor& avg_pool_out(const at::Tensor& self, c10::IntArrayRef kernel_size, c10::IntArrayRef stride,
                         c10::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor_override, at::Tensor& out) {
  // int64 too (CPU's one integer dtype here): libaxon sums in int64 and truncates the division, as CPU does
  const bool longs = self.scalar_type() == at::kLong && out.scalar_type() == at::kLong;
  if (!floats({&self, &out}) && !longs)
    return fall_back<Op>(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, out);
  const char* op = N == 2 ? "avg_pool2d" : "avg_pool3d";
  const Pool<N> g =
      avg_geometry<N>(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, op);
  at::native::resize_output(out, g.out_shape);
  if (out.numel() == 0) return out;
  const at::Tensor x = self.contiguous();
  at::Tensor o = out.is_contiguous() ? out : at::empty(out.sizes(), out.options());
  const axon_tensor_t xd = describe(x, op), od = describe(o, op);
  AXON_CHECK(axon_kernel_avg_pool(current_stream(self.device().index()), &od, &xd, &g.params));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

template <size_t N, class Op>
at::Tensor& avg_pool_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                  c10::IntArrayRef kernel_size, c10::IntArrayRef stride, c10::IntArrayRef padding,
                                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override,
                                  at::Tensor& grad_input) {
  if (!floats({&grad_output, &self, &grad_input}))
    return fall_back<Op>(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                         divisor_override, grad_input);
  const char* op = N == 2 ? "avg_pool2d_backward" : "avg_pool3d_backward";
  const Pool<N> g =
      avg_geometry<N>(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, op);
  check_grad_shape(grad_output, g.out_shape, op, "grad_output");
  at::native::resize_output(grad_input, self.sizes());
  if (grad_input.numel() == 0) return grad_input;
  const at::Tensor go = grad_output.contiguous();
  accumulate_into(grad_input, [&](const at::Tensor& gi) {
    const axon_tensor_t gid = describe(gi, op), god = describe(go, op);
    AXON_CHECK(axon_kernel_avg_pool_backward(current_stream(self.device().index()), &gid, &god, &g.params));
  });
  return grad_input;
}

// ---- adaptive pooling ----

template <size_t N, class Op>
at::Tensor adaptive_avg_pool(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  if (!floats({&self})) return fall_back<Op>(self, C10_AS_INTARRAYREF_SLOW(output_size));
  const char* op = N == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
  const auto shape = adaptive_shape<N>(self, C10_AS_INTARRAYREF_SLOW(output_size), op);
  at::Tensor out = at::empty(shape, self.options());
  if (out.numel() == 0) return out;
  const at::Tensor x = self.contiguous();
  const axon_tensor_t xd = describe(x, op), od = describe(out, op);
  AXON_CHECK(axon_kernel_adaptive_avg_pool(current_stream(self.device().index()), &od, &xd, static_cast<int>(N)));
  return out;
}

template <size_t N, class Op>
at::Tensor adaptive_avg_pool_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  if (!floats({&grad_output, &self})) return fall_back<Op>(grad_output, self);
  const char* op = N == 2 ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool3d_backward";
  TORCH_CHECK(grad_output.dim() == self.dim() && grad_output.dim() >= static_cast<int64_t>(N) + 1, op,
              ": grad_output shape ", grad_output.sizes(), " does not match input shape ", self.sizes());
  for (int64_t i = 0; i < self.dim() - static_cast<int64_t>(N); ++i)
    TORCH_CHECK(grad_output.size(i) == self.size(i), op, ": grad_output shape ", grad_output.sizes(),
                " does not match input shape ", self.sizes());
  at::Tensor grad_input = at::empty(self.sizes(), self.options());
  if (grad_input.numel() == 0) return grad_input;
  const at::Tensor go = grad_output.contiguous();
  accumulate_into(grad_input, [&](const at::Tensor& gi) {
    const axon_tensor_t gid = describe(gi, op), god = describe(go, op);
    AXON_CHECK(axon_kernel_adaptive_avg_pool_backward(current_stream(self.device().index()), &gid, &god,
                                                      static_cast<int>(N)));
  });
  return grad_input;
}

template <size_t N, class Op>
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool_out(const at::Tensor& self, c10::IntArrayRef output_size,
                                                           at::Tensor& out, at::Tensor& indices) {
  if (!floats({&self, &out}) || indices.scalar_type() != at::kLong)
    return fall_back<Op>(self, output_size, out, indices);
  const char* op = N == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
  const auto shape = adaptive_shape<N>(self, output_size, op);
  at::native::resize_output(out, shape);
  at::native::resize_output(indices, shape);
  if (out.numel() == 0) return {out, indices};
  const at::Tensor x = self.contiguous();
  into_contiguous(out, indices, [&](const at::Tensor& o, const at::Tensor& i) {
    const axon_tensor_t xd = describe(x, op), od = describe(o, op), id = describe(i, op);
    AXON_CHECK(axon_kernel_adaptive_max_pool(current_stream(self.device().index()), &od, &id, &xd,
                                             static_cast<int>(N)));
  });
  return {out, indices};
}

template <size_t N, class Op>
at::Tensor& adaptive_max_pool_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& indices, at::Tensor& grad_input) {
  if (!floats({&grad_output, &self, &grad_input}) || indices.scalar_type() != at::kLong)
    return fall_back<Op>(grad_output, self, indices, grad_input);
  const char* op = N == 2 ? "adaptive_max_pool2d_backward" : "adaptive_max_pool3d_backward";
  TORCH_CHECK(rank_ok<N>(self), op, ": Expected ", N + 1, "D or ", N + 2,
              "D tensor, but got ", self.sizes());
  const std::vector<int64_t> shape(indices.sizes().begin(), indices.sizes().end());
  TORCH_CHECK(indices.dim() == self.dim() &&
                  indices.sizes().slice(0, self.dim() - N).equals(self.sizes().slice(0, self.dim() - N)),
              op, ": indices shape ", indices.sizes(), " does not match input shape ", self.sizes());
  return index_backward(grad_output, self, indices, shape, static_cast<int>(N), op, grad_input);
}

// ---- max_unpool ----

// max_unpool2d / 3d of the float dtypes: out (self's leading dims, then output_size) is zeroed and each input element
// stored at its index in its plane. Anything PyTorch would refuse on shape grounds, other dtypes and non-int64
// indices go through the host fallback, which raises PyTorch's errors; an index outside the output plane fails at
// the next synchronization with PyTorch's "Found an invalid max index".
template <size_t N>
bool unpool_native(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size) {
  if (!floats({&self}) || indices.scalar_type() != at::kLong || output_size.size() != N || !rank_ok<N>(self) ||
      !self.sizes().equals(indices.sizes()) || self.device() != indices.device())
    return false;
  for (int64_t i = self.dim() == static_cast<int64_t>(N) + 2 ? 1 : 0; i < self.dim(); ++i)
    if (self.size(i) <= 0) return false;
  for (int64_t v : output_size)
    if (v < 0) return false;
  return true;
}

template <size_t N>
at::Tensor& unpool_into(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size,
                        at::Tensor& out) {
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - N);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  at::Tensor o = out.is_contiguous() ? out : at::empty(shape, out.options());
  const at::Tensor in = self.contiguous(), idx = indices.contiguous();
  const axon_tensor_t od = describe(o, "max_unpool"), id = describe(in, "max_unpool"),
                      xd = describe(idx, "max_unpool");
  AXON_CHECK(axon_kernel_max_unpool(current_stream(self.device().index()), &od, &id, &xd, static_cast<int>(N)));
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

at::Tensor& max_unpool2d_out(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size,
                             at::Tensor& out) {
  if (!unpool_native<2>(self, indices, output_size) || out.scalar_type() != self.scalar_type())
    return fall_back<ATEN_OP2(max_unpool2d, out)>(self, indices, output_size, out);
  return unpool_into<2>(self, indices, output_size, out);
}

at::Tensor max_unpool2d(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size) {
  if (!unpool_native<2>(self, indices, output_size))
    return fall_back<ATEN_OP(max_unpool2d)>(self, indices, output_size);
  at::Tensor out = at::empty({0}, self.options());
  return unpool_into<2>(self, indices, output_size, out);
}

// max_unpool3d: stride and padding only enter PyTorch's shape checks, which the fallback makes for what it takes.
at::Tensor& max_unpool3d_out(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size,
                             c10::IntArrayRef stride, c10::IntArrayRef padding, at::Tensor& out) {
  if (!unpool_native<3>(self, indices, output_size) || out.scalar_type() != self.scalar_type() ||
      stride.size() != 3 || padding.size() != 3)
    return fall_back<ATEN_OP2(max_unpool3d, out)>(self, indices, output_size, stride, padding, out);
  return unpool_into<3>(self, indices, output_size, out);
}

at::Tensor max_unpool3d(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size,
                        c10::IntArrayRef stride, c10::IntArrayRef padding) {
  if (!unpool_native<3>(self, indices, output_size) || stride.size() != 3 || padding.size() != 3)
    return fall_back<ATEN_OP(max_unpool3d)>(self, indices, output_size, stride, padding);
  at::Tensor out = at::empty({0}, self.options());
  return unpool_into<3>(self, indices, output_size, out);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_unpool2d", TORCH_FN(max_unpool2d));
  m.impl("max_unpool2d.out", TORCH_FN(max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(max_unpool3d));
  m.impl("max_unpool3d.out", TORCH_FN(max_unpool3d_out));
  m.impl("max_pool2d_with_indices.out", TORCH_FN((max_pool_out<2, ATEN_OP2(max_pool2d_with_indices, out)>)));
  m.impl("max_pool3d_with_indices.out", TORCH_FN((max_pool_out<3, ATEN_OP2(max_pool3d_with_indices, out)>)));
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool3d_with_indices));
  m.impl("max_pool2d_with_indices_backward.grad_input",
         TORCH_FN((max_pool_backward_out<2, ATEN_OP2(max_pool2d_with_indices_backward, grad_input)>)));
  m.impl("max_pool3d_with_indices_backward.grad_input",
         TORCH_FN((max_pool_backward_out<3, ATEN_OP2(max_pool3d_with_indices_backward, grad_input)>)));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool3d_with_indices_backward));
  m.impl("fractional_max_pool2d.output",
         TORCH_FN((fractional_out<2, ATEN_OP2(fractional_max_pool2d, output)>)));
  m.impl("fractional_max_pool3d.output",
         TORCH_FN((fractional_out<3, ATEN_OP2(fractional_max_pool3d, output)>)));
  m.impl("fractional_max_pool2d_backward.grad_input",
         TORCH_FN((fractional_backward_out<2, ATEN_OP2(fractional_max_pool2d_backward, grad_input)>)));
  m.impl("fractional_max_pool3d_backward.grad_input",
         TORCH_FN((fractional_backward_out<3, ATEN_OP2(fractional_max_pool3d_backward, grad_input)>)));
  m.impl("fractional_max_pool3d_backward", TORCH_FN(fractional3d_backward));
  m.impl("avg_pool2d.out", TORCH_FN((avg_pool_out<2, ATEN_OP2(avg_pool2d, out)>)));
  m.impl("avg_pool3d.out", TORCH_FN((avg_pool_out<3, ATEN_OP2(avg_pool3d, out)>)));
  m.impl("avg_pool2d_backward.grad_input",
         TORCH_FN((avg_pool_backward_out<2, ATEN_OP2(avg_pool2d_backward, grad_input)>)));
  m.impl("avg_pool3d_backward.grad_input",
         TORCH_FN((avg_pool_backward_out<3, ATEN_OP2(avg_pool3d_backward, grad_input)>)));
  m.impl("_adaptive_avg_pool2d", TORCH_FN((adaptive_avg_pool<2, ATEN_OP(_adaptive_avg_pool2d)>)));
  m.impl("_adaptive_avg_pool3d", TORCH_FN((adaptive_avg_pool<3, ATEN_OP(_adaptive_avg_pool3d)>)));
  m.impl("_adaptive_avg_pool2d_backward",
         TORCH_FN((adaptive_avg_pool_backward<2, ATEN_OP(_adaptive_avg_pool2d_backward)>)));
  m.impl("_adaptive_avg_pool3d_backward",
         TORCH_FN((adaptive_avg_pool_backward<3, ATEN_OP(_adaptive_avg_pool3d_backward)>)));
  m.impl("adaptive_max_pool2d.out", TORCH_FN((adaptive_max_pool_out<2, ATEN_OP2(adaptive_max_pool2d, out)>)));
  m.impl("adaptive_max_pool3d.out", TORCH_FN((adaptive_max_pool_out<3, ATEN_OP2(adaptive_max_pool3d, out)>)));
  m.impl("adaptive_max_pool2d_backward.grad_input",
         TORCH_FN((adaptive_max_pool_backward_out<2, ATEN_OP2(adaptive_max_pool2d_backward, grad_input)>)));
  m.impl("adaptive_max_pool3d_backward.grad_input",
         TORCH_FN((adaptive_max_pool_backward_out<3, ATEN_OP2(adaptive_max_pool3d_backward, grad_input)>)));
}

}  // namespace
}  // namespace torch_axon

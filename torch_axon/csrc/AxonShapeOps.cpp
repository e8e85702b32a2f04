// Shape ops on libaxon's kernels: tril/triu (axon/shape.h), reflection and replication pads 1d/2d/3d with their
// backward (axon/shape.h), flip and roll (libaxon's copy, which takes negative strides: flip is a copy from a
// descriptor with its flipped dimensions' strides negated, roll a few slice copies), eye, float, complex and
// integer linspace (axon/linspace.h), logspace (pow of linspace), equal, unfold's backward, and channel_shuffle (a view
// and the native copy).
//
// What falls back: more than AXON_MAX_DIMS dimensions, pads of bool (PyTorch's CPU kernels reject it), pad
// backward of integer dtypes and complex32, complex32 linspace and logspace, equal of two dtypes (PyTorch's error).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Operators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/PixelShuffle.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/pixel_shuffle_compositeexplicitautogradnonfunctional_dispatch.h>
#include <ATen/ops/pixel_unshuffle_compositeexplicitautogradnonfunctional_dispatch.h>
#include <axon/kernels.h>
#include <axon/linspace.h>
#include <axon/reduce.h>
#include <axon/shape.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <array>
#include <cmath>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

axon_stream_t stream_of(const at::Tensor& t) { return current_stream(t.device().index()); }

// ---- tril / triu ----

template <bool UPPER>
at::Tensor& triangle_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  const char* name = UPPER ? "triu" : "tril";
  if (self.dim() > AXON_MAX_DIMS || out.device() != self.device()) {
    if (UPPER) return fall_back<ATEN_OP2(triu, out)>(self, diagonal, out);
    return fall_back<ATEN_OP2(tril, out)>(self, diagonal, out);
  }
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), name, ": out dtype ", out.scalar_type(),
              " does not match input dtype ", self.scalar_type());
  at::native::resize_output(out, self.sizes());
  if (out.numel() == 0) return out;
  if (!out.is_same(self)) at::assert_no_partial_overlap(out, self);
  const axon_tensor_t o = describe_bytes(out, name), s = describe_bytes(self, name);
  AXON_CHECK(axon_kernel_triangle(stream_of(self), &o, &s, diagonal, UPPER ? 1 : 0));
  return out;
}

// tril_indices / triu_indices: libaxon counts the positions on the host and writes them on the device.
template <bool UPPER>
at::Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, std::optional<c10::ScalarType> dtype,
                            std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                            std::optional<bool> pin_memory) {
  const char* name = UPPER ? "triu_indices" : "tril_indices";
  TORCH_CHECK(row >= 0, "row must be non-negative, got", row);  // CPU's messages
  TORCH_CHECK(col >= 0, "col must be non-negative, got", col);
  const auto dt = dtype.value_or(at::kLong);
  TORCH_CHECK_NOT_IMPLEMENTED(dt == at::kInt || dt == at::kLong, "\"", name, "\" not implemented for '",
                              c10::toString(dt), "'");
  const int64_t n = axon_triangle_indices_count(row, col, offset, UPPER ? 1 : 0);
  const auto options = at::TensorOptions().dtype(dt).layout(layout).device(device).pinned_memory(pin_memory);
  at::Tensor out = at::empty({2, n}, options);
  if (n == 0) return out;
  const axon_tensor_t o = describe(out, name);
  AXON_CHECK(axon_kernel_triangle_indices(stream_of(out), &o, row, col, offset, UPPER ? 1 : 0));
  return out;
}

// ---- flip / roll: copies ----

// dst = src through libaxon's copy (bytes: same dtype).
void copy_into(const at::Tensor& dst, const axon_tensor_t& src) {
  const axon_tensor_t d = describe_bytes(dst, "flip");
  AXON_CHECK(axon_kernel_copy(stream_of(dst), &d, &src));
}

at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  if (self.dim() > AXON_MAX_DIMS) return fall_back<ATEN_OP(flip)>(self, dims);
  const int64_t nd = self.dim();
  std::vector<bool> flipped(std::max<int64_t>(nd, 1), false);
  for (int64_t d : dims) {
    const int64_t w = at::maybe_wrap_dim(d, nd);
    TORCH_CHECK(!flipped[w], "dims has duplicates, original flip dims size=", dims.size(), ", but unique flip dims "
                "size=", dims.size() - 1);
    flipped[w] = true;
  }
  at::Tensor out = at::empty(self.sizes(), self.options().memory_format(self.suggest_memory_format()));
  if (out.numel() == 0) return out;
  axon_tensor_t s = describe_bytes(self, "flip");
  // A flipped dimension starts at its last element and walks backwards.
  const int64_t es = static_cast<int64_t>(self.element_size());
  for (int64_t d = 0; d < nd; ++d) {
    if (!flipped[d] || s.sizes[d] <= 1) continue;
    s.data = static_cast<char*>(s.data) + (s.sizes[d] - 1) * s.strides[d] * es;
    s.strides[d] = -s.strides[d];
  }
  copy_into(out, s);
  return out;
}

at::Tensor roll_native(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    // Rolled as a flat tensor, in row-major order.
    const at::Tensor flat = self.contiguous().view({-1});
    const int64_t first = 0;
    return roll_native(flat, shifts, at::IntArrayRef(first)).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(), ", dims:",
              dims.size());
  if (self.dim() > AXON_MAX_DIMS) return fall_back<ATEN_OP(roll)>(self, shifts, dims);
  at::Tensor out = at::empty_like(self);
  if (out.numel() == 0) return out;
  // Per rolled dimension two slices: [0, n - s) -> [s, n) and [n - s, n) -> [0, s). Their combinations over all
  // rolled dimensions tile the output; each is one copy.
  const size_t k = dims.size();
  std::vector<int64_t> dim(k), shift(k);
  for (size_t i = 0; i < k; ++i) {
    dim[i] = at::maybe_wrap_dim(dims[i], self.dim());
    const int64_t n = self.size(dim[i]);
    shift[i] = ((shifts[i] % n) + n) % n;
  }
  for (size_t combo = 0; combo < (size_t{1} << k); ++combo) {
    at::Tensor src = self, dst = out;
    bool empty = false;
    for (size_t i = 0; i < k; ++i) {
      const int64_t n = self.size(dim[i]), s = shift[i];
      if (combo >> i & 1) {
        src = src.narrow(dim[i], n - s, s), dst = dst.narrow(dim[i], 0, s);
      } else {
        src = src.narrow(dim[i], 0, n - s), dst = dst.narrow(dim[i], s, n - s);
      }
      empty = empty || src.numel() == 0;
    }
    if (!empty) copy_into(dst, describe_bytes(src, "roll"));
  }
  return out;
}

// ---- reflection / replication pads ----

// Pads before each padded dimension (first padded dimension first) from PyTorch's padding list (last dim first).
struct PadSpec {
  int nsp;
  std::array<int64_t, 3> before{}, after{};
};

PadSpec pad_spec(const at::Tensor& self, at::IntArrayRef padding, int nsp, axon_pad_mode_t mode, const char* name) {
  TORCH_CHECK(static_cast<int64_t>(padding.size()) == 2 * nsp, name, ": padding size is expected to be ", 2 * nsp,
              ", but got: ", padding.size());
  const int64_t nd = self.dim();
  const char* shapes = nsp == 1 ? "2D or 3D" : nsp == 2 ? "3D or 4D" : "4D or 5D";
  bool ok = nd == nsp + 1 || nd == nsp + 2;
  for (int64_t d = 1; ok && d < nd; ++d) ok = self.size(d) != 0;
  TORCH_CHECK(ok, name, ": Expected ", shapes, " (batch mode) tensor with possibly 0 batch size and other non-zero "
              "dimensions for input, but got: ", self.sizes());
  PadSpec p;
  p.nsp = nsp;
  for (int sp = 0; sp < nsp; ++sp) {
    const int64_t d = nd - nsp + sp, n = self.size(d);
    p.before[sp] = padding[2 * (nsp - 1 - sp)];
    p.after[sp] = padding[2 * (nsp - 1 - sp) + 1];
    if (mode == AXON_PAD_REFLECT) {
      TORCH_CHECK(p.before[sp] < n && p.after[sp] < n, name, ": Padding size should be less than the corresponding "
                  "input dimension, but got: padding (", p.before[sp], ", ", p.after[sp], ") at dimension ", d,
                  " of input ", self.sizes());
    }
    TORCH_CHECK(n + p.before[sp] + p.after[sp] >= 1, name, ": input ", self.sizes(), " is too small for padding (",
                p.before[sp], ", ", p.after[sp], ") at dimension ", d, ": the output size would be ",
                n + p.before[sp] + p.after[sp]);
  }
  return p;
}

std::vector<int64_t> padded_shape(const at::Tensor& self, const PadSpec& p) {
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end());
  for (int sp = 0; sp < p.nsp; ++sp) shape[shape.size() - p.nsp + sp] += p.before[sp] + p.after[sp];
  return shape;
}

// Negative padding that crops a whole dimension's worth (pad <= -size) leaves reflect's output positions with no
// source in the input; libaxon's pad kernel refuses them, so those run on the host (PyTorch's result, or its error).
// Replicate clamps every position into the input, there as in PyTorch.
bool crops_past_the_input(axon_pad_mode_t mode, const at::Tensor& self, at::IntArrayRef padding) {
  if (mode != AXON_PAD_REFLECT) return false;
  const int64_t nsp = static_cast<int64_t>(padding.size()) / 2;
  if (self.dim() < nsp) return false;  // pad_spec raises PyTorch's error
  for (int64_t sp = 0; sp < nsp; ++sp) {
    const int64_t n = self.size(self.dim() - 1 - sp);
    if (padding[2 * sp] <= -n || padding[2 * sp + 1] <= -n) return true;
  }
  return false;
}

bool pad_native(const at::Tensor& self, const at::Tensor& other) {
  return self.scalar_type() != at::kBool && other.device() == self.device() && kernels_support(self.scalar_type());
}

template <axon_pad_mode_t MODE, int NSP>
at::Tensor& pad_out_impl(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out, const char* name) {
  const PadSpec p = pad_spec(self, padding, NSP, MODE, name);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), name, ": out dtype ", out.scalar_type(),
              " does not match input dtype ", self.scalar_type());
  at::native::resize_output(out, padded_shape(self, p));
  if (out.numel() == 0) return out;
  const axon_tensor_t o = describe_bytes(out, name), s = describe_bytes(self, name);
  AXON_CHECK(axon_kernel_pad(stream_of(self), MODE, &o, &s, NSP, p.before.data()));
  return out;
}

template <axon_pad_mode_t MODE, int NSP>
at::Tensor& pad_backward_impl(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding,
                              at::Tensor& grad_input, const char* name) {
  const PadSpec p = pad_spec(self, padding, NSP, MODE, name);
  const std::vector<int64_t> shape = padded_shape(self, p);
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(shape), name, ": grad_output has shape ", grad_output.sizes(),
              ", expected ", at::IntArrayRef(shape));
  at::native::resize_output(grad_input, self.sizes());
  if (grad_input.numel() == 0) return grad_input;
  at::assert_no_overlap(grad_input, grad_output);
  // A complex gradient is a real one with a leading dimension of 2 (the parts), which the pads do not touch.
  const auto as_real = [](const at::Tensor& t) { return t.is_complex() ? at::view_as_real(t).movedim(-1, 0) : t; };
  const axon_tensor_t gi = describe(as_real(grad_input), name);
  const axon_tensor_t go = describe(as_real(grad_output.resolve_conj()), name);
  AXON_CHECK(axon_kernel_pad_backward(stream_of(self), MODE, &gi, &go, NSP, p.before.data()));
  return grad_input;
}

bool is_float(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

bool is_complex_float(c10::ScalarType t) { return t == at::kComplexFloat || t == at::kComplexDouble; }

// Pad backward adds gradients: the float dtypes, and complex64/128 as pairs of them.
bool pad_backward_native(c10::ScalarType t) { return is_float(t) || is_complex_float(t); }

// Forward (.out and functional) and backward (.grad_input and functional) of one pad op.
#define AXON_PAD_OPS(op, MODE, NSP)                                                                             \
  at::Tensor& op##_out(const at::Tensor& self, at::IntArrayRef padding, at::Tensor& out) {                      \
    if (!pad_native(self, out) || self.dim() > AXON_MAX_DIMS                                                    \
        || crops_past_the_input(MODE, self, padding))                                                           \
      return fall_back<ATEN_OP2(op, out)>(self, padding, out);                                                  \
    return pad_out_impl<MODE, NSP>(self, padding, out, #op);                                                    \
  }                                                                                                             \
  at::Tensor op##_fn(const at::Tensor& self, at::IntArrayRef padding) {                                         \
    if (!pad_native(self, self) || self.dim() > AXON_MAX_DIMS                                                   \
        || crops_past_the_input(MODE, self, padding))                                                           \
      return fall_back<ATEN_OP(op)>(self, padding);                                                             \
    at::Tensor out = at::empty({0}, self.options());                                                            \
    return pad_out_impl<MODE, NSP>(self, padding, out, #op);                                                    \
  }                                                                                                             \
  at::Tensor& op##_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding, \
                                at::Tensor& grad_input) {                                                       \
    if (!pad_backward_native(self.scalar_type()) || grad_output.scalar_type() != self.scalar_type() ||          \
        grad_input.scalar_type() != self.scalar_type() || grad_output.device() != self.device() ||              \
        crops_past_the_input(MODE, self, padding))                                                              \
      return fall_back<ATEN_OP2(op##_backward, grad_input)>(grad_output, self, padding, grad_input);            \
    return pad_backward_impl<MODE, NSP>(grad_output, self, padding, grad_input, #op "_backward");               \
  }                                                                                                             \
  at::Tensor op##_backward_fn(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef padding) { \
    if (!pad_backward_native(self.scalar_type()) || grad_output.scalar_type() != self.scalar_type() ||          \
        grad_output.device() != self.device() || crops_past_the_input(MODE, self, padding))                     \
      return fall_back<ATEN_OP(op##_backward)>(grad_output, self, padding);                                     \
    at::Tensor grad_input = at::empty({0}, self.options());                                                     \
    return pad_backward_impl<MODE, NSP>(grad_output, self, padding, grad_input, #op "_backward");               \
  }

AXON_PAD_OPS(reflection_pad1d, AXON_PAD_REFLECT, 1)
AXON_PAD_OPS(reflection_pad2d, AXON_PAD_REFLECT, 2)
AXON_PAD_OPS(reflection_pad3d, AXON_PAD_REFLECT, 3)
AXON_PAD_OPS(replication_pad1d, AXON_PAD_REPLICATE, 1)
AXON_PAD_OPS(replication_pad2d, AXON_PAD_REPLICATE, 2)
AXON_PAD_OPS(replication_pad3d, AXON_PAD_REPLICATE, 3)

#undef AXON_PAD_OPS

// ---- eye, linspace, equal ----

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  at::native::resize_output(out, {n, m});
  if (out.numel() == 0) return out;
  out.zero_();
  out.diagonal().fill_(1);
  return out;
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) { return eye_m_out(n, n, out); }

// The ends of an integer sequence as CPU takes them: converted to the dtype first (its overflow check included), then
// worked with in double.
std::array<double, 2> sequence_ends(const at::Scalar& start, const at::Scalar& end, at::ScalarType dt) {
  std::array<double, 2> ends = {start.toDouble(), end.toDouble()};
  if (!is_float(dt)) {
    AT_DISPATCH_INTEGRAL_TYPES(dt, "linspace", [&] {
      ends = {static_cast<double>(start.to<scalar_t>()), static_cast<double>(end.to<scalar_t>())};
    });
  }
  return ends;
}

at::Tensor& linspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  const at::ScalarType dt = out.scalar_type();
  if (!is_float(dt) && !is_complex_float(dt) && !at::isIntegralType(dt, /*includeBool=*/false))
    return fall_back<ATEN_OP2(linspace, out)>(start, end, steps, out);
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  if (is_complex_float(dt)) {
    // start + step * i with a complex step and a real i moves each part on its own: two real sequences, one per part.
    const c10::complex<double> a = start.toComplexDouble(), b = end.toComplexDouble();
    const at::Tensor parts = at::view_as_real(out);
    for (int64_t k = 0; k < 2; ++k) {
      const axon_tensor_t pd = describe(parts.select(1, k), "linspace");
      AXON_CHECK(axon_kernel_linspace(stream_of(out), &pd, k ? a.imag() : a.real(), k ? b.imag() : b.real()));
    }
    return out;
  }
  const std::array<double, 2> ends = sequence_ends(start, end, dt);
  const axon_tensor_t od = describe(out, "linspace");
  AXON_CHECK(axon_kernel_linspace(stream_of(out), &od, ends[0], ends[1]));
  return out;
}

// base ** linspace(start, end): the exponents through linspace's kernel, then the native pow. Integer outputs take
// their exponents and powers in float64, from ends converted to the dtype, and convert the powers (CPU's
// logspace_kernel); a single step is base ** start taken as a double, as CPU's logspace_out does.
at::Tensor& logspace_out(const at::Scalar& start, const at::Scalar& end, int64_t steps, double base, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  const at::ScalarType dt = out.scalar_type();
  if (is_float(dt) || is_complex_float(dt)) {
    linspace_out(start, end, steps, out);
    if (steps) at::pow_out(out, base, out);
    return out;
  }
  if (!at::isIntegralType(dt, /*includeBool=*/false))
    return fall_back<ATEN_OP2(logspace, out)>(start, end, steps, base, out);
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(std::pow(base, start.toDouble()));
  at::Tensor powers = at::empty({steps}, out.options().dtype(at::kDouble));
  const std::array<double, 2> ends = sequence_ends(start, end, dt);
  const axon_tensor_t pd = describe(powers, "logspace");
  AXON_CHECK(axon_kernel_linspace(stream_of(out), &pd, ends[0], ends[1]));
  at::pow_out(powers, base, powers);
  // Powers past the dtype's range: CPU's kernel converts with static_cast, which x86 compilers take through int32 for
  // uint8 where the copy goes through int64 (2^46.5 becomes 0 there, 239 in a copy).
  return out.copy_(dt == at::kByte ? powers.to(at::kInt) : powers);
}

bool equal(const at::Tensor& self, const at::Tensor& other) {
  if (self.scalar_type() != other.scalar_type() || self.device() != other.device())
    return fall_back<ATEN_OP(equal)>(self, other);
  if (self.sizes() != other.sizes()) return false;
  if (self.numel() == 0) return true;
  if (kernels_support(self.scalar_type()) && self.dim() <= AXON_MAX_DIMS && !self.is_conj() && !other.is_conj() &&
      !self.is_neg() && !other.is_neg()) {
    // One kernel whose answer goes straight to the host (eq, all and item() were three launches and a host tensor).
    const axon_tensor_t a = describe(self, "equal"), b = describe(other, "equal");
    axon_stream_t stream = stream_of(self);
    unsigned char same = 0;
    AXON_CHECK(axon_kernel_equal(stream, &a, &b, &same));
    AXON_CHECK(axon_stream_sync(stream));
    return same != 0;
  }
  if (self.is_complex()) {  // equal parts, compared as real pairs (the native eq takes real dtypes)
    return at::eq(at::view_as_real(self.resolve_conj()), at::view_as_real(other.resolve_conj())).all().item<bool>();
  }
  return at::eq(self, other).all().item<bool>();
}

// unfold's backward: the windows' gradient summed back into a tensor of input_sizes, viewed as [outer, len, inner]
// around dim; the float dtypes, and complex64/128 as real pairs (others go to the host fallback).
at::Tensor unfold_backward_sum(const at::Tensor& grad, c10::SymIntArrayRef input_sizes_sym, int64_t dim, int64_t size,
                           int64_t step) {
  const c10::ScalarType t = grad.scalar_type();
  const bool floating = t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
  const bool complex = t == at::kComplexFloat || t == at::kComplexDouble;
  if (!(floating || complex) || grad.dim() != static_cast<int64_t>(input_sizes_sym.size()) + 1 || size < 1 || step < 1)
    return fall_back_symint<ATEN_OP(unfold_backward)>(grad, input_sizes_sym, dim, size, step);
  const std::vector<int64_t> shape = C10_AS_INTARRAYREF_SLOW(input_sizes_sym).vec();
  // A 0-d input unfolds as a 1-d one of length 1 (its gradient holds the size dimension only).
  const std::vector<int64_t> sizes = shape.empty() ? std::vector<int64_t>{1} : shape;
  const int64_t d = at::maybe_wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  int64_t outer = 1, inner = 1;
  for (int64_t k = 0; k < d; ++k) outer *= sizes[k];
  for (size_t k = d + 1; k < sizes.size(); ++k) inner *= sizes[k];
  const int64_t len = sizes[d], windows = shape.empty() ? 1 : grad.size(d);
  at::Tensor out = at::empty(shape, grad.options());
  if (out.numel() == 0) return out;
  // A complex gradient sums each part on its own: as real pairs, with the part next to inner (a real copy puts it
  // before the window's size dimension), it is a real gradient with an inner twice as large.
  const at::Tensor g = complex ? at::view_as_real(grad.resolve_conj()).movedim(-1, -2).contiguous().view(
                                     {outer, windows, inner * 2, size})
                               : grad.contiguous().view({outer, windows, inner, size});
  const at::Tensor o = complex ? at::view_as_real(out).view({outer, len, inner * 2}) : out.view({outer, len, inner});
  const axon_tensor_t od = describe(o, "unfold_backward"), gd = describe(g, "unfold_backward");
  AXON_CHECK(axon_kernel_unfold_backward(current_stream(grad.device().index()), &od, &gd, size, step));
  return out;
}

// ---- channel_shuffle, pixel_shuffle, pixel_unshuffle: one permuted copy each ----

// out = self over `sizes`: the shape both are walked in, split so that each dimension has one stride in self
// (src_strides) and one in out (dst_strides), in elements. One byte copy instead of ATen's composites of views and a
// clone, whatever the dtype or the memory formats. False where it does not fit a descriptor (the composite runs).
bool permuted_copy(const at::Tensor& self, const at::Tensor& out, const std::vector<int64_t>& sizes,
                   const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dst_strides, const char* op) {
  if (sizes.size() > AXON_MAX_DIMS) return false;
  if (out.numel() == 0) return true;
  axon_tensor_t src = describe_bytes(self, op), dst = describe_bytes(out, op);
  src.ndim = dst.ndim = static_cast<int>(sizes.size());
  for (int k = 0; k < src.ndim; ++k) {
    src.sizes[k] = dst.sizes[k] = sizes[k];
    src.strides[k] = src_strides[k];
    dst.strides[k] = dst_strides[k];
  }
  AXON_CHECK(axon_kernel_copy(stream_of(self), &dst, &src));
  return true;
}

// The shared leading (batch) dimensions of self and out, before the last `keep`: sizes and both tensors' strides.
struct Walk {
  std::vector<int64_t> sizes, src, dst;
};

Walk batch_walk(const at::Tensor& self, const at::Tensor& out, int64_t keep) {
  Walk w;
  for (int64_t d = 0; d + keep < self.dim(); ++d) {
    w.sizes.push_back(self.size(d));
    w.src.push_back(self.stride(d));
    w.dst.push_back(out.stride(d));
  }
  return w;
}

// channel_shuffle: PyTorch's checks, then out[n, k * groups + g, ...] = self[n, g * (c / groups) + k, ...] in one
// copy, out in self's suggested memory format (ATen's composite: a view as [n, groups, c / groups, rest], transposed
// and made contiguous in that format). An empty input gives an empty result of its shape (CPU returns an alias; a
// fresh tensor keeps this a non-view op).
at::Tensor channel_shuffle_native(const at::Tensor& self, c10::SymInt groups_sym) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              self.sizes());
  const int64_t groups = groups_sym.guard_int(__FILE__, __LINE__), c = self.size(1);
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.", " Value of groups:", groups);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
              " groups.");
  const auto format = self.suggest_memory_format();
  at::Tensor out = at::empty(self.sizes(), self.options().memory_format(format));
  if (self.numel() == 0) return out;
  Walk w{{self.size(0), c / groups, groups}, {self.stride(0), self.stride(1), self.stride(1) * (c / groups)},
         {out.stride(0), out.stride(1) * groups, out.stride(1)}};
  for (int64_t d = 2; d < self.dim(); ++d) {
    w.sizes.push_back(self.size(d));
    w.src.push_back(self.stride(d));
    w.dst.push_back(out.stride(d));
  }
  if (permuted_copy(self, out, w.sizes, w.src, w.dst, "channel_shuffle")) return out;
  return at::native_channel_shuffle(self, groups).contiguous(format);
}

// pixel_shuffle: [*, c r^2, h, w] -> [*, c, h r, w r], out[.., k, y r + i, x r + j] = self[.., k r^2 + i r + j, y, x],
// out in self's suggested memory format as on CPU.
at::Tensor pixel_shuffle(const at::Tensor& self, int64_t r) {
  at::native::check_pixel_shuffle_shapes(self, r);
  const int64_t c = self.size(-3) / (r * r), h = self.size(-2), w = self.size(-1);
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - 3);
  shape.insert(shape.end(), {c, h * r, w * r});
  at::Tensor out = at::empty(shape, self.options().memory_format(self.suggest_memory_format()));
  Walk walk = batch_walk(self, out, 3);
  const int64_t sc = self.stride(-3), sh = self.stride(-2), sw = self.stride(-1);
  const int64_t oc = out.stride(-3), oh = out.stride(-2), ow = out.stride(-1);
  walk.sizes.insert(walk.sizes.end(), {c, h, r, w, r});
  walk.src.insert(walk.src.end(), {sc * r * r, sh, sc * r, sw, sc});
  walk.dst.insert(walk.dst.end(), {oc, oh * r, oh, ow * r, ow});
  if (permuted_copy(self, out, walk.sizes, walk.src, walk.dst, "pixel_shuffle")) return out;
  return at::compositeexplicitautogradnonfunctional::pixel_shuffle(self, r);
}

// pixel_unshuffle: [*, c, h r, w r] -> [*, c r^2, h, w], its inverse.
at::Tensor pixel_unshuffle(const at::Tensor& self, int64_t r) {
  at::native::check_pixel_unshuffle_shapes(self, r);
  const int64_t c = self.size(-3), h = self.size(-2) / r, w = self.size(-1) / r;
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - 3);
  shape.insert(shape.end(), {c * r * r, h, w});
  at::Tensor out = at::empty(shape, self.options().memory_format(self.suggest_memory_format()));
  Walk walk = batch_walk(self, out, 3);
  const int64_t sc = self.stride(-3), sh = self.stride(-2), sw = self.stride(-1);
  const int64_t oc = out.stride(-3), oh = out.stride(-2), ow = out.stride(-1);
  walk.sizes.insert(walk.sizes.end(), {c, r, r, h, w});
  walk.src.insert(walk.src.end(), {sc, sh, sw, sh * r, sw * r});
  walk.dst.insert(walk.dst.end(), {oc * r * r, oc * r, oc, oh, ow});
  if (permuted_copy(self, out, walk.sizes, walk.src, walk.dst, "pixel_unshuffle")) return out;
  return at::compositeexplicitautogradnonfunctional::pixel_unshuffle(self, r);
}

// narrow_copy: one copy kernel from self's descriptor with the narrowed dimension's start and length (ATen's
// composite makes a narrow view and clones it), with the checks and messages of CPU's narrow_copy kernel. The copy
// moves bytes, so every dtype takes it; more than AXON_MAX_DIMS dimensions and starts below -size take the composite.
at::Tensor narrow_copy(const at::Tensor& self, int64_t dim, c10::SymInt start_sym, c10::SymInt length_sym) {
  const int64_t length = length_sym.expect_int();
  int64_t start = start_sym.expect_int();
  TORCH_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  if (dim < 0) {
    dim = at::maybe_wrap_dim(dim, self.dim());
  } else {
    TORCH_CHECK(dim < self.dim(), "Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but got false");
  }
  const int64_t size = self.size(dim);
  if (self.dim() > AXON_MAX_DIMS || self.is_quantized() || start < -size)
    return self.narrow_symint(dim, start_sym, length_sym).clone(at::MemoryFormat::Contiguous);
  if (start < 0) start += size;
  TORCH_CHECK(length >= 0 && start <= size - length, "start (", start, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[dim] = length;
  at::Tensor out = at::empty(sizes, self.options());
  if (out.numel() == 0) return out;
  axon_tensor_t src = describe_bytes(self, "narrow_copy");
  const axon_tensor_t dst = describe_bytes(out, "narrow_copy");
  src.data = static_cast<char*>(src.data) + start * self.stride(dim) * static_cast<int64_t>(self.element_size());
  src.sizes[dim] = length;
  AXON_CHECK(axon_kernel_copy(stream_of(self), &dst, &src));
  return out;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("narrow_copy", TORCH_FN(narrow_copy));
  m.impl("channel_shuffle", TORCH_FN(channel_shuffle_native));
  m.impl("pixel_shuffle", TORCH_FN(pixel_shuffle));
  m.impl("pixel_unshuffle", TORCH_FN(pixel_unshuffle));
  m.impl("unfold_backward", TORCH_FN(unfold_backward_sum));
  m.impl("tril.out", TORCH_FN(triangle_out<false>));
  m.impl("triu.out", TORCH_FN(triangle_out<true>));
  m.impl("tril_indices", TORCH_FN(triangle_indices<false>));
  m.impl("triu_indices", TORCH_FN(triangle_indices<true>));
  m.impl("flip", TORCH_FN(flip));
  m.impl("roll", TORCH_FN(roll_native));
#define AXON_PAD_REGISTER(op)                                    \
  m.impl(#op, TORCH_FN(op##_fn));                                \
  m.impl(#op ".out", TORCH_FN(op##_out));                        \
  m.impl(#op "_backward", TORCH_FN(op##_backward_fn));           \
  m.impl(#op "_backward.grad_input", TORCH_FN(op##_backward_out));
  AXON_PAD_REGISTER(reflection_pad1d)
  AXON_PAD_REGISTER(reflection_pad2d)
  AXON_PAD_REGISTER(reflection_pad3d)
  AXON_PAD_REGISTER(replication_pad1d)
  AXON_PAD_REGISTER(replication_pad2d)
  AXON_PAD_REGISTER(replication_pad3d)
#undef AXON_PAD_REGISTER
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
  m.impl("equal", TORCH_FN(equal));
}

}  // namespace
}  // namespace torch_axon

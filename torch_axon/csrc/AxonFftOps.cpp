// torch.fft's three primitives (_fft_c2c, _fft_r2c, _fft_c2r) on libaxon's FFT (libaxon/include/axon/fft.h).
//
// torch.fft's Python layer pads or trims the signal and calls these with the dims to transform and a normalization
// mode; here the mode becomes a scale, the input is made contiguous and the output is made contiguous (CPU restrides
// its output like its input; the values are the same). What libaxon does not take goes to the host: a build without
// MKL, other dtypes, an empty dim list, a transformed dimension of no elements, a c2r input shorter than the
// one-sided half, out= tensors of another dtype.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <axon/fft.h>
#include <c10/core/WrapDimMinimal.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <vector>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

// ATen's fft_norm_mode: 0 none, 1 by 1 / sqrt(n), 2 by 1 / n; n the product of the signal's lengths.
double norm_scale(int64_t normalization, at::IntArrayRef signal_sizes, const std::vector<int>& dims) {
  double n = 1.0;
  for (int d : dims) n *= static_cast<double>(signal_sizes[d]);
  return normalization == 1 ? 1.0 / std::sqrt(n) : normalization == 2 ? 1.0 / n : 1.0;
}

// The wrapped dims, if libaxon takes them: not empty, in range, each of at least one element of `signal`.
std::optional<std::vector<int>> fft_dims(const at::Tensor& signal, at::IntArrayRef dims) {
  if (dims.empty() || static_cast<int64_t>(dims.size()) > signal.dim() || signal.dim() > AXON_MAX_DIMS)
    return std::nullopt;
  std::vector<int> out;
  for (int64_t d : dims) {
    const int64_t w = c10::maybe_wrap_dim(d, signal.dim());
    if (signal.size(w) < 1) return std::nullopt;
    out.push_back(static_cast<int>(w));
  }
  return out;
}

void run_fft(const at::Tensor& out, const at::Tensor& in, axon_fft_kind_t kind, const std::vector<int>& dims,
             bool forward, double scale) {
  const axon_tensor_t od = describe(out, "fft"), id = describe(in, "fft");
  AXON_CHECK(axon_kernel_fft(current_stream(in.device().index()), &od, &id, kind, dims.data(),
                             static_cast<int>(dims.size()), forward ? 1 : 0, scale));
}

// out resized to `sizes`, written through a contiguous temporary when it is not contiguous.
template <class Compute>
at::Tensor& into(at::Tensor& out, at::IntArrayRef sizes, const Compute& compute) {
  at::native::resize_output(out, sizes);
  at::Tensor o = out.is_contiguous() ? out : at::empty(sizes, out.options());
  compute(o);
  if (!o.is_same(out)) out.copy_(o);
  return out;
}

bool complex_pair(c10::ScalarType t) { return t == at::kComplexFloat || t == at::kComplexDouble; }
bool real_pair(c10::ScalarType t) { return t == at::kFloat || t == at::kDouble; }

at::Tensor& fft_c2c_out(const at::Tensor& self, c10::SymIntArrayRef dim_sym, int64_t normalization, bool forward,
                        at::Tensor& out) {
  const auto dims = fft_dims(self, C10_AS_INTARRAYREF_SLOW(dim_sym));
  if (!axon_fft_available() || !complex_pair(self.scalar_type()) || out.scalar_type() != self.scalar_type() ||
      !dims)
    return fall_back_symint<ATEN_OP2(_fft_c2c, out)>(self, dim_sym, normalization, forward, out);
  const double scale = norm_scale(normalization, self.sizes(), *dims);
  const at::Tensor in = self.contiguous();
  return into(out, self.sizes(), [&](const at::Tensor& o) { run_fft(o, in, AXON_FFT_C2C, *dims, forward, scale); });
}

at::Tensor fft_c2c(const at::Tensor& self, c10::SymIntArrayRef dim, int64_t normalization, bool forward) {
  at::Tensor out = at::empty({0}, self.options());
  return fft_c2c_out(self, dim, normalization, forward, out);
}

at::Tensor& fft_r2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided,
                        at::Tensor& out) {
  const auto dims = fft_dims(self, dim);
  if (!axon_fft_available() || !real_pair(self.scalar_type()) || !dims || out.scalar_type() != c10::toComplexType(self.scalar_type()))
    return fall_back<ATEN_OP2(_fft_r2c, out)>(self, dim, normalization, onesided, out);
  std::vector<int64_t> sizes(self.sizes().begin(), self.sizes().end());
  if (onesided) sizes[dims->back()] = sizes[dims->back()] / 2 + 1;
  const double scale = norm_scale(normalization, self.sizes(), *dims);
  const at::Tensor in = self.contiguous();
  return into(out, sizes, [&](const at::Tensor& o) { run_fft(o, in, AXON_FFT_R2C, *dims, true, scale); });
}

at::Tensor fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided) {
  if (!real_pair(self.scalar_type())) return fall_back<ATEN_OP(_fft_r2c)>(self, dim, normalization, onesided);
  at::Tensor out = at::empty({0}, self.options().dtype(c10::toComplexType(self.scalar_type())));
  return fft_r2c_out(self, dim, normalization, onesided, out);
}

at::Tensor& fft_c2r_out(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, c10::SymInt last_sym,
                        at::Tensor& out) {
  const int64_t last_dim_size = last_sym.guard_int(__FILE__, __LINE__);
  auto dims = fft_dims(self, dim);
  const int64_t half = last_dim_size / 2 + 1;
  if (!axon_fft_available() || !complex_pair(self.scalar_type()) || !dims || last_dim_size < 1 ||
      self.size(dims->back()) < half || out.scalar_type() != c10::toRealValueType(self.scalar_type()))
    return fall_back_symint<ATEN_OP2(_fft_c2r, out)>(self, dim, normalization, std::move(last_sym), out);
  // the one-sided half that the real transform reads (the rest of a longer input is ignored, as on CPU)
  const at::Tensor in = self.narrow(dims->back(), 0, half).contiguous();
  std::vector<int64_t> sizes(in.sizes().begin(), in.sizes().end());
  sizes[dims->back()] = last_dim_size;
  const double scale = norm_scale(normalization, sizes, *dims);
  return into(out, sizes, [&](const at::Tensor& o) { run_fft(o, in, AXON_FFT_C2R, *dims, false, scale); });
}

at::Tensor fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t normalization, c10::SymInt last_dim_size) {
  at::Tensor out = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return fft_c2r_out(self, dim, normalization, std::move(last_dim_size), out);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_c2c", TORCH_FN(fft_c2c));
  m.impl("_fft_c2c.out", TORCH_FN(fft_c2c_out));
  m.impl("_fft_r2c", TORCH_FN(fft_r2c));
  m.impl("_fft_r2c.out", TORCH_FN(fft_r2c_out));
  m.impl("_fft_c2r", TORCH_FN(fft_c2r));
  m.impl("_fft_c2r.out", TORCH_FN(fft_c2r_out));
}

}  // namespace
}  // namespace torch_axon

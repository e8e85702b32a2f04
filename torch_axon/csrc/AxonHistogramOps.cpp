// torch.histc on libaxon's histogram kernel (libaxon/include/axon/histogram.h), and torch.histogram and
// torch.histogramdd on its histogramdd kernel (axon/histogramdd.h).
//
// PyTorch's range rules live here: min == max means the data's own range (read back from the device, as CUDA
// does), and an empty range is widened by one on each side. Integer inputs are counted as CUDA counts them (CPU's
// histc refuses them, but Mixture-of-Experts routers on accelerators rely on them).
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/native/Resize.h>
#include <axon/histogram.h>
#include <axon/histogramdd.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <tuple>
#include <vector>

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

// ---- histogram and histogramdd ----
//
// PyTorch's steps (aten/src/ATen/native/Histogram.cpp): the points are self reshaped to [M, D]; with bin counts, the
// outer edges come from range or from the data's min and max (read back, as CUDA would), an empty range widened by
// 0.5 each way, and the edges are linspace of them in self's dtype (libaxon's linspace, CPU's values); with bin
// tensors, they are those tensors. density divides by the total and by each bin's width. What the fast path does
// not take (other dtypes, a weight or bins of another dtype or shape, bad counts or ranges) goes to the host, which
// raises CPU's errors.

bool hist_dtype(c10::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

// self's points as [M, D] and the weight as [M], or false when the fast path does not take them.
bool hist_points(const at::Tensor& self, int64_t D, const std::optional<at::Tensor>& weight, at::Tensor& points,
                 std::optional<at::Tensor>& w) {
  if (!hist_dtype(self.scalar_type()) || D < 1 || D > AXON_MAX_DIMS) return false;
  if (weight.has_value()) {
    if (weight->scalar_type() != self.scalar_type() || weight->device() != self.device() ||
        weight->numel() * D != self.numel())
      return false;
    w = weight->reshape({-1}).contiguous();
  }
  points = self.reshape({-1, D}).contiguous();
  return true;
}

// The outer edges of each of D dims from range or the data; false for ranges CPU refuses (its errors then).
bool hist_outer(const at::Tensor& points, std::optional<at::ArrayRef<double>> range, int64_t D,
                std::vector<double>& lo, std::vector<double>& hi) {
  lo.assign(D, 0.0), hi.assign(D, 1.0);
  if (range.has_value()) {
    if (static_cast<int64_t>(range->size()) != 2 * D) return false;
    for (int64_t d = 0; d < D; ++d) lo[d] = (*range)[2 * d], hi[d] = (*range)[2 * d + 1];
  } else if (points.numel() > 0) {
    // CPU finds the data's range for float32 and float64 only (its error for the half types)
    if (points.scalar_type() != at::kFloat && points.scalar_type() != at::kDouble) return false;
    const auto [mn, mx] = at::aminmax(points, 0);
    const at::Tensor a = mn.to(at::kCPU, at::kDouble), b = mx.to(at::kCPU, at::kDouble);
    for (int64_t d = 0; d < D; ++d) lo[d] = a.data_ptr<double>()[d], hi[d] = b.data_ptr<double>()[d];
  }
  for (int64_t d = 0; d < D; ++d) {
    if (!std::isfinite(lo[d]) || !std::isfinite(hi[d]) || lo[d] > hi[d]) return false;
    if (lo[d] == hi[d]) lo[d] -= 0.5, hi[d] += 0.5;
  }
  return true;
}

// hist from points and edges (one per dim), then density's divisions.
at::Tensor hist_count(const at::Tensor& points, const std::optional<at::Tensor>& w,
                      const std::vector<at::Tensor>& edges, bool linear, bool density) {
  std::vector<int64_t> shape;
  std::vector<axon_tensor_t> ed;
  for (const at::Tensor& e : edges) {
    shape.push_back(e.numel() - 1);
    ed.push_back(describe(e, "histogramdd"));
  }
  at::Tensor hist = at::empty(shape, points.options());
  const axon_tensor_t hd = describe(hist, "histogramdd"), pd = describe(points, "histogramdd");
  axon_tensor_t wd{};
  if (w.has_value()) wd = describe(*w, "histogramdd");
  AXON_CHECK(axon_kernel_histogramdd(current_stream(points.device().index()), &hd, &pd, w.has_value() ? &wd : nullptr,
                                     ed.data(), linear ? 1 : 0));
  if (density) {
    hist.div_(hist.sum());
    for (size_t d = 0; d < edges.size(); ++d) {
      std::vector<int64_t> s(edges.size(), 1);
      s[d] = shape[d];
      hist.div_(edges[d].diff().reshape(s));
    }
  }
  return hist;
}

// Edges from bin counts (linspace of the outer edges), or false for what the fast path does not take.
bool hist_linear_edges(const at::Tensor& points, at::IntArrayRef bins, std::optional<at::ArrayRef<double>> range,
                       std::vector<at::Tensor>& edges) {
  const int64_t D = points.size(1);
  if (static_cast<int64_t>(bins.size()) != D) return false;
  for (int64_t b : bins)
    if (b < 1) return false;
  std::vector<double> lo, hi;
  if (!hist_outer(points, range, D, lo, hi)) return false;
  for (int64_t d = 0; d < D; ++d) edges.push_back(at::linspace(lo[d], hi[d], bins[d] + 1, points.options()));
  return true;
}

std::tuple<at::Tensor, at::Tensor> histogram_bin_ct(const at::Tensor& self, int64_t bins,
                                                    std::optional<at::ArrayRef<double>> range,
                                                    const std::optional<at::Tensor>& weight, bool density) {
  at::Tensor points;
  std::optional<at::Tensor> w;
  std::vector<at::Tensor> edges;
  if (!hist_points(self, 1, weight, points, w) || !hist_linear_edges(points, {bins}, range, edges))
    return fall_back<ATEN_OP2(histogram, bin_ct)>(self, bins, range, weight, density);
  return {hist_count(points, w, edges, true, density), edges[0]};
}

std::tuple<at::Tensor, at::Tensor> histogram_bins_tensor(const at::Tensor& self, const at::Tensor& bins,
                                                         const std::optional<at::Tensor>& weight, bool density) {
  at::Tensor points;
  std::optional<at::Tensor> w;
  if (!hist_points(self, 1, weight, points, w) || bins.dim() != 1 || bins.numel() < 2 ||
      bins.scalar_type() != self.scalar_type() || bins.device() != self.device())
    return fall_back<ATEN_OP2(histogram, bins_tensor)>(self, bins, weight, density);
  const at::Tensor edges = bins.contiguous().clone();
  return {hist_count(points, w, {edges}, false, density), edges};
}

std::vector<at::Tensor> histogramdd_bin_edges(const at::Tensor& self, at::IntArrayRef bins,
                                              std::optional<at::ArrayRef<double>> range,
                                              const std::optional<at::Tensor>& weight, bool density) {
  at::Tensor points;
  std::optional<at::Tensor> w;
  std::vector<at::Tensor> edges;
  if (!hist_points(self, self.dim() > 0 ? self.size(-1) : 0, weight, points, w) ||
      !hist_linear_edges(points, bins, range, edges))
    return fall_back<ATEN_OP(_histogramdd_bin_edges)>(self, bins, range, weight, density);
  return edges;
}

at::Tensor histogramdd_from_bin_cts(const at::Tensor& self, at::IntArrayRef bins,
                                    std::optional<at::ArrayRef<double>> range, const std::optional<at::Tensor>& weight,
                                    bool density) {
  at::Tensor points;
  std::optional<at::Tensor> w;
  std::vector<at::Tensor> edges;
  if (!hist_points(self, self.dim() > 0 ? self.size(-1) : 0, weight, points, w) ||
      !hist_linear_edges(points, bins, range, edges))
    return fall_back<ATEN_OP(_histogramdd_from_bin_cts)>(self, bins, range, weight, density);
  return hist_count(points, w, edges, true, density);
}

at::Tensor histogramdd_from_bin_tensors(const at::Tensor& self, at::TensorList bins,
                                        const std::optional<at::Tensor>& weight, bool density) {
  at::Tensor points;
  std::optional<at::Tensor> w;
  bool ok = hist_points(self, self.dim() > 0 ? self.size(-1) : 0, weight, points, w) &&
            static_cast<int64_t>(bins.size()) == points.size(1);
  std::vector<at::Tensor> edges;
  for (const at::Tensor& b : bins) {
    ok = ok && b.dim() == 1 && b.numel() >= 2 && b.scalar_type() == self.scalar_type() && b.device() == self.device();
    if (ok) edges.push_back(b.contiguous());
  }
  if (!ok) return fall_back<ATEN_OP(_histogramdd_from_bin_tensors)>(self, bins, weight, density);
  return hist_count(points, w, edges, false, density);
}

// The out= forms: the functional result copied into hist and bin_edges (resized as ATen resizes outs), or the host
// when an out's dtype or device differs (its errors then).
bool hist_outs_take(const at::Tensor& self, const at::Tensor& hist, const at::Tensor& bin_edges) {
  return hist.scalar_type() == self.scalar_type() && bin_edges.scalar_type() == self.scalar_type() &&
         hist.device() == self.device() && bin_edges.device() == self.device();
}

void hist_write(at::Tensor& out, const at::Tensor& result) {
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
}

std::tuple<at::Tensor&, at::Tensor&> histogram_bin_ct_out(const at::Tensor& self, int64_t bins,
                                                          std::optional<at::ArrayRef<double>> range,
                                                          const std::optional<at::Tensor>& weight, bool density,
                                                          at::Tensor& hist, at::Tensor& bin_edges) {
  if (!hist_outs_take(self, hist, bin_edges))
    return fall_back<ATEN_OP2(histogram, bin_ct_out)>(self, bins, range, weight, density, hist, bin_edges);
  const auto [h, e] = histogram_bin_ct(self, bins, range, weight, density);
  hist_write(hist, h);
  hist_write(bin_edges, e);
  return {hist, bin_edges};
}

std::tuple<at::Tensor&, at::Tensor&> histogram_bins_tensor_out(const at::Tensor& self, const at::Tensor& bins,
                                                               const std::optional<at::Tensor>& weight, bool density,
                                                               at::Tensor& hist, at::Tensor& bin_edges) {
  if (!hist_outs_take(self, hist, bin_edges))
    return fall_back<ATEN_OP2(histogram, bins_tensor_out)>(self, bins, weight, density, hist, bin_edges);
  const auto [h, e] = histogram_bins_tensor(self, bins, weight, density);
  hist_write(hist, h);
  hist_write(bin_edges, e);
  return {hist, bin_edges};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histogram.bin_ct_out", TORCH_FN(histogram_bin_ct_out));
  m.impl("histogram.bins_tensor_out", TORCH_FN(histogram_bins_tensor_out));
  m.impl("histogram.bin_ct", TORCH_FN(histogram_bin_ct));
  m.impl("histogram.bins_tensor", TORCH_FN(histogram_bins_tensor));
  m.impl("_histogramdd_bin_edges", TORCH_FN(histogramdd_bin_edges));
  m.impl("_histogramdd_from_bin_cts", TORCH_FN(histogramdd_from_bin_cts));
  m.impl("_histogramdd_from_bin_tensors", TORCH_FN(histogramdd_from_bin_tensors));
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
}

}  // namespace
}  // namespace torch_axon

// torch.unique (_unique2, _unique) and unique_consecutive on libaxon's run kernels (libaxon/include/axon/unique.h).
//
// unique flattens and sorts on the device (at::sort, stable: native on axon), then counts the runs of equal
// neighbours, reads that count back (one sync, as CUDA does) and fills values, inverse and counts; sort's indices
// carry each element's run back to its place. Sorting always happens: PyTorch's CPU unique sorts whatever `sorted`
// says. unique_consecutive does the same without the sort. uint16/32/64, in which libaxon does not compute, are sorted
// as signed keys of the same width with the top bit flipped: the same order. The dim= forms, complex tensors and
// dtypes libaxon does not know go through the host fallback.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <axon/unique.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>
#include <tuple>

#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

bool native(const at::Tensor& self) { return kernels_support(self.scalar_type()) && !self.is_complex(); }

// The signed dtype of an unsigned storage dtype's width (uint16 -> int16, ...); nullopt for the others.
std::optional<c10::ScalarType> signed_twin(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::UInt16: return c10::ScalarType::Short;
    case c10::ScalarType::UInt32: return c10::ScalarType::Int;
    case c10::ScalarType::UInt64: return c10::ScalarType::Long;
    default: return std::nullopt;
  }
}

// t (a signed dtype) with its top bit flipped: x -> x ^ min, which maps unsigned order onto signed order and back.
at::Tensor flip_top_bit(const at::Tensor& t) {
  const int64_t min = t.scalar_type() == at::kShort ? INT16_MIN : t.scalar_type() == at::kInt ? INT32_MIN : INT64_MIN;
  return at::bitwise_xor(t, min);
}

// values, inverse (self's shape, or [0] if not asked), counts ([K], or [0] if not asked) of the runs of flat, whose
// element i came from position perm[i] of self (perm undefined: from position i).
std::tuple<at::Tensor, at::Tensor, at::Tensor> runs(const at::Tensor& self, const at::Tensor& flat,
                                                    const at::Tensor& perm, bool return_inverse, bool return_counts) {
  axon_stream_t s = current_stream(self.device().index());
  const at::Tensor count = at::empty({1}, self.options().dtype(at::kLong));
  const axon_tensor_t in = describe(flat, "unique"), cd = describe(count, "unique");
  AXON_CHECK(axon_kernel_unique_count(s, &cd, &in));
  const int64_t k = count.item<int64_t>();
  at::Tensor values = at::empty({k}, self.options());
  at::Tensor inverse = at::empty(return_inverse ? self.sizes() : at::IntArrayRef{0}, self.options().dtype(at::kLong));
  at::Tensor counts = at::empty({return_counts ? k : 0}, self.options().dtype(at::kLong));
  const axon_tensor_t vd = describe(values, "unique");
  const axon_tensor_t id = return_inverse ? describe(inverse.view({-1}), "unique") : axon_tensor_t{};
  const axon_tensor_t nd = return_counts ? describe(counts, "unique") : axon_tensor_t{};
  const axon_tensor_t pd = perm.defined() ? describe(perm, "unique") : axon_tensor_t{};
  AXON_CHECK(axon_kernel_unique_fill(s, &vd, return_inverse ? &id : nullptr, return_counts ? &nd : nullptr, &in,
                                     perm.defined() ? &pd : nullptr));
  return {values, inverse, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> sorted_runs(const at::Tensor& self, bool return_inverse,
                                                           bool return_counts) {
  const auto [sorted, perm] = at::sort(self.reshape({-1}), /*stable=*/true, 0, false);
  return runs(self, sorted.contiguous(), return_inverse ? perm.contiguous() : at::Tensor(), return_inverse,
              return_counts);
}

// sorted_runs of an unsigned storage dtype through its signed keys.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unsigned_sorted_runs(const at::Tensor& self, c10::ScalarType twin,
                                                                    bool return_inverse, bool return_counts) {
  auto [keys, inverse, counts] = sorted_runs(flip_top_bit(self.view(twin)), return_inverse, return_counts);
  return {flip_top_bit(keys).view(self.scalar_type()), inverse, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted, bool return_inverse,
                                                       bool return_counts) {
  if (const auto twin = signed_twin(self.scalar_type())) {
    return unsigned_sorted_runs(self, *twin, return_inverse, return_counts);
  }
  if (!native(self)) return fall_back<ATEN_OP(_unique2)>(self, sorted, return_inverse, return_counts);
  return sorted_runs(self, return_inverse, return_counts);
}

std::tuple<at::Tensor, at::Tensor> unique(const at::Tensor& self, bool sorted, bool return_inverse) {
  const auto twin = signed_twin(self.scalar_type());
  if (!twin && !native(self)) return fall_back<ATEN_OP(_unique)>(self, sorted, return_inverse);
  auto [values, inverse, counts] = twin ? unsigned_sorted_runs(self, *twin, return_inverse, false)
                                        : sorted_runs(self, return_inverse, false);
  return {values, inverse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts, std::optional<int64_t> dim) {
  if (const auto twin = signed_twin(self.scalar_type()); twin && !dim.has_value()) {
    // Runs of equal neighbours only compare bits: the signed view has the same runs.
    auto [values, inverse, counts] =
        torch_axon::unique_consecutive(self.view(*twin), return_inverse, return_counts, dim);
    return {values.view(self.scalar_type()), inverse, counts};
  }
  if (!native(self) || dim.has_value())
    return fall_back<ATEN_OP(unique_consecutive)>(self, return_inverse, return_counts, dim);
  return runs(self, self.reshape({-1}).contiguous(), at::Tensor(), return_inverse, return_counts);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("_unique", TORCH_FN(unique));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
}

}  // namespace
}  // namespace torch_axon

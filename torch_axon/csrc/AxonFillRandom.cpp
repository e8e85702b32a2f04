// Ops that initialize tensors in place: fill_, zero_, and the random ones drawing from the device's Philox generator
// (uniform_, normal_, random_, bernoulli_). The numbers come from libaxon's kernels; this file picks the generator
// and claims its Philox blocks, so the same seed gives the same numbers whatever the thread count.
#include <ATen/ATen.h>
#include <ATen/core/DistributionsHelper.h>
#include <ATen/core/GeneratorForPrivateuseone.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <limits>
#include <mutex>

#include "AxonException.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"
#include "AxonTensor.h"

namespace torch_axon {
namespace {

at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value) {
  if (self.numel() == 0) return self;
  const axon_tensor_t d = describe(self, "fill_");
  AXON_CHECK(axon_kernel_fill(current_stream(self.device().index()), &d, to_axon_scalar(value)));
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ", value.dim(),
              " dimensions.");
  return fill_scalar(self, value.item());
}

at::Tensor& zero(at::Tensor& self) { return fill_scalar(self, 0); }

// The generator to draw from (the given one or the device's default), locked, with the blocks claimed for t.
struct Draw {
  uint64_t seed;
  uint64_t block_offset;
};

Draw claim(const at::Tensor& t, std::optional<at::Generator> gen) {
  auto* g = at::get_generator_or_default<AxonGeneratorImpl>(gen, default_generator(t.device().index()));
  TORCH_CHECK(g->device().index() == t.device().index() || !gen.has_value(), "generator on ", g->device(),
              " used for a tensor on ", t.device());
  std::lock_guard<std::mutex> lock(g->mutex_);
  const uint64_t blocks = axon_philox_blocks(*axon_dtype_of(t.scalar_type()), t.numel());
  return {g->current_seed(), g->claim_blocks(blocks)};
}

at::Tensor& uniform(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  if (self.numel() == 0) return self;
  const axon_tensor_t d = describe(self, "uniform_");
  const Draw r = claim(self, gen);
  AXON_CHECK(axon_kernel_uniform(current_stream(self.device().index()), &d, r.seed, r.block_offset, from, to));
  return self;
}

at::Tensor& normal(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.numel() == 0) return self;
  const axon_tensor_t d = describe(self, "normal_");
  const Draw r = claim(self, gen);
  AXON_CHECK(axon_kernel_normal(current_stream(self.device().index()), &d, r.seed, r.block_offset, mean, std));
  return self;
}

// The largest value random_ may produce without a bound: 2^digits for floating types (every integer up to it is
// exact), the type's maximum for integers, as PyTorch's random_ does.
uint64_t unbounded_max(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return 1ull << std::numeric_limits<float>::digits;
    case c10::ScalarType::Double: return 1ull << std::numeric_limits<double>::digits;
    case c10::ScalarType::Half: return 1ull << 11;
    case c10::ScalarType::BFloat16: return 1ull << 8;
    case c10::ScalarType::Bool: return 1;
    case c10::ScalarType::Byte: return std::numeric_limits<uint8_t>::max();
    case c10::ScalarType::Char: return std::numeric_limits<int8_t>::max();
    case c10::ScalarType::Short: return std::numeric_limits<int16_t>::max();
    case c10::ScalarType::Int: return std::numeric_limits<int32_t>::max();
    case c10::ScalarType::Long: return std::numeric_limits<int64_t>::max();
    default: TORCH_CHECK(false, "random_ is not supported for ", t);
  }
}

at::Tensor& random_range(at::Tensor& self, int64_t from, uint64_t range, std::optional<at::Generator> gen) {
  if (self.numel() == 0) return self;
  const axon_tensor_t d = describe(self, "random_");
  const Draw r = claim(self, gen);
  AXON_CHECK(axon_kernel_random_int(current_stream(self.device().index()), &d, r.seed, r.block_offset, from, range));
  return self;
}

at::Tensor& random_from_to(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                           std::optional<at::Generator> gen) {
  if (to.has_value()) {
    TORCH_CHECK(from < *to, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", *to);
    return random_range(self, from, static_cast<uint64_t>(*to) - static_cast<uint64_t>(from), gen);
  }
  const uint64_t max = unbounded_max(self.scalar_type());
  TORCH_CHECK(from >= 0 && static_cast<uint64_t>(from) <= max, "random_ expects 'from' in [0, ", max, "], got ", from);
  return random_range(self, from, max - static_cast<uint64_t>(from) + 1, gen);
}

at::Tensor& random_to(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from_to(self, 0, to, gen);
}

at::Tensor& random_plain(at::Tensor& self, std::optional<at::Generator> gen) {
  return random_from_to(self, 0, std::nullopt, gen);
}

at::Tensor& bernoulli_float(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  if (self.numel() == 0) return self;
  const axon_tensor_t d = describe(self, "bernoulli_");
  const Draw r = claim(self, gen);
  AXON_CHECK(axon_kernel_bernoulli(current_stream(self.device().index()), &d, r.seed, r.block_offset, p));
  return self;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
  m.impl("zero_", zero);
  m.impl("uniform_", uniform);
  m.impl("normal_", normal);
  m.impl("random_.from", random_from_to);
  m.impl("random_.to", random_to);
  m.impl("random_", random_plain);
  m.impl("bernoulli_.float", bernoulli_float);
}

}  // namespace
}  // namespace torch_axon

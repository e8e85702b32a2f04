#include "AxonGenerator.h"

#include <ATen/Functions.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <array>
#include <cstring>
#include <memory>
#include <mutex>

#include "AxonFunctions.h"

namespace torch_axon {

namespace {
constexpr size_t kStateBytes = 16;  // seed (8 bytes), then offset (8 bytes), as CUDA's Philox state
}

AxonGeneratorImpl::AxonGeneratorImpl(c10::DeviceIndex index, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(kAxon, index), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void AxonGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t AxonGeneratorImpl::current_seed() const { return seed_; }

uint64_t AxonGeneratorImpl::seed() {
  const uint64_t s = c10::detail::getNonDeterministicRandom(/*is_cuda=*/false);
  set_current_seed(s);
  return s;
}

void AxonGeneratorImpl::set_offset(uint64_t offset) {
  TORCH_CHECK(offset % 4 == 0, "axon generator: offset must be a multiple of 4 (Philox draws come in fours), got ",
              offset);
  offset_ = offset;
}

uint64_t AxonGeneratorImpl::get_offset() const { return offset_; }

void AxonGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK(new_state.device().is_cpu() && new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
              "axon RNG state must be a CPU torch.uint8 tensor, got ", new_state.dtype(), " on ",
              new_state.device());
  TORCH_CHECK(static_cast<size_t>(new_state.numel()) == kStateBytes, "axon RNG state must have ", kStateBytes,
              " bytes (seed, offset), got ", new_state.numel());
  TORCH_CHECK(new_state.is_contiguous(), "axon RNG state must be contiguous");
  uint64_t seed = 0, offset = 0;
  const auto* bytes = static_cast<const uint8_t*>(new_state.data());
  std::memcpy(&seed, bytes, 8);
  std::memcpy(&offset, bytes + 8, 8);
  seed_ = seed;
  set_offset(offset);
}

c10::intrusive_ptr<c10::TensorImpl> AxonGeneratorImpl::get_state() const {
  at::Tensor state = at::empty({static_cast<int64_t>(kStateBytes)}, at::TensorOptions().dtype(at::kByte));
  auto* bytes = state.data_ptr<uint8_t>();
  std::memcpy(bytes, &seed_, 8);
  std::memcpy(bytes + 8, &offset_, 8);
  return state.getIntrusivePtr();
}

c10::DeviceType AxonGeneratorImpl::device_type() { return kAxon; }

uint64_t AxonGeneratorImpl::claim_blocks(uint64_t blocks) {
  const uint64_t first = offset_ / 4;
  offset_ += 4 * blocks;
  return first;
}

PhiloxDraw claim_philox(const std::optional<at::Generator>& gen, c10::DeviceIndex index, uint64_t blocks) {
  auto* g = at::get_generator_or_default<AxonGeneratorImpl>(gen, default_generator(index));
  std::lock_guard<std::mutex> lock(g->mutex_);
  return {g->current_seed(), g->claim_blocks(blocks)};
}

AxonGeneratorImpl* AxonGeneratorImpl::clone_impl() const {
  auto* g = new AxonGeneratorImpl(device().index(), seed_);
  g->offset_ = offset_;
  return g;
}

// Generators need no runtime: seeding (torch.manual_seed seeds every backend) must not start the device's threads,
// or a later fork would be poisoned, so indices are checked against the configuration only.
namespace {
void check_index(c10::DeviceIndex index) {
  const c10::DeviceIndex n = device_count();
  TORCH_CHECK(index >= 0 && index < n, "Invalid device index ", static_cast<int>(index), " for an axon generator: ",
              static_cast<int>(n), " device(s)");
}
}  // namespace

const at::Generator& default_generator(c10::DeviceIndex index) {
  static std::array<std::once_flag, AXON_MAX_DEVICES> once;
  static std::array<at::Generator, AXON_MAX_DEVICES> generators;
  if (index < 0) index = current_device();
  check_index(index);
  std::call_once(once[index], [index] { generators[index] = at::make_generator<AxonGeneratorImpl>(index); });
  return generators[index];
}

at::Generator new_generator(c10::DeviceIndex index) {
  if (index < 0) index = current_device();
  check_index(index);
  return at::make_generator<AxonGeneratorImpl>(index);
}

}  // namespace torch_axon

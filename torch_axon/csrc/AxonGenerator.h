// The axon random generator: a counter-based Philox stream addressed by (seed, offset), CUDA's layout, so that
// get_rng_state() is 16 bytes (seed, then offset) and DTensor's RNG tracker can set offsets as it does on CUDA.
// The offset counts 32-bit draws; libaxon's kernels take it in Philox blocks of four draws.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <optional>

namespace torch_axon {

struct AxonGeneratorImpl final : public c10::GeneratorImpl {
  explicit AxonGeneratorImpl(c10::DeviceIndex index, uint64_t seed = c10::default_rng_seed_val);

  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type();

  // Claim `blocks` Philox blocks for one kernel; returns the block offset it starts at. Call with mutex_ held.
  uint64_t claim_blocks(uint64_t blocks);

 private:
  AxonGeneratorImpl* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;  // in 32-bit draws, always a multiple of 4
};

// The default generator of device `index` (-1: the current device), created on first use.
const at::Generator& default_generator(c10::DeviceIndex index);

// Where one random kernel draws: the generator's seed and the first of the Philox blocks claimed for it.
struct PhiloxDraw {
  uint64_t seed;
  uint64_t offset;
};

// Claims `blocks` blocks of `gen` (absent: the default generator of device `index`) under its lock.
PhiloxDraw claim_philox(const std::optional<at::Generator>& gen, c10::DeviceIndex index, uint64_t blocks);

// A new generator on device `index`, seeded with the default seed.
at::Generator new_generator(c10::DeviceIndex index);

}  // namespace torch_axon

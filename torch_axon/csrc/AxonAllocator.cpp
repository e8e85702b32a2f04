// The device allocator PyTorch uses for axon tensors: libaxon's caching allocator behind c10::DeviceAllocator, so that
// torch.axon.memory_* and torch.accelerator.memory_* report libaxon's statistics. Allocations are made for the
// current stream of the current device, as CUDA's are.
#include <ATen/core/Tensor.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <torch/library.h>
#include <c10/util/Exception.h>

#include <array>
#include <utility>

#include "AxonException.h"
#include "AxonFunctions.h"

namespace torch_axon {
namespace {

// Frees p on device I. The device is baked into the deleter so freeing needs no pointer lookup.
template <int I>
void free_on_device(void* p) {
  // A child forked after the runtime started may drop tensors it inherited: their memory is its copy of the parent's
  // and the runtime's threads are gone, so leave it (as CUDA's allocator does) rather than throw from a deleter.
  if (in_bad_fork()) return;
  axon_device_t d = nullptr;
  if (axon_device_get(runtime(), I, &d) != AXON_OK || axon_mem_free(d, p) != AXON_OK) {
    TORCH_WARN("axon: freeing ", p, " on axon:", I, " failed: ", axon_last_error());
  }
}

template <int... I>
constexpr std::array<c10::DeleterFnPtr, sizeof...(I)> make_deleters(std::integer_sequence<int, I...>) {
  return {&free_on_device<I>...};
}
constexpr auto kDeleters = make_deleters(std::make_integer_sequence<int, AXON_MAX_DEVICES>{});

// raw_deleter() has no device to go by: find it from the pointer.
void free_anywhere(void* p) {
  if (p == nullptr || in_bad_fork()) return;
  const c10::DeviceIndex index = device_of_pointer(p);
  if (index < 0) {
    TORCH_WARN("axon: raw free of ", p, ", which is not axon memory");
    return;
  }
  kDeleters[index](p);
}

void copy_stat(c10::CachingAllocator::Stat& to, const axon_stat_t& from) {
  to.current = from.current;
  to.peak = from.peak;
  to.allocated = from.allocated;
  to.freed = from.freed;
}

void copy_stats(c10::CachingAllocator::StatArray& to, const axon_stat_t (&from)[AXON_POOL_COUNT]) {
  // c10's StatType order is AGGREGATE, SMALL_POOL, LARGE_POOL: the same as libaxon's pools.
  for (int i = 0; i < AXON_POOL_COUNT; ++i) copy_stat(to[i], from[i]);
}

struct AxonAllocator final : public c10::DeviceAllocator {
  at::DataPtr allocate(size_t n) override {
    const c10::DeviceIndex index = current_device();
    axon_device_t d = device(index);
    void* p = nullptr;
    if (n > 0) AXON_CHECK(axon_mem_alloc(d, n, current_stream(index), &p));
    return {p, p, kDeleters[index], c10::Device(kAxon, index)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_anywhere; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    AXON_CHECK(axon_memcpy(dest, src, count, AXON_COPY_DEVICE_TO_DEVICE, current_stream()));
  }

  bool initialized() override { return is_initialized(); }

  void emptyCache(c10::MempoolId_t /*mempool_id*/) override {
    if (!is_initialized()) return;
    for (c10::DeviceIndex i = 0; i < device_count(); ++i) AXON_CHECK(axon_mem_empty_cache(device(i)));
  }

  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (ptr.get() == nullptr) return;
    AXON_CHECK(axon_mem_record_stream(device(ptr.device().index()), ptr.get(), to_axon(stream)));
  }

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex index) override {
    axon_mem_stats_t s;
    AXON_CHECK(axon_mem_stats(device(index), &s));
    c10::CachingDeviceAllocator::DeviceStats out;
    copy_stats(out.allocation, s.allocation);
    copy_stats(out.segment, s.segment);
    copy_stats(out.active, s.active);
    copy_stats(out.inactive_split, s.inactive_split);
    copy_stats(out.allocated_bytes, s.allocated_bytes);
    copy_stats(out.reserved_bytes, s.reserved_bytes);
    copy_stats(out.active_bytes, s.active_bytes);
    copy_stats(out.inactive_split_bytes, s.inactive_split_bytes);
    copy_stats(out.requested_bytes, s.requested_bytes);
    out.num_alloc_retries = s.num_alloc_retries;
    out.num_ooms = s.num_ooms;
    out.num_sync_all_streams = s.num_sync_all_streams;
    out.num_device_alloc = s.num_device_alloc;
    out.num_device_free = s.num_device_free;
    return out;
  }

  void resetAccumulatedStats(c10::DeviceIndex index) override { AXON_CHECK(axon_mem_reset_accumulated(device(index))); }

  void resetPeakStats(c10::DeviceIndex index) override { AXON_CHECK(axon_mem_reset_peak(device(index))); }

  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex index) override {
    size_t free_bytes = 0, total_bytes = 0;
    AXON_CHECK(axon_mem_get_info(device(index), &free_bytes, &total_bytes));
    return {free_bytes, total_bytes};
  }
};

AxonAllocator g_allocator;

// Tensor.record_stream(s): the tensor's block is not reused before s's work queued so far has completed.
void record_stream(at::Tensor& self, c10::Stream stream) {
  g_allocator.recordStream(self.storage().data_ptr(), stream);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", record_stream); }

}  // namespace

c10::DeviceAllocator* device_allocator() { return &g_allocator; }

}  // namespace torch_axon

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &torch_axon::g_allocator)

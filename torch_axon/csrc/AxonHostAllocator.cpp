// Pinned host memory for axon: libaxon's pinned pool behind at::HostAllocator, so Tensor.pin_memory(), is_pinned()
// and DataLoader(pin_memory=True) work, and non_blocking copies from pinned buffers are truly asynchronous.
#include <ATen/core/CachingHostAllocator.h>
#include <c10/util/Exception.h>

#include <cstring>

#include "AxonException.h"
#include "AxonFunctions.h"

namespace torch_axon {
namespace {

void free_pinned(void* p) {
  if (p == nullptr || in_bad_fork()) return;  // inherited by a forked child: the parent's buffer, left alone
  if (axon_host_free(runtime(), p) != AXON_OK) TORCH_WARN("axon: freeing pinned ", p, " failed: ", axon_last_error());
}

void copy_stat(c10::CachingAllocator::Stat& to, const axon_stat_t& from) {
  to.current = from.current;
  to.peak = from.peak;
  to.allocated = from.allocated;
  to.freed = from.freed;
}

struct AxonHostAllocator final : public at::HostAllocator {
  at::DataPtr allocate(size_t n) override {
    void* p = nullptr;
    if (n > 0) AXON_CHECK(axon_host_alloc(runtime(), n, &p));
    return {p, p, &free_pinned, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }

  void copy_data(void* dest, const void* src, std::size_t count) const override { std::memcpy(dest, src, count); }

  bool record_event(void* ptr, void* ctx, c10::Stream stream) override {
    void* base = ctx ? ctx : ptr;
    return axon_host_record_stream(runtime(), base, to_axon(stream)) == AXON_OK;
  }

  void empty_cache() override {
    if (is_initialized()) AXON_CHECK(axon_host_empty_cache(runtime()));
  }

  at::HostStats get_stats() override {
    at::HostStats out;
    if (!is_initialized()) return out;
    axon_host_stats_t s;
    AXON_CHECK(axon_host_stats(runtime(), &s));
    copy_stat(out.active_requests, s.allocation);
    copy_stat(out.active_bytes, s.allocated_bytes);
    copy_stat(out.allocations, s.segment);
    copy_stat(out.allocated_bytes, s.reserved_bytes);
    out.num_host_alloc = s.num_host_alloc;
    out.num_host_free = s.num_host_free;
    return out;
  }

  void reset_accumulated_stats() override {
    if (is_initialized()) AXON_CHECK(axon_host_reset_accumulated(runtime()));
  }

  void reset_peak_stats() override {
    if (is_initialized()) AXON_CHECK(axon_host_reset_peak(runtime()));
  }
};

AxonHostAllocator g_host_allocator;

}  // namespace

at::HostAllocator* host_allocator() { return &g_host_allocator; }

}  // namespace torch_axon

REGISTER_HOST_ALLOCATOR(at::kPrivateUse1, &torch_axon::g_host_allocator)

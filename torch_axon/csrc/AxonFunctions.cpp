#include "AxonFunctions.h"

#include <c10/util/Exception.h>
#include <pthread.h>

#include <array>
#include <atomic>
#include <mutex>

#include "AxonException.h"

namespace torch_axon {
namespace {

std::atomic<axon_runtime_t> g_runtime{nullptr};
std::atomic<bool> g_forked_after_init{false};

void mark_forked_child() {
  if (g_runtime.load() != nullptr) g_forked_after_init = true;
}

// Per thread, as CUDA keeps them: the current device, and per device the current stream (nullptr = default).
thread_local c10::DeviceIndex t_current_device = 0;
thread_local std::array<axon_stream_t, AXON_MAX_DEVICES> t_current_streams{};

constexpr int kPoolSize = 8;
struct StreamPool {
  std::mutex lock;
  std::array<axon_stream_t, kPoolSize> streams{};
  unsigned next = 0;
};
std::array<std::array<StreamPool, 2>, AXON_MAX_DEVICES> g_pools;  // [device][high priority]

}  // namespace

axon_runtime_t runtime() {
  axon_runtime_t rt = g_runtime.load(std::memory_order_acquire);
  if (C10_LIKELY(rt != nullptr && !g_forked_after_init.load(std::memory_order_relaxed))) return rt;
  TORCH_CHECK(!g_forked_after_init.load(),
              "Cannot re-initialize axon in forked subprocess. The axon runtime was started before the fork and its "
              "worker threads do not exist in the child; to use axon with multiprocessing, use the 'spawn' start "
              "method.");
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, mark_forked_child); });
  axon_runtime_t created = nullptr;
  AXON_CHECK(axon_runtime_default(&created));
  g_runtime.store(created, std::memory_order_release);
  return created;
}

c10::DeviceIndex device_count() noexcept {
  // Before the runtime exists the count comes from the configuration alone, so that asking (as torch does at import
  // and DataLoader workers do) starts no threads and leaves fork safe, as CUDA's NVML-based count does.
  axon_runtime_t rt = g_runtime.load();
  if (rt != nullptr) return static_cast<c10::DeviceIndex>(axon_device_count(rt));
  axon_config_t cfg;
  if (axon_config_from_env(&cfg) != AXON_OK) {
    axon_clear_error();
    return 0;
  }
  return static_cast<c10::DeviceIndex>(cfg.device_count);
}

bool is_initialized() noexcept { return g_runtime.load() != nullptr && !g_forked_after_init.load(); }

bool in_bad_fork() noexcept { return g_forked_after_init.load(); }

axon_device_t device(c10::DeviceIndex index) {
  axon_runtime_t rt = runtime();
  const int n = axon_device_count(rt);
  TORCH_CHECK(index >= 0 && index < n, "Invalid device index ", static_cast<int>(index), " for axon: there ",
              n == 1 ? "is 1 device" : "are " + std::to_string(n) + " devices", " (set AXON_DEVICE_COUNT for more)");
  axon_device_t d = nullptr;
  AXON_CHECK(axon_device_get(rt, index, &d));
  return d;
}

c10::DeviceIndex current_device() { return t_current_device; }

void set_device(c10::DeviceIndex index) {
  // Validated against the configuration, without starting the runtime: DeviceMesh and torchrun scripts set the
  // device before anything else.
  const c10::DeviceIndex n = device_count();
  TORCH_CHECK(index >= 0 && index < n, "Invalid device index ", static_cast<int>(index), " for axon: there ",
              n == 1 ? "is 1 device" : "are " + std::to_string(n) + " devices", " (set AXON_DEVICE_COUNT for more)");
  t_current_device = index;
}

axon_stream_t current_stream(c10::DeviceIndex index) {
  if (index < 0) index = t_current_device;
  if (C10_UNLIKELY(index >= AXON_MAX_DEVICES)) device(index);  // throws with the valid range
  axon_stream_t s = t_current_streams[index];
  if (C10_LIKELY(s != nullptr)) return s;
  AXON_CHECK(axon_stream_default(device(index), &s));
  return s;
}

c10::Stream current_c10_stream(c10::DeviceIndex index) { return to_c10(current_stream(index)); }

void set_current_stream(const c10::Stream& s) {
  TORCH_CHECK(s.device_type() == kAxon, "set_current_stream: ", s, " is not an axon stream");
  t_current_streams[s.device_index()] = to_axon(s);
}

axon_stream_t to_axon(const c10::Stream& s) {
  TORCH_CHECK(s.device_type() == kAxon, "expected an axon stream, got ", s);
  axon_device_t d = device(s.device_index());
  axon_stream_t out = nullptr;
  if (s.id() == 0) {
    AXON_CHECK(axon_stream_default(d, &out));
  } else {
    AXON_CHECK(axon_stream_from_id(d, static_cast<uint64_t>(s.id()), &out));
  }
  return out;
}

c10::Stream to_c10(axon_stream_t s) {
  const c10::DeviceIndex index = static_cast<c10::DeviceIndex>(axon_device_index(axon_stream_device(s)));
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kAxon, index), static_cast<c10::StreamId>(axon_stream_id(s)));
}

c10::Stream stream_from_pool(c10::DeviceIndex index, bool high_priority) {
  index = resolve_device(index);
  axon_device_t d = device(index);
  StreamPool& pool = g_pools[index][high_priority ? 1 : 0];
  std::lock_guard<std::mutex> guard(pool.lock);
  axon_stream_t& slot = pool.streams[pool.next++ % kPoolSize];
  if (slot == nullptr) {
    AXON_CHECK(axon_stream_create(d, high_priority ? AXON_STREAM_PRIORITY_HIGHEST : AXON_STREAM_PRIORITY_LOWEST,
                                  &slot));
  }
  return to_c10(slot);
}

c10::DeviceIndex device_of_pointer(const void* p) noexcept {
  axon_runtime_t rt = g_runtime.load();
  if (rt == nullptr || p == nullptr) return -1;
  axon_mem_info_t info;
  if (axon_mem_lookup(rt, p, &info) != AXON_OK) {
    axon_clear_error();
    return -1;
  }
  return static_cast<c10::DeviceIndex>(axon_device_index(info.device));
}

}  // namespace torch_axon

// The glue's view of the runtime: the default libaxon runtime, per-thread current device and current stream, and the
// mapping between c10::Stream and axon_stream_t. Every other glue file reaches libaxon through these.
#pragma once

#include <axon/axon.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

namespace c10 {
struct DeviceAllocator;
}
namespace at {
struct HostAllocator;
}

namespace torch_axon {

constexpr c10::DeviceType kAxon = c10::DeviceType::PrivateUse1;

// The process-wide runtime, created from the environment on first use. Throws (with the configuration error) if it
// cannot be created, and in a child forked after it was created.
axon_runtime_t runtime();

// Number of axon devices; 0 if the runtime cannot be created. Never throws.
c10::DeviceIndex device_count() noexcept;

// True once the runtime exists (torch.axon.is_initialized). Never throws.
bool is_initialized() noexcept;

// True in a child process forked after the runtime was created: its worker threads did not survive the fork.
bool in_bad_fork() noexcept;

// Device `index`; throws naming the valid range when it is out of range.
axon_device_t device(c10::DeviceIndex index);

c10::DeviceIndex current_device();
void set_device(c10::DeviceIndex index);

// `index`, or the current device when it is negative: a c10::Device without an index (torch.Stream(device="axon"))
// means the current device, as in CUDA's guard.
inline c10::DeviceIndex resolve_device(c10::DeviceIndex index) { return index < 0 ? current_device() : index; }

// The calling thread's current stream on device `index` (-1: the current device); the default stream unless set.
axon_stream_t current_stream(c10::DeviceIndex index = -1);
c10::Stream current_c10_stream(c10::DeviceIndex index = -1);
void set_current_stream(const c10::Stream& s);

// Conversions. A c10::Stream's id is the libaxon stream id, unique within its device (the default stream is 0).
axon_stream_t to_axon(const c10::Stream& s);
c10::Stream to_c10(axon_stream_t s);

// A stream from the per-device pool (round robin, created lazily), as CUDA's getStreamFromPool; -1: current device.
c10::Stream stream_from_pool(c10::DeviceIndex index, bool high_priority);

// The device index of an axon tensor's memory, from any interior pointer; -1 if it is not axon memory.
c10::DeviceIndex device_of_pointer(const void* p) noexcept;

// The registered allocators (AxonAllocator.cpp, AxonHostAllocator.cpp).
c10::DeviceAllocator* device_allocator();
at::HostAllocator* host_allocator();

}  // namespace torch_axon

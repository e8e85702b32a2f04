// The PrivateUse1 hooks: registering them is what makes torch.accelerator pick axon, and what backward(), pinned
// memory and generators ask for. Each method answers from libaxon or the other glue pieces.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/core/CachingHostAllocator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/Storage.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "AxonException.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"

namespace torch_axon {
namespace {

struct AxonHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }

  bool isAvailable() const override { return device_count() > 0; }

  bool hasPrimaryContext(c10::DeviceIndex /*device_index*/) const override { return is_initialized(); }

  void init() const override { runtime(); }

  c10::DeviceIndex deviceCount() const override { return device_count(); }

  void setCurrentDevice(c10::DeviceIndex index) const override { set_device(index); }

  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    const c10::DeviceIndex old = current_device();
    if (index >= 0 && index != old) set_device(index);
    return old;
  }

  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override { return exchangeDevice(index); }

  bool isPinnedPtr(const void* data) const override {
    return is_initialized() && axon_host_is_pinned(runtime(), data) != 0;
  }

  at::Allocator* getPinnedMemoryAllocator() const override { return host_allocator(); }

  at::Device getDeviceFromPtr(void* data) const override {
    const c10::DeviceIndex index = device_of_pointer(data);
    TORCH_CHECK(index >= 0, "axon: ", data, " is not axon device memory");
    return c10::Device(kAxon, index);
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override { return default_generator(index); }

  at::Generator getNewGenerator(c10::DeviceIndex index) const override { return new_generator(index); }

  // Storage.resize_ and resize_ of a tensor past its storage: a new allocation, the old bytes copied in stream order.
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
    c10::StorageImpl* impl = storage.unsafeGetStorageImpl();
    const c10::DeviceIndex index = storage.device().index();
    c10::DeviceGuard on_device(storage.device());  // the allocator allocates on the current device; restored on throw
    c10::DataPtr fresh = impl->allocator()->allocate(new_bytes);
    const size_t keep = std::min(new_bytes, impl->nbytes());
    if (keep > 0) {
      AXON_CHECK(axon_memcpy_async(fresh.get(), impl->data(), keep, AXON_COPY_DEVICE_TO_DEVICE, current_stream(index)));
    }
    impl->set_data_ptr_noswap(std::move(fresh));  // the old block is freed in stream order, after the copy
    impl->set_nbytes(new_bytes);
  }
};

AxonHooks g_hooks;

// Registered when the extension loads, before Python renames the backend: torch.accelerator needs the hooks.
const bool g_registered = [] {
  at::RegisterPrivateUse1HooksInterface(&g_hooks);
  return true;
}();

}  // namespace
}  // namespace torch_axon

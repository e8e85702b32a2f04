// The device guard: how c10 (torch.Stream, torch.Event, torch.accelerator, DeviceGuard, autograd's streams) sets the
// current device and stream and works with events on axon. Each method translates to one libaxon call.
#include <c10/core/Allocator.h>
#include <c10/core/DeviceCapability.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include "AxonException.h"
#include "AxonFunctions.h"

namespace torch_axon {
namespace {

axon_event_t as_event(void* e) { return static_cast<axon_event_t>(e); }

struct AxonGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  static constexpr c10::DeviceType static_type = kAxon;

  c10::DeviceType type() const override { return kAxon; }

  c10::Device exchangeDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kAxon, "expected an axon device, got ", d);
    const c10::DeviceIndex old = current_device();
    if (d.index() != old) set_device(d.index());
    return c10::Device(kAxon, old);
  }

  c10::Device getDevice() const override { return c10::Device(kAxon, current_device()); }

  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kAxon, "expected an axon device, got ", d);
    set_device(d.index());
  }

  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_device(d.index());
    } catch (...) {
      // Destructor paths: a device that was valid when the guard was made stays valid, so nothing is lost here.
    }
  }

  c10::Stream getStream(c10::Device d) const override { return current_c10_stream(d.index()); }

  c10::Stream getDefaultStream(c10::Device d) const override {
    axon_stream_t s = nullptr;
    AXON_CHECK(axon_stream_default(device(resolve_device(d.index())), &s));
    return to_c10(s);
  }

  c10::Stream getStreamFromGlobalPool(c10::Device d, bool isHighPriority) const override {
    return stream_from_pool(d.index(), isHighPriority);
  }

  c10::Stream getNewStream(c10::Device d, int priority) const override {
    axon_stream_t s = nullptr;
    AXON_CHECK(axon_stream_create(device(resolve_device(d.index())), priority, &s));
    return to_c10(s);
  }

  // The axon_stream_t itself (valid for the runtime's life: streams are retired, never freed).
  void* getStreamNativeHandle(const c10::Stream s) const override { return to_axon(s); }

  c10::Stream exchangeStream(c10::Stream s) const override {
    const c10::Stream old = current_c10_stream(s.device_index());
    set_current_stream(s);
    return old;
  }

  void destroyEvent(void* event, const c10::DeviceIndex /*device_index*/) const noexcept override {
    axon_event_destroy(as_event(event));
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "Event device index ",
                static_cast<int>(device_index), " does not match recording stream's device index ",
                static_cast<int>(stream.device_index()), ".");
    if (*event == nullptr) {
      // CUDA's convention: BACKEND_DEFAULT keeps timing (torch.Event(enable_timing=True)), PYTORCH_DEFAULT drops it.
      const unsigned flags = flag == c10::EventFlag::BACKEND_DEFAULT ? AXON_EVENT_TIMING : AXON_EVENT_DEFAULT;
      axon_event_t e = nullptr;
      AXON_CHECK(axon_event_create(runtime(), flags, &e));
      *event = e;
    }
    AXON_CHECK(axon_event_record(as_event(*event), to_axon(stream)));
  }

  void block(void* event, const c10::Stream& stream) const override {
    if (event == nullptr) return;
    AXON_CHECK(axon_stream_wait_event(to_axon(stream), as_event(event)));
  }

  bool queryEvent(void* event) const override {
    if (event == nullptr) return true;
    const axon_status_t st = axon_event_query(as_event(event));
    if (st == AXON_ERROR_NOT_READY) return false;
    AXON_CHECK(st);
    return true;
  }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  c10::DeviceCapability getDeviceCapability(c10::Device /*d*/) const override {
    c10::DeviceCapability cap;  // every dtype but the quantized ones: storage and copies handle them all
    cap.capability_data.supported_scalar_types.has_QInt8 = 0;
    cap.capability_data.supported_scalar_types.has_QUInt8 = 0;
    cap.capability_data.supported_scalar_types.has_QInt32 = 0;
    cap.capability_data.supported_scalar_types.has_QUInt4x2 = 0;
    cap.capability_data.supported_scalar_types.has_QUInt2x4 = 0;
    return cap;
  }

  bool queryStream(const c10::Stream& stream) const override {
    const axon_status_t st = axon_stream_query(to_axon(stream));
    if (st == AXON_ERROR_NOT_READY) return false;
    AXON_CHECK(st);
    return true;
  }

  void synchronizeStream(const c10::Stream& stream) const override { AXON_CHECK(axon_stream_sync(to_axon(stream))); }

  void synchronizeEvent(void* event) const override {
    if (event != nullptr) AXON_CHECK(axon_event_sync(as_event(event)));
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    AXON_CHECK(axon_device_synchronize(device(device_index < 0 ? current_device() : device_index)));
  }

  void recordDataPtrOnStream(const c10::DataPtr& data_ptr, const c10::Stream& stream) const override {
    if (data_ptr.get() == nullptr) return;
    AXON_CHECK(axon_mem_record_stream(device(data_ptr.device().index()), data_ptr.get(), to_axon(stream)));
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex /*device_index*/) const override {
    TORCH_CHECK(start && end, "Both events must be recorded before calculating elapsed time.");
    float ms = 0;
    AXON_CHECK(axon_event_elapsed_ms(as_event(start), as_event(end), &ms));
    return ms;
  }
};

}  // namespace
}  // namespace torch_axon

C10_REGISTER_GUARD_IMPL(PrivateUse1, torch_axon::AxonGuardImpl);

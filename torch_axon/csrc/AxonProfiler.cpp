// The profiler: axon device time in torch.profiler, from libaxon's tracing (axon/trace.h).
//
// Two modes, as torch 2.13 chooses them (torch/autograd/profiler.py):
// - torch.profiler.profile(activities=[..., ProfilerActivity.PrivateUse1]) (use_kineto=True) runs
//   KINETO_PRIVATEUSE1: Kineto asks the IActivityProfiler registered below for a session, which turns libaxon tracing
//   on for the session and hands every command libaxon executed meanwhile back as a kernel activity, on its own
//   track ("axon:N", one row per "stream K"). Built only when torch has Kineto (CMake defines USE_KINETO for this
//   file alone, as torch's own profiler sources are compiled).
// - torch.autograd.profiler.profile(use_device="axon", use_kineto=False) runs KINETO_PRIVATEUSE1_FALLBACK: the
//   ProfilerStubs below record a timing event on the current stream at each op's start and end, and the op's device
//   time is the time between the two.
#include <c10/core/DeviceGuard.h>
#include <c10/util/ApproximateClock.h>
#include <c10/util/Exception.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <functional>
#include <memory>

#include "AxonException.h"
#include "AxonFunctions.h"

#ifdef USE_KINETO
#include <libkineto.h>
#include <output_base.h>
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <cstdint>
#include <iterator>
#include <set>
#include <string>
#include <utility>
#include <vector>
#endif

namespace torch_axon {
namespace {

#ifdef USE_KINETO

// The offset that turns a libaxon timestamp (CLOCK_MONOTONIC, axon_clock_ns) into the clock of torch's CPU events and
// of Kineto's capture window: Unix-epoch nanoseconds (CLOCK_REALTIME), which is what c10::getTime() reads, what
// c10::ApproximateClockToUnixTimeConverter turns the profiler's TSC stamps into, and what libkineto's system_clock
// gives. The realtime read is bracketed by two monotonic reads; the tightest of a few brackets bounds the error even
// if the thread is preempted between reads once.
int64_t monotonic_to_unix_offset_ns() {
  int64_t best_width = INT64_MAX;
  int64_t offset = 0;
  for (int i = 0; i < 5; ++i) {
    const auto before = static_cast<int64_t>(axon_clock_ns());
    const int64_t unix_ns = c10::getTime();
    const auto after = static_cast<int64_t>(axon_clock_ns());
    if (after - before < best_width) {
      best_width = after - before;
      offset = unix_ns - (before + (after - before) / 2);
    }
  }
  return offset;
}

libkineto::DeviceInfo device_info(int index) {
  const std::string name = "axon:" + std::to_string(index);
  // Sorted after the CPU's pids (as Kineto's GPU rows are), in device order.
  return {.id = index, .sortIndex = libkineto::kExceedMaxPid + index, .name = name, .label = name};
}

class AxonProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  // Tracing may already be on (AXON_TRACE=1, torch_axon._C._trace_enable): the session leaves it as it found it and
  // reads only the records appended after its start.
  void start() override {
    try {
      axon_runtime_t rt = runtime();
      was_enabled_ = axon_trace_enabled(rt) != 0;
      first_ = axon_trace_count(rt);
      dropped_ = axon_trace_dropped(rt);
      // Records someone else kept stay theirs; when there are none and tracing was off, everything recorded belongs
      // to this session, which clears it at the end so that repeated sessions do not fill the buffer.
      owns_buffer_ = !was_enabled_ && first_ == 0;
      offset_ns_ = monotonic_to_unix_offset_ns();
      AXON_CHECK(axon_trace_enable(rt, 1));
      status_ = libkineto::TraceStatus::RECORDING;
    } catch (const c10::Error& e) {
      fail(e);
    }
  }

  // Reads the session's records now, so that tracing can go back off (and its buffer be cleared) at once.
  void stop() override {
    if (status_ != libkineto::TraceStatus::RECORDING) return;
    try {
      axon_runtime_t rt = runtime();
      if (!was_enabled_) AXON_CHECK(axon_trace_enable(rt, 0));
      axon_trace_record_t buf[256];
      size_t got = 0;
      for (size_t first = first_;; first += got) {
        AXON_CHECK(axon_trace_read(rt, first, std::size(buf), buf, &got));
        records_.insert(records_.end(), buf, buf + got);
        if (got < std::size(buf)) break;
      }
      // (A count below the start's means someone cleared the records meanwhile.)
      if (const size_t dropped = axon_trace_dropped(rt); dropped > dropped_) {
        errors_.push_back("axon: " + std::to_string(dropped - dropped_) +
                          " commands were not traced: libaxon's trace buffer (" +
                          std::to_string(AXON_TRACE_CAPACITY) + " records) is full");
        TORCH_WARN(errors_.back());
      }
      if (owns_buffer_) AXON_CHECK(axon_trace_clear(rt));
      status_ = libkineto::TraceStatus::PROCESSING;
    } catch (const c10::Error& e) {
      fail(e);
    }
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override { processTrace(logger, nullptr, INT64_MIN, INT64_MAX); }

  // One CONCURRENT_KERNEL activity per record, in Unix-epoch ns. Kineto drops GPU activities that do not lie inside
  // the capture window (GenericActivityProfiler::outOfRange); so does this, which leaves out commands queued before
  // the session that were still running when it started. libaxon's records carry no correlation id, so the kernels
  // are not linked to the CPU ops that launched them.
  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback /*linked*/,
                    int64_t start_time, int64_t end_time) override {
    // The activities must outlive this session: Kineto takes them over with getTraceBuffer(), and the logger keeps
    // only pointers.
    trace_ = std::make_unique<libkineto::CpuTraceBuffer>();
    // Its span is the session's row under "Spans" in the Chrome trace, named as torch's own: "axon (0)".
    trace_->span = libkineto::TraceSpan(start_time == INT64_MIN ? 0 : start_time, end_time == INT64_MAX ? 0 : end_time,
                                        "axon");
    trace_->span.iteration = 0;
    trace_->gpuOpCount = 0;
    std::set<std::pair<int, uint64_t>> streams;
    for (const axon_trace_record_t& r : records_) {
      const int64_t start = static_cast<int64_t>(r.start_ns) + offset_ns_;
      const int64_t end = static_cast<int64_t>(r.end_ns) + offset_ns_;
      if (start < start_time || end > end_time) continue;
      trace_->emplace_activity(trace_->span, libkineto::ActivityType::CONCURRENT_KERNEL, r.name ? r.name : "kernel");
      libkineto::GenericTraceActivity& act = *trace_->activities.back();
      act.startTime = start;
      act.endTime = end;
      act.device = r.device;
      act.resource = static_cast<int32_t>(r.stream);
      act.addMetadata("device", r.device);
      act.addMetadata("stream", r.stream);
      act.addMetadata("bytes", r.bytes);
      act.log(logger);
      streams.emplace(r.device, r.stream);
      ++trace_->gpuOpCount;
    }
    trace_->span.opCount = trace_->gpuOpCount;
    // Kineto asks a session for one device to name (getDeviceInfo: axon:0); the others with records are named here.
    // `streams` is sorted by device, so a device's streams come together.
    for (const auto& [device, stream] : streams) {
      if (device != 0 && (resources_.empty() || resources_.back().deviceId != device)) {
        logger.handleDeviceInfo(device_info(device), start_time);
      }
      resources_.push_back({.id = static_cast<int64_t>(stream), .sortIndex = static_cast<int64_t>(stream),
                            .deviceId = device, .name = "stream " + std::to_string(stream)});
    }
  }

  // Naming a device also keeps Kineto from labelling pids 0..15 as "GPU N", which is what it does when no session
  // names one.
  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(device_info(0));
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override { return resources_; }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(trace_); }

 private:
  // Kineto calls start and stop from inside torch's profiler; an error is reported, not thrown through it.
  void fail(const c10::Error& e) {
    errors_.emplace_back(e.what_without_backtrace());
    TORCH_WARN("axon profiler: ", errors_.back());
    status_ = libkineto::TraceStatus::ERROR;
  }

  bool was_enabled_ = false;
  bool owns_buffer_ = false;
  size_t first_ = 0;
  size_t dropped_ = 0;
  int64_t offset_ns_ = 0;
  std::vector<axon_trace_record_t> records_;
  std::vector<std::string> errors_;
  std::unique_ptr<libkineto::CpuTraceBuffer> trace_;
  std::vector<libkineto::ResourceInfo> resources_;
};

class AxonActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<libkineto::ActivityType>& availableActivities() const override { return activities_; }

  // Kineto asks every registered profiler, also for CPU-only traces once axon was profiled in this process: a session
  // only when device activities were asked for and there is a device.
  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& /*config*/) override {
    if (!types.contains(libkineto::ActivityType::CONCURRENT_KERNEL) || device_count() == 0) return nullptr;
    return std::make_unique<AxonProfilerSession>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t /*ts_ms*/, int64_t /*duration_ms*/,
                                                                 const std::set<libkineto::ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_ = "axon";
  std::set<libkineto::ActivityType> activities_ = {libkineto::ActivityType::CONCURRENT_KERNEL};
};

// torch forwards the factory to Kineto when a KINETO_PRIVATEUSE1 trace is prepared.
REGISTER_PRIVATEUSE1_PROFILER(AxonActivityProfiler);

#endif  // USE_KINETO

axon_event_t as_event(const torch::profiler::impl::ProfilerVoidEventStub* e) {
  return static_cast<axon_event_t>(e->get());
}

struct AxonProfilerStubs final : public torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, torch::profiler::impl::ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    if (device) *device = current_device();
    axon_event_t e = nullptr;
    AXON_CHECK(axon_event_create(runtime(), AXON_EVENT_TIMING, &e));
    *event = std::shared_ptr<void>(e, [](void* p) { axon_event_destroy(static_cast<axon_event_t>(p)); });
    // The CPU time is Unix-epoch ns, the clock of the profiler's CPU events (as CUDA's stub takes it).
    if (cpu_ns) *cpu_ns = c10::getTime();
    AXON_CHECK(axon_event_record(e, current_stream()));
  }

  // Microseconds, though the name says nothing: torch reads the result as KinetoEvent::privateuse1ElapsedUs, and
  // CUDA's stub likewise returns milliseconds * 1000.
  float elapsed(const torch::profiler::impl::ProfilerVoidEventStub* start,
                const torch::profiler::impl::ProfilerVoidEventStub* end) const override {
    AXON_CHECK(axon_event_sync(as_event(start)));
    AXON_CHECK(axon_event_sync(as_event(end)));
    float ms = 0;
    AXON_CHECK(axon_event_elapsed_ms(as_event(start), as_event(end), &ms));
    return ms * 1000.0f;
  }

  // Markers and ranges are for an external tracer (NVTX, ITT); axon has none.
  void mark(const char* /*name*/) const override {}
  void rangePush(const char* /*name*/) const override {}
  void rangePop() const override {}

  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    c10::OptionalDeviceGuard guard;  // restores the current device afterwards, also if op throws
    const c10::DeviceIndex n = device_count();
    for (c10::DeviceIndex i = 0; i < n; ++i) {
      guard.reset_device(c10::Device(kAxon, i));
      op(i);
    }
  }

  // The current device, as cudaDeviceSynchronize; the profiler runs it under onEachDevice.
  void synchronize() const override { AXON_CHECK(axon_device_synchronize(device(current_device()))); }
};

AxonProfilerStubs g_stubs;

const bool g_stubs_registered = [] {
  torch::profiler::impl::registerPrivateUse1Methods(&g_stubs);
  return true;
}();

}  // namespace
}  // namespace torch_axon

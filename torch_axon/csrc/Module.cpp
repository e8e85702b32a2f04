// The Python module torch_axon._C: bindings over libaxon's C API and the glue's state, for the torch.axon module.
// No algorithms here: each function reads or sets one thing and translates it into Python objects.
#include <axon/axon.h>
#include <axon/fft.h>
#include <axon/linalg.h>

#include <ATen/core/CachingHostAllocator.h>
#include <ATen/core/Generator.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/Generator.h>

#include <string>
#include <vector>

#include "AxonCompile.h"
#include "AxonException.h"
#include "AxonFallback.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"

namespace py = pybind11;

namespace torch_axon {
namespace {

std::vector<std::string> feature_names(unsigned features) {
  std::vector<std::string> names;
  for (unsigned i = 0; i < 32; ++i) {
    const unsigned bit = 1u << i;
    if (features & bit) {
      const char* name = axon_cpu_feature_name(bit);
      names.emplace_back(name ? name : "bit" + std::to_string(i));
    }
  }
  return names;
}

py::dict device_info(axon_device_t dev) {
  axon_device_props_t p;
  AXON_CHECK(axon_device_properties(dev, &p));
  size_t free_bytes = 0, total_bytes = 0;
  AXON_CHECK(axon_mem_get_info(dev, &free_bytes, &total_bytes));
  py::dict d;
  d["index"] = p.index;
  d["name"] = std::string(p.name);
  d["cpu_model"] = std::string(p.cpu_model);
  d["port"] = std::string(p.port);
  d["threads"] = p.threads;
  d["strict"] = p.strict != 0;
  d["total_memory"] = p.total_memory;
  d["page_size"] = p.page_size;
  d["capability"] = py::make_tuple(p.major, p.minor);
  d["cpu_features"] = feature_names(p.cpu_features);
  d["mem_get_info"] = py::make_tuple(free_bytes, total_bytes);  // (free, total), as torch.cuda.mem_get_info
  return d;
}

axon_runtime_t started_runtime() {
  py::gil_scoped_release no_gil;  // creation starts worker threads and maps memory
  return runtime();
}

// What the process-wide runtime sees; creates it (from the AXON_* environment) on the first call.
py::dict runtime_info() {
  axon_runtime_t rt = started_runtime();
  py::dict info;
  info["version"] = std::string(axon_version());
  info["header_version"] = std::to_string(AXON_VERSION_MAJOR) + "." + std::to_string(AXON_VERSION_MINOR) + "." +
                           std::to_string(AXON_VERSION_PATCH);
  const int n = axon_device_count(rt);
  info["device_count"] = n;
  py::list devices;
  for (int i = 0; i < n; ++i) devices.append(device_info(device(static_cast<c10::DeviceIndex>(i))));
  info["devices"] = devices;
  return info;
}

py::dict device_properties(int index) {
  started_runtime();
  return device_info(device(static_cast<c10::DeviceIndex>(index)));
}

// For tests of the error mapping: raises what AXON_CHECK raises for `status` (any nonzero value).
void raise_status(int status) { AXON_CHECK(static_cast<axon_status_t>(status)); }

void synchronize(int index) {
  axon_device_t d = device(static_cast<c10::DeviceIndex>(index < 0 ? current_device() : index));
  py::gil_scoped_release no_gil;
  AXON_CHECK(axon_device_synchronize(d));
}

py::object default_generator_object(int index) {
  const at::Generator& g = default_generator(static_cast<c10::DeviceIndex>(index));
  return py::reinterpret_steal<py::object>(THPGenerator_initDefaultGenerator(g));
}

void set_memory_capacity(int index, size_t bytes) {
  AXON_CHECK(axon_mem_set_capacity(device(static_cast<c10::DeviceIndex>(index)), bytes));
}

py::dict stat_dict(const c10::CachingAllocator::Stat& s) {
  py::dict d;
  d["current"] = s.current;
  d["peak"] = s.peak;
  d["allocated"] = s.allocated;
  d["freed"] = s.freed;
  return d;
}

// The pinned allocator's statistics as torch.cuda.host_memory_stats_as_nested_dict names them (through the registered
// at::HostAllocator, which maps libaxon's counters; zeros before the runtime starts, without starting it).
py::dict host_memory_stats() {
  const at::HostStats s = host_allocator()->get_stats();
  py::dict d;
  d["allocations"] = stat_dict(s.allocations);
  d["allocated_bytes"] = stat_dict(s.allocated_bytes);
  d["active_requests"] = stat_dict(s.active_requests);
  d["active_bytes"] = stat_dict(s.active_bytes);
  d["num_host_alloc"] = s.num_host_alloc;
  d["num_host_free"] = s.num_host_free;
  return d;
}

void host_empty_cache() { AXON_CHECK(axon_host_empty_cache(started_runtime())); }

void trace_enable(bool on) { AXON_CHECK(axon_trace_enable(started_runtime(), on ? 1 : 0)); }

void trace_clear() { AXON_CHECK(axon_trace_clear(started_runtime())); }

// Every kept record as (name, device, stream, start_ns, end_ns, bytes).
py::list trace_records() {
  axon_runtime_t rt = started_runtime();
  py::list out;
  axon_trace_record_t buf[256];
  size_t first = 0, got = 0;
  do {
    AXON_CHECK(axon_trace_read(rt, first, 256, buf, &got));
    for (size_t i = 0; i < got; ++i) {
      const auto& r = buf[i];
      out.append(py::make_tuple(std::string(r.name ? r.name : "?"), r.device, r.stream, r.start_ns, r.end_ns, r.bytes));
    }
    first += got;
  } while (got == 256);
  return out;
}

void trace_export_chrome(const std::string& path) { AXON_CHECK(axon_trace_export_chrome(started_runtime(), path.c_str())); }

// c10 errors thrown by AXON_CHECK reach Python the way torch's own do: c10::OutOfMemoryError as
// torch.OutOfMemoryError, c10::Error as RuntimeError. Local to this module, so torch's translators stay untouched.
void translate_c10_error(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const c10::Error&) {
    torch::translate_exception_to_python(p);
  }
}

}  // namespace
}  // namespace torch_axon

PYBIND11_MODULE(_C, m) {
  using namespace torch_axon;
  m.doc() = "torch_axon's native part: bindings over libaxon and the PyTorch glue";
  py::register_local_exception_translator(&translate_c10_error);
  register_compile_bindings(m);
  m.def("runtime_info", &runtime_info,
        "What the default runtime sees: libaxon's version and, per device, its properties and memory info.");
  m.def("_raise_status", &raise_status, "Raise what a libaxon call failing with this status raises.");
  m.def("_init", [] { started_runtime(); }, "Start the runtime (idempotent).");
  m.def("_is_initialized", &is_initialized);
  m.def("_in_bad_fork", &in_bad_fork);
  m.def("_device_count", [] { return static_cast<int>(device_count()); });
  m.def("_get_device", [] { return static_cast<int>(current_device()); });
  m.def("_set_device", [](int i) { set_device(static_cast<c10::DeviceIndex>(i)); });
  m.def("_synchronize", &synchronize, py::arg("device") = -1);
  m.def("_device_properties", &device_properties);
  m.def("_default_generator", &default_generator_object);
  m.def("_set_memory_capacity", &set_memory_capacity);
  m.def("_host_memory_stats", &host_memory_stats);
  m.def("_host_empty_cache", &host_empty_cache);
  m.def("_fft_available", [] { return axon_fft_available() != 0; }, "Whether libaxon has its FFT (built with MKL).");
  m.def("_linalg_available", [] { return axon_linalg_available() != 0; },
        "Whether libaxon has its linear algebra (built with MKL's LAPACK).");
  m.def("_fallback_counts", &fallback_counts);
  m.def("_reset_fallback_counts", &reset_fallback_counts);
  m.def("_set_strict_fallback", &set_strict_fallback);
  m.def("_get_strict_fallback", &get_strict_fallback);
  m.def("_trace_enable", &trace_enable);
  m.def("_trace_clear", &trace_clear);
  m.def("_trace_records", &trace_records);
  m.def("_trace_export_chrome", &trace_export_chrome);
  m.def("_stream_priority", [](int index, int64_t id) {
    return axon_stream_priority(to_axon(c10::Stream(c10::Stream::UNSAFE, c10::Device(kAxon, static_cast<c10::DeviceIndex>(index)), id)));
  });
  m.attr("_stream_priority_range") = py::make_tuple(AXON_STREAM_PRIORITY_LOWEST, AXON_STREAM_PRIORITY_HIGHEST);
}

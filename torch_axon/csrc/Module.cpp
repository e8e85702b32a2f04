// The Python module torch_axon._C: bindings over libaxon's C API. No algorithms here: each function reads libaxon and
// translates the result into Python objects.
#include <axon/axon.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/Exceptions.h>

#include "AxonException.h"

#include <string>
#include <vector>

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

// What the process-wide runtime sees; creates it (from the AXON_* environment) on the first call.
py::dict runtime_info() {
  axon_runtime_t rt = nullptr;
  {
    py::gil_scoped_release no_gil;  // creation starts worker threads and maps memory
    AXON_CHECK(axon_runtime_default(&rt));
  }
  py::dict info;
  info["version"] = std::string(axon_version());
  info["header_version"] = std::to_string(AXON_VERSION_MAJOR) + "." + std::to_string(AXON_VERSION_MINOR) + "." +
                           std::to_string(AXON_VERSION_PATCH);
  const int n = axon_device_count(rt);
  info["device_count"] = n;
  py::list devices;
  for (int i = 0; i < n; ++i) {
    axon_device_t dev = nullptr;
    AXON_CHECK(axon_device_get(rt, i, &dev));
    devices.append(device_info(dev));
  }
  info["devices"] = devices;
  return info;
}

// For tests of the error mapping: raises what AXON_CHECK raises for `status` (any nonzero value).
void raise_status(int status) {
  AXON_CHECK(static_cast<axon_status_t>(status));
}

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
  m.doc() = "torch_axon's native part: bindings over libaxon";
  py::register_local_exception_translator(&torch_axon::translate_c10_error);
  m.def("runtime_info", &torch_axon::runtime_info,
        "What the default runtime sees: libaxon's version and, per device, its properties and memory info.");
  m.def("_raise_status", &torch_axon::raise_status, "Raise what a libaxon call failing with this status raises.");
}

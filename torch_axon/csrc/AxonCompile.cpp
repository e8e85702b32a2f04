// The glue between torch_axon/compile (the torch.compile front end) and libaxon's graph compiler
// (libaxon/include/axon/compiler.h, axir.h). It holds no algorithms: it hands AXIR text to libaxon, keeps the program
// in a Python object, and runs it with the calling protocol of compiler.h (prepare, allocate outputs and workspace
// with the axon caching allocator, run on the current stream).
#include "AxonCompile.h"

#include <ATen/ATen.h>
#include <axon/axir.h>
#include <axon/compiler.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "AxonException.h"
#include "AxonFunctions.h"
#include "AxonGenerator.h"
#include "AxonTensor.h"


namespace py = pybind11;

namespace torch_axon {
namespace {

// A compiled program, owned by Python; destroyed with the last reference.
struct Program {
  std::shared_ptr<axon_program_t> p;
};

std::string diag_text(axon_status_t s, const axon_axir_diag_t& diag) {
  char buf[640];
  axon_axir_diag_format(&diag, buf, sizeof buf);
  // The status name first, so that callers can tell "tier 0 cannot run this" (UNSUPPORTED) from malformed text.
  return std::string(axon_status_name(s)) + ": " + buf;
}

std::string take_text(char* text, size_t len) {
  std::string s(text, len);
  std::free(text);
  return s;
}

Program compile(const std::string& text) {
  axon_compile_options_t opts = axon_compile_options_default();
  axon_program_t* p = nullptr;
  axon_axir_diag_t diag{};
  axon_status_t s;
  {
    py::gil_scoped_release no_gil;
    s = axon_compile_text(text.data(), text.size(), &opts, &p, &diag);
  }
  if (s != AXON_OK) throw std::runtime_error(diag_text(s, diag));
  TORCH_CHECK(p != nullptr, "axon compile: axon_compile_text returned no program");
  return Program{std::shared_ptr<axon_program_t>(p, [](axon_program_t* q) { axon_program_destroy(q); })};
}

// Whether tier 0 runs AXIR op `op` with dtype `dtype` (AXIR spellings).
bool compile_supports(const std::string& op, const std::string& dtype) {
  const axon_axir_op_t o = axon_axir_op_lookup(op.data(), op.size());
  axon_dtype_t d;
  if (o == AXON_AXIR_OP_INVALID || !axon_axir_dtype_lookup(dtype.data(), dtype.size(), &d)) return false;
  return axon_compile_supports(o, d) != 0;
}

// How many of the program's fused groups run as tier-1 generated C now; with wait, after its compile has finished
// (raising with the reason if there is none: no fused group, no C compiler, a failed compile).
int program_tier1_ready(const Program& prog, bool wait) {
  if (wait) {
    axon_status_t s;
    {
      py::gil_scoped_release no_gil;
      s = axon_program_wait_tier1(prog.p.get());
    }
    AXON_CHECK(s);
  }
  return axon_program_tier1_ready(prog.p.get());
}

// The canonical text of a parsed module: the parser and printer's view of the front end's output.
std::string axir_parse(const std::string& text) {
  axon_axir_module_t* m = nullptr;
  axon_axir_diag_t diag{};
  const axon_status_t s = axon_axir_parse(text.data(), text.size(), &m, &diag);
  if (s != AXON_OK) throw std::runtime_error(diag_text(s, diag));
  std::unique_ptr<axon_axir_module_t, void (*)(axon_axir_module_t*)> owned(m, axon_axir_module_destroy);
  char* out = nullptr;
  size_t len = 0;
  AXON_CHECK(axon_axir_print(m, &out, &len));
  return take_text(out, len);
}

std::string program_text(const Program& prog) {
  char* out = nullptr;
  size_t len = 0;
  AXON_CHECK(axon_axir_print(axon_program_module(prog.p.get()), &out, &len));
  return take_text(out, len);
}

c10::ScalarType scalar_type_of(axon_dtype_t d) {
  switch (d) {
    case AXON_FLOAT32: return at::kFloat;
    case AXON_FLOAT64: return at::kDouble;
    case AXON_FLOAT16: return at::kHalf;
    case AXON_BFLOAT16: return at::kBFloat16;
    case AXON_INT8: return at::kChar;
    case AXON_UINT8: return at::kByte;
    case AXON_INT16: return at::kShort;
    case AXON_INT32: return at::kInt;
    case AXON_INT64: return at::kLong;
    case AXON_BOOL: return at::kBool;
    case AXON_COMPLEX64: return at::kComplexFloat;
    case AXON_COMPLEX128: return at::kComplexDouble;
    default: TORCH_CHECK(false, "axon program: an output has unknown dtype ", static_cast<int>(d));
  }
}

// One call of a compiled partition: inputs are the partition's tensor inputs in parameter order.
std::vector<at::Tensor> program_run(const Program& prog, const std::vector<at::Tensor>& inputs) {
  axon_program_t* p = prog.p.get();
  const int nin = axon_program_num_inputs(p), nout = axon_program_num_outputs(p);
  TORCH_CHECK(static_cast<int>(inputs.size()) == nin, "axon program: expected ", nin, " input tensors, got ",
              inputs.size());
  TORCH_CHECK(nin > 0, "axon program: a program without tensor inputs cannot pick a device");
  const c10::Device dev = inputs[0].device();
  std::vector<axon_tensor_t> in(nin);
  for (int i = 0; i < nin; ++i) {
    const at::Tensor& t = inputs[i];
    TORCH_CHECK(t.defined(), "axon program: input ", i, " is undefined");
    TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "axon program: input ", i,
                " is on device '", t.device().str(), "'; a compiled axon program takes axon tensors only");
    TORCH_CHECK(t.device() == dev, "axon program: input ", i, " is on ", t.device().str(), " but input 0 is on ",
                dev.str());
    in[i] = describe(t, "axon program");
  }
  c10::DeviceGuard guard(dev);
  std::vector<axon_tensor_t> out(nout);
  size_t workspace_bytes = 0;
  AXON_CHECK(axon_program_prepare(p, nin, in.data(), nout, out.data(), &workspace_bytes));
  std::vector<at::Tensor> results;
  results.reserve(nout);
  const at::TensorOptions base = at::TensorOptions().device(dev);
  for (int i = 0; i < nout; ++i) {
    std::vector<int64_t> sizes(out[i].sizes, out[i].sizes + out[i].ndim);
    results.push_back(at::empty(sizes, base.dtype(scalar_type_of(out[i].dtype))));
    out[i] = describe(results.back(), "axon program");
  }
  // The workspace comes from the caching allocator like any tensor; 64 spare bytes let it be aligned as run needs.
  constexpr size_t kAlign = 64;
  at::Tensor workspace;
  void* ws = nullptr;
  if (workspace_bytes > 0) {
    workspace = at::empty({static_cast<int64_t>(workspace_bytes + kAlign)}, base.dtype(at::kByte));
    const uintptr_t addr = reinterpret_cast<uintptr_t>(workspace.data_ptr());
    ws = reinterpret_cast<void*>((addr + kAlign - 1) / kAlign * kAlign);
  }
  axon_stream_t stream = current_stream(dev.index());
  if (axon_program_num_draws(p) > 0) {
    // Dropout inside the program: its draws take the blocks eager kernels would, from the device's default generator.
    uint64_t blocks = 0;
    AXON_CHECK(axon_program_philox_blocks(p, nin, in.data(), &blocks));
    const PhiloxDraw draw = claim_philox(std::nullopt, dev.index(), blocks);
    py::gil_scoped_release no_gil;
    AXON_CHECK(axon_program_run_philox(p, stream, nin, in.data(), nout, out.data(), ws, workspace_bytes, draw.seed,
                                       draw.offset));
    return results;
  }
  {
    py::gil_scoped_release no_gil;
    AXON_CHECK(axon_program_run(p, stream, nin, in.data(), nout, out.data(), ws, workspace_bytes));
  }
  return results;
}

}  // namespace

void register_compile_bindings(py::module_& m) {
  py::class_<Program>(m, "_AxonProgram")
      .def_property_readonly("num_inputs", [](const Program& p) { return axon_program_num_inputs(p.p.get()); })
      .def_property_readonly("num_outputs", [](const Program& p) { return axon_program_num_outputs(p.p.get()); });
  m.def("_compile_supports", &compile_supports, py::arg("op"), py::arg("dtype"),
        "Whether tier 0 runs this AXIR op with this dtype (AXIR spellings).");
  m.def("_program_tier1_ready", &program_tier1_ready, py::arg("program"), py::arg("wait") = false,
        "How many of the program's fused groups run as tier-1 C; wait=True waits for tier 1's compile first.");
  m.def("_compile", &compile, py::arg("text"),
        "Compile AXIR text into a program; RuntimeError '<status name>: axir:LINE:COL: reason' on failure.");
  m.def("_axir_parse", &axir_parse, py::arg("text"),
        "Parse and verify AXIR text and return its canonical print; RuntimeError with the located diagnostic.");
  m.def("_program_run", &program_run, py::arg("program"), py::arg("inputs"),
        "Run a compiled program on axon tensors (its tensor inputs in order); returns new output tensors.");
  m.def("_program_text", &program_text, py::arg("program"), "The program's AXIR after all passes.");
}

}  // namespace torch_axon

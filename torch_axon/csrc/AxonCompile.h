// torch_axon._C's bindings for torch.compile(backend="axon"): AXIR text in, a compiled libaxon program out, and one
// call per run of a compiled graph partition (torch_axon/compile/ is the Python side).
#pragma once

#include <pybind11/pybind11.h>

namespace torch_axon {

// Adds _compile, _compile_supports, _program_run, _program_text, _program_tier1_ready and _axir_parse to m.
void register_compile_bindings(pybind11::module_& m);

}  // namespace torch_axon

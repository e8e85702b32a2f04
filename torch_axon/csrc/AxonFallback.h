// The host fallback's counters and policy (AxonFallback.cpp), for the Python bindings.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cstdint>
#include <map>
#include <string>

namespace torch_axon {

// Run `op` through the host fallback (counted, warned, refused in strict mode), as if it had no axon kernel: for
// native kernels that meet a case they do not handle.
void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// Uses of the host fallback so far, per op ("aten::cumsum"), since the last reset.
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

// Whether the fallback is refused with an error (AXON_STRICT=1 sets it at start-up).
void set_strict_fallback(bool strict);
bool get_strict_fallback();

}  // namespace torch_axon

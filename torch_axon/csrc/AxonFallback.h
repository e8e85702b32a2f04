// The host fallback (AxonFallback.cpp): the entry that native kernels call for a case they do not handle, and its
// counters and policy for the Python bindings.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <ATen/native/CPUFallback.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>

namespace torch_axon {

// Run `op` through the host fallback (counted, warned, refused in strict mode), as if it had no axon kernel: for
// native kernels that meet a case they do not handle.
void host_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);

// host_fallback with an op's own unboxed signature: `return fall_back<ATEN_OP2(mm, out)>(self, mat2, out);` in a
// kernel that declines. Op is the ATEN_OP tag; the arguments are the kernel's, passed on as they came. One copy for
// every op file, so that all of them are counted and refused (strict mode) the same way.
template <class Op, class... Args>
decltype(auto) fall_back(Args&&... args) {
  return at::native::call_fallback_fn<&host_fallback, Op>::call(std::forward<Args>(args)...);
}

// The same for ops whose sizes are SymInt (convolution): the fallback is called with them as they came.
template <class Op, class... Args>
decltype(auto) fall_back_symint(Args&&... args) {
  return at::native::call_fallback_fn_symint<&host_fallback, Op>::call(std::forward<Args>(args)...);
}

// Uses of the host fallback so far, per op ("aten::cumsum"), since the last reset.
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

// Whether the fallback is refused with an error (AXON_STRICT=1 sets it at start-up).
void set_strict_fallback(bool strict);
bool get_strict_fallback();

}  // namespace torch_axon

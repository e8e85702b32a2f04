// AXON_CHECK: turns a failed libaxon status into a C++ exception at the caller's location, carrying the message that
// libaxon left for this thread (axon_last_error). AXON_ERROR_OUT_OF_MEMORY becomes c10::OutOfMemoryError (Python:
// torch.OutOfMemoryError); every other status becomes c10::Error (Python: RuntimeError).
#pragma once

#include <axon/status.h>
#include <c10/macros/Macros.h>

namespace torch_axon {

// Throws for status s (never AXON_OK); expr, function, file and line describe the failing call.
[[noreturn]] void check_failed(axon_status_t s, const char* expr, const char* function, const char* file,
                               int line);

}  // namespace torch_axon

#define AXON_CHECK(expr)                                                                               \
  do {                                                                                                 \
    const axon_status_t axon_check_status_ = (expr);                                                   \
    if (C10_UNLIKELY(axon_check_status_ != AXON_OK)) {                                                 \
      ::torch_axon::check_failed(axon_check_status_, #expr, __func__, __FILE__, __LINE__);             \
    }                                                                                                  \
  } while (0)

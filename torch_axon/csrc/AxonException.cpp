#include "AxonException.h"

#include <c10/util/Exception.h>

#include <string>

namespace torch_axon {

void check_failed(axon_status_t s, const char* expr, const char* function, const char* file, int line) {
  // libaxon's message names the device, sizes or variable involved; the status name and the call say where.
  const char* reason = axon_last_error();
  std::string msg = (reason && *reason) ? reason : "(libaxon left no message)";
  msg += " [";
  msg += axon_status_name(s);
  msg += " from ";
  msg += expr;
  msg += "]";
  const c10::SourceLocation where{function, file, static_cast<uint32_t>(line)};
  if (s == AXON_ERROR_OUT_OF_MEMORY) {
    throw c10::OutOfMemoryError(where, std::move(msg));
  }
  throw c10::Error(where, std::move(msg));
}

}  // namespace torch_axon

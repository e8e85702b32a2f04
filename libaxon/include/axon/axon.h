/* libaxon: the Axon device runtime. Include this one header for the whole public API. */
#ifndef AXON_AXON_H
#define AXON_AXON_H

#include "axon/export.h"
#include "axon/status.h"
#include "axon/runtime.h"
#include "axon/memory.h"
#include "axon/pool.h"
#include "axon/stream.h"
#include "axon/trace.h"
#include "axon/hw.h"
#include "axon/tensor.h"
#include "axon/kernels.h"
#include "axon/pointwise.h"
#include "axon/reduce.h"
#include "axon/gemm.h"
#include "axon/index.h"
#include "axon/norm.h"
#include "axon/conv.h"
#include "axon/axir.h"
#include "axon/compiler.h"

#define AXON_VERSION_MAJOR 0
#define AXON_VERSION_MINOR 1
#define AXON_VERSION_PATCH 0

AXON_EXTERN_C_BEGIN
/* "0.1.0": the library's version, which may differ from the headers' if the wrong library is loaded. */
AXON_API const char *axon_version(void);
AXON_EXTERN_C_END

#endif

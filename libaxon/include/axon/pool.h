/* The worker pool: parallel-for over index ranges.
 *
 * A pool has n participants: n - 1 helper threads plus whichever thread calls axon_parallel_for. The caller always
 * works on its own job too, so a call completes even when every helper is busy with other callers' jobs (several
 * streams may run kernels at once). Helpers spin briefly before they sleep, so back-to-back kernels pay no wake-up.
 * Kernels get a pool through their axon_exec_t and never start threads themselves. */
#ifndef AXON_POOL_H
#define AXON_POOL_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/status.h"

AXON_EXTERN_C_BEGIN

typedef struct axon_pool *axon_pool_t;

/* Body of a parallel loop: handle [begin, end). `slot` is unique among the participants of this call and lies in
 * [0, axon_pool_size(p)), so it can index per-thread scratch space. */
typedef void (*axon_range_fn)(void *ctx, int64_t begin, int64_t end, int slot);

/* Create a pool of nthreads participants (nthreads - 1 helper threads). nthreads < 1 is AXON_ERROR_INVALID_ARG. */
AXON_API axon_status_t axon_pool_create(int nthreads, axon_pool_t *out);

/* Stop and join the helpers. NULL is a no-op. No parallel-for may be running. */
AXON_API void axon_pool_destroy(axon_pool_t p);

/* Number of participants. */
AXON_API int axon_pool_size(axon_pool_t p);

/* Run fn over [begin, end) in chunks of at least `grain` indices (grain < 1 counts as 1), spread over the pool.
 * Returns when every chunk has run. Runs inline, in one chunk, when the range is at most one grain or p is NULL.
 * Safe to call from several threads at once; a call from inside fn runs inline. */
AXON_API void axon_parallel_for(axon_pool_t p, int64_t begin, int64_t end, int64_t grain, axon_range_fn fn,
                                void *ctx);

AXON_EXTERN_C_END

#endif

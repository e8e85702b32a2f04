/* What the indexing files share: reading index values, the run-time bounds check that every indexing command does
 * before it writes, and moving one element of any size. Never installed. */
#ifndef AXON_KERNELS_INDEX_IMPL_H
#define AXON_KERNELS_INDEX_IMPL_H

#include <stdint.h>
#include <string.h>

#include "axon/index.h"
#include "axon/stream.h"
#include "kernels_impl.h"

/* One index value; is64 picks int64 over int32. */
static inline int64_t ix_load(const char *p, int is64) {
    if (is64) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Copy one element of es bytes. Constant-size memcpys compile to plain moves. */
static inline void ix_move(char *d, const char *s, size_t es) {
    switch (es) {
    case 1: *d = *s; break;
    case 2: memcpy(d, s, 2); break;
    case 4: memcpy(d, s, 4); break;
    case 8: memcpy(d, s, 8); break;
    default: memcpy(d, s, 16); break;
    }
}

/* Launch-time checks shared by the ops: index dtype (int32/int64) and a dim in [-ndim, ndim), wrapped into *dim. */
axon_status_t axon_ix_check_index(const axon_tensor_t *index, const char *op);
axon_status_t axon_ix_wrap_dim(const char *op, int ndim, int *dim);

/* Run time: scan index (on pool) for a value outside [-size, size) (wrap) or [0, size). Returns AXON_OK, or fails with INVALID_ARG and
 * PyTorch's message naming op, the first bad value (in index's memory order), dim and size. */
axon_status_t axon_ix_check_bounds(const axon_tensor_t *index, int64_t size, int wrap, int dim, const char *op,
                                   axon_pool_t pool);

#endif

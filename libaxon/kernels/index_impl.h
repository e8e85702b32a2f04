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

/* Rows: the elements after dim, when they form one dense block (row-major strides; dims of size 1 do not count),
 * are one row of *inner elements that a single memcpy or vector loop can move. 1 if they do, else 0. */
static inline int ix_inner_rows(const axon_tensor_t *t, int dim, int64_t *inner) {
    int64_t step = 1;
    for (int d = t->ndim - 1; d > dim; d--) {
        if (t->sizes[d] != 1 && t->strides[d] != step) return 0;
        step *= t->sizes[d];
    }
    *inner = step;
    return 1;
}

/* Element offset of the o-th (row-major) position of the dims before dim, for t's strides and `shape`'s sizes. */
static inline int64_t ix_outer_offset(const axon_tensor_t *t, const axon_tensor_t *shape, int dim, int64_t o) {
    int64_t off = 0;
    for (int d = dim - 1; d >= 0 && o > 0; d--) {
        off += o % shape->sizes[d] * t->strides[d];
        o /= shape->sizes[d];
    }
    return off;
}

/* Below this many bytes a row is cheaper to move element by element than to set up as a row. */
#define IX_ROW_MIN_BYTES 64

/* Launch-time checks shared by the ops: index dtype (int32/int64) and a dim in [-ndim, ndim), wrapped into *dim. */
axon_status_t axon_ix_check_index(const axon_tensor_t *index, const char *op);

/* axon_kernel_check_dst (is_dst) or _src of an operand, naming it "op: role" (or "op: role[k]" for k >= 0) in the
 * message. The name is formatted only when the check fails: launches of small ops should not pay for snprintf. */
axon_status_t axon_ix_check_operand(const axon_tensor_t *t, const char *op, const char *role, int k, int is_dst);
axon_status_t axon_ix_wrap_dim(const char *op, int ndim, int *dim);

/* value (float64, int64, bool or complex128) converted with the copy rules into one element of dtype at bytes
 * (16 bytes of room); INVALID_ARG naming op for another scalar dtype. */
axon_status_t axon_ix_scalar_bytes(axon_scalar_t value, axon_dtype_t dtype, unsigned char *bytes, const char *op);

/* Run fn over [0, n) split into one contiguous part per participant of pool (at most 64), each participant working
 * through the part of its own slot first (the caller part 0, helper i part i), then helping with the others' in
 * pieces. Copy kernels repeated on the same, cache-resident data (a KV-cache update, an embedding lookup, a cat per
 * layer and step) then find their part in the same core's cache as on the previous call. The pool's own chunks,
 * claimed in a different order each call, move most lines between cores' caches every time: measured on 2 cores, a
 * gather of 512 rows of 1 KiB took 7 us with fixed halves and 22 us with the halves swapped on every call (15 us on
 * one thread). For work of even cost per unit; runs inline when the whole moves fewer than 64 KiB (`bytes`). */
void axon_ix_parallel_parts(axon_pool_t pool, int64_t n, double bytes, axon_range_fn fn, void *ctx);

/* Run time: scan index (on pool) for a value outside [-size, size) (wrap) or [0, size). Returns AXON_OK, or fails
 * with INVALID_ARG and PyTorch's message naming op, the first bad value (in index's memory order), dim and size. */
axon_status_t axon_ix_check_bounds(const axon_tensor_t *index, int64_t size, int wrap, int dim, const char *op,
                                   axon_pool_t pool);

/* For kernels that check their indices as they go: lowers *first to pos (an iterator position of a bad index) unless
 * it is already lower; and the check's outcome: AXON_OK when first is INT64_MAX, else axon_ix_check_bounds's failure
 * for the index at that position of `it`'s operand. */
void axon_ix_note_first(_Atomic int64_t *first, int64_t pos);
axon_status_t axon_ix_bounds_error(const axon_iter_t *it, int operand, int64_t first, int is64, const char *op,
                                   int dim, int64_t size);

#endif

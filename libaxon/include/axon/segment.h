/* Segment reductions (torch.segment_reduce): data cut along one dimension into consecutive segments whose lengths
 * (or offsets) are given per row, each segment reduced to one element. */
#ifndef AXON_SEGMENT_H
#define AXON_SEGMENT_H

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

typedef enum axon_segment_reduce {
    AXON_SEGMENT_SUM = 0,        /* empty segment: initial, else 0 */
    AXON_SEGMENT_MEAN,           /* (initial + sum) / length; empty: initial, else NaN */
    AXON_SEGMENT_MAX,            /* a NaN wins; empty: initial, else -inf */
    AXON_SEGMENT_MIN,            /* a NaN wins; empty: initial, else +inf */
    AXON_SEGMENT_PROD,           /* empty: initial, else 1 */
    AXON_SEGMENT_COUNT
} axon_segment_reduce_t;

/* Enqueue out[o, s, i] = op over data[o, j, i] for j in segment s of row o. data is [outer, n, inner] and out
 * [outer, segments, inner], contiguous floats of one dtype, computed in float64 and rounded once. lengths is
 * [outer, segments] (the segments' lengths, in order from 0) or, with is_offsets, [outer, segments + 1] (segment s is
 * [offsets[s], offsets[s + 1])), contiguous int32 or int64. With has_initial, initial seeds every segment's reduction.
 * A negative length, or a segment reaching outside [0, n), fails the command with INVALID_ARG when it runs (nothing
 * outside data is read). */
AXON_API axon_status_t axon_kernel_segment_reduce(axon_stream_t s, axon_segment_reduce_t op, const axon_tensor_t *out,
                                                  const axon_tensor_t *data, const axon_tensor_t *lengths,
                                                  int is_offsets, int has_initial, double initial);

/* Enqueue the gradient of axon_kernel_segment_reduce: grad_in (data's shape) gets, for every element of a segment,
 * sum: grad; mean: grad / length; max and min: grad at the elements equal to the result (or NaN), shared equally
 * among them where there are several and grad is positive (PyTorch's rule); prod: grad * out / x, or grad times the
 * product of the segment's other elements (and initial) where x is 0 or NaN. Elements outside every segment are not
 * written (the caller zeroes grad_in). grad and out are out's shape; lengths, is_offsets and initial as for the
 * forward, whose errors apply. */
AXON_API axon_status_t axon_kernel_segment_reduce_backward(axon_stream_t s, axon_segment_reduce_t op,
                                                           const axon_tensor_t *grad_in, const axon_tensor_t *grad,
                                                           const axon_tensor_t *out, const axon_tensor_t *data,
                                                           const axon_tensor_t *lengths, int is_offsets,
                                                           int has_initial, double initial);

AXON_EXTERN_C_END

#endif

/* Searching sorted data and counting integers: searchsorted (and bucketize, its 1-d case), isin and bincount.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to compute. Every tensor must be contiguous (callers copy strided views first).
 *
 * searchsorted compares as PyTorch's CPU kernel does, with `<`-style tests on float64 (floats) or int64 (integers):
 * a NaN value is never below an element, so it lands past the end, and a NaN met in the sequence moves the search
 * right, whatever the value (the same answers as PyTorch's CPU, not those of a search that put NaN last). Results are the same for any thread count (each value is one independent binary search).
 *
 * bincount adds in input order on one thread, in the output's dtype, so weighted sums round as PyTorch's CPU loop
 * does; an input value outside [0, bins) fails the command (the caller checks the range first, as CUDA does).
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors or mismatched shapes (the message shows
 * them); UNSUPPORTED for dtypes not listed at each function. */
#ifndef AXON_SEARCH_H
#define AXON_SEARCH_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* Enqueue out[..., j] = the insertion point of values[..., j] in the innermost row of sorted: the first position
 * whose element is >= the value (right == 0) or > the value (right != 0). sorted is 1-d [M] (every value searches
 * the same row) or has values' leading dims with its own last dim M. sorter (NULL: none) is int64 of sorted's shape
 * and gives the order in which to read each row; its entries must lie in [0, M) (the command fails otherwise).
 * sorted and values share one real dtype (not bool or complex); out is int32 or int64 with values' shape. */
AXON_API axon_status_t axon_kernel_searchsorted(axon_stream_t s, const axon_tensor_t *out,
                                                const axon_tensor_t *sorted, const axon_tensor_t *values,
                                                const axon_tensor_t *sorter, int right);

/* Enqueue out[v] = the number of entries of in equal to v (weights NULL), or the sum of their weights, for v in
 * [0, bins) where out is 1-d [bins]. in is a 1-d integer tensor (int8/16/32/64, uint8); weights (NULL or in's
 * shape) is any real dtype, converted to out's dtype on load. out is int64 without weights, float32 or float64 with
 * them. out is zeroed first. */
AXON_API axon_status_t axon_kernel_bincount(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in,
                                            const axon_tensor_t *weights);

/* Enqueue out[i] = (elements[i] equals some element of test_elements) != invert. elements and test_elements share
 * one real dtype (floats, integers, bool; not complex or float8) and any shapes; out is bool with elements' shape.
 * NaN equals nothing; -0.0 equals 0.0. The command fails with OUT_OF_MEMORY if the sorted copy of test_elements
 * (8 bytes each) cannot be had. */
AXON_API axon_status_t axon_kernel_isin(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *elements,
                                        const axon_tensor_t *test_elements, int invert);

AXON_EXTERN_C_END

#endif

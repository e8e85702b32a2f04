/* Embedding bags (torch.nn.functional.embedding_bag, nn.EmbeddingBag): sums, means or maxima of bags of rows of a
 * weight table, with optional per-sample weights; the weight's gradient and the per-sample weights' gradient.
 *
 * Like every kernel (kernels.h), a launch checks its descriptors on the calling thread, enqueues one command on
 * stream s and returns at once; descriptors are copied at launch; nothing is enqueued on error or when there is
 * nothing to do. Tensors are contiguous:
 *   weight [V, D];  indices [n] and offsets [B] or [B + 1] (include_last_offset), int32 or int64;
 *   out [B, D] in weight's dtype; offset2bag [n], bag_size [B] and max_indices [B, D] (max mode) int64.
 * Bag b holds the indices at positions [offsets[b], offsets[b + 1]) and the last bag runs to n (as PyTorch CPU: with
 * include_last_offset, offsets[B] is not read). Indices equal to padding_idx (>= 0; negative: none) are skipped;
 * bag_size counts the others. sum: the rows' sum, each row times its per-sample weight if given; mean: the sum
 * divided by bag_size; max: each column's maximum (the first in bag order on ties; a NaN never replaces an earlier
 * value, as on PyTorch CPU) and in max_indices the row it came from. An empty bag gives 0 (max_indices -1).
 * Indices and offsets are read when the command runs: an index outside [0, V), offsets[0] != 0, decreasing offsets
 * or an offset above n fail the command with INVALID_ARG (reported at the stream's next synchronization) before
 * anything is written.
 *
 * Dtypes: weight, out, per-sample weights and gradients float32, float64, float16 or bfloat16 (one of them per call);
 * sums in float32 (float64 for float64), rounded once on store. Work split: bags over the device's pool; the weight's
 * gradient gives every row to one thread, which adds in index order, so every result is the same for any thread
 * count.
 *
 * Errors at launch: INVALID_ARG for bad descriptors, non-contiguous tensors, shapes that do not fit the layout
 * above, an unknown mode, per-sample weights outside sum mode; UNSUPPORTED for other dtypes. */
#ifndef AXON_EMBEDDING_BAG_H
#define AXON_EMBEDDING_BAG_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

/* PyTorch's EmbeddingBagMode numbering. */
typedef enum axon_bag_mode {
    AXON_BAG_SUM = 0,
    AXON_BAG_MEAN = 1,
    AXON_BAG_MAX = 2,
    AXON_BAG_MODE_COUNT
} axon_bag_mode_t;

typedef struct axon_embedding_bag_params {
    axon_bag_mode_t mode;
    int include_last_offset;
    int64_t padding_idx;         /* < 0: none */
} axon_embedding_bag_params_t;

/* Enqueue the bags' reductions into out, with offset2bag (NULL to skip), bag_size and, in max mode, max_indices
 * (NULL otherwise). per_sample_weights [n] (sum mode only) may be NULL. */
AXON_API axon_status_t axon_kernel_embedding_bag(axon_stream_t s, const axon_tensor_t *out,
                                                 const axon_tensor_t *offset2bag, const axon_tensor_t *bag_size,
                                                 const axon_tensor_t *max_indices, const axon_tensor_t *weight,
                                                 const axon_tensor_t *indices, const axon_tensor_t *offsets,
                                                 const axon_tensor_t *per_sample_weights,
                                                 const axon_embedding_bag_params_t *p);

/* Enqueue grad_weight [V, D] = the gradient of the forward's out for grad [B, D]: sum and mean add each index's
 * bag's grad row (times its per-sample weight, divided by its bag's size for mean, divided by the index's count
 * among all indices when `counts` [V] int64 is given: it is scratch, filled here; that is scale_grad_by_freq as
 * documented and as PyTorch CUDA computes it, where PyTorch CPU divides by the count of another index of the same
 * run) into the index's row; max adds
 * each grad element into the row max_indices names. offset2bag (int32 or int64) maps indices to bags; bag_size and
 * max_indices are the forward's. */
AXON_API axon_status_t axon_kernel_embedding_bag_backward(axon_stream_t s, const axon_tensor_t *grad_weight,
                                                          const axon_tensor_t *grad, const axon_tensor_t *indices,
                                                          const axon_tensor_t *offset2bag,
                                                          const axon_tensor_t *bag_size,
                                                          const axon_tensor_t *max_indices,
                                                          const axon_tensor_t *per_sample_weights,
                                                          const axon_tensor_t *counts,
                                                          const axon_embedding_bag_params_t *p);

/* Enqueue grad_psw [n] = the dot product of each index's bag's grad row with the index's weight row (0 for
 * padding_idx): the gradient of sum mode's per-sample weights. */
AXON_API axon_status_t axon_kernel_embedding_bag_psw_backward(axon_stream_t s, const axon_tensor_t *grad_psw,
                                                              const axon_tensor_t *grad, const axon_tensor_t *weight,
                                                              const axon_tensor_t *indices,
                                                              const axon_tensor_t *offset2bag,
                                                              const axon_embedding_bag_params_t *p);

AXON_EXTERN_C_END

#endif

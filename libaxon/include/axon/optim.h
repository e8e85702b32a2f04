/* Fused optimizer steps: one Adam/AdamW or SGD update of a whole list of parameters per command, with the
 * semantics of PyTorch's _fused_adam_, _fused_adamw_ and _fused_sgd_ (their CPU kernels, formula by formula).
 *
 * Lists follow foreach.h: n contiguous tensors each, float32, float64, float16 or bfloat16, list entry i shaped like
 * params[i]; state lists (exp_avgs, momentum buffers, ...) hold the params' dtype as PyTorch keeps them, but any
 * float dtype is accepted. Math is in float for float32/float16/bfloat16 params and in double for float64, with
 * the hyper-parameters rounded to that type, as the CPU kernels do. Long lists are split into several commands as
 * foreach.h describes. Everything the step reads from tensors (the step counts, a tensor lr, grad_scale and
 * found_inf) is read when the command runs, in stream order, so earlier queued work (the step increment, the AMP
 * unscale) is seen without a host synchronization.
 *
 * AMP: when grad_scale is given each gradient is divided by it first and the divided gradient is written back to
 * grads (as PyTorch does); when found_inf is given and holds 1.0 the command changes nothing. Both are one-element
 * float tensors. The step counts are not incremented here: PyTorch's optimizer does that before the call.
 *
 * Errors at launch as foreach.h: INVALID_ARG for bad lists, sizes that differ from params[i], a missing list the
 * options need (max_exp_avg_sqs with amsgrad, momentum buffers with momentum != 0), or a state_steps / lr /
 * grad_scale / found_inf tensor that does not hold exactly one element; UNSUPPORTED for non-float dtypes. */
#ifndef AXON_OPTIM_H
#define AXON_OPTIM_H

#include <stdint.h>

#include "axon/export.h"
#include "axon/runtime.h"
#include "axon/status.h"
#include "axon/tensor.h"

AXON_EXTERN_C_BEGIN

typedef struct axon_adam_options {
    double lr;                          /* used when lr_tensor is NULL */
    const axon_tensor_t *lr_tensor;     /* one element read when the command runs, or NULL */
    double beta1, beta2, weight_decay, eps;
    int amsgrad, maximize;
    int decoupled;                      /* 1: AdamW (param *= 1 - lr * weight_decay), 0: Adam (grad += wd * param) */
    const axon_tensor_t *grad_scale;    /* NULL or one element */
    const axon_tensor_t *found_inf;     /* NULL or one element */
} axon_adam_options_t;

/* Enqueue one Adam/AdamW step for each i in [0, n): params[i], exp_avgs[i], exp_avg_sqs[i] (and max_exp_avg_sqs[i]
 * with amsgrad; that list may be NULL otherwise) are updated in place; state_steps[i] holds the step count (already
 * incremented), one element. grads[i] is written only with grad_scale. */
AXON_API axon_status_t axon_optim_adam(axon_stream_t s, const axon_adam_options_t *o, int64_t n,
                                       const axon_tensor_t *params, const axon_tensor_t *grads,
                                       const axon_tensor_t *exp_avgs, const axon_tensor_t *exp_avg_sqs,
                                       const axon_tensor_t *max_exp_avg_sqs, const axon_tensor_t *state_steps);

typedef struct axon_sgd_options {
    double lr;                          /* used when lr_tensor is NULL */
    const axon_tensor_t *lr_tensor;     /* one element read when the command runs, or NULL */
    double weight_decay, momentum, dampening;
    int nesterov, maximize;
    int first_step;                     /* the momentum buffers are new: buf = grad instead of the running average */
    const axon_tensor_t *grad_scale;    /* NULL or one element */
    const axon_tensor_t *found_inf;     /* NULL or one element */
} axon_sgd_options_t;

/* Enqueue one SGD step for each i in [0, n): params[i] (and momentum_buffers[i] when momentum != 0; the list may be
 * NULL otherwise) are updated in place. */
AXON_API axon_status_t axon_optim_sgd(axon_stream_t s, const axon_sgd_options_t *o, int64_t n,
                                      const axon_tensor_t *params, const axon_tensor_t *grads,
                                      const axon_tensor_t *momentum_buffers);

AXON_EXTERN_C_END

#endif

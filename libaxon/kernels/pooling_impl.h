/* Pooling windows (pooling_window.c), shared by the max and average pooling kernels. Never installed.
 *
 * A window is a box of the input plane, one interval per spatial dimension, visited with a step (the dilation; 1
 * for average and adaptive pooling). Fixed windows come from axon_pool_params_t; adaptive ones from the input and
 * output sizes alone. Both kinds are held as 3 dimensions, D, H, W, the missing leading ones of size 1. */
#ifndef AXON_POOLING_IMPL_H
#define AXON_POOLING_IMPL_H

#include <stdint.h>

#include "axon/pooling.h"
#include "spatial_impl.h"

typedef struct axon_pool_geom {
    int adaptive;                        /* windows from the sizes alone; the arrays below are unused */
    int64_t k[3], s[3], p[3], d[3];      /* D, H, W */
    int count_include_pad;
    int64_t divisor;                     /* 0 = none; may be negative */
} axon_pool_geom_t;

/* One dimension of a window: elements first, first + step, ... < end lie inside the input (first >= end: none);
 * padded is the window's extent within input plus padding (the count_include_pad divisor's factor). */
typedef struct axon_pool_span {
    int64_t first, end, step, padded;
} axon_pool_span_t;

/* Check p for `op` and fill w, as 3 dims. dilation is ignored (taken as 1) unless use_dilation. INVALID_ARG. */
axon_status_t axon_pool_geom_fixed(const char *op, const axon_pool_params_t *p, int use_dilation,
                                   axon_pool_geom_t *w);

/* Adaptive windows for nspatial dims. INVALID_ARG if nspatial is not 1..3. */
axon_status_t axon_pool_geom_adaptive(const char *op, int nspatial, axon_pool_geom_t *w);

/* The span along dim k (0 = D, 1 = H, 2 = W) of output position o. */
static inline axon_pool_span_t axon_pool_span(const axon_pool_geom_t *w, const axon_spatial_t *g, int k, int64_t o) {
    axon_pool_span_t r;
    const int64_t in = g->in[k], out = g->out[k];
    if (w->adaptive) {
        r.first = o * in / out;
        r.end = ((o + 1) * in + out - 1) / out;
        r.step = 1;
        r.padded = r.end - r.first;
        return r;
    }
    const int64_t start = o * w->s[k] - w->p[k], stop = start + (w->k[k] - 1) * w->d[k] + 1;
    r.step = w->d[k];
    r.padded = (stop < in + w->p[k] ? stop : in + w->p[k]) - start;
    r.end = stop < in ? stop : in;
    r.first = start < 0 ? start + (-start + r.step - 1) / r.step * r.step : start;
    return r;
}

/* Elements of a span inside the input. */
static inline int64_t axon_pool_span_count(axon_pool_span_t s) {
    return s.first < s.end ? (s.end - s.first + s.step - 1) / s.step : 0;
}

#endif

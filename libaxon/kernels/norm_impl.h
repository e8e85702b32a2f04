/* What the batch and group norm kernels share: an optional tensor seen as a flat array read and written through
 * float64 (norm_batch.c, norm_group.c), and the argument check of one operand (norm_check.c). Never installed. */
#ifndef AXON_KERNELS_NORM_IMPL_H
#define AXON_KERNELS_NORM_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels_impl.h"

/* Elements converted into float64 on the stack per step: kernels never allocate, so runs are processed in pieces. */
#define AXON_NORM_CHUNK 512

/* A contiguous tensor's data, element size and float64 converters; p == NULL when the tensor is absent. */
typedef struct axon_norm_ref {
    char *p;
    size_t es;
    axon_convert_fn ld, st;
} axon_norm_ref_t;

static inline axon_norm_ref_t axon_norm_ref(const axon_tensor_t *t) {
    axon_norm_ref_t r = {NULL, 0, NULL, NULL};
    if (t) {
        r.p = (char *)t->data;
        r.es = axon_dtype_size(t->dtype);
        r.ld = axon_convert_get(t->dtype, AXON_FLOAT64);
        r.st = axon_convert_get(AXON_FLOAT64, t->dtype);
    }
    return r;
}

/* buf[0..m) = elements [j, j + m) of r; `fill` everywhere when r is absent (a missing weight reads as ones). */
static inline void axon_norm_load(const axon_norm_ref_t *r, double *buf, int64_t j, int64_t m, double fill) {
    if (r->p) r->ld((char *)buf, 1, r->p + j * (int64_t)r->es, 1, m);
    else for (int64_t i = 0; i < m; i++) buf[i] = fill;
}

static inline double axon_norm_get(const axon_norm_ref_t *r, int64_t i, double fill) {
    double v = fill;
    if (r->p) r->ld((char *)&v, 1, r->p + i * (int64_t)r->es, 1, 1);
    return v;
}

/* Elements [j, j + m) of r = buf[0..m), rounded once; nothing when r is absent. */
static inline void axon_norm_store(const axon_norm_ref_t *r, const double *buf, int64_t j, int64_t m) {
    if (r->p) r->st(r->p + j * (int64_t)r->es, 1, (const char *)buf, 1, m);
}

static inline void axon_norm_put(const axon_norm_ref_t *r, int64_t i, double v) { axon_norm_store(r, &v, i, 1); }

/* A run x[0, m) added into AXON_NORM_PARTS partial sums (element i into part i % AXON_NORM_PARTS, the tail into the
 * first parts in order): its values, or (square) their squared distances to shift. One copy per accumulator:
 * float64, and float for 16-bit data's statistics (PyTorch's CPU kernels sum those in float; eight lanes where float64
 * has four). Inline, so each caller's clone vectorizes it. */
#define AXON_NORM_PARTS 32
#define AXON_NORM_RUN_SUM(NAME, ACC)                                                                             \
    static inline void NAME(ACC *restrict part, const float *restrict x, int64_t m, double shift, int square) {  \
        const int64_t bulk = m - m % AXON_NORM_PARTS;                                                            \
        const ACC sh = (ACC)shift;                                                                               \
        if (square) {                                                                                            \
            for (int64_t i = 0; i < bulk; i += AXON_NORM_PARTS)                                                  \
                for (int k = 0; k < AXON_NORM_PARTS; k++) part[k] += ((ACC)x[i + k] - sh) * ((ACC)x[i + k] - sh); \
            for (int64_t i = bulk; i < m; i++) part[i - bulk] += ((ACC)x[i] - sh) * ((ACC)x[i] - sh);            \
        } else {                                                                                                 \
            for (int64_t i = 0; i < bulk; i += AXON_NORM_PARTS)                                                  \
                for (int k = 0; k < AXON_NORM_PARTS; k++) part[k] += (ACC)x[i + k];                              \
            for (int64_t i = bulk; i < m; i++) part[i - bulk] += (ACC)x[i];                                      \
        }                                                                                                        \
    }
AXON_NORM_RUN_SUM(axon_norm_run_sum_f64, double)
AXON_NORM_RUN_SUM(axon_norm_run_sum_f32, float)
#undef AXON_NORM_RUN_SUM

/* Check optional operand t of op: a well-formed descriptor (dst or src), float32/64/16 or bfloat16, contiguous,
 * and with exactly shape's sizes when shape is not NULL, else `numel` elements in any shape. Messages read
 * "op: role ...". */
axon_status_t axon_norm_check(const char *op, const char *role, const axon_tensor_t *t, int64_t numel,
                              const axon_tensor_t *shape, int is_dst);

#endif

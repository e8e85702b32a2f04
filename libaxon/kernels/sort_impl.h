/* What sort.c and topk.c share: the order key of an element, the merge sort, and one launch path for the three
 * ops (axon/sort.h). Never installed. */
#ifndef AXON_KERNELS_SORT_IMPL_H
#define AXON_KERNELS_SORT_IMPL_H

#include <stdint.h>
#include <string.h>

#include "axon/sort.h"
#include "kernels_impl.h"

/* An element as the sort sees it: an unsigned key whose order is the element's order (NaN largest, -0.0 == 0.0;
 * complemented for a descending order) and its position along the row. Pairs compare by key, then position, so
 * every order is total and every result determined. */
typedef struct srt_pair {
    uint64_t key;
    int64_t idx;
} srt_pair_t;

static inline int srt_less(const srt_pair_t *a, const srt_pair_t *b) {
    return a->key < b->key || (a->key == b->key && a->idx < b->idx);
}

typedef enum srt_mode { SRT_SORT, SRT_TOPK, SRT_KTH, SRT_MODE } srt_mode_t;

typedef struct srt_args {
    srt_mode_t mode;
    int flip;                    /* keys complemented: descending sort, topk largest */
    int nan_wins;                /* kthvalue: a row with a NaN gives its first NaN (median) */
    int nan_skip;                /* kthvalue: k is each row's lower median of its non-NaN elements (nanmedian) */
    int floating;
    int64_t outer, len, inner;
    int64_t k;                   /* topk: how many; kthvalue: which (from 1) */
    int64_t out_len;             /* len (sort), k (topk) or 1 (kthvalue) */
    axon_dtype_t dtype;
    size_t es;
    const char *in;
    char *values, *indices, *ws;
} srt_args_t;

#define SRT_SIGN ((uint64_t)1 << 63)
#define SRT_SMALL_K 32           /* topk up to this k keeps a sorted list in one pass instead of selecting */

/* The key of an element given as the bits of its float64 value (floating dtypes) or of its int64 value. */
static inline uint64_t srt_key(const srt_args_t *a, uint64_t bits) {
    uint64_t u;
    if (a->floating) {
        double d;
        memcpy(&d, &bits, sizeof d);
        if (d == 0.0) d = 0.0; /* -0.0 equals 0.0: one key, so ties keep their order */
        memcpy(&u, &d, sizeof u);
        u = d != d ? UINT64_MAX : (u & SRT_SIGN) ? ~u : u | SRT_SIGN;
    } else {
        u = bits ^ SRT_SIGN;
    }
    return a->flip ? ~u : u;
}

/* Fill p[0..n) with the keys of n elements at row (element stride `stride`) and positions 0..n-1. */
void axon_srt_load(const srt_args_t *a, srt_pair_t *p, const char *row, int64_t n);

/* topk with k <= SRT_SMALL_K (topk.c): the row's k best pairs in order into out, in one pass that makes the keys a
 * chunk at a time on the stack and keeps a sorted list of the best (most elements fail one compare with its last).
 * Returns out. */
const srt_pair_t *axon_srt_topk_small(const srt_args_t *a, const char *row, srt_pair_t *out);

/* Sort a[0..n) by (key, idx), using b[0..n) as scratch; returns whichever of a and b holds the result. */
srt_pair_t *axon_srt_sort(srt_pair_t *a, srt_pair_t *b, int64_t n);

/* Reorder a[0..n) so that a[k] is the pair a sort would put there, smaller ones before it and larger after.
 * k in [0, n). */
void axon_srt_select(srt_pair_t *a, srt_pair_t *scratch, int64_t n, int64_t k);

/* The per-row work of topk, kthvalue and mode (topk.c): fills `sorted` (a or b) and returns the pairs to write. */
const srt_pair_t *axon_srt_pick(const srt_args_t *a, srt_pair_t *pa, srt_pair_t *pb);

/* Check the operands of op and enqueue the command described by g (mode, flip, nan_wins and k already set). */
axon_status_t axon_srt_launch(axon_stream_t s, const char *op, srt_args_t *g, const axon_tensor_t *values,
                              const axon_tensor_t *indices, const axon_tensor_t *in, int dim,
                              const axon_tensor_t *workspace);

#endif

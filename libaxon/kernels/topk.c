/* topk, kthvalue and nanmedian (axon/sort.h): partial selection on the (key, position) pairs that sort.c builds.
 *
 * Quickselect with a median-of-three pivot places the wanted pair; pairs are distinct (positions differ), so
 * partitions shrink even on rows of equal values. A selection that keeps choosing poor pivots (more rounds than
 * 2 log2(n) + 8) finishes by sorting what is left, which bounds the work at O(n log n). topk then sorts its first k
 * pairs; kthvalue reads one. A topk of small k instead keeps its k best pairs in a sorted list in one pass. */
#include <string.h>

#include "axon/stream.h"
#include "internal.h"
#include "sort_impl.h"


static void srt_swap(srt_pair_t *a, srt_pair_t *b) {
    srt_pair_t t = *a;
    *a = *b;
    *b = t;
}

void axon_srt_select(srt_pair_t *a, srt_pair_t *scratch, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1, budget = 8;
    for (int64_t m = n; m > 1; m >>= 1) budget += 2;
    while (hi - lo > 16) {
        if (budget-- == 0) {
            srt_pair_t *r = axon_srt_sort(a + lo, scratch, hi - lo + 1);
            if (r != a + lo) memcpy(a + lo, r, (size_t)(hi - lo + 1) * sizeof *a);
            return;
        }
        /* Median of three to a[lo], then Lomuto-free Hoare partition around it. */
        int64_t mid = lo + (hi - lo) / 2;
        if (srt_less(&a[mid], &a[lo])) srt_swap(&a[mid], &a[lo]);
        if (srt_less(&a[hi], &a[lo])) srt_swap(&a[hi], &a[lo]);
        if (srt_less(&a[hi], &a[mid])) srt_swap(&a[hi], &a[mid]);
        srt_swap(&a[lo], &a[mid]);
        const srt_pair_t p = a[lo];
        int64_t i = lo, j = hi + 1;
        for (;;) {
            while (srt_less(&a[++i], &p)) {
            }
            while (srt_less(&p, &a[--j])) {
            }
            if (i >= j) break;
            srt_swap(&a[i], &a[j]);
        }
        srt_swap(&a[lo], &a[j]); /* the pivot lands at j: smaller before, larger after */
        if (j == k) return;
        if (k < j) hi = j - 1;
        else lo = j + 1;
    }
    srt_pair_t *r = axon_srt_sort(a + lo, scratch, hi - lo + 1);
    if (r != a + lo) memcpy(a + lo, r, (size_t)(hi - lo + 1) * sizeof *a);
}

const srt_pair_t *axon_srt_pick(const srt_args_t *a, srt_pair_t *pa, srt_pair_t *pb) {
    const int64_t n = a->len;
    if (a->mode == SRT_MODE) {
        /* In (key, position) order a run of equal values ends at its highest position. PyTorch's CPU loop takes
         * the last element of the first longest run in its sorted order, which for a short row (sorted by insertion,
         * so stably) is this one; a NaN equals nothing, there and here. */
        const srt_pair_t *s = axon_srt_sort(pa, pb, n), *best = &s[0];
        int64_t best_len = 0, run = 0;
        for (int64_t j = 0; j < n; j++) {
            run++;
            const int nan = a->floating && s[j].key == UINT64_MAX;
            if (j == n - 1 || nan || s[j + 1].key != s[j].key) {
                if (run > best_len) best = &s[j], best_len = run;
                run = 0;
            }
        }
        return best;
    }
    if (a->mode == SRT_KTH) {
        if (a->nan_wins && a->floating)
            for (int64_t j = 0; j < n; j++)
                if (pa[j].key == UINT64_MAX) return &pa[j]; /* the first NaN: loaded in position order */
        int64_t k = a->k;
        if (a->nan_skip) { /* NaNs sort last: the lower median of the rest, or the first NaN when all are NaN */
            int64_t valid = n;
            for (int64_t j = 0; a->floating && j < n; j++) valid -= pa[j].key == UINT64_MAX;
            k = valid > 0 ? (valid - 1) / 2 + 1 : 1;
        }
        axon_srt_select(pa, pb, n, k - 1);
        return &pa[k - 1];
    }
    if (a->k < n) axon_srt_select(pa, pb, n, a->k - 1);
    return axon_srt_sort(pa, pb, a->k);
}

#define SRT_CHUNK 256

/* axon_srt_topk_small's loop, compiled per instruction set (the keys' transform then runs in vector registers). */
AXON_CLONES static const srt_pair_t *srt_topk_small_rows(const srt_args_t *a, const char *row, srt_pair_t *out) {
    axon_convert_fn f = axon_convert_get(a->dtype, a->floating ? AXON_FLOAT64 : AXON_INT64);
    srt_pair_t best[SRT_SMALL_K];
    uint64_t keys[SRT_CHUNK];
    int64_t nb = 0;
    for (int64_t j0 = 0; j0 < a->len; j0 += SRT_CHUNK) {
        const int64_t m = a->len - j0 < SRT_CHUNK ? a->len - j0 : SRT_CHUNK;
        f((char *)keys, 1, row + j0 * a->inner * (int64_t)a->es, a->inner, m);
        for (int64_t j = 0; j < m; j++) keys[j] = srt_key(a, keys[j]);
        for (int64_t j = 0; j < m; j++) {
            /* positions grow along the row, so a key equal to the last kept one loses to it */
            if (nb == a->k && keys[j] >= best[nb - 1].key) continue;
            const srt_pair_t p = {keys[j], j0 + j};
            int64_t i = nb < a->k ? nb++ : nb - 1;
            for (; i > 0 && srt_less(&p, &best[i - 1]); i--) best[i] = best[i - 1];
            best[i] = p;
        }
    }
    memcpy(out, best, (size_t)nb * sizeof *out);
    return out;
}

const srt_pair_t *axon_srt_topk_small(const srt_args_t *a, const char *row, srt_pair_t *out) {
    return srt_topk_small_rows(a, row, out);
}

axon_status_t axon_kernel_topk(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                               const axon_tensor_t *in, int dim, int64_t k, int largest,
                               const axon_tensor_t *workspace) {
    srt_args_t g;
    memset(&g, 0, sizeof g);
    g.mode = SRT_TOPK;
    g.flip = largest != 0;
    g.k = k;
    return axon_srt_launch(s, "topk", &g, values, indices, in, dim, workspace);
}

axon_status_t axon_kernel_kthvalue(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                                   const axon_tensor_t *in, int dim, int64_t k, int nan_wins,
                                   const axon_tensor_t *workspace) {
    srt_args_t g;
    memset(&g, 0, sizeof g);
    g.mode = SRT_KTH;
    g.nan_wins = nan_wins != 0;
    g.k = k;
    return axon_srt_launch(s, nan_wins ? "median" : "kthvalue", &g, values, indices, in, dim, workspace);
}

axon_status_t axon_kernel_nanmedian(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                                    const axon_tensor_t *in, int dim, const axon_tensor_t *workspace) {
    srt_args_t g;
    memset(&g, 0, sizeof g);
    g.mode = SRT_KTH;
    g.nan_skip = 1;
    g.k = 1; /* checked against the row length at launch; each row picks its own */
    return axon_srt_launch(s, "nanmedian", &g, values, indices, in, dim, workspace);
}

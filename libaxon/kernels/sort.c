/* Stable sort along a dimension (axon/sort.h), and what topk.c shares: keys, the merge sort and the launch.
 *
 * Each row is turned into (key, position) pairs in the workspace: the element converted to float64 (floats) or int64
 * (integers, bool), whose bits are then mapped to an unsigned integer of the same order. A bottom-up merge sort of
 * the pairs (insertion-sorted runs of SRT_RUN, then merges between the row's two halves of workspace) gives the
 * order; values are then copied from the input by position, bit for bit. Rows are independent, one thread each. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "axon/stream.h"
#include "index_impl.h"
#include "internal.h"
#include "sort_impl.h"

#define SRT_RUN 32

size_t axon_sort_workspace_size(int64_t numel) {
    if (numel < 1) return 16;
    if ((uint64_t)numel > SIZE_MAX / (2 * sizeof(srt_pair_t))) return SIZE_MAX;
    return (size_t)numel * 2 * sizeof(srt_pair_t);
}

void axon_srt_load(const srt_args_t *a, srt_pair_t *p, const char *row, int64_t n) {
    /* Convert into the key slots (16-byte pairs: a stride of 2 eight-byte elements), then map bits in place. */
    axon_convert_fn f = axon_convert_get(a->dtype, a->floating ? AXON_FLOAT64 : AXON_INT64);
    f((char *)&p[0].key, 2, row, a->inner, n);
    for (int64_t j = 0; j < n; j++) {
        p[j].key = srt_key(a, p[j].key);
        p[j].idx = j;
    }
}

static void srt_insertion(srt_pair_t *a, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        srt_pair_t v = a[i];
        int64_t j = i;
        for (; j > 0 && srt_less(&v, &a[j - 1]); j--) a[j] = a[j - 1];
        a[j] = v;
    }
}

/* Merge a[0..mid) and a[mid..n) into out[0..n). */
static void srt_merge(const srt_pair_t *a, int64_t mid, int64_t n, srt_pair_t *out) {
    int64_t i = 0, j = mid, o = 0;
    if (mid == n || !srt_less(&a[mid], &a[mid - 1])) { /* already in order */
        memcpy(out, a, (size_t)n * sizeof *a);
        return;
    }
    while (i < mid && j < n) out[o++] = srt_less(&a[j], &a[i]) ? a[j++] : a[i++];
    while (i < mid) out[o++] = a[i++];
    while (j < n) out[o++] = a[j++];
}

srt_pair_t *axon_srt_sort(srt_pair_t *a, srt_pair_t *b, int64_t n) {
    for (int64_t lo = 0; lo < n; lo += SRT_RUN) srt_insertion(a + lo, n - lo < SRT_RUN ? n - lo : SRT_RUN);
    for (int64_t w = SRT_RUN; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t len = n - lo < 2 * w ? n - lo : 2 * w;
            srt_merge(a + lo, len < w ? len : w, len, b + lo);
        }
        srt_pair_t *t = a;
        a = b;
        b = t;
    }
    return a;
}

/* Pairs still in position order (as axon_srt_load leaves them) sorted by a least-significant-digit radix sort of the
 * keys, 11 bits a pass: stable, so ties keep their position order and the result is the merge sort's. Digits all keys
 * share are skipped (one pass finds them, one counts the others), so keys that differ in few bits (small integers: one
 * pass; float32 values widened to float64: four) take few passes over the pairs instead of the merge sort's log2(n).
 * Below SRT_RADIX_MIN pairs the counts cost more than they save. */
#define SRT_RADIX_MIN 4096
#define SRT_RADIX_BITS 11
#define SRT_RADIX_DIGITS 6 /* ceil(64 / 11) */

static srt_pair_t *srt_sort_positions(srt_pair_t *a, srt_pair_t *b, int64_t n) {
    if (n < SRT_RADIX_MIN || n > (int64_t)UINT32_MAX) return axon_srt_sort(a, b, n);
    enum { BUCKETS = 1 << SRT_RADIX_BITS };
    /* the bits in which some key differs from the first: only their digits need a pass (and counts) */
    uint64_t differ = 0;
    const uint64_t first = a[0].key;
    for (int64_t i = 0; i < n; i++) differ |= a[i].key ^ first;
    int digits[SRT_RADIX_DIGITS], nd = 0;
    for (int d = 0; d < SRT_RADIX_DIGITS; d++)
        if ((differ >> (d * SRT_RADIX_BITS)) & (BUCKETS - 1)) digits[nd++] = d;
    uint32_t count[SRT_RADIX_DIGITS][BUCKETS];
    memset(count, 0, (size_t)nd * sizeof count[0]);
    for (int64_t i = 0; i < n; i++)
        for (int t = 0; t < nd; t++) count[t][(a[i].key >> (digits[t] * SRT_RADIX_BITS)) & (BUCKETS - 1)]++;
    for (int t = 0; t < nd; t++) {
        const int shift = digits[t] * SRT_RADIX_BITS;
        uint32_t at = 0;
        for (int v = 0; v < BUCKETS; v++) {
            const uint32_t c = count[t][v];
            count[t][v] = at;
            at += c;
        }
        for (int64_t i = 0; i < n; i++) b[count[t][(a[i].key >> shift) & (BUCKETS - 1)]++] = a[i];
        srt_pair_t *tmp = a;
        a = b;
        b = tmp;
    }
    return a;
}

/* Row r's input, and its values and indices written from the chosen pairs res[0..out_len). */
static const char *srt_in(const srt_args_t *a, int64_t r) {
    return a->in + ((r / a->inner) * a->len * a->inner + r % a->inner) * (int64_t)a->es;
}

static void srt_write(const srt_args_t *a, int64_t r, const srt_pair_t *res) {
    const int64_t o = r / a->inner, i = r % a->inner, es = (int64_t)a->es;
    const char *in = srt_in(a, r);
    char *vals = a->values + (o * a->out_len * a->inner + i) * es;
    int64_t *idx = (int64_t *)(void *)a->indices + o * a->out_len * a->inner + i;
    const int64_t inner = a->inner, n = a->out_len;
    for (int64_t j = 0; j < n; j++) { /* ix_move: constant-size moves, not a libc memcpy call per element */
        ix_move(vals + j * inner * es, in + res[j].idx * inner * es, a->es);
        idx[j * inner] = res[j].idx;
    }
}

/* A sort of rows too few to give every participant one (a 1-d tensor, unique's flattened input): each participant
 * sorts a contiguous chunk of the row, then the chunks are merged pairwise. Pairs are totally ordered, so the result
 * is the one srt_row's single sort gives. */
#define SRT_SPLIT_MIN 65536
typedef struct srt_split {
    srt_pair_t *pa, *pb;
    int64_t len;
    int parts;
} srt_split_t;

/* Where chunk c starts (c == parts: the row's end). */
static int64_t srt_chunk_start(const srt_split_t *s, int64_t c) { return c * s->len / s->parts; }

static void srt_chunk_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const srt_split_t *s = ctx;
    for (int64_t c = begin; c < end; c++) {
        const int64_t lo = srt_chunk_start(s, c), hi = srt_chunk_start(s, c + 1);
        srt_pair_t *r = srt_sort_positions(s->pa + lo, s->pb + lo, hi - lo);
        if (r != s->pa + lo) memcpy(s->pa + lo, r, (size_t)(hi - lo) * sizeof *r);
    }
}

static void srt_row_split(const srt_args_t *a, int64_t r, axon_pool_t pool, int parts) {
    srt_split_t s = {(srt_pair_t *)(void *)a->ws + r * 2 * a->len, NULL, a->len, parts};
    s.pb = s.pa + a->len;
    axon_srt_load(a, s.pa, srt_in(a, r), a->len);
    axon_parallel_for(pool, 0, parts, 1, srt_chunk_range, &s);
    /* merge runs of `width` chunks pairwise until one is left, alternating between pa and pb */
    srt_pair_t *src = s.pa, *dst = s.pb;
    for (int width = 1; width < parts; width *= 2) {
        for (int c = 0; c < parts; c += 2 * width) { /* a run without a right neighbour is copied as it is */
            const int64_t lo = srt_chunk_start(&s, c);
            const int64_t mid = srt_chunk_start(&s, c + width < parts ? c + width : parts);
            const int64_t hi = srt_chunk_start(&s, c + 2 * width < parts ? c + 2 * width : parts);
            srt_merge(src + lo, mid - lo, hi - lo, dst + lo);
        }
        srt_pair_t *t = src;
        src = dst;
        dst = t;
    }
    srt_write(a, r, src);
}

static void srt_row(const srt_args_t *a, int64_t r) {
    const char *in = srt_in(a, r);
    srt_pair_t *pa = (srt_pair_t *)(void *)a->ws + r * 2 * a->len, *pb = pa + a->len;
    const srt_pair_t *res;
    if (a->mode == SRT_TOPK && a->k <= SRT_SMALL_K) {
        res = axon_srt_topk_small(a, in, pb);
    } else {
        axon_srt_load(a, pa, in, a->len);
        res = a->mode == SRT_SORT ? srt_sort_positions(pa, pb, a->len) : axon_srt_pick(a, pa, pb);
    }
    srt_write(a, r, res);
}

static void srt_range(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    for (int64_t r = begin; r < end; r++) srt_row(ctx, r);
}

static axon_status_t srt_kernel(const void *args, const axon_exec_t *ex) {
    const srt_args_t *a = args;
    const int parts = axon_pool_size(ex->pool) < 64 ? axon_pool_size(ex->pool) : 64;
    if (a->mode == SRT_SORT && parts > 1 && a->outer * a->inner < parts && a->len >= SRT_SPLIT_MIN) {
        for (int64_t r = 0; r < a->outer * a->inner; r++) srt_row_split(a, r, ex->pool, parts);
        return AXON_OK;
    }
    int64_t grain = AXON_KERNEL_GRAIN / (a->len * 8 > 0 ? a->len * 8 : 1);
    axon_parallel_for(ex->pool, 0, a->outer * a->inner, grain < 1 ? 1 : grain, srt_range, (void *)a);
    return AXON_OK;
}

/* An operand of in's shape with `len` at dim, of dtype dt, contiguous. */
static axon_status_t srt_check_out(const char *op, const char *role, const axon_tensor_t *t,
                                   const axon_tensor_t *in, int dim, int64_t len, axon_dtype_t dt) {
    char sa[160], sb[160];
    axon_status_t st = axon_kernel_check_operand(t, op, role, 1);
    if (st != AXON_OK) return st;
    if (t->dtype != dt)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s dtype %s is not %s", op, role, axon_dtype_name(t->dtype),
                         axon_dtype_name(dt));
    axon_tensor_t want = *in;
    if (want.ndim) want.sizes[dim] = len;
    int same = t->ndim == want.ndim;
    for (int d = 0; same && d < t->ndim; d++) same = t->sizes[d] == want.sizes[d];
    if (!same || (!want.ndim && len != 1))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s has shape %s, expected %s", op, role,
                         axon_shape_format(t, sa, sizeof sa), axon_shape_format(&want, sb, sizeof sb));
    if (!axon_tensor_is_contiguous(t))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: %s must be contiguous (shape %s)", op, role,
                         axon_shape_format(t, sa, sizeof sa));
    return AXON_OK;
}

axon_status_t axon_srt_launch(axon_stream_t s, const char *op, srt_args_t *g, const axon_tensor_t *values,
                              const axon_tensor_t *indices, const axon_tensor_t *in, int dim,
                              const axon_tensor_t *workspace) {
    char sa[160];
    axon_status_t st = axon_kernel_check_operand(in, op, "in", 0);
    if (st != AXON_OK) return st;
    if (in->dtype == AXON_COMPLEX64 || in->dtype == AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: in dtype %s has no order", op, axon_dtype_name(in->dtype));
    if (!axon_tensor_is_contiguous(in))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in must be contiguous (shape %s)", op,
                         axon_shape_format(in, sa, sizeof sa));
    const int nd = in->ndim ? in->ndim : 1;
    if (dim < -nd || dim >= nd)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dim %d is out of range for a %d-d tensor", op, dim, in->ndim);
    if (dim < 0) dim += nd;
    g->len = in->ndim ? in->sizes[dim] : 1;
    g->outer = g->inner = 1;
    for (int d = 0; d < in->ndim; d++) {
        if (d < dim) g->outer *= in->sizes[d];
        if (d > dim) g->inner *= in->sizes[d];
    }
    if (g->mode == SRT_TOPK && (g->k < 0 || g->k > g->len))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: k (%" PRId64 ") is out of range for dimension %d of size %" PRId64,
                         op, g->k, dim, g->len);
    if (g->mode == SRT_MODE && g->len == 0 && g->outer * g->inner > 0)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: dimension %d has size 0: its rows have no mode", op, dim);
    if (g->mode == SRT_KTH && (g->k < 1 || g->k > g->len))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: k (%" PRId64 ") is out of range [1, %" PRId64 "] for dimension %d",
                         op, g->k, g->len, dim);
    g->out_len = g->mode == SRT_SORT ? g->len : g->mode == SRT_TOPK ? g->k : 1;
    if ((st = srt_check_out(op, "values", values, in, dim, g->out_len, in->dtype)) != AXON_OK) return st;
    if ((st = srt_check_out(op, "indices", indices, in, dim, g->out_len, AXON_INT64)) != AXON_OK) return st;
    const int64_t numel = axon_tensor_numel(in);
    if ((st = axon_kernel_check_operand(workspace, op, "workspace", 1)) != AXON_OK) return st;
    const uint64_t have = (uint64_t)axon_tensor_numel(workspace) * axon_dtype_size(workspace->dtype);
    const size_t need = axon_sort_workspace_size(numel);
    if (have < need || !axon_tensor_is_contiguous(workspace) || ((uintptr_t)workspace->data & 15u))
        return axon_fail(AXON_ERROR_INVALID_ARG,
                         "%s: workspace must be contiguous, 16-byte aligned and hold %zu bytes (has %" PRIu64 ")", op,
                         need, have);
    if (numel == 0 || axon_tensor_numel(values) == 0) return AXON_OK;
    g->dtype = in->dtype;
    g->es = axon_dtype_size(in->dtype);
    g->floating = axon_dtype_is_floating(in->dtype);
    g->in = in->data;
    g->values = values->data;
    g->indices = indices->data;
    g->ws = workspace->data;
    axon_launch_t l = {srt_kernel, g, sizeof *g, op, (uint64_t)numel * (g->es + 2 * sizeof(srt_pair_t))};
    return axon_stream_launch(s, &l);
}

axon_status_t axon_kernel_mode(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                               const axon_tensor_t *in, int dim, const axon_tensor_t *workspace) {
    srt_args_t g;
    memset(&g, 0, sizeof g);
    g.mode = SRT_MODE;
    return axon_srt_launch(s, "mode", &g, values, indices, in, dim, workspace);
}

axon_status_t axon_kernel_sort(axon_stream_t s, const axon_tensor_t *values, const axon_tensor_t *indices,
                               const axon_tensor_t *in, int dim, int descending, const axon_tensor_t *workspace) {
    srt_args_t g;
    memset(&g, 0, sizeof g);
    g.mode = SRT_SORT;
    g.flip = descending != 0;
    return axon_srt_launch(s, "sort", &g, values, indices, in, dim, workspace);
}

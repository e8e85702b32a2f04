/* axon_kernel_histc (axon/histogram.h).
 *
 * The input is cut into at most HIST_MAX_CHUNKS chunks; each chunk counts into its own row of int64 counters (host
 * scratch, one malloc per command) and the rows are summed in chunk order at the end. Values are converted to
 * double (floats) or int64 (integers) in stack batches, so every input dtype shares one counting loop. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "axon/histogram.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

#define HIST_MAX_CHUNKS 64
#define HIST_BATCH 512

typedef struct hist_args {
    axon_tensor_t out, in;
    int64_t bins, numel, chunk;
    int integer;                 /* 1: CUDA's integer formula with ilo, ihi */
    double lo, hi;
    int64_t ilo, ihi;
    int64_t *counts;             /* set by the kernel: [nchunks][bins] */
    const double *edges;         /* set by the kernel for floats: bins + 1 edges */
} hist_args_t;


/* The bin of a floating value already known to be in [edges[0], edges[bins]]: PyTorch's linear guess in the input's
 * arithmetic (float for float32, float rounded to the type after every operation for the half types: each step here
 * in double, then axon_round_to), then its search among the neighbouring edges. */
static int64_t hist_float_bin(const hist_args_t *a, double x) {
    const axon_dtype_t d = a->in.dtype;
    const double lo = a->edges[0], hi = a->edges[a->bins];
    double t = axon_round_to(d, x - lo);
    t = axon_round_to(d, t * axon_round_to(d, (double)a->bins));
    t = axon_round_to(d, t / axon_round_to(d, hi - lo));
    int64_t pos = (int64_t)t;
    int64_t first = pos - 1 < 0 ? 0 : pos - 1;
    int64_t last = pos + 2 > a->bins + 1 ? a->bins + 1 : pos + 2;   /* one past the last edge to look at */
    /* upper_bound over edges[first, last): the first edge greater than x; the bin is the edge before it. */
    int64_t k = first;
    while (k < last && a->edges[k] <= x) k++;
    pos = k - 1;
    if (pos >= a->bins) pos = a->bins - 1;
    return pos < 0 ? 0 : pos;
}

static void hist_chunk(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const hist_args_t *a = ctx;
    const size_t es = axon_dtype_size(a->in.dtype);
    for (int64_t c = begin; c < end; c++) {
        int64_t *counts = a->counts + c * a->bins;
        const int64_t start = c * a->chunk;
        const int64_t stop = start + a->chunk < a->numel ? start + a->chunk : a->numel;
        for (int64_t i = start; i < stop; i += HIST_BATCH) {
            const int64_t m = stop - i < HIST_BATCH ? stop - i : HIST_BATCH;
            const char *src = (const char *)a->in.data + i * (int64_t)es;
            if (a->integer) {
                int64_t v[HIST_BATCH];
                axon_convert_get(a->in.dtype, AXON_INT64)((char *)v, 1, src, 1, m);
                for (int64_t k = 0; k < m; k++) {
                    if (v[k] < a->ilo || v[k] > a->ihi) continue;
                    /* (x - lo) * bins / (hi - lo) in unsigned 64-bit: x - lo is in [0, hi - lo]. */
                    int64_t b = (int64_t)(((uint64_t)v[k] - (uint64_t)a->ilo) * (uint64_t)a->bins /
                                          ((uint64_t)a->ihi - (uint64_t)a->ilo));
                    counts[b >= a->bins ? a->bins - 1 : b]++;
                }
            } else {
                double v[HIST_BATCH];
                axon_convert_get(a->in.dtype, AXON_FLOAT64)((char *)v, 1, src, 1, m);
                for (int64_t k = 0; k < m; k++) {
                    if (!(v[k] >= a->edges[0] && v[k] <= a->edges[a->bins])) continue;    /* NaN too */
                    counts[hist_float_bin(a, v[k])]++;
                }
            }
        }
    }
}

/* linspace(lo, hi, bins + 1) as PyTorch's histc makes its edges: the step in the input's arithmetic (float for the
 * half types), each edge one fused multiply-add from the nearer end (the two halves meet in the middle), rounded
 * once to the input's dtype. */
static void hist_edges(double *edges, int64_t bins, double lo, double hi, axon_dtype_t d) {
    const int64_t steps = bins + 1;
    const double start = axon_round_to(d, lo), end = axon_round_to(d, hi);
    const double step = d == AXON_FLOAT64 ? (end - start) / (double)(steps - 1)
                                          : (double)((float)(end - start) / (float)(steps - 1));
    const int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; i++)
        edges[i] = axon_round_to(d, i < halfway ? start + step * (double)i : end - step * (double)(steps - i - 1));
}

static axon_status_t hist_kernel(const void *args, const axon_exec_t *ex) {
    hist_args_t a = *(const hist_args_t *)args;
    const int64_t nchunks = a.numel == 0 ? 0 : (a.numel + a.chunk - 1) / a.chunk;
    const size_t ncounts = (size_t)(nchunks > 0 ? nchunks : 1) * (size_t)a.bins;
    int64_t *counts = calloc(ncounts, sizeof *counts);
    double *edges = a.integer ? NULL : malloc((size_t)(a.bins + 1) * sizeof *edges);
    if (counts == NULL || (!a.integer && edges == NULL)) {
        free(counts);
        free(edges);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "histc: cannot allocate %zu counters", ncounts);
    }
    if (!a.integer) hist_edges(edges, a.bins, a.lo, a.hi, a.in.dtype);
    a.counts = counts;
    a.edges = edges;
    axon_parallel_for(ex->pool, 0, nchunks, 1, hist_chunk, &a);
    for (int64_t c = 1; c < nchunks; c++)
        for (int64_t b = 0; b < a.bins; b++) counts[b] += counts[c * a.bins + b];
    axon_convert_get(AXON_INT64, a.out.dtype)((char *)a.out.data, 1, (const char *)counts, 1, a.bins);
    free(counts);
    free(edges);
    return AXON_OK;
}

axon_status_t axon_kernel_histc(axon_stream_t s, const axon_tensor_t *out, const axon_tensor_t *in, int64_t bins,
                                double lo, double hi) {
    axon_status_t st;
    if ((st = axon_kernel_check_operand(in, "histc", "in", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(out, "histc", "out", 1)) != AXON_OK) return st;
    if (in->dtype == AXON_BOOL || in->dtype == AXON_COMPLEX64 || in->dtype == AXON_COMPLEX128 ||
        out->dtype == AXON_BOOL || out->dtype == AXON_COMPLEX64 || out->dtype == AXON_COMPLEX128)
        return axon_fail(AXON_ERROR_UNSUPPORTED, "histc: dtypes %s -> %s are not supported (real dtypes only)",
                         axon_dtype_name(in->dtype), axon_dtype_name(out->dtype));
    if (bins < 1) return axon_fail(AXON_ERROR_INVALID_ARG, "histc: bins must be > 0, got %lld", (long long)bins);
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi))
        return axon_fail(AXON_ERROR_INVALID_ARG, "histc: range [%g, %g] must be finite with min < max", lo, hi);
    if (!axon_tensor_is_contiguous(in) || !axon_tensor_is_contiguous(out))
        return axon_fail(AXON_ERROR_INVALID_ARG, "histc: in and out must be contiguous");
    if (out->ndim != 1 || out->sizes[0] != bins) {
        char buf[64];
        return axon_fail(AXON_ERROR_INVALID_ARG, "histc: out has shape %s, expected [%lld]",
                         axon_shape_format(out, buf, sizeof buf), (long long)bins);
    }
    hist_args_t a;
    memset(&a, 0, sizeof a);
    a.out = *out;
    a.in = *in;
    a.bins = bins;
    a.numel = axon_tensor_numel(in);
    /* Chunks of at least 32K elements, at most HIST_MAX_CHUNKS of them. */
    a.chunk = (a.numel + HIST_MAX_CHUNKS - 1) / HIST_MAX_CHUNKS;
    if (a.chunk < AXON_KERNEL_GRAIN) a.chunk = AXON_KERNEL_GRAIN;
    a.integer = axon_dtype_is_integer(in->dtype);
    a.lo = lo;
    a.hi = hi;
    a.ilo = (int64_t)lo;
    a.ihi = (int64_t)hi;
    if (a.integer && !(a.ilo < a.ihi))
        return axon_fail(AXON_ERROR_INVALID_ARG, "histc: integer range [%lld, %lld] is empty", (long long)a.ilo,
                         (long long)a.ihi);
    axon_launch_t l = {hist_kernel, &a, sizeof a, "histc", (uint64_t)a.numel * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}

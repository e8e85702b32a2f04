/* axon_kernel_histogramdd (axon/histogramdd.h).
 *
 * Points are cut into chunks; each chunk sums into its own float64 histogram (host scratch, one malloc per command)
 * and the chunks are added in order at the end, then rounded once into hist's dtype. Coordinates, weights and
 * edges are converted to double; the linear guess repeats PyTorch's arithmetic in the dtype by rounding after each
 * step (a double holds one float operation's exact result closely enough for that). */
#include <stdlib.h>
#include <string.h>

#include "axon/histogramdd.h"
#include "axon/stream.h"
#include "internal.h"
#include "kernels_impl.h"

#define HDD_MAX_CHUNKS 16
#define HDD_MAX_SUMS ((int64_t)1 << 23)   /* chunk histograms: at most 64 MiB of float64 */

typedef struct hdd_args {
    axon_tensor_t hist, in, weight, edges[AXON_MAX_DIMS];
    int dims, weighted, linear;
    int64_t n, chunk, nbins;     /* points, points per chunk, bins in all */
    double *sums;                /* set by the kernel: [nchunks][nbins] */
    double *edge;                /* set by the kernel: every dim's edges, converted */
    int64_t edge_at[AXON_MAX_DIMS], stride[AXON_MAX_DIMS];
} hdd_args_t;

/* The first of e[lo, hi) greater than x, as an index: std::upper_bound's probes and comparison (x < e[mid]), so
 * that edges PyTorch does not check (unsorted, NaN) give its bins too. */
static int64_t hdd_upper_bound(const double *e, int64_t lo, int64_t hi, double x) {
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (x < e[mid]) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* The bin of x (already inside [e[0], e[nb]]) among nb bins. */
static int64_t hdd_bin(const hdd_args_t *a, const double *e, int64_t nb, double x) {
    int64_t pos;
    if (a->linear) {
        const axon_dtype_t d = a->in.dtype;
        double t = axon_round_to(d, x - e[0]);
        t = axon_round_to(d, t * axon_round_to(d, (double)nb));
        t = axon_round_to(d, t / axon_round_to(d, e[nb] - e[0]));
        pos = (int64_t)t;
        const int64_t first = pos - 1 < 0 ? 0 : pos - 1, last = pos + 2 < nb + 1 ? pos + 2 : nb + 1;
        pos = hdd_upper_bound(e, first, last, x) - 1;
    } else {
        pos = hdd_upper_bound(e, 0, nb + 1, x) - 1;
    }
    if (pos >= nb) pos = nb - 1;   /* the last bin takes its right edge */
    return pos < 0 ? 0 : pos;
}

#define HDD_BATCH 256

static void hdd_chunk(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const hdd_args_t *a = ctx;
    const int D = a->dims;
    const size_t es = axon_dtype_size(a->in.dtype);
    const axon_convert_fn to_f64 = axon_convert_get(a->in.dtype, AXON_FLOAT64);
    for (int64_t c = begin; c < end; c++) {
        double *sums = a->sums + c * a->nbins;
        const int64_t start = c * a->chunk, stop = start + a->chunk < a->n ? start + a->chunk : a->n;
        for (int64_t i = start; i < stop; i += HDD_BATCH) {
            const int64_t m = stop - i < HDD_BATCH ? stop - i : HDD_BATCH;
            double x[HDD_BATCH * AXON_MAX_DIMS], w[HDD_BATCH];
            to_f64((char *)x, 1, (const char *)a->in.data + i * D * (int64_t)es, 1, m * D);
            if (a->weighted) to_f64((char *)w, 1, (const char *)a->weight.data + i * (int64_t)es, 1, m);
            for (int64_t k = 0; k < m; k++) {
                int64_t at = 0;
                int inside = 1;
                for (int d = 0; d < D && inside; d++) {
                    const double *e = a->edge + a->edge_at[d], v = x[k * D + d];
                    const int64_t nb = a->hist.sizes[d];
                    inside = v >= e[0] && v <= e[nb];   /* NaN too */
                    if (inside) at += a->stride[d] * hdd_bin(a, e, nb, v);
                }
                if (inside) sums[at] += a->weighted ? w[k] : 1.0;
            }
        }
    }
}

static axon_status_t hdd_kernel(const void *args, const axon_exec_t *ex) {
    hdd_args_t a = *(const hdd_args_t *)args;
    const int64_t nchunks = a.n == 0 ? 1 : (a.n + a.chunk - 1) / a.chunk;
    int64_t nedges = 0;
    for (int d = 0; d < a.dims; d++) a.edge_at[d] = nedges, nedges += a.hist.sizes[d] + 1;
    a.sums = calloc((size_t)(nchunks * a.nbins), sizeof *a.sums);
    a.edge = malloc((size_t)nedges * sizeof *a.edge);
    if (a.sums == NULL || a.edge == NULL) {
        free(a.sums);
        free(a.edge);
        return axon_fail(AXON_ERROR_OUT_OF_MEMORY, "histogramdd: cannot allocate %lld bin sums",
                         (long long)(nchunks * a.nbins));
    }
    for (int d = 0; d < a.dims; d++)
        axon_convert_get(a.edges[d].dtype, AXON_FLOAT64)((char *)(a.edge + a.edge_at[d]), 1,
                                                         (const char *)a.edges[d].data, 1, a.hist.sizes[d] + 1);
    if (a.n > 0) axon_parallel_for(ex->pool, 0, nchunks, 1, hdd_chunk, &a);
    for (int64_t c = 1; c < nchunks; c++)
        for (int64_t b = 0; b < a.nbins; b++) a.sums[b] += a.sums[c * a.nbins + b];
    axon_convert_get(AXON_FLOAT64, a.hist.dtype)((char *)a.hist.data, 1, (const char *)a.sums, 1, a.nbins);
    free(a.sums);
    free(a.edge);
    return AXON_OK;
}

static int hdd_float(axon_dtype_t d) {
    return d == AXON_FLOAT32 || d == AXON_FLOAT64 || d == AXON_FLOAT16 || d == AXON_BFLOAT16;
}

axon_status_t axon_kernel_histogramdd(axon_stream_t s, const axon_tensor_t *hist, const axon_tensor_t *in,
                                      const axon_tensor_t *weight, const axon_tensor_t *edges, int linear) {
    static const char op[] = "histogramdd";
    axon_status_t st;
    if ((st = axon_kernel_check_operand(in, op, "in", 0)) != AXON_OK) return st;
    if ((st = axon_kernel_check_operand(hist, op, "hist", 1)) != AXON_OK) return st;
    if (weight && (st = axon_kernel_check_operand(weight, op, "weight", 0)) != AXON_OK) return st;
    if (!hdd_float(in->dtype) || hist->dtype != in->dtype || (weight && weight->dtype != in->dtype))
        return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: in, weight and hist must share one floating dtype (in %s, hist "
                         "%s)", op, axon_dtype_name(in->dtype), axon_dtype_name(hist->dtype));
    if (in->ndim != 2 || in->sizes[1] < 1 || in->sizes[1] > AXON_MAX_DIMS)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in must be [N, D] with D in 1..%d", op, AXON_MAX_DIMS);
    hdd_args_t a;
    memset(&a, 0, sizeof a);
    a.dims = (int)in->sizes[1];
    a.n = in->sizes[0];
    if (hist->ndim != a.dims)
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: hist has %d dimensions, in has %d coordinates", op, hist->ndim,
                         a.dims);
    if (weight && (weight->ndim != 1 || weight->sizes[0] != a.n))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: weight must be [%lld]", op, (long long)a.n);
    if (edges == NULL) return axon_fail(AXON_ERROR_INVALID_ARG, "%s: edges is NULL", op);
    a.nbins = 1;
    for (int d = a.dims - 1; d >= 0; d--) {
        if ((st = axon_kernel_check_operand(&edges[d], op, "edges", 0)) != AXON_OK) return st;
        if (edges[d].dtype != in->dtype)
            return axon_fail(AXON_ERROR_UNSUPPORTED, "%s: edges %d dtype %s, in %s", op, d,
                             axon_dtype_name(edges[d].dtype), axon_dtype_name(in->dtype));
        if (edges[d].ndim != 1 || edges[d].sizes[0] != hist->sizes[d] + 1 || hist->sizes[d] < 1)
            return axon_fail(AXON_ERROR_INVALID_ARG, "%s: edges %d must have hist.size(%d) + 1 elements (>= 2)", op, d,
                             d);
        a.edges[d] = edges[d];
        a.stride[d] = a.nbins;
        a.nbins *= hist->sizes[d];
    }
    if (!axon_tensor_is_contiguous(in) || !axon_tensor_is_contiguous(hist) ||
        (weight && !axon_tensor_is_contiguous(weight)))
        return axon_fail(AXON_ERROR_INVALID_ARG, "%s: in, weight and hist must be contiguous", op);
    a.hist = *hist;
    a.in = *in;
    if (weight) a.weight = *weight, a.weighted = 1;
    a.linear = linear != 0;
    /* Chunks of at least AXON_KERNEL_GRAIN points, no more chunk histograms than HDD_MAX_SUMS sums. */
    int64_t nchunks = a.nbins * HDD_MAX_CHUNKS <= HDD_MAX_SUMS ? HDD_MAX_CHUNKS : HDD_MAX_SUMS / a.nbins;
    if (nchunks < 1) nchunks = 1;
    a.chunk = (a.n + nchunks - 1) / nchunks;
    if (a.chunk < AXON_KERNEL_GRAIN / a.dims) a.chunk = AXON_KERNEL_GRAIN / a.dims;
    axon_launch_t l = {hdd_kernel, &a, sizeof a, op, (uint64_t)(a.n * a.dims) * axon_dtype_size(in->dtype)};
    return axon_stream_launch(s, &l);
}

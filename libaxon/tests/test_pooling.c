/* axon/pooling.h against naive long double references: max pooling (1d/2d/3d, stride, padding, dilation, ceil-mode
 * output sizes, NaN), its indices and backward, average pooling (count_include_pad, divisor_override) and its
 * backward, adaptive average and max pooling and their backward; integer max and average pooling in every integer
 * dtype; bitwise identical results with 1 and 4 threads; bad input refused with a message, and an out-of-range index
 * reported by the stream, never written.
 *
 * Inputs are multiples of 1/64 in [-2, 2] (exact in every float dtype), so max pooling must match exactly and sums
 * differ from the reference only by the output's rounding: relative 2^-8 (bfloat16), 2^-11 (float16), 2^-24
 * (float32), 1e-12 (float64), with slack. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/pooling.h"
#include "reduce_ref.h"

static const axon_dtype_t pt_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};

static long double pt_rtol(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return 1e-12L;
    case AXON_FLOAT32: return 2e-7L;
    case AXON_FLOAT16: return 1.1e-3L;
    default: return 8e-3L;
    }
}

/* Tensors here are [2, 3, spatial...]: 6 planes. */
#define PT_PLANES 6

typedef struct pt_case {
    int n;                       /* spatial dims */
    int64_t in[3];               /* spatial sizes, first n used */
    axon_pool_params_t p;
    int ceil_mode;
} pt_case_t;

static int64_t pt_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, int ceil_mode) {
    int64_t eff = (k - 1) * dil + 1, num = in + 2 * pad - eff;
    int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + pad) o--; /* the last window must start inside the input or left pad */
    return o;
}

static axon_tensor_t pt_desc(void *data, axon_dtype_t d, int n, const int64_t *spatial, int64_t *sizes) {
    sizes[0] = 2, sizes[1] = 3;
    for (int i = 0; i < n; i++) sizes[2 + i] = spatial[i];
    return kc_tensor(data, d, n + 2, sizes, NULL);
}

static int64_t pt_prod(int n, const int64_t *s) {
    int64_t r = 1;
    for (int i = 0; i < n; i++) r *= s[i];
    return r;
}

/* Expand a case's geometry to 3 dims (D, H, W). */
static void pt_expand(const pt_case_t *c, const int64_t *out, int64_t I[3], int64_t O[3], int64_t K[3], int64_t S[3],
                      int64_t P[3], int64_t Dl[3]) {
    for (int k = 0; k < 3; k++) I[k] = O[k] = K[k] = S[k] = Dl[k] = 1, P[k] = 0;
    for (int i = 0; i < c->n; i++) {
        int k = 3 - c->n + i;
        I[k] = c->in[i], O[k] = out[i], K[k] = c->p.kernel[i], S[k] = c->p.stride[i], P[k] = c->p.padding[i];
        Dl[k] = c->p.dilation[i];
    }
}

/* Reference max pooling (PyTorch's rule) into ref values and indices. */
static void ref_max_pool(const pt_case_t *c, const int64_t *out, const long double *x, long double *y, int64_t *idx) {
    int64_t I[3], O[3], K[3], S[3], P[3], Dl[3];
    pt_expand(c, out, I, O, K, S, P, Dl);
    int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2];
    for (int64_t p = 0; p < PT_PLANES; p++)
        for (int64_t o = 0; o < osz; o++) {
            int64_t od = o / (O[1] * O[2]), oh = o / O[2] % O[1], ow = o % O[2];
            long double m = -INFINITY;
            int64_t best = -1;
            for (int64_t a = 0; a < K[0]; a++)
                for (int64_t b = 0; b < K[1]; b++)
                    for (int64_t e = 0; e < K[2]; e++) {
                        int64_t d = od * S[0] - P[0] + a * Dl[0], h = oh * S[1] - P[1] + b * Dl[1];
                        int64_t w = ow * S[2] - P[2] + e * Dl[2];
                        if (d < 0 || d >= I[0] || h < 0 || h >= I[1] || w < 0 || w >= I[2]) continue;
                        int64_t i = (d * I[1] + h) * I[2] + w;
                        long double v = x[p * isz + i];
                        if (best < 0 || v > m || isnan(v)) m = v, best = i;
                    }
            y[p * osz + o] = m;
            idx[p * osz + o] = best;
        }
}

/* Reference average pooling; also its backward when g (grad_out) and gi are given. */
static void ref_avg_pool(const pt_case_t *c, const int64_t *out, const long double *x, long double *y,
                         const long double *g, long double *gi) {
    int64_t I[3], O[3], K[3], S[3], P[3], Dl[3];
    pt_expand(c, out, I, O, K, S, P, Dl);
    int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2];
    if (gi) memset(gi, 0, sizeof(long double) * (size_t)(PT_PLANES * isz));
    for (int64_t p = 0; p < PT_PLANES; p++)
        for (int64_t o = 0; o < osz; o++) {
            int64_t oc[3] = {o / (O[1] * O[2]), o / O[2] % O[1], o % O[2]}, padded = 1, inside = 1, lo[3], hi[3];
            for (int k = 0; k < 3; k++) {
                int64_t st = oc[k] * S[k] - P[k], en = st + K[k];
                padded *= (en < I[k] + P[k] ? en : I[k] + P[k]) - st;
                lo[k] = st < 0 ? 0 : st, hi[k] = en < I[k] ? en : I[k];
                inside *= hi[k] > lo[k] ? hi[k] - lo[k] : 0;
            }
            long double div = c->p.divisor_override ? c->p.divisor_override : c->p.count_include_pad ? padded : inside;
            long double sum = 0;
            for (int64_t d = lo[0]; d < hi[0]; d++)
                for (int64_t h = lo[1]; h < hi[1]; h++)
                    for (int64_t w = lo[2]; w < hi[2]; w++) {
                        int64_t i = p * isz + (d * I[1] + h) * I[2] + w;
                        if (y) sum += x[i];
                        if (gi) gi[i] += g[p * osz + o] / div;
                    }
            if (y) y[p * osz + o] = inside ? sum / div : 0;
        }
}

/* Upload n long doubles as dtype d; the host copy (rounded) is written back into v. */
static void *pt_upload(const kc_dev_t *k, axon_dtype_t d, long double *v, int64_t n) {
    void *h = calloc((size_t)(n > 0 ? n : 1), axon_dtype_size(d));
    for (int64_t i = 0; i < n; i++) rr_set(d, h, i, v[i]), v[i] = rr_get(d, h, i);
    void *dev = rr_upload(k, d, h, n);
    free(h);
    return dev;
}

static void pt_random(long double *v, int64_t n) {
    for (int64_t i = 0; i < n; i++) v[i] = (long double)((int)(rr_rand() % 257) - 128) / 64;
}

/* Download n elements of d and compare with want (scale adds an absolute term); 1 if all close. */
static int pt_compare(const kc_dev_t *k, axon_dtype_t d, const void *dev, const long double *want, int64_t n,
                      long double scale, const char *what) {
    void *h = calloc((size_t)(n > 0 ? n : 1), axon_dtype_size(d));
    int ok = kc_download(k, h, dev, (size_t)n * axon_dtype_size(d));
    for (int64_t i = 0; ok && i < n; i++) {
        long double got = rr_get(d, h, i), w = want[i];
        int good = isnan(w) ? isnan(got) : isinf(w) ? got == w : fabsl(got - w) <= pt_rtol(d) * (fabsl(w) + scale);
        if (!good) {
            fprintf(stderr, "%s (%s): element %lld is %.10Lg, expected %.10Lg\n", what, axon_dtype_name(d),
                    (long long)i, got, w);
            ok = 0;
        }
    }
    free(h);
    return ok;
}

static const pt_case_t pt_cases[] = {
    {1, {11}, {1, {3}, {2}, {1}, {1}, 0, 0}, 0},
    {1, {10}, {1, {3}, {2}, {1}, {2}, 1, 0}, 1},
    {2, {7, 9}, {2, {3, 2}, {2, 1}, {1, 0}, {1, 1}, 1, 0}, 0},
    {2, {8, 8}, {2, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 0, 0}, 1},
    {2, {9, 10}, {2, {2, 3}, {2, 2}, {0, 1}, {2, 1}, 0, 5}, 1},
    {3, {5, 6, 7}, {3, {2, 3, 2}, {2, 2, 1}, {1, 1, 0}, {1, 1, 2}, 1, 0}, 0},
    {3, {4, 5, 5}, {3, {3, 3, 3}, {2, 2, 2}, {1, 0, 1}, {1, 1, 1}, 0, 0}, 1},
    {2, {6, 7}, {2, {2, 3}, {2, 1}, {1, 1}, {1, 1}, 1, -3}, 0},
    /* rows of 300 outputs: more than one block of float32 max pooling's vector loop (ties are common: 257 levels) */
    {2, {3, 600}, {2, {2, 3}, {1, 2}, {0, 1}, {1, 1}, 0, 0}, 0},
    /* 10 x 11 x 12 = 1320 taps: more than the vector loop's table of tap offsets, so indices decode tap numbers */
    {3, {11, 12, 40}, {3, {10, 11, 12}, {1, 1, 2}, {0, 0, 1}, {1, 1, 1}, 0, 0}, 0},
};

/* A case's output spatial sizes, and its input and output element counts over all planes. */
static void pt_sizes(const pt_case_t *c, int64_t out[3], int64_t *ni, int64_t *no) {
    for (int i = 0; i < c->n; i++)
        out[i] = pt_out_size(c->in[i], c->p.kernel[i], c->p.stride[i], c->p.padding[i], c->p.dilation[i],
                             c->ceil_mode);
    *ni = PT_PLANES * pt_prod(c->n, c->in);
    *no = PT_PLANES * pt_prod(c->n, out);
}

/* Runs every case in every dtype: max (out, indices, backward) and average (out, backward). */
static void test_max_and_avg_pool_match_reference(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (size_t ci = 0; ci < sizeof pt_cases / sizeof pt_cases[0]; ci++)
        for (size_t di = 0; di < sizeof pt_dtypes / sizeof pt_dtypes[0]; di++) {
            const pt_case_t *c = &pt_cases[ci];
            axon_dtype_t d = pt_dtypes[di];
            int64_t out[3], si[AXON_MAX_DIMS], so[AXON_MAX_DIMS], ni, no;
            pt_sizes(c, out, &ni, &no);
            long double *x = malloc(sizeof(long double) * (size_t)ni), *y = malloc(sizeof(long double) * (size_t)no);
            long double *g = malloc(sizeof(long double) * (size_t)no), *gi = malloc(sizeof(long double) * (size_t)ni);
            int64_t *ridx = malloc(sizeof(int64_t) * (size_t)no), *idx = malloc(sizeof(int64_t) * (size_t)no);
            pt_random(x, ni);
            pt_random(g, no);
            if (d != AXON_FLOAT16) x[1] = NAN;   /* a NaN wins its windows */
            void *dx = pt_upload(&k, d, x, ni), *dg = pt_upload(&k, d, g, no);
            void *dy = kc_upload(&k, NULL, (size_t)no * axon_dtype_size(d)), *di_ = kc_upload(&k, NULL, (size_t)no * 8);
            void *dgi = kc_upload(&k, NULL, (size_t)ni * axon_dtype_size(d));
            axon_tensor_t tx = pt_desc(dx, d, c->n, c->in, si), ty = pt_desc(dy, d, c->n, out, so);
            axon_tensor_t ti = pt_desc(di_, AXON_INT64, c->n, out, so), tg = pt_desc(dg, d, c->n, out, so);
            axon_tensor_t tgi = pt_desc(dgi, d, c->n, c->in, si);

            CHECK_OK(axon_kernel_max_pool(k.s, &ty, &ti, &tx, &c->p));
            ref_max_pool(c, out, x, y, ridx);
            CHECK(pt_compare(&k, d, dy, y, no, 0, "max_pool"));
            CHECK(kc_download(&k, idx, di_, (size_t)no * 8));
            CHECK(kc_first_diff(idx, ridx, (size_t)no * 8) < 0);
            CHECK_OK(axon_kernel_max_pool_backward(k.s, &tgi, &tg, &ti, c->n));
            int64_t isz = ni / PT_PLANES, osz = no / PT_PLANES;
            for (int64_t i = 0; i < ni; i++) gi[i] = 0;
            for (int64_t o = 0; o < no; o++) gi[o / osz * isz + ridx[o]] += g[o];
            CHECK(pt_compare(&k, d, dgi, gi, ni, 4, "max_pool_backward"));

            x[1] = 0.25L;
            void *dx2 = pt_upload(&k, d, x, ni);
            tx.data = dx2;
            CHECK_OK(axon_kernel_avg_pool(k.s, &ty, &tx, &c->p));
            ref_avg_pool(c, out, x, y, NULL, NULL);
            CHECK(pt_compare(&k, d, dy, y, no, 1, "avg_pool"));
            CHECK_OK(axon_kernel_avg_pool_backward(k.s, &tgi, &tg, &c->p));
            ref_avg_pool(c, out, x, NULL, g, gi);
            CHECK(pt_compare(&k, d, dgi, gi, ni, 4, "avg_pool_backward"));
            CHECK_OK(axon_stream_sync(k.s));
            axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dx2), axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dy);
            axon_mem_free(k.dev, di_), axon_mem_free(k.dev, dgi);
            free(x), free(y), free(g), free(gi), free(ridx), free(idx);
        }
    axon_runtime_destroy(k.rt);
}

/* Host data of a [2, 3, sp] tensor of es-byte elements, rearranged from channels-first to channels-last (to_cl) or
 * back. */
static void pt_relayout(const void *src, void *dst, int64_t sp, size_t es, int to_cl) {
    for (int64_t n = 0; n < 2; n++)
        for (int64_t c = 0; c < 3; c++)
            for (int64_t q = 0; q < sp; q++) {
                const int64_t rm = (n * 3 + c) * sp + q, cl = (n * sp + q) * 3 + c;
                memcpy((char *)dst + (size_t)(to_cl ? cl : rm) * es, (const char *)src + (size_t)(to_cl ? rm : cl) * es,
                       es);
            }
}

/* t (a pt_desc) described channels-last over the same sizes. */
static axon_tensor_t pt_cl(axon_tensor_t t) {
    int64_t inner = t.sizes[1];
    t.strides[1] = 1;
    for (int i = t.ndim - 1; i >= 2; i--) t.strides[i] = inner, inner *= t.sizes[i];
    t.strides[0] = inner;
    return t;
}

/* float32 max pooling of channels-last tensors (pooling_max.c's channel-vector loops) against the same tensors
 * channels-first: the same bits for the output, the indices and the backward, every case. */
static void test_channels_last_max_pool_gives_the_channels_first_bits(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (size_t ci = 0; ci < sizeof pt_cases / sizeof pt_cases[0]; ci++) {
        const pt_case_t *c = &pt_cases[ci];
        int64_t out[3], si[AXON_MAX_DIMS], so[AXON_MAX_DIMS], ni, no;
        pt_sizes(c, out, &ni, &no);
        float *x = malloc(sizeof(float) * (size_t)ni), *g = malloc(sizeof(float) * (size_t)no);
        float *xl = malloc(sizeof(float) * (size_t)ni), *gl = malloc(sizeof(float) * (size_t)no);
        for (int64_t i = 0; i < ni; i++) x[i] = (float)((int)(rr_rand() % 257) - 128) / 64;
        for (int64_t i = 0; i < no; i++) g[i] = (float)((int)(rr_rand() % 257) - 128) / 64;
        x[1] = NAN;
        pt_relayout(x, xl, ni / PT_PLANES, 4, 1), pt_relayout(g, gl, no / PT_PLANES, 4, 1);
        void *d[10];
        d[0] = kc_upload(&k, x, (size_t)ni * 4), d[1] = kc_upload(&k, xl, (size_t)ni * 4);
        d[2] = kc_upload(&k, g, (size_t)no * 4), d[3] = kc_upload(&k, gl, (size_t)no * 4);
        for (int i = 4; i < 10; i++) d[i] = kc_upload(&k, NULL, (size_t)(i < 8 ? no * 8 : ni * 4));
        axon_tensor_t tx = pt_desc(d[0], AXON_FLOAT32, c->n, c->in, si);
        axon_tensor_t tg = pt_desc(d[2], AXON_FLOAT32, c->n, out, so);
        axon_tensor_t ty = pt_desc(d[4], AXON_FLOAT32, c->n, out, so), ti = pt_desc(d[6], AXON_INT64, c->n, out, so);
        axon_tensor_t tgi = pt_desc(d[8], AXON_FLOAT32, c->n, c->in, si);
        axon_tensor_t lx = tx, lg = tg, ly = ty, li = ti, lgi = tgi;
        lx.data = d[1], lg.data = d[3], ly.data = d[5], li.data = d[7], lgi.data = d[9];
        lx = pt_cl(lx), lg = pt_cl(lg), ly = pt_cl(ly), li = pt_cl(li), lgi = pt_cl(lgi);
        CHECK_OK(axon_kernel_max_pool(k.s, &ty, &ti, &tx, &c->p));
        CHECK_OK(axon_kernel_max_pool(k.s, &ly, &li, &lx, &c->p));
        CHECK_OK(axon_kernel_max_pool_backward(k.s, &tgi, &tg, &ti, c->n));
        CHECK_OK(axon_kernel_max_pool_backward(k.s, &lgi, &lg, &li, c->n));
        char *h[6], *back = malloc((size_t)(ni > no ? ni : no) * 8);
        const size_t bytes[3] = {(size_t)no * 4, (size_t)no * 8, (size_t)ni * 4}, es[3] = {4, 8, 4};
        const int64_t sp[3] = {no / PT_PLANES, no / PT_PLANES, ni / PT_PLANES};
        for (int r = 0; r < 3; r++) {
            h[2 * r] = malloc(bytes[r]), h[2 * r + 1] = malloc(bytes[r]);
            CHECK(kc_download(&k, h[2 * r], d[4 + 2 * r], bytes[r]) &&
                  kc_download(&k, h[2 * r + 1], d[5 + 2 * r], bytes[r]));
            pt_relayout(h[2 * r + 1], back, sp[r], es[r], 0);
            if (kc_first_diff(h[2 * r], back, bytes[r]) >= 0) {
                fprintf(stderr, "  case %zu: channels-last %s differs\n", ci,
                        r == 0 ? "out" : r == 1 ? "indices" : "grad_in");
                check_failures_in_test++;
            }
            free(h[2 * r]), free(h[2 * r + 1]);
        }
        for (int i = 0; i < 10; i++) axon_mem_free(k.dev, d[i]);
        free(x), free(g), free(xl), free(gl), free(back);
    }
    /* a channels-last in with a channels-first out; a float64 channels-last in */
    const int64_t sp2[2] = {4, 4}, op2[2] = {2, 2};
    int64_t s1[AXON_MAX_DIMS], s2[AXON_MAX_DIMS];
    float buf[256] = {0};
    axon_pool_params_t p = pt_cases[3].p;
    axon_tensor_t in = pt_cl(pt_desc(buf, AXON_FLOAT32, 2, sp2, s1)), o = pt_desc(buf + 128, AXON_FLOAT32, 2, op2, s2);
    p.padding[0] = p.padding[1] = 0, p.kernel[0] = p.kernel[1] = 2, p.stride[0] = p.stride[1] = 2;
    CHECK_STATUS(axon_kernel_max_pool(k.s, &o, NULL, &in, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("share one layout");
    axon_tensor_t ocl = pt_cl(o), in64 = in;
    in64.dtype = AXON_FLOAT64;
    CHECK_STATUS(axon_kernel_max_pool(k.s, &ocl, NULL, &in64, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("float32");
    axon_runtime_destroy(k.rt);
}

/* Adaptive windows: [floor(o I / O), ceil((o + 1) I / O)) per dim, sizes that do and do not divide. */
static void test_adaptive_pools_match_reference(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    static const struct { int n; int64_t in[3], out[3]; } cases[] = {
        {1, {10}, {4}}, {2, {7, 9}, {3, 4}}, {2, {5, 5}, {7, 2}}, {3, {5, 4, 6}, {2, 3, 4}},
        {2, {6, 7}, {1, 1}} /* a global average pool (its float32 backward is a fill) */};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (size_t di = 0; di < sizeof pt_dtypes / sizeof pt_dtypes[0]; di++) {
            axon_dtype_t d = pt_dtypes[di];
            int n = cases[ci].n;
            int64_t I[3] = {1, 1, 1}, O[3] = {1, 1, 1}, si[AXON_MAX_DIMS], so[AXON_MAX_DIMS];
            for (int i = 0; i < n; i++) I[3 - n + i] = cases[ci].in[i], O[3 - n + i] = cases[ci].out[i];
            int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2], ni = PT_PLANES * isz, no = PT_PLANES * osz;
            long double *x = malloc(sizeof(long double) * (size_t)ni), *ya = malloc(sizeof(long double) * (size_t)no);
            long double *ym = malloc(sizeof(long double) * (size_t)no), *g = malloc(sizeof(long double) * (size_t)no);
            long double *gia = calloc((size_t)ni, sizeof(long double)), *gim = calloc((size_t)ni, sizeof(long double));
            int64_t *ridx = malloc(sizeof(int64_t) * (size_t)no), *idx = malloc(sizeof(int64_t) * (size_t)no);
            pt_random(x, ni);
            pt_random(g, no);
            void *dx = pt_upload(&k, d, x, ni), *dg = pt_upload(&k, d, g, no);
            size_t es = axon_dtype_size(d);
            void *dya = kc_upload(&k, NULL, (size_t)no * es), *dym = kc_upload(&k, NULL, (size_t)no * es);
            void *dix = kc_upload(&k, NULL, (size_t)no * 8), *dgi = kc_upload(&k, NULL, (size_t)ni * es);
            for (int64_t p = 0; p < PT_PLANES; p++)
                for (int64_t o = 0; o < osz; o++) {
                    int64_t oc[3] = {o / (O[1] * O[2]), o / O[2] % O[1], o % O[2]}, lo[3], hi[3];
                    for (int q = 0; q < 3; q++)
                        lo[q] = (int64_t)floorl((long double)oc[q] * I[q] / O[q]),
                        hi[q] = (int64_t)ceill((long double)(oc[q] + 1) * I[q] / O[q]);
                    long double sum = 0, m = 0;
                    long double cnt = (long double)((hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]));
                    int64_t best = -1;
                    for (int64_t a = lo[0]; a < hi[0]; a++)
                        for (int64_t b = lo[1]; b < hi[1]; b++)
                            for (int64_t c = lo[2]; c < hi[2]; c++) {
                                int64_t i = (a * I[1] + b) * I[2] + c;
                                long double v = x[p * isz + i];
                                sum += v;
                                if (best < 0 || v > m) m = v, best = i;
                            }
                    for (int64_t a = lo[0]; a < hi[0]; a++)
                        for (int64_t b = lo[1]; b < hi[1]; b++)
                            for (int64_t c = lo[2]; c < hi[2]; c++)
                                gia[p * isz + (a * I[1] + b) * I[2] + c] += g[p * osz + o] / cnt;
                    ya[p * osz + o] = sum / cnt, ym[p * osz + o] = m, ridx[p * osz + o] = best;
                    gim[p * isz + best] += g[p * osz + o];
                }
            axon_tensor_t tx = pt_desc(dx, d, n, cases[ci].in, si), tya = pt_desc(dya, d, n, cases[ci].out, so);
            axon_tensor_t tym = pt_desc(dym, d, n, cases[ci].out, so);
            axon_tensor_t tix = pt_desc(dix, AXON_INT64, n, cases[ci].out, so);
            axon_tensor_t tg = pt_desc(dg, d, n, cases[ci].out, so), tgi = pt_desc(dgi, d, n, cases[ci].in, si);
            CHECK_OK(axon_kernel_adaptive_avg_pool(k.s, &tya, &tx, n));
            CHECK_OK(axon_kernel_adaptive_max_pool(k.s, &tym, &tix, &tx, n));
            CHECK(pt_compare(&k, d, dya, ya, no, 1, "adaptive_avg_pool"));
            CHECK(pt_compare(&k, d, dym, ym, no, 0, "adaptive_max_pool"));
            CHECK(kc_download(&k, idx, dix, (size_t)no * 8));
            CHECK(kc_first_diff(idx, ridx, (size_t)no * 8) < 0);
            CHECK_OK(axon_kernel_adaptive_avg_pool_backward(k.s, &tgi, &tg, n));
            CHECK(pt_compare(&k, d, dgi, gia, ni, 4, "adaptive_avg_pool_backward"));
            CHECK_OK(axon_kernel_max_pool_backward(k.s, &tgi, &tg, &tix, n));
            CHECK(pt_compare(&k, d, dgi, gim, ni, 4, "adaptive_max_pool_backward"));
            CHECK_OK(axon_stream_sync(k.s));
            axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dya), axon_mem_free(k.dev, dym);
            axon_mem_free(k.dev, dix), axon_mem_free(k.dev, dgi);
            free(x), free(ya), free(ym), free(g), free(gia), free(gim), free(ridx), free(idx);
        }
    axon_runtime_destroy(k.rt);
}

/* The backward scatters a plane per thread in output order: 1 and 4 threads give the same bits (bfloat16, where
 * the order of the additions shows). */
static void test_backward_is_bitwise_the_same_for_any_thread_count(void) {
    const axon_pool_params_t p = {2, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, 0};
    int64_t sp[2] = {40, 37}, si[AXON_MAX_DIMS], so[AXON_MAX_DIMS];
    int64_t n = PT_PLANES * 40 * 37;
    long double *g = malloc(sizeof(long double) * (size_t)n);
    pt_random(g, n);
    void *res[2] = {malloc((size_t)n * 2), malloc((size_t)n * 2)};
    for (int t = 0; t < 2; t++) {
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        void *dg = pt_upload(&k, AXON_BFLOAT16, g, n), *dgi = kc_upload(&k, NULL, (size_t)n * 2);
        axon_tensor_t tg = pt_desc(dg, AXON_BFLOAT16, 2, sp, so), tgi = pt_desc(dgi, AXON_BFLOAT16, 2, sp, si);
        CHECK_OK(axon_kernel_avg_pool_backward(k.s, &tgi, &tg, &p));
        CHECK(kc_download(&k, res[t], dgi, (size_t)n * 2));
        axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dgi);
        axon_runtime_destroy(k.rt);
    }
    CHECK(kc_first_diff(res[0], res[1], (size_t)n * 2) < 0);
    free(res[0]), free(res[1]), free(g);
}

/* Integer max pooling over every case: values with many ties (the first maximum wins) and, in int64, values 2^60
 * apart plus 0..3, which a trip through double would merge; the reference's long double holds int64 exactly. Then
 * average pooling, whose quotients truncate toward zero. */
static void test_integer_max_and_avg_pool_match_reference_exactly(void) {
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    static const axon_dtype_t dts[] = {AXON_INT8, AXON_INT16, AXON_INT32, AXON_INT64, AXON_UINT8};
    for (size_t ci = 0; ci < sizeof pt_cases / sizeof pt_cases[0]; ci++)
        for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
            const pt_case_t *c = &pt_cases[ci];
            const axon_dtype_t d = dts[di];
            int64_t out[3], si[AXON_MAX_DIMS], so[AXON_MAX_DIMS], ni, no;
            pt_sizes(c, out, &ni, &no);
            long double *x = malloc(sizeof(long double) * (size_t)ni), *y = malloc(sizeof(long double) * (size_t)no);
            int64_t *ridx = malloc(sizeof(int64_t) * (size_t)no), *idx = malloc(sizeof(int64_t) * (size_t)no);
            for (int64_t i = 0; i < ni; i++) {
                int64_t v = (int64_t)(rr_rand() % 7) - (d == AXON_UINT8 ? 0 : 3);
                x[i] = d == AXON_INT64 ? (long double)(v * ((int64_t)1 << 60) + (int64_t)(rr_rand() % 4)) : v;
            }
            char *hx = malloc((size_t)ni * axon_dtype_size(d)), *hy = malloc((size_t)no * axon_dtype_size(d));
            for (int64_t i = 0; i < ni; i++) rr_set(d, hx, i, x[i]);
            void *dx = rr_upload(&k, d, hx, ni), *dy = rr_upload(&k, d, NULL, no);
            void *di_ = kc_upload(&k, NULL, (size_t)no * 8);
            axon_tensor_t tx = pt_desc(dx, d, c->n, c->in, si), ty = pt_desc(dy, d, c->n, out, so);
            axon_tensor_t ti = pt_desc(di_, AXON_INT64, c->n, out, so);
            CHECK_OK(axon_kernel_max_pool(k.s, &ty, &ti, &tx, &c->p));
            CHECK_OK(axon_stream_sync(k.s));
            ref_max_pool(c, out, x, y, ridx);
            int bad = !kc_download(&k, hy, dy, (size_t)no * axon_dtype_size(d));
            for (int64_t o = 0; o < no; o++) bad |= (int64_t)rr_get(d, hy, o) != (int64_t)y[o];
            CHECK(kc_download(&k, idx, di_, (size_t)no * 8));
            if (bad || kc_first_diff(idx, ridx, (size_t)no * 8) >= 0) {
                fprintf(stderr, "  integer max_pool case %zu %s differs\n", ci, axon_dtype_name(d));
                check_failures_in_test++;
            }
            /* average: small values, so the long double mean is exact enough that truncating it is the quotient */
            for (int64_t i = 0; i < ni; i++) x[i] = (long double)((int64_t)(rr_rand() % 21) - 10 * (d != AXON_UINT8));
            for (int64_t i = 0; i < ni; i++) rr_set(d, hx, i, x[i]);
            void *dx2 = rr_upload(&k, d, hx, ni);
            tx.data = dx2;
            CHECK_OK(axon_kernel_avg_pool(k.s, &ty, &tx, &c->p));
            ref_avg_pool(c, out, x, y, NULL, NULL);
            bad = !kc_download(&k, hy, dy, (size_t)no * axon_dtype_size(d));
            for (int64_t o = 0; o < no; o++) { /* a negative divisor_override wraps into uint8 */
                int64_t want;
                rr_set(d, &want, 0, truncl(y[o]));
                bad |= rr_get(d, hy, o) != rr_get(d, &want, 0);
            }
            if (bad) {
                fprintf(stderr, "  integer avg_pool case %zu %s differs\n", ci, axon_dtype_name(d));
                check_failures_in_test++;
            }
            axon_mem_free(k.dev, dx2);
            axon_mem_free(k.dev, dx), axon_mem_free(k.dev, dy), axon_mem_free(k.dev, di_);
            free(x), free(y), free(ridx), free(idx), free(hx), free(hy);
        }
    /* integers take one dtype, and adaptive pooling and the backward passes stay float-only */
    int32_t a[2 * 3 * 16], b[2 * 3 * 4];
    float f[2 * 3 * 4];
    int64_t s_in[4] = {2, 3, 4, 4}, s_out[4] = {2, 3, 2, 2};
    axon_tensor_t ti32 = kc_tensor(a, AXON_INT32, 4, s_in, NULL), to32 = kc_tensor(b, AXON_INT32, 4, s_out, NULL);
    axon_tensor_t tof = kc_tensor(f, AXON_FLOAT32, 4, s_out, NULL);
    axon_pool_params_t p = {2, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 0};
    CHECK_STATUS(axon_kernel_max_pool(k.s, &tof, NULL, &ti32, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("differ");
    CHECK_STATUS(axon_kernel_adaptive_max_pool(k.s, &to32, NULL, &ti32, 2), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("adaptive_max_pool: in dtype int32");
    CHECK_STATUS(axon_kernel_adaptive_avg_pool(k.s, &to32, &ti32, 2), AXON_ERROR_UNSUPPORTED);
    CHECK_STATUS(axon_kernel_avg_pool_backward(k.s, &ti32, &to32, &p), AXON_ERROR_UNSUPPORTED);
    axon_runtime_destroy(k.rt);
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[2 * 3 * 8 * 8];
    int64_t idxbuf[2 * 3 * 16];
    int32_t i32[2 * 3 * 16];
    int64_t s_in[4] = {2, 3, 8, 8}, s_out[4] = {2, 3, 4, 4}, s_bad[4] = {2, 4, 4, 4}, s1[3] = {2, 3, 8};
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 4, s_in, NULL), out = kc_tensor(buf, AXON_FLOAT32, 4, s_out, NULL);
    axon_tensor_t idx = kc_tensor(idxbuf, AXON_INT64, 4, s_out, NULL);
    axon_pool_params_t p = {2, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 0, 0};

    axon_pool_params_t q = p;
    q.kernel[1] = 0;
    CHECK_STATUS(axon_kernel_max_pool(k.s, &out, &idx, &in, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("max_pool: spatial dim 1 has kernel 0");
    q = p, q.padding[0] = 2;
    CHECK_STATUS(axon_kernel_avg_pool(k.s, &out, &in, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("pad should be at most half of effective kernel size");
    q = p, q.nspatial = 4;
    CHECK_STATUS(axon_kernel_max_pool(k.s, &out, NULL, &in, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("4 spatial dimensions");

    axon_tensor_t bad = kc_tensor(buf, AXON_FLOAT32, 4, s_bad, NULL);
    CHECK_STATUS(axon_kernel_max_pool(k.s, &bad, NULL, &in, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("same rank and leading");
    axon_tensor_t r3 = kc_tensor(buf, AXON_FLOAT32, 3, s1, NULL);
    CHECK_STATUS(axon_kernel_adaptive_avg_pool(k.s, &out, &r3, 2), AXON_ERROR_INVALID_ARG);
    CHECK_STATUS(axon_kernel_adaptive_avg_pool(k.s, &r3, &r3, 3), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("needs at least 4 dimensions");

    axon_tensor_t i32t = kc_tensor(i32, AXON_INT32, 4, s_out, NULL);
    CHECK_STATUS(axon_kernel_max_pool(k.s, &out, &i32t, &in, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("indices dtype int32, expected int64");
    CHECK_STATUS(axon_kernel_max_pool(k.s, &out, &idx, &i32t, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("max_pool: in dtype int32");
    int64_t strided[4] = {3 * 64, 64, 1, 8};
    axon_tensor_t tr = kc_tensor(buf, AXON_FLOAT32, 4, s_in, strided);
    CHECK_STATUS(axon_kernel_avg_pool(k.s, &out, &tr, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("avg_pool: in must be contiguous");
    CHECK_STATUS(axon_kernel_max_pool_backward(k.s, &in, &out, NULL, 2), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("indices is NULL");
    CHECK_STATUS(axon_kernel_max_pool(k.s, &out, NULL, &in, NULL), AXON_ERROR_INVALID_ARG);

    /* An empty input plane with a non-empty output would read nothing that exists. */
    int64_t s_empty[4] = {2, 3, 0, 8};
    axon_tensor_t empty = kc_tensor(buf, AXON_FLOAT32, 4, s_empty, NULL);
    CHECK_STATUS(axon_kernel_adaptive_max_pool(k.s, &out, NULL, &empty, 2), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("empty spatial dimension");
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

/* A corrupt index is never written through: the command fails and the stream reports it. */
static void test_out_of_range_index_fails_the_backward(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    int64_t s_in[3] = {2, 3, 8}, s_out[3] = {2, 3, 4};
    float g[24];
    int64_t idx[24];
    for (int i = 0; i < 24; i++) g[i] = 1.0f, idx[i] = i % 4;
    idx[13] = 8;
    void *dg = kc_upload(&k, g, sizeof g), *di = kc_upload(&k, idx, sizeof idx), *dgi = kc_upload(&k, NULL, 48 * 4);
    axon_tensor_t tg = kc_tensor(dg, AXON_FLOAT32, 3, s_out, NULL), ti = kc_tensor(di, AXON_INT64, 3, s_out, NULL);
    axon_tensor_t tgi = kc_tensor(dgi, AXON_FLOAT32, 3, s_in, NULL);
    CHECK_OK(axon_kernel_max_pool_backward(k.s, &tgi, &tg, &ti, 1));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index 8 at position 13 is out of range for an input plane of 8 elements");
    idx[13] = -1;
    axon_memcpy(di, idx, sizeof idx, AXON_COPY_HOST_TO_DEVICE, k.s);
    CHECK_OK(axon_kernel_max_pool_backward(k.s, &tgi, &tg, &ti, 1));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    /* the same tensors described channels-last: element 13 is still the bad one */
    idx[13] = 8;
    axon_memcpy(di, idx, sizeof idx, AXON_COPY_HOST_TO_DEVICE, k.s);
    const int64_t cl_in[3] = {24, 1, 3}, cl_out[3] = {12, 1, 3};
    memcpy(tgi.strides, cl_in, sizeof cl_in), memcpy(tg.strides, cl_out, sizeof cl_out);
    memcpy(ti.strides, cl_out, sizeof cl_out);
    CHECK_OK(axon_kernel_max_pool_backward(k.s, &tgi, &tg, &ti, 1));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("index 8 at position 13 is out of range for an input plane of 8 elements");
    axon_mem_free(k.dev, dg), axon_mem_free(k.dev, di), axon_mem_free(k.dev, dgi);
    axon_runtime_destroy(k.rt);
}

/* max_unpool: zeros but where an index points, repeated indices keep the last value (not the sum, which the
 * backward would give), float64 and bfloat16; an index past the output plane fails with PyTorch's message. */
static void test_max_unpool_stores_at_indices_and_keeps_the_last_repeat(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s);
    int64_t s_in[3] = {2, 2, 3}, s_out[3] = {2, 2, 5}; /* 4 planes of 3 into 4 planes of 5 (1 spatial dim) */
    double x[12], got[20], want[20];
    int64_t idx[12];
    for (int i = 0; i < 12; i++) x[i] = 1.5 + i, idx[i] = (i * 2) % 5;
    idx[4] = idx[3]; /* plane 1 writes position idx[3] twice: x[4] stays */
    memset(want, 0, sizeof want);
    for (int i = 0; i < 12; i++) want[(i / 3) * 5 + idx[i]] = x[i];
    void *dx = kc_upload(&k, x, sizeof x), *di = kc_upload(&k, idx, sizeof idx), *dout = kc_upload(&k, NULL, sizeof got);
    axon_tensor_t tx = kc_tensor(dx, AXON_FLOAT64, 3, s_in, NULL), ti = kc_tensor(di, AXON_INT64, 3, s_in, NULL);
    axon_tensor_t to = kc_tensor(dout, AXON_FLOAT64, 3, s_out, NULL);
    CHECK_OK(axon_kernel_max_unpool(k.s, &to, &tx, &ti, 1));
    REQUIRE(kc_download(&k, got, dout, sizeof got));
    CHECK(memcmp(got, want, sizeof got) == 0);
    idx[7] = 5;
    axon_memcpy(di, idx, sizeof idx, AXON_COPY_HOST_TO_DEVICE, k.s);
    CHECK_OK(axon_kernel_max_unpool(k.s, &to, &tx, &ti, 1));
    CHECK_STATUS(axon_stream_sync(k.s), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("Found an invalid max index: 5 (output volumes are of size 5) at position 7");
    axon_tensor_t tb = to;
    tb.dtype = AXON_INT32;
    CHECK(axon_kernel_max_unpool(k.s, &tb, &tx, &ti, 1) != AXON_OK); /* an integer out */
    axon_mem_free(k.dev, dx), axon_mem_free(k.dev, di), axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_max_and_avg_pool_match_reference);
    RUN(test_channels_last_max_pool_gives_the_channels_first_bits);
    RUN(test_adaptive_pools_match_reference);
    RUN(test_backward_is_bitwise_the_same_for_any_thread_count);
    RUN(test_integer_max_and_avg_pool_match_reference_exactly);
    RUN(test_bad_arguments_are_refused_with_a_message);
    RUN(test_out_of_range_index_fails_the_backward);
    RUN(test_max_unpool_stores_at_indices_and_keeps_the_last_repeat);
    return check_report();
}

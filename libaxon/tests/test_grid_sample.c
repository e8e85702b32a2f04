/* axon/grid_sample.h against a long double reference written from PyTorch's scalar grid sampler (ATen's
 * GridSampler.h: fmod reflection, per-corner weights, the bicubic coefficient gradients): every interpolation and
 * padding mode, with and without align_corners, in 2d and 3d, forward, grad_input and grad_grid, in four dtypes;
 * the same bits for 1 and 4 threads; NaN, infinite and huge coordinates; bad input refused with a message.
 *
 * Grid values are multiples of 1/128 in [-1.25, 1.25] and sizes are small, so the unnormalized coordinates are
 * exact in float32 and the kernel's float32 arithmetic picks the reference's neighbours (ties included, rounded
 * half to even by both). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/grid_sample_gather.h"
#include "axon/grid_sample.h"
#include "kernels_check.h"
#include "reduce_ref.h"

typedef long double ld;

typedef struct gt_dim {
    int n;
    int64_t idx[4];
    ld w[4], dw[4], mult;
} gt_dim_t;

static ld gt_clip(ld x, int64_t size, ld *g) {
    if (x <= 0) return *g = 0, 0;
    if (x >= size - 1) return *g = 0, (ld)(size - 1);
    return *g = 1, x;
}

/* GridSampler.h's reflect_coordinates_set_grad over [twice_low / 2, twice_high / 2]. */
static ld gt_reflect(ld x, int64_t twice_low, int64_t twice_high, ld *g) {
    if (twice_low == twice_high) return *g = 0, 0;
    ld lo = twice_low / 2.0L, span = (twice_high - twice_low) / 2.0L, in = x - lo, sign = 1;
    if (in < 0) sign = -1, in = -in;
    ld extra = fmodl(in, span);
    long flips = (long)floorl(in / span);
    if (flips % 2 == 0) return *g = sign, extra + lo;
    return *g = -sign, span - extra + lo;
}

static ld gt_pad(ld x, int64_t size, int padding, int align, ld *g) {
    ld gc = 1, gr = 1;
    if (padding == AXON_GRID_PAD_BORDER) x = gt_clip(x, size, &gc);
    if (padding == AXON_GRID_PAD_REFLECTION) {
        x = align ? gt_reflect(x, 0, 2 * (size - 1), &gr) : gt_reflect(x, -1, 2 * size - 1, &gr);
        x = gt_clip(x, size, &gc);
    }
    *g = gc * gr;
    return x;
}

static int64_t gt_valid(ld x, int64_t size) {
    return x >= 0 && x < size ? (int64_t)x : -1;
}

static gt_dim_t gt_taps(int interp, int padding, int align, ld v, int64_t size) {
    gt_dim_t r;
    memset(&r, 0, sizeof r);
    ld u = align ? (v + 1) / 2 * (size - 1) : ((v + 1) * size - 1) / 2, g;
    ld scale = align ? (size - 1) / 2.0L : size / 2.0L;
    if (interp == AXON_GRID_BICUBIC) {
        ld x0 = floorl(u), t = u - x0, A = -0.75L;
        ld dist[4] = {1 + t, t, 1 - t, 2 - t};
        for (int i = 0; i < 4; i++) {
            ld s = dist[i];
            r.w[i] = s <= 1 ? ((A + 2) * s - (A + 3)) * s * s + 1 : ((A * s - 5 * A) * s + 8 * A) * s - 4 * A;
            /* d w / d u: the kernel's distance is |u - (x0 - 1 + i)|, falling for i <= 1 and rising after. */
            ld ds = s <= 1 ? (3 * (A + 2) * s - 2 * (A + 3)) * s : (3 * A * s - 10 * A) * s + 8 * A;
            r.dw[i] = i <= 1 ? ds : -ds;
            r.idx[i] = gt_valid(truncl(gt_pad(x0 - 1 + i, size, padding, align, &g)), size);
        }
        r.n = 4, r.mult = scale;
        return r;
    }
    ld x = gt_pad(u, size, padding, align, &g);
    r.mult = scale * g;
    if (interp == AXON_GRID_NEAREST) {
        r.n = 1, r.w[0] = 1, r.idx[0] = gt_valid(nearbyintl(x), size);
        return r;
    }
    ld x0 = floorl(x), t = x - x0;
    r.n = 2, r.idx[0] = gt_valid(x0, size), r.idx[1] = gt_valid(x0 + 1, size);
    r.w[0] = 1 - t, r.w[1] = t, r.dw[0] = -1, r.dw[1] = 1;
    return r;
}

typedef struct gt_case {
    int ns;
    int64_t n, c, in[3], out[3];     /* spatial sizes in tensor order (D, H, W or H, W) */
} gt_case_t;

static const gt_case_t gt_cases[] = {
    {2, 2, 3, {5, 7}, {4, 6}},
    {2, 1, 2, {1, 4}, {3, 5}},       /* a size-1 dimension: reflection with align_corners has nothing to span */
    {2, 3, 1, {6, 3}, {9, 70}},      /* more points than a block */
    {3, 2, 2, {3, 4, 5}, {2, 3, 4}},
    {3, 1, 3, {2, 1, 3}, {3, 2, 2}},
};

static ld gt_rtol(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return 1e-12L;
    case AXON_FLOAT32: return 2e-6L;
    case AXON_FLOAT16: return 4e-3L;
    default: return 3e-2L;
    }
}

static int gt_compare(const kc_dev_t *k, axon_dtype_t d, const void *dev, const ld *want, const ld *scale,
                      int64_t n, const char *what, size_t ci, int interp, int padding, int align) {
    void *h = calloc((size_t)n + 1, axon_dtype_size(d));
    int ok = kc_download(k, h, dev, (size_t)n * axon_dtype_size(d));
    for (int64_t i = 0; ok && i < n; i++) {
        ld got = rr_get(d, h, i);
        if (!(fabsl(got - want[i]) <= gt_rtol(d) * (scale[i] + 1))) {
            fprintf(stderr, "%s case %zu interp %d padding %d align %d (%s): element %lld is %.10Lg, expected "
                    "%.10Lg\n", what, ci, interp, padding, align, axon_dtype_name(d), (long long)i, got, want[i]);
            ok = 0;
        }
    }
    free(h);
    return ok;
}

static void *gt_upload(const kc_dev_t *k, axon_dtype_t d, ld *v, int64_t n, int grid) {
    void *h = calloc((size_t)n + 1, axon_dtype_size(d));
    for (int64_t i = 0; i < n; i++) {
        v[i] = grid ? (ld)((int)(rr_rand() % 321) - 160) / 128 : (ld)((int)(rr_rand() % 257) - 128) / 64;
        rr_set(d, h, i, v[i]);
    }
    void *dev = rr_upload(k, d, h, n);
    free(h);
    return dev;
}

/* One case in one mode and dtype: the reference's out, grad_in and grad_grid (with the magnitudes of their terms,
 * for the tolerance) against the kernel's. */
static void gt_run(const kc_dev_t *k, size_t ci, int interp, int padding, int align, axon_dtype_t d) {
    const gt_case_t *c = &gt_cases[ci];
    const int ns = c->ns, nd = ns + 2, first = 3 - ns;
    int64_t I[3] = {1, 1, 1}, O[3] = {1, 1, 1}, si[5] = {c->n, c->c}, so[5] = {c->n, c->c}, sg[5] = {c->n};
    for (int i = 0; i < ns; i++) {
        I[first + i] = si[2 + i] = c->in[i];
        O[first + i] = so[2 + i] = sg[1 + i] = c->out[i];
    }
    sg[ns + 1] = ns;
    const int64_t isz = I[0] * I[1] * I[2], osz = O[0] * O[1] * O[2];
    const int64_t ni = c->n * c->c * isz, no = c->n * c->c * osz, ng = c->n * osz * ns;
    ld *x = malloc(sizeof(ld) * (size_t)ni), *gr = malloc(sizeof(ld) * (size_t)ng);
    ld *go = malloc(sizeof(ld) * (size_t)no), *y = calloc((size_t)no, sizeof(ld)), *ys = calloc((size_t)no, sizeof(ld));
    ld *gi = calloc((size_t)ni, sizeof(ld)), *gis = calloc((size_t)ni, sizeof(ld));
    ld *gg = calloc((size_t)ng, sizeof(ld)), *ggs = calloc((size_t)ng, sizeof(ld));
    void *dx = gt_upload(k, d, x, ni, 0), *dgr = gt_upload(k, d, gr, ng, 1), *dgo = gt_upload(k, d, go, no, 0);
    const size_t es = axon_dtype_size(d);
    void *dy = kc_upload(k, NULL, (size_t)no * es), *dgi = kc_upload(k, NULL, (size_t)ni * es + 1);
    void *dgg = kc_upload(k, NULL, (size_t)ng * es);
    for (int64_t b = 0; b < c->n; b++)
        for (int64_t p = 0; p < osz; p++) {
            gt_dim_t t[3];
            for (int q = 0; q < 3; q++) {
                memset(&t[q], 0, sizeof t[q]);
                if (q < first) t[q].n = 1, t[q].w[0] = 1;
                else t[q] = gt_taps(interp, padding, align, gr[(b * osz + p) * ns + (2 - q)], I[q]);
            }
            for (int64_t ch = 0; ch < c->c; ch++) {
                const int64_t plane = b * c->c + ch, o = plane * osz + p;
                for (int e = 0; e < t[0].n; e++)
                    for (int f = 0; f < t[1].n; f++)
                        for (int h = 0; h < t[2].n; h++) {
                            int valid = t[0].idx[e] >= 0 && t[1].idx[f] >= 0 && t[2].idx[h] >= 0;
                            int64_t at = plane * isz + (t[0].idx[e] * I[1] + t[1].idx[f]) * I[2] + t[2].idx[h];
                            ld v = valid ? x[at] : 0, w = t[0].w[e] * t[1].w[f] * t[2].w[h];
                            y[o] += w * v, ys[o] += fabsl(w * v);
                            if (valid) gi[at] += w * go[o], gis[at] += fabsl(w * go[o]);
                            if (interp == AXON_GRID_NEAREST) continue;
                            ld dq[3] = {t[0].dw[e] * t[1].w[f] * t[2].w[h], t[0].w[e] * t[1].dw[f] * t[2].w[h],
                                        t[0].w[e] * t[1].w[f] * t[2].dw[h]};
                            for (int q = first; q < 3; q++) {
                                int64_t gat = (b * osz + p) * ns + (2 - q);
                                gg[gat] += t[q].mult * dq[q] * v * go[o];
                                ggs[gat] += fabsl(t[q].mult * dq[q] * v * go[o]);
                            }
                        }
            }
        }
    axon_grid_sample_params_t prm = {ns, (axon_grid_interp_t)interp, (axon_grid_padding_t)padding, align};
    axon_tensor_t tx = kc_tensor(dx, d, nd, si, NULL), ty = kc_tensor(dy, d, nd, so, NULL);
    axon_tensor_t tgr = kc_tensor(dgr, d, nd, sg, NULL), tgo = kc_tensor(dgo, d, nd, so, NULL);
    axon_tensor_t tgi = kc_tensor(dgi, d, nd, si, NULL), tgg = kc_tensor(dgg, d, nd, sg, NULL);
    /* A half-type grad_input rounds at every addition: compare it in float32 instead (what the glue passes). */
    void *dgi32 = kc_upload(k, NULL, (size_t)ni * 4 + 1);
    axon_tensor_t tgi32 = kc_tensor(dgi32, AXON_FLOAT32, nd, si, NULL);
    const int half = d == AXON_FLOAT16 || d == AXON_BFLOAT16;
    CHECK_OK(axon_kernel_grid_sample(k->s, &ty, &tx, &tgr, &prm));
    CHECK(gt_compare(k, d, dy, y, ys, no, "grid_sample", ci, interp, padding, align));
    CHECK_OK(axon_kernel_grid_sample_backward(k->s, half ? &tgi32 : &tgi, &tgg, &tgo, &tx, &tgr, &prm));
    CHECK(gt_compare(k, half ? AXON_FLOAT32 : d, half ? dgi32 : dgi, gi, gis, ni, "grad_input", ci, interp,
                     padding, align));
    CHECK(gt_compare(k, d, dgg, gg, ggs, ng, "grad_grid", ci, interp, padding, align));
    CHECK_OK(axon_stream_sync(k->s));
    void *ptrs[] = {dx, dgr, dgo, dy, dgi, dgg, dgi32};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) axon_mem_free(k->dev, ptrs[i]);
    free(x), free(gr), free(go), free(y), free(ys), free(gi), free(gis), free(gg), free(ggs);
}

static void test_every_mode_matches_reference_forward_and_backward(void) {
    static const axon_dtype_t dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};
    kc_dev_t k = kc_open(3);
    REQUIRE(k.s);
    for (size_t ci = 0; ci < sizeof gt_cases / sizeof gt_cases[0]; ci++)
        for (int interp = 0; interp < AXON_GRID_INTERP_COUNT; interp++) {
            if (interp == AXON_GRID_BICUBIC && gt_cases[ci].ns == 3) continue;
            for (int padding = 0; padding < AXON_GRID_PADDING_COUNT; padding++)
                for (int align = 0; align < 2; align++)
                    for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
                        /* The half types: one case each, their rounding is the only thing they add. */
                        if (di >= 2 && ci != 0) continue;
                        gt_run(&k, ci, interp, padding, align, dtypes[di]);
                    }
        }
    axon_runtime_destroy(k.rt);
}

static void test_results_are_bitwise_the_same_for_any_thread_count(void) {
    int64_t si[4] = {3, 4, 11, 13}, sg[4] = {3, 17, 19, 2}, so[4] = {3, 4, 17, 19};
    const int64_t ni = 3 * 4 * 11 * 13, ng = 3 * 17 * 19 * 2, no = 3 * 4 * 17 * 19;
    const size_t bytes[3] = {(size_t)no * 4, (size_t)ni * 4, (size_t)ng * 4};
    void *res[2][3];
    axon_grid_sample_params_t prm = {2, AXON_GRID_BICUBIC, AXON_GRID_PAD_REFLECTION, 0};
    for (int t = 0; t < 2; t++) {
        rr_state = 7;
        kc_dev_t k = kc_open(t ? 4 : 1);
        REQUIRE(k.s);
        ld *hx = malloc(sizeof(ld) * (size_t)ni), *hg = malloc(sizeof(ld) * (size_t)ng);
        ld *ho = malloc(sizeof(ld) * (size_t)no);
        void *dx = gt_upload(&k, AXON_FLOAT32, hx, ni, 0), *dg = gt_upload(&k, AXON_FLOAT32, hg, ng, 1);
        void *dgo = gt_upload(&k, AXON_FLOAT32, ho, no, 0);
        void *dy = kc_upload(&k, NULL, bytes[0]), *dgi = kc_upload(&k, NULL, bytes[1]);
        void *dgg = kc_upload(&k, NULL, bytes[2]);
        axon_tensor_t tx = kc_tensor(dx, AXON_FLOAT32, 4, si, NULL), tg = kc_tensor(dg, AXON_FLOAT32, 4, sg, NULL);
        axon_tensor_t ty = kc_tensor(dy, AXON_FLOAT32, 4, so, NULL), tgo = kc_tensor(dgo, AXON_FLOAT32, 4, so, NULL);
        axon_tensor_t tgi = kc_tensor(dgi, AXON_FLOAT32, 4, si, NULL), tgg = kc_tensor(dgg, AXON_FLOAT32, 4, sg, NULL);
        CHECK_OK(axon_kernel_grid_sample(k.s, &ty, &tx, &tg, &prm));
        CHECK_OK(axon_kernel_grid_sample_backward(k.s, &tgi, &tgg, &tgo, &tx, &tg, &prm));
        void *dev[3] = {dy, dgi, dgg};
        for (int i = 0; i < 3; i++) {
            res[t][i] = malloc(bytes[i]);
            CHECK(kc_download(&k, res[t][i], dev[i], bytes[i]));
        }
        void *ptrs[] = {dx, dg, dgo, dy, dgi, dgg};
        for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) axon_mem_free(k.dev, ptrs[i]);
        free(hx), free(hg), free(ho);
        axon_runtime_destroy(k.rt);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(kc_first_diff(res[0][i], res[1][i], bytes[i]) < 0);
        free(res[0][i]), free(res[1][i]);
    }
}

/* Coordinates PyTorch CPU maps to NaN or to an element outside: no read outside the input, PyTorch's values. */
static void test_non_finite_and_huge_coordinates(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float in[6] = {1, 2, 3, 4, 5, 6}, grid[4 * 2] = {NAN, 0, INFINITY, 0, 1e30f, -1e30f, 0.25f, NAN}, out[4];
    int64_t si[4] = {1, 1, 2, 3}, sg[4] = {1, 1, 4, 2}, so[4] = {1, 1, 1, 4};
    void *di = kc_upload(&k, in, sizeof in), *dg = kc_upload(&k, grid, sizeof grid), *dout = kc_upload(&k, NULL, 16);
    axon_tensor_t ti = kc_tensor(di, AXON_FLOAT32, 4, si, NULL), tg = kc_tensor(dg, AXON_FLOAT32, 4, sg, NULL);
    axon_tensor_t to = kc_tensor(dout, AXON_FLOAT32, 4, so, NULL);
    for (int interp = 0; interp < AXON_GRID_INTERP_COUNT; interp++)
        for (int padding = 0; padding < AXON_GRID_PADDING_COUNT; padding++) {
            axon_grid_sample_params_t prm = {2, (axon_grid_interp_t)interp, (axon_grid_padding_t)padding, 0};
            CHECK_OK(axon_kernel_grid_sample(k.s, &to, &ti, &tg, &prm));
            CHECK(kc_download(&k, out, dout, sizeof out));
            if (padding == AXON_GRID_PAD_ZEROS) {
                /* NaN and infinite coordinates: NaN weights (0 for nearest); a huge one reads nothing: 0. */
                for (int i = 0; i < 4; i++)
                    CHECK(i == 2 ? out[i] == 0 : interp == AXON_GRID_NEAREST ? out[i] == 0 : isnan(out[i]));
            } else if (interp != AXON_GRID_BICUBIC) {
                /* Border and reflection clip NaN to 0 and everything else into the input. */
                for (int i = 0; i < 4; i++) CHECK(isfinite(out[i]) && out[i] >= 1 && out[i] <= 6);
            }
        }
    axon_mem_free(k.dev, di), axon_mem_free(k.dev, dg), axon_mem_free(k.dev, dout);
    axon_runtime_destroy(k.rt);
}

/* The AVX-512 gather loops of float32 and float64 (tri)linear blocks against the portable loop's arithmetic,
 * bitwise: taps in order from 0, a product and a sum rounded one by one, offsets outside (-1) reading nothing, NaN and
 * infinite weights, block lengths that leave a partial vector. */
#ifdef AXON_GS_GATHER
#define GATHER_CHECK(T, FN)                                                                                         \
    do {                                                                                                            \
        enum { PITCH = 64, PLANE = 300 };                                                                           \
        T plane[PLANE], w[8][PITCH], got[PITCH];                                                                    \
        int32_t off[8][PITCH];                                                                                      \
        for (int i = 0; i < PLANE; i++) plane[i] = (T)(rr_rand() % 2001) / (T)97 - (T)10;                          \
        plane[5] = (T)-0.0;                                                                                         \
        for (int ntaps = 4; ntaps <= 8; ntaps += 4)                                                                 \
            for (int64_t m = 1; m <= PITCH; m += 9) {                                                               \
                for (int k = 0; k < ntaps; k++)                                                                     \
                    for (int j = 0; j < PITCH; j++) {                                                               \
                        off[k][j] = rr_rand() % 4 == 0 ? -1 : (int32_t)(rr_rand() % PLANE);                         \
                        w[k][j] = (T)(rr_rand() % 1001) / (T)1000;                                                  \
                    }                                                                                               \
                w[0][0] = NAN, w[1][m - 1] = INFINITY, off[1][m - 1] = -1, off[0][m / 2] = 5;                       \
                const int skip = ntaps == 8;                                                                        \
                FN(plane, off[0], w[0], PITCH, ntaps, skip, m, got);                                                \
                for (int64_t j = 0; j < m; j++) {                                                                   \
                    T sum = 0;                                                                                      \
                    for (int k = 0; k < ntaps; k++) {                                                               \
                        const T v = off[k][j] >= 0 ? plane[off[k][j]] : (T)0;                                       \
                        sum += skip ? (off[k][j] >= 0 ? w[k][j] * v : (T)0) : w[k][j] * v;                          \
                    }                                                                                               \
                    if (memcmp(&sum, &got[j], sizeof sum) != 0) {                                                   \
                        fprintf(stderr, "  %s, %d taps, m %lld, point %lld: got %a want %a\n", #T, ntaps,            \
                                (long long)m, (long long)j, (double)got[j], (double)sum);                           \
                        check_failures_in_test++;                                                                   \
                        break;                                                                                      \
                    }                                                                                               \
                }                                                                                                   \
            }                                                                                                       \
    } while (0)
#endif

static void test_gather_taps_match_the_portable_loop_bitwise(void) {
#ifdef AXON_GS_GATHER
    if (!axon_gs_gather_available()) {
        printf("  (skipped: this CPU has no AVX-512F)\n");
        return;
    }
    GATHER_CHECK(float, axon_gs_taps_f32_avx512);
    GATHER_CHECK(double, axon_gs_taps_f64_avx512);
#else
    printf("  (skipped: a build without the AVX-512 gather loop)\n");
#endif
}

static void test_bad_arguments_are_refused_with_a_message(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s);
    float buf[256];
    int64_t si[4] = {2, 3, 4, 4}, sg[4] = {2, 5, 6, 2}, so[4] = {2, 3, 5, 6}, s3[5] = {2, 3, 4, 4, 4};
    int64_t sg_bad[4] = {2, 5, 6, 3}, si_empty[4] = {2, 3, 0, 4};
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 4, si, NULL), grid = kc_tensor(buf, AXON_FLOAT32, 4, sg, NULL);
    axon_tensor_t out = kc_tensor(buf, AXON_FLOAT32, 4, so, NULL);
    axon_grid_sample_params_t p = {2, AXON_GRID_BILINEAR, AXON_GRID_PAD_ZEROS, 0}, q = p;
    q.interp = AXON_GRID_INTERP_COUNT;
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &in, &grid, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("interpolation mode 3 is not an axon_grid_interp_t");
    q = p, q.padding = (axon_grid_padding_t)-1;
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &in, &grid, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("padding mode -1");
    q = p, q.nspatial = 3, q.interp = AXON_GRID_BICUBIC;
    axon_tensor_t in3 = kc_tensor(buf, AXON_FLOAT32, 5, s3, NULL);
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &in3, &grid, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("grid_sampler_3d: bicubic interpolation only supports 2 spatial dimensions");
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &in3, &grid, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("grid_sampler_2d: input shape [2, 3, 4, 4, 4] must have 4 dimensions");
    axon_tensor_t bad = kc_tensor(buf, AXON_FLOAT32, 4, sg_bad, NULL);
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &in, &bad, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("do not fit");
    axon_tensor_t empty = kc_tensor(buf, AXON_FLOAT32, 4, si_empty, NULL);
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &empty, &grid, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("empty spatial dimension");
    axon_tensor_t i64 = kc_tensor(buf, AXON_INT64, 4, sg, NULL);
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &in, &i64, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("grid_sampler_2d: grid dtype int64");
    CHECK_STATUS(axon_kernel_grid_sample_backward(k.s, NULL, NULL, &out, &in, &grid, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("neither grad_input nor grad_grid");
    CHECK_STATUS(axon_kernel_grid_sample_backward(k.s, &grid, NULL, &out, &in, &grid, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("grad_input shape [2, 5, 6, 2] differs from [2, 3, 4, 4]");
    CHECK_STATUS(axon_kernel_grid_sample(k.s, &out, &in, &grid, NULL), AXON_ERROR_INVALID_ARG);
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_every_mode_matches_reference_forward_and_backward);
    RUN(test_results_are_bitwise_the_same_for_any_thread_count);
    RUN(test_non_finite_and_huge_coordinates);
    RUN(test_gather_taps_match_the_portable_loop_bitwise);
    RUN(test_bad_arguments_are_refused_with_a_message);
    return check_report();
}

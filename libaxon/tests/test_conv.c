/* axon/conv.h against a naive direct convolution in long double: 1-, 2- and 3-D, plain and transposed, with
 * stride, padding, dilation, groups (depthwise too), output_padding, with and without bias; forward and every
 * backward output, in float32, float64, bfloat16 and float16, with 1 and 4 threads; bad input refused with messages.
 *
 * The reference enumerates the one index map every variant shares, that of a plain convolution Y = conv(X, W):
 * each (x position, y position, weight element) triple it visits adds X * W to Y. A transposed convolution is the
 * same map read the other way (its input is Y, its output X), which is PyTorch's definition of it.
 *
 * Inputs are multiples of 1/64 in [-2, 2] (exact in every dtype), so the reference sees the kernel's very inputs.
 * Tolerance: relative to the sum of |terms| of each output: 2^-8 and 2^-11 for the output rounding of bfloat16 and
 * float16 (plus float32 accumulation), 1e-5 for float32 sums, 1e-12 for float64. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "axon/conv.h"
#include "reduce_ref.h"

static const axon_dtype_t ct_dtypes[] = {AXON_FLOAT32, AXON_FLOAT64, AXON_BFLOAT16, AXON_FLOAT16};

static long double ct_rtol(axon_dtype_t d) {
    switch (d) {
    case AXON_FLOAT64: return 1e-12L;
    case AXON_FLOAT32: return 1e-5L;
    case AXON_FLOAT16: return 2e-3L;
    default: return 1.2e-2L;
    }
}

/* One test case: in's and weight's shapes follow from these as in axon/conv.h. */
typedef struct ct_case {
    int S;
    int64_t N, C, O, G;              /* C: in's channels, O: out's */
    int64_t I[3], K[3];
    axon_conv_params_t p;
    int bias;
} ct_case_t;

typedef struct ct_buf {
    axon_dtype_t d;
    int64_t n;
    void *h, *dev;
} ct_buf_t;

static ct_buf_t ct_make(const kc_dev_t *k, axon_dtype_t d, int64_t n, int random) {
    ct_buf_t b = {d, n, random ? rr_fill(d, n, 0) : calloc((size_t)(n > 0 ? n : 1), axon_dtype_size(d)), NULL};
    b.dev = rr_upload(k, d, b.h, n);
    return b;
}

static void ct_free(const kc_dev_t *k, ct_buf_t *b) {
    free(b->h);
    axon_mem_free(k->dev, b->dev);
}

static int ct_pull(const kc_dev_t *k, ct_buf_t *b) {
    return kc_download(k, b->h, b->dev, (size_t)(b->n > 0 ? b->n : 1) * axon_dtype_size(b->d));
}

static long double ct_get(const ct_buf_t *b, int64_t i) { return rr_get(b->d, b->h, i); }

/* out's spatial size along dimension i. */
static int64_t ct_out_size(const ct_case_t *c, int i) {
    const axon_conv_params_t *p = &c->p;
    int64_t span = p->dilation[i] * (c->K[i] - 1) + 1;
    if (p->transposed) return (c->I[i] - 1) * p->stride[i] - 2 * p->padding[i] + span + p->output_padding[i];
    return (c->I[i] + 2 * p->padding[i] - span) / p->stride[i] + 1;
}

/* The plain geometry of c (see the file comment): X, Y, W element counts and visit of the map. */
typedef struct ct_geom {
    int64_t cx, cy, xs[3], ys[3], ks[3], s[3], pd[3], dl[3];
} ct_geom_t;

static ct_geom_t ct_geom(const ct_case_t *c) {
    ct_geom_t g;
    for (int j = 0; j < 3; j++) g.xs[j] = g.ys[j] = g.ks[j] = g.s[j] = g.dl[j] = 1, g.pd[j] = 0;
    for (int i = 0; i < c->S; i++) {
        int j = 3 - c->S + i;
        int64_t Y = ct_out_size(c, i);
        g.xs[j] = c->p.transposed ? Y : c->I[i];
        g.ys[j] = c->p.transposed ? c->I[i] : Y;
        g.ks[j] = c->K[i], g.s[j] = c->p.stride[i], g.pd[j] = c->p.padding[i], g.dl[j] = c->p.dilation[i];
    }
    g.cx = c->p.transposed ? c->O : c->C;
    g.cy = c->p.transposed ? c->C : c->O;
    return g;
}

/* Call visit(ctx, xi, yi, wi) for every triple of the map. */
static void ct_visit(const ct_case_t *c, const ct_geom_t *g, void (*visit)(void *, int64_t, int64_t, int64_t),
                     void *ctx) {
    const int64_t cxg = g->cx / c->G, cyg = g->cy / c->G;
    const int64_t xsp = g->xs[0] * g->xs[1] * g->xs[2], ysp = g->ys[0] * g->ys[1] * g->ys[2];
    const int64_t ksp = g->ks[0] * g->ks[1] * g->ks[2];
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t gi = 0; gi < c->G; gi++)
            for (int64_t co = 0; co < cyg; co++)
                for (int64_t ci = 0; ci < cxg; ci++)
                    for (int64_t yp = 0; yp < ysp; yp++)
                        for (int64_t kp = 0; kp < ksp; kp++) {
                            int64_t y[3] = {yp / (g->ys[1] * g->ys[2]), yp / g->ys[2] % g->ys[1], yp % g->ys[2]};
                            int64_t kk[3] = {kp / (g->ks[1] * g->ks[2]), kp / g->ks[2] % g->ks[1], kp % g->ks[2]};
                            int64_t xl = 0, ok = 1;
                            for (int j = 0; j < 3; j++) {
                                int64_t x = y[j] * g->s[j] - g->pd[j] + kk[j] * g->dl[j];
                                ok = ok && x >= 0 && x < g->xs[j];
                                xl = xl * g->xs[j] + x;
                            }
                            if (!ok) continue;
                            visit(ctx, (n * g->cx + gi * cxg + ci) * xsp + xl, (n * g->cy + gi * cyg + co) * ysp + yp,
                                  ((gi * cyg + co) * cxg + ci) * ksp + kp);
                        }
}

/* acc[dst] += a[ia] * b[ib] (and |.| into scale), where each of dst, ia, ib picks one of the triple's indices. */
typedef struct ct_acc {
    const ct_buf_t *a, *b;
    int ia, ib, idst;                /* 0: xi, 1: yi, 2: wi */
    long double *acc, *scale;
} ct_acc_t;

static void ct_visit_acc(void *ctx, int64_t xi, int64_t yi, int64_t wi) {
    ct_acc_t *c = ctx;
    const int64_t idx[3] = {xi, yi, wi};
    long double t = ct_get(c->a, idx[c->ia]) * ct_get(c->b, idx[c->ib]);
    c->acc[idx[c->idst]] += t;
    c->scale[idx[c->idst]] += fabsl(t);
}

static int ct_compare(const char *what, const ct_case_t *c, const ct_buf_t *got, const long double *want,
                      const long double *scale) {
    for (int64_t i = 0; i < got->n; i++) {
        long double g = ct_get(got, i);
        if (fabsl(g - want[i]) > ct_rtol(got->d) * (scale[i] + fabsl(want[i])) + 1e-30L) {
            fprintf(stderr, "  %dd %s %s: element %lld is %.10Lg, want %.10Lg\n", c->S, what,
                    axon_dtype_name(got->d), (long long)i, g, want[i]);
            return 1;
        }
    }
    return 0;
}

/* Run c in dtype d on k: forward and all three gradients against the reference. 0 if all match. */
/* Channels-last strides of a tensor of nd dimensions (axon_tensor_is_channels_last). */
static void ct_cl_strides(int nd, const int64_t *sz, int64_t *st) {
    int64_t inner = 1;
    st[1] = 1, inner = sz[1];
    for (int i = nd - 1; i >= 2; i--) st[i] = inner, inner *= sz[i];
    st[0] = inner;
}

/* Rearrange b's host copy between row-major order and channels-last (to_cl) for a tensor of sizes sz. */
static void ct_permute(ct_buf_t *b, int nd, const int64_t *sz, int to_cl) {
    const size_t es = axon_dtype_size(b->d);
    int64_t sp = 1;
    for (int i = 2; i < nd; i++) sp *= sz[i];
    char *tmp = malloc((size_t)(b->n > 0 ? b->n : 1) * es);
    for (int64_t n = 0; n < sz[0]; n++)
        for (int64_t c = 0; c < sz[1]; c++)
            for (int64_t p = 0; p < sp; p++) {
                const int64_t rm = (n * sz[1] + c) * sp + p, cl = (n * sp + p) * sz[1] + c;
                memcpy(tmp + (size_t)(to_cl ? cl : rm) * es, (char *)b->h + (size_t)(to_cl ? rm : cl) * es, es);
            }
    memcpy(b->h, tmp, (size_t)b->n * es);
    free(tmp);
}

/* Upload b's values stored channels-last (its host copy keeps row-major order). */
static void ct_upload_cl(const kc_dev_t *k, ct_buf_t *b, int nd, const int64_t *sz) {
    ct_permute(b, nd, sz, 1);
    axon_mem_free(k->dev, b->dev);
    b->dev = rr_upload(k, b->d, b->h, b->n);
    ct_permute(b, nd, sz, 0);
}

/* Runs case c in dtype d against the reference; cl: images and weights channels-last. 1 on a mismatch. */
static int ct_run(const kc_dev_t *k, const ct_case_t *c, axon_dtype_t d, int cl) {
    const int nd = c->S + 2, t = c->p.transposed;
    int64_t in_sz[5] = {c->N, c->C}, out_sz[5] = {c->N, c->O}, w_sz[5];
    w_sz[0] = t ? c->C : c->O;
    w_sz[1] = t ? c->O / c->G : c->C / c->G;
    int64_t nin = c->N * c->C, nout = c->N * c->O, nw = w_sz[0] * w_sz[1];
    for (int i = 0; i < c->S; i++) {
        in_sz[2 + i] = c->I[i], out_sz[2 + i] = ct_out_size(c, i), w_sz[2 + i] = c->K[i];
        nin *= in_sz[2 + i], nout *= out_sz[2 + i], nw *= w_sz[2 + i];
    }
    ct_buf_t in = ct_make(k, d, nin, 1), w = ct_make(k, d, nw, 1), b = ct_make(k, d, c->O, 1);
    ct_buf_t out = ct_make(k, d, nout, 0), go = ct_make(k, d, nout, 1), gi = ct_make(k, d, nin, 0);
    ct_buf_t gw = ct_make(k, d, nw, 0), gb = ct_make(k, d, c->O, 0);
    axon_tensor_t tin = kc_tensor(in.dev, d, nd, in_sz, NULL), tw = kc_tensor(w.dev, d, nd, w_sz, NULL);
    axon_tensor_t tb = kc_tensor(b.dev, d, 1, &c->O, NULL), tout = kc_tensor(out.dev, d, nd, out_sz, NULL);
    axon_tensor_t tgo = kc_tensor(go.dev, d, nd, out_sz, NULL), tgi = kc_tensor(gi.dev, d, nd, in_sz, NULL);
    axon_tensor_t tgw = kc_tensor(gw.dev, d, nd, w_sz, NULL), tgb = kc_tensor(gb.dev, d, 1, &c->O, NULL);
    if (cl) {
        ct_upload_cl(k, &in, nd, in_sz), ct_upload_cl(k, &w, nd, w_sz), ct_upload_cl(k, &go, nd, out_sz);
        tin.data = in.dev, tw.data = w.dev, tgo.data = go.dev;
        ct_cl_strides(nd, in_sz, tin.strides), ct_cl_strides(nd, in_sz, tgi.strides);
        ct_cl_strides(nd, out_sz, tout.strides), ct_cl_strides(nd, out_sz, tgo.strides);
        ct_cl_strides(nd, w_sz, tw.strides), ct_cl_strides(nd, w_sz, tgw.strides);
    }
    int bad = 0;
    if (axon_kernel_conv(k->s, &tout, &tin, &tw, c->bias ? &tb : NULL, &c->p) != AXON_OK ||
        axon_kernel_conv_backward(k->s, &tgi, &tgw, &tgb, &tgo, &tin, &tw, &c->p) != AXON_OK || !ct_pull(k, &out) ||
        !ct_pull(k, &gi) || !ct_pull(k, &gw) || !ct_pull(k, &gb)) {
        fprintf(stderr, "  %dd %s: %s\n", c->S, axon_dtype_name(d), axon_last_error());
        bad = 1;
    }
    if (cl && !bad) ct_permute(&out, nd, out_sz, 0), ct_permute(&gi, nd, in_sz, 0), ct_permute(&gw, nd, w_sz, 0);
    const int64_t nmax = nout > nin ? (nout > nw ? nout : nw) : (nin > nw ? nin : nw);
    long double *acc = calloc((size_t)nmax, sizeof(long double)), *scale = calloc((size_t)nmax, sizeof(long double));
    const ct_geom_t g = ct_geom(c);
    /* In the plain map's terms: plain in = X, out = Y; transposed in = Y, out = X. */
    const int IN = t ? 1 : 0, OUT = t ? 0 : 1;
    const int64_t sp = nout / (c->N * c->O > 0 ? c->N * c->O : 1);
    /* forward: out += in * w, then bias */
    ct_acc_t v = {&in, &w, IN, 2, OUT, acc, scale};
    if (!bad) {
        ct_visit(c, &g, ct_visit_acc, &v);
        for (int64_t i = 0; i < nout && c->bias; i++) {
            long double bv = ct_get(&b, i / sp % c->O);
            acc[i] += bv, scale[i] += fabsl(bv);
        }
        bad = ct_compare(t ? "conv_transpose" : "conv", c, &out, acc, scale);
    }
    /* grad_in: gi += go * w */
    if (!bad) {
        memset(acc, 0, sizeof(long double) * (size_t)nmax), memset(scale, 0, sizeof(long double) * (size_t)nmax);
        ct_acc_t vi = {&go, &w, OUT, 2, IN, acc, scale};
        ct_visit(c, &g, ct_visit_acc, &vi);
        bad = ct_compare("grad_in", c, &gi, acc, scale);
    }
    /* grad_weight: gw += go * in */
    if (!bad) {
        memset(acc, 0, sizeof(long double) * (size_t)nmax), memset(scale, 0, sizeof(long double) * (size_t)nmax);
        ct_acc_t vw = {&go, &in, OUT, IN, 2, acc, scale};
        ct_visit(c, &g, ct_visit_acc, &vw);
        bad = ct_compare("grad_weight", c, &gw, acc, scale);
    }
    /* grad_bias: channel sums of go */
    if (!bad) {
        memset(acc, 0, sizeof(long double) * (size_t)nmax), memset(scale, 0, sizeof(long double) * (size_t)nmax);
        for (int64_t i = 0; i < nout; i++) {
            long double gv = ct_get(&go, i);
            acc[i / sp % c->O] += gv, scale[i / sp % c->O] += fabsl(gv);
        }
        bad = ct_compare("grad_bias", c, &gb, acc, scale);
    }
    free(acc);
    free(scale);
    ct_free(k, &in), ct_free(k, &w), ct_free(k, &b), ct_free(k, &out), ct_free(k, &go), ct_free(k, &gi);
    ct_free(k, &gw), ct_free(k, &gb);
    return bad;
}

static ct_case_t ct_case(int S, int64_t N, int64_t C, int64_t O, int64_t G, const int64_t *I, const int64_t *K) {
    ct_case_t c;
    memset(&c, 0, sizeof c);
    c.S = S, c.N = N, c.C = C, c.O = O, c.G = G;
    c.p = axon_conv_params_default(S);
    c.p.groups = G;
    for (int i = 0; i < S; i++) c.I[i] = I[i], c.K[i] = K[i];
    return c;
}

static void ct_set(int64_t *dst, int S, int64_t a, int64_t b, int64_t c) {
    const int64_t v[3] = {a, b, c};
    for (int i = 0; i < S; i++) dst[i] = v[i];
}

/* Every case, every dtype, with `threads` workers; cl: images and weights channels-last. */
static void ct_all_cases(int threads, int cl) {
    kc_dev_t k = kc_open(threads);
    REQUIRE(k.s != NULL);
    ct_case_t cases[30];
    int n = 0;
    /* 1-D: stride 2, padding 1, groups 2, bias */
    cases[n] = ct_case(1, 2, 4, 6, 2, (int64_t[]){9}, (int64_t[]){3});
    ct_set(cases[n].p.stride, 1, 2, 0, 0), ct_set(cases[n].p.padding, 1, 1, 0, 0), cases[n++].bias = 1;
    /* 2-D: mixed strides, padding and dilation per dimension, bias */
    cases[n] = ct_case(2, 2, 3, 4, 1, (int64_t[]){7, 6}, (int64_t[]){3, 2});
    ct_set(cases[n].p.stride, 2, 2, 1, 0), ct_set(cases[n].p.padding, 2, 1, 0, 0);
    ct_set(cases[n].p.dilation, 2, 1, 2, 0), cases[n++].bias = 1;
    /* 3-D, no bias */
    cases[n] = ct_case(3, 1, 2, 3, 1, (int64_t[]){5, 4, 6}, (int64_t[]){2, 3, 2});
    ct_set(cases[n].p.stride, 3, 1, 2, 1), ct_set(cases[n].p.padding, 3, 1, 1, 0), ct_set(cases[n].p.dilation, 3, 2, 1, 1);
    n++;
    /* 2-D depthwise (groups = channels, two outputs each) */
    cases[n] = ct_case(2, 2, 4, 8, 4, (int64_t[]){6, 5}, (int64_t[]){3, 3});
    ct_set(cases[n].p.padding, 2, 1, 1, 0), cases[n++].bias = 1;
    /* 2-D with several column blocks per image and more rows than a vector tile */
    cases[n] = ct_case(2, 3, 8, 16, 1, (int64_t[]){20, 21}, (int64_t[]){3, 3});
    ct_set(cases[n].p.padding, 2, 1, 1, 0), cases[n++].bias = 1;
    /* kernel as large as the padded input: one output position */
    cases[n] = ct_case(2, 2, 3, 2, 1, (int64_t[]){3, 4}, (int64_t[]){5, 4});
    ct_set(cases[n].p.padding, 2, 1, 0, 0), n++;
    /* transposed 2-D: stride 2, padding 1, output_padding 1, groups 2, bias */
    cases[n] = ct_case(2, 2, 4, 6, 2, (int64_t[]){4, 5}, (int64_t[]){3, 3});
    cases[n].p.transposed = 1, cases[n].bias = 1;
    ct_set(cases[n].p.stride, 2, 2, 2, 0), ct_set(cases[n].p.padding, 2, 1, 1, 0);
    ct_set(cases[n].p.output_padding, 2, 1, 0, 0), n++;
    /* transposed 1-D: dilation 2 with output_padding 1 (allowed: below the dilation), no bias */
    cases[n] = ct_case(1, 2, 3, 2, 1, (int64_t[]){6}, (int64_t[]){3});
    cases[n].p.transposed = 1;
    ct_set(cases[n].p.dilation, 1, 2, 0, 0), ct_set(cases[n].p.output_padding, 1, 1, 0, 0), n++;
    /* transposed 3-D */
    cases[n] = ct_case(3, 1, 2, 4, 2, (int64_t[]){3, 2, 3}, (int64_t[]){2, 2, 3});
    cases[n].p.transposed = 1, cases[n].bias = 1;
    ct_set(cases[n].p.stride, 3, 2, 1, 2), ct_set(cases[n].p.padding, 3, 0, 1, 1), n++;
    /* transposed 2-D large enough to be split over the pool: one image, two groups, blocks of channels */
    cases[n] = ct_case(2, 1, 16, 16, 2, (int64_t[]){24, 24}, (int64_t[]){3, 3});
    cases[n].p.transposed = 1, cases[n].bias = 1;
    ct_set(cases[n].p.stride, 2, 2, 2, 0), ct_set(cases[n].p.padding, 2, 1, 1, 0);
    ct_set(cases[n].p.output_padding, 2, 1, 1, 0), n++;
    /* 1x1 kernels, stride 1, no padding (the column buffer is skipped): plain 2-D with groups, transposed 1-D */
    cases[n] = ct_case(2, 2, 6, 4, 2, (int64_t[]){5, 7}, (int64_t[]){1, 1});
    cases[n++].bias = 1;
    cases[n] = ct_case(1, 3, 4, 5, 1, (int64_t[]){9}, (int64_t[]){1});
    cases[n].p.transposed = 1, cases[n++].bias = 1;
    /* One input channel per output channel (conv_depthwise.c's direct loops): 1-D with stride 2, dilation 2 and
     * padding; 2-D with rows long enough for vector loops and a tail, stride 2 along w only; padding past the
     * kernel's reach (whole rows and columns of padding); 3-D with a multiplier of 3; a single input channel with
     * groups 1; transposed depthwise (the plain convolution's roles swapped) with stride 2 and output_padding. */
    cases[n] = ct_case(1, 2, 3, 3, 3, (int64_t[]){13}, (int64_t[]){3});
    ct_set(cases[n].p.stride, 1, 2, 0, 0), ct_set(cases[n].p.dilation, 1, 2, 0, 0);
    ct_set(cases[n].p.padding, 1, 2, 0, 0), cases[n++].bias = 1;
    cases[n] = ct_case(2, 2, 3, 3, 3, (int64_t[]){5, 37}, (int64_t[]){3, 5});
    ct_set(cases[n].p.stride, 2, 1, 2, 0), ct_set(cases[n].p.padding, 2, 1, 2, 0), cases[n++].bias = 1;
    cases[n] = ct_case(2, 1, 2, 2, 2, (int64_t[]){4, 3}, (int64_t[]){3, 2});
    ct_set(cases[n].p.padding, 2, 3, 4, 0), n++;
    cases[n] = ct_case(3, 2, 2, 6, 2, (int64_t[]){3, 6, 9}, (int64_t[]){2, 3, 3});
    ct_set(cases[n].p.padding, 3, 1, 0, 1), ct_set(cases[n].p.dilation, 3, 1, 2, 1), cases[n++].bias = 1;
    cases[n] = ct_case(2, 3, 1, 5, 1, (int64_t[]){9, 20}, (int64_t[]){3, 3});
    ct_set(cases[n].p.padding, 2, 1, 1, 0), cases[n++].bias = 1;
    cases[n] = ct_case(2, 2, 4, 4, 4, (int64_t[]){5, 17}, (int64_t[]){3, 3});
    cases[n].p.transposed = 1, cases[n].bias = 1;
    ct_set(cases[n].p.stride, 2, 2, 2, 0), ct_set(cases[n].p.padding, 2, 1, 1, 0);
    ct_set(cases[n].p.output_padding, 2, 1, 1, 0), n++;
    /* Strides and dilations that split the padded plane into several phases along each dimension */
    cases[n] = ct_case(2, 2, 3, 3, 3, (int64_t[]){11, 13}, (int64_t[]){3, 4});
    ct_set(cases[n].p.stride, 2, 2, 3, 0), ct_set(cases[n].p.dilation, 2, 1, 2, 0);
    ct_set(cases[n].p.padding, 2, 1, 2, 0), cases[n++].bias = 1;
    cases[n] = ct_case(3, 1, 2, 2, 2, (int64_t[]){5, 4, 7}, (int64_t[]){3, 2, 3});
    ct_set(cases[n].p.stride, 3, 2, 1, 2), ct_set(cases[n].p.padding, 3, 1, 1, 1), n++;
    /* A kernel wider than conv_depthwise.c keeps its tap ranges for inline (40 taps along w). */
    cases[n] = ct_case(1, 1, 2, 2, 2, (int64_t[]){70}, (int64_t[]){40});
    ct_set(cases[n].p.padding, 1, 20, 0, 0), n++;
    /* Small images and a batch large enough that float32 and float64 put several images' columns in one product
     * (conv_exec.c's ce_fold): 17 images (the last block short), 3x3 with bias; 1x1 (the columns are x itself);
     * two groups, stride 2. */
    cases[n] = ct_case(2, 17, 16, 16, 1, (int64_t[]){6, 6}, (int64_t[]){3, 3});
    ct_set(cases[n].p.padding, 2, 1, 1, 0), cases[n++].bias = 1;
    cases[n] = ct_case(2, 17, 64, 48, 1, (int64_t[]){5, 5}, (int64_t[]){1, 1});
    cases[n++].bias = 1;
    cases[n] = ct_case(2, 17, 32, 32, 2, (int64_t[]){9, 9}, (int64_t[]){3, 3});
    ct_set(cases[n].p.stride, 2, 2, 2, 0), ct_set(cases[n].p.padding, 2, 1, 1, 0), n++;
    /* transposed, folded: its forward is phase 2 with a bias */
    cases[n] = ct_case(2, 17, 16, 16, 1, (int64_t[]){5, 5}, (int64_t[]){3, 3});
    cases[n].p.transposed = 1, cases[n].bias = 1;
    ct_set(cases[n].p.padding, 2, 1, 1, 0), n++;
    /* One image, 72 output channels: with 4 threads oneDNN's forward and weight gradient split them (32, 32 and 8);
     * transposed, the plain convolution's input gradient (its forward, with the bias) splits its 72 channels. */
    cases[n] = ct_case(2, 1, 8, 72, 1, (int64_t[]){9, 10}, (int64_t[]){3, 3});
    ct_set(cases[n].p.padding, 2, 1, 1, 0), cases[n++].bias = 1;
    cases[n] = ct_case(2, 1, 8, 72, 1, (int64_t[]){5, 6}, (int64_t[]){3, 3});
    cases[n].p.transposed = 1, cases[n].bias = 1;
    ct_set(cases[n].p.stride, 2, 2, 2, 0), ct_set(cases[n].p.padding, 2, 1, 1, 0);
    ct_set(cases[n].p.output_padding, 2, 1, 1, 0), n++;
    for (int i = 0; i < n; i++)
        for (size_t di = 0; di < sizeof ct_dtypes / sizeof ct_dtypes[0]; di++)
            if (ct_run(&k, &cases[i], ct_dtypes[di], cl)) {
                fprintf(stderr, "  case %d (%d threads%s) failed\n", i, threads, cl ? ", channels-last" : "");
                check_failures_in_test++;
            }
    axon_runtime_destroy(k.rt);
}

static void test_conv_matches_direct_reference_with_one_thread(void) { ct_all_cases(1, 0); }

static void test_conv_matches_direct_reference_with_four_threads(void) { ct_all_cases(4, 0); }

/* The same cases with every image and weight channels-last: oneDNN's kernels on that layout (the one-image cases
 * split channel slices of it), and under AXON_CONV=im2col (test_conv_im2col) channels-first copies. */
static void test_channels_last_conv_matches_direct_reference_with_one_thread(void) { ct_all_cases(1, 1); }

static void test_channels_last_conv_matches_direct_reference_with_four_threads(void) { ct_all_cases(4, 1); }

static void test_conv_of_empty_batch_gives_zero_weight_and_bias_gradients(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s != NULL);
    const int64_t in_sz[4] = {0, 2, 4, 4}, w_sz[4] = {3, 2, 3, 3}, out_sz[4] = {0, 3, 2, 2};
    float wv[54], gw[54], gb[3];
    for (int i = 0; i < 54; i++) wv[i] = 1.0f, gw[i] = 7.0f;
    for (int i = 0; i < 3; i++) gb[i] = 7.0f;
    float dummy = 0;
    void *dw = kc_upload(&k, wv, sizeof wv), *dgw = kc_upload(&k, gw, sizeof gw), *dgb = kc_upload(&k, gb, sizeof gb);
    REQUIRE(dw && dgw && dgb);
    axon_tensor_t tin = kc_tensor(&dummy, AXON_FLOAT32, 4, in_sz, NULL), tw = kc_tensor(dw, AXON_FLOAT32, 4, w_sz, NULL);
    axon_tensor_t tgo = kc_tensor(&dummy, AXON_FLOAT32, 4, out_sz, NULL);
    axon_tensor_t tgw = kc_tensor(dgw, AXON_FLOAT32, 4, w_sz, NULL), tgb = kc_tensor(dgb, AXON_FLOAT32, 1, w_sz, NULL);
    axon_conv_params_t p = axon_conv_params_default(2);
    CHECK_OK(axon_kernel_conv_backward(k.s, NULL, &tgw, &tgb, &tgo, &tin, &tw, &p));
    CHECK(kc_download(&k, gw, dgw, sizeof gw) && kc_download(&k, gb, dgb, sizeof gb));
    for (int i = 0; i < 54; i++) CHECK(gw[i] == 0.0f);
    for (int i = 0; i < 3; i++) CHECK(gb[i] == 0.0f);
    axon_mem_free(k.dev, dw), axon_mem_free(k.dev, dgw), axon_mem_free(k.dev, dgb);
    axon_runtime_destroy(k.rt);
}

/* int64 forwards (plain and transposed, 2-D, groups, stride, padding, dilation, bias) against a direct loop in
 * uint64 arithmetic: values near 2^62 make products and sums wrap, as PyTorch's integer convolutions do; the
 * result is exact in any order. Gradients are refused. */
static uint64_t ct_i64_value(int64_t i) {
    return (uint64_t)((i * 2654435761u) % 1999) * ((i % 7 == 0) ? (1ull << 52) : 1);
}

static void ct_i64_case(kc_dev_t *k, int transposed) {
    enum { N = 2, G = 2, CIG = 3, OG = 2, H = 7, W = 6, KH = 3, KW = 2 };
    const int64_t s0 = 2, s1 = 1, p0 = 1, p1 = 0, d0 = 1, d1 = 2, op0 = transposed ? 1 : 0;
    const int64_t span0 = d0 * (KH - 1) + 1, span1 = d1 * (KW - 1) + 1;
    const int64_t Y0 = transposed ? (H - 1) * s0 - 2 * p0 + span0 + op0 : (H + 2 * p0 - span0) / s0 + 1;
    const int64_t Y1 = transposed ? (W - 1) * s1 - 2 * p1 + span1 : (W + 2 * p1 - span1) / s1 + 1;
    const int64_t cin = G * CIG, cout = G * OG;
    const int64_t in_sz[4] = {N, cin, H, W}, out_sz[4] = {N, cout, Y0, Y1};
    const int64_t w_sz[4] = {transposed ? cin : cout, transposed ? OG : CIG, KH, KW}, b_sz[1] = {cout};
    const int64_t nin = N * cin * H * W, nw = cin * OG * KH * KW, nout = N * cout * Y0 * Y1;
    uint64_t *x = malloc(sizeof(uint64_t) * (size_t)nin), *w = malloc(sizeof(uint64_t) * (size_t)nw);
    uint64_t *want = calloc((size_t)nout, sizeof(uint64_t)), *got = malloc(sizeof(uint64_t) * (size_t)nout);
    uint64_t b[G * OG];
    REQUIRE(x && w && want && got);
    for (int64_t i = 0; i < nin; i++) x[i] = ct_i64_value(i) - 900;
    for (int64_t i = 0; i < nw; i++) w[i] = ct_i64_value(i + 5000) - 1000;
    for (int64_t i = 0; i < cout; i++) b[i] = ct_i64_value(i + 77) << 10;
    /* the plain map: image position (ih, iw) of channel g*CIG+c meets output (oh, ow) of channel g*OG+o */
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t o = 0; o < OG; o++)
                for (int64_t c = 0; c < CIG; c++)
                    for (int64_t kh = 0; kh < KH; kh++)
                        for (int64_t kw = 0; kw < KW; kw++)
                            for (int64_t a0 = 0; a0 < (transposed ? H : Y0); a0++)
                                for (int64_t a1 = 0; a1 < (transposed ? W : Y1); a1++) {
                                    /* plain: a is the output position; transposed: a is the input position */
                                    const int64_t q0 = a0 * s0 - p0 + kh * d0, q1 = a1 * s1 - p1 + kw * d1;
                                    const int64_t lim0 = transposed ? Y0 : H, lim1 = transposed ? Y1 : W;
                                    if (q0 < 0 || q0 >= lim0 || q1 < 0 || q1 >= lim1) continue;
                                    const int64_t ci = g * CIG + c, co = g * OG + o;
                                    const uint64_t wv = transposed ? w[((ci * OG + o) * KH + kh) * KW + kw]
                                                                   : w[((co * CIG + c) * KH + kh) * KW + kw];
                                    if (!transposed)
                                        want[((n * cout + co) * Y0 + a0) * Y1 + a1] +=
                                            x[((n * cin + ci) * H + q0) * W + q1] * wv;
                                    else
                                        want[((n * cout + co) * Y0 + q0) * Y1 + q1] +=
                                            x[((n * cin + ci) * H + a0) * W + a1] * wv;
                                }
    for (int64_t i = 0; i < nout; i++) want[i] += b[i / (Y0 * Y1) % cout];
    void *dx = kc_upload(k, x, sizeof(uint64_t) * (size_t)nin), *dw = kc_upload(k, w, sizeof(uint64_t) * (size_t)nw);
    void *db = kc_upload(k, b, sizeof b), *dout = kc_upload(k, NULL, sizeof(uint64_t) * (size_t)nout);
    REQUIRE(dx && dw && db && dout);
    axon_tensor_t tin = kc_tensor(dx, AXON_INT64, 4, in_sz, NULL), tw = kc_tensor(dw, AXON_INT64, 4, w_sz, NULL);
    axon_tensor_t tb = kc_tensor(db, AXON_INT64, 1, b_sz, NULL), tout = kc_tensor(dout, AXON_INT64, 4, out_sz, NULL);
    axon_conv_params_t p = axon_conv_params_default(2);
    p.stride[0] = s0, p.stride[1] = s1, p.padding[0] = p0, p.padding[1] = p1, p.dilation[0] = d0, p.dilation[1] = d1;
    p.groups = G, p.transposed = transposed, p.output_padding[0] = op0;
    CHECK_OK(axon_kernel_conv(k->s, &tout, &tin, &tw, &tb, &p));
    REQUIRE(kc_download(k, got, dout, sizeof(uint64_t) * (size_t)nout));
    int bad = 0;
    for (int64_t i = 0; i < nout; i++) bad += got[i] != want[i];
    CHECK(bad == 0);
    CHECK_STATUS(axon_kernel_conv_backward(k->s, &tin, NULL, NULL, &tout, &tin, &tw, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("int64 convolutions have no gradient");
    axon_mem_free(k->dev, dx), axon_mem_free(k->dev, dw), axon_mem_free(k->dev, db), axon_mem_free(k->dev, dout);
    free(x), free(w), free(want), free(got);
}

static void test_int64_conv_wraps_like_pytorch(void) {
    kc_dev_t k = kc_open(2);
    REQUIRE(k.s != NULL);
    ct_i64_case(&k, 0);
    ct_i64_case(&k, 1);
    axon_runtime_destroy(k.rt);
}

static void test_conv_refuses_bad_input_with_messages(void) {
    kc_dev_t k = kc_open(1);
    REQUIRE(k.s != NULL);
    float buf[4096] = {0};
    int32_t ibuf[64] = {0};
    const int64_t in_sz[4] = {2, 3, 6, 6}, w_sz[4] = {4, 3, 3, 3}, out_sz[4] = {2, 4, 4, 4};
    axon_tensor_t in = kc_tensor(buf, AXON_FLOAT32, 4, in_sz, NULL), w = kc_tensor(buf, AXON_FLOAT32, 4, w_sz, NULL);
    axon_tensor_t out = kc_tensor(buf + 1024, AXON_FLOAT32, 4, out_sz, NULL);
    axon_conv_params_t p = axon_conv_params_default(2);
    CHECK_OK(axon_kernel_conv(k.s, &out, &in, &w, NULL, &p));
    CHECK_OK(axon_stream_sync(k.s));

    /* in has 5 channels, weight expects 3 */
    const int64_t in5[4] = {2, 5, 6, 6};
    axon_tensor_t bad_in = kc_tensor(buf, AXON_FLOAT32, 4, in5, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &bad_in, &w, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("expects in to have 3 channels");
    CHECK_STATUS(axon_kernel_conv_backward(k.s, &out, NULL, NULL, &out, &bad_in, &w, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("conv_backward: groups=1");

    /* groups 2 does not divide weight's 5 output channels (in has 2 * 1 channels) */
    const int64_t w5[4] = {5, 1, 3, 3}, in2[4] = {2, 2, 6, 6}, out5[4] = {2, 5, 4, 4};
    axon_tensor_t tw5 = kc_tensor(buf, AXON_FLOAT32, 4, w5, NULL), tin2 = kc_tensor(buf, AXON_FLOAT32, 4, in2, NULL);
    axon_tensor_t tout5 = kc_tensor(buf + 1024, AXON_FLOAT32, 4, out5, NULL);
    axon_conv_params_t p2 = p;
    p2.groups = 2;
    CHECK_STATUS(axon_kernel_conv(k.s, &tout5, &tin2, &tw5, NULL, &p2), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("does not divide the 5 output channels");
    p2.groups = 0;
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w, NULL, &p2), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("groups must be >= 1");

    /* negative padding, zero stride, output_padding on a plain convolution, output_padding >= stride and dilation */
    axon_conv_params_t q = p;
    q.padding[1] = -1;
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w, NULL, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("padding -1");
    q = p, q.stride[0] = 0;
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w, NULL, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("stride >= 1");
    q = p, q.output_padding[0] = 1;
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w, NULL, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("not transposed");
    q = p, q.transposed = 1, q.output_padding[0] = 1;
    const int64_t wt[4] = {3, 4, 3, 3};
    axon_tensor_t twt = kc_tensor(buf, AXON_FLOAT32, 4, wt, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &twt, NULL, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("below stride or dilation");
    q = p, q.nspatial = 4;
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w, NULL, &q), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("nspatial");
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w, NULL, NULL), AXON_ERROR_INVALID_ARG);

    /* wrong out shape; wrong bias size; kernel larger than the padded input */
    const int64_t out_bad[4] = {2, 4, 5, 4};
    axon_tensor_t tob = kc_tensor(buf + 1024, AXON_FLOAT32, 4, out_bad, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &tob, &in, &w, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("expected [2, 4, 4, 4]");
    const int64_t nb = 3;
    axon_tensor_t tbias = kc_tensor(buf + 3000, AXON_FLOAT32, 1, &nb, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w, &tbias, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("bias");
    const int64_t wbig[4] = {4, 3, 9, 3};
    axon_tensor_t twbig = kc_tensor(buf, AXON_FLOAT32, 4, wbig, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &twbig, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("output size");

    /* dtypes: mixed, then unsupported */
    axon_tensor_t w64 = kc_tensor(buf, AXON_FLOAT64, 4, w_sz, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in, &w64, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("differs");
    const int64_t isz[4] = {1, 1, 3, 3}, iw[4] = {1, 1, 1, 1};
    axon_tensor_t ti = kc_tensor(ibuf, AXON_INT32, 4, isz, NULL), tiw = kc_tensor(ibuf, AXON_INT32, 4, iw, NULL);
    axon_tensor_t tio = kc_tensor(ibuf + 16, AXON_INT32, 4, isz, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &tio, &ti, &tiw, NULL, &p), AXON_ERROR_UNSUPPORTED);
    CHECK_MSG("int32");

    /* a non-contiguous in; a wrong dimension count */
    const int64_t strided[4] = {108, 36, 1, 6};
    axon_tensor_t tns = kc_tensor(buf, AXON_FLOAT32, 4, in_sz, strided);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &tns, &w, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("contiguous or channels-last");
    /* a channels-last in with a contiguous out; a channels-last grad_weight of a contiguous weight */
    const int64_t in_cl[4] = {108, 1, 18, 3}, w_cl[4] = {27, 1, 9, 3};
    axon_tensor_t tcl = kc_tensor(buf, AXON_FLOAT32, 4, in_sz, in_cl);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &tcl, &w, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("out (shape [2, 4, 4, 4]) is contiguous, unlike the operands before it");
    axon_tensor_t gw_cl = kc_tensor(buf + 2048, AXON_FLOAT32, 4, w_sz, w_cl);
    CHECK_STATUS(axon_kernel_conv_backward(k.s, NULL, &gw_cl, NULL, &out, &in, &w, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("grad_weight (shape [4, 3, 3, 3]) is channels-last");
    axon_tensor_t in3 = kc_tensor(buf, AXON_FLOAT32, 3, in_sz, NULL);
    CHECK_STATUS(axon_kernel_conv(k.s, &out, &in3, &w, NULL, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("dimensions");

    /* backward: a grad_out of the wrong shape */
    CHECK_STATUS(axon_kernel_conv_backward(k.s, NULL, &w, NULL, &tob, &in, &w, &p), AXON_ERROR_INVALID_ARG);
    CHECK_MSG("grad_out has shape");
    CHECK_OK(axon_stream_sync(k.s));
    axon_runtime_destroy(k.rt);
}

int main(void) {
    RUN(test_conv_matches_direct_reference_with_one_thread);
    RUN(test_conv_matches_direct_reference_with_four_threads);
    RUN(test_channels_last_conv_matches_direct_reference_with_one_thread);
    RUN(test_channels_last_conv_matches_direct_reference_with_four_threads);
    RUN(test_conv_of_empty_batch_gives_zero_weight_and_bias_gradients);
    RUN(test_int64_conv_wraps_like_pytorch);
    RUN(test_conv_refuses_bad_input_with_messages);
    return check_report();
}
